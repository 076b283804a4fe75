"""A closed loop's path is built for the loop's own throughput (twin.operating_point), not for
its pacing; an open loop's, and a path that does not depend on the rate, are left alone."""

from __future__ import annotations

from pathlib import Path

from twin.console import format_result
from twin.operating_point import TOLERANCE, operating_rate
from twin.scenario import Scenario, load_scenario
from twin.simulation import prepare, run_prepared, scenario_profile
from twin.topology import place

SCENARIOS = Path(__file__).resolve().parents[2] / "twin" / "scenarios"


def _testbed(**fields: object) -> Scenario:
    return load_scenario(SCENARIOS / "local_loopback.toml").with_fields(
        {"workload.duration_s": 0.2, "workload.warmup_s": 0.02, "workload.seed": 3, **fields}
    )


def test_a_closed_loop_runs_on_the_path_of_its_own_throughput() -> None:
    """Paced far above what one connection reaches, the loop runs back to back: the path is
    built for the rate it then runs (self-consistent within the search's tolerance and the run's
    noise), and that path is faster than the one of a host as busy as the pacing says."""
    scenario = _testbed(**{"workload.loop": "closed", "workload.rate_msgs_per_s": 400_000.0})
    prepared = prepare(scenario)
    rate = prepared.path_rate_msgs_per_s
    assert rate < 0.2 * 400_000.0
    result = run_prepared(prepared)
    assert abs(result.throughput_msgs_per_s - rate) <= 0.03 * rate
    # The run says so: in its JSON and in its report.
    assert result.to_dict()["path_rate_msgs_per_s"] == rate
    assert f"path built for {rate:,.0f} msg/s" in format_result(result)
    at_pacing = prepare(scenario.with_fields({"workload.loop": "open"}))
    assert at_pacing.path_rate_msgs_per_s == 400_000.0
    # Same seed, same search: the same rate on every call.
    assert prepare(scenario).path_rate_msgs_per_s == rate


def test_a_closed_loop_that_keeps_its_pacing_is_built_for_it() -> None:
    scenario = _testbed(**{"workload.loop": "closed", "workload.rate_msgs_per_s": 2_000.0})
    rate = prepare(scenario).path_rate_msgs_per_s
    assert 2_000.0 * (1 - 3 * TOLERANCE) <= rate <= 2_000.0


def test_open_loops_and_rate_free_paths_keep_the_workload_rate() -> None:
    open_loop = _testbed(**{"workload.rate_msgs_per_s": 8_000.0})
    prepared = prepare(open_loop)
    assert prepared.path_rate_msgs_per_s == 8_000.0
    result = run_prepared(prepared)
    assert result.path_rate_msgs_per_s is None and "path built" not in format_result(result)
    # An EC2 tier's path does not depend on the rate: no search, the pacing kept.
    ec2 = load_scenario(SCENARIOS / "tier1_peering_cpg.toml").with_fields(
        {"workload.loop": "closed", "workload.rate_msgs_per_s": 50_000.0}
    )
    profile = scenario_profile(ec2)
    assert operating_rate(ec2, profile, place(ec2, profile)) == 50_000.0
