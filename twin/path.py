"""The path a message takes, and its compiled form shared by both engines.

A :class:`Hop` is one place a message spends time. It owns three parts: a fixed propagation time,
a random delay that never queues (infinite servers: fibre, a switch's pipeline, a scaled-out
Hyperplane fleet), and optionally a service at a :class:`Station` with a finite number of servers
(a CPU core, a NIC's packet allowance, a pool of gateway threads), where messages wait in FIFO
order. Hops that name the same station share its servers.

:func:`compile_path` turns a list of hops into plain numpy arrays (:data:`twin.dtypes.HOP_DTYPE`
rows, station capacities, empirical tables): the one description that ``twin.des`` and
``twin.fast`` both execute, so the two engines cannot drift apart silently.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from twin import dtypes
from twin.dists import ZERO, Dist, Empirical, decode
from twin.errors import ModelError


@dataclass(frozen=True)
class Station:
    """A finite-capacity FIFO resource: ``servers`` messages can be in service at once.

    A one-server station can **sleep when idle** (a thread blocked in ``epoll_wait``): a message
    that finds it idle adds a wake-up ``wake`` (drawn) and a cold start
    ``cold_us * (1 - exp(-gap / cold_tau_us))`` to its service, ``gap`` being how long the server
    sat idle (caches, clock and a halted vCPU cool down while it sleeps); a message that finds
    it busy is served warm. This is an M/G/1 queue with exceptional first service: the wake-up
    is paid once per busy period, so it fades as the load rises and is never paid at
    saturation, and the station's capacity is that of its ordinary service. Only one-server
    stations: with several servers, which one wakes would depend on how they are picked.

    ``linger_us``: after serving the message that woke it, the server stays busy that long
    before it can serve the next (its work off that message's path: bookkeeping, going back to
    its wait), without delaying the message itself.

    ``batch_us``: the server takes everything waiting as one **batch** (an event loop's
    ``epoll_wait`` returning every ready event) and pays ``batch_us`` once per batch, on top of
    each message's own service: the first message of a batch carries it and the others wait
    behind it in order. A message belongs to the batch the server takes next after it arrives:
    it starts a new batch if it arrived after the current one was taken. So the per-batch cost
    is shared as batches grow with the load (work per message ``service + batch_us / n``).
    """

    name: str
    servers: int
    wake: Dist = ZERO
    cold_us: float = 0.0
    cold_tau_us: float = 0.0
    linger_us: float = 0.0
    batch_us: float = 0.0

    def __post_init__(self) -> None:
        if not (self.batch_us >= 0 and math.isfinite(self.batch_us)):
            raise ModelError(f"Station {self.name!r}: batch_us must be >= 0, got {self.batch_us}")
        if self.batch_us > 0 and self.servers != 1:
            raise ModelError(
                f"Station {self.name!r}: only a one-server station takes batches (batch_us), "
                f"it has {self.servers} servers"
            )
        if self.servers < 1:
            raise ModelError(f"Station {self.name!r} needs >= 1 server, got {self.servers}")
        if not (self.cold_us >= 0 and math.isfinite(self.cold_us)):
            raise ModelError(f"Station {self.name!r}: cold_us must be >= 0, got {self.cold_us}")
        if self.cold_us > 0 and not (self.cold_tau_us > 0 and math.isfinite(self.cold_tau_us)):
            raise ModelError(
                f"Station {self.name!r}: cold_tau_us must be > 0 with a cold start, "
                f"got {self.cold_tau_us}"
            )
        if not (self.linger_us >= 0 and math.isfinite(self.linger_us)):
            raise ModelError(f"Station {self.name!r}: linger_us must be >= 0, got {self.linger_us}")
        if self.sleeps and self.servers != 1:
            raise ModelError(
                f"Station {self.name!r}: only a one-server station can sleep when idle "
                f"(wake / cold_us), it has {self.servers} servers"
            )

    @property
    def sleeps(self) -> bool:
        """Whether an arrival to the idle station pays a wake-up or a cold start."""
        return not self.wake.is_zero or self.cold_us > 0 or self.linger_us > 0


@dataclass(frozen=True)
class Hop:
    """One stage of the path: fixed time + non-queueing delay + optional queued service."""

    name: str
    component: str
    fixed_us: float = 0.0
    delay: Dist = ZERO
    service: Dist = ZERO
    station: Station | None = None
    source: str = ""

    def __post_init__(self) -> None:
        if self.fixed_us < 0:
            raise ModelError(f"Negative fixed delay {self.fixed_us} us in hop {self.name!r}")
        if self.station is None and not self.service.is_zero:
            raise ModelError(f"Hop {self.name!r} has a service time but no station")


@dataclass(frozen=True)
class CompiledPath:
    """Plain arrays both engines read. ``hops`` is the full round trip, in order."""

    hops: np.ndarray  # HOP_DTYPE rows
    station_servers: np.ndarray  # int64, one per station
    station_wake: np.ndarray  # WAKE_DTYPE, one per station: what waking it from idle adds
    tables: np.ndarray  # float64 (n_tables, max_len): empirical samples, padded
    table_lengths: np.ndarray  # int64, valid length of each table row
    hop_names: tuple[str, ...]
    hop_components: tuple[str, ...]
    station_names: tuple[str, ...]

    @property
    def n_hops(self) -> int:
        return len(self.hops)

    @property
    def n_stations(self) -> int:
        return len(self.station_servers)

    def hop_moments_us(self) -> tuple[np.ndarray, np.ndarray]:
        """Each hop's unloaded mean (us) and variance (us^2): fixed + delay + service."""
        means = self.hops["fixed_us"].astype(float)
        variances = np.zeros(self.n_hops)
        for i, row in enumerate(self.hops):
            for part in ("delay", "service"):
                dist = self.distribution(row, part)
                means[i] += dist.mean
                variances[i] += dist.variance
        return means, variances

    def unloaded_mean_us(self) -> float:
        """Mean round trip with no queueing at all (sum of each hop's mean)."""
        return float(self.hop_moments_us()[0].sum())

    def station_service_mean_us(self) -> np.ndarray:
        """Mean service time each station gives one message per round trip (sum over its hops)."""
        out = np.zeros(self.n_stations)
        for row in self.hops:
            if row["station"] >= 0:
                out[row["station"]] += self.distribution(row, "service").mean
        return out

    def distribution(self, row: np.void, part: str) -> Dist:
        """The distribution a hop or wake row stores as ``{part}_code`` and ``{part}_p0..2``."""
        code = int(row[f"{part}_code"])
        p0, p1, p2 = (float(row[f"{part}_p{i}"]) for i in range(3))
        table = (
            self.tables[int(p0), : self.table_lengths[int(p0)]] if code == Empirical.code else None
        )
        return decode(code, p0, p1, p2, table)


def compile_path(hops: list[Hop]) -> CompiledPath:
    """Lower a list of hops to the arrays both engines execute."""
    if not hops:
        raise ModelError("A path needs at least one hop")
    stations: dict[str, Station] = {}
    tables: list[np.ndarray] = []
    table_index: dict[int, int] = {}
    rows = np.zeros(len(hops), dtype=dtypes.HOP_DTYPE)

    def encode(dist: Dist) -> tuple[int, float, float, float]:
        if isinstance(dist, Empirical):
            key = id(dist)
            if key not in table_index:
                table_index[key] = len(tables)
                tables.append(np.asarray(dist.samples_us, dtype=np.float64))
            return dist.code, float(table_index[key]), 0.0, 0.0
        return (dist.code, *dist.params())

    for i, hop in enumerate(hops):
        row = rows[i]
        row["fixed_us"] = hop.fixed_us
        (row["delay_code"], row["delay_p0"], row["delay_p1"], row["delay_p2"]) = encode(hop.delay)
        (row["service_code"], row["service_p0"], row["service_p1"], row["service_p2"]) = encode(
            hop.service
        )
        if hop.station is None:
            row["station"] = -1
        else:
            known = stations.get(hop.station.name)
            if known is not None and known != hop.station:
                raise ModelError(
                    f"Station {hop.station.name!r} declared twice differently: {known} and "
                    f"{hop.station}"
                )
            stations.setdefault(hop.station.name, hop.station)
            row["station"] = list(stations).index(hop.station.name)
    wake = np.zeros(len(stations), dtype=dtypes.WAKE_DTYPE)
    for k, st in enumerate(stations.values()):
        (wake[k]["wake_code"], wake[k]["wake_p0"], wake[k]["wake_p1"], wake[k]["wake_p2"]) = encode(
            st.wake
        )
        wake[k]["cold_us"] = st.cold_us
        wake[k]["cold_tau_us"] = st.cold_tau_us
        wake[k]["linger_us"] = st.linger_us
        wake[k]["batch_us"] = st.batch_us
    max_len = max((len(t) for t in tables), default=1)
    table_array = np.zeros((max(len(tables), 1), max_len))
    lengths = np.zeros(max(len(tables), 1), dtype=np.int64)
    for k, t in enumerate(tables):
        table_array[k, : len(t)] = t
        lengths[k] = len(t)
    return CompiledPath(
        hops=rows,
        station_servers=np.array([s.servers for s in stations.values()], dtype=np.int64),
        station_wake=wake,
        tables=table_array,
        table_lengths=lengths,
        hop_names=tuple(h.name for h in hops),
        hop_components=tuple(h.component for h in hops),
        station_names=tuple(stations),
    )
