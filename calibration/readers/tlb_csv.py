"""The aws-samples trading-latency-benchmark percentile CSV (``LatencyReport``).

The Java client's report tool aggregates its histogram logs and writes one row per log::

    50.0%,90.0%,95.0%,99.0%,99.9%,99.99%,W,source,destination
    57µs,61µs,63µs,69µs,80µs,422µs,13.6ms,10.0.1.5,10.0.2.7

``W`` is the worst (max). Values carry their unit (``29253ns``, ``57µs``, ``13.6ms``, ``2.1s``).
``source`` and ``destination`` columns are optional; with several rows, pass ``source=`` and/or
``destination=`` to choose one.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from calibration.measurement import Measurement
from calibration.readers._common import Source, split_csv, time_with_unit

_PCT_HEADER = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*%\s*$")
_MAX_HEADERS = {"w", "max", "worst"}
_KEY_COLUMNS = ("source", "destination")


def looks_like_tlb_csv(lines: list[tuple[int, str]]) -> bool:
    if not lines:
        return False
    fields = split_csv(lines[0][1])
    return sum(bool(_PCT_HEADER.match(f)) for f in fields) >= 2


def read_tlb_csv(source: Source, conditions: Mapping[str, Any]) -> Measurement:
    lines = source.numbered()
    header_line, header_text = lines[0]
    header = [h.strip() for h in split_csv(header_text)]
    rows = [(line, split_csv(text)) for line, text in lines[1:]]
    if not rows:
        raise source.error(
            header_line, "header without data rows: the report is empty or truncated"
        )
    for line, cells in rows:
        if len(cells) != len(header):
            raise source.error(
                line, f"expected {len(header)} columns ({','.join(header)}), got {len(cells)}"
            )
    keys = [k for k in _KEY_COLUMNS if k in header and k in conditions]
    chosen = [
        (line, cells)
        for line, cells in rows
        if all(cells[header.index(k)].strip() == str(conditions[k]) for k in keys)
    ]
    if not chosen:
        wanted = ", ".join(f"{k}={conditions[k]!r}" for k in keys)
        raise source.error(None, f"no row matches {wanted}")
    if len(chosen) > 1:
        raise source.error(
            None,
            f"{len(chosen)} report rows (lines {', '.join(str(line) for line, _ in chosen)}): "
            "pass source= and/or destination= to choose one",
        )
    line, cells = chosen[0]
    found: dict[str, Any] = {"tool": "trading-latency-benchmark"}
    table: list[tuple[float, float]] = []
    max_us = None
    for name, cell in zip(header, cells, strict=True):
        if (m := _PCT_HEADER.match(name)) is not None:
            p = float(m.group(1))
            if p > 100:
                raise source.error(header_line, f"percentile column {name!r} is above 100%")
            table.append((p, time_with_unit(source, line, cell, name)))
        elif name.lower() in _MAX_HEADERS:
            max_us = time_with_unit(source, line, cell, name)
        elif name in _KEY_COLUMNS and cell.strip():
            found[name] = cell.strip()
    for (p0, v0), (p1, v1) in zip(table, table[1:], strict=False):
        if p1 <= p0:
            raise source.error(
                header_line, f"percentile columns out of order: {p1:g}% after {p0:g}%"
            )
        if v1 < v0:
            raise source.error(
                line, f"values out of order: {p1:g}% = {v1:g} us is below {p0:g}% = {v0:g} us"
            )
    if max_us is not None and table and max_us < table[-1][1]:
        raise source.error(
            line, f"W (max) {max_us:g} us is below {table[-1][0]:g}% = {table[-1][1]:g} us"
        )
    return Measurement(
        format="tlb-csv",
        source=source.where(line),
        percentiles_us=tuple(table),
        max_us=max_us,
        conditions={**found, **conditions},
    )
