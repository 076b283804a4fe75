"""How the explorer shows a table: every cell a finished piece of text a person reads.

Rows come from :mod:`app.charts` as plain numbers; :func:`display_frame` turns them into text
once, by one set of rules, so no table shows a literal ``None`` or ``nan`` (a missing value
reads ``—``), a microsecond column reads ``1,089.3``, a utilization is a percentage with one
decimal, a yes/no is a word, and a column that repeats another (a fit record's ``row`` beside
its ``target``) is left out. Every number column names its unit in its header; a column whose
unit changes from row to row (a calibration target's measured value: µs, % or msg/s) carries
the unit in each cell instead. The explorer shows these frames with ``st.table``, which wraps
long text rather than cutting it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from calibration.targets import RELATIVE_STATS

MISSING = "—"
# A profile parameter's unit, from the end of its name (twin.profile: units are in names).
_SUFFIX_UNITS = {"us": "µs", "ms": "ms", "s": "s", "km": "km", "pct": "%", "bytes": "B"}


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def cell_text(column: str, value: Any) -> str:
    """One cell as text, by its column's kind (module docstring)."""
    if _missing(value):
        return MISSING
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int | float):
        if "(%)" in column or "(µs)" in column or "(msg/s)" in column:
            return f"{value:,.1f}"
        return _number(float(value))
    return str(value)


def _number(value: float) -> str:
    """A number of no fixed unit: whole numbers with thousands separators, others to four
    significant digits without an exponent where one is not needed (``0.3505``, ``1,234.5``)."""
    if value == int(value) and abs(value) < 1e15:
        return f"{int(value):,}"
    if abs(value) >= 100:
        return f"{value:,.1f}"
    return f"{value:.4g}"


def display_frame(rows: Sequence[Mapping[str, Any]]) -> Any:
    """``rows`` as a pandas DataFrame of text (:func:`cell_text`), with ``utilization`` shown as
    ``utilization (%)`` and columns that repeat an earlier column dropped."""
    import pandas as pd

    columns: list[str] = []
    for row in rows:
        columns += [c for c in row if c not in columns]
    values = {c: [row.get(c) for row in rows] for c in columns}
    if "utilization" in values:
        values["utilization (%)"] = [
            None if _missing(v) else 100.0 * float(v) for v in values.pop("utilization")
        ]
    kept: dict[str, list[str]] = {}
    for column, cells in values.items():
        text = [cell_text(column, v) for v in cells]
        if any(text == other for other in kept.values()):
            continue  # the same cells as a column already shown
        kept[column] = text
    return pd.DataFrame(kept)


def statistic_unit(statistic: str) -> tuple[str, str]:
    """(unit of a calibration target's value, unit of its error): a relative figure (a cut or
    a gain) is in % and its error in percentage points, a throughput in msg/s, a latency in µs,
    their errors in % of the measured value (calibration.targets)."""
    if statistic in RELATIVE_STATS:
        return "%", "pp"
    if statistic == "throughput":
        return "msg/s", "%"
    return "µs", "%"


def target_display_rows(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """A fit's measured-vs-predicted rows (:func:`app.charts.target_rows`) with each value's
    unit in its cell (``74.0 µs``, ``35.0 %``) and the error's (``-6.3 %``, ``+0.4 pp``); the
    data row a target reads says ``same`` where it is the target's own name (it repeated it)."""
    out = []
    for row in rows:
        unit, error_unit = statistic_unit(str(row.get("statistic", "")))
        shown: dict[str, Any] = {}
        for key, value in row.items():
            if key in ("measured", "predicted") and isinstance(value, int | float):
                shown[key] = f"{value:,.1f} {unit}"
            elif key == "error" and isinstance(value, int | float):
                shown[key] = f"{value:+,.1f} {error_unit}"
            elif key == "row":  # the published figure's data row: most often the target's own
                shown["data row"] = "same" if value == row.get("target") else value
            else:
                shown[key] = value
        out.append(shown)
    return out


def parameter_unit(name: str) -> str:
    """A profile parameter's unit from its name's last word (``_us``: µs), or ``—`` for a
    count, factor, probability or shape."""
    return _SUFFIX_UNITS.get(name.rsplit("_", 1)[-1], MISSING)


def profile_display_rows(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """A profile's parameters (:func:`app.charts.profile_rows`) with a unit column, which the
    value and its standard uncertainty are in."""
    return [
        {
            "parameter": r["parameter"],
            "value (in unit)": r["value"],
            "sd (in unit)": r["sd"],
            "unit": parameter_unit(str(r["parameter"])),
            "fitted": r["fitted"],
            "source": r["source"],
        }
        for r in rows
    ]
