"""The wake-up probe: how long a thread that slept ``g`` takes to run again, for a range of ``g``.

``twin testbed wakeprobe --out FILE`` starts a receiver process blocked in ``recvfrom`` on a UDP
loopback socket and, from this process, sends it one datagram at a time: after each reply the
sender spins (it never sleeps, so only the receiver's wake-up is measured) for a gap ``g``, then
sends the next datagram stamped with ``CLOCK_MONOTONIC`` (one clock for every process of the
host). The receiver stamps its return from ``recvfrom`` and echoes the difference: the one-way
latency of a message to a thread that slept ``g``, kernel path and wake-up included. Gaps are
drawn in a shuffled order, so a drift of the host hits every gap alike.

What depends on ``g`` is what sleeping costs: a shift of the whole distribution (caches, clock and
C-state exit: the model's cold start, :class:`twin.path.Station` ``cold_us``) and a growing share of
rare long waits (the vCPU halted or given to another guest while the thread slept: the model's
``stall``). The load-response lab measures it beside its corpus, and the accuracy matrix takes the
lab host's cold start from it (:func:`calibration.matrix.host_parameters`). Written as JSON: per gap
its latencies' percentiles and the raw samples.
"""

from __future__ import annotations

import os
import random
import socket
import struct
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from twin.atomic import write_json
from twin.errors import SimulationError
from twin.testbed.processes import stop

# Idle gaps (us): from a thread that barely sleeps to one that sleeps longer than the lowest
# rate of the lab leaves it (1000 msg/s: about 1 ms between messages per process).
DEFAULT_GAPS_US = (10, 30, 100, 300, 1000, 3000, 10000)
# The cluster lab's gaps: its lowest rate leaves the host idle for tens of milliseconds, and
# the cold start's time constant needs gaps long enough to see it level off.
CLUSTER_GAPS_US = (10, 100, 1000, 3000, 10000, 30000, 100000)
FRAME = struct.Struct("<qq")  # sequence, send time (ns, CLOCK_MONOTONIC)
REPLY = struct.Struct("<qq")  # sequence, one-way latency (ns)


def serve(port_file: Path) -> None:
    """The receiver: echo each frame's one-way latency until a frame with sequence -1."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("127.0.0.1", 0))
    port_file.write_text(str(sock.getsockname()[1]))
    while True:
        data, peer = sock.recvfrom(64)
        now = time.monotonic_ns()
        seq, sent = FRAME.unpack(data)
        if seq < 0:
            return
        sock.sendto(REPLY.pack(seq, now - sent), peer)


def _spin_until(deadline_ns: int) -> None:
    while time.monotonic_ns() < deadline_ns:
        pass


SPIN = "while True: pass"


def measure_wakeups(
    gaps_us: Sequence[float] = DEFAULT_GAPS_US, samples: int = 300, seed: int = 1, busy: int = 0
) -> dict[str, Any]:
    """Run the probe; ``{"gaps_us": [...], "latency_us": {gap: [...]}, "host": {...}}``.

    ``busy``: processes that spin for the whole probe (keeping that many more cores awake), so
    the woken thread finds an awake core rather than a halted one."""
    import contextlib
    import tempfile

    with tempfile.TemporaryDirectory() as tmp, contextlib.ExitStack() as spinners:
        for _ in range(busy):
            spinner = subprocess.Popen([sys.executable, "-c", SPIN])
            spinners.callback(stop, spinner)
        port_file = Path(tmp) / "port"
        proc = subprocess.Popen(
            [sys.executable, "-c", f"from twin.testbed.wakeprobe import serve; "
             f"from pathlib import Path; serve(Path({str(port_file)!r}))"],
        )  # fmt: skip
        try:
            for _ in range(500):
                if port_file.exists() and port_file.read_text():
                    break
                time.sleep(0.01)
            else:
                raise SimulationError("the wake-up probe's receiver did not start")
            port = int(port_file.read_text())
            order = [g for g in gaps_us for _ in range(samples)]
            random.Random(seed).shuffle(order)
            latencies: dict[float, list[float]] = {float(g): [] for g in gaps_us}
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
                sock.settimeout(2.0)
                sock.connect(("127.0.0.1", port))
                for seq, gap in enumerate([gaps_us[0], *order]):  # the first warms up
                    _spin_until(time.monotonic_ns() + int(gap * 1e3))
                    sock.send(FRAME.pack(seq, time.monotonic_ns()))
                    got, latency_ns = REPLY.unpack(sock.recv(64))
                    if got != seq:
                        raise SimulationError(f"wake-up probe: reply {got} for frame {seq}")
                    if seq > 0:
                        latencies[float(gap)].append(latency_ns / 1e3)
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
        "host": {"cpus": os.cpu_count(), "loadavg_1m": os.getloadavg()[0]},
        "percentiles_us": {
            str(g): {f"p{p}": float(np.percentile(v, p)) for p in (10, 50, 90, 99)}
            for g, v in latencies.items()
        },
        "latency_us": {str(g): [round(x, 3) for x in v] for g, v in latencies.items()},
    }


def write_probe(path: Path, **options: Any) -> dict[str, Any]:
    result = measure_wakeups(**options)
    write_json(path, result)
    return result
