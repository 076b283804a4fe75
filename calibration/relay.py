"""The delaying relay's own work, from what its runs of a point measured (``relay.json``).

``twin testbed relay`` writes its stats beside each run (:mod:`twin.testbed.relay`): the work
per event (one read or one write, ``work``), the reads' and the writes' apart, and each read's
work by how long the relay had slept before it (``reads_by_idle_gap``). The model's relay
(:func:`twin.components.loopback.relay_thread`) pays a read and a write per message and
direction: ``2 x local_relay_work_us`` warm, plus a **cold start**
``local_relay_cold_us x (1 - exp(-gap / local_relay_idle_us))`` after sleeping ``gap`` us.

The pass's law is the read's, scaled: ``warm + cold (1 - exp(-g / tau))`` fitted to the reads
by the sleep ``g`` before them (the means of each class, over the sleeps the point's load
leaves, :data:`MAX_GAP_PERIODS` periods), times ``k``, the point's work per pass (mean read plus
mean write) over its mean read. A write on loopback runs the receiver's side of the kernel path
in the relay's thread and wakes the receiver, so it costs more the longer the receiver slept,
which at a low rate is as long as the relay: it falls with the load as the reads do, not with
the relay's own sleep (its writes classed by the sleep before the read they forward,
``writes_by_read_gap``, say so: docs/design-notes.md, "The relay's cold start"). A run without
the gap classes (older corpora) gives a flat work, its mean per event.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from calibration.testbed.fit import fit_cold_start, gap_middles
from twin.errors import MeasurementError
from twin.jsontext import read_json, stated_number
from twin.profile import Parameter

RELAY_STATS = "relay.json"
# Reads after a longer sleep than this many of the point's periods are left out of the law: the
# load leaves none, a stall or a hiccup does (a few reads whose work took the hiccup too).
MAX_GAP_PERIODS = 2.0


@dataclass(frozen=True)
class RelayWork:
    """The relay's work: ``warm_us`` per event (a read or a write) with no sleep before, and a
    pass's (read and write) cold start ``cold_us`` with time constant ``idle_us`` (us);
    ``source`` names the point and how it was measured."""

    warm_us: float
    cold_us: float
    idle_us: float
    source: str

    def __post_init__(self) -> None:
        if not (self.warm_us >= 0 and self.cold_us >= 0 and self.idle_us > 0):
            raise MeasurementError(f"{self.source}: not a relay's work ({self})")

    def pass_us(self, reads_by_idle_gap: Mapping[str, Sequence[float]]) -> float:
        """The mean work of a pass (read and write, us) this law gives over the sleeps before a
        run's reads (its ``reads_by_idle_gap``)."""
        count = np.asarray(reads_by_idle_gap["count"], dtype=float)
        gap = gap_middles(reads_by_idle_gap["gap_from_us"])
        grown = float(np.dot(count, -np.expm1(-gap / self.idle_us)) / count.sum())
        return 2.0 * self.warm_us + self.cold_us * grown

    def parameters(self) -> dict[str, Parameter]:
        """The profile's ``local_relay_work_us``, ``local_relay_cold_us`` and
        ``local_relay_idle_us``."""
        return {
            "local_relay_work_us": Parameter(self.warm_us, f"{self.source}: warm, per event"),
            "local_relay_cold_us": Parameter(self.cold_us, f"{self.source}: a pass's cold start"),
            "local_relay_idle_us": Parameter(self.idle_us, f"{self.source}: its time constant"),
        }


def relay_stats(run: Path) -> dict[str, Any] | None:
    """A run's ``relay.json``, or None for a run without a relay; a :class:`MeasurementError`
    naming the file where it is not the relay's stats."""
    path = run / RELAY_STATS
    if not path.is_file():
        return None
    try:
        stats = read_json(path)
        stated_number(stats["work"]["mean_us"], "work.mean_us")
        for part in ("read_work", "write_work"):
            if isinstance(stats.get(part), dict) and "mean_us" in stats[part]:
                stated_number(stats[part]["mean_us"], f"{part}.mean_us")
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise MeasurementError(f"{path}: not the relay's stats ({exc})") from None
    return dict(stats)


def _pooled(stats: Sequence[dict[str, Any]], key: str) -> dict[str, list[float]] | None:
    """The runs' table ``key`` of work by gap as one (counts summed, means weighted by them),
    or None where a run has none or the runs' classes differ."""
    tables: list[Any] = [s.get(key) for s in stats]
    try:
        edges = [float(x) for x in tables[0]["gap_from_us"]]
        if any([float(x) for x in t["gap_from_us"]] != edges for t in tables):
            return None
        counts = np.asarray([t["count"] for t in tables], dtype=float)
        work = (np.asarray([t["mean_us"] for t in tables], dtype=float) * counts).sum(axis=0)
        count = counts.sum(axis=0)
    except (KeyError, TypeError, ValueError):
        return None
    mean = np.divide(work, count, out=np.zeros_like(work), where=count > 0)
    return {"gap_from_us": edges, "count": count.tolist(), "mean_us": mean.tolist()}


def relay_work(runs: Sequence[Path], label: str, period_us: float) -> RelayWork | None:
    """The relay's work (:class:`RelayWork`) that ``runs`` of a point (``label``; its load's
    mean gap between messages ``period_us``) measured, or None for runs without a relay; a
    :class:`MeasurementError` naming a broken ``relay.json``."""
    stats = [s for s in (relay_stats(run) for run in runs) if s is not None]
    if not stats:
        return None
    n = len(stats)
    mean = statistics.median(float(s["work"]["mean_us"]) for s in stats)
    reads = _pooled(stats, "reads_by_idle_gap")
    try:
        read = statistics.median(float(s["read_work"]["mean_us"]) for s in stats)
        write = statistics.median(float(s["write_work"]["mean_us"]) for s in stats)
    except (KeyError, TypeError, ValueError):
        read = write = 0.0  # older stats: no reads and writes apart
    flat = RelayWork(
        mean,
        0.0,
        1.0,
        f"measurement: the relay's work at {label} (median of {n} runs' mean, {RELAY_STATS})",
    )
    if reads is None or read <= 0:
        return flat
    warm, cold, tau = fit_cold_start(reads, "mean_us", MAX_GAP_PERIODS * period_us)
    if cold <= 0:
        return flat
    scale = (read + write) / read
    return RelayWork(
        scale * warm / 2.0,
        scale * cold,
        tau,
        f"measurement: the relay's work at {label} ({RELAY_STATS} of {n} runs: its reads' law "
        f"by the sleep before them, {warm:.2f} + {cold:.2f} (1 - exp(-gap / {tau:.0f})) us, "
        f"scaled by a pass's work over a read's, {scale:.2f})",
    )
