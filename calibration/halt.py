"""When an idle vCPU halts, from a halt probe (``twin testbed wakeprobe --waiter spins``).

The probe's samples pair the one-way latency to a woken thread with how long it had slept (its
idle time, us). Binned by idle time, their medians are fitted to
``L(idle) = L_halted * (1 - share * exp(-idle / tau))``: a vCPU idle for much longer than ``tau``
has halted and a wake-up costs ``L_halted``; one woken at once costs ``1 - share`` of it. The
model scales a sleeping station's drawn wake-up the same way
(:attr:`twin.path.Station.halt_share`, ``local_vcpu_halt_share`` and ``local_vcpu_halt_tau_us``).
The kernel path and an awake vCPU's wake-up are inside ``L`` and scale with it: ``share`` is
the measured one-way ratio, an upper bound on the wake-up's own.
"""

from __future__ import annotations

import json
import math
from itertools import pairwise
from pathlib import Path

import numpy as np
from scipy import optimize

from twin.errors import MeasurementError
from twin.profile import Parameter

# The committed halt probe (this VM, 2026-11-25), for a corpus measured before the lab ran one.
HALT_PROBE = Path(__file__).resolve().parent / "data" / "halt_probe" / "wakeprobe_halt.json"
# Idle-time bins (us) the medians are taken over; a bin needs this many samples.
IDLE_EDGES_US = (0.0, 2.0, 4.0, 6.0, 8.0, 10.0, 13.0, 16.0, 20.0, 30.0, 50.0, 100.0, 200.0)
MIN_BIN_SAMPLES = 10


def _samples(path: Path) -> tuple[np.ndarray, np.ndarray]:
    try:
        probe = json.loads(path.read_text())
        if probe.get("waiter") != "spins":
            raise ValueError("its sender blocked for the replies (waiter is not 'spins')")
        gaps = list(probe["latency_us"])
        latency = np.concatenate([np.asarray(probe["latency_us"][g], float) for g in gaps])
        idle = np.concatenate([np.asarray(probe["idle_us"][g], float) for g in gaps])
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise MeasurementError(f"{path}: not a halt probe ({exc})") from None
    if latency.shape != idle.shape:
        raise MeasurementError(f"{path}: not a halt probe (latency and idle samples differ)")
    return latency, idle


def halt_law(path: Path) -> tuple[float, float, float]:
    """``(share, tau_us, halted_us)`` fitted to a halt probe's binned medians (module docstring)."""
    latency, idle = _samples(path)
    x, y = [], []
    for lo, hi in pairwise(IDLE_EDGES_US):
        chosen = (idle >= lo) & (idle < hi)
        if chosen.sum() >= MIN_BIN_SAMPLES:
            x.append(float(np.median(idle[chosen])))
            y.append(float(np.median(latency[chosen])))
    if len(x) < 4:
        raise MeasurementError(f"{path}: a halt probe needs idle times in 4 bins or more")
    xs, ys = np.asarray(x), np.asarray(y)
    fit = optimize.least_squares(
        lambda p: p[0] * (1.0 - p[1] * np.exp(-xs / p[2])) - ys,
        [float(ys.max()), 0.5, 5.0],
        bounds=([0.0, 0.0, 0.1], [math.inf, 1.0, 1000.0]),
    )
    halted, share, tau = (float(v) for v in fit.x)
    return share, tau, halted


def halt_parameters(path: Path) -> dict[str, Parameter]:
    """``local_vcpu_halt_share`` and ``local_vcpu_halt_tau_us`` measured by a halt probe."""
    share, tau, halted = halt_law(path)
    source = (
        f"measurement: twin testbed wakeprobe --waiter spins ({path.name}): one-way latency "
        f"{halted:.1f} us x (1 - {share:.2f} exp(-idle / {tau:.1f} us)) fitted to its medians "
        f"by idle time"
    )
    return {
        "local_vcpu_halt_share": Parameter(share, source),
        "local_vcpu_halt_tau_us": Parameter(tau, source),
    }
