"""The two LLVM intrinsics the kernels use: a prefetch hint and the CPU cycle counter.

**Prefetch.** When messages come in a batch, the rows the next few messages will touch (their
order-id slot, their order row, their account) are known in advance; asking the CPU to fetch
them a few messages ahead hides most of the cache misses of a deep book. A hint never faults
and never changes results.

**Cycle counter.** ``perf_counter_ns`` from Python costs more than one engine operation, so
per-message service times are read with ``llvm.readcyclecounter`` (``rdtsc`` on x86) inside
compiled code; :mod:`engine_ext._timing` calibrates its rate and its own overhead.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import cast

from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic


@intrinsic
def _prefetch(typingctx, arr, index):
    """Hint that ``arr[index]`` will be read soon (``llvm.prefetch``, keep in all caches)."""
    if not isinstance(arr, types.Array) or not isinstance(index, types.Integer):
        return None
    sig = types.void(arr, index)

    def codegen(context, builder, signature, args):
        aryty = signature.args[0]
        ary = context.make_array(aryty)(context, builder, value=args[0])
        idx = context.cast(builder, args[1], signature.args[1], types.intp)
        ptr = cgutils.get_item_pointer(context, builder, aryty, ary, [idx])
        i8p = ir.IntType(8).as_pointer()
        fnty = ir.FunctionType(ir.VoidType(), [i8p, ir.IntType(32), ir.IntType(32), ir.IntType(32)])
        fn = cgutils.get_or_insert_function(builder.module, fnty, "llvm.prefetch.p0")
        i32 = ir.IntType(32)
        builder.call(fn, [builder.bitcast(ptr, i8p), i32(0), i32(3), i32(1)])
        return context.get_dummy_value()

    return sig, codegen


@intrinsic
def _cycles(typingctx):
    """The CPU cycle counter (a monotonic tick count on CPUs with an invariant TSC)."""
    sig = types.uint64()

    def codegen(context, builder, signature, args):
        fnty = ir.FunctionType(ir.IntType(64), [])
        fn = cgutils.get_or_insert_function(builder.module, fnty, "llvm.readcyclecounter")
        return builder.call(fn, [])

    return sig, codegen


# Seen from Python typing, an intrinsic is called with its arguments only (Numba supplies the
# typing context).
prefetch = cast(Callable[..., None], _prefetch)
cycles = cast(Callable[[], int], _cycles)
