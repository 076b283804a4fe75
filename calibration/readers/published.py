"""Published figures (``data/published_figures.csv``): one summary statistic per row.

Columns: ``id,source,system,metric,statistic,value,unit,conditions,note``. Each row becomes a
:class:`PublishedFigure` with its value normalised: times in microseconds, percentages as
signed fractions (a "35% reduction" is ``-0.35``, a "56% increase" is ``+0.56``), ranges such
as ``1000-3000`` kept as ``low``/``high``, and statements that are not numbers (vendor claims)
kept as text with ``usable=False``. Design targets are numbers but not measurements, so they
are also marked unusable, with the reason.

A published-figures file holds many figures, so :func:`calibration.read` does not return it
as one Measurement; it raises and points to :func:`read_published`, unless a single row is
chosen with ``id=``, in which case an absolute time figure (a percentile, mean, min or max)
becomes a one-point Measurement.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from calibration.measurement import Measurement
from calibration.readers._common import US_PER_UNIT, Source, load, split_csv

__all__ = ["PublishedFigure", "read_published"]

COLUMNS = ("id", "source", "system", "metric", "statistic", "value", "unit", "conditions", "note")

_NUM = r"(?:[0-9]+(?:\.[0-9]+)?|\.[0-9]+)(?:[eE][-+]?[0-9]+)?"  # no two ways to split
_SINGLE = re.compile(rf"^\s*({_NUM})\s*$")
_RANGE = re.compile(rf"^\s*({_NUM})\s*[-\u2013]\s*({_NUM})\s*$")
_PERCENTILE = re.compile(r"\bp(\d+(?:\.\d+)?)\b", re.IGNORECASE)
_DOWN = re.compile(r"reduction|lower|cut|decrease|saving", re.IGNORECASE)
_UP = re.compile(r"increase|gain|higher|rise", re.IGNORECASE)


@dataclass(frozen=True)
class PublishedFigure:
    """One published figure, its value normalised.

    Attributes:
        id, reference, system, metric, statistic, conditions, note: the row's text
            (``reference`` is the ``source`` column: the publication).
        kind: ``"absolute"`` (a level), ``"relative"`` (a change as a signed fraction),
            ``"difference"`` (a gap between two set-ups, in the figure's unit) or ``"text"``.
        measure: what the statistic is: ``"percentile"``, ``"mean"``, ``"min"``, ``"max"``,
            ``"upper_bound"``, ``"typical"``, ``"range"``, ``"limit"``, ``"difference"``,
            ``"relative_change"``, ``"target"`` or ``"claim"``.
        percentile: the percentile (0-100) the statistic refers to, when it names one.
        value: the number in ``unit`` (None for ranges and text); ``low``/``high`` for ranges.
        unit: ``"us"`` for times, ``"fraction"`` for percentages, else the published unit.
        raw_value, raw_unit: as published.
        usable: whether calibration may use it; ``reason`` says why not.
        location: ``path:line``.
    """

    id: str
    reference: str
    system: str
    metric: str
    statistic: str
    kind: str
    measure: str
    percentile: float | None
    value: float | None
    low: float | None
    high: float | None
    unit: str
    raw_value: str
    raw_unit: str
    conditions: str
    note: str
    usable: bool
    reason: str
    location: str

    @property
    def is_range(self) -> bool:
        return self.low is not None


def looks_like_published(lines: list[tuple[int, str]]) -> bool:
    if not lines:
        return False
    header = tuple(h.strip().lower() for h in split_csv(lines[0][1]))
    return header[:7] == COLUMNS[:7]


def read_published(path: str | Path) -> list[PublishedFigure]:
    """Every row of a published-figures CSV, in file order."""
    return _parse(load(path))


def _parse(source: Source) -> list[PublishedFigure]:
    reader = csv.reader(source.lines)
    try:
        return _rows(source, reader)
    except csv.Error as exc:  # a field over the csv module's limit, a stray quote
        raise source.error(reader.line_num, f"not a CSV row ({exc})") from None


def _rows(source: Source, reader: Any) -> list[PublishedFigure]:
    header = [h.strip().lower() for h in next(reader)]
    if tuple(header) != COLUMNS:
        raise source.error(1, f"expected the columns {','.join(COLUMNS)}, got {','.join(header)}")
    figures: list[PublishedFigure] = []
    seen: dict[str, int] = {}
    for cells in reader:
        line = reader.line_num
        if not any(c.strip() for c in cells):
            continue
        if len(cells) != len(COLUMNS):
            raise source.error(
                line, f"expected {len(COLUMNS)} columns ({','.join(COLUMNS)}), got {len(cells)}"
            )
        row = dict(zip(COLUMNS, (c.strip() for c in cells), strict=True))
        if not row["id"]:
            raise source.error(line, "empty id")
        if row["id"] in seen:
            raise source.error(
                line, f"duplicate id {row['id']!r} (first on line {seen[row['id']]})"
            )
        seen[row["id"]] = line
        figures.append(_figure(source, line, row))
    if not figures:
        raise source.error(1, "header without figures")
    return figures


def _figure(source: Source, line: int, row: dict[str, str]) -> PublishedFigure:
    statistic = row["statistic"]
    stat = statistic.lower()
    raw_value, raw_unit = row["value"], row["unit"]
    percentile = None
    if (m := _PERCENTILE.search(stat)) is not None:
        percentile = float(m.group(1))
    elif "median" in stat:
        percentile = 50.0
    if percentile is not None and not 0 <= percentile <= 100:
        raise source.error(
            line, f"statistic {statistic!r} names percentile {percentile:g}, not in [0, 100]"
        )
    single = _SINGLE.match(raw_value)
    ranged = _RANGE.match(raw_value)
    usable, reason = True, ""
    value = low = high = None
    if raw_value.lstrip().startswith("-"):
        raise source.error(line, f"value must be >= 0, got {raw_value!r}")
    if single is None and ranged is None:
        kind, measure, unit = "text", "claim", raw_unit
        usable, reason = False, "not a number: a statement kept as text"
    else:
        if raw_unit == "%":
            factor, unit = 1.0, "fraction"
        elif raw_unit in US_PER_UNIT:
            factor, unit = US_PER_UNIT[raw_unit], "us"
        else:
            factor, unit = 1.0, raw_unit
        # Percentages are divided rather than multiplied by 0.01 to keep 35% exactly 0.35.
        divisor = 100.0 if unit == "fraction" else 1.0
        if ranged is not None:
            low = float(ranged.group(1)) * factor / divisor
            high = float(ranged.group(2)) * factor / divisor
            if low > high:
                raise source.error(line, f"range {raw_value!r} has its low end above its high end")
        else:
            assert single is not None
            value = float(single.group(1)) * factor / divisor
        kind, measure = _classify(stat, raw_unit, percentile)
        if kind == "relative" and value is not None and _DOWN.search(stat) and not _UP.search(stat):
            value = -value
        if measure == "target":
            usable, reason = False, "a design target, not a measurement"
        elif measure == "claim":
            usable, reason = False, "a claim, not a measurement"
    return PublishedFigure(
        id=row["id"],
        reference=row["source"],
        system=row["system"],
        metric=row["metric"],
        statistic=statistic,
        kind=kind,
        measure=measure,
        percentile=percentile,
        value=value,
        low=low,
        high=high,
        unit=unit,
        raw_value=raw_value,
        raw_unit=raw_unit,
        conditions=row["conditions"],
        note=row["note"],
        usable=usable,
        reason=reason,
        location=source.where(line),
    )


def _classify(stat: str, raw_unit: str, percentile: float | None) -> tuple[str, str]:
    if raw_unit == "%":
        return "relative", "relative_change"
    if "target" in stat:
        return "absolute", "target"
    if "claim" in stat:
        return "absolute", "claim"
    if "difference" in stat:
        return "difference", "difference"
    if stat == "range":
        return "absolute", "range"
    if percentile is not None:
        return "absolute", "percentile"
    for word, measure in (
        ("mean", "mean"),
        ("average", "mean"),
        ("upper bound", "upper_bound"),
        ("min", "min"),
        ("max", "max"),
        ("limit", "limit"),
        ("typical", "typical"),
    ):
        if stat.startswith(word):
            return "absolute", measure
    return "absolute", "typical"


def published_measurement(source: Source, conditions: Mapping[str, Any]) -> Measurement:
    """One row (chosen by ``id=``) as a one-point Measurement, when it is a time level."""
    figures = _parse(source)
    wanted = conditions["id"]
    match = [f for f in figures if f.id == wanted]
    if not match:
        raise source.error(None, f"no figure with id={wanted!r}")
    fig = match[0]
    if (
        fig.kind != "absolute"
        or fig.unit != "us"
        or fig.value is None
        or not fig.usable
        or (fig.measure not in {"percentile", "mean", "min", "max", "upper_bound"})
    ):
        raise source.error(
            int(fig.location.rsplit(":", 1)[1]),
            f"figure {fig.id!r} ({fig.statistic}, {fig.raw_value} {fig.raw_unit}) is not a single "
            "absolute latency; use calibration.read_published() to work with it",
        )
    fields: dict[str, Any] = {}
    if fig.measure == "percentile":
        assert fig.percentile is not None
        fields["percentiles_us"] = ((fig.percentile, fig.value),)
    elif fig.measure == "mean":
        fields["mean_us"] = fig.value
    elif fig.measure == "min":
        fields["min_us"] = fig.value
    else:
        fields["max_us"] = fig.value
    found = {
        "reference": fig.reference,
        "system": fig.system,
        "metric": fig.metric,
        "statistic": fig.statistic,
        "published_conditions": fig.conditions,
    }
    return Measurement(
        format="published",
        source=fig.location,
        conditions={**found, **conditions},
        **fields,
    )
