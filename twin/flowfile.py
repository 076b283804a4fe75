"""Order-flow and rate-trace files: read, check, and turn into :class:`twin.flow.Arrivals`.

An **order flow** (CSV with a header, or Parquet) has one row per request:

- ``send_ns`` (required): when the client sends it, integer nanoseconds (any epoch), >= 0 and
  non-decreasing;
- ``kind`` (required): ``new``, ``cancel`` or ``modify``;
- ``account`` or ``connection`` (optional): the session it travels on (any integers or names;
  numbered densely in order of first use). Without it, requests are dealt to the scenario's
  connections in turn, as the generated schedule deals them;
- ``payload_bytes`` (optional): an integer >= 1, carried to the output (the path's wire times
  are the scenario's, ``workload.payload_bytes``).

A **rate trace** (CSV or Parquet) has ``time_ns`` (non-decreasing, >= 0) and
``rate_msgs_per_s`` (finite, >= 0): the rate holds from a row's time to the next row's; the
last row ends the flow (its rate is not used).

Bad input is one :class:`~twin.errors.ConfigError` line naming the file and, for a value, its
row (1-based, the header not counted): a FIFO, a device or a folder is refused before it is
opened, and a file above :data:`MAX_FLOW_BYTES` before it is read.
"""

from __future__ import annotations

import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from twin.errors import ConfigError
from twin.flow import KIND_NAMES, Arrivals

#: The largest flow file read (bytes): about 40 million CSV requests, a day of a busy session.
MAX_FLOW_BYTES = 2 * 1024**3


@dataclass(frozen=True)
class OrderFlow:
    """A checked order flow: its arrivals (us from the first request), the first request's
    ``send_ns`` (to give times back in the file's epoch) and each request's payload (-1: none)."""

    arrivals: Arrivals
    origin_ns: int
    send_ns: np.ndarray  # int64, as in the file
    payload_bytes: np.ndarray  # int64, -1 where the file gives none
    source: str


def _checked_path(path: str | Path, what: str) -> Path:
    path = Path(path)
    try:
        info = path.stat()
    except FileNotFoundError:
        raise ConfigError(f"{path}: {what} file not found") from None
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{path}: cannot read {what} file: {exc}") from None
    if not stat.S_ISREG(info.st_mode):
        kind = "a directory" if stat.S_ISDIR(info.st_mode) else "not a regular file (a FIFO?)"
        raise ConfigError(f"{path}: {kind}, not a {what} file")
    if info.st_size > MAX_FLOW_BYTES:
        raise ConfigError(
            f"{path}: {info.st_size:,} bytes, more than the {MAX_FLOW_BYTES:,} a {what} file "
            "may have"
        )
    if info.st_size == 0:
        raise ConfigError(f"{path}: empty {what} file")
    return path


def _read_table(path: Path, what: str) -> Any:
    """The file as a pyarrow table, CSV columns as text (checked column by column)."""
    import pyarrow as pa
    import pyarrow.csv as pacsv
    import pyarrow.parquet as pq

    try:
        if path.suffix.lower() in (".parquet", ".pq"):
            return pq.read_table(path)
        with path.open("rb") as f:
            header = f.readline().decode("utf-8", "replace").strip().split(",")
        types = {name.strip(): pa.string() for name in header}
        return pacsv.read_csv(path, convert_options=pacsv.ConvertOptions(column_types=types))
    except (pa.ArrowInvalid, OSError, UnicodeDecodeError) as exc:
        text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise ConfigError(f"{path}: not a readable {what} file (CSV or Parquet): {text}") from None


def _column(table: Any, path: Path, name: str) -> Any:
    if name not in table.column_names:
        raise ConfigError(
            f"{path}: no column {name!r} (columns: {', '.join(table.column_names) or 'none'})"
        )
    return table.column(name)


def _first_bad(path: Path, name: str, bad: np.ndarray, values: Any, allowed: str) -> None:
    if bad.any():
        row = int(np.argmax(bad))
        raise ConfigError(f"{path}: row {row + 1}: {name} = {values[row]!r}: {allowed}")


def _integers(path: Path, name: str, column: Any, minimum: int) -> np.ndarray:
    """An integer column (text, integer or float) as int64, each value >= ``minimum``."""
    import pyarrow as pa
    import pyarrow.compute as pc

    allowed = f"need a finite integer >= {minimum}"
    col = column.combine_chunks() if hasattr(column, "combine_chunks") else column
    if pa.types.is_string(col.type) or pa.types.is_large_string(col.type):
        text = pc.utf8_trim_whitespace(col)
        ok = pc.fill_null(pc.match_substring_regex(text, r"^[+-]?[0-9]{1,19}$"), False)
        ok_np = np.asarray(ok.to_numpy(zero_copy_only=False), dtype=bool)
        _first_bad(path, name, ~ok_np, text.to_pylist() if not ok_np.all() else [], allowed)
        try:
            values = np.asarray(pc.cast(text, pa.int64()).to_numpy(), dtype=np.int64)
        except pa.ArrowInvalid:  # 19 digits above int64's range
            big = np.array(
                [len(v.lstrip("+-")) == 19 and int(v) > 2**63 - 1 for v in text.to_pylist()]
            )
            _first_bad(path, name, big, text.to_pylist(), allowed + " below 2**63")
            raise

    elif pa.types.is_integer(col.type):
        nulls = np.asarray(col.is_null().to_numpy(zero_copy_only=False), dtype=bool)
        _first_bad(path, name, nulls, [None] * len(nulls), allowed)
        values = np.asarray(col.to_numpy(zero_copy_only=False), dtype=np.int64)
    elif pa.types.is_floating(col.type):
        f = np.asarray(col.to_numpy(zero_copy_only=False), dtype=np.float64)
        bad = ~np.isfinite(f) | (f != np.round(f)) | (np.abs(f) > 9.2e18)
        _first_bad(path, name, bad, f, allowed)
        values = f.astype(np.int64)
    else:
        raise ConfigError(f"{path}: column {name!r} is {col.type}: {allowed}")
    _first_bad(path, name, values < minimum, values, allowed)
    return values


def _sorted_times(path: Path, name: str, values: np.ndarray) -> None:
    down = np.zeros(len(values), dtype=bool)
    down[1:] = values[1:] < values[:-1]
    _first_bad(path, name, down, values, "times must not decrease (sort the file by time)")


def read_order_flow(path: str | Path, connections: int = 1) -> OrderFlow:
    """The checked order flow in ``path``; without an account or connection column, requests
    are dealt to ``connections`` in turn."""
    import pyarrow.compute as pc

    p = _checked_path(path, "order flow")
    table = _read_table(p, "order flow")
    if table.num_rows == 0:
        raise ConfigError(f"{p}: no requests (an order flow needs at least one row)")
    send_ns = _integers(p, "send_ns", _column(table, p, "send_ns"), 0)
    _sorted_times(p, "send_ns", send_ns)
    kinds = pc.cast(_column(table, p, "kind").combine_chunks(), "string")
    kinds = pc.utf8_lower(pc.utf8_trim_whitespace(kinds))
    names = np.asarray(kinds.to_numpy(zero_copy_only=False), dtype=object)
    code = np.full(len(names), -1, dtype=np.int8)
    for c, kind in enumerate(KIND_NAMES):
        code[names == kind] = c
    _first_bad(p, "kind", code < 0, names, f"allowed: {', '.join(KIND_NAMES)}")
    session = next((c for c in ("account", "connection") if c in table.column_names), None)
    if session is None:
        conn = np.arange(len(send_ns), dtype=np.int64) % max(connections, 1)
    else:
        ids = table.column(session).combine_chunks()
        nulls = np.asarray(ids.is_null().to_numpy(zero_copy_only=False), dtype=bool)
        _first_bad(p, session, nulls, [None] * len(nulls), "need a value (an id)")
        values = np.asarray(ids.to_numpy(zero_copy_only=False))
        _, first, inverse = np.unique(values, return_index=True, return_inverse=True)
        order = np.argsort(np.argsort(first))  # numbered in order of first use
        conn = order[inverse].astype(np.int64)
    payload = np.full(len(send_ns), -1, dtype=np.int64)
    if "payload_bytes" in table.column_names:
        payload = _integers(p, "payload_bytes", table.column("payload_bytes"), 1)
    origin = int(send_ns[0])
    send_us = (send_ns - origin).astype(np.float64) / 1e3
    return OrderFlow(Arrivals(send_us, conn, code), origin, send_ns, payload, str(p))


def read_rate_trace(path: str | Path) -> tuple[np.ndarray, np.ndarray]:
    """The checked rate trace in ``path``: each row's start (us from the first row) and its
    rate (msg/s); the last row ends the flow."""
    p = _checked_path(path, "rate trace")
    table = _read_table(p, "rate trace")
    if table.num_rows < 2:
        raise ConfigError(f"{p}: a rate trace needs at least two rows (a start and an end)")
    time_ns = _integers(p, "time_ns", _column(table, p, "time_ns"), 0)
    _sorted_times(p, "time_ns", time_ns)
    col = _column(table, p, "rate_msgs_per_s").combine_chunks()
    text = np.asarray(col.to_numpy(zero_copy_only=False), dtype=object)
    rate = np.empty(len(text))
    for i, value in enumerate(text):
        try:
            rate[i] = float(value)
        except (TypeError, ValueError):
            rate[i] = np.nan
    _first_bad(p, "rate_msgs_per_s", ~np.isfinite(rate) | (rate < 0), text, "need >= 0 msg/s")
    return (time_ns - time_ns[0]).astype(np.float64) / 1e3, rate
