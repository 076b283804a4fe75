"""sockperf ping-pong (and under-load) client summary.

::

    sockperf: [Valid Duration] RunTime=29.550 sec; SentMessages=515358; ReceivedMessages=515358
    sockperf: ====> avg-rtt=57.265 (std-dev=20.569, ...)
    sockperf: Summary: Round trip is 57.265 usec
    sockperf: Total 515358 observations; each percentile contains 5153.58 observations
    sockperf: ---> <MAX> observation =  956.552
    sockperf: ---> percentile 99.999 =  583.141
    ...
    sockperf: ---> percentile 25.000 =   47.810
    sockperf: ---> <MIN> observation =   34.955

With ``--full-log FILE`` sockperf writes the same summary followed by one line per message::

    packet, txTime(sec), rxTime(sec), rtt(usec)
    0, 2.402837320, 2.402885973, 48.653

(``latency(usec)``, half the round trip, without ``--full-rtt``). Such a file is read as
**samples** (every message's value; the summary lines are then only checked, not used), so any
percentile can be taken from it.

Values are microseconds. sockperf 3.x prints the full round trip (``avg-rtt``, "Round trip
is") when run with ``--full-rtt`` and in newer releases; older releases print half of it
(``avg-latency``, "Latency is"). The reader keeps the numbers as printed and records which
in ``conditions["statistic"]``: ``"round_trip"`` or ``"half_round_trip"``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import numpy as np

from calibration.measurement import Measurement
from calibration.readers._common import Source, number

_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_PREFIX = re.compile(r"^\s*sockperf:\s?")
_AVG = re.compile(r"====>\s*avg-(latency|rtt)=([^\s(]+)")
_TOTAL = re.compile(r"Total\s+(\S+)\s+observations")
_PCT = re.compile(r"--->\s*percentile\s+(\S+)\s*=\s*(\S+)")
_MAX = re.compile(r"--->\s*<MAX>\s*observation\s*=\s*(\S+)")
_MIN = re.compile(r"--->\s*<MIN>\s*observation\s*=\s*(\S+)")
_VALID = re.compile(r"\[Valid Duration\]\s*RunTime=([^\s;]+)\s*sec")
_SERVER = re.compile(r"Printing statistics for Server No:\s*(\d+)")
_PROTO = re.compile(r"PORT\s*=\s*\d+\s*#\s*(TCP|UDP)")
_VERSION = re.compile(r"== version #(\S+)")
_LOG_HEADER = re.compile(
    r"^\s*packet,\s*txTime\(sec\),\s*rxTime\(sec\),\s*(rtt|latency)\(usec\)\s*$"
)


def looks_like_sockperf(lines: list[tuple[int, str]]) -> bool:
    return any(_PREFIX.match(_ANSI.sub("", text)) for _, text in lines[:60])


def _full_log(source: Source) -> tuple[str, list[float]] | None:
    """``(statistic, values)`` of a ``--full-log`` file's per-message rows, or None."""
    for i, text in enumerate(source.lines):
        m = _LOG_HEADER.match(text)
        if m is None:
            continue
        values = []
        for line, row in enumerate(source.lines[i + 1 :], start=i + 2):
            if not row.strip() or row.startswith("-"):
                continue
            cells = row.split(",")
            if len(cells) != 4:
                raise source.error(line, f"expected 4 comma-separated values, got {len(cells)}")
            values.append(number(source, line, cells[3], m.group(1)))
        if not values:
            raise source.error(i + 1, "a full log with no message rows: the run was cut short")
        return ("round_trip" if m.group(1) == "rtt" else "half_round_trip"), values
    return None


def read_sockperf(source: Source, conditions: Mapping[str, Any]) -> Measurement:
    found: dict[str, Any] = {"tool": "sockperf"}
    log = _full_log(source)
    table: list[tuple[int, float, float]] = []
    count = mean = min_us = max_us = None
    servers: list[int] = []
    first = None
    for line, raw in source.numbered():
        text = _ANSI.sub("", raw)
        if (m := _PROTO.search(text)) is not None:
            found["protocol"] = m.group(1)
        if not _PREFIX.match(text):
            continue
        if (m := _VERSION.search(text)) is not None:
            found["tool_version"] = m.group(1)
        elif (m := _SERVER.search(text)) is not None:
            servers.append(line)
            if len(servers) > 1:
                raise source.error(
                    line, "statistics for several servers; split the output, one server per file"
                )
        elif (m := _VALID.search(text)) is not None:
            found["duration_s"] = number(source, line, m.group(1), "RunTime")
        elif (m := _AVG.search(text)) is not None:
            found["statistic"] = "round_trip" if m.group(1) == "rtt" else "half_round_trip"
            mean = number(source, line, m.group(2), f"avg-{m.group(1)}")
            first = first or line
        elif (m := _TOTAL.search(text)) is not None:
            total = number(source, line, m.group(1), "Total observations")
            if total != int(total):
                raise source.error(
                    line, f"Total observations must be an integer, got {m.group(1)!r}"
                )
            count = int(total)
        elif (m := _MAX.search(text)) is not None:
            max_us = number(source, line, m.group(1), "<MAX> observation")
        elif (m := _MIN.search(text)) is not None:
            min_us = number(source, line, m.group(1), "<MIN> observation")
        elif (m := _PCT.search(text)) is not None:
            p = number(source, line, m.group(1), "percentile")
            if p > 100:
                raise source.error(line, f"percentile must be in [0, 100], got {p:g}")
            table.append((line, p, number(source, line, m.group(2), f"percentile {m.group(1)}")))
            first = first or line
    if mean is None and not table:
        raise source.error(
            len(source.lines),
            "no sockperf statistics (avg-latency/avg-rtt or percentile lines): "
            "the run failed or the output is truncated",
        )
    # sockperf lists percentiles from the highest down; check that order, then sort up.
    for (_, p0, v0), (l1, p1, v1) in zip(table, table[1:], strict=False):
        if p1 >= p0:
            raise source.error(l1, f"percentiles out of order: {p1:g} listed after {p0:g}")
        if v1 > v0:
            raise source.error(
                l1, f"percentile {p1:g} = {v1:g} is above percentile {p0:g} = {v0:g}"
            )
    if log is not None:
        statistic, values = log
        if count is not None and count != len(values):
            raise source.error(
                len(source.lines),
                f"the summary counts {count} observations, the log has {len(values)} rows: "
                "a truncated or spliced log",
            )
        return Measurement(
            format="sockperf",
            source=source.where(first),
            samples_us=np.asarray(values),
            conditions={**found, "statistic": statistic, **conditions},
        )
    ordered = tuple(sorted((p, v) for _, p, v in table))
    if ordered and max_us is not None and ordered[-1][1] > max_us:
        raise source.error(table[0][0], f"percentile {ordered[-1][0]:g} is above <MAX> {max_us:g}")
    if ordered and min_us is not None and ordered[0][1] < min_us:
        raise source.error(table[-1][0], f"percentile {ordered[0][0]:g} is below <MIN> {min_us:g}")
    return Measurement(
        format="sockperf",
        source=source.where(first),
        percentiles_us=ordered,
        count=count,
        min_us=min_us,
        max_us=max_us,
        mean_us=mean,
        conditions={**found, **conditions},
    )
