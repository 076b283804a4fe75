"""The public face of the Numba matching engine: configuration, state, the batch API.

:class:`EngineConfig` is validated once at construction; :class:`Engine` preallocates every
array of a :class:`~engine_ext._book.BookState` from it and exposes :meth:`Engine.process`,
which hands a whole array of messages to the compiled kernel (one Python call per batch,
because a Python call per order costs about a microsecond, several times the engine's own
work). Numba callers use :attr:`Engine.state` with :func:`engine_ext._book.process_one`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from engine_ext._book import BookState, process_batch
from engine_ext.errors import EngineError
from engine_ext.types import (
    ACCOUNT_DTYPE,
    C_FREE_TOP,
    C_N_LIVE,
    C_SEQ,
    EVENT_DTYPE,
    K_BAND,
    K_CAPACITY,
    K_EXPOSURE,
    K_MAX_OPEN,
    K_MAX_ORDER_ID,
    K_MAX_QTY,
    K_N_ACCOUNTS,
    K_N_SYMBOLS,
    K_WINDOW,
    LEVEL_DTYPE,
    MSG_DTYPE,
    N_CONFIG,
    N_COUNTERS,
    ORDER_ROW_DTYPE,
    PRICE_LIMIT_TICKS,
    SYMBOL_DTYPE,
)

# Each constraint: (field, lowest allowed, highest allowed). Checked in EngineConfig.
_LIMITS: tuple[tuple[str, int, int], ...] = (
    ("n_symbols", 1, 1 << 16),
    ("n_accounts", 1, 1 << 20),
    ("capacity_orders", 1, (1 << 31) - 1),
    ("max_order_id", 1, 1 << 31),
    ("window_ticks", 2, 1 << 24),
    ("max_order_qty_lots", 1, 1 << 40),
    ("exposure_limit_lots", 0, 1 << 50),
    ("band_ticks", 0, PRICE_LIMIT_TICKS),
    ("max_open_orders", 0, (1 << 31) - 1),
)


@dataclass(frozen=True, kw_only=True)
class EngineConfig:
    """Sizes and risk limits of an engine; immutable and checked at construction.

    ``reference_price_ticks`` is the centre of each symbol's price band and of its initial
    ladder window (one value for all symbols, or one per symbol). ``max_open_orders`` caps the
    resting orders of one (account, symbol); the default is no cap.
    """

    n_symbols: int = 1
    n_accounts: int = 16
    capacity_orders: int = 1 << 16
    max_order_id: int = 1 << 20
    window_ticks: int = 4096
    max_order_qty_lots: int = 1_000_000
    exposure_limit_lots: int = 1 << 40
    band_ticks: int = 1 << 20
    max_open_orders: int = (1 << 31) - 1
    reference_price_ticks: int | tuple[int, ...] = field(default=100_000)

    def __post_init__(self) -> None:
        for name, low, high in _LIMITS:
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | np.integer):
                raise EngineError(f"EngineConfig.{name} must be an integer, got {value!r}")
            if not low <= value <= high:
                raise EngineError(
                    f"EngineConfig.{name} = {value} is outside the allowed range [{low}, {high}]"
                )
        refs = self.reference_prices()
        if refs.shape[0] != self.n_symbols:
            raise EngineError(
                f"EngineConfig.reference_price_ticks has {refs.shape[0]} values, "
                f"need 1 or n_symbols = {self.n_symbols}"
            )
        bad = refs[(refs <= 0) | (refs >= PRICE_LIMIT_TICKS)]
        if bad.size:
            raise EngineError(
                f"EngineConfig.reference_price_ticks = {int(bad[0])} is outside "
                f"(0, {PRICE_LIMIT_TICKS})"
            )

    def reference_prices(self) -> np.ndarray:
        """The reference price of every symbol, as an int64 array of length ``n_symbols``."""
        ref = self.reference_price_ticks
        if isinstance(ref, tuple):
            return np.asarray(ref, dtype=np.int64)
        return np.full(self.n_symbols, ref, dtype=np.int64)


def new_state(config: EngineConfig) -> BookState:
    """Allocate the arrays of an empty engine (the only allocation the engine ever does)."""
    w = config.window_ticks
    orders = np.zeros(config.capacity_orders, dtype=ORDER_ROW_DTYPE)
    orders["prev"] = -1
    orders["next"] = -1
    levels = np.zeros(2 * config.n_symbols * w, dtype=LEVEL_DTYPE)
    levels["head"] = -1
    levels["tail"] = -1
    symbols = np.zeros(config.n_symbols, dtype=SYMBOL_DTYPE)
    refs = config.reference_prices()
    symbols["reference_tick"] = refs
    symbols["base_tick"] = refs - w // 2
    symbols["best_bid"] = -1
    symbols["best_ask"] = -1
    accounts = np.zeros(config.n_accounts * config.n_symbols, dtype=ACCOUNT_DTYPE)
    order_index = np.full(config.max_order_id, -1, dtype=np.int32)
    # Rows are popped from the end, so row 0 is handed out first.
    free = np.arange(config.capacity_orders - 1, -1, -1, dtype=np.int32)
    counters = np.zeros(N_COUNTERS, dtype=np.int64)
    counters[C_FREE_TOP] = config.capacity_orders
    cfg = np.zeros(N_CONFIG, dtype=np.int64)
    cfg[K_WINDOW] = w
    cfg[K_MAX_QTY] = config.max_order_qty_lots
    cfg[K_EXPOSURE] = config.exposure_limit_lots
    cfg[K_BAND] = config.band_ticks
    cfg[K_N_SYMBOLS] = config.n_symbols
    cfg[K_N_ACCOUNTS] = config.n_accounts
    cfg[K_MAX_ORDER_ID] = config.max_order_id
    cfg[K_CAPACITY] = config.capacity_orders
    cfg[K_MAX_OPEN] = config.max_open_orders
    return BookState(orders, levels, symbols, accounts, order_index, free, counters, cfg)


def as_messages(msgs: np.ndarray) -> np.ndarray:
    """Check that ``msgs`` is a 1-D array of :data:`MSG_DTYPE`; return it C-contiguous."""
    if not isinstance(msgs, np.ndarray) or msgs.dtype != MSG_DTYPE:
        got = getattr(msgs, "dtype", type(msgs).__name__)
        raise EngineError(f"messages must be a numpy array of engine_ext.MSG_DTYPE, got {got}")
    if msgs.ndim != 1:
        raise EngineError(f"messages must be 1-D, got shape {msgs.shape}")
    return np.ascontiguousarray(msgs)


class Engine:
    """A multi-symbol price-time priority matching engine with pre-trade risk checks.

    Every message gets exactly one terminal ack or reject; see :mod:`engine_ext.types` for the
    rules. ``msg_index`` in events counts messages since the engine was created, so splitting
    a stream into batches of any size yields identical events.
    """

    def __init__(self, config: EngineConfig | None = None) -> None:
        self.config = config if config is not None else EngineConfig()
        self.state = new_state(self.config)
        self._n_msgs = 0

    def process(self, msgs: np.ndarray) -> np.ndarray:
        """Process a batch of messages in order; return their events (a new array)."""
        msgs = as_messages(msgs)
        n_msgs = msgs.shape[0]
        cap = 2 * n_msgs + 64
        chunks = []
        start = 0
        while True:
            ev = np.empty(max(cap, self._room_hint()), dtype=EVENT_DTYPE)
            nxt, n = process_batch(self.state, msgs, start, self._n_msgs, ev, 0)
            chunks.append(ev[:n])
            if nxt == n_msgs:
                break
            if nxt == start and n == 0:
                cap *= 2
            start = nxt
        self._n_msgs += n_msgs
        return chunks[0].copy() if len(chunks) == 1 else np.concatenate(chunks)

    def _room_hint(self) -> int:
        """Events one message could need at most (every resting order of a symbol, plus 2)."""
        return int(self.state.symbols["n_live"].max()) + 2

    # --- inspection (tests, tools); not on the hot path ----------------------------------
    @property
    def n_live(self) -> int:
        """Resting orders over all symbols."""
        return int(self.state.counters[C_N_LIVE])

    @property
    def free_rows(self) -> int:
        """Rows on the free list (``capacity_orders`` when the book is empty)."""
        return int(self.state.counters[C_FREE_TOP])

    @property
    def last_seq(self) -> int:
        """Sequence number of the last event produced (0 before any)."""
        return int(self.state.counters[C_SEQ])

    def book(self, symbol: int) -> dict[str, list[tuple[int, int, list[tuple[int, int, int]]]]]:
        """The resting book of ``symbol``: per side, best level first, each level as
        ``(price_ticks, total_qty, [(order_id, account, leaves_qty), ...])`` in time priority.
        """
        if not 0 <= symbol < self.config.n_symbols:
            raise EngineError(f"symbol {symbol} is outside [0, {self.config.n_symbols})")
        st = self.state
        w = self.config.window_ticks
        base_tick = int(st.symbols["base_tick"][symbol])
        out: dict[str, list[tuple[int, int, list[tuple[int, int, int]]]]] = {}
        for side, name in ((0, "bids"), (1, "asks")):
            lev = st.levels[(2 * symbol + side) * w : (2 * symbol + side + 1) * w]
            idx = np.flatnonzero(lev["count"] > 0)
            if side == 0:
                idx = idx[::-1]
            levels = []
            for li in idx:
                rows = []
                row = int(lev["head"][li])
                while row >= 0:
                    o = st.orders[row]
                    rows.append((int(o["order_id"]), int(o["account"]), int(o["leaves_qty"])))
                    row = int(o["next"])
                levels.append((base_tick + int(li), int(lev["total_qty"][li]), rows))
            out[name] = levels
        return out

    def best(self, symbol: int) -> tuple[int | None, int | None]:
        """Best bid and best ask price of ``symbol`` as tracked by the engine (None if empty)."""
        s = self.state.symbols[symbol]
        bid = None if s["best_bid"] < 0 else int(s["base_tick"] + s["best_bid"])
        ask = None if s["best_ask"] < 0 else int(s["base_tick"] + s["best_ask"])
        return bid, ask

    def account(self, account: int, symbol: int) -> tuple[int, int, int]:
        """``(position, open_buy, open_sell)`` of an (account, symbol)."""
        a = self.state.accounts[account * self.config.n_symbols + symbol]
        return int(a["position"]), int(a["open_buy"]), int(a["open_sell"])

    def snapshot(self) -> tuple[BookState, int]:
        """A deep copy of the state, to :meth:`restore` later (benchmarks replay from it)."""
        return BookState(*(a.copy() for a in self.state)), self._n_msgs

    def restore(self, snap: tuple[BookState, int]) -> None:
        """Put back a state taken by :meth:`snapshot`, in place (no reallocation)."""
        state, n_msgs = snap
        for dst, src in zip(self.state, state, strict=True):
            np.copyto(dst, src)
        self._n_msgs = n_msgs
