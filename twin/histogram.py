"""Round-trip histograms: HdrHistogram's bucket layout, filled from numpy or Numba.

Both engines record latencies as integer nanoseconds into a flat ``int64`` counts array laid out
exactly like an HdrHistogram with ``LOWEST_NS = 1``, ``HIGHEST_NS`` (one hour) and
``SIGNIFICANT_FIGURES = 3``: every value is kept to within 0.1% relative error, memory is a fixed
~370 KB whatever the run length, and arrays from independent runs merge by addition.
:func:`to_hdr` turns an array into a real :class:`hdrh.histogram.HdrHistogram` for percentiles,
encoding and the ``.hgrm`` / interval-log formats. Values above one hour are clamped to it.
"""

from __future__ import annotations

import math

import numpy as np
from hdrh.histogram import HdrHistogram
from numba import njit
from numba.cpython.unsafe.numbers import leading_zeros

from engine_ext.jit_cache import configure as _configure_jit_cache
from twin.errors import ModelError

_configure_jit_cache()  # before this module's kernels are defined

LOWEST_NS = 1
HIGHEST_NS = 3_600_000_000_000
SIGNIFICANT_FIGURES = 3

# HdrHistogram's derived layout for the constants above (see HdrHistogram.__init__):
# 2 * 10**3 values at unit resolution need 2**11 sub-buckets, stored as halves of 1024.
SUB_BUCKET_HALF_COUNT_MAGNITUDE = 10
SUB_BUCKET_HALF_COUNT = 1 << SUB_BUCKET_HALF_COUNT_MAGNITUDE
SUB_BUCKET_MASK = (1 << (SUB_BUCKET_HALF_COUNT_MAGNITUDE + 1)) - 1


class Histogram(HdrHistogram):
    """An HdrHistogram whose mean and standard deviation read its non-empty buckets at once.

    The ``hdrhistogram`` package walks every bucket up to the largest value in Python for each
    (tens of thousands of steps on a run with a millisecond tail, seconds for a client's
    summary and ``.hgrm`` files). The values are the package's to the last bit: the same
    bucket middles (``lowest + size // 2``, ns), an exact integer sum for the mean, and the
    deviations added in the package's order for the standard deviation.
    """

    def _recorded(self) -> tuple[list[int], list[int]]:
        """(count, bucket middle in ns) of each non-empty bucket, lowest first."""
        view = np.ctypeslib.as_array(self.counts)
        index = np.flatnonzero(view)
        lowest = bucket_lowest_ns(index)
        middle = lowest + ((bucket_highest_ns(index) - lowest + 1) >> 1)
        return view[index].tolist(), middle.tolist()

    def get_mean_value(self) -> float:
        if not self.total_count:
            return 0.0
        counts, middles = self._recorded()
        return float(sum(c * m for c, m in zip(counts, middles, strict=True))) / self.total_count

    def get_stddev(self) -> float:
        if not self.total_count:
            return 0.0
        mean = self.get_mean_value()
        total = 0.0
        for count, middle in zip(*self._recorded(), strict=True):
            deviation = middle * 1.0 - mean
            total += (deviation * deviation) * count
        return math.sqrt(total / self.total_count)


def new_hdr() -> Histogram:
    """An empty HdrHistogram with the twin's layout."""
    return Histogram(LOWEST_NS, HIGHEST_NS, SIGNIFICANT_FIGURES)


COUNTS_LEN = new_hdr().counts_len


def empty_counts() -> np.ndarray:
    """A zeroed counts array in the twin's layout."""
    return np.zeros(COUNTS_LEN, dtype=np.int64)


@njit(cache=True)
def counts_index(value_ns: int | np.integer) -> int:
    """Index of ``value_ns`` in the counts array (HdrHistogram's ``countsArrayIndex``)."""
    v = value_ns if value_ns > LOWEST_NS else LOWEST_NS
    v = v if v < HIGHEST_NS else HIGHEST_NS
    bits = 64 - leading_zeros(v | SUB_BUCKET_MASK)  # type: ignore[call-arg]  # bit length
    bucket = bits - (SUB_BUCKET_HALF_COUNT_MAGNITUDE + 1)
    sub_bucket = v >> bucket
    return ((bucket + 1) << SUB_BUCKET_HALF_COUNT_MAGNITUDE) + sub_bucket - SUB_BUCKET_HALF_COUNT


def us_to_ns(values_us: np.ndarray) -> np.ndarray:
    """Microsecond floats to clamped integer nanoseconds, as recorded."""
    return np.clip(np.rint(np.asarray(values_us) * 1e3), LOWEST_NS, HIGHEST_NS).astype(np.int64)


@njit(cache=True)
def record_ns(counts: np.ndarray, values_ns: np.ndarray) -> None:
    """Add integer-nanosecond samples to a counts array in place, each clamped to the layout
    (compiled: a thousand samples in a few microseconds, so a loop can fold as it goes)."""
    for v in values_ns:
        counts[counts_index(v)] += 1


def record_us(counts: np.ndarray, values_us: np.ndarray) -> None:
    """Add microsecond samples to a counts array in place (rounded to nanoseconds, clamped)."""
    record_ns(counts, us_to_ns(values_us))


def to_hdr(counts: np.ndarray) -> Histogram:
    """A real HdrHistogram holding ``counts`` (one array or the sum of several runs)."""
    if counts.shape != (COUNTS_LEN,):
        raise ModelError(f"Counts array has shape {counts.shape}, expected ({COUNTS_LEN},)")
    hist = new_hdr()
    view = np.ctypeslib.as_array(hist.counts)
    view[:] = counts
    nonzero = np.flatnonzero(counts)
    if len(nonzero):
        hist.set_internal_tacking_values(int(nonzero[0]), int(nonzero[-1]), int(counts.sum()))
    return hist


def bucket_lowest_ns(indices: np.ndarray) -> np.ndarray:
    """Lowest value (ns) of each counts index: the inverse of :func:`counts_index`."""
    indices = np.asarray(indices, dtype=np.int64)
    bucket = (indices >> SUB_BUCKET_HALF_COUNT_MAGNITUDE) - 1
    sub = (indices & (SUB_BUCKET_HALF_COUNT - 1)) + SUB_BUCKET_HALF_COUNT
    first = bucket < 0
    sub = np.where(first, sub - SUB_BUCKET_HALF_COUNT, sub)
    return sub << np.maximum(bucket, 0)


def bucket_highest_ns(indices: np.ndarray) -> np.ndarray:
    """Highest value (ns) equivalent to each counts index (what HdrHistogram reports)."""
    indices = np.asarray(indices, dtype=np.int64)
    bucket = np.maximum((indices >> SUB_BUCKET_HALF_COUNT_MAGNITUDE) - 1, 0)
    return bucket_lowest_ns(indices) + (np.int64(1) << bucket) - 1


_ALL_HIGHEST_US = bucket_highest_ns(np.arange(COUNTS_LEN)) / 1e3


def percentile_from_counts_us(counts: np.ndarray, percentile: float) -> float:
    """HdrHistogram's ``get_value_at_percentile`` on a counts array, vectorised (us)."""
    total = int(counts.sum())
    wanted = max(int(percentile / 100.0 * total + 0.5), 1)
    return float(_ALL_HIGHEST_US[int(np.searchsorted(np.cumsum(counts), wanted))])


def min_from_counts_us(counts: np.ndarray) -> float:
    """The lowest recorded value (its bucket's floor, us)."""
    return float(bucket_lowest_ns(np.flatnonzero(counts)[:1])[0]) / 1e3


def sd_from_counts_us(counts: np.ndarray) -> float:
    """Standard deviation of a histogram's values (us), each taken at its bucket's middle
    (within the histogram's 0.1% resolution)."""
    idx = np.flatnonzero(counts)
    if idx.size == 0:
        return 0.0
    middle = (bucket_lowest_ns(idx) + bucket_highest_ns(idx)) / 2e3
    weights = counts[idx].astype(float)
    mean = float(np.average(middle, weights=weights))
    return float(np.sqrt(np.average((middle - mean) ** 2, weights=weights)))


def cdf_points_us(counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The empirical CDF of a histogram: (bucket floor in us, fraction at or below it)."""
    idx = np.flatnonzero(counts)
    cum = np.cumsum(counts[idx]) / counts.sum()
    return bucket_lowest_ns(idx) / 1e3, cum


# Two-sided 95% quantile of the standard normal.
Z_95 = 1.959964


def percentile_ci95_us(counts: np.ndarray, percentile: float) -> tuple[float, float]:
    """A distribution-free 95% interval for a percentile of a histogram (us).

    The ranks come from the binomial law of the order statistics (normal approximation); the
    values are reported as :func:`percentile_from_counts_us` reports them (the highest value
    equivalent to the bucket holding the rank). It assumes independent samples: queueing
    correlates neighbouring round trips, so the true uncertainty is somewhat wider.
    """
    idx = np.flatnonzero(counts)
    cum = np.cumsum(counts[idx])
    n = int(cum[-1])
    highest_us = bucket_highest_ns(idx) / 1e3
    q = percentile / 100.0
    half = Z_95 * math.sqrt(n * q * (1 - q))

    def value_at_rank(rank: float) -> float:
        rank = min(max(math.ceil(rank), 1), n)
        return float(highest_us[np.searchsorted(cum, rank)])

    return value_at_rank(n * q - half), value_at_rank(n * q + half + 1)
