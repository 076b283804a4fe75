"""``twin replay`` of the shipped 1M-request flow through Tier 1 against the fast engine's
steady state, in one run: simulated messages per CPU second of each, and their ratio.

The flow is ``scenarios/flows/burst_1m_rate.csv`` (18 s at 50k msg/s, then 200 ms at 500k
msg/s: about a million requests), replayed with the fast engine as ``twin replay`` does it
(:func:`twin.replay_run.replay_to_folder`: chunks, saved state and the Parquet table included).
The steady state is ``twin run``'s fast engine on the same scenario at 50k msg/s for as many
messages. Both are warmed up first (compile excluded) and run alternately :data:`ROUNDS` times
in this process (the host's speed drifts); the ratio is taken per round and its median kept.
Done when the ratio is at least 0.5 (issue 72).

Writes ``benchmarks/results/replay.json``. ``python -m benchmarks.bench_replay`` runs it alone.
"""

from __future__ import annotations

import json
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "replay.json"
SCENARIO = ROOT / "scenarios" / "tier1_peering_cpg.toml"
FLOW = ROOT / "scenarios" / "flows" / "burst_1m_rate.csv"
ROUNDS = 3


def main() -> dict[str, Any]:
    from twin.flow import rate_trace_arrivals
    from twin.flowfile import read_rate_trace
    from twin.replay_run import Flow, replay_to_folder
    from twin.scenario import load_scenario
    from twin.simulation import ENGINES, apply_overrides, prepare

    scenario = load_scenario(SCENARIO)
    start_us, rate = read_rate_trace(FLOW)
    arrivals = rate_trace_arrivals(start_us, rate, scenario.workload.accounts, 1)
    flow = Flow.from_arrivals(arrivals, str(FLOW))
    n = len(arrivals)
    prepared = prepare(scenario)
    steady = prepare(
        apply_overrides(scenario, 50_000.0, n / 50_000.0, 1).with_fields({"workload.warmup_s": 0.0})
    )
    fast = ENGINES["fast"]
    warm = prepare(apply_overrides(scenario, 50_000.0, 0.01, 2))
    fast(warm.path, warm.load)
    with tempfile.TemporaryDirectory() as tmp:
        replay_to_folder(
            prepared, Flow.from_arrivals(arrivals.slice(0, 1000), "warm"), Path(tmp) / "w"
        )
    rounds = []
    for _ in range(ROUNDS):
        load0 = os.getloadavg()[0]
        cpu0 = time.process_time()
        out = fast(steady.path, steady.load)
        steady_cpu = time.process_time() - cpu0
        with tempfile.TemporaryDirectory() as tmp:
            cpu0 = time.process_time()
            summary = replay_to_folder(prepared, flow, Path(tmp) / "r")
            replay_cpu = time.process_time() - cpu0
        steady_rate = out.messages / steady_cpu
        replay_rate = n / replay_cpu
        rounds.append(
            {
                "steady_messages": out.messages,
                "steady_cpu_s": steady_cpu,
                "steady_msgs_per_cpu_s": steady_rate,
                "replay_requests": n,
                "replay_cpu_s": replay_cpu,
                "replay_msgs_per_cpu_s": replay_rate,
                "ratio": replay_rate / steady_rate,
                "replay_rtt_p99_us": summary["rtt_us"]["p99"],
                "load_avg_1m_before": load0,
            }
        )
    result = {
        "scenario": SCENARIO.name,
        "flow": str(FLOW.relative_to(ROOT)),
        "requests": n,
        "rounds": rounds,
        "ratio_median": statistics.median(r["ratio"] for r in rounds),
        "steady_msgs_per_cpu_s_median": statistics.median(
            r["steady_msgs_per_cpu_s"] for r in rounds
        ),
        "replay_msgs_per_cpu_s_median": statistics.median(
            r["replay_msgs_per_cpu_s"] for r in rounds
        ),
        "target_ratio": 0.5,
    }
    RESULTS.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    return result


if __name__ == "__main__":
    main()
