"""JSON text the project writes and prints: strict JSON, never ``Infinity`` or ``NaN``.

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
