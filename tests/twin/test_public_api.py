"""The curated public API: sorted, importable, and the error hierarchy matches built-ins."""

from __future__ import annotations

import twin
from twin.errors import MeasurementError, ProfileError, ScenarioError, SimulationError, TwinError


def test_all_is_sorted_and_importable() -> None:
    assert twin.__all__ == sorted(twin.__all__)
    for name in twin.__all__:
        assert hasattr(twin, name), name


def test_errors_inherit_the_matching_builtins() -> None:
    for error in (ScenarioError, ProfileError, MeasurementError):
        assert issubclass(error, TwinError) and issubclass(error, ValueError)
    assert issubclass(SimulationError, TwinError) and issubclass(SimulationError, RuntimeError)


def test_compare_gives_one_tidy_frame_for_several_scenarios() -> None:
    """Issue 22: a notebook-friendly twin.compare(...) returning a tidy frame."""
    from pathlib import Path

    from twin import compare, load_scenario, run

    scenarios = Path(__file__).resolve().parents[2] / "scenarios"
    paths = [scenarios / "tier1_peering_cpg.toml", scenarios / "tier3_privatelink.toml"]
    changes = {"workload.duration_s": 0.1}
    frame = compare(paths, changes)
    assert frame.columns == [
        "scenario", "source", "rate_msgs_per_s", "engine", "stable", "duration_s", "overrides",
        "kind", "statistic", "value_us",
    ]  # fmt: skip
    assert set(frame["overrides"]) == {'{"workload.duration_s": 0.1}'}
    assert set(frame["duration_s"]) == {0.1}
    assert set(frame["scenario"]) == {"tier1_peering_cpg", "tier3_privatelink"}
    alone = run(load_scenario(paths[1]).with_fields(changes))
    row = frame.filter(
        (frame["scenario"] == "tier3_privatelink")
        & (frame["kind"] == "all")
        & (frame["statistic"] == "p99")
    )
    assert row["value_us"][0] == alone.rtt_us["p99"]  # same scenario and seed, same number
    assert compare(paths, changes).equals(frame)
    unstable = compare(paths[:1], {"workload.rate_msgs_per_s": 5e6, "workload.duration_s": 0.01})
    assert unstable["stable"].to_list() == [False] and unstable["value_us"][0] is None
