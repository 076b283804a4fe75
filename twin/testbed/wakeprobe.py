"""The wake-up probe: how long a thread that slept ``g`` takes to run again, for a range of ``g``.

``twin testbed wakeprobe --out FILE`` starts a receiver process blocked in ``recvfrom`` on a UDP
loopback socket and, from this process, sends it one datagram at a time: after each reply the
sender spins for a gap ``g``, then sends the next datagram stamped with ``CLOCK_MONOTONIC`` (one
clock for every process of the host). The receiver stamps its return from ``recvfrom`` and echoes
the difference, the one-way latency of a message to a thread that slept (kernel path and wake-up
included), and how long it had been blocked when the datagram was sent (its **idle time**: the
gap plus the reply's way back to the sender), and the CPU time its thread spent in that
``recvfrom`` (``CLOCK_THREAD_CPUTIME_ID``: going to sleep, being woken, the receive: what one
wake-up costs its thread after that idle time). Gaps are drawn in a shuffled order, so a drift
of the host hits every gap alike.

How the sender waits for each reply is the probe's ``waiter`` (:class:`Waiter`): ``blocks`` (in
``recv``: its own vCPU may halt too, so the receiver's idle time is at least a halted wake-up
longer than the gap) or ``spins`` (a non-blocking ``recv`` in a loop: the receiver's idle time
is the gap and a few microseconds, down to the shortest a thread can sleep). With ``spins`` and
short gaps the probe measures how soon an idle vCPU halts: a wake-up costs an awake vCPU's
latency after a short sleep and a halted one's after a long one (:data:`HALT_GAPS_US`).

What depends on ``g`` is what sleeping costs: a shift of the whole distribution (caches, clock and
C-state exit: the model's cold start, :class:`twin.path.Station` ``cold_us``) and a growing share of
rare long waits (the vCPU halted or given to another guest while the thread slept: the model's
``stall``). The load-response lab measures it beside its corpus, and the accuracy matrix takes the
lab host's cold start from it (:func:`calibration.matrix.host_parameters`). Written as JSON: per gap
its latencies' percentiles, the median CPU of a wake-up, and the raw samples (latency, idle time
and CPU, us).
"""

from __future__ import annotations

import os
import socket
import struct
import subprocess
import sys
import time
from collections.abc import Sequence
from enum import StrEnum
from pathlib import Path
from typing import Any

import numpy as np

from calibration.halt import GapOrder, gap_sequence
from twin.atomic import write_json
from twin.errors import SimulationError
from twin.testbed.processes import start_spinner, stop

# Idle gaps (us): from a thread that barely sleeps to one that sleeps longer than the lowest
# rate of the lab leaves it (1000 msg/s: about 1 ms between messages per process).
DEFAULT_GAPS_US = (10, 30, 100, 300, 1000, 3000, 10000)
# Samples per gap: a p99 from the few hundred of each.
DEFAULT_SAMPLES = 300
# Gaps (us) for a sender that spins for each reply: the receiver's idle time is then the gap and
# the reply's way back, short enough to see when an idle vCPU halts.
HALT_GAPS_US = (0, 2, 5, 10, 20, 50, 100, 1000)
# Gaps (us) of a steady probe: around KVM's default maximum polling window (200 us), where a
# steady stream's wake-ups go from polled to halted, and beyond it.
STEADY_GAPS_US = (25, 50, 100, 150, 175, 200, 225, 250, 300, 500, 1000)
# The cluster lab's gaps: its lowest rate leaves the host idle for tens of milliseconds, and
# the cold start's time constant needs gaps long enough to see it level off.
CLUSTER_GAPS_US = (10, 100, 1000, 3000, 10000, 30000, 100000)
FRAME = struct.Struct("<qq")  # sequence, send time (ns, CLOCK_MONOTONIC)
REPLY = struct.Struct("<qqqq")  # sequence, one-way latency, receiver's idle time and CPU (ns)

RECEIVER_START_S = 60.0  # how long the receiver may take to start (s)


class Waiter(StrEnum):
    """How the probe's sender waits for each reply."""

    BLOCKS = "blocks"  # in recv: its vCPU may halt while the receiver works
    SPINS = "spins"  # a non-blocking recv in a loop: its vCPU never halts


def serve(port_file: Path) -> None:
    """The receiver: echo each frame's one-way latency, how long the receiver had been blocked
    when the frame was sent and its thread's CPU time in the blocked receive, until a frame with
    sequence -1."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("127.0.0.1", 0))
    port_file.write_text(str(sock.getsockname()[1]))
    while True:
        blocked, cpu = time.monotonic_ns(), time.thread_time_ns()
        data, peer = sock.recvfrom(64)
        now, cpu = time.monotonic_ns(), time.thread_time_ns() - cpu
        seq, sent = FRAME.unpack(data)
        if seq < 0:
            return
        sock.sendto(REPLY.pack(seq, now - sent, max(0, sent - blocked), cpu), peer)


def _spin_until(deadline_ns: int) -> None:
    while time.monotonic_ns() < deadline_ns:
        pass


def _reply(sock: socket.socket, waiter: Waiter) -> bytes:
    if waiter == Waiter.BLOCKS:
        return sock.recv(64)
    deadline = time.monotonic() + 2.0
    while time.monotonic() < deadline:
        try:
            return sock.recv(64)
        except BlockingIOError:
            continue
    raise SimulationError("wake-up probe: no reply within 2 s")


def measure_wakeups(
    gaps_us: Sequence[float] = DEFAULT_GAPS_US,
    samples: int = DEFAULT_SAMPLES,
    seed: int = 1,
    busy: int = 0,
    waiter: Waiter = Waiter.BLOCKS,
    order: GapOrder = GapOrder.SHUFFLED,
) -> dict[str, Any]:
    """Run the probe; ``{"gaps_us": [...], "latency_us": {gap: [...]}, "idle_us": {gap: [...]},
    "cpu_us": {gap: [...]}, "cpu_median_us": {gap: median}, "host": {...}}`` (us).

    ``busy``: processes that spin for the whole probe (keeping that many more cores awake), so
    the woken thread finds an awake core rather than a halted one. ``waiter``: how the sender
    waits for each reply (:class:`Waiter`); ``order``: in which order the gaps come
    (:class:`GapOrder`; a steady probe's warm-up samples are not recorded)."""
    import contextlib
    import tempfile

    with tempfile.TemporaryDirectory() as tmp, contextlib.ExitStack() as spinners:
        for _ in range(busy):
            spinners.callback(stop, start_spinner())
        port_file = Path(tmp) / "port"
        proc = subprocess.Popen(
            [sys.executable, "-c", f"from twin.testbed.wakeprobe import serve; "
             f"from pathlib import Path; serve(Path({str(port_file)!r}))"],
        )  # fmt: skip
        try:
            # A fresh interpreter's imports take seconds on a busy host (over 5 s at a load
            # average of 9): wait while it is alive, up to a minute, not a fixed 5 s.
            deadline = time.monotonic() + RECEIVER_START_S
            while not (port_file.exists() and port_file.read_text()):
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise SimulationError(
                        f"the wake-up probe's receiver did not start (exit {proc.poll()})"
                    )
                time.sleep(0.01)
            port = int(port_file.read_text())
            sequence = gap_sequence(gaps_us, samples, seed, order)
            latencies: dict[float, list[float]] = {float(g): [] for g in gaps_us}
            idle: dict[float, list[float]] = {float(g): [] for g in gaps_us}
            cpu: dict[float, list[float]] = {float(g): [] for g in gaps_us}
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
                if waiter == Waiter.BLOCKS:
                    sock.settimeout(2.0)
                else:
                    sock.setblocking(False)
                sock.connect(("127.0.0.1", port))
                for seq, (gap, recorded) in enumerate(sequence):
                    _spin_until(time.monotonic_ns() + int(gap * 1e3))
                    sock.send(FRAME.pack(seq, time.monotonic_ns()))
                    got, latency_ns, idle_ns, cpu_ns = REPLY.unpack(_reply(sock, waiter))
                    if got != seq:
                        raise SimulationError(f"wake-up probe: reply {got} for frame {seq}")
                    if recorded:
                        latencies[float(gap)].append(latency_ns / 1e3)
                        idle[float(gap)].append(idle_ns / 1e3)
                        cpu[float(gap)].append(cpu_ns / 1e3)
                sock.send(FRAME.pack(-1, 0))
            proc.wait(timeout=10)
        finally:
            stop(proc)
    return {
        "tool": "twin testbed wakeprobe",
        "gaps_us": [float(g) for g in gaps_us],
        "samples": samples,
        "seed": seed,
        "busy": busy,
        "waiter": str(waiter),
        "order": str(order),
        "host": {"cpus": os.cpu_count(), "loadavg_1m": os.getloadavg()[0]},
        "percentiles_us": {
            str(g): {f"p{p}": float(np.percentile(v, p)) for p in (10, 50, 90, 99)}
            for g, v in latencies.items()
        },
        "latency_us": {str(g): [round(x, 3) for x in v] for g, v in latencies.items()},
        "idle_us": {str(g): [round(x, 3) for x in v] for g, v in idle.items()},
        "cpu_us": {str(g): [round(x, 3) for x in v] for g, v in cpu.items()},
        "cpu_median_us": {str(g): float(np.median(v)) for g, v in cpu.items()},
    }


def write_probe(path: Path, **options: Any) -> dict[str, Any]:
    result = measure_wakeups(**options)
    write_json(path, result)
    return result
