"""Sweep scaling: one 200-point sweep's wall time on 1 and on 2 local workers, and the ratio.

Points are small (tier 1 at 40 rates x 5 instance types, a few ms of simulated time on the
reference engine) so the whole benchmark stays near a minute; the wall times include starting
the worker pool. Writes ``benchmarks/results/sweep.json``.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results" / "sweep.json"
SCENARIOS = Path(__file__).resolve().parent.parent / "scenarios"
INSTANCES = ["c6id.metal", "c5n.9xlarge", "c6in.metal", "c7gn.16xlarge", "c5n.xlarge"]


def sweep_text() -> str:
    rates = ", ".join(str(5000 * (i + 1)) for i in range(40))
    instances = ", ".join(f'"{i}"' for i in INSTANCES)
    return f"""
name = "bench_200"
scenario = "{SCENARIOS / "tier1_peering_cpg.toml"}"
engine = "des"
[set]
"workload.duration_s" = 0.002
"workload.warmup_s" = 0.0005
[grid]
"roles.client.instance" = [{instances}]
"workload.rate_msgs_per_s" = [{rates}]
"""


def main() -> dict[str, object]:
    from twin.sweep.runner import run_sweep
    from twin.sweep.spec import load_sweep

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench.toml"
        path.write_text(sweep_text())
        sweep = load_sweep(path)
        walls = {}
        for workers in (1, 2):
            started = time.perf_counter()
            outcome = run_sweep(sweep, Path(tmp) / f"w{workers}", workers=workers, progress=False)
            walls[workers] = time.perf_counter() - started
            if outcome.failures:
                raise RuntimeError(f"bench sweep failed: {outcome.failures}")
    result: dict[str, object] = {
        "benchmark": "sweep",
        "points": len(sweep.points),
        "replications": sweep.replications,
        "engine": sweep.engine,
        "cpus": len(os.sched_getaffinity(0)),
        "wall_s_1_worker": round(walls[1], 3),
        "wall_s_2_workers": round(walls[2], 3),
        "speedup_2_over_1": round(walls[1] / walls[2], 3),
    }
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(result, indent=2) + "\n")
    return result


if __name__ == "__main__":
    print(json.dumps(main()))
