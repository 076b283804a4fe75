"""``make demo``: the four access tiers at the published low and high rates, side by side."""

from __future__ import annotations

from twin.scenario import load_scenario, scenarios_dir
from twin.simulation import DEFAULT_ENGINE, EngineName, apply_overrides, run

TIER_FILES = ("tier1_peering_cpg", "tier2_peering", "tier3_privatelink", "tier4_cloudfront")
RATES = (10_000, 400_000)
# Measured seconds per run: about 200k round trips each on the compiled engine (p99.9 from 200
# tail samples), about 20k on the slow reference engine.
DURATION_S = {
    EngineName.FAST: {10_000: 20.0, 400_000: 0.5},
    EngineName.DES: {10_000: 2.0, 400_000: 0.05},
}


def demo(engine: str = DEFAULT_ENGINE) -> str:
    """Run every tier at both rates and return the comparison table."""
    header = (
        f"{'tier':20s} {'rate msg/s':>10s} {'p50':>8s} {'p90':>8s} {'p99':>8s} "
        f"{'p99.9':>8s} {'max':>8s} {'msgs':>7s}"
    )
    lines = [
        "Order round trip (us), order->ack and cancel->cancel ack, c6id.metal both ends",
        header,
        "-" * len(header),
    ]
    for name in TIER_FILES:
        base = load_scenario(scenarios_dir() / f"{name}.toml")
        for rate in RATES:
            result = run(
                apply_overrides(base, rate, DURATION_S[EngineName(engine)][rate]), engine=engine
            )
            if not result.stable:
                lines.append(
                    f"{name:20s} {rate:>10,d} unstable: {'; '.join(result.saturated_stations)}"
                )
                continue
            r = result.rtt_us
            lines.append(
                f"{name:20s} {rate:>10,d} {r['p50']:8.1f} {r['p90']:8.1f} "
                f"{r['p99']:8.1f} {r['p99_9']:8.1f} {r['max']:8.1f} "
                f"{result.messages:>7,d}"
            )
    return "\n".join(lines)
