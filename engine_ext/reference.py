"""A plain, obviously correct pure-Python matching engine: the oracle for tests and workloads.

It implements the rules of :mod:`engine_ext.types` with dicts and lists and no cleverness:
the best price is found with ``min``/``max`` over non-empty levels, a level is a Python list
in arrival order, capacity is a count. The Numba engine must produce exactly the same events.
It also drives the workload generator, which needs to know which orders are live.
"""

from __future__ import annotations

from bisect import bisect_left, insort
from dataclasses import dataclass
from typing import cast

import numpy as np

from engine_ext.engine import EngineConfig, as_messages
from engine_ext.errors import EngineError
from engine_ext.types import (
    EV_ACK,
    EV_CANCELED,
    EV_FILL,
    EV_REJECT,
    EVENT_DTYPE,
    MSG_CANCEL,
    MSG_MODIFY,
    MSG_NEW,
    N_MSG_TYPES,
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

# Event tuple layout, in EVENT_DTYPE field order (seq first).
Event = tuple[int, int, int, int, int, int, int, int, int, int, int, int, int, int]


@dataclass
class RefOrder:
    """A resting order."""

    order_id: int
    symbol: int
    account: int
    side: int
    price: int
    leaves: int
    post_only: bool
    stp: int


class ReferenceEngine:
    """The same engine as :class:`engine_ext.Engine`, written for clarity, not speed."""

    def __init__(self, config: EngineConfig | None = None) -> None:
        self.config = config if config is not None else EngineConfig()
        c = self.config
        self.base = [int(r) - c.window_ticks // 2 for r in c.reference_prices()]
        self.reference = [int(r) for r in c.reference_prices()]
        # book[symbol][side] maps price -> list of RefOrder in time priority.
        self.book: list[list[dict[int, list[RefOrder]]]] = [[{}, {}] for _ in range(c.n_symbols)]
        self.orders: dict[int, RefOrder] = {}
        # Indexes kept beside the book, so a lookup costs no scan of every resting order:
        # levels[symbol][side] lists the prices of non-empty levels, ascending;
        # open_count maps (account, symbol) to its number of resting orders.
        self.levels: list[list[list[int]]] = [[[], []] for _ in range(c.n_symbols)]
        self.open_count: dict[tuple[int, int], int] = {}
        self.risk: dict[tuple[int, int], list[int]] = {}  # (acc, sym) -> [pos, open_buy, open_sell]
        self.seq = 0
        self.n_msgs = 0
        self.events: list[Event] = []

    # --- helpers ---------------------------------------------------------------------------
    def _acct(self, acc: int, sym: int) -> list[int]:
        return self.risk.setdefault((acc, sym), [0, 0, 0])

    def _emit(self, kind, code, idx, sym, side, oid, acc, cid, cacc, price, qty, leaves, cleaves):
        self.seq += 1
        self.events.append(
            (self.seq, idx, oid, cid, price, qty, leaves, cleaves, sym, acc, cacc, kind, code, side)
        )

    def _reject(self, code, idx, sym, side, oid, acc, price, qty):
        self._emit(EV_REJECT, code, idx, sym, side, oid, acc, -1, -1, price, qty, 0, 0)

    def best_bid(self, sym: int) -> int | None:
        levels = self.levels[sym][0]
        return levels[-1] if levels else None

    def best_ask(self, sym: int) -> int | None:
        levels = self.levels[sym][1]
        return levels[0] if levels else None

    def _crosses(self, sym: int, side: int, price: int | None) -> bool:
        """Would a taker on ``side`` with limit ``price`` (None: market) meet the best?"""
        if side == SIDE_BUY:
            best = self.best_ask(sym)
            return best is not None and (price is None or best <= price)
        best = self.best_bid(sym)
        return best is not None and (price is None or best >= price)

    def _remove(self, o: RefOrder) -> None:
        level = self.book[o.symbol][o.side][o.price]
        level.remove(o)
        if not level:
            del self.book[o.symbol][o.side][o.price]
            prices = self.levels[o.symbol][o.side]
            del prices[bisect_left(prices, o.price)]
        del self.orders[o.order_id]
        self.open_count[(o.account, o.symbol)] -= 1

    def _open_orders(self, acc: int, sym: int) -> int:
        return self.open_count.get((acc, sym), 0)

    def _open(self, o: RefOrder, delta: int) -> None:
        self._acct(o.account, o.symbol)[1 + o.side] += delta

    def _fok_fillable(self, sym, side, price, qty, acc, stp) -> bool:
        avail = 0
        opposite = self.book[sym][1 - side]
        ascending = self.levels[sym][1 - side]
        prices = ascending if side == SIDE_BUY else reversed(ascending)
        for p in prices:
            if (side == SIDE_BUY and p > price) or (side != SIDE_BUY and p < price):
                break
            for o in opposite[p]:
                if o.account == acc:
                    if stp != STP_CANCEL_RESTING:
                        return False
                    continue
                avail += o.leaves
                if avail >= qty:
                    return True
        return False

    def _match(self, sym, side, price, qty, oid, acc, stp, idx) -> tuple[int, bool]:
        """Take liquidity up to ``price`` (None: any); return (remaining, stopped by STP)."""
        remaining = qty
        while remaining > 0 and self._crosses(sym, side, price):
            best = self.best_ask(sym) if side == SIDE_BUY else self.best_bid(sym)
            maker = self.book[sym][1 - side][best][0]
            if maker.account == acc:
                if stp == STP_CANCEL_INCOMING:
                    return remaining, True
                self._emit(
                    EV_CANCELED,
                    OUT_STP,
                    idx,
                    sym,
                    maker.side,
                    maker.order_id,
                    maker.account,
                    oid,
                    acc,
                    maker.price,
                    maker.leaves,
                    0,
                    remaining,
                )
                self._open(maker, -maker.leaves)
                self._remove(maker)
                if stp == STP_CANCEL_BOTH:
                    return remaining, True
                continue
            q = min(remaining, maker.leaves)
            remaining -= q
            maker.leaves -= q
            sign = 1 if side == SIDE_BUY else -1
            self._acct(acc, sym)[0] += sign * q
            self._acct(maker.account, sym)[0] -= sign * q
            self._open(maker, -q)
            self._emit(
                EV_FILL,
                0,
                idx,
                sym,
                side,
                oid,
                acc,
                maker.order_id,
                maker.account,
                maker.price,
                q,
                remaining,
                maker.leaves,
            )
            if maker.leaves == 0:
                self._remove(maker)
        return remaining, False

    def _rest(self, o: RefOrder) -> None:
        side_book = self.book[o.symbol][o.side]
        if o.price not in side_book:
            side_book[o.price] = []
            insort(self.levels[o.symbol][o.side], o.price)
        side_book[o.price].append(o)
        self.orders[o.order_id] = o
        key = (o.account, o.symbol)
        self.open_count[key] = self.open_count.get(key, 0) + 1
        self._open(o, o.leaves)

    def _in_window(self, sym: int, price: int) -> bool:
        return 0 <= price - self.base[sym] < self.config.window_ticks

    # --- messages --------------------------------------------------------------------------
    def process(self, msgs: np.ndarray) -> list[Event]:
        """Process messages in order; return the events they produced, as tuples."""
        msgs = as_messages(msgs)
        start = len(self.events)
        for m in msgs.tolist():
            self.process_one(*m)
        return self.events[start:]

    def process_one(self, oid, price, qty, sym, acc, mtype, side, otype, stp) -> None:
        """Process one message (arguments in :data:`MSG_DTYPE` field order)."""
        c = self.config
        idx = self.n_msgs
        self.n_msgs += 1
        if mtype >= N_MSG_TYPES:
            return self._reject(REJ_BAD_MSG_TYPE, idx, sym, side, oid, acc, price, qty)
        if not 0 <= sym < c.n_symbols:
            return self._reject(REJ_UNKNOWN_SYMBOL, idx, sym, side, oid, acc, price, qty)
        if not 0 <= acc < c.n_accounts:
            return self._reject(REJ_BAD_ACCOUNT, idx, sym, side, oid, acc, price, qty)
        if not 0 <= oid < c.max_order_id:
            return self._reject(REJ_BAD_ORDER_ID, idx, sym, side, oid, acc, price, qty)
        if mtype == MSG_NEW:
            return self._new(idx, oid, price, qty, sym, acc, side, otype, stp)
        if mtype == MSG_CANCEL:
            return self._cancel(idx, oid, price, qty, sym, acc, side)
        assert mtype == MSG_MODIFY
        return self._modify(idx, oid, price, qty, sym, acc, side)

    def _new(self, idx, oid, price, qty, sym, acc, side, otype, stp) -> None:
        c = self.config
        rej = self._reject
        if side > 1:
            return rej(REJ_BAD_SIDE, idx, sym, side, oid, acc, price, qty)
        if otype >= N_ORDER_TYPES:
            return rej(REJ_BAD_ORDER_TYPE, idx, sym, side, oid, acc, price, qty)
        if stp >= N_STP_MODES:
            return rej(REJ_BAD_STP, idx, sym, side, oid, acc, price, qty)
        if qty <= 0:
            return rej(REJ_BAD_QTY, idx, sym, side, oid, acc, price, qty)
        is_limit = otype != OT_MARKET
        if is_limit and not 0 < price < PRICE_LIMIT_TICKS:
            return rej(REJ_BAD_PRICE, idx, sym, side, oid, acc, price, qty)
        if oid in self.orders:
            return rej(REJ_DUPLICATE_ID, idx, sym, side, oid, acc, price, qty)
        if qty > c.max_order_qty_lots:
            return rej(REJ_MAX_QTY, idx, sym, side, oid, acc, price, qty)
        if is_limit and abs(price - self.reference[sym]) > c.band_ticks:
            return rej(REJ_PRICE_BAND, idx, sym, side, oid, acc, price, qty)
        pos, open_buy, open_sell = self._acct(acc, sym)
        potential = pos + open_buy + qty if side == SIDE_BUY else open_sell + qty - pos
        if potential > c.exposure_limit_lots:
            return rej(REJ_EXPOSURE, idx, sym, side, oid, acc, price, qty)
        rests = otype in (OT_GTC, OT_POST_ONLY)
        if rests and self._open_orders(acc, sym) >= c.max_open_orders:
            return rej(REJ_MAX_OPEN_ORDERS, idx, sym, side, oid, acc, price, qty)
        if rests and len(self.orders) >= c.capacity_orders:
            return rej(REJ_BOOK_FULL, idx, sym, side, oid, acc, price, qty)
        if is_limit and not self._in_window(sym, price):  # the window never moves
            return rej(REJ_OUT_OF_WINDOW, idx, sym, side, oid, acc, price, qty)
        limit = price if is_limit else None
        if not is_limit:
            price = 0
        if otype == OT_POST_ONLY and self._crosses(sym, side, limit):
            return rej(REJ_POST_ONLY_WOULD_TAKE, idx, sym, side, oid, acc, price, qty)
        if otype == OT_FOK and not self._fok_fillable(sym, side, price, qty, acc, stp):
            return self._emit(
                EV_ACK, OUT_KILLED, idx, sym, side, oid, acc, -1, -1, price, qty, 0, 0
            )
        remaining, stopped = self._match(sym, side, limit, qty, oid, acc, stp, idx)
        if not stopped and remaining > 0 and rests:
            self._rest(RefOrder(oid, sym, acc, side, price, remaining, otype == OT_POST_ONLY, stp))
            return self._emit(
                EV_ACK, OUT_RESTED, idx, sym, side, oid, acc, -1, -1, price, 0, remaining, 0
            )
        code = OUT_STP if stopped else OUT_FILLED if remaining == 0 else OUT_EXPIRED
        self._emit(EV_ACK, code, idx, sym, side, oid, acc, -1, -1, price, remaining, 0, 0)

    def _lookup(self, idx, oid, price, qty, sym, acc, side) -> RefOrder | None:
        o = self.orders.get(oid)
        if o is None or o.symbol != sym:
            self._reject(REJ_UNKNOWN_ORDER, idx, sym, side, oid, acc, price, qty)
            return None
        if o.account != acc:
            self._reject(REJ_NOT_OWNER, idx, sym, side, oid, acc, price, qty)
            return None
        return o

    def _cancel(self, idx, oid, price, qty, sym, acc, side) -> None:
        o = self._lookup(idx, oid, price, qty, sym, acc, side)
        if o is None:
            return
        self._open(o, -o.leaves)
        self._remove(o)
        self._emit(
            EV_ACK, OUT_CANCELLED, idx, sym, o.side, oid, acc, -1, -1, o.price, o.leaves, 0, 0
        )

    def _modify(self, idx, oid, price, qty, sym, acc, side) -> None:
        c = self.config
        rej = self._reject
        if qty <= 0:
            return rej(REJ_BAD_QTY, idx, sym, side, oid, acc, price, qty)
        if not 0 < price < PRICE_LIMIT_TICKS:
            return rej(REJ_BAD_PRICE, idx, sym, side, oid, acc, price, qty)
        o = self._lookup(idx, oid, price, qty, sym, acc, side)
        if o is None:
            return
        if qty > c.max_order_qty_lots:
            return rej(REJ_MAX_QTY, idx, sym, side, oid, acc, price, qty)
        if abs(price - self.reference[sym]) > c.band_ticks:
            return rej(REJ_PRICE_BAND, idx, sym, side, oid, acc, price, qty)
        old = o.leaves
        if qty > old:
            pos, open_buy, open_sell = self._acct(acc, sym)
            if o.side == SIDE_BUY:
                potential = pos + open_buy - old + qty
            else:
                potential = open_sell - old + qty - pos
            if potential > c.exposure_limit_lots:
                return rej(REJ_EXPOSURE, idx, sym, side, oid, acc, price, qty)
        if not self._in_window(sym, price):
            return rej(REJ_OUT_OF_WINDOW, idx, sym, side, oid, acc, price, qty)
        if o.post_only and self._crosses(sym, o.side, price):
            return rej(REJ_POST_ONLY_WOULD_TAKE, idx, sym, side, oid, acc, price, qty)
        reduced = max(0, old - qty)
        if price == o.price and qty <= old:
            o.leaves = qty
            self._open(o, -reduced)
            return self._emit(
                EV_ACK, OUT_MODIFIED, idx, sym, o.side, oid, acc, -1, -1, price, reduced, qty, 0
            )
        self._open(o, -o.leaves)
        self._remove(o)
        remaining, stopped = self._match(sym, o.side, price, qty, oid, acc, o.stp, idx)
        rests = remaining > 0 and not stopped
        if rests:
            o.price = price
            o.leaves = remaining
            self._rest(o)
        cancelled, leaves = (reduced, remaining) if rests else (reduced + remaining, 0)
        self._emit(
            EV_ACK, OUT_MODIFIED, idx, sym, o.side, oid, acc, -1, -1, price, cancelled, leaves, 0
        )

    # --- inspection ------------------------------------------------------------------------
    def book_of(self, sym: int) -> dict[str, list[tuple[int, int, list[tuple[int, int, int]]]]]:
        """Same layout as :meth:`engine_ext.Engine.book`."""
        out = {}
        for side, name in ((0, "bids"), (1, "asks")):
            ascending = self.levels[sym][side]
            prices = list(reversed(ascending)) if side == 0 else list(ascending)
            out[name] = [
                (
                    p,
                    sum(o.leaves for o in self.book[sym][side][p]),
                    [(o.order_id, o.account, o.leaves) for o in self.book[sym][side][p]],
                )
                for p in prices
            ]
        return out

    def account(self, account: int, symbol: int) -> tuple[int, int, int]:
        """``(position, open_buy, open_sell)`` of an (account, symbol)."""
        pos, ob, os_ = self.risk.get((account, symbol), [0, 0, 0])
        return pos, ob, os_


def events_as_tuples(events: np.ndarray) -> list[Event]:
    """Numba engine events as the reference engine's tuples (for exact comparison)."""
    if events.dtype != EVENT_DTYPE:
        raise EngineError(f"events must have EVENT_DTYPE, got {events.dtype}")
    return [cast(Event, tuple(int(x) for x in row)) for row in events.tolist()]
