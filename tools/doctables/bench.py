"""The tables of the benchmarks' results (``benchmarks/results/*.json``): the engines' agreement
and speed, the matching engine, sweeps, start-up, the explorer, the feed and the load curves."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from doctables.common import load, md_table, num, pct


def crosscheck(files: Sequence[str]) -> str:
    cases = load(files[0])["cases"]
    rows = [
        (
            c["scenario"] + (f" ({c['flows']} flows)" if c["flows"] < 64 else ""),
            num(c["rate_msgs_per_s"]),
            f"{c['des_messages']:,} / {c['fast_messages']:,}",
            *(pct(c["diff_pct"][k]) for k in ("p50", "p90", "p99")),
            f"{c['ks']:.4f}",
        )
        for c in cases
    ]
    header = ("scenario", "rate msg/s", "messages des / fast", "p50", "p90", "p99", "KS distance")
    return md_table(header, "lrrrrrr", rows)


def engines(files: Sequence[str]) -> str:
    e = load(files[0])
    low, high = e["fast_messages_per_cpu_s_range"]
    rows = [
        ("fast, messages per CPU-second (median of rounds)", num(e["fast"]["messages_per_cpu_s"])),
        ("fast, range over the rounds", f"{num(low)} .. {num(high)}"),
        ("des, messages per CPU-second", num(e["des"]["messages_per_cpu_s"])),
        ("fast / des, messages per CPU-second", f"{e['fast_over_des_messages_per_cpu_s']:.0f}x"),
        (
            "fast / des, per round",
            ", ".join(f"{r:.0f}x" for r in e["fast_over_des_per_round"]),
        ),
        ("first compile (cold cache), s", f"{e['compile']['cold_first_call_s']:.1f}"),
        ("load from Numba's cache, s", f"{e['compile']['warm_first_call_s']:.2f}"),
        ("recompiled on a second invocation", str(e["compile"]["second_invocation_recompiled"])),
        ("fast peak RSS, MB", f"{e['fast']['peak_rss_mb']:.0f}"),
    ]
    return md_table(("measured", "value"), "lr", rows)


def long_run(files: Sequence[str]) -> str:
    r = load(files[0])
    rows = [
        (
            label,
            f"{r[key]['simulated_s']:,.0f}",
            f"{r[key]['recorded_messages']:,}",
            f"{r[key]['cpu_s']:,.0f}",
            f"{r['cpu_ns_per_message'][key]:,.0f}",
            f"{r[key]['peak_rss_mb']:.0f}",
        )
        for label, key in (("short", "short"), ("one hour", "long"))
    ]
    header = ("run", "simulated s", "messages", "CPU s", "CPU ns/message", "peak RSS MB")
    table = md_table(header, "lrrrrr", rows)
    return table + (
        f"\nLong over short cost per message: {r['long_over_short_cost_per_message']:.3f}; "
        f"one simulated day at this rate: {r['one_day_cpu_s_single_core'] / 3600:.1f} CPU-hours "
        "on one core.\n"
    )


def engine_ext(files: Sequence[str]) -> str:
    results = load(files[0])["results"]
    rows = [
        (
            r["workload"],
            f"{r['ops_per_s'] / 1e6:.1f}M",
            f"{r['ops_per_s_cpu'] / 1e6:.1f}M" if "ops_per_s_cpu" in r else "-",
            f"{r['p50_ns']:.0f}",
            f"{r['p99_ns']:.0f}",
            f"{r['p999_ns']:.0f}",
            f"{r['reference_ops_per_s'] / 1e3:.0f}k" if r.get("reference_ops_per_s") else "-",
        )
        for r in results
        if "p50_ns" in r
    ]
    header = ("workload", "ops/s", "ops/s (CPU time)", "p50 ns", "p99 ns", "p99.9 ns", "reference")
    return md_table(header, "lrrrrrr", rows)


def crosscheck_spans(files: Sequence[str]) -> str:
    cases = load(files[0])["cases"]
    rows = []
    for c in cases:
        spans = c.get("spans") or {}
        if not spans:
            continue
        worst = max(
            ((abs(sd[k]), f"{name} {k} {sd[k]:+.2f}%") for name, sd in spans.items()
             for k in ("p50", "p90", "p99")),
        )  # fmt: skip
        rows.append(
            (
                c["scenario"],
                num(c["rate_msgs_per_s"]),
                str(len(spans)),
                worst[1],
                f"{max(sd['ks'] for sd in spans.values()):.4f}",
            )
        )
    header = ("scenario", "rate msg/s", "spans", "largest percentile difference", "largest KS")
    return md_table(header, "lrrlr", rows)


def feed_findings(files: Sequence[str]) -> str:
    data = load(files[0])
    rows = []
    for r in data["runs"]:
        st = r["stages_us"]
        rows.append(
            (
                f"{r['rate_msgs_per_s']:,}",
                f"{r['burst']} {r['burst_sizes']}",
                f"{r['thread_utilization']:.2f}",
                f"{st['inbound']['p50']:.0f} / {st['inbound']['p99']:,.0f}",
                f"{st['client TLS decrypt']['p75']:.1f} / {st['client TLS decrypt']['p99']:.1f}",
                f"{st['client WebSocket decode']['p50']:.1f} / "
                f"{st['client WebSocket decode']['p99']:.1f}",
                f"{st['client JSON parse']['p50']:.1f} / {st['client JSON parse']['p99']:.1f}",
            )
        )
    header = ("updates/s", "burst", "thread busy", "inbound p50 / p99 us", "TLS p75 / p99 us",
              "decode p50 / p99 us", "parse p50 / p99 us")  # fmt: skip
    return md_table(header, "rlrrrrr", rows)


def explorer(files: Sequence[str]) -> str:
    data = load(files[0])
    rows = [
        (
            f"visitor {i + 1}",
            *(f"{s[k]:.2f}" for k in ("page_load_s", "sidebar_s", "first_result_s")),
        )
        for i, s in enumerate(data["sessions"])
    ]
    return md_table(("session", "page loaded s", "sidebar s", "first headline s"), "lrrr", rows)


def startup(files: Sequence[str]) -> str:
    data = load(files[0])
    rows = [(f"`{name}`", f"{seconds:.2f} s") for name, seconds in data["start_s"].items()]
    files = data["result_files"]
    ours_ms, package_ms = files["twin_histogram_s"] * 1e3, files["hdrhistogram_package_s"] * 1e3
    rows.append(
        (
            f"a run's summary and `.hgrm` ({files['round_trips']:,} round trips, largest "
            f"{files['largest_us'] / 1e3:.0f} ms): the twin's histogram / the package's",
            f"{ours_ms:.1f} ms / {package_ms:.0f} ms ({files['ratio']:.0f}x)",
        )
    )
    return md_table(("measured", "wall time"), "lr", rows)


def small_benchmarks(files: Sequence[str]) -> str:
    s = load(files[0])
    c = load(files[1])
    rows = [
        (
            f"sweep of {s['points']} points ({s['engine']}), 1 / 2 workers",
            f"{s['wall_s_1_worker']:.1f} s / {s['wall_s_2_workers']:.1f} s "
            f"({s['speedup_2_over_1']:.2f}x)",
        ),
        (
            "calibrate the shipped profile",
            f"{c['calibrate_shipped_profile_s']:.0f} s, {c['evaluations']} evaluations",
        ),
    ]
    rows += [
        (f"fit {name} to 1e6 samples", f"{sec:.2f} s")
        for name, sec in c["fit_1e6_samples_s"].items()
    ]
    return md_table(("benchmark", "measured"), "lr", rows)


def _curves(path: str) -> list[dict[str, Any]]:
    return list(load(path)["curves"])


def curves_summary(files: Sequence[str]) -> str:
    rows = []
    for c in _curves(files[0]):
        first, last = c["points"][0], c["points"][-1]
        knee = c["knee_msgs_per_s"]
        sat = c["saturation_msgs_per_s"]
        rows.append(
            (
                c["label"],
                f"{sat:,.0f}",
                str(first["busiest_station"]),
                f"{first['rtt_us']['p50']:,.1f} / {first['rtt_us']['p99']:,.1f}",
                f"{knee:,.0f} ({knee / sat:.2f})" if knee is not None else "not reached",
                f"{last['rtt_us']['p50']:,.1f} / {last['rtt_us']['p99']:,.1f}",
            )
        )
    header = ("scenario", "saturation msg/s", "busiest station", "10k msg/s p50 / p99 us",
              "knee msg/s (share)", "at 0.98 p50 / p99 us")  # fmt: skip
    return md_table(header, "lrlrrr", rows)


def curves_points(files: Sequence[str]) -> str:
    rows = []
    for c in _curves(files[0]):
        for p in c["points"]:
            bends = p.get("bends")
            rows.append(
                (
                    c["label"],
                    f"{p['rate_msgs_per_s']:,.0f}",
                    f"{p['share_of_saturation']:.2f}",
                    f"{p['rtt_us']['p50']:,.1f}",
                    f"{p['rtt_us']['p90']:,.1f}",
                    f"{p['rtt_us']['p99']:,.1f}",
                    f"{p['busiest_station']} {p['busiest_utilization']:.2f}",
                    f"{bends['hop']} ({bends['mean_growth_us']:+.1f} us)" if bends else "-",
                )
            )
    header = ("scenario", "msg/s", "share", "p50 us", "p90 us", "p99 us", "busiest station",
              "what bends (mean growth since 10k)")  # fmt: skip
    return md_table(header, "lrrrrrll", rows)


def replay(files: Sequence[str]) -> str:
    """The replay of a shipped flow against the fast engine's steady state, per round."""
    r = load(files[0])
    rows = [
        (
            f"round {i + 1}",
            num(x["steady_msgs_per_cpu_s"]),
            num(x["replay_msgs_per_cpu_s"]),
            f"{x['ratio']:.2f}",
            f"{x['load_avg_1m_before']:.1f}",
        )
        for i, x in enumerate(r["rounds"])
    ]
    rows.append(
        (
            "median",
            num(r["steady_msgs_per_cpu_s_median"]),
            num(r["replay_msgs_per_cpu_s_median"]),
            f"**{r['ratio_median']:.2f}** (target {r['target_ratio']:.1f})",
            "",
        )
    )
    header = ("run", "fast steady state, msg/CPU s", f"replay of {r['requests']:,}, msg/CPU s")
    return md_table((*header, "ratio", "load avg"), "lrrrr", rows)
