"""Calibration targets as data: what the twin must reproduce, and which parameters it may move.

A targets file (``calibration/targets/*.toml``) holds:

- ``[meta]``: name and description;
- ``[free.<group>]``: a free parameter group, ``params`` (profile names moved together by one
  factor on their prior value), ``bounds`` (factor range) and ``why``;
- ``[[target]]``: one published figure to reproduce: ``id``, ``row`` (published-figures row id),
  ``scenario`` (path relative to the targets file), ``overrides`` (dotted scenario fields),
  ``statistic`` (``p50``, ``p90``, ``p99``, ``mean``, ``min``, ``hour_mean_range`` of a
  whole-day scenario; or a relative figure ``p50_cut`` / ``p90_cut`` =
  ``1 - stat(scenario)/stat(baseline)`` in %, ``throughput_gain`` =
  ``throughput(scenario)/throughput(baseline) - 1`` in %; or a difference ``mean_difference`` =
  ``mean(baseline) - mean(scenario)`` in us, what a change saves, matched as a share of its
  value), ``baseline`` + ``baseline_overrides`` for relative figures and differences,
  ``value``, ``unit`` (``us`` or ``%``), ``tolerance`` (the noise the fit allows: a fraction
  for absolute targets and differences, percentage points for relative ones),
  ``placement_seeds`` (random placements averaged over) and ``duration_s`` (simulated time);
  ``latent_placement`` (a label shared by absolute targets measured on one pair of instances
  whose placement was not stated: the pair's placement class is estimated with the fit, see
  :func:`calibration.calibrate.evaluate_targets`; ``placement_seeds`` then counts seeds per class);
- ``[[target]]`` with ``measurement = "PATH"`` instead of ``row``/``statistic``/``value``: a
  measured file or folder (anything :func:`calibration.read` reads, relative to the targets
  file) taken under the conditions of ``scenario`` + ``overrides``. It stands for its whole
  distribution: one target per percentile of
  :data:`~twin.percentiles.DISTRIBUTION_WEIGHTS` (p10 to p99.9) that the file covers, ids
  ``<id>:<key>``, each with ``tolerance`` divided by the percentile's weight; and, for a closed
  loop whose file states what it achieved, one ``throughput`` target. A file that contradicts
  its scenario (another loop or connection count, an open-loop rate it did not achieve within
  :data:`RATE_AGREEMENT`, half round trips) is refused;
- ``[[excluded]]``: published rows not used, each with its ``row`` and ``reason``.

``[meta] prior`` optionally names the profile (shipped name or path relative to the file) whose
values the free factors scale when no other prior is given.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any

from twin.errors import ProfileError, TwinError
from twin.percentiles import ALL_PERCENTILES, DISTRIBUTION_WEIGHTS
from twin.tomlio import parse_toml, read_toml_bytes

__all__ = [
    "FreeGroup",
    "Target",
    "TargetSet",
    "load_targets",
    "ABSOLUTE_STATS",
    "RELATIVE_STATS",
    "DIFFERENCE_STATS",
]

# ``hour_mean_range``: the largest difference between two hours' mean round trips over a
# whole-day scenario (twin.day).
ABSOLUTE_STATS = (*ALL_PERCENTILES, "mean", "min", "throughput", "hour_mean_range")
# How far an open loop's achieved rate may be from its scenario's rate (a share of the latter).
RATE_AGREEMENT = 0.10
RELATIVE_STATS = ("p50_cut", "p90_cut", "p99_cut", "mean_cut", "throughput_gain")
DIFFERENCE_STATS = ("mean_difference",)


@dataclass(frozen=True)
class FreeGroup:
    """Profile parameters scaled together by one fitted factor (bounds on the factor)."""

    name: str
    params: tuple[str, ...]
    bounds: tuple[float, float]
    why: str


@dataclass(frozen=True)
class Target:
    """One figure the twin must reproduce."""

    id: str
    row: str
    scenario: Path
    statistic: str
    value: float
    unit: str
    tolerance: float
    overrides: Mapping[str, Any] = field(default_factory=dict)
    baseline: Path | None = None
    baseline_overrides: Mapping[str, Any] = field(default_factory=dict)
    placement_seeds: int = 1
    duration_s: float = 0.1
    note: str = ""
    latent_placement: str | None = None
    measurement: str | None = None  # the measured file or folder a distribution target reads
    # The message kind (twin.results.MESSAGE_KINDS: an order loop's "order" or "cancel") whose
    # round trips a percentile statistic is of; None: every message's.
    kind: str | None = None

    @property
    def relative(self) -> bool:
        return self.statistic in RELATIVE_STATS

    @property
    def difference(self) -> bool:
        """A saving in us between a baseline and the scenario (error as a share of it)."""
        return self.statistic in DIFFERENCE_STATS

    def error(self, predicted: float) -> float:
        """Percent error for an absolute target, percentage points for a relative one."""
        if self.relative:
            return predicted - self.value
        return 100.0 * (predicted - self.value) / self.value


@dataclass(frozen=True)
class TargetSet:
    """A loaded targets file."""

    name: str
    path: Path
    sha256: str
    targets: tuple[Target, ...]
    free: tuple[FreeGroup, ...]
    excluded: tuple[Mapping[str, str], ...]
    prior: str | None = None

    def with_targets(self, targets: tuple[Target, ...]) -> TargetSet:
        """The same free groups and prior with other targets."""
        return replace(self, targets=targets)

    def without(self, target_id: str) -> TargetSet:
        """The same set without one target (leave-one-out)."""
        kept = tuple(t for t in self.targets if t.id != target_id)
        if len(kept) == len(self.targets):
            raise ProfileError(f"{self.path}: no target {target_id!r}")
        return replace(self, targets=kept)

    def with_values(self, values: Mapping[str, float]) -> TargetSet:
        """The same set with other measured values (synthetic data, bootstraps)."""
        targets = tuple(
            Target(**{**t.__dict__, "value": float(values.get(t.id, t.value))})
            for t in self.targets
        )
        return replace(self, targets=targets)


def _err(path: Path, where: str, value: Any, problem: str) -> ProfileError:
    return ProfileError(f"{path}: {where} = {value!r}: {problem}")


def load_targets(path: str | Path) -> TargetSet:
    """Read and validate a targets file."""
    path = Path(path)
    raw = read_toml_bytes(path, "targets", ProfileError)
    data = parse_toml(raw, str(path), ProfileError)
    base = path.parent
    free = []
    free_tables = data.get("free", {})
    if not isinstance(free_tables, dict):
        raise _err(path, "free", free_tables, "a table of free parameter groups")
    for name, g in free_tables.items():
        if not isinstance(g, dict):
            raise _err(path, f"free.{name}", g, "a table (params, bounds, why)")
        params = g.get("params")
        if not isinstance(params, list) or not params:
            raise _err(path, f"free.{name}.params", params, "a non-empty list of profile names")
        bounds = g.get("bounds", [0.2, 5.0])
        if not (
            isinstance(bounds, list)
            and len(bounds) == 2
            and all(isinstance(b, int | float) and not isinstance(b, bool) for b in bounds)
        ):
            raise _err(path, f"free.{name}.bounds", bounds, "two numbers [low, high]")
        lo, hi = bounds
        if not 0 < lo < 1 < hi:
            raise _err(path, f"free.{name}.bounds", [lo, hi], "need 0 < low < 1 < high")
        free.append(FreeGroup(name, tuple(params), (float(lo), float(hi)), str(g.get("why", ""))))
    targets = []
    seen: set[str] = set()
    rows = data.get("target", [])
    if not isinstance(rows, list):
        raise _err(path, "target", rows, "an array of tables ([[target]])")
    for i, t in enumerate(rows):
        where = f"target[{i}]"
        if not isinstance(t, dict):
            raise _err(path, where, t, "a table ([[target]])")
        tid = t.get("id")
        if not isinstance(tid, str) or tid in seen:
            raise _err(path, f"{where}.id", tid, "a unique string")
        seen.add(tid)
        if "measurement" in t:
            expanded = measurement_targets(path, where, t)
            seen.update(x.id for x in expanded)
            targets.extend(expanded)
            continue
        stat = t.get("statistic")
        allowed = ABSOLUTE_STATS + RELATIVE_STATS + DIFFERENCE_STATS
        if stat not in allowed:
            raise _err(path, f"{where}.statistic", stat, f"allowed: {', '.join(allowed)}")
        relative = stat in RELATIVE_STATS
        compared = relative or stat in DIFFERENCE_STATS
        if compared and "baseline" not in t:
            raise _err(
                path,
                f"{where}.baseline",
                None,
                "a relative figure or a difference needs a baseline scenario",
            )
        unit = t.get("unit", "%" if relative else "us")
        if unit != ("%" if relative else ("msg/s" if stat == "throughput" else "us")):
            raise _err(path, f"{where}.unit", unit, "relative figures in %, latencies in us")
        value = t.get("value")
        if not isinstance(value, int | float) or isinstance(value, bool):
            raise _err(path, f"{where}.value", value, "a number")
        latent = t.get("latent_placement")
        if latent is not None and (not isinstance(latent, str) or not latent or compared):
            raise _err(
                path,
                f"{where}.latent_placement",
                latent,
                "a non-empty label, on absolute targets only (one pair of instances)",
            )
        targets.append(
            Target(
                id=tid,
                row=str(t.get("row", tid)),
                scenario=(base / t["scenario"]).resolve(),
                statistic=stat,
                value=float(value),
                unit=unit,
                tolerance=float(t.get("tolerance", 2.5 if relative else 0.05)),
                overrides=MappingProxyType(dict(t.get("overrides", {}))),
                baseline=(base / t["baseline"]).resolve() if compared else None,
                baseline_overrides=MappingProxyType(dict(t.get("baseline_overrides", {}))),
                placement_seeds=int(t.get("placement_seeds", 1)),
                duration_s=float(t.get("duration_s", 0.1)),
                note=str(t.get("note", "")),
                latent_placement=latent,
            )
        )
    if not targets:
        raise ProfileError(f"{path}: a targets file needs at least one [[target]]")
    pairs: dict[str, tuple[Path, tuple[Any, ...]]] = {}
    for tg in targets:
        if tg.latent_placement is None:
            continue
        run = (tg.scenario, tuple(sorted(tg.overrides.items())))
        if pairs.setdefault(tg.latent_placement, run) != run:
            raise _err(
                path,
                f"target {tg.id}.latent_placement",
                tg.latent_placement,
                "targets sharing a latent placement must share scenario and overrides",
            )
    return TargetSet(
        name=str(data.get("meta", {}).get("name", path.stem)),
        path=path,
        sha256=hashlib.sha256(raw).hexdigest(),
        targets=tuple(targets),
        free=tuple(free),
        excluded=tuple(MappingProxyType(dict(e)) for e in data.get("excluded", [])),
        prior=_prior(path, data.get("meta", {}).get("prior")),
    )


def _prior(path: Path, prior: Any) -> str | None:
    if prior is None:
        return None
    if not isinstance(prior, str) or not prior:
        raise _err(path, "meta.prior", prior, "a shipped profile name or a .toml path")
    return str((path.parent / prior).resolve()) if prior.endswith(".toml") else prior


def measurement_targets(path: Path, where: str, t: Mapping[str, Any]) -> list[Target]:
    """The targets of one ``measurement = "PATH"`` entry (see the module docstring)."""
    from calibration.readers import read
    from twin.scenario import load_scenario

    tid = t["id"]
    file = t["measurement"]
    if not isinstance(file, str) or not file or "\0" in file:
        raise _err(path, f"{where}.measurement", file, "a path to a measured file or folder")
    if "scenario" not in t:
        raise _err(path, f"{where}.scenario", None, "a measurement needs its scenario")
    overrides = t.get("overrides", {})
    if not isinstance(overrides, dict):
        raise _err(path, f"{where}.overrides", overrides, "a table of dotted scenario fields")
    tolerance = t.get("tolerance", 0.05)
    if not isinstance(tolerance, int | float) or isinstance(tolerance, bool) or tolerance <= 0:
        raise _err(path, f"{where}.tolerance", tolerance, "a number > 0")
    if not isinstance(t["scenario"], str) or "\0" in t["scenario"]:
        raise _err(path, f"{where}.scenario", t["scenario"], "a scenario file's path")
    duration_s = t.get("duration_s")
    if duration_s is not None and not (
        isinstance(duration_s, int | float) and not isinstance(duration_s, bool) and duration_s > 0
    ):
        raise _err(path, f"{where}.duration_s", duration_s, "a number of seconds > 0")
    scenario_path = (path.parent / t["scenario"]).resolve()
    try:
        measured = read(path.parent / file)
        scenario = load_scenario(scenario_path).with_fields(overrides)
    except TwinError as exc:
        raise ProfileError(f"{path}: {where} ({tid}): {exc}") from None
    _check_agreement(path, f"{where} ({tid})", measured, scenario)
    common: dict[str, Any] = {
        "row": f"{tid} ({file})",
        "scenario": scenario_path,
        "overrides": MappingProxyType(dict(overrides)),
        "duration_s": float(t.get("duration_s", scenario.workload.duration_s)),
        "note": str(t.get("note", "")),
        "measurement": str((path.parent / file).resolve()),
    }
    out = [
        Target(
            id=f"{tid}:{key}",
            statistic=key,
            value=measured.percentile_us(p),
            unit="us",
            tolerance=float(tolerance) / DISTRIBUTION_WEIGHTS[key],
            **common,
        )
        for key, p in ((k, ALL_PERCENTILES[k]) for k in DISTRIBUTION_WEIGHTS)
        if measured.covers(p)
    ]
    achieved = measured.conditions.get("achieved_msgs_per_s")
    if scenario.workload.loop == "closed" and isinstance(achieved, int | float) and achieved > 0:
        out.append(
            Target(
                id=f"{tid}:throughput",
                statistic="throughput",
                value=float(achieved),
                unit="msg/s",
                tolerance=float(tolerance),
                **common,
            )
        )
    if not out:
        raise _err(path, f"{where}.measurement", file, "covers none of p10..p99.9")
    return out


# Tools whose round trip is an echo (one message and its reply), not the order loop.
ECHO_TOOLS = ("netperf", "sockperf")
# How far a measurement's payload may be from its scenario's (a factor either way).
PAYLOAD_AGREEMENT = 2.0


def disagreements(measured: Any, scenario: Any) -> list[str]:
    """What a measurement's stated conditions contradict in ``scenario`` (empty: nothing)."""
    c, w = measured.conditions, scenario.workload
    problems = []
    if c.get("statistic") == "half_round_trip":
        problems.append("the file holds half round trips (sockperf without --full-rtt)")
    if c.get("tool") in ECHO_TOOLS and w.kind != "echo":
        problems.append(f"the file measures an echo ({c['tool']}), the scenario a {w.kind}")
    payload = c.get("payload_bytes")
    if isinstance(payload, int | float) and payload > 0:
        if not 1 / PAYLOAD_AGREEMENT <= payload / w.payload_bytes <= PAYLOAD_AGREEMENT:
            problems.append(
                f"the file's payload is {payload:g} B, the scenario's {w.payload_bytes} B"
            )
    if "loop" in c and str(c["loop"]) != str(w.loop):
        problems.append(f"the file's loop is {c['loop']}, the scenario's {w.loop}")
    if "connections" in c and int(c["connections"]) != w.accounts:
        problems.append(
            f"the file used {c['connections']} connections, the scenario {w.accounts} accounts"
        )
    achieved = c.get("achieved_msgs_per_s")
    rate = w.rate_msgs_per_s
    if w.loop == "open" and isinstance(achieved, int | float):
        if abs(achieved - rate) > RATE_AGREEMENT * rate:
            problems.append(
                f"the file achieved {achieved:g} msg/s, the scenario asks {rate:g} msg/s"
            )
    return problems


def _check_agreement(path: Path, where: str, measured: Any, scenario: Any) -> None:
    """Refuse a measurement whose stated conditions contradict its target's scenario."""
    problems = disagreements(measured, scenario)
    if problems:
        raise ProfileError(f"{path}: {where}: {'; '.join(problems)}")
