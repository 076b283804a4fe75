"""Do the 90% bands cover the truth? A check on synthetic data where the truth is known.

One replicate: choose true factors for some free groups, draw "measurements" of a few targets
from the twin with those parameters (a seed the calibration never uses), calibrate from them,
compute the band of a held-out prediction and record whether the true value (the twin's
prediction under the true parameters, long run) falls inside. Over replicates, the fraction
covered should be near the nominal level.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from calibration.bands import prediction_bands
from calibration.calibrate import TwinCalibrator, _Space, evaluate_targets
from calibration.targets import TargetSet
from twin.profile import Profile
from twin.scenario import Scenario, load_scenario

__all__ = ["CoverageResult", "band_coverage"]


@dataclass(frozen=True)
class CoverageResult:
    covered: tuple[bool, ...]
    truths_us: tuple[float, ...]
    bands_us: tuple[tuple[float, float], ...]
    level: float

    @property
    def fraction(self) -> float:
        return sum(self.covered) / len(self.covered)


def band_coverage(
    targets: TargetSet,
    prior: Profile,
    *,
    groups: Sequence[str],
    check_scenario: str | Path | Scenario,
    check_statistic: str = "p50",
    replicates: int = 8,
    true_sd: float = 0.3,
    draws: int = 20,
    seed: int = 0,
) -> CoverageResult:
    """Fraction of replicates whose 90% band of ``check_statistic`` covers the truth."""
    rng = np.random.default_rng([seed, 0x434F56])
    chosen = tuple(g for g in targets.free if g.name in set(groups))
    space = _Space(chosen)
    check = (
        check_scenario if isinstance(check_scenario, Scenario) else load_scenario(check_scenario)
    )
    covered, truths, bands = [], [], []
    for r in range(replicates):
        true_x = rng.normal(0.0, true_sd, len(chosen))
        truth_profile = space.profile(prior, true_x, "synthetic truth")
        measured = evaluate_targets(targets.targets, truth_profile, base_seed=100_000 + 17 * r)
        synthetic = targets.with_values(measured)
        cal = TwinCalibrator(prior=prior, groups=list(groups), max_nfev=8).fit(synthetic)
        long_run = check.with_fields({"workload.seed": 900_000 + r})
        truth = prediction_bands(long_run, truth_profile, draws=1)[check_statistic].predicted_us
        band = prediction_bands(check, cal.profile_, draws=draws, seed=r)[check_statistic]
        covered.append(bool(band.covers(truth)) if math.isfinite(truth) else False)
        truths.append(truth)
        bands.append((band.low_us, band.high_us))
    return CoverageResult(tuple(covered), tuple(truths), tuple(bands), 0.9)
