"""Telling a faster placement apart: Wald's sequential test and the fixed window it competes with.

A candidate and the incumbent are probed over the same blocks of time; each block gives the
difference ``D`` of their mean round trips, normal (a block holds many probes) with variance
``s2`` (the two instances' per-probe variances over the probes per block) and mean ``delta``
(the hour of day cancels: both see the same venue and path). The question is
``H1: delta = -d`` (the candidate is faster by ``d``) against ``H0: delta = 0``.

Sequential probability ratio test (Wald 1945): each block adds ``(-d / s2) (D + d / 2)`` to the
log-likelihood ratio; stop and keep the candidate when it reaches ``log((1 - beta) / alpha)``,
drop it at ``log(beta / (1 - alpha))``. Wald's bounds on the error rates are
``alpha / (1 - beta)`` and ``beta / (1 - alpha)``; his approximations of the expected number of
blocks are :func:`expected_blocks`. A truncated test (the window's end) decides by the sign of
the ratio. The fixed-window test with the same error rates needs :func:`fixed_blocks` blocks.
"""

from __future__ import annotations

import math

from scipy.stats import norm


def thresholds(alpha: float, beta: float) -> tuple[float, float]:
    """Wald's lower and upper log-likelihood-ratio bounds (drop, keep)."""
    return math.log(beta / (1.0 - alpha)), math.log((1.0 - beta) / alpha)


def llr_step(d_us: float, s2: float) -> tuple[float, float]:
    """Per-block log-likelihood ratio as ``slope * D + offset``."""
    slope = -d_us / s2
    return slope, slope * d_us / 2.0


def expected_blocks(alpha: float, beta: float, d_us: float, s2: float) -> tuple[float, float]:
    """Wald's approximate expected number of blocks under H0 (not faster) and H1 (faster by d):
    the boundary reached times its probability, over the mean log-likelihood step."""
    low, high = thresholds(alpha, beta)
    step = d_us**2 / (2.0 * s2)  # mean per-block LLR under H1; its negative under H0
    under_h0 = (alpha * high + (1.0 - alpha) * low) / -step
    under_h1 = ((1.0 - beta) * high + beta * low) / step
    return under_h0, under_h1


def fixed_blocks(alpha: float, beta: float, d_us: float, s2: float) -> float:
    """Blocks a one-sided fixed-sample test of the mean difference needs for the same error
    rates: ``(z(1 - alpha) + z(1 - beta))**2 s2 / d**2``."""
    z = norm.ppf(1.0 - alpha) + norm.ppf(1.0 - beta)
    return float(z**2 * s2 / d_us**2)
