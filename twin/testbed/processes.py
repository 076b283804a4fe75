"""Child processes of the testbed and the lab: stopped the same way whatever they are."""

from __future__ import annotations

import signal
import subprocess
from typing import Any


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
