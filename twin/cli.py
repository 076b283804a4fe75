"""The ``twin`` command line: run, check and list scenarios, inspect benchmark files, demo.

Exit codes: 0 ok, 2 bad input (a one-line message naming the file, field and value), 1 failure.
With ``--json`` stdout carries exactly one JSON object; progress and notes go to stderr.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from twin.errors import TwinError
from twin.results import RunResult
from twin.scenario import load_scenario
from twin.simulation import ENGINES, apply_overrides, run

EXIT_OK, EXIT_FAILURE, EXIT_BAD_INPUT = 0, 1, 2


def scenarios_dir() -> Path:
    """The folder of shipped scenarios (beside the ``twin`` package in the checkout)."""
    return Path(__file__).resolve().parent.parent / "scenarios"


def shipped_scenarios() -> list[Path]:
    return sorted(scenarios_dir().glob("*.toml"))


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"{text!r} must be > 0")
    return value


def _seed(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text!r} must be >= 0")
    return value


def format_result(result: RunResult) -> str:
    """A human-readable report of one run."""
    lines = [
        f"scenario {result.scenario}  engine {result.engine}  seed {result.seed}",
        f"target {result.rate_msgs_per_s:,.0f} msg/s",
    ]
    for role, where in result.placements.items():
        lines.append(f"  {role:8s} {where}")
    if not result.stable:
        lines.append("UNSTABLE: offered load saturates " + "; ".join(result.saturated))
        lines.append("No latency is reported: queues grow without bound at this rate.")
        return "\n".join(lines)
    lines.append(
        f"messages {result.messages:,}  throughput {result.throughput_msgs_per_s:,.0f} msg/s"
    )
    lines.append(
        "round trip (us): "
        + "  ".join(f"{k.replace('_', '.')} {v:,.1f}" for k, v in result.rtt_us.items())
    )
    lines.append("")
    lines.append(f"{'hop':44s} {'mean us':>9s} {'util':>6s}")
    for hop in result.hops:
        util = "" if hop.utilization is None else f"{hop.utilization:6.2f}"
        lines.append(f"{hop.name:44s} {hop.mean_us:9.2f} {util:>6s}")
    return "\n".join(lines)


def cmd_run(args: argparse.Namespace) -> int:
    from twin.output import write_run

    scenario = apply_overrides(load_scenario(args.scenario), args.rate, args.duration, args.seed)
    result = run(scenario, engine=args.engine)
    if args.out is not None:
        write_run(Path(args.out), result, scenario.to_toml())
    if args.json:
        print(json.dumps(result.to_dict()))
    else:
        print(format_result(result))
    return EXIT_OK


def cmd_check(args: argparse.Namespace) -> int:
    scenario = load_scenario(args.scenario)
    print(
        f"{args.scenario}: ok ({scenario.name}: {scenario.connectivity.tier}, "
        f"{scenario.workload.kind}, {scenario.workload.rate_msgs_per_s:,.0f} msg/s)"
    )
    return EXIT_OK


def cmd_scenarios(args: argparse.Namespace) -> int:
    for path in shipped_scenarios():
        scenario = load_scenario(path)
        print(f"{path.name:28s} {scenario.description}")
    return EXIT_OK


def cmd_demo(args: argparse.Namespace) -> int:
    from twin.demo import demo

    print(demo(engine=args.engine))
    return EXIT_OK


def build_parser() -> argparse.ArgumentParser:
    from calibration import inspect_cmd
    from twin.sweep import cli as sweep_cli

    parser = argparse.ArgumentParser(
        prog="twin", description="Digital twin of order round-trip latency to a cloud exchange."
    )
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("run", help="simulate one scenario and report its round-trip latency")
    p.add_argument("scenario", metavar="SCENARIO.toml")
    p.add_argument(
        "--rate",
        type=_positive_float,
        metavar="MSGS_PER_S",
        help="override workload.rate_msgs_per_s",
    )
    p.add_argument(
        "--duration",
        type=_positive_float,
        metavar="S",
        help="override workload.duration_s (measured time after warm-up)",
    )
    p.add_argument("--seed", type=_seed, metavar="N", help="override workload.seed")
    p.add_argument("--engine", default="des", choices=sorted(ENGINES))
    p.add_argument("--json", action="store_true", help="print exactly one JSON object")
    p.add_argument(
        "--out",
        metavar="DIR",
        help="write result.json, scenario.toml, rtt.hgrm, rtt_histogram.parquet",
    )
    p.set_defaults(run=cmd_run)

    p = sub.add_parser("check", help="validate a scenario file without running it")
    p.add_argument("scenario", metavar="SCENARIO.toml")
    p.set_defaults(run=cmd_check)

    p = sub.add_parser("scenarios", help="list the shipped scenarios")
    p.set_defaults(run=cmd_scenarios)

    p = sub.add_parser("demo", help="the four tiers at 10k and 400k msg/s, one table")
    p.add_argument("--engine", default="des", choices=sorted(ENGINES))
    p.set_defaults(run=cmd_demo)

    inspect_cmd.add_parser(sub)
    sweep_cli.add_parsers(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        code: int = args.run(args)
        return code
    except TwinError as exc:
        code = EXIT_BAD_INPUT if isinstance(exc, ValueError) else EXIT_FAILURE
        print(f"twin {args.command}: {exc}", file=sys.stderr)
        return code
    except KeyboardInterrupt:
        print(f"twin {args.command}: interrupted", file=sys.stderr)
        return 130


def entry() -> Any:
    sys.exit(main())
