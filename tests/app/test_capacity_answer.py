"""Issue 75: one answer to "the highest rate with p99 under X": the explorer's capacity is
``twin capacity``'s for the same question, and it says when it is a bound."""

from __future__ import annotations

import json
from pathlib import Path

from app import runner
from twin import load_scenario
from twin.cli import main
from twin.sweep.capacity import CapacityResult, CurvePoint

SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"


def test_the_explorer_and_twin_capacity_give_the_same_capacity(capsys) -> None:
    path = SCENARIOS / "tier1_peering_cpg.toml"
    messages = 6_000
    explorer = runner.capacity(load_scenario(path), 1_000.0, "fast", messages)
    question = runner.capacity_question(load_scenario(path), messages).workload
    args = [
        "capacity", str(path), "--p99-ceiling-us", "1000", "--json", "--no-progress",
        "--replications", str(runner.CAPACITY_REPLICATIONS),
        "--set", f"workload.duration_s={question.duration_s!r}",
        "--set", f"workload.warmup_s={question.warmup_s!r}",
    ]  # fmt: skip
    assert main(args) == 0
    cli = json.loads(capsys.readouterr().out)
    assert explorer.max_rate_msgs_per_s > 0
    assert cli["max_rate_msgs_per_s"] == explorer.max_rate_msgs_per_s
    assert cli["ci95"] == list(explorer.ci95)
    assert cli["bound"] == explorer.bound and cli["answer"] == explorer.answer
    assert [c["rate_msgs_per_s"] for c in cli["curve"]] == [
        c.rate_msgs_per_s for c in explorer.curve
    ]


def _result(p99s: list[float], ceiling: float, estimate: float) -> CapacityResult:
    rates = [1_000.0 * (i + 1) for i in range(len(p99s))]
    return CapacityResult(
        scenario="s",
        engine="des",
        p99_ceiling_us=ceiling,
        replications=1,
        saturation_rate_msgs_per_s=10_000.0,
        max_rate_msgs_per_s=estimate,
        ci95=(estimate, estimate),
        ceiling_reached=any(p >= ceiling for p in p99s),
        curve=tuple(CurvePoint(r, p, None, (p,)) for r, p in zip(rates, p99s, strict=True)),
    )


def test_the_answer_says_when_it_is_a_bound() -> None:
    never = _result([10.0, 20.0, 30.0], 100.0, 3_000.0)
    assert never.bound == "at least" and never.answer.startswith("at least 3,000 msg/s")
    assert never.to_dict()["bound"] == "at least"
    always = _result([200.0, 300.0], 100.0, 0.0)
    assert always.bound == "below" and always.answer.startswith("below 1,000 msg/s")
    crossed = _result([10.0, 200.0], 100.0, 1_500.0)
    assert crossed.bound is None and crossed.answer.startswith("1,500 msg/s: where p99 crosses")
