"""The tables of the calibration's committed outputs (``calibration/validation``, the local
campaign): the fits and their leave-one-out, the hunt, the etcd cluster, the testbed's
campaign and prediction, the feed."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from doctables.common import load, md_table, num, signed, us


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
    rows = load(relative)["rows"]
    header = (first, "statistic", f"measured{unit}", f"{predicted}{unit}", "error")
    return md_table(header, "llrrr", _validation_rows(rows))


def fit(files: Sequence[str]) -> str:
    return _validation_table(files[0], "fitted twin")


def leave_one_out(files: Sequence[str]) -> str:
    return _validation_table(files[0], "predicted (fit without it)")


def venue_fit(files: Sequence[str]) -> str:
    return _validation_table(files[0], "fitted twin", "row", " (us)")


def venue_leave_one_out(files: Sequence[str]) -> str:
    return _validation_table(
        files[0],
        "predicted without it",
        "row",
        " (us)",
    )


def _hunt(path: str) -> dict[str, Any]:
    return dict(load(path))


def hunt_levels(files: Sequence[str]) -> str:
    h = _hunt(files[0])
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
    return md_table(header, "lrrrr", rows)


def hunt_rules(files: Sequence[str]) -> str:
    from twin.hunt.report import rule_cells

    h = _hunt(files[0])
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
    return md_table(header, "lrrrrrr", rows)


def hunt_windows(files: Sequence[str]) -> str:
    m = _hunt(files[0])["measurement"]
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
    return md_table(header, "lrrr", rows)


def cluster_prediction(files: Sequence[str]) -> str:
    c = load(files[0])
    rows = [
        (
            r["layout"],
            f"{r['rate_per_s']:g}" + (" (calibration)" if r["calibration"] else ""),
            f"{r['load_share']:.0%}",
            us(r["measured_p50_us"]),
            us(r["predicted_p50_us"]),
            signed(r["error_p50_pct"]),
            us(r["measured_p99_us"]),
            us(r["predicted_p99_us"]),
            signed(r["error_p99_pct"]),
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
    return md_table(header, "llrrrrrrrrr", rows) + note


def cluster_outage(files: Sequence[str]) -> str:
    c = load(files[0])
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
        md_table(header, "lrrr", rows)
        + "\n\n"
        + md_table(
            ("layout", "p99 ceiling", "capacity measured (writes/s)", "predicted"), "lrrr", capacity
        )
    )


def campaign(files: Sequence[str]) -> str:
    c = load(files[0])

    def spread(row: dict[str, Any], key: str) -> str:
        low, high = row["spread"][key]
        return f"{row[key]:.0f} ({low:.0f}-{high:.0f})"

    rows = [
        (
            num(r["rate_msgs_per_s"]),
            num(r["achieved_msgs_per_s"]),
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
    table = md_table(header, "rrrrrrrrrrl", rows)
    return table + f"\nMeasured saturation: {num(c['saturation_msgs_per_s'])} msg/s.\n"


def _prediction(table: list[dict[str, Any]]) -> str:
    rows = []
    for i, r in enumerate(table):
        cells = [num(r["rate_msgs_per_s"]) + (" (calibration)" if i == 0 else "")]
        for key in ("p50", "p90", "p99"):
            measured, predicted = r[f"measured_{key}_us"], r[f"predicted_{key}_us"]
            cells += [
                f"{measured:.0f} / {predicted:.0f}",
                f"{100 * (predicted / measured - 1):+.0f}%",
            ]
        rows.append(cells)
    header = ("rate", "p50 meas / pred", "err", "p90 meas / pred", "err", "p99 meas / pred", "err")
    return md_table(header, "rrrrrrr", rows)


def prediction(files: Sequence[str]) -> str:
    p = load(files[0])
    return _prediction(p["table"]) + (
        f"\nSaturation: measured {num(p['measured_saturation_msgs_per_s'])} msg/s, predicted "
        f"{num(p['predicted_saturation_msgs_per_s'])} msg/s.\n"
    )


def prediction_kinds(files: Sequence[str]) -> str:
    """The loopback prediction's orders and cancels apart: what the fit matches (their p50 and
    p99); the pooled p50 falls between the two."""
    rows = []
    for i, r in enumerate(load(files[0])["table"]):
        cells = [num(r["rate_msgs_per_s"]) + (" (calibration)" if i == 0 else "")]
        for kind in ("order", "cancel"):
            for key in ("p50", "p99"):
                measured = r[f"measured_{kind}_{key}_us"]
                predicted = r[f"predicted_{kind}_{key}_us"]
                cells.append(f"{measured:.0f} / {predicted:.0f}")
        rows.append(cells)
    header = ("rate", "order p50 meas / pred", "order p99", "cancel p50", "cancel p99")
    return md_table(header, "rrrrr", rows)


def prediction_veth(files: Sequence[str]) -> str:
    return _prediction(load(files[0])["veth_table"])


def feed(files: Sequence[str]) -> str:
    data = load(files[0])
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
    table = md_table(header, "lrrrrrl", rows)
    return table + (
        f"\nOver the {a['pairs']} (run, stage) pairs of runs that were not overloaded: median "
        f"|error| p50 {a['p50_median_abs_error']:.0%}, p99 {a['p99_median_abs_error']:.0%}; "
        f"{a['within_goal_share']:.0%} within p50 15% and p99 25%.\n"
    )
