"""A closed loop whose accounts send in turn (``workload.turns = "round_robin"``), in both engines.

Cycle ``k`` goes to account ``k % c`` and is sent once that account's previous cycle is answered
**and** cycle ``k - 1`` has been sent: ``S_k = max(S_{k-1}, S_{k-c} + D_{k-c})`` for a loop paced
far above what it can do (``S`` the sends, ``D`` the round trips). Over a pure delay with
exponential round trips of mean ``d`` and two accounts, the gap ``T_k = S_k - S_{k-1}`` is
``max(0, D_{k-2} - T_{k-1})``: it is 0 with probability ``E[exp(-T/d)]`` and otherwise
exponential of mean ``d`` (memoryless), so ``P(T > 0) = p = 1 - p / 2``, ``p = 2/3`` and the
loop sends ``1 / E[T] = 1.5 / d`` cycles a microsecond, where two free accounts send ``2 / d``.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from twin import des, dtypes
from twin.dists import Exponential
from twin.errors import ConfigError
from twin.fast import engine as fast
from twin.load import Load
from twin.path import Hop, compile_path

ENGINES = {"fast": fast.simulate, "des": des.simulate}
MEAN_US = 10.0
PACED_ABOVE = 1e9  # msg/s: every account is always behind its pacing


def closed(accounts: int, duration_us: float, in_turn: bool, seed: int = 7) -> Load:
    return Load(
        loop=dtypes.LOOP_CLOSED,
        arrivals=dtypes.ARRIVALS_UNIFORM,
        rate_msgs_per_s=PACED_ABOVE,
        accounts=accounts,
        messages_per_cycle=1,
        duration_us=duration_us,
        warmup_us=1_000.0,
        seed=seed,
        in_turn=in_turn,
    )


def delay_path():
    return compile_path([Hop("wire", "test", delay=Exponential(MEAN_US))])


def rotation_rate_per_us(accounts: int, cycles: int, seed: int = 3) -> float:
    """The rotation's send rate from its recursion, written out (the reference)."""
    rng = np.random.default_rng(seed)
    rtt = rng.exponential(MEAN_US, cycles)
    send = np.zeros(cycles)
    for k in range(1, cycles):
        answered = send[k - accounts] + rtt[k - accounts] if k >= accounts else 0.0
        send[k] = max(send[k - 1], answered)
    return (cycles - 1) / send[-1]


@pytest.mark.parametrize("engine", sorted(ENGINES))
def test_two_accounts_in_turn_send_three_quarters_of_what_free_ones_do(engine: str) -> None:
    duration = 400_000.0 if engine == "fast" else 100_000.0
    turns = ENGINES[engine](delay_path(), closed(2, duration, in_turn=True))
    free = ENGINES[engine](delay_path(), closed(2, duration, in_turn=False))
    assert turns.messages / duration == pytest.approx(1.5 / MEAN_US, rel=0.02)
    assert free.messages / duration == pytest.approx(2.0 / MEAN_US, rel=0.02)
    # Waiting for its turn is not part of a round trip: each is still one delay.
    assert turns.rtt_sum_us / turns.messages == pytest.approx(MEAN_US, rel=0.03)


@pytest.mark.parametrize("engine", sorted(ENGINES))
def test_four_accounts_in_turn_follow_the_rotations_recursion(engine: str) -> None:
    duration = 200_000.0 if engine == "fast" else 60_000.0
    out = ENGINES[engine](delay_path(), closed(4, duration, in_turn=True))
    expected = rotation_rate_per_us(4, 400_000)
    assert out.messages / duration == pytest.approx(expected, rel=0.02)
    assert expected < 0.9 * 4 / MEAN_US  # the rotation costs throughput: the test can fail


@pytest.mark.parametrize("engine", sorted(ENGINES))
def test_one_account_in_turn_is_the_free_loop_exactly(engine: str) -> None:
    turns = ENGINES[engine](delay_path(), closed(1, 20_000.0, in_turn=True))
    free = ENGINES[engine](delay_path(), closed(1, 20_000.0, in_turn=False))
    assert turns.messages == free.messages
    assert turns.rtt_sum_us == free.rtt_sum_us


def test_turns_need_a_closed_loop() -> None:
    with pytest.raises(ConfigError, match="closed loop"):
        replace(closed(2, 1_000.0, in_turn=True), loop=dtypes.LOOP_OPEN)
