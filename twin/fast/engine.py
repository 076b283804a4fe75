"""The fast engine's public side: validate, lay out the arrays, call the kernel, check, trim.

:func:`simulate` has the same signature and result as :func:`twin.des.simulate` and runs the same
:class:`~twin.path.CompiledPath`. The kernel (:mod:`twin.fast._kernel`) may stop early: at a
time horizon (so a progress callback can be told how far the run got) or when an open loop has
more cycles in flight than message slots, in which case the slot arrays are doubled and the run
resumes. Neither changes a single draw: the same path, load and seed give the same output
whatever the chunking.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from twin import dtypes
from twin.errors import SimulationError
from twin.fast import _kernel as k
from twin.fast._rng import seed_state
from twin.histogram import empty_counts
from twin.load import Load
from twin.path import CompiledPath
from twin.results import EngineOutput

# Stream id separating the fast engine's draws from the other users of the scenario seed.
FAST_STREAM = 0x46415354
INITIAL_SLOTS = 1024
# Simulated messages between two progress reports (a few tenths of a second of wall time).
MESSAGES_PER_CHUNK = 1_000_000

Progress = Callable[[float], None]


@dataclass
class _HopArrays:
    fixed_us: np.ndarray
    delay_code: np.ndarray
    delay_par: np.ndarray
    service_code: np.ndarray
    service_par: np.ndarray
    station: np.ndarray
    server_offset: np.ndarray
    server_count: np.ndarray


def _hop_arrays(path: CompiledPath) -> _HopArrays:
    """Plain contiguous columns of the path's structured hop rows."""
    hops = path.hops

    def params(part: str) -> np.ndarray:
        return np.ascontiguousarray(
            np.stack([hops[f"{part}_p{i}"] for i in range(3)], axis=1), dtype=np.float64
        )

    counts = np.ascontiguousarray(path.station_servers, dtype=np.int64)
    offsets = np.zeros(len(counts), dtype=np.int64)
    offsets[1:] = np.cumsum(counts)[:-1]
    return _HopArrays(
        fixed_us=np.ascontiguousarray(hops["fixed_us"], dtype=np.float64),
        delay_code=np.ascontiguousarray(hops["delay_code"], dtype=np.int64),
        delay_par=params("delay"),
        service_code=np.ascontiguousarray(hops["service_code"], dtype=np.int64),
        service_par=params("service"),
        station=np.ascontiguousarray(hops["station"], dtype=np.int64),
        server_offset=offsets,
        server_count=counts,
    )


class _Run:
    """All the state of one run, in arrays the kernel reads and writes."""

    def __init__(self, path: CompiledPath, load: Load):
        self.path = path
        self.load = load
        self.hops = _hop_arrays(path)
        self.closed = load.loop == dtypes.LOOP_CLOSED
        slots = load.accounts if self.closed else INITIAL_SLOTS
        self.rng = seed_state(load.seed, FAST_STREAM)
        self.fstate = np.zeros(k.FSTATE_LEN)
        self.istate = np.zeros(k.ISTATE_LEN, dtype=np.int64)
        # The calendar has room for 2 * slots + 2 entries: those past its end stay +inf, so
        # the kernel's sift-down reads both children of any node without a bounds test.
        self.heap_t = np.full(2 * slots + 2, np.inf)
        self.heap_q = np.zeros(2 * slots + 2, dtype=np.int64)
        self.heap_s = np.zeros(2 * slots + 2, dtype=np.int64)
        self.free_slots = np.arange(slots, dtype=np.int64)[::-1].copy()
        self.istate[k.I_FREE_N] = slots
        self.slot_f = np.zeros((slots, k.SLOT_F_COLS))
        self.slot_i = np.zeros((slots, k.SLOT_I_COLS), dtype=np.int64)
        self.server_free_us = np.zeros(int(path.station_servers.sum()))
        self.server_next = np.zeros(path.n_stations, dtype=np.int64)
        self.counts = empty_counts()
        self.hop_sum_us = np.zeros(path.n_hops)
        self.busy_us = np.zeros(path.n_stations)
        self.tables = np.ascontiguousarray(path.tables, dtype=np.float64)
        self.table_lengths = np.ascontiguousarray(path.table_lengths, dtype=np.int64)

    def grow(self) -> None:
        """Double the message slots of an open loop (all slots are in flight)."""
        old = len(self.slot_f)
        extra = 2 * old
        self.heap_t = np.concatenate([self.heap_t, np.full(extra, np.inf)])
        self.heap_q = np.concatenate([self.heap_q, np.zeros(extra, dtype=np.int64)])
        self.heap_s = np.concatenate([self.heap_s, np.zeros(extra, dtype=np.int64)])
        self.free_slots = np.concatenate(
            [np.arange(2 * old - 1, old - 1, -1, dtype=np.int64), np.zeros(old, dtype=np.int64)]
        )
        self.istate[k.I_FREE_N] = old
        self.slot_f = np.concatenate([self.slot_f, np.zeros_like(self.slot_f)])
        self.slot_i = np.concatenate([self.slot_i, np.zeros_like(self.slot_i)])

    def advance(self, horizon_us: float) -> int:
        h = self.hops
        load = self.load
        cycle_rate = load.cycle_rate_per_us
        return int(
            k.run_kernel(
                h.fixed_us,
                h.delay_code,
                h.delay_par,
                h.service_code,
                h.service_par,
                h.station,
                h.server_offset,
                h.server_count,
                self.server_free_us,
                self.server_next,
                self.tables,
                self.table_lengths,
                self.closed,
                load.arrivals == dtypes.ARRIVALS_POISSON,
                1.0 / cycle_rate,
                load.accounts / cycle_rate,
                float(load.warmup_us),
                float(load.end_us),
                int(load.messages_per_cycle),
                self.rng,
                self.fstate,
                self.istate,
                self.heap_t,
                self.heap_q,
                self.heap_s,
                self.free_slots,
                self.slot_f,
                self.slot_i,
                self.counts,
                self.hop_sum_us,
                self.busy_us,
                float(horizon_us),
            )
        )

    def output(self) -> EngineOutput:
        return EngineOutput(
            counts=self.counts,
            messages=int(self.istate[k.I_MESSAGES]),
            rtt_sum_us=float(self.fstate[k.F_RTT_SUM]),
            rtt_max_us=float(self.fstate[k.F_RTT_MAX]),
            hop_time_sum_us=self.hop_sum_us,
            station_busy_us=self.busy_us,
            duration_us=self.load.duration_us,
        )


def simulate(path: CompiledPath, load: Load, progress: Progress | None = None) -> EngineOutput:
    """Run ``load`` over ``path`` compiled; ``progress(fraction)`` is called between chunks."""
    run = _Run(path, load)
    chunk_us = max(MESSAGES_PER_CHUNK / (load.rate_msgs_per_s / 1e6), 1.0)
    horizon = chunk_us if progress is not None else np.inf
    while True:
        status = run.advance(horizon)
        if status == k.STATUS_DONE:
            break
        if status == k.STATUS_FULL:
            run.grow()
        elif status == k.STATUS_PAUSED:
            progress_fraction = min(horizon / load.end_us, 1.0)
            if progress is not None:
                progress(progress_fraction)
            horizon += chunk_us
        else:
            raise SimulationError(f"fast engine kernel returned unknown status {status}")
    if progress is not None:
        progress(1.0)
    return run.output()
