"""A sweep's results folder: one Parquet file per finished (point, replication) and a manifest.

Layout::

    DIR/manifest.json              sweep file hash, engine, seeds, code version, profiles,
                                   points and their fields, failures (point -> error)
    DIR/points/p00012_r002.parquet one row: ids, seed, swept fields, percentiles, histogram
    DIR/results.parquet            every row, sorted (written when a sweep finishes)
    DIR/summary.parquet            per point: mean and 95% CI of each statistic

Every file is written atomically (temporary file, then rename), so a file in ``points/`` is
complete whenever it exists. The manifest's ``checksums`` maps each task key to its file's
SHA-256 (saved with every manifest write); ``--resume`` keeps a point file only when it matches
its checksum or, written after the last manifest save, when it reads as the row of its own
point and replication: a missing, corrupt, emptied or swapped file is recomputed
(:func:`verified_keys`). ``DIR/.lock`` (an exclusive ``flock``, released when its holder exits
however it exits) makes a second run into the same folder refuse (:func:`folder_lock`). The
collecting process is the only writer.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from twin.atomic import atomic_write, write_json
from twin.errors import ScenarioError
from twin.jsontext import read_json
from twin.profile import resolve_profile_path
from twin.provenance import code_version
from twin.sweep.spec import Sweep
from twin.sweep.task import STATS, TaskOutcome, task_key

MANIFEST = "manifest.json"
POINTS_DIR = "points"
RESULTS = "results.parquet"
SUMMARY = "summary.parquet"
FORMAT = 1


def _profiles(sweep: Sweep) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for point in sweep.points:
        scenario = point.scenario
        path = resolve_profile_path(scenario.profile, scenario.base_dir)
        key = str(path)
        if key not in found:
            found[key] = {
                "profile": scenario.profile,
                "sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
            }
    return found


def _jsonable(value: Any) -> Any:
    return value if isinstance(value, str | int | float | bool) or value is None else str(value)


def new_manifest(sweep: Sweep) -> dict[str, Any]:
    """The manifest written before any work starts."""
    return {
        "format": FORMAT,
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "sweep": {
            "name": sweep.name,
            "description": sweep.description,
            "source": sweep.source,
            "sha256": sweep.sha256,
            "engine": sweep.engine,
            "replications": sweep.replications,
            "seed": sweep.seed,
        },
        "seeds": list(sweep.seeds),
        "code_version": code_version(),
        "profiles": _profiles(sweep),
        "axes": list(sweep.axes),
        "points": [
            {
                "point": p.point_id,
                "label": p.label,
                "scenario": p.scenario.name,
                "fields": {k: _jsonable(v) for k, v in p.fields},
            }
            for p in sweep.points
        ],
        "failures": {},
        "checksums": {},
    }


def read_manifest(out_dir: Path) -> dict[str, Any] | None:
    path = out_dir / MANIFEST
    if not path.exists():
        return None
    try:
        manifest: dict[str, Any] = read_json(path)
    except (OSError, json.JSONDecodeError) as exc:
        raise ScenarioError(f"{path}: unreadable sweep manifest: {exc}") from None
    return manifest


def write_manifest(out_dir: Path, manifest: dict[str, Any]) -> None:
    write_json(out_dir / MANIFEST, manifest)


def _axis_type(values: list[Any]) -> pa.DataType:
    present = [v for v in values if v is not None]
    if present and all(isinstance(v, bool) for v in present):
        return pa.bool_()
    if present and all(isinstance(v, int) and not isinstance(v, bool) for v in present):
        return pa.int64()
    if present and all(isinstance(v, int | float) and not isinstance(v, bool) for v in present):
        return pa.float64()
    return pa.string()


def _axis_value(value: Any, kind: pa.DataType) -> Any:
    if value is None:
        return None
    if kind == pa.string():
        return value if isinstance(value, str) else json.dumps(value)
    return float(value) if kind == pa.float64() else value


def row_schema(sweep: Sweep) -> pa.Schema:
    """The one schema every row file of ``sweep`` has (so the files concatenate)."""
    fields = [
        pa.field("point", pa.int64()),
        pa.field("replication", pa.int64()),
        pa.field("seed", pa.int64()),
    ]
    for axis in sweep.axes:
        values = [dict(p.fields).get(axis) for p in sweep.points]
        fields.append(pa.field(axis, _axis_type(values)))
    fields += [
        pa.field("scenario_name", pa.string()),
        pa.field("tier", pa.string()),
        pa.field("rate_msgs_per_s", pa.float64()),
        pa.field("engine", pa.string()),
        pa.field("messages", pa.int64()),
        pa.field("stable", pa.bool_()),
        pa.field("saturated", pa.string()),
        pa.field("throughput_msgs_per_s", pa.float64()),
        *[pa.field(stat, pa.float64()) for stat in STATS],
        pa.field("hist_value_ns", pa.list_(pa.int64())),
        pa.field("hist_count", pa.list_(pa.int64())),
    ]
    return pa.schema(fields)


def row_table(sweep: Sweep, schema: pa.Schema, outcome: TaskOutcome) -> pa.Table:
    """A finished task as a one-row table."""
    point = dict(sweep.points[outcome.point_id].fields)
    values: dict[str, Any] = {
        "point": outcome.point_id,
        "replication": outcome.replication,
        "seed": outcome.seed,
        **{a: _axis_value(point.get(a), schema.field(a).type) for a in sweep.axes},
        **outcome.row,
        "hist_value_ns": outcome.hist_value_ns.tolist(),
        "hist_count": outcome.hist_count.tolist(),
    }
    return pa.Table.from_pylist([{name: values[name] for name in schema.names}], schema=schema)


def point_file(out_dir: Path, point_id: int, replication: int) -> Path:
    return out_dir / POINTS_DIR / f"{task_key(point_id, replication)}.parquet"


def write_point(out_dir: Path, sweep: Sweep, schema: pa.Schema, outcome: TaskOutcome) -> str:
    """Write a finished task's row file atomically; returns its checksum."""
    path = point_file(out_dir, outcome.point_id, outcome.replication)
    table = row_table(sweep, schema, outcome)
    atomic_write(path, lambda tmp: pq.write_table(table, tmp))
    return checksum(path)


def finished_keys(out_dir: Path) -> set[str]:
    """Keys of tasks whose row file exists (complete by construction: atomic writes)."""
    folder = out_dir / POINTS_DIR
    return {p.stem for p in folder.glob("p*_r*.parquet")} if folder.exists() else set()


def checksum(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _row_is_its_own(path: Path) -> bool:
    """True when the file reads as one row of the point and replication its name gives."""
    try:
        table = pq.read_table(path, columns=["point", "replication"])
    except (OSError, pa.ArrowException):
        return False
    rows = table.to_pylist()
    return len(rows) == 1 and task_key(rows[0]["point"], rows[0]["replication"]) == path.stem


def verified_keys(out_dir: Path, manifest: dict[str, Any]) -> set[str]:
    """Keys of the point files that hold up; the others are deleted, to be recomputed.

    A file with a checksum in the manifest must match it; a file without one (written after
    the last manifest save) must read as its own point's row, and then gets its checksum.
    """
    sums: dict[str, str] = manifest.setdefault("checksums", {})
    good = set()
    for path in sorted((out_dir / POINTS_DIR).glob("p*_r*.parquet")):
        key = path.stem
        digest = checksum(path)
        expected = sums.get(key)
        if (expected == digest) if expected is not None else _row_is_its_own(path):
            sums[key] = digest
            good.add(key)
        else:
            path.unlink()
            sums.pop(key, None)
    for key in set(sums) - good:
        del sums[key]  # its file is gone
    return good


@contextlib.contextmanager
def folder_lock(out_dir: Path) -> Iterator[None]:
    """Hold ``DIR/.lock`` for the run; a second run into the same folder refuses at once."""
    out_dir.mkdir(parents=True, exist_ok=True)
    with open(out_dir / ".lock", "a+") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            holder = handle.read().strip() or "another process"
            raise ScenarioError(
                f"{out_dir}: a sweep is already running into this folder (pid {holder}); "
                "wait for it or choose another --out"
            ) from None
        handle.seek(0)
        handle.truncate()
        handle.write(str(os.getpid()))
        handle.flush()
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def remove_partial_files(out_dir: Path) -> int:
    """Delete temporary files a killed writer left behind; returns how many."""
    folder = out_dir / POINTS_DIR
    stale = list(folder.glob(".*.tmp")) if folder.exists() else []
    stale += list(out_dir.glob(".*.tmp"))
    for path in stale:
        path.unlink(missing_ok=True)
    return len(stale)


def load_rows(out_dir: Path) -> pl.DataFrame:
    """Every finished row of a results folder, sorted by point and replication."""
    files = sorted((out_dir / POINTS_DIR).glob("p*_r*.parquet"))
    if not files:
        raise ScenarioError(f"{out_dir}: no finished sweep rows in {POINTS_DIR}/")
    table = pa.concat_tables([pq.read_table(f) for f in files])
    frame = pl.from_arrow(table)
    assert isinstance(frame, pl.DataFrame)
    return frame.sort(["point", "replication"])


def write_frame(path: Path, frame: pl.DataFrame) -> None:
    atomic_write(path, lambda tmp: frame.write_parquet(tmp))
