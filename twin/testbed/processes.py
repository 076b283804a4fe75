"""Child processes of the testbed and the lab: stopped the same way whatever they are."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterable, Iterator
from types import FrameType
from typing import IO, Any, NoReturn


def stop(proc: subprocess.Popen[Any], timeout_s: float = 15.0) -> None:
    """SIGTERM a child (it may drain), SIGKILL it after ``timeout_s``; close its stdout pipe."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    if proc.stdout is not None:
        proc.stdout.close()


def collapse_repeats(lines: Iterable[str], out: IO[str]) -> None:
    """Copy ``lines`` to ``out``, each run of identical lines as its first and one line saying
    how many more there were: a child that logs the same warning for every write after its
    peer left (asyncio's ``socket.send() raised exception.``: 45,989 lines from one
    ``feed-lab``) costs one line and a count, not megabytes."""
    last, repeats = None, 0

    def flush_repeats() -> None:
        if repeats:
            out.write(f"  (the line above {repeats:,} more time{'s' if repeats > 1 else ''})\n")

    for line in lines:
        if line == last:
            repeats += 1
            continue
        flush_repeats()
        out.write(line if line.endswith("\n") else line + "\n")
        out.flush()
        last, repeats = line, 0
    flush_repeats()
    out.flush()


def forward_collapsed(stream: IO[str], out: IO[str] | None = None) -> threading.Thread:
    """A daemon thread copying a child's text ``stream`` (its stderr pipe) to ``out`` (stderr)
    through :func:`collapse_repeats`, until the stream ends."""
    thread = threading.Thread(
        target=collapse_repeats, args=(stream, out or sys.stderr), daemon=True
    )
    thread.start()
    return thread


def start_spinner(cpu: int | None = None) -> subprocess.Popen[Any]:
    """A process that spins until stopped (:func:`stop`), always runnable, on vCPU ``cpu`` when
    given (else wherever the scheduler puts it): a core kept busy for a probe."""
    proc = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    if cpu is not None:
        try:
            os.sched_setaffinity(proc.pid, {cpu})
        except OSError:
            stop(proc)
            raise
    return proc


@contextlib.contextmanager
def sigterm_unwinds() -> Iterator[None]:
    """Inside, SIGTERM raises ``SystemExit(143)`` in the main thread (Python's default ends the
    process at once), so the ``finally`` blocks run: children are stopped and network namespaces
    removed, as on Ctrl-C. The previous handler is back on exit."""

    def unwind(signum: int, frame: FrameType | None) -> NoReturn:
        raise SystemExit(128 + signum)

    previous = signal.signal(signal.SIGTERM, unwind)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
