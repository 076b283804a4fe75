"""Group arrivals (``workload.burst``): a batch arriving at once, in both engines, against theory.

A group of ``B`` messages reaching an idle one-server station: the k-th waits for the services
of the k - 1 ahead of it. Hops that share one station run stage by stage over the group (FIFO:
the whole group's first stage before anyone's second), the semantics of a trading engine's
inbound pipeline (issue 20). With Poisson groups the mean sojourn is the M^[B]/D/1 result:
the group's first waits as in M/G/1 with service ``B s``, a random member also waits for the
``(B - 1) / 2`` members ahead of it on average.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from tests.twin.fast.test_fast_theory import covering_interval, poisson_load
from twin import des, dtypes
from twin.dists import Const
from twin.fast import engine as fast
from twin.path import Hop, Station, compile_path
from twin.replicate import run_replications

ENGINES = {"fast": fast.simulate, "des": des.simulate}


def grouped(burst: int, per_us: float, messages: int, seed: int, uniform: bool = False):
    load = replace(poisson_load(per_us, messages, seed), burst=burst, warmup_us=0.0)
    return replace(load, arrivals=dtypes.ARRIVALS_UNIFORM) if uniform else load


@pytest.mark.parametrize("engine", sorted(ENGINES))
def test_the_kth_of_a_group_waits_for_the_services_ahead_of_it(engine: str) -> None:
    """Groups of 5 every 100 us to a station serving 1 us each: round trips 1, 2, 3, 4, 5."""
    path = compile_path([Hop("work", "test", service=Const(1.0), station=Station("t", 1))])
    out = ENGINES[engine](path, grouped(5, 0.05, 5_000, seed=3, uniform=True))
    assert out.messages % 5 == 0 and out.messages >= 4_900
    assert out.rtt_sum_us / out.messages == pytest.approx(3.0, abs=1e-9)
    assert out.rtt_max_us == pytest.approx(5.0, abs=1e-9)


@pytest.mark.parametrize("engine", sorted(ENGINES))
def test_stages_sharing_one_thread_run_stage_by_stage_over_the_group(engine: str) -> None:
    """Decode (1 us) then parse (2 us) on one thread, groups of 3: all decodes first, then the
    parses, so the round trips are 3 + 2, 3 + 4 and 3 + 6 us."""
    thread = Station("client thread", 1)
    path = compile_path(
        [
            Hop("decode", "test", service=Const(1.0), station=thread),
            Hop("parse", "test", service=Const(2.0), station=thread),
        ]
    )
    out = ENGINES[engine](path, grouped(3, 0.03, 3_000, seed=5, uniform=True))
    assert out.rtt_sum_us / out.messages == pytest.approx(7.0, abs=1e-9)
    assert out.rtt_max_us == pytest.approx(9.0, abs=1e-9)
    # Per hop: decode waits for the group's decodes ahead (mean 2), parse for all decodes
    # behind it and the parses ahead (mean 5).
    assert (out.hop_time_sum_us / out.messages).tolist() == pytest.approx([2.0, 5.0])


@pytest.mark.parametrize("engine", sorted(ENGINES))
def test_poisson_groups_match_the_batch_arrival_queue(engine: str) -> None:
    burst, service, rho = 4, 1.0, 0.6
    per_us = rho / service  # messages per us
    groups_per_us = per_us / burst
    group_service_sq = (burst * service) ** 2  # E[T^2] of a group's whole service
    expected = (
        groups_per_us * group_service_sq / (2 * (1 - rho)) + (burst - 1) / 2 * service + service
    )
    path = compile_path([Hop("work", "test", service=Const(service), station=Station("t", 1))])
    load = replace(poisson_load(per_us, 200_000 if engine == "fast" else 20_000, seed=11),
                   burst=burst)  # fmt: skip
    result = run_replications(path, load, 10, engine=engine)
    got = result.estimates["mean"]
    lo, hi = covering_interval(got, result.ci95["mean"])
    assert lo <= expected <= hi, (lo, expected, hi)
    assert got == pytest.approx(expected, rel=0.03)
