"""Issue 73: HdrHistogram interval logs as real writers write them, read to the bucket.

The logs are written here by the ``hdrh`` package's ``HistogramLogWriter`` (the wire format of
HdrHistogram's Java writer): 1 to 5 significant figures, a Java benchmark client's settings
(lowest 1, highest ``Long.MAX_VALUE``, 5 significant figures: 6,160,384 counters and lines of
66,700 characters and more), an hour of intervals, values up to hours in nanoseconds. Every
percentile must fall in the bucket ``hdrh`` reports for the same log.
"""

from __future__ import annotations

import io
import math
import random
from pathlib import Path

import numpy as np
import pytest
from hdrh.histogram import HdrHistogram
from hdrh.log import HistogramLogWriter

from calibration import read
from calibration.readers import hdr
from calibration.readers.hdr_codec import decode, layout
from twin.errors import MeasurementError

LONG_MAX = 2**63 - 1
HOUR_NS = 3_600 * 10**9
PERCENTILES = (0.0, 1.0, 10.0, 25.0, 50.0, 75.0, 90.0, 99.0, 99.9, 99.99, 99.999, 100.0)


def _interval(rng: random.Random, sig: int, highest: int, samples: int) -> HdrHistogram:
    """One interval: lognormal round trips around 60 us, a tail, and one stall of hours."""
    h = HdrHistogram(1, highest, sig)
    for _ in range(samples):
        h.record_value(min(int(rng.lognormvariate(11.0, 1.5)), highest))
    h.record_value(min(3 * HOUR_NS + rng.randrange(10**9), highest))  # a value of hours in ns
    return h


def _write_log(
    path: Path, distinct: list[HdrHistogram], intervals: int, length_s: float
) -> HdrHistogram:
    """A log of ``intervals`` lines cycling the ``distinct`` histograms, with the headers a Java
    client writes; returns the histogram of the whole log (``hdrh``'s sum)."""
    out = io.StringIO()
    writer = HistogramLogWriter(out)
    writer.output_comment("[Logged with Exchange Client 0.0.1]")
    writer.output_log_format_version()
    # (hdrh's output_start_time fails on a real time: the header as Java writes it.)
    out.write("#[StartTime: 1700000000.000 (seconds since epoch), Tue Nov 14 22:13:20 UTC 2023]\n")
    writer.output_legend()
    written: list[str] = []  # the writer's line of each distinct histogram (its max in ms)
    for i in range(intervals):
        if i < len(distinct):
            mark = out.tell()
            writer.output_interval_histogram(distinct[i], i * length_s, (i + 1) * length_s, 1e6)
            written.append(out.getvalue()[mark:].split(",", 1)[1])
        else:  # the same interval again, later: encoding each anew would take minutes
            out.write(f"{i * length_s:f},{written[i % len(distinct)]}")
    path.write_text(out.getvalue())
    whole = HdrHistogram(1, distinct[0].highest_trackable_value, distinct[0].significant_figures)
    rounds, rest = divmod(intervals, len(distinct))
    for h in distinct:
        whole.add(h)
    whole = _times(whole, rounds)
    for h in distinct[:rest]:
        whole.add(h)
    return whole


def _times(h: HdrHistogram, n: int) -> HdrHistogram:
    """``n`` times ``h``, by hdrh's own additions (doubling: a few instead of ``n``)."""
    out = HdrHistogram(1, h.highest_trackable_value, h.significant_figures)
    power = HdrHistogram.decode(h.encode())
    while n:
        if n & 1:
            out.add(power)
        n >>= 1
        if n:
            power.add(HdrHistogram.decode(power.encode()))
    return out


def _buckets_at(whole: HdrHistogram, first: int, last: int) -> set[int]:
    """The buckets (lowest equivalent values) of the ``first``..``last``-th recorded values,
    from hdrh's own counters."""
    counts = np.ctypeslib.as_array(whole.counts)
    nonzero = np.flatnonzero(counts)
    above = np.cumsum(counts[nonzero])  # values recorded up to and including each bucket
    lo, hi = np.searchsorted(above, first), np.searchsorted(above, last)
    return {whole.get_value_from_index(int(i)) for i in nonzero[lo : hi + 1]}


def _assert_same_buckets(path: Path, whole: HdrHistogram) -> None:
    """Each percentile in the bucket hdrh holds the value of that rank in (hdrh rounds a
    percentile to a whole rank, the reader interpolates between ranks: either neighbour)."""
    m = read(path)
    total = whole.get_total_count()
    assert m.count == total
    for p in PERCENTILES:
        ours = whole.get_lowest_equivalent_value(round(m.percentile_us(p) * 1000))
        rank = p / 100 * total
        allowed = _buckets_at(whole, max(1, math.floor(rank)), min(total, math.ceil(rank) + 1))
        assert ours in allowed, (p, ours, sorted(allowed))
    theirs = whole.get_value_at_percentile(50.0)
    assert whole.get_lowest_equivalent_value(theirs) in _buckets_at(
        whole, math.floor(total / 2), math.ceil(total / 2) + 1
    )
    assert whole.get_lowest_equivalent_value(round(m.max_us * 1000)) == (
        whole.get_lowest_equivalent_value(whole.get_max_value())
    )


@pytest.mark.parametrize("sig", [1, 2, 3, 4, 5])
def test_logs_at_every_precision_read_to_hdrh_s_buckets(tmp_path: Path, sig: int) -> None:
    rng = random.Random(sig)
    distinct = [_interval(rng, sig, 10 * HOUR_NS, 20_000) for _ in range(3)]
    path = tmp_path / f"sig{sig}.hlog"
    _assert_same_buckets(path, _write_log(path, distinct, intervals=30, length_s=1.0))


def test_a_java_clients_five_figure_log_of_an_hour_reads(tmp_path: Path) -> None:
    """The third-party client's settings: every line longer than the old 65,536-character cap,
    6,160,384 counters a histogram (the old cap was 4,194,304), an hour of 10 s intervals."""
    rng = random.Random(73)
    distinct = [_interval(rng, 5, LONG_MAX, 120_000) for _ in range(4)]
    assert layout(5, 1, LONG_MAX).counters == 6_160_384
    path = tmp_path / "client.hlog"
    whole = _write_log(path, distinct, intervals=360, length_s=10.0)
    lines = [t for t in path.read_text().splitlines() if not t.startswith(("#", '"'))]
    assert len(lines) == 360 and min(len(t) for t in lines) > 66_700
    _assert_same_buckets(path, whole)
    m = read(path)
    assert m.conditions["intervals"] == 360 and m.conditions["duration_s"] == 3_600.0
    assert m.conditions["logged_with"] == "Exchange Client 0.0.1"
    assert m.max_us > 3 * HOUR_NS / 1000  # hours, in microseconds


def test_the_sparse_decoding_matches_hdrhs_counters(tmp_path: Path) -> None:
    """Every non-zero counter, its bucket's bounds and the max, as hdrh decodes them."""
    rng = random.Random(5)
    for sig, lowest, highest in [
        (1, 1, LONG_MAX),
        (3, 1000, 10**12),
        (5, 7, 10**6),
        (5, 1, LONG_MAX),
    ]:
        h = HdrHistogram(lowest, highest, sig)
        for _ in range(5_000):
            h.record_value(
                min(int(rng.lognormvariate(11, 2.5)), highest), rng.choice([1, 7, 2**40])
            )
        h.record_value(highest)
        payload = h.encode()
        ours, theirs = decode(payload.decode()), HdrHistogram.decode(payload)
        counts = np.ctypeslib.as_array(theirs.counts)
        nonzero = np.flatnonzero(counts)
        lows = [theirs.get_value_from_index(int(i)) for i in nonzero]
        assert ours.low.tolist() == lows
        assert ours.high.tolist() == [theirs.get_highest_equivalent_value(v) for v in lows]
        assert ours.count.tolist() == counts[nonzero].tolist()
        assert ours.max_value == theirs.get_max_value()


def test_a_file_that_inflates_beyond_its_budget_is_refused_in_one_line(
    tmp_path: Path, monkeypatch
) -> None:
    """What a log costs is bounded over the whole file, not per line's shape."""
    rng = random.Random(1)
    path = tmp_path / "big.hlog"
    _write_log(path, [_interval(rng, 3, 10 * HOUR_NS, 2_000)], intervals=20, length_s=1.0)
    inflated = decode(path.read_text().splitlines()[-1].split(",")[3]).inflated_bytes
    monkeypatch.setattr(hdr, "MAX_FILE_INFLATED_BYTES", 10 * inflated)
    with pytest.raises(
        MeasurementError, match=r"big\.hlog:\d+: the log's histograms inflate beyond"
    ) as exc:
        read(path)
    assert "\n" not in str(exc.value)
