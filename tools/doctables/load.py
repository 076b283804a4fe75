"""The tables of the load-response lab's accuracy matrices (``calibration/validation/load_matrix*``)
and of the corpora they ran on: the latest matrix, the model history, and the matrices and
corpora one step of that history was measured on."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from doctables.common import ROOT, load, md_table, num, point_name, signed, us


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


def load_summary(files: Sequence[str]) -> str:
    """One row per system: its calibration point, saturation, and its points' median errors."""
    matrix = load(files[0])
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
                ("" if sat.get("reached") else ">= ") + num(sat["measured"]),
                num(sat["predicted"]),
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
    return md_table(header, "llrrrrr", rows)


def load_kinds(files: Sequence[str]) -> str:
    """Per system whose runs record them apart, the orders' and the cancels' errors: median
    absolute p50 and p99 errors over its predicted points, and at its calibration point."""
    rows = []
    for s in load(files[0])["systems"]:
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
    return md_table(header, "lrrrrrrr", rows)


def load_points(files: Sequence[str]) -> str:
    """Every point: measured vs predicted p50, p99 and throughput (calibration points bold)."""
    rows = []
    for s in load(files[0])["systems"]:
        for p in s["points"]:
            m, pr, e = p["measured"], p["predicted"], p["error_pct"]
            rows.append(
                (
                    s["system"],
                    point_name(p),
                    us(m["p50"]),
                    us(pr["p50"]),
                    signed(e["p50"]),
                    us(m["p99"]),
                    us(pr["p99"]),
                    signed(e["p99"]),
                    num(m["throughput"]),
                    num(pr["throughput"]),
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
    return md_table(header, "llrrrrrrrr", rows)


def load_cpu_simulated(files: Sequence[str]) -> str:
    """The testbed's host CPU a message over loopback at every point of the hiccup corpus's
    latest matrix (seed 1): measured (schedstat, both processes), the model's mean-value
    estimate and what its simulated threads spent, each with its error."""
    rows = []
    for s in load(files[0])["systems"]:
        if s["system"] != "testbed-loopback":
            continue
        for p in s["points"]:
            cpu = p.get("cpu_us_per_msg")
            if cpu is None or "simulated" not in cpu:
                continue  # not stated, or nothing answered
            rows.append(
                (
                    point_name(p),
                    us(cpu["measured"]["host"]),
                    us(cpu["predicted"]["host"]),
                    signed(cpu["error_pct"]["host"]),
                    us(cpu["simulated"]["host"]),
                    signed(cpu["simulated_error_pct"]["host"]),
                )
            )
    header = ("point", "measured us/msg", "mean-value estimate", "error", "simulated threads",
              "error")  # fmt: skip
    return md_table(header, "lrrrrr", rows)


def load_before_after(files: Sequence[str], rows: Sequence[Mapping[str, Any]]) -> str:
    """The matrix's summary for each model issue 17 measured, oldest first: each row's
    ``matrix`` in the history of summaries ``files[0]`` (``tools/matrix_history.py``)."""
    history = load(files[0])["matrices"]
    out = []
    for row in rows:
        if row["matrix"] not in history:
            raise SystemExit(f"{files[0]}: no matrix {row['matrix']!r} (tools/matrix_history.py)")
        data = history[row["matrix"]]
        sm, sat = data["summary"], data["saturation"]
        sat_err = "-" if sat["median_abs_err_pct"] is None else f"{sat['median_abs_err_pct']:.0f}%"
        sat_share = "-" if sat["within_goal"] is None else f"{sat['within_goal']:.0%}"
        out.append(
            (
                row["model"],
                row["corpus"],
                f"{sm['p50_median_abs_err_pct']:.0f}%",
                f"{sm['p99_median_abs_err_pct']:.0f}%",
                f"{sm['share_within_goal']:.0%} of {sm['points_under_load_limit']}",
                f"{sat_err} ({sat_share} of {sat['judged']})",
                _seed_range(data.get("seed_spread")),
            )
        )
    header = ("model", "corpus", "median abs err p50", "median abs err p99", "within goal",
              "saturation: median abs err (within 10%)",
              "over seeds: within goal / p50 / p99")  # fmt: skip
    return md_table(header, "llrrrrr", out)


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


def load_cpu(files: Sequence[str]) -> str:
    """The testbed's CPU a message at its points of one connection, measured (schedstat) against
    what the model spends, with a wake-up's CPU the calibration rate's at every rate and with its
    cold start shed as the host's idle gaps shorten (seed 1 of each matrix)."""
    before, after = (load(path) for path in files)
    rows = []
    for old, new in zip(before["systems"], after["systems"], strict=True):
        for p, q in zip(old["points"], new["points"], strict=True):
            if "cpu_us_per_msg" not in q or q["conditions"].get("connections") != 1:
                continue  # the points of one connection (every point's is in the results)
            measured = q["cpu_us_per_msg"]["measured"]
            row = [new["system"], point_name(q), us(measured["client"]), us(measured["gateway"])]
            for model in (p["cpu_us_per_msg"], q["cpu_us_per_msg"]):  # flat, then cold start
                row += [us(model["predicted"]["host"]), signed(model["error_pct"]["host"])]
            rows.append(row)
    header = ("system", "point", "client us/msg", "gateway us/msg",
              "model, flat: both", "error", "model, cold start: both", "error")  # fmt: skip
    return md_table(header, "llrrrrrr", rows)


def load_sockperf_sampler(files: Sequence[str]) -> str:
    """sockperf's p90 and p99 under load, measured beside a placement sampler every millisecond
    (the hiccup corpus) and every 10 ms (the quiet corpus), and on the quiet corpus the model's
    p90 and its p99 with the stall next to the spinning sender after long sleeps only and alike
    at every wake-up (seed 1; medians of each point's runs)."""
    loud, quiet, every = (load(path) for path in files)
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
                    point_name(q),
                    *(us(point["measured"][k]) for point in (p, q) for k in ("p90", "p99")),
                    us(r["predicted"]["p90"]),
                    us(q["predicted"]["p99"]),
                    us(r["predicted"]["p99"]),
                ]
            )
    header = ("system", "point", "1 ms: p90 measured", "p99 measured",
              "10 ms: p90 measured", "p99 measured", "model p90",
              "model p99, stall after long sleeps",
              "model p99, stall at every wake-up")  # fmt: skip
    return md_table(header, "llrrrrrrr", rows)


def _before_after_points(
    before_path: str, after_path: str, keep: Callable[[str, dict[str, Any]], bool] | None = None
) -> list[list[str]]:
    """Per point of two matrices of one corpus (seed 1; ``keep(system, point)`` chooses them):
    its system, id, measured p50, both models' p50, measured p99 and both models' p99."""
    before, after = (load(path) for path in (before_path, after_path))
    rows = []
    for s, t in zip(before["systems"], after["systems"], strict=True):
        for p, q in zip(s["points"], t["points"], strict=True):
            if keep is not None and not keep(t["system"], q):
                continue
            row = [s["system"], point_name(q), us(q["measured"]["p50"])]
            row += [us(point["predicted"]["p50"]) for point in (p, q)]
            row += [us(q["measured"]["p99"])]
            row += [us(point["predicted"]["p99"]) for point in (p, q)]
            rows.append(row)
    return rows


def load_socket_halt(files: Sequence[str]) -> str:
    """The testbed's p50 and p99 over loopback at one connection and in closed loops on the corpus
    without the client's stalls, measured (medians of each point's runs) and predicted with a
    socket's wake-up the idle host's less the busy host's, scaled as the thread's own, and with it
    what the halt probe says a halt costs, all of it the halt's (seed 1)."""

    def keep(system: str, point: dict[str, Any]) -> bool:
        conditions = point["conditions"]
        return system == "testbed-loopback" and (
            conditions.get("loop") == "closed" or conditions.get("connections") == 1
        )

    rows = _before_after_points(files[0], files[1], keep)
    header = ("system", "point", "p50 measured", "model p50, idle less busy probe",
              "model p50, the halt's", "p99 measured", "model p99, idle less busy probe",
              "model p99, the halt's")  # fmt: skip
    return md_table(header, "llrrrrrr", rows)


def load_relay_work(rows: Sequence[Mapping[str, Any]]) -> str:
    """Through the relay, each point's work a pass (a read and its write, us, the median over its
    runs): measured (``relay.json``), the model's before (the calibration point's mean, flat),
    and the calibration point's cold-start law over the point's own sleeps before its reads."""
    import statistics

    from calibration.matrix import load_corpus, period_us
    from calibration.relay import relay_stats, relay_work

    out = []
    for row in rows:
        corpus = row["corpus"]
        for system in load_corpus(ROOT / row["folder"]):
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
                out.append((corpus, system.name, point.id, us(measured), us(flat), us(predicted)))
    header = ("corpus", "system", "point", "measured", "before: flat", "cold-start law")
    return md_table(header, "lllrrr", out)


def load_neighbour_hiccups(files: Sequence[str]) -> str:
    """The testbed's p50 and p99 on the corpus with both hiccup probes, measured (medians of each
    point's runs) and predicted with the busy host's hiccups at every load and with them following
    how busy the other vCPU is (seed 1)."""
    rows = _before_after_points(files[0], files[1])
    header = ("system", "point", "p50 measured", "model p50, busy host's hiccups",
              "model p50, following the other vCPU", "p99 measured",
              "model p99, busy host's hiccups", "model p99, following the other vCPU")  # fmt: skip
    return md_table(header, "llrrrrrr", rows)


def load_run_agreement(rows: Sequence[Mapping[str, Any]]) -> str:
    """Per system of the corpora with the hiccup probe: how often one measured run is within the
    goal of the median of its point's other runs (the points the goal judges), beside the share
    of those points the latest model brings within it (seed 1)."""
    from calibration.matrix import GOAL_P50_PCT, GOAL_P99_PCT, within_goal
    from calibration.repeatability import RunAgreement

    out = []
    for row in rows:
        path, corpus = row["file"], row["corpus"]
        for s in load(path)["systems"]:
            runs = RunAgreement(**s["run_agreement"])
            judged = [
                j
                for p in s["points"]
                if not p["calibration"]
                and (j := within_goal(p, s["saturation"]["measured"])) is not None
            ]
            out.append(
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
    return md_table(header, "llrrrrr", out)


def load_repeat(files: Sequence[str]) -> str:
    """Per system, rate and run length of ``twin testbed repeat``'s results: the runs' ranges, and
    how often one run, and the median of the lab's number of runs, is within the goal of the
    median of the other runs (p50, p99, both)."""
    from calibration.repeatability import RunAgreement

    rows = []
    for path in files:
        result = load(path)
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
    subset = load(files[0])["plan"]["subset"]
    header = ("system", "msg/s", "a run", "runs", "p50 (us)", "p99 (us)",
              "one run within (p50 / p99 / both)",
              f"the median of {subset} within (p50 / p99 / both)")  # fmt: skip
    return md_table(header, "lrrrrrrr", rows)


def load_noise(files: Sequence[str]) -> str:
    """Per system of the canonical matrix: the model's median |error| over its runs' own
    (``repeat_ratio``, calibration.judge) and the share of points predicted within what their
    runs allow (``consistent_share``), then all systems together."""

    def ratio(x: float | None) -> str:
        return "-" if x is None else f"{x:.2f}"

    def row(name: str, judged: Mapping[str, Any], points: int) -> tuple[str, ...]:
        r = judged["repeat_ratio"]
        share = judged["consistent_share"]
        return (
            name,
            ratio(r["p50"]),
            ratio(r["p99"]),
            ratio(r["throughput"]),
            "-" if share is None else f"{100 * share:.0f}% of {points}",
        )

    matrix = load(files[0])
    rows = [
        row(s["system"], s, s["noise"]["consistent_points"])
        for s in matrix["systems"]
        if "repeat_ratio" in s
    ]
    summary = matrix["summary"]
    rows.append(row("**all systems**", summary, summary["consistent_points"]))
    header = ("system", "repeat ratio p50", "p99", "throughput", "within their runs' spread")
    return md_table(header, "lrrrr", rows)
