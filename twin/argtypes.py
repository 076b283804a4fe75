"""Argument types shared by the CLI's subcommands: refuse bad numbers with a clear message."""

from __future__ import annotations

import argparse
import math
from pathlib import Path


def positive_float(text: str) -> float:
    """A finite number > 0 (rates, durations, ceilings)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not value > 0 or not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"{text!r} must be a finite number > 0")
    return value


def positive_int(text: str) -> int:
    """A whole number >= 1 (replications, workers)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} must be >= 1")
    return value


def non_negative_int(text: str) -> int:
    """A whole number >= 0 (seeds, counts that may be zero)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text!r} must be >= 0")
    return value


seed = non_negative_int  # a seed is any whole number >= 0


def output_file(text: str) -> str:
    """A file to write after the work (a profile, a JSON result): refused before the work starts
    if it names a folder, or a folder under a file, where the write would fail after it."""
    if Path(text).is_dir():
        raise argparse.ArgumentTypeError(f"{text!r} is a folder, not a file to write")
    _under_a_folder(text)
    return text


def output_folder(text: str) -> str:
    """A folder to write results in (made if missing): refused before the work starts if it
    names a file, or a folder under a file."""
    path = Path(text)
    if path.exists() and not path.is_dir():
        raise argparse.ArgumentTypeError(f"{text!r} is a file, not a results folder")
    _under_a_folder(text)
    return text


def _under_a_folder(text: str) -> None:
    """Refuse a path whose nearest existing ancestor is not a folder (it could not be made)."""
    for parent in Path(text).parents:
        if parent.exists():
            if not parent.is_dir():
                raise argparse.ArgumentTypeError(f"{text!r}: {str(parent)!r} is not a folder")
            return


def assignment(text: str) -> tuple[str, object]:
    """``dotted.field=value`` (``--set``): the value read as a TOML value, else as text.

    ``workload.accounts=8`` gives the integer 8, ``hosts.client.tls=true`` a boolean and
    ``workload.loop=closed`` the text ``closed``; the scenario then validates it as it would
    the file.
    """
    import tomllib

    field, sep, raw = text.partition("=")
    field = field.strip()
    if not sep or not field or any(not part for part in field.split(".")):
        raise argparse.ArgumentTypeError(f"{text!r}: expected dotted.field=value")
    try:
        value: object = tomllib.loads(f"v = {raw.strip()}")["v"]
    except tomllib.TOMLDecodeError:
        value = raw.strip()
    return field, value


def add_set_argument(parser: argparse.ArgumentParser, example: str, note: str = "") -> None:
    """Give ``parser`` the repeatable ``--set FIELD=VALUE`` (:func:`assignment`), its help
    showing ``example`` and ending with ``note``."""
    parser.add_argument(
        "--set",
        type=assignment,
        action="append",
        default=[],
        metavar="FIELD=VALUE",
        help=f"change a dotted scenario field, e.g. {example} (repeatable{note})",
    )
