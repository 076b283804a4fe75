"""The explorer's control logic through Streamlit's AppTest (no browser, no server)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from app import runner
from twin import DEFAULT_ENGINE

SCRIPT = Path(__file__).resolve().parents[2] / "app" / "explorer.py"
TIMEOUT_S = 120


@pytest.fixture
def app() -> AppTest:
    at = AppTest.from_file(str(SCRIPT), default_timeout=TIMEOUT_S).run()
    assert not at.exception
    return at


def p99_us(at: AppTest) -> float:
    (metric,) = [m for m in at.metric if m.label == "p99"]
    match = re.fullmatch(r"([\d,]+\.\d) µs", metric.value)
    assert match, metric.value
    return float(match.group(1).replace(",", ""))


def summary_line(at: AppTest) -> str:
    return next(c.value for c in at.caption if " · placement " in c.value)


def test_starts_on_tier_1_with_the_scenarios_own_values(app: AppTest) -> None:
    assert app.selectbox(key="base").value == "tier1_peering_cpg"
    assert app.radio(key="tier").value == 1
    assert app.radio(key="placement").value == "shared CPG"
    assert app.select_slider(key="rate_msgs_per_s").value == 10_000
    assert 20 < p99_us(app) < 1_000
    engine = DEFAULT_ENGINE
    assert f"engine **{engine}**, {runner.sample_messages(engine):,} messages" in summary_line(app)
    assert not app.error


def test_picking_tier_4_resets_placement_and_raises_the_p99(app: AppTest) -> None:
    tier1 = p99_us(app)
    app.radio(key="tier").set_value(4).run()
    assert app.radio(key="placement").value == "none"
    assert summary_line(app).startswith("Tier 4 · Internet via CloudFront · placement none")
    assert p99_us(app) > 5 * tier1
    (metric,) = [m for m in app.metric if m.label == "p99"]
    assert metric.delta.startswith("+") and metric.delta.endswith("vs base")


def test_a_higher_rate_raises_the_p99(app: AppTest) -> None:
    low = p99_us(app)
    app.select_slider(key="rate_msgs_per_s").set_value(400_000).run()
    assert "400k msg/s" in summary_line(app)
    assert p99_us(app) > low


def test_placement_can_be_overridden_after_the_tier(app: AppTest) -> None:
    app.radio(key="tier").set_value(2).run()
    app.radio(key="placement").set_value("partition").run()
    assert not app.exception and not app.error
    assert app.radio(key="tier").value == 2
    assert "placement partition" in summary_line(app)


def test_cross_az_is_slower_than_same_az(app: AppTest) -> None:
    same = p99_us(app)
    app.radio(key="az_layout").set_value("cross-AZ").run()
    assert not app.error
    assert p99_us(app) > same


def test_choosing_another_scenario_resets_every_control(app: AppTest) -> None:
    app.toggle(key="client_bypass").set_value(True).run()
    app.selectbox(key="base").set_value("tier4_cloudfront").run()
    assert app.radio(key="tier").value == 4
    assert app.radio(key="placement").value == "none"
    assert app.toggle(key="client_bypass").value is False
    app.selectbox(key="base").set_value("netperf_rr_c5n_cpg").run()
    assert app.radio(key="loop").value == "closed"
    assert app.selectbox(key="client_instance").value == "c5n.xlarge"
    assert app.select_slider(key="rate_msgs_per_s").value == 1_000_000
    assert not app.exception and not app.error


def test_host_switches_lower_the_latency(app: AppTest) -> None:
    plain = p99_us(app)
    for key in ("client_bypass", "exchange_bypass", "client_tuning", "exchange_tuning"):
        app.toggle(key=key).set_value(True)
    app.run()
    assert p99_us(app) < plain


def test_a_saturating_rate_says_unstable_and_names_the_station(app: AppTest) -> None:
    app.select_slider(key="rate_msgs_per_s").set_value(1_000_000).run()
    assert not app.exception
    (error,) = app.error
    assert error.value.startswith("Unstable: the offered load saturates")
    assert "offered utilization" in error.value
    assert not [m for m in app.metric if m.label == "p99"]
    app.select_slider(key="rate_msgs_per_s").set_value(10_000).run()
    assert not app.error and p99_us(app) > 0


@pytest.mark.parametrize(
    ("view", "expect"),
    [
        ("Four tiers", "The same hosts and workload under each access tier"),
        ("Latency vs throughput", "The busiest station saturates at"),
        ("Where the time goes", "Means are measured per hop"),
        ("Calibration", "Measured vs fitted, per calibration target"),
        ("Scenario", None),
        ("Order flow", "a burst raises latency, which decays as the queues drain"),
    ],
)
def test_every_view_renders(app: AppTest, view: str, expect: str | None) -> None:
    app.session_state["view"] = view
    app.run()
    assert not app.exception and not app.error
    texts = [c.value for c in app.caption] + [i.value for i in app.info]
    if expect is not None:
        assert any(expect in t for t in texts), texts


def test_the_curve_reports_a_capacity_under_the_ceiling(app: AppTest) -> None:
    app.session_state["view"] = "Latency vs throughput"
    app.run()
    (capacity,) = [m for m in app.metric if m.label == "capacity under the ceiling"]
    assert capacity.value.endswith("msg/s")
    app.select_slider(key="ceiling_us").set_value(20).run()
    (capacity,) = [m for m in app.metric if m.label == "capacity under the ceiling"]
    assert capacity.value == "none"


def test_the_waterfall_switches_to_the_p99_split(app: AppTest) -> None:
    app.session_state["view"] = "Where the time goes"
    app.run()
    app.radio(key="hop_stat").set_value("at p99")
    app.radio(key="hop_group").set_value("by component")
    app.run()
    assert not app.exception
    (table,) = app.table
    shown = [float(v.replace(",", "")) for v in table.value["at p99 (µs)"]]
    assert sum(shown) == pytest.approx(p99_us(app), rel=1e-3 + 0.05 * len(shown) / p99_us(app))


def test_calibration_bands_reach_the_explorer(app: AppTest) -> None:
    """Issue 22: calibration bands (parameter uncertainty) were only in twin run --bands. The
    distribution view shows them on request, around the run's own p99."""
    assert "90% calibration band (µs)" not in app.table[0].value.columns
    app.toggle(key="bands").set_value(True).run()
    assert not app.exception
    table = app.table[0].value
    band = dict(zip(table["statistic"], table["90% calibration band (µs)"], strict=True))
    low, high = (float(x.replace(",", "")) for x in band["p99"].split(" .. "))
    assert low < p99_us(app) < high


def test_a_tick_to_trade_scenario_shows_its_stage_waterfall_and_table(app: AppTest) -> None:
    """Issue 20: feed scenarios get a tick-to-trade view: the stage waterfall adds up to the
    mean round trip (tick to ack) and the table lists every stage and milestone."""
    app.selectbox(key="base").set_value("tick_to_trade_tier1").run()
    app.session_state["view"] = "Tick to trade"
    app.run()
    assert not app.exception and not app.error
    (table,) = app.table
    spans = list(table.value["span"])
    assert spans[:2] == ["client poll → read", "client TLS decrypt"]
    assert {"inbound", "tick to model", "decision to wire", "tick to wire"} <= set(spans)
    p99, p50 = (
        [float(v.replace(",", "")) for v in table.value[c]] for c in ("p99 (µs)", "p50 (µs)")
    )
    assert all(a >= b for a, b in zip(p99, p50, strict=True))
    assert any("leaving it" in c.value for c in app.caption)
