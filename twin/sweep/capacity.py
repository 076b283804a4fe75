"""Capacity at a latency ceiling: the highest rate whose p99 stays under it, with uncertainty.

The search runs replications (independent seeds) at a coarse ladder of rates below the rate at
which some station saturates (offered utilization 1, from the compiled path: no simulation needed
for that bound), finds the last rate whose mean p99 is under the ceiling and the rate after it,
then bisects that bracket ``refine`` times. The answer interpolates the mean p99 curve linearly
at the ceiling; its 95% interval is where the curves of the p99's upper and lower confidence
bounds cross the ceiling (the rates at which p99 is under the ceiling with confidence, and over
it with confidence). A rate with any unstable replication counts as over the ceiling.

**A curve that falls first.** Threads that sleep between messages pay wake-ups at low load,
which fade as the load rises, so a p99 can fall with the rate before queueing makes it rise
(the live host's model: :mod:`twin.components.loopback`). The answer is then the highest rate
under the ceiling, and the lowest rate from which the p99 stays under it is reported too
(:attr:`CapacityResult.under_ceiling_from_msgs_per_s`): below it the ceiling is missed for the
opposite reason. Only when every rate of the ladder is over the ceiling does the search go down
from the lowest, halving the rate.

**Where the ceiling bites, and whether the run length matters.** Utilization grows in
proportion to the rate, so the answer sits at utilization ``rate / saturation rate`` of the
busiest station. A queue that close to 1 forgets its start slowly: the relaxation time of an
M/M/1 queue is ``1 / (mu (1 - sqrt(rho))^2)`` (Morse, "Stochastic properties of waiting lines",
Operations Research 3(3), 1955; taken here with ``mu`` the station's whole service rate, the
saturation rate). When the warm-up is shorter than that, or the measured window shorter than
ten of it, the p99 near the ceiling is still growing with the run length, and so is the answer:
:class:`CapacityResult` says so (``depends_on_run_length``) instead of printing an interval that
a longer run would not overlap.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from tqdm import tqdm

from twin.dists import ZERO
from twin.errors import ScenarioError
from twin.replicate import t_interval
from twin.results import offered_utilization
from twin.scenario import Scenario
from twin.simulation import DEFAULT_ENGINE, prepare
from twin.sweep.executors import run_tasks
from twin.sweep.spec import Point, Sweep, replication_seeds
from twin.sweep.task import PointTask, TaskOutcome, task_key

RATE_FIELD = "workload.rate_msgs_per_s"
# Coarse ladder as fractions of the saturation rate: dense near 1, where queueing tails grow.
# A 1 ms ceiling over a ~100 us base path is crossed only at utilizations above ~0.99.
DEFAULT_FRACTIONS = (0.1, 0.3, 0.5, 0.7, 0.8, 0.9, 0.95, 0.98, 0.99, 0.995, 0.999)
MAX_DOWNWARD_STEPS = 6


@dataclass(frozen=True)
class CurvePoint:
    """p99 across replications at one rate (``inf`` when any replication was unstable)."""

    rate_msgs_per_s: float
    p99_us: float
    ci95: tuple[float, float] | None
    p99_runs_us: tuple[float, ...]

    @property
    def stable(self) -> bool:
        return math.isfinite(self.p99_us)


@dataclass(frozen=True)
class CapacityResult:
    """The answer of :func:`find_capacity` and the curve behind it."""

    scenario: str
    engine: str
    p99_ceiling_us: float
    replications: int
    saturation_rate_msgs_per_s: float | None
    max_rate_msgs_per_s: float
    ci95: tuple[float, float]
    ceiling_reached: bool
    curve: tuple[CurvePoint, ...]
    failures: dict[str, str] = field(default_factory=dict)
    warmup_s: float = 0.0
    duration_s: float = 0.0
    # The lowest rate from which the mean p99 stays under the ceiling up to the answer (a p99
    # that falls with load before it rises); None when it is under from the lowest rate tried.
    under_ceiling_from_msgs_per_s: float | None = None
    # The scenario's fields changed from its file (twin.scenario.Scenario.overrides).
    overrides: Mapping[str, Any] = field(default_factory=dict)

    @property
    def bound(self) -> str | None:
        """Whether the answer is a bound rather than a crossing: ``"at least"`` when p99 stayed
        under the ceiling at every rate tried (the capacity is the highest rate tried or more),
        ``"below"`` when it was over at every rate (the capacity is under the lowest rate
        tried), None when the p99 curve crosses the ceiling between two rates tried."""
        if not self.ceiling_reached:
            return "at least"
        if self.max_rate_msgs_per_s == 0.0:
            return "below"
        return None

    @property
    def answer(self) -> str:
        """The answer in words, saying when it is a bound (:attr:`bound`): what the explorer
        shows and ``twin capacity`` prints."""
        lowest = self.curve[0].rate_msgs_per_s if self.curve else 0.0
        if self.bound == "below":
            return f"below {lowest:,.0f} msg/s: p99 is over the ceiling at every rate tried"
        rate = f"{self.max_rate_msgs_per_s:,.0f} msg/s"
        if self.bound == "at least":
            return (
                f"at least {rate}: p99 stayed under the ceiling up to the highest rate tried "
                "(a bound, not a crossing)"
            )
        return f"{rate}: where p99 crosses the ceiling"

    @property
    def utilization_at_capacity(self) -> float | None:
        """Offered utilization of the busiest station at the answer (None: no station)."""
        sat = self.saturation_rate_msgs_per_s
        return self.max_rate_msgs_per_s / sat if sat else None

    @property
    def relaxation_time_s(self) -> float | None:
        """The busiest station's M/M/1 relaxation time at the answer's load (module docstring)."""
        rho, sat = self.utilization_at_capacity, self.saturation_rate_msgs_per_s
        if rho is None or sat is None or not 0 < rho < 1:
            return None
        return 1.0 / (sat * (1.0 - math.sqrt(rho)) ** 2)

    @property
    def depends_on_run_length(self) -> bool:
        """True when the runs are too short for the queue at the answer's load to settle."""
        tau = self.relaxation_time_s
        return tau is not None and (self.warmup_s < tau or self.duration_s < 10 * tau)

    def to_dict(self) -> dict[str, Any]:
        """The JSON shape of ``twin capacity --json``."""

        def finite(x: float) -> float | None:
            return x if math.isfinite(x) else None

        return {
            "max_rate_msgs_per_s": self.max_rate_msgs_per_s,
            "ci95": list(self.ci95),
            "curve": [
                {
                    "rate_msgs_per_s": c.rate_msgs_per_s,
                    "p99_us": finite(c.p99_us),
                    "p99_ci95_us": list(c.ci95) if c.ci95 and c.stable else None,
                    "stable": c.stable,
                }
                for c in self.curve
            ],
            "scenario": self.scenario,
            "engine": self.engine,
            "p99_ceiling_us": self.p99_ceiling_us,
            "replications": self.replications,
            "saturation_rate_msgs_per_s": self.saturation_rate_msgs_per_s,
            "ceiling_reached": self.ceiling_reached,
            "utilization_at_capacity": self.utilization_at_capacity,
            "relaxation_time_s": self.relaxation_time_s,
            "warmup_s": self.warmup_s,
            "duration_s": self.duration_s,
            "depends_on_run_length": self.depends_on_run_length,
            "under_ceiling_from_msgs_per_s": self.under_ceiling_from_msgs_per_s,
            "bound": self.bound,
            "answer": self.answer,
            "overrides": dict(self.overrides),
        }


def saturation_rate(scenario: Scenario) -> float | None:
    """Rate at which the busiest station reaches utilization 1 (None without stations)."""
    prepared = prepare(scenario)
    rho = offered_utilization(prepared.path, prepared.load)
    if rho.size == 0 or not np.max(rho) > 0:
        return None
    return float(scenario.workload.rate_msgs_per_s / np.max(rho))


def may_fall_with_load(scenario: Scenario) -> bool:
    """Whether the scenario's p99 may fall as the rate rises: some station sleeps when idle (its
    wake-ups fade with the load) or takes batches (its cost per batch is shared as they grow).
    Without either, a path's latency only grows with the load (queueing)."""
    path = prepare(scenario).path
    batches = path.station_wake["batch_code"] != ZERO.code
    return bool(path.station_sleeps().any() or batches.any())


def _curve_point(rate: float, p99s: list[float]) -> CurvePoint:
    runs = tuple(p99s)
    if not all(math.isfinite(p) for p in runs):
        return CurvePoint(rate, math.inf, None, runs)
    mean = float(np.mean(runs))
    return CurvePoint(rate, mean, t_interval(mean, runs), runs)


def _last_under(values: Sequence[float], ceiling: float) -> int | None:
    """Index of the last value under ``ceiling`` (None: none is)."""
    under = [j for j, value in enumerate(values) if value < ceiling]
    return under[-1] if under else None


def crossing(rates: Sequence[float], values: Sequence[float], ceiling: float, side: str) -> float:
    """Rate at which the ``values`` curve rises through ``ceiling`` after its last value under it
    (on a rising curve, where it first reaches it).

    Linear interpolation between the bracketing rates; when the upper side of the bracket is
    unstable (infinite) the answer is the bracket's ``low`` end, ``high`` end or ``mid``dle, as
    ``side`` asks. No value under the ceiling gives the first rate; the last value under it
    gives the last rate.
    """
    j = _last_under(values, ceiling)
    if j is None:
        return float(rates[0])
    if j == len(values) - 1:
        return float(rates[-1])
    r0, r1, v0, value = rates[j], rates[j + 1], values[j], values[j + 1]
    if not math.isfinite(value):
        return float({"low": r0, "high": r1, "mid": (r0 + r1) / 2}[side])
    return float(r0 + (ceiling - v0) * (r1 - r0) / (value - v0))


def under_ceiling_from(
    rates: Sequence[float], values: Sequence[float], ceiling: float
) -> float | None:
    """The rate from which the curve stays under ``ceiling`` up to its last value under it: where
    a curve over the ceiling at its lowest rates falls through it (linear interpolation), or
    None when it is under from its first rate (or never)."""
    j = _last_under(values, ceiling)
    if j is None:
        return None
    first = j
    while first > 0 and values[first - 1] < ceiling:
        first -= 1
    if first == 0:
        return None
    r0, r1, v0, v1 = rates[first - 1], rates[first], values[first - 1], values[first]
    if not math.isfinite(v0):
        return float(r1)
    return float(r0 + (v0 - ceiling) * (r1 - r0) / (v0 - v1))


def capacity_from_curve(
    rates: Sequence[float], p99_us: Sequence[float], ceiling_us: float
) -> tuple[float | None, str]:
    """The highest rate whose p99 stays under ``ceiling_us``, and how it was found: None when
    every rate is over it, the highest rate when the last one is under it, else the linear
    crossing after the last rate under it (the middle of the bracket when its upper end is
    unstable); a p99 over the ceiling at the lowest rates (wake-ups that fade with load) is
    said. One rule for ``twin capacity`` and the explorer's curve."""
    j = _last_under(p99_us, ceiling_us) if rates else None
    if j is None:
        return None, "p99 is over the ceiling at every rate tried"
    low = under_ceiling_from(rates, p99_us, ceiling_us)
    if j == len(p99_us) - 1:
        if low is None:
            return float(rates[-1]), "p99 stays under the ceiling at every rate tried"
        return float(rates[-1]), (
            f"p99 stays under the ceiling from {low:,.0f} msg/s up to the highest rate tried "
            "(over it below, where wake-ups are paid)"
        )
    found = crossing(rates, p99_us, ceiling_us, "mid")
    if low is None:
        return found, "p99 crosses the ceiling"
    return found, (
        f"p99 crosses the ceiling (under it from {low:,.0f} msg/s: over it below, where "
        "wake-ups are paid)"
    )


class _Evaluator:
    """Runs replications at rates through an executor and remembers every outcome."""

    def __init__(self, scenario: Scenario, engine: str, seeds: tuple[int, ...], **run_args: Any):
        self.scenario = scenario
        self.engine = engine
        self.seeds = seeds
        self.run_args = run_args
        self.p99: dict[float, list[float]] = {}
        self.outcomes: dict[float, list[TaskOutcome]] = {}
        self.failures: dict[str, str] = {}
        self.bar = tqdm(
            desc=f"capacity {scenario.name}",
            unit="run",
            file=sys.stderr,
            disable=not run_args.pop("progress", True) or not sys.stderr.isatty(),
            dynamic_ncols=True,
            total=0,
        )

    def evaluate(self, rates: Sequence[float]) -> None:
        new = [r for r in rates if r not in self.p99]
        tasks = []
        for i, rate in enumerate(new):
            point = self.scenario.with_fields({RATE_FIELD: rate})
            for r, seed in enumerate(self.seeds):
                tasks.append(PointTask(i, r, seed, self.engine, point.source, dict(point.raw)))
        self.bar.total += len(tasks)
        self.bar.refresh()
        results: dict[float, list[TaskOutcome]] = {rate: [] for rate in new}
        for task, outcome in run_tasks(tasks, **self.run_args):
            rate = new[task.point_id]
            if isinstance(outcome, TaskOutcome) and outcome.error is None:
                results[rate].append(outcome)
            else:
                error = outcome.error if isinstance(outcome, TaskOutcome) else repr(outcome)
                self.failures[f"rate {rate:g} replication {task.replication}"] = str(error)
            self.bar.update(1)
        for rate, done in results.items():
            if len(done) < len(self.seeds):
                raise ScenarioError(
                    f"{self.scenario.source}: capacity run at {rate:g} msg/s failed: "
                    + "; ".join(self.failures.values())
                )
            done.sort(key=lambda o: o.replication)
            self.outcomes[rate] = done
            self.p99[rate] = [o.row["p99"] if o.row["stable"] else math.inf for o in done]

    def curve(self) -> list[CurvePoint]:
        return [_curve_point(rate, self.p99[rate]) for rate in sorted(self.p99)]


def find_capacity(
    scenario: Scenario,
    *,
    p99_ceiling_us: float,
    replications: int = 3,
    seed: int = 1,
    engine: str = DEFAULT_ENGINE,
    rates: Sequence[float] | None = None,
    refine: int = 3,
    executor: str = "local",
    workers: int | None = None,
    scheduler: str | None = None,
    progress: bool = True,
    out_dir: Path | None = None,
) -> CapacityResult:
    """Highest rate whose mean p99 stays under ``p99_ceiling_us``, with a 95% interval."""
    if not p99_ceiling_us > 0:
        raise ScenarioError(f"p99 ceiling {p99_ceiling_us} us: allowed: > 0")
    if refine < 0:
        raise ScenarioError(f"--refine {refine}: allowed: >= 0")
    sat = saturation_rate(scenario)
    if rates is None:
        if sat is None:
            raise ScenarioError(
                f"{scenario.source}: no queueing station bounds the rate; give --rates"
            )
        rates = [sat * f for f in DEFAULT_FRACTIONS]
    seeds = replication_seeds(seed, replications)
    ev = _Evaluator(
        scenario,
        engine,
        seeds,
        executor=executor,
        workers=workers,
        scheduler=scheduler,
        progress=progress,
    )
    try:
        ordered = sorted(rates)
        # The lowest rate first: over the ceiling on a path whose p99 only rises with the load,
        # the rest is moot.
        ev.evaluate(ordered[:1])
        if may_fall_with_load(scenario) or ev.curve()[0].p99_us < p99_ceiling_us:
            ev.evaluate(ordered[1:])
        if _last_under([c.p99_us for c in ev.curve()], p99_ceiling_us) is None:
            # Over the ceiling at every rate: halve the lowest, all steps in one batch.
            ev.evaluate([ordered[0] / 2**k for k in range(1, MAX_DOWNWARD_STEPS + 1)])
        for _ in range(refine):
            curve = ev.curve()
            j = _last_under([c.p99_us for c in curve], p99_ceiling_us)
            if j is None or j == len(curve) - 1:
                break
            ev.evaluate([(curve[j].rate_msgs_per_s + curve[j + 1].rate_msgs_per_s) / 2])
    finally:
        ev.bar.close()
    curve = ev.curve()
    r = [c.rate_msgs_per_s for c in curve]
    mean = [c.p99_us for c in curve]
    upper = [c.ci95[1] if c.ci95 else c.p99_us for c in curve]
    lower = [c.ci95[0] if c.ci95 else c.p99_us for c in curve]
    reached = any(m >= p99_ceiling_us for m in mean)
    found, _ = capacity_from_curve(r, mean, p99_ceiling_us)
    if found is None:
        # Over the ceiling at every rate tried: the capacity is below the lowest one.
        estimate, low, high = 0.0, 0.0, r[0]
    elif not reached:
        # Never over the ceiling: at least the highest rate tried, below saturation.
        estimate, low = found, found
        high = max(sat, r[-1]) if sat is not None else r[-1]
    else:
        estimate = found
        low = min(crossing(r, upper, p99_ceiling_us, "low"), estimate)
        high = max(crossing(r, lower, p99_ceiling_us, "high"), estimate)
    result = CapacityResult(
        scenario=scenario.name,
        engine=engine,
        p99_ceiling_us=p99_ceiling_us,
        replications=replications,
        saturation_rate_msgs_per_s=sat,
        max_rate_msgs_per_s=estimate,
        ci95=(low, high),
        ceiling_reached=reached,
        curve=tuple(curve),
        failures=ev.failures,
        warmup_s=scenario.workload.warmup_s,
        duration_s=scenario.workload.duration_s,
        under_ceiling_from_msgs_per_s=(
            under_ceiling_from(r, mean, p99_ceiling_us) if found is not None else None
        ),
        overrides=dict(scenario.overrides),
    )
    if out_dir is not None:
        _write_folder(out_dir, scenario, engine, seed, seeds, ev, result)
    return result


def _write_folder(
    out_dir: Path,
    scenario: Scenario,
    engine: str,
    seed: int,
    seeds: tuple[int, ...],
    ev: _Evaluator,
    result: CapacityResult,
) -> None:
    """The capacity runs as a sweep results folder over rate (so ``twin report`` reads it)."""
    import hashlib

    from twin.sweep import store
    from twin.sweep.runner import finish

    if store.read_manifest(out_dir) is not None:
        raise ScenarioError(f"{out_dir}: already holds a sweep; choose another --out")
    rates = sorted(ev.outcomes)
    points = tuple(
        Point(i, ((RATE_FIELD, rate),), scenario.with_fields({RATE_FIELD: rate}))
        for i, rate in enumerate(rates)
    )
    text = scenario.to_toml() + f"# capacity p99 ceiling {result.p99_ceiling_us} us\n"
    sweep = Sweep(
        name=f"capacity_{scenario.name}",
        description=f"capacity search, p99 ceiling {result.p99_ceiling_us:g} us",
        source=scenario.source,
        sha256=hashlib.sha256(text.encode()).hexdigest(),
        engine=engine,
        replications=len(seeds),
        seed=seed,
        seeds=seeds,
        axes=(RATE_FIELD,),
        points=points,
    )
    manifest = store.new_manifest(sweep)
    manifest["capacity"] = result.to_dict()
    store.write_manifest(out_dir, manifest)
    schema = store.row_schema(sweep)
    for i, rate in enumerate(rates):
        for outcome in ev.outcomes[rate]:
            moved = TaskOutcome(
                i,
                outcome.replication,
                outcome.seed,
                outcome.row,
                outcome.hist_value_ns,
                outcome.hist_count,
            )
            key = task_key(moved.point_id, moved.replication)
            manifest["checksums"][key] = store.write_point(out_dir, sweep, schema, moved)
    store.write_manifest(out_dir, manifest)
    finish(out_dir, sweep)


def bite_statement(answer: Mapping[str, Any]) -> list[str]:
    """Where the ceiling bites and whether the answer depends on the run length, from the
    answer's JSON (:meth:`CapacityResult.to_dict`, also kept in a capacity folder's manifest)."""
    rho, tau = answer.get("utilization_at_capacity"), answer.get("relaxation_time_s")
    if rho is None or tau is None:
        return []
    where = (
        "the ceiling bites at utilization"
        if answer["ceiling_reached"]
        else "p99 stayed under the ceiling up to utilization"
    )
    lines = [
        f"{where} {rho:.4g} of the busiest station, where its queue relaxes in about "
        f"{tau:.3g} s (M/M/1 relaxation time)"
    ]
    if answer["depends_on_run_length"]:
        lines.append(
            f"runs of {answer['warmup_s']:g} s warm-up + {answer['duration_s']:g} s are shorter "
            f"than that (warm-up >= {tau:.2g} s and window >= {10 * tau:.2g} s needed): the p99 "
            "there and this answer still depend on the run length"
        )
    else:
        lines.append("the runs are long enough for the answer not to depend on their length")
    return lines


def format_capacity(result: CapacityResult) -> str:
    """A human-readable answer with the curve behind it."""
    lo, hi = result.ci95
    lines = [
        f"scenario {result.scenario}  engine {result.engine}  "
        f"{result.replications} replications per rate",
        f"p99 ceiling {result.p99_ceiling_us:,.0f} us: max rate {result.max_rate_msgs_per_s:,.0f} "
        f"msg/s (95% CI {lo:,.0f} .. {hi:,.0f})",
        f"answer: {result.answer}",
    ]
    if result.overrides:
        lines.insert(1, "changed: " + ", ".join(f"{k}={v}" for k, v in result.overrides.items()))
    if result.saturation_rate_msgs_per_s is not None:
        sat = result.saturation_rate_msgs_per_s
        lines.append(f"saturation (utilization 1) at {sat:,.0f} msg/s")
    lines += bite_statement(result.to_dict())
    if result.under_ceiling_from_msgs_per_s is not None:
        lines.append(
            f"p99 is over the ceiling below {result.under_ceiling_from_msgs_per_s:,.0f} msg/s "
            "too: it falls with the rate there (wake-ups that fade with load) before it rises"
        )
    lines.append("")
    lines.append(f"{'rate msg/s':>14s} {'p99 us':>12s} {'95% CI':>24s}")
    for c in result.curve:
        p99 = f"{c.p99_us:,.1f}" if c.stable else "unstable"
        ci = f"{c.ci95[0]:,.1f} .. {c.ci95[1]:,.1f}" if c.ci95 and c.stable else ""
        lines.append(f"{c.rate_msgs_per_s:>14,.0f} {p99:>12s} {ci:>24s}")
    return "\n".join(lines)
