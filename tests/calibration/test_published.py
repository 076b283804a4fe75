"""Published figures: every row kind, read() on the file, and bad rows."""

from __future__ import annotations

import pytest

from calibration import PublishedFigure, read, read_published
from twin.errors import MeasurementError

HEADER = "id,source,system,metric,statistic,value,unit,conditions,note\n"


@pytest.fixture
def figures(fixture_path):
    return {f.id: f for f in read_published(fixture_path("published_subset.csv"))}


def test_absolute_percentiles_and_means_in_us(figures):
    aeron = figures["aeron_transport_echo_p99"]
    assert isinstance(aeron, PublishedFigure)
    assert (aeron.kind, aeron.measure, aeron.percentile, aeron.value, aeron.unit) == (
        "absolute",
        "percentile",
        99.0,
        66.0,
        "us",
    )
    rest = figures["venue_api_rest_new_conn_mean"]
    assert rest.measure == "mean" and rest.value == pytest.approx(55800.0)
    headline = figures["ot_tier1_rtt_low"]
    assert headline.percentile == 50.0 and headline.value == 74.0  # "read as typical/median"
    assert figures["pub_c5n_xl_netperf_tcprr_min"].measure == "min"


def test_relative_figures_are_signed_fractions(figures):
    cut = figures["ec2_c5n_cpg_tcprr_p50_cut"]
    assert (cut.kind, cut.value, cut.unit, cut.percentile) == ("relative", -0.35, "fraction", 50.0)
    gain = figures["ec2_c5n_cpg_pps_tcp_gain"]
    assert gain.kind == "relative" and gain.value == 0.56


def test_ranges_differences_and_other_units(figures):
    cme = figures["cme_engine_latency"]
    assert cme.is_range and (cme.low, cme.high, cme.value) == (1000.0, 3000.0, None)
    cross = figures["pub_cross_az_ping_avg"]
    assert cross.measure == "mean" and (cross.low, cross.high) == (800.0, 1100.0)
    gap = figures["venue_api_best_az_gain"]
    assert gap.kind == "difference" and gap.value == pytest.approx(1600.0) and gap.unit == "us"
    flow = figures["ec2_cpg_per_flow_limit"]
    assert flow.unit == "Gb/s" and flow.value == 10.0 and flow.usable


def test_claims_and_targets_are_not_usable(figures):
    claim = figures["pub_ena_express_claim"]
    assert claim.kind == "text" and not claim.usable and claim.value is None
    assert claim.raw_value.startswith("50% lower p99")
    target = figures["ot_rtt_design_goal"]
    assert not target.usable and "target" in target.reason


def test_locations_name_file_and_line(figures, fixture_path):
    assert figures["ot_tier1_rtt_low"].location == f"{fixture_path('published_subset.csv')}:2"


def test_read_on_published_file_points_to_read_published(fixture_path):
    with pytest.raises(MeasurementError, match=r"published_subset\.csv:1: .*read_published"):
        read(fixture_path("published_subset.csv"))


def test_read_one_row_by_id(fixture_path):
    m = read(fixture_path("published_subset.csv"), id="aeron_transport_echo_p99", tier=1)
    assert m.format == "published" and m.percentiles_us == ((99.0, 66.0),)
    assert m.conditions["tier"] == 1 and m.conditions["id"] == "aeron_transport_echo_p99"
    mean = read(fixture_path("published_subset.csv"), id="venue_api_rest_new_conn_mean")
    assert mean.mean_us == pytest.approx(55800.0)
    with pytest.raises(MeasurementError, match="not a single absolute latency"):
        read(fixture_path("published_subset.csv"), id="ec2_c5n_cpg_tcprr_p50_cut")
    with pytest.raises(MeasurementError, match="no figure with id='nope'"):
        read(fixture_path("published_subset.csv"), id="nope")


@pytest.mark.parametrize(
    "row, message",
    [
        ("x,src,sys,metric,p50,12,us,cond\n", "p.csv:2: expected 9 columns"),
        ("x,src,sys,metric,p50,-12,us,cond,\n", "p.csv:2: value must be >= 0"),
        ("x,src,sys,metric,range,30-10,us,cond,\n", "p.csv:2: range '30-10' has its low end"),
        (",src,sys,metric,p50,12,us,cond,\n", "p.csv:2: empty id"),
        ("a,s,s,m,p50,1,us,,\na,s,s,m,p90,2,us,,\n", "p.csv:3: duplicate id 'a'"),
        ("x,src,sys,metric,p150,12,us,cond,\n", "p.csv:2: statistic 'p150' names percentile"),
    ],
)
def test_bad_rows(variant, row, message):
    with pytest.raises(MeasurementError, match=message):
        read_published(variant("p.csv", HEADER + row))


def test_bad_header_and_empty(variant):
    with pytest.raises(MeasurementError, match=r"p\.csv:1: expected the columns"):
        read_published(variant("p.csv", "id,source,value\n"))
    with pytest.raises(MeasurementError, match=r"p\.csv:1: header without figures"):
        read_published(variant("p.csv", HEADER))
    with pytest.raises(MeasurementError, match=r"p\.csv:1: empty file"):
        read_published(variant("p.csv", ""))
