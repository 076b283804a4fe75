"""Example tests of the engine's published behaviour, and fuzzing of bad input.

Each example states one rule from :mod:`engine_ext.types`; the fuzz tests throw arbitrary field
values (sentinels, extremes, unknown codes) at both engines and require identical answers with a
reason code, one terminal event per message, and no crash.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import engine_ext
from engine_ext import Engine, EngineConfig, EngineError, ReferenceEngine
from engine_ext.reference import events_as_tuples
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
    OUT_CANCELLED,
    OUT_EXPIRED,
    OUT_FILLED,
    OUT_KILLED,
    OUT_RESTED,
    OUT_STP,
    PRICE_NONE,
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
    STP_CANCEL_BOTH,
    STP_CANCEL_INCOMING,
    STP_CANCEL_RESTING,
)

I64_MAX = np.iinfo(np.int64).max
I64_MIN = np.iinfo(np.int64).min

SMALL = EngineConfig(
    n_symbols=2,
    n_accounts=4,
    capacity_orders=4,
    max_order_id=100,
    window_ticks=20,
    max_order_qty_lots=50,
    exposure_limit_lots=60,
    band_ticks=15,
    reference_price_ticks=100,
)


def msgs(*rows: tuple) -> np.ndarray:
    """Messages from tuples ``(type, id, price, qty, symbol, account[, side, otype, stp])``."""
    out = np.zeros(len(rows), dtype=MSG_DTYPE)
    for i, r in enumerate(rows):
        mtype, oid, price, qty, sym, acc, *rest = r
        side, otype, stp = (list(rest) + [0, 0, 0])[:3]
        out[i] = (oid, price, qty, sym, acc, mtype, side, otype, stp)
    return out


def run_both(config: EngineConfig, m: np.ndarray) -> tuple[Engine, np.ndarray]:
    """Run messages through both engines, require identical events, return the Numba side."""
    eng = Engine(config)
    ref = ReferenceEngine(config)
    ev = eng.process(m)
    assert events_as_tuples(ev) == ref.process(m)
    return eng, ev


def terminals(ev: np.ndarray) -> list[tuple[int, int]]:
    t = ev[(ev["kind"] == EV_ACK) | (ev["kind"] == EV_REJECT)]
    return list(zip(t["kind"].tolist(), t["code"].tolist(), strict=True))


# --- public surface ----------------------------------------------------------------------------
def test_all_is_sorted_and_importable() -> None:
    assert engine_ext.__all__ == sorted(engine_ext.__all__)
    for name in engine_ext.__all__:
        assert hasattr(engine_ext, name)


@pytest.mark.parametrize(
    ("field", "value"),
    [("n_symbols", 0), ("window_ticks", 1), ("capacity_orders", -5), ("band_ticks", -1)],
)
def test_config_rejects_out_of_range_values_naming_them(field: str, value: int) -> None:
    with pytest.raises(EngineError, match=f"{field} = {value}"):
        EngineConfig(**{field: value})


def test_config_rejects_wrong_number_of_reference_prices() -> None:
    with pytest.raises(EngineError, match="3 values"):
        EngineConfig(n_symbols=2, reference_price_ticks=(100, 101, 102))


def test_process_refuses_arrays_of_another_dtype() -> None:
    with pytest.raises(EngineError, match="MSG_DTYPE"):
        Engine(SMALL).process(np.zeros(3, dtype=np.int64))


# --- rules, one example each ---------------------------------------------------------------------
@pytest.mark.parametrize(
    ("row", "reason"),
    [
        ((7, 1, 100, 5, 0, 0), REJ_BAD_MSG_TYPE),
        ((MSG_NEW, 1, 100, 5, 2, 0), REJ_UNKNOWN_SYMBOL),
        ((MSG_NEW, 1, 100, 5, -1, 0), REJ_UNKNOWN_SYMBOL),
        ((MSG_NEW, 1, 100, 5, 0, 4), REJ_BAD_ACCOUNT),
        ((MSG_NEW, 100, 100, 5, 0, 0), REJ_BAD_ORDER_ID),
        ((MSG_NEW, -1, 100, 5, 0, 0), REJ_BAD_ORDER_ID),
        ((MSG_NEW, 1, 100, 5, 0, 0, 2), REJ_BAD_SIDE),
        ((MSG_NEW, 1, 100, 5, 0, 0, 0, 9), REJ_BAD_ORDER_TYPE),
        ((MSG_NEW, 1, 100, 5, 0, 0, 0, 0, 3), REJ_BAD_STP),
        ((MSG_NEW, 1, 100, 0, 0, 0), REJ_BAD_QTY),
        ((MSG_NEW, 1, 100, -5, 0, 0), REJ_BAD_QTY),
        ((MSG_NEW, 1, PRICE_NONE, 5, 0, 0), REJ_BAD_PRICE),
        ((MSG_NEW, 1, I64_MAX, 5, 0, 0), REJ_BAD_PRICE),
        ((MSG_NEW, 1, 0, 5, 0, 0), REJ_BAD_PRICE),
        ((MSG_NEW, 1, 100, 51, 0, 0), REJ_MAX_QTY),
        ((MSG_NEW, 1, 116, 5, 0, 0), REJ_PRICE_BAND),
        ((MSG_NEW, 1, 100, 5, 0, 0, 0, OT_FOK), None),
        ((MSG_CANCEL, 1, 0, 0, 0, 0), REJ_UNKNOWN_ORDER),
        ((MSG_MODIFY, 1, 100, 5, 0, 0), REJ_UNKNOWN_ORDER),
        ((MSG_MODIFY, 1, 100, 0, 0, 0), REJ_BAD_QTY),
        ((MSG_MODIFY, 1, -3, 5, 0, 0), REJ_BAD_PRICE),
    ],
)
def test_bad_input_gets_its_reason_code(row: tuple, reason: int | None) -> None:
    eng, ev = run_both(SMALL, msgs(row))
    assert len(ev) == 1
    if reason is None:
        assert (ev[0]["kind"], ev[0]["code"]) == (EV_ACK, OUT_KILLED)
    else:
        assert (ev[0]["kind"], ev[0]["code"]) == (EV_REJECT, reason)
    assert eng.n_live == 0


def test_duplicate_live_id_is_rejected_and_reusable_after_cancel() -> None:
    _, ev = run_both(
        SMALL,
        msgs(
            (MSG_NEW, 7, 99, 5, 0, 0),
            (MSG_NEW, 7, 98, 5, 0, 1),
            (MSG_CANCEL, 7, 0, 0, 0, 1),
            (MSG_CANCEL, 7, 0, 0, 1, 0),
            (MSG_CANCEL, 7, 0, 0, 0, 0),
            (MSG_NEW, 7, 98, 5, 0, 1),
        ),
    )
    assert terminals(ev) == [
        (EV_ACK, OUT_RESTED),
        (EV_REJECT, REJ_DUPLICATE_ID),
        (EV_REJECT, REJ_NOT_OWNER),
        (EV_REJECT, REJ_UNKNOWN_ORDER),
        (EV_ACK, OUT_CANCELLED),
        (EV_ACK, OUT_RESTED),
    ]


def test_price_time_priority_and_maker_price() -> None:
    eng, ev = run_both(
        SMALL,
        msgs(
            (MSG_NEW, 1, 101, 3, 0, 0, 1),
            (MSG_NEW, 2, 100, 3, 0, 1, 1),
            (MSG_NEW, 3, 100, 3, 0, 2, 1),
            (MSG_NEW, 4, 102, 8, 0, 3, 0, OT_IOC),
        ),
    )
    fills = ev[ev["kind"] == EV_FILL]
    assert fills["counter_order_id"].tolist() == [2, 3, 1]
    assert fills["price_ticks"].tolist() == [100, 100, 101]
    assert fills["qty_lots"].tolist() == [3, 3, 2]
    assert terminals(ev)[-1] == (EV_ACK, OUT_FILLED)
    assert eng.book(0)["asks"] == [(101, 1, [(1, 0, 1)])]


def test_modify_size_down_keeps_priority_size_up_and_price_change_lose_it() -> None:
    base = [(MSG_NEW, i, 100, 5, 0, i, 0) for i in (1, 2, 3)]
    eng, _ = run_both(SMALL, msgs(*base, (MSG_MODIFY, 1, 100, 4, 0, 1)))
    assert [r[0] for r in eng.book(0)["bids"][0][2]] == [1, 2, 3]
    eng, _ = run_both(SMALL, msgs(*base, (MSG_MODIFY, 1, 100, 6, 0, 1)))
    assert [r[0] for r in eng.book(0)["bids"][0][2]] == [2, 3, 1]
    moved = [(MSG_MODIFY, 1, 99, 5, 0, 1), (MSG_MODIFY, 1, 100, 5, 0, 1)]
    eng, _ = run_both(SMALL, msgs(*base, *moved))
    assert [r[0] for r in eng.book(0)["bids"][0][2]] == [2, 3, 1]


@pytest.mark.parametrize(
    ("stp", "expected_terminal", "resting_after"),
    [
        (STP_CANCEL_RESTING, (EV_ACK, OUT_FILLED), [2]),
        (STP_CANCEL_INCOMING, (EV_ACK, OUT_STP), [1, 2]),
        (STP_CANCEL_BOTH, (EV_ACK, OUT_STP), [2]),
    ],
)
def test_self_trade_prevention_modes(stp, expected_terminal, resting_after) -> None:
    eng, ev = run_both(
        SMALL,
        msgs(
            (MSG_NEW, 1, 100, 5, 0, 0, 1),
            (MSG_NEW, 2, 101, 5, 0, 1, 1),
            (MSG_NEW, 3, 101, 4, 0, 0, 0, OT_GTC, stp),
        ),
    )
    assert terminals(ev)[-1] == expected_terminal
    assert not any(ev[ev["kind"] == EV_FILL]["counter_order_id"] == 1)
    if stp != STP_CANCEL_INCOMING:
        assert ev[ev["kind"] == EV_CANCELED]["order_id"].tolist() == [1]
    assert [r[0] for lvl in eng.book(0)["asks"] for r in lvl[2]] == resting_after


def test_fok_market_post_only() -> None:
    _, ev = run_both(
        SMALL,
        msgs(
            (MSG_NEW, 1, 100, 5, 0, 0, 1),
            (MSG_NEW, 2, 101, 9, 0, 1, 0, OT_FOK),
            (MSG_NEW, 3, 101, 5, 0, 1, 0, OT_POST_ONLY),
            (MSG_NEW, 4, 99, 5, 0, 1, 0, OT_POST_ONLY),
            (MSG_NEW, 5, 0, 9, 0, 2, 0, OT_MARKET),
            (MSG_NEW, 6, 0, 9, 0, 2, 1, OT_MARKET),
        ),
    )
    assert terminals(ev) == [
        (EV_ACK, OUT_RESTED),
        (EV_ACK, OUT_KILLED),
        (EV_REJECT, REJ_POST_ONLY_WOULD_TAKE),
        (EV_ACK, OUT_RESTED),
        (EV_ACK, OUT_EXPIRED),
        (EV_ACK, OUT_EXPIRED),
    ]


def test_exposure_limit_counts_position_and_open_orders() -> None:
    # limit 60: 50 open + 20 more would be 70
    _, ev = run_both(
        SMALL,
        msgs(
            (MSG_NEW, 1, 99, 50, 0, 0, 0),
            (MSG_NEW, 2, 98, 20, 0, 0, 0),
            (MSG_NEW, 3, 98, 10, 0, 0, 0),
            (MSG_NEW, 4, 109, 20, 0, 0, 1),
        ),
    )
    assert terminals(ev) == [
        (EV_ACK, OUT_RESTED),
        (EV_REJECT, REJ_EXPOSURE),
        (EV_ACK, OUT_RESTED),
        (EV_ACK, OUT_RESTED),
    ]


def test_one_account_cannot_fill_the_book() -> None:
    """Issue 21: one client filled the book and every other client's orders were rejected.
    With ``max_open_orders`` an (account, symbol) rests at most that many orders: the next one
    that may rest is refused, an IOC still trades, another account still rests, and a cancel
    or a fill frees a place."""
    config = replace(SMALL, capacity_orders=8, max_open_orders=2)
    eng, ev = run_both(
        config,
        msgs(
            (MSG_NEW, 1, 95, 1, 0, 0, 0),
            (MSG_NEW, 2, 96, 1, 0, 0, 0),
            (MSG_NEW, 3, 97, 1, 0, 0, 0),  # third GTC of account 0 on symbol 0
            (MSG_NEW, 4, 97, 1, 0, 0, 0, OT_POST_ONLY),
            (MSG_NEW, 5, 97, 1, 1, 0, 0),  # another symbol: its own count
            (MSG_NEW, 6, 105, 1, 0, 1, 1),  # another account rests
            (MSG_CANCEL, 1, 0, 0, 0, 0),
            (MSG_NEW, 7, 94, 1, 0, 0, 0),  # a place was freed
            (MSG_NEW, 8, 96, 1, 0, 1, 1, OT_IOC),  # account 1 sells into account 0's 96 bid
            (MSG_NEW, 9, 93, 1, 0, 0, 0),  # the fill freed another place
        ),
    )
    assert terminals(ev) == [
        (EV_ACK, OUT_RESTED),
        (EV_ACK, OUT_RESTED),
        (EV_REJECT, REJ_MAX_OPEN_ORDERS),
        (EV_REJECT, REJ_MAX_OPEN_ORDERS),
        (EV_ACK, OUT_RESTED),
        (EV_ACK, OUT_RESTED),
        (EV_ACK, OUT_CANCELLED),
        (EV_ACK, OUT_RESTED),
        (EV_ACK, OUT_FILLED),
        (EV_ACK, OUT_RESTED),
    ]
    assert eng.state.accounts["open_orders"][0] == 2 == eng.n_live - 2


def test_capacity_exhaustion_and_window_are_clean_rejects() -> None:
    rows = [(MSG_NEW, i, 95 + i, 1, 0, 0, 0) for i in range(6)]
    eng, ev = run_both(SMALL, msgs(*rows, (MSG_NEW, 9, 91, 1, 0, 1, 1, OT_IOC)))
    assert terminals(ev) == [(EV_ACK, OUT_RESTED)] * 4 + [(EV_REJECT, REJ_BOOK_FULL)] * 2 + [
        (EV_ACK, OUT_FILLED)
    ]
    assert eng.free_rows == 1
    # Window is 20 ticks centred on 100 -> [90, 110); band is 15. A far price inside the band
    # is refused even on an empty symbol: the window stays on the reference price, so one
    # order cannot move it away from everyone else's (issue 21: a far order from one
    # connection made every other client's orders out of window).
    eng, ev = run_both(
        SMALL,
        msgs(
            (MSG_NEW, 1, 112, 1, 1, 0, 1),
            (MSG_NEW, 2, 89, 1, 1, 0, 0),
            (MSG_NEW, 3, 103, 1, 1, 0, 0),
            (MSG_NEW, 4, 109, 1, 1, 0, 1),
        ),
    )
    assert terminals(ev) == [
        (EV_REJECT, REJ_OUT_OF_WINDOW),
        (EV_REJECT, REJ_OUT_OF_WINDOW),
        (EV_ACK, OUT_RESTED),
        (EV_ACK, OUT_RESTED),
    ]


# --- fuzz --------------------------------------------------------------------------------------
raw_rows = st.tuples(
    st.sampled_from([0, 1, 2, 3, 255]),
    st.one_of(st.integers(-2, 101), st.sampled_from([I64_MIN, I64_MAX])),
    st.one_of(st.integers(80, 120), st.sampled_from([I64_MIN, I64_MAX, 0, -1, 2**53])),
    st.one_of(st.integers(-3, 60), st.sampled_from([I64_MIN, I64_MAX])),
    st.one_of(st.integers(-1, 2), st.sampled_from([-(2**31), 2**31 - 1])),
    st.one_of(st.integers(-1, 4), st.sampled_from([-(2**31), 2**31 - 1])),
    st.sampled_from([0, 1, 2, 255]),
    st.sampled_from([0, 1, 2, 3, 4, 5, 255]),
    st.sampled_from([0, 1, 2, 3, 255]),
)


@settings(max_examples=150, deadline=None)
@given(rows=st.lists(raw_rows, min_size=1, max_size=40), split=st.integers(1, 40))
def test_fuzz_any_fields_one_terminal_each_and_same_as_reference(rows, split) -> None:
    m = np.zeros(len(rows), dtype=MSG_DTYPE)
    for i, (mtype, oid, price, qty, sym, acc, side, otype, stp) in enumerate(rows):
        m[i] = (oid, price, qty, sym, acc, mtype, side, otype, stp)
    eng = Engine(SMALL)
    ev = np.concatenate([eng.process(m[:split]), eng.process(m[split:])])
    assert events_as_tuples(ev) == ReferenceEngine(SMALL).process(m)
    term = ev[(ev["kind"] == EV_ACK) | (ev["kind"] == EV_REJECT)]
    assert term["msg_index"].tolist() == list(range(len(m)))
    assert (term["code"] > 0).all()
    assert np.all(np.diff(ev["seq"]) == 1)
