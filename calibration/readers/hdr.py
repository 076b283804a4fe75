"""HdrHistogram outputs: percentile-distribution text (``.hgrm``) and interval logs.

Percentile distribution (``outputPercentileDistribution``, printed by Aeron's benchmark
aggregator, wrk2 and many Java and Rust harnesses)::

           Value     Percentile TotalCount 1/(1-Percentile)

          14.143 0.000000000000          1           1.00
             ...
       13893.631 1.000000000000    1000000
    #[Mean    =       51.431, StdDeviation   =      123.339]
    #[Max     =    13893.631, Total count    =      1000000]
    #[Buckets =           27, SubBuckets     =         2048]

The last row may carry ``inf`` as its fourth column (wrk2); the CSV variant has a quoted
header and ``Infinity``. The values' unit is whatever scaling ratio the writer chose and the
file does not say it; Aeron writes microseconds (ratio 1000 over nanoseconds), which is the
default here (``value_unit=`` overrides it). The default is refused when the values do not look
like microseconds (:func:`_implausible_as_us`): whole numbers with a median of 1,000 or more are
what a writer with ratio 1 prints for nanoseconds (a silent 1000x error before); such a file
needs ``--value-unit``. (A median below 1 is not refused: the matching engine's own service
times are sub-microsecond.)

Interval log (``HistogramLogWriter``)::

    #[Logged with Exchange Client 0.0.1]
    #[Histogram log format version 1.3]
    #[StartTime: 1700000000.000 (seconds since epoch), Tue Nov 14 22:13:20 UTC 2023]
    "StartTimestamp","Interval_Length","Interval_Max","Interval_Compressed_Histogram"
    [Tag=name,]start_s,length_s,max,HISTFAAAA...

Headers and legend are optional (Aeron's ``.hdr`` files have none) and may repeat (the
trading-latency-benchmark Java client appends a full block per report). Recorded values are
nanoseconds by default (``value_unit=`` overrides). The max column is only a cross-check: its
unit differs between writers (Aeron divides by 1, the aws-samples client by 1e6, so it is in
milliseconds), so the reader takes the max from the decoded histogram and only checks that
the column agrees with it up to a power of 1000.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

import numpy as np

from calibration.measurement import Measurement
from calibration.readers._common import UNIT_OPTION, VALUE_UNIT, Source, number, unit_factor
from calibration.readers.hdr_codec import (
    MAX_INFLATED_BYTES,
    MAX_TOTAL_COUNT,
    Buckets,
    PayloadError,
    decode,
)

HGRM_COLUMNS = "Value Percentile TotalCount 1/(1-Percentile)"
_HGRM_HEADER = re.compile(
    r'^\s*"?Value"?[\s,]+"?Percentile"?[\s,]+"?TotalCount"?[\s,]+"?1/\(1-Percentile\)"?\s*$'
)
_HGRM_MEAN = re.compile(r"^#\[Mean\s*=\s*([^,\]]+),\s*StdDeviation\s*=\s*([^\]]+)\]")
_HGRM_MAX = re.compile(r"^#\[Max\s*=\s*([^,\]]+),\s*Total\s?[Cc]ount\s*=\s*([^\]]+)\]")

_LOG_LINE = re.compile(
    r"^(?:Tag=(?P<tag>[^,\s]*),)?(?P<start>[^,]*),(?P<length>[^,]*),(?P<max>[^,]*),(?P<payload>.*)$"
)
_LOG_DATA_HINT = re.compile(r"^(?:Tag=[^,\s]*,)?\s*[0-9.]+,[0-9.]+,[0-9.]+,[A-Za-z0-9+/=]+\s*$")
_LOG_COMMENT_HINT = re.compile(r"^#\[(Histogram log format version|StartTime:|BaseTime:)")
_LEGEND = '"StartTimestamp"'
_LOGGED_WITH = re.compile(r"^#\[Logged with (.*)\]\s*$")
_START_TIME = re.compile(r"^#\[StartTime:\s*([0-9.]+)")


def looks_like_hgrm(lines: list[tuple[int, str]]) -> bool:
    return any(_HGRM_HEADER.match(text) for _, text in lines[:200])


def looks_like_interval_log(lines: list[tuple[int, str]]) -> bool:
    for _, text in lines[:20]:
        stripped = text.strip()
        if _LOG_COMMENT_HINT.match(stripped) or stripped.startswith(_LEGEND):
            return True
        if _LOG_DATA_HINT.match(stripped):
            return True
    return False


def _implausible_as_us(values: list[float], median: float) -> str | None:
    """Why ``values`` (the table's Value column) do not read as microseconds, or None."""
    if median >= 1000 and all(v == int(v) for v in values):
        return f"whole numbers with a median of {median:,g}: nanoseconds, written unscaled?"
    return None  # sub-microsecond medians are real (the engine's own service time)


def read_hgrm(source: Source, conditions: Mapping[str, Any]) -> Measurement:
    """Read a percentile-distribution table into a percentile Measurement."""
    factor = unit_factor(source, conditions, "us")
    raw: list[tuple[float, float]] = []  # (percentile, value as written)
    lines = source.numbered()
    start = next((i for i, (_, text) in enumerate(lines) if _HGRM_HEADER.match(text)), None)
    if start is None:
        raise source.error(None, f"not a percentile distribution: no header line {HGRM_COLUMNS!r}")
    is_csv = "," in lines[start][1]
    table: list[tuple[float, float]] = []
    total = None
    mean = None
    max_value = None
    stated_count = None
    last_line = lines[start][0]
    previous = (-1.0, -1.0, -1)
    finished = False
    for line, text in lines[start + 1 :]:
        stripped = text.strip()
        if stripped.startswith("#["):
            if (m := _HGRM_MEAN.match(stripped)) is not None:
                mean = number(source, line, m.group(1), "Mean") * factor
            elif (m := _HGRM_MAX.match(stripped)) is not None:
                max_value = number(source, line, m.group(1), "Max") * factor
                stated_count = number(source, line, m.group(2), "Total count")
            continue
        if stripped.startswith("---") or finished:
            break
        fields = stripped.split(",") if is_csv else stripped.split()
        if len(fields) not in (3, 4):
            raise source.error(line, f"expected 4 columns ({HGRM_COLUMNS}), got {len(fields)}")
        value = number(source, line, fields[0], "Value")
        percentile = number(source, line, fields[1], "Percentile")
        if percentile > 1.0:
            raise source.error(line, f"Percentile must be a fraction in [0, 1], got {percentile:g}")
        count_f = number(source, line, fields[2], "TotalCount")
        if count_f != int(count_f):
            raise source.error(line, f"TotalCount must be an integer, got {fields[2]!r}")
        count = int(count_f)
        if len(fields) == 4:
            number(source, line, fields[3], "1/(1-Percentile)", allow_inf=True)
        elif percentile != 1.0:
            raise source.error(
                line, f"expected 4 columns ({HGRM_COLUMNS}), got 3 (only the 100% row has 3)"
            )
        if percentile < previous[0]:
            raise source.error(
                line, f"percentiles out of order: {percentile:.12f} after {previous[0]:.12f}"
            )
        if value < previous[1]:
            raise source.error(line, f"values out of order: {value:g} after {previous[1]:g}")
        if count < previous[2]:
            raise source.error(line, f"TotalCount out of order: {count} after {previous[2]}")
        previous = (percentile, value, count)
        raw.append((percentile, value))
        table.append((percentile * 100.0, value * factor))
        total = count
        last_line = line
        finished = percentile == 1.0
    if not table:
        raise source.error(last_line, f"no rows after the header ({HGRM_COLUMNS})")
    if not finished:
        raise source.error(
            last_line,
            f"truncated: the table stops at percentile {previous[0]:.12f}, "
            "a complete distribution ends with the 1.000000000000 row",
        )
    if VALUE_UNIT not in conditions:
        median = next(v for p, v in raw if p >= 0.5)
        why = _implausible_as_us([v for _, v in raw], median)
        if why is not None:
            raise source.error(
                None,
                f"the file does not state its time unit and its values do not look like "
                f"microseconds ({why}): pass {UNIT_OPTION} ns, us, ms or s",
            )
    if stated_count is not None and total is not None and int(stated_count) != total:
        raise source.error(
            None, f"footer Total count {int(stated_count)} disagrees with the table's {total}"
        )
    return Measurement(
        format="hgrm",
        source=source.where(lines[start][0]),
        percentiles_us=_dedupe(table),
        count=total,
        min_us=table[0][1] if table[0][0] == 0.0 else None,
        max_us=max(max_value, table[-1][1]) if max_value is not None else table[-1][1],
        mean_us=mean,
        conditions={"tool": "HdrHistogram", **conditions},
    )


def _dedupe(table: list[tuple[float, float]]) -> tuple[tuple[float, float], ...]:
    """Keep the last row of each run of equal percentiles (its value is the highest)."""
    out: list[tuple[float, float]] = []
    for p, v in table:
        if out and out[-1][0] == p:
            out[-1] = (p, v)
        else:
            out.append((p, v))
    return tuple(out)


def read_interval_log(source: Source, conditions: Mapping[str, Any]) -> Measurement:
    """Add up every interval histogram (of one tag) into one percentile Measurement."""
    factor = unit_factor(source, conditions, "ns")
    wanted_tag = conditions.get("tag")
    logged_with = None
    start_time = None
    sums = _Sums()
    tags: dict[str | None, int] = {}
    intervals = 0
    first_line = None
    duration_s = 0.0
    for line, text in source.numbered():
        stripped = text.strip()
        if stripped.startswith("#"):
            if (m := _LOGGED_WITH.match(stripped)) is not None:
                logged_with = m.group(1)
            elif (m := _START_TIME.match(stripped)) is not None and start_time is None:
                start_time = float(m.group(1))
            continue
        if stripped.startswith(_LEGEND):
            continue
        m = _LOG_LINE.match(stripped)
        if m is None:
            raise source.error(
                line,
                "expected an interval line [Tag=name,]StartTimestamp,Interval_Length,"
                f"Interval_Max,Interval_Compressed_Histogram, got {_clip(stripped)!r}",
            )
        tag = m.group("tag")
        tags[tag] = tags.get(tag, 0) + 1
        length_s = number(source, line, m.group("length"), "Interval_Length")
        number(source, line, m.group("start"), "StartTimestamp")
        column_max = number(source, line, m.group("max"), "Interval_Max")
        if wanted_tag is not None and tag != wanted_tag:
            continue
        buckets = _decode(source, line, m.group("payload").strip())
        _check_max_column(source, line, buckets.max_value, column_max)
        sums.add(source, line, buckets)
        intervals += 1
        duration_s += length_s
        first_line = line if first_line is None else first_line
    if wanted_tag is not None and intervals == 0:
        known = ", ".join(sorted(repr(t) for t in tags)) or "none"
        raise source.error(
            None, f"no interval histogram tagged {wanted_tag!r} (--tag, tag=; tags: {known})"
        )
    if intervals == 0:
        raise source.error(
            len(source.lines), "no interval histogram lines: the log is empty or truncated"
        )
    if wanted_tag is None and len(tags) > 1:
        names = ", ".join(sorted("untagged" if t is None else repr(t) for t in tags))
        raise source.error(
            None,
            f"the log holds histograms of several tags ({names}): choose one with --tag (tag=)",
        )
    lows, highs, counts = sums.buckets()
    total = int(counts.sum())
    if total == 0:
        raise source.error(first_line, "every interval histogram is empty (no recorded values)")
    cumulative = np.concatenate(([0], np.cumsum(counts)))
    knots: list[tuple[float, float]] = []
    # Within a bucket, values are taken as spread uniformly from its lowest to its highest
    # equivalent value; consecutive buckets meet at the same percentile (a jump).
    weighted_sum = 0.0
    rows = zip(cumulative.tolist(), lows.tolist(), highs.tolist(), counts.tolist(), strict=False)
    for below, low, high, count in rows:
        knots.append((100.0 * below / total, low * factor))
        knots.append((100.0 * (below + count) / total, high * factor))
        weighted_sum += count * (low + high) / 2.0
    found: dict[str, Any] = {"tool": "HdrHistogram", "intervals": intervals}
    if logged_with is not None:
        found["logged_with"] = logged_with
    if duration_s > 0:
        found["duration_s"] = duration_s
    tag_found = next(iter(tags)) if wanted_tag is None else wanted_tag
    if tag_found is not None:
        found["tag"] = tag_found
    return Measurement(
        format="hdr-log",
        source=source.where(first_line),
        percentiles_us=tuple(knots),
        count=total,
        min_us=int(lows[0]) * factor,
        max_us=int(highs[-1]) * factor,
        mean_us=weighted_sum / total * factor,
        conditions={**found, **conditions},
    )


#: What one file's histograms may inflate to in all (the time and memory reading it costs: about
#: a minute of decoding); hours of 5-significant-figure intervals are far below it.
MAX_FILE_INFLATED_BYTES = 64 * MAX_INFLATED_BYTES
_COMPACT_EVERY = 1 << 20  # buffered buckets before merging equal ones


class _Sums:
    """Counts per bucket (keyed by its lowest equivalent value) added up over intervals, in
    memory that grows with the distinct buckets, not with the intervals."""

    def __init__(self) -> None:
        self.parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        self.buffered = 0
        self.inflated = 0
        self.total = 0.0

    def add(self, source: Source, line: int, buckets: Buckets) -> None:
        self.inflated += buckets.inflated_bytes
        if self.inflated > MAX_FILE_INFLATED_BYTES:
            raise source.error(
                line,
                f"the log's histograms inflate beyond {MAX_FILE_INFLATED_BYTES:,} bytes in all "
                "(the most one file may cost to read)",
            )
        self.total += float(buckets.count.astype(np.float64).sum())
        if self.total > MAX_TOTAL_COUNT:
            raise source.error(
                line, f"the histograms add up to more than {MAX_TOTAL_COUNT:,} values (corrupt)"
            )
        self.parts.append((buckets.low, buckets.high, buckets.count))
        self.buffered += len(buckets.low)
        if self.buffered > _COMPACT_EVERY:
            self.parts = [self.buckets()]
            self.buffered = len(self.parts[0][0])

    def buckets(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(lowest, highest equivalent value, count) of each distinct bucket, by value."""
        low = np.concatenate([p[0] for p in self.parts]) if self.parts else np.zeros(0, np.int64)
        if len(low) == 0:
            return low, low, low
        high = np.concatenate([p[1] for p in self.parts])
        count = np.concatenate([p[2] for p in self.parts])
        order = np.argsort(low, kind="stable")
        low, high, count = low[order], high[order], count[order]
        first = np.flatnonzero(np.concatenate(([True], low[1:] != low[:-1])))
        return low[first], np.maximum.reduceat(high, first), np.add.reduceat(count, first)


def _decode(source: Source, line: int, payload: str) -> Buckets:
    try:
        return decode(payload)
    except PayloadError as exc:
        raise source.error(line, str(exc)) from None


def _check_max_column(source: Source, line: int, true_max: int, column: float) -> None:
    """The max column must equal the histogram's max divided by some power of 1000."""
    if column == 0 or true_max == 0:
        return
    ratio = true_max / column
    power = round(math.log10(ratio) / 3)
    if power < 0 or power > 3 or abs(math.log10(ratio) - 3 * power) > 0.3:
        raise source.error(
            line,
            f"Interval_Max {column:g} does not match the histogram's max {true_max} "
            "in any unit (ns, us, ms, s): the line is corrupt",
        )


def _clip(text: str, width: int = 60) -> str:
    return text if len(text) <= width else text[: width - 3] + "..."
