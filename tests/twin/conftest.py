"""Shared helpers for the twin's tests."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
SCENARIOS = REPO / "scenarios"


def scenario_dict(name: str) -> dict[str, Any]:
    """A shipped scenario's raw TOML table (for building variants in tests)."""
    return tomllib.loads((SCENARIOS / f"{name}.toml").read_text())


@pytest.fixture
def tier1_raw() -> dict[str, Any]:
    return scenario_dict("tier1_peering_cpg")
