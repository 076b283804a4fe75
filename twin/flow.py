"""A non-stationary arrival stream: the requests of an order flow, given one by one.

Both engines take a replay's :class:`Arrivals` in place of their generated schedule (the
fast engine's ``arrivals_us`` kernel input, the reference engine's ``replay`` process): one
message per request, sent at its time on its connection, recorded whatever its time (a replay
has no warm-up: it starts from an idle system, as a recorded flow does). Each request's
exchange time is when it leaves the path's exchange hop (:func:`exchange_hop`), its reply time
when the reply reaches the client; :class:`ReplayOutput` holds both and the run's totals.

A flow described by its rate (:func:`rate_trace_arrivals`) is a Poisson process whose rate is
piecewise constant: each segment's count is Poisson, its times uniform and sorted (the order
statistics of a Poisson process given its count), drawn from an explicit seed.

Times are microseconds from the flow's first request (:mod:`twin.units`); files carry
nanoseconds (:mod:`twin.flowfile`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from twin import dtypes
from twin.errors import ConfigError
from twin.load import Load
from twin.path import CompiledPath
from twin.results import EngineOutput

# Request kinds of an order flow, by integer code (a flow file names them).
KIND_NEW, KIND_CANCEL, KIND_MODIFY = 0, 1, 2
KIND_NAMES = ("new", "cancel", "modify")
# Stream id separating a rate trace's arrival draws from the engines' (same seed).
RATE_TRACE_STREAM = 0x52415445


@dataclass(frozen=True)
class Arrivals:
    """Requests to send: times (us from the first, sorted), connection (0-based, dense) and
    kind code of each. Built by :mod:`twin.flowfile` or :func:`rate_trace_arrivals`."""

    send_us: np.ndarray  # float64, non-decreasing, >= 0
    connection: np.ndarray  # int64, 0 .. connections - 1
    kind: np.ndarray  # int8 codes, KIND_*

    def __post_init__(self) -> None:
        n = len(self.send_us)
        if n == 0:
            raise ConfigError("An order flow needs at least one request")
        if len(self.connection) != n or len(self.kind) != n:
            raise ConfigError("Arrivals: send_us, connection and kind differ in length")

    def __len__(self) -> int:
        return len(self.send_us)

    @property
    def connections(self) -> int:
        return int(self.connection.max()) + 1

    def slice(self, start: int, stop: int) -> Arrivals:
        return Arrivals(
            self.send_us[start:stop], self.connection[start:stop], self.kind[start:stop]
        )


@dataclass(frozen=True)
class ReplayOutput:
    """A replay's result: each request's exchange and reply times (us, absolute, as
    :attr:`Arrivals.send_us`) and the totals an engine run gives (histograms, hop times)."""

    totals: EngineOutput
    exchange_us: np.ndarray  # float64, when each request left the exchange hop (or was rejected)
    done_us: np.ndarray  # float64, when each reply reached the client
    rejected: np.ndarray | None = None  # bool, where the venue's throttle refused it (None: none)
    # float64, when a feed path's update reached the client's model (None: the path has none)
    model_us: np.ndarray | None = None


def exchange_hop(path: CompiledPath) -> int:
    """The hop whose completion is a request's exchange timestamp: the matching engine's (its
    last hop of component ``engine`` with a queue), else the venue gateway's first queue (an
    echo's), else the middle hop."""
    stations = path.hops["station"]
    for h in range(path.n_hops - 1, -1, -1):
        if path.hop_components[h] == "engine" and stations[h] >= 0:
            return h
    gateway = [
        h for h in range(path.n_hops) if path.hop_components[h] == "gateway" and stations[h] >= 0
    ]
    if gateway:
        return gateway[0]
    return path.n_hops // 2


def model_hop(path: CompiledPath) -> int:
    """The hop whose completion is a market-data update reaching the client's model (a feed
    path's ``client model update``), -1 on a path without a feed."""
    from twin.components.feed import MODEL_UPDATE

    names = path.hop_names
    return names.index(MODEL_UPDATE) if MODEL_UPDATE in names else -1


def replay_load(load: Load, arrivals: Arrivals) -> Load:
    """The load an engine runs a replay under: the scenario's seed and path, an open loop of
    one message per request over the flow's span, every request recorded (no warm-up), on as
    many connections as the flow uses or the scenario has, whichever is more."""
    last_us = float(arrivals.send_us[-1])
    span_us = float(np.nextafter(last_us, np.inf)) if last_us > 0 else 1.0
    rate = max(len(arrivals) / span_us * 1e6, 1e-9)
    return Load(
        loop=dtypes.LOOP_OPEN,
        arrivals=dtypes.ARRIVALS_POISSON,
        rate_msgs_per_s=rate,
        accounts=max(load.accounts, arrivals.connections),
        messages_per_cycle=1,
        duration_us=span_us,
        warmup_us=0.0,
        seed=load.seed,
    )


def rate_trace_arrivals(
    start_us: np.ndarray,
    rate_msgs_per_s: np.ndarray,
    connections: int,
    seed: int,
    source: str = "the rate trace",
) -> Arrivals:
    """A Poisson flow whose rate is ``rate_msgs_per_s[i]`` from ``start_us[i]`` to
    ``start_us[i + 1]`` (the last entry only ends the flow; times from the trace's start),
    dealt to ``connections`` in turn, all new orders. Each segment's count is Poisson and its
    times uniform, sorted."""
    rng = np.random.default_rng([seed, RATE_TRACE_STREAM])
    parts = []
    for i in range(len(start_us) - 1):
        a, b = float(start_us[i]), float(start_us[i + 1])
        n = int(rng.poisson(rate_msgs_per_s[i] * (b - a) / 1e6))
        parts.append(np.sort(rng.uniform(a, b, n)))
    send = np.concatenate(parts) if parts else np.zeros(0)
    if len(send) == 0:
        raise ConfigError(f"{source}: gives no request (every segment's count is 0)")
    conn = np.arange(len(send), dtype=np.int64) % max(connections, 1)
    return Arrivals(send, conn, np.zeros(len(send), dtype=np.int8))


def piecewise_rate_at(start_us: np.ndarray, rate_msgs_per_s: np.ndarray, t_us: np.ndarray):  # noqa: ANN201
    """The trace's rate (msg/s) at each time of ``t_us`` (0 past its end)."""
    i = np.searchsorted(start_us, t_us, side="right") - 1
    inside = (i >= 0) & (i < len(start_us) - 1)
    return np.where(inside, rate_msgs_per_s[np.clip(i, 0, len(rate_msgs_per_s) - 1)], 0.0)
