"""Sweep files: a base scenario, a grid (or a list) of field changes, and replications.

A sweep file is TOML::

    name = "tiers_by_rate"                  # optional, defaults to the file's stem
    scenario = "../tier1_peering_cpg.toml"  # base scenario (relative to the sweep file)
    engine = "des"                          # optional: "fast" (the default) or "des"
    replications = 3                        # independent runs per point (default 1)
    seed = 1                                # base seed of the replications' seeds (default 1)

    [set]                                   # changes applied to every point
    "workload.duration_s" = 0.05

    [grid]                                  # cartesian product, the last axis varies fastest
    scenario = ["../tier1_peering_cpg.toml", "../tier2_peering.toml"]
    "workload.rate_msgs_per_s" = [10000, 100000]

    [[grid.together]]                       # fields that vary in step form one axis
    "roles.client.instance" = ["c5n.9xlarge", "c6in.metal"]
    "roles.gateway.instance" = ["c5n.9xlarge", "c6in.metal"]

or, instead of ``[grid]``, an explicit list of points: ``[[points]]`` tables of fields. Fields are
the scenario's dotted names (quoted or written as nested tables) plus ``scenario``, a path to
another base scenario file. Loading runs parse -> expand -> validate **every** point through
:meth:`Scenario.with_fields`, so a bad value deep in a grid is refused before any work starts,
naming the sweep file, the field and the value.

Replication ``r`` runs with seed ``SeedSequence(seed).spawn(replications)[r]`` (63 bits) at every
point: common random numbers across points, which sharpens comparisons between points.
"""

from __future__ import annotations

import hashlib
import itertools
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from twin.errors import ScenarioError
from twin.replicate import replication_seed
from twin.scenario import Scenario, load_scenario
from twin.simulation import DEFAULT_ENGINE, ENGINES
from twin.tomlio import parse_toml, read_toml_bytes

SCENARIO_AXIS = "scenario"
TOGETHER = "together"
TOP_KEYS = (
    "name",
    "description",
    "scenario",
    "engine",
    "replications",
    "seed",
    "set",
    "grid",
    "points",
)
MAX_REPLICATIONS = 1000
# Grid points a sweep may have (before replications): a larger grid is a typo more often than a
# plan, and its points alone would fill memory before any run starts.
MAX_POINTS = 10_000
# A sweep's name names its output folder: one path component, no traversal.
NAME_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
# Seeds are driven through the seed field, which the sweep owns.
RESERVED_FIELDS = ("workload.seed",)


def replication_seeds(base_seed: int, replications: int) -> tuple[int, ...]:
    """Independent 63-bit seeds, one per replication: the same ones ``twin run --replications``
    uses for that seed, so a sweep point and a single run agree."""
    return tuple(replication_seed(base_seed, k) for k in range(replications))


@dataclass(frozen=True)
class Point:
    """One grid point: its index and the field values that define it (in axis order)."""

    point_id: int
    fields: tuple[tuple[str, Any], ...]
    scenario: Scenario

    @property
    def label(self) -> str:
        """A short human label: the swept values joined (``rate_msgs_per_s=10000, ...``)."""
        return point_label(dict(self.fields))


def point_label(fields: Mapping[str, Any], skip: tuple[str, ...] = ()) -> str:
    """Swept values by their last name part, or the full dotted name where those collide."""
    names = [k for k in fields if k not in skip]
    short = [_short(k) for k in names]
    parts = [
        f"{s if short.count(s) == 1 else k}={_short_value(fields[k])}"
        for k, s in zip(names, short, strict=True)
        if fields[k] is not None
    ]
    return ", ".join(parts)


@dataclass(frozen=True)
class Sweep:
    """A validated sweep: every point's scenario already built and checked."""

    name: str
    description: str
    source: str
    sha256: str
    engine: str
    replications: int
    seed: int
    seeds: tuple[int, ...]
    axes: tuple[str, ...]
    points: tuple[Point, ...]

    @property
    def n_tasks(self) -> int:
        return len(self.points) * self.replications


def _short(field: str) -> str:
    return field.rsplit(".", 1)[-1]


def _short_value(value: Any) -> str:
    if isinstance(value, str) and value.endswith(".toml"):
        return Path(value).stem
    if isinstance(value, float) and value.is_integer():
        return f"{value:.0f}"
    if isinstance(value, float) and abs(value) >= 1000:
        return f"{value:.0f}"  # a computed rate: 57421.60140048741 -> 57422
    return str(value)


def _flatten(source: str, where: str, table: Any, prefix: str = "") -> dict:
    """Nested TOML tables to dotted names (``workload.rate = 1`` and ``"workload.rate" = 1``)."""
    if not isinstance(table, dict):
        raise ScenarioError(f"{source}: {where} = {table!r}: must be a table of field = value")
    out: dict[str, Any] = {}
    for key, value in table.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            out.update(_flatten(source, where, value, f"{name}."))
        else:
            if name in out:
                raise ScenarioError(f"{source}: {where}.{name}: given twice")
            out[name] = value
    return out


def _axes(source: str, grid: Any) -> list[tuple[tuple[str, ...], list[tuple[Any, ...]]]]:
    """Grid axes as (field names, list of value tuples); a ``together`` group is one axis."""
    if not isinstance(grid, dict):
        raise ScenarioError(f"{source}: grid = {grid!r}: must be a table of field = [values]")
    together = grid.get(TOGETHER, [])
    plain = {k: v for k, v in grid.items() if k != TOGETHER}
    axes: list[tuple[tuple[str, ...], list[tuple[Any, ...]]]] = []
    for field, values in _flatten(source, "grid", plain).items():
        if not isinstance(values, list):
            raise ScenarioError(
                f"{source}: grid.{field} = {values!r}: must be a list of values to sweep"
            )
        if not values:
            raise ScenarioError(f"{source}: grid.{field} = []: empty axis; give at least one value")
        axes.append(((field,), [(v,) for v in values]))
    if not isinstance(together, list) or not all(isinstance(g, dict) for g in together):
        raise ScenarioError(f"{source}: grid.{TOGETHER}: must be [[grid.{TOGETHER}]] tables")
    for i, group in enumerate(together):
        flat = _flatten(source, f"grid.{TOGETHER}[{i}]", group)
        if not flat:
            raise ScenarioError(f"{source}: grid.{TOGETHER}[{i}]: empty group")
        lengths = set()
        for field, values in flat.items():
            if not isinstance(values, list) or not values:
                raise ScenarioError(
                    f"{source}: grid.{TOGETHER}[{i}].{field} = {values!r}: must be a non-empty "
                    "list of values"
                )
            lengths.add(len(values))
        if len(lengths) != 1:
            raise ScenarioError(
                f"{source}: grid.{TOGETHER}[{i}]: lists of different lengths "
                f"({', '.join(f'{k}: {len(v)}' for k, v in flat.items())}); fields in a group "
                "vary in step"
            )
        axes.append((tuple(flat), list(zip(*flat.values(), strict=True))))
    if not axes:
        raise ScenarioError(f"{source}: grid: empty grid; give at least one field = [values]")
    names = [f for fields, _ in axes for f in fields]
    duplicated = sorted({f for f in names if names.count(f) > 1})
    if duplicated:
        raise ScenarioError(f"{source}: grid.{duplicated[0]}: swept twice")
    return axes


def _point_changes(source: str, sweep: dict) -> list[dict[str, Any]]:
    if "grid" in sweep and "points" in sweep:
        raise ScenarioError(f"{source}: give either [grid] or [[points]], not both")
    if "grid" in sweep:
        axes = _axes(source, sweep["grid"])
        size = math.prod(len(values) for _, values in axes)
        if size > MAX_POINTS:
            raise ScenarioError(
                f"{source}: grid: {size:,} points; allowed at most {MAX_POINTS:,} "
                "(split the sweep, or sample it with [[points]])"
            )
        points = []
        for combo in itertools.product(*(values for _, values in axes)):
            changes: dict[str, Any] = {}
            for (fields, _), values in zip(axes, combo, strict=True):
                changes.update(zip(fields, values, strict=True))
            points.append(changes)
        return points
    if "points" in sweep:
        raw = sweep["points"]
        if not isinstance(raw, list) or not all(isinstance(p, dict) for p in raw):
            raise ScenarioError(f"{source}: points: must be [[points]] tables of field = value")
        if not raw:
            raise ScenarioError(f"{source}: points = []: empty list of points")
        if len(raw) > MAX_POINTS:
            raise ScenarioError(f"{source}: points: {len(raw):,}; allowed at most {MAX_POINTS:,}")
        return [_flatten(source, f"points[{i}]", p) for i, p in enumerate(raw)]
    raise ScenarioError(f"{source}: needs a [grid] table or [[points]] tables")


def _integer(source: str, sweep: dict, key: str, default: int, low: int, high: int) -> int:
    value = sweep.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ScenarioError(f"{source}: {key} = {value!r}: allowed: integer {low}..{high}")
    return value


def _load_base(source: str, base_dir: Path, where: str, value: Any, cache: dict) -> Scenario:
    if not isinstance(value, str):
        raise ScenarioError(f"{source}: {where} = {value!r}: must be a path to a scenario file")
    if value not in cache:
        try:
            cache[value] = load_scenario(base_dir / value)
        except ScenarioError as exc:
            raise ScenarioError(f"{source}: {where} = {value!r}: {exc}") from None
    scenario: Scenario = cache[value]
    return scenario


def _name_the_field(
    source: str,
    where: str,
    fixed: dict[str, Any],
    field_changes: dict[str, Any],
    scenario: Scenario,
    exc: ScenarioError,
) -> ScenarioError:
    """The error of a point that failed validation, naming the one field to blame if there is."""
    for field, value in {**fixed, **field_changes}.items():
        try:
            scenario.with_fields({field: value})
        except ScenarioError as alone:
            place = where if field in field_changes else "set"
            return ScenarioError(f"{source}: {place}.{field} = {value!r}: {alone}")
    label = ", ".join(f"{k} = {v!r}" for k, v in field_changes.items())
    return ScenarioError(f"{source}: {where} point ({label}): {exc}")


def parse_sweep(data: Mapping[str, Any], source: str, sha256: str = "") -> Sweep:
    """Validate a sweep given as a mapping; paths are relative to ``source``'s folder."""
    sweep = dict(data)
    unknown = sorted(set(sweep) - set(TOP_KEYS))
    if unknown:
        raise ScenarioError(
            f"{source}: {unknown[0]}: unknown key; allowed here: {', '.join(TOP_KEYS)}"
        )
    base_dir = Path(source).parent
    name = sweep.get("name", Path(source).stem)
    description = sweep.get("description", "")
    if not isinstance(name, str) or not isinstance(description, str):
        raise ScenarioError(f"{source}: name and description must be strings")
    if not NAME_PATTERN.fullmatch(name):
        raise ScenarioError(
            f"{source}: name = {name!r}: it names the output folder: 1-100 letters, digits, "
            "'.', '_' or '-', starting with a letter or digit"
        )
    engine = sweep.get("engine", DEFAULT_ENGINE)
    if not isinstance(engine, str) or engine not in ENGINES:
        raise ScenarioError(f"{source}: engine = {engine!r}: allowed: {', '.join(sorted(ENGINES))}")
    replications = _integer(source, sweep, "replications", 1, 1, MAX_REPLICATIONS)
    seed = _integer(source, sweep, "seed", 1, 0, 2**63 - 1)
    fixed = _flatten(source, "set", sweep.get("set", {}))
    changes_list = _point_changes(source, sweep)
    for where, fields in [("set", fixed)] + [("grid", c) for c in changes_list]:
        for field in fields:
            if field in RESERVED_FIELDS:
                raise ScenarioError(
                    f"{source}: {where}.{field}: set by the sweep from seed and replications; "
                    "use the top-level seed"
                )
    if SCENARIO_AXIS in fixed:
        raise ScenarioError(f"{source}: set.scenario: give the base scenario as top-level scenario")
    cache: dict[str, Scenario] = {}
    if "scenario" in sweep:
        base: Scenario | None = _load_base(source, base_dir, "scenario", sweep["scenario"], cache)
    else:
        base = None
    points = []
    for point_id, changes in enumerate(changes_list):
        where = "grid" if "grid" in sweep else f"points[{point_id}]"
        if SCENARIO_AXIS in changes:
            scenario = _load_base(
                source, base_dir, f"{where}.scenario", changes[SCENARIO_AXIS], cache
            )
        elif base is None:
            raise ScenarioError(
                f"{source}: scenario is required (a base scenario file, or a grid axis scenario)"
            )
        else:
            scenario = base
        field_changes = {k: v for k, v in changes.items() if k != SCENARIO_AXIS}
        merged = {**fixed, **field_changes}
        try:
            built = scenario.with_fields({**merged, "workload.seed": seed})
        except ScenarioError as exc:
            raise _name_the_field(source, where, fixed, field_changes, scenario, exc) from None
        points.append(Point(point_id, tuple(changes.items()), built))
    axes = tuple(dict.fromkeys(f for p in points for f, _ in p.fields))
    return Sweep(
        name=name,
        description=description,
        source=source,
        sha256=sha256,
        engine=engine,
        replications=replications,
        seed=seed,
        seeds=replication_seeds(seed, replications),
        axes=axes,
        points=tuple(points),
    )


def load_sweep(path: str | Path) -> Sweep:
    """Read and validate a sweep file; every point is checked before anything runs."""
    path = Path(path)
    blob = read_toml_bytes(path, "sweep", ScenarioError)
    data = parse_toml(blob, str(path), ScenarioError)
    return parse_sweep(data, source=str(path), sha256=hashlib.sha256(blob).hexdigest())
