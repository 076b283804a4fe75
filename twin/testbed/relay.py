"""A delaying relay: a userspace stand-in for one fabric hop (this kernel has no ``netem``).

``python -m twin testbed relay --listen HOST:PORT --to HOST:PORT --protocol udp|tcp`` forwards
every datagram (UDP) or every chunk read from a connection (TCP) to the other side after a
random delay, and the replies back the same way. One thread, one ``selectors`` loop.

**Delay distribution**: ``floor + Exp(mean)`` microseconds per message and direction
(defaults 20 + Exp(10) us). A cut-through fabric hop is a fixed switching and propagation time
plus the wait behind other traffic in the switch's queue, whose distribution at moderate load is
close to exponential (the M/M/1 waiting time); a shifted exponential is the simplest law with
both, and its parameters are the model's (``local_relay_floor_us``, ``local_relay_mean_us``) so
nothing about it has to be fitted. Each direction stays FIFO (a link does not reorder): a
message leaves no earlier than the one ahead of it.

**Its own cost**, which the model must include, is measured by the relay itself and written as
JSON to ``--stats`` on SIGTERM: per event (one read, or one write), the **work** on the relay's
one thread (a single-server station: two events per message and direction) and the **lateness**
(send time minus the drawn deadline: the polling loop's delay and the queue behind other messages),
the reads' and the writes' work apart (``read_work``, ``write_work``: a write on loopback
runs the receiver's side too, waking its thread), and each read's work by how long the relay
had slept before it (``reads_by_idle_gap``: the
first read after a blocking wait takes that wait, the others none; classes of
:data:`twin.testbed.recorder.GAP_EDGES_US`), and each write's by the sleep before the read whose
data it forwards (``writes_by_read_gap``, from 2026-11-28 19:30), from which a cold start of its
work and its time constant can be fitted.
While it holds a message the relay polls instead of sleeping (a timed sleep on this 2-vCPU VM
woke 160 us late at p90, more than the delay itself), so it burns a core only while messages are
in flight.
"""

from __future__ import annotations

import heapq
import json
import random
import selectors
import signal
import socket
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from twin.atomic import write_json
from twin.errors import ConfigError
from twin.testbed.recorder import work_by_gap

CHUNK = 65536
Address = tuple[str, int]


@dataclass(frozen=True)
class RelayDelay:
    """``floor_us + Exp(mean_us)`` per message and direction."""

    floor_us: float = 20.0
    mean_us: float = 10.0
    # Sleep until this long before a held message is due, then spin (inf: always spin). Spinning
    # keeps a short delay exact but burns a core; for delays of a millisecond and more, waking
    # a little early and spinning the rest costs the core only that margin per message.
    spin_us: float = float("inf")

    def __post_init__(self) -> None:
        if not (self.floor_us >= 0 and self.mean_us >= 0 and self.spin_us >= 0):
            raise ConfigError(
                f"relay delay floor {self.floor_us} us, mean {self.mean_us} us, spin "
                f"{self.spin_us} us: all >= 0"
            )


class _Relay:
    def __init__(self, delay: RelayDelay, seed: int) -> None:
        self.delay = delay
        self.rng = random.Random(seed)
        self.selector = selectors.DefaultSelector()
        # (deadline, sequence, socket, data, address, how long the relay slept before the read)
        self.queue: list[tuple[float, int, socket.socket, bytes, Address | None, int]] = []
        self.last_deadline: dict[int, float] = {}
        self.sequence = 0
        self.running = True
        self.lateness_ns: list[int] = []
        # Each read's and each write's work, and how long the relay had slept before each read
        # (0 but for the first read after a blocking wait).
        self.read_work_ns: list[int] = []
        self.read_slept_ns: list[int] = []
        self.write_work_ns: list[int] = []
        self.write_slept_ns: list[int] = []  # each write's read's sleep before it
        self.slept_ns = 0

    def read_done(self, started_ns: int) -> None:
        """Count a read that started at ``started_ns`` and ends now."""
        self.read_work_ns.append(time.monotonic_ns() - started_ns)
        self.read_slept_ns.append(self.slept_ns)
        self.slept_ns = 0

    def schedule(
        self, out: socket.socket, data: bytes, address: Address | None, t_read: int
    ) -> None:
        mean = self.delay.mean_us
        drawn = self.delay.floor_us + (self.rng.expovariate(1.0 / mean) if mean > 0 else 0.0)
        deadline = max(t_read / 1e9 + drawn * 1e-6, self.last_deadline.get(out.fileno(), 0.0))
        self.last_deadline[out.fileno()] = deadline
        self.sequence += 1
        slept = self.read_slept_ns[-1] if self.read_slept_ns else 0
        heapq.heappush(self.queue, (deadline, self.sequence, out, data, address, slept))

    def flush_due(self) -> None:
        while self.queue and self.queue[0][0] <= time.monotonic_ns() / 1e9:
            deadline, _, out, data, address, slept = heapq.heappop(self.queue)
            start = time.monotonic_ns()
            self.lateness_ns.append(int(start - deadline * 1e9))
            try:
                if address is None:
                    out.sendall(data)
                else:
                    out.sendto(data, address)
            except OSError:
                continue  # the peer went away; the other side sees it close
            self.write_work_ns.append(time.monotonic_ns() - start)
            self.write_slept_ns.append(slept)

    def timeout(self) -> float | None:
        """Block while nothing is held; while a message waits, sleep until ``spin_us`` before
        its deadline, then poll (spin)."""
        if not self.queue:
            return None
        ahead = self.queue[0][0] - time.monotonic_ns() / 1e9 - self.delay.spin_us * 1e-6
        return max(0.0, ahead)

    def loop(self) -> None:
        """Relay until :attr:`running` is cleared (between two events: nothing half done)."""
        while self.running:
            timeout = self.timeout()
            blocked = time.monotonic_ns() if timeout is None else None
            ready = self.selector.select(timeout)
            if blocked is not None:
                self.slept_ns = time.monotonic_ns() - blocked
            for key, _ in ready:
                key.data(key.fileobj)
            self.flush_due()

    def stats(self) -> dict[str, object]:
        def pct(values: list[int]) -> dict[str, float]:
            if not values:
                return {"count": 0}
            arr = np.asarray(values, dtype=np.float64) / 1e3
            return {
                "count": int(arr.size),
                "mean_us": float(arr.mean()),
                **{f"p{p}_us": float(np.percentile(arr, p)) for p in (50, 90, 99)},
            }

        return {
            "delay": {"floor_us": self.delay.floor_us, "mean_us": self.delay.mean_us},
            "work": pct(self.read_work_ns + self.write_work_ns),
            "lateness": pct(self.lateness_ns),
            "read_work": pct(self.read_work_ns),
            "write_work": pct(self.write_work_ns),
            "reads_by_idle_gap": work_by_gap(self.read_slept_ns, self.read_work_ns),
            "writes_by_read_gap": work_by_gap(self.write_slept_ns, self.write_work_ns),
        }


def _udp(relay: _Relay, listen: tuple[str, int], target: tuple[str, int]) -> socket.socket:
    front = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    front.bind(listen)
    back = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    back.connect(target)
    for s in (front, back):
        s.setblocking(False)
    client: list[Address | None] = [None]

    def from_client(sock: socket.socket) -> None:
        t = time.monotonic_ns()
        data, client[0] = sock.recvfrom(CHUNK)
        relay.read_done(t)
        relay.schedule(back, data, target, t)

    def from_server(sock: socket.socket) -> None:
        t = time.monotonic_ns()
        data = sock.recv(CHUNK)
        relay.read_done(t)
        if client[0] is not None:
            relay.schedule(front, data, client[0], t)

    relay.selector.register(front, selectors.EVENT_READ, from_client)
    relay.selector.register(back, selectors.EVENT_READ, from_server)
    return front


def _tcp(relay: _Relay, listen: tuple[str, int], target: tuple[str, int]) -> socket.socket:
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(listen)
    server.listen(16)

    def pipe(src: socket.socket, dst: socket.socket) -> None:
        def forward(sock: socket.socket) -> None:
            t = time.monotonic_ns()
            try:
                data = sock.recv(CHUNK)
            except OSError:
                data = b""
            if not data:
                for s in (src, dst):
                    try:
                        relay.selector.unregister(s)
                    except (KeyError, ValueError):
                        pass
                    s.close()
                return
            relay.read_done(t)
            relay.schedule(dst, data, None, t)

        relay.selector.register(src, selectors.EVENT_READ, forward)

    def accept(sock: socket.socket) -> None:
        front, _ = sock.accept()
        back = socket.create_connection(target)
        for s in (front, back):
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        pipe(front, back)
        pipe(back, front)

    relay.selector.register(server, selectors.EVENT_READ, accept)
    return server


def run_relay(
    listen: tuple[str, int],
    target: tuple[str, int],
    protocol: str,
    delay: RelayDelay,
    stats_path: Path | None = None,
    seed: int = 1,
) -> dict[str, object]:
    """Relay until SIGTERM or SIGINT; prints ``relay listening on HOST:PORT``; returns the stats."""
    if protocol not in ("udp", "tcp"):
        raise ConfigError(f"relay protocol {protocol!r}: allowed udp, tcp")
    relay = _Relay(delay, seed)
    sock = (_udp if protocol == "udp" else _tcp)(relay, listen, target)

    # A signal only clears ``running``; its wake-up byte makes a blocking select return.
    wake_read, wake_write = socket.socketpair()
    for end in (wake_read, wake_write):
        end.setblocking(False)
    signal.set_wakeup_fd(wake_write.fileno())
    relay.selector.register(wake_read, selectors.EVENT_READ, lambda s: s.recv(64))

    def stop(*_: object) -> None:
        relay.running = False

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    host, port = sock.getsockname()[:2]
    print(f"relay listening on {host}:{port}", flush=True)
    relay.loop()
    stats = relay.stats()
    if stats_path is not None:
        write_json(stats_path, stats)
    print(f"relay stopped: {json.dumps(stats)}", file=sys.stderr)
    return stats
