"""The ``twin sweep``, ``twin capacity`` and ``twin report`` subcommands.

:func:`add_parsers` registers them on the main parser's subcommands; each handler returns an exit
code (0 ok, 1 failure) and lets :class:`~twin.errors.TwinError` reach ``twin.cli.main``, which
prints the one-line message and exits 2 for bad input. Progress goes to stderr.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from pathlib import Path
from typing import Any

from twin.argtypes import add_set_argument, output_file, output_folder, positive_float, positive_int
from twin.errors import ScenarioError
from twin.extras import Extra, require
from twin.jsontext import dumps

EXIT_OK, EXIT_FAILURE = 0, 1


def _executor_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--executor",
        choices=("local", "dask"),
        default=None,
        help="local process pool (default) or dask.distributed (implied by --scheduler)",
    )
    p.add_argument(
        "--workers", type=positive_int, metavar="N", help="worker processes (default: cores)"
    )
    p.add_argument(
        "--scheduler",
        metavar="tcp://HOST:PORT",
        help="connect to a running Dask scheduler instead of starting a LocalCluster",
    )
    p.add_argument(
        "--tls-ca-file", metavar="PEM", help="CA of a tls:// scheduler (mutual TLS; see docs)"
    )
    p.add_argument("--tls-cert", metavar="PEM", help="this client's certificate (tls://)")
    p.add_argument("--tls-key", metavar="PEM", help="this client's private key (tls://)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")


def _tls(args: argparse.Namespace) -> contextlib.AbstractContextManager[Any]:
    """Dask's TLS settings from ``--tls-ca-file/--tls-cert/--tls-key`` (all three or none)."""
    files = {
        "--tls-ca-file": args.tls_ca_file,
        "--tls-cert": args.tls_cert,
        "--tls-key": args.tls_key,
    }
    given = {k: v for k, v in files.items() if v is not None}
    if not given:
        return contextlib.nullcontext()
    if len(given) != len(files) or not (args.scheduler or "").startswith("tls://"):
        raise ScenarioError(
            f"{', '.join(given)}: TLS needs --tls-ca-file, --tls-cert and --tls-key together, "
            "with a tls:// --scheduler"
        )
    for option, value in given.items():
        if not Path(value).is_file():
            raise ScenarioError(f"{option} {value}: no such file")
    dask = require("dask", Extra.DASK, "a Dask scheduler")
    return dask.config.set(
        {
            "distributed.comm.tls.ca-file": str(Path(args.tls_ca_file).resolve()),
            "distributed.comm.tls.client.cert": str(Path(args.tls_cert).resolve()),
            "distributed.comm.tls.client.key": str(Path(args.tls_key).resolve()),
            "distributed.comm.require-encryption": True,
        }
    )


def _executor(args: argparse.Namespace) -> str:
    if args.executor is None:
        return "dask" if args.scheduler is not None else "local"
    executor: str = args.executor
    return executor


def cmd_sweep(args: argparse.Namespace) -> int:
    from twin.sweep.executors import check_executor
    from twin.sweep.runner import run_sweep
    from twin.sweep.spec import load_sweep
    from twin.sweep.summary import format_summary

    executor = _executor(args)
    check_executor(executor, args.workers, args.scheduler)
    sweep = load_sweep(args.sweep)
    out_dir = Path(args.out) if args.out else Path("sweep-results") / sweep.name
    with _tls(args):
        outcome = run_sweep(
            sweep,
            out_dir,
            resume=args.resume,
            executor=executor,
            workers=args.workers,
            scheduler=args.scheduler,
            progress=not args.no_progress,
        )
    if outcome.summary is not None:
        labels = {p.point_id: p.label for p in sweep.points}
        print(format_summary(outcome.summary, labels))
    print(
        f"twin sweep: {outcome.ran} ran, {outcome.skipped} already done, "
        f"{len(outcome.failures)} failed in {outcome.wall_s:.1f} s -> {out_dir}",
        file=sys.stderr,
    )
    for key, error in list(outcome.failures.items())[:5]:
        print(f"  {key}: {error}", file=sys.stderr)
    return EXIT_FAILURE if outcome.failures else EXIT_OK


def cmd_capacity(args: argparse.Namespace) -> int:
    from twin.scenario import load_scenario
    from twin.simulation import DEFAULT_ENGINE, what_if
    from twin.sweep.capacity import format_capacity
    from twin.sweep.executors import check_executor

    executor = _executor(args)
    check_executor(executor, args.workers, args.scheduler)
    scenario = what_if(load_scenario(args.scenario), changes=args.set)
    if args.duration is not None:
        scenario = scenario.with_fields({"workload.duration_s": args.duration})
    engine = args.engine or DEFAULT_ENGINE
    from twin.simulation import ENGINES

    if engine not in ENGINES:
        raise ScenarioError(f"--engine {engine!r}: allowed: {', '.join(sorted(ENGINES))}")
    from twin.console import note_compiling

    note_compiling(engine)
    with _tls(args):
        result = _capacity(args, scenario, engine, executor)
    if args.json:
        print(dumps(result.to_dict()))
    else:
        print(format_capacity(result))
    return EXIT_OK


def _capacity(args: argparse.Namespace, scenario: Any, engine: str, executor: str) -> Any:
    from twin.sweep.capacity import find_capacity

    return find_capacity(
        scenario,
        p99_ceiling_us=args.p99_ceiling_us,
        replications=args.replications,
        seed=args.seed,
        engine=engine,
        rates=args.rates,
        refine=args.refine,
        executor=executor,
        workers=args.workers,
        scheduler=args.scheduler,
        progress=not args.no_progress,
        out_dir=Path(args.out) if args.out else None,
    )


def cmd_report(args: argparse.Namespace) -> int:
    from twin.hunt.report import is_hunt_folder, write_hunt_report
    from twin.replay_report import is_replay_folder, write_replay_report
    from twin.sweep.report import write_report

    folder = Path(args.results_dir)
    if is_hunt_folder(folder):
        path = write_hunt_report(folder, Path(args.output))
    elif is_replay_folder(folder):
        path = write_replay_report(folder, Path(args.output))
    else:
        path = write_report(folder, Path(args.output), args.p99_ceiling_us)
    print(f"twin report: wrote {path.resolve()}", file=sys.stderr)
    return EXIT_OK


def _rates(text: str) -> list[float]:
    try:
        rates = [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: expected rates like 1e4,1e5,2e5") from None
    if not rates or any(not r > 0 for r in rates):
        raise argparse.ArgumentTypeError(f"{text!r}: rates must be > 0")
    return sorted(set(rates))


def add_parsers(sub: Any) -> None:
    """Register ``sweep``, ``capacity`` and ``report`` on ``twin``'s subcommands."""
    p = sub.add_parser("sweep", help="run a grid of scenarios with replications (resumable)")
    p.add_argument("sweep", metavar="SWEEP.toml")
    p.add_argument(
        "--out",
        type=output_folder,
        metavar="DIR",
        help="results folder (default sweep-results/NAME)",
    )
    p.add_argument("--resume", action="store_true", help="continue an interrupted sweep in --out")
    _executor_args(p)
    p.set_defaults(run=cmd_sweep)

    p = sub.add_parser(
        "capacity", help="highest rate whose p99 stays under a ceiling, with its uncertainty"
    )
    p.add_argument("scenario", metavar="SCENARIO.toml")
    p.add_argument(
        "--p99-ceiling-us",
        type=positive_float,
        required=True,
        metavar="US",
        help="p99 round-trip ceiling in microseconds (for example 1000)",
    )
    p.add_argument("--replications", type=positive_int, default=3, metavar="N")
    p.add_argument("--seed", type=int, default=1, metavar="N", help="base seed of replications")
    p.add_argument("--engine", default=None, help="des or fast (default: fast when available)")
    p.add_argument(
        "--duration", type=positive_float, metavar="S", help="override workload.duration_s"
    )
    add_set_argument(p, "workload.warmup_s=0.01", "; the rate is the search's")
    p.add_argument(
        "--rates",
        type=_rates,
        metavar="R1,R2,...",
        help="rates of the coarse curve (default: fractions of the saturation rate)",
    )
    p.add_argument(
        "--refine", type=int, default=3, metavar="K", help="bisection steps at the crossing"
    )
    p.add_argument(
        "--out",
        type=output_folder,
        metavar="DIR",
        help="also write the runs as a sweep results folder",
    )
    p.add_argument("--json", action="store_true", help="print exactly one JSON object")
    _executor_args(p)
    p.set_defaults(run=cmd_capacity)

    p = sub.add_parser(
        "report",
        help="self-contained HTML report of a sweep (or twin hunt or twin replay --out) folder",
    )
    p.add_argument("results_dir", metavar="RESULTS_DIR")
    p.add_argument("-o", "--output", default="report.html", type=output_file, metavar="report.html")
    p.add_argument(
        "--p99-ceiling-us",
        type=positive_float,
        default=1000.0,
        metavar="US",
        help="ceiling drawn on latency-throughput curves (default 1000)",
    )
    p.set_defaults(run=cmd_report)
