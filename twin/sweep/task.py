"""One unit of sweep work: a scenario at one seed on one engine, as a pure, picklable function.

:func:`run_task` takes a :class:`PointTask` (the scenario's raw table and file name, a seed, an
engine name) and returns a :class:`TaskOutcome` holding one result row and the round-trip
histogram's non-empty buckets. It reads no global state and writes nothing, so the same task
gives the same outcome in this process, in a local process pool or on a Dask worker elsewhere;
the process that collects outcomes is the only one that writes files.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from twin.percentiles import PERCENTILES
from twin.results import RunResult
from twin.scenario import parse
from twin.simulation import run

STATS = (*PERCENTILES, "max", "mean")


@dataclass(frozen=True)
class PointTask:
    """What a worker needs to run one (point, replication)."""

    point_id: int
    replication: int
    seed: int
    engine: str
    source: str
    raw: Mapping[str, Any]

    @property
    def key(self) -> str:
        """File-name stem of the task's result: ``p00012_r002``."""
        return task_key(self.point_id, self.replication)


def task_key(point_id: int, replication: int) -> str:
    return f"p{point_id:05d}_r{replication:03d}"


@dataclass(frozen=True)
class TaskOutcome:
    """A finished task: a row of plain values and histogram buckets, or the error it raised."""

    point_id: int
    replication: int
    seed: int
    row: dict[str, Any] = field(default_factory=dict)
    hist_value_ns: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    hist_count: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    error: str | None = None
    wall_s: float = 0.0


def result_row(result: RunResult) -> dict[str, Any]:
    """The numbers of a run that go into a sweep row (percentiles are None when unstable)."""
    row: dict[str, Any] = {
        "engine": result.engine,
        "messages": result.messages,
        "stable": result.stable,
        "saturated": "; ".join(result.saturated_stations),
        "throughput_msgs_per_s": result.throughput_msgs_per_s,
    }
    for stat in STATS:
        row[stat] = float(result.rtt_us[stat]) if result.stable else None
    return row


def histogram_buckets(counts: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """Non-empty buckets of a counts array: each bucket's value (ns) and its count."""
    if counts is None:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    from twin.histogram import to_hdr

    hist = to_hdr(counts)
    index = np.flatnonzero(counts)
    values = np.array([hist.get_value_from_index(int(i)) for i in index], dtype=np.int64)
    return values, counts[index].astype(np.int64)


def run_task(task: PointTask) -> TaskOutcome:
    """Run one task; an exception becomes the outcome's ``error`` (the sweep carries on)."""
    started = time.perf_counter()
    try:
        scenario = parse(
            {**task.raw, "workload": {**task.raw["workload"], "seed": task.seed}},
            source=task.source,
        )
        result = run(scenario, engine=task.engine)
        values, counts = histogram_buckets(result.counts)
        row = {
            "scenario_name": scenario.name,
            "tier": scenario.connectivity.tier,
            "rate_msgs_per_s": scenario.workload.rate_msgs_per_s,
            **result_row(result),
        }
    except Exception as exc:  # recorded in the manifest; the sweep goes on with other points
        return TaskOutcome(
            task.point_id,
            task.replication,
            task.seed,
            error=f"{type(exc).__name__}: {exc}",
            wall_s=time.perf_counter() - started,
        )
    return TaskOutcome(
        task.point_id,
        task.replication,
        task.seed,
        row=row,
        hist_value_ns=values,
        hist_count=counts,
        wall_s=time.perf_counter() - started,
    )
