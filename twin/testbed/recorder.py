"""The load client's records: round trips in HDR interval histograms, timings, result files.

The client's loop only appends integers to arrays (``array('q')``, tens of nanoseconds
each); the arrays are folded into the interval's counts (:func:`twin.histogram.record_ns`,
compiled, reading the array's buffer in place) every :data:`FOLD_SAMPLES` round trips, a pause
of a few microseconds, so recording never stops the loop for long. The round trips go to an
HdrHistogram interval log (one histogram per ``interval_s``, all kinds together) and to
per-kind totals; the totals are exactly the sum of the logged intervals, so the JSON summary's
percentiles can be recomputed from the log. The log is written when the run closes (its
intervals kept sparse until then): encoding it as each interval ends would stop an open loop's
sends for that long, and the round trips counted from their scheduled times would carry the
pause.
"""

from __future__ import annotations

import time
from array import array
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from hdrh.histogram import HdrHistogram
from hdrh.log import HistogramLogWriter

from calibration.testbed.summary import LoadSummary
from twin.atomic import write_json, write_text
from twin.histogram import empty_counts, record_ns, to_hdr
from twin.output import hgrm_of
from twin.results import percentiles_us

KINDS = ("order", "cancel")
# Round trips a kind's pending array holds before they are folded into the interval's counts:
# a few microseconds of compiled work. (Folding a Python list through numpy cost 140-500 us a
# fold, a stall every 1,024 round trips of a kind that the load's tail carried: design notes.)
FOLD_SAMPLES = 1024
# Edges (us) of the idle-gap classes of :func:`work_by_gap`: how long the process had been
# idle before a piece of work (a cold start after a long idle is slower: caches, frequency,
# vCPU wake).
GAP_EDGES_US = (0, 25, 50, 100, 200, 400, 800, 1600, 3200, 6400)


def counts_of_ns(values_ns: list[int] | np.ndarray) -> np.ndarray:
    """An HDR counts array (the twin's layout) of integer-nanosecond values."""
    counts = empty_counts()
    if len(values_ns):
        record_ns(counts, np.asarray(values_ns, dtype=np.int64))
    return counts


def summary_us(hist: HdrHistogram) -> dict[str, float]:
    """The twin's percentiles, max, mean and count of an ns histogram, in us (``{"count": 0}``
    when empty), keyed as the twin's results are, so measured and predicted compare by name."""
    n = hist.get_total_count()
    if n == 0:
        return {"count": 0}
    out = percentiles_us(hist, hist.get_max_value() / 1e3)
    out["max"] = hist.get_max_value() / 1e3
    out["mean"] = hist.get_mean_value() / 1e3
    out["count"] = n
    return out


def timing_us(values_ns: list[int], weights: list[int] | None = None) -> dict[str, float]:
    """Summary percentiles (us) of in-process timings, each optionally counted ``weights`` times."""
    values = np.maximum(np.asarray(values_ns, dtype=np.int64), 1)
    if weights is not None:
        values = np.repeat(values, np.asarray(weights, dtype=np.int64))
    return summary_us(to_hdr(counts_of_ns(values)))


def work_by_gap(
    gaps_ns: list[int], work_ns: list[int], weights: list[int] | None = None
) -> dict[str, list[float]]:
    """Per idle-gap class (:data:`GAP_EDGES_US`): count, median and mean work (us).

    The fit of a cold-start penalty (work after a long idle is slower) reads this.
    """
    gaps = np.asarray(gaps_ns, dtype=np.int64)
    work = np.asarray(work_ns, dtype=np.float64) / 1e3
    count = np.ones(len(work), dtype=np.int64) if weights is None else np.asarray(weights)
    edges_ns = np.asarray(GAP_EDGES_US, dtype=np.int64) * 1000
    cls = np.maximum(np.searchsorted(edges_ns, gaps, side="right") - 1, 0)
    out: dict[str, list[float]] = {
        "gap_from_us": [float(e) for e in GAP_EDGES_US],
        "count": [],
        "p50_us": [],
        "mean_us": [],
    }
    for k in range(len(GAP_EDGES_US)):
        w, c = work[cls == k], count[cls == k]
        n = int(c.sum())
        out["count"].append(float(n))
        if n == 0:
            out["p50_us"].append(0.0)
            out["mean_us"].append(0.0)
            continue
        order = np.argsort(w)
        cum = np.cumsum(c[order])
        out["p50_us"].append(float(w[order][np.searchsorted(cum, 0.5 * n)]))
        out["mean_us"].append(float(np.average(w, weights=c)))
    return out


# Lower edges of the batch-size classes of :func:`work_by_batch` (events handled per wake-up;
# the last class is open: 128 and more).
BATCH_EDGES = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 128)
# A wake-up or read is warm when its process had been idle for less than this before it
# (:func:`warm_work_by_batch`).
WARM_GAP_US = 50


def work_by_batch(
    batch: Sequence[int] | np.ndarray,
    per_event_ns: Sequence[int] | np.ndarray,
    events: Sequence[int] | np.ndarray,
) -> dict[str, Any]:
    """Per batch-size class (:data:`BATCH_EDGES`): events, mean batch size and work per event (us).

    A wake-up (the client's) or a read (the gateway's) handles a batch of ``n`` events at a
    cost ``a + b n``: the per-wake part ``a`` is shared, so the work per event falls with ``n``.
    Each entry is one batch's work per event, counted ``events`` times (the client's per
    wake-up records, thread CPU time: ``n``; the gateway's per-reply records, ``gateway_ns``:
    1). The calibration regresses the work per event on ``1 / n`` to split ``a`` from the
    marginal ``b``.
    """
    n = np.maximum(np.asarray(batch, dtype=np.int64), 1)
    work = np.asarray(per_event_ns, dtype=np.float64) / 1e3
    count = np.asarray(events, dtype=np.float64)
    cls = np.searchsorted(np.asarray(BATCH_EDGES), n, side="right") - 1
    out: dict[str, Any] = {"batch_from": list(BATCH_EDGES), "count": [], "batch_mean": []}
    out["mean_us"] = []
    for k in range(len(BATCH_EDGES)):
        sel = cls == k
        c = float(count[sel].sum())
        out["count"].append(c)
        out["batch_mean"].append(float(np.average(n[sel], weights=count[sel])) if c else 0.0)
        out["mean_us"].append(float(np.average(work[sel], weights=count[sel])) if c else 0.0)
    return out


def warm_work_by_batch(
    batch: Sequence[int],
    per_event_ns: Sequence[int],
    events: Sequence[int],
    gaps_ns: Sequence[int],
) -> dict[str, Any]:
    """:func:`work_by_batch` of the batches whose idle gap before them was below
    :data:`WARM_GAP_US` (the gap :func:`work_by_gap` classes by): the warm cost, without the
    cold starts after a long idle that a low rate's batches mostly are.
    """
    warm = np.asarray(gaps_ns, dtype=np.int64) < WARM_GAP_US * 1000
    return work_by_batch(
        np.asarray(batch, dtype=np.int64)[warm],
        np.asarray(per_event_ns, dtype=np.int64)[warm],
        np.asarray(events, dtype=np.int64)[warm],
    )


def compile_fold() -> None:
    """Compile (or load from Numba's cache) the fold's kernel, :func:`twin.histogram.record_ns`:
    a load client calls it before its schedule starts, so that no fold of its loop compiles."""
    record_ns(empty_counts(), np.zeros(0, dtype=np.int64))


class IntervalRecorder:
    """Round trips per kind, logged as one histogram per interval; totals for the summary.

    The loop appends ``(kind, rtt_ns)`` to :attr:`pending` and calls :meth:`maybe_rotate` once
    a pass: it folds a pending array into the interval's counts once it holds
    :data:`FOLD_SAMPLES`, and closes the interval at each boundary (``base_ns`` + k x
    ``interval_s``). :meth:`close` writes the log.
    """

    def __init__(self, log_path: Path, base_ns: int, start_wall_s: float, interval_s: float):
        self.base_ns = base_ns
        self.interval_ns = int(interval_s * 1e9)
        self.next_ns = base_ns + self.interval_ns
        self.interval_start_ns = base_ns
        self.pending: dict[str, array[int]] = {k: array("q") for k in KINDS}
        self.interval_counts = {k: empty_counts() for k in KINDS}
        self.totals = {name: empty_counts() for name in ("all", *KINDS)}
        # Closed intervals not yet logged: start and end (ns), nonzero counts indices, counts.
        self.closed: list[tuple[int, int, np.ndarray, np.ndarray]] = []
        self.wall0 = start_wall_s
        self.log = open(log_path, "w")  # noqa: SIM115 - closed in close()
        self.writer = HistogramLogWriter(self.log)
        self.writer.output_comment("[Logged with twin testbed load client]")
        self.writer.output_log_format_version()
        # hdrh's output_start_time mis-scales its argument; the line is written here instead.
        stamp = time.strftime("%a %b %d %H:%M:%S UTC %Y", time.gmtime(start_wall_s))
        self.log.write(f"#[StartTime: {start_wall_s:.3f} (seconds since epoch), {stamp}]\n")
        self.writer.output_legend()

    def maybe_rotate(self, now_ns: int) -> None:
        """Once a pass: fold each full pending list, close every interval ended by ``now_ns``."""
        for kind in KINDS:
            if len(self.pending[kind]) >= FOLD_SAMPLES:
                self._fold(kind)
        while now_ns >= self.next_ns:
            self.rotate(self.next_ns)
            self.next_ns += self.interval_ns

    def _fold(self, kind: str) -> None:
        pending = self.pending[kind]
        if pending:
            record_ns(self.interval_counts[kind], np.frombuffer(pending, dtype=np.int64))
            del pending[:]

    def rotate(self, end_ns: int) -> None:
        """Close the current interval at ``end_ns``: keep it for the log, add it to the totals."""
        interval = empty_counts()
        for kind in KINDS:
            self._fold(kind)
            self.totals[kind] += self.interval_counts[kind]
            interval += self.interval_counts[kind]
            self.interval_counts[kind] = empty_counts()
        self.totals["all"] += interval
        nonzero = np.flatnonzero(interval)
        if len(nonzero):
            self.closed.append((self.interval_start_ns, end_ns, nonzero, interval[nonzero]))
        self.interval_start_ns = end_ns

    def _wall_s(self, t_ns: int) -> float:
        return self.wall0 + (t_ns - self.base_ns) / 1e9

    def close(self, now_ns: int) -> dict[str, HdrHistogram]:
        """Close the last interval, write the log, close the file; the totals as histograms."""
        self.rotate(now_ns)
        for start_ns, end_ns, nonzero, counts in self.closed:
            interval = empty_counts()
            interval[nonzero] = counts
            hist = to_hdr(interval)
            hist.set_start_time_stamp(int(self._wall_s(start_ns) * 1000))
            hist.set_end_time_stamp(int(self._wall_s(end_ns) * 1000))
            self.writer.output_interval_histogram(hist, max_value_unit_ratio=1000.0)
        self.closed.clear()
        self.log.close()
        return {name: to_hdr(c) for name, c in self.totals.items()}


def write_results(out_dir: Path, totals: dict[str, HdrHistogram], summary: LoadSummary) -> None:
    """``rtt.hgrm`` (all round trips), ``order.hgrm``, ``cancel.hgrm`` and ``summary.json``."""
    names = {"all": "rtt.hgrm", "order": "order.hgrm", "cancel": "cancel.hgrm"}
    for name, hist in totals.items():
        if hist.get_total_count() > 0:
            write_text(out_dir / names[name], hgrm_of(hist))
    write_json(out_dir / "summary.json", summary.to_dict())
