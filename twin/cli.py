"""The ``twin`` command line: run, check and list scenarios, inspect benchmark files, demo,
start the explorer.

Exit codes: 0 ok, 2 bad input (a one-line message naming the file, field and value), 1 failure.
With ``--json`` stdout carries exactly one JSON object; progress and notes go to stderr.

Building the parser imports no numerical library (numpy, Numba, SciPy, polars, pyarrow,
SimPy): ``twin --help`` answers at once, and each command imports what it needs when it runs
(``tests/twin/test_cli_imports.py``).
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from twin.argtypes import add_set_argument, output_folder, positive_float, positive_int, seed
from twin.errors import ConfigError, TwinError, one_line
from twin.jsontext import dumps
from twin.percentiles import PERCENTILES
from twin.scenario import load_scenario, scenarios_dir, shipped_scenarios
from twin.uncertainty import Varied, few_samples

# The engines' names, known without importing them (twin.simulation.EngineName, checked equal
# by a test): the default is the compiled one.
ENGINE_NAMES = ("des", "fast")
DEFAULT_ENGINE_NAME = "fast"

EXIT_OK, EXIT_FAILURE, EXIT_BAD_INPUT, EXIT_UNSTABLE = 0, 1, 2, 3
# What no interval of a run covers: the model's own error against measurements.
UNCOVERED_NOTE = (
    "no interval above covers the model's own error against measurements: docs/accuracy.md "
    "reports it (the lab's leave-one-out predictions)"
)


def _progress_bar(total: float, unit: str, decimals: int = 0) -> Any:
    """A tqdm bar on stderr that only appears once a run has taken a few seconds, and only
    when stderr is a terminal (a redirected log gets no progress frames)."""
    from tqdm import tqdm

    return tqdm(
        total=total,
        unit=unit,
        file=sys.stderr,
        disable=not sys.stderr.isatty(),
        delay=3.0,
        leave=False,
        bar_format=(
            f"{{l_bar}}{{bar}}| {{n:,.{decimals}f}}/{{total:,.{decimals}f}} {{unit}} "
            "[{elapsed}<{remaining}]"
        ),
    )


def cmd_run(args: argparse.Namespace) -> int:
    from twin.console import (
        format_bands,
        format_failover,
        format_intervals,
        format_result,
        note_compiling,
        pacing_note,
    )
    from twin.kinds import Loop
    from twin.output import write_run
    from twin.replicate import (
        default_workers,
        run_prepared_replicated,
        target_replication_load,
    )
    from twin.simulation import apply_overrides, check_run_cost, prepare, run_prepared, what_if

    scenario = what_if(load_scenario(args.scenario), args.profile, args.set)
    scenario = apply_overrides(scenario, args.rate, args.duration, args.seed)
    check_run_cost(scenario, args.replications or 1, force=args.force)
    prepared = prepare(scenario)
    note_compiling(args.engine)
    ci95: dict[str, tuple[float, float]] = {}
    replications = None
    if args.replications is None and args.target_ci is None:
        simulated_s = prepared.load.end_us / 1e6
        decimals = max(1, 1 - math.floor(math.log10(simulated_s)))  # 0.12, 8.1, 3,600.1
        with _progress_bar(simulated_s, "simulated s", decimals) as bar:

            def progress(fraction: float) -> None:
                bar.update(simulated_s * fraction - bar.n)

            result = run_prepared(prepared, engine=args.engine, progress=progress)
    else:
        planned = args.replications or 5
        with _progress_bar(planned, "run") as bar:

            def report(done: int, total: int) -> None:
                bar.total = total
                bar.update(done - bar.n)

            result, replicated = run_prepared_replicated(
                prepared,
                engine=args.engine,
                replications=args.replications or 1,
                target_ci_pct=args.target_ci,
                workers=args.workers or default_workers(),
                progress=report,
                varied=Varied(args.vary),
                ci_statistic=args.ci_statistic,
            )
        if replicated is not None:
            ci95 = replicated.ci95
            replications = replicated.replications
    bands = None
    if args.bands:
        from calibration.bands import prediction_bands
        from twin.simulation import scenario_profile

        bands = prediction_bands(scenario, scenario_profile(scenario))
    failover = None
    replication = scenario.exchange.replication
    if replication is not None and replication.failover is not None:
        from twin.failover import failover_report

        failover = failover_report(prepared)
    if args.out is not None:
        write_run(Path(args.out), result, scenario.to_toml())
    pacing = None
    if scenario.workload.loop == Loop.CLOSED:
        pacing = {
            "rate_msgs_per_s": scenario.workload.rate_msgs_per_s,
            "set_by": "--rate" if args.rate is not None else "workload.rate_msgs_per_s",
        }
        note = pacing_note(
            scenario.workload.accounts,
            scenario.workload.rate_msgs_per_s,
            args.rate is not None,
            result.throughput_msgs_per_s,
        )
        print(note, file=sys.stderr)
    if args.json:
        payload = result.to_dict()
        if pacing is not None:
            payload["closed_loop_pacing"] = pacing
        if replications is not None:
            payload["replications"] = replications
            thin = few_samples(ci95, result.messages // replications)  # per replication
            payload["ci95"] = {k: [lo, hi] for k, (lo, hi) in ci95.items() if k not in thin}
            payload["ci95_varied"] = args.vary
            payload["ci95_covers"] = Varied(args.vary).covers
            if args.target_ci is not None:
                payload["ci95_target"] = {"statistic": args.ci_statistic, "pct": args.target_ci}
                each = target_replication_load(prepared.load, args.ci_statistic)
                payload["ci95_method"] = (
                    f"{replications} independent replications of {each.duration_us / 1e6:g} s "
                    f"each, every one after its own {each.warmup_us / 1e6:g} s warm-up; "
                    "Student-t 95%"
                )
        if bands is not None:
            payload["bands_90"] = {
                k: {"predicted": b.predicted_us, "low": b.low_us, "high": b.high_us}
                for k, b in bands.items()
            }
        if failover is not None:
            payload["failover"] = failover.to_dict()
        print(dumps(payload))
    else:
        print(format_result(result))
        # The widest interval first, each saying what it covers (format_bands, format_intervals).
        if bands is not None:
            print()
            print(format_bands(bands))
        if replications is not None:
            per_replication = result.messages // replications
            print(format_intervals(replications, ci95, Varied(args.vary), per_replication))
        if bands is not None or replications is not None:
            print(UNCOVERED_NOTE)
        if failover is not None:
            print()
            print(format_failover(failover))
    # A run that has no steady state printed what it could (the saturated stations) but gave no
    # latency: a script must not take it for an answer.
    return EXIT_OK if result.stable else EXIT_UNSTABLE


def cmd_check(args: argparse.Namespace) -> int:
    from twin.simulation import prepare

    scenario = load_scenario(args.scenario)
    prepare(scenario)  # the profile it names, the topology and the path must hold up too
    print(
        f"{args.scenario}: ok ({scenario.name}: {scenario.connectivity.tier}, "
        f"{scenario.workload.kind}, {scenario.workload.rate_msgs_per_s:,.0f} msg/s)"
    )
    return EXIT_OK


def cmd_scenarios(args: argparse.Namespace) -> int:
    paths = shipped_scenarios()
    if not paths:
        raise ConfigError(f"{scenarios_dir()}: no shipped scenarios (an incomplete installation)")
    width = max(len(p.name) for p in paths)
    for path in paths:
        scenario = load_scenario(path)
        print(f"{path.name:{width}s} {scenario.description}")
    return EXIT_OK


def cmd_demo(args: argparse.Namespace) -> int:
    from twin.console import note_compiling
    from twin.demo import demo

    note_compiling(args.engine)
    print(demo(engine=args.engine))
    return EXIT_OK


def cmd_app(args: argparse.Namespace) -> int:
    from twin.extras import Extra, require

    require("streamlit", Extra.APP, "the explorer (twin app)")
    from app.serve import main as serve

    serve(
        [
            "--server.address", args.address, "--server.port", str(args.port),
            "--server.headless", "true", "--browser.gatherUsageStats", "false",
        ]
    )  # fmt: skip
    return EXIT_OK


def build_parser() -> argparse.ArgumentParser:
    from calibration import calibrate_cmd, inspect_cmd
    from twin import replay_cli
    from twin.hunt import cli as hunt_cli
    from twin.sweep import cli as sweep_cli
    from twin.testbed import cli as testbed_cli

    parser = argparse.ArgumentParser(
        prog="twin", description="Digital twin of order round-trip latency to a cloud exchange."
    )
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("run", help="simulate one scenario and report its round-trip latency")
    p.add_argument("scenario", metavar="SCENARIO.toml")
    p.add_argument(
        "--rate",
        type=positive_float,
        metavar="MSGS_PER_S",
        help="override workload.rate_msgs_per_s",
    )
    p.add_argument(
        "--duration",
        type=positive_float,
        metavar="S",
        help="override workload.duration_s (measured time after warm-up)",
    )
    p.add_argument("--seed", type=seed, metavar="N", help="override workload.seed")
    p.add_argument(
        "--profile",
        metavar="PROFILE",
        help="calibration profile: a shipped name (default, local) or a .toml file",
    )
    add_set_argument(p, "workload.loop=closed")
    p.add_argument(
        "--engine",
        default=DEFAULT_ENGINE_NAME,
        choices=ENGINE_NAMES,
        help="fast (compiled, default) or des (the SimPy reference)",
    )
    p.add_argument(
        "--replications",
        type=positive_int,
        metavar="K",
        help="run K independent seeds on all cores, pool them, report 95%% intervals",
    )
    p.add_argument(
        "--vary",
        choices=[str(v) for v in Varied],
        default=str(Varied.SEED),
        help="what replications vary: the seed with the placement fixed (default), or the "
        "placement too (one drawn per replication, as a sweep does)",
    )
    p.add_argument(
        "--force",
        action="store_true",
        help="run even when the estimated cost is above twin.simulation.MAX_RUN_MESSAGES",
    )
    p.add_argument(
        "--target-ci",
        type=positive_float,
        metavar="PCT",
        help="add replications until the 95%% half-width of --ci-statistic is below PCT%% of "
        "it (each replication then lasts an eighth of --duration, or as long as the statistic "
        "needs, at most --duration)",
    )
    p.add_argument(
        "--ci-statistic",
        choices=[*PERCENTILES, "mean"],
        default="p99",
        help="the statistic --target-ci bounds (default p99)",
    )
    p.add_argument(
        "--workers", type=positive_int, metavar="N", help="processes for replications (all cores)"
    )
    p.add_argument("--json", action="store_true", help="print exactly one JSON object")
    p.add_argument(
        "--out",
        type=output_folder,
        metavar="DIR",
        help="write result.json, scenario.toml, rtt.hgrm, rtt_histogram.parquet",
    )
    p.add_argument(
        "--bands", action="store_true", help="90%% band per percentile from parameter uncertainty"
    )
    p.set_defaults(run=cmd_run)

    p = sub.add_parser("check", help="validate a scenario file without running it")
    p.add_argument("scenario", metavar="SCENARIO.toml")
    p.set_defaults(run=cmd_check)

    p = sub.add_parser("scenarios", help="list the shipped scenarios")
    p.set_defaults(run=cmd_scenarios)

    p = sub.add_parser("demo", help="the four tiers at 10k and 400k msg/s, one table")
    p.add_argument("--engine", default=DEFAULT_ENGINE_NAME, choices=ENGINE_NAMES)
    p.set_defaults(run=cmd_demo)

    p = sub.add_parser("app", help="start the what-if explorer (Streamlit; needs the [app] extra)")
    p.add_argument(
        "--address", default="127.0.0.1", help="address to listen on (default: this host only)"
    )
    p.add_argument("--port", type=int, default=8501, help="port to listen on (default: 8501)")
    p.set_defaults(run=cmd_app)

    inspect_cmd.add_parser(sub)
    testbed_cli.add_parser(sub)
    calibrate_cmd.add_parser(sub)
    sweep_cli.add_parsers(sub)
    hunt_cli.add_parser(sub)
    replay_cli.add_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        code: int = args.run(args)
        return code
    except Exception as exc:
        if not _deliberate(exc):
            raise
        # Every deliberate error, bad input or a run that cannot be done here: one line, exit 2.
        print(f"twin {args.command}: {one_line(str(exc))}", file=sys.stderr)  # EngineError too
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print(f"twin {args.command}: interrupted", file=sys.stderr)
        return 130


def _deliberate(exc: BaseException) -> bool:
    """A TwinError, or the matching engine's EngineError when a command loaded the engine (it
    is not imported for the check: that would load Numba)."""
    if isinstance(exc, TwinError):
        return True
    errors = sys.modules.get("engine_ext.errors")
    return errors is not None and isinstance(exc, errors.EngineError)


def entry() -> Any:
    try:
        sys.exit(main())
    except BrokenPipeError:
        # The reader went away (``twin run ... --json | head``): not an error worth a traceback.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(EXIT_FAILURE)
