"""Terminal text for results: one run, its replication intervals and its prediction bands.

A front end of the ``twin`` command line: library code returns results and the commands print
them through these functions, so every command words a result the same way.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from twin.failover import FailoverReport

from collections.abc import Mapping

from calibration.bands import Band
from twin.percentiles import STAGE_TABLE, label
from twin.results import RunResult
from twin.uncertainty import Varied, bounds_text, few_samples, few_samples_note


def note_compiling(engine: str) -> None:
    """On a terminal, say that the compiled engine's kernels are about to be compiled, once for
    this version of the sources (``make setup`` compiles them ahead); a log gets nothing."""
    import sys

    if engine != "fast" or not sys.stderr.isatty():
        return
    from engine_ext.jit_cache import is_cold

    if is_cold():
        print(
            "twin: compiling the simulator's kernels (once for this version; 20-60 s, longer "
            "on a busy host)...",
            file=sys.stderr,
            flush=True,
        )


def pacing_note(accounts: int, rate_msgs_per_s: float, from_flag: bool, achieved: float) -> str:
    """What paces a closed loop: its accounts share the target rate, given by ``--rate`` or,
    silently before, by the scenario's ``workload.rate_msgs_per_s``."""
    source = "--rate" if from_flag else "the scenario's workload.rate_msgs_per_s; --rate sets it"
    return (
        f"twin: a closed loop of {accounts:,} account{'s' if accounts != 1 else ''} paced to "
        f"share {rate_msgs_per_s:,.0f} msg/s ({source}); it achieved {achieved:,.0f} msg/s"
    )


def format_statistics(rtt: Mapping[str, float]) -> str:
    """Round-trip statistics on one line: ``p50 69.5  p90 84.3 ...``."""
    return "  ".join(f"{label(k)} {v:,.1f}" for k, v in rtt.items())


def _run_length(result: RunResult) -> str:
    """``  for 1 s after a 0.2 s warm-up`` (simulated time), or nothing when not known."""
    if result.duration_s is None:
        return ""
    return f"  for {result.duration_s:g} s after a {result.warmup_s or 0:g} s warm-up"


def format_result(result: RunResult) -> str:
    """A human-readable report of one run."""
    lines = [
        f"scenario {result.title}  engine {result.engine}  seed {result.seed}",
        f"target {result.rate_msgs_per_s:,.0f} msg/s" + _run_length(result),
    ]
    if result.path_rate_msgs_per_s is not None:
        lines.append(
            f"  path built for {result.path_rate_msgs_per_s:,.0f} msg/s "
            "(the closed loop's own throughput, not its pacing)"
        )
    for role, where in result.placements.items():
        lines.append(f"  {role:8s} {where}")
    if not result.stable:
        lines.append("UNSTABLE: offered load saturates " + "; ".join(result.saturated_stations))
        lines.append("No latency is reported: queues grow without bound at this rate.")
        return "\n".join(lines)
    lines.append(
        f"messages {result.messages:,}  throughput {result.throughput_msgs_per_s:,.0f} msg/s"
    )
    lines.append("round trip (us): " + format_statistics(result.rtt_us))
    note = few_samples_note(result.rtt_us, result.messages)
    if note:
        lines.append(note)
    for kind, rtt in result.rtt_by_kind_us.items():
        lines.append(f"  {kind + ':':7s} " + format_statistics(rtt))
    if result.spans_us:
        lines.append("")
        span_width = max(len(name) for name in result.spans_us)
        header = "  ".join(f"{label(k):>7s}" for k in STAGE_TABLE)
        lines.append(f"{'span (us)':{span_width}s}  {header}")
        for name, table in result.spans_us.items():
            cells = "  ".join(f"{table[k]:7.1f}" for k in STAGE_TABLE)
            lines.append(f"{name:{span_width}s}  {cells}")
    if result.by_hour:
        lines.append("")
        lines.append("hour (UTC)  mean us    p50 us    p99 us")
        for h in result.by_hour:
            lines.append(
                f"{h.hour:02d}        {h.rtt_us['mean']:9,.0f} {h.rtt_us['p50']:9,.0f} "
                f"{h.rtt_us['p99']:9,.0f}"
            )
    lines.append("")
    width = max([44, *(len(hop.name) for hop in result.hops)])
    lines.append(f"{'hop':{width}s} {'mean us':>9s} {'util':>6s}")
    for hop in result.hops:
        util = "" if hop.utilization is None else f"{hop.utilization:6.2f}"
        lines.append(f"{hop.name:{width}s} {hop.mean_us:9.2f} {util:>6s}")
    return "\n".join(lines)


def format_intervals(
    replications: int,
    ci95: Mapping[str, tuple[float, float]],
    varied: Varied = Varied.SEED,
    messages: int | None = None,
) -> str:
    """The replications' 95% confidence intervals, one statistic a line, with what they cover;
    digits follow each interval, and a percentile with too few samples beyond it in one
    replication (``messages``: round trips per replication) gets no interval."""
    few = few_samples(ci95, messages) if messages is not None else []
    lines = [f"replications {replications} ({varied.covers}), 95% confidence intervals (us):"]
    for k, (lo, hi) in ci95.items():
        if k in few:
            lines.append(f"  {label(k):6s} no interval: too few samples beyond it")
            continue
        lines.append(f"  {label(k):6s} {bounds_text(lo, hi)}")
    return "\n".join(lines)


def format_bands(bands: Mapping[str, Band]) -> str:
    """A small table: statistic, prediction, band."""
    level = next(iter(bands.values())).level
    lines = [
        f"round trip (us) with {100 * level:.0f}% calibration bands (the fit's parameter "
        "uncertainty, the wider):"
    ]
    for b in bands.values():
        lines.append(
            f"  {label(b.statistic):6s} {b.predicted_us:10.1f}   "
            f"[{b.low_us:,.1f} .. {b.high_us:,.1f}]"
        )
    return "\n".join(lines)


def format_failover(f: FailoverReport) -> str:
    """The leader's failure: outage, what is lost, the spike after."""
    return "\n".join(
        [
            f"leader fails at {f.fails_at_s:g} s: outage "
            f"{f.rto_ms_min:,.0f}..{f.rto_ms_max:,.0f} ms (mean {f.rto_ms_mean:,.0f} ms)",
            f"committed messages lost: {f.committed_lost}; in flight, not yet committed (resent "
            f"by the clients): {f.in_flight_uncommitted:,.1f}",
            f"backlog at recovery {f.backlog_messages:,.0f} messages, drained in "
            f"{f.drain_ms:,.1f} ms; worst round trip about {f.worst_latency_ms:,.0f} ms",
        ]
    )
