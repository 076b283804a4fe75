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
from tests.twin.conftest import SCENARIOS
from tests.twin.fast.test_fast_theory import poisson_load
from twin import des, dtypes
from twin.catalogue import CATALOGUE
from twin.components.nic import nic_hop
from twin.dists import Exponential
from twin.errors import ModelError
from twin.fast import engine as fast
from twin.histogram import counts_index, to_hdr
from twin.load import Load
from twin.path import Allowance, Hop, Station, compile_path
from twin.profile import load_profile, profiles_dir
from twin.results import offered_utilization
from twin.scenario import load_scenario
from twin.simulation import prepare

COST_US = 1.0
ENGINES = {"fast": fast.simulate, "des": des.simulate}


def _bucket_path(depth_us: float) -> list[Hop]:
    bucket = Allowance("pps", depth_us)
    return [Hop("nic", "test", station=Station("nic", 1), allowance=bucket, allowance_us=COST_US)]


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
    bucket = Allowance("pps", 4.0)
    path = compile_path(
        [
            Hop("wire", "test", delay=Exponential(2.0)),
            Hop(
                "nic",
                "test",
                service=Exponential(1.0),
                station=Station("nic", 1),
                allowance=bucket,
                allowance_us=1.2,
            ),
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
    """However deep the bucket, 0.6 us of credit a visit, two visits (two stations) a round
    trip, saturates at 1/1.2 round trips per us: both stations report the bucket's share."""
    bucket = Allowance("pps", 1_000.0)
    path = compile_path(
        [
            Hop("tx", "test", station=Station("tx", 1), allowance=bucket, allowance_us=0.6),
            Hop("rx", "test", station=Station("rx", 1), allowance=bucket, allowance_us=0.6),
        ]
    )
    load = poisson_load(0.5, 1_000, seed=1)
    assert offered_utilization(path, load) == pytest.approx([0.6, 0.6])


def test_allowance_settings_are_checked() -> None:
    with pytest.raises(ModelError, match="depth_us"):
        Allowance("pps", 0.0)
    bucket = Allowance("pps", 1.0)
    with pytest.raises(ModelError, match="without an allowance"):
        Hop("nic", "test", station=Station("nic", 1), allowance_us=1.0)
    with pytest.raises(ModelError, match="could never pass"):
        Hop("nic", "test", station=Station("nic", 1), allowance=bucket, allowance_us=2.0)
    with pytest.raises(ModelError, match="not a reader"):
        Hop(
            "read",
            "test",
            station=Station("loop", 1, reader=True),
            allowance=bucket,
            allowance_us=1,
        )
    with pytest.raises(ModelError, match="on arriving at a station"):
        Hop("wire", "test", allowance=bucket, allowance_us=1.0)
    twice = [
        Hop("tx", "test", station=Station("tx", 1), allowance=bucket, allowance_us=1.0),
        Hop(
            "rx",
            "test",
            station=Station("rx", 1),
            allowance=Allowance("pps", 2.0),
            allowance_us=1.0,
        ),
    ]
    with pytest.raises(ModelError, match="declared twice differently"):
        compile_path(twice)


def test_a_nic_serialises_at_line_rate_behind_its_packet_allowance() -> None:
    """c5n.xlarge ("up to 25 Gb/s", 5 Gb/s baseline): a packet is clocked out at the cluster
    group's 10 Gb/s flow limit, not at the baseline, and takes 1e6 / pps of the allowance."""
    instance = CATALOGUE["c5n.xlarge"]
    profile = load_profile(profiles_dir() / "default.toml")
    hop = nic_hop("client", "tx", instance, 1_000, 1, True, profile)
    assert hop.service.mean == pytest.approx(1_000 * 8 / 10e3)
    assert hop.allowance_us == pytest.approx(1e6 / instance.pps_allowance)
    assert hop.allowance is not None
    depth = profile.value("ena_allowance_depth_packets") * 1e6 / instance.pps_allowance
    assert hop.allowance.depth_us == pytest.approx(depth)
    assert hop.allowance == nic_hop("client", "rx", instance, 1_000, 1, True, profile).allowance


def test_the_packet_allowance_sets_a_small_instances_saturation() -> None:
    """Two c5n.xlarge exchanging one-packet messages: each round trip sends one packet and
    receives one on each instance, both from its one (bidirectional) allowance."""
    scenario = load_scenario(SCENARIOS / "netperf_rr_c5n_cpg.toml")
    prepared = prepare(scenario)
    rho = offered_utilization(prepared.path, prepared.load)
    names = prepared.path.station_names
    pps = CATALOGUE["c5n.xlarge"].pps_allowance
    rate = prepared.load.rate_msgs_per_s
    for station in ("client NIC tx", "client NIC rx", "gateway NIC tx"):
        assert rho[names.index(station)] == pytest.approx(2 * rate / pps)
