"""JSON text the project writes and prints: strict JSON, never ``Infinity`` or ``NaN``; and
the numbers it reads back from the lab's JSON files, checked (:func:`stated_number`).

A statistic that has no finite value (an unstable run's utilization, a ratio over zero) is
written as ``null``; :func:`dumps` then refuses anything else that JSON cannot hold.
"""

from __future__ import annotations

import json
import math
from typing import Any


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
    if not (math.isfinite(value) and value >= 0):
        raise ValueError(f"{what} = {value!r}: expected a finite number >= 0")
    return float(value)
