"""The twin's own histogram file: ``rtt_histogram.parquet`` from ``twin run --out``.

Columns ``value_ns`` (each non-empty HDR bucket's value, nanoseconds) and ``count``. Read as a
percentile table with one row per bucket (the cumulative share of round trips at or below it),
so percentiles agree with the run's own to the bucket resolution; count, min, max and mean come
from the buckets.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from calibration.measurement import Measurement
from twin.errors import MeasurementError

MAGIC = b"PAR1"
COLUMNS = ("value_ns", "count")


def is_parquet(path: Path) -> bool:
    try:
        with open(path, "rb") as fh:
            return fh.read(4) == MAGIC
    except OSError:
        return False


def read_histogram_parquet(path: Path, conditions: Mapping[str, Any]) -> Measurement:
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        table = pq.read_table(path)
    except (OSError, pa.ArrowException) as exc:
        raise MeasurementError(f"{path}: not a readable Parquet file ({exc})") from None
    missing = [c for c in COLUMNS if c not in table.column_names]
    if missing:
        raise MeasurementError(
            f"{path}: a Parquet histogram needs columns {', '.join(COLUMNS)}; "
            f"missing {', '.join(missing)}"
        )
    values = np.asarray(table.column("value_ns").to_numpy(zero_copy_only=False), dtype=float)
    counts = np.asarray(table.column("count").to_numpy(zero_copy_only=False), dtype=float)
    if values.size == 0 or not np.isfinite(values).all() or (values < 0).any():
        raise MeasurementError(f"{path}: value_ns must be finite, >= 0 and not empty")
    if not np.isfinite(counts).all() or (counts < 0).any() or counts.sum() <= 0:
        raise MeasurementError(f"{path}: count must be finite, >= 0, with at least one > 0")
    order = np.argsort(values, kind="stable")
    values, counts = values[order] / 1e3, counts[order]
    keep = counts > 0
    values, counts = values[keep], counts[keep]
    share = 100.0 * np.cumsum(counts) / counts.sum()
    total = int(counts.sum())
    return Measurement(
        format="twin-parquet",
        source=str(path),
        percentiles_us=tuple(zip(share.tolist(), values.tolist(), strict=True)),
        count=total,
        min_us=float(values[0]),
        max_us=float(values[-1]),
        mean_us=float(np.average(values, weights=counts)),
        conditions={"tool": "twin", "statistic": "round_trip", **conditions},
    )
