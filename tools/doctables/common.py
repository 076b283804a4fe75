"""What every table generator shares: the repository root, reading a committed JSON file, a
Markdown table, and the number formats the tables use."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


def load(relative: str) -> Any:
    """A committed JSON file, by its path from the repository root."""
    return json.loads((ROOT / relative).read_text())


def md_table(header: Sequence[str], align: str, rows: Iterable[Sequence[str]]) -> str:
    """A Markdown table; ``align`` has one letter per column, ``l`` or ``r``."""
    rule = ["---:" if a == "r" else "---" for a in align]
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join(rule) + " |"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def pct(x: float) -> str:
    return f"{x:+.2f}%"


def num(x: float | None, digits: int = 0) -> str:
    return "-" if x is None else f"{x:,.{digits}f}"


def signed(x: float | None) -> str:
    return "-" if x is None else f"{x:+.0f}%"


def us(x: float | None) -> str:
    return "-" if x is None else (f"{x:,.0f}" if x >= 100 else f"{x:.1f}")


def point_name(point: dict[str, Any]) -> str:
    """A matrix point's id, bold where it is its system's calibration point."""
    return f"**{point['id']}**" if point["calibration"] else point["id"]
