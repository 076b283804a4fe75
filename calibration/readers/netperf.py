"""netperf request/response output (TCP_RR, UDP_RR), classic or omni.

Three shapes are read:

* the classic table, whose only latency figure is the transaction rate; with one
  transaction in flight (``first burst 0``) the mean round trip is ``1 / rate``::

      MIGRATED TCP REQUEST/RESPONSE TEST from 0.0.0.0 (0.0.0.0) ... : first burst 0
      Local /Remote
      Socket Size   Request  Resp.   Elapsed  Trans.
      Send   Recv   Size     Size    Time     Rate
      bytes  Bytes  bytes    bytes   secs.    per sec

      16384  131072 1        1       10.00    17238.23
      16384  131072

* omni output selectors as CSV (``-- -o min_latency,mean_latency,P50_LATENCY,...``): a header
  line of selector titles ("Minimum Latency Microseconds", ...) and a line of values;
* the same selectors as key=value lines (``-- -k ...``): ``P99_LATENCY=71``.

``-P 0 -- -o ...`` prints values without their titles; that cannot be read safely (which
number is which?) and is reported as an unknown format. So is the column layout of ``-O``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

from calibration.measurement import Measurement
from calibration.readers._common import Source, number, split_csv

_BANNER = re.compile(r"(?P<proto>TCP|UDP|SCTP)\s+REQUEST/RESPONSE TEST")
_BURST = re.compile(r"first burst (\d+)")

# omni CSV titles and -k keys -> our field names.
_CSV_TITLES = {
    "minimum latency microseconds": "min",
    "maximum latency microseconds": "max",
    "mean latency microseconds": "mean",
    "50th percentile latency microseconds": "p50",
    "90th percentile latency microseconds": "p90",
    "99th percentile latency microseconds": "p99",
    "transaction rate tran/s": "rate",
    "throughput": "throughput",
    "throughput units": "throughput_units",
    "request size bytes": "request_bytes",
    "response size bytes": "response_bytes",
    "elapsed time (sec)": "elapsed_s",
    "protocol": "protocol",
}
_KEYS = {
    "MIN_LATENCY": "min",
    "MAX_LATENCY": "max",
    "MEAN_LATENCY": "mean",
    "P50_LATENCY": "p50",
    "P90_LATENCY": "p90",
    "P99_LATENCY": "p99",
    "TRANSACTION_RATE": "rate",
    "THROUGHPUT": "throughput",
    "THROUGHPUT_UNITS": "throughput_units",
    "REQUEST_SIZE": "request_bytes",
    "RESPONSE_SIZE": "response_bytes",
    "ELAPSED_TIME": "elapsed_s",
    "PROTOCOL": "protocol",
}
_TEXT_FIELDS = {"throughput_units", "protocol"}
_KEYVAL = re.compile(r"^([A-Z][A-Z0-9_]*)=(.*)$")


def _is_classic_header(text: str) -> bool:
    tokens = text.split()
    return len(tokens) >= 7 and tokens[0] == "bytes" and "per" in tokens and "sec" in tokens


def _is_omni_header(text: str) -> bool:
    titles = [t.strip().lower() for t in text.split(",")]
    return sum(t in _CSV_TITLES for t in titles) >= 2 or any(
        t.endswith("latency microseconds") for t in titles
    )


# A transaction count no netperf run reaches (a billion per second for a day): beyond it the
# rate is a typo or an attack, and its product with the run time may not even be finite.
MAX_TRANSACTIONS = 1e14


def looks_like_netperf(lines: list[tuple[int, str]]) -> bool:
    for _, text in lines[:40]:
        if _BANNER.search(text) or _is_classic_header(text) or _is_omni_header(text):
            return True
        m = _KEYVAL.match(text.strip())
        if m is not None and m.group(1) in _KEYS and m.group(1).endswith("LATENCY"):
            return True
    return False


def read_netperf(source: Source, conditions: Mapping[str, Any]) -> Measurement:
    lines = source.numbered()
    found: dict[str, Any] = {"tool": "netperf"}
    burst = 0
    for _, text in lines:
        if (m := _BANNER.search(text)) is not None:
            found["test"] = f"{m.group('proto')}_RR"
            found["protocol"] = m.group("proto")
        if (b := _BURST.search(text)) is not None:
            burst = int(b.group(1))
    for index, (line, text) in enumerate(lines):
        if _is_classic_header(text):
            return _classic(source, lines[index + 1 :], line, found, burst, conditions)
        if _is_omni_header(text):
            if index + 1 >= len(lines):
                raise source.error(line, "truncated: omni header line without a line of values")
            return _omni_csv(source, line, text, *lines[index + 1], found, burst, conditions)
    values: dict[str, tuple[int, str]] = {}
    for line, text in lines:
        m = _KEYVAL.match(text.strip())
        if m is not None and m.group(1) in _KEYS:
            values[_KEYS[m.group(1)]] = (line, m.group(2))
    if not values:
        raise source.error(
            lines[-1][0],
            "netperf banner without results: expected the TCP_RR/UDP_RR table, "
            "omni CSV (-o) or key=value (-k) output; the run may have failed or been cut short",
        )
    return _build(source, min(v[0] for v in values.values()), values, found, burst, conditions)


def _classic(
    source: Source,
    rest: list[tuple[int, str]],
    header_line: int,
    found: dict[str, Any],
    burst: int,
    conditions: Mapping[str, Any],
) -> Measurement:
    if not rest:
        raise source.error(header_line, "truncated: the results table has no row")
    line, text = rest[0]
    fields = text.split()
    if len(fields) < 6:
        raise source.error(
            line,
            f"expected 6 columns (send recv request response elapsed rate), got {len(fields)}",
        )
    names = ("send socket", "recv socket", "request size", "response size", "elapsed", "rate")
    for text_value, name in zip(fields[:6], names, strict=True):
        number(source, line, text_value, name)
    values = {
        "request_bytes": (line, fields[2]),
        "response_bytes": (line, fields[3]),
        "elapsed_s": (line, fields[4]),
        "rate": (line, fields[5]),
    }
    return _build(source, line, values, found, burst, conditions)


def _omni_csv(
    source: Source,
    header_line: int,
    header: str,
    line: int,
    text: str,
    found: dict[str, Any],
    burst: int,
    conditions: Mapping[str, Any],
) -> Measurement:
    titles = split_csv(header)
    cells = split_csv(text)
    if len(cells) != len(titles):
        raise source.error(
            line,
            f"expected {len(titles)} values, one per title on line {header_line}, got {len(cells)}",
        )
    values = {
        _CSV_TITLES[t.strip().lower()]: (line, c)
        for t, c in zip(titles, cells, strict=True)
        if t.strip().lower() in _CSV_TITLES
    }
    return _build(source, line, values, found, burst, conditions)


def _build(
    source: Source,
    line: int,
    raw: dict[str, tuple[int, str]],
    found: dict[str, Any],
    burst: int,
    conditions: Mapping[str, Any],
) -> Measurement:
    v: dict[str, float] = {}
    for name, (where, text) in raw.items():
        if name in _TEXT_FIELDS:
            found[name] = text.strip()
        else:
            v[name] = number(source, where, text, name)
    rate = v.get("rate")
    if rate is None and "throughput" in v and found.get("throughput_units", "").startswith("Trans"):
        rate = v["throughput"]
    found.pop("throughput_units", None)
    if rate is not None:
        found["transaction_rate_per_s"] = rate
    if "request_bytes" in v:
        found["payload_bytes"] = int(v["request_bytes"])
    if "response_bytes" in v:
        found["response_bytes"] = int(v["response_bytes"])
    if "elapsed_s" in v:
        found["duration_s"] = v["elapsed_s"]
    mean = v.get("mean")
    if mean is None and rate and burst == 0:
        mean = 1e6 / rate  # one transaction in flight: the mean round trip is 1/rate
    table = [(p, v[f"p{p}"]) for p in (50, 90, 99) if f"p{p}" in v]
    for (p0, v0), (p1, v1) in zip(table, table[1:], strict=False):
        if v1 < v0:
            raise source.error(line, f"percentiles out of order: P{p1} {v1:g} < P{p0} {v0:g}")
    if mean is None and not table and "min" not in v:
        raise source.error(line, "no latency figures (latency selectors or transaction rate)")
    count = None
    if rate is not None and "elapsed_s" in v:
        total = rate * v["elapsed_s"]
        if not math.isfinite(total) or total > MAX_TRANSACTIONS:
            raise source.error(
                line,
                f"{rate:g} transactions/s for {v['elapsed_s']:g} s: more than "
                f"{MAX_TRANSACTIONS:.0e} transactions, not a measurement",
            )
        count = round(total)
    return Measurement(
        format="netperf",
        source=source.where(line),
        percentiles_us=tuple((float(p), val) for p, val in table),
        count=count,
        min_us=v.get("min"),
        max_us=v.get("max"),
        mean_us=mean,
        conditions={**found, **conditions},
    )
