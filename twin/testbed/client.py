"""The load client: the published order loop over C TCP connections, recorded in HDR histograms.

Each cycle sends a GTC limit order that rests away from the market; on its ack the client sends
the cancel at once; the cancel ack ends the cycle (domain brief, "The order loop"). Two threads:

* the **sender** walks a schedule of cycle start times (Poisson or evenly spaced, at
  ``rate / 2`` cycles per second over all connections, cycle ``k`` on connection ``k % C``) and
  sleeps to each one (timer slack lowered to 1 us, see :func:`_precise_sleep`);
* the **receiver** waits on every socket (epoll), records round trips and sends the cancels.

**Open loop** (default): a cycle is sent at its scheduled time whatever the replies do, and the
order's round trip is measured from its *scheduled* time, so a client or gateway stall shows up
in the tail instead of hiding it (coordinated-omission correction). The cancel's round trip runs
from the ack's arrival, when the loop sends it. **Closed loop**: a connection sends its next
cycle only after the previous one finished, measured from the actual send (uncorrected, as
closed-loop tools report). Times come from ``time.perf_counter_ns`` (CLOCK_MONOTONIC).

Only cycles scheduled inside ``[warmup, warmup + duration)`` are recorded; the run then waits
(up to ``drain_s``) for every answer and counts what never came back as lost. The client's own
cost is reported (CPU per message, sender lateness): on a shared host it is part of the system.
"""

from __future__ import annotations

import ctypes
import os
import resource
import selectors
import socket
import threading
import time
from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np
from hdrh.histogram import HdrHistogram

from twin.histogram import new_hdr
from twin.testbed import protocol as P

KINDS = ("order", "cancel")
# Edges (us) of the idle-gap classes of :class:`_WorkByGap`: how long the process had been idle
# before a piece of work (a cold start after a long idle is slower: caches, frequency, vCPU wake).
GAP_EDGES_US = (0, 25, 50, 100, 200, 400, 800, 1600, 3200, 6400)
_PR_SET_TIMERSLACK = 29


@dataclass(frozen=True, kw_only=True)
class LoadConfig:
    """One load run's conditions (validated at construction)."""

    host: str
    port: int
    rate_msgs_per_s: float
    connections: int = 4
    duration_s: float = 5.0
    warmup_s: float = 1.0
    loop: str = "open"
    arrivals: str = "poisson"
    interval_s: float = 1.0
    drain_s: float = 5.0
    seed: int = 1
    gateway_pid: int | None = None

    def __post_init__(self) -> None:
        if not 0 < self.rate_msgs_per_s <= 10_000_000:
            raise ValueError(f"rate {self.rate_msgs_per_s} msg/s: allowed > 0 and <= 1e7")
        if not 1 <= self.connections <= 1000:
            raise ValueError(f"connections {self.connections}: allowed 1..1000")
        if not self.duration_s > 0 or self.warmup_s < 0 or not self.interval_s > 0:
            raise ValueError(
                f"duration {self.duration_s} s, warm-up {self.warmup_s} s, interval "
                f"{self.interval_s} s: need duration > 0, warm-up >= 0, interval > 0"
            )
        if self.loop not in ("open", "closed"):
            raise ValueError(f"loop {self.loop!r}: allowed open, closed")
        if self.arrivals not in ("poisson", "uniform"):
            raise ValueError(f"arrivals {self.arrivals!r}: allowed poisson, uniform")


def _precise_sleep() -> None:
    """Lower this thread's timer slack to 1 ns so short sleeps wake on time (Linux only)."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_TIMERSLACK, 1, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def _cpu_s_of(pid: int | None) -> float | None:
    """User + system CPU seconds of a process (None when unknown)."""
    if pid is None:
        usage = resource.getrusage(resource.RUSAGE_SELF)
        return usage.ru_utime + usage.ru_stime
    try:
        with open(f"/proc/{pid}/stat") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def host_load() -> dict[str, float]:
    """CPU jiffies (total, idle, steal) and load average, to report the run's conditions."""
    with open("/proc/stat") as fh:
        cpu = [int(x) for x in fh.readline().split()[1:]]
    with open("/proc/loadavg") as fh:
        load1 = float(fh.read().split()[0])
    steal = cpu[7] if len(cpu) > 7 else 0
    return {
        "total": float(sum(cpu)),
        "idle": float(cpu[3] + cpu[4]),
        "steal": float(steal),
        "loadavg_1m": load1,
    }


@dataclass
class _Conn:
    sock: socket.socket
    lock: threading.Lock = field(default_factory=threading.Lock)
    seq: int = 0
    free_ids: list[int] = field(default_factory=lambda: list(range(P.ORDER_IDS_PER_CONNECTION)))
    sched_ns: np.ndarray = field(
        default_factory=lambda: np.zeros(P.ORDER_IDS_PER_CONNECTION, dtype=np.int64)
    )
    # Per order id: idle gap of the gateway before the order's (then the cancel's) request, ns.
    gw_gap_ns: np.ndarray = field(
        default_factory=lambda: np.zeros(P.ORDER_IDS_PER_CONNECTION, dtype=np.int64)
    )
    idle: threading.Event = field(default_factory=threading.Event)
    pending: bytes = b""
    outstanding: int = 0


class _WorkByGap:
    """Per-message work times (ns) classed by the idle gap before them (:data:`GAP_EDGES_US`)."""

    def __init__(self) -> None:
        self.edges_ns = np.asarray(GAP_EDGES_US, dtype=np.int64) * 1000
        self.hists = [new_hdr() for _ in GAP_EDGES_US]

    def record(self, gap_ns: int, work_ns: int, count: int = 1) -> None:
        k = int(np.searchsorted(self.edges_ns, gap_ns, side="right")) - 1
        self.hists[max(k, 0)].record_value(max(1, work_ns), count)

    def summary(self) -> dict[str, list[float]]:
        """Per gap class: count, p50 and mean work (us); the fit of a cold-start penalty."""
        return {
            "gap_from_us": [float(e) for e in GAP_EDGES_US],
            "count": [float(h.get_total_count()) for h in self.hists],
            "p50_us": [h.get_value_at_percentile(50) / 1e3 for h in self.hists],
            "mean_us": [h.get_mean_value() / 1e3 for h in self.hists],
        }


class _Recorder:
    """Interval histograms (all round trips, and per kind) and the interval log they feed."""

    def __init__(self, log_path: str, base_ns: int, start_wall_s: float, interval_s: float):
        self.base_ns = base_ns
        self.interval_ns = int(interval_s * 1e9)
        self.next_ns = base_ns + self.interval_ns
        self.current = {"all": new_hdr(), **{k: new_hdr() for k in KINDS}}
        self.total = {"all": new_hdr(), **{k: new_hdr() for k in KINDS}}
        self.wall0 = start_wall_s
        self.log = open(log_path, "w")  # noqa: SIM115 - closed in close()
        from hdrh.log import HistogramLogWriter

        self.writer = HistogramLogWriter(self.log)
        self.writer.output_comment("[Logged with twin testbed load client]")
        self.writer.output_log_format_version()
        # hdrh's output_start_time mis-scales its argument; the line is written here instead.
        stamp = time.strftime("%a %b %d %H:%M:%S UTC %Y", time.gmtime(start_wall_s))
        self.log.write(f"#[StartTime: {start_wall_s:.3f} (seconds since epoch), {stamp}]\n")
        self.writer.output_legend()
        self.interval_start_ns = base_ns

    def record(self, kind: str, rtt_ns: int) -> None:
        v = max(1, rtt_ns)
        self.current["all"].record_value(v)
        self.current[kind].record_value(v)

    def maybe_rotate(self, now_ns: int) -> None:
        while now_ns >= self.next_ns:
            self.rotate(self.next_ns)
            self.next_ns += self.interval_ns

    def rotate(self, end_ns: int) -> None:
        hist = self.current["all"]
        start_s = self.wall0 + (self.interval_start_ns - self.base_ns) / 1e9
        end_s = self.wall0 + (end_ns - self.base_ns) / 1e9
        hist.set_start_time_stamp(int(start_s * 1000))
        hist.set_end_time_stamp(int(end_s * 1000))
        if hist.get_total_count() > 0:
            self.writer.output_interval_histogram(hist, max_value_unit_ratio=1000.0)
        for name, h in self.current.items():
            if h.get_total_count() > 0:
                self.total[name].add(h)
            h.reset()
        self.interval_start_ns = end_ns

    def close(self, now_ns: int) -> None:
        self.rotate(now_ns)
        self.log.close()


def _schedule(cfg: LoadConfig) -> np.ndarray:
    """Cycle start offsets (ns from the run's start) covering warm-up + duration."""
    rng = np.random.default_rng([cfg.seed, 0x4C4F4144])
    cycles_per_s = cfg.rate_msgs_per_s / 2.0
    span_s = cfg.warmup_s + cfg.duration_s
    n = int(cycles_per_s * span_s * 1.2) + 16
    if cfg.arrivals == "poisson":
        gaps = rng.exponential(1.0 / cycles_per_s, n)
    else:
        gaps = np.full(n, 1.0 / cycles_per_s)
        gaps[0] = rng.uniform(0, 1.0 / cycles_per_s)
    offsets = np.cumsum(gaps)
    return (offsets[offsets < span_s] * 1e9).astype(np.int64)


class LoadRun:
    """One run of the order loop against a gateway; :meth:`run` returns the summary dict."""

    def __init__(self, cfg: LoadConfig, out_dir: str):
        self.cfg = cfg
        self.out_dir = out_dir
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
        self.lag = new_hdr()
        self.gateway_ns = new_hdr()
        # In-process time of the client's own per-message work (wall clock, ns): the sender's
        # encode + write of one order, and the receiver's read + decode + handling of one reply
        # (an ack's handling includes encoding and writing its cancel).
        self.send_ns = new_hdr()
        self.recv_ns = new_hdr()
        # The same, classed by how long the process had been idle before (client: since its last
        # send or reply handled; gateway: since the client's previous request on any connection).
        self.by_gap = {"client": _WorkByGap(), "gateway": _WorkByGap()}
        self.last_active_ns = 0
        self.last_sent_ns = 0
        self.stop = threading.Event()
        self.done_sending = threading.Event()
        self.errors: list[BaseException] = []

    # -- connections ------------------------------------------------------------------------
    def _connect(self) -> list[_Conn]:
        conns = []
        for _ in range(self.cfg.connections):
            sock = socket.create_connection((self.cfg.host, self.cfg.port), timeout=10.0)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            sock.settimeout(None)
            conns.append(_Conn(sock))
            conns[-1].idle.set()
        return conns

    def _send(self, conn: _Conn, frame: np.ndarray) -> None:
        with conn.lock:
            conn.seq += 1
            frame["seq"] = conn.seq
            now = time.perf_counter_ns()
            conn.gw_gap_ns[int(frame["order_id"][0])] = now - self.last_sent_ns
            self.last_sent_ns = now
            conn.sock.sendall(frame.tobytes())

    # -- threads ----------------------------------------------------------------------------
    def _sender(self, conns: list[_Conn], offsets: np.ndarray, t0: int) -> None:
        _precise_sleep()
        closed = self.cfg.loop == "closed"
        frame = P.new_frames(1)
        frame["msg_type"] = P.MSG_NEW
        frame["qty_lots"] = 1
        frame["order_type"] = 0
        t_warm = t0 + int(self.cfg.warmup_s * 1e9)
        t_end = t_warm + int(self.cfg.duration_s * 1e9)
        c = len(conns)
        try:
            for k, off in enumerate(offsets):
                if self.stop.is_set():
                    break
                due = t0 + int(off)
                now = time.perf_counter_ns()
                if due > now:
                    time.sleep((due - now) / 1e9)
                    woke = time.perf_counter_ns()
                else:
                    woke = now
                conn = conns[k % c]
                if closed:
                    conn.idle.wait()
                    due = time.perf_counter_ns()
                    # A closed loop runs behind its schedule: it ends with the window instead.
                    if due >= t_end:
                        break
                if not conn.free_ids:
                    self.counts["skipped_no_id"] += 1
                    continue
                oid = conn.free_ids.pop()
                conn.sched_ns[oid] = due
                with conn.lock:
                    conn.outstanding += 1
                    conn.idle.clear()
                frame["order_id"] = oid
                frame["client_ts_ns"] = due
                frame["account"] = (k % c) % 1024
                frame["side"] = k & 1
                # Rest well away from the touch so the loop never trades (buy low, sell high).
                frame["price_ticks"] = 99_000 - (k % 50) if k & 1 == 0 else 101_000 + (k % 50)
                self._send(conn, frame)
                sent = time.perf_counter_ns()
                self.counts["orders_sent"] += 1
                if due >= t_warm:
                    self.recorded["orders_sent"] += 1
                    self.lag.record_value(max(1, woke - due))
                    if not closed:
                        self.send_ns.record_value(max(1, sent - woke))
                        self.by_gap["client"].record(woke - self.last_active_ns, sent - woke)
                self.last_active_ns = sent
        except BaseException as exc:  # reported by run(), never swallowed
            self.errors.append(exc)
        finally:
            self.done_sending.set()

    def _receiver(self, conns: list[_Conn], rec: _Recorder, t_warm: int, t_end: int) -> None:
        sel = selectors.DefaultSelector()
        for conn in conns:
            sel.register(conn.sock, selectors.EVENT_READ, conn)
        cancel = P.new_frames(1)
        cancel["msg_type"] = P.MSG_CANCEL
        try:
            while not self.stop.is_set():
                ready = sel.select(timeout=0.02)
                now = start = time.perf_counter_ns()
                gap = now - self.last_active_ns
                for key, _ in ready:
                    conn = cast(_Conn, key.data)
                    data = conn.sock.recv(1 << 16)
                    if not data:
                        raise ConnectionError("the gateway closed a connection")
                    if conn.pending:
                        data = conn.pending + data
                    whole = len(data) - len(data) % P.FRAME_BYTES
                    conn.pending = data[whole:]
                    replies = P.decode(data[:whole])
                    for r in replies:
                        self._on_reply(conn, r, now, rec, cancel, t_warm, t_end)
                    if t_warm <= now < t_end and len(replies):
                        # Per reply: this socket's read + decode + handling, shared evenly.
                        per = (time.perf_counter_ns() - start) // len(replies)
                        self.recv_ns.record_value(max(1, per), len(replies))
                        self.by_gap["client"].record(gap, per, len(replies))
                    start = self.last_active_ns = time.perf_counter_ns()
                    gap = 0
                rec.maybe_rotate(now)
                if self.done_sending.is_set() and all(c.outstanding == 0 for c in conns):
                    break
        except BaseException as exc:
            self.errors.append(exc)
        finally:
            sel.close()

    def _on_reply(self, conn, r, now, rec, cancel, t_warm, t_end) -> None:
        kind = int(r["msg_type"])
        oid = int(r["order_id"])
        in_window = t_warm <= conn.sched_ns[oid] < t_end
        gw = int(r["gateway_ns"])
        if kind == P.MSG_ACK:
            self.counts["acks"] += 1
            if in_window:
                self.recorded["acks"] += 1
                rec.record("order", now - int(r["client_ts_ns"]))
                self.gateway_ns.record_value(max(1, gw))
                self.by_gap["gateway"].record(int(conn.gw_gap_ns[oid]), gw)
            cancel["order_id"] = oid
            cancel["client_ts_ns"] = now
            cancel["account"] = r["account"]
            cancel["symbol"] = r["symbol"]
            self._send(conn, cancel)
            self.counts["cancels_sent"] += 1
            if in_window:
                self.recorded["cancels_sent"] += 1
            return
        if kind == P.MSG_CANCEL_ACK:
            self.counts["cancel_acks"] += 1
            if in_window:
                self.recorded["cancel_acks"] += 1
                rec.record("cancel", now - int(r["client_ts_ns"]))
                self.gateway_ns.record_value(max(1, gw))
                self.by_gap["gateway"].record(int(conn.gw_gap_ns[oid]), gw)
        elif kind == P.MSG_REJECT:
            if int(r["code"]) >= 100:
                self.counts["other_rejects"] += 1
            elif conn.sched_ns[oid] == int(r["client_ts_ns"]):
                self.counts["order_rejects"] += 1
            else:
                self.counts["cancel_rejects"] += 1
        else:
            self.counts["other_rejects"] += 1
            return
        conn.free_ids.append(oid)
        with conn.lock:
            conn.outstanding -= 1
            if conn.outstanding == 0:
                conn.idle.set()

    # -- the run ----------------------------------------------------------------------------
    def run(self) -> dict[str, Any]:
        cfg = self.cfg
        os.makedirs(self.out_dir, exist_ok=True)
        conns = self._connect()
        offsets = _schedule(cfg)
        t0 = time.perf_counter_ns() + 50_000_000
        wall0 = time.time() + 0.05
        t_warm = t0 + int(cfg.warmup_s * 1e9)
        t_end = t_warm + int(cfg.duration_s * 1e9)
        rec = _Recorder(
            os.path.join(self.out_dir, "rtt.hlog"), t_warm, wall0 + cfg.warmup_s, cfg.interval_s
        )
        sender = threading.Thread(target=self._sender, args=(conns, offsets, t0), daemon=True)
        receiver = threading.Thread(
            target=self._receiver, args=(conns, rec, t_warm, t_end), daemon=True
        )
        receiver.start()
        sender.start()
        # CPU and host counters over the measured window only.
        _sleep_until(t_warm)
        cpu0 = (_cpu_s_of(None), _cpu_s_of(cfg.gateway_pid))
        load0 = host_load()
        runnable = _sample_runnable_until(t_end)
        cpu1 = (_cpu_s_of(None), _cpu_s_of(cfg.gateway_pid))
        load1 = host_load()
        sender.join(timeout=cfg.drain_s + 30)
        receiver.join(timeout=cfg.drain_s)
        self.stop.set()
        receiver.join(timeout=5)
        rec.close(max(time.perf_counter_ns(), t_end))
        for conn in conns:
            conn.sock.close()
        if self.errors:
            raise self.errors[0]
        lost = sum(c.outstanding for c in conns)
        summary = self._summary(rec, lost, cpu0, cpu1, load0, load1)
        summary["host"]["runnable_mean"] = runnable
        write_results(self.out_dir, rec.total, summary)
        return summary

    def _summary(self, rec, lost, cpu0, cpu1, load0, load1) -> dict[str, Any]:
        cfg = self.cfg
        answered = self.recorded["acks"] + self.recorded["cancel_acks"]
        client_cpu = cpu1[0] - cpu0[0]
        gateway_cpu = None if cpu1[1] is None or cpu0[1] is None else cpu1[1] - cpu0[1]
        dt = load1["total"] - load0["total"]
        msgs = max(answered, 1)
        return {
            "tool": "twin testbed load",
            "conditions": {
                "host": cfg.host,
                "port": cfg.port,
                "rate_msgs_per_s": cfg.rate_msgs_per_s,
                "connections": cfg.connections,
                "duration_s": cfg.duration_s,
                "warmup_s": cfg.warmup_s,
                "loop": cfg.loop,
                "arrivals": cfg.arrivals,
                "interval_s": cfg.interval_s,
                "seed": cfg.seed,
                "payload_bytes": P.FRAME_BYTES,
                "cpus": os.cpu_count(),
                "kernel": os.uname().release,
                "coordinated_omission_corrected": cfg.loop == "open",
            },
            "counts": dict(self.counts),
            "recorded": dict(self.recorded),
            "lost": lost,
            "achieved_msgs_per_s": answered / cfg.duration_s,
            "rtt_us": percentiles_us(rec.total["all"]),
            "order_rtt_us": percentiles_us(rec.total["order"]),
            "cancel_rtt_us": percentiles_us(rec.total["cancel"]),
            "send_lag_us": percentiles_us(self.lag),
            "gateway_service_us": percentiles_us(self.gateway_ns),
            "client_send_us": percentiles_us(self.send_ns),
            "client_recv_us": percentiles_us(self.recv_ns),
            "work_by_idle_gap": {k: v.summary() for k, v in self.by_gap.items()},
            "client_cpu_us_per_msg": client_cpu * 1e6 / msgs,
            "gateway_cpu_us_per_msg": None if gateway_cpu is None else gateway_cpu * 1e6 / msgs,
            "host": {
                "steal_pct": 100.0 * (load1["steal"] - load0["steal"]) / dt if dt else 0.0,
                "busy_pct": 100.0 * (1 - (load1["idle"] - load0["idle"]) / dt) if dt else 0.0,
                "loadavg_1m": load1["loadavg_1m"],
            },
        }


SUMMARY_PERCENTILES = {"p50": 50.0, "p90": 90.0, "p95": 95.0, "p99": 99.0, "p99_9": 99.9}


def percentiles_us(hist: HdrHistogram) -> dict[str, float]:
    """The summary percentiles of an ns histogram, in us (empty dict when nothing recorded)."""
    n = hist.get_total_count()
    if n == 0:
        return {"count": 0}
    out = {k: hist.get_value_at_percentile(p) / 1e3 for k, p in SUMMARY_PERCENTILES.items()}
    out["max"] = hist.get_max_value() / 1e3
    out["mean"] = hist.get_mean_value() / 1e3
    out["count"] = n
    return out


def write_results(out_dir: str, totals: dict[str, HdrHistogram], summary: dict[str, Any]) -> None:
    """``rtt.hgrm`` (all round trips), ``order.hgrm``, ``cancel.hgrm`` and ``summary.json``."""
    from pathlib import Path

    from twin.output import hgrm_text, write_json, write_text

    out = Path(out_dir)
    names = {"all": "rtt.hgrm", "order": "order.hgrm", "cancel": "cancel.hgrm"}
    for name, hist in totals.items():
        if hist.get_total_count() > 0:
            counts = np.ctypeslib.as_array(hist.counts).astype(np.int64)
            write_text(out / names[name], hgrm_text(counts))
    write_json(out / "summary.json", summary)


def _runnable_threads() -> int:
    """Threads runnable on the host right now, not counting the caller.

    The fourth field of ``/proc/loadavg`` (``running/total``): a small file, cheap to read,
    unlike ``/proc/stat``, whose interrupt line makes each read cost the client real CPU.
    """
    with open("/proc/loadavg") as fh:
        return max(0, int(fh.read().split()[3].split("/")[0]) - 1)


def _sample_runnable_until(t_ns: int, every_s: float = 0.05) -> float:
    """Sleep until ``t_ns``, sampling the host's runnable threads; return their mean."""
    total = n = 0
    while (now := time.perf_counter_ns()) < t_ns:
        total += _runnable_threads()
        n += 1
        time.sleep(min(every_s, (t_ns - now) / 1e9))
    return total / n if n else 0.0


def _sleep_until(t_ns: int) -> None:
    while (now := time.perf_counter_ns()) < t_ns:
        time.sleep(min(0.05, (t_ns - now) / 1e9))
