"""Where a client's threads run against its server's: sampled from ``/proc`` while they run.

:func:`sample_placement` reads, every :data:`INTERVAL_S` until told to stop, each thread's last CPU
and CPU time (``/proc/PID/task/TID/schedstat`` and field 39 of ``stat``) of a server and a client
process. A sample counts for a client thread when both it and the server ran within the last
:data:`ACTIVE_S` (their CPU times moved: the kernel updates a running thread's at each tick), so
the phases where either only sleeps (a warm-up pause, the end of a run) do not count. The result
says, per client thread in start order, in what share of its counted samples it ran on the
server's CPU: which threads the host keeps on one vCPU (``twin.components.loopback.colocated``),
and, from its last reading, its CPU time and how often it was scheduled in (``schedstat``'s
first and third fields: :meth:`Placement.thread_costs`), which the process's own counters do not
tell apart (a spinning sender's and a sleeping receiver's).
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass, field

INTERVAL_S = 0.01
ACTIVE_S = 0.05  # a few scheduler ticks (10 ms at HZ=100)


@dataclass
class ThreadSamples:
    """One client thread's CPU time as last read, and its samples: counted, on the server's CPU."""

    ran_ns: int = -1
    moved_at: float = -1.0  # when its CPU time last moved (s, monotonic)
    counted: int = 0
    together: int = 0
    runs: int = 0  # times scheduled in, as last read

    def ran(self, ran_ns: int, now: float, runs: int = 0) -> bool:
        """Record the thread's CPU time (and times scheduled in); whether its CPU time moved
        within the last :data:`ACTIVE_S`."""
        if 0 <= self.ran_ns < ran_ns:
            self.moved_at = now
        self.ran_ns = ran_ns
        self.runs = runs
        return self.moved_at >= 0 and now - self.moved_at <= ACTIVE_S


@dataclass
class Placement:
    """Per client thread (by thread id), samples counted and those on the server's CPU."""

    threads: dict[int, ThreadSamples] = field(default_factory=dict)

    def summary(self) -> dict[str, float | int | None]:
        """``{"thread_0_with_server_share": s, "thread_0_samples": n, ...}``, threads in start
        order (a share is ``None`` for a thread never counted)."""
        out: dict[str, float | int | None] = {}
        for k, tid in enumerate(sorted(self.threads)):
            t = self.threads[tid]
            out[f"thread_{k}_with_server_share"] = t.together / t.counted if t.counted else None
            out[f"thread_{k}_samples"] = t.counted
        return out

    def thread_costs(self, messages: int) -> list[dict[str, float]]:
        """Per client thread in start order, its CPU (us) and times scheduled in per message, as
        last read (within :data:`INTERVAL_S` of its end); ``[]`` without messages."""
        if messages <= 0:
            return []
        return [
            {
                "cpu_us_per_msg": max(0, t.ran_ns) / 1e3 / messages,
                "runs_per_msg": t.runs / messages,
            }
            for _, t in sorted(self.threads.items())
        ]


class _Tasks:
    """A process's threads' ``schedstat`` and ``stat`` files, kept open and re-read from offset 0
    (a sample then costs two ``pread`` calls a thread instead of two opens and closes: the sampler
    shares the measured host's vCPUs, so its own work delays the threads it samples)."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.files: dict[int, tuple[int, int]] = {}

    def read(self) -> dict[int, tuple[int, int, int]]:
        """Each thread's (on-CPU time in ns, times scheduled in, last CPU); empty when the
        process is gone."""
        out: dict[int, tuple[int, int, int]] = {}
        try:
            tids = [int(tid) for tid in os.listdir(f"/proc/{self.pid}/task")]
        except OSError:
            return out
        for gone in set(self.files).difference(tids):  # threads that exited: their files too
            self._forget(gone)
        for tid in tids:
            try:
                schedstat, stat = self._files(tid)
                fields = os.pread(schedstat, 256, 0).split()
                ran_ns, runs = int(fields[0]), int(fields[2])
                cpu = int(os.pread(stat, 4096, 0).rpartition(b")")[2].split()[36])
            except (OSError, ValueError, IndexError):
                self._forget(tid)
                continue
            out[tid] = (ran_ns, runs, cpu)
        return out

    def _files(self, tid: int) -> tuple[int, int]:
        files = self.files.get(tid)
        if files is None:
            task = f"/proc/{self.pid}/task/{tid}"
            schedstat = os.open(f"{task}/schedstat", os.O_RDONLY)
            try:
                stat = os.open(f"{task}/stat", os.O_RDONLY)
            except OSError:
                os.close(schedstat)
                raise
            files = self.files[tid] = (schedstat, stat)
        return files

    def _forget(self, tid: int) -> None:
        for fd in self.files.pop(tid, ()):
            os.close(fd)

    def close(self) -> None:
        for tid in list(self.files):
            self._forget(tid)


def sample_placement(server_pid: int, client_pid: int, stop: threading.Event) -> Placement:
    """Sample until ``stop`` is set (module docstring); the server's busiest thread is its."""
    placement = Placement()
    server_thread = ThreadSamples()
    server_tasks, client_tasks = _Tasks(server_pid), _Tasks(client_pid)
    try:
        while not stop.wait(INTERVAL_S):
            server = server_tasks.read()
            client = client_tasks.read()
            if not server or not client:
                continue
            now = time.monotonic()
            ran_ns, _, cpu = max(server.values())
            server_ran = server_thread.ran(ran_ns, now)
            for tid, (t_ran_ns, t_runs, t_cpu) in client.items():
                thread = placement.threads.setdefault(tid, ThreadSamples())
                if thread.ran(t_ran_ns, now, t_runs) and server_ran:
                    thread.counted += 1
                    thread.together += int(t_cpu == cpu)
    finally:
        server_tasks.close()
        client_tasks.close()
    return placement


def sampling(
    server_pid: int, client_pid: int
) -> tuple[threading.Thread, threading.Event, list[Placement]]:
    """Start :func:`sample_placement` on a thread; set the event, join, read the list's one
    :class:`Placement`."""
    stop = threading.Event()
    result: list[Placement] = []
    thread = threading.Thread(
        target=lambda: result.append(sample_placement(server_pid, client_pid, stop)), daemon=True
    )
    thread.start()
    return thread, stop, result
