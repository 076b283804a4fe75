"""Small sweeps on the reference engine: short windows so every test stays quick."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
SCENARIOS = REPO / "scenarios"

SMALL_SWEEP = f"""
name = "small"
scenario = "{SCENARIOS / "tier1_peering_cpg.toml"}"
engine = "des"
replications = 2
seed = 7

[set]
"workload.duration_s" = 0.004
"workload.warmup_s" = 0.001

[grid]
scenario = ["{SCENARIOS / "tier1_peering_cpg.toml"}", "{SCENARIOS / "tier3_privatelink.toml"}"]
"workload.rate_msgs_per_s" = [20000, 40000, 60000]
"""


@pytest.fixture
def write_sweep(tmp_path):
    """Write sweep text to a file; returns its path."""

    def make(text: str, name: str = "sweep.toml") -> Path:
        path = tmp_path / name
        path.write_text(text)
        return path

    return make


@pytest.fixture
def small_sweep(write_sweep) -> Path:
    return write_sweep(SMALL_SWEEP)
