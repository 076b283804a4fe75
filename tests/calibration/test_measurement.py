"""Measurement: construction checks, percentile interpolation, summary."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import calibration
from calibration import Measurement
from twin.errors import MeasurementError


def test_public_all_is_sorted_and_complete():
    assert calibration.__all__ == sorted(calibration.__all__)
    assert {"Measurement", "PublishedFigure", "read", "read_published"} <= set(calibration.__all__)
    for name in calibration.__all__:
        assert hasattr(calibration, name)


def test_samples_give_summary_and_are_read_only():
    m = Measurement(format="x", source="f", samples_us=np.array([3.0, 1.0, 2.0, 4.0]))
    assert m.count == 4 and m.min_us == 1.0 and m.max_us == 4.0 and m.mean_us == 2.5
    assert m.percentile_us(50) == pytest.approx(2.5)
    assert m.percentile_us(0) == 1.0 and m.percentile_us(100) == 4.0
    with pytest.raises(ValueError):
        m.samples_us[0] = 9.0
    assert list(m.samples_us) == [3.0, 1.0, 2.0, 4.0]  # file order kept


def test_table_interpolates_linearly_and_clamps():
    m = Measurement(
        format="x", source="f", percentiles_us=((50, 10.0), (90, 20.0)), min_us=5.0, max_us=40.0
    )
    assert m.percentile_us(70) == pytest.approx(15.0)
    assert m.percentile_us(0) == 5.0
    assert m.percentile_us(25) == pytest.approx(7.5)  # between (0, min) and (50, p50)
    assert m.percentile_us(100) == 40.0
    no_ends = Measurement(format="x", source="f", percentiles_us=((50, 10.0), (90, 20.0)))
    assert no_ends.percentile_us(10) == 10.0 and no_ends.percentile_us(99) == 20.0


def test_summary_leaves_uncovered_percentiles_unknown():
    m = Measurement(
        format="x", source="f", percentiles_us=((50, 10.0), (99, 30.0)), min_us=5.0, max_us=900.0
    )
    s = m.summary()
    assert s["p50"] == 10.0 and s["p99"] == 30.0 and s["p90"] is not None
    assert s["p99_9"] is None  # between p99 and max: interpolated, not measured
    assert s["min"] == 5.0 and s["max"] == 900.0 and s["count"] is None and s["mean"] is None
    assert set(s) == {"count", "min", "p50", "p90", "p95", "p99", "p99_9", "max", "mean"}


def test_mean_only_measurement_refuses_percentiles():
    m = Measurement(format="netperf", source="f:7", mean_us=58.0)
    assert m.summary()["p50"] is None and m.summary()["mean"] == 58.0
    with pytest.raises(MeasurementError, match="f:7: .*no percentile information"):
        m.percentile_us(50)


@pytest.mark.parametrize("p", [-0.1, 100.5, float("nan")])
def test_percentile_outside_range_is_refused(p):
    m = Measurement(format="x", source="f", samples_us=np.array([1.0]))
    with pytest.raises(ValueError, match="percentile must be in"):
        m.percentile_us(p)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"samples_us": np.array([1.0, -2.0])}, "finite and >= 0"),
        ({"samples_us": np.array([])}, "empty"),
        ({"percentiles_us": ((50, 2.0), (40, 3.0))}, "out of order"),
        ({"percentiles_us": ((50, 2.0), (60, 1.0))}, "out of order"),
        ({"percentiles_us": ((150, 2.0),)}, r"\[0, 100\]"),
        ({"min_us": 5.0, "max_us": 1.0}, "above max_us"),
        ({"mean_us": -1.0}, "mean_us"),
        ({"samples_us": np.array([1.0]), "percentiles_us": ((50, 1.0),)}, "not both"),
    ],
)
def test_bad_values_are_refused_with_the_value(kwargs, message):
    with pytest.raises(ValueError, match=message):
        Measurement(format="x", source="f", **kwargs)


def test_conditions_are_read_only_and_mergeable():
    m = Measurement(format="x", source="f", mean_us=1.0, conditions={"tier": 1})
    with pytest.raises(TypeError):
        m.conditions["tier"] = 2  # type: ignore[index]
    m2 = m.with_conditions(tier=2, placement="cpg")
    assert dict(m2.conditions) == {"tier": 2, "placement": "cpg"}
    assert dict(m.conditions) == {"tier": 1}


table_strategy = st.lists(
    st.tuples(st.floats(0, 100), st.floats(0, 1e6)), min_size=1, max_size=30
).map(lambda rows: tuple(zip(sorted(p for p, _ in rows), sorted(v for _, v in rows), strict=True)))


@given(table=table_strategy, ps=st.lists(st.floats(0, 100), min_size=2, max_size=10))
def test_table_percentile_is_monotone_and_within_bounds(table, ps):
    m = Measurement(format="x", source="f", percentiles_us=table)
    values = [m.percentile_us(p) for p in sorted(ps)]
    assert all(a <= b + 1e-9 for a, b in zip(values, values[1:], strict=False))
    assert all(table[0][1] - 1e-9 <= v <= table[-1][1] + 1e-9 for v in values)
