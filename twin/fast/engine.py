"""The fast engine's public side: validate, lay out the arrays, call the kernel, check, trim.

:func:`simulate` has the same signature and result as :func:`twin.des.simulate` and runs the same
:class:`~twin.path.CompiledPath`. The kernel (:mod:`twin.fast._kernel`) may stop early: at a
time horizon (so a progress callback can be told how far the run got) or when an open loop has
more cycles in flight than message slots, in which case the slot arrays are doubled and the run
resumes. Neither changes a single draw: the same path, load and seed give the same output
whatever the chunking.
"""

from __future__ import annotations

import numpy as np

from twin import dtypes
from twin.dists import Const, Empirical, Zero
from twin.errors import SimulationError
from twin.fast import _kernel as k
from twin.fast import _quantile
from twin.fast._hiccup import hiccup_state
from twin.fast._rng import seed_state
from twin.flow import Arrivals, ReplayOutput, exchange_hop, model_hop
from twin.histogram import empty_counts
from twin.load import Load
from twin.path import CompiledPath
from twin.protections import throttle_hops
from twin.results import EngineOutput, Progress

# Stream id separating the fast engine's draws from the other users of the scenario seed.
FAST_STREAM = 0x46415354
INITIAL_SLOTS = 1024
# Simulated messages between two progress reports (a few tenths of a second of wall time).
MESSAGES_PER_CHUNK = 1_000_000


class _Tables:
    """Quantile tables of the distributions a path draws from, one per distinct distribution."""

    def __init__(self) -> None:
        self.starts: dict[tuple[int, float, float, float, float], int] = {}
        self.chunks: list[np.ndarray] = []

    def encode(self, row: np.void, part: str, fixed_us: float = 0.0) -> tuple[int, int]:
        """Where the ``part`` distribution's table starts, and its empirical row (-1: none).

        A distribution with a fixed time gets a table of the sum; an empirical one gets a table
        of the fixed time alone, the kernel adding the resampled value.
        """
        code = int(row[f"{part}_code"])
        p0, p1, p2 = (float(row[f"{part}_p{i}"]) for i in range(3))
        if code == Empirical.code:
            return self.start((Zero.code, 0.0, 0.0, 0.0, fixed_us)), int(p0)
        return self.start((code, p0, p1, p2, fixed_us)), -1

    def start(self, key: tuple[int, float, float, float, float]) -> int:
        if key not in self.starts:
            self.starts[key] = len(self.chunks) * _quantile.TABLE_LEN
            self.chunks.append(_quantile.quantile_table(*key))
        return self.starts[key]


def hop_tables(
    path: CompiledPath, load: Load
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The kernel's packed view of the path: ``hop_i`` rows, the stations' wake-up arrays
    (``station_wake_i``, ``station_cold``) and the quantile tables.

    Each distinct (distribution, fixed time) pair gets one quantile table
    (:mod:`twin.fast._quantile`); a hop's delay table includes its fixed time.
    """
    hops = path.hops
    tables = _Tables()
    hop_i = np.zeros((path.n_hops, k.HOP_I_COLS), dtype=np.int64)
    for h, row in enumerate(hops):
        hop_i[h, k.HI_DELAY_Q], hop_i[h, k.HI_DELAY_ROW] = tables.encode(
            row, "delay", float(row["fixed_us"])
        )
        hop_i[h, k.HI_SERVICE_Q], hop_i[h, k.HI_SERVICE_ROW] = tables.encode(row, "service")
        hop_i[h, k.HI_READ_Q], hop_i[h, k.HI_READ_ROW] = tables.encode(row, "read")
        hop_i[h, k.HI_LINGER_Q], hop_i[h, k.HI_LINGER_ROW] = tables.encode(row, "linger")
        hop_i[h, k.HI_WAKE_Q], hop_i[h, k.HI_WAKE_ROW] = tables.encode(row, "wake")
    wake = path.station_wake
    station_wake_i = np.array(
        [
            (*tables.encode(w, "wake"), *tables.encode(w, "stall"), *tables.encode(w, "batch"))
            for w in wake
        ],
        dtype=np.int64,
    )
    station_wake_i = station_wake_i.reshape(path.n_stations, 6)
    tau, halt_tau = wake["cold_tau_us"], wake["halt_tau_us"]
    station_cold = np.column_stack(
        [
            wake["cold_us"],
            np.divide(1.0, tau, out=np.zeros(len(tau)), where=tau > 0),
            wake["linger_us"],
            wake["linger_cold_us"],
            wake["halt_share"],
            np.divide(1.0, halt_tau, out=np.zeros(len(halt_tau)), where=halt_tau > 0),
            wake["poll_max_us"],
            wake["poll_grow"],
            wake["poll_grow_start_us"],
            wake["poll_shrink"],
            wake["wake_work_us"],
            wake["stall_every_wake"].astype(np.float64),
        ]
    )
    stalls = wake["stall_code"] != Zero.code
    sleeps = path.station_sleeps()
    station = hops["station"]
    queued = station >= 0
    hop_i[:, k.HI_STATION] = station
    hop_i[:, k.HI_FLAGS] = np.where(in_order_hops(path, load), k.FLAG_IN_ORDER, 0)
    hop_i[queued, k.HI_FLAGS] |= np.where(sleeps[station[queued]], k.FLAG_SLEEPS, 0)
    batches = wake["batch_code"] != Zero.code
    hop_i[queued, k.HI_FLAGS] |= np.where(batches[station[queued]], k.FLAG_BATCHES, 0)
    per_connection = wake["batch_per_connection"] != 0
    hop_i[queued, k.HI_FLAGS] |= np.where(
        per_connection[station[queued]], k.FLAG_BATCH_PER_CONNECTION, 0
    )
    may_stall = stalls[station[queued]] & (hops["may_stall"][queued] != 0)
    hop_i[queued, k.HI_FLAGS] |= np.where(may_stall, k.FLAG_STALLS, 0)
    hop_i[:, k.HI_FLAGS] |= np.where(hops["linger_code"] != Zero.code, k.FLAG_LINGERS, 0)
    hop_i[:, k.HI_FLAGS] |= np.where(hops["linger_per_batch"] != 0, k.FLAG_LINGERS_PER_BATCH, 0)
    hop_i[:, k.HI_FLAGS] |= np.where(hops["linger_yields"] != 0, k.FLAG_LINGER_YIELDS, 0)
    hop_i[:, k.HI_FLAGS] |= np.where(hops["own_wake"] != 0, k.FLAG_OWN_WAKE, 0)
    hop_i[:, k.HI_FLAGS] |= np.where(hops["allowance"] >= 0, k.FLAG_ALLOWANCE, 0)
    hop_i[:, k.HI_ALLOWANCE] = hops["allowance"]
    hop_i[:, k.HI_FLAGS] |= np.where(hops["holds"] != 0, k.FLAG_HOLDS, 0)
    hop_i[:, k.HI_FLAGS] |= np.where(hops["continues"] != 0, k.FLAG_CONTINUES, 0)
    hiccups = wake["hiccup_rate_per_s"] > 0
    hop_i[queued, k.HI_FLAGS] |= np.where(hiccups[station[queued]], k.FLAG_HICCUPS, 0)
    hop_i[:, k.HI_VISIT] = path.station_visits()
    servers = np.asarray(path.station_servers, dtype=np.int64)
    first = np.concatenate([[0], np.cumsum(servers)[:-1]])
    hop_i[queued, k.HI_SERVER] = first[station[queued]]
    hop_i[queued, k.HI_SERVERS] = servers[station[queued]]
    hop_i[:, k.HI_WHOLE_READ] = hops["whole_read"]
    for s, (first_hop, last_hop) in enumerate(path.span_hops):
        hop_i[first_hop, k.HI_SPAN_OPEN] |= 1 << s
        hop_i[last_hop, k.HI_SPAN_CLOSE] |= 1 << s
    for first_hop, last_hop in path.reader_runs().values():
        hop_i[first_hop, k.HI_FLAGS] |= k.FLAG_READER
        hop_i[first_hop, k.HI_READ_LAST] = last_hop
    return hop_i, station_wake_i, np.ascontiguousarray(station_cold), np.concatenate(tables.chunks)


def in_order_hops(path: CompiledPath, load: Load) -> np.ndarray:
    """Station hops whose arrivals are produced in time order, so they need no calendar event.

    The calendar exists only to hand each station its arrivals in time order. A station visited
    at a single hop ``h`` already gets them in order when every message reaches ``h`` straight
    from a one-server station (FIFO, so its departures are non-decreasing in the order it
    serves them) through hops whose times are constant (adding a constant keeps the order), or
    straight from the open-loop generator of one-message cycles (sends in time order). A
    reader's stages and the stations right after a reader are never in order: a reader's
    arrivals must meet its polls in time order; nor is a hop whose wake-ups may stall (a
    stalled message arrives late, after others).
    """
    hops = path.hops
    station = hops["station"]
    reader = path.station_wake["reader"] != 0
    stalls = path.station_wake["stall_code"] != Zero.code
    visits = np.bincount(station[station >= 0], minlength=path.n_stations)
    constant = np.isin(hops["delay_code"], (Zero.code, Const.code))
    ordered = np.zeros(path.n_hops, dtype=np.bool_)
    for h in range(path.n_hops):
        if station[h] < 0 or visits[station[h]] != 1 or not constant[h] or reader[station[h]]:
            continue
        if stalls[station[h]] and hops["may_stall"][h]:
            continue
        k = h - 1
        while k >= 0 and station[k] < 0 and constant[k]:
            k -= 1
        if k >= 0:
            ordered[h] = (
                station[k] >= 0 and path.station_servers[station[k]] == 1 and not reader[station[k]]
            )
        else:
            ordered[h] = load.loop == dtypes.LOOP_OPEN and load.messages_per_cycle == 1
    return ordered


class _Run:
    """All the state of one run, in arrays the kernel reads and writes; a replay's given
    arrivals (:class:`twin.flow.Arrivals`) in place of the generated schedule."""

    def __init__(self, path: CompiledPath, load: Load, arrivals: Arrivals | None = None):
        self.path = path
        self.load = load
        if arrivals is None:
            self.arrivals_us = np.zeros(0)
            self.arrival_conn = np.zeros(0, dtype=np.int64)
            self.arrival_kind = np.zeros(0, dtype=np.int64)
            self.exchange_hop = -1
        else:
            self.arrivals_us = np.ascontiguousarray(arrivals.send_us, dtype=np.float64)
            self.arrival_conn = np.ascontiguousarray(arrivals.connection, dtype=np.int64)
            self.arrival_kind = np.ascontiguousarray(arrivals.kind, dtype=np.int64)
            self.exchange_hop = exchange_hop(path)
        self.model_hop = -1 if arrivals is None else model_hop(path)
        self.replay_f = np.full((len(self.arrivals_us), 4), np.nan)
        self.replay_f[:, k.RF_REJECTED] = 0.0
        # The venue's throttle (twin.protections.Throttle): its parameters and buckets, full.
        throttle = path.throttle
        self.throttle_hop, self.reject_hop = (
            (-1, -1) if throttle is None else throttle_hops(path.hop_names)
        )
        self.throttle_p = np.zeros(6)
        buckets = 1
        if throttle is not None:
            self.throttle_p[:] = [
                throttle.rate_per_s / 1e6,
                throttle.burst,
                throttle.disconnect_us,
                *throttle.weights,
            ]
            buckets = load.accounts if throttle.per_session else 1
        self.throttle_per_session = throttle is not None and throttle.per_session
        self.throttle_f = np.zeros((buckets, 3))
        self.throttle_f[:, k.TF_TOKENS] = self.throttle_p[k.TP_BURST]
        self.hop_i, self.station_wake_i, self.station_cold, self.quantiles = hop_tables(path, load)
        self.station_next = np.zeros(path.n_stations, dtype=np.int64)
        self.closed = load.loop == dtypes.LOOP_CLOSED
        slots = load.accounts if self.closed else INITIAL_SLOTS
        if slots > k.MAX_SLOTS:
            raise SimulationError(f"{slots} accounts: the fast engine allows {k.MAX_SLOTS}")
        self.rng = seed_state(load.seed, FAST_STREAM)
        self.fstate = np.zeros(k.FSTATE_LEN)
        self.istate = np.zeros(k.ISTATE_LEN, dtype=np.int64)
        # The calendar has room for 2 * slots + 2 entries: those past its end stay +inf, so
        # the kernel's sift-down reads both children of any node without a bounds test.
        self.heap_t = np.full(2 * slots + 2, np.inf)
        self.heap_k = np.zeros(2 * slots + 2, dtype=np.int64)
        self.free_slots = np.arange(slots, dtype=np.int64)[::-1].copy()
        self.istate[k.I_FREE_N] = slots
        self.slot_f = np.zeros((slots, k.SLOT_F_COLS))
        self.slot_i = np.zeros((slots, k.SLOT_I_COLS), dtype=np.int64)
        self.server_free_us = np.zeros(int(path.station_servers.sum()))
        # When each batching station took its current batch, per connection and visit where it
        # reads each connection apart (twin.path.Station.batch_per_connection).
        per_connection = path.station_wake["batch_per_connection"].any()
        visits = int(path.station_visits().max()) + 1
        self.batch_taken_us = np.full(
            (path.n_stations, load.accounts * visits if per_connection else 1), -np.inf
        )
        self.station_held_us = np.zeros(path.n_stations)  # when each hold ends (Hop.holds)
        self.station_poll_us = np.zeros(path.n_stations)  # halt polling's windows (closed)
        # Each station's hiccups: its timeline's state (twin.fast._hiccup).
        (
            self.hiccup_f, self.hiccup_rng, self.hiccup_gap_us, self.hiccup_q, self.hiccup_row,
        ) = hiccup_state(path, load.seed)  # fmt: skip
        # One histogram per message of a cycle (the order loop's order and cancel).
        self.counts = np.tile(empty_counts(), (load.messages_per_cycle, 1))
        self.hop_sum_us = np.zeros(path.n_hops)
        self.busy_us = np.zeros(path.n_stations)
        self.hop_record_us = np.ascontiguousarray(path.hops["per_record_us"], dtype=np.float64)
        self.reader_i = np.zeros((path.n_stations, 3), dtype=np.int64)
        self.reader_f = np.zeros((path.n_stations, 2))
        self.span_counts = np.tile(empty_counts(), (path.n_spans, 1))
        self.tables = np.ascontiguousarray(path.tables, dtype=np.float64)
        self.table_lengths = np.ascontiguousarray(path.table_lengths, dtype=np.int64)
        self.hop_allowance_us = np.ascontiguousarray(path.hops["allowance_us"], dtype=np.float64)
        self.allowance_f = np.zeros((max(len(path.allowance_depth_us), 1), 3))  # full: none owed
        self.allowance_f[: len(path.allowance_depth_us), k.AL_DEPTH] = path.allowance_depth_us

    def grow(self) -> None:
        """Double the message slots of an open loop (all slots are in flight)."""
        old = len(self.slot_f)
        if 2 * old > k.MAX_SLOTS:
            raise SimulationError(
                f"More than {k.MAX_SLOTS} cycles in flight: the offered load does not drain"
            )
        extra = 2 * old
        self.heap_t = np.concatenate([self.heap_t, np.full(extra, np.inf)])
        self.heap_k = np.concatenate([self.heap_k, np.zeros(extra, dtype=np.int64)])
        self.free_slots = np.concatenate(
            [np.arange(2 * old - 1, old - 1, -1, dtype=np.int64), np.zeros(old, dtype=np.int64)]
        )
        self.istate[k.I_FREE_N] = old
        self.slot_f = np.concatenate([self.slot_f, np.zeros_like(self.slot_f)])
        self.slot_i = np.concatenate([self.slot_i, np.zeros_like(self.slot_i)])

    def advance(self, horizon_us: float) -> int:
        load = self.load
        cycle_rate = load.cycle_rate_per_us
        return int(
            k.run_kernel(
                self.hop_i,
                self.station_next,
                self.station_wake_i,
                self.station_cold,
                self.server_free_us,
                self.batch_taken_us,
                self.quantiles,
                self.tables,
                self.table_lengths,
                self.closed,
                load.in_turn,
                load.arrivals == dtypes.ARRIVALS_POISSON,
                1.0 / cycle_rate,
                load.accounts / cycle_rate,
                float(load.warmup_us),
                float(load.end_us),
                int(load.messages_per_cycle),
                int(load.burst),
                load.burst_sizes == dtypes.BURST_GEOMETRIC,
                self.rng,
                self.fstate,
                self.istate,
                self.heap_t,
                self.heap_k,
                self.free_slots,
                self.slot_f,
                self.slot_i,
                self.counts,
                self.hop_sum_us,
                self.busy_us,
                float(horizon_us),
                self.hop_record_us,
                self.reader_i,
                self.reader_f,
                self.span_counts,
                self.hop_allowance_us,
                self.allowance_f,
                int(load.accounts),
                self.station_held_us,
                self.station_poll_us,
                self.hiccup_f,
                self.hiccup_rng,
                self.hiccup_gap_us,
                self.hiccup_q,
                self.hiccup_row,
                self.arrivals_us,
                self.arrival_conn,
                int(self.exchange_hop),
                self.replay_f,
                self.arrival_kind,
                int(self.throttle_hop),
                int(self.reject_hop),
                bool(self.throttle_per_session),
                self.throttle_p,
                self.throttle_f,
                int(self.model_hop),
            )
        )

    def output(self) -> EngineOutput:
        return EngineOutput(
            counts=self.counts.sum(axis=0),
            counts_by_kind=self.counts,
            messages=int(self.istate[k.I_MESSAGES]),
            rtt_sum_us=float(self.fstate[k.F_RTT_SUM]),
            rtt_max_us=float(self.fstate[k.F_RTT_MAX]),
            hop_time_sum_us=self.hop_sum_us,
            station_busy_us=self.busy_us,
            duration_us=self.load.duration_us,
            span_counts=self.span_counts,
            rejected=int(self.istate[k.I_REJECTED]),
        )


def simulate(path: CompiledPath, load: Load, progress: Progress | None = None) -> EngineOutput:
    """Run ``load`` over ``path`` compiled; ``progress(fraction)`` is called between chunks."""
    return _drive(_Run(path, load), progress).output()


def replay(
    path: CompiledPath, load: Load, arrivals: Arrivals, progress: Progress | None = None
) -> ReplayOutput:
    """Run the given arrivals over ``path`` compiled (``load`` from :func:`twin.flow.replay_load`):
    each request's exchange and reply times, and the run's totals."""
    return Replayer(path, load, arrivals).finish(progress)


# Arrays of a run that only its path and flow determine: not part of a saved replay state.
_REBUILT = frozenset({"arrivals_us", "arrival_conn", "arrival_kind", "quantiles", "tables"})


class Replayer:
    """A replay that can stop at a time and resume, in this process or another: its state is a
    dict of arrays (:meth:`state`, :meth:`restore`), so a long flow is run chunk by chunk and an
    interrupted one continues where its last saved state stopped (:mod:`twin.replay`). The same
    draws as one uninterrupted :func:`replay`."""

    def __init__(self, path: CompiledPath, load: Load, arrivals: Arrivals):
        self._run = _Run(path, load, arrivals)

    def advance(self, horizon_us: float) -> bool:
        """Run until every event before ``horizon_us`` is done; True when the replay is over."""
        while True:
            status = self._run.advance(horizon_us)
            if status == k.STATUS_DONE:
                return True
            if status == k.STATUS_PAUSED:
                return False
            if status == k.STATUS_FULL:
                self._run.grow()
            else:
                raise SimulationError(f"fast engine kernel returned unknown status {status}")

    def finish(self, progress: Progress | None = None) -> ReplayOutput:
        _drive(self._run, progress)
        return self.output()

    def done_us(self) -> np.ndarray:
        """When each request's reply reached the client so far (NaN: not yet)."""
        return self._run.replay_f[:, k.RF_DONE]

    def state(self) -> dict[str, np.ndarray]:
        """The arrays the run changes (those built from the path and the flow are rebuilt)."""
        return {
            n: a
            for n, a in vars(self._run).items()
            if isinstance(a, np.ndarray) and n not in _REBUILT
        }

    def restore(self, state: dict[str, np.ndarray]) -> None:
        mine = self.state()
        if set(state) != set(mine):
            raise SimulationError("A saved replay state from another version of the engine")
        for name, array in state.items():
            setattr(self._run, name, np.ascontiguousarray(array, dtype=mine[name].dtype))

    def output(self) -> ReplayOutput:
        run = self._run
        return ReplayOutput(
            totals=run.output(),
            exchange_us=run.replay_f[:, k.RF_EXCH].copy(),
            done_us=run.replay_f[:, k.RF_DONE].copy(),
            rejected=run.replay_f[:, k.RF_REJECTED] != 0,
            model_us=run.replay_f[:, k.RF_MODEL].copy() if run.model_hop >= 0 else None,
        )


def _drive(run: _Run, progress: Progress | None) -> _Run:
    """Advance ``run`` to its end, growing its slots as needed and reporting progress."""
    load = run.load
    chunk_us = load.span_us(MESSAGES_PER_CHUNK)
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
    return run
