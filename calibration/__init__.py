"""Calibration: read real benchmark data and fit the twin to it.

Public names are re-exported here (keep ``__all__`` sorted; a test checks it);
implementation lives in one module per idea: ``measurement`` (the canonical measured
distribution), ``readers`` (one module per benchmark format), and the fitting modules beside
them.
"""

import importlib
from typing import TYPE_CHECKING, Any

# Each public name loads when first used (PEP 562): importing a calibration module (the CLI's
# commands build their parsers from them) does not load numpy and every reader.
_HOMES = {
    "Measurement": "calibration.measurement",
    "PublishedFigure": "calibration.readers",
    "read": "calibration.readers",
    "read_published": "calibration.readers",
}

if TYPE_CHECKING:
    from calibration.measurement import Measurement
    from calibration.readers import PublishedFigure, read, read_published


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module 'calibration' has no attribute {name!r}")
    return getattr(importlib.import_module(_HOMES[name]), name)


__all__ = [
    "Measurement",
    "PublishedFigure",
    "read",
    "read_published",
]
