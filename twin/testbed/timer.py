"""A nanosecond wake-up the load client's selector can wait on: a Linux ``timerfd``.

The client is one thread waiting on its sockets; it must also wake at each scheduled send time.
``epoll``'s own timeout is in whole milliseconds (Python rounds it up), far too coarse for
sends a few hundred microseconds apart, and sleeping instead would leave replies unread. A
``timerfd`` armed at an absolute ``CLOCK_MONOTONIC`` time (the clock behind
``time.perf_counter_ns`` on Linux) is one more readable file descriptor in the same ``epoll``
set, so one wait covers both. Python 3.11 has no ``os.timerfd_*``, hence ``ctypes``.
"""

from __future__ import annotations

import ctypes
import os

CLOCK_MONOTONIC = 1
TFD_NONBLOCK = os.O_NONBLOCK
TFD_CLOEXEC = os.O_CLOEXEC
TFD_TIMER_ABSTIME = 1
_PR_SET_TIMERSLACK = 29


class _Timespec(ctypes.Structure):
    _fields_ = [("tv_sec", ctypes.c_long), ("tv_nsec", ctypes.c_long)]


class _Itimerspec(ctypes.Structure):
    _fields_ = [("it_interval", _Timespec), ("it_value", _Timespec)]


_libc = ctypes.CDLL(None, use_errno=True)


def precise_timer_slack() -> None:
    """Lower the calling thread's timer slack to 1 ns, so timed waits end on time."""
    _libc.prctl(_PR_SET_TIMERSLACK, 1, 0, 0, 0)


class WakeTimer:
    """A one-shot timer file descriptor; :meth:`arm_at` sets its absolute expiry (ns)."""

    def __init__(self) -> None:
        fd = _libc.timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC)
        if fd < 0:
            err = ctypes.get_errno()
            raise OSError(err, f"timerfd_create: {os.strerror(err)}")
        self.fd: int = fd
        self._spec = _Itimerspec()
        self.armed_ns = -1

    def fileno(self) -> int:
        return self.fd

    def arm_at(self, t_ns: int) -> None:
        """Expire at ``t_ns`` on CLOCK_MONOTONIC (a time already past expires at once)."""
        if t_ns == self.armed_ns:
            return
        self._spec.it_value.tv_sec, self._spec.it_value.tv_nsec = divmod(max(t_ns, 1), 10**9)
        if _libc.timerfd_settime(self.fd, TFD_TIMER_ABSTIME, ctypes.byref(self._spec), None):
            err = ctypes.get_errno()
            raise OSError(err, f"timerfd_settime: {os.strerror(err)}")
        self.armed_ns = t_ns

    def clear(self) -> None:
        """Consume an expiry (the descriptor stays readable until this is called)."""
        try:
            os.read(self.fd, 8)
        except BlockingIOError:
            pass
        self.armed_ns = -1

    def close(self) -> None:
        os.close(self.fd)
