"""Child processes of the testbed and the lab: stopped the same way whatever they are."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from types import FrameType
from typing import Any, NoReturn


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
