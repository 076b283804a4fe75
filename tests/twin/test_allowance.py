"""A token bucket in front of a station (:class:`twin.path.Allowance`), in both engines.

The credit a bucket is owed is the workload of an M/D/1 queue whose service is one message's
credit: a message waits that workload less the bucket's spare depth, never less than zero. So
a bucket one message deep waits exactly as an M/D/1 queue does, and a deeper one waits
``max(0, W - (depth - cost))`` with ``W`` Erlang's M/D/1 waiting time.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from scipy.integrate import quad

from tests.twin import queueing_theory as qt
from tests.twin.fast.test_fast_theory import poisson_load
from twin import des, dtypes
from twin.dists import Exponential
from twin.errors import ModelError
from twin.fast import engine as fast
from twin.histogram import counts_index, to_hdr
from twin.load import Load
from twin.path import Allowance, Hop, Station, compile_path
from twin.results import offered_utilization

COST_US = 1.0
ENGINES = {"fast": fast.simulate, "des": des.simulate}


def _bucket_path(depth_us: float) -> list[Hop]:
    station = Station("nic", 1, allowance=Allowance(depth_us))
    return [Hop("pps allowance", "test", station=station, allowance_us=COST_US)]


def _burst_load() -> Load:
    """Groups of 8 messages at once, every 100 us (the bucket refills between groups)."""
    load = poisson_load(0.08, 40_000, seed=3)
    return replace(load, arrivals=dtypes.ARRIVALS_UNIFORM, burst=8, warmup_us=1_000.0)


@pytest.mark.parametrize("engine", sorted(ENGINES))
def test_a_burst_passes_the_depth_then_waits_for_the_refill(engine: str) -> None:
    """A bucket three messages deep lets three of a group of eight through at once; the others
    wait 1, 2, ... 5 us for the refill: mean 15/8 us, the longest 5 us."""
    out = ENGINES[engine](compile_path(_bucket_path(3.0)), _burst_load())
    assert out.rtt_sum_us / out.messages == pytest.approx(15 / 8, rel=1e-9)
    assert out.rtt_max_us == pytest.approx(5.0, rel=1e-9)
    hist = to_hdr(out.counts)
    assert hist.get_value_at_percentile(37.5) / 1e3 < 0.01  # the three that found credit
    assert hist.get_value_at_percentile(99) / 1e3 == pytest.approx(5.0, rel=2e-3)


def _deep_bucket_wait_mean_us(arrival_per_us: float, spare_us: float) -> float:
    """E[max(0, W - spare)] for Erlang's M/D/1 waiting time W with service ``COST_US``."""

    def tail(t: float) -> float:
        return 1.0 - qt.md1_wait_cdf(t, arrival_per_us, COST_US)

    return quad(tail, spare_us, 30 * COST_US, limit=200, points=list(range(1, 30)))[0]


@pytest.mark.parametrize(("engine", "messages"), [("fast", 2_000_000), ("des", 300_000)])
@pytest.mark.parametrize("depth_us", [1.0, 3.0])
def test_poisson_waits_are_md1_waits_less_the_spare_depth(
    engine: str, messages: int, depth_us: float
) -> None:
    """At 0.5 messages per us of credit: one message deep, the P-K mean wait rho D / 2(1 - rho)
    = 0.5 us; three deep, the M/D/1 wait's excess over 2 us (and no wait at all with
    probability P(W <= 2 us))."""
    rate = 0.5
    spare = depth_us - COST_US
    expected = _deep_bucket_wait_mean_us(rate, spare)
    if depth_us == COST_US:
        assert expected == pytest.approx(qt.md1_sojourn_mean_us(rate, COST_US) - COST_US, rel=1e-6)
    out = ENGINES[engine](compile_path(_bucket_path(depth_us)), poisson_load(rate, messages, 21))
    assert out.rtt_sum_us / out.messages == pytest.approx(expected, rel=0.03)
    waited = 1.0 - out.counts[: counts_index(10) + 1].sum() / out.counts.sum()  # over 10 ns
    assert waited == pytest.approx(1.0 - qt.md1_wait_cdf(spare, rate, COST_US), abs=0.01)


def _percentiles(out: object) -> np.ndarray:
    hist = to_hdr(out.counts)  # type: ignore[attr-defined]
    return np.array([hist.get_value_at_percentile(p) / 1e3 for p in (50, 90, 99)])


def test_engines_agree_on_a_bucket_before_a_busy_server() -> None:
    """Credit for 0.6 of the sustained rate, then an exponential service at utilization 0.5."""
    station = Station("nic", 1, allowance=Allowance(4.0))
    path = compile_path(
        [
            Hop("wire", "test", delay=Exponential(2.0)),
            Hop("nic", "test", service=Exponential(1.0), station=station, allowance_us=1.2),
            Hop("wire back", "test", delay=Exponential(2.0)),
        ]
    )
    load = poisson_load(0.5, 200_000, seed=4)
    got_fast, got_des = fast.simulate(path, load), des.simulate(path, load)
    assert got_fast.rtt_sum_us / got_fast.messages == pytest.approx(
        got_des.rtt_sum_us / got_des.messages, rel=0.02
    )
    assert _percentiles(got_fast) == pytest.approx(_percentiles(got_des), rel=0.03)
    busy_fast = got_fast.station_busy_us / got_fast.duration_us
    assert busy_fast == pytest.approx(got_des.station_busy_us / got_des.duration_us, rel=0.02)
    assert busy_fast[0] == pytest.approx(0.5, rel=0.02)  # waiting for credit is not work


def test_the_sustained_rate_bounds_the_offered_load() -> None:
    """However deep the bucket, 1.2 us of credit a message saturates at 1/1.2 msg per us."""
    station = Station("nic", 1, allowance=Allowance(1_000.0))
    path = compile_path([Hop("nic", "test", station=station, allowance_us=1.2)])
    load = poisson_load(0.5, 1_000, seed=1)
    assert offered_utilization(path, load)[0] == pytest.approx(0.6)


def test_allowance_settings_are_checked() -> None:
    with pytest.raises(ModelError, match="depth_us"):
        Allowance(0.0)
    with pytest.raises(ModelError, match="needs a station with an allowance"):
        Hop("nic", "test", station=Station("nic", 1), allowance_us=1.0)
    with pytest.raises(ModelError, match="could never pass"):
        Hop("nic", "test", station=Station("nic", 1, allowance=Allowance(1.0)), allowance_us=2.0)
    with pytest.raises(ModelError, match="reader"):
        Station("loop", 1, reader=True, allowance=Allowance(1.0))
