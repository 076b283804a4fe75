"""Twin calibration: solve for the free parameter groups so the twin reproduces its targets.

Each free group (:class:`~calibration.targets.FreeGroup`) scales some profile parameters by one
factor on their prior value. :class:`TwinCalibrator` fits the log-factors with
``scipy.optimize.least_squares`` (bounded), the engine in the loop:

- residuals are ``log(predicted / measured) / tolerance`` for absolute targets and
  ``(predicted - measured) / tolerance`` (percentage points) for relative figures, plus a weak
  prior ``log_factor / prior_sd`` per group (a factor nobody constrains stays at its prior and
  keeps a wide, honest uncertainty instead of a singular one);
- **common random numbers**: every evaluation runs the same scenarios with the same seeds (and so
  the same placements), so differences between evaluations come from the parameters only and
  finite differences see a smooth surface;
- uncertainty from the curvature: ``cov = (J^T J)^-1`` in log-factor space (J of the scaled
  residuals at the solution), inflated by the chi-square per target when it exceeds 1.

The fitted object is turned into a frozen profile with :func:`write_profile`.
"""

from __future__ import annotations

import datetime as _dt
import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import reduce
from pathlib import Path
from types import MappingProxyType
from typing import Any

import numpy as np
from scipy import optimize

from calibration.targets import FreeGroup, Target, TargetSet
from twin.components import fabric
from twin.errors import ConfigError
from twin.histogram import min_from_counts_us, percentile_from_counts_us
from twin.percentiles import ALL_PERCENTILES
from twin.profile import Parameter, Profile, load_profile, profiles_dir, resolve_profile_path
from twin.profile import write_profile as twin_write_profile
from twin.provenance import git_commit
from twin.results import MESSAGE_KINDS, EngineOutput
from twin.scenario import Scenario, load_scenario
from twin.simulation import DEFAULT_ENGINE, ENGINES, Prepared, hour_outputs, prepare
from twin.topology import level_between, place

__all__ = [
    "TwinCalibrator",
    "default_engine",
    "evaluate_targets",
    "fit_rows",
    "write_profile",
]

# Penalty (in tolerances) for a target whose scenario saturates under trial parameters.
_UNSTABLE_RESIDUAL = 50.0
# Random placements drawn to find the fabric levels a pair of unknown placement may be at, and
# how often each occurs.
_LATENT_SEARCH = 4000


def default_engine() -> tuple[str, Callable[..., EngineOutput]]:
    """The engine calibration runs the twin on: the project-wide default, by name and function."""
    return DEFAULT_ENGINE, ENGINES[DEFAULT_ENGINE]


@dataclass(frozen=True)
class _Outcome:
    """What calibration needs of one run (cheaper than a full :class:`RunResult`)."""

    stable: bool
    counts: np.ndarray | None = None
    messages: int = 0
    mean_us: float = math.nan
    throughput_msgs_per_s: float = math.nan
    hour_means_us: tuple[float, ...] = ()  # a whole-day scenario's mean per hour (twin.day)
    # Each message kind's histogram (twin.results.MESSAGE_KINDS), when the run kept them apart.
    counts_by_kind: Mapping[str, np.ndarray] = field(default_factory=dict)


def _run(prepared: Prepared, engine: Callable[..., EngineOutput]) -> _Outcome:
    """Run a prepared scenario; a saturated open loop is reported unstable, not simulated.
    A whole-day scenario runs hour by hour and pools the hours (:mod:`twin.day`)."""
    if prepared.is_saturated():
        return _Outcome(stable=False)
    outputs = hour_outputs(prepared, engine)
    if any(o.messages == 0 for o in outputs):
        return _Outcome(stable=False)
    out = reduce(lambda a, b: a.merge(b), outputs)
    return _Outcome(
        stable=True,
        counts=out.counts,
        messages=out.messages,
        mean_us=out.rtt_sum_us / out.messages,
        throughput_msgs_per_s=out.messages / (out.duration_us / 1e6),
        hour_means_us=tuple(o.rtt_sum_us / o.messages for o in outputs) if prepared.by_hour else (),
        counts_by_kind=_kind_counts(out, prepared.load.messages_per_cycle),
    )


def _kind_counts(out: EngineOutput, messages_per_cycle: int) -> dict[str, np.ndarray]:
    names = MESSAGE_KINDS.get(messages_per_cycle, ())
    if out.counts_by_kind is None or not names:
        return {}
    return dict(zip(names, out.counts_by_kind, strict=True))


_SCENARIO_CACHE: dict[tuple[Any, ...], Scenario] = {}


def _scenario(path: Path, overrides: Mapping[str, Any], seed: int, duration_s: float) -> Scenario:
    key = (str(path), tuple(sorted(overrides.items())), seed, duration_s)
    if key not in _SCENARIO_CACHE:
        changes = dict(overrides)
        changes.update(
            {
                "workload.seed": seed,
                "workload.duration_s": duration_s,
                "workload.warmup_s": min(0.01, duration_s / 5),
            }
        )
        _SCENARIO_CACHE[key] = load_scenario(path).with_fields(changes)
    return _SCENARIO_CACHE[key]


def _pooled_stat(results: Sequence[_Outcome], stat: str, kind: str | None = None) -> float:
    """``stat`` of the pooled runs; of one message kind's round trips when ``kind`` is given
    (a percentile or the minimum)."""
    if not all(r.stable for r in results):
        return math.nan
    if kind is not None:
        if not all(kind in r.counts_by_kind for r in results):
            raise ConfigError(f"statistic {stat} of {kind}s: the run has no such message kind")
        counts = np.sum([r.counts_by_kind[kind] for r in results], axis=0)
    elif stat == "throughput":
        return float(np.mean([r.throughput_msgs_per_s for r in results]))
    elif stat == "mean":
        n = sum(r.messages for r in results)
        return sum(r.mean_us * r.messages for r in results) / n
    elif stat == "hour_mean_range":
        if not all(r.hour_means_us for r in results):
            raise ConfigError(
                "statistic hour_mean_range needs a whole-day scenario ([day], no hour)"
            )
        return float(np.mean([max(r.hour_means_us) - min(r.hour_means_us) for r in results]))
    else:
        counts = np.sum([r.counts for r in results if r.counts is not None], axis=0)
    if stat == "min":
        return min_from_counts_us(counts)
    return percentile_from_counts_us(counts, ALL_PERCENTILES[stat])


def _placement_seed(base_seed: int, k: int) -> int:
    """The k-th seed of a target's random placements (common to every evaluation)."""
    return base_seed + 7919 * k


def _seeds(target: Target, base_seed: int) -> list[int]:
    return [_placement_seed(base_seed, k) for k in range(target.placement_seeds)]


@dataclass(frozen=True)
class _PlacementClass:
    """Seeds putting a pair at one fabric level, and how often a random placement does."""

    seeds: tuple[int, ...]
    probability: float


_CLASS_CACHE: dict[tuple[Any, ...], dict[str, _PlacementClass]] = {}
_LAYOUT = ("az_spine_cells", "cell_racks", "cpg_rack_span", "az_datacenters")


def _placement_classes(
    target: Target, profile: Profile, base_seed: int
) -> dict[str, _PlacementClass]:
    """Each fabric level a random placement puts the target's pair at: seeds and frequency.

    Placement depends on the seed and the profile's fixed layout (cells, racks, data centres),
    not on fitted values, so the classes stay put during a fit (common random numbers).
    """
    layout = tuple(profile.value(name) for name in _LAYOUT)
    key = (str(target.scenario), tuple(sorted(target.overrides.items())), base_seed, layout)
    if key in _CLASS_CACHE:
        return _CLASS_CACHE[key]
    scenario = _scenario(target.scenario, target.overrides, base_seed, target.duration_s)
    seeds: dict[str, list[int]] = {}
    hits: dict[str, int] = {}
    for k in range(_LATENT_SEARCH):
        seed = _placement_seed(base_seed, k)
        placed = list(place(scenario.with_fields({"workload.seed": seed}), profile).values())
        if len(placed) != 2:
            raise ConfigError(
                f"target {target.id}: a latent placement needs exactly two instances "
                f"(found {len(placed)})"
            )
        level = level_between(*placed)
        hits[level] = hits.get(level, 0) + 1
        found = seeds.setdefault(level, [])
        if len(found) < target.placement_seeds:
            found.append(seed)
    classes = {
        level: _PlacementClass(tuple(seeds[level]), hits[level] / _LATENT_SEARCH)
        for level in sorted(seeds, key=fabric.LEVELS.index)
    }
    _CLASS_CACHE[key] = classes
    return classes


def evaluate_targets(
    targets: Sequence[Target],
    profile: Profile,
    *,
    base_seed: int = 1,
    engine: tuple[str, Callable[..., EngineOutput]] | None = None,
    latent_classes: dict[str, str] | None = None,
    latent_exclude: frozenset[str] = frozenset(),
) -> dict[str, float]:
    """The twin's prediction of every target under ``profile`` (NaN when a run saturates).

    Relative figures are averaged over the target's placement seeds (a random placement is what
    "no placement group" means to a customer); absolute ones pool the seeds' histograms.

    Targets sharing a ``latent_placement`` were measured on one pair of instances whose placement
    is unknown: the twin runs the pair at each fabric level a random placement reaches (rack,
    cell, cross-cell, cross-data-centre) and predicts the posterior mean over those levels: each
    level weighted by how often a random placement lands there times the likelihood of the
    group's figures (``exp(-chi2/2)`` of their residuals). The weights vary smoothly with the
    parameters, so the fit sees no jumps when the likely level changes; they are recorded in
    ``latent_classes`` (e.g. ``"rack 60%, cell 40%"``). Targets in ``latent_exclude`` are
    predicted but do not weigh the levels (leave-one-out); a group left with no member to weigh
    them averages the levels by frequency alone, the prediction for a pair nobody has measured.
    """
    _, sim = engine or default_engine()
    memo: dict[tuple[Any, ...], _Outcome] = {}

    def result(path: Path, overrides: Mapping[str, Any], seed: int, duration: float) -> _Outcome:
        key = (str(path), tuple(sorted(overrides.items())), seed, duration)
        if key not in memo:
            memo[key] = _run(prepare(_scenario(path, overrides, seed, duration), profile), sim)
        return memo[key]

    def pooled(t: Target, seeds: Sequence[int]) -> float:
        return _pooled_stat(
            [result(t.scenario, t.overrides, s, t.duration_s) for s in seeds], t.statistic, t.kind
        )

    out: dict[str, float] = {}
    groups: dict[str, list[Target]] = {}
    for t in targets:
        if t.latent_placement is not None:
            groups.setdefault(t.latent_placement, []).append(t)
            continue
        seeds = _seeds(t, base_seed)
        if not (t.relative or t.difference):
            out[t.id] = pooled(t, seeds)
            continue
        runs = [result(t.scenario, t.overrides, s, t.duration_s) for s in seeds]
        assert t.baseline is not None
        base_runs = [result(t.baseline, t.baseline_overrides, s, t.duration_s) for s in seeds]
        figures = []
        for a, b in zip(runs, base_runs, strict=True):
            if t.statistic == "throughput_gain":
                va, vb = _pooled_stat([a], "throughput"), _pooled_stat([b], "throughput")
                figures.append(100.0 * (va / vb - 1.0))
            elif t.difference:
                stat = t.statistic.removesuffix("_difference")
                figures.append(_pooled_stat([b], stat) - _pooled_stat([a], stat))
            else:
                stat = t.statistic.removesuffix("_cut")
                va, vb = _pooled_stat([a], stat), _pooled_stat([b], stat)
                figures.append(100.0 * (1.0 - va / vb))
        out[t.id] = float(np.mean(figures))
    for label, members in groups.items():
        classes = _placement_classes(members[0], profile, base_seed)
        judges = [t for t in members if t.id not in latent_exclude]
        levels = list(classes)
        values = {
            level: {t.id: pooled(t, classes[level].seeds) for t in members} for level in levels
        }
        log_post = np.array(
            [
                -0.5 * sum(_residual(t, values[level][t.id]) ** 2 for t in judges)
                + math.log(classes[level].probability)
                for level in levels
            ]
        )
        weights = np.exp(log_post - log_post.max())
        weights /= weights.sum()
        for t in members:
            out[t.id] = float(
                sum(w * values[lv][t.id] for w, lv in zip(weights, levels, strict=True))
            )
        if latent_classes is not None:
            ranked = sorted(zip(weights, levels, strict=True), reverse=True)
            latent_classes[label] = ", ".join(f"{lv} {w:.0%}" for w, lv in ranked if w >= 0.005)
    return out


def _residual(t: Target, predicted: float) -> float:
    if not math.isfinite(predicted):
        return _UNSTABLE_RESIDUAL
    if t.difference:
        return (predicted - t.value) / (t.tolerance * abs(t.value))
    if not t.relative and predicted <= 0:
        return _UNSTABLE_RESIDUAL
    if t.relative:
        return (predicted - t.value) / t.tolerance
    return math.log(predicted / t.value) / t.tolerance


@dataclass(frozen=True)
class _Space:
    groups: tuple[FreeGroup, ...]

    def profile(self, prior: Profile, log_factors: np.ndarray, source: str) -> Profile:
        values = {}
        for g, lf in zip(self.groups, log_factors, strict=True):
            for p in g.params:
                values[p] = prior.value(p) * math.exp(float(lf))
        return prior.with_values(values, source=source)


class TwinCalibrator:
    """Fit the free groups of a targets file; scikit-learn style (``fit`` returns ``self``).

    Keyword-only settings: ``prior`` (the profile whose values the factors scale; the shipped
    prior by default), ``groups`` (names of the free groups to fit; all by default), ``max_nfev``,
    ``diff_step`` (finite-difference step in log-factor space), ``base_seed`` (the common random
    numbers), ``prior_sd`` (sd of the weak prior on each log-factor; None: a quarter of the log
    width of the group's bounds), ``x0`` (starting log-factors by group name), ``starts``
    (quasi-random points, a scrambled Sobol sequence over the bounds in log-factor space, whose
    cost is evaluated; a second local fit starts from the best of them and the better of the two
    fits is kept: for objectives whose simulated percentiles move in steps, where a trust region
    started far away shrinks to nothing; 0, the default, fits from ``x0`` only).

    Fitted: ``groups_``, ``log_factors_``, ``covariance_`` (log-factor space), ``factor_sd_``,
    ``predictions_``, ``latent_placements_`` (the placement class estimated for each pair of
    unknown placement), ``residuals_``, ``chi2_``, ``nfev_``, ``elapsed_s_``, ``engine_``,
    ``profile_`` (a :class:`~twin.profile.Profile` with fitted values and sd).
    """

    _constraints = (
        "prior",
        "groups",
        "max_nfev",
        "diff_step",
        "base_seed",
        "prior_sd",
        "x0",
        "starts",
    )

    def __init__(
        self,
        *,
        prior: Profile | str | Path | None = None,
        groups: Sequence[str] | None = None,
        max_nfev: int = 40,
        diff_step: float = 0.25,
        base_seed: int = 1,
        prior_sd: float | None = None,
        x0: Mapping[str, float] | None = None,
        starts: int = 0,
    ) -> None:
        self.prior = prior
        self.groups = groups
        self.max_nfev = max_nfev
        self.diff_step = diff_step
        self.base_seed = base_seed
        self.prior_sd = prior_sd
        self.x0 = x0
        self.starts = starts

    def get_params(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self._constraints}

    def _prior_profile(self, targets: TargetSet) -> Profile:
        """The given prior; else the targets file's ``[meta] prior``; else the shipped prior."""
        if isinstance(self.prior, Profile):
            return self.prior
        if self.prior is not None:
            return load_profile(self.prior)
        if targets.prior is not None:
            return load_profile(resolve_profile_path(targets.prior))
        return load_profile(profiles_dir() / "prior.toml")

    def fit(self, targets: TargetSet) -> TwinCalibrator:
        if self.starts < 0:
            raise ConfigError(f"TwinCalibrator: starts = {self.starts}; allowed >= 0")
        if self.max_nfev < 1:
            raise ConfigError(f"TwinCalibrator: max_nfev = {self.max_nfev}; allowed >= 1")
        if not 0 < self.diff_step < 1:
            raise ConfigError(f"TwinCalibrator: diff_step = {self.diff_step}; allowed (0, 1)")
        started = time.perf_counter()
        prior = self._prior_profile(targets)
        groups = tuple(g for g in targets.free if self.groups is None or g.name in set(self.groups))
        if not groups:
            raise ConfigError(f"{targets.path}: no free parameter group selected")
        for g in groups:
            for p in g.params:
                prior[p]  # noqa: B018 - raises ProfileError naming a missing parameter
        space = _Space(groups)
        lo = np.array([math.log(g.bounds[0]) for g in groups])
        hi = np.array([math.log(g.bounds[1]) for g in groups])
        prior_sd = (
            np.full(len(groups), self.prior_sd) if self.prior_sd is not None else (hi - lo) / 4.0
        )
        engine = default_engine()
        x0 = np.array([float((self.x0 or {}).get(g.name, 0.0)) for g in groups])
        x0 = np.clip(x0, lo + 1e-6, hi - 1e-6)
        cache: dict[bytes, dict[str, float]] = {}
        latent: dict[bytes, dict[str, str]] = {}

        def predictions(x: np.ndarray) -> dict[str, float]:
            key = np.round(x, 12).tobytes()
            if key not in cache:
                latent[key] = {}
                cache[key] = evaluate_targets(
                    targets.targets,
                    space.profile(prior, x, "calibration trial"),
                    base_seed=self.base_seed,
                    engine=engine,
                    latent_classes=latent[key],
                )
            return cache[key]

        def residuals(x: np.ndarray) -> np.ndarray:
            pred = predictions(x)
            r = [_residual(t, pred[t.id]) for t in targets.targets]
            return np.concatenate([np.array(r), x / prior_sd])

        def jacobian(x: np.ndarray) -> np.ndarray:
            # Forward differences with an absolute step in log-factor space (scipy's relative
            # step is zero at a factor of 1); stepping inwards at an upper bound.
            f0 = residuals(x)
            cols = []
            for i in range(x.size):
                step = self.diff_step if x[i] + self.diff_step <= hi[i] else -self.diff_step
                xi = x.copy()
                xi[i] += step
                cols.append((residuals(xi) - f0) / step)
            return np.stack(cols, axis=1)

        def local_fit(start: np.ndarray) -> Any:
            return optimize.least_squares(
                residuals,
                start,
                jac=jacobian,
                bounds=(lo, hi),
                method="trf",
                x_scale="jac",
                max_nfev=self.max_nfev,
            )

        sol = local_fit(x0)
        if self.starts > 0:
            from scipy.stats import qmc

            unit = qmc.Sobol(len(groups), scramble=True, seed=self.base_seed).random(self.starts)
            best = min(
                (lo + (hi - lo) * u for u in unit), key=lambda x: float(np.sum(residuals(x) ** 2))
            )
            sol = min(sol, local_fit(best), key=lambda found: float(found.cost))
        jac = np.asarray(sol.jac)
        n_t = len(targets.targets)
        fit_res = sol.fun[:n_t]
        chi2 = float(np.sum(fit_res**2))
        # Targets missed by more than their tolerance say the model (or the reading of a
        # figure) is off by more than the stated noise: widen the uncertainty by the mean
        # squared misfit per target. (With about as many free groups as targets the usual
        # chi2/dof is meaningless; the weak prior keeps J^T J invertible.)
        scale = max(1.0, chi2 / n_t)
        cov = np.linalg.pinv(jac.T @ jac) * scale
        self.groups_ = groups
        self.log_factors_ = {g.name: float(v) for g, v in zip(groups, sol.x, strict=True)}
        self.covariance_ = cov
        self.factor_sd_ = {
            g.name: float(math.sqrt(max(cov[i, i], 0.0))) for i, g in enumerate(groups)
        }
        self.predictions_ = dict(predictions(sol.x))
        self.latent_placements_ = dict(latent[np.round(sol.x, 12).tobytes()])
        self.residuals_ = {t.id: float(r) for t, r in zip(targets.targets, fit_res, strict=True)}
        self.chi2_ = chi2
        self.nfev_ = int(sol.nfev)
        self.engine_ = engine[0]
        self.prior_profile_ = prior
        self.targets_ = targets
        self.elapsed_s_ = time.perf_counter() - started
        self.profile_ = self._profile()
        return self

    def _profile(self) -> Profile:
        prior = self.prior_profile_
        params = dict(prior.params)
        rows = sorted({t.row for t in self.targets_.targets})
        for g in self.groups_:
            lf, sd = self.log_factors_[g.name], self.factor_sd_[g.name]
            for p in g.params:
                old = prior[p]
                value = old.value * math.exp(lf)
                params[p] = Parameter(
                    value=round(value, 6),
                    sd=round(value * sd, 6),
                    fitted=True,
                    source=(
                        f"fit (group {g.name}, factor {math.exp(lf):.3f} on the prior "
                        f"{old.value:g}) to {self.targets_.path.name}: {', '.join(rows)}"
                    ),
                )
        measured = self._measurements()
        name = prior.name if measured else "default"
        what = "the measurements" if measured else "the published figures"
        meta = {
            "name": name,
            "description": f"Fitted to {what} (see [meta.calibration]).",
            "status": "fitted",
            "calibration": self.provenance(),
        }
        return Profile(
            name=name,
            params=MappingProxyType(params),
            meta=MappingProxyType(meta),
            path="<fitted>",
        )

    def _measurements(self) -> list[str]:
        """The measured files or folders the targets read (none for published figures)."""
        return sorted({t.measurement for t in self.targets_.targets if t.measurement})

    def provenance(self) -> dict[str, Any]:
        """Which targets, which data, when and which code version produced this fit."""
        t = self.targets_
        repo = Path(__file__).resolve().parent.parent
        try:
            targets_file = str(t.path.resolve().relative_to(repo))
        except ValueError:
            targets_file = str(t.path)
        return {
            "targets_file": targets_file,
            "targets_sha256": t.sha256,
            "data": self._measurements() or "calibration/data/published_figures.csv",
            "date": _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "code_version": git_commit() or "unknown",
            "engine": self.engine_,
            "base_seed": self.base_seed,
            "nfev": self.nfev_,
            "chi2": round(self.chi2_, 4),
            "elapsed_s": round(self.elapsed_s_, 1),
            "groups": [g.name for g in self.groups_],
            "group_params": {g.name: list(g.params) for g in self.groups_},
            "group_bounds": {g.name: list(g.bounds) for g in self.groups_},
            "log_factors": [round(self.log_factors_[g.name], 6) for g in self.groups_],
            "covariance": [[round(float(v), 8) for v in row] for row in self.covariance_],
            "latent_placements": dict(self.latent_placements_),
            "fit": {
                tg.id: {
                    "row": tg.row,
                    "statistic": tg.statistic,
                    "measured": tg.value,
                    "predicted": round(self.predictions_[tg.id], 4),
                    "error": round(tg.error(self.predictions_[tg.id]), 3),
                }
                for tg in t.targets
            },
        }


def fit_rows(
    targets: Sequence[Target],
    predicted: Mapping[str, float],
    latent_classes: Mapping[str, str] | None = None,
) -> list[dict[str, Any]]:
    """Rows of measured vs predicted (the ``twin validate --json`` shape).

    A target of unknown placement also carries ``placement``: the fabric level estimated for it.
    """
    rows = []
    for t in targets:
        p = predicted[t.id]
        row = {
            "target": t.id,
            "statistic": t.statistic,
            "measured": t.value,
            "predicted": p,
            "error_pct": t.error(p) if math.isfinite(p) else None,
            "unit": t.unit,
        }
        if t.latent_placement is not None and latent_classes:
            row["placement"] = latent_classes.get(t.latent_placement)
        rows.append(row)
    return rows


# Comment lines at the top of a profile written by `twin calibrate`.
PROFILE_HEADER = """\
Calibration profile written by `twin calibrate` (calibration/calibrate.py): every number the
model uses, with its source. Fitted parameters carry `fitted = true`, a standard uncertainty
`sd` (curvature of the fit, propagated from the log-factor covariance in [meta.calibration])
and the targets they were fitted to. Unfitted parameters keep their prior value and source.
Times in microseconds; stage x = floor x_floor_us + lognormal(median x_median_us, sigma x_sigma).
"""


def write_profile(profile: Profile, path: str | Path) -> Path:
    """Write a fitted profile (see :func:`twin.profile.write_profile`) with its header."""
    return twin_write_profile(profile, path, PROFILE_HEADER)
