"""Sizing, summaries and figures of the explorer's runs (app.runner, app.charts)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app import charts, runner
from twin import DEFAULT_ENGINE, load_profile, load_scenario, prepare
from twin.histogram import (
    bucket_lowest_ns,
    cdf_points_us,
    counts_index,
    empty_counts,
    percentile_ci95_us,
    record_us,
    to_hdr,
)
from twin.sweep.capacity import capacity_from_curve, saturation_rate

SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"


@pytest.fixture(scope="module")
def tier1():
    return load_scenario(SCENARIOS / "tier1_peering_cpg.toml")


@pytest.fixture(scope="module")
def small_run(tier1):
    return runner.simulate(tier1, "des", 400)


@settings(deadline=None)  # the first call loads the Numba-compiled counts_index
@given(st.integers(1, 3_600_000_000_000))
def test_bucket_values_invert_the_histogram_layout(value_ns: int) -> None:
    index = int(counts_index(np.int64(value_ns)))
    low = int(bucket_lowest_ns(np.array([index]))[0])
    assert low <= value_ns and counts_index(np.int64(low)) == index


def test_cdf_and_percentile_intervals_agree_with_the_histogram() -> None:
    counts = empty_counts()
    record_us(counts, np.random.default_rng(3).lognormal(4, 0.3, 5000))
    x, p = cdf_points_us(counts)
    assert np.all(np.diff(x) > 0) and np.all(np.diff(p) > 0) and p[-1] == pytest.approx(1)
    hist = to_hdr(counts)
    for _, pct in runner.PERCENTILES:
        lo, hi = percentile_ci95_us(counts, pct)
        assert lo <= hist.get_value_at_percentile(pct) / 1e3 <= hi


def test_hop_moments_add_up_to_the_unloaded_round_trip() -> None:
    for name in ("aeron_echo_cpg", "netperf_rr_c5n_nopg", "tier3_privatelink", "tier4_cloudfront"):
        prepared = prepare(load_scenario(SCENARIOS / f"{name}.toml"))
        means, variances = runner.hop_moments_us(prepared)
        assert means.sum() == pytest.approx(prepared.path.unloaded_mean_us())
        assert np.all(variances >= 0)


def test_hop_shares_add_up_to_the_target() -> None:
    means, variances = np.array([1.0, 2.0, 3.0]), np.array([0.0, 1.0, 3.0])
    shares = runner.hop_shares_at(means, variances, 6.0, 10.0)
    assert shares.sum() == pytest.approx(10.0) and shares[0] == 1.0


@pytest.mark.parametrize("name", ["tier1_peering_cpg", "netperf_rr_c5n_cpg"])
def test_runs_are_sized_to_the_message_budget(name: str) -> None:
    summary = runner.simulate(load_scenario(SCENARIOS / f"{name}.toml"), "des", 300)
    assert summary.stable and 150 <= summary.messages <= 600


def test_a_run_summary_has_percentiles_intervals_and_hops(small_run) -> None:
    assert small_run.p("p50") <= small_run.p("p99") <= small_run.p("p99.9")
    assert set(small_run.ci95_us) == {k for k, _ in runner.PERCENTILES}
    assert sum(h.mean_us for h in small_run.hops) == pytest.approx(small_run.p("mean"), rel=1e-6)
    assert sum(h.p99_us for h in small_run.hops) == pytest.approx(small_run.p("p99"), rel=1e-6)
    assert small_run.result["stable"] is True


def test_a_saturating_rate_is_reported_unstable(tier1) -> None:
    top = saturation_rate(tier1)
    summary = runner.simulate(tier1.with_fields({"workload.rate_msgs_per_s": top * 1.5}), "des", 10)
    assert not summary.stable and summary.saturated


def test_curve_rates_rise_to_just_below_saturation(tier1) -> None:
    rates = runner.curve_rates(tier1)
    assert rates == sorted(rates) and 10_000 in rates
    assert rates[-1] < saturation_rate(tier1)


@pytest.mark.parametrize(
    ("ceiling", "expected"),
    [(50.0, None), (150.0, 15.0), (1e6, 40.0)],
)
def test_capacity_under_a_ceiling(ceiling: float, expected: float | None) -> None:
    capacity, _ = capacity_from_curve([10.0, 20.0, 40.0], [100.0, 200.0, 300.0], ceiling)
    assert capacity == expected


def test_an_unstable_upper_end_gives_the_middle_of_the_bracket() -> None:
    """Issue 22: the explorer took the low end of a bracket whose upper end is unstable where
    twin capacity took its middle; both now call twin.sweep.capacity.capacity_from_curve."""
    curve = ([10.0, 20.0, 40.0], [100.0, 200.0, math.inf])
    assert capacity_from_curve(*curve, 250.0) == (30.0, "p99 crosses the ceiling")


def test_engine_sizes_are_chosen_per_engine() -> None:
    assert DEFAULT_ENGINE in ("fast", "des")
    assert runner.sample_messages("des") <= 2_000 < runner.sample_messages("fast")
    assert runner.sweep_messages("des") <= runner.sample_messages("des")


def test_figures_and_tables_build(small_run) -> None:
    spec = charts.cdf_chart({"a": small_run}, ["p99"], tail=True).to_dict()
    assert len(spec["layer"]) == 4  # the curve, the mark, its rule and its label
    assert spec["layer"][0]["encoding"]["y"]["scale"]["type"] == "log"
    assert charts.tiers_figure({"Tier 1": small_run, "Tier 2": small_run}).data
    rows = charts.hop_rows(small_run, by_component=True)
    assert sum(r["mean (µs)"] for r in rows) == pytest.approx(small_run.p("mean"), rel=1e-6)
    assert charts.waterfall_figure(rows, "at p99 (µs)", "p99").data
    fig = charts.curve_figure([1e4, 2e4], [small_run, small_run], 100.0, 1.5e4)
    assert len(fig.data) == 3
    rows = charts.percentile_rows(small_run, ["p99"])
    assert [r["statistic"] for r in rows] == ["p99", "mean", "max"]
    # The order loop's order and cancel apart, from the same run.
    kinds = small_run.result["rtt_by_kind_us"]
    assert rows[0]["order (µs)"] == kinds["order"]["p99"]
    assert rows[1]["cancel (µs)"] == kinds["cancel"]["mean"]
    assert max(rows[2]["order (µs)"], rows[2]["cancel (µs)"]) == rows[2]["round trip (µs)"]
    assert rows[1]["95% interval (µs)"] == "—" and " .. " in rows[0]["95% interval (µs)"]
    # The explorer's own percentile names ("p99.9") map to the result's keys ("p99_9").
    tail = charts.percentile_rows(small_run, ["p99.9"])[0]
    assert tail["cancel (µs)"] == kinds["cancel"]["p99_9"]


def test_profile_tables_show_the_fit_and_degrade_without_it(tmp_path: Path) -> None:
    profile = load_profile(Path(runner.__file__).parents[1] / "twin/profiles/default.toml")
    rows = charts.profile_rows(profile)
    assert len(rows) == len(profile) and all(r["source"] for r in rows)
    fit = charts.target_rows(profile)  # the calibrator's [meta.calibration.fit]
    assert {r["target"] for r in fit} == set(profile.meta["calibration"]["fit"])
    assert all({"measured", "predicted", "error"} <= set(r) for r in fit)
    fitted = tmp_path / "fitted.toml"
    fitted.write_text(
        '[params.x]\nvalue = 1.0\nsource = "fit"\n'
        "[targets.tier1_p50]\nmeasured_us = 60.0\npredicted_us = 61.5\n"
    )
    assert charts.target_rows(load_profile(fitted)) == [
        {"target": "tier1_p50", "measured_us": 60.0, "predicted_us": 61.5}
    ]


def test_formats() -> None:
    assert charts.format_us(2394.12) == "2,394.1 µs"
    assert charts.format_rate(400_000) == "400k msg/s"
    assert charts.format_rate(1_000_000) == "1M msg/s"


@pytest.mark.parametrize("name", ["tier1_peering_cpg", "venue_api_keepalive"])
def test_a_what_if_prepares_once_and_runs_what_two_preparations_ran(name, monkeypatch) -> None:
    """Issue 74: a what-if placed and compiled its scenario twice (once to size it)."""
    from twin.simulation import prepare as real_prepare
    from twin.simulation import run_prepared

    scenario = load_scenario(SCENARIOS / f"{name}.toml")
    calls = []
    monkeypatch.setattr(runner, "prepare", lambda s: calls.append(s) or real_prepare(s))
    once = runner.sized_prepared(scenario, 300)
    assert len(calls) == 1
    twice = real_prepare(runner.sized(scenario, 300))
    assert once.scenario == twice.scenario and once.load == twice.load
    assert run_prepared(once, "fast").rtt_us == run_prepared(twice, "fast").rtt_us
