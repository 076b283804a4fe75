"""``twin testbed serve | load | campaign | predict | relay | wakeprobe | hiccups | syscalls |
slices | lab``: the testbed."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from twin.argtypes import (
    non_negative_int,
    output_file,
    output_folder,
    positive_float,
    positive_int,
    seed,
)
from twin.atomic import write_json
from twin.errors import ConfigError
from twin.extras import Extra, require
from twin.jsontext import read_json
from twin.kinds import TESTBED_TIERS, Arrivals, Loop, Tier, Transport
from twin.profile import load_profile, resolve_profile_path, write_profile
from twin.scenario import scenarios_dir
from twin.testbed.systems import Route, Tool

# The campaign's burst probe (``twin.testbed.campaign.DEFAULT_PROBE_BURSTS``, not imported
# here so that ``twin --help`` does not load the testbed).
DEFAULT_PROBE_BURSTS = (1, 2, 4, 8, 16, 32)
# How the wake-up probe's sender waits for each reply (``twin.testbed.wakeprobe.Waiter``'s values,
# not imported here for the same reason).
PROBE_WAITERS = ("blocks", "spins")
PROBE_ORDERS = ("shuffled", "steady")
# Its samples per gap (``twin.testbed.wakeprobe.DEFAULT_SAMPLES``, likewise).
WAKE_SAMPLES = 300
# The hiccup probe's spin and shortest gap (``twin.testbed.hiccups.DEFAULT_SECONDS`` and
# ``DEFAULT_THRESHOLD_US``, likewise).
HICCUP_SECONDS = 20.0
HICCUP_THRESHOLD_US = 10.0
# The system-call probe's rounds per batch size and message size
# (``twin.testbed.syscalls.DEFAULT_SAMPLES`` and ``DEFAULT_PAYLOAD``, likewise).
SYSCALL_SAMPLES = 2000
SYSCALL_PAYLOAD = 14
# The time-slice probe's messages per share (``twin.testbed.slices.DEFAULT_SAMPLES``, likewise).
SLICE_SAMPLES = 3000
# The lab's re-measures of a run stolen from (twin.testbed.lab.LabPlan.steal_retries).
STEAL_RETRIES = 2
# The cluster lab's burst probe: writes a second as at the lowest rate, sent 16 at a time.
DEFAULT_CLUSTER_PROBE_BURST = 16


def _numbers(text: str, example: str) -> list[float]:
    """Comma-separated numbers (blanks skipped); anything else names ``example``."""
    try:
        return [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: expected numbers like {example}") from None


def _rates(text: str) -> list[float]:
    rates = _numbers(text, "5000,10000")
    if not rates or any(r <= 0 for r in rates):
        raise argparse.ArgumentTypeError(f"{text!r}: rates must be > 0")
    return rates


def _durations(text: str) -> list[float]:
    durations = _numbers(text, "2,10")
    if not durations or any(not 0 < d <= 3600 for d in durations):
        raise argparse.ArgumentTypeError(f"{text!r}: durations must be > 0 and <= 3600 s")
    return durations


def _gaps(text: str) -> tuple[float, ...]:
    """The wake-up probe's gaps (us): distinct numbers >= 0, comma-separated."""
    gaps = _numbers(text, "10,100,1000")
    if not gaps or any(not 0 <= g < 1e7 for g in gaps) or len(set(gaps)) < len(gaps):
        raise argparse.ArgumentTypeError(f"{text!r}: gaps must be distinct, >= 0 and < 1e7 us")
    return tuple(gaps)


def _sizes(text: str) -> tuple[int, ...]:
    """Burst sizes: whole numbers 1..:data:`twin.testbed.client.MAX_BURST`, comma-separated."""
    from twin.testbed.client import MAX_BURST

    parts = [x.strip() for x in text.split(",")]
    if not all(x.isdigit() for x in parts):
        raise argparse.ArgumentTypeError(
            f"{text!r}: expected whole numbers >= 1 separated by commas, like 1,4,16"
        )
    sizes = tuple(int(x) for x in parts)
    if not all(1 <= n <= MAX_BURST for n in sizes):
        raise argparse.ArgumentTypeError(f"{text!r}: burst sizes must be 1..{MAX_BURST}")
    return sizes


def _probe_sizes(text: str) -> tuple[int, ...]:
    """Burst sizes of the campaign's probe, or ``none`` (no probe)."""
    return () if text.strip().lower() == "none" else _sizes(text)


def _endpoint(text: str) -> tuple[str, int]:
    host, _, port = text.rpartition(":")
    if not host or not port.isdigit():
        raise argparse.ArgumentTypeError(f"{text!r}: expected HOST:PORT")
    return host, int(port)


def cmd_serve(args: argparse.Namespace) -> int:
    from twin.testbed.gateway import GatewayLimits, run_gateway

    limits = {
        "max_per_source": args.max_per_source,
        "handshake_timeout_s": args.handshake_timeout,
        "idle_timeout_s": args.idle_timeout,
        "max_open_orders": args.max_open_orders,
    }
    given = {k: v for k, v in limits.items() if v is not None}  # else the gateway's defaults
    stats = run_gateway(args.host, args.port, drain_s=args.drain, limits=GatewayLimits(**given))
    print(f"twin testbed: stopped; {stats}", file=sys.stderr)
    return 0


LOCAL_TIERS = TESTBED_TIERS


def _load_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--connections", type=positive_int, default=4, metavar="C")
    p.add_argument(
        "--duration", type=positive_float, default=5.0, metavar="S", help="measured seconds"
    )
    p.add_argument("--warmup", type=float, default=1.0, metavar="S", help="unrecorded seconds")
    p.add_argument("--loop", type=Loop, choices=tuple(Loop), default=Loop.OPEN)
    p.add_argument("--arrivals", type=Arrivals, choices=tuple(Arrivals), default=Arrivals.POISSON)
    p.add_argument("--seed", type=seed, default=1)
    p.add_argument("--topology", type=Tier, choices=LOCAL_TIERS, default=Tier.LOOPBACK)
    p.add_argument("--out", required=True, type=output_folder, metavar="DIR")


def _run_options(args: argparse.Namespace) -> dict[str, Any]:
    """The load options shared by one measurement and a campaign."""
    return {
        "connections": args.connections,
        "duration_s": args.duration,
        "warmup_s": args.warmup,
        "topology": args.topology,
        "loop": args.loop,
        "arrivals": args.arrivals,
        "seed": args.seed,
    }


def cmd_load(args: argparse.Namespace) -> int:
    from twin.testbed.campaign import measure
    from twin.testbed.client import LoadConfig, LoadRun

    if args.burst_sizes and args.loop != Loop.OPEN:
        raise ConfigError("--burst-sizes needs the open loop (--loop open)")
    if args.connect is None:
        summary = measure(
            Path(args.out),
            rate_msgs_per_s=args.rate,
            burst_sizes=args.burst_sizes,
            **_run_options(args),
        )
    else:
        host, port = args.connect
        cfg = LoadConfig(
            host=host,
            port=port,
            rate_msgs_per_s=args.rate,
            connections=args.connections,
            duration_s=args.duration,
            warmup_s=args.warmup,
            loop=args.loop,
            arrivals=args.arrivals,
            seed=args.seed,
            gateway_pid=args.gateway_pid,
            burst_sizes=args.burst_sizes,
        )
        summary = LoadRun(cfg, args.out).run()
    rtt = summary.rtt_us
    print(
        json.dumps(
            {
                "achieved_msgs_per_s": summary.achieved_msgs_per_s,
                "lost": summary.lost,
                "p50_us": rtt.get("p50"),
                "p99_us": rtt.get("p99"),
            }
        )
    )
    return 0


def cmd_campaign(args: argparse.Namespace) -> int:
    from twin.testbed.campaign import campaign
    from twin.testbed.processes import sigterm_unwinds

    def progress(row: dict[str, Any]) -> None:
        print(campaign_row_text(row), file=sys.stderr, flush=True)

    with sigterm_unwinds():
        result = campaign(
            Path(args.out),
            args.rates,
            repeats=args.repeats,
            probe_bursts=args.probe_bursts,
            progress=progress,
            **_run_options(args),
        )
    saturation = result["saturation_msgs_per_s"]
    held = "none" if saturation is None else f"{saturation:,.0f} msg/s"
    print(f"saturation (the highest rate that held): {held}; {Path(args.out) / 'campaign.json'}")
    return 0


def campaign_row_text(row: dict[str, Any]) -> str:
    """A campaign's progress row as one readable line (``campaign.json`` keeps every digit):
    numbers to a sensible precision, not 17-digit JSON."""
    parts = []
    for key, value in row.items():
        if isinstance(value, bool) or value is None:
            parts.append(f"{key} {value}")
        elif isinstance(value, float):
            parts.append(f"{key} {value:,.4g}" if abs(value) < 1000 else f"{key} {value:,.0f}")
        elif isinstance(value, int):
            parts.append(f"{key} {value:,}")
        elif isinstance(value, dict | list):
            parts.append(f"{key} {json.dumps(_rounded(value))}")
        else:
            parts.append(f"{key} {value}")
    return "campaign: " + ", ".join(parts)


def _rounded(value: Any) -> Any:
    if isinstance(value, float):
        return float(f"{value:.4g}")
    if isinstance(value, dict):
        return {k: _rounded(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_rounded(v) for v in value]
    return value


def cmd_relay(args: argparse.Namespace) -> int:
    from twin.testbed.relay import RelayDelay, run_relay

    delay = RelayDelay(args.delay_floor_us, args.delay_mean_us, args.spin_us)
    stats = Path(args.stats) if args.stats else None
    run_relay(args.listen, args.to, args.protocol, delay, stats, seed=args.seed)
    return 0


def cmd_cluster(args: argparse.Namespace) -> int:
    from twin.testbed.cluster import check_cluster_lab, run_cluster_lab
    from twin.testbed.wakeprobe import CLUSTER_GAPS_US, write_probe

    check_cluster_lab(args.layout, args.rates, args.duration, args.kill_leader_at)
    if args.probe_burst:
        # The host's wake-up cold start beside the runs (its time constant: the model's).
        Path(args.out).mkdir(parents=True, exist_ok=True)
        write_probe(
            Path(args.out) / "wakeprobe.json",
            gaps_us=CLUSTER_GAPS_US,
            samples=args.wake_samples,
            seed=args.seed,
        )
    for layout in args.layout:
        summary = run_cluster_lab(
            layout,
            args.rates,
            args.duration,
            Path(args.out),
            args.kill_leader_at,
            args.seed,
            args.probe_burst,
        )
        for rate, run in summary["runs"].items():
            rtt = run["rtt_us"]
            p50, p99 = rtt.get("p50", float("nan")), rtt.get("p99", float("nan"))
            print(
                f"{layout:4s} {rate:>12s}  achieved {run['achieved_per_s']:8.1f}/s  "
                f"p50 {p50:9.1f} us  p99 {p99:9.1f} us  errors {sum(run['errors'].values())}  "
                f"longest gap {run['longest_gap_ms']:.1f} ms"
            )
    return 0


def cmd_cluster_predict(args: argparse.Namespace) -> int:
    from calibration.cluster import predict
    from twin.atomic import write_json

    result = predict(Path(args.corpus), seed=args.seed)
    if args.json_out:
        write_json(Path(args.json_out), result)
    if args.json:
        print(json.dumps(result))
        return 0
    print(f"calibrated on {result['calibrated_on']}; within the goal: {result['within_goal']}")
    for r in result["rows"]:
        print(
            f"{r['layout']:4s} {r['rate_per_s']:7g}/s  load {r['load_share']:4.0%}  "
            f"p50 {r['measured_p50_us']:9.0f} -> {r['predicted_p50_us']:9.0f} us "
            f"({r['error_p50_pct']:+.0f}%)  p99 {r['measured_p99_us']:9.0f} -> "
            f"{r['predicted_p99_us']:9.0f} us ({r['error_p99_pct']:+.0f}%)"
        )
    for o in result["outages"]:
        print(
            f"{o['layout']:4s} leader loss: outage {o['measured_ms']:,.0f} ms measured, "
            f"{o['predicted_min_ms']:,.0f}..{o['predicted_max_ms']:,.0f} ms predicted"
        )
    return 0


def cmd_cluster_load(args: argparse.Namespace) -> int:
    from twin.testbed.etcd_load import run_load

    kill = None
    if args.kill_at is not None:
        kill = (args.kill_at, tuple(int(p) for p in args.kill_pids.split(",") if p))
    summary = run_load(
        args.target,
        args.rate,
        args.duration,
        Path(args.out),
        seed=args.seed,
        kill=kill,
        burst=args.burst,
    )
    print(json.dumps(summary))
    return 0


def cmd_wakeprobe(args: argparse.Namespace) -> int:
    from statistics import median

    from calibration.halt import GapOrder
    from twin.testbed.wakeprobe import (
        DEFAULT_GAPS_US,
        HALT_GAPS_US,
        STEADY_GAPS_US,
        Waiter,
        write_probe,
    )

    waiter, order = Waiter(args.waiter), GapOrder(args.order)
    gaps: tuple[float, ...]
    if args.gaps is not None:
        gaps = args.gaps
    elif order == GapOrder.STEADY:
        gaps = STEADY_GAPS_US
    else:
        gaps = HALT_GAPS_US if waiter == Waiter.SPINS else DEFAULT_GAPS_US
    result = write_probe(
        Path(args.out),
        gaps_us=gaps,
        samples=args.samples,
        seed=args.seed,
        busy=args.busy,
        waiter=waiter,
        order=order,
    )
    for gap, p in result["percentiles_us"].items():
        idle = median(result["idle_us"][gap])
        print(
            f"gap {float(gap):>8,.0f} us (slept {idle:>8,.1f}): "
            + "  ".join(f"{k} {v:7.1f}" for k, v in p.items())
            + f"  cpu {result['cpu_median_us'][gap]:6.1f}"
        )
    return 0


def cmd_slices(args: argparse.Namespace) -> int:
    from twin.testbed.slices import write_slices

    result = write_slices(Path(args.out), samples=args.samples)
    for share in result["shares"]:
        spin, alone = result["spinner"][str(share)], result["alone"][str(share)]
        print(
            f"share {share:.2f}: waited for a slice {spin['waited']:.1%} beside the spinner "
            f"(mean {spin.get('wait_mean_us', 0.0):,.0f} us), {alone['waited']:.1%} alone; "
            f"p50 {spin['p50_us']:.1f} us, p99 {spin['p99_us']:,.1f} us"
        )
    print(f"wrote {args.out}")
    return 0


def cmd_syscalls(args: argparse.Namespace) -> int:
    from twin.testbed.syscalls import write_syscalls

    out = Path(args.out)
    result = write_syscalls(out, samples=args.samples, payload=args.payload)
    for name, t in result["transports"].items():
        reads = "  ".join(f"{k}: {us:.2f}" for k, us in t["recv_us"].items())
        print(
            f"{name}: send {t['send_us']:.2f} us a message, poll {t['poll_us']:.2f} us, "
            f"recv by messages waiting {reads} us"
        )
    print(
        f"a TCP server's calls for one message paid per read: {result['per_read_share']:.2f} "
        f"(the clock's own {result['clock_us']:.2f} us taken off each part)"
    )
    print(f"wrote {out}")
    return 0


def cmd_hiccups(args: argparse.Namespace) -> int:
    import numpy as np

    from calibration.hiccups import HICCUP_MIN_US, summarize
    from twin.testbed.hiccups import Mode, write_hiccups

    out = Path(args.out)
    mode = Mode.ALONE if args.alone else Mode.TOGETHER
    result = write_hiccups(out, seconds=args.seconds, threshold_us=args.threshold_us, mode=mode)
    for cpu in result["cpus"]:
        print(
            f"vCPU {cpu['cpu']}: {len(cpu['gaps_us'])} gaps of {args.threshold_us:g} us or more "
            f"in {cpu['spun_s']:.1f} s, steal {cpu['steal_pct']:.2f}%"
        )
    summary = summarize([out])
    lengths = summary.lengths_us
    if len(lengths):
        p50, p99 = (float(x) for x in np.percentile(lengths, [50, 99]))
        spun = "each alone, the others idle" if mode == Mode.ALONE else "all spinning at once"
        print(
            f"hiccups ({HICCUP_MIN_US:g} us or more, {spun}): "
            f"{summary.rate_per_s:.1f} a second a vCPU, "
            f"{100 * summary.share:.2f}% of the time, p50 {p50:.0f} us, p99 {p99:.0f} us, "
            f"longest {lengths.max():.0f} us"
        )
    else:
        print(f"no hiccup of {HICCUP_MIN_US:g} us or more")
    print(f"wrote {out}")
    return 0


def cmd_repeat(args: argparse.Namespace) -> int:
    from twin.testbed.processes import sigterm_unwinds
    from twin.testbed.repeat import RepeatPlan, case_lines, run_repeat

    given = {
        "tool": None if args.tool is None else Tool(args.tool),
        "protocol": None if args.protocol is None else Transport(args.protocol),
        "connections": args.connections,
        "route": None if args.route is None else Route(args.route),
        "rates": None if args.rates is None else tuple(args.rates),
        "durations_s": None if args.durations is None else tuple(args.durations),
        "runs": args.runs,
        "subset": args.subset,
    }
    plan = RepeatPlan(**{k: v for k, v in given.items() if v is not None})
    command = "twin testbed repeat " + " ".join(sys.argv[3:])
    with sigterm_unwinds():
        result = run_repeat(
            Path(args.out), plan, command, lambda line: print(line, file=sys.stderr, flush=True)
        )
    for line in case_lines(result):
        print(line)
    print(f"wrote {plan.result_path(Path(args.out))}")
    return 0


def cmd_lab(args: argparse.Namespace) -> int:
    from dataclasses import replace

    from twin.testbed.lab import QUICK, LabPlan, run_lab
    from twin.testbed.processes import sigterm_unwinds

    plan = QUICK if args.quick else LabPlan()
    if args.repeats is not None:
        plan = replace(plan, repeats=args.repeats)
    if args.duration is not None:
        plan = replace(plan, duration_s=args.duration)
    if args.calibration_duration is not None:
        plan = replace(plan, calibration_duration_s=args.calibration_duration)
    if args.steal_retries is not None:
        plan = replace(plan, steal_retries=args.steal_retries)
    if args.testbed_only:
        plan = replace(plan, sockperf_routes=())
    if args.sockperf_only:
        plan = replace(plan, topologies=())
    command = "twin testbed lab " + " ".join(sys.argv[3:])
    with sigterm_unwinds():
        result = run_lab(
            Path(args.out), plan, command, lambda line: print(line, file=sys.stderr, flush=True)
        )
    points = sum(len(s["points"]) for s in result["systems"])
    print(f"{args.out}: {len(result['systems'])} systems, {points} points")
    return 0


def cmd_feed(args: argparse.Namespace) -> int:
    require("orjson", Extra.TESTBED, "the feed")
    from twin.testbed.feed import FeedConfig, measure_feed
    from twin.testbed.feed_client import STAGES

    config = FeedConfig(
        rate_msgs_per_s=args.rate,
        bursts=args.burst,
        duration_s=args.duration,
        warmup_s=args.warmup,
        fault_every=args.fault_every,
    )
    summary = measure_feed(config, Path(args.out))
    print(f"{'stage':14s} {'p50 us':>9s} {'p99 us':>9s} {'max us':>10s}")
    for stage in STAGES:
        s = summary["stages_us"][stage]
        if s.get("count"):
            print(f"{stage:14s} {s['p50']:9.1f} {s['p99']:9.1f} {s['max']:10.1f}")
    counts = summary["counts"]
    print(
        f"{counts['recorded']:,} messages recorded in {summary['messages_per_read']['reads']:,} "
        f"reads; bad input: {counts['json_errors']} JSON, {counts['frame_errors']} frame, "
        f"{counts['tls_errors']} TLS ({counts['reconnects']} reconnects); results in {args.out}"
    )
    return 0


def cmd_feed_lab(args: argparse.Namespace) -> int:
    require("orjson", Extra.TESTBED, "the feed")
    from twin.testbed.feed import feed_lab

    measured = feed_lab(Path(args.out))
    print(f"twin testbed feed-lab: {len(measured)} runs measured into {args.out}")
    return 0


def cmd_feed_predict(args: argparse.Namespace) -> int:
    from calibration.feed import COMPARED, accuracy, fit_pipeline, predict_run

    lab = Path(args.lab)
    model = fit_pipeline(lab / "calibration")
    targets = sorted(p for p in lab.iterdir() if p.is_dir() and p.name != "calibration")
    predictions = [predict_run(model, target, lab / "calibration") for target in targets]
    summary = accuracy(predictions)
    result = {"calibration": str(lab / "calibration"), "runs": predictions, "accuracy": summary}
    if args.json_out:
        write_json(Path(args.json_out), result)
    print(f"{'run':9s} {'stage':13s} {'p50 meas':>9s} {'pred':>7s} {'err':>6s} "
          f"{'p99 meas':>9s} {'pred':>7s} {'err':>6s}")  # fmt: skip
    for run in predictions:
        for stage in COMPARED:
            st = run["stages"][stage]
            cells = [
                f"{st[f'{q}_measured_us']:9.1f} {st[f'{q}_predicted_us']:7.1f} "
                f"{st[f'{q}_error']:+6.0%}"
                for q in ("p50", "p99")
            ]
            print(f"{run['run']:9s} {stage:13s} " + " ".join(cells))
    a = summary
    print(
        f"median |error|: p50 {a['p50_median_abs_error']:.0%}, "
        f"p99 {a['p99_median_abs_error']:.0%}; {a['within_goal_share']:.0%} of {a['pairs']} "
        "(run, stage) pairs within p50 15% and p99 25%"
        + (
            f"; overloaded, left out: {', '.join(a['overloaded_runs'])}"
            if a["overloaded_runs"]
            else ""
        )
    )
    return 0


def cmd_predict(args: argparse.Namespace) -> int:
    from calibration.testbed import fit as predict
    from twin.scenario import load_scenario

    scenario = load_scenario(args.scenario)
    result = predict.predict_campaign(scenario, args.campaign)
    profile = result["profile"]
    if args.veth_campaign:
        veth = Path(args.veth_campaign)
        rows = read_json(veth / "campaign.json")["rows"]
        veth_scenario = load_scenario(args.veth_scenario)
        # Named without the directory: the profile's provenance check reads any word with
        # two underscores as a parameter or published-row id.
        summary, _ = predict.calibration_summary(veth, rows, "the veth campaign's")
        profile, _ = predict.fit_veth(
            veth_scenario,
            profile,
            summary,
            f"the veth campaign's lowest rate, "
            f"{int(summary.conditions.rate_msgs_per_s)} msg/s (docs/testbed.md)",
        )
        result["veth_table"] = predict.prediction_table(veth_scenario, profile, rows)
    if args.profile_out:
        shipped = load_profile(resolve_profile_path("local"))
        write_profile(
            predict.with_description(
                predict.completed(profile, shipped),
                "The live testbed on a 2-vCPU host (twin testbed): client and gateway threads "
                "that sleep when idle. CPU per message, work spread, background and wake-up "
                "spread measured; marginal and per-wake-up work (burst probe), cold starts, "
                "kernel path and wake-up latency fitted; on the lowest rate only (the median "
                "of its repeats).",
            ),
            args.profile_out,
            predict.LOCAL_PROFILE_HEADER,
        )
    if args.json_out:
        write_json(
            Path(args.json_out),
            {key: value for key, value in result.items() if key != "profile"},
        )
    print(f"calibrated on {result['calibration_rate_msgs_per_s']:.0f} msg/s")
    print(predict.format_table(result["table"]))
    print("orders and cancels apart (measured / predicted, us):")
    print(predict.format_kind_table(result["table"]))
    if "veth_table" in result:
        print("veth:")
        print(predict.format_table(result["veth_table"]))
    print(saturation_line(result))
    return 0


def saturation_line(result: dict[str, Any]) -> str:
    """The campaign's saturation against the prediction, in words: a campaign whose rates all
    held measured no saturation, only that it lies above the highest rate tried."""
    measured = result["measured_saturation_msgs_per_s"]
    predicted = f"predicted {result['predicted_saturation_msgs_per_s']:,.0f} msg/s"
    if measured is None:
        return f"saturation: every rate tried saturated (none held); {predicted}"
    if not result.get("saturation_reached", True):
        return (
            f"saturation: not reached (every rate tried held, up to {measured:,.0f} msg/s: "
            f"saturation is above it); {predicted}"
        )
    return f"saturation: measured {measured:,.0f} msg/s (the highest rate that held); {predicted}"


def add_parser(sub: Any) -> argparse.ArgumentParser:
    """Register ``testbed`` and its subcommands on the ``twin`` subparsers."""
    parser = sub.add_parser(
        "testbed", help="a real TCP exchange gateway and load client on this machine"
    )
    tsub = parser.add_subparsers(dest="testbed_command", required=True)

    p = tsub.add_parser("serve", help="run the exchange gateway until SIGTERM")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=9000, help="0 picks a free port (printed)")
    p.add_argument("--drain", type=float, default=2.0, metavar="S", help="flush time on SIGTERM")
    p.add_argument(
        "--max-per-source",
        type=positive_int,
        metavar="N",
        help="connections one source address may hold, more are refused (default 256)",
    )
    p.add_argument(
        "--handshake-timeout",
        type=positive_float,
        metavar="S",
        help="close a connection that sends no whole frame within S seconds (default 5)",
    )
    p.add_argument(
        "--idle-timeout",
        type=positive_float,
        metavar="S",
        help="close a connection silent for S seconds (default 60)",
    )
    p.add_argument(
        "--max-open-orders",
        type=positive_int,
        metavar="N",
        help="resting orders one source address may hold per symbol; more are rejected "
        "(default 4096: a quarter of the book over the 4 symbols)",
    )
    p.set_defaults(run=cmd_serve)

    p = tsub.add_parser("load", help="run the order loop at a rate; write HDR files + summary")
    p.add_argument("--rate", type=float, required=True, metavar="MSGS_PER_S")
    p.add_argument(
        "--connect",
        type=_endpoint,
        metavar="HOST:PORT",
        help="an already running gateway (default: start one for this run)",
    )
    p.add_argument("--gateway-pid", type=int, default=None, help=argparse.SUPPRESS)
    p.add_argument(
        "--burst-sizes",
        type=_sizes,
        default=(),
        metavar="N1,N2,...",
        help="burst probe: start cycles in groups of these sizes, in turn, all of a group at "
        "once over the connections (same mean rate; open loop; default: one at a time)",
    )
    _load_options(p)
    p.set_defaults(run=cmd_load)

    p = tsub.add_parser("campaign", help="measure a series of rates up to saturation")
    p.add_argument("--rates", type=_rates, required=True, metavar="R1,R2,...")
    p.add_argument(
        "--repeats",
        type=positive_int,
        default=1,
        metavar="N",
        help="measure every rate N times, interleaved (report medians and spread)",
    )
    p.add_argument(
        "--probe-bursts",
        type=_probe_sizes,
        default=DEFAULT_PROBE_BURSTS,
        metavar="N1,N2,...|none",
        help="after the rates, one burst-probe run at the lowest rate with these group sizes "
        "into DIR/rate_<lowest>/burst/ (warm batches of known sizes for the calibration; "
        f"default {','.join(map(str, DEFAULT_PROBE_BURSTS))}; none: no probe)",
    )
    _load_options(p)
    p.set_defaults(run=cmd_campaign)

    p = tsub.add_parser(
        "cluster",
        help="a real consensus cluster: three etcd members in network namespaces, open-loop "
        "writes at each rate, optionally the leader's loss",
    )
    p.add_argument(
        "--layout",
        type=lambda t: [x for x in t.split(",") if x],
        default=["cpg"],
        metavar="cpg,3az",
        help="cpg: members joined directly; 3az: a delaying relay on every peer link",
    )
    p.add_argument("--rates", type=_rates, required=True, metavar="R1,R2,...")
    p.add_argument("--duration", type=float, default=10.0, metavar="S")
    p.add_argument("--kill-leader-at", type=float, metavar="S", help="also a leader-loss run")
    p.add_argument(
        "--probe-burst",
        type=non_negative_int,
        default=DEFAULT_CLUSTER_PROBE_BURST,
        metavar="K",
        help="also a run at the lowest rate with the writes in bursts of K, into "
        "DIR/<layout>/probe, and the host's wake-up probe, into DIR/wakeprobe.json (both needed "
        f"by cluster-predict; default {DEFAULT_CLUSTER_PROBE_BURST}; 0: neither)",
    )
    p.add_argument(
        "--wake-samples",
        type=positive_int,
        default=WAKE_SAMPLES,
        metavar="N",
        help=f"the wake-up probe's samples per gap (default {WAKE_SAMPLES}; its longest gap is "
        "100 ms)",
    )
    p.add_argument("--out", required=True, type=output_folder, metavar="DIR")
    p.add_argument("--seed", type=seed, default=1)
    p.set_defaults(run=cmd_cluster)

    p = tsub.add_parser(
        "cluster-predict",
        help="calibrate the twin's cluster model on the lab's lowest-rate cpg run, predict the "
        "other runs and the leader's loss",
    )
    p.add_argument("corpus", metavar="DIR", help="a twin testbed cluster --out folder")
    p.add_argument(
        "--json-out", type=output_file, metavar="PATH", help="also write the JSON object to PATH"
    )
    p.add_argument("--json", action="store_true", help="print exactly one JSON object")
    p.add_argument("--seed", type=seed, default=1)
    p.set_defaults(run=cmd_cluster_predict)

    p = tsub.add_parser("cluster-load", help="(internal) the cluster lab's open-loop write load")
    p.add_argument("--target", type=_endpoint, required=True, metavar="HOST:PORT")
    p.add_argument("--rate", type=float, required=True)
    p.add_argument("--duration", type=float, required=True)
    p.add_argument("--out", required=True, type=output_folder, metavar="DIR")
    p.add_argument("--seed", type=seed, default=1)
    p.add_argument("--kill-at", type=float, metavar="S", help="SIGKILL --kill-pids at S")
    p.add_argument("--kill-pids", default="", metavar="PID,PID")
    p.add_argument("--burst", type=positive_int, default=1, metavar="K")
    p.set_defaults(run=cmd_cluster_load)

    p = tsub.add_parser(
        "relay", help="a delaying UDP/TCP relay: a userspace stand-in for one fabric hop"
    )
    p.add_argument("--listen", type=_endpoint, required=True, metavar="HOST:PORT")
    p.add_argument("--to", type=_endpoint, required=True, metavar="HOST:PORT")
    p.add_argument("--protocol", choices=("udp", "tcp"), default="udp")
    p.add_argument("--delay-floor-us", type=float, default=20.0, metavar="US")
    p.add_argument("--delay-mean-us", type=float, default=10.0, metavar="US")
    p.add_argument(
        "--spin-us",
        type=float,
        default=float("inf"),
        metavar="US",
        help="sleep until this long before a held message is due, then spin (default: spin)",
    )
    p.add_argument("--stats", metavar="PATH", help="write the relay's measured cost (JSON)")
    p.add_argument("--seed", type=seed, default=1)
    p.set_defaults(run=cmd_relay)

    p = tsub.add_parser(
        "wakeprobe", help="how long a thread that slept for a gap takes to run again, per gap"
    )
    p.add_argument(
        "--out", required=True, type=output_file, metavar="FILE", help="the result (JSON)"
    )
    p.add_argument(
        "--samples", type=positive_int, default=WAKE_SAMPLES, metavar="N", help="per gap"
    )
    p.add_argument("--seed", type=seed, default=1)
    p.add_argument(
        "--busy",
        type=non_negative_int,
        default=0,
        metavar="N",
        help="processes spinning during the probe (cores kept awake; default 0)",
    )
    p.add_argument(
        "--waiter",
        choices=PROBE_WAITERS,
        default=PROBE_WAITERS[0],
        help="how the sender waits for each reply: blocks (default), or spins so the receiver "
        "sleeps only the gap (short gaps: when an idle vCPU halts)",
    )
    p.add_argument(
        "--order",
        choices=PROBE_ORDERS,
        default=PROBE_ORDERS[0],
        help="shuffled gaps (default), or steady: each gap's samples in one run after a warm-up, "
        "gaps around 200 us (how long the hypervisor polls a halted vCPU)",
    )
    p.add_argument(
        "--gaps",
        type=_gaps,
        metavar="US,US,...",
        help="the gaps (us) instead of the waiter's and order's defaults",
    )
    p.set_defaults(run=cmd_wakeprobe)

    p = tsub.add_parser(
        "hiccups", help="how often a running thread loses its vCPU, and for how long, per vCPU"
    )
    p.add_argument(
        "--out", required=True, type=output_file, metavar="FILE", help="the result (JSON)"
    )
    p.add_argument("--seconds", type=positive_float, default=HICCUP_SECONDS, metavar="S")
    p.add_argument(
        "--threshold-us",
        type=positive_float,
        default=HICCUP_THRESHOLD_US,
        metavar="US",
        help="the shortest gap recorded",
    )
    p.add_argument(
        "--alone",
        action="store_true",
        help="each vCPU spins in turn while the others idle (S shared among them); "
        "default: all at once",
    )
    p.set_defaults(run=cmd_hiccups)

    p = tsub.add_parser(
        "syscalls",
        help="what a server's socket calls cost here: send a message, poll, recv by messages "
        "waiting (TCP and UDP loopback)",
    )
    p.add_argument(
        "--out", required=True, type=output_file, metavar="FILE", help="the result (JSON)"
    )
    p.add_argument(
        "--samples",
        type=positive_int,
        default=SYSCALL_SAMPLES,
        metavar="N",
        help="rounds per number of messages waiting",
    )
    p.add_argument(
        "--payload", type=positive_int, default=SYSCALL_PAYLOAD, metavar="BYTES", help="a message"
    )
    p.set_defaults(run=cmd_syscalls)

    p = tsub.add_parser(
        "slices",
        help="how often a thread sharing its vCPU with a spinning one waits for a time slice, "
        "by its own use of that vCPU",
    )
    p.add_argument(
        "--out", required=True, type=output_file, metavar="FILE", help="the result (JSON)"
    )
    p.add_argument(
        "--samples", type=positive_int, default=SLICE_SAMPLES, metavar="N", help="per share"
    )
    p.set_defaults(run=cmd_slices)

    p = tsub.add_parser(
        "repeat",
        help="how far one load point's runs repeat on this host, by run length: the share of "
        "the matrix's goal any model can meet (resumes)",
    )
    p.add_argument("--out", required=True, type=output_folder, metavar="DIR")
    # Unset options take twin.testbed.repeat.RepeatPlan's defaults.
    p.add_argument("--tool", choices=[str(t) for t in Tool], help="default sockperf")
    p.add_argument(
        "--protocol", choices=[str(t) for t in Transport],
        help="default udp for sockperf, tcp for the testbed (its only one)",
    )  # fmt: skip
    p.add_argument("--route", choices=[str(r) for r in Route], help="default loopback")
    p.add_argument(
        "--connections", type=positive_int, metavar="N", help="the testbed's (default 1)"
    )
    p.add_argument("--rates", type=_rates, metavar="R1,R2,...", help="default 5000,20000")
    p.add_argument(
        "--durations", type=_durations, metavar="S1,S2,...",
        help="seconds a run, each rate measured with runs of each length (default 2,10)",
    )  # fmt: skip
    p.add_argument("--runs", type=positive_int, metavar="N", help="of each case (default 12)")
    p.add_argument(
        "--subset", type=positive_int, metavar="K",
        help="runs a point's measurement is the median of, the lab's repeats (default 3)",
    )  # fmt: skip
    p.set_defaults(run=cmd_repeat)

    p = tsub.add_parser(
        "lab",
        help="measure the load-response corpus: the testbed and sockperf across load (resumes)",
    )
    p.add_argument("--out", default="calibration/data/load", type=output_folder, metavar="DIR")
    p.add_argument("--quick", action="store_true", help="a small plan (tests, a first look)")
    p.add_argument("--repeats", type=positive_int, metavar="N", help="override the plan's")
    p.add_argument("--duration", type=positive_float, metavar="S", help="seconds per run")
    p.add_argument(
        "--calibration-duration",
        type=positive_float,
        metavar="S",
        help="seconds per run of each system's calibration point and burst probe",
    )
    p.add_argument(
        "--steal-retries",
        type=non_negative_int,
        metavar="N",
        help="measure a run again, up to N times, while its host lost more of its time to "
        f"steal than the matrix counts as stolen (default {STEAL_RETRIES}; --quick: 0)",
    )
    only = p.add_mutually_exclusive_group()
    only.add_argument(
        "--testbed-only",
        action="store_true",
        help="the project's testbed systems alone (no sockperf)",
    )
    only.add_argument(
        "--sockperf-only",
        action="store_true",
        help="the sockperf systems alone (no testbed)",
    )
    p.set_defaults(run=cmd_lab)

    p = tsub.add_parser(
        "feed", help="time a trading engine's inbound pipeline on a TLS WebSocket JSON feed"
    )
    p.add_argument("--rate", type=positive_float, required=True, metavar="MSGS_PER_S")
    p.add_argument(
        "--burst", type=_sizes, default=(1,), metavar="N[,N...]",
        help="messages per write; several sizes are cycled (a calibration run)",
    )  # fmt: skip
    p.add_argument("--duration", type=positive_float, default=5.0, metavar="S")
    p.add_argument("--warmup", type=float, default=1.0, metavar="S")
    p.add_argument(
        "--fault-every", type=int, default=0, metavar="N",
        help="every N-th burst carries bad input (invalid JSON, a truncated frame, a broken TLS "
        "record, in turn); 0: none",
    )  # fmt: skip
    p.add_argument("--out", required=True, type=output_folder, metavar="DIR")
    p.set_defaults(run=cmd_feed)

    p = tsub.add_parser(
        "feed-lab", help="measure the feed's calibration run and the runs it predicts (resumes)"
    )
    p.add_argument("--out", default="calibration/data/feed", type=output_folder, metavar="DIR")
    p.set_defaults(run=cmd_feed_lab)

    p = tsub.add_parser(
        "feed-predict", help="calibrate the inbound pipeline on the lab's one run, predict the rest"
    )
    p.add_argument("--lab", default="calibration/data/feed", metavar="DIR")
    p.add_argument(
        "--json-out", type=output_file, metavar="FILE", help="also write the comparison as JSON"
    )
    p.set_defaults(run=cmd_feed_predict)

    p = tsub.add_parser(
        "predict", help="calibrate on a campaign's lowest rate, predict the rest (and saturation)"
    )
    p.add_argument("--campaign", required=True, metavar="DIR")
    p.add_argument("--scenario", default=str(scenarios_dir() / "local_loopback.toml"))
    p.add_argument(
        "--veth-campaign", metavar="DIR", help="also fit local_veth_us on its lowest rate"
    )
    p.add_argument("--veth-scenario", default=str(scenarios_dir() / "local_veth.toml"))
    p.add_argument(
        "--profile-out", type=output_file, metavar="PATH", help="write the fitted profile (TOML)"
    )
    p.add_argument(
        "--json-out",
        type=output_file,
        metavar="PATH",
        help="write the prediction tables and saturation rates (JSON; docs/testbed.md reads it)",
    )
    p.set_defaults(run=cmd_predict)
    return parser
