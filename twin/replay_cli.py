"""The ``twin replay`` subcommand: an order flow (or a rate trace) through a scenario's path.

``twin replay SCENARIO (--orders FILE | --rate-trace FILE) --out DIR [--engine fast|des]
[--seed N] [--profile P] [--set f=v ...] [--export hftbacktest|nautilus ...] [--json]``
writes ``DIR/replay.parquet`` and ``DIR/summary.json`` (:mod:`twin.replay_run`); a rerun into
the same folder continues an interrupted fast-engine replay. Heavy libraries are imported
inside the command, so ``twin --help`` stays light. Bad input is one line, exit 2, nothing
written (the flow file is read and checked before the folder is touched).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from twin.argtypes import add_set_argument, output_folder, seed

EXIT_OK = 0
EXPORTS = ("hftbacktest", "nautilus")


def _progress_bar() -> Any:
    """A tqdm bar (percent of the requests answered) on stderr, only on a terminal and only
    once the replay has taken a few seconds, as ``twin run``'s."""
    from tqdm import tqdm

    return tqdm(
        total=100.0,
        unit="% of requests",
        file=sys.stderr,
        disable=not sys.stderr.isatty(),
        delay=3.0,
        leave=False,
        bar_format="{l_bar}{bar}| {n:.1f}/{total:.0f} {unit} [{elapsed}<{remaining}]",
    )


def cmd_replay(args: argparse.Namespace) -> int:
    from twin.flow import rate_trace_arrivals
    from twin.flowfile import read_order_flow, read_rate_trace
    from twin.jsontext import dumps
    from twin.replay_run import Flow, check_replayable, replay_to_folder
    from twin.scenario import load_scenario
    from twin.simulation import apply_overrides, prepare, what_if

    scenario = what_if(load_scenario(args.scenario), args.profile, args.set)
    scenario = apply_overrides(scenario, seed=args.seed)
    connections = scenario.workload.accounts
    if args.orders is not None:
        order_flow = read_order_flow(args.orders, connections)
        flow = Flow(
            order_flow.arrivals, order_flow.send_ns, order_flow.payload_bytes, order_flow.source
        )
    else:
        start_us, rate = read_rate_trace(args.rate_trace)
        arrivals = rate_trace_arrivals(
            start_us, rate, connections, scenario.workload.seed, str(args.rate_trace)
        )
        flow = Flow.from_arrivals(arrivals, str(args.rate_trace))
    prepared = prepare(scenario)
    check_replayable(prepared)
    out_dir = Path(args.out)
    with _progress_bar() as bar:

        def progress(fraction: float) -> None:
            bar.update(100.0 * fraction - bar.n)

        summary = replay_to_folder(prepared, flow, out_dir, args.engine, progress)
    for export in args.export or ():
        from twin import backtest_export

        written = backtest_export.export(export, out_dir)
        summary.setdefault("exports", {})[export] = [str(p) for p in written]
    if args.json:
        print(dumps(summary))
    else:
        rtt, lag1 = summary["rtt_us"], summary["rtt_lag1_autocorrelation"]
        print(
            f"{summary['scenario']}: {summary['requests']:,} requests, "
            f"{summary['rejected']:,} rejected; rtt p50 {rtt['p50']:.1f} us, "
            f"p99 {rtt['p99']:.1f} us, p99.9 {rtt['p99_9']:.1f} us; lag-1 autocorrelation "
            f"{'-' if lag1 is None else f'{lag1:.3f}'}",
        )
        print(f"wrote {out_dir / 'replay.parquet'}", file=sys.stderr)
    return EXIT_OK


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "replay", help="replay an order flow (or a rate trace) through a scenario, per request"
    )
    p.add_argument("scenario", metavar="SCENARIO.toml")
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument(
        "--orders",
        metavar="FILE",
        help="CSV or Parquet, one row per request: send_ns, kind (new|cancel|modify), "
        "optional account or connection, payload_bytes",
    )
    source.add_argument(
        "--rate-trace",
        metavar="FILE",
        help="CSV or Parquet: time_ns, rate_msgs_per_s (piecewise constant; the last row ends it)",
    )
    p.add_argument("--out", type=output_folder, metavar="DIR", required=True)
    p.add_argument("--engine", default="fast", choices=("des", "fast"))
    p.add_argument("--seed", type=seed, metavar="N", help="override workload.seed")
    p.add_argument("--profile", metavar="PROFILE", help="calibration profile (name or .toml)")
    add_set_argument(p, "exchange.gateway_threads=8")
    p.add_argument(
        "--export",
        action="append",
        choices=EXPORTS,
        help="also write a backtester's latency input (repeatable): hftbacktest "
        "(order_latency.npz, feed_latency.npz), nautilus (nautilus_latency.json)",
    )
    p.add_argument("--json", action="store_true", help="print the summary as one JSON object")
    p.set_defaults(run=cmd_replay)
