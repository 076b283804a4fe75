"""The fast engine's random numbers: xoshiro256+ in four scalar words, and the draws it needs.

The generator state lives in **local scalar variables** of the kernel and is threaded through
these helpers as tuples (``x, s0, s1, s2, s3 = ...``). Helpers take and return only scalars, so
LLVM inlines them and no array reference counting happens in the hot loop (passing arrays into
small helpers measured 3-5x slower). The state is saved to a ``uint64[4]`` array between kernel
calls, so a run paused for a progress bar resumes on exactly the same stream.

xoshiro256+ (Blackman and Vigna, https://prng.di.unimi.it/) is used for its top 53 bits, which is
all a double needs. Normal and exponential variates come from 256-layer ziggurats (Marsaglia and
Tsang 2000, in the layout NumPy uses: one 64-bit word gives the layer from its low 8 bits, a sign
bit and 52 bits of position), which are exact rejection samplers: about 99% of draws cost one
generator step, a multiply and a compare, with no ``log`` or ``exp``. The layer tables are module
constants built at import (:func:`_ziggurat`); Numba freezes them into the compiled code.
Seeds expand through :class:`numpy.random.SeedSequence`, so a seed and a stream id give
independent, reproducible streams.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from numba import njit

from twin import dtypes

_TWO_POW_MINUS_53 = 1.0 / 9007199254740992.0
_TWO_POW_52 = 4503599627370496.0
ZIGGURAT_LAYERS = 256
# Right edge of the base layer, chosen so that 256 layers of equal area close exactly at the
# mode (solved once with brentq; the values NumPy and Marsaglia and Tsang tabulate).
NORMAL_R = 3.654152885361009
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


_NORMAL_K, _NORMAL_W, _NORMAL_F = _ziggurat(
    lambda x: math.exp(-0.5 * x * x),
    lambda y: math.sqrt(-2.0 * math.log(y)),
    math.sqrt(math.pi / 2) * math.erfc(NORMAL_R / math.sqrt(2)),
    NORMAL_R,
)
_EXP_K, _EXP_W, _EXP_F = _ziggurat(
    lambda x: math.exp(-x), lambda y: -math.log(y), math.exp(-EXP_R), EXP_R
)
_INV_NORMAL_R = 1.0 / NORMAL_R


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
def normal(s0, s1, s2, s3):
    """A standard normal by the 256-layer ziggurat (tail by Marsaglia's 1964 method)."""
    while True:
        r, s0, s1, s2, s3 = next_u64(s0, s1, s2, s3)
        idx = r & np.uint64(0xFF)
        r >>= np.uint64(8)
        sign = 1.0 - 2.0 * float(np.int64(r & np.uint64(1)))  # +-1 without a branch
        rabs = (r >> np.uint64(1)) & np.uint64(0x000FFFFFFFFFFFFF)
        x = sign * float(np.int64(rabs)) * _NORMAL_W[idx]
        if rabs < _NORMAL_K[idx]:
            return x, s0, s1, s2, s3
        if idx == 0:
            # Tail beyond r: x = -log(U1) / r, y = -log(U2), accept when 2y > x^2.
            while True:
                u, s0, s1, s2, s3 = uniform(s0, s1, s2, s3)
                xx = -_INV_NORMAL_R * math.log1p(-u)
                u, s0, s1, s2, s3 = uniform(s0, s1, s2, s3)
                yy = -math.log1p(-u)
                if yy + yy > xx * xx:
                    return sign * (NORMAL_R + xx), s0, s1, s2, s3
        else:
            u, s0, s1, s2, s3 = uniform(s0, s1, s2, s3)
            f_lo = _NORMAL_F[idx]
            if f_lo + u * (_NORMAL_F[idx + 1] - f_lo) < math.exp(-0.5 * x * x):
                return x, s0, s1, s2, s3


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


@njit(cache=True)
def gamma(shape, s0, s1, s2, s3):
    """Gamma(shape, 1) by Marsaglia and Tsang (2000); shape < 1 boosted by ``U ** (1/shape)``."""
    boost = 1.0
    a = shape
    if a < 1.0:
        u, s0, s1, s2, s3 = uniform(s0, s1, s2, s3)
        boost = (1.0 - u) ** (1.0 / a)
        a += 1.0
    d = a - 1.0 / 3.0
    c = 1.0 / math.sqrt(9.0 * d)
    while True:
        z, s0, s1, s2, s3 = normal(s0, s1, s2, s3)
        v = 1.0 + c * z
        if v <= 0.0:
            continue
        v = v * v * v
        u, s0, s1, s2, s3 = uniform(s0, s1, s2, s3)
        if math.log(1.0 - u) < 0.5 * z * z + d - d * v + d * math.log(v):
            return boost * d * v, s0, s1, s2, s3


@njit(cache=True, inline="always")
def draw(code, p0, p1, p2, s0, s1, s2, s3):
    """One draw of a path distribution (codes and parameters as in :mod:`twin.dtypes`).

    For ``DIST_EMPIRICAL`` the value returned is a uniform in [0, 1): the caller, which holds the
    tables, turns it into a row position (keeping arrays out of this helper).
    """
    x = 0.0
    if code == dtypes.DIST_LOGNORMAL:
        z, s0, s1, s2, s3 = normal(s0, s1, s2, s3)
        x = p0 + p1 * math.exp(p2 * z)
    elif code == dtypes.DIST_CONST:
        x = p0
    elif code == dtypes.DIST_EXP:
        e, s0, s1, s2, s3 = exponential(s0, s1, s2, s3)
        x = p0 * e
    elif code == dtypes.DIST_GAMMA:
        g, s0, s1, s2, s3 = gamma(p1, s0, s1, s2, s3)
        x = p0 + p2 * g
    elif code == dtypes.DIST_EMPIRICAL:
        x, s0, s1, s2, s3 = uniform(s0, s1, s2, s3)
    return x, s0, s1, s2, s3
