"""The EC2 scenarios' predicted latency-throughput curves, from 10k msg/s to saturation.

``.venv/bin/python -m benchmarks.load_curves`` runs each tier's shipped scenario, the Aeron echo
and netperf's echo between two c5n.xlarge made an open loop (a small instance, whose network
allowance is what fills; fast engine, one seed) at 10k msg/s and at fixed shares of its
saturation rate (the rate at which its busiest station's offered utilization reaches 1,
:func:`twin.sweep.capacity.saturation_rate`), each run long enough for
:data:`MESSAGES_PER_POINT` round trips, and writes ``benchmarks/results/load_curves.json``: per
point p50, p90, p99, the busiest station and its utilization, and **what bends the curve**: the
hop whose mean time grew most since the 10k msg/s point (a queue filling, or a sleeping thread
no longer paying its wake-up when the growth is negative; none when no hop grew by
:data:`BEND_US`), and the **knee**, the rate at which the p99 has grown by :data:`KNEE_GROWTH`
over its 10k msg/s value. ``make docs`` renders it in ``docs/curves.md``; ``twin capacity``
reads the same curve (its p99 at the ceiling, interpolated between simulated rates).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from twin.results import RunResult
from twin.scenario import load_scenario
from twin.simulation import apply_overrides, run
from twin.sweep.capacity import crossing, saturation_rate

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "benchmarks" / "results" / "load_curves.json"
# Each curve: a shipped scenario, the fields changed for it and its label in the tables.
OPEN_LOOP = {"workload.loop": "open"}
SCENARIOS: tuple[tuple[str, dict[str, Any], str], ...] = (
    ("tier1_peering_cpg", {}, "tier1_peering_cpg"),
    ("tier2_peering", {}, "tier2_peering"),
    ("tier3_privatelink", {}, "tier3_privatelink"),
    ("tier4_cloudfront", {}, "tier4_cloudfront"),
    ("aeron_echo_cpg", {}, "aeron_echo_cpg"),
    ("netperf_rr_c5n_cpg", OPEN_LOOP, "netperf_rr_c5n_cpg, open loop"),
)
LOWEST_RATE = 10_000.0
SHARES = (0.1, 0.25, 0.5, 0.7, 0.8, 0.9, 0.95, 0.98)  # of the saturation rate
MESSAGES_PER_POINT = 400_000
MIN_DURATION_S = 0.5
# A hop "bends" the curve when its mean grew by more than this since the 10k msg/s point.
BEND_US = 0.5
# The knee: the rate at which the p99 has grown by this share over its 10k msg/s value.
KNEE_GROWTH = 0.25


def _point(result: RunResult, base: RunResult | None, saturation: float) -> dict[str, Any]:
    busiest = max(result.stations, key=lambda s: s.utilization, default=None)
    point: dict[str, Any] = {
        "rate_msgs_per_s": result.rate_msgs_per_s,
        "share_of_saturation": result.rate_msgs_per_s / saturation,
        "stable": result.stable,
        "rtt_us": {k: result.rtt_us[k] for k in ("p50", "p90", "p99")},
        "busiest_station": busiest.name if busiest else None,
        "busiest_utilization": busiest.utilization if busiest else None,
    }
    if base is not None:
        growth = {
            now.name: now.mean_us - then.mean_us
            for now, then in zip(result.hops, base.hops, strict=True)
        }
        hop = max(growth, key=lambda name: abs(growth[name]))
        if abs(growth[hop]) > BEND_US:
            point["bends"] = {"hop": hop, "mean_growth_us": growth[hop]}
    return point


def curve(name: str, changes: dict[str, Any], label: str) -> dict[str, Any]:
    """One scenario's curve, with ``changes`` to its fields (see the module docstring)."""
    scenario = load_scenario(REPO / "scenarios" / f"{name}.toml").with_fields(changes)
    saturation = saturation_rate(scenario)
    if saturation is None:
        raise SystemExit(f"{name}: no station, no saturation rate")
    rates = [LOWEST_RATE] + [s * saturation for s in SHARES if s * saturation > LOWEST_RATE]
    points: list[dict[str, Any]] = []
    base: RunResult | None = None
    for rate in rates:
        duration = max(MIN_DURATION_S, MESSAGES_PER_POINT / rate)
        result = run(apply_overrides(scenario, rate, duration, 1))
        points.append(_point(result, base, saturation))
        base = base or result
        p = points[-1]
        print(
            f"{label:18s} {rate:>11,.0f} msg/s ({p['share_of_saturation']:.2f})  p50 "
            f"{p['rtt_us']['p50']:9.1f}  p99 {p['rtt_us']['p99']:9.1f}  {p['busiest_station']} "
            f"{p['busiest_utilization']:.2f}  bends: {p.get('bends', {}).get('hop', '-')}",
            flush=True,
        )
    p99 = [p["rtt_us"]["p99"] for p in points]
    knee_p99 = p99[0] * (1 + KNEE_GROWTH)
    return {
        "scenario": name,
        "changes": changes,
        "label": label,
        "saturation_msgs_per_s": saturation,
        "knee_msgs_per_s": crossing(rates, p99, knee_p99, "mid") if max(p99) >= knee_p99 else None,
        "points": points,
    }


def main() -> int:
    curves = [curve(*entry) for entry in SCENARIOS]
    RESULTS.write_text(json.dumps({"curves": curves}, indent=1) + "\n")
    print(f"wrote {RESULTS.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
