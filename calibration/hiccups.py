"""The host's hiccups, read off the hiccup probe (:mod:`twin.testbed.hiccups`).

A hiccup is a gap of at least :data:`HICCUP_MIN_US` in a spinning thread's clock reads: its vCPU
went to something else. Shorter gaps are the scheduler tick and interrupts, whose time the
kernel charges to the thread they interrupt, so the CPU a calibration point measures a message
holds them already; the longer ones are mostly the hypervisor's (steal, which is charged to no
thread) and long softirq or kernel-thread work. The model's hiccups (:class:`twin.path.Hiccups`)
come at a rate per vCPU and last **as long as the probe measured**: the gaps' quantiles at
:data:`twin.percentiles.HICCUP_QUANTILES` and their longest, which the model joins log-linearly
(:func:`twin.components.loopback.vcpu_hiccups`). Not a fitted law: one with the gaps' median and
mean gets the hiccups of milliseconds wrong, and those set a busy point's p99 (design notes).
With several probe files (a lab's, one before each pass) the law is the median file's: its rate,
quantiles and longest each the median over the files (:func:`_law_parameters`).

Two probes: every vCPU spinning at once (``local_vcpu_hiccup_*``, the hiccups of a vCPU whose
neighbours are busy) and each alone while the others idle (``local_vcpu_hiccup_alone_*``; the
guest's kernel threads then take the idle vCPU instead); a corpus without the second takes the
first for both, as the model did before it (whatever the other vCPU does).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from enum import StrEnum
from pathlib import Path
from typing import Any

import numpy as np

from twin.components.loopback import HICCUP_ALONE, HICCUP_BUSY
from twin.errors import MeasurementError
from twin.jsontext import read_json, stated_number
from twin.percentiles import HICCUP_QUANTILES
from twin.profile import Parameter

HICCUP_MIN_US = 50.0


class Mode(StrEnum):
    """Which vCPUs a probe spun at once (its file's ``mode``): all of them, or each in turn while
    the others idle."""

    TOGETHER = "together"
    ALONE = "alone"


@dataclass(frozen=True)
class HiccupSummary:
    """The probe's hiccups pooled over its vCPUs (and files): how many a second of a vCPU,
    their lengths (us), the share of the time they took, the vCPUs' steal (percent)."""

    seconds: float  # vCPU-seconds spun
    lengths_us: np.ndarray
    steal_pct: float

    @property
    def rate_per_s(self) -> float:
        return len(self.lengths_us) / self.seconds

    @property
    def share(self) -> float:
        return float(self.lengths_us.sum()) / (self.seconds * 1e6)

    def quantiles(self) -> dict[str, float]:
        """The gaps' quantiles (us) at :data:`twin.percentiles.HICCUP_QUANTILES`, by key."""
        levels = np.array(list(HICCUP_QUANTILES.values())) / 100.0
        values = np.quantile(self.lengths_us, levels)
        return dict(zip(HICCUP_QUANTILES, (float(v) for v in values), strict=True))


def _read(path: Path) -> dict[str, Any]:
    try:
        data = read_json(path)
    except (OSError, ValueError) as exc:
        raise MeasurementError(f"{path}: not a hiccup probe ({exc})") from exc
    if not isinstance(data, dict):
        raise MeasurementError(f"{path}: not a hiccup probe (not a JSON object)")
    cpus = data.get("cpus")
    if data.get("tool") != "twin testbed hiccups" or not isinstance(cpus, list) or not cpus:
        raise MeasurementError(f"{path}: not a hiccup probe (no 'cpus' of twin testbed hiccups)")
    for k, cpu in enumerate(cpus):
        ok = isinstance(cpu, dict) and isinstance(cpu.get("gaps_us"), list)
        spun = cpu.get("spun_s") if ok else None
        if not ok or not isinstance(spun, int | float) or not 0 < spun < math.inf:
            raise MeasurementError(f"{path}: cpus[{k}] needs spun_s > 0 and a list gaps_us")
        try:
            for j, gap in enumerate(cpu["gaps_us"]):
                stated_number(gap, f"cpus[{k}].gaps_us[{j}]")
            if "steal_pct" in cpu:  # optional; summarize reads it whenever it is there
                stated_number(cpu["steal_pct"], f"cpus[{k}].steal_pct")
        except ValueError as exc:
            raise MeasurementError(f"{path}: {exc}") from None
    return data


def summarize(paths: Sequence[Path]) -> HiccupSummary:
    """The hiccups of one or more probe files, pooled (every vCPU of every file)."""
    if not paths:
        raise MeasurementError("no hiccup probe to read")
    seconds, steal, lengths = 0.0, 0.0, []
    for path in paths:
        for cpu in _read(Path(path))["cpus"]:
            gaps = np.asarray(cpu["gaps_us"], dtype=float)
            lengths.append(gaps[gaps >= HICCUP_MIN_US])
            seconds += float(cpu["spun_s"])
            steal += float(cpu.get("steal_pct", 0.0)) * float(cpu["spun_s"])
    return HiccupSummary(seconds, np.concatenate(lengths), steal / seconds)


@dataclass(frozen=True)
class ProbeReport:
    """One hiccup probe file as a reader of a matrix sees it: its name, how its vCPUs spun
    (:class:`Mode`), its hiccups a second of a vCPU and the share of the time they took
    (percent)."""

    file: str
    mode: Mode
    rate_per_s: float
    share_pct: float


def probe_reports(paths: Sequence[Path], mode: Mode) -> list[ProbeReport]:
    """Each probe file of one ``mode`` on its own (:func:`summarize`), in the given order."""
    return [
        ProbeReport(Path(path).name, mode, (s := summarize([path])).rate_per_s, 100.0 * s.share)
        for path in paths
    ]


def _law_parameters(paths: Sequence[Path], prefix: str, probe: str) -> dict[str, Parameter]:
    """``{prefix}_rate_per_s``, the quantiles ``{prefix}_p25_us`` .. and ``{prefix}_max_us`` of
    the probe files (``probe`` says which: how the vCPUs spun), each the **median over the
    files** of that file's own (its vCPUs pooled; the quantiles and longest over the files that
    met a hiccup); only the rate (0) where that median is 0.

    A lab probes the host once before each pass, so each file is the host's state at one moment.
    The median keeps the state the passes' runs met: a probe that met an episode of its own (a
    host task time-slicing a vCPU for seconds) would otherwise set every point's tail, while the
    runs of its pass, minutes later, did not meet it (design notes, "A hiccup probe's episode").
    """
    summaries = [summarize([path]) for path in paths]
    rate = float(np.median([s.rate_per_s for s in summaries]))
    met = [s for s in summaries if len(s.lengths_us)]
    names = ", ".join(Path(p).name for p in paths)
    shares = ", ".join(f"{100 * s.share:.2f}%" for s in summaries)
    where = (
        f"measurement: twin testbed hiccups beside the corpus ({names}; {probe}): the median over "
        f"the {len(paths)} probes of each probe's gaps of {HICCUP_MIN_US:g} us or more, "
        f"{sum(len(s.lengths_us) for s in summaries)} in "
        f"{sum(s.seconds for s in summaries):.0f} vCPU-seconds spun, the probes' shares of the "
        f"time {shares} (steal {max(s.steal_pct for s in summaries):.2f}% at most)"
    )
    if rate <= 0 or not met:
        return {f"{prefix}_rate_per_s": Parameter(0.0, where)}
    shape = f"{where}; the gaps' quantiles (calibration.hiccups)"
    each = [s.quantiles() for s in met]
    lengths = {
        f"{prefix}_{key}_us": float(np.median([q[key] for q in each])) for key in HICCUP_QUANTILES
    }
    lengths[f"{prefix}_max_us"] = float(np.median([s.lengths_us.max() for s in met]))
    return {
        f"{prefix}_rate_per_s": Parameter(rate, where),
        **{name: Parameter(value, shape) for name, value in lengths.items()},
    }


def hiccup_parameters(
    paths: Sequence[Path], alone_paths: Sequence[Path] = ()
) -> dict[str, Parameter]:
    """The profile's hiccup parameters from the probe files: ``local_vcpu_hiccup_*`` from the
    probes with every vCPU spinning (``paths``), ``local_vcpu_hiccup_alone_*`` from those with
    each alone (``alone_paths``; without any, the first's, so the rate follows nothing); none
    (rate 0) where a probe met no hiccup."""
    together = _law_parameters(paths, HICCUP_BUSY, "every vCPU spinning")
    floor = Parameter(
        HICCUP_MIN_US,
        "measurement convention: the shortest gap counted as a hiccup (calibration.hiccups)",
    )
    if alone_paths:
        alone = _law_parameters(alone_paths, HICCUP_ALONE, "each vCPU alone, the others idle")
    else:
        alone = {
            key.replace(HICCUP_BUSY, HICCUP_ALONE, 1): replace(
                value,
                source=f"{value.source}; no probe with a vCPU alone beside the corpus: the same "
                "whatever the other vCPUs do",
            )
            for key, value in together.items()
        }
    return {**together, **alone, f"{HICCUP_BUSY}_floor_us": floor}
