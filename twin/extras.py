"""Optional dependencies: the parts of the twin that need an extra, and the one error naming it.

The core install (``pip install exchange-latency-twin``) runs the model, both engines,
calibration, the CLI and its report. Three parts need more: the explorer (``[app]``:
Streamlit), sweeps on Dask (``[dask]``) and the live testbed gateway (``[testbed]``: uvloop).
Each imports its dependency through :func:`require`, so a missing one is a one-line
:class:`~twin.errors.ConfigError` that says which extra to install, never an ``ImportError``.
"""

from __future__ import annotations

import importlib
from enum import StrEnum
from types import ModuleType

from twin.errors import ConfigError

DISTRIBUTION = "exchange-latency-twin"


class Extra(StrEnum):
    """The optional-dependency groups of ``pyproject.toml``."""

    APP = "app"
    DASK = "dask"
    TESTBED = "testbed"


def require(module: str, extra: Extra, purpose: str) -> ModuleType:
    """Import ``module``, or refuse ``purpose`` naming the extra that installs it."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ConfigError(
            f"{purpose} needs {exc.name or module}, which is not installed: "
            f"pip install '{DISTRIBUTION}[{extra}]'"
        ) from None
