"""A CI target on any headline statistic, met with replications no longer than it needs."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from tests.twin.conftest import SCENARIOS
from twin.cli import main
from twin.errors import ConfigError
from twin.load import Load
from twin.replicate import CI_SPLIT, CI_TAIL_SAMPLES, target_replication_load
from twin.scenario import load_scenario


def _load(rate: float, duration_s: float) -> Load:
    load = Load.from_workload(load_scenario(SCENARIOS / "tier1_peering_cpg.toml").workload)
    return replace(load, rate_msgs_per_s=rate, duration_us=duration_s * 1e6)


def test_a_replication_behind_a_target_lasts_what_its_statistic_needs() -> None:
    busy = _load(400_000, 1.0)
    assert target_replication_load(busy, "p99").duration_us == pytest.approx(1e6 / CI_SPLIT)
    # p99.9: 200 beyond it is 200,000 round trips, half a second at 400k msg/s.
    p999 = target_replication_load(busy, "p99_9").duration_us
    assert p999 == pytest.approx(CI_TAIL_SAMPLES / 0.001 / 400_000 * 1e6, rel=1e-6)
    quiet = _load(1_000, 1.0)  # p99.9 would need 200 s: never longer than the run
    assert target_replication_load(quiet, "p99_9").duration_us == quiet.duration_us
    assert target_replication_load(busy, "p99").warmup_us == busy.warmup_us
    with pytest.raises(ConfigError, match="statistic 'p42'"):
        target_replication_load(busy, "p42")


def test_target_ci_on_p99_9_is_met_and_says_how(capsys) -> None:
    args = ["run", str(SCENARIOS / "tier1_peering_cpg.toml"), "--rate", "100000"]
    args += ["--duration", "0.4", "--target-ci", "4", "--ci-statistic", "p99_9"]
    assert main([*args, "--workers", "1", "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    lo, hi = payload["ci95"]["p99_9"]
    assert (hi - payload["rtt_us"]["p99_9"]) / payload["rtt_us"]["p99_9"] <= 0.04
    assert payload["ci95_target"] == {"statistic": "p99_9", "pct": 4.0}
    assert f"{payload['replications']} independent replications of" in payload["ci95_method"]
    assert payload["replications"] >= 5


def test_a_target_gives_the_same_answer_on_one_worker_and_on_a_kept_pool_of_two() -> None:
    from twin.replicate import run_until
    from twin.simulation import apply_overrides, prepare

    scenario = load_scenario(SCENARIOS / "tier1_peering_cpg.toml")
    prepared = prepare(apply_overrides(scenario, 50_000, 0.05, 7))
    # A target the first round cannot meet, so a second round runs on the same pool.
    args = (prepared.path, prepared.load, 0.004)
    one = run_until(*args, workers=1, min_replications=3, max_replications=8)
    two = run_until(*args, workers=2, min_replications=3, max_replications=8)
    assert one.replications == two.replications > 3
    assert one.estimates == two.estimates and one.ci95 == two.ci95
