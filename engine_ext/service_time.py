"""The engine's measured per-message service time, for the twin's matching-engine hop.

The twin does not model the matching engine with an assumed distribution: it samples times
measured here, on this machine, replaying a deterministic workload through the compiled engine.
:func:`measure_service_ns` returns one time per message; :func:`service_time_samples_us` is the
convenience the calibration side calls; :func:`write_hgrm` writes the distribution in the
HdrHistogram percentile-distribution text format that ``calibration.readers`` reads.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from hdrh.histogram import HdrHistogram

from engine_ext._book import process_stream_timed
from engine_ext._timing import counter_overhead, ticks_per_ns
from engine_ext.engine import Engine
from engine_ext.errors import EngineError
from engine_ext.types import EVENT_DTYPE
from engine_ext.workloads import Workload, generate, load_or_generate

_HDR_LOWEST_NS = 1
_HDR_HIGHEST_NS = 60_000_000_000
_HDR_DIGITS = 3


def measure_service_ns(workload: Workload, n: int | None = None) -> np.ndarray:
    """Service time of each measured message of ``workload``, in nanoseconds (float64).

    Each message is timed alone with the CPU cycle counter read just before and after its
    :func:`~engine_ext.process_one` call inside one compiled loop over the stream (no Python
    in between); the counter's own cost (the minimum of two back-to-back reads) is subtracted
    and ticks are converted with a rate calibrated against ``perf_counter_ns``. The stream is
    replayed from the same post-warm-up snapshot as often as needed to give ``n`` samples. The
    first replay is preceded by an untimed one so compilation and cold caches are excluded.
    """
    msgs = workload.measured
    if msgs.shape[0] == 0:
        raise EngineError(f"workload {workload.name!r} has no measured messages")
    n = msgs.shape[0] if n is None else n
    if n < 1:
        raise EngineError(f"n must be >= 1, got {n}")
    engine = Engine(workload.config)
    engine.process(workload.warmup)
    snap = engine.snapshot()
    ev = np.empty(1 << 16, dtype=EVENT_DTYPE)
    ticks = np.empty(msgs.shape[0], dtype=np.int64)
    process_stream_timed(engine.state, msgs, ev, ticks)
    overhead, _ = counter_overhead(10_000)
    rate = ticks_per_ns()
    out = []
    got = 0
    while got < n:
        engine.restore(snap)
        process_stream_timed(engine.state, msgs, ev, ticks)
        take = min(n - got, ticks.shape[0])
        out.append(np.maximum(ticks[:take] - overhead, 0) / rate)
        got += take
    return np.concatenate(out)


def service_time_samples_us(
    workload: str, n: int, seed: int, *, cache_dir: str | Path | None = None
) -> np.ndarray:
    """``n`` measured per-message service times of the engine on ``workload``, in microseconds.

    The workload (one of :data:`engine_ext.workloads.WORKLOADS`) is generated from ``seed``
    (or replayed from ``cache_dir``). Times are measured per message with the cycle counter as
    described in :func:`measure_service_ns`, not estimated from batch averages, so the tail is
    the engine's real tail on this machine, including its noise.
    """
    n_messages = int(min(max(n, 20_000), 200_000))
    if cache_dir is None:
        wl = generate(workload, seed=seed, n_messages=n_messages)
    else:
        wl = load_or_generate(workload, seed=seed, n_messages=n_messages, cache_dir=cache_dir)
    return measure_service_ns(wl, n) / 1000.0


def histogram_ns(samples_ns: np.ndarray) -> HdrHistogram:
    """An HdrHistogram (1 ns .. 60 s, 3 significant digits) of service times in ns."""
    h = HdrHistogram(_HDR_LOWEST_NS, _HDR_HIGHEST_NS, _HDR_DIGITS)
    values, counts = np.unique(np.maximum(np.rint(samples_ns), 1).astype(np.int64),
                               return_counts=True)  # fmt: skip
    for v, c in zip(values.tolist(), counts.tolist(), strict=True):
        h.record_value(min(v, _HDR_HIGHEST_NS), c)
    return h


def write_hgrm(samples_ns: np.ndarray, path: str | Path) -> Path:
    """Write the percentile distribution of ``samples_ns`` as an ``.hgrm`` file, values in us.

    This is the text ``HdrHistogram.outputPercentileDistribution`` prints, with the recorded
    nanoseconds scaled by 1000 so the ``Value`` column is in microseconds.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    h = histogram_ns(samples_ns)
    with path.open("wb") as f:
        h.output_percentile_distribution(f, 1000.0)
    return path
