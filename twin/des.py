"""The reference engine: a readable SimPy model of the order loop over a compiled path.

Each message is a SimPy process that walks the path's hops in order: it waits the hop's fixed
time and its non-queueing delay, then (if the hop has a station) queues FIFO for one of the
station's servers and holds it for the service time (plus a wake-up when it finds a sleeping
station idle, see :class:`twin.path.Station`). In the order loop a client sends a limit
order, and on its ack immediately sends the cancel; each of the two round trips is one recorded
message. Open loops start cycles on a schedule (so a slow reply never delays the next send and
coordinated omission cannot hide the tail); closed loops run ``accounts`` paced loops that each
wait for their reply. Samples come from ``numpy.random.Generator`` seeded by the load's seed.

Full fidelity and easy to read, not fast (tens of thousands of messages per second of wall
time): ``twin.fast`` runs the same arrays compiled.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import numpy as np
import simpy

from twin import dtypes
from twin.dists import Draw
from twin.histogram import empty_counts, record_us
from twin.load import Load
from twin.path import CompiledPath
from twin.results import EngineOutput, Progress

# Stream id separating the engine's draws from placement's (same seed, different streams).
DES_STREAM = 0x444553
# Simulated messages between two progress reports (a few seconds of wall time).
MESSAGES_PER_CHUNK = 10_000


class _Model:
    """State of one SimPy run: stations, samplers and the measurement totals."""

    def __init__(self, path: CompiledPath, load: Load):
        self.env = simpy.Environment()
        self.load = load
        self.rng = np.random.default_rng([load.seed, DES_STREAM])
        hops = path.hops
        self.n_hops = path.n_hops
        self.fixed = [float(x) for x in hops["fixed_us"]]
        self.delay = [self._sampler(h, "delay", path) for h in hops]
        self.service = [self._sampler(h, "service", path) for h in hops]
        self.station = [int(s) for s in hops["station"]]
        self.resources = [simpy.Resource(self.env, capacity=int(c)) for c in path.station_servers]
        wake = path.station_wake
        self.wake = [self._sampler(w, "wake", path) for w in wake]
        self.cold_us = [float(x) for x in wake["cold_us"]]
        self.cold_tau_us = [float(x) for x in wake["cold_tau_us"]]
        self.linger_us = [float(x) for x in wake["linger_us"]]
        self.batch_us = [float(x) for x in wake["batch_us"]]
        # When each batching station took its current batch (a later arrival starts the next).
        self.batch_taken = [-np.inf] * path.n_stations
        self.sleeps = [
            draw is not None or cold > 0 or linger > 0
            for draw, cold, linger in zip(self.wake, self.cold_us, self.linger_us, strict=True)
        ]
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

    def wake_up_us(self, station: int, idle_us: float) -> float:
        """What waking ``station`` after ``idle_us`` of idleness adds to a service."""
        draw = self.wake[station]
        cold = self.cold_us[station]
        extra = draw() if draw is not None else 0.0
        if cold > 0:
            extra += cold * -np.expm1(-idle_us / self.cold_tau_us[station])
        return extra

    def release_after(self, station: int, req: Any, linger_us: float) -> Generator[Any, Any, None]:
        """Keep a woken station busy ``linger_us`` after its message left, then free it."""
        yield self.env.timeout(linger_us)
        self.resources[station].release(req)
        self.last_free[station] = self.env.now

    def message(self, kind: int) -> Generator[Any, Any, None]:
        """One client message's round trip through every hop (``kind``: its place in the cycle)."""
        env = self.env
        sent = env.now
        record = self.in_window(sent)
        hop_times = [0.0] * self.n_hops if record else None
        for i in range(self.n_hops):
            entered = env.now
            draw = self.delay[i]
            wait = self.fixed[i] + (draw() if draw is not None else 0.0)
            if wait > 0:
                yield env.timeout(wait)
            st = self.station[i]
            if st >= 0:
                resource = self.resources[st]
                idle_us = 0.0
                if self.sleeps[st] and resource.count == 0 and not resource.queue:
                    idle_us = env.now - self.last_free[st]
                arrived = env.now
                req = resource.request()
                yield req
                serve = self.service[i]
                s = serve() if serve is not None else 0.0
                if self.batch_us[st] > 0 and arrived > self.batch_taken[st]:
                    s += self.batch_us[st]
                    self.batch_taken[st] = env.now
                linger = 0.0
                if idle_us > 0:
                    s += self.wake_up_us(st, idle_us)
                    linger = self.linger_us[st]
                if self.in_window(env.now):
                    self.busy[st] += s + linger
                yield env.timeout(s)
                if linger > 0:
                    env.process(self.release_after(st, req, linger))
                else:
                    resource.release(req)
                    self.last_free[st] = env.now
            if hop_times is not None:
                hop_times[i] = env.now - entered
        if hop_times is not None:
            self.samples[kind].append(env.now - sent)
            self.hop_sum += hop_times

    def cycle(self) -> Generator[Any, Any, None]:
        """One loop iteration: order then cancel (or one echo)."""
        for kind in range(self.load.messages_per_cycle):
            yield self.env.process(self.message(kind))

    def open_loop(self) -> Generator[Any, Any, None]:
        """Start groups of ``burst`` cycles on a Poisson or evenly spaced schedule until the
        window closes (a group's cycles start together, in order)."""
        burst = self.load.burst
        mean_gap = burst / self.load.cycle_rate_per_us
        poisson = self.load.arrivals == dtypes.ARRIVALS_POISSON
        while True:
            gap = self.rng.exponential(mean_gap) if poisson else mean_gap
            yield self.env.timeout(gap)
            if self.env.now >= self.load.end_us:
                return
            for _ in range(burst):
                self.env.process(self.cycle())

    def closed_account(self, phase_us: float) -> Generator[Any, Any, None]:
        """One account's paced loop: a cycle, then wait for its next slot (if still ahead)."""
        period = self.load.accounts / self.load.cycle_rate_per_us
        next_start = phase_us
        # A late account sends at once (and catches up slot by slot); it stops once the next
        # send would fall after the window, whether it is on schedule or behind it.
        while max(next_start, self.env.now) < self.load.end_us:
            if next_start > self.env.now:
                yield self.env.timeout(next_start - self.env.now)
            yield self.env.process(self.cycle())
            next_start += period

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

    def run(self, progress: Progress | None = None) -> EngineOutput:
        if self.load.loop == dtypes.LOOP_OPEN:
            self.env.process(self.open_loop())
        else:
            period = self.load.accounts / self.load.cycle_rate_per_us
            for _ in range(self.load.accounts):
                self.env.process(self.closed_account(float(self.rng.uniform(0, period))))
        if progress is None:
            self.env.run()
        else:
            self._run_reporting(progress)
        by_kind = np.tile(empty_counts(), (self.load.messages_per_cycle, 1))
        for kind, values in enumerate(self.samples):
            record_us(by_kind[kind], np.asarray(values))
        samples = np.concatenate([np.asarray(v, dtype=float) for v in self.samples])
        return EngineOutput(
            counts=by_kind.sum(axis=0),
            counts_by_kind=by_kind,
            messages=len(samples),
            rtt_sum_us=float(samples.sum()),
            rtt_max_us=float(samples.max()) if len(samples) else 0.0,
            hop_time_sum_us=self.hop_sum,
            station_busy_us=self.busy,
            duration_us=self.load.duration_us,
        )


def simulate(path: CompiledPath, load: Load, progress: Progress | None = None) -> EngineOutput:
    """Run the SimPy model of ``load`` over ``path`` and return the window's totals.

    ``progress(fraction of the simulated time)`` is called every few thousand messages.
    """
    return _Model(path, load).run(progress)
