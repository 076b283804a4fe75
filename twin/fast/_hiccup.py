"""Each station's hiccups (:class:`twin.path.Hiccups`), one timeline both engines read.

A station's hiccups come from a stream of their own (``(seed, HICCUP_STREAM + station)``), drawn
as the station's time moves on: the current (or next) **period** in which its vCPU is taken,
``[start, end)``, is a Poisson arrival of a hiccup plus every hiccup that arrives before the
period ends (each adds its length: the hiccups queue), and the next arrival after it. Lengths
are drawn by inversion from the length's quantile table (:mod:`twin.fast._quantile`; an
empirical length from its table). :func:`finish` is the only query: the time at which work due
to start at ``t`` ends, preemptive-resume. Queries at one station come at non-decreasing ``t``
(a one-server FIFO station's services, and the work a visit leaves after them), so a period that
ended before ``t`` is never needed again and the timeline is drawn once, whichever engine asks:
:mod:`twin.des` calls the same compiled functions as the fast engine's kernel, and the two meet
the same hiccups.

State, per station: ``hiccup_f[st] = (start, end, next arrival)`` (us; a station without hiccups
has ``start = inf``), ``hiccup_rng[st]`` its xoshiro256+ words, ``hiccup_gap_us[st]`` the mean
time between arrivals, ``hiccup_q[st]`` the length's quantile table and ``hiccup_row[st]`` its
empirical table's row in the path's tables (-1: none).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from twin.dists import Empirical
from twin.fast._quantile import TABLE_LEN, grid_point, quantile_table
from twin.fast._rng import exponential, seed_state, uniform
from twin.path import CompiledPath

# Stream ids of the stations' hiccups: HICCUP_STREAM + the station's index.
HICCUP_STREAM = 0x484943 << 16
HF_START, HF_END, HF_NEXT = 0, 1, 2


def hiccup_state(
    path: CompiledPath, seed: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(hiccup_f, hiccup_rng, hiccup_gap_us, hiccup_q, hiccup_row)`` of a run (module
    docstring), every station's first period drawn."""
    wake = path.station_wake
    n = path.n_stations
    hiccup_f = np.full((n, 3), np.inf)
    hiccup_rng = np.zeros((n, 4), dtype=np.uint64)
    gap_us = np.full(n, np.inf)
    quantiles = np.zeros((n, TABLE_LEN))
    rows = np.full(n, -1, dtype=np.int64)
    for st in range(n):
        rate = float(wake[st]["hiccup_rate_per_s"])
        if rate <= 0:
            continue
        code = int(wake[st]["hiccup_code"])
        params = (float(wake[st][f"hiccup_p{i}"]) for i in range(3))
        if code == Empirical.code:
            rows[st] = int(wake[st]["hiccup_p0"])
        else:
            quantiles[st] = quantile_table(code, *params)
        gap_us[st] = 1e6 / rate
        hiccup_rng[st] = seed_state(seed, HICCUP_STREAM + st)
        first, s0, s1, s2, s3 = exponential(*hiccup_rng[st])
        hiccup_rng[st] = (s0, s1, s2, s3)
        hiccup_f[st, HF_NEXT] = first * gap_us[st]
        _next_period(
            st, hiccup_f, hiccup_rng, gap_us, quantiles, rows, path.tables, path.table_lengths
        )
    return hiccup_f, hiccup_rng, gap_us, quantiles, rows


@njit(cache=True)
def _length(st, q, rows, tables, table_lengths, s0, s1, s2, s3):  # noqa: ANN001, ANN202
    row = rows[st]
    if row >= 0:
        u, s0, s1, s2, s3 = uniform(s0, s1, s2, s3)
        n = table_lengths[row]
        return tables[row, min(int(u * n), n - 1)], s0, s1, s2, s3
    g, f, s0, s1, s2, s3 = grid_point(s0, s1, s2, s3)
    lo = q[st, g]
    return lo + (q[st, g + 1] - lo) * f, s0, s1, s2, s3


@njit(cache=True)
def _next_period(st, hiccup_f, hiccup_rng, gap_us, q, rows, tables, table_lengths):  # noqa: ANN001, ANN202, PLR0913
    """Draw the station's next period from its next arrival on."""
    s0, s1, s2, s3 = hiccup_rng[st, 0], hiccup_rng[st, 1], hiccup_rng[st, 2], hiccup_rng[st, 3]
    start = hiccup_f[st, HF_NEXT]
    x, s0, s1, s2, s3 = _length(st, q, rows, tables, table_lengths, s0, s1, s2, s3)
    end = start + x
    e, s0, s1, s2, s3 = exponential(s0, s1, s2, s3)
    nxt = start + e * gap_us[st]
    while nxt < end:  # arrived while the vCPU was taken: queued behind it
        x, s0, s1, s2, s3 = _length(st, q, rows, tables, table_lengths, s0, s1, s2, s3)
        end += x
        e, s0, s1, s2, s3 = exponential(s0, s1, s2, s3)
        nxt += e * gap_us[st]
    hiccup_f[st, HF_START] = start
    hiccup_f[st, HF_END] = end
    hiccup_f[st, HF_NEXT] = nxt
    hiccup_rng[st, 0], hiccup_rng[st, 1], hiccup_rng[st, 2], hiccup_rng[st, 3] = s0, s1, s2, s3


@njit(cache=True)
def finish(st, t, work, hiccup_f, hiccup_rng, gap_us, q, rows, tables, table_lengths):  # noqa: ANN001, ANN201, PLR0913
    """When ``work`` (us) due to start at ``t`` at station ``st`` ends: it starts once any
    period that holds ``t`` is over and is stretched by every period that starts before it
    ends (preemptive-resume). ``t`` must not go back from one query to the next. A station
    without hiccups (its period at infinity) gives ``t + work``."""
    while hiccup_f[st, HF_END] <= t:
        _next_period(st, hiccup_f, hiccup_rng, gap_us, q, rows, tables, table_lengths)
    if hiccup_f[st, HF_START] <= t:
        t = hiccup_f[st, HF_END]
        _next_period(st, hiccup_f, hiccup_rng, gap_us, q, rows, tables, table_lengths)
    while hiccup_f[st, HF_START] < t + work:
        work -= hiccup_f[st, HF_START] - t
        t = hiccup_f[st, HF_END]
        _next_period(st, hiccup_f, hiccup_rng, gap_us, q, rows, tables, table_lengths)
    return t + work
