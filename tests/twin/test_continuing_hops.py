"""Hops that continue (:attr:`twin.path.Hop.continues`): a message keeps its server into the next
hop at the same station, so a run of hops is one service, in both engines, against theory.

A thread that a message wakes on the CPU it shares runs before the waker's queued work (Linux's
wake-up preemption): a group of messages then leaves one by one, each served through its hops,
where hops queued apart would serve every message's first hop before anyone's second.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from tests.twin.fast.test_fast_theory import poisson_load
from tests.twin.test_group_arrivals import ENGINES, grouped
from tests.twin.test_sleeping_station import _percentiles
from twin.dists import Const, Exponential
from twin.errors import ModelError
from twin.fast import engine as fast
from twin.path import Hop, Station, compile_path


def _two_hops(
    first: Const | Exponential, second: Const | Exponential, continues: bool
) -> list[Hop]:
    thread = Station("shared core", 1)
    return [
        Hop("gateway", "test", service=first, station=thread, continues=continues),
        Hop("receiver", "test", service=second, station=thread),
    ]


@pytest.mark.parametrize("engine", sorted(ENGINES))
def test_a_group_leaves_one_by_one_through_both_hops(engine: str) -> None:
    """Groups of 4 every 400 us, the gateway's 3 us then the receiver's 2 us on one core: the
    k-th leaves at 5k us (mean 12.5, max 20), the receiver's hop 2 us each; queued apart the
    receivers wait for every gateway: 12 + 2k us (mean 17, max 20)."""
    load = grouped(4, 0.01, 4_000, seed=2, uniform=True)
    through = ENGINES[engine](compile_path(_two_hops(Const(3.0), Const(2.0), True)), load)
    assert through.rtt_sum_us / through.messages == pytest.approx(12.5, abs=1e-9)
    assert through.rtt_max_us == pytest.approx(20.0, abs=1e-9)
    assert (through.hop_time_sum_us / through.messages).tolist() == pytest.approx([10.5, 2.0])
    apart = ENGINES[engine](compile_path(_two_hops(Const(3.0), Const(2.0), False)), load)
    assert apart.rtt_sum_us / apart.messages == pytest.approx(17.0, abs=1e-9)


@pytest.mark.parametrize("rate_per_us", [0.05, 0.12])
def test_a_run_of_hops_is_one_mg1_service(rate_per_us: float) -> None:
    """Poisson arrivals, an exponential 3 us hop continuing into a constant 2 us one: an M/G/1
    queue whose service is their sum, mean sojourn ``E[S] + lambda E[S^2] / (2 (1 - rho))``
    (Pollaczek-Khinchine), in both engines within 2%."""
    path = compile_path(_two_hops(Exponential(3.0), Const(2.0), True))
    mean_s, second_moment = 5.0, 3.0**2 + 5.0**2
    rho = rate_per_us * mean_s
    theory = mean_s + rate_per_us * second_moment / (2 * (1 - rho))
    load = poisson_load(rate_per_us, 200_000, seed=11)
    for simulate in ENGINES.values():
        out = simulate(path, load)
        assert out.rtt_sum_us / out.messages == pytest.approx(theory, rel=0.02), simulate


def test_lingers_wake_ups_and_continuing_hops_agree_in_both_engines() -> None:
    """A sleeping core (wake-up, cold start, linger after a wake-up) whose gateway hop leaves
    work that yields and continues into the way back and the receiver's read: the engines
    agree (means within 2%, p50/p90/p99 within 3%)."""
    core = Station(
        "shared core", 1, wake=Exponential(8.0), cold_us=10.0, cold_tau_us=300.0, linger_us=3.0
    )
    hops = [
        Hop("out", "test", fixed_us=5.0, delay=Exponential(2.0)),
        Hop(
            "gateway",
            "test",
            service=Exponential(4.0),
            station=core,
            linger=Const(2.0),
            linger_yields=True,
            continues=True,
        ),
        Hop("way back", "test", service=Const(1.0), station=core, continues=True),
        Hop("receiver", "test", service=Exponential(1.5), station=core, linger=Const(1.0)),
    ]
    path = compile_path(hops)
    for rate in (0.01, 0.05):  # the core busy about 21% and 61% of the time
        load = poisson_load(rate, 200_000, seed=4)
        a, b = fast.simulate(path, load), ENGINES["des"](path, load)
        assert a.rtt_sum_us / a.messages == pytest.approx(b.rtt_sum_us / b.messages, rel=0.02)
        np.testing.assert_allclose(_percentiles(a), _percentiles(b), rtol=0.03)
        assert a.station_busy_us[0] == pytest.approx(b.station_busy_us[0], rel=0.02)


def test_a_hop_continues_only_into_its_own_station_met_at_once() -> None:
    core, other = Station("core", 1), Station("other", 1)
    first = Hop("a", "test", service=Const(1.0), station=core, continues=True)
    bad = {
        "the last hop": [first],
        "another station": [first, Hop("b", "test", service=Const(1.0), station=other)],
        "a delay between": [
            first,
            Hop("b", "test", fixed_us=1.0, service=Const(1.0), station=core),
        ],
        "a wake-up of its own": [
            first,
            Hop("b", "test", service=Const(1.0), station=core, wake=Const(1.0)),
        ],
    }
    for hops in bad.values():
        with pytest.raises(ModelError, match="continues into the next hop"):
            compile_path(hops)
    batching = replace(core, batch=Const(1.0))
    with pytest.raises(ModelError, match="continues into the next hop"):
        compile_path(
            [
                replace(first, station=batching),
                Hop("b", "test", service=Const(1.0), station=batching),
            ]
        )
