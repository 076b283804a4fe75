"""The gateway's compiled hot path: validate frames, run them through engine_ext, encode replies.

One call handles every whole frame of one socket read, so a read costs one Python -> Numba
crossing however many orders it carries. The kernel returns a status code and counts; the
Python side (:mod:`twin.testbed.gateway`) decides to keep or close the connection.

Client order ids are mapped into the connection's own block of the engine's dense id table
(``slot * ORDER_IDS_PER_CONNECTION + order_id``): connections cannot collide or cancel each
other's orders, and the engine's own checks (duplicate live id, risk limits, ownership) apply.
Orders trade as the engine account the gateway gives the connection's source address (its
risk limits are that member's), not as the frame's ``account``, which is only echoed.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from engine_ext import process_one
from engine_ext.types import EV_ACK
from engine_ext.types import MSG_CANCEL as ENGINE_CANCEL
from engine_ext.types import MSG_NEW as ENGINE_NEW
from twin.testbed.protocol import (
    FRAME_BYTES,
    MAGIC,
    MSG_ACK,
    MSG_CANCEL,
    MSG_CANCEL_ACK,
    MSG_NEW,
    MSG_REJECT,
    ORDER_IDS_PER_CONNECTION,
    REJ_BAD_LENGTH,
    REJ_BAD_MAGIC,
    REJ_BAD_ORDER_ID,
    REJ_SEQUENCE_GAP,
    REJ_UNKNOWN_TYPE,
    VERSION,
)

STATUS_OK = 0
STATUS_CLOSE = 1  # framing lost (bad magic, version or length): answer once, then close

# Indices of the small int64 state array a connection passes in and out.
S_EXPECT_SEQ = 0  # seq expected of the next inbound frame
S_OUT_SEQ = 1  # seq of the last outbound frame
S_ANSWERED = 2  # inbound frames answered so far
N_CONN_STATE = 3


@njit(cache=True)
def _reply(out, k, conn, frame, msg_type, code):
    conn[S_OUT_SEQ] += 1
    r = out[k]
    r.magic = MAGIC
    r.version = VERSION
    r.msg_type = msg_type
    r.length = FRAME_BYTES
    r.reserved = 0
    r.seq = conn[S_OUT_SEQ]
    r.client_ts_ns = frame.client_ts_ns
    r.order_id = frame.order_id
    r.price_ticks = frame.price_ticks
    r.qty_lots = frame.qty_lots
    r.leaves_qty = 0
    r.exchange_seq = 0
    r.gateway_ns = 0
    r.symbol = frame.symbol
    r.account = frame.account
    r.side = frame.side
    r.order_type = frame.order_type
    r.stp = frame.stp
    r.code = code
    r.ref_seq = frame.seq
    conn[S_ANSWERED] += 1


@njit(cache=True)
def _process(st, kind, side, otype, stp, sym, account, oid, price, qty, ev):
    """One order through the engine; return the number of events written to ``ev``.

    ``process_one`` is inlined here, once, and both kernels call this function (design notes,
    "The gateway kernel's compile time"). Callers must pass the same types (int64 kind; uint8
    side, order type and self-trade mode; int32 symbol and account; int64 id, price and
    quantity), never literals, or it compiles once per signature.
    """
    return process_one(st, kind, side, otype, stp, sym, account, oid, price, qty, 0, ev, 0)


@njit(cache=True)
def handle_frames(st, frames, slot, account, conn, out, ev):
    """Answer ``frames`` of the connection in ``slot`` trading as engine ``account``; return
    ``(status, replies written)``.

    ``out`` must hold ``len(frames)`` replies; ``ev`` room for the engine's events of one order
    (``capacity_orders + 2``). Stops at the first frame that breaks framing.
    """
    k = 0
    for i in range(frames.shape[0]):
        f = frames[i]
        if f.magic != MAGIC or f.version != VERSION:
            _reply(out, k, conn, f, MSG_REJECT, REJ_BAD_MAGIC)
            return STATUS_CLOSE, k + 1
        if f.length != FRAME_BYTES:
            _reply(out, k, conn, f, MSG_REJECT, REJ_BAD_LENGTH)
            return STATUS_CLOSE, k + 1
        seq = np.int64(f.seq)
        gap = seq != conn[S_EXPECT_SEQ]
        conn[S_EXPECT_SEQ] = seq + 1
        if gap:
            _reply(out, k, conn, f, MSG_REJECT, REJ_SEQUENCE_GAP)
            k += 1
            continue
        if f.msg_type != MSG_NEW and f.msg_type != MSG_CANCEL:
            _reply(out, k, conn, f, MSG_REJECT, REJ_UNKNOWN_TYPE)
            k += 1
            continue
        if f.order_id < 0 or f.order_id >= ORDER_IDS_PER_CONNECTION:
            _reply(out, k, conn, f, MSG_REJECT, REJ_BAD_ORDER_ID)
            k += 1
            continue
        oid = slot * ORDER_IDS_PER_CONNECTION + f.order_id
        kind = ENGINE_NEW if f.msg_type == MSG_NEW else ENGINE_CANCEL
        n = _process(
            st,
            kind,
            f.side,
            f.order_type,
            f.stp,
            f.symbol,
            np.int32(account),
            np.int64(oid),
            f.price_ticks,
            f.qty_lots,
            ev,
        )
        last = ev[n - 1]
        if last.kind == EV_ACK:
            _reply(out, k, conn, f, MSG_ACK if kind == ENGINE_NEW else MSG_CANCEL_ACK, last.code)
            out[k].leaves_qty = last.leaves_qty
        else:
            _reply(out, k, conn, f, MSG_REJECT, last.code)
        out[k].exchange_seq = last.seq
        k += 1
    return STATUS_OK, k


@njit(cache=True)
def cancel_connection(st, slot, ev):
    """Cancel every live order of the connection in ``slot`` (when it goes away)."""
    cancel, no_flag, zero = np.int64(ENGINE_CANCEL), np.uint8(0), np.int64(0)
    cancelled = 0
    base = slot * ORDER_IDS_PER_CONNECTION
    for oid in range(base, base + ORDER_IDS_PER_CONNECTION):
        if oid >= st.order_index.shape[0]:
            break
        row = st.order_index[oid]
        if row < 0:
            continue
        o = st.orders[row]
        _process(st, cancel, no_flag, no_flag, no_flag, o.symbol, o.account, oid, zero, zero, ev)
        cancelled += 1
    return cancelled


def empty_connection_state() -> np.ndarray:
    """A fresh connection: the first inbound seq expected is 1, nothing sent yet."""
    conn = np.zeros(N_CONN_STATE, dtype=np.int64)
    conn[S_EXPECT_SEQ] = 1
    return conn
