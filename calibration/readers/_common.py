"""Shared plumbing for the readers: the text being read, errors with file and line, units.

Every reader receives a :class:`Source` (the decoded lines of one file) and raises
:class:`~twin.errors.MeasurementError` through :meth:`Source.error`, so that every message
starts ``path:line:`` and a one-line CLI error is enough to find the problem.
"""

from __future__ import annotations

import csv
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from twin.errors import MeasurementError

#: Microseconds per unit, for every spelling of a time unit the readers meet.
US_PER_UNIT: Mapping[str, float] = {
    "ns": 1e-3,
    "nsec": 1e-3,
    "us": 1.0,
    "usec": 1.0,
    "\u00b5s": 1.0,  # MICRO SIGN, as Java's "µs" is usually encoded
    "\u03bcs": 1.0,  # GREEK SMALL LETTER MU
    "ms": 1e3,
    "msec": 1e3,
    "s": 1e6,
    "sec": 1e6,
}

_TIME_WITH_UNIT = re.compile(
    r"^\s*((?:[0-9]+(?:\.[0-9]+)?|\.[0-9]+)(?:[eE][-+]?[0-9]+)?)\s*(ns|nsec|us|usec|\u00b5s|\u03bcs|ms|msec|s|sec)\s*$"
)

#: Conditions that also steer a reader (they are kept in ``Measurement.conditions`` too).
VALUE_UNIT = "value_unit"
#: How a user gives the value unit, in messages: the CLI flag and the keyword of read().
UNIT_OPTION = "--value-unit, value_unit="


def not_a_unit(unit: object) -> str:
    """The message for a value unit that is not a time unit."""
    return f"value unit {unit!r} ({UNIT_OPTION}) is not a time unit; use ns, us, ms or s"


@dataclass(frozen=True)
class Source:
    """The text of one benchmark file, split into lines (line numbers start at 1)."""

    path: str
    lines: tuple[str, ...]

    def error(self, line: int | None, message: str) -> MeasurementError:
        """A MeasurementError whose message starts ``path:line:``."""
        where = self.path if line is None else f"{self.path}:{line}"
        return MeasurementError(f"{where}: {message}")

    def where(self, line: int | None = None) -> str:
        return self.path if line is None else f"{self.path}:{line}"

    def numbered(self) -> list[tuple[int, str]]:
        """(line number, text) for every line that is not blank."""
        return [(i, text) for i, text in enumerate(self.lines, start=1) if text.strip()]


#: The limit before parsing, on what a file costs to read (its bytes, held once as text): a
#: benchmark output larger than this is not one (a sockperf full log of 200k messages is about
#: 7 MB, hours of 5-significant-figure HdrHistogram intervals a few hundred MB less). Lines are
#: not limited: an interval log line is as long as its histogram (80,000 characters and more at
#: 5 significant figures), and every reader's per-line work is linear in the line.
MAX_FILE_BYTES = 256 * 1024 * 1024


def load(path: str | Path) -> Source:
    """Read a file as text; refuse missing, special (FIFO, device), over-large
    (:data:`MAX_FILE_BYTES`), binary, non-UTF-8 and empty files."""
    p = Path(path)
    try:
        if p.exists() and not p.is_dir() and not p.is_file():
            raise MeasurementError(f"{p}: not a regular file (a FIFO, socket or device)")
        if p.is_file() and p.stat().st_size > MAX_FILE_BYTES:
            raise MeasurementError(
                f"{p}: {p.stat().st_size:,} bytes; a benchmark file is at most {MAX_FILE_BYTES:,}"
            )
        data = p.read_bytes()
    except FileNotFoundError:
        raise MeasurementError(f"{p}: no such file") from None
    except IsADirectoryError:
        raise MeasurementError(f"{p}: is a directory, not a benchmark file") from None
    except OSError as exc:
        raise MeasurementError(f"{p}: cannot read ({exc.strerror})") from None
    except MeasurementError:
        raise
    except ValueError:  # a NUL byte in the name
        raise MeasurementError(f"{p}: not a usable file name (NUL byte)") from None
    if b"\x00" in data:
        line = data[: data.index(b"\x00")].count(b"\n") + 1
        raise MeasurementError(f"{p}:{line}: binary data (NUL byte), not a benchmark text output")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise MeasurementError(f"{p}:{line}: not UTF-8 text ({exc.reason})") from None
    source = Source(str(p), tuple(text.splitlines()))
    if not text.strip():
        raise source.error(1, "empty file: no benchmark output to read")
    return source


def shown(text: str, width: int = 60) -> str:
    """``text`` stripped and clipped to ``width`` characters, for a message."""
    text = text.strip()
    return text if len(text) <= width else text[: width - 3] + "..."


def split_csv(text: str) -> list[str]:
    """The fields of one CSV line; a line the ``csv`` module refuses (a field over its limit of
    131,072 characters, which no CSV benchmark output has) is one field, so a detector does not
    match it and a reader reports the wrong number of columns."""
    try:
        return next(csv.reader([text]), [])
    except csv.Error:
        return [text]


def number(source: Source, line: int, text: str, what: str, *, allow_inf: bool = False) -> float:
    """Parse a finite number >= 0 (``what`` names the field in the error)."""
    try:
        value = float(text.strip())
    except ValueError:
        raise source.error(line, f"{what}: expected a number, got {shown(text)!r}") from None
    if math.isnan(value) or (math.isinf(value) and not allow_inf):
        raise source.error(line, f"{what}: expected a finite number, got {shown(text)!r}")
    if value < 0:
        raise source.error(line, f"{what}: must be >= 0, got {value:g}")
    return value


def time_with_unit(source: Source, line: int, text: str, what: str) -> float:
    """Parse ``"29253ns"``, ``"57µs"``, ``"13.6ms"`` ... into microseconds."""
    match = _TIME_WITH_UNIT.match(text)
    if match is None:
        if text.strip().startswith("-"):
            raise source.error(line, f"{what}: must be >= 0, got {shown(text)!r}")
        raise source.error(
            line,
            f"{what}: expected a time such as 29253ns, 57µs or 13.6ms, got {shown(text)!r}",
        )
    return float(match.group(1)) * US_PER_UNIT[match.group(2)]


def unit_factor(source: Source, conditions: Mapping[str, Any], default: str | None) -> float:
    """Microseconds per recorded value, from the ``value_unit`` condition or the default."""
    unit = conditions.get(VALUE_UNIT, default)
    if unit is None:
        raise source.error(
            None,
            "the file does not state its time unit: pass value_unit= one of "
            f"{', '.join(sorted({'ns', 'us', 'ms', 's'}))}",
        )
    if unit not in US_PER_UNIT:
        raise source.error(
            None,
            not_a_unit(unit),
        )
    return US_PER_UNIT[unit]
