"""The matching engine's benchmark (``python -m engine_ext.bench``) as part of ``make bench``.

Writes ``benchmarks/results/engine.json``: per workload ops/s, per-op p50/p99/p99.9 ns, the
reference engine's ops/s and the ratio, a short open-loop soak at 460k orders/s, and the
machine's noise (steal time, load average) beside them.
"""

from __future__ import annotations

from pathlib import Path

from engine_ext import bench

RESULTS = Path(__file__).resolve().parent / "results" / "engine.json"


def main() -> dict[str, object]:
    return bench.main(["--json", "--out", str(RESULTS)])
