"""Regenerate the measured-figure tables in ``docs/*.md`` from the committed results files.

A table lives between ``<!-- table: NAME -->`` and ``<!-- /table -->``; everything between the
two markers is rewritten from the JSON file :data:`TABLES` names, so no figure is copied by hand
(the ``api`` block of ``docs/api.md`` is written from docstrings instead: ``tools/apiref.py``).
Usage::

    python tools/gendocs.py          # rewrite docs/ in place (make docs)
    python tools/gendocs.py --check  # exit 1 naming every stale table (the test suite runs it)
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
BLOCK = re.compile(r"(<!-- table: (?P<name>[a-z0-9-]+) -->\n)(?P<body>.*?)(<!-- /table -->)", re.S)


def _load(relative: str) -> Any:
    return json.loads((ROOT / relative).read_text())


def _table(header: Sequence[str], align: str, rows: Iterable[Sequence[str]]) -> str:
    """A Markdown table; ``align`` has one letter per column, ``l`` or ``r``."""
    rule = ["---:" if a == "r" else "---" for a in align]
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join(rule) + " |"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def _pct(x: float) -> str:
    return f"{x:+.2f}%"


def _num(x: float | None, digits: int = 0) -> str:
    return "-" if x is None else f"{x:,.{digits}f}"


def crosscheck() -> str:
    cases = _load("benchmarks/results/crosscheck_full.json")["cases"]
    rows = [
        (
            c["scenario"] + (f" ({c['flows']} flows)" if c["flows"] < 64 else ""),
            _num(c["rate_msgs_per_s"]),
            f"{c['des_messages']:,} / {c['fast_messages']:,}",
            *(_pct(c["diff_pct"][k]) for k in ("p50", "p90", "p99")),
            f"{c['ks']:.4f}",
        )
        for c in cases
    ]
    header = ("scenario", "rate msg/s", "messages des / fast", "p50", "p90", "p99", "KS distance")
    return _table(header, "lrrrrrr", rows)


def engines() -> str:
    e = _load("benchmarks/results/engines.json")
    low, high = e["fast_messages_per_cpu_s_range"]
    rows = [
        ("fast, messages per CPU-second (median of rounds)", _num(e["fast"]["messages_per_cpu_s"])),
        ("fast, range over the rounds", f"{_num(low)} .. {_num(high)}"),
        ("des, messages per CPU-second", _num(e["des"]["messages_per_cpu_s"])),
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
    return _table(("measured", "value"), "lr", rows)


def long_run() -> str:
    r = _load("benchmarks/results/long_run.json")
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
    table = _table(header, "lrrrrr", rows)
    return table + (
        f"\nLong over short cost per message: {r['long_over_short_cost_per_message']:.3f}; "
        f"one simulated day at this rate: {r['one_day_cpu_s_single_core'] / 3600:.1f} CPU-hours "
        "on one core.\n"
    )


def engine_ext() -> str:
    results = _load("benchmarks/results/engine.json")["results"]
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
    return _table(header, "lrrrrrr", rows)


def small_benchmarks() -> str:
    s = _load("benchmarks/results/sweep.json")
    c = _load("benchmarks/results/calibration.json")
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
    return _table(("benchmark", "measured"), "lr", rows)


def replay() -> str:
    r = _load("benchmarks/results/replay.json")
    rows = [
        (
            f"round {i + 1}",
            _num(x["steady_msgs_per_cpu_s"]),
            _num(x["replay_msgs_per_cpu_s"]),
            f"{x['ratio']:.2f}",
            f"{x['load_avg_1m_before']:.1f}",
        )
        for i, x in enumerate(r["rounds"])
    ]
    rows.append(
        (
            "median",
            _num(r["steady_msgs_per_cpu_s_median"]),
            _num(r["replay_msgs_per_cpu_s_median"]),
            f"**{r['ratio_median']:.2f}** (target {r['target_ratio']:.1f})",
            "",
        )
    )
    header = ("run", "fast steady state, msg/CPU s", f"replay of {r['requests']:,}, msg/CPU s")
    return _table((*header, "ratio", "load avg"), "lrrrr", rows)


def _validation_rows(rows: list[dict[str, Any]]) -> list[tuple[str, ...]]:
    out = []
    for r in rows:
        relative = r.get("unit") == "%"  # a relative figure: its error is in points
        error = f"{r['error_pct']:+.1f} pp" if relative else f"{r['error_pct']:+.1f} %"
        out.append(
            (r["target"], r["statistic"], f"{r['measured']:.1f}", f"{r['predicted']:.1f}", error)
        )
    return out


def _validation_table(relative: str, predicted: str, first: str = "target", unit: str = "") -> str:
    rows = _load(relative)["rows"]
    header = (first, "statistic", f"measured{unit}", f"{predicted}{unit}", "error")
    return _table(header, "llrrr", _validation_rows(rows))


def fit() -> str:
    return _validation_table("calibration/validation/fit.json", "fitted twin")


def leave_one_out() -> str:
    return _validation_table(
        "calibration/validation/leave_one_out.json", "predicted (fit without it)"
    )


def venue_fit() -> str:
    return _validation_table("calibration/validation/venue_fit.json", "fitted twin", "row", " (us)")


def venue_leave_one_out() -> str:
    return _validation_table(
        "calibration/validation/venue_leave_one_out.json",
        "predicted without it",
        "row",
        " (us)",
    )


def _hunt() -> dict[str, Any]:
    return dict(_load("calibration/validation/tokyo_hunt/hunt.json"))


def hunt_levels() -> str:
    h = _hunt()
    rows = [
        (
            lv["level"],
            f"{lv['probability']:.1%}",
            f"{lv['cpg_probability']:.1%}",
            f"{lv['daily_mean_us']:,.1f}",
            f"{min(lv['hourly_mean_us']):,.0f} .. {max(lv['hourly_mean_us']):,.0f}",
        )
        for lv in h["levels"]
    ]
    header = ("level", "random instance", "shared CPG", "daily mean (us)", "hourly means (us)")
    return _table(header, "lrrrr", rows)


def hunt_rules() -> str:
    from twin.hunt.report import rule_cells

    h = _hunt()
    rows = [tuple(rule_cells(r)) for r in h["rules"]]
    header = (
        f"rule ({h['trials']:,} hunts)",
        f"P(within {h['within_us']:g} us of best)",
        "gain vs random (us)",
        "gap to shared CPG (us)",
        "instance-hours",
        "USD",
        "wall hours",
    )
    return _table(header, "lrrrrrr", rows)


def hunt_windows() -> str:
    m = _hunt()["measurement"]
    rows = [
        (
            f"{w['window_minutes']:g}",
            f"{w['p_correct_concurrent']:.1%}",
            f"{w['p_correct_recorded']:.1%}",
            f"{w['largest_hour_drift_us']:,.0f}",
        )
        for w in m["windows"]
    ]
    rows.append(
        (
            f"fixed test: {m['fixed_window_minutes']:,.0f}",
            f"alpha {m['alpha']:g}, beta {m['beta']:g}",
            f"sequential: {m['sequential_expected_minutes_faster']:,.0f} (faster), "
            f"{m['sequential_expected_minutes_not_faster']:,.0f} (not)",
            "",
        )
    )
    header = (
        "window (min)",
        f"P(right), measured together ({m['delta_us']:g} us apart)",
        "P(right), one after the other",
        "largest hour drift (us)",
    )
    return _table(header, "lrrr", rows)


def cluster_prediction() -> str:
    c = _load("calibration/validation/cluster_prediction.json")
    rows = [
        (
            r["layout"],
            f"{r['rate_per_s']:g}" + (" (calibration)" if r["calibration"] else ""),
            f"{r['load_share']:.0%}",
            _us(r["measured_p50_us"]),
            _us(r["predicted_p50_us"]),
            _signed(r["error_p50_pct"]),
            _us(r["measured_p99_us"]),
            _us(r["predicted_p99_us"]),
            _signed(r["error_p99_pct"]),
            f"{r['measured_cpu_us_per_write']:,.0f}",
            f"{r['predicted_cpu_us_per_write']:,.0f}",
        )
        for r in sorted(c["rows"], key=lambda r: (r["layout"] != "cpg", r["rate_per_s"]))
    ]
    header = (
        "layout",
        "writes/s",
        "CPU load",
        "p50 measured",
        "p50 predicted",
        "error",
        "p99 measured",
        "p99 predicted",
        "error",
        "CPU/write measured (us)",
        "predicted",
    )
    note = (
        f"\n\nWithin the goal ({c['goal']}; CPU load: the vCPUs' measured busy share): "
        f"{c['within_goal']} points. Calibrated on {c['calibrated_on']['layout']} at "
        f"{c['calibrated_on']['rate_per_s']:g} writes/s and its burst probe (the same writes "
        f"{c['probe']['burst']} at a time: {c['probe']['measured_cpu_us_per_write']:,.0f} us "
        f"of CPU per write): {c['cpu_us_per_write']:,.0f} us per write and "
        f"{c['cpu_us_per_wake']:,.0f} us per wake-up of the host (time constant "
        f"{c['wake_tau_us'] / 1e3:.1f} ms, the wake-up probe's). The burst probe's latency, "
        f"not an input, predicted: p50 {c['probe']['measured_p50_us']:,.0f} us measured, "
        f"{c['probe']['predicted_p50_us']:,.0f} predicted; p99 "
        f"{c['probe']['measured_p99_us']:,.0f} and {c['probe']['predicted_p99_us']:,.0f}.\n"
    )
    return _table(header, "llrrrrrrrrr", rows) + note


def cluster_outage() -> str:
    c = _load("calibration/validation/cluster_prediction.json")
    rows = [
        (
            o["layout"],
            f"{o['measured_ms']:,.0f}",
            f"{o['predicted_min_ms']:,.0f} .. {o['predicted_max_ms']:,.0f}",
            str(sum(o["errors"].values())),
        )
        for o in c["outages"]
    ]
    header = ("layout", "outage measured (ms)", "predicted (ms)", "failed writes")
    capacity = [
        (
            k["layout"],
            f"{k['p99_ceiling_us'] / 1e3:g} ms",
            f"{k['measured_per_s']:,.0f}"
            if k["measured_per_s"]
            else f"> {k['measured_above_per_s']:,.0f}",
            f"{k['predicted_per_s']:,.0f}"
            if k["predicted_per_s"]
            else f"> {k['predicted_above_per_s']:,.0f}",
        )
        for k in c["capacity"]
    ]
    return (
        _table(header, "lrrr", rows)
        + "\n\n"
        + _table(
            ("layout", "p99 ceiling", "capacity measured (writes/s)", "predicted"), "lrrr", capacity
        )
    )


def campaign() -> str:
    c = _load("calibration/data/local_campaign/campaign.json")

    def spread(row: dict[str, Any], key: str) -> str:
        low, high = row["spread"][key]
        return f"{row[key]:.0f} ({low:.0f}-{high:.0f})"

    rows = [
        (
            _num(r["rate_msgs_per_s"]),
            _num(r["achieved_msgs_per_s"]),
            spread(r, "p50_us"),
            f"{r['p90_us']:.0f}",
            spread(r, "p99_us"),
            f"{r['client_cpu_us_per_msg']:.1f} / {r['gateway_cpu_us_per_msg']:.1f}",
            f"{r['client_wakeups_per_msg']:.2f}",
            f"{r['busy_pct']:.0f}",
            f"{r['loadavg_1m']:.1f}",
            f"{r['runnable_mean']:.1f}",
            f"{sum(run['saturated'] for run in r['runs'])} of {r['repeats']}",
        )
        for r in c["rows"]
    ]
    header = (
        "rate",
        "achieved",
        "p50 us",
        "p90 us",
        "p99 us",
        "CPU us/msg client / gw",
        "wake-ups/msg",
        "busy %",
        "load",
        "runnable",
        "saturated",
    )
    table = _table(header, "rrrrrrrrrrl", rows)
    return table + f"\nMeasured saturation: {_num(c['saturation_msgs_per_s'])} msg/s.\n"


def _prediction(table: list[dict[str, Any]]) -> str:
    rows = []
    for i, r in enumerate(table):
        cells = [_num(r["rate_msgs_per_s"]) + (" (calibration)" if i == 0 else "")]
        for key in ("p50", "p90", "p99"):
            measured, predicted = r[f"measured_{key}_us"], r[f"predicted_{key}_us"]
            cells += [
                f"{measured:.0f} / {predicted:.0f}",
                f"{100 * (predicted / measured - 1):+.0f}%",
            ]
        rows.append(cells)
    header = ("rate", "p50 meas / pred", "err", "p90 meas / pred", "err", "p99 meas / pred", "err")
    return _table(header, "rrrrrrr", rows)


def prediction() -> str:
    p = _load("calibration/validation/local_prediction.json")
    return _prediction(p["table"]) + (
        f"\nSaturation: measured {_num(p['measured_saturation_msgs_per_s'])} msg/s, predicted "
        f"{_num(p['predicted_saturation_msgs_per_s'])} msg/s.\n"
    )


def prediction_kinds() -> str:
    """The loopback prediction's orders and cancels apart: what the fit matches (their p50 and
    p99); the pooled p50 falls between the two."""
    rows = []
    for i, r in enumerate(_load("calibration/validation/local_prediction.json")["table"]):
        cells = [_num(r["rate_msgs_per_s"]) + (" (calibration)" if i == 0 else "")]
        for kind in ("order", "cancel"):
            for key in ("p50", "p99"):
                measured = r[f"measured_{kind}_{key}_us"]
                predicted = r[f"predicted_{kind}_{key}_us"]
                cells.append(f"{measured:.0f} / {predicted:.0f}")
        rows.append(cells)
    header = ("rate", "order p50 meas / pred", "order p99", "cancel p50", "cancel p99")
    return _table(header, "rrrrr", rows)


def prediction_veth() -> str:
    return _prediction(_load("calibration/validation/local_prediction.json")["veth_table"])


LOAD_MATRIX = "calibration/validation/load_matrix.json"


def _signed(x: float | None) -> str:
    return "-" if x is None else f"{x:+.0f}%"


def _us(x: float | None) -> str:
    return "-" if x is None else (f"{x:,.0f}" if x >= 100 else f"{x:.1f}")


def _saturation(systems: list[dict[str, Any]]) -> tuple[str, str, int]:
    """A matrix's saturation goal, judged from its systems (older files' summaries predate it):
    the median absolute error, the share within the goal, and how many systems were judged."""
    from calibration.matrix import summary

    sat = summary(systems)
    err, share = sat["saturation_median_abs_err_pct"], sat["saturation_within_goal"]
    return (
        "-" if err is None else f"{err:.0f}%",
        "-" if share is None else f"{share:.0%}",
        sat["saturations_judged"],
    )


def load_summary() -> str:
    """One row per system: its calibration point, saturation, and its points' median errors."""
    matrix = _load(LOAD_MATRIX)
    rows = []
    for s in matrix["systems"]:
        predicted = [p for p in s["points"] if not p["calibration"]]

        def median_abs(key: str, points: list[dict[str, Any]] = predicted) -> str:
            errs = sorted(
                abs(p["error_pct"][key]) for p in points if p["error_pct"][key] is not None
            )
            return "-" if not errs else f"{errs[len(errs) // 2]:.0f}%"

        sat = s["saturation"]
        rows.append(
            (
                s["system"],
                s["calibrated_on"],
                str(len(predicted)),
                median_abs("p50"),
                median_abs("p99"),
                ("" if sat.get("reached") else ">= ") + _num(sat["measured"]),
                _num(sat["predicted"]),
            )
        )
    sm = matrix["summary"]
    share = sm["share_within_goal"]
    sat_err, sat_share, sat_judged = _saturation(matrix["systems"])
    rows.append(
        (
            "**all**",
            "",
            str(sm["points"]),
            f"{sm['p50_median_abs_err_pct']:.0f}%",
            f"{sm['p99_median_abs_err_pct']:.0f}%",
            f"median abs err {sat_err}, within 10%: {sat_share} of {sat_judged}",
            f"within goal: {'-' if share is None else f'{share:.0%}'} of "
            f"{sm['points_under_load_limit']}",
        )
    )
    header = (
        "system",
        "calibrated on",
        "predicted points",
        "median abs err p50",
        "median abs err p99",
        "saturation measured msg/s",
        "predicted msg/s",
    )
    return _table(header, "llrrrrr", rows)


def load_kinds() -> str:
    """Per system whose runs record them apart, the orders' and the cancels' errors: median
    absolute p50 and p99 errors over its predicted points, and at its calibration point."""
    rows = []
    for s in _load(LOAD_MATRIX)["systems"]:
        points = [p for p in s["points"] if p.get("kinds")]
        if not points:
            continue
        own = next((p for p in points if p["calibration"]), None)
        cells = []
        for kind in ("order", "cancel"):
            for key in ("p50", "p99"):
                errs = sorted(
                    abs(p["kinds"][kind]["error_pct"][key])
                    for p in points
                    if not p["calibration"] and p["kinds"][kind]["error_pct"][key] is not None
                )
                cells.append("-" if not errs else f"{errs[len(errs) // 2]:.0f}%")
            at = None if own is None else own["kinds"][kind]["error_pct"]["p50"]
            cells.append("-" if at is None else f"{at:+.0f}%")
        rows.append((s["system"], str(len(points) - (own is not None)), *cells))
    header = (
        "system",
        "predicted points",
        "orders: median abs err p50",
        "p99",
        "p50 at the calibration point",
        "cancels: median abs err p50",
        "p99",
        "p50 at the calibration point",
    )
    return _table(header, "lrrrrrrr", rows)


# When each load corpus was measured: calibration/data/load_2026-11-25, whose testbed runs carry
# its load client's pauses (its recorder stopped the loop 15-18 ms a second at 128k msg/s);
# calibration/data/load_2026-11-26_2s, its calibration points 2 s a run like the others; and
# calibration/data/load, its calibration points 15 s a run; and
# calibration/data/load_2026-11-26_polling, a small corpus of a host whose hypervisor polls.
PAUSED_CORPUS_DAY = "2026-11-25"
SHORT_CORPUS_DAY = "2026-11-26 06:00"
CORPUS_DAY = "2026-11-26 08:00"
POLLING_CORPUS_DAY = "2026-11-26 13:15, a host that polls (3 systems, loopback)"
# calibration/data/load_2026-11-27: the first corpus with sockperf's client threads apart, of a
# slower, busier host (the testbed's calibration point p50 232 us against 70 the day before).
THREADS_CORPUS_DAY = "2026-11-27 09:15, a slower host (client threads apart)"
HOST_GAP_CORPUS_DAY = "2026-11-27 12:23, a slower host (testbed only, CPU by the host's idle gap)"
HOST_GAP_BEFORE = "calibration/validation/load_matrix_host_gap_before.json"
HOST_GAP_MATRIX = "calibration/validation/load_matrix_host_gap.json"
# calibration/data/load_2026-11-27_hiccups: the first corpus with the hiccup probe before each pass.
HICCUPS_CORPUS_DAY = "2026-11-27 15:22, the hiccup probe beside it"
HICCUPS_MATRIX = "calibration/validation/load_matrix_hiccups.json"
# ... and the models of 2026-11-27 21:00 on it: the host's background from its busy CPU, then a
# read's handler work spread as the gateway's in-process timings (the latest).
BACKGROUND_MATRIX = "calibration/validation/load_matrix_background.json"
READ_SPREAD_MATRIX = "calibration/validation/load_matrix_read_spread.json"
# calibration/data/load_2026-11-27_sockperf: sockperf alone, its threads sampled every 10 ms
# (every millisecond before, a fifth of a vCPU of the measured host); the latest model on it.
SOCKPERF_QUIET_CORPUS_DAY = "2026-11-27 23:23, sockperf alone, its threads sampled every 10 ms"
SOCKPERF_QUIET_MATRIX = "calibration/validation/load_matrix_sockperf_quiet.json"
# ... and with the stall next to a spinning sender alike at every wake-up (the latest), on it and
# on the hiccup corpus.
SOCKPERF_EVERY_WAKE_MATRIX = "calibration/validation/load_matrix_sockperf_every_wake.json"
EVERY_WAKE_MATRIX = "calibration/validation/load_matrix_every_wake.json"
# calibration/data/load_2026-11-28: the testbed alone, the hiccup probe with each vCPU alone beside
# the one with every vCPU spinning; the model before the hiccups followed the other vCPU, and with.
NEIGHBOUR_CORPUS_DAY = "2026-11-28 01:37, testbed only, the hiccup probe alone beside it"
NEIGHBOUR_BEFORE_MATRIX = "calibration/validation/load_matrix_neighbour_before.json"
NEIGHBOUR_MATRIX = "calibration/validation/load_matrix_neighbour.json"
# ... and with each hiccup as long as the probes measured (their quantiles, not a lognormal).
MEASURED_HICCUPS_MATRIX = "calibration/validation/load_matrix_measured_hiccups.json"
# ... the two on the hiccup corpus (no alone probe: the busy law at every load), before and after.
HICCUPS_NEIGHBOUR_MATRIX = "calibration/validation/load_matrix_hiccups_neighbour.json"
HICCUPS_MEASURED_MATRIX = "calibration/validation/load_matrix_hiccups_measured.json"
# ... and the model of 2026-11-28 17:00 on it.
HICCUPS_LATEST_MATRIX = "calibration/validation/load_matrix_hiccups_1128.json"
# calibration/data/load_2026-11-28_no_stalls: the testbed alone, measured by the load client
# without its own stalls, each run stolen from measured again at the end of its pass.
NO_STALLS_CORPUS_DAY = (
    "2026-11-28 12:44, testbed only, the load client without its stalls, stolen runs re-measured"
)
NO_STALLS_MATRIX = "calibration/validation/load_matrix_no_stalls.json"
# ... with a socket's wake-up what the halt probe says a halt costs, all of it the halt's; and the
# same model on the 01:37 corpus.
SOCKET_HALT_MATRIX = "calibration/validation/load_matrix_socket_halt.json"
SOCKET_HALT_NEIGHBOUR_MATRIX = "calibration/validation/load_matrix_socket_halt_0137.json"
# The canonical corpus's matrix before that model.
STALL_EVERY_WAKE_MATRIX = "calibration/validation/load_matrix_stall_every_wake_1126.json"
# ... each point predicted from 10 simulated seconds, not 2: on both corpora of 2026-11-28, and the
# canonical corpus's matrix before (its latest is LOAD_MATRIX).
LONG_PREDICTIONS_MATRIX = "calibration/validation/load_matrix_long_predictions.json"
LONG_PREDICTIONS_NEIGHBOUR_MATRIX = "calibration/validation/load_matrix_long_predictions_0137.json"
SOCKET_HALT_1126_MATRIX = "calibration/validation/load_matrix_socket_halt_1126.json"
LONG_PREDICTIONS_1126_MATRIX = "calibration/validation/load_matrix_long_predictions_1126.json"
# ... and with the relay's cold start (its work by how long it slept), on the hiccup corpus and
# the canonical one (its latest is LOAD_MATRIX).
RELAY_COLD_MATRIX = "calibration/validation/load_matrix_relay_cold_1127.json"
RELAY_COLD_1126_MATRIX = "calibration/validation/load_matrix_relay_cold_1126.json"
# calibration/data/load_2026-11-28_relay: sockperf alone, measured after the relay's cold start was
# built (its writes classed by the read's sleep too); the model before it and with it.
RELAY_CORPUS_DAY = "2026-11-28 19:42, sockperf alone, measured after the model"
RELAY_BEFORE_MATRIX = "calibration/validation/load_matrix_relay_1128_before.json"
RELAY_MATRIX = "calibration/validation/load_matrix_relay_1128.json"
# ... and with the hiccup law the median of the passes' probes (one probe had met an episode of
# its own), on it, on the hiccup corpus and on the two testbed corpora of 2026-11-28.
HICCUP_MEDIAN_RELAY_MATRIX = "calibration/validation/load_matrix_hiccup_median_1128.json"
HICCUP_MEDIAN_MATRIX = "calibration/validation/load_matrix_hiccup_median_1127.json"
HICCUP_MEDIAN_NO_STALLS_MATRIX = "calibration/validation/load_matrix_hiccup_median_1244.json"
HICCUP_MEDIAN_NEIGHBOUR_MATRIX = "calibration/validation/load_matrix_hiccup_median_0137.json"
# calibration/data/load_2026-11-28_night: sockperf alone, measured after the median law was built;
# the model before it (commit 26a2df7, every probe's gaps pooled) and with it.
NIGHT_CORPUS_DAY = "2026-11-28 22:21, sockperf alone, measured after the median hiccup law"
NIGHT_BEFORE_MATRIX = "calibration/validation/load_matrix_night_1128_before.json"
NIGHT_MATRIX = "calibration/validation/load_matrix_night_1128.json"
# ... and with the burst probe's body only as a calibration target (its tail left to the
# calibration point), on the three corpora with sockperf and the hiccup probe.
PROBE_BODY_MATRIX = "calibration/validation/load_matrix_probe_body_1127.json"
PROBE_BODY_RELAY_MATRIX = "calibration/validation/load_matrix_probe_body_1128.json"
PROBE_BODY_NIGHT_MATRIX = "calibration/validation/load_matrix_probe_body_night.json"
PROBE_BODY_1126_MATRIX = "calibration/validation/load_matrix_probe_body_1126.json"
# ... and with a spinning sender's send as work on its thread and a native TCP server's reads
# coalescing (the share of its own calls twin testbed syscalls says a read pays), on the same
# corpora (the canonical one's latest is LOAD_MATRIX).
SEND_READS_MATRIX = "calibration/validation/load_matrix_send_reads_1127.json"
SEND_READS_RELAY_MATRIX = "calibration/validation/load_matrix_send_reads_1128.json"
SEND_READS_NIGHT_MATRIX = "calibration/validation/load_matrix_send_reads_night.json"
SEND_READS_MODEL = (
    "plus a spinning sender's send as work on its thread (sockperf's server's own calls less its "
    "receiver's), and a native TCP server's reads coalescing: the share of its own calls a read "
    "pays (twin testbed syscalls) paid once a read"
)
# ... and with the relay's thread one more thread on the shared cores, on the same corpora (the
# canonical one's latest is LOAD_MATRIX; SEND_READS_1126_MATRIX before it).
SEND_READS_1126_MATRIX = "calibration/validation/load_matrix_send_reads_1126.json"
RELAY_SHARE_MATRIX = "calibration/validation/load_matrix_relay_share_1127.json"
RELAY_SHARE_RELAY_MATRIX = "calibration/validation/load_matrix_relay_share_1128.json"
RELAY_SHARE_NIGHT_MATRIX = "calibration/validation/load_matrix_relay_share_night.json"
RELAY_SHARE_MODEL = (
    "plus the relay's thread one more thread on the shared cores: its work slowed by its fair "
    "share beside both processes and the spinner, and each process counting it"
)
# ... and with two stalls next to a spinning sender: the one at every wake-up and the one after a
# sleep past the host's polling window, on the same corpora (on the canonical one
# TWO_STALLS_1126_MATRIX; RELAY_SHARE_1126_MATRIX before it).
RELAY_SHARE_1126_MATRIX = "calibration/validation/load_matrix_relay_share_1126.json"
TWO_STALLS_MATRIX = "calibration/validation/load_matrix_two_stalls_1127.json"
TWO_STALLS_RELAY_MATRIX = "calibration/validation/load_matrix_two_stalls_1128.json"
TWO_STALLS_NIGHT_MATRIX = "calibration/validation/load_matrix_two_stalls_night.json"
TWO_STALLS_MODEL = (
    "plus, next to a spinning sender, the stall after a sleep past the host's polling window "
    "(a halted vCPU's, as the timer's) on top of the one at every wake-up"
)
# The kernel path fitted once a host, on the loopback route, the veth route taking it (issue 17,
# 2026-12-07); on the canonical corpus SHARED_PATH_1126_MATRIX, TWO_STALLS_1126_MATRIX before.
TWO_STALLS_1126_MATRIX = "calibration/validation/load_matrix_two_stalls_1126.json"
SHARED_PATH_1126_MATRIX = "calibration/validation/load_matrix_shared_path_1126.json"
SHARED_PATH_MATRIX = "calibration/validation/load_matrix_shared_path_1127.json"
SHARED_PATH_RELAY_MATRIX = "calibration/validation/load_matrix_shared_path_1128.json"
SHARED_PATH_NIGHT_MATRIX = "calibration/validation/load_matrix_shared_path_night.json"
SHARED_PATH_MODEL = (
    "plus the kernel path fitted once a host, on the loopback route's calibration point, the "
    "veth route taking it and its measured crossing and fitting the rest on its own"
)
# A corpus without hiccup probes (the canonical one) modelled with the median law of those beside
# the other corpora (issue 17, 2026-12-07): its matrix is LOAD_MATRIX; the others are unchanged.
HICCUP_STAND_IN_MODEL = (
    "plus, for a corpus without hiccup probes of its own, the median law over the probes beside "
    "the three corpora that have them"
)
LOAD_MODELS = (  # (results file, the model that produced it, the corpus it ran on)
    (
        "calibration/validation/load_matrix_baseline.json",
        "baseline (the model of 2026-11-24, commit 6bf06e8): scheduling cold start fitted, rare "
        "stalls on the kernel path",
        PAUSED_CORPUS_DAY,
    ),
    (
        "calibration/validation/load_matrix_stalls.json",
        "rare stalls met by threads waking after long sleeps; the lab host's scheduling cold "
        "start from the wake-up probe; no interpreter cold start or bookkeeping for native "
        "tools (commit 64fc472)",
        PAUSED_CORPUS_DAY,
    ),
    (
        "calibration/validation/load_matrix_probes.json",
        "plus each system's burst probe (the testbed's marginal work, sockperf's latency in "
        "bursts of 16 as a calibration target), the wake-up probe beside the corpus, and "
        "sockperf's spinning sender with its receiver thread (commit 0a795e5)",
        PAUSED_CORPUS_DAY,
    ),
    (
        "calibration/validation/load_matrix_colocated.json",
        "plus the testbed's two processes on one vCPU while it has spare capacity (Linux's "
        "load balancer, imbalance_pct 117), each on its own above (commit dbd0066)",
        PAUSED_CORPUS_DAY,
    ),
    (
        "calibration/validation/load_matrix_reads.json",
        "plus the gateway's reads per connection, the stall as the client timer's lateness "
        "only (a late arrival that holds no CPU), the kernel path as work of the shared vCPU "
        "(its handler work and bookkeeping less that path, in the share of events that find "
        "the thread idle) (commit b34ada4)",
        PAUSED_CORPUS_DAY,
    ),
    (
        "calibration/validation/load_matrix_spinning.json",
        "plus sockperf's server and receiver on one vCPU, the one its spinning sender leaves, "
        "while it has spare capacity (the same rule), the way back as that vCPU's work "
        "(commit abce47f)",
        PAUSED_CORPUS_DAY,
    ),
    (
        "calibration/validation/load_matrix_halt.json",
        "plus a vCPU idle for a few microseconds not yet halted: each sleeping thread's "
        "wake-up scaled by the halt probe's law (commit c5f4a94)",
        PAUSED_CORPUS_DAY,
    ),
    (
        "calibration/validation/load_matrix_relay.json",
        "plus the relay's thread asleep unless it holds a message, sharing sockperf's vCPU while "
        "it has spare capacity, reading TCP a chunk of a connection's side at a time, its work "
        "measured at the calibration point; a closed loop of one connection apart "
        "(commit abfcb14)",
        PAUSED_CORPUS_DAY,
    ),
    (
        "calibration/validation/load_matrix_kinds.json",
        "plus a closed loop's path built at its own throughput, not its pacing; the fit weighs "
        "the calibration point's orders and cancels apart (each kind's p50) (commit 45d57a5)",
        PAUSED_CORPUS_DAY,
    ),
    (
        "calibration/validation/load_matrix_spread.json",
        "plus a socket wake-up's spread from the wake-up probe beside the corpus (sockperf; "
        "the testbed keeps its timer's lateness) (commit 99d68c7)",
        PAUSED_CORPUS_DAY,
    ),
    (
        "calibration/validation/load_matrix_veth.json",
        "plus a veth route's time over loopback measured the same day: half the p50 difference "
        "of its calibration point and the loopback route's (commit 16fa715)",
        PAUSED_CORPUS_DAY,
    ),
    (
        "calibration/validation/load_matrix_spinner.json",
        "plus the stall for a thread woken next to sockperf's spinning sender (the server, the "
        "receiver, the relay on the vCPU it shares): the rest of the spinner's time slice "
        "(commit 4a111b6)",
        PAUSED_CORPUS_DAY,
    ),
    (
        "calibration/validation/load_matrix_recorder.json",
        "the same model on the corpus re-measured with the load client's recorder folding as "
        "it goes",
        SHORT_CORPUS_DAY,
    ),
    (
        "calibration/validation/load_matrix_longer.json",
        "the same model on the corpus re-measured with each calibration point and its burst "
        "probe 15 s a run (the others 2 s), the fit simulating as many seconds as they recorded",
        CORPUS_DAY,
    ),
    (
        "calibration/validation/load_matrix_yields.json",
        "plus the bookkeeping left on a shared vCPU yielding to the thread a send wakes "
        "(wake-up preemption: it keeps the vCPU awake, delays no message), and the testbed's "
        "cold start after a sleep fitted to its calibration point's orders and cancels "
        "(commit 093f03c)",
        CORPUS_DAY,
    ),
    (
        "calibration/validation/load_matrix_socket.json",
        "plus a socket's wake-up from the wake-up probes (idle less busy host) where the "
        "testbed's fitted one is its timer's, and the ack's bookkeeping after the cancel its "
        "handler writes (commit 0fb932e)",
        CORPUS_DAY,
    ),
    (
        "calibration/validation/load_matrix_polling.json",
        "plus KVM's halt polling where the host polls (a steady halt probe, or the shuffled one "
        "replayed: this corpus's host did not), and the handlers' work per wake-up never scaled "
        "by the halt (commit 8fb9ee9)",
        CORPUS_DAY,
    ),
    (
        "calibration/validation/load_matrix_read_calls.json",
        "plus the gateway's system calls per read of a connection (left on its thread once a "
        "read, not once a wake-up), measured by the same route's sockperf over TCP "
        "(commit ee5869a)",
        CORPUS_DAY,
    ),
    (
        "calibration/validation/load_matrix_turns.json",
        "plus the testbed's closed loop sending in turn, as its client deals its cycles to "
        "its connections (an account whose turn has not come waits, free) (commit 220783c)",
        CORPUS_DAY,
    ),
    (
        "calibration/validation/load_matrix_server_work.json",
        "plus sockperf's server work measured, not fitted: its CPU and sleeps a message at the "
        "calibration point and its burst probe give its warm work a message and a wake-up's CPU "
        "(commit 0a14d81)",
        CORPUS_DAY,
    ),
    (
        "calibration/validation/load_matrix_run_through.json",
        "plus a native thread's cold start after a sleep (the kernel receive's, from the wake-up "
        "probe's CPU by gap), a group's messages waking each thread once, a message served "
        "through the shared vCPU's hops (wake-up preemption), and the balancer reading the "
        "vCPU's utilization, kernel path included (commit 16263f1)",
        CORPUS_DAY,
    ),
    (
        "calibration/validation/load_matrix_echo_cold.json",
        "plus the server's cold start paid by every echo (one message a cycle, where the "
        "testbed's cancel follows its order's reply), grown over evenly spaced gaps as "
        "sockperf sends them",
        CORPUS_DAY,
    ),
    (
        "calibration/validation/load_matrix_busy_background.json",
        "the model of 2026-11-27 21:00 on it (the later mechanisms need probes this corpus "
        "lacks, save one): plus the host's background as its busy vCPUs beyond the two "
        "processes' own CPU, no longer the client's runnable samples",
        CORPUS_DAY,
    ),
    (
        "calibration/validation/load_matrix_read_spread_1126.json",
        "plus a read's handler work spread as the gateway's in-process timings, no longer a "
        "constant",
        CORPUS_DAY,
    ),
    (
        STALL_EVERY_WAKE_MATRIX,
        "plus the stall next to a spinning sender alike at every wake-up",
        CORPUS_DAY,
    ),
    (
        SOCKET_HALT_1126_MATRIX,
        "the model of 2026-11-28 16:00 on it: plus a socket's wake-up what the halt probe says "
        "a halted vCPU costs beyond an awake one, none of it before the vCPU halts or while the "
        "host polls it",
        CORPUS_DAY,
    ),
    (
        LONG_PREDICTIONS_1126_MATRIX,
        "plus each point predicted from 10 simulated seconds, not 2 (the model's own sampling "
        "noise)",
        CORPUS_DAY,
    ),
    (
        RELAY_COLD_1126_MATRIX,
        "plus the relay's cold start: its work a pass by how long it slept, the law its reads "
        "measured at the calibration point",
        CORPUS_DAY,
    ),
    (
        PROBE_BODY_1126_MATRIX,
        "plus sockperf's burst probe fitted on its body only (p10 to p90), its tail left to the "
        "calibration point",
        CORPUS_DAY,
    ),
    (
        SEND_READS_1126_MATRIX,
        SEND_READS_MODEL,
        CORPUS_DAY,
    ),
    (
        RELAY_SHARE_1126_MATRIX,
        RELAY_SHARE_MODEL,
        CORPUS_DAY,
    ),
    (
        TWO_STALLS_1126_MATRIX,
        TWO_STALLS_MODEL,
        CORPUS_DAY,
    ),
    (
        SHARED_PATH_1126_MATRIX,
        SHARED_PATH_MODEL,
        CORPUS_DAY,
    ),
    (
        LOAD_MATRIX,
        HICCUP_STAND_IN_MODEL,
        CORPUS_DAY,
    ),
    (
        "calibration/validation/load_matrix_slow_host.json",
        "the committed model (commit 9b9976e) on a corpus of a slower host",
        THREADS_CORPUS_DAY,
    ),
    (
        "calibration/validation/load_matrix_receiver.json",
        "plus sockperf's receiver's work measured, not fitted: its thread's CPU and times "
        "scheduled in a message at the calibration point and its burst probe",
        THREADS_CORPUS_DAY,
    ),
    (
        HOST_GAP_BEFORE,
        "the same model (a wake-up's CPU the calibration rate's at every rate) on a corpus "
        "whose testbed runs state each process's CPU by the host's idle gap",
        HOST_GAP_CORPUS_DAY,
    ),
    (
        HOST_GAP_MATRIX,
        "plus a wake-up's CPU shedding its cold start as the load shortens the host's idle "
        "gaps (fitted on the calibration point's CPU by the host's idle gap)",
        HOST_GAP_CORPUS_DAY,
    ),
    (
        "calibration/validation/load_matrix_hiccups_before.json",
        "the committed model (commit 7d2813f) on a corpus with the hiccup probe beside it",
        HICCUPS_CORPUS_DAY,
    ),
    (
        HICCUPS_MATRIX,
        "plus each vCPU's hiccups as the probe measured them: every sleeping thread's work "
        "stretched by them, preemptive-resume (the low class of a priority queue)",
        HICCUPS_CORPUS_DAY,
    ),
    (
        BACKGROUND_MATRIX,
        "plus the host's background as its busy vCPUs beyond the two processes' own CPU "
        "(/proc/stat less schedstat), not the client's runnable samples, which catch the "
        "gateway it woke: no fair-share slowdown of two processes on two vCPUs",
        HICCUPS_CORPUS_DAY,
    ),
    (
        READ_SPREAD_MATRIX,
        "plus a read's handler work spread as the gateway's in-process timings (a lognormal "
        "of gateway_ns's measured sigma), no longer a constant",
        HICCUPS_CORPUS_DAY,
    ),
    (
        EVERY_WAKE_MATRIX,
        "plus the stall of a thread woken next to a spinning sender alike at every wake-up "
        "(put on the spinner's vCPU whatever it slept), not only after long sleeps outside "
        "the host's polling window",
        HICCUPS_CORPUS_DAY,
    ),
    (
        NEIGHBOUR_BEFORE_MATRIX,
        "the same model on a corpus with the hiccup probe with each vCPU alone beside it",
        NEIGHBOUR_CORPUS_DAY,
    ),
    (
        NEIGHBOUR_MATRIX,
        "plus a thread's hiccups following how busy the other vCPU is: the busy host's in the "
        "share of the time its neighbour works, the alone probe's otherwise (the other vCPU "
        "idles while both processes share one)",
        NEIGHBOUR_CORPUS_DAY,
    ),
    (
        MEASURED_HICCUPS_MATRIX,
        "plus each hiccup as long as the probes measured: their gaps' quantiles (p25 to p99.8) "
        "and the longest, joined log-linearly, no longer a lognormal of the gaps' median and mean",
        NEIGHBOUR_CORPUS_DAY,
    ),
    (
        NO_STALLS_MATRIX,
        "the same model (commit 6e3bc906) on a corpus measured by the load client without its "
        "own stalls, on a host whose idle vCPUs woke slowly (a socket's wake-up 166 us)",
        NO_STALLS_CORPUS_DAY,
    ),
    (
        SOCKET_HALT_MATRIX,
        "plus a socket's wake-up what the halt probe says a halted vCPU costs beyond an awake one "
        "(17 us, its law's share of the halted latency), none of it before the vCPU halts or "
        "while the host polls it",
        NO_STALLS_CORPUS_DAY,
    ),
    (
        LONG_PREDICTIONS_MATRIX,
        "plus each point predicted from 10 simulated seconds, not 2 (the model's own sampling "
        "noise)",
        NO_STALLS_CORPUS_DAY,
    ),
    (
        HICCUP_MEDIAN_NO_STALLS_MATRIX,
        "the model of 2026-11-28 22:30 on it: plus the hiccups the median of the passes' probes "
        "(the relay's cold start does not apply: no relay)",
        NO_STALLS_CORPUS_DAY,
    ),
    (
        SOCKET_HALT_NEIGHBOUR_MATRIX,
        "the same model on the corpus of 01:37 (a socket's wake-up 19 us, 24 before)",
        NEIGHBOUR_CORPUS_DAY,
    ),
    (
        LONG_PREDICTIONS_NEIGHBOUR_MATRIX,
        "plus each point predicted from 10 simulated seconds, not 2",
        NEIGHBOUR_CORPUS_DAY,
    ),
    (
        HICCUP_MEDIAN_NEIGHBOUR_MATRIX,
        "the model of 2026-11-28 22:30 on it: plus the hiccups the median of the passes' probes",
        NEIGHBOUR_CORPUS_DAY,
    ),
    (
        HICCUPS_NEIGHBOUR_MATRIX,
        "the model of commit 813d14d (hiccups following the other vCPU) on the hiccup corpus",
        HICCUPS_CORPUS_DAY,
    ),
    (
        HICCUPS_MEASURED_MATRIX,
        "plus each hiccup as long as the probes measured (their quantiles)",
        HICCUPS_CORPUS_DAY,
    ),
    (
        HICCUPS_LATEST_MATRIX,
        "the model of 2026-11-28 17:00 on it: plus a socket's wake-up what the halt probe says a "
        "halted vCPU costs beyond an awake one, and each point predicted from 10 simulated seconds",
        HICCUPS_CORPUS_DAY,
    ),
    (
        RELAY_COLD_MATRIX,
        "plus the relay's cold start: its work a pass by how long it slept",
        HICCUPS_CORPUS_DAY,
    ),
    (
        HICCUP_MEDIAN_MATRIX,
        "plus the hiccups the median of the passes' probes",
        HICCUPS_CORPUS_DAY,
    ),
    (
        PROBE_BODY_MATRIX,
        "plus sockperf's burst probe fitted on its body only (p10 to p90), its tail left to the "
        "calibration point",
        HICCUPS_CORPUS_DAY,
    ),
    (
        SEND_READS_MATRIX,
        SEND_READS_MODEL,
        HICCUPS_CORPUS_DAY,
    ),
    (
        RELAY_SHARE_MATRIX,
        RELAY_SHARE_MODEL,
        HICCUPS_CORPUS_DAY,
    ),
    (
        TWO_STALLS_MATRIX,
        TWO_STALLS_MODEL,
        HICCUPS_CORPUS_DAY,
    ),
    (
        SHARED_PATH_MATRIX,
        SHARED_PATH_MODEL,
        HICCUPS_CORPUS_DAY,
    ),
    (
        RELAY_BEFORE_MATRIX,
        "the model of 2026-11-28 17:00 (commit b47c9dd) on sockperf measured after the relay's "
        "cold start was built",
        RELAY_CORPUS_DAY,
    ),
    (
        RELAY_MATRIX,
        "plus the relay's cold start",
        RELAY_CORPUS_DAY,
    ),
    (
        HICCUP_MEDIAN_RELAY_MATRIX,
        "plus the hiccups the median of the passes' probes, not every probe's gaps pooled (one "
        "probe met 4 ms gaps 20% of its time, the runs of its pass did not)",
        RELAY_CORPUS_DAY,
    ),
    (
        PROBE_BODY_RELAY_MATRIX,
        "plus sockperf's burst probe fitted on its body only",
        RELAY_CORPUS_DAY,
    ),
    (
        SEND_READS_RELAY_MATRIX,
        SEND_READS_MODEL,
        RELAY_CORPUS_DAY,
    ),
    (
        RELAY_SHARE_RELAY_MATRIX,
        RELAY_SHARE_MODEL,
        RELAY_CORPUS_DAY,
    ),
    (
        TWO_STALLS_RELAY_MATRIX,
        TWO_STALLS_MODEL,
        RELAY_CORPUS_DAY,
    ),
    (
        SHARED_PATH_RELAY_MATRIX,
        SHARED_PATH_MODEL,
        RELAY_CORPUS_DAY,
    ),
    (
        NIGHT_BEFORE_MATRIX,
        "the model of commit 26a2df7 (every hiccup probe's gaps pooled) on sockperf measured after "
        "the median law was built",
        NIGHT_CORPUS_DAY,
    ),
    (
        NIGHT_MATRIX,
        "plus the hiccups the median of the passes' probes",
        NIGHT_CORPUS_DAY,
    ),
    (
        PROBE_BODY_NIGHT_MATRIX,
        "plus sockperf's burst probe fitted on its body only",
        NIGHT_CORPUS_DAY,
    ),
    (
        SEND_READS_NIGHT_MATRIX,
        SEND_READS_MODEL,
        NIGHT_CORPUS_DAY,
    ),
    (
        RELAY_SHARE_NIGHT_MATRIX,
        RELAY_SHARE_MODEL,
        NIGHT_CORPUS_DAY,
    ),
    (
        TWO_STALLS_NIGHT_MATRIX,
        TWO_STALLS_MODEL,
        NIGHT_CORPUS_DAY,
    ),
    (
        SHARED_PATH_NIGHT_MATRIX,
        SHARED_PATH_MODEL,
        NIGHT_CORPUS_DAY,
    ),
    (
        SOCKPERF_QUIET_MATRIX,
        "the model before that step on sockperf measured without the millisecond placement sampler",
        SOCKPERF_QUIET_CORPUS_DAY,
    ),
    (
        SOCKPERF_EVERY_WAKE_MATRIX,
        "plus the stall next to a spinning sender alike at every wake-up",
        SOCKPERF_QUIET_CORPUS_DAY,
    ),
    (
        "calibration/validation/load_matrix_polling_host_before.json",
        "the model of commit 0fb932e on a corpus of a host that polls",
        POLLING_CORPUS_DAY,
    ),
    (
        "calibration/validation/load_matrix_polling_host.json",
        "the model of commit 8fb9ee9 on it: the window from its steady probe (194 us), the halt "
        "law fitted with the polled wake-ups apart",
        POLLING_CORPUS_DAY,
    ),
)


def load_before_after() -> str:
    """The matrix's summary for each model issue 17 measured, oldest first (the saturation's:
    :func:`_saturation`)."""
    rows = []
    for path, model, corpus in LOAD_MODELS:
        data = _load(path)
        sm = data["summary"]
        sat_err, sat_share, sat_judged = _saturation(data["systems"])
        rows.append(
            (
                model,
                corpus,
                f"{sm['p50_median_abs_err_pct']:.0f}%",
                f"{sm['p99_median_abs_err_pct']:.0f}%",
                f"{sm['share_within_goal']:.0%} of {sm['points_under_load_limit']}",
                f"{sat_err} ({sat_share} of {sat_judged})",
                _seed_range(data.get("seed_spread")),
            )
        )
    header = ("model", "corpus", "median abs err p50", "median abs err p99", "within goal",
              "saturation: median abs err (within 10%)",
              "over seeds: within goal / p50 / p99")  # fmt: skip
    return _table(header, "llrrrrr", rows)


def _seed_range(spread: dict[str, Any] | None) -> str:
    """A matrix's summary over seeds (``twin validate --matrix --seeds K``): min-max of each."""
    if spread is None:
        return "-"

    def span(key: str, scale: float) -> str:
        values = [v * scale for v in spread[key] if v is not None]
        return f"{min(values):.0f}-{max(values):.0f}%"

    seeds = spread["seeds"]
    return (
        f"{span('share_within_goal', 100)} / {span('p50_median_abs_err_pct', 1)} / "
        f"{span('p99_median_abs_err_pct', 1)} ({len(seeds)} seeds)"
    )


def _point_name(point: dict[str, Any]) -> str:
    """A matrix point's id, bold where it is its system's calibration point."""
    return f"**{point['id']}**" if point["calibration"] else point["id"]


def load_cpu() -> str:
    """The testbed's CPU a message at its points of one connection, measured (schedstat) against
    what the model spends, with a wake-up's CPU the calibration rate's at every rate and with its
    cold start shed as the host's idle gaps shorten (seed 1 of each matrix)."""
    before, after = (_load(path) for path in (HOST_GAP_BEFORE, HOST_GAP_MATRIX))
    rows = []
    for old, new in zip(before["systems"], after["systems"], strict=True):
        for p, q in zip(old["points"], new["points"], strict=True):
            if "cpu_us_per_msg" not in q or q["conditions"].get("connections") != 1:
                continue  # the points of one connection (every point's is in the results)
            measured = q["cpu_us_per_msg"]["measured"]
            row = [new["system"], _point_name(q), _us(measured["client"]), _us(measured["gateway"])]
            for model in (p["cpu_us_per_msg"], q["cpu_us_per_msg"]):  # flat, then cold start
                row += [_us(model["predicted"]["host"]), _signed(model["error_pct"]["host"])]
            rows.append(row)
    header = ("system", "point", "client us/msg", "gateway us/msg",
              "model, flat: both", "error", "model, cold start: both", "error")  # fmt: skip
    return _table(header, "llrrrrrr", rows)


def load_sockperf_sampler() -> str:
    """sockperf's p90 and p99 under load, measured beside a placement sampler every millisecond
    (the hiccup corpus) and every 10 ms (the quiet corpus), and on the quiet corpus the model's
    p90 and its p99 with the stall next to the spinning sender after long sleeps only and alike
    at every wake-up (seed 1; medians of each point's runs)."""
    loud, quiet, every = (
        _load(path)
        for path in (READ_SPREAD_MATRIX, SOCKPERF_QUIET_MATRIX, SOCKPERF_EVERY_WAKE_MATRIX)
    )
    loud_systems = {s["system"]: s for s in loud["systems"]}
    rows = []
    for s, t in zip(quiet["systems"], every["systems"], strict=True):
        before = {p["id"]: p for p in loud_systems[s["system"]]["points"]}
        for q, r in zip(s["points"], t["points"], strict=True):
            p = before.get(q["id"])
            if p is None or q["conditions"].get("mode") != "under-load":
                continue
            if r["predicted"]["p99"] is None:
                continue  # beyond what the model answers
            rows.append(
                [
                    s["system"],
                    _point_name(q),
                    *(_us(point["measured"][k]) for point in (p, q) for k in ("p90", "p99")),
                    _us(r["predicted"]["p90"]),
                    _us(q["predicted"]["p99"]),
                    _us(r["predicted"]["p99"]),
                ]
            )
    header = ("system", "point", "1 ms: p90 measured", "p99 measured",
              "10 ms: p90 measured", "p99 measured", "model p90",
              "model p99, stall after long sleeps",
              "model p99, stall at every wake-up")  # fmt: skip
    return _table(header, "llrrrrrrr", rows)


def _before_after_points(
    before_path: str, after_path: str, keep: Callable[[str, dict[str, Any]], bool] | None = None
) -> list[list[str]]:
    """Per point of two matrices of one corpus (seed 1; ``keep(system, point)`` chooses them):
    its system, id, measured p50, both models' p50, measured p99 and both models' p99."""
    before, after = (_load(path) for path in (before_path, after_path))
    rows = []
    for s, t in zip(before["systems"], after["systems"], strict=True):
        for p, q in zip(s["points"], t["points"], strict=True):
            if keep is not None and not keep(t["system"], q):
                continue
            row = [s["system"], _point_name(q), _us(q["measured"]["p50"])]
            row += [_us(point["predicted"]["p50"]) for point in (p, q)]
            row += [_us(q["measured"]["p99"])]
            row += [_us(point["predicted"]["p99"]) for point in (p, q)]
            rows.append(row)
    return rows


def load_socket_halt() -> str:
    """The testbed's p50 and p99 over loopback at one connection and in closed loops on the corpus
    without the client's stalls, measured (medians of each point's runs) and predicted with a
    socket's wake-up the idle host's less the busy host's, scaled as the thread's own, and with it
    what the halt probe says a halt costs, all of it the halt's (seed 1)."""

    def keep(system: str, point: dict[str, Any]) -> bool:
        conditions = point["conditions"]
        return system == "testbed-loopback" and (
            conditions.get("loop") == "closed" or conditions.get("connections") == 1
        )

    rows = _before_after_points(NO_STALLS_MATRIX, SOCKET_HALT_MATRIX, keep)
    header = ("system", "point", "p50 measured", "model p50, idle less busy probe",
              "model p50, the halt's", "p99 measured", "model p99, idle less busy probe",
              "model p99, the halt's")  # fmt: skip
    return _table(header, "llrrrrrr", rows)


RELAY_CORPORA = (  # (corpus folder, when it was measured): the corpora with relay.json's reads
    ("calibration/data/load", CORPUS_DAY),
    ("calibration/data/load_2026-11-27_hiccups", HICCUPS_CORPUS_DAY),
    ("calibration/data/load_2026-11-27_sockperf", SOCKPERF_QUIET_CORPUS_DAY),
    ("calibration/data/load_2026-11-28_relay", RELAY_CORPUS_DAY),
    ("calibration/data/load_2026-11-28_night", NIGHT_CORPUS_DAY),
)


def load_relay_work() -> str:
    """Through the relay, each point's work a pass (a read and its write, us, the median over its
    runs): measured (``relay.json``), the model's before (the calibration point's mean, flat),
    and the calibration point's cold-start law over the point's own sleeps before its reads."""
    import statistics

    from calibration.matrix import load_corpus, period_us
    from calibration.relay import relay_stats, relay_work

    rows = []
    for folder, corpus in RELAY_CORPORA:
        for system in load_corpus(ROOT / folder):
            calibration = system.point(system.calibrated_on)
            law = relay_work(calibration.runs, system.name, period_us(calibration))
            if law is None:
                continue  # no relay on this route
            flat = statistics.median(
                2 * s["work"]["mean_us"] for s in map(relay_stats, calibration.runs) if s
            )
            for point in system.points:
                stats = [s for s in map(relay_stats, point.runs) if s is not None]
                measured = statistics.median(
                    s["read_work"]["mean_us"] + s["write_work"]["mean_us"] for s in stats
                )
                predicted = statistics.median(law.pass_us(s["reads_by_idle_gap"]) for s in stats)
                rows.append(
                    (corpus, system.name, point.id, _us(measured), _us(flat), _us(predicted))
                )
    header = ("corpus", "system", "point", "measured", "before: flat", "cold-start law")
    return _table(header, "lllrrr", rows)


def load_neighbour_hiccups() -> str:
    """The testbed's p50 and p99 on the corpus with both hiccup probes, measured (medians of each
    point's runs) and predicted with the busy host's hiccups at every load and with them following
    how busy the other vCPU is (seed 1)."""
    rows = _before_after_points(NEIGHBOUR_BEFORE_MATRIX, NEIGHBOUR_MATRIX)
    header = ("system", "point", "p50 measured", "model p50, busy host's hiccups",
              "model p50, following the other vCPU", "p99 measured",
              "model p99, busy host's hiccups", "model p99, following the other vCPU")  # fmt: skip
    return _table(header, "llrrrrrr", rows)


def load_run_agreement() -> str:
    """Per system of the corpora with the hiccup probe: how often one measured run is within the
    goal of the median of its point's other runs (the points the goal judges), beside the share
    of those points the latest model brings within it (seed 1)."""
    from calibration.matrix import GOAL_P50_PCT, GOAL_P99_PCT, within_goal
    from calibration.repeatability import RunAgreement

    rows = []
    for path, corpus in (
        (HICCUP_MEDIAN_NO_STALLS_MATRIX, NO_STALLS_CORPUS_DAY),
        (HICCUP_MEDIAN_NEIGHBOUR_MATRIX, NEIGHBOUR_CORPUS_DAY),
        (SHARED_PATH_MATRIX, HICCUPS_CORPUS_DAY),
        (SHARED_PATH_RELAY_MATRIX, RELAY_CORPUS_DAY),
        (SHARED_PATH_NIGHT_MATRIX, NIGHT_CORPUS_DAY),
    ):
        for s in _load(path)["systems"]:
            runs = RunAgreement(**s["run_agreement"])
            judged = [
                j
                for p in s["points"]
                if not p["calibration"]
                and (j := within_goal(p, s["saturation"]["measured"])) is not None
            ]
            rows.append(
                (
                    corpus,
                    s["system"],
                    str(runs.runs),
                    *(f"{100 * share:.0f}%" for share in runs.shares()),
                    f"{100 * sum(judged) / len(judged):.0f}% of {len(judged)}",
                )
            )
    header = ("corpus", "system", "runs judged",
              f"a run's p50 within {GOAL_P50_PCT:g}% of the others'",
              f"its p99 within {GOAL_P99_PCT:g}%", "both (the ceiling)",
              "the model within goal")  # fmt: skip
    return _table(header, "llrrrrr", rows)


# One sockperf point measured many times (``twin testbed repeat``), 2026-12-07.
REPEAT_RESULTS = tuple(
    f"calibration/data/repeat_2026-12-07/repeat_{system}.json"
    for system in ("sockperf-udp-loopback", "sockperf-tcp-loopback", "testbed-loopback-c4")
)


def load_repeat() -> str:
    """Per system, rate and run length of ``twin testbed repeat``'s results: the runs' ranges, and
    how often one run, and the median of the lab's number of runs, is within the goal of the
    median of the other runs (p50, p99, both)."""
    from calibration.repeatability import RunAgreement

    rows = []
    for path in REPEAT_RESULTS:
        result = _load(path)
        plan = result["plan"]
        for case in result["cases"]:
            p50s = [r["p50_us"] for r in case["runs"]]
            p99s = [r["p99_us"] for r in case["runs"]]
            rows.append(
                (
                    plan["system"],
                    f"{case['rate_msgs_per_s']:,.0f}",
                    f"{case['duration_s']:g} s",
                    str(len(case["runs"])),
                    f"{min(p50s):.0f}-{max(p50s):.0f}",
                    f"{min(p99s):,.0f}-{max(p99s):,.0f}",
                    *(
                        " / ".join(f"{100 * x:.0f}%" for x in RunAgreement(**case[key]).shares())
                        for key in ("one_run", "median_of_subset")
                    ),
                )
            )
    subset = _load(REPEAT_RESULTS[0])["plan"]["subset"]
    header = ("system", "msg/s", "a run", "runs", "p50 (us)", "p99 (us)",
              "one run within (p50 / p99 / both)",
              f"the median of {subset} within (p50 / p99 / both)")  # fmt: skip
    return _table(header, "lrrrrrrr", rows)


def load_cpu_simulated() -> str:
    """The testbed's host CPU a message over loopback at every point of the hiccup corpus's
    latest matrix (seed 1): measured (schedstat, both processes), the model's mean-value
    estimate and what its simulated threads spent, each with its error."""
    rows = []
    for s in _load(READ_SPREAD_MATRIX)["systems"]:
        if s["system"] != "testbed-loopback":
            continue
        for p in s["points"]:
            cpu = p.get("cpu_us_per_msg")
            if cpu is None or "simulated" not in cpu:
                continue  # not stated, or nothing answered
            rows.append(
                (
                    _point_name(p),
                    _us(cpu["measured"]["host"]),
                    _us(cpu["predicted"]["host"]),
                    _signed(cpu["error_pct"]["host"]),
                    _us(cpu["simulated"]["host"]),
                    _signed(cpu["simulated_error_pct"]["host"]),
                )
            )
    header = ("point", "measured us/msg", "mean-value estimate", "error", "simulated threads",
              "error")  # fmt: skip
    return _table(header, "lrrrrr", rows)


def load_points() -> str:
    """Every point: measured vs predicted p50, p99 and throughput (calibration points bold)."""
    rows = []
    for s in _load(LOAD_MATRIX)["systems"]:
        for p in s["points"]:
            m, pr, e = p["measured"], p["predicted"], p["error_pct"]
            rows.append(
                (
                    s["system"],
                    _point_name(p),
                    _us(m["p50"]),
                    _us(pr["p50"]),
                    _signed(e["p50"]),
                    _us(m["p99"]),
                    _us(pr["p99"]),
                    _signed(e["p99"]),
                    _num(m["throughput"]),
                    _num(pr["throughput"]),
                )
            )
    header = (
        "system",
        "point",
        "p50 meas",
        "p50 pred",
        "err",
        "p99 meas",
        "p99 pred",
        "err",
        "msg/s meas",
        "msg/s pred",
    )
    return _table(header, "llrrrrrrrr", rows)


def feed() -> str:
    data = _load("calibration/validation/feed_prediction.json")
    rows = []
    for r in data["runs"]:
        worst = max(
            (abs(st[f"{q}_error"]), f"{name} {q}")
            for name, st in r["stages"].items()
            for q in ("p50", "p99")
        )
        inbound = r["stages"]["inbound"]
        rows.append(
            (
                r["run"] + (" (overloaded)" if r["overloaded"] else ""),
                f"{r['rate_msgs_per_s']:,.0f}",
                ",".join(str(b) for b in r["bursts"]),
                f"{r['messages_per_read_measured']:.1f} / {r['messages_per_read_predicted']:.1f}",
                f"{inbound['p50_measured_us']:.0f} / {inbound['p50_predicted_us']:.0f}",
                f"{inbound['p99_measured_us']:,.0f} / {inbound['p99_predicted_us']:,.0f}",
                f"{worst[1]} {worst[0]:+.0%}".replace("+", ""),
            )
        )
    a = data["accuracy"]
    header = ("run", "msg/s", "burst", "msgs per read meas / pred", "inbound p50 us",
              "inbound p99 us", "largest stage error")  # fmt: skip
    table = _table(header, "lrrrrrl", rows)
    return table + (
        f"\nOver the {a['pairs']} (run, stage) pairs of runs that were not overloaded: median "
        f"|error| p50 {a['p50_median_abs_error']:.0%}, p99 {a['p99_median_abs_error']:.0%}; "
        f"{a['within_goal_share']:.0%} within p50 15% and p99 25%.\n"
    )


def crosscheck_spans() -> str:
    cases = _load("benchmarks/results/crosscheck_full.json")["cases"]
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
                _num(c["rate_msgs_per_s"]),
                str(len(spans)),
                worst[1],
                f"{max(sd['ks'] for sd in spans.values()):.4f}",
            )
        )
    header = ("scenario", "rate msg/s", "spans", "largest percentile difference", "largest KS")
    return _table(header, "lrrlr", rows)


def feed_findings() -> str:
    data = _load("benchmarks/results/feed_findings.json")
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
    return _table(header, "rlrrrrr", rows)


def _curves() -> list[dict[str, Any]]:
    return list(_load("benchmarks/results/load_curves.json")["curves"])


def curves_summary() -> str:
    rows = []
    for c in _curves():
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
    return _table(header, "lrlrrr", rows)


def curves_points() -> str:
    rows = []
    for c in _curves():
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
    return _table(header, "lrrrrrll", rows)


def explorer() -> str:
    data = _load("benchmarks/results/explorer.json")
    rows = [
        (
            f"visitor {i + 1}",
            *(f"{s[k]:.2f}" for k in ("page_load_s", "sidebar_s", "first_result_s")),
        )
        for i, s in enumerate(data["sessions"])
    ]
    return _table(("session", "page loaded s", "sidebar s", "first headline s"), "lrrr", rows)


def startup() -> str:
    data = _load("benchmarks/results/startup.json")
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
    return _table(("measured", "wall time"), "lr", rows)


def api() -> str:
    """The API reference, from the public names' docstrings (``tools/apiref.py``)."""
    sys.path.insert(0, str(ROOT))
    from apiref import api_reference

    return api_reference()


TABLES: dict[str, Callable[[], str]] = {
    "api": api,
    "replay": replay,
    "explorer": explorer,
    "startup": startup,
    "feed": feed,
    "feed-findings": feed_findings,
    "load-summary": load_summary,
    "load-kinds": load_kinds,
    "load-points": load_points,
    "load-cpu": load_cpu,
    "load-cpu-simulated": load_cpu_simulated,
    "load-sockperf-sampler": load_sockperf_sampler,
    "load-neighbour-hiccups": load_neighbour_hiccups,
    "load-socket-halt": load_socket_halt,
    "load-relay-work": load_relay_work,
    "load-run-agreement": load_run_agreement,
    "load-repeat": load_repeat,
    "crosscheck": crosscheck,
    "crosscheck-spans": crosscheck_spans,
    "engines": engines,
    "long-run": long_run,
    "engine-ext": engine_ext,
    "small-benchmarks": small_benchmarks,
    "fit": fit,
    "leave-one-out": leave_one_out,
    "venue-fit": venue_fit,
    "venue-leave-one-out": venue_leave_one_out,
    "hunt-levels": hunt_levels,
    "cluster-prediction": cluster_prediction,
    "cluster-outage": cluster_outage,
    "hunt-rules": hunt_rules,
    "hunt-windows": hunt_windows,
    "campaign": campaign,
    "prediction": prediction,
    "prediction-kinds": prediction_kinds,
    "prediction-veth": prediction_veth,
    "curves-summary": curves_summary,
    "load-before-after": load_before_after,
    "curves-points": curves_points,
}


def render(text: str, source: Path) -> str:
    """``text`` with every table block regenerated; unknown names are an error."""

    def replace(m: re.Match[str]) -> str:
        name = m.group("name")
        if name not in TABLES:
            raise SystemExit(f"{source}: unknown table {name!r} (known: {', '.join(TABLES)})")
        return m.group(1) + TABLES[name]() + m.group(4)

    return BLOCK.sub(replace, text)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="report stale tables, change nothing")
    args = parser.parse_args(argv)
    stale = []
    for path in sorted(DOCS.glob("*.md")):
        text = path.read_text()
        new = render(text, path)
        if new != text:
            stale.append(path)
            if not args.check:
                path.write_text(new)
    if args.check and stale:
        names = ", ".join(p.name for p in stale)
        print(f"gendocs: stale tables in docs/ ({names}): run make docs", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
