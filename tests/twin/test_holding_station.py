"""A station that holds a message through the delay after it, awake meanwhile (a relay that
polls while it holds a message and sleeps otherwise), in both engines; and a station visited
at two hops that reads each of its sockets apart."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from tests.twin.fast.test_fast_theory import poisson_load
from tests.twin.test_sleeping_station import _assert_two_round_trips, _percentiles
from twin import des, dtypes
from twin.dists import Const, Exponential
from twin.errors import ModelError
from twin.fast import engine as fast
from twin.path import Hop, Station, compile_path

WAKE = Const(3.0)


def held_path(holds: bool, delay_us: float, wake: Const | Exponential = WAKE) -> list[Hop]:
    """A sleeping thread (service 1 us, a wake-up) that holds each message through a delay."""
    thread = Station("relay", 1, wake=wake)
    return [
        Hop("read", "test", service=Const(1.0), station=thread, holds=holds),
        Hop("held", "test", fixed_us=delay_us),
    ]


def test_a_held_message_keeps_its_thread_awake() -> None:
    """Arrivals every 8 us, service 1 us, a 3 us wake-up, held 5 us. A message that woke the
    thread leaves it held until 9 us after its arrival, past the next arrival, which finds it
    awake (1 + 5 = 6 us) and leaves it held only until 6 us, so the one after wakes it again
    (3 + 1 + 5 = 9 us): round trips alternate 6 and 9 us, the thread busy 5 us of every 16.
    Without the hold every arrival wakes it (9 us, busy 4 us of every 8)."""
    load = replace(poisson_load(0.125, 20_000, seed=5), arrivals=dtypes.ARRIVALS_UNIFORM)
    _assert_two_round_trips(
        compile_path(held_path(True, 5.0)), load, (6.0, 9.0), 7.5, (5 / 16, 2e-3)
    )
    _assert_two_round_trips(compile_path(held_path(False, 5.0)), load, (9.0, 9.0), 9.0, (0.5, 2e-3))


def test_a_hold_through_no_delay_changes_nothing() -> None:
    """Held through a zero delay, the thread is idle from the moment it frees, as without a hold:
    the same draws, the same round trips, in both engines."""
    load = poisson_load(0.2, 20_000, seed=7)
    for simulate in (fast.simulate, des.simulate):
        held = simulate(compile_path(held_path(True, 0.0, Exponential(3.0))), load)
        free = simulate(compile_path(held_path(False, 0.0, Exponential(3.0))), load)
        np.testing.assert_array_equal(held.counts, free.counts)


@pytest.mark.parametrize("rate_per_us", [0.01, 0.04])
def test_holding_stations_agree_in_both_engines(rate_per_us: float) -> None:
    """Poisson arrivals, a relay's two passes (a thread that sleeps, holds each message through
    an exponential delay, and serves the way back too): the engines agree (means within 2%,
    p50/p90/p99 within 3%), and the hold saves wake-ups (a lower mean than without it)."""
    thread = Station("relay", 1, wake=Exponential(20.0))
    hops = [
        Hop("out", "test", service=Exponential(5.0), station=thread, holds=True),
        Hop("out held", "test", fixed_us=20.0, delay=Exponential(10.0)),
        Hop("server", "test", fixed_us=15.0),
        Hop("back", "test", service=Exponential(5.0), station=thread, holds=True),
        Hop("back held", "test", fixed_us=20.0, delay=Exponential(10.0)),
    ]
    path = compile_path(hops)
    load = poisson_load(rate_per_us, 100_000, seed=3)
    a, b = fast.simulate(path, load), des.simulate(path, load)
    assert a.rtt_sum_us / a.messages == pytest.approx(b.rtt_sum_us / b.messages, rel=0.02)
    np.testing.assert_allclose(_percentiles(a), _percentiles(b), rtol=0.03)
    free = fast.simulate(compile_path([replace(h, holds=False) for h in hops]), load)
    assert a.rtt_sum_us / a.messages < free.rtt_sum_us / free.messages


def test_a_hold_needs_a_thread_and_a_delay_after_it() -> None:
    thread = Station("relay", 1, wake=Const(1.0))
    with pytest.raises(ModelError, match="holds the message through the next hop"):
        compile_path([Hop("read", "test", service=Const(1.0), station=thread, holds=True)])
    with pytest.raises(ModelError, match="holds the message through the next hop"):
        compile_path(
            [
                Hop("read", "test", service=Const(1.0), station=thread, holds=True),
                Hop("next", "test", service=Const(1.0), station=Station("other", 1)),
            ]
        )
    with pytest.raises(ModelError, match="holds needs a station"):
        Hop("delay", "test", fixed_us=1.0, holds=True)
    with pytest.raises(ModelError, match="holds needs a station"):
        Hop("stage", "test", station=Station("pipeline", 1, reader=True), holds=True)


def test_a_station_read_at_two_hops_batches_each_apart_in_both_engines() -> None:
    """A relay's one thread reading both sides of two connections (a batch per connection and
    side, Poisson arrivals near its capacity): the engines agree (means within 2%, p50/p90/p99
    within 4%) and busy time, each batch costing 2 us on top of 0.2 us a message, says how
    many batches there were: fewer than two a message (sides shared their reads), more than
    one (each side read apart)."""
    thread = Station("relay", 1, batch=Const(2.0), batch_per_connection=True)
    hops = [
        Hop("out", "test", service=Const(0.2), station=thread),
        Hop("server", "test", fixed_us=3.0, delay=Exponential(2.0)),
        Hop("back", "test", service=Const(0.2), station=thread),
    ]
    path = compile_path(hops)
    load = replace(poisson_load(0.3, 100_000, seed=4), accounts=2)
    a, b = fast.simulate(path, load), des.simulate(path, load)
    assert a.rtt_sum_us / a.messages == pytest.approx(b.rtt_sum_us / b.messages, rel=0.02)
    np.testing.assert_allclose(_percentiles(a), _percentiles(b), rtol=0.04)
    for out in (a, b):
        served_per_us = out.messages / out.duration_us
        busy = out.station_busy_us[0] / out.duration_us
        batches_per_message = (busy - 0.4 * served_per_us) / 2.0 / served_per_us
        assert 1.0 < batches_per_message < 1.9


@pytest.mark.parametrize("holds", [True, False], ids=["held", "not held"])
def test_a_held_threads_cold_start_counts_from_the_holds_end(holds: bool) -> None:
    """Arrivals every 100 us at a thread that sleeps (a 3 us wake-up), serves 1 us and goes
    cold, ``10 (1 - exp(-gap / 50))`` us more after ``gap`` us idle, then the message is held
    5 us. Held, the thread's idle gap starts when the hold ends: ``gap = 100 - (3 + 1 + c + 5)``
    with ``c`` its cold start, the fixed point c = 8.095 us; not held, when its service ends:
    ``gap = 100 - (3 + 1 + c)``, c = 8.270 us. Every round trip is ``3 + 1 + c + 5`` us, in both
    engines."""
    thread = Station("relay", 1, wake=WAKE, cold_us=10.0, cold_tau_us=50.0)
    hops = [
        Hop("read", "test", service=Const(1.0), station=thread, holds=holds),
        Hop("held", "test", fixed_us=5.0),
    ]
    rest = 91.0 if holds else 96.0  # the gap less the cold start
    cold = 5.0
    for _ in range(60):
        cold = 10.0 * -np.expm1(-(rest - cold) / 50.0)
    rtt = 3.0 + 1.0 + cold + 5.0
    load = replace(poisson_load(0.01, 20_000, seed=5), arrivals=dtypes.ARRIVALS_UNIFORM)
    busy = (4.0 + cold) / 100.0
    _assert_two_round_trips(compile_path(hops), load, (rtt, rtt), rtt, (busy, 2e-3))
