"""Runs for the explorer: engine choice, sample sizes, and a compact summary of each result.

The explorer must answer a control change within about a second, so every run is sized by a
message budget per engine rather than by the scenario's own ``duration_s``: the simulated window
is the budget divided by the rate the loop will actually reach. What comes back is a
:class:`Summary` of plain numbers and small arrays (cheap to cache and to pickle), built only
from the twin's public results.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from twin import (
    Prepared,
    RunResult,
    Scenario,
    ScenarioError,
    parse,
    percentiles,
    prepare,
    run_prepared,
)
from twin.histogram import cdf_points_us, percentile_ci95_us
from twin.kinds import Loop
from twin.simulation import with_window
from twin.sweep.capacity import CapacityResult, find_capacity, saturation_rate
from twin.tomlio import parse_toml

# Messages per run. The SimPy reference manages ~2-3k messages per wall second; the compiled
# engine does ~50-100k messages per wall second here: 50k keeps a change near one second and
# still puts 500 round trips above the p99.
SAMPLE_MESSAGES = {"des": 2_000, "fast": 50_000}
DEFAULT_SAMPLE_MESSAGES = 2_000
# Messages per point of the multi-run views (latency-throughput curve).
SWEEP_MESSAGES = {"des": 1_000, "fast": 20_000}
# Warm-up before recording: a tenth of the window, and never less than this many messages.
WARMUP_FRACTION = 0.1
WARMUP_MIN_MESSAGES = 100
# The explorer's percentiles as (label, percent): the twin's headline ones.
PERCENTILES = tuple(
    (percentiles.label(k), percentiles.PERCENTILES[k]) for k in percentiles.HEADLINE
)
# Two-sided 95% normal quantile for the order-statistic confidence interval.


def sample_messages(engine: str) -> int:
    """Messages recorded by the explorer's main run on ``engine``."""
    return SAMPLE_MESSAGES.get(engine, DEFAULT_SAMPLE_MESSAGES)


def sweep_messages(engine: str) -> int:
    """Messages per point of a multi-run view on ``engine``."""
    return SWEEP_MESSAGES.get(engine, DEFAULT_SAMPLE_MESSAGES // 2)


def scenario_from_toml(text: str, source: str = "<explorer>") -> Scenario:
    """Parse scenario TOML text (the cache key of every run) back into a scenario."""
    return parse(parse_toml(text, source, ScenarioError), source=source)


def reachable_rate_msgs_per_s(prepared: Prepared) -> float:
    """The rate the loop can reach: the target, or fewer in a closed loop that waits on replies."""
    workload = prepared.scenario.workload
    rate = workload.rate_msgs_per_s
    if workload.loop == Loop.CLOSED:
        # Each account keeps one cycle in flight: at best accounts / unloaded round trip.
        per_cycle_us = prepared.path.unloaded_mean_us()
        cycles_per_s = workload.accounts * 1e6 / max(per_cycle_us, 1e-3)
        rate = min(rate, cycles_per_s * workload.messages_per_cycle)
    return rate


def sized_prepared(scenario: Scenario, messages: int) -> Prepared:
    """``scenario`` prepared once, its window set to record about ``messages`` messages."""
    prepared = prepare(scenario)
    rate = reachable_rate_msgs_per_s(prepared)
    duration_s = messages / rate
    warmup_s = max(WARMUP_FRACTION * duration_s, WARMUP_MIN_MESSAGES / rate)
    return with_window(prepared, duration_s, warmup_s)


def sized(scenario: Scenario, messages: int) -> Scenario:
    """``scenario`` with its window set to record about ``messages`` messages."""
    return sized_prepared(scenario, messages).scenario


# The explorer's capacity search (twin capacity's, sized to answer in seconds): replications
# per rate, and the share of a curve point's messages each of its runs records.
CAPACITY_REPLICATIONS = 2
CAPACITY_MESSAGES_SHARE = 0.5


def capacity_question(scenario: Scenario, messages: int) -> Scenario:
    """The scenario whose capacity the explorer asks for: its window sized to record about
    ``messages`` x :data:`CAPACITY_MESSAGES_SHARE` messages at the busiest station's saturation
    rate (where the ceiling bites), else at the scenario's own rate. ``twin capacity`` on this
    scenario (its ``duration_s`` and ``warmup_s`` given by ``--set``, ``--replications``
    :data:`CAPACITY_REPLICATIONS`) asks the same question."""
    saturation = saturation_rate(scenario)
    rate = saturation if saturation is not None else scenario.workload.rate_msgs_per_s
    duration_s = messages * CAPACITY_MESSAGES_SHARE / rate
    warmup_s = max(WARMUP_FRACTION * duration_s, WARMUP_MIN_MESSAGES / rate)
    return scenario.with_fields({"workload.duration_s": duration_s, "workload.warmup_s": warmup_s})


def capacity(scenario: Scenario, ceiling_us: float, engine: str, messages: int) -> CapacityResult:
    """The highest rate whose p99 stays under ``ceiling_us``: the one search of ``twin
    capacity`` (:func:`twin.sweep.capacity.find_capacity`, its default seed, ladder and
    refinement), on :func:`capacity_question`'s scenario. Its ``answer`` says when it is a bound."""
    return find_capacity(
        capacity_question(scenario, messages),
        p99_ceiling_us=ceiling_us,
        replications=CAPACITY_REPLICATIONS,
        engine=engine,
        progress=False,
    )


@dataclass(frozen=True)
class HopRow:
    name: str
    component: str
    mean_us: float
    p99_us: float  # estimated share of the p99 round trip (see hop_shares_at)
    utilization: float | None


@dataclass(frozen=True)
class Summary:
    """What the explorer shows of one run."""

    scenario: str
    engine: str
    rate_msgs_per_s: float
    stable: bool
    messages: int = 0
    throughput_msgs_per_s: float = 0.0
    rtt_us: dict[str, float] = field(default_factory=dict)
    ci95_us: dict[str, tuple[float, float]] = field(default_factory=dict)
    cdf_us: np.ndarray = field(default_factory=lambda: np.zeros(0))
    cdf_p: np.ndarray = field(default_factory=lambda: np.zeros(0))
    hops: tuple[HopRow, ...] = ()
    saturated: tuple[str, ...] = ()
    stations: tuple[tuple[str, int, float], ...] = ()
    placements: dict[str, str] = field(default_factory=dict)
    result: dict[str, Any] = field(default_factory=dict)
    # The path's spans (a feed's pipeline stages and milestones): statistic -> us.
    spans_us: dict[str, dict[str, float]] = field(default_factory=dict)

    def p(self, key: str) -> float:
        return self.rtt_us[percentiles.key(key)]


def hop_moments_us(prepared: Prepared) -> tuple[np.ndarray, np.ndarray]:
    """Unloaded mean (us) and variance (us^2) of each hop's time, read from the compiled path."""
    return prepared.path.hop_moments_us()


def hop_shares_at(
    mean_us: np.ndarray, variance_us2: np.ndarray, total_mean_us: float, target_us: float
) -> np.ndarray:
    """Estimated time in each hop for a round trip of ``target_us`` (e.g. the p99).

    The engines record per-hop sums only, so the tail is split by the Gaussian conditional
    expectation of independent hops: E[X_i | sum = t] = mean_i + var_i / sum(var) * (t - mean).
    """
    excess = target_us - total_mean_us
    total_var = float(variance_us2.sum())
    if total_var <= 0:
        return mean_us + excess / len(mean_us)
    return mean_us + variance_us2 / total_var * excess


def summarise(result: RunResult, prepared: Prepared) -> Summary:
    """A :class:`Summary` of a run of ``prepared``."""
    if not result.stable:
        return Summary(
            scenario=result.scenario,
            engine=result.engine,
            rate_msgs_per_s=result.rate_msgs_per_s,
            stable=False,
            saturated=result.saturated_stations,
            stations=tuple((s.name, s.servers, s.utilization) for s in result.stations),
            placements=dict(result.placements),
            result=result.to_dict(),
        )
    assert result.counts is not None
    hop_means = np.array([h.mean_us for h in result.hops])
    # Queueing adds variance the unloaded distributions do not know; for a FIFO wait the spread is
    # of the order of its mean, so the measured wait (mean above unloaded) enters squared.
    unloaded_means, unloaded_variances = hop_moments_us(prepared)
    waits = np.maximum(hop_means - unloaded_means, 0.0)
    variances = unloaded_variances + waits**2
    at_p99 = hop_shares_at(hop_means, variances, float(hop_means.sum()), result.rtt_us["p99"])
    cdf_us, cdf_p = cdf_points_us(result.counts)
    return Summary(
        scenario=result.scenario,
        engine=result.engine,
        rate_msgs_per_s=result.rate_msgs_per_s,
        stable=True,
        messages=result.messages,
        throughput_msgs_per_s=result.throughput_msgs_per_s,
        rtt_us=dict(result.rtt_us),
        ci95_us={k: percentile_ci95_us(result.counts, p) for k, p in PERCENTILES},
        cdf_us=cdf_us,
        cdf_p=cdf_p,
        hops=tuple(
            HopRow(h.name, h.component, h.mean_us, float(p), h.utilization)
            for h, p in zip(result.hops, at_p99, strict=True)
        ),
        stations=tuple((s.name, s.servers, s.utilization) for s in result.stations),
        placements=dict(result.placements),
        result=result.to_dict(),
        spans_us={k: dict(v) for k, v in result.spans_us.items()},
    )


def simulate(scenario: Scenario, engine: str, messages: int) -> Summary:
    """Run ``scenario`` sized to ``messages`` on ``engine`` and summarise it."""
    prepared = sized_prepared(scenario, messages)
    return summarise(run_prepared(prepared, engine), prepared)


def curve_rates(scenario: Scenario, points: int = 8) -> list[float]:
    """Rates for a latency-throughput curve: geometric up to just below saturation.

    Without a queueing station (nothing saturates) the curve spans up to ten times the
    scenario's rate.
    """
    saturation = saturation_rate(scenario)
    top = 10 * scenario.workload.rate_msgs_per_s if saturation is None else saturation * 0.97
    bottom = min(top / 50, scenario.workload.rate_msgs_per_s)
    rates = set(np.geomspace(bottom, top, points).round(-2).tolist())
    if scenario.workload.rate_msgs_per_s < top:
        rates.add(float(scenario.workload.rate_msgs_per_s))
    return sorted(r for r in rates if r > 0)
