"""The ``twin inspect FILE [--json]`` subcommand: what a benchmark file says, in us.

The CLI module registers it with :func:`add_parser` and dispatches to :func:`run`, which
returns the exit code: 0 when the file was read, 2 when it could not be (one-line error on
stderr, naming the file and line).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from twin import percentiles
from twin.errors import MeasurementError
from twin.jsontext import dumps
from twin.percentiles import PERCENTILES

__all__ = ["add_parser", "run"]

# Summary statistic -> its JSON key (times in us).
_ROWS = (
    ("count", "count"),
    ("min", "min_us"),
    *((k, f"{k}_us") for k in PERCENTILES),
    ("max", "max_us"),
    ("mean", "mean_us"),
)


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``inspect`` on an ``argparse`` subparsers object; returns its parser."""
    parser = subparsers.add_parser(
        "inspect",
        help="summarise a benchmark output file (hgrm, HDR log, netperf, sockperf, CSV)",
        description=(
            "Read a benchmark output file (format detected from its content) and print "
            "count, min, p50, p90, p95, p99, p99.9, max and mean in microseconds."
        ),
    )
    parser.add_argument("file", metavar="FILE", help="benchmark output file")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument(
        "--value-unit",
        choices=("ns", "us", "ms", "s"),
        default=None,
        help="unit of the recorded values when the file does not state it "
        "(hgrm default us, HDR interval logs ns, sample CSVs must say)",
    )
    parser.add_argument(
        "--tag", default=None, help="HDR interval logs: the tag to read when there are several"
    )
    parser.set_defaults(run=run)
    return parser


def run(args: argparse.Namespace) -> int:
    """Print the summary of ``args.file``; 0 on success, 2 on bad input."""
    options: dict[str, Any] = {}
    if getattr(args, "value_unit", None) is not None:
        options["value_unit"] = args.value_unit
    if getattr(args, "tag", None) is not None:
        options["tag"] = args.tag
    try:
        from calibration.readers import read  # numpy and every reader: when a file is read

        measurement = read(args.file, **options)
    except MeasurementError as exc:
        print(f"twin inspect: {exc}", file=sys.stderr)
        return 2
    summary = measurement.summary()
    if args.json:
        payload: dict[str, Any] = {"file": str(args.file), "format": measurement.format}
        payload.update({key: summary[name] for name, key in _ROWS})
        payload["kind"] = (
            "samples"
            if measurement.samples_us is not None
            else "percentiles"
            if measurement.percentiles_us
            else "summary"
        )
        payload["source"] = measurement.source
        payload["conditions"] = {k: _jsonable(v) for k, v in measurement.conditions.items()}
        print(dumps(payload, sort_keys=False))
        return 0
    rows = [("file", str(args.file)), ("format", measurement.format)]
    for name, _ in _ROWS:
        label = percentiles.label(name) + ("" if name == "count" else " (us)")
        rows.append((label, _fmt(summary[name])))
    for key, value in measurement.conditions.items():
        rows.append((key, str(value)))
    width = max(len(label) for label, _ in rows)
    for label, value in rows:
        print(f"{label:<{width}}  {value}")
    return 0


def _fmt(value: float | int | None) -> str:
    if value is None:
        return "-"
    if isinstance(value, int):
        return str(value)
    return f"{value:.3f}"


def _jsonable(value: Any) -> Any:
    if isinstance(value, str | int | float | bool) or value is None:
        return value
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    return str(value)
