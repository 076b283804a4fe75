"""The order loop's order and cancel round trips, reported apart by both engines."""

from __future__ import annotations

from dataclasses import replace

import pytest

from tests.twin.fast.test_fast_theory import poisson_load
from twin import des
from twin.dists import Const, Exponential
from twin.fast import engine as fast
from twin.path import Hop, Station, compile_path
from twin.results import summarise


def test_orders_wake_the_threads_and_cancels_find_them_awake() -> None:
    """Two sleeping threads: an order finds both asleep, its cancel (sent as the client reads the
    ack) finds the client awake, so cancels are faster; both engines agree per kind, and kinds
    sum to the pool."""
    client = Station("client", 1, wake=Const(20.0))
    gateway = Station("gateway", 1, wake=Exponential(5.0), cold_us=10.0, cold_tau_us=50.0)
    hops = [
        Hop("client work", "test", service=Exponential(2.0), station=client),
        Hop("wire", "test", delay=Exponential(3.0)),
        Hop("gateway work", "test", service=Const(2.0), station=gateway),
        Hop("wire back", "test", delay=Exponential(3.0)),
        Hop("client reads the reply", "test", station=client),
    ]
    path = compile_path(hops)
    load = replace(poisson_load(0.01, 60_000, seed=4), messages_per_cycle=2)
    results = {}
    for name, simulate in (("fast", fast.simulate), ("des", des.simulate)):
        out = simulate(path, load)
        assert out.counts_by_kind is not None
        assert (out.counts_by_kind.sum(axis=0) == out.counts).all()
        results[name] = summarise("test", name, path, load, out, {}).rtt_by_kind_us
    for name, kinds in results.items():
        assert set(kinds) == {"order", "cancel"}
        assert kinds["order"]["p50"] > kinds["cancel"]["p50"] + 15.0, name
    for kind in ("order", "cancel"):
        for key in ("p50", "p90", "p99", "mean"):
            assert results["fast"][kind][key] == pytest.approx(results["des"][kind][key], rel=0.03)


def test_an_echo_has_no_kinds() -> None:
    path = compile_path([Hop("work", "test", service=Const(1.0), station=Station("s", 1))])
    load = poisson_load(0.1, 1_000, seed=1)
    out = fast.simulate(path, load)
    assert summarise("test", "fast", path, load, out, {}).rtt_by_kind_us == {}
