"""The Numba engine and the reference engine, driven side by side by a hypothesis state machine.

A small space (2 symbols, 3 accounts, a 12-tick window, 12 order rows, prices around 100) makes
crossings, self-trades, capacity exhaustion, window and band rejects all frequent. After every
message the events must be identical, and the invariants of a price-time priority book with
risk checks must hold on the Numba engine's own state.
"""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)

from engine_ext.engine import Engine, EngineConfig
from engine_ext.reference import ReferenceEngine, events_as_tuples
from engine_ext.types import (
    EV_ACK,
    EV_CANCELED,
    EV_FILL,
    EV_REJECT,
    MSG_CANCEL,
    MSG_DTYPE,
    MSG_MODIFY,
    MSG_NEW,
    OT_FOK,
    OT_GTC,
    OT_IOC,
    OT_MARKET,
    OT_POST_ONLY,
    OUT_KILLED,
    REJ_UNKNOWN_ORDER,
    SIDE_BUY,
)

CONFIG = EngineConfig(
    n_symbols=2,
    n_accounts=3,
    capacity_orders=12,
    max_order_id=40,
    window_ticks=12,
    max_order_qty_lots=8,
    exposure_limit_lots=15,
    band_ticks=8,
    reference_price_ticks=100,
    max_open_orders=3,
)

symbols = st.integers(0, 1)
accounts = st.integers(0, 2)
sides = st.integers(0, 1)
order_types = st.sampled_from([OT_GTC, OT_GTC, OT_IOC, OT_FOK, OT_MARKET, OT_POST_ONLY])
stps = st.integers(0, 2)
prices = st.one_of(st.integers(97, 103), st.integers(91, 109))
qtys = st.integers(1, 9)
order_ids = st.integers(0, 39)


def message(mtype, oid, price, qty, sym, acc, side=0, otype=0, stp=0) -> np.ndarray:
    m = np.zeros(1, dtype=MSG_DTYPE)
    m[0] = (oid, price, qty, sym, acc, mtype, side, otype, stp)
    return m


def flat_side(book: dict, side_name: str) -> list[int]:
    """Order ids of one side, best price first, time priority within a price."""
    return [oid for _, _, rows in book[side_name] for oid, _, _ in rows]


class EngineVersusReference(RuleBasedStateMachine):
    """Each rule sends one message (or a few) to both engines and checks what came back."""

    @initialize()
    def start(self) -> None:
        self.engine = Engine(CONFIG)
        self.ref = ReferenceEngine(CONFIG)
        self.history: list[np.ndarray] = []
        self.all_events: list[np.ndarray] = []
        # Ledger of every live order: original, filled, cancelled (quantity conservation).
        self.ledger: dict[int, list[int]] = {}

    # --- sending ---------------------------------------------------------------------------
    def send(self, msg: np.ndarray) -> np.ndarray:
        m = msg[0]
        sym = int(m["symbol"])
        books_before = [self.engine.book(s) for s in range(CONFIG.n_symbols)]
        risk_before = self._risk()
        free_before = self.engine.free_rows
        seq_before = self.engine.last_seq
        live_before = {oid: (o.price, o.leaves) for oid, o in self.ref.orders.items()}

        ev = self.engine.process(msg)
        ref_ev = self.ref.process(msg)
        assert events_as_tuples(ev) == ref_ev, "Numba and reference events differ"
        self.history.append(msg)
        self.all_events.append(ev)

        # Exactly one terminal event, and it is the last; sequence numbers count up by one.
        kinds = ev["kind"].tolist()
        assert kinds[-1] in (EV_ACK, EV_REJECT)
        assert all(k in (EV_FILL, EV_CANCELED) for k in kinds[:-1])
        assert ev["seq"].tolist() == list(range(seq_before + 1, seq_before + 1 + len(ev)))
        term = ev[-1]

        if term["kind"] == EV_REJECT:
            # A reject (risk or otherwise) changes nothing at all.
            assert len(ev) == 1
            assert [self.engine.book(s) for s in range(CONFIG.n_symbols)] == books_before
            assert self._risk() == risk_before
            assert self.engine.free_rows == free_before
            return ev

        fills = ev[ev["kind"] == EV_FILL]
        for f in fills:
            # Trades print at the maker's price and never between one account's orders.
            maker_price, _ = live_before[int(f["counter_order_id"])]
            assert f["price_ticks"] == maker_price
            assert f["account"] != f["counter_account"]
        touched = [
            int(e["counter_order_id"]) if e["kind"] == EV_FILL else int(e["order_id"])
            for e in ev[:-1]
        ]
        mtype = int(m["msg_type"])
        if mtype in (MSG_NEW, MSG_MODIFY) and touched:
            # Price then time priority: the makers met are a prefix of the opposite side.
            side = int(m["side"]) if mtype == MSG_NEW else int(term["side"])
            opposite = flat_side(books_before[sym], "asks" if side == SIDE_BUY else "bids")
            unique = list(dict.fromkeys(touched))
            assert unique == opposite[: len(unique)]
            limit = int(m["price_ticks"])
            is_market = mtype == MSG_NEW and int(m["order_type"]) == OT_MARKET
            for f in fills:
                # No fill worse than the limit.
                if not is_market:
                    if side == SIDE_BUY:
                        assert f["price_ticks"] <= limit
                    else:
                        assert f["price_ticks"] >= limit
        self._update_ledger(m, ev)
        if mtype == MSG_NEW:
            otype = int(m["order_type"])
            oid = int(m["order_id"])
            if otype in (OT_IOC, OT_MARKET, OT_FOK):
                assert oid not in self.ref.orders, "IOC / market / FOK must never rest"
            if otype == OT_FOK:
                if term["code"] == OUT_KILLED:
                    assert len(ev) == 1
                    assert [self.engine.book(s) for s in range(2)] == books_before
                else:
                    assert int(fills["qty_lots"].sum()) == int(m["qty_lots"])
            if otype == OT_POST_ONLY:
                assert len(fills) == 0, "post-only took liquidity"
        return ev

    def _risk(self) -> list[tuple[int, int, int]]:
        return [
            self.engine.account(a, s)
            for a in range(CONFIG.n_accounts)
            for s in range(CONFIG.n_symbols)
        ]

    def _update_ledger(self, m: np.void, ev: np.ndarray) -> None:
        mtype = int(m["msg_type"])
        oid = int(m["order_id"])
        term = ev[-1]
        if mtype == MSG_NEW:
            self.ledger[oid] = [int(m["qty_lots"]), 0, 0]
        elif mtype == MSG_MODIFY:
            old = self._resting_before_modify
            self.ledger[oid][0] += max(0, int(m["qty_lots"]) - old)
        for e in ev[:-1]:
            q = int(e["qty_lots"])
            if e["kind"] == EV_FILL:
                self.ledger[int(e["order_id"])][1] += q
                self.ledger[int(e["counter_order_id"])][1] += q
            else:
                self.ledger[int(e["order_id"])][2] += q
        self.ledger[oid][2] += int(term["qty_lots"])
        resting = {
            o: leaves
            for s in range(CONFIG.n_symbols)
            for side in ("bids", "asks")
            for _, _, rows in self.engine.book(s)[side]
            for o, _, leaves in rows
        }
        for o in list(self.ledger):
            original, filled, cancelled = self.ledger[o]
            assert original == filled + resting.get(o, 0) + cancelled, f"order {o} leaks"
            if o not in resting:
                del self.ledger[o]

    # --- rules -----------------------------------------------------------------------------
    @rule(
        sym=symbols, acc=accounts, side=sides, otype=order_types, stp=stps, price=prices,
        qty=qtys, oid=order_ids,
    )  # fmt: skip
    def new_order(self, sym, acc, side, otype, stp, price, qty, oid) -> None:
        self.send(message(MSG_NEW, oid, price, qty, sym, acc, side, otype, stp))

    @precondition(lambda self: bool(self.ref.orders))
    @rule(data=st.data(), twice=st.booleans(), wrong_account=st.integers(0, 5))
    def cancel_live(self, data, twice, wrong_account) -> None:
        oid = data.draw(st.sampled_from(sorted(self.ref.orders)))
        o = self.ref.orders[oid]
        acc = o.account if wrong_account else (o.account + 1) % CONFIG.n_accounts
        ev = self.send(message(MSG_CANCEL, oid, 0, 0, o.symbol, acc))
        if twice and ev[-1]["kind"] == EV_ACK:
            # Cancel is idempotent: the second one is rejected as unknown and changes nothing.
            again = self.send(message(MSG_CANCEL, oid, 0, 0, o.symbol, acc))
            assert again[-1]["kind"] == EV_REJECT and again[-1]["code"] == REJ_UNKNOWN_ORDER

    @rule(oid=order_ids, sym=symbols, acc=accounts)
    def cancel_any(self, oid, sym, acc) -> None:
        unknown = oid not in self.ref.orders
        ev = self.send(message(MSG_CANCEL, oid, 0, 0, sym, acc))
        if unknown:
            assert ev[-1]["kind"] == EV_REJECT and ev[-1]["code"] == REJ_UNKNOWN_ORDER

    @precondition(lambda self: bool(self.ref.orders))
    @rule(data=st.data(), price=prices, qty=qtys, same_price=st.booleans())
    def modify_live(self, data, price, qty, same_price) -> None:
        oid = data.draw(st.sampled_from(sorted(self.ref.orders)))
        o = self.ref.orders[oid]
        self._resting_before_modify = o.leaves
        if same_price:
            price = o.price
        self.send(message(MSG_MODIFY, oid, price, qty, o.symbol, o.account))

    @rule(
        mtype=st.integers(0, 4), oid=st.integers(-3, 45), price=st.sampled_from(
            [0, -1, 1, 100, 99, 101, 2**53, 2**63 - 1, -(2**63)]
        ), qty=st.integers(-3, 12), sym=st.integers(-2, 3), acc=st.integers(-1, 4),
        side=st.integers(0, 3), otype=st.integers(0, 6), stp=st.integers(0, 4),
    )  # fmt: skip
    def raw_message(self, mtype, oid, price, qty, sym, acc, side, otype, stp) -> None:
        """Fuzz: any field may be out of range; the engines must agree and never crash."""
        if mtype == MSG_MODIFY:
            o = self.ref.orders.get(oid)
            self._resting_before_modify = o.leaves if o is not None else 0
            if o is not None and (o.symbol != sym or o.account != acc):
                self._resting_before_modify = 0
        self.send(message(mtype, oid, price, qty, sym, acc, side, otype, stp))

    @rule()
    def cancel_everything(self) -> None:
        for oid, o in sorted(self.ref.orders.items()):
            ev = self.send(message(MSG_CANCEL, oid, 0, 0, o.symbol, o.account))
            assert ev[-1]["kind"] == EV_ACK
        assert self.engine.n_live == 0
        assert self.engine.free_rows == CONFIG.capacity_orders
        for s in range(CONFIG.n_symbols):
            assert self.engine.book(s) == {"bids": [], "asks": []}
            assert self.engine.best(s) == (None, None)
        for a in range(CONFIG.n_accounts):
            for s in range(CONFIG.n_symbols):
                assert self.engine.account(a, s)[1:] == (0, 0)

    @precondition(lambda self: len(self.history) > 0)
    @rule(chunk=st.integers(1, 7))
    def replay_in_batches(self, chunk) -> None:
        """Determinism across batch sizes: a fresh engine fed the same stream in chunks."""
        stream = np.concatenate(self.history)
        fresh = Engine(CONFIG)
        out = [fresh.process(stream[i : i + chunk]) for i in range(0, len(stream), chunk)]
        assert np.array_equal(np.concatenate(out), np.concatenate(self.all_events))

    # --- invariants on the Numba engine's own state ----------------------------------------
    @invariant()
    def books_agree_and_are_sound(self) -> None:
        if not hasattr(self, "engine"):
            return
        n_rows = 0
        for s in range(CONFIG.n_symbols):
            book = self.engine.book(s)
            assert book == self.ref.book_of(s)
            bids, asks = book["bids"], book["asks"]
            # Never crossed at rest; tracked best prices are the real ones.
            if bids and asks:
                assert bids[0][0] < asks[0][0]
            assert self.engine.best(s) == (
                bids[0][0] if bids else None,
                asks[0][0] if asks else None,
            )
            for _, total, rows in bids + asks:
                assert rows and total == sum(leaves for _, _, leaves in rows)
                assert all(leaves > 0 for _, _, leaves in rows)
                n_rows += len(rows)
        assert n_rows == self.engine.n_live == len(self.ref.orders)
        assert self.engine.free_rows + n_rows == CONFIG.capacity_orders
        assert self._risk() == [
            self.ref.account(a, s)
            for a in range(CONFIG.n_accounts)
            for s in range(CONFIG.n_symbols)
        ]
        # The open-order count the limit checks is the number of resting orders.
        counts = self.engine.state.accounts["open_orders"].tolist()
        for a in range(CONFIG.n_accounts):
            for s in range(CONFIG.n_symbols):
                live = [o for o in self.ref.orders.values() if (o.account, o.symbol) == (a, s)]
                assert counts[a * CONFIG.n_symbols + s] == len(live) <= CONFIG.max_open_orders


EngineVersusReference.TestCase.settings = settings(
    max_examples=60,
    stateful_step_count=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
TestEngineVersusReference = EngineVersusReference.TestCase
