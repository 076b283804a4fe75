"""A hunt file: which venue scenario, how candidates are launched, measured and kept, and the
budget. Loaded into a frozen, validated :class:`HuntPlan`; every error is one line naming the
file and the field.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

from twin.errors import ConfigError
from twin.scenario import HOURS_PER_DAY
from twin.tomlio import read_toml

# The file a hunt's --out folder holds (twin hunt writes it, twin report reads it).
HUNT_FILE = "hunt.json"

MINUTES_PER_HOUR = 60.0


class Rule(StrEnum):
    """How a candidate is judged against the instance kept so far (the incumbent).

    ``recorded``: each candidate's window mean against the best mean recorded so far, whenever
    it was measured (what a hunter comparing logs does: the hour of day leaks in);
    ``concurrent``: the incumbent is measured alongside each round's candidates, over the same
    window, and the lowest mean of the round is kept (the hour cancels);
    ``sequential``: concurrent, but each candidate stops as soon as a sequential probability
    ratio test on the paired differences decides (:mod:`twin.hunt.sequential`).
    """

    RECORDED = "recorded"
    CONCURRENT = "concurrent"
    SEQUENTIAL = "sequential"


@dataclass(frozen=True)
class SequentialTest:
    """Wald's test of "the candidate is faster by ``delta_us``" against "it is not faster",
    on per-block mean differences (blocks of ``block_minutes``), error rates ``alpha`` (keeping
    a candidate that is not faster) and ``beta`` (dropping one that is faster by ``delta_us``)."""

    alpha: float
    beta: float
    delta_us: float
    block_minutes: float


@dataclass(frozen=True)
class HuntPlan:
    """A validated hunt: read with :func:`load_hunt`."""

    name: str
    source: str
    scenario: Path
    candidates_per_round: int
    window_minutes: float
    budget_instance_hours: float
    start_hour: int
    probe_rate_per_s: float
    rule: Rule
    within_us: float
    price_per_instance_hour: float
    sequential: SequentialTest
    trials: int
    seed: int

    @property
    def window_hours(self) -> float:
        return self.window_minutes / MINUTES_PER_HOUR


def _number(
    source: str,
    table: dict[str, Any],
    prefix: str,
    key: str,
    default: Any,
    ok: Any,
    allowed: str,
    integer: bool = False,
) -> Any:
    field = f"{prefix}{key}"
    value = table.get(key, default)
    if value is ...:
        raise ConfigError(f"{source}: {field} is required ({allowed})")
    kinds: tuple[type, ...] = (int,) if integer else (int, float)
    if isinstance(value, bool) or not isinstance(value, kinds):
        raise ConfigError(f"{source}: {field} = {value!r}: must be a number ({allowed})")
    assert isinstance(value, int | float)
    number = float(value)
    if not math.isfinite(number) or not ok(number):
        raise ConfigError(f"{source}: {field} = {value!r}: allowed: {allowed}")
    return int(number) if integer else number


def _table(source: str, data: dict[str, Any], key: str, known: set[str]) -> dict[str, Any]:
    value = data.get(key, {})
    if not isinstance(value, dict):
        raise ConfigError(f"{source}: [{key}] must be a table")
    unknown = sorted(set(value) - known)
    if unknown:
        raise ConfigError(
            f"{source}: {key}.{unknown[0]}: unknown key; allowed: {', '.join(sorted(known))}"
        )
    return value


def load_hunt(path: str | Path) -> HuntPlan:
    """Read and validate a hunt file (its scenario path is relative to it)."""
    source = str(path)
    data = read_toml(path, "hunt", ConfigError)
    top = {"name", "scenario", "seed", "trials", "hunt", "price", "sequential"}
    unknown = sorted(set(data) - top)
    if unknown:
        raise ConfigError(f"{source}: {unknown[0]}: unknown key; allowed: {', '.join(sorted(top))}")
    scenario = data.get("scenario")
    if not isinstance(scenario, str) or not scenario or "\0" in scenario:
        raise ConfigError(f"{source}: scenario = {scenario!r}: the venue scenario file to hunt on")
    scenario_path = (Path(source).parent / scenario).resolve()
    if not scenario_path.is_file():
        raise ConfigError(f"{source}: scenario = {scenario!r}: no such file")
    hunt = _table(
        source,
        data,
        "hunt",
        {
            "candidates_per_round",
            "window_minutes",
            "budget_instance_hours",
            "start_hour",
            "probe_rate_per_s",
            "rule",
            "within_us",
        },
    )
    price = _table(source, data, "price", {"per_instance_hour_usd"})
    seq = _table(source, data, "sequential", {"alpha", "beta", "delta_us", "block_minutes"})
    rule_word = hunt.get("rule", Rule.RECORDED.value)
    if rule_word not in tuple(Rule):
        raise ConfigError(
            f"{source}: hunt.rule = {rule_word!r}: allowed: {', '.join(r.value for r in Rule)}"
        )
    k = _number(
        source,
        hunt,
        "hunt.",
        "candidates_per_round",
        ...,
        lambda v: 1 <= v <= 1000,
        "1..1000",
        integer=True,
    )
    window = _number(
        source,
        hunt,
        "hunt.",
        "window_minutes",
        ...,
        lambda v: 1 <= v <= 7 * 1440,
        "1..10080 minutes",
    )
    budget = _number(
        source, hunt, "hunt.", "budget_instance_hours", ..., lambda v: v > 0, "> 0 instance-hours"
    )
    if window / MINUTES_PER_HOUR > budget:
        raise ConfigError(
            f"{source}: hunt.window_minutes = {window:g}: longer than the budget of "
            f"{budget:g} instance-hours (hunt.budget_instance_hours)"
        )
    if budget < k * window / MINUTES_PER_HOUR:
        raise ConfigError(
            f"{source}: hunt.budget_instance_hours = {budget:g}: below one round of candidates "
            f"({k} x {window:g} minutes = {k * window / MINUTES_PER_HOUR:g} instance-hours)"
        )
    alpha = _number(source, seq, "sequential.", "alpha", 0.05, lambda v: 0 < v < 0.5, "0..0.5")
    beta = _number(source, seq, "sequential.", "beta", 0.1, lambda v: 0 < v < 0.5, "0..0.5")
    within = _number(source, hunt, "hunt.", "within_us", 100.0, lambda v: v > 0, "> 0 us")
    block = _number(
        source,
        seq,
        "sequential.",
        "block_minutes",
        1.0,
        lambda v: 0 < v <= window,
        "> 0 and <= hunt.window_minutes",
    )
    return HuntPlan(
        name=str(data.get("name", Path(source).stem)),
        source=source,
        scenario=scenario_path,
        candidates_per_round=k,
        window_minutes=window,
        budget_instance_hours=budget,
        start_hour=_number(
            source,
            hunt,
            "hunt.",
            "start_hour",
            0,
            lambda v: 0 <= v < HOURS_PER_DAY,
            "0..23",
            integer=True,
        ),
        probe_rate_per_s=_number(
            source,
            hunt,
            "hunt.",
            "probe_rate_per_s",
            1.0,
            lambda v: 0 < v <= 1e5,
            "0..1e5 requests per second",
        ),
        rule=Rule(rule_word),
        within_us=within,
        price_per_instance_hour=_number(
            source,
            price,
            "price.",
            "per_instance_hour_usd",
            0.0,
            lambda v: v >= 0,
            ">= 0 US dollars",
        ),
        sequential=SequentialTest(
            alpha=alpha,
            beta=beta,
            delta_us=_number(
                source, seq, "sequential.", "delta_us", within, lambda v: v > 0, "> 0 us"
            ),
            block_minutes=block,
        ),
        trials=_number(
            source,
            data,
            "",
            "trials",
            4000,
            lambda v: 1 <= v <= 1_000_000,
            "1..1000000",
            integer=True,
        ),
        seed=_number(
            source, data, "", "seed", 1, lambda v: 0 <= v < 2**63, "0..2**63-1", integer=True
        ),
    )
