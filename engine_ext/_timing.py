"""Calibration of the CPU cycle counter that times each message.

:func:`engine_ext._book.process_stream_timed` reads the cycle counter around each
:func:`process_one` call; here its rate is calibrated against ``time.perf_counter_ns`` and the
cost of reading it twice back to back (its own overhead, subtracted from every sample) is
measured.
"""

from __future__ import annotations

import time

import numpy as np
from numba import njit

from engine_ext._intrinsics import cycles


@njit(cache=True)
def read_cycles():
    """The cycle counter, readable from Python (for calibration)."""
    return cycles()


@njit(cache=True)
def counter_overhead(n):
    """Minimum and median ticks between two back-to-back counter reads, over ``n`` tries."""
    out = np.empty(n, dtype=np.int64)
    for i in range(n):
        t0 = cycles()
        t1 = cycles()
        out[i] = t1 - t0
    out.sort()
    return out[0], out[n // 2]


def ticks_per_ns(duration_s: float = 0.05) -> float:
    """Rate of the cycle counter, measured against ``perf_counter_ns`` over ``duration_s``."""
    read_cycles()
    t0 = time.perf_counter_ns()
    c0 = read_cycles()
    while time.perf_counter_ns() - t0 < duration_s * 1e9:
        pass
    c1 = read_cycles()
    t1 = time.perf_counter_ns()
    return (c1 - c0) / (t1 - t0)
