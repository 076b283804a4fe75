"""Per-message service time, read from the CPU's cycle counter inside compiled code.

``perf_counter_ns`` from Python costs more than one engine operation, so per-op times are read
with ``llvm.readcyclecounter`` (``rdtsc`` on x86) around each :func:`process_one` call inside
the kernel. The counter's rate is calibrated against ``time.perf_counter_ns`` and the cost of
reading it twice back to back (its own overhead) is measured and subtracted.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import cast

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

from engine_ext._book import events_needed, process_one
from engine_ext._jit import kernel


@intrinsic
def _cycles_intrinsic(typingctx):
    """The CPU cycle counter (a monotonic tick count on CPUs with an invariant TSC)."""
    sig = types.uint64()

    def codegen(context, builder, signature, args):
        fnty = ir.FunctionType(ir.IntType(64), [])
        fn = cgutils.get_or_insert_function(builder.module, fnty, "llvm.readcyclecounter")
        return builder.call(fn, [])

    return sig, codegen


# Seen from Python typing, an intrinsic is called without the typing context Numba supplies.
_cycles = cast(Callable[[], int], _cycles_intrinsic)


@njit(cache=True)
def read_cycles():
    """The cycle counter, readable from Python (for calibration)."""
    return _cycles()


@njit(cache=True)
def counter_overhead(n):
    """Minimum and median ticks between two back-to-back counter reads, over ``n`` tries."""
    out = np.empty(n, dtype=np.int64)
    for i in range(n):
        t0 = _cycles()
        t1 = _cycles()
        out[i] = t1 - t0
    out.sort()
    return out[0], out[n // 2]


@kernel
def process_stream_timed(st, msgs, ev, ticks_out):
    """Like :func:`engine_ext._book.process_stream`, storing each message's ticks."""
    total = 0
    n = 0
    cap = ev.shape[0]
    for i in range(msgs.shape[0]):
        m = msgs[i]
        if n + events_needed(st, m.symbol) > cap:
            total += n
            n = 0
        t0 = _cycles()
        n = process_one(
            st, m.msg_type, m.side, m.order_type, m.stp, m.symbol, m.account, m.order_id,
            m.price_ticks, m.qty_lots, i, ev, n,
        )  # fmt: skip
        t1 = _cycles()
        ticks_out[i] = t1 - t0
    return total + n


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
