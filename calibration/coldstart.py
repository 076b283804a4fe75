"""A thread's cold start by how long it slept, from a wake-up probe's CPU (``cpu_median_us``).

The probe (``twin testbed wakeprobe``) reads its receiver's thread CPU across each blocked
``recvfrom``: the kernel's receive, the switch out and back in, nothing of the interpreter. The
longer the thread slept, the more that costs: its caches, TLB and predictors went cold while
other work ran (a shared host sets the pace, docs/design-notes.md). The medians per gap ``g``
(us) up to the longest sleep the lab's open loops leave a thread (``max_gap_us``, its lowest
rate's period) are fitted to ``c0 + C (1 - exp(-g / tau))`` by least squares: ``C`` (us) and
``tau`` (us) are the cold start a native tool's thread pays after a sleep
(:class:`twin.path.Station` ``cold_us``, ``cold_tau_us``), the same kernel path as the probe's.
A probe that did not read its CPU (older corpora) leaves the committed one,
:data:`CPU_PROBE`, measured on this VM.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy import optimize

from twin.errors import MeasurementError
from twin.jsontext import read_json, stated_number
from twin.profile import Parameter

# The committed probe with the receiver's CPU (this VM, 2026-11-27; gaps 10 us to 10 ms).
CPU_PROBE = Path(__file__).resolve().parent / "data" / "halt_probe" / "wakeprobe_cpu.json"
MIN_GAPS = 3  # gaps the fit needs: three parameters


@dataclass(frozen=True)
class ColdStart:
    """``warm_us + cold_us * (1 - exp(-gap / tau_us))``: a blocked receive's CPU (us) after
    ``gap`` us asleep; ``source`` names the probe and the gaps it was fitted over."""

    warm_us: float
    cold_us: float
    tau_us: float
    source: str

    def cpu_us(self, gap_us: float) -> float:
        return self.warm_us + self.cold_us * -math.expm1(-gap_us / self.tau_us)

    def parameters(self, name: str) -> dict[str, Parameter]:
        """The cold start of the process ``name`` (``{name}_cold_us``, ``{name}_idle_us``)."""
        return {
            f"{name}_cold_us": Parameter(self.cold_us, f"{self.source}: its size C"),
            f"{name}_idle_us": Parameter(self.tau_us, f"{self.source}: its time constant tau"),
        }


def probe_cpu(path: Path) -> dict[float, float] | None:
    """A wake-up probe's median receive CPU per gap (us), or None for a probe that did not
    read it."""
    try:
        probe = read_json(path)
        cpu = probe.get("cpu_median_us")
        if cpu is None:
            return None
        return {
            stated_number(float(g), f"gap {g!r}"): stated_number(v, f"cpu_median_us[{g!r}]")
            for g, v in cpu.items()
        }
    except (OSError, ValueError, TypeError, AttributeError) as exc:
        raise MeasurementError(f"{path}: not a wake-up probe ({exc})") from None


def fit_cold_start(path: Path, max_gap_us: float) -> ColdStart:
    """The cold start (:class:`ColdStart`) fitted to ``path``'s receive CPU at its gaps up to
    ``max_gap_us``; a :class:`MeasurementError` naming the file without the CPU, with fewer
    than :data:`MIN_GAPS` such gaps, or whose CPU does not grow with the gap."""
    cpu = probe_cpu(path)
    if cpu is None:
        raise MeasurementError(f"{path}: the wake-up probe did not read its receiver's CPU")
    gaps = sorted(g for g in cpu if 0 < g <= max_gap_us)
    if len(gaps) < MIN_GAPS:
        raise MeasurementError(
            f"{path}: {len(gaps)} gaps up to {max_gap_us:g} us, need {MIN_GAPS} to fit a cold start"
        )
    x = np.array(gaps)
    y = np.array([cpu[g] for g in gaps])
    if not y[-1] > y[0]:
        raise MeasurementError(f"{path}: the receive's CPU does not grow with the gap")

    def model(g: np.ndarray, warm: float, cold: float, tau: float) -> np.ndarray:
        return warm + cold * -np.expm1(-g / tau)

    try:
        (warm, cold, tau), _ = optimize.curve_fit(
            model,
            x,
            y,
            p0=(y[0], y[-1] - y[0], max_gap_us / 2),
            bounds=((0.0, 0.0, x[0]), (np.inf, np.inf, 100 * max_gap_us)),
        )
    except (RuntimeError, ValueError) as exc:
        raise MeasurementError(f"{path}: no cold start fits its CPU by gap ({exc})") from None
    source = (
        f"measurement: the wake-up probe's receive CPU by gap ({path.name}, medians at "
        f"{len(gaps)} gaps of {x[0]:g}-{x[-1]:g} us: {y[0]:.1f}-{y[-1]:.1f} us), fitted to "
        f"c0 + C (1 - exp(-gap / tau)): c0 {warm:.1f} us, C {cold:.1f} us, tau {tau:.0f} us"
    )
    return ColdStart(float(warm), float(cold), float(tau), source)
