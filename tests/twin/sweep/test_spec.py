"""Sweep files: expansion, seeds, and bad files refused before any work, naming the field."""

from __future__ import annotations

import pytest

from twin.errors import ScenarioError
from twin.sweep.spec import load_sweep, replication_seeds
from twin.sweep.task import PointTask, run_task

from .conftest import REPO, SCENARIOS

THOUSAND = ", ".join(str(n) for n in range(1, 1001))
BASE = f'scenario = "{SCENARIOS / "tier1_peering_cpg.toml"}"\nengine = "des"\n'


def test_grid_expands_as_a_product_with_the_last_axis_fastest(small_sweep):
    sweep = load_sweep(small_sweep)
    assert sweep.n_tasks == 12
    assert sweep.axes == ("scenario", "workload.rate_msgs_per_s")
    rates = [dict(p.fields)["workload.rate_msgs_per_s"] for p in sweep.points]
    assert rates == [20000, 40000, 60000] * 2
    names = [p.scenario.name for p in sweep.points][::3]
    assert names == ["tier1_peering_cpg", "tier3_privatelink"]
    assert all(p.scenario.workload.duration_s == 0.004 for p in sweep.points)


def test_seeds_are_deterministic_distinct_and_recorded(small_sweep):
    sweep = load_sweep(small_sweep)
    assert sweep.seeds == replication_seeds(7, 2)
    assert len(set(sweep.seeds)) == 2
    assert all(0 <= s < 2**63 for s in sweep.seeds)
    assert replication_seeds(7, 3)[:2] == sweep.seeds  # adding replications keeps old ones


def test_nested_tables_and_together_groups(write_sweep):
    sweep = load_sweep(
        write_sweep(
            BASE
            + """
[grid]
workload.rate_msgs_per_s = [10000, 20000]

[[grid.together]]
"hosts.client.stack" = ["kernel", "bypass"]
"hosts.exchange.stack" = ["kernel", "bypass"]
"""
        )
    )
    assert len(sweep.points) == 4
    stacks = {
        (p.scenario.hosts["client"].stack, p.scenario.hosts["exchange"].stack) for p in sweep.points
    }
    assert stacks == {("kernel", "kernel"), ("bypass", "bypass")}
    assert "client.stack=kernel" in sweep.points[0].label


def test_points_list(write_sweep):
    sweep = load_sweep(
        write_sweep(
            BASE
            + """
[[points]]
"workload.rate_msgs_per_s" = 10000
[[points]]
"workload.rate_msgs_per_s" = 30000
"roles.client.instance" = "c6in.metal"
"""
        )
    )
    assert [p.scenario.workload.rate_msgs_per_s for p in sweep.points] == [10000, 30000]
    assert sweep.points[1].scenario.roles["client"].instance.name == "c6in.metal"


@pytest.mark.parametrize(
    ("body", "named"),
    [
        ('[grid]\n"workload.rat_msgs_per_s" = [1, 2]\n', "workload.rat_msgs_per_s"),
        ('[grid]\n"nonsense.field" = [1]\n', "nonsense"),
        ('[grid]\n"workload.rate_msgs_per_s" = []\n', "grid.workload.rate_msgs_per_s = []"),
        ("[grid]\n", "empty grid"),
        (
            '[grid]\n"workload.rate_msgs_per_s" = [10000, 20000, 30000, -5]\n',
            "workload.rate_msgs_per_s = -5",
        ),
        (
            '[grid]\n"workload.rate_msgs_per_s" = [1e4]\n"connectivity.tier" = ["peering", "x"]\n',
            "connectivity.tier = 'x'",
        ),
        ('[grid]\n"workload.seed" = [1, 2]\n', "workload.seed"),
        ('[grid]\nscenario = ["nope.toml"]\n', "nope.toml"),
        ('colour = "red"\n[grid]\n"workload.rate_msgs_per_s" = [1e4]\n', "colour"),
        ('replications = 0\n[grid]\n"workload.rate_msgs_per_s" = [1e4]\n', "replications = 0"),
        (
            '[set]\n"workload.duration_s" = -1\n[grid]\n"workload.accounts" = [1]\n',
            "set.workload.duration_s = -1",
        ),
        (
            '[[grid.together]]\n"hosts.client.stack" = ["kernel"]\n'
            '"hosts.exchange.stack" = ["kernel", "bypass"]\n',
            "different lengths",
        ),
        ('[[points]]\n"workload.payload_bytes" = 20000\n', "workload.payload_bytes = 20000"),
        ("", "needs a [grid]"),
    ],
)
def test_bad_sweep_files_fail_naming_the_field(write_sweep, body, named):
    path = write_sweep(BASE + body)
    with pytest.raises(ScenarioError, match=None) as info:
        load_sweep(path)
    message = str(info.value)
    assert named in message
    assert str(path) in message
    assert "\n" not in message


def test_bad_value_deep_in_a_grid_fails_before_any_work(write_sweep, tmp_path, monkeypatch):
    from twin.sweep import task

    calls = []
    monkeypatch.setattr(task, "run", lambda *a, **k: calls.append(a))
    path = write_sweep(
        BASE + '[grid]\n"workload.rate_msgs_per_s" = [1e4, 2e4]\n"workload.accounts" = [1, 0]\n'
    )
    with pytest.raises(ScenarioError, match="workload.accounts = 0"):
        load_sweep(path)
    assert calls == []


@pytest.mark.parametrize(
    ("body", "named"),
    [
        ('set = 5\n[grid]\n"workload.accounts" = [1]\n', "set = 5: must be a table"),
        ('engine = []\n[grid]\n"workload.accounts" = [1]\n', "engine = []"),
        ('name = "../../x"\n[grid]\n"workload.accounts" = [1]\n', "it names the output folder"),
        ('name = ""\n[grid]\n"workload.accounts" = [1]\n', "name = ''"),
        (
            f'[grid]\n"workload.accounts" = [{THOUSAND}]\n'
            f'"workload.payload_bytes" = [{THOUSAND}, 1]\n',
            "1,001,000 points; allowed at most 10,000",
        ),
    ],
)
def test_hostile_sweep_files_fail_in_one_line(write_sweep, body, named):
    """Found by fuzzing (issue 21): tracebacks, an output folder escaping sweep-results/, and a
    grid that filled memory before any work started."""
    path = write_sweep(f'scenario = "{SCENARIOS / "tier1_peering_cpg.toml"}"\n' + body)
    with pytest.raises(ScenarioError) as info:
        load_sweep(path)
    message = str(info.value)
    assert named in message and str(path) in message and "\n" not in message


def test_run_task_is_pure_and_records_errors(small_sweep):
    sweep = load_sweep(small_sweep)
    point = sweep.points[0]
    task = PointTask(0, 0, sweep.seeds[0], "des", point.scenario.source, dict(point.scenario.raw))
    a, b = run_task(task), run_task(task)
    assert a.error is None and a.row == b.row
    assert (a.hist_count == b.hist_count).all() and a.hist_count.sum() == a.row["messages"]
    broken = PointTask(0, 0, 1, "nope", point.scenario.source, dict(point.scenario.raw))
    assert "nope" in run_task(broken).error


def test_shipped_sweeps_validate():
    for path in sorted((REPO / "scenarios" / "sweeps").glob("*.toml")):
        sweep = load_sweep(path)
        assert sweep.points, path
    tiers = load_sweep(REPO / "scenarios" / "sweeps" / "tiers_by_rate.toml")
    assert len(tiers.points) == 16 and tiers.replications == 3
