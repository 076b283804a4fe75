"""Validation: a profile's predictions against measurements, and leave-one-out refits.

- :func:`validate_targets`: predicted vs measured for a set of targets (the profile's own
  calibration targets, or any other targets file);
- :func:`validate_measurements`: predicted vs measured per percentile for benchmark files read by
  :func:`calibration.read`, each against one scenario;
- :func:`leave_one_out`: refit without each target in turn (warm-started from the full fit) and
  predict the one left out. Those errors are the honest accuracy figure of the calibration.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from calibration.calibrate import TwinCalibrator, default_engine, evaluate_targets, fit_rows
from calibration.readers import read
from calibration.targets import TargetSet, disagreements, load_targets
from twin.errors import MeasurementError, ProfileError
from twin.histogram import percentile_from_counts_us
from twin.percentiles import HEADLINE, PERCENTILES
from twin.profile import Profile, load_profile, profiles_dir
from twin.scenario import Scenario
from twin.simulation import engine_output, prepare

__all__ = ["leave_one_out", "profile_targets", "validate_measurements", "validate_targets"]

REPO = Path(__file__).resolve().parent.parent
_CHECKED = HEADLINE


def profile_targets(profile: Profile) -> TargetSet:
    """The targets file a fitted profile was calibrated against (from its provenance)."""
    cal = profile.meta.get("calibration")
    if not isinstance(cal, Mapping) or "targets_file" not in cal:
        raise ProfileError(
            f"{profile.path}: no [meta.calibration] targets_file: not a fitted profile"
        )
    path = Path(cal["targets_file"])
    return load_targets(path if path.is_absolute() else REPO / path)


def validate_targets(profile: Profile, targets: TargetSet) -> list[dict[str, Any]]:
    """Rows of measured vs predicted for every target (with the estimated latent placements)."""
    classes: dict[str, str] = {}
    predicted = evaluate_targets(targets.targets, profile, latent_classes=classes)
    return fit_rows(targets.targets, predicted, classes)


def validate_measurements(
    profile: Profile, scenario: Scenario, paths: Sequence[str | Path]
) -> list[dict[str, Any]]:
    """Rows of measured vs predicted percentiles (and mean) for each benchmark file.

    A file whose stated conditions contradict the scenario (half round trips, an echo tool
    against the order loop, another payload, loop, connection count or achieved rate:
    :func:`calibration.targets.disagreements`) is refused rather than compared.
    """

    _, sim = default_engine()
    prepared = prepare(scenario, profile)
    out = engine_output(prepared, sim)
    predicted = {k: percentile_from_counts_us(out.counts, PERCENTILES[k]) for k in _CHECKED}
    predicted["mean"] = out.rtt_sum_us / max(out.messages, 1)
    rows = []
    for path in paths:
        m = read(path)
        problems = disagreements(m, scenario)
        if problems:  # a comparison under other conditions would be an error of the reading
            raise MeasurementError(
                f"{path}: not comparable with {scenario.source}: {'; '.join(problems)}"
            )
        measured: dict[str, float] = {}
        for name in _CHECKED:
            if m.covers(PERCENTILES[name]):
                measured[name] = m.percentile_us(PERCENTILES[name])
        if m.mean_us is not None:
            measured["mean"] = m.mean_us
        for stat, value in measured.items():
            pred = predicted[stat]
            rows.append(
                {
                    "target": str(path),
                    "statistic": stat,
                    "measured": value,
                    "predicted": pred,
                    "error_pct": 100.0 * (pred - value) / value if value > 0 else None,
                    "unit": "us",
                }
            )
    return rows


def leave_one_out(
    targets: TargetSet,
    *,
    prior: Profile | str | Path | None = None,
    start: Mapping[str, float] | None = None,
    max_nfev: int = 4,
) -> list[dict[str, Any]]:
    """For each target: refit without it (from ``start`` log-factors) and predict it."""
    prior = prior if prior is not None else load_profile(profiles_dir() / "prior.toml")
    rows = []
    for t in targets.targets:
        held_out = targets.without(t.id)
        cal = TwinCalibrator(prior=prior, x0=start, max_nfev=max_nfev).fit(held_out)
        # A target measured on a pair of unknown placement is predicted at the placement class
        # its fitted companions choose, never at the one its own value would pick.
        pair = [
            u
            for u in targets.targets
            if t.latent_placement is not None and u.latent_placement == t.latent_placement
        ]
        classes: dict[str, str] = {}
        pred = evaluate_targets(
            pair or [t], cal.profile_, latent_classes=classes, latent_exclude=frozenset({t.id})
        )[t.id]
        row = fit_rows([t], {t.id: pred}, classes)[0]
        row["fitted_without"] = True
        rows.append(row)
    return rows


def exceeds(
    rows: Sequence[Mapping[str, Any]], tolerance_pct: float | None, tolerance_pp: float | None
) -> list[str]:
    """Targets whose error is beyond the tolerance (a missing prediction always is)."""
    bad = []
    for r in rows:
        err = r["error_pct"]
        limit = tolerance_pp if r.get("unit") == "%" else tolerance_pct
        if limit is None:
            continue
        if err is None or not math.isfinite(err) or abs(err) > limit:
            bad.append(f"{r['target']} {r['statistic']}")
    return bad
