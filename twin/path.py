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
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from twin import dtypes
from twin.dists import ZERO, Dist, Empirical, decode
from twin.errors import ModelError
from twin.protections import Allowance, Throttle  # noqa: F401 (Allowance: re-exported)


@dataclass(frozen=True)
class HaltPolling:
    """The hypervisor's adaptive halt polling of a vCPU (KVM's ``halt_poll_ns``: the kernel's
    "The KVM halt polling system", virt/kvm/halt-polling.rst).

    When a vCPU halts, the host polls for a wake-up for up to the vCPU's current **window**
    before it gives the core to its scheduler; a wake-up within the window finds the vCPU still
    running on its core and costs what one right after it went idle costs (``1 - halt_share``
    of the drawn wake-up, :attr:`Station.halt_share`). After each halt of ``gap`` the window
    adapts: unchanged if ``gap <= window``; divided by ``shrink`` (0: reset to 0) if the window
    is open and ``gap > max_us``; else, if ``gap < max_us``, multiplied by ``grow`` (at least
    ``grow_start_us``, at most ``max_us``). So a thread woken regularly every ``gap < max_us``
    soon wakes from polling, and one woken every millisecond never does.

    Units: microseconds. Invariants: ``max_us > 0``, ``grow >= 1``, ``0 < grow_start_us``,
    ``shrink >= 0`` (0 or >= 1); the window starts closed (0) and stays in ``[0, max_us]``.
    """

    max_us: float
    grow: float = 2.0
    grow_start_us: float = 10.0
    shrink: float = 2.0

    def __post_init__(self) -> None:
        if not (self.max_us > 0 and math.isfinite(self.max_us)):
            raise ModelError(f"HaltPolling: max_us must be > 0, got {self.max_us}")
        if not (self.grow >= 1 and math.isfinite(self.grow)):
            raise ModelError(f"HaltPolling: grow must be >= 1, got {self.grow}")
        if not (self.grow_start_us > 0 and math.isfinite(self.grow_start_us)):
            raise ModelError(f"HaltPolling: grow_start_us must be > 0, got {self.grow_start_us}")
        if not (self.shrink == 0 or (self.shrink >= 1 and math.isfinite(self.shrink))):
            raise ModelError(f"HaltPolling: shrink must be 0 or >= 1, got {self.shrink}")

    def adapt(self, window_us: float, idle_us: float) -> tuple[bool, float]:
        """Whether a wake-up after a halt of ``idle_us`` came within ``window_us``, and the
        window after that halt (the rule above; the compiled engine has its own copy)."""
        if idle_us <= window_us:
            return True, window_us
        if window_us > 0 and idle_us > self.max_us:
            return False, window_us / self.shrink if self.shrink > 0 else 0.0
        if window_us < self.max_us and idle_us < self.max_us:
            return False, min(max(window_us * self.grow, self.grow_start_us), self.max_us)
        return False, window_us


@dataclass(frozen=True)
class Hiccups:
    """The vCPU a station's thread runs on, taken from it now and then: a **hiccup** (the
    hypervisor running another guest or its own work on the core, the host's long interrupts and
    kernel threads: what ``twin testbed hiccups`` measures as gaps in a spinning thread's clock).

    Hiccups start as a Poisson process of ``rate_per_s`` whatever the station does and last a
    draw of ``length`` (us); one that starts during another adds its length to it (the time taken
    is a queue of hiccups, an M/G/1 busy period). The station's work is **preemptive-resume**
    under them: a service is stretched by every hiccup that starts before it ends, and one due to
    start in a hiccup starts when it ends (a message waking the station then waits for it too),
    so messages see a high-priority class of work on the server (the preemptive priority M/G/1
    queue's response time, which the backlog a hiccup leaves makes grow with the load long
    before the thread's own work fills its vCPU). The thread's own CPU (its utilization) is not
    changed. Both engines draw a station's hiccups from a stream of its own (the run's seed and
    the station's index, :mod:`twin.fast._hiccup`), so they meet the same ones.

    Invariants: ``rate_per_s >= 0``; ``length`` has a positive mean; the share of the time the
    hiccups take, ``rate_per_s * mean * 1e-6``, is below 1.
    """

    rate_per_s: float
    length: Dist

    def __post_init__(self) -> None:
        if not (self.rate_per_s >= 0 and math.isfinite(self.rate_per_s)):
            raise ModelError(f"Hiccups: rate_per_s must be >= 0, got {self.rate_per_s}")
        if not self.length.mean > 0:
            raise ModelError(f"Hiccups: the length needs a positive mean, got {self.length}")
        if not self.share < 1:
            raise ModelError(f"Hiccups take {self.share:.0%} of the vCPU's time: need < 100%")

    @property
    def share(self) -> float:
        """The share of the vCPU's time the hiccups take (rate times mean length)."""
        return self.rate_per_s * self.length.mean * 1e-6


@dataclass(frozen=True)
class Station:
    """A finite-capacity FIFO resource: ``servers`` messages can be in service at once.

    A station can **sleep when idle** (a thread blocked in ``epoll_wait``; with several servers,
    a host whose vCPUs have all halted): a message that finds **every** server idle adds a
    wake-up ``wake`` (drawn) and a cold start ``cold_us * (1 - exp(-gap / cold_tau_us))`` to its
    service, ``gap`` being how long the station sat idle since its last server freed (caches,
    clock and a halted vCPU cool down while it sleeps); a message that finds a server busy is
    served warm. With one server this is an M/G/1 queue with exceptional first service: the
    wake-up is paid once per busy period, so it fades as the load rises and is never paid at
    saturation, and the station's capacity is that of its ordinary service.

    ``stall``: the wake-up of a sleeping thread may also come late (a timer whose expiry
    reaches a halted vCPU late): with probability ``1 - exp(-gap / cold_tau_us)`` the message
    that would wake it arrives a draw of ``stall`` later (which may itself be zero most of the
    time), the servers free for other messages meanwhile (the vCPU is not held). So stalls come
    after long sleeps: at a low rate, not at a busy thread, and a thread woken moments after it
    went to sleep almost never meets one. Only wake-ups at hops that allow it
    (:attr:`Hop.may_stall`) stall; a reader takes none. ``stall_every_wake``: a second chance
    of a stall, the same at every wake-up, however short the sleep, and within the host's
    polling window too (a thread woken next to a spinning one: the scheduler may put it on the
    spinner's vCPU, where it waits for the spinner's slice, whatever it slept; the draw of
    ``stall`` holds the odds), on top of the after-sleep one where ``cold_tau_us > 0`` (a long
    sleep halts the vCPU next to a spinner too): the two draws add.

    ``halt_share``, ``halt_tau_us``: an idle vCPU halts after about ``halt_tau_us``, and the
    wake-up (the draw of ``wake``) is mostly the halted vCPU's: woken after ``gap`` it is scaled
    by ``1 - halt_share * exp(-gap / halt_tau_us)``, so a station woken moments after it went idle
    pays ``1 - halt_share`` of it (the halt probe, ``twin testbed wakeprobe --waiter spins``).
    ``halt_poll``: the host polls the halted vCPU for an adaptive window (:class:`HaltPolling`);
    a wake-up within it pays ``1 - halt_share`` of the draw too (needs ``halt_share > 0``). A
    hop's own wake-up (:attr:`Hop.wake`) is all halt: a share of 1 in place of ``halt_share``.
    ``wake_work_us``: the woken thread's own work on every wake-up (its handlers' per-wake-up
    system calls), added to the wake-up (the station's draw or a hop's own) and never scaled:
    a vCPU still awake saves the scheduling latency, not the work.

    ``linger_us``: after serving the message that woke it, the server stays busy that long
    before it can serve the next (its work off that message's path: bookkeeping, going back to
    its wait), without delaying the message itself; ``linger_cold_us``: a cold start off the
    path, the server staying busy ``linger_cold_us * (1 - exp(-gap / cold_tau_us))`` more (a
    host's wake-up work: halted vCPUs restarted, timers reprogrammed, its threads woken one
    another, the dearer the longer it slept).

    ``batch``: the server takes everything waiting as one **batch** (an event loop's
    ``epoll_wait`` returning every ready event; a log's group commit, one durable write for
    every entry that arrived while the previous write ran) and pays a draw of ``batch`` once per
    batch, on top of each message's own service: the first message of a batch carries it and
    the others wait behind it in order. A message belongs to the batch the server takes next
    after it arrives: it starts a new batch if it arrived after the current one was taken. So
    the per-batch cost is shared as batches grow with the load (work per message
    ``service + E[batch] / n``), and a station whose messages need no service of their own
    never saturates. ``batch_per_connection``: the server takes each connection's messages as a
    batch of their own (a thread that reads each ready socket apart: one read, one call and one
    write per connection with data), so a message starts a new batch unless an earlier message
    of its **connection** still waits at the same hop (a station visited at several hops reads
    a socket of the connection at each: a relay's two sides). A cycle's messages share a
    connection: an open loop deals its cycles to the workload's ``accounts`` connections in turn
    (as the testbed's client does), a closed loop's account is its connection.

    ``hiccups``: the station's vCPU is taken from it now and then (:class:`Hiccups`: its work is
    stretched by them, preemptive-resume); only a one-server station that is not a reader.

    A station stays awake while it **holds** a message (:attr:`Hop.holds`): its idle time (for
    the wake-up, cold start, halt and stall) counts from the later of its servers freeing and
    the last hold ending.

    ``reader``: the station is one thread that works **read by read** (a trading engine's
    inbound pipeline, :mod:`twin.pipeline`): when it is free and data has arrived it polls at
    ``p = max(first arrival, free)``; its read call comes at the end of its first stage's
    per-read work ``w`` (poll -> read) and takes everything that arrived by ``p + w`` as one
    read; it then runs each of its hops (its **stages**, contiguous on the path) over the whole read
    before the next stage starts: a stage's work is its ``per_read`` draw, its
    ``per_record_us`` for each TLS record after the first (a run of consecutive messages of
    one burst is one record), and each message's ``service``; a message leaves a
    ``whole_read`` stage when the whole read's work is done, any other stage when its own work
    is (after the work of the messages ahead of it in the read). Data arriving meanwhile waits
    for the next poll. A read that finds the thread idle pays the wake-up and cold start in its
    first stage; ``linger_us`` is the thread's bookkeeping after every read (it delays the next
    poll, no message). A reader takes no ``batch`` (its reads are its batches).
    """

    name: str
    servers: int
    wake: Dist = ZERO
    cold_us: float = 0.0
    cold_tau_us: float = 0.0
    linger_us: float = 0.0
    linger_cold_us: float = 0.0
    batch: Dist = ZERO
    reader: bool = False
    stall: Dist = ZERO
    batch_per_connection: bool = False
    halt_share: float = 0.0
    halt_tau_us: float = 0.0
    halt_poll: HaltPolling | None = None
    wake_work_us: float = 0.0
    hiccups: Hiccups | None = None
    stall_every_wake: bool = False

    def __post_init__(self) -> None:
        if self.hiccups is not None and (self.servers != 1 or self.reader):
            raise ModelError(f"Station {self.name!r}: hiccups need one server that is not a reader")
        if self.batch_per_connection and self.batch.is_zero:
            raise ModelError(
                f"Station {self.name!r}: batch_per_connection without a cost per batch (batch)"
            )
        if self.reader and (self.servers != 1 or not self.batch.is_zero):
            raise ModelError(
                f"Station {self.name!r}: a reader is one thread whose reads are its batches "
                f"(servers = 1, no batch)"
            )
        if self.reader and not self.stall.is_zero:
            raise ModelError(f"Station {self.name!r}: a reader takes no stall")
        if not self.batch.is_zero and self.servers != 1:
            raise ModelError(
                f"Station {self.name!r}: only a one-server station takes batches (batch), "
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
        if (
            not self.stall.is_zero
            and not self.stall_every_wake
            and not (self.cold_tau_us > 0 and math.isfinite(self.cold_tau_us))
        ):
            raise ModelError(
                f"Station {self.name!r}: cold_tau_us must be > 0 with a stall, "
                f"got {self.cold_tau_us}"
            )
        if not (self.wake_work_us >= 0 and math.isfinite(self.wake_work_us)):
            raise ModelError(
                f"Station {self.name!r}: wake_work_us must be >= 0, got {self.wake_work_us}"
            )
        if not (self.linger_us >= 0 and math.isfinite(self.linger_us)):
            raise ModelError(f"Station {self.name!r}: linger_us must be >= 0, got {self.linger_us}")
        if not (self.linger_cold_us >= 0 and math.isfinite(self.linger_cold_us)):
            raise ModelError(
                f"Station {self.name!r}: linger_cold_us must be >= 0, got {self.linger_cold_us}"
            )
        if not 0.0 <= self.halt_share <= 1.0:
            raise ModelError(
                f"Station {self.name!r}: halt_share must be in [0, 1], got {self.halt_share}"
            )
        if self.halt_share > 0 and not (self.halt_tau_us > 0 and math.isfinite(self.halt_tau_us)):
            raise ModelError(
                f"Station {self.name!r}: halt_tau_us must be > 0 with a halt_share, "
                f"got {self.halt_tau_us}"
            )
        if self.halt_poll is not None and not self.halt_share > 0:
            raise ModelError(
                f"Station {self.name!r}: halt_poll needs a halt_share > 0 (what a polled "
                f"wake-up saves)"
            )
        if self.linger_cold_us > 0 and (self.reader or not self.cold_tau_us > 0):
            raise ModelError(
                f"Station {self.name!r}: linger_cold_us needs cold_tau_us > 0 and a station "
                f"that is not a reader"
            )

    @property
    def sleeps(self) -> bool:
        """Whether an arrival to the idle station pays a wake-up, a cold start or a stall."""
        drawn = not (self.wake.is_zero and self.stall.is_zero)
        fixed = (self.cold_us, self.wake_work_us, self.linger_us, self.linger_cold_us)
        return drawn or any(x > 0 for x in fixed)


@dataclass(frozen=True)
class Hop:
    """One stage of the path: fixed time + non-queueing delay + optional queued service.

    ``linger``: work the visit leaves on its server after the message has moved on (a write's
    processing off its path: followers, bookkeeping): the server stays busy for a draw of it
    without delaying the message (a station's ``linger_us`` is paid after a wake-up only). With
    ``linger_per_batch`` only a message that took a new batch at the last batching station it
    visited, this hop's own included, leaves it (work a batch causes once: a replicated log's
    append to its followers; a read's system calls); such a hop needs a batching station
    before it on the path or at it. With ``linger_yields`` what the
    visit leaves behind (its ``linger`` and, when it woke the station, the station's
    ``linger_us``) yields to every later arrival (a thread that a message wakes on the CPU it
    shares runs before the waker's remaining work: Linux's wake-up preemption; a handler that
    writes the next message before its bookkeeping): it keeps the station awake (an arrival
    meanwhile pays no wake-up) and counts in its busy time, but holds no server, so it delays no
    message (preemptive priority for the messages' work).

    ``allowance``, ``allowance_us``: the token bucket (:class:`Allowance`) the message takes
    ``allowance_us`` of credit from (microseconds of the sustained rate: a packet's ``1e6 /
    pps``) on arriving at the hop's station, before it queues for the servers; its wait is part
    of the hop's time, not of the servers' busy time. Only at a station that is not a reader.

    ``holds``: the station keeps the message after serving it until the next hop (a pure delay)
    has passed, and polls instead of sleeping meanwhile (a relay releasing each message at its
    deadline): an arrival then finds it awake. Holding takes no server: other messages are
    served meanwhile.

    ``continues``: the message keeps its server into the next hop, at the same station with no
    delay between (a thread's system call that runs the kernel path on its CPU; a thread that a
    message wakes on the CPU it shares, which runs before the waker's queued work: Linux's
    wake-up preemption): the two hops are served back to back, the next one's work taking no
    place in the queue and paying no wake-up. A run of such hops is one service of the station
    (its M/G/1 service is their sum), each hop's own work as it would be; what a hop leaves on
    the server (its linger, a woken station's ``linger_us``) is left after the run's last hop.

    ``wake``: the wake-up this visit pays when it finds its sleeping station idle, in place of
    the station's own (what wakes the thread here: a socket's data rather than a timer's
    expiry, say); None: the station's. Cold and stalling as the station's wake-up, and all of
    it the halt's: where the station has a ``halt_share``, a vCPU woken before it halted pays
    ``1 - exp(-gap / halt_tau_us)`` of it and a polled one none (a halt share of 1: what it
    adds is what a halted vCPU costs beyond an awake one).

    ``may_stall``: whether a wake-up of the station at this hop may meet its ``stall``
    (:class:`Station`); False for a visit whose wake-up comes another way (a socket's data
    rather than a timer's expiry, say) that is known not to stall.

    At a reader station (:attr:`Station.reader`) the hop is a stage of the read: ``per_read``
    (drawn once per read), ``per_record_us`` and ``whole_read`` say how its work and its
    messages' exits depend on the read (see :class:`Station`); such a hop has no fixed time
    or delay (it is the thread's time only).
    """

    name: str
    component: str
    fixed_us: float = 0.0
    delay: Dist = ZERO
    service: Dist = ZERO
    station: Station | None = None
    source: str = ""
    per_read: Dist = ZERO
    per_record_us: float = 0.0
    whole_read: bool = False
    linger: Dist = ZERO
    linger_per_batch: bool = False
    linger_yields: bool = False
    allowance: Allowance | None = None
    allowance_us: float = 0.0
    may_stall: bool = True
    holds: bool = False
    wake: Dist | None = None
    continues: bool = False

    def __post_init__(self) -> None:
        self._check_allowance()
        if self.holds and (self.station is None or self.station.reader):
            raise ModelError(
                f"Hop {self.name!r}: holds needs a station that is not a reader (its thread "
                f"holds the message)"
            )
        if self.fixed_us < 0:
            raise ModelError(f"Negative fixed delay {self.fixed_us} us in hop {self.name!r}")
        if self.station is None and not self.service.is_zero:
            raise ModelError(f"Hop {self.name!r} has a service time but no station")
        reader = self.station is not None and self.station.reader
        if not self.linger.is_zero and (self.station is None or reader):
            raise ModelError(
                f"Hop {self.name!r}: linger is work left on a station's server (a station that "
                f"is not a reader)"
            )
        if self.linger_per_batch and self.linger.is_zero:
            raise ModelError(f"Hop {self.name!r}: linger_per_batch without a linger")
        if self.linger_yields and (self.station is None or reader):
            raise ModelError(
                f"Hop {self.name!r}: linger_yields needs a station that is not a reader"
            )
        if self.wake is not None and (reader or self.station is None):
            raise ModelError(
                f"Hop {self.name!r}: a wake-up of its own needs a station that is not a reader"
            )
        if not reader and (not self.per_read.is_zero or self.per_record_us != 0 or self.whole_read):
            raise ModelError(
                f"Hop {self.name!r}: per_read, per_record_us and whole_read belong to the "
                f"stages of a reader station"
            )
        if reader and (self.fixed_us > 0 or not self.delay.is_zero):
            raise ModelError(
                f"Hop {self.name!r}: a reader's stage is the thread's time only "
                f"(no fixed time or delay)"
            )
        if not (self.per_record_us >= 0 and math.isfinite(self.per_record_us)):
            raise ModelError(
                f"Hop {self.name!r}: per_record_us must be >= 0, got {self.per_record_us}"
            )

    def _check_allowance(self) -> None:
        if self.allowance is None:
            if self.allowance_us != 0:
                raise ModelError(f"Hop {self.name!r}: allowance_us without an allowance")
            return
        if self.station is None or self.station.reader:
            raise ModelError(
                f"Hop {self.name!r}: an allowance is taken on arriving at a station (one that "
                f"is not a reader)"
            )
        if not (self.allowance_us > 0 and math.isfinite(self.allowance_us)):
            raise ModelError(
                f"Hop {self.name!r}: allowance_us must be > 0, got {self.allowance_us}"
            )
        if self.allowance_us > self.allowance.depth_us:
            raise ModelError(
                f"Hop {self.name!r}: allowance_us {self.allowance_us} exceeds its bucket "
                f"({self.allowance.depth_us} us deep): it could never pass"
            )


#: Spans a path may report (each engine keeps a histogram per span).
MAX_SPANS = 12


@dataclass(frozen=True)
class Span:
    """A reported stretch of the round trip, from entering hop ``first`` to leaving hop
    ``last`` (hop names, ``first`` not after ``last``). A span that starts at a reader's stage
    starts when that stage starts over the read, so a one-hop span of a stage is the stage's
    latency as a pipeline's own timers measure it (the work of the messages ahead in the read
    and its own; the C++ engine write-up's per-stage table)."""

    name: str
    first: str
    last: str


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
    span_names: tuple[str, ...] = ()
    span_hops: np.ndarray = field(default_factory=lambda: np.zeros((0, 2), dtype=np.int64))
    allowance_names: tuple[str, ...] = ()
    allowance_depth_us: np.ndarray = field(default_factory=lambda: np.zeros(0))  # per allowance
    throttle: Throttle | None = None  # the venue's order-rate limit (twin.protections)

    @property
    def n_spans(self) -> int:
        return len(self.span_names)

    def reader_runs(self) -> dict[int, tuple[int, int]]:
        """Each reader station's first and last stage (hop indices; one contiguous run each,
        checked by :func:`compile_path`), by station index."""
        reader = self.station_wake["reader"]
        runs: dict[int, tuple[int, int]] = {}
        for h, st in enumerate(self.hops["station"]):
            if st >= 0 and reader[st]:
                runs[int(st)] = (runs.get(int(st), (h, h))[0], h)
        return runs

    def station_visits(self) -> np.ndarray:
        """Each hop's visit to its station: 0 at the station's first hop on the path, 1 at its
        second, and so on (0 at a hop without a station); a station reading each connection
        apart keeps a batch per connection and visit (:attr:`Station.batch_per_connection`)."""
        visits = np.zeros(self.n_hops, dtype=np.int64)
        seen: dict[int, int] = {}
        for h, st in enumerate(self.hops["station"]):
            if st >= 0:
                visits[h] = seen.get(int(st), 0)
                seen[int(st)] = visits[h] + 1
        return visits

    @property
    def n_hops(self) -> int:
        return len(self.hops)

    @property
    def n_stations(self) -> int:
        return len(self.station_servers)

    def hop_moments_us(self) -> tuple[np.ndarray, np.ndarray]:
        """Each hop's unloaded mean (us) and variance (us^2): fixed + delay + service (+ a
        reader stage's per-read work, a read of one message; + a batching station's cost per
        batch, a batch of one message)."""
        means = self.hops["fixed_us"].astype(float)
        variances = np.zeros(self.n_hops)
        for i, row in enumerate(self.hops):
            dists = [self.distribution(row, part) for part in ("delay", "service", "read")]
            if row["station"] >= 0:
                dists.append(self.distribution(self.station_wake[row["station"]], "batch"))
            for dist in dists:
                means[i] += dist.mean
                variances[i] += dist.variance
        return means, variances

    def unloaded_mean_us(self) -> float:
        """Mean round trip with no queueing at all (sum of each hop's mean)."""
        return float(self.hop_moments_us()[0].sum())

    def station_sleeps(self) -> np.ndarray:
        """Whether each station sleeps when idle (:attr:`Station.sleeps`, read from its compiled
        wake-up row): the one test both engines apply."""
        wake = self.station_wake
        drawn = (wake["wake_code"] != ZERO.code) | (wake["stall_code"] != ZERO.code)
        lingers = (wake["linger_us"] > 0) | (wake["linger_cold_us"] > 0)
        work = (wake["cold_us"] > 0) | (wake["wake_work_us"] > 0)
        return np.asarray(drawn | work | lingers)

    def station_service_mean_us(self) -> np.ndarray:
        """Mean time each station's servers spend on one message per round trip (sum over its
        hops of the service and the work left behind, ``linger``). What a batch costs once (its
        draw, :attr:`Station.batch`, and a per-batch linger) is shared as batches grow with the
        load, so it counts for nothing here: alone it never saturates a station."""
        out = np.zeros(self.n_stations)
        for row in self.hops:
            if row["station"] >= 0:
                out[row["station"]] += self.distribution(row, "service").mean
                if not row["linger_per_batch"]:
                    out[row["station"]] += self.distribution(row, "linger").mean
        return out

    def station_hiccup_share(self) -> np.ndarray:
        """The share of each station's vCPU its hiccups take (:attr:`Hiccups.share`; 0: none)."""
        wake = self.station_wake
        return np.array(
            [
                float(w["hiccup_rate_per_s"]) * self.distribution(w, "hiccup").mean * 1e-6
                for w in wake
            ]
        ).reshape(self.n_stations)

    def allowance_share(self, rate_msgs_per_s: float) -> np.ndarray:
        """Each station's busiest allowance at this rate: the share of the sustained rate that
        the round trips take from the allowances its hops draw on (0: none)."""
        per_round_trip = np.zeros(len(self.allowance_names))
        for row in self.hops:
            if row["allowance"] >= 0:
                per_round_trip[row["allowance"]] += row["allowance_us"]
        out = np.zeros(self.n_stations)
        for row in self.hops:
            if row["allowance"] >= 0:
                share = rate_msgs_per_s * 1e-6 * per_round_trip[row["allowance"]]
                out[row["station"]] = max(out[row["station"]], share)
        return out

    def distribution(self, row: np.void, part: str) -> Dist:
        """The distribution a hop or wake row stores as ``{part}_code`` and ``{part}_p0..2``."""
        code = int(row[f"{part}_code"])
        p0, p1, p2 = (float(row[f"{part}_p{i}"]) for i in range(3))
        table = (
            self.tables[int(p0), : self.table_lengths[int(p0)]] if code == Empirical.code else None
        )
        return decode(code, p0, p1, p2, table)


def _check_readers(hops: Sequence[Hop]) -> None:
    """Each reader station's stages are one contiguous run of hops."""
    runs: dict[str, int] = {}
    previous = None
    for hop in hops:
        name = hop.station.name if hop.station is not None and hop.station.reader else None
        if name is not None and name != previous:
            runs[name] = runs.get(name, 0) + 1
            if runs[name] > 1:
                raise ModelError(
                    f"Reader station {name!r}: its stages must be one contiguous run of hops "
                    f"(hop {hop.name!r} comes back to it)"
                )
        previous = name


def _span_rows(hops: Sequence[Hop], spans: Sequence[Span]) -> np.ndarray:
    """Each span's first and last hop index, checked."""
    if len(spans) > MAX_SPANS:
        raise ModelError(f"{len(spans)} spans: a path reports at most {MAX_SPANS}")
    index = {hop.name: i for i, hop in enumerate(hops)}
    rows = np.zeros((len(spans), 2), dtype=np.int64)
    for k, span in enumerate(spans):
        missing = [n for n in (span.first, span.last) if n not in index]
        if missing:
            raise ModelError(f"Span {span.name!r}: no hop named {missing[0]!r} on the path")
        rows[k] = index[span.first], index[span.last]
        if rows[k, 0] > rows[k, 1]:
            raise ModelError(f"Span {span.name!r}: {span.first!r} comes after {span.last!r}")
    if len({s.name for s in spans}) != len(spans):
        raise ModelError("Two spans share a name")
    return rows


def _check_per_batch_lingers(hops: list[Hop]) -> None:
    """A per-batch linger needs a batching station before it or at it: nothing else says who
    leads."""
    batching_seen = False
    for hop in hops:
        batching_seen |= hop.station is not None and not hop.station.batch.is_zero
        if hop.linger_per_batch and not batching_seen:
            raise ModelError(
                f"Hop {hop.name!r}: linger_per_batch needs a batching station earlier on the "
                f"path or its own"
            )


def _check_holds(hops: list[Hop]) -> None:
    """A holding hop is followed by a pure delay: what its station holds the message through."""
    for i, hop in enumerate(hops):
        if not hop.holds:
            continue
        after = hops[i + 1] if i + 1 < len(hops) else None
        if after is None or after.station is not None:
            raise ModelError(
                f"Hop {hop.name!r}: its station holds the message through the next hop, which "
                f"must be a delay without a station"
            )


def _check_continues(hops: list[Hop]) -> None:
    """A hop that continues is followed by a hop at its station, met at once: no fixed time or
    delay, no token bucket, no wake-up of its own; neither is a reader's stage or at a batching
    station."""
    for i, hop in enumerate(hops):
        if not hop.continues:
            continue
        after = hops[i + 1] if i + 1 < len(hops) else None
        st = hop.station
        if (
            st is None
            or st.reader
            or not st.batch.is_zero
            or after is None
            or after.station != st
            or after.fixed_us != 0
            or not after.delay.is_zero
            or after.allowance is not None
            or after.wake is not None
        ):
            raise ModelError(
                f"Hop {hop.name!r}: continues into the next hop, which must be at its station "
                f"(not a reader's, not batching), with no fixed time, delay, allowance or "
                f"wake-up of its own"
            )


def compile_path(hops: list[Hop], spans: Sequence[Span] = ()) -> CompiledPath:
    """Lower a list of hops (and the spans to report) to the arrays both engines execute."""
    if not hops:
        raise ModelError("A path needs at least one hop")
    _check_readers(hops)
    _check_per_batch_lingers(hops)
    _check_holds(hops)
    _check_continues(hops)
    span_hops = _span_rows(hops, spans)
    stations: dict[str, Station] = {}
    allowances: dict[str, Allowance] = {}
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
        (row["read_code"], row["read_p0"], row["read_p1"], row["read_p2"]) = encode(hop.per_read)
        (row["linger_code"], row["linger_p0"], row["linger_p1"], row["linger_p2"]) = encode(
            hop.linger
        )
        row["linger_per_batch"] = int(hop.linger_per_batch)
        row["linger_yields"] = int(hop.linger_yields)
        row["may_stall"] = int(hop.may_stall)
        row["holds"] = int(hop.holds)
        row["continues"] = int(hop.continues)
        row["own_wake"] = int(hop.wake is not None)
        (row["wake_code"], row["wake_p0"], row["wake_p1"], row["wake_p2"]) = encode(
            hop.wake if hop.wake is not None else ZERO
        )
        row["allowance_us"] = hop.allowance_us
        row["allowance"] = -1
        if hop.allowance is not None:
            known_bucket = allowances.setdefault(hop.allowance.name, hop.allowance)
            if known_bucket != hop.allowance:
                raise ModelError(
                    f"Allowance {hop.allowance.name!r} declared twice differently: "
                    f"{known_bucket} and {hop.allowance}"
                )
            row["allowance"] = list(allowances).index(hop.allowance.name)
        row["per_record_us"] = hop.per_record_us
        row["whole_read"] = int(hop.whole_read)
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
        wake[k]["linger_cold_us"] = st.linger_cold_us
        (wake[k]["batch_code"], wake[k]["batch_p0"], wake[k]["batch_p1"], wake[k]["batch_p2"]) = (
            encode(st.batch)
        )
        wake[k]["reader"] = int(st.reader)
        wake[k]["batch_per_connection"] = int(st.batch_per_connection)
        wake[k]["halt_share"] = st.halt_share
        wake[k]["halt_tau_us"] = st.halt_tau_us
        wake[k]["wake_work_us"] = st.wake_work_us
        if st.halt_poll is not None:
            wake[k]["poll_max_us"] = st.halt_poll.max_us
            wake[k]["poll_grow"] = st.halt_poll.grow
            wake[k]["poll_grow_start_us"] = st.halt_poll.grow_start_us
            wake[k]["poll_shrink"] = st.halt_poll.shrink
        (wake[k]["stall_code"], wake[k]["stall_p0"], wake[k]["stall_p1"], wake[k]["stall_p2"]) = (
            encode(st.stall)
        )
        wake[k]["stall_every_wake"] = int(st.stall_every_wake)
        hiccups = st.hiccups
        if hiccups is not None and hiccups.rate_per_s > 0:
            wake[k]["hiccup_rate_per_s"] = hiccups.rate_per_s
            (
                wake[k]["hiccup_code"], wake[k]["hiccup_p0"], wake[k]["hiccup_p1"],
                wake[k]["hiccup_p2"],
            ) = encode(hiccups.length)  # fmt: skip
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
        span_names=tuple(s.name for s in spans),
        span_hops=span_hops,
        allowance_names=tuple(allowances),
        allowance_depth_us=np.array([a.depth_us for a in allowances.values()], dtype=np.float64),
    )
