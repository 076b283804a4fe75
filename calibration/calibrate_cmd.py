"""The ``twin calibrate`` and ``twin validate`` subcommands.

``twin calibrate TARGETS... --profile-out FILE`` fits the free groups of the targets files and
writes a profile with values, uncertainties and provenance. ``twin validate PROFILE
[MEASUREMENTS...]`` prints measured vs predicted and the error for each target or benchmark file
(with none, the profile's own calibration targets), exits 1 when a ``--tolerance`` is exceeded;
``--leave-one-out`` refits without each target in turn and predicts it. ``--json`` prints one
object ``{"rows": [{"target", "statistic", "measured", "predicted", "error_pct"}, ...]}``.
``twin validate --matrix CORPUS`` prints the load corpus's accuracy matrix
(:mod:`calibration.matrix`). Exit codes follow :mod:`twin.cli`: 0 ok, 1 tolerance exceeded,
2 bad input.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from calibration.targets import FreeGroup, TargetSet, load_targets
from twin.argtypes import output_file, positive_int
from twin.jsontext import dumps
from twin.profile import load_profile

__all__ = ["add_parser", "format_rows", "run_calibrate", "run_validate"]


def add_parser(subparsers: Any) -> None:
    """Register ``calibrate`` and ``validate`` on an ``argparse`` subparsers object."""
    p = subparsers.add_parser(
        "calibrate",
        help="fit the twin's free parameters to calibration targets; write a profile",
    )
    p.add_argument("targets", nargs="+", metavar="TARGETS.toml")
    p.add_argument(
        "--profile-out", required=True, type=output_file, metavar="FILE", help="profile to write"
    )
    p.add_argument(
        "--prior",
        metavar="PROFILE",
        help="profile whose values the free factors scale (default: the targets file's "
        "[meta] prior, else the shipped prior)",
    )
    p.add_argument("--max-nfev", type=int, default=15, metavar="N", help="optimiser iterations")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(run=run_calibrate)

    p = subparsers.add_parser(
        "validate",
        help="measured vs predicted for a profile; leave-one-out accuracy",
    )
    p.add_argument("profile", nargs="?", metavar="PROFILE", help="profile file or shipped name")
    p.add_argument(
        "--matrix",
        metavar="CORPUS",
        help="the accuracy matrix of a load corpus (twin testbed lab): per system, calibrate "
        "on its lowest-load point, predict every other point",
    )
    p.add_argument(
        "--json-out",
        type=output_file,
        metavar="PATH",
        help="with --matrix: also write the JSON object to PATH",
    )
    p.add_argument(
        "--seeds",
        type=positive_int,
        metavar="K",
        help="with --matrix: re-run it with seeds 1..K (the fit's and the runs' random numbers) "
        "and report the summary's range (seed_spread): the noise a change must beat",
    )
    p.add_argument(
        "--workers",
        type=positive_int,
        metavar="N",
        help="with --matrix --seeds: processes running the seeds (default: one per core)",
    )
    p.add_argument(
        "measurements",
        nargs="*",
        metavar="MEASUREMENTS",
        help="targets files (.toml) or benchmark files (with --scenario); "
        "none: the profile's own calibration targets",
    )
    p.add_argument("--scenario", metavar="SCENARIO.toml", help="scenario of benchmark files")
    p.add_argument(
        "--tolerance", type=float, metavar="PCT", help="max |error| of absolute figures, %%"
    )
    p.add_argument(
        "--tolerance-pp",
        type=float,
        metavar="PP",
        help="max |error| of relative figures, percentage points",
    )
    p.add_argument(
        "--leave-one-out", action="store_true", help="refit without each target, predict it"
    )
    p.add_argument("--loo-nfev", type=int, default=4, metavar="N", help="iterations per refit")
    p.add_argument(
        "--loo-from-prior",
        action="store_true",
        help="refit each from the prior, as the shipped fit was (slower; default: from the fit)",
    )
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(run=run_validate)


def _merge(paths: Sequence[str]) -> TargetSet:
    sets = [load_targets(p) for p in paths]
    if len(sets) == 1:
        return sets[0]
    free: dict[str, FreeGroup] = {}
    for s in sets:
        free.update({g.name: g for g in s.free})
    first = sets[0]
    return TargetSet(
        name="+".join(s.name for s in sets),
        path=first.path,
        sha256="+".join(s.sha256 for s in sets),
        targets=tuple(t for s in sets for t in s.targets),
        free=tuple(free.values()),
        excluded=tuple(e for s in sets for e in s.excluded),
        prior=first.prior,
    )


def format_rows(rows: Sequence[Mapping[str, Any]], title: str) -> str:
    """A table: target, statistic, measured, predicted, error (% or pp)."""
    lines = [
        title,
        f"{'target':42s} {'stat':16s} {'measured':>10s} {'predicted':>10s} {'error':>9s}",
    ]
    for r in rows:
        err = r["error_pct"]
        unit = "pp" if r.get("unit") == "%" else "%"
        err_s = "-" if err is None else f"{err:+7.1f}{unit}"
        lines.append(
            f"{str(r['target'])[-42:]:42s} {r['statistic']:16s} {r['measured']:10.2f} "
            f"{r['predicted']:10.2f} {err_s:>9s}"
            + (f"  (placement estimated: {r['placement']})" if r.get("placement") else "")
        )
    return "\n".join(lines)


def run_calibrate(args: argparse.Namespace) -> int:
    from calibration.calibrate import TwinCalibrator, fit_rows, write_profile

    targets = _merge(args.targets)
    cal = TwinCalibrator(prior=args.prior, max_nfev=args.max_nfev).fit(targets)
    path = write_profile(cal.profile_, args.profile_out)
    rows = fit_rows(targets.targets, cal.predictions_, cal.latent_placements_)
    if args.json:
        print(dumps({"profile": str(path), "elapsed_s": cal.elapsed_s_, "rows": rows}))
    else:
        print(
            format_rows(
                rows,
                f"fit to {', '.join(args.targets)} ({cal.elapsed_s_:.0f} s, {cal.engine_} engine)",
            )
        )
        print(f"profile written to {path}")
    return 0


def run_matrix(args: argparse.Namespace) -> int:
    """``twin validate --matrix CORPUS [--seeds K] [--workers N] [--json] [--json-out PATH]``."""
    from calibration.matrix import format_matrix, seed_matrices, seed_spread
    from twin.atomic import write_json
    from twin.replicate import default_workers

    if args.profile is not None or args.measurements:
        print("twin validate: --matrix takes no PROFILE or MEASUREMENTS", file=sys.stderr)
        return 2

    def progress(name: str) -> None:
        print(f"calibrated and predicted {name}", file=sys.stderr)

    seeds = range(1, (args.seeds or 1) + 1)
    matrices = seed_matrices(args.matrix, seeds, progress, args.workers or default_workers())
    matrix = matrices[0]  # seed 1's
    if args.seeds:
        matrix["seed_spread"] = seed_spread(seeds, [m["summary"] for m in matrices])
    if args.json_out:
        from pathlib import Path

        write_json(Path(args.json_out), matrix)
    print(dumps(matrix) if args.json else format_matrix(matrix))
    return 0


def run_validate(args: argparse.Namespace) -> int:
    from calibration.validate import (
        exceeds,
        leave_one_out,
        profile_targets,
        validate_measurements,
        validate_targets,
    )
    from twin.profile import resolve_profile_path
    from twin.scenario import load_scenario

    if args.matrix is not None:
        return run_matrix(args)
    if args.seeds or args.workers:
        print("twin validate: --seeds and --workers go with --matrix CORPUS", file=sys.stderr)
        return 2
    if args.profile is None:
        print("twin validate: give a PROFILE, or --matrix CORPUS", file=sys.stderr)
        return 2
    profile = load_profile(resolve_profile_path(args.profile))
    target_files = [m for m in args.measurements if m.endswith(".toml")]
    bench_files = [m for m in args.measurements if not m.endswith(".toml")]
    rows: list[dict[str, Any]] = []
    if args.leave_one_out:
        targets = _merge(target_files) if target_files else profile_targets(profile)
        cal = profile.meta.get("calibration", {})
        start = dict(zip(cal.get("groups", []), cal.get("log_factors", []), strict=True))
        rows = leave_one_out(
            targets, start=None if args.loo_from_prior else start, max_nfev=args.loo_nfev
        )
        title = "leave-one-out: each target predicted by a fit that did not see it"
    else:
        if target_files or not bench_files:
            targets = _merge(target_files) if target_files else profile_targets(profile)
            rows += validate_targets(profile, targets)
        if bench_files:
            if args.scenario is None:
                print(
                    "twin validate: benchmark files need --scenario SCENARIO.toml", file=sys.stderr
                )
                return 2
            rows += validate_measurements(profile, load_scenario(args.scenario), bench_files)
        title = f"validation of {profile.path}"
    bad = exceeds(rows, args.tolerance, args.tolerance_pp)
    if args.json:
        print(dumps({"rows": rows}))
    else:
        print(format_rows(rows, title))
    if bad:
        print(f"twin validate: tolerance exceeded: {'; '.join(bad)}", file=sys.stderr)
        return 1
    return 0
