"""Issue 75: a result says what was run (the scenario as run, its changes, its run length), a
numpy value given to ``Scenario.with_fields`` round-trips through ``scenario.toml``, and a
shipped scenario runs by its listed name from any folder."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import numpy as np
import pytest

from tests.twin.conftest import REPO, SCENARIOS
from twin.errors import ScenarioError
from twin.output import write_run
from twin.scenario import load_scenario, parse, scenario_path, scenarios_dir
from twin.simulation import run


def test_numpy_values_are_plain_at_the_edge_and_round_trip_through_scenario_toml(
    tmp_path: Path,
) -> None:
    base = load_scenario(SCENARIOS / "tier1_peering_cpg.toml")
    rate = np.linspace(1_000.0, 20_000.0, 5)[2]  # np.float64
    changed = base.with_fields(
        {
            "workload.rate_msgs_per_s": rate,
            "workload.seed": np.int64(7),
            "workload.duration_s": np.float32(0.05),
        }
    )
    assert type(changed.raw["workload"]["rate_msgs_per_s"]) is float
    assert type(changed.raw["workload"]["seed"]) is int
    assert "np." not in changed.to_toml()
    result = run(changed, engine="des")
    write_run(tmp_path, result, changed.to_toml())
    again = load_scenario(tmp_path / "scenario.toml")
    assert again.workload.rate_msgs_per_s == float(rate) == 10_500.0
    assert again.workload.seed == 7
    assert again.raw == changed.raw


def test_a_value_toml_cannot_hold_is_refused_in_one_line_naming_the_field() -> None:
    base = load_scenario(SCENARIOS / "tier1_peering_cpg.toml")
    with pytest.raises(ScenarioError) as info:
        base.with_fields({"workload.rate_msgs_per_s": object()})
    message = str(info.value)
    assert "workload.rate_msgs_per_s" in message and "not a scenario value" in message
    assert "\n" not in message


def test_the_json_and_the_api_frames_carry_the_scenario_its_changes_and_its_run_length(
    tmp_path: Path,
) -> None:
    base = load_scenario(SCENARIOS / "tier1_peering_cpg.toml")
    changed = base.with_fields({"connectivity.tier": "privatelink", "workload.duration_s": 0.05})
    result = run(changed, engine="des")
    payload = result.to_dict()
    assert payload["scenario"] == "tier1_peering_cpg"  # the name, kept
    assert payload["overrides"] == {"connectivity.tier": "privatelink", "workload.duration_s": 0.05}
    assert payload["duration_s"] == 0.05 and payload["warmup_s"] == changed.workload.warmup_s
    assert payload["scenario_as_run"]["connectivity"]["tier"] == "privatelink"
    assert parse(payload["scenario_as_run"]).raw == changed.raw  # runnable again as is
    assert "privatelink" in result.title
    frame = result.to_polars()["run"]
    assert frame["duration_s"].to_list() == [0.05]
    assert json.loads(frame["overrides"][0]) == payload["overrides"]


def test_a_file_run_unchanged_has_no_overrides() -> None:
    scenario = load_scenario(SCENARIOS / "tier1_peering_cpg.toml")
    assert dict(scenario.overrides) == {}


def _twin(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = str(REPO)
    return subprocess.run(
        [sys.executable, "-m", "twin", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def test_a_listed_name_runs_from_any_folder_and_the_out_folder_says_what_ran(
    tmp_path: Path,
) -> None:
    assert scenario_path("tier1_peering_cpg") == scenarios_dir() / "tier1_peering_cpg.toml"
    assert scenario_path("tier1_peering_cpg.toml") == scenarios_dir() / "tier1_peering_cpg.toml"
    assert scenario_path("no_such_scenario") == Path("no_such_scenario")
    done = _twin(
        "run", "tier1_peering_cpg", "--engine", "des", "--duration", "0.05",
        "--set", "connectivity.tier=privatelink", "--json", "--out", "out",
        cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    payload = json.loads(done.stdout)
    assert payload["overrides"] == {"connectivity.tier": "privatelink", "workload.duration_s": 0.05}
    assert payload["duration_s"] == 0.05
    on_disk = json.loads((tmp_path / "out" / "result.json").read_text())
    assert on_disk["overrides"] == payload["overrides"]
    toml = tomllib.loads((tmp_path / "out" / "scenario.toml").read_text())
    assert toml["connectivity"]["tier"] == "privatelink"
    text = _twin("run", "tier1_peering_cpg", "--engine", "des", "--duration", "0.05",
                 "--set", "connectivity.tier=privatelink", cwd=tmp_path)  # fmt: skip
    assert text.returncode == 0, text.stderr
    first = text.stdout.splitlines()[0]
    assert first.startswith("scenario tier1_peering_cpg with connectivity.tier=privatelink")
    missing = _twin("run", "no_such_scenario", cwd=tmp_path)
    assert missing.returncode == 2
    assert missing.stderr.strip().splitlines() == [
        "twin run: no_such_scenario: scenario file not found, nor a shipped scenario of that "
        "name (twin scenarios lists them)"
    ]
