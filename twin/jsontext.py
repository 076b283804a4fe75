"""JSON text the project writes and prints: strict JSON, never ``Infinity`` or ``NaN``; and
the lab's JSON files read back (:func:`read_json`: regular files of bounded size) and the
numbers they state, checked (:func:`stated_number`).

A statistic that has no finite value (an unstable run's utilization, a ratio over zero) is
written as ``null``; :func:`dumps` then refuses anything else that JSON cannot hold.
"""

from __future__ import annotations

import json
import math
import os
import stat
from pathlib import Path
from typing import Any

from twin.errors import MeasurementError

#: The largest JSON file the project reads back (a lab's largest is well under 1 MB).
MAX_JSON_BYTES = 64 * 1024 * 1024


def finite(payload: Any) -> Any:
    """``payload`` with every non-finite float replaced by None (dicts, lists, tuples)."""
    if isinstance(payload, float):
        return payload if math.isfinite(payload) else None
    if isinstance(payload, dict):
        return {k: finite(v) for k, v in payload.items()}
    if isinstance(payload, list | tuple):
        return [finite(v) for v in payload]
    return payload


def dumps(payload: Any, **options: Any) -> str:
    """Strict JSON text of ``payload`` (non-finite floats as null)."""
    return json.dumps(finite(payload), allow_nan=False, **options)


def stated_number(value: Any, what: str) -> float:
    """A number a JSON file states (``what`` names it): a finite number >= 0, else ValueError
    (``what = value: expected ...``) for the caller to name the file."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{what} = {value!r}: expected a number")
    try:
        number = float(value)  # an integer of 400 digits is past any float
    except OverflowError:
        number = math.inf
    if not (math.isfinite(number) and number >= 0):
        shown = repr(value) if len(repr(value)) <= 40 else repr(value)[:37] + "..."
        raise ValueError(f"{what} = {shown}: expected a finite number >= 0")
    return number


def read_json(path: str | Path) -> Any:
    """The JSON value in the file at ``path`` (a symlink is followed to what it names).

    A FIFO, socket or device (reading would block, or never end) and a file over
    :data:`MAX_JSON_BYTES` are refused with :class:`~twin.errors.MeasurementError` (a
    ValueError) naming the file; a missing file raises FileNotFoundError, text that is not JSON
    ValueError, as ``json.loads(path.read_text())`` did, so callers name the file as before."""
    p = regular_file(path, MAX_JSON_BYTES)
    with open(p, "rb") as f:
        data = f.read(MAX_JSON_BYTES + 1)
    if len(data) > MAX_JSON_BYTES:
        raise MeasurementError(f"{p}: over {MAX_JSON_BYTES:,} bytes; a JSON file is at most that")
    return json.loads(data.decode("utf-8"))


def regular_file(path: str | Path, max_bytes: int) -> Path:
    """``path``, once it names a regular file of at most ``max_bytes`` (after symlinks): a
    FIFO would block its reader, a device never end; MeasurementError naming it otherwise
    (FileNotFoundError when it is missing)."""
    p = Path(path)
    info = os.stat(p)
    if not stat.S_ISREG(info.st_mode):
        raise MeasurementError(f"{p}: not a regular file (a FIFO, socket, device or folder)")
    if info.st_size > max_bytes:
        raise MeasurementError(f"{p}: {info.st_size:,} bytes; at most {max_bytes:,} are read")
    return p
