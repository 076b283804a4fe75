"""The C++ engine write-up's findings, looked for in the model: the shipped feed scenario's stage
latencies as the bursts and the rate grow.

``.venv/bin/python -m benchmarks.feed_findings`` runs ``scenarios/feed_tls_websocket.toml``
(fast engine, 1 s of simulated time each) with fixed bursts of 1, 8 and 32 at 10k updates/s,
then geometric bursts of mean 32 at 10k, 100k and 200k updates/s, and writes each run's
stage percentiles and the engine thread's utilization to
``benchmarks/results/feed_findings.json``;
``make docs`` renders it in ``docs/feed.md``. Nothing here is fitted: the profile's stage
figures are the write-up's poll -> read and TLS p75 and assumed per-message work.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from twin.scenario import load_scenario
from twin.simulation import apply_overrides, run

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "benchmarks" / "results" / "feed_findings.json"
SCENARIO = REPO / "scenarios" / "feed_tls_websocket.toml"
CASES = (  # (rate updates/s, mean burst, burst sizes)
    (10_000, 1, "fixed"),
    (10_000, 8, "fixed"),
    (10_000, 32, "fixed"),
    (10_000, 32, "geometric"),
    (100_000, 32, "geometric"),
    (200_000, 32, "geometric"),
)
STAGES = ("client TLS decrypt", "client WebSocket decode", "client JSON parse", "inbound")


def main() -> int:
    base = load_scenario(SCENARIO)
    rows = []
    for rate, burst, sizes in CASES:
        scenario = apply_overrides(base, rate, 1.0, 1).with_fields(
            {"workload.burst": burst, "workload.burst_sizes": sizes}
        )
        result = run(scenario)
        thread = next(s for s in result.stations if s.name == "client engine thread")
        rows.append(
            {
                "rate_msgs_per_s": rate,
                "burst": burst,
                "burst_sizes": sizes,
                "messages": result.messages,
                "thread_utilization": thread.utilization,
                "tick_to_model_us": result.rtt_us,
                "stages_us": {k: result.spans_us[k] for k in STAGES},
            }
        )
        inbound = result.spans_us["inbound"]
        tls = result.spans_us["client TLS decrypt"]
        print(
            f"{rate:>8,} msg/s burst {burst:>2} {sizes:9s} thread {thread.utilization:.2f}  "
            f"inbound p50 {inbound['p50']:7.1f} p99 {inbound['p99']:7.1f}  TLS p75 "
            f"{tls['p75']:6.1f} p99 {tls['p99']:6.1f}",
            flush=True,
        )
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps({"scenario": "feed_tls_websocket", "runs": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
