"""Deterministic order streams for benchmarks, generated against the reference engine.

A workload is a seed, an :class:`~engine_ext.EngineConfig` and an array of
:data:`~engine_ext.types.MSG_DTYPE` messages. The generator feeds every message to the
:class:`~engine_ext.ReferenceEngine` as it goes and follows its events, so cancels and modifies
target orders that are live at that moment (except the deliberate stale cancels of the crypto
mix). The first ``n_warmup`` messages build the resting book and are excluded from timing; with
``drain=True`` the stream ends by cancelling every live order, so it can be replayed back to back
on one engine (order ids are reusable once their order is gone).

The mixes:

* ``exchange_core``: after the exchange-core throughput test - one symbol, about 1k resting
  orders over about 750 price levels, then 9% GTC, 3% IOC, 6% cancel, 82% move (price change).
* ``itch``: after the message mix of a Nasdaq TotalView-ITCH day - 16 symbols of Zipf-like
  popularity; about 49% adds near the touch, 42% deletes, 2% partial cancels (size down), 5%
  replaces, 2% marketable orders. Deletes and replaces mostly (80%) hit one of the last few
  hundred orders added, since most orders live briefly, and otherwise any live order.
* ``crypto_mm``: market makers quoting post-only ladders on both sides of a moving mid and
  re-quoting (cancel + new) as it moves, so about 95% of resting orders end cancelled; 15% IOC
  from takers; about 2% stale cancels of orders that have just been filled.
* ``deep_book``: 64 symbols with about 2.3k resting orders each (150k in all) spread over
  thousands of levels, then an ITCH-like mix.

Saved workloads carry a SHA-256 of their content, checked on load. A cached workload is named
by what made it (name, seed, size and a digest of the generator's own sources,
:func:`generator_digest`), so a change to the reference engine or the mixes makes a new one.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from engine_ext.engine import EngineConfig
from engine_ext.errors import WorkloadError
from engine_ext.reference import ReferenceEngine
from engine_ext.types import (
    EV_ACK,
    EV_CANCELED,
    EV_FILL,
    MSG_CANCEL,
    MSG_DTYPE,
    MSG_MODIFY,
    MSG_NEW,
    OT_GTC,
    OT_IOC,
    OT_POST_ONLY,
    OUT_CANCELLED,
    OUT_MODIFIED,
    OUT_RESTED,
    SIDE_BUY,
    SIDE_SELL,
)

WORKLOADS = ("exchange_core", "itch", "crypto_mm", "deep_book")
"""Names accepted by :func:`generate`."""

_MID_TICKS = 100_000


@dataclass(frozen=True)
class Workload:
    """A generated stream: replaying ``messages`` on ``Engine(config)`` is the benchmark."""

    name: str
    seed: int
    config: EngineConfig
    messages: np.ndarray
    n_warmup: int
    n_drain: int
    digest: str

    @property
    def warmup(self) -> np.ndarray:
        """The messages that build the resting book (not timed)."""
        return self.messages[: self.n_warmup]

    @property
    def measured(self) -> np.ndarray:
        """The messages between the warm-up and the drain: the part that is timed."""
        return self.messages[self.n_warmup : self.messages.shape[0] - self.n_drain]

    @property
    def drain(self) -> np.ndarray:
        """The closing cancels that empty the book (so the stream can be replayed)."""
        return self.messages[self.messages.shape[0] - self.n_drain :]


class _Live:
    """Live orders as known from the reference engine's events, with O(1) random choice."""

    def __init__(self) -> None:
        self.ids: list[int] = []
        self.pos: dict[int, int] = {}
        self.info: dict[int, list[int]] = {}  # oid -> [symbol, account, side, price, leaves]

    def add(self, oid: int, info: list[int]) -> None:
        if oid not in self.pos:
            self.pos[oid] = len(self.ids)
            self.ids.append(oid)
        self.info[oid] = info

    def remove(self, oid: int) -> None:
        i = self.pos.pop(oid, None)
        if i is None:
            return
        last = self.ids.pop()
        if last != oid:
            self.ids[i] = last
            self.pos[last] = i
        del self.info[oid]

    def pick(self, rng: np.random.Generator) -> int:
        return self.ids[int(rng.integers(len(self.ids)))]

    def __len__(self) -> int:
        return len(self.ids)


class _Generator:
    """Sends messages to the reference engine and tracks what is live."""

    def __init__(self, config: EngineConfig, seed: int) -> None:
        self.config = config
        self.ref = ReferenceEngine(config)
        self.rng = np.random.default_rng(seed)
        self.rows: list[tuple[int, ...]] = []
        self.live = _Live()
        self.next_id = 0
        self.recently_filled: list[int] = []
        self.recently_added: list[int] = []

    def new_id(self) -> int:
        while True:
            oid = self.next_id
            self.next_id = (self.next_id + 1) % self.config.max_order_id
            if oid not in self.live.pos:
                return oid

    def send(self, mtype, oid, price, qty, sym, acc, side=0, otype=0, stp=0) -> None:
        row = (oid, price, qty, sym, acc, mtype, side, otype, stp)
        self.rows.append(row)
        start = len(self.ref.events)
        self.ref.process_one(*row)
        for e in self.ref.events[start:]:
            _, _, eoid, cid, eprice, _, leaves, cleaves, esym, eacc, _, kind, code, eside = e
            if kind == EV_FILL:
                if cleaves == 0:
                    self.live.remove(cid)
                    self.recently_filled.append(cid)
                else:
                    self.live.info[cid][4] = cleaves
            elif kind == EV_CANCELED:
                self.live.remove(eoid)
            elif kind == EV_ACK:
                if code == OUT_RESTED:
                    self.live.add(eoid, [esym, eacc, eside, eprice, leaves])
                    self.recently_added.append(eoid)
                elif code == OUT_CANCELLED:
                    self.live.remove(eoid)
                elif code == OUT_MODIFIED:
                    if leaves == 0:
                        self.live.remove(eoid)
                    else:
                        self.live.add(eoid, [esym, eacc, eside, eprice, leaves])
        if len(self.ref.events) > 4096:
            self.ref.events.clear()
        if len(self.recently_filled) > 64:
            del self.recently_filled[:32]
        if len(self.recently_added) > 512:
            del self.recently_added[:256]

    def pick_recent(self) -> int:
        """A live order, most often a recent one: most orders die young (as in ITCH data)."""
        if self.rng.random() < 0.8:
            for _ in range(4):
                oid = self.recently_added[-1 - int(self.rng.integers(len(self.recently_added)))]
                if oid in self.live.pos:
                    return oid
        return self.live.pick(self.rng)

    def cancel_live(self, oid: int) -> None:
        sym, acc, _, _, _ = self.live.info[oid]
        self.send(MSG_CANCEL, oid, 0, 0, sym, acc)

    def drain(self) -> None:
        for oid in sorted(self.live.ids):
            self.cancel_live(oid)

    def messages(self) -> np.ndarray:
        return np.array(self.rows, dtype=MSG_DTYPE)


def _passive_price(rng: np.random.Generator, mid: int, side: int, depth: float) -> int:
    """A price behind the mid: geometric distance, mean ``depth`` ticks."""
    dist = 1 + int(rng.geometric(1.0 / depth))
    return mid - dist if side == SIDE_BUY else mid + dist


def _exchange_core(g: _Generator, n: int) -> int:
    rng = g.rng
    mid = _MID_TICKS
    target = 1000
    for _ in range(target):
        side = int(rng.integers(2))
        price = (
            mid - int(rng.integers(1, 820)) if side == SIDE_BUY else mid + int(rng.integers(1, 820))
        )
        g.send(MSG_NEW, g.new_id(), price, int(rng.integers(1, 100)), 0,
               int(rng.integers(64)), side, OT_GTC)  # fmt: skip
    n_warmup = len(g.rows)
    while len(g.rows) < n_warmup + n:
        mid += int(rng.integers(-1, 2))
        mid += (_MID_TICKS - mid) // 64
        u = rng.random()
        acc = int(rng.integers(64))
        side = int(rng.integers(2))
        if u < 0.09 or len(g.live) < target // 2:
            price = (
                mid - int(rng.integers(1, 820))
                if side == SIDE_BUY
                else mid + int(rng.integers(1, 820))
            )
            g.send(MSG_NEW, g.new_id(), price, int(rng.integers(1, 100)), 0, acc, side, OT_GTC)
        elif u < 0.12:
            price = mid + 3 if side == SIDE_BUY else mid - 3
            g.send(MSG_NEW, g.new_id(), price, int(rng.integers(1, 200)), 0, acc, side, OT_IOC)
        elif u < 0.18 and len(g.live) > target // 2:
            g.cancel_live(g.live.pick(rng))
        else:
            oid = g.live.pick(rng)
            sym, oacc, oside, oprice, leaves = g.live.info[oid]
            # Moves mostly shuffle orders behind the touch; a few step across the spread.
            if rng.random() < 0.02:
                price = mid + 2 if oside == SIDE_BUY else mid - 2
            else:
                price = oprice + int(rng.integers(-12, 13))
                price = min(price, mid - 1) if oside == SIDE_BUY else max(price, mid + 1)
            g.send(MSG_MODIFY, oid, price, leaves, sym, oacc)
    return n_warmup


def _itch_step(g: _Generator, mids: np.ndarray, popularity: np.ndarray, accounts: int,
               depth: float, target_per_symbol: int) -> None:  # fmt: skip
    rng = g.rng
    sym = int(rng.choice(len(mids), p=popularity))
    if rng.random() < 0.02:
        mids[sym] += int(rng.integers(-1, 2)) + (_MID_TICKS - mids[sym]) // 16
    mid = int(mids[sym])
    u = rng.random()
    acc = int(rng.integers(accounts))
    side = int(rng.integers(2))
    thin = len(g.live) < target_per_symbol * len(mids) * 0.8
    if u < 0.49 or (thin and u < 0.91) or len(g.live) == 0:
        g.send(MSG_NEW, g.new_id(), _passive_price(rng, mid, side, depth),
               int(rng.integers(1, 10)) * 100, sym, acc, side, OT_GTC)  # fmt: skip
        return
    oid = g.pick_recent()
    osym, oacc, oside, oprice, leaves = g.live.info[oid]
    if u < 0.91:
        g.cancel_live(oid)
    elif u < 0.93 and leaves > 1:
        g.send(MSG_MODIFY, oid, oprice, int(rng.integers(1, leaves)), osym, oacc)
    elif u < 0.98:
        omid = int(mids[osym])
        g.send(MSG_MODIFY, oid, _passive_price(rng, omid, oside, depth), leaves, osym, oacc)
    else:
        price = mid + 2 if side == SIDE_BUY else mid - 2
        g.send(MSG_NEW, g.new_id(), price, int(rng.integers(1, 10)) * 100, sym, acc, side, OT_IOC)


def _zipf(n_symbols: int) -> np.ndarray:
    w = 1.0 / np.arange(1, n_symbols + 1)
    return w / w.sum()


def _itch(g: _Generator, n: int) -> int:
    n_sym = g.config.n_symbols
    mids = np.full(n_sym, _MID_TICKS, dtype=np.int64)
    pop = _zipf(n_sym)
    for _ in range(400 * n_sym):
        _itch_step(g, mids, pop, 256, 8.0, 500)
    n_warmup = len(g.rows)
    while len(g.rows) < n_warmup + n:
        _itch_step(g, mids, pop, 256, 8.0, 500)
    return n_warmup


def _deep_book(g: _Generator, n: int) -> int:
    rng = g.rng
    n_sym = g.config.n_symbols
    mids = np.full(n_sym, _MID_TICKS, dtype=np.int64)
    pop = np.full(n_sym, 1.0 / n_sym)
    per_symbol = 150_000 // n_sym + 1
    for sym in range(n_sym):
        for _ in range(per_symbol):
            side = int(rng.integers(2))
            g.send(MSG_NEW, g.new_id(), _passive_price(rng, _MID_TICKS, side, 300.0),
                   int(rng.integers(1, 10)) * 100, sym, int(rng.integers(1024)), side,
                   OT_GTC)  # fmt: skip
    n_warmup = len(g.rows)
    while len(g.rows) < n_warmup + n:
        _itch_step(g, mids, pop, 1024, 300.0, per_symbol)
    return n_warmup


def _crypto_mm(g: _Generator, n: int) -> int:
    rng = g.rng
    n_makers, levels_per_side = 8, 5
    mid = _MID_TICKS
    quotes: dict[tuple[int, int, int], int] = {}  # (maker, side, level) -> order id

    def requote(maker: int, side: int, level: int) -> None:
        old = quotes.get((maker, side, level))
        if old is not None:
            # A maker does not know yet whether its quote was filled: stale cancels happen.
            g.send(MSG_CANCEL, old, 0, 0, 0, maker)
        price = mid - 1 - level if side == SIDE_BUY else mid + 1 + level
        oid = g.new_id()
        quotes[(maker, side, level)] = oid
        g.send(MSG_NEW, oid, price, int(rng.integers(20, 100)), 0, maker, side, OT_POST_ONLY)

    for maker in range(n_makers):
        for side in (SIDE_BUY, SIDE_SELL):
            for level in range(levels_per_side):
                requote(maker, side, level)
    n_warmup = len(g.rows)
    while len(g.rows) < n_warmup + n:
        if rng.random() < 0.03:
            mid += int(rng.integers(-1, 2))
            mid += (_MID_TICKS - mid) // 256
        if rng.random() < 0.26:
            # 15% of messages are taker IOCs: a requote is two messages, so p / (2 - p) = 0.15.
            side = int(rng.integers(2))
            price = mid + 2 if side == SIDE_BUY else mid - 2
            g.send(MSG_NEW, g.new_id(), price, int(rng.integers(1, 25)), 0,
                   n_makers + int(rng.integers(32)), side, OT_IOC)  # fmt: skip
        else:
            requote(int(rng.integers(n_makers)), int(rng.integers(2)),
                    int(rng.integers(levels_per_side)))  # fmt: skip
    return n_warmup


_SPECS = {
    "exchange_core": (
        _exchange_core,
        EngineConfig(n_symbols=1, n_accounts=64, capacity_orders=1 << 14,
                     max_order_id=1 << 20, window_ticks=4096, max_order_qty_lots=1_000_000,
                     exposure_limit_lots=1 << 48, band_ticks=1500,
                     reference_price_ticks=_MID_TICKS),
    ),
    "itch": (
        _itch,
        EngineConfig(n_symbols=16, n_accounts=256, capacity_orders=1 << 15,
                     max_order_id=1 << 20, window_ticks=1024, max_order_qty_lots=1_000_000,
                     exposure_limit_lots=1 << 48, band_ticks=400,
                     reference_price_ticks=_MID_TICKS),
    ),
    "crypto_mm": (
        _crypto_mm,
        EngineConfig(n_symbols=1, n_accounts=64, capacity_orders=1 << 12,
                     max_order_id=1 << 20, window_ticks=1024, max_order_qty_lots=1_000_000,
                     exposure_limit_lots=1 << 48, band_ticks=400,
                     reference_price_ticks=_MID_TICKS),
    ),
    "deep_book": (
        _deep_book,
        EngineConfig(n_symbols=64, n_accounts=1024, capacity_orders=1 << 18,
                     max_order_id=1 << 21, window_ticks=8192, max_order_qty_lots=1_000_000,
                     exposure_limit_lots=1 << 48, band_ticks=4000,
                     reference_price_ticks=_MID_TICKS),
    ),
}  # fmt: skip


def _digest(
    name: str, seed: int, config: EngineConfig, n_warmup: int, n_drain: int, msgs: np.ndarray
) -> str:
    h = hashlib.sha256()
    meta = {
        "name": name,
        "seed": seed,
        "n_warmup": n_warmup,
        "n_drain": n_drain,
        "config": asdict(config),
    }
    h.update(json.dumps(meta, sort_keys=True).encode())
    # Field by field: the aligned dtype has padding bytes whose content is not data.
    for field in MSG_DTYPE.names or ():
        h.update(np.ascontiguousarray(msgs[field]).tobytes())
    return h.hexdigest()


def generate(
    name: str, *, seed: int = 0, n_messages: int = 200_000, drain: bool = True
) -> Workload:
    """Generate workload ``name`` with ``n_messages`` measured messages from ``seed``.

    Deterministic: the same arguments give the same messages and digest.
    """
    if name not in _SPECS:
        raise WorkloadError(f"unknown workload {name!r}; choose one of {', '.join(WORKLOADS)}")
    if n_messages < 1:
        raise WorkloadError(f"n_messages must be >= 1, got {n_messages}")
    build, config = _SPECS[name]
    g = _Generator(config, seed)
    n_warmup = build(g, n_messages)
    n_body = len(g.rows)
    if drain:
        g.drain()
    msgs = g.messages()
    n_drain = msgs.shape[0] - n_body
    digest = _digest(name, seed, config, n_warmup, n_drain, msgs)
    return Workload(name, seed, config, msgs, n_warmup, n_drain, digest)


def save(workload: Workload, path: str | Path) -> Path:
    """Write a workload to ``path`` (``.npz``) with its digest."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    meta = {
        "name": workload.name,
        "seed": workload.seed,
        "n_warmup": workload.n_warmup,
        "n_drain": workload.n_drain,
        "digest": workload.digest,
        "config": asdict(workload.config),
    }
    tmp = path.with_name(path.name + ".tmp.npz")
    np.savez(tmp, messages=workload.messages, meta=np.array(json.dumps(meta)))
    tmp.replace(path)
    return path


def load(path: str | Path) -> Workload:
    """Read a workload written by :func:`save`; refuse it if its digest does not match."""
    path = Path(path)
    try:
        with np.load(path, allow_pickle=False) as f:
            msgs = f["messages"]
            meta = json.loads(str(f["meta"]))
    except (OSError, KeyError, ValueError) as exc:
        raise WorkloadError(f"cannot read workload file {path}: {exc}") from exc
    if msgs.dtype != MSG_DTYPE:
        raise WorkloadError(f"workload file {path}: messages have dtype {msgs.dtype}")
    cfg = meta["config"]
    if isinstance(cfg.get("reference_price_ticks"), list):
        cfg["reference_price_ticks"] = tuple(cfg["reference_price_ticks"])
    config = EngineConfig(**cfg)
    digest = _digest(meta["name"], meta["seed"], config, meta["n_warmup"], meta["n_drain"], msgs)
    if digest != meta["digest"]:
        raise WorkloadError(
            f"workload file {path}: content hash {digest[:12]} does not match the recorded "
            f"{meta['digest'][:12]}"
        )
    return Workload(
        meta["name"], meta["seed"], config, msgs, meta["n_warmup"], meta["n_drain"], digest
    )


# The modules whose code decides which messages a workload holds.
_GENERATOR_SOURCES = ("workloads.py", "reference.py", "engine.py", "types.py")


def generator_digest() -> str:
    """SHA-256 (hex) of the sources that generate workloads: the key of a cached stream."""
    h = hashlib.sha256()
    here = Path(__file__).resolve().parent
    for name in _GENERATOR_SOURCES:
        h.update(name.encode())
        h.update((here / name).read_bytes())
    return h.hexdigest()


def load_or_generate(name: str, *, seed: int = 0, n_messages: int = 200_000,
                     cache_dir: str | Path) -> Workload:  # fmt: skip
    """Replay a saved workload from ``cache_dir`` if its makers are unchanged, else generate it.

    The file name holds the first 16 hex digits of :func:`generator_digest`: a stream cached by
    another version of the generator or the reference engine is never replayed.
    """
    path = Path(cache_dir) / f"{name}-seed{seed}-n{n_messages}-{generator_digest()[:16]}.npz"
    if path.exists():
        return load(path)
    wl = generate(name, seed=seed, n_messages=n_messages)
    save(wl, path)
    return wl
