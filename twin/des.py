"""The reference engine: a readable SimPy model of the order loop over a compiled path.

Each message is a SimPy process that walks the path's hops in order: it waits the hop's fixed
time and its non-queueing delay, then (if the hop has a station) queues FIFO for one of the
station's servers and holds it for the service time (plus a wake-up when it finds a sleeping
station idle, see :class:`twin.path.Station`), or keeps it into the next hop where the hop
continues (:attr:`twin.path.Hop.continues`); at a reader station (a one-thread pipeline) it
joins the next read and leaves each of the reader's stages as the read's work says
(:class:`_Reader`); where the station's vCPU is taken from it now and then (its hiccups,
:class:`twin.path.Hiccups`) its work ends when the fast engine's timeline says
(:func:`twin.fast._hiccup.finish`). In the order loop a client sends a limit
order, and on its ack immediately sends the cancel; each of the two round trips is one recorded
message. Open loops start cycles on a schedule (so a slow reply never delays the next send and
coordinated omission cannot hide the tail); closed loops run ``accounts`` paced loops that each
wait for their reply (and, sending in turn, for the previous account's send). Samples come from
``numpy.random.Generator`` seeded by the load's seed.

Full fidelity and easy to read, not fast (tens of thousands of messages per second of wall
time): ``twin.fast`` runs the same arrays compiled.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Generator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import simpy

from twin import dtypes
from twin.dists import Draw
from twin.fast._hiccup import finish, hiccup_state
from twin.flow import Arrivals, ReplayOutput, exchange_hop, model_hop
from twin.histogram import empty_counts, record_us
from twin.load import Load
from twin.path import CompiledPath, HaltPolling
from twin.protections import throttle_hops
from twin.results import EngineOutput, Progress

# Stream id separating the engine's draws from placement's (same seed, different streams).
DES_STREAM = 0x444553
# Simulated messages between two progress reports (a few seconds of wall time).
MESSAGES_PER_CHUNK = 10_000


@dataclass
class _Reader:
    """A reader station's state (:attr:`twin.path.Station.reader`): its stages are hops
    ``first..last``; messages waiting for the next read, each with the event that hands it its
    stage times; when the thread is next free."""

    first: int
    last: int
    pending: list[tuple[simpy.Event, float]] = field(default_factory=list)
    free: float = 0.0


class _Servers:
    """A station's ``capacity`` servers, granted first come, first served: ``simpy.Resource``
    without its generality. Each grant and each release is one event scheduled exactly where
    SimPy's ``Resource`` schedules its ``Request`` and ``Release`` (a request is granted at once
    if the longest-waiting one may take a free server; a freed server goes to the
    longest-waiting request when the release is processed), so a run orders its events and
    draws its numbers as with ``simpy.Resource``, at a fraction of its bookkeeping.
    ``count``: servers in use; ``queue``: requests waiting for one."""

    __slots__ = ("env", "capacity", "count", "queue")

    def __init__(self, env: simpy.Environment, capacity: int):
        self.env = env
        self.capacity = capacity
        self.count = 0
        self.queue: deque[simpy.Event] = deque()

    def request(self) -> simpy.Event:
        """An event that fires when the request holds a server."""
        event = simpy.Event(self.env)
        self.queue.append(event)
        self._grant()
        return event

    def release(self, _request: simpy.Event) -> None:
        """Free the server ``_request`` held; the longest-waiting request takes it when this
        release is processed."""
        self.count -= 1
        freed = simpy.Event(self.env)
        freed.callbacks.append(self._grant)
        freed.succeed()

    def _grant(self, _freed: simpy.Event | None = None) -> None:
        if self.queue and self.count < self.capacity:
            self.count += 1
            self.queue.popleft().succeed()


@dataclass(frozen=True)
class _Kept:
    """The server a message keeps into its next hop (twin.path.Hop.continues): its request, and
    the lingers its run has left so far, paid on the server once the run ends (us)."""

    request: Any
    linger_us: float


class _Model:
    """State of one SimPy run: stations, samplers and the measurement totals."""

    def __init__(self, path: CompiledPath, load: Load):
        self.env = simpy.Environment()
        self.load = load
        self.path = path
        # A replay's per-request times (twin.flow), filled by run(arrivals=...).
        self.exchange_hop = -1
        self.replay_exchange_us = np.zeros(0)
        self.replay_done_us = np.zeros(0)
        self.replay_rejected = np.zeros(0, dtype=bool)
        self.model_hop = -1
        self.replay_model_us = np.zeros(0)
        self.arrival_kind = np.zeros(0, dtype=np.int64)
        # The venue's throttle (twin.protections.Throttle): where it acts, and its buckets'
        # tokens, when they were counted and until when each session is cut off.
        self.throttle = path.throttle
        self.throttle_hop, self.reject_hop = (
            (-1, -1) if path.throttle is None else throttle_hops(path.hop_names)
        )
        buckets = load.accounts if path.throttle is not None and path.throttle.per_session else 1
        burst = path.throttle.burst if path.throttle is not None else 0.0
        self.bucket = [[burst, 0.0, 0.0] for _ in range(buckets)]
        self.rejected = 0
        self.rng = np.random.default_rng([load.seed, DES_STREAM])
        hops = path.hops
        self.n_hops = path.n_hops
        self.fixed = [float(x) for x in hops["fixed_us"]]
        self.delay = [self._sampler(h, "delay", path) for h in hops]
        self.service = [self._sampler(h, "service", path) for h in hops]
        self.station = [int(s) for s in hops["station"]]
        self.per_read = [self._sampler(h, "read", path) for h in hops]
        self.per_record_us = [float(x) for x in hops["per_record_us"]]
        self.whole_read = [bool(x) for x in hops["whole_read"]]
        self.readers = {st: _Reader(a, b) for st, (a, b) in path.reader_runs().items()}
        self.span_first = [int(x) for x in path.span_hops[:, 0]]
        self.span_last = [int(x) for x in path.span_hops[:, 1]]
        self.span_values: list[list[float]] = [[] for _ in path.span_names]
        self.resources = [_Servers(self.env, int(c)) for c in path.station_servers]
        wake = path.station_wake
        self.wake = [self._sampler(w, "wake", path) for w in wake]
        self.cold_us = [float(x) for x in wake["cold_us"]]
        self.cold_tau_us = [float(x) for x in wake["cold_tau_us"]]
        self.linger_us = [float(x) for x in wake["linger_us"]]
        self.linger_cold_us = [float(x) for x in wake["linger_cold_us"]]
        self.halt_share = [float(x) for x in wake["halt_share"]]
        self.halt_tau_us = [float(x) for x in wake["halt_tau_us"]]
        # The host's halt polling (twin.path.HaltPolling) per station (None: none), and each
        # station's current window (closed at the start).
        self.polling = [
            HaltPolling(
                float(w["poll_max_us"]), float(w["poll_grow"]), float(w["poll_grow_start_us"]),
                float(w["poll_shrink"]),
            )
            if w["poll_max_us"] > 0
            else None
            for w in wake
        ]  # fmt: skip
        self.poll_window_us = [0.0] * len(wake)
        self.wake_work_us = [float(x) for x in wake["wake_work_us"]]
        # Each station's hiccups: the fast engine's timeline, read through the same compiled
        # function (twin.fast._hiccup), so both engines meet the same ones.
        self.hiccups = hiccup_state(path, load.seed)
        self.has_hiccups = [bool(x > 0) for x in wake["hiccup_rate_per_s"]]
        self.tables = np.ascontiguousarray(path.tables, dtype=np.float64)
        self.table_lengths = np.ascontiguousarray(path.table_lengths, dtype=np.int64)
        self.linger = [self._sampler(h, "linger", path) for h in hops]
        self.linger_per_batch = [bool(x) for x in hops["linger_per_batch"]]
        self.linger_yields = [bool(x) for x in hops["linger_yields"]]
        # A hop's own wake-up in place of its station's (twin.path.Hop.wake).
        self.own_wake = [bool(x) for x in hops["own_wake"]]
        self.hop_wake = [self._sampler(h, "wake", path) for h in hops]
        self.may_stall = [bool(x) for x in hops["may_stall"]]
        self.allowance = [int(x) for x in hops["allowance"]]
        self.allowance_us = [float(x) for x in hops["allowance_us"]]
        # Each token bucket's depth, the credit owed to it and since when (full buckets at the
        # start: nothing owed).
        self.allowance_depth_us = [float(x) for x in path.allowance_depth_us]
        self.owed_us = [0.0] * len(self.allowance_depth_us)
        self.owed_at = [0.0] * len(self.allowance_depth_us)
        self.batch = [self._sampler(w, "batch", path) for w in wake]
        self.stall = [self._sampler(w, "stall", path) for w in wake]
        self.stall_every_wake = [bool(x) for x in wake["stall_every_wake"]]
        # When each batching station took its current batch (a later arrival starts the next),
        # per connection and visit at a station that reads each connection apart (visited at
        # several hops, it reads a socket of the connection at each).
        self.batch_per_connection = [bool(x) for x in wake["batch_per_connection"]]
        self.visit = [int(x) for x in path.station_visits()]
        visits = np.bincount(
            path.hops["station"][path.hops["station"] >= 0], minlength=path.n_stations
        )
        self.batch_taken = [
            [-np.inf] * (load.accounts * int(n) if per else 1)
            for per, n in zip(self.batch_per_connection, visits, strict=True)
        ]
        # Hops whose station holds the message through the next hop's delay, awake meanwhile,
        # and when each station's last hold ends (twin.path.Hop.holds).
        self.holds = [bool(x) for x in hops["holds"]]
        # Hops whose message keeps its server into the next hop (twin.path.Hop.continues).
        self.continues = [bool(x) for x in hops["continues"]]
        self.held_until = [0.0] * path.n_stations
        self.cycles_started = 0  # an open loop deals its cycles to the connections in turn
        # A closed loop in turn: the account whose send is next, and those free but waiting.
        self.turn = 0
        self.awaiting_turn: dict[int, simpy.Event] = {}
        self.sleeps = [bool(x) for x in path.station_sleeps()]
        # When each (one-server) station last finished a service: how long it has sat idle.
        self.last_free = [0.0] * path.n_stations
        self.samples: list[list[float]] = [[] for _ in range(load.messages_per_cycle)]
        self.hop_sum = np.zeros(self.n_hops)
        self.busy = np.zeros(path.n_stations)

    def _sampler(self, row: np.void, part: str, path: CompiledPath) -> Draw | None:
        """The draw of the ``part`` distribution encoded in a hop or station row."""
        return path.distribution(row, part).draw_function(self.rng)

    def in_window(self, t: float) -> bool:
        return self.load.warmup_us <= t < self.load.end_us

    def wake_up(self, station: int, idle_us: float, hop: int = -1) -> tuple[float, float]:
        """What waking ``station`` after ``idle_us`` of idleness adds to a service (at ``hop``:
        its own wake-up if it has one, all of it the halt's), and how far it cooled
        (``1 - exp(-idle / cold_tau)``; 0 if the host still polled its vCPU, which never left its
        core)."""
        own = hop >= 0 and self.own_wake[hop]
        draw = self.hop_wake[hop] if own else self.wake[station]
        extra = draw() if draw is not None else 0.0
        share = self.halt_share[station]
        polled = share > 0 and self.polled(station, idle_us)
        if share > 0:
            awake = 1.0 if polled else np.exp(-idle_us / self.halt_tau_us[station])
            extra *= 1.0 - (1.0 if own else share) * awake
        extra += self.wake_work_us[station]
        tau = self.cold_tau_us[station]
        cooled = 0.0 if polled or tau <= 0 else float(-np.expm1(-idle_us / tau))
        return extra + self.cold_us[station] * cooled, cooled

    def polled(self, station: int, idle_us: float) -> bool:
        """Whether the host still polled ``station``'s vCPU when a wake-up came after
        ``idle_us`` halted; adapts the station's window to that halt
        (:meth:`twin.path.HaltPolling.adapt`)."""
        polling = self.polling[station]
        if polling is None:
            return False
        polled, self.poll_window_us[station] = polling.adapt(self.poll_window_us[station], idle_us)
        return polled

    def idle_since(self, station: int) -> float:
        """When ``station`` last went idle: its server freed, or the last hold ended."""
        return max(self.last_free[station], self.held_until[station])

    def take_allowance(self, bucket: int, cost_us: float) -> float:
        """Take ``cost_us`` of a token bucket's credit now (:class:`twin.path.Allowance`); return
        how long until it is there: the credit owed drains at one microsecond per microsecond,
        and what exceeds the bucket's depth is waited for, in arrival order."""
        now = self.env.now
        owed = max(0.0, self.owed_us[bucket] - (now - self.owed_at[bucket]))
        self.owed_us[bucket] = owed + cost_us
        self.owed_at[bucket] = now
        return max(0.0, owed + cost_us - self.allowance_depth_us[bucket])

    def finish(self, station: int, work_us: float) -> float:
        """How long ``work_us`` started now at ``station`` takes, its vCPU's hiccups included
        (:class:`twin.path.Hiccups`; none: ``work_us``)."""
        if not self.has_hiccups[station]:
            return work_us
        now = self.env.now
        f, rng, gap_us, q, row = self.hiccups
        end = finish(station, now, work_us, f, rng, gap_us, q, row, self.tables, self.table_lengths)
        return end - now

    def release_after(self, station: int, req: Any, linger_us: float) -> Generator[Any, Any, None]:
        """Keep a server busy ``linger_us`` after its message left (a wake-up's work, the work
        the visit left behind), then free it."""
        yield self.env.timeout(self.finish(station, linger_us))
        self.resources[station].release(req)
        self.last_free[station] = self.env.now

    def message(self, kind: int, conn: int, request: int = -1) -> Generator[Any, Any, None]:
        """One client message's round trip through every hop (``kind``: its place in the cycle,
        ``conn``: the connection it travels on; ``request``: its row of a replay, -1 none)."""
        env = self.env
        sent = env.now
        record = self.in_window(sent)
        hop_times = [0.0] * self.n_hops if record else None
        span_start = [0.0] * len(self.span_first)
        # Whether the message took a new batch at the last batching station it visited.
        led = False
        holder = -1  # the station holding it through this hop (twin.path.Hop.holds)
        kept: _Kept | None = None  # the server it keeps into this hop (twin.path.Hop.continues)
        i = 0
        while i < self.n_hops:
            st = self.station[i]
            reader = self.readers.get(st)
            if reader is not None:
                stages = yield from self.read_stages(reader, st, sent)
                self.close_reader_stages(reader, stages, hop_times, span_start)
                if request >= 0 and reader.first <= self.model_hop <= reader.last:
                    self.replay_model_us[request] = stages[self.model_hop - reader.first + 1][1]
                i = reader.last + 1
                continue
            entered = env.now
            self.open_spans(i, entered, span_start)
            draw = self.delay[i]
            wait = self.fixed[i] + (draw() if draw is not None else 0.0)
            if holder >= 0:  # held awake through this delay
                self.held_until[holder] = max(self.held_until[holder], entered + wait)
                holder = -1
            if wait > 0:
                yield env.timeout(wait)
            if i == self.throttle_hop and not self.admitted(conn, kind, request):
                if record:
                    self.rejected += 1
                if request >= 0:
                    self.replay_rejected[request] = True
                    self.replay_exchange_us[request] = env.now
                i = self.reject_hop  # the gateway answers it at once
                continue
            if st >= 0:
                led, kept = yield from self.serve(i, st, led, conn, kept)
                holder = st if self.holds[i] else -1
            if hop_times is not None:
                hop_times[i] = env.now - entered
                self.close_spans(i, env.now, span_start)
            if request >= 0 and i == self.exchange_hop:
                self.replay_exchange_us[request] = env.now
            if request >= 0 and i == self.model_hop:
                self.replay_model_us[request] = env.now
            i += 1
        if request >= 0:
            self.replay_done_us[request] = env.now
        if hop_times is not None:
            self.samples[kind].append(env.now - sent)
            self.hop_sum += hop_times

    def serve(
        self, i: int, st: int, led: bool, conn: int, kept: _Kept | None = None
    ) -> Generator[Any, Any, tuple[bool, _Kept | None]]:
        """Queue FIFO for a server of station ``st`` and hold it for hop ``i``'s service, or go
        on with the server ``kept`` from the hop before (twin.path.Hop.continues); return
        whether the message now leads a batch (``led``: whether it did before; ``conn``: the
        message's connection) and the server it keeps into the next hop, if it does."""
        if kept is not None:
            return (yield from self.serve_kept(i, st, led, kept))
        env = self.env
        resource = self.resources[st]
        stall = self.stall[st]
        if stall is not None and self.may_stall[i] and resource.count == 0 and not resource.queue:
            # Waking the sleeping station, it may stall (the likelier the longer it slept; never
            # within the host's polling window), and where its stall comes alike at every
            # wake-up, draw that one too: the message arrives that much later, the servers free
            # for others meanwhile.
            idle_us = env.now - self.idle_since(st)
            late = 0.0
            if idle_us > 0:
                tau = self.cold_tau_us[st]
                polled = idle_us <= self.poll_window_us[st]  # the vCPU never left its core
                odds = -np.expm1(-idle_us / tau) if tau > 0 else 0.0
                if not polled and self.rng.random() < odds:
                    late += stall()
                if self.stall_every_wake[st]:
                    late += stall()
            if late > 0:
                yield env.timeout(late)
        if self.allowance[i] >= 0:
            wait = self.take_allowance(self.allowance[i], self.allowance_us[i])
            if wait > 0:
                yield env.timeout(wait)
        idle_us = 0.0
        if self.sleeps[st] and resource.count == 0 and not resource.queue:
            idle_us = max(0.0, env.now - self.idle_since(st))
        arrived = env.now
        req = resource.request()
        yield req
        serve = self.service[i]
        s = serve() if serve is not None else 0.0
        batch = self.batch[st]
        if batch is not None:
            taken = self.batch_taken[st]
            c = self.visit[i] * self.load.accounts + conn if self.batch_per_connection[st] else 0
            led = arrived > taken[c]
            if led:
                s += batch()
                taken[c] = env.now
        linger = 0.0
        if idle_us > 0:
            woke, cooled = self.wake_up(st, idle_us, i)
            s += woke
            linger = self.linger_us[st] + self.linger_cold_us[st] * cooled
        return (yield from self.work(i, st, led, _Kept(req, 0.0), s, linger))

    def serve_kept(
        self, i: int, st: int, led: bool, kept: _Kept
    ) -> Generator[Any, Any, tuple[bool, _Kept | None]]:
        """Hop ``i``'s service on the server the message kept from the hop before: no queue, no
        wake-up, its own work and linger only."""
        serve = self.service[i]
        return (yield from self.work(i, st, led, kept, serve() if serve is not None else 0.0, 0.0))

    def work(
        self, i: int, st: int, led: bool, kept: _Kept, s: float, linger: float
    ) -> Generator[Any, Any, tuple[bool, _Kept | None]]:
        """Hop ``i``'s service ``s`` on the ``kept`` server, with what the visit leaves on it
        (``linger`` so far, and the hop's own): counted busy, then the station stays awake
        through what yields; the message keeps the server into the next hop if hop ``i``
        continues (its linger then waits for the run's end), else the server is freed after
        every linger of the run."""
        left_behind = self.linger[i]
        if left_behind is not None and (led or not self.linger_per_batch[i]):
            linger += left_behind()
        if self.in_window(self.env.now):
            self.busy[st] += s + linger
        yield self.env.timeout(self.finish(st, s))
        if self.linger_yields[i]:  # awake through it, no server held
            if linger > 0:
                self.held_until[st] = max(self.held_until[st], self.env.now + linger)
            linger = 0.0
        linger += kept.linger_us
        if self.continues[i]:
            return led, _Kept(kept.request, linger)
        if linger > 0:
            self.env.process(self.release_after(st, kept.request, linger))
        else:
            self.resources[st].release(kept.request)
            self.last_free[st] = self.env.now
        return led, None

    def open_spans(self, hop: int, t: float, span_start: list[float]) -> None:
        for k, first in enumerate(self.span_first):
            if first == hop:
                span_start[k] = t

    def close_spans(self, hop: int, t: float, span_start: list[float]) -> None:
        for k, last in enumerate(self.span_last):
            if last == hop:
                self.span_values[k].append(t - span_start[k])

    def read_stages(
        self, reader: _Reader, st: int, sent: float
    ) -> Generator[Any, Any, list[tuple[float, float]]]:
        """Join the reader's next read; return, per stage, (when the stage started over the
        read, when this message left it), having waited until it left the last stage."""
        env = self.env
        arrived = env.now
        ticket = env.event()
        if not reader.pending:
            env.process(self.read(reader, st))
        reader.pending.append((ticket, sent))
        stages: list[tuple[float, float]] = yield ticket
        yield env.timeout(stages[-1][1] - env.now)
        return [(arrived, arrived), *stages]

    def read(self, reader: _Reader, st: int) -> Generator[Any, Any, None]:
        """One read: poll when the thread is free; the read call comes at the end of the first
        stage's per-read work (and of the wake-up of a thread that sat idle), and takes every
        message that arrived by then (just after, so that one arriving at that very instant
        is in); work out each member's stages."""
        env = self.env
        poll = max(env.now, reader.free)
        draw = self.per_read[reader.first]
        first_work = draw() if draw is not None else 0.0
        if env.now > reader.free:
            first_work += self.wake_up(st, env.now - reader.free)[0]
        yield env.timeout(float(np.nextafter(poll + first_work, np.inf)) - env.now)
        members, reader.pending = reader.pending, []
        n = len(members)
        records = 1 + sum(members[k][1] != members[k - 1][1] for k in range(1, n))
        t = poll
        times: list[list[tuple[float, float]]] = [[] for _ in members]
        for h in range(reader.first, reader.last + 1):
            start = t
            draw = self.per_read[h]
            work = first_work if h == reader.first else (draw() if draw is not None else 0.0)
            work += self.per_record_us[h] * (records - 1)
            serve = self.service[h]
            own = [serve() if serve is not None else 0.0 for _ in members]
            exits = np.cumsum(own) + (start + work)
            if self.whole_read[h]:
                exits[:] = exits[-1]
            for k in range(n):
                times[k].append((start, float(exits[k])))
            t = float(exits[-1])
        if self.in_window(poll):
            self.busy[st] += t - poll + self.linger_us[st]
        reader.free = t + self.linger_us[st]
        for (ticket, _), stages in zip(members, times, strict=True):
            ticket.succeed(stages)

    def close_reader_stages(
        self,
        reader: _Reader,
        stages: list[tuple[float, float]],
        hop_times: list[float] | None,
        span_start: list[float],
    ) -> None:
        """Hop times and spans of a message that has left a reader's stages (``stages[0]``:
        its arrival)."""
        for j, h in enumerate(range(reader.first, reader.last + 1), start=1):
            stage_start, left = stages[j]
            self.open_spans(h, stage_start, span_start)
            if hop_times is not None:
                hop_times[h] = left - stages[j - 1][1]
                self.close_spans(h, left, span_start)

    def cycle(self, conn: int) -> Generator[Any, Any, None]:
        """One loop iteration on connection ``conn``: order then cancel (or one echo)."""
        for kind in range(self.load.messages_per_cycle):
            yield self.env.process(self.message(kind, conn))

    def open_loop(self) -> Generator[Any, Any, None]:
        """Start groups of ``burst`` cycles (or a geometric number, mean ``burst``) on a Poisson
        or evenly spaced schedule until the window closes (a group's cycles start together, in
        order)."""
        burst = self.load.burst
        mean_gap = burst / self.load.cycle_rate_per_us
        poisson = self.load.arrivals == dtypes.ARRIVALS_POISSON
        geometric = self.load.burst_sizes == dtypes.BURST_GEOMETRIC and burst > 1
        while True:
            gap = self.rng.exponential(mean_gap) if poisson else mean_gap
            yield self.env.timeout(gap)
            if self.env.now >= self.load.end_us:
                return
            for _ in range(int(self.rng.geometric(1.0 / burst)) if geometric else burst):
                self.env.process(self.cycle(self.cycles_started % self.load.accounts))
                self.cycles_started += 1

    def admitted(self, conn: int, kind: int, request: int) -> bool:
        """The venue's lazy-fill token bucket, now: refill, then take the request's weight
        (True), or refuse it, cutting its session off where the throttle disconnects."""
        throttle = self.throttle
        assert throttle is not None
        now = self.env.now
        bucket = self.bucket[conn if throttle.per_session else 0]
        tokens = min(bucket[0] + (now - bucket[1]) * throttle.rate_per_s / 1e6, throttle.burst)
        bucket[1] = now
        weight = throttle.weights[int(self.arrival_kind[request]) if request >= 0 else kind]
        if now < bucket[2] or tokens < weight:
            bucket[0] = tokens
            if throttle.disconnect_us > 0 and now >= bucket[2]:
                bucket[2] = now + throttle.disconnect_us
            return False
        bucket[0] = tokens - weight
        return True

    def replay(self, arrivals: Arrivals) -> Generator[Any, Any, None]:
        """Send each request of ``arrivals`` at its time, on its connection."""
        env = self.env
        for r, (t, conn) in enumerate(zip(arrivals.send_us, arrivals.connection, strict=True)):
            if t > env.now:
                yield env.timeout(float(t) - env.now)
            env.process(self.message(0, int(conn), r))

    def closed_account(self, account: int, phase_us: float) -> Generator[Any, Any, None]:
        """One account's paced loop on its own connection: a cycle, then wait for its next slot
        (if still ahead)."""
        period = self.load.accounts / self.load.cycle_rate_per_us
        next_start = phase_us
        # A late account sends at once (and catches up slot by slot); it stops once the next
        # send would fall after the window, whether it is on schedule or behind it.
        while max(next_start, self.env.now) < self.load.end_us:
            if next_start > self.env.now:
                yield self.env.timeout(next_start - self.env.now)
            if self.load.in_turn:
                yield from self._take_turn(account)
            yield self.env.process(self.cycle(account))
            next_start += period

    def _take_turn(self, account: int) -> Generator[Any, Any, None]:
        """Wait, free, until the previous account in the rotation has sent, then pass the turn
        on (waking the next account if it is already waiting)."""
        if self.turn != account:
            self.awaiting_turn[account] = self.env.event()
            yield self.awaiting_turn[account]
        self.turn = (account + 1) % self.load.accounts
        waiting = self.awaiting_turn.pop(self.turn, None)
        if waiting is not None:
            waiting.succeed()

    def _run_reporting(self, progress: Progress) -> None:
        """Run to the end one event at a time, reporting each time a slice of time has passed.

        The same steps ``env.run()`` takes, in the same order: reporting adds no event.
        """
        env = self.env
        chunk_us = self.load.span_us(MESSAGES_PER_CHUNK)
        horizon = chunk_us
        while (next_t := env.peek()) != simpy.core.Infinity:
            if next_t >= horizon:
                progress(min(next_t / self.load.end_us, 1.0))
                horizon = next_t + chunk_us
            env.step()
        progress(1.0)

    def run(
        self, progress: Progress | None = None, arrivals: Arrivals | None = None
    ) -> EngineOutput:
        if arrivals is not None:
            self.exchange_hop = exchange_hop(self.path)
            self.replay_exchange_us = np.full(len(arrivals), np.nan)
            self.replay_done_us = np.full(len(arrivals), np.nan)
            self.replay_rejected = np.zeros(len(arrivals), dtype=bool)
            self.model_hop = model_hop(self.path)
            self.replay_model_us = np.full(len(arrivals), np.nan)
            self.arrival_kind = np.asarray(arrivals.kind, dtype=np.int64)
            self.env.process(self.replay(arrivals))
        elif self.load.loop == dtypes.LOOP_OPEN:
            self.env.process(self.open_loop())
        else:
            period = self.load.accounts / self.load.cycle_rate_per_us
            phases = [float(self.rng.uniform(0, period)) for _ in range(self.load.accounts)]
            if self.load.in_turn:  # the rotation starts in the order of the accounts' phases
                phases.sort()
            for account, phase in enumerate(phases):
                self.env.process(self.closed_account(account, phase))
        if progress is None:
            self.env.run()
        else:
            self._run_reporting(progress)
        by_kind = np.tile(empty_counts(), (self.load.messages_per_cycle, 1))
        for kind, values in enumerate(self.samples):
            record_us(by_kind[kind], np.asarray(values))
        samples = np.concatenate([np.asarray(v, dtype=float) for v in self.samples])
        span_counts = np.tile(empty_counts(), (len(self.span_values), 1))
        for k, values in enumerate(self.span_values):
            record_us(span_counts[k], np.asarray(values))
        return EngineOutput(
            counts=by_kind.sum(axis=0),
            counts_by_kind=by_kind,
            messages=len(samples),
            rtt_sum_us=float(samples.sum()),
            rtt_max_us=float(samples.max()) if len(samples) else 0.0,
            hop_time_sum_us=self.hop_sum,
            station_busy_us=self.busy,
            duration_us=self.load.duration_us,
            span_counts=span_counts,
            rejected=self.rejected,
        )


def simulate(path: CompiledPath, load: Load, progress: Progress | None = None) -> EngineOutput:
    """Run the SimPy model of ``load`` over ``path`` and return the window's totals.

    ``progress(fraction of the simulated time)`` is called every few thousand messages.
    """
    return _Model(path, load).run(progress)


def replay(
    path: CompiledPath, load: Load, arrivals: Arrivals, progress: Progress | None = None
) -> ReplayOutput:
    """Run the given arrivals over ``path`` in SimPy (``load`` from
    :func:`twin.flow.replay_load`): each request's exchange and reply times, and the totals."""
    model = _Model(path, load)
    totals = model.run(progress, arrivals)
    return ReplayOutput(
        totals,
        model.replay_exchange_us,
        model.replay_done_us,
        model.replay_rejected,
        model.replay_model_us if model.model_hop >= 0 else None,
    )
