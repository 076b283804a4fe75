"""Running a sweep into a results folder, resumably, with a live progress bar.

:func:`run_sweep` validates the folder against the sweep (a new folder, or with ``resume`` the
same sweep file by hash), writes the manifest before any work, runs only the tasks without a row
file, writes each finished row atomically as it arrives, records failures in the manifest and
carries on, and finally writes the combined rows and the per-point summary.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl
from tqdm import tqdm

from twin.errors import ScenarioError
from twin.sweep import store
from twin.sweep.executors import run_tasks
from twin.sweep.spec import Sweep
from twin.sweep.summary import summarise_rows
from twin.sweep.task import PointTask, TaskOutcome, task_key


@dataclass
class SweepOutcome:
    """What one invocation did."""

    out_dir: Path
    ran: int = 0
    skipped: int = 0
    failures: dict[str, str] = field(default_factory=dict)
    wall_s: float = 0.0
    summary: pl.DataFrame | None = None


def sweep_tasks(sweep: Sweep) -> list[PointTask]:
    """Every (point, replication) of ``sweep`` as a task, point-major."""
    return [
        PointTask(
            point_id=p.point_id,
            replication=r,
            seed=seed,
            engine=sweep.engine,
            source=p.scenario.source,
            raw=dict(p.scenario.raw),
        )
        for p in sweep.points
        for r, seed in enumerate(sweep.seeds)
    ]


def _open_folder(sweep: Sweep, out_dir: Path, resume: bool) -> dict[str, Any]:
    manifest = store.read_manifest(out_dir)
    if manifest is None:
        if resume and out_dir.exists() and any(p.name != ".lock" for p in out_dir.iterdir()):
            raise ScenarioError(f"{out_dir}: --resume: no {store.MANIFEST} here (not a sweep)")
        manifest = store.new_manifest(sweep)
        store.write_manifest(out_dir, manifest)
        return manifest
    if not resume:
        raise ScenarioError(
            f"{out_dir}: already holds sweep {manifest['sweep']['name']!r}; "
            "continue it with --resume or choose another --out"
        )
    if manifest["sweep"]["sha256"] != sweep.sha256:
        raise ScenarioError(
            f"{out_dir}: --resume: {sweep.source} has changed since the sweep started "
            f"(sha256 {sweep.sha256[:12]} != {manifest['sweep']['sha256'][:12]}); "
            "start a new --out"
        )
    store.remove_partial_files(out_dir)
    return manifest


def finish(out_dir: Path, sweep: Sweep) -> pl.DataFrame:
    """Write the combined rows and the summary table; returns the summary."""
    rows = store.load_rows(out_dir)
    store.write_frame(out_dir / store.RESULTS, rows)
    summary = summarise_rows(rows, sweep.axes)
    store.write_frame(out_dir / store.SUMMARY, summary)
    return summary


# A running sweep saves its manifest (failures, checksums) at most this often (seconds): a
# point written since the last save is still verified on --resume, by its content.
MANIFEST_SAVE_S = 1.0


def _run_locked(
    sweep: Sweep,
    out_dir: Path,
    resume: bool,
    executor: str,
    workers: int | None,
    scheduler: str | None,
    progress: bool,
) -> SweepOutcome:
    manifest = _open_folder(sweep, out_dir, resume)
    done = store.verified_keys(out_dir, manifest)
    store.write_manifest(out_dir, manifest)
    saved = time.monotonic()
    todo = [t for t in sweep_tasks(sweep) if t.key not in done]
    outcome = SweepOutcome(out_dir, skipped=sweep.n_tasks - len(todo))
    schema = store.row_schema(sweep)
    failures: dict[str, str] = {
        k: v for k, v in manifest.get("failures", {}).items() if k not in done
    }
    bar = tqdm(
        total=sweep.n_tasks,
        initial=outcome.skipped,
        desc=f"sweep {sweep.name}",
        unit="run",
        file=sys.stderr,
        disable=not progress or not sys.stderr.isatty(),
        dynamic_ncols=True,
    )
    try:
        for task, result in run_tasks(todo, executor, workers, scheduler):
            key = task_key(task.point_id, task.replication)
            if isinstance(result, TaskOutcome) and result.error is None:
                manifest["checksums"][key] = store.write_point(out_dir, sweep, schema, result)
                failures.pop(key, None)
                outcome.ran += 1
                if time.monotonic() - saved > MANIFEST_SAVE_S:
                    store.write_manifest(out_dir, manifest)
                    saved = time.monotonic()
            else:
                error = result.error if isinstance(result, TaskOutcome) else repr(result)
                failures[key] = str(error)
                manifest["failures"] = dict(sorted(failures.items()))
                store.write_manifest(out_dir, manifest)
            bar.set_postfix(failed=len(failures), refresh=False)
            bar.update(1)
    finally:
        bar.close()
    manifest["failures"] = dict(sorted(failures.items()))
    manifest["complete"] = not failures
    store.write_manifest(out_dir, manifest)
    outcome.failures = failures
    if store.finished_keys(out_dir):
        outcome.summary = finish(out_dir, sweep)
    return outcome


def run_sweep(
    sweep: Sweep,
    out_dir: str | Path,
    *,
    resume: bool = False,
    executor: str = "local",
    workers: int | None = None,
    scheduler: str | None = None,
    progress: bool = True,
) -> SweepOutcome:
    """Run (or continue) ``sweep`` into ``out_dir``; failed tasks are recorded, not raised."""
    out_dir = Path(out_dir)
    started = time.perf_counter()
    with store.folder_lock(out_dir):
        outcome = _run_locked(sweep, out_dir, resume, executor, workers, scheduler, progress)
    outcome.wall_s = time.perf_counter() - started
    return outcome
