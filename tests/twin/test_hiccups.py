"""A station whose vCPU is taken now and then (twin.path.Hiccups), in both engines.

A station's hiccups are a high-priority class of work on its server, preemptive-resume: the
priority M/G/1 queue gives the messages' mean sojourn exactly. The timeline's rule (a service
due in a hiccup starts when it ends, one under way is stretched by every hiccup that starts
before it ends) is checked on the drawn periods themselves, and both engines meet the same
hiccups.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from tests.twin import queueing_theory as qt
from tests.twin.fast.test_fast_theory import covering_interval, poisson_load
from twin import des, dtypes
from twin.dists import Const, Exponential
from twin.errors import ModelError
from twin.fast import _hiccup
from twin.fast import engine as fast
from twin.histogram import to_hdr
from twin.load import Load
from twin.path import CompiledPath, Hiccups, Hop, Station, compile_path
from twin.replicate import run_replications
from twin.results import offered_utilization

SERVICE_US = 1.0
HICCUP_US = 5.0
HICCUPS = Hiccups(0.02e6, Exponential(HICCUP_US))  # 2 a 100 us, a tenth of the vCPU


def hiccup_queue(
    hiccups: Hiccups | None = HICCUPS, service: Const | Exponential | None = None
) -> CompiledPath:
    station = Station("thread", 1, hiccups=hiccups)
    work = Exponential(SERVICE_US) if service is None else service
    return compile_path([Hop("work", "test", service=work, station=station)])


def _expected(rho: float) -> float:
    return qt.preemptive_priority_sojourn_mean_us(
        rho / SERVICE_US, SERVICE_US, 2 * SERVICE_US**2, 0.02, HICCUP_US, 2 * HICCUP_US**2
    )


@pytest.mark.parametrize("rho", [0.3, 0.7])
def test_fast_hiccups_match_the_preemptive_priority_queue(rho: float) -> None:
    expected = _expected(rho)
    result = run_replications(hiccup_queue(), poisson_load(rho, 400_000, seed=7), 10, engine="fast")
    got = result.estimates["mean"]
    assert got == pytest.approx(expected, rel=0.02)
    lo, hi = covering_interval(got, result.ci95["mean"])
    assert lo <= expected <= hi, (lo, expected, hi)


def test_des_hiccups_match_the_preemptive_priority_queue() -> None:
    out = des.simulate(hiccup_queue(), poisson_load(0.5, 150_000, seed=3))
    assert out.rtt_sum_us / out.messages == pytest.approx(_expected(0.5), rel=0.04)


def test_the_two_engines_meet_the_same_hiccups() -> None:
    """With a constant service and evenly spaced arrivals the hiccups are the only draws that
    matter: both engines give the same round trips."""
    path = hiccup_queue(Hiccups(0.01e6, Exponential(20.0)), Const(2.0))
    load = replace(poisson_load(0.2, 50_000, seed=5), arrivals=dtypes.ARRIVALS_UNIFORM)
    outs = [simulate(path, load) for simulate in (fast.simulate, des.simulate)]
    assert outs[0].messages == outs[1].messages
    assert outs[0].rtt_sum_us == pytest.approx(outs[1].rtt_sum_us, rel=1e-9)
    assert outs[0].rtt_max_us == pytest.approx(outs[1].rtt_max_us, rel=1e-9)
    assert outs[0].rtt_sum_us / outs[0].messages > 2.0 * 1.05  # the hiccups did delay some
    hists = [to_hdr(out.counts) for out in outs]
    for p in (50, 90, 99, 99.9):
        assert hists[0].get_value_at_percentile(p) == hists[1].get_value_at_percentile(p)


def _timeline(seed: int = 1) -> tuple[tuple[np.ndarray, ...], CompiledPath]:
    path = hiccup_queue(Hiccups(1e4, Const(30.0)))
    return _hiccup.hiccup_state(path, seed), path


def _finish(t: float, work: float, seed: int = 1) -> tuple[float, float, float]:
    """``finish(t, work)`` on a fresh timeline, and its first period."""
    (f, rng, gap, q, row), path = _timeline(seed)
    start, end = float(f[0, _hiccup.HF_START]), float(f[0, _hiccup.HF_END])
    done = _hiccup.finish(0, t, work, f, rng, gap, q, row, path.tables, path.table_lengths)
    return done, start, end


def test_work_is_stretched_by_the_hiccups_that_start_before_it_ends() -> None:
    (f, *_), _ = _timeline()
    start, end = float(f[0, _hiccup.HF_START]), float(f[0, _hiccup.HF_END])
    assert end - start >= 30.0  # one hiccup, or several queued
    assert _finish(start - 2.0, 1.0)[0] == pytest.approx(start - 1.0)  # done before it
    assert _finish(start - 2.0, 5.0)[0] == pytest.approx(end + 3.0)  # resumed after it
    assert _finish(start + 1.0, 0.0)[0] == pytest.approx(end)  # due in it: waits it out
    assert _finish(start + 1.0, 4.0)[0] == pytest.approx(end + 4.0)


def test_a_timeline_is_the_same_for_the_same_seed_and_not_for_another() -> None:
    assert _finish(0.0, 0.0, seed=3)[1:] == _finish(0.0, 0.0, seed=3)[1:]
    assert _finish(0.0, 0.0, seed=3)[1:] != _finish(0.0, 0.0, seed=4)[1:]


def test_the_hiccups_take_their_share_of_the_vcpu() -> None:
    """Over ten seconds the periods cover rate x mean length of the time."""
    (f, rng, gap, q, row), path = _timeline()
    taken = 0.0
    while f[0, _hiccup.HF_START] < 1e7:
        end = float(f[0, _hiccup.HF_END])
        taken += end - float(f[0, _hiccup.HF_START])
        _hiccup.finish(0, end, 0.0, f, rng, gap, q, row, path.tables, path.table_lengths)
    assert taken / 1e7 == pytest.approx(0.3, rel=0.05)


def test_offered_utilization_counts_the_hiccups_share() -> None:
    path = hiccup_queue()
    load = poisson_load(0.5, 1000, seed=1)
    assert offered_utilization(path, load)[0] == pytest.approx(0.5 + 0.1)


@pytest.mark.parametrize(
    "station",
    [
        lambda h: Station("pool", 2, hiccups=h),
        lambda h: Station("reader", 1, reader=True, hiccups=h),
    ],
    ids=["two-servers", "reader"],
)
def test_hiccups_need_one_server_that_is_not_a_reader(station) -> None:  # noqa: ANN001
    with pytest.raises(ModelError, match="hiccups need one server"):
        station(HICCUPS)


def test_hiccups_that_take_the_whole_vcpu_are_refused() -> None:
    with pytest.raises(ModelError, match="need < 100%"):
        Hiccups(1e5, Const(10.0))
    with pytest.raises(ModelError, match="rate_per_s"):
        Hiccups(-1.0, Const(10.0))


def test_a_station_without_hiccups_is_unchanged() -> None:
    """Rate 0 compiles to no hiccups: the same round trips as a station without any."""
    load: Load = poisson_load(0.5, 20_000, seed=2)
    plain = fast.simulate(hiccup_queue(None), load)
    none = fast.simulate(hiccup_queue(Hiccups(0.0, Const(10.0))), load)
    assert plain.rtt_sum_us == none.rtt_sum_us


def test_a_station_without_hiccups_finishes_its_work_unstretched() -> None:
    path = hiccup_queue(None)
    f, rng, gap, q, row = _hiccup.hiccup_state(path, 1)
    assert _hiccup.finish(0, 5.0, 2.5, f, rng, gap, q, row, path.tables, path.table_lengths) == 7.5
