"""What a long fast run costs: one simulated hour on the tier-1 path at 400k msg/s, linearly?

Issue 3 asks what the published 24-hour, 400k msg/s test costs to simulate. This runs the fast
engine for a short and a long simulated time (default 20 s and 3,600 s, about 1.4 billion
messages), each in its own interpreter as :mod:`benchmarks.bench_engines` does (one warm-up
call, then a run timed by process CPU time, peak RSS from the kernel), and compares their CPU
cost per message. Equal costs per message mean the cost is linear in simulated time, so 24 hours
is 24 times the hour; a flat peak RSS means memory does not grow with run length.

Too long for ``make bench`` (about half an hour on one core), so it is a script:
``.venv/bin/python -m benchmarks.long_run [LONG_S]``. Writes ``benchmarks/results/long_run.json``.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from benchmarks.bench_engines import RATE, SCENARIO, _subprocess

RESULTS = Path(__file__).resolve().parent / "results" / "long_run.json"
SHORT_S = 20.0
LONG_S = 3600.0
DAY_S = 86_400.0


def main(long_s: float = LONG_S) -> dict[str, Any]:
    short, long = (_subprocess("fast", s) for s in (SHORT_S, long_s))
    ns = {
        name: run["cpu_s"] / run["simulated_messages"] * 1e9
        for name, run in (("short", short), ("long", long))
    }
    result = {
        "scenario": SCENARIO.name,
        "rate_msgs_per_s": RATE,
        "cores_available": len(os.sched_getaffinity(0)),
        "short": short,
        "long": long,
        "cpu_ns_per_message": ns,
        "long_over_short_cost_per_message": ns["long"] / ns["short"],
        "long_over_short_peak_rss": long["peak_rss_mb"] / short["peak_rss_mb"],
        "one_day_cpu_s_single_core": ns["long"] * 1e-9 * RATE * DAY_S,
    }
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    return result


if __name__ == "__main__":
    main(float(sys.argv[1]) if len(sys.argv) > 1 else LONG_S)
