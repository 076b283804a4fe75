"""Numba kernels of the matching engine: the book, matching, risk checks, one message at a time.

Everything here is a small compiled function (``engine_ext._jit``) over the arrays of a
:class:`BookState` (plain numpy arrays of the dtypes in :mod:`engine_ext.types`). The kernels
never allocate: orders live in preallocated rows handed out by a free-list stack, price levels
are a fixed window of ticks per side per symbol, and events are written into a caller-provided
buffer. Kernels return counts; they never raise.

:func:`process_one` is the per-order path for other Numba code (the twin, the testbed gateway):
it needs room for ``symbols[symbol].n_live + 2`` events after ``n`` in ``ev`` (one event per
resting order the message can touch, plus the terminal one). :func:`process_batch` checks that
room before every message and stops early when it runs out, so the Python side can flush and
call again.

The Numba runtime is switched off for these kernels (``_nrt=False``): they never allocate,
and with it on every array of the state handed down a call is reference-counted atomically.

Everything one message always runs through (checks, the three ``_exec_*``, book updates,
event writing) is inlined into the loop (``inline_kernel``). A compiled call passes each array
of the state as its whole struct (seven machine words), so a helper call with the state is
expensive. Only the walks that run on a small share of messages (:func:`_match`,
:func:`_fok_fillable`) stay separate functions, which keeps the loop small. The measurements
behind both choices are in ``docs/design-notes.md`` (matching engine).

The rules (validation order, risk, self-trade prevention, outcomes) are documented once, in
:mod:`engine_ext.types`; :mod:`engine_ext.reference` implements the same rules plainly.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from engine_ext._intrinsics import cycles, prefetch
from engine_ext._jit import inline_kernel, kernel
from engine_ext.types import (
    C_FREE_TOP,
    C_N_LIVE,
    C_SEQ,
    EV_ACK,
    EV_CANCELED,
    EV_FILL,
    EV_REJECT,
    K_BAND,
    K_EXPOSURE,
    K_MAX_OPEN,
    K_MAX_ORDER_ID,
    K_MAX_QTY,
    K_N_ACCOUNTS,
    K_N_SYMBOLS,
    K_WINDOW,
    MSG_CANCEL,
    MSG_MODIFY,
    MSG_NEW,
    N_ORDER_TYPES,
    N_STP_MODES,
    OT_FOK,
    OT_GTC,
    OT_MARKET,
    OT_POST_ONLY,
    OUT_CANCELLED,
    OUT_EXPIRED,
    OUT_FILLED,
    OUT_KILLED,
    OUT_MODIFIED,
    OUT_RESTED,
    OUT_STP,
    PRICE_LIMIT_TICKS,
    REJ_BAD_ACCOUNT,
    REJ_BAD_MSG_TYPE,
    REJ_BAD_ORDER_ID,
    REJ_BAD_ORDER_TYPE,
    REJ_BAD_PRICE,
    REJ_BAD_QTY,
    REJ_BAD_SIDE,
    REJ_BAD_STP,
    REJ_BOOK_FULL,
    REJ_DUPLICATE_ID,
    REJ_EXPOSURE,
    REJ_MAX_OPEN_ORDERS,
    REJ_MAX_QTY,
    REJ_NOT_OWNER,
    REJ_OUT_OF_WINDOW,
    REJ_POST_ONLY_WOULD_TAKE,
    REJ_PRICE_BAND,
    REJ_UNKNOWN_ORDER,
    REJ_UNKNOWN_SYMBOL,
    SIDE_BUY,
    STP_CANCEL_BOTH,
    STP_CANCEL_INCOMING,
    STP_CANCEL_RESTING,
)


class BookState(NamedTuple):
    """All mutable state of one engine, as plain arrays (a NamedTuple, so Numba caches kernels).

    ``levels`` is flat: the ladder of side ``d`` of symbol ``s`` starts at ``(2 * s + d) * W``.
    ``order_index[order_id]`` is the row of a live order or -1 (the dense id lookup).
    ``free[:counters[C_FREE_TOP]]`` is the stack of free rows.
    """

    orders: np.ndarray
    levels: np.ndarray
    symbols: np.ndarray
    accounts: np.ndarray
    order_index: np.ndarray
    free: np.ndarray
    counters: np.ndarray
    config: np.ndarray


@inline_kernel
def _emit(
    ev, n, counters, kind, code, idx, symbol, side, order_id, account,
    counter_id, counter_account, price, qty, leaves, counter_leaves,
):  # fmt: skip
    """Write one event at ``ev[n]`` with the next sequence number; return ``n + 1``."""
    seq = counters[C_SEQ] + 1
    counters[C_SEQ] = seq
    e = ev[n]
    e.seq = seq
    e.msg_index = idx
    e.order_id = order_id
    e.counter_order_id = counter_id
    e.price_ticks = price
    e.qty_lots = qty
    e.leaves_qty = leaves
    e.counter_leaves_qty = counter_leaves
    e.symbol = symbol
    e.account = account
    e.counter_account = counter_account
    e.kind = kind
    e.code = code
    e.side = side
    return n + 1


@inline_kernel
def _unlink(st, row):
    """Take a row out of its level's FIFO; move the best price on if the level emptied."""
    orders = st.orders
    levels = st.levels
    w = st.config[K_WINDOW]
    o = orders[row]
    sym = o.symbol
    side = o.side
    lvl = o.level
    base = (2 * sym + side) * w
    lev = levels[base + lvl]
    p = o.prev
    nx = o.next
    if p >= 0:
        orders[p].next = nx
    else:
        lev.head = nx
    if nx >= 0:
        orders[nx].prev = p
    else:
        lev.tail = p
    lev.count -= 1
    lev.total_qty -= o.leaves_qty
    if lev.count == 0:
        s = st.symbols[sym]
        if side == SIDE_BUY:
            if s.best_bid == lvl:
                k = lvl - 1
                while k >= 0 and levels[base + k].count == 0:
                    k -= 1
                s.best_bid = k
        else:
            if s.best_ask == lvl:
                k = lvl + 1
                while k < w and levels[base + k].count == 0:
                    k += 1
                s.best_ask = k if k < w else -1


@inline_kernel
def _link_tail(st, row):
    """Append a row at the back of its level's FIFO (time priority) and update the best price."""
    orders = st.orders
    w = st.config[K_WINDOW]
    o = orders[row]
    sym = o.symbol
    lvl = o.level
    lev = st.levels[(2 * sym + o.side) * w + lvl]
    tail = lev.tail
    o.prev = tail
    o.next = -1
    if tail >= 0:
        orders[tail].next = row
    else:
        lev.head = row
    lev.tail = row
    lev.count += 1
    lev.total_qty += o.leaves_qty
    s = st.symbols[sym]
    if o.side == SIDE_BUY:
        if s.best_bid < lvl:
            s.best_bid = lvl
    else:
        if s.best_ask < 0 or lvl < s.best_ask:
            s.best_ask = lvl


@inline_kernel
def _free_row(st, row):
    """Forget a row's order id and push the row back on the free list."""
    o = st.orders[row]
    st.order_index[o.order_id] = -1
    counters = st.counters
    top = counters[C_FREE_TOP]
    st.free[top] = row
    counters[C_FREE_TOP] = top + 1
    counters[C_N_LIVE] -= 1
    st.symbols[o.symbol].n_live -= 1
    st.accounts[o.account * st.config[K_N_SYMBOLS] + o.symbol].open_orders -= 1


@inline_kernel
def _alloc_row(st, order_id, sym, acc, side, price, lvl, leaves, post_only, stp):
    """Pop a free row and fill it with a new resting order (caller checked there is one)."""
    counters = st.counters
    top = counters[C_FREE_TOP] - 1
    counters[C_FREE_TOP] = top
    counters[C_N_LIVE] += 1
    row = st.free[top]
    o = st.orders[row]
    o.order_id = order_id
    o.price_ticks = price
    o.leaves_qty = leaves
    o.symbol = sym
    o.account = acc
    o.level = lvl
    o.side = side
    o.post_only = post_only
    o.stp = stp
    st.order_index[order_id] = row
    st.symbols[sym].n_live += 1
    st.accounts[acc * st.config[K_N_SYMBOLS] + sym].open_orders += 1
    return row


@inline_kernel
def _open_add(st, acc, sym, side, qty):
    """Add (or with a negative qty remove) open quantity of an (account, symbol)."""
    a = st.accounts[acc * st.config[K_N_SYMBOLS] + sym]
    if side == SIDE_BUY:
        a.open_buy += qty
    else:
        a.open_sell += qty


@inline_kernel
def _would_take(st, sym, side, lvl):
    """True if a limit at ladder index ``lvl`` on ``side`` crosses the opposite best price."""
    s = st.symbols[sym]
    if side == SIDE_BUY:
        return s.best_ask >= 0 and s.best_ask <= lvl
    return s.best_bid >= 0 and s.best_bid >= lvl


@kernel
def _fok_fillable(st, sym, side, limit_lvl, qty, acc, stp):
    """True if ``qty`` can be filled in full now, honouring self-trade prevention.

    Own resting orders contribute nothing; with cancel-incoming or cancel-both the walk stops
    at the first one, exactly where :func:`_match` would stop.
    """
    w = st.config[K_WINDOW]
    s = st.symbols[sym]
    base = (2 * sym + (1 - side)) * w
    orders = st.orders
    avail = 0
    if side == SIDE_BUY:
        lvl = s.best_ask
        step = 1
        last = limit_lvl if limit_lvl < w else w - 1
    else:
        lvl = s.best_bid
        step = -1
        last = limit_lvl if limit_lvl >= 0 else 0
    if lvl < 0:
        return False
    while (lvl <= last) if side == SIDE_BUY else (lvl >= last):
        row = st.levels[base + lvl].head
        while row >= 0:
            o = orders[row]
            if o.account == acc:
                if stp != STP_CANCEL_RESTING:
                    return False
            else:
                avail += o.leaves_qty
                if avail >= qty:
                    return True
            row = o.next
        lvl += step
    return False


@kernel
def _match(st, sym, side, limit_lvl, qty, taker_id, taker_acc, stp, idx, ev, n):
    """Match an incoming quantity against the opposite side, best price then time first.

    Trades print at the maker's price. Returns ``(remaining, n, stopped)`` where ``stopped``
    says self-trade prevention cancelled the incoming remainder.
    """
    w = st.config[K_WINDOW]
    n_sym = st.config[K_N_SYMBOLS]
    counters = st.counters
    orders = st.orders
    accounts = st.accounts
    s = st.symbols[sym]
    base = (2 * sym + (1 - side)) * w
    taker_acct = accounts[taker_acc * n_sym + sym]
    remaining = qty
    stopped = False
    while remaining > 0 and not stopped:
        if side == SIDE_BUY:
            lvl = s.best_ask
            if lvl < 0 or lvl > limit_lvl:
                break
        else:
            lvl = s.best_bid
            if lvl < 0 or lvl < limit_lvl:
                break
        lev = st.levels[base + lvl]
        price = s.base_tick + lvl
        row = lev.head
        while remaining > 0 and row >= 0:
            o = orders[row]
            nxt = o.next
            maker_acc = o.account
            maker_acct = accounts[maker_acc * n_sym + sym]
            if maker_acc == taker_acc:
                if stp == STP_CANCEL_INCOMING:
                    stopped = True
                    break
                leaves = o.leaves_qty
                n = _emit(
                    ev, n, counters, EV_CANCELED, OUT_STP, idx, sym, o.side,
                    o.order_id, maker_acc, taker_id, taker_acc, price, leaves, 0, remaining,
                )  # fmt: skip
                if side == SIDE_BUY:
                    maker_acct.open_sell -= leaves
                else:
                    maker_acct.open_buy -= leaves
                _unlink(st, row)
                _free_row(st, row)
                if stp == STP_CANCEL_BOTH:
                    stopped = True
                    break
                row = nxt
                continue
            q = o.leaves_qty
            if remaining < q:
                q = remaining
            remaining -= q
            o.leaves_qty -= q
            lev.total_qty -= q
            if side == SIDE_BUY:
                taker_acct.position += q
                maker_acct.position -= q
                maker_acct.open_sell -= q
            else:
                taker_acct.position -= q
                maker_acct.position += q
                maker_acct.open_buy -= q
            n = _emit(
                ev, n, counters, EV_FILL, 0, idx, sym, side, taker_id, taker_acc,
                o.order_id, maker_acc, price, q, remaining, o.leaves_qty,
            )  # fmt: skip
            if o.leaves_qty == 0:
                _unlink(st, row)
                _free_row(st, row)
            row = nxt
    return remaining, n, stopped


@inline_kernel
def _check_new(st, side, otype, stp, sym, acc, oid, price, qty):
    """Reject reason of a new order (0 if it passes)."""
    cfg = st.config
    if side > 1:
        return REJ_BAD_SIDE
    if otype >= N_ORDER_TYPES:
        return REJ_BAD_ORDER_TYPE
    if stp >= N_STP_MODES:
        return REJ_BAD_STP
    if qty <= 0:
        return REJ_BAD_QTY
    is_limit = otype != OT_MARKET
    if is_limit and (price <= 0 or price >= PRICE_LIMIT_TICKS):
        return REJ_BAD_PRICE
    if st.order_index[oid] >= 0:
        return REJ_DUPLICATE_ID
    if qty > cfg[K_MAX_QTY]:
        return REJ_MAX_QTY
    s = st.symbols[sym]
    if is_limit and abs(price - s.reference_tick) > cfg[K_BAND]:
        return REJ_PRICE_BAND
    a = st.accounts[acc * cfg[K_N_SYMBOLS] + sym]
    if side == SIDE_BUY:
        potential = a.position + a.open_buy + qty
    else:
        potential = a.open_sell + qty - a.position
    if potential > cfg[K_EXPOSURE]:
        return REJ_EXPOSURE
    if otype == OT_GTC or otype == OT_POST_ONLY:
        if a.open_orders >= cfg[K_MAX_OPEN]:
            return REJ_MAX_OPEN_ORDERS
        if st.counters[C_FREE_TOP] == 0:
            return REJ_BOOK_FULL
    if is_limit:
        w = cfg[K_WINDOW]
        lvl = price - s.base_tick
        if lvl < 0 or lvl >= w:
            # The window stays centred on the reference price: an order cannot move it, so
            # one far order never puts everyone else's prices out of window.
            return REJ_OUT_OF_WINDOW
        if otype == OT_POST_ONLY and _would_take(st, sym, side, lvl):
            return REJ_POST_ONLY_WOULD_TAKE
    return 0


@inline_kernel
def _exec_new(st, side, otype, stp, sym, acc, oid, price, qty, idx, ev, n):
    """A validated new order: kill (FOK), match, rest the remainder; one terminal ack."""
    counters = st.counters
    w = st.config[K_WINDOW]
    if otype == OT_MARKET:
        price = 0
        lvl = w - 1 if side == SIDE_BUY else 0
    else:
        lvl = price - st.symbols[sym].base_tick
    if otype == OT_FOK and not _fok_fillable(st, sym, side, lvl, qty, acc, stp):
        return _emit(
            ev, n, counters, EV_ACK, OUT_KILLED, idx, sym, side, oid, acc, -1, -1,
            price, qty, 0, 0,
        )  # fmt: skip
    if _would_take(st, sym, side, lvl):
        remaining, n, stopped = _match(st, sym, side, lvl, qty, oid, acc, stp, idx, ev, n)
    else:
        remaining, stopped = qty, False
    cancelled = remaining
    leaves = 0
    if stopped:
        code = OUT_STP
    elif remaining == 0:
        code = OUT_FILLED
    elif otype == OT_GTC or otype == OT_POST_ONLY:
        row = _alloc_row(st, oid, sym, acc, side, price, lvl, remaining, otype == OT_POST_ONLY, stp)
        _link_tail(st, row)
        _open_add(st, acc, sym, side, remaining)
        code = OUT_RESTED
        cancelled = 0
        leaves = remaining
    else:
        code = OUT_EXPIRED
    return _emit(
        ev, n, counters, EV_ACK, code, idx, sym, side, oid, acc, -1, -1, price,
        cancelled, leaves, 0,
    )  # fmt: skip


@inline_kernel
def _check_cancel(st, sym, acc, oid):
    """Reject reason of a cancel (0 if the order is live, of this symbol and account)."""
    row = st.order_index[oid]
    if row < 0 or st.orders[row].symbol != sym:
        return REJ_UNKNOWN_ORDER
    if st.orders[row].account != acc:
        return REJ_NOT_OWNER
    return 0


@inline_kernel
def _exec_cancel(st, sym, acc, oid, idx, ev, n):
    """Remove a validated live order; one terminal ack."""
    row = st.order_index[oid]
    o = st.orders[row]
    leaves = o.leaves_qty
    side = o.side
    order_price = o.price_ticks
    _open_add(st, acc, sym, side, -leaves)
    _unlink(st, row)
    _free_row(st, row)
    return _emit(
        ev, n, st.counters, EV_ACK, OUT_CANCELLED, idx, sym, side, oid, acc, -1, -1,
        order_price, leaves, 0, 0,
    )  # fmt: skip


@inline_kernel
def _check_modify(st, sym, acc, oid, price, qty):
    """Reject reason of a modify (0 if it passes); changes nothing."""
    cfg = st.config
    if qty <= 0:
        return REJ_BAD_QTY
    if price <= 0 or price >= PRICE_LIMIT_TICKS:
        return REJ_BAD_PRICE
    row = st.order_index[oid]
    if row < 0 or st.orders[row].symbol != sym:
        return REJ_UNKNOWN_ORDER
    o = st.orders[row]
    if o.account != acc:
        return REJ_NOT_OWNER
    if qty > cfg[K_MAX_QTY]:
        return REJ_MAX_QTY
    s = st.symbols[sym]
    if abs(price - s.reference_tick) > cfg[K_BAND]:
        return REJ_PRICE_BAND
    old = o.leaves_qty
    if qty > old:
        a = st.accounts[acc * cfg[K_N_SYMBOLS] + sym]
        if o.side == SIDE_BUY:
            potential = a.position + a.open_buy - old + qty
        else:
            potential = a.open_sell - old + qty - a.position
        if potential > cfg[K_EXPOSURE]:
            return REJ_EXPOSURE
    lvl = price - s.base_tick
    if lvl < 0 or lvl >= cfg[K_WINDOW]:
        return REJ_OUT_OF_WINDOW
    if o.post_only and _would_take(st, sym, o.side, lvl):
        return REJ_POST_ONLY_WOULD_TAKE
    return 0


@inline_kernel
def _exec_modify(st, sym, acc, oid, price, qty, idx, ev, n):
    """Apply a validated modify; one terminal ack.

    A size decrease at the same price keeps time priority; a price change or a size increase
    re-enters the order at the back of its (new) level, after matching if the new price
    crosses.
    """
    cfg = st.config
    counters = st.counters
    row = st.order_index[oid]
    o = st.orders[row]
    side = o.side
    old = o.leaves_qty
    lvl = price - st.symbols[sym].base_tick
    reduced = old - qty if qty < old else 0
    if price == o.price_ticks and qty <= old:
        # Size decrease (or no change) in place: time priority is kept.
        o.leaves_qty = qty
        st.levels[(2 * sym + side) * cfg[K_WINDOW] + lvl].total_qty -= reduced
        _open_add(st, acc, sym, side, -reduced)
        return _emit(
            ev, n, counters, EV_ACK, OUT_MODIFIED, idx, sym, side, oid, acc, -1, -1,
            price, reduced, qty, 0,
        )  # fmt: skip
    _open_add(st, acc, sym, side, -old)
    _unlink(st, row)
    if _would_take(st, sym, side, lvl):
        remaining, n, stopped = _match(st, sym, side, lvl, qty, oid, acc, o.stp, idx, ev, n)
    else:
        remaining, stopped = qty, False
    leaves = 0
    if remaining > 0 and not stopped:
        o.price_ticks = price
        o.level = lvl
        o.leaves_qty = remaining
        _link_tail(st, row)
        _open_add(st, acc, sym, side, remaining)
        leaves = remaining
    else:
        reduced += remaining
        _free_row(st, row)
    return _emit(
        ev, n, counters, EV_ACK, OUT_MODIFIED, idx, sym, side, oid, acc, -1, -1, price,
        reduced, leaves, 0,
    )  # fmt: skip


@inline_kernel
def process_one(st, msg_type, side, otype, stp, sym, acc, oid, price, qty, idx, ev, n):
    """Process one inbound message; write its events at ``ev[n:]`` and return the new count.

    The per-order path for other Numba code. The caller guarantees room for
    ``st.symbols[sym].n_live + 2`` events when ``sym`` is valid (two otherwise). Checks run in
    the order documented in :mod:`engine_ext.types`; a failed check emits the one reject.
    """
    cfg = st.config
    if msg_type > MSG_MODIFY:
        code = REJ_BAD_MSG_TYPE
    elif sym < 0 or sym >= cfg[K_N_SYMBOLS]:
        code = REJ_UNKNOWN_SYMBOL
    elif acc < 0 or acc >= cfg[K_N_ACCOUNTS]:
        code = REJ_BAD_ACCOUNT
    elif oid < 0 or oid >= cfg[K_MAX_ORDER_ID]:
        code = REJ_BAD_ORDER_ID
    elif msg_type == MSG_NEW:
        code = _check_new(st, side, otype, stp, sym, acc, oid, price, qty)
        if code == 0:
            return _exec_new(st, side, otype, stp, sym, acc, oid, price, qty, idx, ev, n)
    elif msg_type == MSG_CANCEL:
        code = _check_cancel(st, sym, acc, oid)
        if code == 0:
            return _exec_cancel(st, sym, acc, oid, idx, ev, n)
    else:
        code = _check_modify(st, sym, acc, oid, price, qty)
        if code == 0:
            return _exec_modify(st, sym, acc, oid, price, qty, idx, ev, n)
    return _emit(
        ev, n, st.counters, EV_REJECT, code, idx, sym, side, oid, acc, -1, -1, price, qty, 0, 0
    )


@inline_kernel
def events_needed(st, sym):
    """Room in events that :func:`process_one` may need for a message on symbol ``sym``."""
    if sym < 0 or sym >= st.config[K_N_SYMBOLS]:
        return 2
    return st.symbols[sym].n_live + 2


_AHEAD = 8  # messages of look-ahead for prefetching order-id slots; rows at half that


@inline_kernel
def _prefetch_ahead(st, msgs, i):
    """Prefetch what message ``i + _AHEAD`` and ``i + _AHEAD // 2`` will touch."""
    n_msgs = msgs.shape[0]
    cfg = st.config
    j = i + _AHEAD
    if j < n_msgs:
        oid = msgs[j].order_id
        if 0 <= oid < cfg[K_MAX_ORDER_ID]:
            prefetch(st.order_index, oid)
    j = i + _AHEAD // 2
    if j < n_msgs:
        m = msgs[j]
        oid = m.order_id
        sym = m.symbol
        acc = m.account
        if 0 <= oid < cfg[K_MAX_ORDER_ID]:
            row = st.order_index[oid]
            if row >= 0:
                prefetch(st.orders, row)
        if 0 <= sym < cfg[K_N_SYMBOLS] and 0 <= acc < cfg[K_N_ACCOUNTS]:
            prefetch(st.accounts, acc * cfg[K_N_SYMBOLS] + sym)
            lvl = m.price_ticks - st.symbols[sym].base_tick
            if 0 <= lvl < cfg[K_WINDOW] and m.side <= 1:
                prefetch(st.levels, (2 * sym + m.side) * cfg[K_WINDOW] + lvl)


@kernel
def process_batch(st, msgs, start, msg_index0, ev, n0):
    """Process ``msgs[start:]`` until done or ``ev`` lacks room; return ``(next, n_events)``.

    ``msg_index0 + i`` is written as the ``msg_index`` of events caused by ``msgs[i]``.
    """
    n = n0
    cap = ev.shape[0]
    i = start
    n_msgs = msgs.shape[0]
    while i < n_msgs:
        m = msgs[i]
        if n + events_needed(st, m.symbol) > cap:
            break
        _prefetch_ahead(st, msgs, i)
        n = process_one(
            st, m.msg_type, m.side, m.order_type, m.stp, m.symbol, m.account, m.order_id,
            m.price_ticks, m.qty_lots, msg_index0 + i, ev, n,
        )  # fmt: skip
        i += 1
    return i, n


@kernel
def process_stream(st, msgs, ev):
    """Process a whole stream, recycling ``ev`` as a ring (events are overwritten once counted).

    Used by benchmarks: events are really written, then dropped as if published. Returns the
    total number of events produced.
    """
    total = 0
    n = 0
    cap = ev.shape[0]
    n_msgs = msgs.shape[0]
    for i in range(n_msgs):
        m = msgs[i]
        if n + events_needed(st, m.symbol) > cap:
            total += n
            n = 0
        _prefetch_ahead(st, msgs, i)
        n = process_one(
            st, m.msg_type, m.side, m.order_type, m.stp, m.symbol, m.account, m.order_id,
            m.price_ticks, m.qty_lots, i, ev, n,
        )  # fmt: skip
    return total + n


@kernel
def process_stream_timed(st, msgs, ev, ticks_out):
    """Like :func:`process_stream`, storing each message's cycle-counter ticks in ``ticks_out``.

    It lives here, beside the code it times, because Numba's on-disk cache of a function is
    invalidated only by changes to the file that defines it: a timed loop in another module
    kept inlining a stale :func:`process_one` after this file changed.
    """
    total = 0
    n = 0
    cap = ev.shape[0]
    for i in range(msgs.shape[0]):
        m = msgs[i]
        if n + events_needed(st, m.symbol) > cap:
            total += n
            n = 0
        t0 = cycles()
        n = process_one(
            st, m.msg_type, m.side, m.order_type, m.stp, m.symbol, m.account, m.order_id,
            m.price_ticks, m.qty_lots, i, ev, n,
        )  # fmt: skip
        t1 = cycles()
        ticks_out[i] = t1 - t0
    return total + n
