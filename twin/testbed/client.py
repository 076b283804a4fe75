"""The load client: the published order loop over C TCP connections, in one thread.

Each cycle sends a GTC limit order that rests away from the market; on its ack the client sends
the cancel at once; the cancel ack ends the cycle (domain brief, "The order loop"). Cycles start
on a schedule (Poisson or evenly spaced, ``rate / 2`` cycles per second over all connections,
cycle ``k`` on connection ``k % C``).

**Burst probe** (``burst_sizes``, off by default): cycles start in groups instead. Group arrivals
follow the same process at ``rate / (2 x mean group size)`` groups per second (the mean message
rate stays ``rate``), group ``g`` has ``burst_sizes[g % len(burst_sizes)]`` cycles, all due at the
same instant and spread over the connections round-robin (cycle ``k`` still on connection
``k % C``), so each connection's share goes out in one ``send`` and the gateway reads several
frames per read: warm multi-event wake-ups of known sizes, which separate the marginal cost per
event from the per-wake-up cost (``work_by_batch``, ``work_by_batch_warm``). Open loop only.

**One thread, one wait.** The loop waits on every socket *and* on a timer armed at the next
scheduled send (:class:`twin.testbed.timer.WakeTimer`, nanosecond expiry) in one ``epoll``;
each wake-up reads every ready socket, handles the replies (queueing the cancels), sends the
orders now due, and writes each connection's queued frames with one ``send`` (frames packed
with :mod:`struct`, histograms filled per interval: :mod:`twin.testbed.recorder`).

**Open loop** (default): a cycle is sent when due whatever the replies do, and the order's round
trip is measured from its *scheduled* time, so a client or gateway stall shows up in the tail
instead of hiding it (coordinated-omission correction). The cancel's round trip runs from the
ack's arrival, when the loop sends it. **Closed loop**: a connection starts its next cycle only
after the previous one finished, measured from the actual send (uncorrected, as closed-loop
tools report). Times come from ``time.perf_counter_ns`` (CLOCK_MONOTONIC).

Only cycles scheduled inside ``[warmup, warmup + duration)`` are recorded; the run then waits
(up to ``drain_s``) for every answer and counts what never came back as lost. The run's
conditions are recorded with it (:mod:`twin.testbed.hoststat`): both processes' CPU time and
run-queue wait per message, the host's busy and steal shares, load average and runnable threads,
and ``same_cpu_share``, the share of replies handled on the CPU the client read them on.
Work per event by batch size (``work_by_batch``: the client's thread CPU per wake-up, the
gateway's ``gateway_ns`` per read) is also given for the warm batches alone
(``work_by_batch_warm``: the process idle for less than 50 us before it, the gap
``work_by_idle_gap`` classes by; for the gateway the gap before the first request of the
client's ``send`` that carried the request, which is the gateway's read when it reads one
send at a time).
"""

from __future__ import annotations

import os
import selectors
import socket
import struct
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from calibration.testbed.summary import LoadConditions, LoadSummary
from twin.errors import ConfigError, SimulationError
from twin.kinds import Arrivals, Loop
from twin.testbed import hoststat
from twin.testbed import protocol as P
from twin.testbed.collector import collector_off
from twin.testbed.recorder import (
    IntervalRecorder,
    compile_fold,
    summary_us,
    timing_us,
    warm_work_by_batch,
    work_by_batch,
    work_by_gap,
    write_results,
)
from twin.testbed.timer import WakeTimer, precise_timer_slack

# Fields of a reply the loop reads: msg_type, batch (the gateway read's frame count, in the
# reserved u16), client_ts_ns, order_id, gateway_ns, symbol, account, code, gateway_cpu,
# read_cpu_ns, read_ns (offsets 3, 6, 16, 24, 64, 72, 76, 83, 96, 100, 104; see
# :mod:`twin.testbed.protocol`).
REPLY = struct.Struct("<3xB2xH8xqq32xqii3xB12xB3xIq8x")
ORDER_AT_8 = struct.Struct("<Qqqq")  # seq, client_ts_ns, order_id, price_ticks
ORDER_AT_76 = struct.Struct("<iB")  # account, side
CANCEL_AT_8 = struct.Struct("<Qqq")  # seq, client_ts_ns, order_id
CANCEL_AT_72 = struct.Struct("<ii")  # symbol, account
SAMPLE_EVERY_NS = 50_000_000  # runnable-thread sampling period
MAX_BURST = P.ORDER_IDS_PER_CONNECTION  # largest group of cycles (burst probe)
MAX_WAIT_S = 0.05  # longest epoll wait: the loop also samples, rotates and checks its deadline


@dataclass(frozen=True, kw_only=True)
class LoadConfig:
    """One load run's conditions (validated at construction)."""

    host: str
    port: int
    rate_msgs_per_s: float
    connections: int = 4
    duration_s: float = 5.0
    warmup_s: float = 1.0
    loop: Loop = Loop.OPEN
    arrivals: Arrivals = Arrivals.POISSON
    interval_s: float = 1.0
    drain_s: float = 5.0
    seed: int = 1
    gateway_pid: int | None = None
    # Burst probe: cycles start in groups of these sizes, in turn (empty: one at a time).
    burst_sizes: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        for name, kind in (("loop", Loop), ("arrivals", Arrivals)):
            value = getattr(self, name)
            if value not in tuple(kind):
                allowed = ", ".join(kind)
                raise ConfigError(f"{name} {value!r}: allowed {allowed}")
            object.__setattr__(self, name, kind(value))
        sizes = tuple(self.burst_sizes)
        object.__setattr__(self, "burst_sizes", sizes)
        if any(isinstance(n, bool) or not isinstance(n, int) for n in sizes) or not all(
            1 <= n <= MAX_BURST for n in sizes
        ):
            raise ConfigError(f"burst sizes {list(sizes)}: allowed whole numbers 1..{MAX_BURST}")
        if sizes and self.loop != Loop.OPEN:
            raise ConfigError(f"burst sizes {list(sizes)}: groups of cycles need the open loop")
        if not 0 < self.rate_msgs_per_s <= 10_000_000:
            raise ConfigError(f"rate {self.rate_msgs_per_s} msg/s: allowed > 0 and <= 1e7")
        if not 1 <= self.connections <= 1000:
            raise ConfigError(f"connections {self.connections}: allowed 1..1000")
        if not self.duration_s > 0 or self.warmup_s < 0 or not self.interval_s > 0:
            raise ConfigError(
                f"duration {self.duration_s} s, warm-up {self.warmup_s} s, interval "
                f"{self.interval_s} s: need duration > 0, warm-up >= 0, interval > 0"
            )


def _template(msg_type: int) -> bytes:
    frame = P.new_frames(1)
    frame["msg_type"] = msg_type
    if msg_type == P.MSG_NEW:
        frame["qty_lots"] = 1
    return frame.tobytes()


ORDER_TEMPLATE = _template(P.MSG_NEW)
CANCEL_TEMPLATE = _template(P.MSG_CANCEL)


@dataclass(eq=False)
class _Conn:
    """One connection's socket, sequence, order ids and queued outbound frames."""

    sock: socket.socket
    seq: int = 0
    free_ids: list[int] = field(default_factory=lambda: list(range(P.ORDER_IDS_PER_CONNECTION)))
    # Per order id: the cycle's scheduled start (ns), the gateway's idle gap before the order's
    # (then the cancel's) request (ns), and before the first request of the same ``send`` (the
    # read that carries it: the requests after the first in one send see a gap of 0).
    sched_ns: list[int] = field(default_factory=lambda: [0] * P.ORDER_IDS_PER_CONNECTION)
    gw_gap_ns: list[int] = field(default_factory=lambda: [0] * P.ORDER_IDS_PER_CONNECTION)
    gw_read_gap_ns: list[int] = field(default_factory=lambda: [0] * P.ORDER_IDS_PER_CONNECTION)
    # ... and the host's idle gap before the busy period the request went out in (ns).
    host_gap_ns: list[int] = field(default_factory=lambda: [0] * P.ORDER_IDS_PER_CONNECTION)
    out: bytearray = field(default_factory=bytearray)
    out_gap: int = 0  # the gap before the first request queued in ``out``
    pending: bytes = b""
    outstanding: int = 0

    def flush(self) -> None:
        try:
            self.sock.sendall(self.out)
        except OSError as exc:  # reset by the gateway, or the network gone
            raise SimulationError(
                f"the gateway dropped a connection ({exc.strerror or exc}); "
                "the run is unfinished: no summary is written"
            ) from None
        self.out.clear()


def _schedule(cfg: LoadConfig) -> np.ndarray:
    """Cycle start offsets (ns from the run's start) covering warm-up + duration.

    With ``burst_sizes`` the arrivals are groups' (at ``rate / (2 x mean size)``), each offset
    repeated for the group's cycles.
    """
    rng = np.random.default_rng([cfg.seed, 0x4C4F4144])
    sizes = cfg.burst_sizes
    # A group start per arrival; one cycle per group without a burst (the default schedule).
    cycles_per_s = cfg.rate_msgs_per_s / 2.0 / (float(np.mean(sizes)) if sizes else 1.0)
    span_s = cfg.warmup_s + cfg.duration_s
    n = int(cycles_per_s * span_s * 1.2) + 16
    if cfg.arrivals == Arrivals.POISSON:
        gaps = rng.exponential(1.0 / cycles_per_s, n)
    else:
        gaps = np.full(n, 1.0 / cycles_per_s)
        gaps[0] = rng.uniform(0, 1.0 / cycles_per_s)
    offsets = np.cumsum(gaps)
    starts = (offsets[offsets < span_s] * 1e9).astype(np.int64)
    if not sizes:
        return starts
    return np.repeat(starts, np.resize(np.asarray(sizes, dtype=np.int64), len(starts)))


@dataclass
class _Timings:
    """What the loop appends per message or per wake-up (integer ns), summarised at the end."""

    lag: list[int] = field(default_factory=list)  # wake-up lateness of each order
    gateway: list[int] = field(default_factory=list)  # gateway_ns of each reply
    # Each round trip split at the gateway's read (read_ns): from its start (the order's
    # scheduled time, the cancel's ack) to the read, and from the read to the client's.
    to_gateway: list[int] = field(default_factory=list)
    from_gateway: list[int] = field(default_factory=list)
    gateway_gap: list[int] = field(default_factory=list)  # gateway idle gap before its request
    gateway_read_gap: list[int] = field(default_factory=list)  # ... before its request's send
    gateway_batch: list[int] = field(default_factory=list)  # frames in that request's read
    send: list[int] = field(default_factory=list)  # per order: write work (one per wake-up)
    send_n: list[int] = field(default_factory=list)
    send_gap: list[int] = field(default_factory=list)
    recv: list[int] = field(default_factory=list)  # per reply: read + handling (one per wake)
    recv_n: list[int] = field(default_factory=list)
    recv_gap: list[int] = field(default_factory=list)
    wake_events: list[int] = field(default_factory=list)  # per busy wake-up: replies + orders
    # Its thread CPU time per event: unlike wall time, not stretched by a preemption, which
    # at a low rate is what makes a batch (replies pile up while the thread is off its core).
    wake_work: list[int] = field(default_factory=list)
    wake_gap: list[int] = field(default_factory=list)  # its idle gap (as ``recv_gap``)
    # Per busy wake-up: its whole thread CPU and the host's idle gap before its busy period;
    # per reply: the gateway's CPU for its read (a message of it) and the same gap at the send.
    wake_cpu: list[int] = field(default_factory=list)
    host_gap: list[int] = field(default_factory=list)
    gateway_read_cpu: list[int] = field(default_factory=list)
    gateway_host_gap: list[int] = field(default_factory=list)
    wakeups: int = 0
    runnable: list[int] = field(default_factory=list)
    # Replies read, and those the gateway had handled on the CPU the client read them on.
    placed: int = 0
    same_cpu: int = 0


@dataclass
class _Window:
    """Process and host counters at the start and the end of the measured window."""

    client: list[hoststat.ProcessTimes | None] = field(default_factory=list)
    gateway: list[hoststat.ProcessTimes | None] = field(default_factory=list)
    host: list[hoststat.HostCounters] = field(default_factory=list)
    wakeups: list[int] = field(default_factory=list)

    def mark(self, gateway_pid: int | None, wakeups: int) -> None:
        self.client.append(hoststat.process_times())
        self.gateway.append(hoststat.process_times(gateway_pid) if gateway_pid else None)
        self.host.append(hoststat.host_counters())
        self.wakeups.append(wakeups)


class LoadRun:
    """One run of the order loop against a gateway; :meth:`run` returns the summary dict."""

    def __init__(self, cfg: LoadConfig, out_dir: str | Path):
        self.cfg = cfg
        self.out_dir = Path(out_dir)
        self.counts = {
            "orders_sent": 0,
            "acks": 0,
            "order_rejects": 0,
            "cancels_sent": 0,
            "cancel_acks": 0,
            "cancel_rejects": 0,
            "other_rejects": 0,
            "skipped_no_id": 0,
        }
        self.recorded = {"orders_sent": 0, "acks": 0, "cancels_sent": 0, "cancel_acks": 0}
        self.timings = _Timings()
        self.window = _Window()
        self.last_request_ns = 0
        # Cycles sent and not yet ended (cancel ack or reject: the connections' ``outstanding``
        # summed, kept here for the loop), and the host's idle gap before the current busy
        # period (ns): since the last wake-up that left none in flight.
        self.in_flight = 0
        self.host_gap_ns = 0
        self._conns: list[_Conn] = []

    def _connect(self) -> list[_Conn]:
        conns = []
        for _ in range(self.cfg.connections):
            try:
                sock = socket.create_connection((self.cfg.host, self.cfg.port), timeout=10.0)
            except OSError as exc:  # nothing listening, or the network gone
                raise SimulationError(
                    f"cannot reach the gateway at {self.cfg.host}:{self.cfg.port} "
                    f"({exc.strerror or exc})"
                ) from None
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            sock.settimeout(None)
            conns.append(_Conn(sock))
        return conns

    # -- the loop ---------------------------------------------------------------------------
    def _replies(
        self,
        conn: _Conn,
        data: bytes,
        now: int,
        rec: IntervalRecorder,
        window: tuple[int, int],
        cpu: int,
    ) -> int:
        """Handle the whole frames of one read (the cancels are queued); return their count.
        ``window``: the recorded cycles' scheduled times; ``cpu``: where the client runs."""
        t_warm, t_end = window
        if conn.pending:
            data = conn.pending + data
        whole = len(data) - len(data) % P.FRAME_BYTES
        conn.pending = data[whole:]
        counts, recorded, tm = self.counts, self.recorded, self.timings
        out = conn.out
        n = 0
        for (
            mtype,
            batch,
            ts,
            oid,
            gw,
            symbol,
            account,
            code,
            gw_cpu,
            gw_read_cpu,
            gw_read_ns,
        ) in REPLY.iter_unpack(memoryview(data)[:whole]):
            n += 1
            in_window = t_warm <= conn.sched_ns[oid] < t_end
            if in_window:
                tm.placed += 1
                tm.same_cpu += gw_cpu == cpu
            if mtype == P.MSG_ACK:
                counts["acks"] += 1
                if in_window:
                    recorded["acks"] += 1
                    recorded["cancels_sent"] += 1
                    rec.pending["order"].append(now - ts)
                    tm.to_gateway.append(gw_read_ns - ts)
                    tm.from_gateway.append(now - gw_read_ns)
                    tm.gateway_read_cpu.append(gw_read_cpu)
                    tm.gateway_host_gap.append(conn.host_gap_ns[oid])
                    tm.gateway.append(gw)
                    tm.gateway_batch.append(batch)
                    tm.gateway_gap.append(conn.gw_gap_ns[oid])
                    tm.gateway_read_gap.append(conn.gw_read_gap_ns[oid])
                conn.seq += 1
                pos = len(out)
                out += CANCEL_TEMPLATE
                CANCEL_AT_8.pack_into(out, pos + 8, conn.seq, now, oid)
                CANCEL_AT_72.pack_into(out, pos + 72, symbol, account)
                gap = now - self.last_request_ns
                if pos == 0:
                    conn.out_gap = gap
                conn.gw_gap_ns[oid] = gap
                conn.gw_read_gap_ns[oid] = conn.out_gap
                conn.host_gap_ns[oid] = self.host_gap_ns
                self.last_request_ns = now
                counts["cancels_sent"] += 1
                continue
            if mtype == P.MSG_CANCEL_ACK:
                counts["cancel_acks"] += 1
                if in_window:
                    recorded["cancel_acks"] += 1
                    rec.pending["cancel"].append(now - ts)
                    tm.to_gateway.append(gw_read_ns - ts)
                    tm.from_gateway.append(now - gw_read_ns)
                    tm.gateway_read_cpu.append(gw_read_cpu)
                    tm.gateway_host_gap.append(conn.host_gap_ns[oid])
                    tm.gateway.append(gw)
                    tm.gateway_batch.append(batch)
                    tm.gateway_gap.append(conn.gw_gap_ns[oid])
                    tm.gateway_read_gap.append(conn.gw_read_gap_ns[oid])
            elif mtype == P.MSG_REJECT and code < 100:
                if conn.sched_ns[oid] == ts:
                    counts["order_rejects"] += 1
                else:
                    counts["cancel_rejects"] += 1
            else:
                counts["other_rejects"] += 1
                continue
            conn.free_ids.append(oid)
            conn.outstanding -= 1
            self.in_flight -= 1
        return n

    def _order(self, conn: _Conn, k: int, due: int, now: int) -> None:
        """Queue cycle ``k``'s order on ``conn`` (scheduled at ``due``)."""
        oid = conn.free_ids.pop()
        conn.sched_ns[oid] = due
        conn.outstanding += 1
        self.in_flight += 1
        conn.seq += 1
        out = conn.out
        pos = len(out)
        out += ORDER_TEMPLATE
        # Rest well away from the touch so the loop never trades (buy low, sell high).
        price = 99_000 - (k % 50) if k & 1 == 0 else 101_000 + (k % 50)
        ORDER_AT_8.pack_into(out, pos + 8, conn.seq, due, oid, price)
        ORDER_AT_76.pack_into(out, pos + 76, (k % len(self._conns)) % 1024, k & 1)
        gap = now - self.last_request_ns
        if pos == 0:
            conn.out_gap = gap
        conn.gw_gap_ns[oid] = gap
        conn.gw_read_gap_ns[oid] = conn.out_gap
        conn.host_gap_ns[oid] = self.host_gap_ns
        self.last_request_ns = now

    def _loop(self, due_ns: list[int], rec: IntervalRecorder, t_warm: int, t_end: int) -> None:
        cfg, conns, tm, counts = self.cfg, self._conns, self.timings, self.counts
        closed = cfg.loop == Loop.CLOSED
        c = len(conns)
        timer = WakeTimer()
        sel = selectors.EpollSelector()
        try:
            sel.register(timer, selectors.EVENT_READ, None)
            for conn in conns:
                sel.register(conn.sock, selectors.EVENT_READ, conn)
            marks = [t_warm, t_end]  # window edges still to be marked
            next_sample = t_warm
            deadline = t_end + int(cfg.drain_s * 1e9)
            last_active = time.perf_counter_ns()
            k, n_due = 0, len(due_ns)
            blocked = False
            while True:
                wake_at = marks[0] if marks else deadline
                if k < n_due and not blocked:
                    wake_at = min(wake_at, due_ns[k])
                timer.arm_at(wake_at)
                ready = sel.select(MAX_WAIT_S)
                woke = time.perf_counter_ns()
                cpu_woke = time.thread_time_ns()
                on_cpu = hoststat.current_cpu()
                tm.wakeups += 1
                if self.in_flight == 0:  # the host had nothing of ours since the last busy one
                    self.host_gap_ns = woke - last_active
                rec.maybe_rotate(woke)
                replies = 0
                for key, _ in ready:
                    conn = key.data
                    if conn is None:
                        timer.clear()
                        continue
                    try:
                        data = conn.sock.recv(1 << 16)
                    except OSError as exc:  # reset by the gateway, or the network gone
                        raise SimulationError(
                            f"the gateway dropped a connection ({exc.strerror or exc}); "
                            "the run is unfinished: no summary is written"
                        ) from None
                    if not data:
                        raise SimulationError(
                            "the gateway closed a connection; "
                            "the run is unfinished: no summary is written"
                        )
                    replies += self._replies(conn, data, woke, rec, (t_warm, t_end), on_cpu)
                if replies:
                    for conn in conns:
                        if conn.out:
                            conn.flush()
                t_r = time.perf_counter_ns()
                sent = sent_in_window = 0
                blocked = False
                while k < n_due and due_ns[k] <= t_r:
                    conn = conns[k % c]
                    due = due_ns[k]
                    if closed:
                        # Behind its schedule, a closed loop waits for the connection's
                        # previous cycle, then sends at once; it ends with the window.
                        blocked = conn.outstanding > 0
                        if blocked:
                            break
                        due = t_r
                        if due >= t_end:
                            k = n_due
                            break
                    if not conn.free_ids:
                        counts["skipped_no_id"] += 1
                        k += 1
                        continue
                    self._order(conn, k, due, t_r)
                    counts["orders_sent"] += 1
                    if t_warm <= due < t_end:
                        self.recorded["orders_sent"] += 1
                        sent_in_window += 1
                        tm.lag.append(max(1, woke - due))
                    sent += 1
                    k += 1
                if sent:
                    for conn in conns:
                        if conn.out:
                            conn.flush()
                t_s = time.perf_counter_ns()
                cpu_done = time.thread_time_ns()
                if replies and t_warm <= woke < t_end:
                    tm.recv.append((t_r - woke) // replies)
                    tm.recv_n.append(replies)
                    tm.recv_gap.append(woke - last_active)
                if sent_in_window:
                    tm.send.append((t_s - t_r) // sent)
                    tm.send_n.append(sent_in_window)
                    tm.send_gap.append(0 if replies else woke - last_active)
                if (replies or sent_in_window) and t_warm <= woke < t_end:
                    tm.wake_events.append(replies + sent)
                    tm.wake_work.append((cpu_done - cpu_woke) // (replies + sent))
                    tm.wake_gap.append(woke - last_active)
                    tm.wake_cpu.append(cpu_done - cpu_woke)
                    tm.host_gap.append(self.host_gap_ns)
                if replies or sent:
                    last_active = t_s
                while marks and woke >= marks[0]:
                    marks.pop(0)
                    self.window.mark(cfg.gateway_pid, tm.wakeups)
                if t_warm <= woke < t_end and woke >= next_sample:
                    tm.runnable.append(hoststat.runnable_threads())
                    next_sample = woke + SAMPLE_EVERY_NS
                done = k >= n_due and all(conn.outstanding == 0 for conn in conns)
                if (done and not marks) or woke >= deadline:
                    break
        finally:
            sel.close()
            timer.close()

    # -- the run ----------------------------------------------------------------------------
    def run(self) -> LoadSummary:
        cfg = self.cfg
        precise_timer_slack()
        os.makedirs(self.out_dir, exist_ok=True)
        self._conns = self._connect()
        # The fold's kernel compiled and the heap collected before the schedule starts: neither
        # may make its first sends late.
        compile_fold()
        try:
            with collector_off():
                t0 = time.perf_counter_ns() + 50_000_000
                wall0 = time.time() + 0.05
                due_ns = (t0 + _schedule(cfg)).tolist()
                t_warm = t0 + int(cfg.warmup_s * 1e9)
                t_end = t_warm + int(cfg.duration_s * 1e9)
                rec = IntervalRecorder(
                    self.out_dir / "rtt.hlog", t_warm, wall0 + cfg.warmup_s, cfg.interval_s
                )
                try:
                    self._loop(due_ns, rec, t_warm, t_end)
                finally:
                    totals = rec.close(max(time.perf_counter_ns(), t_end))
        finally:
            for conn in self._conns:
                conn.sock.close()
        lost = sum(conn.outstanding for conn in self._conns)
        summary = self._summary(totals, lost)
        write_results(self.out_dir, totals, summary)
        return summary

    def _per_msg_us(
        self, times: list[hoststat.ProcessTimes | None], msgs: int
    ) -> tuple[float | None, float | None]:
        """CPU and run-queue wait (us) per answered message over the window."""
        if len(times) < 2 or times[0] is None or times[1] is None:
            return None, None
        a, b = times[0], times[1]
        return (b.cpu_ns - a.cpu_ns) / 1e3 / msgs, (b.wait_ns - a.wait_ns) / 1e3 / msgs

    def _summary(self, totals: dict[str, Any], lost: int) -> LoadSummary:
        cfg, tm, win = self.cfg, self.timings, self.window
        answered = self.recorded["acks"] + self.recorded["cancel_acks"]
        msgs = max(answered, 1)
        client_cpu, client_wait = self._per_msg_us(win.client, msgs)
        gateway_cpu, gateway_wait = self._per_msg_us(win.gateway, msgs)
        shares = hoststat.host_shares(win.host[0], win.host[-1]) if win.host else {}
        wakeups = win.wakeups[-1] - win.wakeups[0] if len(win.wakeups) > 1 else 0
        return LoadSummary(
            conditions=LoadConditions(
                host=cfg.host,
                port=cfg.port,
                rate_msgs_per_s=cfg.rate_msgs_per_s,
                connections=cfg.connections,
                duration_s=cfg.duration_s,
                warmup_s=cfg.warmup_s,
                loop=cfg.loop,
                arrivals=cfg.arrivals,
                interval_s=cfg.interval_s,
                seed=cfg.seed,
                payload_bytes=P.FRAME_BYTES,
                cpus=os.cpu_count() or 1,
                kernel=os.uname().release,
                client="one thread, epoll + timerfd",
                coordinated_omission_corrected=cfg.loop == Loop.OPEN,
                burst_sizes=tuple(cfg.burst_sizes),
            ),
            counts=dict(self.counts),
            recorded=dict(self.recorded),
            lost=lost,
            achieved_msgs_per_s=answered / cfg.duration_s,
            rtt_us=summary_us(totals["all"]),
            order_rtt_us=summary_us(totals["order"]),
            cancel_rtt_us=summary_us(totals["cancel"]),
            send_lag_us=timing_us(tm.lag),
            gateway_service_us=timing_us(tm.gateway),
            to_gateway_us=timing_us(tm.to_gateway),
            from_gateway_us=timing_us(tm.from_gateway),
            client_send_us=timing_us(tm.send, tm.send_n),
            client_recv_us=timing_us(tm.recv, tm.recv_n),
            work_by_idle_gap={
                "client": work_by_gap(
                    tm.recv_gap + tm.send_gap, tm.recv + tm.send, tm.recv_n + tm.send_n
                ),
                "gateway": work_by_gap(tm.gateway_gap, tm.gateway),
            },
            work_by_batch={
                "client": work_by_batch(tm.wake_events, tm.wake_work, tm.wake_events),
                "gateway": work_by_batch(tm.gateway_batch, tm.gateway, [1] * len(tm.gateway_batch)),
            },
            work_by_batch_warm={
                "client": warm_work_by_batch(
                    tm.wake_events, tm.wake_work, tm.wake_events, tm.wake_gap
                ),
                "gateway": warm_work_by_batch(
                    tm.gateway_batch, tm.gateway, [1] * len(tm.gateway), tm.gateway_read_gap
                ),
            },
            client_cpu_us_per_msg=client_cpu,
            gateway_cpu_us_per_msg=gateway_cpu,
            client_runqueue_us_per_msg=client_wait,
            gateway_runqueue_us_per_msg=gateway_wait,
            client_wakeups_per_msg=wakeups / msgs,
            cpu_by_host_gap={
                "client": work_by_gap(tm.host_gap, tm.wake_cpu),
                "gateway": work_by_gap(tm.gateway_host_gap, tm.gateway_read_cpu),
            },
            host={
                **shares,
                "loadavg_1m_start": win.host[0].loadavg_1m if win.host else None,
                "loadavg_1m": win.host[-1].loadavg_1m if win.host else None,
                "runnable_mean": float(np.mean(tm.runnable)) if tm.runnable else 0.0,
                "same_cpu_share": tm.same_cpu / tm.placed if tm.placed else None,
            },
        )
