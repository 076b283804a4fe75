"""Quantile tables: every continuous draw of the fast engine as one random word and one lerp.

A draw by inversion is ``Q(u)`` for a uniform ``u``, where ``Q`` is the distribution's quantile
function. The fast engine tabulates ``Q`` once per distinct distribution of the path and
interpolates linearly, which costs one xoshiro step, a count of leading ones, two adjacent loads
and a multiply-add, with no branch on the distribution's kind (the kernel visits hops in an order
the branch predictor cannot learn) and no ``exp`` (a lognormal by ziggurat and ``exp`` cost about
three times as much).

The grid is fine where ``Q`` is steep. One bit of the word picks the lower or upper half; in that
half, the count ``k`` of leading one bits that follow picks a level where the distance ``d`` of
``u`` to the nearer end (0 or 1) lies in ``(2**-(k + 2), 2**-(k + 1)]`` (probability
``2**-(k + 2)``), and the next :data:`M_BITS` bits pick one of :data:`M` equal steps of ``d`` in
that level, the bits after them giving the position within the step. So every tail decade gets
the same number of grid points, and the table reaches ``d = 2**-(LEVELS + 1)`` (``|z| = 8.1``
for a normal), below which the words that would go deeper (probability ``2**-LEVELS``) are
folded into the deepest level. Tables are laid out level after level, so the last point of a
level is the first of the next and a lerp never needs a bounds test.

Error, bounded at build (:func:`interpolation_error`) and tested: the interpolant is monotone, so
the draws follow a proper distribution whose every quantile is within a relative
``max |Q~ - Q| / Q`` of the exact one. With 32 steps per level, that is at most 5.6e-5 for a
lognormal of sigma 0.6 (the largest on the shipped paths), 2.4e-4 at sigma 1.5, 8.6e-5 for an
exponential and 5.2e-5 for a gamma of shape 2: far below the 0.1% resolution of the histograms.
A gamma of shape below 1 is less exact near 0 (9.4e-4 of the value at shape 0.3), where the
values themselves are negligible.

An occasional cost (a cost paid with probability ``p``, else zero) has a step in ``Q`` at
``u = 1 - p``. At ``p = 1/2`` (the shipped paths) the step falls between the halves, which each
have a point there, so the table is exact. At any other ``p`` the draws in the one grid step
that holds it (at most 1/128 of them, fewer towards the tails) are spread linearly between zero
and the cost.

Draws that are always the same value (``none``, ``const``) use a table of that value (a lerp
between equal numbers is exact), and a hop's fixed time is added into its delay table, so a hop
costs the same whatever its distribution. Each distribution's quantiles come from its class in
:mod:`twin.dists`. Empirical tables are resampled as :mod:`twin.des` does, by the kernel, from a
uniform (their table here holds only the hop's fixed time).
"""

from __future__ import annotations

import numpy as np
from numba import njit
from numba.cpython.unsafe.numbers import leading_zeros

from twin.dists import decode
from twin.fast._rng import next_u64

M_BITS = 5
M = 1 << M_BITS  # grid steps per level
LEVELS = 51  # levels k = 0 .. LEVELS - 1 in each half
SIDE_LEN = LEVELS * M + 1  # points of one half (the last closes the deepest level)
TABLE_LEN = 2 * SIDE_LEN  # lower half, then upper half
_TWO_POW_MINUS_53 = 1.0 / 9007199254740992.0


def distances(sub_step: float = 0.0) -> np.ndarray:
    """Distance ``d`` to the nearer end of [0, 1] at each grid point (or ``sub_step`` past it)."""
    points = np.arange(LEVELS * M + (1 if sub_step == 0.0 else 0)) + sub_step
    level = np.floor(points / M)
    within = points / M - level
    return np.ldexp(1.0 - within / 2.0, -(level.astype(np.int64) + 1))


def quantile_table(
    code: int, p0: float, p1: float, p2: float, fixed_us: float = 0.0, sub_step: float = 0.0
) -> np.ndarray:
    """The table of ``fixed_us`` + one distribution (code and parameters as in
    :func:`twin.dists.decode`): its quantiles at the lower half's points, then the upper's."""
    d = distances(sub_step)
    lower, upper = decode(code, p0, p1, p2).quantiles(d)
    return fixed_us + np.concatenate([lower, upper])


def interpolation_error(code: int, p0: float, p1: float, p2: float, fixed_us: float = 0.0) -> float:
    """Largest relative gap between the table's lerp and the exact quantile, over every step.

    Checked at a quarter, half and three quarters of each step (the gap of a lerp to a smooth
    function peaks inside the step).
    """
    table = quantile_table(code, p0, p1, p2, fixed_us)
    worst = 0.0
    for sub in (0.25, 0.5, 0.75):
        exact = quantile_table(code, p0, p1, p2, fixed_us, sub)
        for side in (0, 1):
            t = table[side * SIDE_LEN : (side + 1) * SIDE_LEN]
            e = exact[side * (SIDE_LEN - 1) : (side + 1) * (SIDE_LEN - 1)]
            lerp = t[:-1] + (t[1:] - t[:-1]) * sub
            scale = np.maximum(np.abs(e), 1e-300)
            worst = max(worst, float(np.max(np.abs(lerp - e) / scale)))
    return worst


@njit(cache=True, inline="always")
def grid_point(s0, s1, s2, s3):
    """One random word as ``(index, fraction)`` in a table: the draw is the lerp there.

    Returns ``(i, f, s0, s1, s2, s3)`` with ``0 <= i < TABLE_LEN - 1`` and ``0 <= f < 1``; the
    value is ``table[i] + (table[i + 1] - table[i]) * f``.
    """
    r, s0, s1, s2, s3 = next_u64(s0, s1, s2, s3)
    side = r >> np.uint64(63)
    rest = r << np.uint64(1)
    k = np.uint64(leading_zeros(~rest))  # type: ignore[call-arg]  # leading ones, <= 63
    if k > np.uint64(LEVELS - 1):
        k = np.uint64(LEVELS - 1)
    bits = rest << (k + np.uint64(1))  # the bits after the level's ones and zero
    step = bits >> np.uint64(64 - M_BITS)
    f = float(np.int64((bits << np.uint64(M_BITS)) >> np.uint64(11))) * _TWO_POW_MINUS_53
    i = side * np.uint64(SIDE_LEN) + k * np.uint64(M) + step
    return i, f, s0, s1, s2, s3
