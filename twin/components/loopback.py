"""One machine: client and gateway processes joined by the kernel's loopback or a veth pair.

The live testbed (``twin testbed``): no NIC, no fabric. Each process is one thread that sleeps
in ``epoll_wait`` when idle: a one-server station that **sleeps when idle**
(:class:`twin.path.Station`). What a message meets:

* the **client process** (station ``client process``): its work per message
  (``local_client_work``, 1.5 events: write the order, or handle the ack and write the cancel);
  an order counts from its scheduled time, so it pays the timer's wake-up if the client slept;
* the **kernel path** (loopback or veth): a shifted lognormal ``local_path`` (+ ``local_veth_us``);
* the **gateway process** (one event loop, ``local_gateway_work``): decode, risk, matching in
  ``engine_ext``, the reply; it reads each connection apart: its per-wake-up work and the read's
  system calls (left behind) are paid per read, shared by a connection's messages waiting together;
* the kernel path back and the **client's wake-up for the reply** (its station again, no work):
  the round trip ends when the client's loop returns from its wait.

A client whose sender spins (``hosts.client.sender``, :class:`twin.kinds.Sender`: sockperf) sends
from ``client sender`` (never sleeps, holds a core) and reads replies on ``client receiver``.
Every other thread of that host (the server, the receiver, the relay on the vCPU it shares)
may then, on waking, meet a **stall** too (:func:`waits_for_spinner`): woken on the vCPU the
spinner holds, it waits for the rest of the spinner's time slice.

A **wake-up** costs the scheduling latency (``local_wake``; where a socket's data wakes the
thread and the wake-up probes measured one, a socket's, :func:`socket_wake`), the handlers'
per-wake-up work (``{name}_wake_us``, the ``a`` of ``work per event = b + a / n``), the first
less where the vCPU has not halted yet or the host still polls it (:func:`_thread_on_vcpu`, KVM's
adaptive halt polling: :func:`halt_polling`), and a **cold start**
``cold * (1 - exp(-idle / {name}_idle_us))``; where the timer wakes the client for an order, with
that probability too, a rare **stall** (:func:`wake_stall`: a late timer, no CPU held). The service
is the marginal work per event (``b``); a wake-up's CPU off the path (``{name}_linger_us``)
keeps the thread busy after the message left, so utilization is the measured CPU's; a wake-up's
CPU sheds its cold start as the load shortens the host's idle gaps (:func:`wake_cpu_us`).

**Shared cores.** Each thread's work is slowed under fair sharing to ``min(1, n / (1 + k))`` of
a core, ``k`` the other threads (the processes', the relay's, a spinning sender, the background):
:func:`core_speed`, :func:`relay_speed_ratio`. **One vCPU or two.** While the threads' use leaves
a vCPU spare capacity (:func:`colocated`) they and the kernel path between them share one
sleeping station (a spinning sender holds a vCPU of its own); beyond, each is a station of its
own (:func:`shared_vcpu_hops`). **Hiccups** take a thread's vCPU now and then, the more the
busier the other (:func:`vcpu_hiccups`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from twin.components.stages import sources, stage
from twin.dists import ZERO, Const, Dist, Empirical, Exponential, ShiftedLognormal
from twin.errors import ModelError
from twin.kinds import Sender, Tier, Transport
from twin.path import HaltPolling, Hiccups, Hop, Station
from twin.percentiles import HICCUP_QUANTILES
from twin.profile import Profile

CLIENT, GATEWAY = "client process", "gateway process"
SHARED_VCPU = "host vCPU (both processes)"  # both threads on one vCPU (colocated)
CLIENT_WRITE = "client work (write; handle reply)"
SENDER, RECEIVER = "client sender", "client receiver"  # a client whose sender spins
RELAY_THREAD = "relay thread"  # twin testbed relay's one thread (the relay tier)
MIN_SPEED = 1e-3  # floor of core_speed (a guard: fair sharing never starves a thread)
HICCUP_TABLE_SIZE = 4096  # quantiles tabulating a hiccup's length (vcpu_hiccups)
# The hiccup laws' parameter prefixes: every vCPU busy, and a vCPU alone (the others idle).
HICCUP_BUSY, HICCUP_ALONE = "local_vcpu_hiccup", "local_vcpu_hiccup_alone"

# Events each process handles per message, and wake-ups when it sleeps between them: the client
# writes an order every other message and handles every reply; the gateway handles every request.
EVENTS_PER_MSG = {"local_client_work": 1.5, "local_gateway_work": 1.0}


def events_per_msg(name: str, sender: Sender = Sender.EVENT_LOOP) -> float:
    """Events a process's threads handle per message on the shared cores (:data:`EVENTS_PER_MSG`);
    a client whose sends leave from a spinning thread handles only the replies there (1)."""
    if name == "local_client_work" and sender == Sender.SPINNING:
        return 1.0
    return EVENTS_PER_MSG[name]


@dataclass(frozen=True)
class Cycles:
    """How a workload's messages reach the host, which sets the host's idle gaps between them:
    ``per_cycle`` messages a cycle (the testbed's order and cancel: 2; an echo: 1), cycles in
    groups of ``group`` on average (an open loop's ``workload.burst``), the gaps between groups
    exponential (Poisson arrivals) or, where ``uniform``, even; ``relayed``: through the
    delaying relay (the relay tier), whose thread is one more on the host's cores
    (:func:`core_speed`, :func:`colocated`). The default is the testbed's calibration point's."""

    per_cycle: int = 2
    group: float = 1.0
    uniform: bool = False
    relayed: bool = False

    def __post_init__(self) -> None:
        if self.per_cycle < 1:
            raise ModelError(f"messages a cycle {self.per_cycle}: need >= 1")
        if not self.group >= 1.0:
            raise ModelError(f"cycles a group {self.group}: need >= 1")

    def at_calibration(self) -> Cycles:
        """The same law in groups of one: the calibration point's (an open loop, no bursts)."""
        return replace(self, group=1.0)

    def grown(self, rate_msgs_per_s: float, tau_us: float) -> float:
        """``E[1 - exp(-G / tau)]`` over the gaps ``G`` between groups at this rate (msg/s):
        the share of a cold start of time scale ``tau_us`` that has grown back when a group
        comes, ``1 / (1 + r tau)`` for exponential gaps of rate ``r``, ``1 - exp(-1 / (r tau))``
        for even ones; 1 without arrivals."""
        gaps_tau = rate_msgs_per_s * 1e-6 / self.per_cycle / self.group * tau_us
        if gaps_tau <= 0:
            return 1.0
        if self.uniform:
            return -math.expm1(-1.0 / gaps_tau)
        return 1.0 / (1.0 + gaps_tau)


CALIBRATION_CYCLES = Cycles()


def _cold_fall_us(profile: Profile, name: str, rate: float, cycles: Cycles) -> float:
    """How much less a wake-up's CPU is at ``rate`` than at the calibration rate: its cold
    start ``{name}_wake_cold_us x (1 - exp(-G / {name}_wake_idle_us))`` after the host's idle
    gap ``G`` before the wake-up's busy period, every wake-up of the period paying it (a reply's
    wake-up moments after the thread slept costs as much more as the cycle's first after a long
    idle: the testbed's client, design notes), at its mean over the cycles' gaps at each rate
    (:meth:`Cycles.grown`). Negative where the gaps are longer than the calibration point's."""
    cold = profile.value(f"{name}_wake_cold_us")
    if cold <= 0:
        return 0.0
    tau = profile.value(f"{name}_wake_idle_us")
    calibrated = profile.value("local_calibration_rate_msgs_per_s")
    return cold * (cycles.at_calibration().grown(calibrated, tau) - cycles.grown(rate, tau))


def wake_cpu_us(
    profile: Profile, name: str, rate_msgs_per_s: float, cycles: Cycles = CALIBRATION_CYCLES
) -> float:
    """A process's CPU a wake-up (us) at this rate: what the calibration rate measured
    (``{name}_wake_cpu_us``: every system call, epoll and the work off the path, its cold
    starts at that rate's gaps) less the cold start the shorter gaps at this rate leave out
    (:func:`_cold_fall_us`); never below zero."""
    measured = profile.value(f"{name}_wake_cpu_us")
    return max(0.0, measured - _cold_fall_us(profile, name, rate_msgs_per_s, cycles))


def linger_us(
    profile: Profile, name: str, rate_msgs_per_s: float, cycles: Cycles = CALIBRATION_CYCLES
) -> float:
    """A wake-up's CPU off the message's path at this rate (``{name}_linger_us`` at the
    calibration rate): the wake-up's CPU falls with the gaps (:func:`wake_cpu_us`) off the path,
    the cold start on it being its station's own (by the station's idle gap); never below zero."""
    measured = profile.value(f"{name}_linger_us")
    return max(0.0, measured - _cold_fall_us(profile, name, rate_msgs_per_s, cycles))


def core_speed(
    profile: Profile,
    rate_msgs_per_s: float,
    other_work: str,
    sender: Sender = Sender.EVENT_LOOP,
    cycles: Cycles = CALIBRATION_CYCLES,
) -> float:
    """Share of a core a process's thread gets under fair sharing: ``min(1, n / (1 + k))``.

    ``other_work`` names the *other* process's per-message work stage: its CPU utilization at
    this rate (:func:`utilization`, capped at 1) plus the background threads make ``k``, a
    spinning sender one more thread that is always runnable, and a route through the relay
    (``cycles.relayed``) its thread's utilization (:func:`relay_utilization`).
    """
    busy = utilization(profile, other_work, rate_msgs_per_s, sender=sender, cycles=cycles)
    relay = relay_utilization(profile, rate_msgs_per_s, cycles) if cycles.relayed else 0.0
    return _fair_share(profile, min(1.0, busy) + relay, sender)


def _fair_share(profile: Profile, others_busy: float, sender: Sender) -> float:
    """``min(1, n / (1 + k))``: the share of one of the host's ``n`` cores
    (``local_host_cores``) a thread that is always runnable gets beside ``k`` others, the
    background threads (``local_background_threads``), ``others_busy`` (the other threads'
    utilization, in cores) and a spinning sender, always runnable."""
    cores = profile.value("local_host_cores")
    other = (
        profile.value("local_background_threads")
        + others_busy
        + (1.0 if sender == Sender.SPINNING else 0.0)
    )
    return max(MIN_SPEED, min(1.0, cores / (1.0 + other)))


def utilization(
    profile: Profile,
    name: str,
    rate_msgs_per_s: float,
    speed: float = 1.0,
    sender: Sender = Sender.EVENT_LOOP,
    cycles: Cycles = CALIBRATION_CYCLES,
) -> float:
    """Mean CPU utilization ``rho`` of a process's thread at this rate (mean-value estimate).

    Per message a process handles ``e`` events (:func:`events_per_msg`) at a marginal cost ``b``
    each, and the events that find it asleep (a share ``1 - rho``, M/G/1) add the wake-up's CPU
    ``c`` (:func:`wake_cpu_us`: measured at the calibration rate, so it holds that rate's
    system calls and everything off the round trip's path, its cold start following the gaps
    between the ``cycles`` at this rate): ``rho = x s e (b + c (1 - rho))``, i.e.
    ``rho = x s e (b + c) / (1 + x s e c)``, ``s`` the core-sharing slowdown relative to
    the calibration rate. At saturation it never sleeps: the rate is ``1 / (s b e)``.
    """
    e = events_per_msg(name, sender)
    b = profile.value(f"{name}_marginal_us")
    c = wake_cpu_us(profile, name, rate_msgs_per_s, cycles)
    x = rate_msgs_per_s * 1e-6 * speed
    return x * (b + c) * e / (1.0 + x * c * e)


def _speed_ratio(
    profile: Profile, name: str, rate: float, sender: Sender, cycles: Cycles = CALIBRATION_CYCLES
) -> float:
    """How much slower the cores let ``name`` run at ``rate`` than at the calibration rate."""
    other = "local_gateway_work" if name == "local_client_work" else "local_client_work"
    calibrated = profile.value("local_calibration_rate_msgs_per_s")
    at_calibration = core_speed(profile, calibrated, other, sender, cycles.at_calibration())
    return at_calibration / core_speed(profile, rate, other, sender, cycles)


def process_utilization(
    profile: Profile,
    rate_msgs_per_s: float,
    sender: Sender = Sender.EVENT_LOOP,
    cycles: Cycles = CALIBRATION_CYCLES,
) -> dict[str, float]:
    """Each process's CPU utilization at this rate (:func:`utilization`, shared cores)."""
    rate = rate_msgs_per_s
    return {
        name: utilization(
            profile, name, rate, _speed_ratio(profile, name, rate, sender, cycles), sender, cycles
        )
        for name in EVENTS_PER_MSG
    }


def _station(
    profile: Profile,
    name: str,
    label: str,
    rate: float,
    sender: Sender,
    cycles: Cycles,
    reads: bool = False,
) -> Station:
    """A process's thread: one server that sleeps when idle (wake-up, cold start, linger).

    The wake-up is the thread's scheduling latency (``local_wake``) and the per-wake-up handler
    work (:attr:`twin.path.Station.wake_work_us`, which the vCPU's halt does not scale); the
    handler work, its cold start and the linger after it run at the cores'
    speed at this rate relative to the calibration rate. A thread that ``reads`` each connection
    apart (the gateway's event loop: one read, one engine call and one write per connection
    with data) pays that handler work per read instead (:attr:`twin.path.Station.batch`, per
    connection, spread as its in-process timings: :func:`_spread_work`): a message that finds its
    connection's earlier message still waiting shares its read, so the work fades as the load
    rises on few connections, not on many. A thread
    woken moments after it slept, or while the host still polls its halted vCPU, pays less of
    the scheduling latency (:func:`_thread_on_vcpu`; the halt probe measures the whole one-way
    latency, so this share is an upper bound on the latency's own).
    """
    speed = _speed_ratio(profile, name, rate, sender, cycles)
    handler = speed * profile.value(f"{name}_wake_us")
    per_read = reads and handler > 0
    thread = Station(
        label,
        1,
        wake=stage(profile, "local_wake"),
        wake_work_us=0.0 if per_read else handler,
        batch=_spread_work(profile, name, handler) if per_read else ZERO,
        batch_per_connection=per_read,
        cold_us=speed * profile.value(f"{name}_cold_us") + profile.value("local_wake_cold_us"),
        cold_tau_us=profile.value(f"{name}_idle_us"),
        linger_us=speed * linger_us(profile, name, rate, cycles),
        stall=wake_stall(profile),
        stall_every_wake=waits_for_spinner(sender),
    )
    return _thread_on_vcpu(thread, profile, _neighbour_busy(profile, name, rate, sender, cycles))


def _neighbour_busy(
    profile: Profile, name: str, rate: float, sender: Sender, cycles: Cycles
) -> float:
    """How busy the other vCPU is while ``name``'s thread has one of its own: the other
    process's utilization (:func:`process_utilization`), all the time next to a spinning
    sender."""
    if sender == Sender.SPINNING:
        return 1.0
    other = "local_gateway_work" if name == "local_client_work" else "local_client_work"
    return min(1.0, process_utilization(profile, rate, sender, cycles)[other])


def _spread_work(profile: Profile, name: str, mean_us: float) -> Dist:
    """A process's work (us) of mean ``mean_us``: a lognormal with the spread of its in-process
    timings (``{name}_sigma``; the gateway's ``gateway_ns`` is a read's); zero without work."""
    if mean_us <= 0:
        return ZERO
    sigma = profile.value(f"{name}_sigma")
    return ShiftedLognormal(0.0, mean_us / math.exp(sigma**2 / 2), sigma)


def _read_calls_us(profile: Profile) -> float:
    """A gateway read's system calls (us, ``local_gateway_work_read_us``): the socket's read and
    the reply's write, which its event loop pays per read of a connection beyond its handlers.
    Measured apart from the wake-up's CPU (``local_gateway_work_wake_cpu_us``, whose bookkeeping
    ``local_gateway_work_linger_us`` then excludes them): at the calibration point a wake-up is
    one read, but a loop that finds several connections ready reads each, so its CPU per message
    fades with its wake-ups only as far as its reads share connections (a closed loop of many
    connections: one read a message). Like the wake-up's bookkeeping it is left on the thread
    after the message (:attr:`twin.path.Hop.linger`, per read: ``linger_per_batch``), so the
    latency at the calibration point, where every read comes with a wake-up, is as before."""
    return profile.value("local_gateway_work_read_us")


def socket_wake(profile: Profile, sender: Sender) -> Dist | None:
    """The scheduling latency a thread pays when a socket's data wakes it, where that is not its
    station's own (:attr:`twin.path.Hop.wake`; the handlers' work is the station's
    ``wake_work_us`` either way): with an event-loop client, whose station's wake-up is fitted
    where the client's timer is the cycle's only wake-up (the calibration point), a socket's is
    what a halted vCPU costs beyond an awake one (``local_socket_wake_us``,
    ``local_socket_wake_sigma``: the halt probe's, :func:`calibration.halt.socket_wake_parameter`),
    all of it the halt's (:attr:`twin.path.Hop.wake`: none before the vCPU halts or while the
    host polls it). None without a measured one, or where every wake-up is a socket's (a
    spinning sender has no timer)."""
    median = profile.value("local_socket_wake_us")
    if median <= 0 or sender == Sender.SPINNING:
        return None
    return ShiftedLognormal(0.0, median, profile.value("local_socket_wake_sigma"))


def halt_polling(profile: Profile) -> HaltPolling | None:
    """How the hypervisor polls the host's halted vCPUs (KVM's adaptive window,
    ``local_vcpu_halt_poll_*``); None with a maximum window of 0 (no polling)."""
    window = profile.value("local_vcpu_halt_poll_us")
    if window <= 0:
        return None
    return HaltPolling(
        max_us=window,
        grow=profile.value("local_vcpu_halt_poll_grow_factor"),
        grow_start_us=profile.value("local_vcpu_halt_poll_grow_start_us"),
        shrink=profile.value("local_vcpu_halt_poll_shrink_divisor"),
    )


def _thread_on_vcpu(station: Station, profile: Profile, other_busy: float = 1.0) -> Station:
    """``station`` as its vCPU makes it: its wake-up depends on the vCPU's idle time (an idle
    vCPU halts after about ``local_vcpu_halt_tau_us``, and one woken before costs
    ``1 - local_vcpu_halt_share`` of the wake-up, :attr:`twin.path.Station.halt_share`, as does
    one woken while the host still polls the halted vCPU, :func:`halt_polling`), and the vCPU is
    taken from it now and then, the more the busier the other vCPU (``other_busy``, its share of
    the time busy: :func:`vcpu_hiccups`)."""
    station = replace(station, hiccups=vcpu_hiccups(profile, other_busy))
    share = profile.value("local_vcpu_halt_share")
    if share <= 0:
        return station
    return replace(
        station,
        halt_share=share,
        halt_tau_us=profile.value("local_vcpu_halt_tau_us"),
        halt_poll=halt_polling(profile),
    )


def _hiccup_lengths(profile: Profile, prefix: str, n: int) -> np.ndarray:
    """``n`` evenly spaced quantiles of a hiccup's length (us) by the probe of ``prefix``: its
    measured quantiles (``{prefix}_p25_us`` .. at :data:`twin.percentiles.HICCUP_QUANTILES`)
    between ``local_vcpu_hiccup_floor_us`` (none shorter) and ``{prefix}_max_us`` (none
    longer), the log of the length linear in the level between them (log-uniform within each
    step, so no length the probe did not bracket)."""
    levels = [0.0, *(q / 100.0 for q in HICCUP_QUANTILES.values()), 1.0]
    names = [f"{prefix}_{key}_us" for key in HICCUP_QUANTILES]
    floor = profile.value(f"{HICCUP_BUSY}_floor_us")
    knots = [floor, *(profile.value(name) for name in names), profile.value(f"{prefix}_max_us")]
    log_knots = np.log(np.maximum.accumulate(np.maximum(knots, floor)))
    u = (np.arange(n) + 0.5) / n
    return np.exp(np.interp(u, levels, log_knots))


def vcpu_hiccups(profile: Profile, other_busy: float = 1.0) -> Hiccups | None:
    """The host's hiccups on a vCPU (:class:`twin.path.Hiccups`) whose neighbour is busy a share
    ``other_busy`` of the time, as the hiccup probes beside a corpus measured them
    (:func:`calibration.hiccups.hiccup_parameters`): ``local_vcpu_hiccup_rate_per_s`` a second
    while every vCPU is busy, ``local_vcpu_hiccup_alone_rate_per_s`` while the others idle, each
    probe's lengths its measured quantiles (:func:`_hiccup_lengths`). The guest's kernel threads and
    the host's own work take an idle vCPU when there is one, so a thread meets the busy host's
    hiccups in the share of the time its neighbour is busy and the alone ones otherwise: Poisson
    at ``o r_busy + (1 - o) r_alone``, each length drawn from the two laws in proportion to their
    rates' shares, tabulated at :data:`HICCUP_TABLE_SIZE` quantiles. None where that rate is 0.
    """
    o = min(1.0, max(0.0, other_busy))
    busy = o * profile.value(f"{HICCUP_BUSY}_rate_per_s")
    alone = (1.0 - o) * profile.value(f"{HICCUP_ALONE}_rate_per_s")
    rate = busy + alone
    if rate <= 0:
        return None
    n_busy = round(HICCUP_TABLE_SIZE * busy / rate)
    lengths = np.sort(
        np.concatenate(
            [
                _hiccup_lengths(profile, HICCUP_BUSY, n_busy),
                _hiccup_lengths(profile, HICCUP_ALONE, HICCUP_TABLE_SIZE - n_busy),
            ]
        )
    )
    return Hiccups(rate, Empirical(tuple(float(x) for x in lengths), label="vCPU hiccup"))


def _work(profile: Profile, name: str, events: float, speed: float) -> Dist:
    """A thread's marginal (warm) work per message: ``events`` events at ``b`` each.

    A lognormal with the mean ``s e b`` (``s`` the cores' slowdown ``speed``) and the spread
    of the process's in-process timings (``{name}_sigma``, :func:`_spread_work`).
    """
    return _spread_work(profile, name, speed * events * profile.value(f"{name}_marginal_us"))


def _process_work(profile: Profile, name: str, rate: float, sender: Sender, cycles: Cycles) -> Dist:
    """A process's work per message on the shared cores (:func:`_work` at their slowdown)."""
    speed = _speed_ratio(profile, name, rate, sender, cycles)
    return _work(profile, name, events_per_msg(name, sender), speed)


def _provenance(profile: Profile, name: str) -> str:
    """Where a process's station and work come from (the hop's ``source``)."""
    return sources(
        profile,
        f"{name}_marginal_us",
        f"{name}_wake_us",
        f"{name}_cold_us",
        f"{name}_linger_us",
        "local_wake_median_us",
        "local_socket_wake_us",
        "local_background_threads",
    )


def client_send_hops(
    profile: Profile,
    rate_msgs_per_s: float,
    sender: Sender = Sender.EVENT_LOOP,
    cycles: Cycles = CALIBRATION_CYCLES,
) -> list[Hop]:
    """The client's write of one message: on its event loop's thread (woken by the timer for an
    order), or on a sender thread of its own that spins until the send is due, so it never
    wakes, and holds a core. A spinning sender's send (``local_sender_send_us``: the write's
    system call with the receiving side's protocol work that loopback runs in it, measured in
    the server's reply, :func:`calibration.matrix.native_work`) keeps it busy at the shared
    cores' speed relative to the calibration rate, the server's, spread as the client's work,
    and is left on its thread (:attr:`twin.path.Hop.linger`), yielding to the next message
    (:attr:`twin.path.Hop.linger_yields`): the time from the send to the peer's wake-up is the
    kernel path's and the wake-up's, which the wake-up probes measure from before the send, and
    sockperf times each message from its own send, so a send bounds the sender's rate (its
    utilization, which saturates the host) and adds no latency of its own."""
    name = "local_client_work"
    if sender == Sender.SPINNING:
        speed = _speed_ratio(profile, "local_gateway_work", rate_msgs_per_s, sender, cycles)
        return [
            Hop(
                "client sender (write)",
                "host",
                linger=_spread_work(profile, name, speed * profile.value("local_sender_send_us")),
                linger_yields=True,
                station=Station(SENDER, 1),
                source=sources(profile, "local_sender_send_us"),
            )
        ]
    return [
        Hop(
            CLIENT_WRITE,
            "host",
            service=_process_work(profile, name, rate_msgs_per_s, sender, cycles),
            station=_station(profile, name, CLIENT, rate_msgs_per_s, sender, cycles),
            source=_provenance(profile, name),
        )
    ]


def client_receive_hops(
    profile: Profile,
    rate_msgs_per_s: float,
    sender: Sender = Sender.EVENT_LOOP,
    cycles: Cycles = CALIBRATION_CYCLES,
) -> list[Hop]:
    """The client's thread returning from its wait for the reply (the round trip's end).

    With an event loop: no work of its own (the reply's handling is in the next message's work,
    or the cycle's), but a wake-up if the client slept (a socket's, :func:`socket_wake`), or a
    wait for its current work if it was busy; the bookkeeping after that wake-up yields
    (:attr:`twin.path.Hop.linger_yields`): the ack's handler writes the cancel first. With a
    spinning sender, the receiver thread reads the reply (its work) after a wake-up if it slept.
    """
    name = "local_client_work"
    spinning = sender == Sender.SPINNING
    return [
        Hop(
            "client receiver (read reply)" if spinning else "client wakes for the reply",
            "host",
            service=(
                _process_work(profile, name, rate_msgs_per_s, sender, cycles) if spinning else ZERO
            ),
            station=_station(
                profile, name, RECEIVER if spinning else CLIENT, rate_msgs_per_s, sender, cycles
            ),
            source=_provenance(profile, name),
            may_stall=waits_for_spinner(sender),
            wake=socket_wake(profile, sender),
            # The ack's handler writes the cancel before its bookkeeping.
            linger_yields=not spinning,
        )
    ]


def waits_for_spinner(sender: Sender) -> bool:
    """Whether a thread woken by a socket's data may meet a stall (:func:`wake_stall`): only on a
    host where the client's sender spins (:attr:`twin.kinds.Sender.SPINNING`).

    A spinning thread is always runnable, so a thread woken on the vCPU it holds may wait for the
    rest of the spinner's time slice instead of running at once: Linux's EEVDF scheduler
    inhibits wake-up preemption until the running task has exhausted its slice or reached its
    fair share (``RUN_TO_PARITY``, kernel/sched/features.h; the base slice 0.75 ms, scaled by
    ``1 + log2(cpus)``), the uniform stall's bounded wait. That can happen at any wake-up, however
    short the sleep and within the host's polling window too (the scheduler's trace of sockperf's
    server: design notes, "What sockperf's milliseconds are, traced"), so such a station's stall
    has the same odds at every wake-up (:attr:`twin.path.Station.stall_every_wake`), and a second
    chance after a sleep long enough for its vCPU to have halted and left the host's polling
    window, as a timer's wake-up has (the after-sleep rule, ``{name}_idle_us``). Where every
    thread sleeps in its wait, a socket's data wakes a thread that runs at once, and only the
    client's timer comes late, the likelier the longer it slept. How often and how long is the
    calibration's (``local_wake_stall_prob``, ``local_wake_stall_mean_us``,
    ``local_wake_stall_shape``), fitted to the calibration point's tail.
    """
    return sender == Sender.SPINNING


# Draws of the kernel path's delay and of a wake-up's stall kept in the compiled path (fixed
# seeds: same profile, same path).
PATH_TABLE_SIZE = STALL_TABLE_SIZE = 16384


# Stall shapes (``local_wake_stall_shape``), chosen by the calibration fit.
STALL_SHAPES = ("exponential", "uniform")


def wake_stall(profile: Profile) -> Dist:
    """What a process's thread may meet when it wakes after sleeping (:class:`twin.path.Station`
    ``stall``, paid with probability ``1 - exp(-idle / {name}_idle_us)`` beyond the host's
    polling window, and next to a spinning sender at every wake-up too: :func:`waits_for_spinner`):
    with probability ``local_wake_stall_prob`` a stall of mean ``local_wake_stall_mean_us``, else
    nothing.

    A stall is the client's timer reaching its sleeping thread late (the order's send lag,
    measured in every testbed run), or a thread woken next to a spinning one waiting for the
    rest of its time slice (:func:`waits_for_spinner`): rare, long, never met by a busy thread,
    and holding no CPU (the message arrives late, the vCPU free meanwhile), which is what a
    lognormal wake-up alone cannot give (a tight body and a tail tens of times the median); the
    timer's likelier the longer it slept, so that its tail shrinks as the load keeps the thread
    awake, the spinner's alike at every wake-up, the two adding next to a spinner.
    Two shapes, the calibration keeping the one that fits its run (``local_wake_stall_shape``):
    exponential, a rare long preemption (a descheduled vCPU: a quiet host's tail), or uniform
    on ``[0, 2 x mean]``, the rest of another thread's time slice (a host whose cores are
    time-sliced between several runnable jobs: a bounded tail).
    """
    prob = profile.value("local_wake_stall_prob")
    if prob <= 0:
        return ZERO
    rng = np.random.default_rng(2)
    mean = profile.value("local_wake_stall_mean_us")
    draws = np.zeros(STALL_TABLE_SIZE)
    stalled = rng.random(STALL_TABLE_SIZE) < prob
    n = int(stalled.sum())
    if STALL_SHAPES[int(profile.value("local_wake_stall_shape"))] == "uniform":
        draws[stalled] = rng.uniform(0.0, 2.0 * mean, n)
    else:
        draws[stalled] = rng.exponential(mean, n)
    return Empirical(tuple(float(x) for x in draws), label="wake-up stall")


def _path_delay(profile: Profile) -> Empirical:
    """Shifted lognormal ``local_path``: loopback or veth transit and softirq, one way."""
    rng = np.random.default_rng(1)
    draws = stage(profile, "local_path").sample(rng, PATH_TABLE_SIZE)
    return Empirical(tuple(float(x) for x in draws), label="kernel path delay")


def path_hops(
    label: str,
    tier: Tier,
    profile: Profile,
    transport: Transport = Transport.TCP,
    sender: Sender = Sender.EVENT_LOOP,
    relay_speed: float = 1.0,
) -> list[Hop]:
    """The kernel path between the two processes, one direction (through the relay: twice;
    ``sender`` is the client's, whose spinning may stall the relay's wake-ups; the relay's work
    ``relay_speed`` times slower than at the calibration point, :func:`relay_speed_ratio`)."""
    fixed = profile.value("local_veth_us") if tier == Tier.VETH else 0.0
    names = ["local_path_median_us"]
    names += ["local_veth_us"] if tier == Tier.VETH else []
    kernel = Hop(
        f"{label} {tier}",
        "kernel",
        fixed_us=fixed,
        delay=_path_delay(profile),
        source=sources(profile, *names),
    )
    if tier != Tier.RELAY:
        return [kernel]
    relay = relay_hops(label, profile, transport, sender, relay_speed)
    return [kernel, *relay, _renamed(kernel, f"{label} relay→peer")]


def relay_pass_work(profile: Profile, speed: float = 1.0) -> Dist:
    """The relay's work for one message or chunk in one direction: a read and a write
    (``2 x local_relay_work_us``, exponential: its measured work per event is skewed, p90 about
    three times p50), ``speed`` times slower than at the calibration point
    (:func:`relay_speed_ratio`)."""
    work = 2.0 * profile.value("local_relay_work_us") * speed
    return Exponential(work) if work > 0 else ZERO


def relay_speed_ratio(
    profile: Profile,
    rate_msgs_per_s: float,
    sender: Sender = Sender.EVENT_LOOP,
    cycles: Cycles = CALIBRATION_CYCLES,
) -> float:
    """How much slower the cores let the relay's thread run at this rate than at the calibration
    point, where its work was measured. It is one more thread on the host's cores: under fair
    sharing it gets ``min(1, n / (1 + k))`` of one (:func:`_fair_share`), ``k`` both processes'
    utilization (:func:`process_utilization`), the background threads and a spinning sender,
    so once the processes' threads and the spinner are busy it has less than a core of its own.
    """
    calibrated = profile.value("local_calibration_rate_msgs_per_s")

    def share(rate: float, at: Cycles) -> float:
        busy = sum(min(1.0, u) for u in process_utilization(profile, rate, sender, at).values())
        return _fair_share(profile, busy, sender)

    return share(calibrated, cycles.at_calibration()) / share(rate_msgs_per_s, cycles)


def relay_thread(profile: Profile, transport: Transport, speed: float = 1.0) -> Station:
    """The relay's one thread (``twin testbed relay``), one station for both directions.

    It sleeps in its poll while it holds no message, and polls while it holds one until the
    message's deadline (:attr:`twin.path.Hop.holds`): a message that finds it asleep pays
    the host's wake-up (``local_wake``, the halted vCPU's law as every sleeping thread), one
    that comes while it holds an earlier one does not; a pass after it slept ``gap`` us costs a
    cold start ``local_relay_cold_us x (1 - exp(-gap / local_relay_idle_us))`` more (its read's
    and write's code and the receiver it wakes went cold: :mod:`calibration.relay`), so its
    work per message falls as the load shortens its sleeps. On a vCPU it shares (:func:`colocated`)
    its wake-up may stall next to a spinning sender (:func:`waits_for_spinner`); apart it has no
    idle time scale of its own for the stall's odds, and takes none. Over TCP it reads a chunk
    of the stream at a time: its work for it (:func:`relay_pass_work`) per batch of messages
    waiting on a connection's side (:attr:`twin.path.Station.batch_per_connection`), so the
    cost per message falls as the load rises; over UDP every datagram is a read and a write of
    its own. Its vCPU's hiccups are a busy host's (:func:`vcpu_hiccups`; the relayed systems
    measured all have a spinning sender, which keeps the other vCPU busy). Its work and cold
    start run ``speed`` times slower than at the calibration point, where they were measured
    (the cores it shares with the processes' threads: :func:`relay_speed_ratio`).
    """
    cost = relay_pass_work(profile, speed)
    tcp = transport == Transport.TCP and not cost.is_zero
    thread = Station(
        RELAY_THREAD,
        1,
        wake=stage(profile, "local_wake"),
        batch=cost if tcp else ZERO,
        batch_per_connection=tcp,
        cold_us=profile.value("local_relay_cold_us") * speed,
        cold_tau_us=profile.value("local_relay_idle_us"),
    )
    return _thread_on_vcpu(thread, profile)


def relay_hops(
    label: str,
    profile: Profile,
    transport: Transport = Transport.TCP,
    sender: Sender = Sender.EVENT_LOOP,
    speed: float = 1.0,
) -> list[Hop]:
    """The delaying relay (``twin testbed relay``): its thread (:func:`relay_thread`), then its
    drawn delay, the relay's configured law ``local_relay_floor_us + Exp(local_relay_mean_us)``:
    a pure delay, many messages may be held at once (over TCP a chunk's messages share their
    read's delay; here each message draws its own)."""
    thread = relay_thread(profile, transport, speed)
    mean = profile.value("local_relay_mean_us")
    return [
        Hop(
            f"{label} relay thread",
            "relay",
            service=ZERO if thread.batch_per_connection else relay_pass_work(profile, speed),
            station=thread,
            source=sources(profile, "local_relay_work_us", "local_wake_median_us"),
            may_stall=waits_for_spinner(sender),
            holds=True,
        ),
        Hop(
            f"{label} relay delay",
            "relay",
            fixed_us=profile.value("local_relay_floor_us"),
            delay=Exponential(mean) if mean > 0 else ZERO,
            source=sources(profile, "local_relay_floor_us", "local_relay_mean_us"),
        ),
    ]


def _renamed(hop: Hop, name: str) -> Hop:
    return replace(hop, name=name)


def gateway_hops(
    profile: Profile,
    rate_msgs_per_s: float,
    sender: Sender = Sender.EVENT_LOOP,
    cycles: Cycles = CALIBRATION_CYCLES,
) -> list[Hop]:
    """The gateway's read, decode, risk check + matching and reply write (one event loop);
    ``sender`` is the client's, whose spinning takes a core from the shared ones."""
    name = "local_gateway_work"
    station = _station(profile, name, GATEWAY, rate_msgs_per_s, sender, cycles, reads=True)
    speed = _speed_ratio(profile, name, rate_msgs_per_s, sender, cycles)
    read = speed * _read_calls_us(profile)
    per_read = read > 0 and station.batch_per_connection
    return [
        Hop(
            "gateway read + engine + write",
            "gateway",
            service=_process_work(profile, name, rate_msgs_per_s, sender, cycles),
            station=station,
            source=_provenance(profile, name),
            may_stall=waits_for_spinner(sender),
            wake=socket_wake(profile, sender),
            linger=Const(read) if per_read else ZERO,
            linger_per_batch=per_read,
        )
    ]


def relay_cold_us(
    profile: Profile, rate_msgs_per_s: float, cycles: Cycles = CALIBRATION_CYCLES
) -> float:
    """The relay's mean cold start a message at this rate (us, mean-value): a group's first
    request finds it asleep since the group before (``local_relay_cold_us`` times the share
    grown back over the gap, :meth:`Cycles.grown`); the reply's pass comes moments after the
    request's, the relay having slept through the server's turn only."""
    cold = profile.value("local_relay_cold_us")
    if cold <= 0:
        return 0.0
    tau = profile.value("local_relay_idle_us")
    return cold * cycles.grown(rate_msgs_per_s, tau) / cycles.group / cycles.per_cycle


def relay_utilization(
    profile: Profile, rate_msgs_per_s: float, cycles: Cycles = CALIBRATION_CYCLES
) -> float:
    """The relay thread's work as a share of a vCPU at this rate: per message, two passes
    (:func:`relay_pass_work`) and its cold start (:func:`relay_cold_us`), capped at 1."""
    work = 2.0 * relay_pass_work(profile).mean + relay_cold_us(profile, rate_msgs_per_s, cycles)
    return min(1.0, rate_msgs_per_s * 1e-6 * work)


def colocated(
    profile: Profile,
    rate_msgs_per_s: float,
    sender: Sender,
    alternating: bool = False,
    cycles: Cycles = CALIBRATION_CYCLES,
) -> bool:
    """Whether the host runs both processes' threads on one vCPU at this rate.

    Linux wakes a thread on the CPU of the thread that woke it while that CPU has spare
    capacity, and its load balancer moves one away once the CPU's utilization ``u`` leaves none:
    ``u x imbalance_pct >= 100`` (``group_has_capacity``, kernel/sched/fair.c), so the pair
    shares a vCPU while their combined utilization (:func:`process_utilization`) stays under
    ``100 / local_balance_imbalance_pct``. A spinning sender holds a vCPU of its own, so the
    threads that share one are the others, the server and the client's receiver, by the same
    rule; a route through the relay (``cycles.relayed``) adds its thread's share
    (:func:`relay_utilization`).
    Never with ``local_balance_imbalance_pct`` 0 (a profile fitted without this mechanism), nor
    for threads that strictly alternate (``alternating``: a closed loop of one connection): Linux
    wakes a thread on its previous CPU while that CPU is idle (``select_idle_sibling``,
    kernel/sched/fair.c), which it always is when the other thread wakes it, so once apart the
    pair stays apart (sockperf's ping-pong: together in none of the lab's samples).
    """
    pct = profile.value("local_balance_imbalance_pct")
    if pct <= 0 or alternating:
        return False
    busy = sum(process_utilization(profile, rate_msgs_per_s, sender, cycles).values())
    if cycles.relayed:
        busy += relay_utilization(profile, rate_msgs_per_s, cycles)
    return busy * pct < 100.0


def _on_vcpu(hop: Hop, vcpu: Station) -> Hop:
    """A kernel path hop as work of the vCPU it shares with both processes: loopback's and a
    veth pair's transmit run in the sender's system call and softirq on its CPU, so the vCPU
    stays busy through the hand-off instead of sleeping while the message is in flight."""
    if not isinstance(hop.delay, Empirical) or not hop.service.is_zero:
        raise ModelError(f"hop {hop.name!r}: a kernel path is a drawn delay, got {hop!r}")
    work = Empirical(tuple(x + hop.fixed_us for x in hop.delay.samples_us), hop.delay.label)
    return replace(hop, fixed_us=0.0, delay=ZERO, service=work, station=vcpu, may_stall=False)


def shared_vcpu_hops(
    hops: list[Hop],
    profile: Profile,
    rate_msgs_per_s: float,
    sender: Sender,
    alternating: bool = False,
    cycles: Cycles = CALIBRATION_CYCLES,
) -> list[Hop]:
    """The round trip with both processes on one vCPU when :func:`colocated` and while that
    vCPU's own work (theirs and the kernel path they run on it) leaves it spare capacity too,
    else ``hops``; on the vCPU a message goes through its hops as one service
    (:func:`_run_through`).

    The processes' hops and the kernel path between them (:func:`_on_vcpu`) then share one
    station, :data:`SHARED_VCPU` (with a spinning sender, which holds a vCPU of its own: the
    gateway's and the receiver's hops and the way back; the sender's write and the way out,
    which its system call runs on its vCPU, stay apart). The station sleeps when the vCPU has
    nothing to run: a message that finds it idle pays the host's wake-up (``local_wake``, the
    cold start of the client, whose timer starts each cycle, and of the host, and at the timer
    the stall); one that finds it busy waits for the other process's work, as the measured
    run-queue wait says (11-18 us a message while co-located). A thread still wakes for an event
    that finds it idle (a share ``1 - rho`` of them, its utilization's mean-value rule) without
    the vCPU waking: each hop carries that share of its process's per-wake-up work on the path
    (``{name}_wake_us``) and leaves its bookkeeping on the vCPU (``{name}_linger_us``,
    :attr:`twin.path.Hop.linger`, less the kernel path it sends, measured in that CPU and now
    the vCPU's work on the path), the client's 1.5 wake-ups a message (timer, ack, cancel ack a
    cycle) split as half for its write and one for the reply; the gateway's cold start, paid by
    the first message of each cycle (``per_cycle`` messages a cycle: the testbed's order, not
    its cancel; every echo), at its mean over the cycles' gaps (exponential, or evenly spaced
    where ``uniform``). Messages that arrive in groups
    (an open loop's ``workload.burst``, ``group`` cycles at a time on average) wake each thread
    once a group: the first finds it asleep, the rest queue on the vCPU behind it and find the
    thread still at work, so a message carries ``1 / group`` of those wake-ups' work and the
    gateway's cold start after the groups' gaps. That bookkeeping **yields**
    (:attr:`twin.path.Hop.linger_yields`): the thread a send wakes on the shared vCPU runs before
    the sender's remaining work (Linux preempts the waker for a woken thread that slept,
    ``check_preempt_wakeup_fair``, kernel/sched/fair.c), so it keeps the vCPU awake and busy but
    delays no message: the measured cancel (34 us at 1k msg/s, from the ack's handler through
    the gateway and back) is far less than the two processes' CPU a message (77 us).

    Through the relay (its thread counted by :func:`colocated`), the relay's thread shares the
    vCPU too, and so does every kernel path but the spinning sender's: each runs on the vCPU of
    the thread that sends it. The relay's hops keep their work, read by read (over TCP too: while
    the vCPU has spare capacity its reads take one message each), and hold the vCPU awake
    through their delay.
    """
    if not colocated(profile, rate_msgs_per_s, sender, alternating, cycles):
        return hops
    client = "local_client_work"
    latency = stage(profile, "local_wake")
    vcpu = Station(
        SHARED_VCPU,
        1,
        wake=latency,
        cold_us=profile.value(f"{client}_cold_us") + profile.value("local_wake_cold_us"),
        cold_tau_us=profile.value(f"{client}_idle_us"),
        stall=wake_stall(profile),
        stall_every_wake=waits_for_spinner(sender),
    )
    # The other vCPU idles, unless the spinning sender holds it.
    vcpu = _thread_on_vcpu(vcpu, profile, 1.0 if sender == Sender.SPINNING else 0.0)
    kernel = [hop for hop in hops if hop.component == "kernel"]
    path_us = kernel[0].fixed_us + kernel[0].delay.mean if kernel else 0.0
    # A thread's handler work and bookkeeping come with a wake-up of its own, which an event finds
    # with the probability its thread is idle (the mean-value rule of utilization()).
    busy = process_utilization(profile, rate_msgs_per_s, sender, cycles)
    asleep = {name: (1.0 - min(1.0, rho)) / cycles.group for name, rho in busy.items()}
    relay_cold = relay_cold_us(profile, rate_msgs_per_s, cycles)
    # With a spinning sender, the way out of its write runs in its system call, on its vCPU.
    out = []
    for i, hop in enumerate(hops):
        if hop.component == "kernel":
            before = hops[i - 1].station if i > 0 else None
            spinner = sender == Sender.SPINNING and before is not None and before.name == SENDER
            out.append(hop if spinner else _on_vcpu(hop, vcpu))
            continue
        if hop.station is not None and hop.station.name == RELAY_THREAD:
            # A read and a write a message, over TCP too, at the calibration point's speed: on
            # the one vCPU the threads' sharing is the station's own queue.
            work = relay_pass_work(profile)
            if relay_cold > 0 and not work.is_zero:  # the request's pass, its mean cold start
                work, relay_cold = Exponential(work.mean + relay_cold), 0.0
            out.append(replace(hop, station=vcpu, service=work))
            continue
        if hop.station is None or hop.station.name not in (CLIENT, GATEWAY, RECEIVER):
            out.append(hop)
            continue
        name = client if hop.station.name in (CLIENT, RECEIVER) else "local_gateway_work"
        speed = _speed_ratio(profile, name, rate_msgs_per_s, sender, cycles)
        wakes = (0.5 if hop.name == CLIENT_WRITE else 1.0) * asleep[name]
        handler = wakes * speed * profile.value(f"{name}_wake_us")
        if name != client:
            # Paid by a group's first cycle's first message (after the groups' gap the cold start
            # has grown to Cycles.grown of itself), not by a testbed's cancels (the gateway ran
            # moments before).
            grown = cycles.grown(rate_msgs_per_s, profile.value(f"{name}_idle_us"))
            cold = speed * profile.value(f"{name}_cold_us") * grown
            handler += cold / cycles.group / cycles.per_cycle
        service = hop.service
        if isinstance(service, ShiftedLognormal):
            service = replace(service, shift_us=service.shift_us + handler)
        elif service.is_zero:
            service = Const(handler) if handler > 0 else ZERO
        else:
            raise ModelError(f"hop {hop.name!r}: unexpected work {service!r} on a shared vCPU")
        bookkeeping = speed * linger_us(profile, name, rate_msgs_per_s, cycles)
        linger = wakes * bookkeeping
        per_msg = events_per_msg(name, sender) * bookkeeping
        if per_msg > 0:
            linger *= max(0.0, 1.0 - path_us / per_msg)
        if name != client:
            # A read a message (while the vCPU has spare capacity its reads take one each).
            linger += speed * _read_calls_us(profile)
        out.append(
            replace(
                hop,
                station=vcpu,
                service=service,
                linger=Const(linger) if linger else ZERO,
                linger_per_batch=False,
                linger_yields=True,
                wake=None if hop.wake is None else socket_wake(profile, sender),
            )
        )
    # The balancer sees the vCPU's utilization: the processes' work and the kernel path they run
    # on it (which their measured CPU may not show apart); once that leaves no spare capacity it
    # moves one away, as colocated() says of the processes alone.
    on_vcpu = sum(h.service.mean + h.linger.mean for h in out if h.station is vcpu)
    if rate_msgs_per_s * 1e-6 * on_vcpu * profile.value("local_balance_imbalance_pct") >= 100.0:
        return hops
    return _run_through(out, vcpu)


def _run_through(hops: list[Hop], vcpu: Station) -> list[Hop]:
    """``hops`` with each hop on the shared ``vcpu`` continuing into the next one there when
    nothing lies between (:attr:`twin.path.Hop.continues`): a system call runs its kernel path
    on its own CPU, and the thread a send wakes on the vCPU runs before the sender's remaining
    work and the messages queued behind it (Linux preempts the waker for a woken thread that
    slept, ``check_preempt_wakeup_fair``, kernel/sched/fair.c), so a message goes through the
    vCPU's hops as one service, woken once."""
    out = list(hops)
    for i in range(len(out) - 1):
        here, after = out[i], out[i + 1]
        if (
            here.station is vcpu
            and after.station is vcpu
            and after.fixed_us == 0
            and after.delay.is_zero
            and after.allowance is None
        ):
            out[i] = replace(here, continues=True)
            out[i + 1] = replace(after, wake=None)  # the vCPU is awake: no socket's wake-up
    return out
