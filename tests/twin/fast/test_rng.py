"""The fast engine's draws against their distributions (the ziggurats are exact samplers)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from numba import njit
from scipy import stats

from twin import dtypes
from twin.fast import _rng

SAMPLES = 1_000_000


@njit(cache=True)
def _many(n, state, code, p0, p1, p2):
    s0, s1, s2, s3 = state[0], state[1], state[2], state[3]
    out = np.empty(n)
    for i in range(n):
        x, s0, s1, s2, s3 = _rng.draw(code, p0, p1, p2, s0, s1, s2, s3)
        out[i] = x
    return out


def sample(code: int, params: tuple[float, float, float], seed: int = 3) -> np.ndarray:
    return np.asarray(_many(SAMPLES, _rng.seed_state(seed, 7), code, *params))


def test_ziggurat_tables_close_at_the_mode() -> None:
    """Every layer has the same area and the top layer ends at x = 0, f = 1."""
    assert _rng._NORMAL_F[-1] == 1.0 and _rng._EXP_F[-1] == 1.0
    assert _rng._NORMAL_K[-1] == 0 and _rng._EXP_K[-1] == 0
    assert np.all(np.diff(_rng._NORMAL_W) < 0) and np.all(np.diff(_rng._EXP_W) < 0)


@pytest.mark.parametrize(
    ("code", "params", "reference"),
    [
        (dtypes.DIST_EXP, (2.0, 0.0, 0.0), stats.expon(scale=2.0)),
        (dtypes.DIST_LOGNORMAL, (1.5, 2.0, 0.5), stats.lognorm(s=0.5, loc=1.5, scale=2.0)),
        (dtypes.DIST_LOGNORMAL, (0.0, 1.0, 1.0), stats.lognorm(s=1.0, scale=1.0)),
        (dtypes.DIST_GAMMA, (0.5, 0.7, 2.0), stats.gamma(a=0.7, loc=0.5, scale=2.0)),
        (dtypes.DIST_GAMMA, (0.0, 3.0, 1.0), stats.gamma(a=3.0)),
    ],
)
def test_draws_follow_their_distribution(
    code: int, params: tuple[float, float, float], reference: Any
) -> None:
    x = sample(code, params)
    assert stats.kstest(x, reference.cdf).pvalue > 1e-4
    assert x.mean() == pytest.approx(
        reference.mean(), rel=5 * reference.std() / reference.mean() / SAMPLES**0.5
    )
    # The tails come from the ziggurats' rarely taken branches: their mass must be right too.
    for q in (0.999, 0.9999):
        expected = reference.sf(reference.ppf(q))
        observed = float((x > reference.ppf(q)).mean())
        assert observed == pytest.approx(expected, abs=5 * (expected / SAMPLES) ** 0.5)


def test_normal_tail_beyond_the_base_layer() -> None:
    """The Marsaglia tail (|z| > r, about 2.6e-4 of draws) has the right mass and symmetry."""
    z = sample(dtypes.DIST_LOGNORMAL, (0.0, 1.0, 1.0), seed=11)
    z = np.log(z)
    expected = 2 * stats.norm.sf(_rng.NORMAL_R)
    observed = float((np.abs(z) > _rng.NORMAL_R).mean())
    assert observed == pytest.approx(expected, abs=5 * (expected / SAMPLES) ** 0.5)
    assert (
        abs(float((z > _rng.NORMAL_R).mean()) - float((z < -_rng.NORMAL_R).mean()))
        < 5 * (expected / SAMPLES) ** 0.5
    )
