"""One load point measured many times (``twin testbed repeat``): live sockperf runs, resumed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from calibration import read
from twin.cli import main
from twin.testbed.sockperf import run_complete


def _repeat(out: Path, *args: str) -> list[str]:
    return ["testbed", "repeat", "--out", str(out), "--rates", "2000", "--durations", "0.5", *args]


@pytest.mark.exclusive  # sockperf's runs
def test_repeat_records_each_runs_percentiles_and_resumes(tmp_path: Path, capsys) -> None:
    assert main(_repeat(tmp_path, "--runs", "3", "--subset", "1")) == 0
    case_dir = tmp_path / "sockperf-udp-loopback-r2000-0.5s"
    result = json.loads((tmp_path / "repeat_sockperf-udp-loopback.json").read_text())
    assert result["plan"] == {
        "system": "sockperf-udp-loopback",
        "tool": "sockperf",
        "protocol": "udp",
        "route": "loopback",
        "connections": 1,
        "runs": 3,
        "subset": 1,
    }
    (case,) = result["cases"]
    for i, run in enumerate(case["runs"]):
        measured = read(case_dir / f"run_{i}")
        assert run == {"p50_us": measured.percentile_us(50), "p99_us": measured.percentile_us(99)}
        assert 0 < run["p50_us"] <= run["p99_us"]
    assert case["one_run"]["runs"] == 3 and case["median_of_subset"] == case["one_run"]
    assert "2000 msg/s, 0.5 s runs" in capsys.readouterr().out

    # A run left unfinished is measured again, the finished ones kept; more runs add to them.
    kept = (case_dir / "run_0" / "rtt.hgrm").stat().st_mtime_ns
    (case_dir / "run_1" / "sockperf.txt").unlink()
    assert main(_repeat(tmp_path, "--runs", "4", "--subset", "1")) == 0
    assert (case_dir / "run_0" / "rtt.hgrm").stat().st_mtime_ns == kept
    assert all(run_complete(case_dir / f"run_{i}") for i in range(4))
    (case,) = json.loads((tmp_path / "repeat_sockperf-udp-loopback.json").read_text())["cases"]
    assert len(case["runs"]) == 4 and case["one_run"]["runs"] == 4


def test_too_few_runs_for_the_subset_is_one_line_and_exit_2(tmp_path: Path, capsys) -> None:
    assert main(_repeat(tmp_path, "--runs", "4", "--subset", "3")) == 2
    err = capsys.readouterr().err.strip()
    assert "runs 4, subset 3" in err and "\n" not in err
    assert not any(tmp_path.iterdir())


@pytest.mark.parametrize(("flag", "value"), [("--durations", "0,2"), ("--rates", "fast")])
def test_bad_repeat_options_exit_2(tmp_path: Path, capsys, flag: str, value: str) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["testbed", "repeat", "--out", str(tmp_path), flag, value])
    assert exc.value.code == 2 and flag in capsys.readouterr().err


def test_the_cli_help_states_the_plans_defaults(capsys) -> None:
    from twin.testbed.repeat import RepeatPlan
    from twin.testbed.systems import Tool

    with pytest.raises(SystemExit):
        main(["testbed", "repeat", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    plan, testbed = RepeatPlan(), RepeatPlan(tool=Tool.TESTBED)
    assert f"default {plan.tool}" in text and f"default {plan.route}" in text
    assert f"default {plan.transport} for sockperf, {testbed.transport} for the testbed" in text
    assert f"(default {testbed.connections})" in text
    assert f"default {','.join(f'{r:g}' for r in plan.rates)}" in text
    assert f"(default {','.join(f'{d:g}' for d in plan.durations_s)})" in text
    assert f"(default {plan.runs})" in text and f"(default {plan.subset})" in text


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--tool", "testbed", "--protocol", "udp"], "the testbed speaks TCP"),
        (["--tool", "testbed", "--route", "relay"], "loopback or veth"),
        (["--connections", "4"], "sockperf runs one"),
        (["--rates", "2000,2000"], "distinct"),
    ],
)
def test_a_plan_the_tool_cannot_run_is_one_line_and_exit_2(
    tmp_path: Path, capsys, args: list[str], says: str
) -> None:
    assert main(_repeat(tmp_path, *args)) == 2
    err = capsys.readouterr().err.strip()
    assert says in err and "\n" not in err
    assert not any(tmp_path.iterdir())


@pytest.mark.exclusive  # the testbed's gateway and load client
def test_repeat_measures_the_testbed_over_its_connections(tmp_path: Path) -> None:
    args = ["--tool", "testbed", "--connections", "2", "--runs", "3", "--subset", "1"]
    assert main(_repeat(tmp_path, *args)) == 0
    result = json.loads((tmp_path / "repeat_testbed-loopback-c2.json").read_text())
    assert result["plan"]["protocol"] == "tcp" and result["plan"]["connections"] == 2
    (case,) = result["cases"]
    case_dir = tmp_path / "testbed-loopback-c2-r2000-0.5s"
    for i, run in enumerate(case["runs"]):
        measured = read(case_dir / f"run_{i}")
        assert measured.conditions["connections"] == 2
        assert run == {"p50_us": measured.percentile_us(50), "p99_us": measured.percentile_us(99)}
    assert case["one_run"]["runs"] == 3
