"""A station that sleeps when idle (wake-up, cold start, stall), in both engines, against theory.

The wake-up is an exceptional first service: the M/G/1 setup-time result gives the mean
sojourn exactly. The cold start depends on the idle time before each wake-up, which has no
closed form on a path with delays: there the two engines are checked against each other.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest

from tests.twin import queueing_theory as qt
from tests.twin.fast.test_fast_theory import covering_interval, poisson_load
from twin import des, dtypes
from twin.dists import ZERO, Const, Empirical, Exponential
from twin.errors import ModelError
from twin.fast import engine as fast
from twin.histogram import to_hdr
from twin.load import Load
from twin.path import CompiledPath, HaltPolling, Hop, Station, compile_path
from twin.replicate import run_replications

SERVICE_US = 1.0
WAKES = {"constant": (Const(2.0), 2.0, 4.0), "exponential": (Exponential(2.0), 2.0, 8.0)}


def _assert_two_round_trips(
    path: CompiledPath,
    load: Load,
    values_us: tuple[float, float],
    mean_us: float,
    busy: tuple[float, float],
    station: int = 0,
) -> None:
    """Both engines give half the round trips ``values_us[0]`` and half ``values_us[1]``, mean
    ``mean_us``, and keep ``station`` busy ``busy[0]`` of the time (within ``busy[1]``)."""
    for simulate in (fast.simulate, des.simulate):
        out = simulate(path, load)
        assert out.rtt_sum_us / out.messages == pytest.approx(mean_us, rel=1e-3), simulate
        hist = to_hdr(out.counts)
        assert hist.get_value_at_percentile(25) / 1e3 == pytest.approx(values_us[0], rel=2e-3)
        assert hist.get_value_at_percentile(75) / 1e3 == pytest.approx(values_us[1], rel=2e-3)
        share, rel = busy
        assert out.station_busy_us[station] / out.duration_us == pytest.approx(share, rel=rel)


def sleeping_queue(wake: Const | Exponential) -> list[Hop]:
    station = Station("thread", 1, wake=wake)
    return [Hop("work", "test", service=Exponential(SERVICE_US), station=station)]


@pytest.mark.parametrize("rho", [0.5, 0.8])
@pytest.mark.parametrize("kind", sorted(WAKES))
def test_fast_wake_up_matches_the_setup_time_queue(kind: str, rho: float) -> None:
    wake, mean, second = WAKES[kind]
    expected = qt.mg1_setup_sojourn_mean_us(rho, SERVICE_US, 2 * SERVICE_US**2, mean, second)
    path = compile_path(sleeping_queue(wake))
    result = run_replications(path, poisson_load(rho, 400_000, seed=11), 10, engine="fast")
    got = result.estimates["mean"]
    assert got == pytest.approx(expected, rel=0.01)
    lo, hi = covering_interval(got, result.ci95["mean"])
    assert lo <= expected <= hi, (lo, expected, hi)


def test_des_wake_up_matches_the_setup_time_queue() -> None:
    wake, mean, second = WAKES["exponential"]
    expected = qt.mg1_setup_sojourn_mean_us(0.5, SERVICE_US, 2 * SERVICE_US**2, mean, second)
    out = des.simulate(compile_path(sleeping_queue(wake)), poisson_load(0.5, 100_000, seed=3))
    assert out.rtt_sum_us / out.messages == pytest.approx(expected, rel=0.03)


def test_a_long_idle_station_pays_the_whole_cold_start() -> None:
    """Evenly spaced arrivals idle for 1000 us (1000 time constants) before each: every one pays
    the wake-up and the whole cold start, on top of its service."""
    station = Station("thread", 1, wake=Const(3.0), cold_us=20.0, cold_tau_us=1.0)
    path = compile_path([Hop("work", "test", service=Const(1.0), station=station)])
    load = replace(poisson_load(0.001, 2_000, seed=5), arrivals=dtypes.ARRIVALS_UNIFORM)
    for simulate in (fast.simulate, des.simulate):
        out = simulate(path, load)
        assert out.rtt_sum_us / out.messages == pytest.approx(24.0, rel=1e-4)


def _halted_wake_up_us(wake_us: float, share: float, tau_us: float, gap_of) -> float:
    """The fixed point w = wake (1 - share exp(-gap(w) / tau)) of a station whose idle gap
    before each arrival depends on how long its own wake-up kept it busy."""
    w = wake_us
    for _ in range(200):
        w = wake_us * (1.0 - share * math.exp(-gap_of(w) / tau_us))
    return w


@pytest.mark.parametrize(
    ("spacing_us", "tau_us"),
    [(1000.0, 1.0), (10.0, 1e9), (10.0, 3.0)],
    ids=["halted", "never-halted", "halting"],
)
def test_a_vcpu_woken_before_it_halted_pays_less_of_the_wake_up(
    spacing_us: float, tau_us: float
) -> None:
    """Evenly spaced arrivals, service 1 us, wake-up 6 us of which a vCPU woken before it halted
    saves half: after 1000 us idle (1000 halt times) the whole 6 us; with a halt time far beyond
    the gaps 3 us; with gaps of 10 us less the wake-up and service and a 3 us halt time, the
    fixed point w = 6 (1 - 0.5 exp(-(9 - w) / 3)) (about 5.17 us), exactly, in both engines."""
    station = Station("thread", 1, wake=Const(6.0), halt_share=0.5, halt_tau_us=tau_us)
    path = compile_path([Hop("work", "test", service=Const(1.0), station=station)])
    load = replace(poisson_load(1.0 / spacing_us, 4_000, seed=5), arrivals=dtypes.ARRIVALS_UNIFORM)
    wake = _halted_wake_up_us(6.0, 0.5, tau_us, lambda w: spacing_us - 1.0 - w)
    for simulate in (fast.simulate, des.simulate):
        out = simulate(path, load)
        assert out.rtt_sum_us / out.messages == pytest.approx(1.0 + wake, rel=2e-3), simulate
        assert out.station_busy_us[0] / out.duration_us == pytest.approx(
            (1.0 + wake) / spacing_us, rel=2e-3
        )


@pytest.mark.parametrize(
    ("spacing_us", "tau_us", "polling"),
    [(1000.0, 1.0, None), (10.0, 1e9, None), (20.0, 10.0, None), (100.0, 0.01, 200.0)],
    ids=["halted", "never-halted", "halting", "polled"],
)
def test_a_hops_own_wake_up_is_all_the_halts(
    spacing_us: float, tau_us: float, polling: float | None
) -> None:
    """A socket's wake-up (the hop's own, 10 us) is what a halted vCPU costs beyond an awake one:
    evenly spaced arrivals, service 1 us, a station whose own wake-up (6 us) a vCPU woken before
    it halted pays half of. After 1000 us idle the hop's whole 10 us; with a halt time far
    beyond the gaps none of it; with gaps of 20 us less the wake-up and service and a 10 us halt
    time the fixed point w = 10 (1 - exp(-(19 - w) / 10)) (about 7.0 us; 8.5 us were the hop's
    wake-up scaled as the station's); polled (halts of about 99 us, a window growing to 200 us)
    none of it, exactly, in both engines."""
    poll = None if polling is None else HaltPolling(max_us=polling)
    station = Station(
        "thread", 1, wake=Const(6.0), halt_share=0.5, halt_tau_us=tau_us, halt_poll=poll
    )
    path = compile_path(
        [Hop("work", "test", service=Const(1.0), station=station, wake=Const(10.0))]
    )
    load = replace(poisson_load(1.0 / spacing_us, 4_000, seed=5), arrivals=dtypes.ARRIVALS_UNIFORM)
    wake = 0.0 if poll else _halted_wake_up_us(10.0, 1.0, tau_us, lambda w: spacing_us - 1.0 - w)
    for simulate in (fast.simulate, des.simulate):
        out = simulate(path, load)
        median = to_hdr(out.counts).get_value_at_percentile(50) / 1e3
        assert median == pytest.approx(1.0 + wake, rel=2e-3, abs=2e-3), simulate
        if poll is None:
            assert out.rtt_sum_us / out.messages == pytest.approx(1.0 + wake, rel=2e-3), simulate


@pytest.mark.parametrize(
    ("spacing_us", "max_us", "rtt_us"),
    [(100.0, 200.0, 4.0), (100.0, 50.0, 7.0), (1000.0, 200.0, 7.0)],
    ids=["polled", "window-too-short", "halts-too-long"],
)
def test_a_vcpu_woken_within_the_hosts_polling_window_pays_less(
    spacing_us: float, max_us: float, rtt_us: float
) -> None:
    """Evenly spaced arrivals, service 1 us, wake-up 6 us of which a polled vCPU saves half (a
    halt time of 0.01 us: halted at once). Halts of 93 us grow the window 10, 20, 40, 80, 160 us
    (grow 2): from the sixth on, every wake-up comes within it, round trips 1 + 3 us; with a
    window of at most 50 us, or halts of 993 us beyond the 200 us maximum, never: 1 + 6 us."""
    polling = HaltPolling(max_us=max_us, grow=2.0, grow_start_us=10.0, shrink=2.0)
    station = Station(
        "thread", 1, wake=Const(6.0), halt_share=0.5, halt_tau_us=0.01, halt_poll=polling
    )
    path = compile_path([Hop("work", "test", service=Const(1.0), station=station)])
    load = replace(poisson_load(1.0 / spacing_us, 4_000, seed=5), arrivals=dtypes.ARRIVALS_UNIFORM)
    for simulate in (fast.simulate, des.simulate):
        out = simulate(path, load)
        assert to_hdr(out.counts).get_value_at_percentile(50) / 1e3 == pytest.approx(
            rtt_us, rel=2e-3
        ), simulate
        assert out.rtt_sum_us / out.messages == pytest.approx(rtt_us, rel=1e-2), simulate


@pytest.mark.parametrize(("spacing_us", "rtt_us"), [(100.0, 4.0), (1000.0, 27.0)])
def test_a_polled_vcpu_neither_cools_nor_stalls(spacing_us: float, rtt_us: float) -> None:
    """As above with a cold start of 20 us (time constant 1 us: whole after these gaps) and a
    stall of 50 us that always comes after such a sleep: polled, the vCPU never left its core,
    round trips 1 + 3 us; every 1000 us, halted, 50 + 1 + 6 + 20 us (the stall delays the
    message's arrival at the thread)."""
    polling = HaltPolling(max_us=200.0)
    station = Station(
        "thread", 1, wake=Const(6.0), halt_share=0.5, halt_tau_us=0.01, halt_poll=polling,
        cold_us=20.0, cold_tau_us=1.0, stall=Const(50.0),
    )  # fmt: skip
    path = compile_path([Hop("work", "test", service=Const(1.0), station=station)])
    load = replace(poisson_load(1.0 / spacing_us, 4_000, seed=5), arrivals=dtypes.ARRIVALS_UNIFORM)
    stalled = 0.0 if spacing_us < 200.0 else 50.0
    for simulate in (fast.simulate, des.simulate):
        out = simulate(path, load)
        median = to_hdr(out.counts).get_value_at_percentile(50) / 1e3
        assert median == pytest.approx(rtt_us + stalled, rel=2e-3), simulate


@pytest.mark.parametrize(
    ("shrink", "values_us", "mean_us"), [(2.0, (15.0, 18.0), 16.5), (0.0, (18.0, 18.0), 18.0)]
)
def test_a_long_halt_shrinks_the_polling_window(
    shrink: float, values_us: tuple[float, float], mean_us: float
) -> None:
    """One thread visited twice a message, 4 us apart, messages 1000 us apart; wake-up 6 us,
    half saved when polled. Each long halt shrinks the window and each short one (4 us) finds it
    or grows it: halved (shrink 2) it alternates 5 us (the short halt polled: 7 + 4 + 4 us) and
    2.5 us (grown back to 10 us: 7 + 4 + 7 us); reset (shrink 0) the short halt never is."""
    polling = HaltPolling(max_us=200.0, grow=2.0, grow_start_us=10.0, shrink=shrink)
    thread = Station(
        "thread", 1, wake=Const(6.0), halt_share=0.5, halt_tau_us=0.01, halt_poll=polling
    )
    path = compile_path(
        [
            Hop("read", "test", service=Const(1.0), station=thread),
            Hop("way", "test", fixed_us=4.0),
            Hop("write", "test", service=Const(1.0), station=thread),
        ]
    )
    load = replace(poisson_load(0.001, 4_000, seed=5), arrivals=dtypes.ARRIVALS_UNIFORM)
    busy = (mean_us - 4.0) / 1000
    _assert_two_round_trips(path, load, values_us, mean_us, busy=(busy, 1e-2))


def test_halt_polling_is_checked() -> None:
    with pytest.raises(ModelError, match="halt_share"):
        Station("thread", 1, wake=Const(6.0), halt_poll=HaltPolling(max_us=200.0))
    for bad in ({"max_us": 0.0}, {"max_us": 200.0, "grow": 0.5}, {"max_us": 200.0, "shrink": 0.5}):
        with pytest.raises(ModelError, match="HaltPolling"):
            HaltPolling(**bad)


def test_a_halt_share_needs_a_halt_time() -> None:
    with pytest.raises(ModelError, match="halt_tau_us"):
        Station("thread", 1, wake=Const(6.0), halt_share=0.5)
    with pytest.raises(ModelError, match="halt_share"):
        Station("thread", 1, wake=Const(6.0), halt_share=1.5, halt_tau_us=3.0)


def test_a_woken_station_lingers_busy_after_its_message_leaves() -> None:
    """Arrivals every 10 us, service 1 us, linger 15 us: the waking message leaves after 1 us,
    the next one finds the station still busy (5 us of linger left), waits and is served warm
    (7 us), so the one after finds it idle again: round trips alternate 1 and 7 us."""
    station = Station("thread", 1, linger_us=15.0)
    path = compile_path([Hop("work", "test", service=Const(1.0), station=station)])
    load = replace(poisson_load(0.1, 2_000, seed=5), arrivals=dtypes.ARRIVALS_UNIFORM)
    for simulate in (fast.simulate, des.simulate):
        out = simulate(path, load)
        assert out.rtt_sum_us / out.messages == pytest.approx(4.0, rel=2e-3)
        # Busy 1 + 15 then 1 in every 20 us.
        assert out.station_busy_us[0] / out.duration_us == pytest.approx(17 / 20, rel=2e-3)


def test_batches_share_their_cost() -> None:
    """Arrivals every 1 us, service 0.25 us, 1.5 us per batch: batches settle at two messages
    (1.5 + 2 x 0.25 = 2 us, the time two arrivals take). A batch taken at T holds the messages
    that arrived at T - 1.5 and T - 0.5; the first leaves at T + 1.75, the second at T + 2:
    round trips of exactly 3.25 and 2.5 us, mean 2.875 us. Paid by every message, 1.75 us of
    work would not keep up with arrivals 1 us apart."""
    station = Station("loop", 1, batch=Const(1.5))
    path = compile_path([Hop("work", "test", service=Const(0.25), station=station)])
    load = replace(poisson_load(1.0, 20_000, seed=5), arrivals=dtypes.ARRIVALS_UNIFORM)
    # The station is busy 1.5 + 2 x 0.25 us of every 2 us: all the time.
    _assert_two_round_trips(path, load, (2.5, 3.25), 2.875, busy=(1.0, 2e-3))


def test_one_connection_batches_as_one_station() -> None:
    """Batches per connection with one connection are the station's batches (as above)."""
    station = Station("loop", 1, batch=Const(1.5), batch_per_connection=True)
    path = compile_path([Hop("work", "test", service=Const(0.25), station=station)])
    load = replace(poisson_load(1.0, 20_000, seed=5), arrivals=dtypes.ARRIVALS_UNIFORM)
    _assert_two_round_trips(path, load, (2.5, 3.25), 2.875, busy=(1.0, 2e-3))


def test_a_random_read_cost_on_connections_apart_is_pollaczek_khinchine() -> None:
    """Poisson arrivals dealt in turn to 4,096 connections, so a message never finds its
    connection's previous one still waiting: every message is a read of its own, and a read
    that costs an exponential draw (mean 1.5 us) on top of the message's 0.25 us makes an
    M/G/1 queue, E[S] = 1.75, E[S^2] = 1.5^2 + 1.75^2: at 0.4 messages a microsecond the mean
    wait is lambda E[S^2] / (2 (1 - rho)) (Pollaczek-Khinchine), in both engines."""
    station = Station("loop", 1, batch=Exponential(1.5), batch_per_connection=True)
    path = compile_path([Hop("work", "test", service=Const(0.25), station=station)])
    load = replace(poisson_load(0.4, 200_000, seed=11), accounts=4096)
    s1, s2 = 1.75, 1.5**2 + 1.75**2
    expected = s1 + 0.4 * s2 / (2 * (1 - 0.4 * s1))
    for simulate in (fast.simulate, des.simulate):
        out = simulate(path, load)
        assert out.rtt_sum_us / out.messages == pytest.approx(expected, rel=0.02), simulate
        assert out.station_busy_us[0] / out.duration_us == pytest.approx(0.4 * s1, rel=0.02)


def test_connections_read_apart_make_smaller_batches() -> None:
    """The same station reading two connections apart, arrivals every 1 us dealt to them in
    turn (A, B, A, B, ...). Each connection's message joins its connection's waiting batch or
    starts one; the work settles into 4 us periods of two new batches (1.75 us each) and two
    joins (0.25 us): the station busy all the time, round trips 4, 4.75, 4 and 3.25 us (mean 4),
    where one connection's batches gave 2.5 and 3.25 (mean 2.875)."""
    station = Station("loop", 1, batch=Const(1.5), batch_per_connection=True)
    path = compile_path([Hop("work", "test", service=Const(0.25), station=station)])
    load = replace(poisson_load(1.0, 20_000, seed=5), arrivals=dtypes.ARRIVALS_UNIFORM, accounts=2)
    for simulate in (fast.simulate, des.simulate):
        out = simulate(path, load)
        assert out.rtt_sum_us / out.messages == pytest.approx(4.0, rel=1e-3), simulate
        hist = to_hdr(out.counts)
        for pct, value in ((20, 3.25), (50, 4.0), (90, 4.75)):
            assert hist.get_value_at_percentile(pct) / 1e3 == pytest.approx(value, rel=2e-3)
        assert out.station_busy_us[0] / out.duration_us == pytest.approx(1.0, rel=2e-3)


def test_batches_per_connection_agree_in_both_engines() -> None:
    """Poisson arrivals dealt to 8 connections, exponential service, a batch cost per
    connection: the engines agree (means within 2%, p50/p90/p99 within 4%), and a batch is
    commoner than with one connection (nearly one a message)."""
    station = Station("loop", 1, batch=Const(0.5), batch_per_connection=True)
    path = compile_path([Hop("work", "test", service=Exponential(SERVICE_US), station=station)])
    load = replace(poisson_load(0.45, 200_000, seed=9), accounts=8)
    a, b = fast.simulate(path, load), des.simulate(path, load)
    assert a.rtt_sum_us / a.messages == pytest.approx(b.rtt_sum_us / b.messages, rel=0.02)
    np.testing.assert_allclose(_percentiles(a), _percentiles(b), rtol=0.04)
    one = fast.simulate(path, replace(load, accounts=1))

    def batches_per_message(out: object) -> float:
        busy = out.station_busy_us[0] / out.duration_us
        served_per_us = out.messages / out.duration_us
        return (busy - SERVICE_US * served_per_us) / 0.5 / served_per_us

    assert batches_per_message(one) < 0.9 * batches_per_message(a)
    assert batches_per_message(b) == pytest.approx(batches_per_message(a), rel=0.02)


@pytest.mark.parametrize(("per_batch", "nic_busy"), [(True, 0.25), (False, 0.5)])
def test_work_left_once_per_batch(per_batch: bool, nic_busy: float) -> None:
    """The batches above (two messages each, leaving the loop at T + 1.75 and T + 2), then a
    second station with no service where a message leaves 0.5 us of work (``linger``). Per
    batch, only the first leaves it: the station is busy until T + 2.25, the second waits 0.25
    us; round trips 3.25 and 2.75 us, busy 0.5 us of every 2. Per message, the second leaves
    it too: the same round trips, busy twice as long."""
    loop = Station("loop", 1, batch=Const(1.5))
    nic = Station("nic", 1)
    path = compile_path(
        [
            Hop("work", "test", service=Const(0.25), station=loop),
            Hop("send", "test", station=nic, linger=Const(0.5), linger_per_batch=per_batch),
        ]
    )
    load = replace(poisson_load(1.0, 20_000, seed=5), arrivals=dtypes.ARRIVALS_UNIFORM)
    _assert_two_round_trips(path, load, (2.75, 3.25), 3.0, busy=(nic_busy, 2e-3), station=1)


@pytest.mark.parametrize(("per_batch", "busy"), [(True, 0.625), (False, 0.75)])
def test_a_read_leaves_its_work_once_at_its_own_batching_station(
    per_batch: bool, busy: float
) -> None:
    """A thread that reads each connection apart and leaves 0.5 us behind per read (a read's
    system calls: a per-batch linger at its own batching station): two messages of one
    connection arrive together every 4 us. The first takes the read (1.5 us) and its own work
    (0.25 us), leaves at 1.75 us and holds the thread 0.5 us more; the second shares the read
    and leaves at 2.5 us. Busy 2.5 us of every 4; left behind per message, 3."""
    station = Station("loop", 1, batch=Const(1.5), batch_per_connection=True)
    work = Hop(
        "work", "test", service=Const(0.25), station=station, linger=Const(0.5),
        linger_per_batch=per_batch,
    )  # fmt: skip
    load = replace(poisson_load(0.5, 20_000, seed=5), arrivals=dtypes.ARRIVALS_UNIFORM, burst=2)
    _assert_two_round_trips(compile_path([work]), load, (1.75, 2.5), 2.125, busy=(busy, 2e-3))


def test_work_left_per_batch_never_saturates_a_station_alone() -> None:
    """A station's offered work counts what a batch costs once (its draw and a per-batch
    linger) for nothing, as the batches grow with the load; a linger per message counts."""
    station = Station("loop", 1, batch=Const(1.5))

    def offered(per_batch: bool) -> float:
        hop = Hop(
            "work", "test", service=Const(0.25), station=station, linger=Const(0.5),
            linger_per_batch=per_batch,
        )  # fmt: skip
        return float(compile_path([hop]).station_service_mean_us()[0])

    assert offered(True) == pytest.approx(0.25)
    assert offered(False) == pytest.approx(0.75)


@pytest.mark.parametrize(("lam", "led_at_most"), [(0.3, 0.99), (0.8, 0.8)])
def test_work_left_per_batch_follows_the_batches_taken(lam: float, led_at_most: float) -> None:
    """Poisson arrivals at a batching station (1 us per batch, 0.1 us per message), then 0.3 us
    left per batch at a second station: its busy time is 0.3 us per batch, and the batches are
    what the first station's busy time says, ``(busy - 0.1 lambda) / 1``, in both engines."""
    loop = Station("log", 1, batch=Const(1.0))
    nic = Station("nic", 1)
    path = compile_path(
        [
            Hop("append", "test", service=Const(0.1), station=loop),
            Hop("send", "test", station=nic, linger=Const(0.3), linger_per_batch=True),
        ]
    )
    for simulate in (fast.simulate, des.simulate):
        out = simulate(path, poisson_load(lam, 100_000, seed=4))
        log_busy, nic_busy = out.station_busy_us[:2] / out.duration_us
        batches_per_us = log_busy - 0.1 * out.messages / out.duration_us
        assert nic_busy == pytest.approx(0.3 * batches_per_us, rel=1e-2), simulate
        # Fewer batches than messages: the per-batch work is shared, the more the busier.
        assert batches_per_us < led_at_most * out.messages / out.duration_us


@pytest.mark.parametrize("rho", [0.3, 0.7])
def test_batching_station_agrees_in_both_engines(rho: float) -> None:
    """Poisson arrivals, exponential service and a constant batch cost: no closed form for the
    sojourn, so the engines are held to each other (means within 2%, p50/p90/p99 within 4%)."""
    station = Station("loop", 1, batch=Const(0.5))
    path = compile_path([Hop("work", "test", service=Exponential(SERVICE_US), station=station)])
    load = poisson_load(rho / (SERVICE_US + 0.5 * (1 - rho)), 200_000, seed=9)
    a, b = fast.simulate(path, load), des.simulate(path, load)
    assert a.rtt_sum_us / a.messages == pytest.approx(b.rtt_sum_us / b.messages, rel=0.02)
    np.testing.assert_allclose(_percentiles(a), _percentiles(b), rtol=0.04)


GROUP_COMMITS = {
    # batch: (E[B], E[B^2], E[exp(-lambda B)] as a function of lambda)
    "constant": (Const(2.0), 2.0, 4.0, lambda lam: math.exp(-2.0 * lam)),
    "exponential": (Exponential(2.0), 2.0, 8.0, lambda lam: 1.0 / (1.0 + 2.0 * lam)),
}


@pytest.mark.parametrize("load", [0.3, 1.5])
@pytest.mark.parametrize("kind", sorted(GROUP_COMMITS))
def test_group_commit_matches_its_renewal_mean(kind: str, load: float) -> None:
    """A log's group commit (messages with no service of their own, one drawn write per batch):
    the mean sojourn of both engines against ``E[B] + u E[B^2] / (2 E[B])``, at a light load and
    at 1.5 arrivals per mean write (where one write per message could not keep up)."""
    batch, mean, second, laplace = GROUP_COMMITS[kind]
    lam = load / mean
    expected = qt.group_commit_sojourn_mean_us(lam, mean, second, laplace(lam))
    path = compile_path([Hop("log", "test", station=Station("log", 1, batch=batch))])
    result = run_replications(path, poisson_load(lam, 400_000, seed=13), 10, engine="fast")
    got = result.estimates["mean"]
    assert got == pytest.approx(expected, rel=0.01)
    low, high = covering_interval(got, result.ci95["mean"])
    assert low <= expected <= high, (low, expected, high)
    out = des.simulate(path, poisson_load(lam, 100_000, seed=3))
    assert out.rtt_sum_us / out.messages == pytest.approx(expected, rel=0.02)


def test_a_constant_group_commit_waits_out_the_write_in_progress() -> None:
    """Constant write D: an arrival finding the log idle leaves after exactly D (probability
    1 - u), one finding it busy after D plus a uniform share of the write in progress: the
    latency's CDF at D is 1 - u, and its median and p90 follow."""
    lam, d = 0.4, 2.0
    busy = d / math.exp(-lam * d)
    u = busy / (busy + 1 / lam)
    path = compile_path([Hop("log", "test", station=Station("log", 1, batch=Const(d)))])
    for simulate in (fast.simulate, des.simulate):
        out = simulate(path, poisson_load(lam, 200_000, seed=3))
        hist = to_hdr(out.counts)
        for p in (50, 90):
            # P(T <= D + x) = 1 - u + u x / D for 0 <= x <= D.
            expected = d + d * (p / 100 - (1 - u)) / u
            assert hist.get_value_at_percentile(p) / 1e3 == pytest.approx(expected, rel=5e-3), (
                simulate,
                p,
            )


def test_a_batching_station_has_one_server() -> None:
    with pytest.raises(ValueError, match="only a one-server station takes batches"):
        Station("pool", 2, batch=Const(1.0))
    with pytest.raises(ValueError, match="batch_per_connection without a cost per batch"):
        Station("loop", 1, batch_per_connection=True)


def _percentiles(out: object) -> np.ndarray:
    hist = to_hdr(out.counts)  # type: ignore[attr-defined]
    return np.array([hist.get_value_at_percentile(p) / 1e3 for p in (50, 90, 99)])


# Two sleeping stations: idle-dependent cold starts (and a lingering gateway), or wake-ups that
# stall (exponential) after long sleeps.
SLEEPERS = {
    "cold starts": (
        Station("client", 1, wake=Exponential(3.0), cold_us=20.0, cold_tau_us=5.0),
        Station("gateway", 1, cold_us=10.0, cold_tau_us=20.0, linger_us=4.0),
    ),
    "stalls": (
        Station("client", 1, wake=Exponential(3.0), stall=Exponential(40.0), cold_tau_us=50.0),
        Station("gateway", 1, stall=Exponential(25.0), cold_tau_us=200.0),
    ),
}


@pytest.mark.parametrize("rate_per_us", [0.02, 0.15])
@pytest.mark.parametrize("kind", sorted(SLEEPERS))
def test_engines_agree_on_sleeping_stations(kind: str, rate_per_us: float) -> None:
    """Delays before and between two sleeping stations."""
    client, gateway = SLEEPERS[kind]
    path = compile_path(
        [
            Hop("client work", "test", service=Exponential(1.0), station=client),
            Hop("wire", "test", delay=Exponential(2.0)),
            Hop("gateway work", "test", service=Const(1.5), station=gateway),
            Hop("wire back", "test", delay=Exponential(2.0)),
        ]
    )
    load = poisson_load(rate_per_us, 150_000, seed=9)
    got_fast, got_des = fast.simulate(path, load), des.simulate(path, load)
    mean_fast = got_fast.rtt_sum_us / got_fast.messages
    mean_des = got_des.rtt_sum_us / got_des.messages
    assert mean_fast == pytest.approx(mean_des, rel=0.02)
    assert _percentiles(got_fast) == pytest.approx(_percentiles(got_des), rel=0.03)
    busy_fast = got_fast.station_busy_us / got_fast.duration_us
    busy_des = got_des.station_busy_us / got_des.duration_us
    assert busy_fast == pytest.approx(busy_des, rel=0.03)


def test_stalls_come_after_long_sleeps() -> None:
    """Arrivals every 100 us, service 1 us, a 20 us stall with probability 1 - exp(-idle / 100).

    A message after an unstalled one finds the thread idle 99 us (stall probability
    p1 = 1 - exp(-0.99)), after a stalled one 79 us (p2 = 1 - exp(-0.79)): a two-state chain
    whose stalled share is p1 / (1 + p1 - p2), so the mean round trip is 1 + 20 x that."""
    station = Station("thread", 1, stall=Const(20.0), cold_tau_us=100.0)
    path = compile_path([Hop("work", "test", service=Const(1.0), station=station)])
    p1, p2 = -np.expm1(-0.99), -np.expm1(-0.79)
    expected = 1.0 + 20.0 * p1 / (1.0 + p1 - p2)
    for simulate, n in ((fast.simulate, 400_000), (des.simulate, 60_000)):
        load = replace(poisson_load(0.01, n, seed=5), arrivals=dtypes.ARRIVALS_UNIFORM)
        out = simulate(path, load)
        share = (out.rtt_sum_us / out.messages - 1.0) / 20.0
        sd = math.sqrt(p1 / (1 + p1 - p2) * (1 - p1 / (1 + p1 - p2)) / out.messages)
        assert share * 20.0 + 1.0 == pytest.approx(expected, abs=20.0 * 4 * sd), simulate


def test_a_stall_holds_no_server() -> None:
    """A stall is a late wake-up, not work: Poisson arrivals 50 us apart on average, service
    1 us, a 30 us stall nearly always after a sleep (time constant 1 us). The round trip holds
    it (mean near 1 + 30 x the share that found the thread idle), the servers' busy time does
    not (exactly the arrivals' 1 us each)."""
    station = Station("thread", 1, stall=Const(30.0), cold_tau_us=1.0)
    path = compile_path([Hop("work", "test", service=Const(1.0), station=station)])
    for simulate in (fast.simulate, des.simulate):
        out = simulate(path, poisson_load(0.02, 40_000, seed=3))
        served_per_us = out.messages / out.duration_us
        assert out.station_busy_us[0] / out.duration_us == pytest.approx(served_per_us, rel=0.02)
        assert out.rtt_sum_us / out.messages > 1.0 + 30.0 * 0.9, simulate


def test_only_hops_that_may_stall_stall() -> None:
    """The thread above visited twice a round trip, 10 us apart: first by a hop whose wake-up
    may stall (a timer), then by one whose wake-up may not (a socket's data). Only the first
    stalls: it finds the thread idle 100 - 12 = 88 us after an unstalled round trip and 68 us
    after a stalled one, so the mean round trip is 12 + 20 x p1 / (1 + p1 - p2) with
    p1 = 1 - exp(-0.88), p2 = 1 - exp(-0.68); the second visit, 10 us after the first, would
    add 20 x (1 - exp(-0.1)) more if it could stall."""
    station = Station("thread", 1, stall=Const(20.0), cold_tau_us=100.0)
    path = compile_path(
        [
            Hop("timer", "test", service=Const(1.0), station=station),
            Hop("wire", "test", fixed_us=10.0),
            Hop("socket", "test", service=Const(1.0), station=station, may_stall=False),
        ]
    )
    p1, p2 = -np.expm1(-0.88), -np.expm1(-0.68)
    share = p1 / (1.0 + p1 - p2)
    for simulate, n in ((fast.simulate, 400_000), (des.simulate, 60_000)):
        load = replace(poisson_load(0.01, n, seed=5), arrivals=dtypes.ARRIVALS_UNIFORM)
        out = simulate(path, load)
        sd = math.sqrt(share * (1 - share) / out.messages)
        mean = out.rtt_sum_us / out.messages
        assert mean == pytest.approx(12.0 + 20.0 * share, abs=20.0 * 4 * sd), simulate


def test_a_thread_woken_moments_after_it_slept_almost_never_stalls() -> None:
    """Arrivals every 2 us, service 1 us, a 1000 us stall with probability 1 - exp(-1 / 1e6):
    about one wake-up in a million stalls, so a run of 50,000 almost surely sees none."""
    station = Station("thread", 1, stall=Const(1000.0), cold_tau_us=1e6)
    path = compile_path([Hop("work", "test", service=Const(1.0), station=station)])
    load = replace(poisson_load(0.5, 50_000, seed=5), arrivals=dtypes.ARRIVALS_UNIFORM)
    for simulate in (fast.simulate, des.simulate):
        out = simulate(path, load)
        assert out.rtt_sum_us / out.messages == pytest.approx(1.0, abs=0.05)


@pytest.mark.parametrize(
    ("spacing_us", "n_fast", "n_des"), [(100.0, 200_000, 40_000), (25.0, 400_000, 60_000)]
)
def test_a_stall_alike_at_every_wake_up_ignores_the_sleep_and_the_polling_window(
    spacing_us: float, n_fast: int, n_des: int
) -> None:
    """``stall_every_wake``: evenly spaced arrivals, service 1 us, a stall of 20 us in a quarter
    of the draws (else 0), a host that polls the halted vCPU for 200 us and a time scale of
    1e6 us, so that a stall after a sleep would almost never come. A stalled message is served
    before the next arrives, so every message finds the thread asleep (4 to 99 us) and pays a
    draw: the mean round trip is exactly 1 + 5 us, after long sleeps and short ones alike."""
    station = Station(
        "thread", 1, stall=Empirical((0.0, 0.0, 0.0, 20.0)), cold_tau_us=1e6,
        halt_share=0.5, halt_tau_us=0.01, halt_poll=HaltPolling(max_us=200.0),
        stall_every_wake=True,
    )  # fmt: skip
    alike = compile_path([Hop("work", "test", service=Const(1.0), station=station)])
    after_sleep = compile_path(
        [Hop("work", "test", service=Const(1.0), station=replace(station, stall_every_wake=False))]
    )
    sd = 20.0 * math.sqrt(0.25 * 0.75)
    for simulate, n in ((fast.simulate, n_fast), (des.simulate, n_des)):
        load = replace(poisson_load(1.0 / spacing_us, n, seed=5), arrivals=dtypes.ARRIVALS_UNIFORM)
        out = simulate(alike, load)
        assert out.rtt_sum_us / out.messages == pytest.approx(6.0, abs=4 * sd / math.sqrt(n))
        out = simulate(after_sleep, load)
        assert out.rtt_sum_us / out.messages == pytest.approx(1.0, abs=0.01), simulate


@pytest.mark.parametrize(("spacing_us", "chances"), [(300.0, 2), (100.0, 1)])
def test_a_stall_alike_at_every_wake_up_adds_to_the_one_after_a_long_sleep(
    spacing_us: float, chances: int
) -> None:
    """``stall_every_wake`` with a time scale: evenly spaced arrivals, service 1 us, a stall of
    20 us in a quarter of the draws, a host that polls the halted vCPU for up to 200 us and a
    time scale of 0.001 us (a sleep beyond the window always meets the after-sleep chance).
    Every message finds the thread asleep: 259 to 299 us apart, past the window, it draws twice
    (mean 1 + 2 x 5 us); 59 to 99 us apart, within the window once grown, only the every-wake
    draw (1 + 5 us, the window's first few wake-ups aside)."""
    station = Station(
        "thread", 1, stall=Empirical((0.0, 0.0, 0.0, 20.0)), cold_tau_us=1e-3,
        halt_share=0.5, halt_tau_us=0.01, halt_poll=HaltPolling(max_us=200.0),
        stall_every_wake=True,
    )  # fmt: skip
    path = compile_path([Hop("work", "test", service=Const(1.0), station=station)])
    sd = 20.0 * math.sqrt(0.25 * 0.75) * math.sqrt(chances)
    for simulate, n in ((fast.simulate, 200_000), (des.simulate, 40_000)):
        load = replace(poisson_load(1.0 / spacing_us, n, seed=7), arrivals=dtypes.ARRIVALS_UNIFORM)
        out = simulate(path, load)
        expected = 1.0 + 5.0 * chances
        assert out.rtt_sum_us / out.messages == pytest.approx(expected, abs=4 * sd / math.sqrt(n))


def test_a_stall_alike_at_every_wake_up_needs_no_time_scale() -> None:
    Station("thread", 1, stall=Const(20.0), stall_every_wake=True)
    with pytest.raises(ModelError, match="cold_tau_us"):
        Station("thread", 1, stall=Const(20.0))


def test_work_left_behind_queues_later_messages_as_mg1() -> None:
    """A hop's ``linger``: exponential service (mean 1 us), 0.5 us left on the server after each
    message leaves. Later messages wait as in an M/G/1 queue whose service is ``S + H``; each
    message's own time is its wait and ``S``: ``E[T] = lambda E[(S + H)^2] / (2 (1 - rho)) +
    E[S]``, ``rho = lambda E[S + H]`` (Pollaczek-Khinchine)."""
    lam, linger = 0.5, 0.5
    second = SERVICE_US**2 + (SERVICE_US + linger) ** 2  # Var(S) + E[S + H]^2
    rho = lam * (SERVICE_US + linger)
    expected = lam * second / (2 * (1 - rho)) + SERVICE_US
    station = Station("core", 1)
    hop = Hop(
        "work", "test", service=Exponential(SERVICE_US), station=station, linger=Const(linger)
    )
    path = compile_path([hop])
    for engine, messages in (("fast", 400_000), ("des", 20_000)):
        result = run_replications(path, poisson_load(lam, messages, seed=17), 8, engine=engine)
        got = result.estimates["mean"]
        low, high = covering_interval(got, result.ci95["mean"])
        assert low <= expected <= high, (engine, low, expected, high)
    out = des.simulate(path, poisson_load(lam, 40_000, seed=3))
    assert out.station_busy_us[0] / out.duration_us == pytest.approx(rho, rel=0.02)
    assert path.station_service_mean_us()[0] == pytest.approx(SERVICE_US + linger)


def _yielding(linger_us: float) -> CompiledPath:
    """Service 1 us, a wake-up of 3 us, and ``linger_us`` left behind that yields."""
    station = Station("vCPU", 1, wake=Const(3.0))
    hop = Hop("work", "test", service=Const(1.0), station=station, linger=Const(linger_us),
              linger_yields=True)  # fmt: skip
    return compile_path([hop])


def test_work_that_yields_delays_no_message() -> None:
    """Arrivals every 10 us, service 1 us, a wake-up of 3 us, 4 us left behind that yields
    (``linger_yields``): the station is awake until 8 us after each arrival and has slept 2 us
    when the next comes, which pays the wake-up: every round trip 4 us, busy 4 + 4 in 10."""
    load = replace(poisson_load(0.1, 4_000, seed=5), arrivals=dtypes.ARRIVALS_UNIFORM)
    for simulate in (fast.simulate, des.simulate):
        out = simulate(_yielding(4.0), load)
        assert out.rtt_sum_us / out.messages == pytest.approx(4.0, rel=1e-6), simulate
        assert out.station_busy_us[0] / out.duration_us == pytest.approx(0.8, rel=2e-3)


def test_work_that_yields_keeps_its_station_awake() -> None:
    """The same with 7 us left behind: a woken message leaves at 4 us and the station stays
    awake until 11, so the next (at 10) is served at once (1 us) and keeps it awake until 18;
    the one after (at 20) wakes it again. Round trips alternate 4 and 1 us, busy 4 + 7 + 1 + 7
    in 20 us."""
    load = replace(poisson_load(0.1, 4_000, seed=5), arrivals=dtypes.ARRIVALS_UNIFORM)
    _assert_two_round_trips(_yielding(7.0), load, (1.0, 4.0), 2.5, busy=(19 / 20, 2e-3))


def test_a_wake_ups_linger_yields_too() -> None:
    """A station's linger after a wake-up (15 us) at a visit whose work yields: arrivals every
    10 us, wake-up 3 us, service 1 us. The woken message leaves at 4 us, the next finds the
    station awake (until 19) and is served at once, the one after finds it asleep again: round
    trips alternate 4 and 1 us, where the linger held on the server gives 1 and 7
    (:func:`test_a_woken_station_lingers_busy_after_its_message_leaves`); busy 4 + 15 + 1 in 20."""
    station = Station("thread", 1, wake=Const(3.0), linger_us=15.0)
    hop = Hop("work", "test", service=Const(1.0), station=station, linger_yields=True)
    load = replace(poisson_load(0.1, 4_000, seed=5), arrivals=dtypes.ARRIVALS_UNIFORM)
    _assert_two_round_trips(compile_path([hop]), load, (1.0, 4.0), 2.5, busy=(1.0, 2e-3))


def test_work_that_yields_keeps_the_queue_of_its_messages_mg1() -> None:
    """Exponential service (mean 1 us) and 0.5 us left behind that yields: the messages queue as
    in an M/M/1 queue of their own work alone, ``E[T] = E[S] / (1 - lambda E[S])`` (the work left
    behind, unlike :func:`test_work_left_behind_queues_later_messages_as_mg1`'s, waits for them)."""
    lam = 0.5
    expected = SERVICE_US / (1 - lam * SERVICE_US)
    hop = Hop("work", "test", service=Exponential(SERVICE_US), station=Station("core", 1),
              linger=Const(0.5), linger_yields=True)  # fmt: skip
    path = compile_path([hop])
    for engine, messages in (("fast", 400_000), ("des", 20_000)):
        result = run_replications(path, poisson_load(lam, messages, seed=17), 8, engine=engine)
        low, high = covering_interval(result.estimates["mean"], result.ci95["mean"])
        assert low <= expected <= high, (engine, low, expected, high)


@pytest.mark.parametrize(("own_us", "rtt_us"), [(None, 13.0), (1.0, 11.0), (0.0, 10.0)])
def test_a_visit_pays_its_own_wake_up(own_us: float | None, rtt_us: float) -> None:
    """One thread visited twice a message, 5 us apart (a pure delay between): arrivals every
    100 us find it asleep both times. The first visit pays the station's wake-up (3 us), the
    second its own (``Hop.wake``: 1 us, or none) or, without one, the station's: round trips
    4 + 5 + 4, 4 + 5 + 2 and 4 + 5 + 1 us."""
    thread = Station("thread", 1, wake=Const(3.0))
    own = None if own_us is None else (Const(own_us) if own_us > 0 else ZERO)
    path = compile_path(
        [
            Hop("timer", "test", service=Const(1.0), station=thread),
            Hop("way", "test", fixed_us=5.0),
            Hop("socket", "test", service=Const(1.0), station=thread, wake=own),
        ]
    )
    load = replace(poisson_load(0.01, 2_000, seed=5), arrivals=dtypes.ARRIVALS_UNIFORM)
    for simulate in (fast.simulate, des.simulate):
        out = simulate(path, load)
        assert out.rtt_sum_us / out.messages == pytest.approx(rtt_us, rel=1e-9), simulate


def test_a_host_wakes_only_when_all_its_cores_are_idle() -> None:
    """Two servers, a wake-up of 3 us (on the path) and a cold linger of 20 us
    (``1 - exp(-gap / 1 us)``: all of it after a long idle), arrivals in pairs 1000 us apart:
    the first of a pair finds both servers idle and pays the wake-up and leaves the linger on
    its server; the second finds one idle, the other busy, and is served warm. Round trips 4 us
    and 1 us; busy 1 + 3 + 20 + 1 us per pair."""
    station = Station("vCPUs", 2, wake=Const(3.0), linger_cold_us=20.0, cold_tau_us=1.0)
    path = compile_path([Hop("work", "test", service=Const(1.0), station=station)])
    load = replace(poisson_load(0.002, 4_000, seed=5), arrivals=dtypes.ARRIVALS_UNIFORM, burst=2)
    _assert_two_round_trips(path, load, (1.0, 4.0), 2.5, busy=(25 / 1000, 1e-2))


def test_a_cold_linger_shrinks_with_a_shorter_sleep() -> None:
    """One server, service 1 us, a cold linger ``C (1 - exp(-gap / tau))`` off the path, arrivals
    every ``a`` us: the server is free again ``1 + C (1 - exp(-gap / tau))`` after each arrival,
    so the gap before the next settles at the fixed point ``gap = a - 1 - C (1 - exp(-gap /
    tau))``; every round trip is 1 us and the server is busy ``(a - gap) / a`` of the time."""
    a, c, tau = 10.0, 6.0, 8.0  # a stable fixed point: (c / tau) exp(-gap / tau) < 1
    gap = a - 1.0
    for _ in range(200):
        gap = a - 1.0 - c * -math.expm1(-gap / tau)
    station = Station("thread", 1, linger_cold_us=c, cold_tau_us=tau)
    path = compile_path([Hop("work", "test", service=Const(1.0), station=station)])
    load = replace(poisson_load(1 / a, 20_000, seed=5), arrivals=dtypes.ARRIVALS_UNIFORM)
    for simulate in (fast.simulate, des.simulate):
        out = simulate(path, load)
        assert out.rtt_sum_us / out.messages == pytest.approx(1.0, rel=1e-6), simulate
        busy = out.station_busy_us[0] / out.duration_us
        assert busy == pytest.approx((a - gap) / a, rel=1e-2), simulate


@pytest.mark.parametrize("rho", [0.3, 0.7])
def test_a_sleeping_host_of_two_cores_agrees_in_both_engines(rho: float) -> None:
    """Two servers that wake only from all-idle, with a cold start on the path and a cold linger
    and left-behind work off it: no closed form, so the engines are held to each other (means
    within 2%, p50/p90/p99 within 4%)."""
    station = Station(
        "vCPUs", 2, wake=Exponential(0.5), cold_us=1.0, linger_cold_us=2.0, cold_tau_us=3.0
    )
    hop = Hop("work", "test", service=Exponential(SERVICE_US), station=station,
              linger=Exponential(0.5))  # fmt: skip
    path = compile_path([hop])
    load = poisson_load(2 * rho / (1.5 * SERVICE_US), 200_000, seed=9)
    a, b = fast.simulate(path, load), des.simulate(path, load)
    assert a.rtt_sum_us / a.messages == pytest.approx(b.rtt_sum_us / b.messages, rel=0.02)
    np.testing.assert_allclose(_percentiles(a), _percentiles(b), rtol=0.04)
    assert a.station_busy_us[0] / a.duration_us == pytest.approx(
        b.station_busy_us[0] / b.duration_us, rel=0.02
    )


def test_station_and_hop_settings_are_checked() -> None:
    with pytest.raises(ValueError, match="linger_cold_us needs cold_tau_us"):
        Station("vCPUs", 2, linger_cold_us=1.0)
    with pytest.raises(ValueError, match="linger is work left on a station"):
        Hop("work", "test", linger=Const(1.0))
    with pytest.raises(ValueError, match="a wake-up of its own needs a station"):
        Hop("work", "test", wake=Const(1.0))
    with pytest.raises(ValueError, match="linger_yields needs a station"):
        Hop("work", "test", linger_yields=True)
    with pytest.raises(ValueError, match="linger_per_batch without a linger"):
        Hop("work", "test", station=Station("nic", 1), linger_per_batch=True)
    with pytest.raises(ValueError, match="needs a batching station earlier"):
        compile_path(
            [Hop("send", "test", station=Station("nic", 1), linger=Const(1.0),
                 linger_per_batch=True)]
        )  # fmt: skip
    with pytest.raises(ValueError, match="cold_tau_us must be > 0"):
        Station("thread", 1, cold_us=5.0)
    with pytest.raises(ValueError, match="cold_tau_us must be > 0 with a stall"):
        Station("thread", 1, stall=Const(5.0))
    with pytest.raises(ValueError, match="linger_us must be >= 0"):
        Station("thread", 1, linger_us=-2.0)
    with pytest.raises(ValueError, match="cold_us must be >= 0"):
        Station("thread", 1, cold_us=-1.0, cold_tau_us=1.0)
    same_name = Station("thread", 1, wake=Const(1.0))
    with pytest.raises(ValueError, match="declared twice differently"):
        compile_path(
            [
                Hop("a", "test", service=Const(1.0), station=same_name),
                Hop("b", "test", service=Const(1.0), station=Station("thread", 1)),
            ]
        )
