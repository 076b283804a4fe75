"""Calibration targets as data: what the twin must reproduce, and which parameters it may move.

A targets file (``calibration/targets/*.toml``) holds:

- ``[meta]``: name and description;
- ``[free.<group>]``: a free parameter group, ``params`` (profile names moved together by one
  factor on their prior value), ``bounds`` (factor range) and ``why``;
- ``[[target]]``: one published figure to reproduce: ``id``, ``row`` (published-figures row id),
  ``scenario`` (path relative to the targets file), ``overrides`` (dotted scenario fields),
  ``statistic`` (``p50``, ``p90``, ``p99``, ``mean``, ``min``; or a relative figure
  ``p50_cut`` / ``p90_cut`` = ``1 - stat(scenario)/stat(baseline)`` in %, ``throughput_gain`` =
  ``throughput(scenario)/throughput(baseline) - 1`` in %), ``baseline`` + ``baseline_overrides``
  for relative figures, ``value``, ``unit`` (``us`` or ``%``), ``tolerance`` (the noise the fit
  allows: a fraction for absolute targets, percentage points for relative ones),
  ``placement_seeds`` (random placements averaged over) and ``duration_s`` (simulated time);
  ``latent_placement`` (a label shared by absolute targets measured on one pair of instances
  whose placement was not stated: the pair's placement class is estimated with the fit, see
  :func:`calibration.calibrate.evaluate_targets`; ``placement_seeds`` then counts seeds per class);
- ``[[excluded]]``: published rows not used, each with its ``row`` and ``reason``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from twin.errors import ProfileError
from twin.tomlio import parse_toml, read_toml_bytes

__all__ = ["FreeGroup", "Target", "TargetSet", "load_targets", "ABSOLUTE_STATS", "RELATIVE_STATS"]

ABSOLUTE_STATS = ("p50", "p90", "p99", "p99_9", "mean", "min", "throughput")
RELATIVE_STATS = ("p50_cut", "p90_cut", "p99_cut", "mean_cut", "throughput_gain")


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

    @property
    def relative(self) -> bool:
        return self.statistic in RELATIVE_STATS

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

    def without(self, target_id: str) -> TargetSet:
        """The same set without one target (leave-one-out)."""
        kept = tuple(t for t in self.targets if t.id != target_id)
        if len(kept) == len(self.targets):
            raise ProfileError(f"{self.path}: no target {target_id!r}")
        return TargetSet(self.name, self.path, self.sha256, kept, self.free, self.excluded)

    def with_values(self, values: Mapping[str, float]) -> TargetSet:
        """The same set with other measured values (synthetic data, bootstraps)."""
        targets = tuple(
            Target(**{**t.__dict__, "value": float(values.get(t.id, t.value))})
            for t in self.targets
        )
        return TargetSet(self.name, self.path, self.sha256, targets, self.free, self.excluded)


def _err(path: Path, where: str, value: Any, problem: str) -> ProfileError:
    return ProfileError(f"{path}: {where} = {value!r}: {problem}")


def load_targets(path: str | Path) -> TargetSet:
    """Read and validate a targets file."""
    path = Path(path)
    raw = read_toml_bytes(path, "targets", ProfileError)
    data = parse_toml(raw, str(path), ProfileError)
    base = path.parent
    free = []
    for name, g in data.get("free", {}).items():
        params = g.get("params")
        if not isinstance(params, list) or not params:
            raise _err(path, f"free.{name}.params", params, "a non-empty list of profile names")
        lo, hi = g.get("bounds", [0.2, 5.0])
        if not 0 < lo < 1 < hi:
            raise _err(path, f"free.{name}.bounds", [lo, hi], "need 0 < low < 1 < high")
        free.append(FreeGroup(name, tuple(params), (float(lo), float(hi)), str(g.get("why", ""))))
    targets = []
    seen: set[str] = set()
    for i, t in enumerate(data.get("target", [])):
        where = f"target[{i}]"
        tid = t.get("id")
        if not isinstance(tid, str) or tid in seen:
            raise _err(path, f"{where}.id", tid, "a unique string")
        seen.add(tid)
        stat = t.get("statistic")
        if stat not in ABSOLUTE_STATS + RELATIVE_STATS:
            raise _err(
                path,
                f"{where}.statistic",
                stat,
                f"allowed: {', '.join(ABSOLUTE_STATS + RELATIVE_STATS)}",
            )
        relative = stat in RELATIVE_STATS
        if relative and "baseline" not in t:
            raise _err(
                path, f"{where}.baseline", None, "a relative figure needs a baseline scenario"
            )
        unit = t.get("unit", "%" if relative else "us")
        if unit != ("%" if relative else ("msg/s" if stat == "throughput" else "us")):
            raise _err(path, f"{where}.unit", unit, "relative figures in %, latencies in us")
        value = t.get("value")
        if not isinstance(value, int | float) or isinstance(value, bool):
            raise _err(path, f"{where}.value", value, "a number")
        latent = t.get("latent_placement")
        if latent is not None and (not isinstance(latent, str) or not latent or relative):
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
                baseline=(base / t["baseline"]).resolve() if relative else None,
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
    )
