"""What a short-lived twin process pays before and after its work: start-up and result files.

The lab starts a gateway and a load client for every run (two processes of half a second's
work each in ``twin testbed lab --quick``), a sweep's and a matrix's workers start the twin in
each process, and every command a user types starts it once. Measured side by side in one run:

* **Start-up**, the median of :data:`REPEATS` fresh interpreters: importing one module of the
  twin (``twin.histogram``, what the testbed's processes need), the same with the public API
  loaded too (``twin.simulation``: what ``import twin`` loaded up to 2026-11-29), and
  ``twin --help`` (the CLI builds every command's parser; since issue 75 without loading
  numpy, Numba or any other numerical library, so it costs less than the first). Measured
  2026-12-07 on a host shared by four sessions (load average about 10): the figures are
  side by side, not absolute.
* **A run's result files**: the summary and ``.hgrm`` of a round-trip histogram with a
  millisecond tail, from :class:`twin.histogram.Histogram` (the mean and deviation over the
  non-empty buckets) and from the ``hdrhistogram`` package's own class (every bucket up to
  the largest value, in Python), on the same counts.

Writes ``benchmarks/results/startup.json``.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from hdrh.histogram import HdrHistogram

from twin.atomic import write_json
from twin.histogram import (
    HIGHEST_NS,
    LOWEST_NS,
    SIGNIFICANT_FIGURES,
    empty_counts,
    record_ns,
    to_hdr,
)
from twin.output import hgrm_of
from twin.testbed.recorder import summary_us

RESULTS = Path(__file__).resolve().parent / "results" / "startup.json"
REPEATS = 5
STARTS = {
    "import twin.histogram": [sys.executable, "-c", "import twin.histogram"],
    "import twin.histogram, twin.simulation": [
        sys.executable,
        "-c",
        "import twin.histogram, twin.simulation",
    ],
    "twin --help": [sys.executable, "-m", "twin", "--help"],
}


def start_s(cmd: list[str]) -> float:
    """The median wall time (s) of ``cmd`` over :data:`REPEATS` runs, after one to warm the
    file cache."""
    subprocess.run(cmd, capture_output=True, check=True)
    times = []
    for _ in range(REPEATS):
        t = time.perf_counter()
        subprocess.run(cmd, capture_output=True, check=True)
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def long_tailed_counts(n: int = 20_000, seed: int = 3) -> np.ndarray:
    """Round trips around 60 us with a tail to tens of milliseconds (a busy host's), in ns."""
    rng = np.random.default_rng(seed)
    values = rng.lognormal(np.log(60e3), 0.5, n)
    stalls = rng.random(n) < 0.01
    values[stalls] += rng.exponential(5e6, stalls.sum())
    counts = empty_counts()
    record_ns(counts, values.astype(np.int64))
    return counts


def result_files_s(hist: HdrHistogram) -> float:
    """The wall time (s) of a run's summary and ``.hgrm`` text from ``hist`` (the best of
    :data:`REPEATS`)."""
    times = []
    for _ in range(REPEATS):
        t = time.perf_counter()
        summary_us(hist)
        hgrm_of(hist)
        times.append(time.perf_counter() - t)
    return min(times)


def main() -> dict[str, object]:
    starts = {name: start_s(cmd) for name, cmd in STARTS.items()}
    counts = long_tailed_counts()
    ours = to_hdr(counts)
    package = HdrHistogram(LOWEST_NS, HIGHEST_NS, SIGNIFICANT_FIGURES)
    package.add(ours)
    twin_s, package_s = result_files_s(ours), result_files_s(package)
    result: dict[str, object] = {
        "benchmark": "a twin process's start-up, and a run's result files",
        "repeats": REPEATS,
        "start_s": starts,
        "result_files": {
            "round_trips": int(counts.sum()),
            "largest_us": ours.get_max_value() / 1e3,
            "twin_histogram_s": twin_s,
            "hdrhistogram_package_s": package_s,
            "ratio": package_s / twin_s,
        },
    }
    write_json(RESULTS, result)
    for name, seconds in starts.items():
        print(f"  {name:40s} {seconds:6.2f} s")
    print(f"  result files: {twin_s * 1e3:.1f} ms, the package's {package_s * 1e3:.1f} ms")
    return result


if __name__ == "__main__":
    main()
