"""The fast engine's random numbers: xoshiro256+ in four scalar words, and the draws it needs.

The generator state lives in **local scalar variables** of the kernel and is threaded through
these helpers as tuples (``x, s0, s1, s2, s3 = ...``). Helpers take and return only scalars, so
LLVM inlines them and no array reference counting happens in the hot loop (passing arrays into
small helpers measured 3-5x slower). The state is saved to a ``uint64[4]`` array between kernel
calls, so a run paused for a progress bar resumes on exactly the same stream.

xoshiro256+ (Blackman and Vigna, https://prng.di.unimi.it/) is used for its top 53 bits, which is
all a double needs. Normals come from a 128-layer ziggurat would be faster; Marsaglia's polar
method keeps the code short and exact (the second normal of each pair is cached in the state).
Seeds expand through :class:`numpy.random.SeedSequence`, so a seed and a stream id give
independent, reproducible streams.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from twin import dtypes

_TWO_POW_MINUS_53 = 1.0 / 9007199254740992.0


def seed_state(seed: int, stream: int) -> np.ndarray:
    """Four non-zero xoshiro256+ words for ``(seed, stream)``."""
    state = np.random.SeedSequence([int(seed), int(stream)]).generate_state(4, dtype=np.uint64)
    if not state.any():
        state[0] = np.uint64(1)
    return state


@njit(cache=True)
def next_u64(s0, s1, s2, s3):  # type: ignore[no-untyped-def]
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


@njit(cache=True)
def uniform(s0, s1, s2, s3):  # type: ignore[no-untyped-def]
    """A double in [0, 1) from the top 53 bits."""
    x, s0, s1, s2, s3 = next_u64(s0, s1, s2, s3)
    return float(x >> np.uint64(11)) * _TWO_POW_MINUS_53, s0, s1, s2, s3


@njit(cache=True)
def normal(s0, s1, s2, s3, spare, has_spare):  # type: ignore[no-untyped-def]
    """A standard normal (Marsaglia polar method, second value cached in ``spare``)."""
    if has_spare:
        return spare, s0, s1, s2, s3, 0.0, False
    while True:
        u, s0, s1, s2, s3 = uniform(s0, s1, s2, s3)
        v, s0, s1, s2, s3 = uniform(s0, s1, s2, s3)
        u = 2.0 * u - 1.0
        v = 2.0 * v - 1.0
        r = u * u + v * v
        if 0.0 < r < 1.0:
            f = math.sqrt(-2.0 * math.log(r) / r)
            return u * f, s0, s1, s2, s3, v * f, True


@njit(cache=True)
def gamma(shape, s0, s1, s2, s3, spare, has_spare):  # type: ignore[no-untyped-def]
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
        z, s0, s1, s2, s3, spare, has_spare = normal(s0, s1, s2, s3, spare, has_spare)
        v = 1.0 + c * z
        if v <= 0.0:
            continue
        v = v * v * v
        u, s0, s1, s2, s3 = uniform(s0, s1, s2, s3)
        if math.log(1.0 - u) < 0.5 * z * z + d - d * v + d * math.log(v):
            return boost * d * v, s0, s1, s2, s3, spare, has_spare


@njit(cache=True)
def draw(code, p0, p1, p2, s0, s1, s2, s3, spare, has_spare):  # type: ignore[no-untyped-def]
    """One draw of a path distribution (codes and parameters as in :mod:`twin.dtypes`).

    For ``DIST_EMPIRICAL`` the value returned is a uniform in [0, 1): the caller, which holds the
    tables, turns it into a row position (keeping arrays out of this helper).
    """
    x = 0.0
    if code == dtypes.DIST_CONST:
        x = p0
    elif code == dtypes.DIST_EXP:
        u, s0, s1, s2, s3 = uniform(s0, s1, s2, s3)
        x = -p0 * math.log(1.0 - u)
    elif code == dtypes.DIST_LOGNORMAL:
        z, s0, s1, s2, s3, spare, has_spare = normal(s0, s1, s2, s3, spare, has_spare)
        x = p0 + p1 * math.exp(p2 * z)
    elif code == dtypes.DIST_GAMMA:
        g, s0, s1, s2, s3, spare, has_spare = gamma(p1, s0, s1, s2, s3, spare, has_spare)
        x = p0 + p2 * g
    elif code == dtypes.DIST_EMPIRICAL:
        x, s0, s1, s2, s3 = uniform(s0, s1, s2, s3)
    return x, s0, s1, s2, s3, spare, has_spare
