"""One machine: client and gateway processes joined by the kernel's loopback or a veth pair.

This is the live testbed (``twin testbed``): no NIC and no fabric. What a message meets:

* the **client process** (station ``client process``, one server: the load client's one
  thread) works to encode and write each message and to read and
  handle each reply (its per-message work ``local_client_work``, one hop at the front of the
  path), including the kernel's send path, which on loopback and veth runs in the sender's
  context;
* the **kernel path** between the processes (loopback, or veth between two namespaces): a
  non-queueing delay per direction covering the wake-up of the receiving thread, the scheduler
  and softirq, shifted lognormal ``local_path`` plus rare stalls (veth adds ``local_veth_us``);
* the **client's send lateness**: the open-loop sender sleeps to each scheduled time and wakes
  late by a random amount (timer, scheduler); the order's round trip counts it, since it is
  measured from the scheduled time (shifted lognormal ``local_send_lag``); the cancel, sent on
  the ack, does not;
* the **gateway process** (station ``gateway process``, one server: one event loop) spends
  ``local_gateway_work`` per message to decode, run risk + matching in ``engine_ext`` and write
  the reply.

The per-message work of each process is its **service demand** (operational analysis): the
on-CPU time of all its threads over the calibration run per message answered
(``/proc/PID/task/*/schedstat``), so each process's utilisation (:func:`process_utilisation`:
what it leaves of the cores to the other, and the saturation rate) comes from a measurement
rather than from a latency fit. The demand splits into a marginal cost per event and a
per-wake-up cost (the per-read part of the handlers, epoll wait, context switch) that only a
message finding its process idle pays: as the rate rises, more messages arrive to a busy
process and share one wake-up (:func:`utilisation`). The marginal cost is measured at the
calibration rate too, from the work per event of the wake-ups (reads) that happened to carry
several events. The stations serve the in-process work (the processes' own timings of their
handlers: the gateway's ``gateway_ns`` in every reply, the client's timing of its reply
handling and order writes, which also give the spread), split the same way (:func:`_work`).
The run-queue wait (ready, no core free) is not service: it is the cores' contention, which
enters as the fair-share slowdown below and, in its rare long stalls, in the kernel path.

Work also depends on the rate through **cold starts**: after an idle gap caches, clock and a
halted vCPU are cold, so the same work is slower at a low rate (:func:`cold_start_factor`,
fitted on the calibration run's work classed by the idle gap before it). Whatever else runs on
the machine is **background load**: the mean number of other runnable threads
(``local_background_threads``, sampled from ``/proc/loadavg`` during the calibration run and
held constant).

**Shared cores.** Both processes and the background share ``local_host_cores`` cores. A step
really needs its process's thread *and* a core at once; a path hop holds one station at a time,
so this cannot be a second station in tandem (it would add the work twice to the round trip),
and one 2-server "host cores" station alone would let one process run two messages at once.
The per-process stations are kept (exact serialisation), and the cores enter as a slowdown of
each process's work under fair sharing (Linux CFS): with ``k`` other runnable threads on ``n``
cores a thread runs at speed ``min(1, n / (1 + k))``, ``k`` being the background plus the other
process's utilisation at the scenario's rate (:func:`core_speed`). On a quiet 2-core host with
two single-threaded processes the cores never bind and the stations alone decide; the
slowdown uses mean demands, so it captures the loss of capacity, not the burst of one
preemption (that is in the fitted kernel path and the measured sender lateness).
"""

from __future__ import annotations

import numpy as np

from twin.components.stages import sources, stage
from twin.dists import Empirical, ShiftedLognormal
from twin.path import Hop, Station
from twin.profile import Profile

CLIENT = Station("client process", 1)
GATEWAY = Station("gateway process", 1)


MIN_SPEED = 1e-3  # floor of core_speed (a guard: fair sharing never starves a thread)


def core_speed(profile: Profile, rate_msgs_per_s: float, other_work: str) -> float:
    """Share of a core a process's thread gets under fair sharing: ``min(1, n / (1 + k))``.

    ``other_work`` names the *other* process's per-message work stage: its utilisation at this
    rate (:func:`utilisation`, capped at 1) plus the background threads make ``k``.
    """
    cores = profile.value("local_host_cores")
    other = profile.value("local_background_threads") + min(
        1.0, utilisation(profile, other_work, rate_msgs_per_s)
    )
    return max(MIN_SPEED, min(1.0, cores / (1.0 + other)))


# Wake-ups of each process per message when it is idle: the client writes an order every other
# message and handles every reply; the gateway handles every request.
EVENTS_PER_MSG = {"local_client_work": 1.5, "local_gateway_work": 1.0}


def cold_start_factor(
    profile: Profile, name: str, events_per_msg: float, rate_msgs_per_s: float
) -> float:
    """How much faster (< 1) or slower a process's work is at this rate than when measured.

    Work after an idle gap ``g`` takes ``warm + cold * (1 - exp(-g / idle))`` (``{name}_warm_us``,
    ``_cold_us``, ``_idle_us``, fitted on the calibration run's work classed by its idle gap):
    caches, clock and a halted vCPU all cool down while the process sleeps. With wake-ups at
    Poisson rate ``mu``, ``E[1 - exp(-g / idle)] = 1 / (1 + mu * idle)``; the factor is the mean
    at this rate over the mean at the calibration rate, so the measured work is kept there.
    """
    warm = profile.value(f"{name}_warm_us")
    cold = profile.value(f"{name}_cold_us")
    idle_s = profile.value(f"{name}_idle_us") * 1e-6
    calibrated = profile.value("local_calibration_rate_msgs_per_s")

    def mean_work(rate: float) -> float:
        return warm + cold / (1.0 + events_per_msg * rate * idle_s)

    return mean_work(rate_msgs_per_s) / mean_work(calibrated)


def utilisation(profile: Profile, name: str, rate_msgs_per_s: float, speed: float = 1.0) -> float:
    """Offered utilisation ``rho`` of a process's thread at this rate.

    Per message a process handles ``e`` events (:data:`EVENTS_PER_MSG`) at a marginal cost ``b``
    each (``{name}_marginal_us``) and, when the message finds it idle, pays a wake-up of cost
    ``c`` per event (``{name}_wake_us``: the per-wake-up part of its handlers, the epoll wait,
    the context switch). With Poisson arrivals a message finds a single server idle with
    probability ``1 - rho`` (M/G/1), so ``rho = r k s (b e + c e (1 - rho))``, i.e.
    ``rho = r k s (b + c) e / (1 + r k s c e)``, ``k`` being the :func:`cold_start_factor` and
    ``s`` the core-sharing ``speed`` ratio. At a low rate every event pays a wake-up; near
    saturation the process never sleeps and batches (measured at the calibration rate as work
    per event falling with the events per wake-up): the saturation rate is ``1 / (k s b e)``.
    """
    e = EVENTS_PER_MSG[name]
    ks = cold_start_factor(profile, name, e, rate_msgs_per_s) * speed
    b = profile.value(f"{name}_marginal_us")
    c = profile.value(f"{name}_wake_us")
    x = rate_msgs_per_s * 1e-6
    return x * ks * (b + c) * e / (1.0 + x * ks * c * e)


def _speed_ratio(profile: Profile, name: str, rate: float) -> float:
    """How much slower the cores let ``name`` run at ``rate`` than at the calibration rate."""
    other = "local_gateway_work" if name == "local_client_work" else "local_client_work"
    calibrated = profile.value("local_calibration_rate_msgs_per_s")
    return core_speed(profile, calibrated, other) / core_speed(profile, rate, other)


def process_utilisation(profile: Profile, rate_msgs_per_s: float) -> dict[str, float]:
    """Each process's offered utilisation at this rate (:func:`utilisation`, shared cores)."""
    rate = rate_msgs_per_s
    return {
        name: utilisation(profile, name, rate, _speed_ratio(profile, name, rate))
        for name in EVENTS_PER_MSG
    }


def _work(profile: Profile, name: str, rate: float) -> ShiftedLognormal:
    """A process's in-process work per message at ``rate``, as a station's service time.

    The measured shape (a lognormal from the timing's p50 and p90) with the mean
    ``k s (b e + (w0 - b e) (1 - rho) / (1 - rho0))``: the marginal work ``b e`` and the rest of
    the work ``w0`` measured at the calibration rate (where the utilisation was ``rho0``), which
    is paid per wake-up and so shrinks as messages share wake-ups (:func:`utilisation`), with
    the cold starts ``k`` and the core sharing ``s`` at this rate relative to the calibration
    rate (the timing is wall clock, so it already holds the sharing there). The wake-up's
    latency beyond the handlers is the receiving thread's wake-up, part of the kernel path.
    """
    e = EVENTS_PER_MSG[name]
    calibrated = profile.value("local_calibration_rate_msgs_per_s")
    speed = _speed_ratio(profile, name, rate)
    rho = min(1.0, utilisation(profile, name, rate, speed))
    rho0 = utilisation(profile, name, calibrated)
    w = stage(profile, name)
    marginal = min(profile.value(f"{name}_marginal_us") * e, w.mean)
    ks = cold_start_factor(profile, name, e, rate) * speed
    mean = ks * (marginal + (w.mean - marginal) * (1.0 - rho) / (1.0 - rho0))
    scale = mean / w.mean
    return ShiftedLognormal(w.shift_us * scale, w.median_us * scale, w.sigma)


# Draws of the sender's lateness kept in the compiled path (a fixed seed: same profile, same path).
LAG_TABLE_SIZE = 4096


def _order_lateness(profile: Profile) -> Empirical:
    """Lateness of the order half of the loop: the cancel goes at once on the ack, on time.

    The path has one round trip per message, so the mixture (half the messages late by the
    lognormal lateness, half not at all) is carried as an empirical table.
    """
    draws = stage(profile, "local_send_lag").sample(np.random.default_rng(0), LAG_TABLE_SIZE)
    draws[1::2] = 0.0
    return Empirical(tuple(float(x) for x in draws), label="order send lateness")


def client_send_hops(profile: Profile, rate_msgs_per_s: float) -> list[Hop]:
    """The client's lateness against its schedule (orders only), then its per-message work.

    The work hop carries all the client's work for one message: encoding and writing it, and
    reading and handling its reply. Only the first part is inside the measured round trip (the
    round trip ends when the receiver wakes), but the station must carry it all; putting it at
    the front is also what the cancel sees, since it is written from the ack's handler.
    """
    return [
        Hop(
            "client send lateness",
            "host",
            delay=_order_lateness(profile),
            source=sources(profile, "local_send_lag_median_us"),
        ),
        Hop(
            "client work (write + handle reply)",
            "host",
            service=_work(profile, "local_client_work", rate_msgs_per_s),
            station=CLIENT,
            source=sources(
                profile,
                "local_client_work_median_us",
                "local_client_work_wake_us",
                "local_background_threads",
            ),
        ),
    ]


# Draws of the kernel path's delay kept in the compiled path (fixed seed: same profile, same path).
PATH_TABLE_SIZE = 16384


# Stall shapes (``local_path_stall_shape``), chosen by the calibration fit.
STALL_SHAPES = ("exponential", "uniform")


def _path_delay(profile: Profile) -> Empirical:
    """Shifted lognormal ``local_path``, plus with probability ``local_path_stall_prob`` a stall.

    A stall (mean ``local_path_stall_mean_us``) is the receiving thread not being scheduled for
    a while: rare, long, and independent of the testbed's own rate, which is what a lognormal
    alone cannot give (a tight body and a tail tens of times the median). Two shapes, the
    calibration keeping the one that fits its run (``local_path_stall_shape``): exponential,
    a rare long preemption (a descheduled vCPU: a quiet host's tail), or uniform on
    ``[0, 2 x mean]``, the rest of another thread's time slice (a host whose cores are
    time-sliced between several runnable jobs: a bounded tail, p99 near p90 x 2 rather than x 4).
    """
    rng = np.random.default_rng(1)
    draws = stage(profile, "local_path").sample(rng, PATH_TABLE_SIZE)
    stalled = rng.random(PATH_TABLE_SIZE) < profile.value("local_path_stall_prob")
    stall_mean = profile.value("local_path_stall_mean_us")
    n = int(stalled.sum())
    if STALL_SHAPES[int(profile.value("local_path_stall_shape"))] == "uniform":
        draws[stalled] += rng.uniform(0.0, 2.0 * stall_mean, n)
    else:
        draws[stalled] += rng.exponential(stall_mean, n)
    return Empirical(tuple(float(x) for x in draws), label="kernel path delay")


def path_hops(label: str, tier: str, profile: Profile) -> list[Hop]:
    """The kernel path between the two processes, one direction."""
    fixed = profile.value("local_veth_us") if tier == "veth" else 0.0
    names = ["local_path_median_us", "local_path_stall_prob"]
    names += ["local_veth_us"] if tier == "veth" else []
    return [
        Hop(
            f"{label} {tier}",
            "kernel",
            fixed_us=fixed,
            delay=_path_delay(profile),
            source=sources(profile, *names),
        )
    ]


def gateway_hops(profile: Profile, rate_msgs_per_s: float) -> list[Hop]:
    """The gateway's read, decode, risk check + matching and reply write (one event loop)."""
    return [
        Hop(
            "gateway read + engine + write",
            "gateway",
            service=_work(profile, "local_gateway_work", rate_msgs_per_s),
            station=GATEWAY,
            source=sources(
                profile,
                "local_gateway_work_median_us",
                "local_gateway_work_wake_us",
                "local_background_threads",
            ),
        )
    ]
