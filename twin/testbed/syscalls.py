"""The system-call probe: what a server's socket calls cost on this host, per call and per message.

``twin testbed syscalls --out FILE`` opens a loopback pair over TCP (``TCP_NODELAY``) and over
UDP in one thread and, ``samples`` times for each batch size ``k`` (:data:`BATCHES`), sends ``k``
messages of ``payload`` bytes, polls the receiving socket (``epoll`` with no wait: it is ready) and
reads the ``k`` messages back: over TCP with as few ``recv`` calls as the stream allows (one, when
all ``k`` have arrived), over UDP one ``recv`` a datagram, as a server must. Each part is timed on
the thread's own CPU clock (``CLOCK_THREAD_CPUTIME_ID``) and the clock's own cost, measured the
same way, is taken off; the medians per batch size are written.

What it tells: a TCP read takes every message waiting on the connection at about the cost of one
(a native server's reads **coalesce** as its queue grows: its CPU a message falls towards its
sends' share), a UDP read takes one datagram. ``per_read_share`` is the share of a one-message
round of a TCP server's calls that a read pays, ``(poll + recv) / (poll + recv + send)`` at
``k = 1``: the part of its own calls a busy server pays once per read (docs/design-notes.md, "The
burst probe's body only"). Loopback's transmit runs the receiver's protocol work in the sender's
call, so ``send`` includes it. Timed from Python: each call carries the interpreter's overhead
(well under a microsecond), the same on every part.

Written as JSON: ``{"tool", "payload", "samples", "clock_us", "transports": {"tcp" | "udp":
{"send_us", "poll_us", "recv_us": {k: us}}}, "per_read_share"}``; microseconds are per message
for ``send_us`` and per batch (one ``k``) for ``recv_us``.
"""

from __future__ import annotations

import select
import socket
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from twin.atomic import write_json
from twin.errors import ConfigError
from twin.kinds import Transport

BATCHES = (1, 2, 4, 8, 16)  # messages waiting when the receiver reads
DEFAULT_SAMPLES = 2000  # rounds per batch size
DEFAULT_PAYLOAD = 14  # bytes a message: sockperf's default (the lab's), its minimum


def _pair(transport: Transport) -> tuple[socket.socket, socket.socket]:
    """A connected sender and receiver over loopback."""
    if transport == Transport.TCP:
        with socket.socket() as listener:
            listener.bind(("127.0.0.1", 0))
            listener.listen(1)
            sender = socket.create_connection(listener.getsockname())
            receiver, _ = listener.accept()
        for s in (sender, receiver):
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return sender, receiver
    receiver = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    receiver.bind(("127.0.0.1", 0))
    sender = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sender.connect(receiver.getsockname())
    return sender, receiver


def clock_cost_us(reads: int = 20000) -> float:
    """The thread CPU clock's own cost a read (us): what every timed part carries once."""
    clock = time.thread_time_ns
    start = clock()
    for _ in range(reads):
        clock()
    return (clock() - start) / reads / 1e3


def _reader(transport: Transport, receiver: socket.socket, payload: int) -> Callable[[int], None]:
    """Read ``k`` messages: over TCP as few calls as the stream allows, over UDP one a datagram."""
    buf = bytearray(max(65536, 16 * payload))

    def tcp(k: int) -> None:
        want, got = k * payload, 0
        while got < want:
            got += receiver.recv_into(buf)

    def udp(k: int) -> None:
        for _ in range(k):
            receiver.recv_into(buf)

    return tcp if transport == Transport.TCP else udp


def measure_transport(
    transport: Transport, samples: int, payload: int, clock_us: float
) -> dict[str, Any]:
    """Median CPU (us) of ``send`` a message, ``poll`` a round and ``recv`` a batch of ``k``
    messages (:data:`BATCHES`), the clock's cost taken off each (never below zero)."""
    sender, receiver = _pair(transport)
    poller = select.epoll()
    try:
        poller.register(receiver.fileno(), select.EPOLLIN)
        read = _reader(transport, receiver, payload)
        message = b"x" * payload
        clock = time.thread_time_ns
        sends: list[float] = []
        polls: list[float] = []
        recvs: dict[int, float] = {}
        for k in BATCHES:
            rounds = []
            for _ in range(samples):
                t0 = clock()
                for _ in range(k):
                    sender.send(message)
                t1 = clock()
                poller.poll(0)
                t2 = clock()
                read(k)
                t3 = clock()
                sends.append((t1 - t0) / 1e3 / k)
                polls.append((t2 - t1) / 1e3)
                rounds.append((t3 - t2) / 1e3)
            recvs[k] = max(0.0, statistics.median(rounds) - clock_us)
        return {
            "send_us": max(0.0, statistics.median(sends) - clock_us),
            "poll_us": max(0.0, statistics.median(polls) - clock_us),
            "recv_us": {str(k): us for k, us in recvs.items()},
        }
    finally:
        poller.close()
        sender.close()
        receiver.close()


def measure_syscalls(
    samples: int = DEFAULT_SAMPLES, payload: int = DEFAULT_PAYLOAD
) -> dict[str, Any]:
    """The probe over TCP and UDP (module docstring)."""
    if samples < 1 or payload < 1:
        raise ConfigError(f"syscall probe: samples {samples} and payload {payload} must be >= 1")
    clock_us = clock_cost_us()
    transports = {
        str(t): measure_transport(t, samples, payload, clock_us)
        for t in (Transport.TCP, Transport.UDP)
    }
    tcp = transports[str(Transport.TCP)]
    per_read = tcp["poll_us"] + tcp["recv_us"]["1"]
    whole = per_read + tcp["send_us"]
    return {
        "tool": "twin testbed syscalls",
        "payload": payload,
        "samples": samples,
        "clock_us": clock_us,
        "transports": transports,
        "per_read_share": per_read / whole if whole > 0 else 0.0,
    }


def write_syscalls(path: Path, **options: Any) -> dict[str, Any]:
    """:func:`measure_syscalls`, written to ``path`` (atomically)."""
    result = measure_syscalls(**options)
    write_json(path, result)
    return result
