"""When an idle vCPU halts, from a halt probe (``twin testbed wakeprobe --waiter spins``).

The probe's samples pair the one-way latency to a woken thread with how long it had slept (its
idle time, us). Binned by idle time, their medians are fitted to
``L(idle) = L_halted * (1 - share * exp(-idle / tau))``: a vCPU idle for much longer than ``tau``
has halted and a wake-up costs ``L_halted``; one woken at once costs ``1 - share`` of it. The
model scales a sleeping station's drawn wake-up the same way
(:attr:`twin.path.Station.halt_share`, ``local_vcpu_halt_share`` and ``local_vcpu_halt_tau_us``).
The kernel path and an awake vCPU's wake-up are inside ``L`` and scale with it: ``share`` is
the measured one-way ratio, an upper bound on the wake-up's own.

Whether and how long the hypervisor polls a halted vCPU (KVM's adaptive halt polling,
:class:`twin.path.HaltPolling`, ``local_vcpu_halt_poll_us``) shows two ways. In a **steady** halt
probe (``--order steady``) each gap's samples come in one run, the window settles on the gap, and
a wake-up costs the polled vCPU's latency up to the longest window and a halted one's beyond
(:func:`poll_window`). A shuffled halt probe replayed through KVM's window in the order it took
its samples tells the wake-ups the window would have polled from the others: on a host that
polls they are cheaper (:func:`polling_saving`).
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from itertools import pairwise
from pathlib import Path
from typing import Any

import numpy as np
from scipy import optimize

from twin.errors import MeasurementError
from twin.jsontext import read_json
from twin.path import HaltPolling
from twin.profile import Parameter

STEADY_WARMUP = 30  # a steady probe's samples at each gap before its recorded ones
# The committed halt probe (this VM, 2026-11-25), for a corpus measured before the lab ran one.
HALT_PROBE = Path(__file__).resolve().parent / "data" / "halt_probe" / "wakeprobe_halt.json"
# The steady halt probe and a shuffled one of a host that polls (this VM, 2026-11-26; the
# corpora's hosts did not): the evidence for KVM's window (docs/design-notes.md).
STEADY_PROBE = HALT_PROBE.with_name("wakeprobe_steady.json")
POLLING_HALT_PROBE = HALT_PROBE.with_name("wakeprobe_halt_polling.json")
# A host polls when a polled wake-up's latency is this share of a halted one's below it at least.
MIN_POLL_SAVING = 0.25
# Idle-time bins (us) the medians are taken over; a bin needs this many samples.
IDLE_EDGES_US = (0.0, 2.0, 4.0, 6.0, 8.0, 10.0, 13.0, 16.0, 20.0, 30.0, 50.0, 100.0, 200.0)
MIN_BIN_SAMPLES = 10


class GapOrder(StrEnum):
    """In which order a wake-up probe (`twin testbed wakeprobe`) takes its gaps: what its
    writer and its readers share (:func:`gap_sequence`)."""

    SHUFFLED = "shuffled"  # every gap's samples mixed: a drift of the host hits each alike
    STEADY = "steady"  # each gap's samples in one run, shortest gap first, after a warm-up


def gap_sequence(
    gaps_us: Sequence[float], samples: int, seed: int, order: GapOrder
) -> list[tuple[float, bool]]:
    """The gaps a probe takes, in order, each with whether its sample is recorded: shuffled
    (``seed``), after one unrecorded warm-up at the first gap; or steady, each gap's
    :data:`STEADY_WARMUP` unrecorded samples then its recorded ones, shortest gap first. A
    probe's JSON (its gaps, samples, seed and order) gives its samples' order back."""
    if order == GapOrder.STEADY:
        return [
            (g, n >= STEADY_WARMUP) for g in sorted(gaps_us) for n in range(STEADY_WARMUP + samples)
        ]
    shuffled = [g for g in gaps_us for _ in range(samples)]
    random.Random(seed).shuffle(shuffled)
    return [(gaps_us[0], False)] + [(g, True) for g in shuffled]


@dataclass(frozen=True)
class _HaltProbe:
    """A halt probe's samples, every gap's in the probe file's order: latency and idle time
    (us), and where each gap's samples are (``gaps``: key -> slice)."""

    path: Path
    raw: dict[str, Any]
    latency: np.ndarray
    idle: np.ndarray
    gaps: dict[str, slice]


def _samples(values: Any) -> np.ndarray:
    """A gap's measured times (us): finite numbers >= 0, else ValueError."""
    samples = np.asarray(values, float)
    if samples.ndim != 1 or not (np.isfinite(samples).all() and (samples >= 0).all()):
        raise ValueError(f"samples must be a list of finite numbers >= 0, got {values!r:.60}")
    return samples


def _read(path: Path) -> _HaltProbe:
    try:
        probe = read_json(path)
        if probe.get("waiter") != "spins":
            raise ValueError("its sender blocked for the replies (waiter is not 'spins')")
        gaps, start = {}, 0
        for gap, values in probe["latency_us"].items():
            gaps[gap] = slice(start, start + len(values))
            start += len(values)
        latency = np.concatenate([_samples(probe["latency_us"][g]) for g in gaps])
        idle = np.concatenate([_samples(probe["idle_us"][g]) for g in gaps])
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise MeasurementError(f"{path}: not a halt probe ({exc})") from None
    if latency.shape != idle.shape:
        raise MeasurementError(f"{path}: not a halt probe (latency and idle samples differ)")
    return _HaltProbe(path, probe, latency, idle, gaps)


def _replayed(probe: _HaltProbe, polling: HaltPolling) -> np.ndarray:
    """Which of a halt probe's samples came within ``polling``'s window: the samples replayed
    in the order the probe took them (:func:`gap_sequence`) through the window's rule
    (:meth:`twin.path.HaltPolling.adapt`, from a closed window)."""
    raw = probe.raw
    try:
        order = GapOrder(raw.get("order", GapOrder.SHUFFLED))
        sequence = gap_sequence(raw["gaps_us"], int(raw["samples"]), raw["seed"], order)
    except (ValueError, KeyError, TypeError) as exc:
        raise MeasurementError(f"{probe.path}: not a halt probe ({exc})") from None
    taken = dict.fromkeys(probe.gaps, 0)
    polled = np.zeros(len(probe.idle), dtype=bool)
    window = 0.0
    for gap, recorded in sequence:
        key = str(float(gap))
        part = probe.gaps.get(key)
        if not recorded or part is None or part.start + taken[key] >= part.stop:
            continue
        k = part.start + taken[key]
        taken[key] += 1
        polled[k], window = polling.adapt(window, float(probe.idle[k]))
    return polled


def polling_saving(path: Path, polling: HaltPolling) -> float:
    """What the host's polling saved in a shuffled halt probe, its samples replayed through
    ``polling``'s window in the order the probe took them: per gap with
    :data:`MIN_BIN_SAMPLES` samples polled and as many not, ``1 - median(polled) /
    median(not polled)``; the median over those gaps (0 without one)."""
    probe = _read(path)
    polled = _replayed(probe, polling)
    ratios = []
    for part in probe.gaps.values():
        latency, within = probe.latency[part], polled[part]
        if min(within.sum(), (~within).sum()) >= MIN_BIN_SAMPLES:
            ratios.append(float(np.median(latency[within]) / np.median(latency[~within])))
    return 1.0 - float(np.median(ratios)) if ratios else 0.0


def halt_law(path: Path, polling: HaltPolling | None = None) -> tuple[float, float, float]:
    """``(share, tau_us, halted_us)`` fitted to a halt probe's binned medians (module docstring);
    on a host that polls (``polling``: its window), the samples its window would have polled
    (replayed as :func:`polling_saving` does) binned apart and fitted to
    ``L_halted * (1 - share)``."""
    probe = _read(path)
    latency, idle = probe.latency, probe.idle
    polled = _replayed(probe, polling) if polling is not None else np.zeros(len(idle), dtype=bool)
    x, y, c = [], [], []
    for within in (False, True):
        for lo, hi in pairwise(IDLE_EDGES_US):
            chosen = (idle >= lo) & (idle < hi) & (polled == within)
            if chosen.sum() >= MIN_BIN_SAMPLES:
                x.append(float(np.median(idle[chosen])))
                y.append(float(np.median(latency[chosen])))
                c.append(within)
    if len(x) < 4:
        raise MeasurementError(f"{path}: a halt probe needs idle times in 4 bins or more")
    xs, ys, cs = np.asarray(x), np.asarray(y), np.asarray(c)
    fit = optimize.least_squares(
        lambda p: p[0] * (1.0 - p[1] * np.where(cs, 1.0, np.exp(-xs / p[2]))) - ys,
        [float(ys.max()), 0.5, 5.0],
        bounds=([0.0, 0.0, 0.1], [math.inf, 1.0, 1000.0]),
    )
    halted, share, tau = (float(v) for v in fit.x)
    return share, tau, halted


def halt_parameters(path: Path, polling: HaltPolling | None = None) -> dict[str, Parameter]:
    """``local_vcpu_halt_share`` and ``local_vcpu_halt_tau_us`` measured by a halt probe (on a
    host that polls, ``polling``: :func:`halt_law`)."""
    share, tau, halted = halt_law(path, polling)
    source = (
        f"measurement: twin testbed wakeprobe --waiter spins ({path.name}): one-way latency "
        f"{halted:.1f} us x (1 - {share:.2f} exp(-idle / {tau:.1f} us)) fitted to its medians "
        f"by idle time"
        + ("" if polling is None else ", the wake-ups KVM's window polls apart (1 - share)")
    )
    return {
        "local_vcpu_halt_share": Parameter(share, source),
        "local_vcpu_halt_tau_us": Parameter(tau, source),
    }


def socket_wake_parameter(path: Path, polling: HaltPolling | None = None) -> Parameter:
    """``local_socket_wake_us``: what a socket's wake-up of a thread asleep on a halted vCPU
    costs beyond one on an awake vCPU (us), ``share * L_halted`` of the halt probe's law
    (:func:`halt_law`). The probe's sender never halts, as a thread that writes to a socket is
    awake when it does; the model pays all of it after a halt and none before or while the
    host polls (:attr:`twin.path.Hop.wake`)."""
    share, _, halted = halt_law(path, polling)
    return Parameter(
        share * halted,
        f"measurement: twin testbed wakeprobe --waiter spins ({path.name}): a halted vCPU's "
        f"one-way latency less an awake one's, {share:.2f} x {halted:.1f} us of its law",
    )


def poll_window(path: Path) -> tuple[float, float, float]:
    """``(window_us, polled_us, halted_us)`` of a steady halt probe: the median latencies after
    its shortest and its longest gap, and the longest window the host polls, halfway (in the
    receiver's median idle time) between the longest gap whose median latency is nearer the
    polled one and the next gap; a window of 0 where the longest gap's latency is not
    :data:`MIN_POLL_SAVING` dearer (the host does not poll)."""
    try:
        probe = read_json(path)
        if probe.get("waiter") != "spins" or probe.get("order") != "steady":
            raise ValueError("not a spinning sender's steady gaps (waiter spins, order steady)")
        gaps = sorted(probe["latency_us"], key=float)
        latency = [float(np.median(_samples(probe["latency_us"][g]))) for g in gaps]
        idle = [float(np.median(_samples(probe["idle_us"][g]))) for g in gaps]
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise MeasurementError(f"{path}: not a steady halt probe ({exc})") from None
    if len(gaps) < 3:
        raise MeasurementError(f"{path}: a steady halt probe needs 3 gaps or more")
    polled, halted = latency[0], latency[-1]
    if halted - polled < MIN_POLL_SAVING * halted:
        return 0.0, polled, halted
    middle = 0.5 * (polled + halted)
    last = max(i for i, x in enumerate(latency) if x < middle)
    if last == len(gaps) - 1:
        raise MeasurementError(f"{path}: no gap beyond the polling window")
    return 0.5 * (idle[last] + idle[last + 1]), polled, halted


def poll_window_parameters(path: Path) -> dict[str, Parameter]:
    """``local_vcpu_halt_poll_us`` measured by a steady halt probe (:func:`poll_window`)."""
    window, polled, halted = poll_window(path)
    where = f"measurement: twin testbed wakeprobe --waiter spins --order steady ({path.name})"
    if window <= 0:
        source = (
            f"{where}: one-way latency p50 {polled:.1f} us after its shortest steady sleeps, "
            f"{halted:.1f} us after its longest: no polling window"
        )
    else:
        source = (
            f"{where}: one-way latency p50 {polled:.1f} us after steady short sleeps, "
            f"{halted:.1f} us after long ones; the step at {window:.0f} us of sleep"
        )
    return {"local_vcpu_halt_poll_us": Parameter(window, source)}


def polling_parameters(path: Path, polling: HaltPolling) -> dict[str, Parameter]:
    """``local_vcpu_halt_poll_us`` from a shuffled halt probe (:func:`polling_saving`):
    ``polling``'s window where the wake-ups it would have polled were :data:`MIN_POLL_SAVING`
    cheaper or more, else 0 (the host does not poll)."""
    saving = polling_saving(path, polling)
    polls = saving >= MIN_POLL_SAVING
    source = (
        f"measurement: twin testbed wakeprobe --waiter spins ({path.name}) replayed through "
        f"KVM's window (at most {polling.max_us:g} us, grow {polling.grow:g}, shrink "
        f"{polling.shrink:g}): the wake-ups it polls {saving:.0%} cheaper than the others, "
        + ("the host polls" if polls else "the host does not poll")
    )
    return {"local_vcpu_halt_poll_us": Parameter(polling.max_us if polls else 0.0, source)}
