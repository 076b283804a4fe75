"""A run's files: its JSON summary, its scenario and its round-trip histogram (Parquet, ``.hgrm``).

Each is written atomically (:mod:`twin.atomic`).
"""

from __future__ import annotations

import io
import re
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from hdrh.histogram import HdrHistogram

from twin.atomic import atomic_write, write_json, write_text
from twin.histogram import to_hdr
from twin.results import RunResult


def histogram_table(counts: np.ndarray) -> pa.Table:
    """Non-empty histogram buckets as a table: bucket value in ns and its count."""
    hist = to_hdr(counts)
    index = np.flatnonzero(counts)
    values = [hist.get_value_from_index(int(i)) for i in index]
    return pa.table(
        {"value_ns": pa.array(values, pa.int64()), "count": pa.array(counts[index], pa.int64())}
    )


def hgrm_text(counts: np.ndarray) -> str:
    """HdrHistogram's percentile distribution (``.hgrm``) of a counts array (ns), values in
    microseconds: :func:`hgrm_of`."""
    return hgrm_of(to_hdr(counts))


def hgrm_of(hist: HdrHistogram) -> str:
    """HdrHistogram's percentile distribution (``.hgrm``) of a nanosecond histogram, with values
    in microseconds.

    The ``hdrhistogram`` package prints the standard deviation footer unscaled (in ns while
    every other value is in us); it is rewritten here so the file is self-consistent.
    """
    buffer = io.BytesIO()
    hist.output_percentile_distribution(buffer, 1000.0)
    stddev_us = hist.get_stddev() / 1000.0
    return re.sub(
        r"StdDeviation   = *[0-9.]+",
        f"StdDeviation   = {stddev_us:12.3f}",
        buffer.getvalue().decode(),
    )


def write_run(out_dir: Path, result: RunResult, scenario_toml: str) -> list[Path]:
    """Write a run's JSON summary, scenario, and histograms (Parquet and ``.hgrm``; one
    ``span_<name>.hgrm`` per span of the path, a feed's stages and milestones)."""
    paths = [out_dir / "result.json", out_dir / "scenario.toml"]
    write_json(paths[0], result.to_dict())
    write_text(paths[1], scenario_toml)
    if result.counts is not None:
        counts = result.counts
        hist_path = out_dir / "rtt_histogram.parquet"
        atomic_write(hist_path, lambda tmp: pq.write_table(histogram_table(counts), tmp))
        hgrm_path = out_dir / "rtt.hgrm"
        write_text(hgrm_path, hgrm_text(counts))
        paths += [hist_path, hgrm_path]
    for name, span in result.span_counts.items():
        span_path = out_dir / f"span_{span_file_stem(name)}.hgrm"
        write_text(span_path, hgrm_text(span))
        paths.append(span_path)
    return paths


def span_file_stem(name: str) -> str:
    """A span's name as a file name's stem: ``client poll → read`` -> ``client_poll_read``."""
    return re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_")
