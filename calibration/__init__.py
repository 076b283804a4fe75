"""Calibration: read real benchmark data and fit the twin to it.

Public names are re-exported here (keep ``__all__`` sorted; a test checks it);
implementation lives in one module per idea: ``measurement`` (the canonical measured
distribution), ``readers`` (one module per benchmark format), and the fitting modules beside
them.
"""

from calibration.measurement import Measurement
from calibration.readers import PublishedFigure, read, read_published

__all__ = [
    "Measurement",
    "PublishedFigure",
    "read",
    "read_published",
]
