"""What the host and the two testbed processes were doing during a run (Linux ``/proc``).

On a shared host a latency measurement means little without its conditions, so every run
records them next to its percentiles:

* :func:`host_counters` - the host's CPU jiffies (total, idle, steal) and load average;
  differenced over the measured window they give the busy and steal shares;
* :func:`runnable_threads` - threads runnable right now (``/proc/loadavg``'s ``running``
  field), sampled through the run;
* :func:`process_times` - a process's on-CPU and run-queue-wait nanoseconds summed over its
  threads (``/proc/PID/task/*/schedstat``). On-CPU time over messages answered is the process's
  *service demand* per message (operational analysis); the run-queue wait is time the process
  was ready but no core was free: CPU contention measured directly, not inferred;
* :func:`current_cpu` - the CPU the calling thread runs on (where the host placed it).
"""

from __future__ import annotations

import ctypes
import os
from dataclasses import dataclass


@dataclass(frozen=True)
class HostCounters:
    """Cumulative host CPU jiffies and the 1-minute load average at one instant."""

    total: float
    idle: float
    steal: float
    loadavg_1m: float


_LIBC = ctypes.CDLL(None, use_errno=True)


def current_cpu() -> int:
    """The CPU the calling thread runs on now (glibc ``sched_getcpu``; -1 if unknown)."""
    return int(_LIBC.sched_getcpu())


def host_counters() -> HostCounters:
    """Read ``/proc/stat``'s cpu line and ``/proc/loadavg`` now."""
    with open("/proc/stat") as fh:
        cpu = [int(x) for x in fh.readline().split()[1:]]
    with open("/proc/loadavg") as fh:
        load1 = float(fh.read().split()[0])
    return HostCounters(
        total=float(sum(cpu)),
        idle=float(cpu[3] + cpu[4]),
        steal=float(cpu[7] if len(cpu) > 7 else 0),
        loadavg_1m=load1,
    )


def host_shares(before: HostCounters, after: HostCounters) -> dict[str, float]:
    """Busy and steal shares of the host's CPU time between two readings (%)."""
    dt = after.total - before.total
    if dt <= 0:
        return {"busy_pct": 0.0, "steal_pct": 0.0}
    return {
        "busy_pct": 100.0 * (1.0 - (after.idle - before.idle) / dt),
        "steal_pct": 100.0 * (after.steal - before.steal) / dt,
    }


def runnable_threads() -> int:
    """Threads runnable on the host right now, not counting the caller.

    The fourth field of ``/proc/loadavg`` (``running/total``): a small file, cheap to read,
    unlike ``/proc/stat``, whose interrupt line makes each read cost the client real CPU.
    """
    with open("/proc/loadavg") as fh:
        return max(0, int(fh.read().split()[3].split("/")[0]) - 1)


@dataclass(frozen=True)
class ProcessTimes:
    """A process's cumulative on-CPU and run-queue-wait time (ns, all threads)."""

    cpu_ns: int
    wait_ns: int


def process_times(pid: int | None = None) -> ProcessTimes | None:
    """Sum ``schedstat`` over a process's threads (``None``: this process; None if unreadable)."""
    task_dir = f"/proc/{pid if pid is not None else os.getpid()}/task"
    cpu = wait = 0
    try:
        tids = os.listdir(task_dir)
        for tid in tids:
            try:
                with open(f"{task_dir}/{tid}/schedstat") as fh:
                    run_ns, wait_ns, _ = fh.read().split()
            except FileNotFoundError:  # a thread that just exited
                continue
            cpu += int(run_ns)
            wait += int(wait_ns)
    except OSError:
        return None
    return ProcessTimes(cpu, wait)
