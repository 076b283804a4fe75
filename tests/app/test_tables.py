"""Issue 75: the explorer's table text (app.tables), without a browser."""

from __future__ import annotations

import math

from app import tables


def test_missing_values_units_and_repeated_columns() -> None:
    rows = [
        {"hop": "a", "mean (µs)": 1.23456, "utilization": None, "copy": "a", "n": 20.0},
        {"hop": "b", "mean (µs)": math.nan, "utilization": 0.123456, "copy": "b", "n": 0.35051},
    ]
    frame = tables.display_frame(rows)
    assert list(frame.columns) == ["hop", "mean (µs)", "n", "utilization (%)"]  # copy dropped
    assert frame["mean (µs)"].tolist() == ["1.2", "—"]
    assert frame["utilization (%)"].tolist() == ["—", "12.3"]
    assert frame["n"].tolist() == ["20", "0.3505"]


def test_target_rows_carry_their_units_and_profile_rows_a_unit_column() -> None:
    fit = [
        {"target": "t1", "row": "t1", "statistic": "p50", "measured": 74.0, "predicted": 69.311,
         "error": -6.336},
        {"target": "t2", "row": "r9", "statistic": "p50_cut", "measured": 35.0,
         "predicted": 34.4425, "error": -0.557},
    ]  # fmt: skip
    shown = tables.target_display_rows(fit)
    assert shown[0]["measured"] == "74.0 µs" and shown[0]["error"] == "-6.3 %"
    assert shown[1]["predicted"] == "34.4 %" and shown[1]["error"] == "-0.6 pp"
    assert [r["data row"] for r in shown] == ["same", "r9"]
    assert tables.parameter_unit("wire_us") == "µs" and tables.parameter_unit("az_cells") == "—"
