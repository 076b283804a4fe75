"""The fast engine's draws against their distributions.

The path's distributions are drawn from quantile tables (:mod:`twin.fast._quantile`), whose
interpolation error is bounded at build; the open loop's Poisson gaps come from an exact ziggurat.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from numba import njit
from scipy import stats

from twin.dists import Const, Exponential, ShiftedGamma, ShiftedLognormal
from twin.fast import _quantile, _rng

SAMPLES = 1_000_000


@njit(cache=True)
def _table_draws(n, state, table):
    s0, s1, s2, s3 = state[0], state[1], state[2], state[3]
    out = np.empty(n)
    for k in range(n):
        i, f, s0, s1, s2, s3 = _quantile.grid_point(s0, s1, s2, s3)
        out[k] = table[i] + (table[i + np.uint64(1)] - table[i]) * f
    return out


@njit(cache=True)
def _exponentials(n, state):
    s0, s1, s2, s3 = state[0], state[1], state[2], state[3]
    out = np.empty(n)
    for k in range(n):
        out[k], s0, s1, s2, s3 = _rng.exponential(s0, s1, s2, s3)
    return out


def table_sample(code: int, params: tuple[float, float, float], seed: int = 3) -> np.ndarray:
    table = _quantile.quantile_table(code, *params)
    return np.asarray(_table_draws(SAMPLES, _rng.seed_state(seed, 7), table))


def check_follows(x: np.ndarray, reference: Any) -> None:
    """KS, the mean, and the mass of the far tails (drawn from the deep levels of the grid)."""
    assert stats.kstest(x, reference.cdf).pvalue > 1e-4
    assert x.mean() == pytest.approx(
        reference.mean(), rel=5 * reference.std() / reference.mean() / SAMPLES**0.5
    )
    for q in (0.001, 0.999, 0.9999, 0.99999):
        expected = reference.sf(reference.ppf(q))
        observed = float((x > reference.ppf(q)).mean())
        assert observed == pytest.approx(expected, abs=5 * (expected / SAMPLES) ** 0.5 + 1e-9)


def test_ziggurat_tables_close_at_the_mode() -> None:
    """Every layer has the same area and the top layer ends at x = 0, f = 1."""
    assert _rng._EXP_F[-1] == 1.0
    assert _rng._EXP_K[-1] == 0
    assert np.all(np.diff(_rng._EXP_W) < 0)


def test_ziggurat_exponential_follows_its_distribution() -> None:
    check_follows(np.asarray(_exponentials(SAMPLES, _rng.seed_state(5, 7))), stats.expon())


CONTINUOUS = [
    (Exponential.code, (2.0, 0.0, 0.0), stats.expon(scale=2.0)),
    (ShiftedLognormal.code, (1.5, 2.0, 0.5), stats.lognorm(s=0.5, loc=1.5, scale=2.0)),
    (ShiftedLognormal.code, (0.0, 1.0, 1.0), stats.lognorm(s=1.0, scale=1.0)),
    (ShiftedGamma.code, (0.5, 0.7, 2.0), stats.gamma(a=0.7, loc=0.5, scale=2.0)),
    (ShiftedGamma.code, (0.0, 3.0, 1.0), stats.gamma(a=3.0)),
]


@pytest.mark.parametrize(("code", "params", "reference"), CONTINUOUS)
def test_table_draws_follow_their_distribution(
    code: int, params: tuple[float, float, float], reference: Any
) -> None:
    check_follows(table_sample(code, params), reference)


@pytest.mark.parametrize(("code", "params", "reference"), CONTINUOUS)
def test_table_points_are_exact_quantiles(
    code: int, params: tuple[float, float, float], reference: Any
) -> None:
    """Grid points are the quantiles at their distance to the nearer end, in both halves."""
    table = _quantile.quantile_table(code, *params)
    d = _quantile.distances()
    half = _quantile.SIDE_LEN
    np.testing.assert_allclose(table[:half], reference.ppf(d), rtol=1e-9)
    upper = reference.isf(d)
    keep = d > 1e-12  # scipy's isf loses digits deeper than this for some shapes
    np.testing.assert_allclose(table[half:][keep], upper[keep], rtol=1e-9)


@pytest.mark.parametrize(
    ("code", "params", "bound"),
    [
        (ShiftedLognormal.code, (0.0, 1.0, 0.6), 6e-5),  # the widest sigma on the shipped paths
        (ShiftedLognormal.code, (0.0, 1.0, 1.5), 2.5e-4),
        (Exponential.code, (1.0, 0.0, 0.0), 9e-5),
        (ShiftedGamma.code, (0.0, 2.0, 1.0), 6e-5),
    ],
)
def test_interpolation_error_is_bounded(
    code: int, params: tuple[float, float, float], bound: float
) -> None:
    assert _quantile.interpolation_error(code, *params) < bound


def test_constant_tables_draw_exactly_their_value() -> None:
    x = table_sample(Const.code, (0.375, 0.0, 0.0))
    assert np.all(x == 0.375)
    table = _quantile.quantile_table(Const.code, 0.5, 0.0, 0.0, fixed_us=1.25)
    assert np.all(table == 1.75)
