"""The fast engine's random numbers: xoshiro256+ in four scalar words, uniforms and exponentials.

The generator state lives in **local scalar variables** of the kernel and is threaded through
these helpers as tuples (``x, s0, s1, s2, s3 = ...``). Helpers take and return only scalars, so
LLVM inlines them and no array reference counting happens in the hot loop (passing arrays into
small helpers measured 3-5x slower). The state is saved to a ``uint64[4]`` array between kernel
calls, so a run paused for a progress bar resumes on exactly the same stream.

xoshiro256+ (Blackman and Vigna, https://prng.di.unimi.it/) is used for its top 53 bits, which is
all a double needs (and, in :mod:`twin.fast._quantile`, for all 64 bits of a word). Exponential
variates (the open loop's Poisson gaps) come from a 256-layer ziggurat (Marsaglia and Tsang 2000,
in the layout NumPy uses: one 64-bit word gives the layer from its low 8 bits and 52 bits of
position), an exact rejection sampler: about 99% of draws cost one generator step, a multiply and
a compare, with no ``log`` or ``exp``. The layer tables are module constants built at import
(:func:`_ziggurat`); Numba freezes them into the compiled code. The path's own distributions are
drawn from quantile tables (:mod:`twin.fast._quantile`).
Seeds expand through :class:`numpy.random.SeedSequence`, so a seed and a stream id give
independent, reproducible streams.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from numba import njit

_TWO_POW_MINUS_53 = 1.0 / 9007199254740992.0
_TWO_POW_52 = 4503599627370496.0
ZIGGURAT_LAYERS = 256
# Right edge of the base layer, chosen so that 256 layers of equal area close exactly at the
# mode (solved once with brentq; the value NumPy and Marsaglia and Tsang tabulate).
EXP_R = 7.697117470131051


def _ziggurat(
    f: Callable[[float], float],
    f_inv: Callable[[float], float],
    tail_area: float,
    r: float,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Tables ``(k, w, f)`` of a 256-layer ziggurat for a decreasing density ``f`` on [0, inf).

    Layer ``i`` is the rectangle ``[0, x_i] x [f(x_i), f(x_{i+1})]`` (``x_1 = r`` and ``x_N = 0``;
    layer 0 is the base strip plus the tail, given the width ``x_0 = v / f(r)``), all of area
    ``v``. A draw ``x = u x_i`` with ``u x_i < x_{i+1}`` lies under the curve and is accepted at
    once (``k_i = 2**52 x_{i+1} / x_i`` compares against the 52-bit integer ``u``).
    """
    v = r * f(r) + tail_area
    x = np.zeros(ZIGGURAT_LAYERS + 1)
    x[0] = v / f(r)
    x[1] = r
    for i in range(1, ZIGGURAT_LAYERS - 1):
        x[i + 1] = f_inv(f(x[i]) + v / x[i])
    x[ZIGGURAT_LAYERS] = 0.0
    k = np.floor(_TWO_POW_52 * x[1:] / x[:-1]).astype(np.uint64)
    w = x[:-1] / _TWO_POW_52
    fx = np.array([f(xi) for xi in x])
    return k, w, fx


_EXP_K, _EXP_W, _EXP_F = _ziggurat(
    lambda x: math.exp(-x), lambda y: -math.log(y), math.exp(-EXP_R), EXP_R
)


def seed_state(seed: int, stream: int) -> np.ndarray:
    """Four non-zero xoshiro256+ words for ``(seed, stream)``."""
    state = np.random.SeedSequence([int(seed), int(stream)]).generate_state(4, dtype=np.uint64)
    if not state.any():
        state[0] = np.uint64(1)
    return state


@njit(cache=True, inline="always")
def next_u64(s0, s1, s2, s3):
    """One xoshiro256+ step: ``(output, s0, s1, s2, s3)``."""
    result = s0 + s3
    t = s1 << np.uint64(17)
    s2 ^= s0
    s3 ^= s1
    s1 ^= s2
    s0 ^= s3
    s2 ^= t
    s3 = (s3 << np.uint64(45)) | (s3 >> np.uint64(19))
    return result, s0, s1, s2, s3


@njit(cache=True, inline="always")
def uniform(s0, s1, s2, s3):
    """A double in [0, 1) from the top 53 bits."""
    x, s0, s1, s2, s3 = next_u64(s0, s1, s2, s3)
    return float(np.int64(x >> np.uint64(11))) * _TWO_POW_MINUS_53, s0, s1, s2, s3


@njit(cache=True, inline="always")
def exponential(s0, s1, s2, s3):
    """A standard exponential by the 256-layer ziggurat (the tail is r + another draw)."""
    offset = 0.0
    while True:
        r, s0, s1, s2, s3 = next_u64(s0, s1, s2, s3)
        idx = r & np.uint64(0xFF)
        rabs = (r >> np.uint64(12)) & np.uint64(0x000FFFFFFFFFFFFF)
        x = float(np.int64(rabs)) * _EXP_W[idx]
        if rabs < _EXP_K[idx]:
            return offset + x, s0, s1, s2, s3
        if idx == 0:
            offset += EXP_R  # memoryless: the tail is r plus a fresh exponential
        else:
            u, s0, s1, s2, s3 = uniform(s0, s1, s2, s3)
            f_lo = _EXP_F[idx]
            if f_lo + u * (_EXP_F[idx + 1] - f_lo) < math.exp(-x):
                return offset + x, s0, s1, s2, s3
