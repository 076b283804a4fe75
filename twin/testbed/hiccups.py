"""The hiccup probe: how often a running thread loses its vCPU, and for how long.

``twin testbed hiccups --out FILE`` pins one process to each vCPU of the host and has each spin
for ``seconds`` reading ``CLOCK_MONOTONIC`` in a loop (one read every fraction of a microsecond):
wherever two reads are more than ``threshold_us`` apart, the thread did not run meanwhile and the
gap is recorded. What takes a vCPU from a thread that wants it: the hypervisor running another
guest or its own work on the physical core (steal), the guest's own interrupts, softirqs and
kernel threads. A thread of the systems the lab measures meets the same gaps while it works or
while a message waits for it to wake; they are the model's **hiccups**
(:class:`twin.path.Hiccups`), a process the host imposes whatever the load, which the queue
behind them amplifies as the load grows (the backlog one leaves drains at the spare capacity).
jHiccup (Azul) measures the same with a thread that sleeps a millisecond at a time; spinning
sees gaps of a few microseconds too and tells each vCPU apart.

**Together or alone.** By default every vCPU spins at once: the hiccups of a host whose vCPUs are
all busy. With ``alone`` each vCPU spins in turn while the others idle: the guest's own kernel
threads (DAMON's ``kdamond``, workqueues) then run on an idle vCPU instead of taking a busy one,
and the host's own work finds the spinner's sibling idle, so the long hiccups mostly vanish
(design notes, "Hiccups that come when the other vCPU is busy"). The model's hiccup rate follows
the other vCPU's utilization between the two (:func:`twin.components.loopback.vcpu_hiccups`).

Written as JSON: the mode (``"together"`` or ``"alone"``), per vCPU the gaps (us, in the order
met), the time spun (s) and the vCPU's steal time over the probe (``/proc/stat``, percent of the
time spun); the lab measures both beside its corpus (``hiccups_<i>.json``,
``hiccups_alone_<i>.json``) and the accuracy matrix takes the host's hiccups from them
(:func:`calibration.hiccups.hiccup_parameters`).
"""

from __future__ import annotations

import multiprocessing
import os
import time
from pathlib import Path
from typing import Any

from calibration.hiccups import Mode
from twin.atomic import write_json
from twin.errors import ConfigError, SimulationError

DEFAULT_SECONDS = 20.0
# Gaps (us) shorter than this are not recorded: a loop iteration and a clock read take well
# under one.
DEFAULT_THRESHOLD_US = 10.0
# Extra seconds each spinner may take past its time before the probe gives up on it.
_GRACE_S = 30.0


def _steal_ticks(cpu: int) -> int:
    """The vCPU's steal time so far (clock ticks, ``/proc/stat``'s eighth field; 0 unknown)."""
    try:
        lines = Path("/proc/stat").read_text().splitlines()
    except OSError:
        return 0
    for line in lines:
        fields = line.split()
        if fields and fields[0] == f"cpu{cpu}" and len(fields) > 8:
            return int(fields[8])
    return 0


def spin(cpu: int, seconds: float, threshold_ns: int) -> dict[str, Any]:
    """Spin on ``cpu`` for ``seconds``; the gaps longer than ``threshold_ns`` between two clock
    reads (us), the time spun (s) and the vCPU's steal over it (percent)."""
    os.sched_setaffinity(0, {cpu})
    ticks = os.sysconf("SC_CLK_TCK")
    steal0 = _steal_ticks(cpu)
    clock = time.monotonic_ns
    gaps: list[int] = []
    start = last = clock()
    end = start + int(seconds * 1e9)
    while last < end:
        now = clock()
        if now - last > threshold_ns:
            gaps.append(now - last)
        last = now
    spun_s = (last - start) / 1e9
    steal_s = (_steal_ticks(cpu) - steal0) / ticks
    return {
        "cpu": cpu,
        "spun_s": spun_s,
        "steal_pct": 100.0 * steal_s / spun_s if spun_s > 0 else 0.0,
        "gaps_us": [round(g / 1e3, 3) for g in gaps],
    }


def _spin_all(cpus: list[int], seconds: float, threshold_ns: int) -> list[dict[str, Any]]:
    """:func:`spin` on each of ``cpus`` at once, one process each.

    The spinners come from a fork server, not a fork of this process: a fork copies whatever
    locks this process's other threads held at that instant, and a lab run inside a larger
    program (a test session) once left a spinner waiting on one for good."""
    context = multiprocessing.get_context("forkserver")
    with context.Pool(len(cpus)) as pool:
        pending = [pool.apply_async(spin, (cpu, seconds, threshold_ns)) for cpu in cpus]
        try:
            return [p.get(timeout=seconds + _GRACE_S) for p in pending]
        except multiprocessing.TimeoutError as exc:
            raise SimulationError(f"hiccup probe: a spinner did not finish in {seconds} s") from exc


def measure_hiccups(
    seconds: float = DEFAULT_SECONDS,
    threshold_us: float = DEFAULT_THRESHOLD_US,
    mode: Mode = Mode.TOGETHER,
) -> dict[str, Any]:
    """Run the probe on every vCPU this process may use, all at once, or each for ``seconds``
    divided by their number while the others idle (``mode``; module docstring):
    ``{"tool", "mode", "seconds", "threshold_us", "host", "cpus": [{"cpu", "spun_s",
    "steal_pct", "gaps_us"}]}``."""
    if not seconds > 0 or not threshold_us > 0:
        raise ConfigError(
            f"hiccup probe: seconds {seconds} and threshold {threshold_us} us must be > 0"
        )
    cpus = sorted(os.sched_getaffinity(0))
    threshold_ns = int(threshold_us * 1e3)
    if mode == Mode.ALONE:
        each = seconds / len(cpus)
        results = [_spin_all([cpu], each, threshold_ns)[0] for cpu in cpus]
    else:
        results = _spin_all(cpus, seconds, threshold_ns)
    return {
        "tool": "twin testbed hiccups",
        "mode": str(mode),
        "seconds": seconds,
        "threshold_us": threshold_us,
        "host": {"cpus": os.cpu_count(), "loadavg_1m": os.getloadavg()[0]},
        "cpus": results,
    }


def write_hiccups(path: Path, **options: Any) -> dict[str, Any]:
    """:func:`measure_hiccups`, written to ``path`` (atomically)."""
    result = measure_hiccups(**options)
    write_json(path, result)
    return result
