"""What the system-call probe (``twin testbed syscalls``, :mod:`twin.testbed.syscalls`) tells
the model of a native thread's socket calls on the lab's host.

* A TCP read takes every message waiting on its connection at about the cost of one, so a busy
  server's CPU a message falls from its own calls towards its sends' share; a UDP read takes one
  datagram. The probe writes ``per_read_share``, ``(poll + recv) / (poll + recv + send)`` of one
  message over TCP loopback (a fraction in ``[0, 1]``): :func:`per_read_share`.
* A send of one message (us), over each transport, loopback's receiving protocol work included:
  :func:`send_cost`, where a corpus's runs do not state a spinning sender's own.

:data:`SYSCALL_PROBE` is the one committed beside the corpora, measured on the lab's host type.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from twin.errors import MeasurementError
from twin.jsontext import read_json
from twin.kinds import Transport
from twin.profile import Parameter

SYSCALL_PROBE = Path(__file__).resolve().parent / "data" / "syscalls" / "syscalls_2026-11-29.json"


@dataclass(frozen=True)
class SyscallProbe:
    """One probe's output: where it is, its ``per_read_share`` and, per transport, a send's,
    a poll's and a one-message recv's CPU (us)."""

    path: Path
    read_share: float
    send_us: dict[Transport, float]
    poll_us: dict[Transport, float]
    recv_one_us: dict[Transport, float]


def read_probe(path: Path = SYSCALL_PROBE) -> SyscallProbe:
    """The probe at ``path``; a file that is not such a probe's (unreadable, a part missing, a
    share outside ``[0, 1]``) raises :class:`twin.errors.MeasurementError` naming it."""
    try:
        data = read_json(Path(path))
        parts = {t: data["transports"][str(t)] for t in Transport}
        probe = SyscallProbe(
            Path(path),
            float(data["per_read_share"]),
            {t: float(part["send_us"]) for t, part in parts.items()},
            {t: float(part["poll_us"]) for t, part in parts.items()},
            {t: float(part["recv_us"]["1"]) for t, part in parts.items()},
        )
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise MeasurementError(f"{path}: not a syscall probe's output ({exc})") from None
    if not 0.0 <= probe.read_share <= 1.0:
        raise MeasurementError(f"{path}: per_read_share {probe.read_share} is not in [0, 1]")
    return probe


def per_read_share(path: Path = SYSCALL_PROBE) -> Parameter:
    """The share of a native TCP server's own calls a message paid once per read, with its
    source (:func:`read_probe`)."""
    probe = read_probe(path)
    tcp = Transport.TCP
    return Parameter(
        probe.read_share,
        f"measurement: twin testbed syscalls ({probe.path.name}): over TCP loopback a poll "
        f"{probe.poll_us[tcp]:.1f} us and a recv of one message {probe.recv_one_us[tcp]:.1f} us "
        f"a read, a send {probe.send_us[tcp]:.1f} us a message",
    )


def send_cost(transport: Transport, path: Path = SYSCALL_PROBE) -> Parameter:
    """A send of one message over ``transport`` (us, ``local_sender_send_us``), with its
    source (:func:`read_probe`)."""
    probe = read_probe(path)
    return Parameter(
        probe.send_us[transport],
        f"measurement: twin testbed syscalls ({probe.path.name}): a send of one message over "
        f"{transport} loopback, from Python",
    )
