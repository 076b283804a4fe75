"""CSV (or plain text) of raw latency samples, one observation per row.

Accepted shapes: a single column of numbers, with or without a header; or a CSV with a header
naming its columns, of which one holds latencies. The column is the one named by
``column=``, else the only column whose name mentions latency, rtt or round trip. Its unit
comes from the name (``latency_us``, ``rtt_ns``, ``rtt (ms)``, ``latency[us]``) or from
``value_unit=``; a file that states neither is refused rather than guessed. Lines starting
with ``#`` are comments.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import numpy as np

from calibration.measurement import Measurement
from calibration.readers._common import (
    UNIT_OPTION,
    US_PER_UNIT,
    VALUE_UNIT,
    Source,
    not_a_unit,
    number,
    split_csv,
)

_NUMBER = re.compile(r"^\s*[-+]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][-+]?[0-9]+)?\s*$")
_LATENCY_NAME = re.compile(r"latency|rtt|round.?trip", re.IGNORECASE)
_UNIT_IN_NAME = re.compile(
    r"(?:[_\s\-]|\(|\[)(ns|us|µs|μs|ms|s|nsec|usec|msec|sec)\)?\]?\s*$", re.IGNORECASE
)


def _data(source: Source) -> list[tuple[int, str]]:
    return [(n, t) for n, t in source.numbered() if not t.lstrip().startswith("#")]


def _split(text: str) -> list[str]:
    return split_csv(text)


def looks_like_samples(lines: list[tuple[int, str]]) -> bool:
    body = [(n, t) for n, t in lines if not t.lstrip().startswith("#")]
    if not body:
        return False
    first = _split(body[0][1])
    has_header = not all(_NUMBER.match(c) for c in first)
    if has_header and any(_LATENCY_NAME.search(c) for c in first):
        return True
    rows = body[1:6] if has_header else body[:5]
    return bool(rows) and all(any(_NUMBER.match(c) for c in _split(t)) for _, t in rows)


def read_samples(source: Source, conditions: Mapping[str, Any]) -> Measurement:
    body = _data(source)
    if not body:
        raise source.error(1, "only comments: no samples")
    first_line, first_text = body[0]
    first = [c.strip() for c in _split(first_text)]
    has_header = not all(_NUMBER.match(c) for c in first)
    header = first if has_header else [f"column {i + 1}" for i in range(len(first))]
    rows = body[1:] if has_header else body
    if not rows:
        raise source.error(first_line, "header without samples: the file is empty or truncated")
    column = _choose_column(source, first_line, header, conditions)
    unit = None
    if has_header and (m := _UNIT_IN_NAME.search(header[column])) is not None:
        unit = m.group(1).lower().replace("μ", "µ")
        unit = {"µs": "us"}.get(unit, unit)
    given = conditions.get(VALUE_UNIT)
    if given is not None and unit is not None and given != unit:
        raise source.error(
            first_line,
            f"value unit {given!r} ({UNIT_OPTION}) contradicts the column name {header[column]!r}",
        )
    unit = unit or given
    if unit is None:
        raise source.error(
            first_line,
            f"column {header[column]!r} does not state its time unit: name it like latency_us "
            "or pass value_unit= one of ns, us, ms, s",
        )
    if unit not in US_PER_UNIT:
        raise source.error(
            None,
            not_a_unit(unit),
        )
    values = np.empty(len(rows), dtype=np.float64)
    for i, (line, text) in enumerate(rows):
        cells = _split(text)
        if len(cells) != len(header):
            raise source.error(line, f"expected {len(header)} columns, got {len(cells)}")
        values[i] = number(source, line, cells[column], header[column])
    return Measurement(
        format="samples-csv",
        source=source.where(first_line),
        samples_us=values * US_PER_UNIT[unit],
        conditions={**conditions, VALUE_UNIT: unit},
    )


def _choose_column(
    source: Source, line: int, header: list[str], conditions: Mapping[str, Any]
) -> int:
    if len(header) == 1:
        return 0
    wanted = conditions.get("column")
    if wanted is not None:
        if wanted not in header:
            raise source.error(line, f"no column {wanted!r}; columns are {', '.join(header)}")
        return header.index(wanted)
    candidates = [i for i, name in enumerate(header) if _LATENCY_NAME.search(name)]
    if len(candidates) != 1:
        raise source.error(
            line,
            f"cannot tell which column holds the latencies ({', '.join(header)}): pass column=",
        )
    return candidates[0]
