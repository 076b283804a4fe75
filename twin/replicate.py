"""Independent replications of one run, merged, with 95% confidence intervals.

A replication is the same path and load with its own seed, derived deterministically from the
scenario seed and the replication number (:func:`replication_seed`), so a set of replications gives
the same answer whether it runs on one core or on many. Their histograms merge by addition (the
reported percentiles are those of the pooled histogram); each statistic's 95% confidence interval
is the pooled value plus or minus ``t(0.975, K-1) * s / sqrt(K)``, where ``s`` is the standard
deviation of the statistic across the K replications (the method of independent replications; it
needs K >= 2 and assumes each replication's warm-up removes the start-up transient).

:func:`run_until` adds replications in rounds until a statistic's half-width (the p99's unless
told) falls below a target fraction of its value, so a user gets an honest tail without guessing a
run length. Behind a target, each replication is shorter than the run's duration
(:func:`target_replication_load`: an eighth of it, but with at least :data:`CI_TAIL_SAMPLES` round
trips beyond the statistic), so a target that a few short replications meet costs no more; the
ceiling of simulated time stays :data:`MAX_REPLICATIONS` durations.

What varies (:class:`twin.uncertainty.Varied`): by default only the seed, so the interval is the
noise of one deployment (the scenario's own placement draw). With ``Varied.PLACEMENT`` each
replication also draws its placement from its seed (as a sweep does), so the interval includes
the spread between deployments; its round trips are pooled across placements and its hop table
is the first replication's.
"""

from __future__ import annotations

import math
import multiprocessing
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import TypeVar

import numpy as np

from twin.errors import ConfigError, ScenarioError
from twin.histogram import to_hdr
from twin.load import Load
from twin.path import CompiledPath
from twin.percentiles import PERCENTILES
from twin.results import (
    EngineOutput,
    RunResult,
    percentiles_us,
    summarise,
    unstable_result,
)
from twin.simulation import DEFAULT_ENGINE, Prepared, described, with_path_rate
from twin.uncertainty import Varied

T = TypeVar("T")

# Stream id keeping replication seeds apart from every other use of the scenario seed.
REPLICATION_STREAM = 0x5245504C
STATISTICS = (*PERCENTILES, "mean")
MAX_REPLICATIONS = 200  # ceiling of run_until when a CI target is asked for, in whole durations
CI_SPLIT = 8  # a replication behind a CI target lasts at most 1/CI_SPLIT of the duration ...
CI_TAIL_SAMPLES = 200  # ... if it then still sees this many round trips beyond the statistic

Progress = Callable[[int, int], None]  # (replications done, replications planned)
Job = tuple[CompiledPath, Load]  # what one replication runs
Jobs = Callable[[int], Job]  # replication number -> its job


def replication_seed(seed: int, k: int) -> int:
    """The seed of replication ``k`` of a run seeded ``seed`` (independent of worker count)."""
    words = np.random.SeedSequence([int(seed), REPLICATION_STREAM, int(k)]).generate_state(
        1, dtype=np.uint64
    )
    return int(words[0] >> np.uint64(1))


def statistics_of(out: EngineOutput) -> dict[str, float]:
    """Percentiles (us, HDR bucket values capped at the maximum) and mean of one output."""
    if out.messages == 0:
        return {name: math.nan for name in STATISTICS}
    values = percentiles_us(to_hdr(out.counts), out.rtt_max_us)
    values["mean"] = out.rtt_sum_us / out.messages
    return values


@dataclass(frozen=True)
class Replicated:
    """Pooled output of K replications and a 95% confidence interval per statistic."""

    output: EngineOutput
    replications: int
    estimates: dict[str, float]  # statistics of the pooled output
    ci95: dict[str, tuple[float, float]]  # empty when K < 2
    per_replication: tuple[dict[str, float], ...]

    def relative_half_width(self, name: str = "p99") -> float:
        """Upper half-width of the 95% interval over the estimate (inf when there is none).

        The upper side is the t half-width; the lower one may be cut at zero."""
        if name not in self.ci95:
            return math.inf
        value = self.estimates[name]
        return (self.ci95[name][1] - value) / value if value > 0 else math.inf


def t_quantile(n: int) -> float | None:
    """Two-sided 95% Student-t quantile for ``n`` samples (None below two)."""
    if n < 2:
        return None
    # scipy.special's inverse of Student's t CDF, the very function scipy.stats.t.ppf calls:
    # scipy.stats costs a second or more to import, on every sweep's main process.
    from scipy import special

    return float(special.stdtrit(n - 1, 0.975))


def t_interval(center: float, sample: Sequence[float]) -> tuple[float, float] | None:
    """The 95% Student-t interval ``center +- t * sd / sqrt(n)`` of ``sample``, cut at zero.

    Every statistic here is a latency, so a lower bound below zero (a spread wider than the
    value, as near saturation) is cut at zero; the upper bound keeps the t half-width. None
    below two samples.
    """
    t = t_quantile(len(sample))
    if t is None:
        return None
    half = t * float(np.std(sample, ddof=1)) / math.sqrt(len(sample))
    return (max(center - half, 0.0), center + half)


def confidence_intervals(
    estimates: dict[str, float], per_replication: Iterable[dict[str, float]]
) -> dict[str, tuple[float, float]]:
    """Student-t 95% intervals (:func:`t_interval`) around the pooled estimates, from the spread
    across replications; empty below two replications."""
    rows = list(per_replication)
    out = {}
    for name, value in estimates.items():
        interval = t_interval(value, [row[name] for row in rows])
        if interval is not None:
            out[name] = interval
    return out


def _run_one(engine: str, path: CompiledPath, load: Load) -> EngineOutput:
    from twin.simulation import ENGINES

    return ENGINES[engine](path, load)


def _outputs(
    engine: str,
    jobs: list[Job],
    pool: ProcessPoolExecutor | None,
    progress: Progress | None,
    done_before: int,
    planned: int,
) -> list[EngineOutput]:
    """Run each job, in this process or on ``pool``, in order."""

    def done(n: int) -> None:
        if progress is not None:
            progress(done_before + n, planned)

    calls = [(engine, path, load) for path, load in jobs]
    return _map(_run_one, calls, pool, done)


def _map(
    fn: Callable[..., T],
    calls: Sequence[tuple[object, ...]],
    pool: ProcessPoolExecutor | None,
    done: Callable[[int], None] | None,
) -> list[T]:
    """``fn(*args)`` for each ``args`` of ``calls``, in their order, in this process (no pool,
    or a single call) or on ``pool``; ``done(n)`` hears when the first ``n`` results are in."""
    results: list[T] = []
    if pool is None or len(calls) <= 1:
        for args in calls:
            results.append(fn(*args))
            if done is not None:
                done(len(results))
        return results
    futures = [pool.submit(fn, *args) for args in calls]
    for future in futures:
        results.append(future.result())
        if done is not None:
            done(len(results))
    return results


@contextmanager
def worker_pool(workers: int) -> Iterator[ProcessPoolExecutor | None]:
    """A pool of ``workers`` processes (a fresh interpreter each, forkserver where there is one)
    kept for the whole ``with`` block; None for one worker (the work runs in this process)."""
    if workers <= 1:
        yield None
        return
    context = multiprocessing.get_context("forkserver" if os.name == "posix" else "spawn")
    with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
        yield pool


def map_in_order(
    fn: Callable[..., T],
    calls: Sequence[tuple[object, ...]],
    workers: int,
    done: Callable[[int], None] | None = None,
) -> list[T]:
    """``fn(*args)`` for each ``args`` of ``calls``, the results in the calls' order: in this
    process, or on a pool of ``workers`` processes (:func:`worker_pool`: ``fn`` and its
    arguments must pickle). ``done(n)`` hears when the first ``n`` results are in."""
    with worker_pool(min(workers, len(calls))) as pool:
        return _map(fn, calls, pool, done)


def _combine(outputs: list[EngineOutput], same_path: bool = True) -> Replicated:
    pooled = outputs[0]
    for other in outputs[1:]:
        pooled = pooled.merge(other) if same_path else pooled.merge_round_trips(other)
    estimates = statistics_of(pooled)
    per = tuple(statistics_of(o) for o in outputs)
    return Replicated(
        output=pooled,
        replications=len(outputs),
        estimates=estimates,
        ci95=confidence_intervals(estimates, per),
        per_replication=per,
    )


def default_workers() -> int:
    """One worker per core this process may use."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def run_replications(
    path: CompiledPath,
    load: Load,
    replications: int,
    engine: str = DEFAULT_ENGINE,
    workers: int = 1,
    progress: Progress | None = None,
) -> Replicated:
    """Run ``replications`` independent seeds of ``load`` and pool them."""
    return run_jobs(_seeds_of(path, load), replications, engine, workers, progress)


def _seeds_of(path: CompiledPath, load: Load) -> Jobs:
    """Replication ``k``: the same path, the load with seed :func:`replication_seed`."""
    return lambda k: (path, replace(load, seed=replication_seed(load.seed, k)))


def run_jobs(
    jobs: Jobs,
    replications: int,
    engine: str = DEFAULT_ENGINE,
    workers: int = 1,
    progress: Progress | None = None,
    same_path: bool = True,
) -> Replicated:
    """Run replications ``0 .. replications - 1`` of ``jobs`` and pool them."""
    if replications < 1:
        raise ConfigError(f"Need >= 1 replication, got {replications}")
    todo = [jobs(k) for k in range(replications)]
    with worker_pool(min(workers, replications)) as pool:
        outputs = _outputs(engine, todo, pool, progress, 0, replications)
    return _combine(outputs, same_path)


def run_until(
    path: CompiledPath,
    load: Load,
    target_relative_half_width: float,
    engine: str = DEFAULT_ENGINE,
    workers: int = 1,
    min_replications: int = 5,
    max_replications: int = 200,
    statistic: str = "p99",
    progress: Progress | None = None,
    jobs: Jobs | None = None,
    same_path: bool = True,
) -> Replicated:
    """Add replications until the 95% half-width of ``statistic`` is below the target fraction.

    Replications run in rounds of ``max(workers, 1)`` and the criterion is checked after each
    replication in order, so the answer (how many replications, which seeds) is the same whatever
    the worker count; extra replications of the last round are dropped. Stops at
    ``max_replications`` even if the target is not met (check :meth:`relative_half_width`).
    ``jobs`` replaces the default replications of ``path`` and ``load`` (seeds only).
    """
    jobs = jobs or _seeds_of(path, load)
    if not target_relative_half_width > 0:
        raise ConfigError(f"Target half-width must be > 0, got {target_relative_half_width}")
    if min_replications < 2 or max_replications < min_replications:
        raise ConfigError(
            f"Need 2 <= min_replications <= max_replications, got {min_replications}, "
            f"{max_replications}"
        )
    outputs: list[EngineOutput] = []
    planned = min_replications
    with worker_pool(workers) as pool:  # one pool for every round: its workers start once
        while True:
            checked = len(outputs)
            todo = [jobs(k) for k in range(checked, planned)]
            outputs += _outputs(engine, todo, pool, progress, checked, planned)
            for k in range(max(checked + 1, min_replications), len(outputs) + 1):
                result = _combine(outputs[:k], same_path)
                if result.relative_half_width(statistic) <= target_relative_half_width:
                    return result
            if len(outputs) >= max_replications:
                return result
            planned = min(len(outputs) + max(workers, 1), max_replications)


def target_replication_load(load: Load, statistic: str = "p99") -> Load:
    """``load`` as one replication behind a CI target runs it: its duration cut to
    ``1 / CI_SPLIT``, but kept long enough to send ``CI_TAIL_SAMPLES`` round trips beyond the
    percentile ``statistic`` (1,000 messages for the mean), and never longer than it was."""
    if statistic not in STATISTICS:
        raise ConfigError(f"statistic {statistic!r}: allowed: {', '.join(STATISTICS)}")
    q = PERCENTILES.get(statistic)
    needed = CI_TAIL_SAMPLES / (1 - q / 100) if q is not None else 1000
    duration_us = max(load.duration_us / CI_SPLIT, load.span_us(math.ceil(round(needed, 6))))
    return replace(load, duration_us=min(load.duration_us, duration_us))


def run_prepared_replicated(
    prepared: Prepared,
    engine: str = DEFAULT_ENGINE,
    replications: int = 1,
    target_ci_pct: float | None = None,
    workers: int = 1,
    progress: Progress | None = None,
    varied: Varied = Varied.SEED,
    ci_statistic: str = "p99",
) -> tuple[RunResult, Replicated | None]:
    """:func:`twin.simulation.run_prepared` with replications and an optional CI target on
    ``ci_statistic`` (its replications then :func:`target_replication_load`'s length).

    Returns the summary of the pooled output and the replication record (None when the offered
    load saturates a station, for which no simulation is run). ``varied``: what changes between
    replications (module docstring).
    """
    from twin.simulation import ENGINES

    if engine not in ENGINES:
        raise ScenarioError(f"engine = {engine!r}: allowed: {', '.join(sorted(ENGINES))}")
    name = prepared.scenario.name
    if prepared.by_hour:
        raise ConfigError(
            f"{prepared.scenario.source}: replications of a whole day are not supported: run "
            "one hour (--set day.hour=H) with replications, or the day without them"
        )
    if prepared.is_saturated():
        unstable = unstable_result(name, engine, prepared.path, prepared.load, prepared.placements)
        return described(unstable, prepared), None
    same_path = varied is Varied.SEED
    load = prepared.load
    if target_ci_pct is not None:
        load = target_replication_load(prepared.load, ci_statistic)
    jobs = _seeds_of(prepared.path, load) if same_path else _placements_of(prepared, load)
    # The hop table comes from the first replication's own run: with placements drawn, its path
    # (and maybe its hop list) is that replication's, not the scenario's own draw.
    shown = prepared if same_path else _replaced(prepared, 0)
    if target_ci_pct is not None:
        ceiling = math.ceil(MAX_REPLICATIONS * prepared.load.duration_us / load.duration_us)
        replicated = run_until(
            prepared.path,
            load,
            target_ci_pct / 100,
            engine=engine,
            workers=workers,
            min_replications=max(replications, 5),
            max_replications=max(replications, ceiling),
            progress=progress,
            jobs=jobs,
            same_path=same_path,
            statistic=ci_statistic,
        )
    else:
        replicated = run_jobs(jobs, replications, engine, workers, progress, same_path)
    placements = shown.placements
    if not same_path:
        placements = {
            role: f"{where} (replication 1; each replication draws its own)"
            for role, where in placements.items()
        }
    result = summarise(name, engine, shown.path, load, replicated.output, placements)
    # The path rate of the replication shown, the rest of the scenario as run; each
    # replication's length (behind a CI target, target_replication_load's, not the scenario's).
    result = with_path_rate(result, shown)
    shown_rate = result.path_rate_msgs_per_s
    result = replace(described(result, prepared), path_rate_msgs_per_s=shown_rate)
    return replace(result, duration_s=load.duration_us / 1e6), replicated


def _replaced(prepared: Prepared, k: int) -> Prepared:
    """Replication ``k`` of ``prepared`` with its own placement: the scenario re-placed with
    seed :func:`replication_seed` (the placement is drawn from the scenario's seed)."""
    from twin.simulation import apply_overrides, prepare

    scenario = prepared.scenario
    again = prepare(
        apply_overrides(scenario, seed=replication_seed(scenario.workload.seed, k)),
        prepared.profile,
    )
    if again.is_saturated():
        raise ScenarioError(
            f"{scenario.name}: replication {k + 1}'s placement saturates a station at this "
            "rate: no interval over placements"
        )
    return again


def _placements_of(prepared: Prepared, load: Load) -> Jobs:
    """Replication ``k``: :func:`_replaced` ``(prepared, k)``'s path and load, the load lasting
    as long as ``load`` does."""

    def job(k: int) -> Job:
        again = _replaced(prepared, k)
        return again.path, replace(again.load, duration_us=load.duration_us)

    return job
