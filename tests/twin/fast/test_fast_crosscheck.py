"""The fast engine against the SimPy reference on shipped scenarios (fast is tested vs slow).

The reference runs about 500 messages per wall second on the full path, so CI compares a short
``des`` run (about 2,500 messages) with a long ``fast`` run (hundreds of thousands) and sets
every tolerance from the reference's own sample size, honestly:

- the reference's CDF at the fast engine's p50, p90 and p99 must lie within four binomial
  standard errors of 0.50, 0.90 and 0.99 (sample size halved for the correlation of order/cancel
  pairs and of queueing), plus one histogram bucket;
- the KS distance must be below the two-sample 0.1% critical value, times 1.5 for correlation;
- mean round trip and per-hop means within four standard errors, service per message within 5%,
  throughput within four Poisson standard errors of the reference window's cycle count. The
  standard error of a mean is the larger of the i.i.d. formula and the spread of that mean across
  independent seeds of a reference-length run (:func:`run_length_spread`, computed with the fast
  engine, which is cheap): at 400k msg/s, bursts of queueing make a 2,500-message mean about five
  times noisier than the i.i.d. formula says, so that formula alone made the test a coin toss.

``benchmarks/crosscheck_full.py`` runs every shipped scenario at both rates with long
reference runs and reports the issue's 2% / KS < 0.01 bar.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from tests.twin.conftest import SCENARIOS
from twin import des, fast
from twin.fast.crosscheck import CROSSCHECK_FLOWS, compare, ks_critical
from twin.histogram import to_hdr
from twin.scenario import load_scenario
from twin.simulation import Prepared, apply_overrides, prepare

DES_MESSAGES = 2_500
FAST_MESSAGES = 400_000
WARMUP_S = 0.002
CASES = [
    ("tier1_peering_cpg", 10_000),
    ("tier1_peering_cpg", 400_000),
    ("tier3_privatelink", 400_000),
    ("tier4_cloudfront", 10_000),
    ("aeron_echo_cpg", 400_000),  # over CROSSCHECK_FLOWS: one kernel flow saturates
    ("netperf_rr_c5n_cpg", 10_000),
    ("venue_api_keepalive", 10),  # a t2.micro's REST client: ~150 requests/s at most
    ("venue_api_new_connection", 10),
    ("cluster_3az", 100_000),
    ("tier1_replicated", 400_000),
]
# A venue scenario runs one hour of its day here: its busiest, where the venue's wait is longest.
VENUE_HOUR = 14


def prepared_for(name: str, rate: float, messages: int, seed: int) -> Prepared:
    scenario = load_scenario(SCENARIOS / f"{name}.toml")
    if scenario.day is not None:
        scenario = scenario.with_fields({"day.hour": VENUE_HOUR})
    if (name, rate) in CROSSCHECK_FLOWS:
        scenario = scenario.with_fields({"workload.accounts": CROSSCHECK_FLOWS[name, rate]})
    # Closed loops with one account reach at most ~12k msg/s whatever the target.
    achieved = min(rate, 12_000.0) if scenario.workload.loop == "closed" else rate
    duration_s = messages / achieved
    # A 2 ms warm-up fills the pipeline (round trips are 0.05-1 ms, utilizations <= 0.7); the
    # shipped 0.1 s would cost the reference 40,000 unrecorded messages at 400k msg/s.
    scenario = apply_overrides(scenario, rate, duration_s, seed)
    # The warm-up must also outlast a round trip: service begun in the window is compared per
    # recorded message, which holds only if the window sees every hop of as many messages as it
    # records (the venue's round trips take 10-60 ms).
    rtt_s = prepare(scenario).path.unloaded_mean_us() / 1e6
    return prepare(scenario.with_fields({"workload.warmup_s": max(WARMUP_S, 2 * rtt_s)}))


SPREAD_SEEDS = 40


def run_length_spread(prep: Prepared) -> tuple[float, np.ndarray]:
    """Standard deviation across seeds of the mean round trip and of the per-hop means."""
    means, hops = [], []
    for k in range(SPREAD_SEEDS):
        out = fast.simulate(prep.path, dataclasses.replace(prep.load, seed=10_000 + k))
        means.append(out.rtt_sum_us / out.messages)
        hops.append(out.hop_time_sum_us / out.messages)
    return float(np.std(means, ddof=1)), np.std(hops, axis=0, ddof=1)


def histogram_sd_us(counts: np.ndarray) -> float:
    hist = to_hdr(counts)
    return float(hist.get_stddev()) / 1e3


@pytest.mark.slow
@pytest.mark.parametrize(("name", "rate"), CASES)
def test_fast_matches_des(name: str, rate: float) -> None:
    # One seed: it also drives placement, which must be the same. The engines draw from
    # different streams of it.
    ref_prep = prepared_for(name, rate, DES_MESSAGES, seed=11)
    cand_prep = prepared_for(name, rate, FAST_MESSAGES, seed=11)
    assert not ref_prep.is_saturated()
    assert ref_prep.placements == cand_prep.placements
    reference = des.simulate(ref_prep.path, ref_prep.load)
    candidate = fast.simulate(cand_prep.path, cand_prep.load)
    result = compare(reference, candidate)
    n_eff = reference.messages / 2
    for key, p in (("p50", 0.50), ("p90", 0.90), ("p99", 0.99)):
        slack = 4 * math.sqrt(p * (1 - p) / n_eff) + 0.002
        assert result.reference_rank[key] == pytest.approx(p, abs=slack), (key, result)
    assert result.ks < 1.5 * ks_critical(reference.messages, candidate.messages), result
    spread_mean, spread_hops = run_length_spread(ref_prep)
    se = max(histogram_sd_us(reference.counts) / math.sqrt(n_eff), spread_mean)
    ref_mean = reference.rtt_sum_us / reference.messages
    cand_mean = candidate.rtt_sum_us / candidate.messages
    assert cand_mean == pytest.approx(ref_mean, abs=4 * se + 1e-3 * ref_mean)
    # Per-hop accounting: the hop means sum to the round trip and agree hop by hop.
    ref_hops = reference.hop_time_sum_us / reference.messages
    cand_hops = candidate.hop_time_sum_us / candidate.messages
    assert cand_hops.sum() == pytest.approx(cand_mean, rel=1e-9)
    hop_tolerance = 0.1 * np.abs(ref_hops) + 4 * np.maximum(se, spread_hops)
    assert np.all(np.abs(cand_hops - ref_hops) <= hop_tolerance), (cand_hops, ref_hops)
    # Service begun in the window, per recorded message (dividing by the message count removes
    # the Poisson noise of how many cycles the short reference window happened to get).
    np.testing.assert_allclose(
        candidate.station_busy_us / candidate.messages,
        reference.station_busy_us / reference.messages,
        rtol=0.05,
        atol=1e-3,
    )
    cycles = reference.messages / ref_prep.load.messages_per_cycle
    assert candidate.messages / candidate.duration_us == pytest.approx(
        reference.messages / reference.duration_us, rel=4 / math.sqrt(cycles)
    )


def test_same_seed_same_output_whatever_the_chunking() -> None:
    """Pausing for progress reports and growing slot arrays change no draw."""
    prep = prepared_for("tier1_peering_cpg", 400_000, 50_000, seed=5)
    plain = fast.simulate(prep.path, prep.load)
    again = fast.simulate(prep.path, prep.load)
    reported: list[float] = []
    chunked_module = fast.engine
    old = (chunked_module.MESSAGES_PER_CHUNK, chunked_module.INITIAL_SLOTS)
    try:
        chunked_module.MESSAGES_PER_CHUNK, chunked_module.INITIAL_SLOTS = 997, 2
        chunked = fast.simulate(prep.path, prep.load, progress=reported.append)
    finally:
        chunked_module.MESSAGES_PER_CHUNK, chunked_module.INITIAL_SLOTS = old
    for other in (again, chunked):
        np.testing.assert_array_equal(plain.counts, other.counts)
        assert plain.messages == other.messages
        assert plain.rtt_sum_us == other.rtt_sum_us
        np.testing.assert_array_equal(plain.hop_time_sum_us, other.hop_time_sum_us)
        np.testing.assert_array_equal(plain.station_busy_us, other.station_busy_us)
    assert len(reported) > 10 and reported[-1] == 1.0
    assert reported == sorted(reported)
    other_seed = fast.simulate(prep.path, dataclasses.replace(prep.load, seed=6))
    assert other_seed.rtt_sum_us != plain.rtt_sum_us


def test_records_only_messages_sent_in_the_window() -> None:
    """Evenly spaced sends: exactly rate x duration messages are recorded, each completes."""
    prep = prepared_for("aeron_echo_cpg", 100_000, 10_000, seed=1)
    out = fast.simulate(prep.path, prep.load)
    assert out.messages == pytest.approx(10_000, abs=1)
    assert int(out.counts.sum()) == out.messages
