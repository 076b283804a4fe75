"""The placement hunt: known answers, the sequential test's error rates, bad input, the CLI."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import norm

from tests.twin.conftest import SCENARIOS
from twin.cli import main
from twin.errors import ConfigError
from twin.histogram import sd_from_counts_us
from twin.hunt import sequential
from twin.hunt.classes import ClassTable, _level_frequencies, class_table, probe_waits_us
from twin.hunt.plan import HuntPlan, Rule, SequentialTest, load_hunt
from twin.hunt.simulate import _sequential_round, play, run_hunt, window_average
from twin.scenario import load_scenario
from twin.simulation import prepare, run_prepared

HUNT = SCENARIOS / "hunts" / "tokyo_hunt.toml"


def two_classes(p: float, mean_a: float, mean_b: float, sd: float, swing: np.ndarray | None = None):
    hourly = np.zeros(24) if swing is None else swing
    return ClassTable(
        levels=("a", "b"),
        probability=np.array([p, 1 - p]),
        cpg_probability=np.array([1.0, 0.0]),
        mean_us=np.vstack([mean_a + hourly, mean_b + hourly]),
        sd_us=np.full((2, 24), sd),
    )


def plan(**changes: object) -> HuntPlan:
    base = HuntPlan(
        name="test",
        source="<test>",
        scenario=Path("unused.toml"),
        candidates_per_round=2,
        window_minutes=60.0,
        budget_instance_hours=2.0,
        start_hour=0,
        probe_rate_per_s=1.0,
        rule=Rule.CONCURRENT,
        within_us=1.0,
        price_per_instance_hour=0.01,
        sequential=SequentialTest(alpha=0.05, beta=0.1, delta_us=20.0, block_minutes=1.0),
        trials=20_000,
        seed=3,
    )
    return dataclasses.replace(base, **changes)


def test_window_average_integrates_a_periodic_profile() -> None:
    hourly = np.arange(24, dtype=float)
    for start, hours in ((0.0, 1.0), (2.5, 3.0), (23.5, 1.0), (5.25, 48.0), (30.0, 0.5)):
        grid = np.linspace(start, start + hours, 200_001)[:-1]
        brute = hourly[np.floor(np.mod(grid, 24)).astype(int)].mean()
        assert window_average(hourly, np.array(start), hours) == pytest.approx(brute, rel=1e-4)


def test_the_chance_of_keeping_the_faster_class_matches_its_analytic_value() -> None:
    # Two candidates, one round, measured together: the faster class is kept when both are
    # faster, or when one is and its window mean comes out lower.
    p, delta, sd = 0.3, 30.0, 1000.0
    hunt = plan()
    trials = play(hunt, two_classes(p, 1000.0, 1000.0 + delta, sd), np.random.default_rng(1))
    probes = hunt.probe_rate_per_s * 3600 * hunt.window_hours
    analytic = p**2 + 2 * p * (1 - p) * norm.cdf(delta / (sd * np.sqrt(2 / probes)))
    observed = float(np.mean(trials.kept == 0))
    se = np.sqrt(analytic * (1 - analytic) / hunt.trials)
    assert observed == pytest.approx(analytic, abs=4 * se)
    assert np.all(trials.instance_hours == 2.0) and np.all(trials.rounds == 1)


def test_comparing_with_a_recorded_mean_lets_the_hour_in() -> None:
    # One candidate per round: round 1 at 00 UTC, round 2 at 01 UTC, when the whole day is
    # 200 us slower; class a is 50 us faster than class b. Recorded: a second candidate of class
    # a (1200 us at 01) never beats a first of class b recorded at 00 (1050 us). Concurrent: the
    # first is measured again at 01 (1250 us) and loses to it with probability Phi(50 / noise).
    swing = np.zeros(24)
    swing[1] = 200.0
    sd, p = 1000.0, 0.4
    table = two_classes(p, 1000.0, 1050.0, sd, swing)
    recorded = plan(rule=Rule.RECORDED, candidates_per_round=1, budget_instance_hours=3.0)
    noise = sd * np.sqrt(2 / 3600)
    expected = {
        Rule.RECORDED: p + (1 - p) * p * norm.cdf(-150.0 / noise),
        Rule.CONCURRENT: p + (1 - p) * p * norm.cdf(50.0 / noise),
    }
    for rule, analytic in expected.items():
        trials = play(dataclasses.replace(recorded, rule=rule), table, np.random.default_rng(2))
        assert np.all(trials.rounds == 2)
        se = np.sqrt(analytic * (1 - analytic) / recorded.trials)
        assert np.mean(trials.kept == 0) == pytest.approx(analytic, abs=4 * se), rule


def _round(table: ClassTable, test: SequentialTest, n: int, seed: int):
    hunt = plan(rule=Rule.SEQUENTIAL, window_minutes=7 * 1440.0, sequential=test)
    challenger = np.zeros((n, 1), dtype=int)  # class a against an incumbent of class b
    return _sequential_round(
        hunt,
        table,
        challenger,
        np.ones(n, dtype=int),
        np.zeros((n, 1)),
        np.random.default_rng(seed),
    )


def test_the_sequential_test_keeps_its_error_rates() -> None:
    """Wald's bounds: a candidate faster by delta is kept with probability at least
    1 - beta / (1 - alpha); one that is not faster at most alpha / (1 - beta)."""
    test = SequentialTest(alpha=0.05, beta=0.1, delta_us=20.0, block_minutes=1.0)
    sd, n = 500.0, 6000
    s2 = 2 * sd**2 / 60.0  # one probe per second, one-minute blocks
    asn0, asn1 = sequential.expected_blocks(test.alpha, test.beta, test.delta_us, s2)
    faster = two_classes(0.5, 1000.0, 1000.0 + test.delta_us, sd)
    kept, _, hours = _round(faster, test, n, seed=5)
    power = float(np.mean(kept == 0))
    floor = 1 - test.beta / (1 - test.alpha)
    assert power >= floor - 3 * np.sqrt(floor * (1 - floor) / n)
    # Wald's expected lengths ignore the overshoot at the boundary: the true ones are longer.
    assert asn1 <= np.mean(hours) * 60 <= 1.3 * asn1
    equal = two_classes(0.5, 1000.0, 1000.0, sd)
    kept0, _, hours0 = _round(equal, test, n, seed=6)
    alpha_hat = float(np.mean(kept0 == 0))
    bound = test.alpha / (1 - test.beta)
    assert alpha_hat <= bound + 3 * np.sqrt(bound * (1 - bound) / n)
    assert alpha_hat > 0.01  # it does take the risk it is allowed
    assert asn0 <= np.mean(hours0) * 60 <= 1.3 * asn0
    # The fixed window with the same error rates is longer than either expected length.
    assert sequential.fixed_blocks(test.alpha, test.beta, test.delta_us, s2) > max(asn0, asn1)


def test_a_hunt_is_reproducible_from_its_seed() -> None:
    table = two_classes(0.2, 1000.0, 1040.0, 800.0)
    hunt = plan(trials=500, budget_instance_hours=10.0)
    first = run_hunt(hunt, table)
    assert run_hunt(hunt, table) == first
    assert run_hunt(dataclasses.replace(hunt, seed=4), table) != first


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "hunt.toml"
    path.write_text(f'scenario = "{(SCENARIOS / "venue_api_keepalive.toml").as_posix()}"\n' + text)
    return path


@pytest.mark.parametrize(
    ("body", "field"),
    [
        (
            "[hunt]\ncandidates_per_round = 4\nwindow_minutes = 60\nbudget_instance_hours = 2\n",
            "hunt.budget_instance_hours",
        ),
        (
            "[hunt]\ncandidates_per_round = 1\nwindow_minutes = 600\nbudget_instance_hours = 2\n",
            "hunt.window_minutes",
        ),
        (
            "[hunt]\ncandidates_per_round = 1\nwindow_minutes = 60\nbudget_instance_hours = 2\n"
            'rule = "best"\n',
            "hunt.rule",
        ),
        (
            "[hunt]\ncandidates_per_round = 0\nwindow_minutes = 60\nbudget_instance_hours = 2\n",
            "hunt.candidates_per_round",
        ),
    ],
)
def test_bad_hunt_files_get_one_line_and_exit_2(
    tmp_path: Path, body: str, field: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _write(tmp_path, body)
    with pytest.raises(ConfigError, match=field.replace(".", r"\.")):
        load_hunt(path)
    assert main(["hunt", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and str(path) in err and field in err


def test_twin_hunt_json_and_report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "hunt"
    assert main(["hunt", str(HUNT), "--trials", "300", "--json", "--out", str(out)]) == 0
    payload = json.loads(capsys.readouterr().out)
    for key in (
        "p_within",
        "gain_vs_random_us",
        "gap_to_shared_cpg_us",
        "instance_hours",
        "cost_usd",
        "wall_hours",
        "rules",
        "measurement",
        "levels",
    ):
        assert key in payload
    assert [r["rule"] for r in payload["rules"]] == [str(r) for r in Rule]
    assert payload == json.loads((out / "hunt.json").read_text())
    assert main(["report", str(out), "-o", str(tmp_path / "hunt.html")]) == 0
    page = (tmp_path / "hunt.html").read_text()
    assert "Ranking a faster placement first" in page and "plotly" in page
    assert load_hunt(HUNT).rule == payload["rule"]


def test_the_class_table_agrees_with_a_simulated_hour() -> None:
    """The table's moments (hop sums plus the probes' own M/G/1 waits) against the engine."""
    scenario = load_scenario(SCENARIOS / "venue_api_keepalive.toml")
    table = class_table(scenario, 10.0)
    probed = scenario.with_fields({"workload.rate_msgs_per_s": 10.0})
    _, examples = _level_frequencies(probed)
    level, hour = "cross_datacenter", 3
    i = table.levels.index(level)
    one_hour = probed.with_fields({"day.hour": hour, "workload.duration_s": 3000.0})
    result = run_prepared(prepare(one_hour, placements=examples[level]))
    se = table.sd_us[i, hour] / np.sqrt(result.messages)
    assert result.rtt_us["mean"] == pytest.approx(table.mean_us[i, hour], abs=4 * se)
    assert sd_from_counts_us(result.counts) == pytest.approx(table.sd_us[i, hour], rel=0.05)
    assert probe_waits_us(prepare(one_hour).path, 10.0)[0] > 0.0  # the probes do queue a little
