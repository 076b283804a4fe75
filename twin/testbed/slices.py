"""The time-slice probe: how often a thread that shares its vCPU with a spinning one loses it
for a slice, by the share of that vCPU the thread itself uses.

``twin testbed slices --out FILE`` pins a receiver process and a spinner process to one vCPU and
this process to another. It sends the receiver one datagram every ``period_us`` (evenly spaced,
stamped with ``CLOCK_MONOTONIC``); the receiver echoes the one-way latency at once and then burns
``share x period_us`` of its own CPU (``CLOCK_THREAD_CPUTIME_ID``), so that alone it would use
that share of its vCPU. For each share (:data:`DEFAULT_SHARES`, in shuffled blocks) it writes the
latencies' percentiles and the share of messages that waited longer than ``threshold_us`` (a
**slice**: the receiver was runnable and the spinner held the vCPU), with those waits' mean and
percentiles; the same with the spinner left out (``alone``) says what the host adds without it.

What it tells: Linux's fair scheduler (EEVDF, kernel/sched/fair.c) lets a woken thread that is
owed CPU preempt the spinner at once, so a thread that uses little of its vCPU pays nothing; one
that uses more has spent its lag and waits for the spinner's slice to run out, so the share of
messages that wait for a slice grows with the thread's own use (the slice checked at the
scheduler's tick: waits of up to about 4 ms here). What the model could take from it, and why it
does not yet: docs/design-notes.md, "Time slices beside a spinner".

Written as JSON: ``{"tool", "period_us", "samples", "threshold_us", "shares": [...], "spinner":
{share: {"p50_us", "p90_us", "p99_us", "waited", "wait_mean_us", "wait_p50_us", "wait_p90_us"}},
"alone": {...}}``.
"""

from __future__ import annotations

import multiprocessing
import os
import queue
import random
import socket
import struct
import time
from pathlib import Path
from typing import Any

import numpy as np

from twin.atomic import write_json
from twin.errors import ConfigError, SimulationError
from twin.testbed.processes import start_spinner, stop

DEFAULT_SHARES = (0.05, 0.15, 0.3, 0.45, 0.6, 0.8)  # the receiver's own use of its vCPU
DEFAULT_PERIOD_US = 200.0  # between two messages
DEFAULT_SAMPLES = 3000  # messages per share and condition
DEFAULT_THRESHOLD_US = 300.0  # a wait longer than this is a slice (a wake-up takes tens of us)
BLOCKS = 5  # each share's messages in this many shuffled blocks: a drift hits every share alike
REQUEST = struct.Struct("qd")  # sent at (CLOCK_MONOTONIC, ns), the share to burn after it
STAMP = struct.Struct("q")  # the one-way latency (ns) echoed back
RECEIVER_CPU, SENDER_CPU = 1, 0


def _pin(cpu: int) -> None:
    os.sched_setaffinity(0, {cpu})


def _receive(cpu: int, port: Any, period_us: float, done: Any) -> None:
    """Echo each datagram's one-way latency, then burn the share of ``period_us`` it names."""
    _pin(cpu)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.bind(("127.0.0.1", 0))
        sock.settimeout(0.2)
        port.put(sock.getsockname()[1])
        while not done.is_set():
            try:
                data, peer = sock.recvfrom(64)
            except TimeoutError:
                continue
            arrived = time.monotonic_ns()
            sent, share = REQUEST.unpack(data)
            sock.sendto(STAMP.pack(arrived - sent), peer)
            until = time.thread_time_ns() + int(share * period_us * 1e3)
            while time.thread_time_ns() < until:
                pass


def _latencies(
    shares: tuple[float, ...], period_us: float, samples: int, spinner: bool
) -> dict[float, np.ndarray]:
    """One-way latencies (us) by share, each share's ``samples`` sent in :data:`BLOCKS`
    shuffled blocks."""
    mask = os.sched_getaffinity(0)
    if not {RECEIVER_CPU, SENDER_CPU} <= mask:
        raise SimulationError("the slice probe needs vCPUs 0 and 1 (a sender's and a shared one)")
    ctx = multiprocessing.get_context("forkserver")
    done, port = ctx.Event(), ctx.Queue()
    receiver = ctx.Process(target=_receive, args=(RECEIVER_CPU, port, period_us, done))
    receiver.start()
    spin = None
    try:
        if spinner:
            spin = start_spinner(RECEIVER_CPU)
        try:
            address = ("127.0.0.1", port.get(timeout=30))
        except queue.Empty:
            raise SimulationError("the slice probe's receiver did not start") from None
        _pin(SENDER_CPU)
        out: dict[float, list[float]] = {s: [] for s in shares}
        sizes = [len(b) for b in np.array_split(np.arange(samples), BLOCKS) if len(b)]
        blocks = [(s, n) for s in shares for n in sizes]
        random.Random(1).shuffle(blocks)
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
            sock.settimeout(1.0)
            time.sleep(0.3)  # the spinner and the receiver settle on their vCPU
            step = int(period_us * 1e3)
            due = time.perf_counter_ns()
            for share, size in blocks:
                for _ in range(size):
                    due += step
                    while time.perf_counter_ns() < due:
                        pass
                    sock.sendto(REQUEST.pack(time.monotonic_ns(), share), address)
                    try:
                        data, _ = sock.recvfrom(64)
                    except TimeoutError:
                        raise SimulationError(
                            "the slice probe's receiver stopped answering"
                        ) from None
                    out[share].append(STAMP.unpack(data)[0] / 1e3)
                    due = max(due, time.perf_counter_ns())  # never a burst to catch up
        return {s: np.asarray(v) for s, v in out.items()}
    finally:
        os.sched_setaffinity(0, mask)
        if spin is not None:
            stop(spin)
        done.set()
        receiver.join(timeout=5)
        if receiver.is_alive():
            receiver.kill()


def _summary(latency_us: np.ndarray, threshold_us: float) -> dict[str, float]:
    waits = latency_us[latency_us > threshold_us]
    p50, p90, p99 = np.percentile(latency_us, [50, 90, 99])
    out = {"p50_us": p50, "p90_us": p90, "p99_us": p99, "waited": waits.size / latency_us.size}
    if waits.size:
        w50, w90 = np.percentile(waits, [50, 90])
        out |= {"wait_mean_us": waits.mean(), "wait_p50_us": w50, "wait_p90_us": w90}
    return {k: float(v) for k, v in out.items()}


def measure_slices(
    shares: tuple[float, ...] = DEFAULT_SHARES,
    period_us: float = DEFAULT_PERIOD_US,
    samples: int = DEFAULT_SAMPLES,
    threshold_us: float = DEFAULT_THRESHOLD_US,
) -> dict[str, Any]:
    """The probe with the spinner and without it (module docstring)."""
    if not shares or any(not 0 <= s < 1 for s in shares):
        raise ConfigError(f"slice probe: shares {shares} must be in [0, 1)")
    if period_us <= 0 or samples < 1 or threshold_us <= 0:
        raise ConfigError(
            f"slice probe: period {period_us} us, samples {samples} and threshold "
            f"{threshold_us} us must be positive"
        )
    result: dict[str, Any] = {
        "tool": "twin testbed slices",
        "period_us": period_us,
        "samples": samples,
        "threshold_us": threshold_us,
        "shares": list(shares),
    }
    for key, spinner in (("spinner", True), ("alone", False)):
        latencies = _latencies(shares, period_us, samples, spinner)
        result[key] = {str(s): _summary(latencies[s], threshold_us) for s in shares}
    return result


def write_slices(path: Path, **options: Any) -> dict[str, Any]:
    """:func:`measure_slices`, written to ``path`` (atomically)."""
    result = measure_slices(**options)
    write_json(path, result)
    return result
