"""Sweeps: grids of scenarios with replications, resumable Parquet results, capacity, reports.

A sweep file (:mod:`twin.sweep.spec`) names a base scenario and a grid over any scenario field;
:func:`run_sweep` runs every (point, replication) on a local process pool or a Dask cluster and
writes one Parquet row per finished task; :func:`summarise_rows` gives each point's mean and 95%
confidence interval; :func:`find_capacity` searches the highest rate under a p99 ceiling; and
:func:`write_report` renders a results folder as one self-contained HTML page.

Names load on first use (PEP 562), so ``twin --help`` does not pay for polars and pyarrow.
"""

from __future__ import annotations

import importlib
from typing import Any

_HOME = {
    "CapacityResult": "capacity",
    "Point": "spec",
    "PointTask": "task",
    "Sweep": "spec",
    "SweepOutcome": "runner",
    "TaskOutcome": "task",
    "find_capacity": "capacity",
    "load_rows": "store",
    "load_sweep": "spec",
    "parse_sweep": "spec",
    "replication_seeds": "spec",
    "run_sweep": "runner",
    "run_task": "task",
    "summarise_rows": "summary",
    "sweep_tasks": "runner",
    "write_report": "report",
}

__all__ = sorted(_HOME)


def __getattr__(name: str) -> Any:
    if name not in _HOME:
        raise AttributeError(f"module 'twin.sweep' has no attribute {name!r}")
    return getattr(importlib.import_module(f"twin.sweep.{_HOME[name]}"), name)


def __dir__() -> list[str]:
    return __all__
