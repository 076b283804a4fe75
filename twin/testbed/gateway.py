"""The exchange gateway: a TCP server in front of the ``engine_ext`` matching engine.

One asyncio event loop (uvloop) in one thread owns the engine, as a venue's single-threaded
matching engine would; every socket read is answered by one call of the compiled kernel
(:func:`twin.testbed._kernel.handle_frames`) and one write. Measured choice: on this 2-vCPU
machine a uvloop protocol with a Numba hot path costs a few microseconds per order, well below
the load client's own cost, and needs no locking around the engine (threads would).

Each reply carries what its read cost: the handling's wall time (``gateway_ns``) and the thread's
CPU since the end of its previous read (``read_cpu_ns``: the loop's wait and wake-up, the
socket's read, the handlers, the write), both per message of the read, the CPU it ran on, and
when the handling began (``read_ns``, the monotonic clock the client shares: it splits a round
trip at the gateway's read; :mod:`twin.testbed.protocol`).

Robustness rules, each with a test in ``tests/twin/testbed``:

* a bad magic, version or length: one reject, then that connection is closed;
* an unknown message type, a sequence gap or a bad order id: a reject, the connection goes on;
* a truncated frame (the peer closes mid-frame) is dropped with the connection;
* a client that stops reading: once its unsent replies pass :data:`HIGH_WATER_BYTES` the gateway
  stops reading from it (backpressure on that client only); past :data:`MAX_BUFFER_BYTES` it is
  aborted. Other connections never wait for it;
* a vanished client's live orders are cancelled in the engine;
* a connection that sends no whole frame within ``handshake_timeout_s`` (default
  :data:`HANDSHAKE_TIMEOUT_S`), or none for ``idle_timeout_s`` (:data:`IDLE_TIMEOUT_S`), is
  closed: idle connections cannot hold every slot;
* one source address holds at most ``max_per_source`` connections (:data:`MAX_PER_SOURCE`);
  more are refused at once (counted in ``refused_source``);
* **one source address is one account.** The protocol has no logon, so the gateway risk-checks
  each source address as one member's account, the way a venue binds a session to its member:
  every connection of a source trades in the engine as that source's engine account (the
  frame's ``account`` is the client's own label, echoed back). The engine's per-(account,
  symbol) open-order limit (``max_open_orders``, :data:`MAX_OPEN_ORDERS`) then caps what one
  source can rest: with the defaults, at most a quarter of the book (4 symbols x 4,096 of
  65,536 rows), so a client filling the book rejects only its own orders
  (``REJ_MAX_OPEN_ORDERS``), and self-trade prevention spans a member's connections;
* the price window stays on each symbol's reference price (``engine_ext``): one far order
  cannot move it against the others;
* SIGTERM / SIGINT: stop accepting, stop reading, flush what is owed (up to ``drain_s``),
  close every connection, exit 0.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import socket
import sys
import time
from dataclasses import dataclass
from typing import cast

import numpy as np

from engine_ext import EngineConfig
from engine_ext.engine import new_state
from engine_ext.types import EVENT_DTYPE
from twin.errors import ConfigError
from twin.extras import Extra, require
from twin.testbed import _kernel
from twin.testbed.collector import freeze_startup
from twin.testbed.hoststat import current_cpu
from twin.testbed.protocol import FRAME_BYTES, ORDER_IDS_PER_CONNECTION, WIRE_DTYPE, decode

MAX_CONNECTIONS = 1024
READ_CPU_MAX_NS = 2**32 - 1  # a reply's read_cpu_ns saturates here (u32)
MAX_PER_SOURCE = 256
MAX_OPEN_ORDERS = 4096  # per source address and symbol
HANDSHAKE_TIMEOUT_S = 5.0
IDLE_TIMEOUT_S = 60.0
SWEEP_EVERY_S = 0.25  # how often idle connections are looked for
HIGH_WATER_BYTES = 1 << 20
MAX_BUFFER_BYTES = 16 << 20


@dataclass(frozen=True)
class GatewayLimits:
    """What one client may hold of the gateway (``twin testbed serve`` flags of the same names)."""

    max_per_source: int = MAX_PER_SOURCE  # connections of one source address
    handshake_timeout_s: float = HANDSHAKE_TIMEOUT_S  # until the first whole frame
    idle_timeout_s: float = IDLE_TIMEOUT_S  # between whole frames
    max_open_orders: int = MAX_OPEN_ORDERS  # resting orders of one source on one symbol

    def __post_init__(self) -> None:
        if not 1 <= self.max_per_source <= MAX_CONNECTIONS:
            raise ConfigError(f"max_per_source {self.max_per_source}: allowed 1..{MAX_CONNECTIONS}")
        if not (self.handshake_timeout_s > 0 and self.idle_timeout_s > 0):
            raise ConfigError("handshake and idle timeouts must be positive")
        if not 1 <= self.max_open_orders <= ORDER_IDS_PER_CONNECTION * MAX_CONNECTIONS:
            raise ConfigError(f"max_open_orders {self.max_open_orders}: must be positive")


@dataclass
class GatewayStats:
    """Counters of one gateway run (reported on exit)."""

    connections: int = 0
    frames_in: int = 0
    replies: int = 0
    reads: int = 0
    closed_bad_frame: int = 0
    aborted_slow: int = 0
    busy_ns: int = 0
    refused_full: int = 0
    refused_source: int = 0
    closed_idle: int = 0


class Gateway:
    """The engine, the connection slots and the counters shared by every connection."""

    def __init__(self, limits: GatewayLimits | None = None) -> None:
        self.limits = limits or GatewayLimits()
        self.per_source: dict[str, int] = {}
        self.config = EngineConfig(
            n_symbols=4,
            n_accounts=MAX_CONNECTIONS,  # one per source; a source holds at least a connection
            capacity_orders=1 << 16,
            max_order_id=MAX_CONNECTIONS * ORDER_IDS_PER_CONNECTION,
            max_open_orders=self.limits.max_open_orders,
        )
        self.state = new_state(self.config)
        self.account_of: dict[str, int] = {}  # source address -> its engine account
        self.free_accounts = list(range(self.config.n_accounts))[::-1]
        self.events = np.empty(self.config.capacity_orders + 2, dtype=EVENT_DTYPE)
        self.free_slots = list(range(min(MAX_CONNECTIONS, self.config.max_order_id // 4096)))[::-1]
        self.connections: set[_Connection] = set()
        self.stats = GatewayStats()
        # The thread's CPU clock at the end of the last read (ns): a read's CPU counts from it.
        self.read_cpu_mark = time.thread_time_ns()

    def join(self, source: str) -> int:
        """Count one more connection of ``source``; return its engine account."""
        self.per_source[source] = self.per_source.get(source, 0) + 1
        if source not in self.account_of:
            self.account_of[source] = self.free_accounts.pop()
        return self.account_of[source]

    def leave(self, source: str) -> None:
        """Count one connection of ``source`` less; its last one frees the account (whose
        orders the connections' own cancels removed) with its risk state zeroed."""
        left = self.per_source.get(source, 1) - 1
        if left > 0:
            self.per_source[source] = left
            return
        self.per_source.pop(source, None)
        account = self.account_of.pop(source)
        n = self.config.n_symbols
        self.state.accounts[account * n : (account + 1) * n] = 0
        self.free_accounts.append(account)

    def warm_up(self) -> None:
        """Compile (or load from cache) the kernels before the first client arrives."""
        frames = np.zeros(1, dtype=WIRE_DTYPE)
        out = np.zeros(1, dtype=WIRE_DTYPE)
        conn = _kernel.empty_connection_state()
        ro = decode(frames.tobytes())
        _kernel.handle_frames(self.state, ro, 0, 0, conn, out, self.events)
        _kernel.cancel_connection(self.state, 0, self.events)


class _Connection(asyncio.Protocol):
    """One client connection: its framing buffer, sequence state and order-id block."""

    def __init__(self, gateway: Gateway) -> None:
        self.gw = gateway
        self.transport: asyncio.Transport | None = None
        self.slot = -1
        self.account = -1  # the source's engine account
        self.pending = b""
        self.state = _kernel.empty_connection_state()
        self.out = np.zeros(64, dtype=WIRE_DTYPE)
        self.paused = False
        self.closing = False
        self.source = ""
        self.last_frame = time.monotonic()
        self.framed = False  # a whole frame has arrived

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports implement asyncio.Transport without subclassing it.
        tcp = cast(asyncio.Transport, transport)
        self.transport = tcp
        if not self.gw.free_slots:
            self.gw.stats.refused_full += 1
            tcp.abort()
            return
        peer = tcp.get_extra_info("peername")
        source = str(peer[0]) if peer else ""
        if self.gw.per_source.get(source, 0) >= self.gw.limits.max_per_source:
            self.gw.stats.refused_source += 1
            tcp.abort()
            return
        self.source = source
        self.account = self.gw.join(source)
        self.last_frame = time.monotonic()
        self.slot = self.gw.free_slots.pop()
        self.gw.connections.add(self)
        self.gw.stats.connections += 1
        sock = tcp.get_extra_info("socket")
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        tcp.set_write_buffer_limits(high=HIGH_WATER_BYTES)

    def data_received(self, data: bytes) -> None:
        if self.closing or self.transport is None:
            return
        start = time.perf_counter_ns()
        if self.pending:
            data = self.pending + data
        whole = len(data) - len(data) % FRAME_BYTES
        self.pending = data[whole:]
        if whole == 0:
            return
        self.framed = True
        self.last_frame = time.monotonic()
        frames = decode(data[:whole] if whole != len(data) else data)
        n = frames.shape[0]
        if self.out.shape[0] < n:
            self.out = np.zeros(max(n, 2 * self.out.shape[0]), dtype=WIRE_DTYPE)
        status, k = _kernel.handle_frames(
            self.gw.state, frames, self.slot, self.account, self.state, self.out, self.gw.events
        )
        elapsed = time.perf_counter_ns() - start
        cpu = time.thread_time_ns()
        read_cpu, self.gw.read_cpu_mark = cpu - self.gw.read_cpu_mark, cpu
        self.out["gateway_ns"][:k] = elapsed // max(k, 1)
        self.out["read_cpu_ns"][:k] = min(read_cpu // max(k, 1), READ_CPU_MAX_NS)
        self.out["reserved"][:k] = min(n, 0xFFFF)  # the batch this reply's request came in
        self.out["gateway_cpu"][:k] = max(0, current_cpu()) & 0xFF
        self.out["read_ns"][:k] = start
        self.transport.write(self.out[:k].tobytes())
        stats = self.gw.stats
        stats.reads += 1
        stats.frames_in += k
        stats.replies += k
        stats.busy_ns += elapsed
        if status == _kernel.STATUS_CLOSE:
            stats.closed_bad_frame += 1
            self.closing = True
            self.transport.close()
        elif self.transport.get_write_buffer_size() > MAX_BUFFER_BYTES:
            stats.aborted_slow += 1
            self.closing = True
            self.transport.abort()

    def eof_received(self) -> bool:
        # A half-closed peer gets nothing more; a partial frame in ``pending`` is dropped.
        return False

    def pause_writing(self) -> None:
        # The peer is not reading: stop reading its orders until it catches up.
        self.paused = True
        if self.transport is not None and not self.closing:
            self.transport.pause_reading()

    def resume_writing(self) -> None:
        self.paused = False
        if self.transport is not None and not self.closing:
            self.transport.resume_reading()

    def idle_for(self, now: float) -> float | None:
        """Seconds past its timeout (handshake or idle), or None while within it."""
        limits = self.gw.limits
        limit = limits.idle_timeout_s if self.framed else limits.handshake_timeout_s
        over = now - self.last_frame - limit
        return over if over > 0 else None

    def connection_lost(self, exc: Exception | None) -> None:
        if self.slot >= 0:
            _kernel.cancel_connection(self.gw.state, self.slot, self.gw.events)
            self.gw.free_slots.append(self.slot)
            self.slot = -1
        if self.source:
            self.gw.leave(self.source)
            self.source = ""
        self.gw.connections.discard(self)


async def _close_idle(gateway: Gateway) -> None:
    """Close connections past their handshake or idle timeout, every :data:`SWEEP_EVERY_S`."""
    while True:
        await asyncio.sleep(SWEEP_EVERY_S)
        now = time.monotonic()
        for conn in list(gateway.connections):
            if conn.transport is not None and not conn.closing and conn.idle_for(now):
                gateway.stats.closed_idle += 1
                conn.closing = True
                conn.transport.abort()


async def serve(
    host: str,
    port: int,
    *,
    ready: asyncio.Future[tuple[str, int]] | None = None,
    stop: asyncio.Event | None = None,
    drain_s: float = 2.0,
    announce: bool = True,
    limits: GatewayLimits | None = None,
) -> GatewayStats:
    """Serve until ``stop`` is set (or SIGTERM/SIGINT); return the run's counters."""
    loop = asyncio.get_running_loop()
    gateway = Gateway(limits)
    gateway.warm_up()
    freeze_startup()
    stop = stop or asyncio.Event()
    server = await loop.create_server(
        lambda: _Connection(gateway), host, port, reuse_address=True, backlog=1024
    )
    bound = server.sockets[0].getsockname()[:2]
    handled = []
    for sig in (signal.SIGTERM, signal.SIGINT):
        try:
            loop.add_signal_handler(sig, stop.set)
            handled.append(sig)
        except (RuntimeError, ValueError):  # not the main thread: the caller sets ``stop``
            pass
    if ready is not None:
        ready.set_result((bound[0], bound[1]))
    if announce:
        sys.stdout.write(f"twin testbed: listening on {bound[0]}:{bound[1]}\n")
        sys.stdout.flush()
    sweeper = asyncio.ensure_future(_close_idle(gateway))
    try:
        await stop.wait()
    finally:
        sweeper.cancel()
        for sig in handled:
            loop.remove_signal_handler(sig)
        server.close()
        for conn in list(gateway.connections):
            if conn.transport is not None:
                conn.closing = True
                conn.transport.pause_reading()
        deadline = loop.time() + drain_s
        while loop.time() < deadline and any(
            c.transport is not None and c.transport.get_write_buffer_size() > 0
            for c in gateway.connections
        ):
            await asyncio.sleep(0.01)
        for conn in list(gateway.connections):
            if conn.transport is not None:
                conn.transport.close()
        await server.wait_closed()
        await asyncio.sleep(0)
    return gateway.stats


def run_gateway(
    host: str, port: int, drain_s: float = 2.0, limits: GatewayLimits | None = None
) -> GatewayStats:
    """Run :func:`serve` on a fresh uvloop event loop until SIGTERM or SIGINT."""
    uvloop = require("uvloop", Extra.TESTBED, "the testbed gateway")
    return uvloop.run(serve(host, port, drain_s=drain_s, limits=limits))
