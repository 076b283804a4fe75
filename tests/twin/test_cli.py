"""The ``twin`` CLI contract: JSON keys, output files, exit codes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

import twin.cli as cli_module
from engine_ext.errors import EngineError
from tests.twin.conftest import SCENARIOS
from twin.cli import main
from twin.errors import (
    ConfigError,
    MeasurementError,
    ModelError,
    ProfileError,
    ScenarioError,
    SimulationError,
    TopologyError,
    TwinError,
)
from twin.profile import profiles_dir
from twin.scenario import load_scenario

TIER1 = str(SCENARIOS / "tier1_peering_cpg.toml")


def twin(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "twin", *args], capture_output=True, text=True, check=False
    )


def test_run_json_is_one_object_with_the_contract_keys(tmp_path: Path) -> None:
    proc = twin(
        "run",
        TIER1,
        "--duration",
        "0.05",
        "--seed",
        "4",
        "--json",
        "--engine",
        "des",
        "--out",
        str(tmp_path / "out"),
    )
    assert proc.returncode == 0, proc.stderr
    payload = json.loads(proc.stdout)
    for key in (
        "scenario",
        "engine",
        "rate_msgs_per_s",
        "messages",
        "rtt_us",
        "throughput_msgs_per_s",
        "hops",
    ):
        assert key in payload
    assert set(payload["rtt_us"]) >= {"p50", "p90", "p95", "p99", "p99_9", "max", "mean"}
    assert payload["engine"] == "des" and payload["scenario"] == "tier1_peering_cpg"
    assert all({"name", "mean_us", "utilization"} <= set(h) for h in payload["hops"])
    rtt = payload["rtt_us"]
    assert (
        rtt["p50"] <= rtt["p90"] <= rtt["p95"] <= rtt["p99"] <= rtt["p99_9"] <= rtt["max"] * 1.001
    )
    out = tmp_path / "out"
    assert json.loads((out / "result.json").read_text()) == payload
    table = pq.read_table(out / "rtt_histogram.parquet")
    assert sum(table.column("count").to_pylist()) == payload["messages"]
    assert "Percentile" in (out / "rtt.hgrm").read_text()
    assert (out / "scenario.toml").read_text().startswith("name = ")
    assert not list(out.glob(".*.tmp"))


def test_rate_override_and_human_output(capsys) -> None:
    assert main(["run", TIER1, "--rate", "50000", "--duration", "0.02", "--engine", "des"]) == 0
    text = capsys.readouterr().out
    assert "target 50,000 msg/s" in text and "risk check + matching" in text


def test_hop_table_columns_line_up_with_long_hop_names(capsys) -> None:
    """Tier 3's PrivateLink hops have names longer than the table's usual name column."""
    tier3 = str(SCENARIOS / "tier3_privatelink.toml")
    assert main(["run", tier3, "--rate", "10000", "--duration", "0.05"]) == 0
    text = capsys.readouterr().out
    table = text[text.index("\nhop ") + 1 :].splitlines()
    assert len(table) > 25 and any(len(row.split("  ")[0]) > 44 for row in table)
    # Every row's mean ends in the same column as the header's "mean us".
    mean_end = table[0].index("mean us") + len("mean us")
    assert all(row[mean_end - 3 : mean_end - 2] == "." for row in table[1:]), table


def test_check_and_scenarios(capsys) -> None:
    assert main(["check", TIER1]) == 0
    assert "ok" in capsys.readouterr().out
    assert main(["scenarios"]) == 0
    listing = capsys.readouterr().out
    assert "tier4_cloudfront.toml" in listing and "netperf_rr_c5n_nopg.toml" in listing


def test_missing_file_is_bad_input(capsys, tmp_path: Path) -> None:
    assert main(["check", str(tmp_path / "nope.toml")]) == 2
    assert "nope.toml: scenario file not found" in capsys.readouterr().err


def test_bands_with_out_and_replications_does_all_three(capsys, tmp_path: Path) -> None:
    out = tmp_path / "D"
    args = ["run", TIER1, "--duration", "0.02", "--bands", "--out", str(out)]
    code = main([*args, "--replications", "4", "--workers", "1"])
    assert code == 0
    printed = capsys.readouterr().out
    assert "replications 4 (seed noise, placement fixed), 95% confidence intervals (us):" in printed
    assert "90% calibration bands (the fit's parameter uncertainty, the wider):" in printed
    assert {"result.json", "scenario.toml", "rtt.hgrm"} <= {p.name for p in out.iterdir()}


def test_bands_in_json_keep_the_replication_intervals(capsys) -> None:
    args = ["run", TIER1, "--duration", "0.02", "--bands", "--json"]
    assert main([*args, "--replications", "2", "--workers", "1"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["replications"] == 2
    # 200 round trips per replication: p99 rests on 2 beyond it, p99.9 on 0.2: no interval.
    assert "p50" in payload["ci95"] and not {"p99", "p99_9"} & set(payload["ci95"])
    assert {"p99", "p99_9"} <= set(payload["few_samples"])
    assert payload["ci95_varied"] == "seed" and "placement fixed" in payload["ci95_covers"]
    assert payload["bands_90"]["p50"]["low"] <= payload["bands_90"]["p50"]["high"]


def test_replications_can_vary_the_placement_and_say_so(capsys) -> None:
    """Issue 22: --replications kept the placement fixed and printed a tight interval while
    the sweep drew a placement per replication and printed a wide one, neither saying which.
    Tier 2 has no placement group, so placements differ by whole fabric layers: the interval
    over placements is the wider one, and each says what it covers."""
    tier2 = str(Path(TIER1).with_name("tier2_peering.toml"))
    widths = {}
    for vary in ("seed", "placement"):
        args = ["run", tier2, "--duration", "0.1", "--replications", "4", "--workers", "1"]
        assert main([*args, "--vary", vary, "--json"]) == 0
        payload = json.loads(capsys.readouterr().out)
        assert payload["ci95_varied"] == vary
        # Pooled over replications (and placements), the throughput is still the offered rate.
        assert payload["throughput_msgs_per_s"] == pytest.approx(10_000, rel=0.15)
        lo, hi = payload["ci95"]["p50"]
        widths[vary] = hi - lo
    assert widths["placement"] > 5 * widths["seed"], widths


@pytest.mark.parametrize(
    "error",
    [
        ModelError("station 'x' needs >= 1 server, got 0"),
        ConfigError("loop 'sideways': allowed open, closed"),
        SimulationError("engine status 3"),
        TopologyError("`ip netns add` failed: operation not permitted"),
        EngineError("EngineConfig: max_orders = 0; allowed >= 1"),
    ],
    ids=lambda e: type(e).__name__,
)
def test_every_deliberate_error_is_one_line_and_exit_2(monkeypatch, capsys, error) -> None:
    def fail(args):
        raise error

    monkeypatch.setattr(cli_module, "cmd_run", fail)
    assert main(["run", str(SCENARIOS / "tier1_peering_cpg.toml")]) == 2
    err = capsys.readouterr().err
    assert err == f"twin run: {error}\n"


def test_every_twin_error_is_also_a_builtin() -> None:
    for kind in (ModelError, ConfigError, MeasurementError, ScenarioError, ProfileError):
        assert issubclass(kind, TwinError) and issubclass(kind, ValueError)
    for kind in (SimulationError, TopologyError):
        assert issubclass(kind, TwinError) and issubclass(kind, RuntimeError)


def test_profile_and_set_change_one_run_without_copying_files(capsys, tmp_path: Path) -> None:
    base = [str(SCENARIOS / "local_loopback.toml"), "--duration", "0.2", "--json"]
    assert main(["run", *base]) == 0
    open_loop = json.loads(capsys.readouterr().out)
    profile = tmp_path / "p.toml"
    profile.write_text((profiles_dir() / "local.toml").read_text())
    args = ["--profile", str(profile), "--set", "workload.loop=closed"]
    assert main(["run", *base, *args, "--set", "workload.accounts=4"]) == 0
    closed = json.loads(capsys.readouterr().out)
    assert closed["rtt_us"] != open_loop["rtt_us"]
    assert main(["run", *base, "--out", str(tmp_path / "out"), *args]) == 0
    written = (tmp_path / "out" / "scenario.toml").read_text()
    assert 'loop = "closed"' in written and str(profile.resolve()) in written


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--set", "workload.loop=sideways"], "workload.loop = 'sideways': allowed: open, closed"),
        (["--set", "workload.accounts=0"], "workload.accounts"),
        (["--set", "workload.turns=fifo"], "workload.turns = 'fifo': allowed: free, round_robin"),
        (["--profile", "/nonexistent/p.toml"], "/nonexistent/p.toml: profile file not found"),
        (["--profile", "no_such_shipped_profile"], "no_such_shipped_profile.toml"),
    ],
)
def test_bad_what_if_is_one_line_and_exit_2(capsys, args, message) -> None:
    assert main(["run", str(SCENARIOS / "local_loopback.toml"), *args]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def _with(tmp_path: Path, replace: tuple[str, str]) -> Path:
    text = (SCENARIOS / "tier1_peering_cpg.toml").read_text()
    old, new = replace
    assert old in text
    path = tmp_path / "hostile.toml"
    path.write_text(text.replace(old, new, 1))
    return path


# Hostile values found by fuzzing (issue 21): each was a traceback, a hang or a run of hours.
@pytest.mark.parametrize(
    ("replace", "message"),
    [
        (("warmup_s = ", "warmup_s = 1e308 #"), "workload.warmup_s = 1e+308: allowed: 0..86400"),
        (("warmup_s = ", "warmup_s = 1e9 #"), "workload.warmup_s = 1000000000.0: allowed"),
        (("duration_s = ", "duration_s = 1e308 #"), "workload.duration_s = 1e+308: allowed"),
        (("rate_msgs_per_s = ", "rate_msgs_per_s = 5e-324 #"), "allowed: 0.001..1e9"),
        (("[exchange]", "[exchange]\ngateway_service_us = 1e308"), "allowed: 0.001..1e+07 us"),
        (("[exchange]", "[exchange]\ngateway_service_us = 5e-324"), "allowed: 0.001..1e+07 us"),
        (('az_id = "use1-az4"', 'az_id = "use1-az4\\n"'), "expected an AZ ID like use1-az4"),
        (("seed = 1", "seed = " + "9" * 5000), "an integer with more than 4300 digits"),
        (('profile = "default"', 'profile = "/nonexistent/p.toml"'), "profile file not found"),
    ],
)
def test_hostile_scenario_values_are_one_line_and_exit_2(tmp_path, capsys, replace, message):
    path = _with(tmp_path, replace)
    for command in (["check", str(path)], ["run", str(path), "--json"]):
        assert main(command) == 2
        err = capsys.readouterr().err
        assert message in err and err.count("\n") == 1, err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["validate", "--matrix", "CORPUS", "--json-out", "{tmp}"], "is a folder, not a file"),
        (["validate", "--matrix", "CORPUS", "--json-out", "{tmp}/f/x.json"], "/f' is not a folder"),
        (["calibrate", "TARGETS", "--profile-out", "{tmp}"], "is a folder, not a file"),
        (["testbed", "wakeprobe", "--out", "{tmp}"], "is a folder, not a file"),
        (["report", "{tmp}", "-o", "{tmp}"], "is a folder, not a file"),
        (["run", "SCENARIO", "--out", "{tmp}/f"], "is a file, not a results folder"),
        (["sweep", "SWEEP", "--out", "{tmp}/f"], "is a file, not a results folder"),
        (["testbed", "load", "--rate", "1000", "--out", "{tmp}/f"], "is a file, not a results"),
        (["hunt", "HUNT", "--out", "{tmp}/f/sub"], "/f' is not a folder"),
    ],
    ids=[
        "json-out-folder",
        "json-out-under-a-file",
        "profile-out-folder",
        "testbed-out-folder",
        "report-output-folder",
        "run-out-file",
        "sweep-out-file",
        "testbed-load-out-file",
        "hunt-out-under-a-file",
    ],
)
def test_an_output_is_checked_before_the_work(tmp_path, capsys, args, message):
    """A result written at the end of minutes of work cannot fail only then: a file to write
    that names a folder, a results folder that names a file, or either under a file, is
    refused at once (exit 2, usage error)."""
    (tmp_path / "f").write_text("a file")
    argv = [a.replace("{tmp}", str(tmp_path)) for a in args]
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err


def test_a_run_too_costly_is_refused_unless_forced(tmp_path, capsys) -> None:
    path = _with(tmp_path, ("duration_s = ", "duration_s = 86400 #"))
    assert main(["run", str(path), "--rate", "400000"]) == 2
    err = capsys.readouterr().err
    assert "messages to simulate" in err and "--force" in err and err.count("\n") == 1
    from twin.simulation import check_run_cost, estimated_messages

    scenario = load_scenario(path).with_fields({"workload.rate_msgs_per_s": 400000})
    assert estimated_messages(scenario) > 3e10
    check_run_cost(scenario, force=True)  # forced: no error


def test_json_output_is_strict_json() -> None:
    from twin.jsontext import dumps, finite

    payload = {"a": float("inf"), "b": [1.0, float("nan")], "c": (2, -float("inf")), "d": "x"}
    assert finite(payload) == {"a": None, "b": [1.0, None], "c": [2, None], "d": "x"}
    assert json.loads(dumps(payload)) == {"a": None, "b": [1.0, None], "c": [2, None], "d": "x"}


def test_an_unstable_run_exits_3_after_naming_the_saturated_station(capsys) -> None:
    """Issue 22: an UNSTABLE run exited 0, as if its (absent) latency were an answer."""
    args = ["run", TIER1, "--rate", "5000000", "--duration", "0.01", "--json"]
    assert main(args) == 3
    payload = json.loads(capsys.readouterr().out)
    assert payload["stable"] is False and payload["saturated_stations"]


def test_progress_bars_stay_out_of_redirected_logs() -> None:
    """Issue 22: progress frames were written into redirected logs (42 frames in a file)."""
    with cli_module._progress_bar(10.0, "simulated s") as bar:  # stderr is captured here
        assert bar.disable


def test_the_explorer_sends_no_usage_statistics() -> None:
    import tomllib

    config = tomllib.loads((SCENARIOS.parent / ".streamlit" / "config.toml").read_text())
    assert config["browser"]["gatherUsageStats"] is False


def test_no_shipped_scenarios_is_an_error_not_an_empty_list(capsys, tmp_path, monkeypatch) -> None:
    """Issue 22: in a broken install twin scenarios printed nothing and exited 0."""
    import twin.cli

    monkeypatch.setattr(twin.cli, "shipped_scenarios", lambda: [])
    monkeypatch.setattr(twin.cli, "scenarios_dir", lambda: tmp_path)
    assert main(["scenarios"]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert str(tmp_path) in line and "no shipped scenarios" in line


def test_a_closed_loop_says_what_paces_it(capsys) -> None:
    """Issue 71: --set workload.loop=closed paced the loop at the scenario's rate, silently."""
    args = ["run", TIER1, "--duration", "0.02", "--set", "workload.loop=closed", "--json"]
    assert main(args) == 0
    captured = capsys.readouterr()
    payload = json.loads(captured.out)
    rate = load_scenario(TIER1).workload.rate_msgs_per_s
    assert payload["closed_loop_pacing"] == {
        "rate_msgs_per_s": rate,
        "set_by": "workload.rate_msgs_per_s",
    }
    assert (
        f"paced to share {rate:,.0f} msg/s (the scenario's workload.rate_msgs_per_s" in captured.err
    )
    assert main([*args, "--rate", "5000"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["closed_loop_pacing"]["set_by"] == "--rate"
    assert "share 5,000 msg/s (--rate)" in captured.err
    assert main(["run", TIER1, "--duration", "0.02", "--json"]) == 0  # an open loop: no note
    captured = capsys.readouterr()
    assert "closed_loop_pacing" not in json.loads(captured.out) and "paced" not in captured.err
