"""Running a scenario: profile + placement + path + engine -> :class:`RunResult`.

This is the one public way in, shared by the CLI, sweeps, the explorer and the notebooks, so all
of them give the same number for the same scenario and seed. Engines register themselves in
:data:`ENGINES` under a name (``des``; ``fast`` when the compiled engine is present).
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass, replace
from enum import StrEnum
from functools import partial, reduce
from typing import Any, Protocol

import numpy as np

from twin import dtypes
from twin.day import hour_scenarios, is_whole_day
from twin.dists import Dist
from twin.errors import ConfigError, ProfileError, ScenarioError
from twin.histogram import sd_from_counts_us
from twin.load import Load
from twin.operating_point import operating_rate
from twin.path import CompiledPath, compile_path
from twin.profile import Profile, load_profile, resolve_profile_path
from twin.results import (
    EngineOutput,
    HourStat,
    Progress,
    RunResult,
    offered_utilization,
    summarise,
    unstable_result,
)
from twin.scenario import Scenario
from twin.topology import Placement, build_path, build_spans, place


class Engine(Protocol):
    """An engine: simulate ``load`` over ``path``, calling ``progress(fraction)`` as it goes."""

    def __call__(
        self, path: CompiledPath, load: Load, progress: Progress | None = None
    ) -> EngineOutput: ...


class EngineName(StrEnum):
    """The built-in engines: one model, two implementations that must agree."""

    DES = "des"  # the SimPy reference: readable, full fidelity, slow
    FAST = "fast"  # the Numba-compiled engine: same semantics, for long runs and sweeps


# The engine every entry point uses unless told otherwise: the CLI, the Python API, sweeps,
# capacity, calibration and the explorer.
DEFAULT_ENGINE = EngineName.FAST

ENGINES: dict[str, Engine] = {}


def register_engine(name: str, engine: Engine) -> None:
    """Make an engine available to :func:`run` under ``name``."""
    ENGINES[name] = engine


def _register_builtin() -> None:
    from twin import des, fast

    register_engine(EngineName.DES, des.simulate)
    register_engine(EngineName.FAST, fast.simulate)


_register_builtin()


@dataclass(frozen=True)
class Prepared:
    """Everything an engine needs, built once per scenario."""

    scenario: Scenario
    profile: Profile
    path: CompiledPath
    load: Load
    placements: dict[str, str]
    # The rate the path's load-dependent parts were built for (msg/s): the workload's, or a
    # closed loop's own throughput (twin.operating_point).
    path_rate_msgs_per_s: float
    # A whole-day scenario (twin.day): one prepared run per hour; ``path`` is hour 0's.
    by_hour: tuple[Prepared, ...] = ()

    def is_saturated(self) -> bool:
        """True when an open loop offers some station a utilization of 1 or more."""
        if self.load.loop != dtypes.LOOP_OPEN:
            return False
        paths = [p.path for p in self.by_hour] or [self.path]
        return any(bool(np.any(offered_utilization(p, self.load) >= 1.0)) for p in paths)


def scenario_profile(scenario: Scenario) -> Profile:
    """The calibration profile a scenario names (shipped name or path next to the scenario);
    an error names the scenario file and its ``profile`` field."""
    try:
        return load_profile(resolve_profile_path(scenario.profile, scenario.base_dir))
    except ProfileError as exc:
        raise ProfileError(f"{scenario.source}: profile: {exc}") from None


def apply_overrides(
    scenario: Scenario,
    rate_msgs_per_s: float | None = None,
    duration_s: float | None = None,
    seed: int | None = None,
) -> Scenario:
    """The scenario with the CLI's common overrides applied (validated like the file)."""
    changes: dict[str, Any] = {}
    if rate_msgs_per_s is not None:
        changes["workload.rate_msgs_per_s"] = rate_msgs_per_s
    if duration_s is not None:
        changes["workload.duration_s"] = duration_s
    if seed is not None:
        changes["workload.seed"] = seed
    return scenario.with_fields(changes) if changes else scenario


#: Simulated messages above which ``twin run`` refuses a run unless ``--force``: tens of CPU
#: minutes of the fast engine (its messages per CPU second are measured by ``make bench``, in
#: benchmarks/results/engines.json). A typo in a duration should not take a machine for days.
MAX_RUN_MESSAGES = 2e9


def estimated_messages(scenario: Scenario, replications: int = 1) -> float:
    """Messages a run simulates, warm-up included (an upper bound for a closed loop)."""
    w = scenario.workload
    return w.rate_msgs_per_s * (w.duration_s + w.warmup_s) * replications


def check_run_cost(scenario: Scenario, replications: int = 1, force: bool = False) -> None:
    """Refuse a run estimated above :data:`MAX_RUN_MESSAGES` unless ``force``."""
    messages = estimated_messages(scenario, replications)
    if messages > MAX_RUN_MESSAGES and not force:
        raise ConfigError(
            f"{scenario.source}: about {messages:.3g} messages to simulate "
            f"(rate x (warm-up + duration) x replications), above the limit of "
            f"{MAX_RUN_MESSAGES:.0e}; shorten the run or pass --force"
        )


def what_if(
    scenario: Scenario,
    profile: str | None = None,
    changes: Sequence[tuple[str, Any]] = (),
) -> Scenario:
    """The scenario with another profile and dotted fields changed (``twin run --profile --set``).

    ``profile`` is a shipped name or a ``.toml`` path (relative to the working directory, as a
    user types it); it is checked by loading it. Fields are validated like the file's.
    """
    fields: dict[str, Any] = dict(changes)
    if profile is not None:
        path = resolve_profile_path(profile)
        load_profile(path)  # a missing or bad profile fails here, naming the file
        fields["profile"] = str(path.resolve()) if path.suffix == ".toml" else profile
    return scenario.with_fields(fields) if fields else scenario


def prepare(
    scenario: Scenario,
    profile: Profile | None = None,
    engine_service: Dist | None = None,
    placements: dict[str, Placement] | None = None,
) -> Prepared:
    """Place the instances (unless ``placements`` are given) and compile the round-trip path of
    ``scenario``; for a whole-day scenario, of each hour (:mod:`twin.day`): the same placements
    all day, each hour with its own random stream."""
    profile = profile if profile is not None else scenario_profile(scenario)
    placements = placements if placements is not None else place(scenario, profile)
    if is_whole_day(scenario):
        hours = tuple(
            prepare(s, profile, engine_service, placements) for s in hour_scenarios(scenario)
        )
        return replace(
            hours[0], scenario=scenario, load=Load.from_workload(scenario.workload), by_hour=hours
        )
    rate = operating_rate(scenario, profile, placements, engine_service)
    hops = build_path(scenario, profile, placements, engine_service, rate)
    path = compile_path(hops, build_spans(scenario, hops))
    if scenario.exchange.throttle is not None:
        path = replace(path, throttle=scenario.exchange.throttle)
    return Prepared(
        scenario=scenario,
        profile=profile,
        path=path,
        load=Load.from_workload(scenario.workload),
        placements={role: p.describe() for role, p in placements.items()},
        path_rate_msgs_per_s=rate,
    )


def with_window(prepared: Prepared, duration_s: float, warmup_s: float) -> Prepared:
    """``prepared`` recording over another window (seconds): its scenario and load changed, its
    placements and path kept, which no window changes, so nothing is placed or compiled again
    (a whole day's hours likewise)."""
    fields = {"workload.duration_s": duration_s, "workload.warmup_s": warmup_s}
    scenario = prepared.scenario.with_fields(fields)
    return replace(
        prepared,
        scenario=scenario,
        load=Load.from_workload(scenario.workload),
        by_hour=tuple(with_window(hour, duration_s, warmup_s) for hour in prepared.by_hour),
    )


def run_prepared(
    prepared: Prepared, engine: str = DEFAULT_ENGINE, progress: Progress | None = None
) -> RunResult:
    """Run an already prepared scenario on the named engine.

    ``progress(fraction of the simulated time)`` is called as the run goes.
    """
    if engine not in ENGINES:
        raise ScenarioError(f"engine = {engine!r}: allowed: {', '.join(sorted(ENGINES))}")
    name = prepared.scenario.name
    if prepared.by_hour:
        return described(_run_day(prepared, engine, progress), prepared)
    if prepared.is_saturated():
        return described(
            unstable_result(name, engine, prepared.path, prepared.load, prepared.placements),
            prepared,
        )
    out = ENGINES[engine](prepared.path, prepared.load, progress)
    result = summarise(name, engine, prepared.path, prepared.load, out, prepared.placements)
    return described(result, prepared)


def described(result: RunResult, prepared: Prepared) -> RunResult:
    """``result`` saying what was run: the scenario's table as run, the fields changed from its
    file (:attr:`twin.scenario.Scenario.overrides`), its run length and warm-up, and the rate
    its path was built for (:func:`with_path_rate`). Every front end's result goes through
    here (``twin run``'s JSON and ``--out`` folder, the API's frames, the explorer)."""
    scenario = prepared.scenario
    return replace(
        with_path_rate(result, prepared),
        scenario_as_run=copy.deepcopy(dict(scenario.raw)),
        overrides=dict(scenario.overrides),
        duration_s=scenario.workload.duration_s,
        warmup_s=scenario.workload.warmup_s,
    )


def with_path_rate(result: RunResult, prepared: Prepared) -> RunResult:
    """``result`` saying the rate its path was built for, where that is not the target rate
    (a closed loop's own throughput, :mod:`twin.operating_point`)."""
    if prepared.path_rate_msgs_per_s == prepared.scenario.workload.rate_msgs_per_s:
        return result
    return replace(result, path_rate_msgs_per_s=prepared.path_rate_msgs_per_s)


def hour_outputs(
    prepared: Prepared, simulate: Engine, progress: Progress | None = None
) -> list[EngineOutput]:
    """The raw output of each part of a prepared run on an engine function: each hour of a
    whole-day scenario (:mod:`twin.day`), else the one run. ``progress`` sees the whole."""
    parts = prepared.by_hour or (prepared,)
    outputs = []
    for i, part in enumerate(parts):
        part_progress = None if progress is None else partial(_scaled, progress, i, len(parts))
        outputs.append(simulate(part.path, part.load, part_progress))
    return outputs


def engine_output(prepared: Prepared, simulate: Engine) -> EngineOutput:
    """The raw output of a prepared run on an engine function, a whole day's hours pooled, as
    :func:`run_prepared` pools them."""
    return reduce(lambda a, b: a.merge(b), hour_outputs(prepared, simulate))


def _run_day(prepared: Prepared, engine: str, progress: Progress | None) -> RunResult:
    """Each hour's run, pooled (:mod:`twin.day`); the result keeps each hour's figures. A day
    with a saturated hour has no steady state: it is reported unstable, naming the hours."""
    saturated = [i for i, hour in enumerate(prepared.by_hour) if hour.is_saturated()]
    if saturated:
        first = prepared.by_hour[saturated[0]]
        result = unstable_result(
            prepared.scenario.name, engine, first.path, prepared.load, prepared.placements
        )
        when = ", ".join(f"{h:02d}" for h in saturated)
        return replace(
            result,
            saturated_stations=tuple(f"{s} at {when} UTC" for s in result.saturated_stations),
        )
    outputs = hour_outputs(prepared, ENGINES[engine], progress)
    pooled = reduce(lambda a, b: a.merge(b), outputs)
    result = summarise(
        prepared.scenario.name, engine, prepared.path, prepared.load, pooled, prepared.placements
    )
    by_hour = tuple(
        HourStat(
            hour=i,
            messages=out.messages,
            rtt_us=summarise(
                prepared.scenario.name, engine, h.path, h.load, out, h.placements
            ).rtt_us,
            sd_us=sd_from_counts_us(out.counts),
        )
        for i, (h, out) in enumerate(zip(prepared.by_hour, outputs, strict=True))
    )
    return replace(result, by_hour=by_hour)


def _scaled(progress: Progress, done: int, total: int, fraction: float) -> None:
    progress((done + fraction) / total)


def run(
    scenario: Scenario, engine: str = DEFAULT_ENGINE, profile: Profile | None = None
) -> RunResult:
    """Simulate ``scenario`` and summarise the round trips."""
    return run_prepared(prepare(scenario, profile), engine)
