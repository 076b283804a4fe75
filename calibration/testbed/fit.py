"""Calibrate the local scenario on one (low-rate) testbed run and predict the others.

What comes from where (written into the profile's ``source`` of each parameter; the model is
:mod:`twin.components.loopback`):

* **measured** in the calibration run: each process's CPU per message (schedstat), whose part
  beyond the work on the message's path is what a wake-up costs after the message has left
  (``linger``); the spread of the work (in-process timings: the gateway's ``gateway_ns``, the
  client's order writes and reply handling; a lognormal's sigma from their p50 and p90); the
  background (the vCPUs the host kept busy beyond the two processes' own CPU, :func:`background`);
  the spread of a thread's wake-up latency (the timer's lateness, ``send_lag_us`` p50 and p99);
* **fitted** on the calibration run alone: each process's marginal work per event and
  per-wake-up work (``b + a / n`` over the warm batches of the rate's **burst probe**, the same
  rate with orders sent in groups, ``twin testbed campaign --probe-bursts``; over the run's own
  batches when no probe was measured); each process's cold start (its work classed by the idle
  gap before it, ``work_by_idle_gap``); and, with the twin itself in the loop (engine
  :data:`ENGINE`), the kernel path's body, the wake-up latency's median and cold part and the
  stalls of threads waking after long sleeps, to the run's order and cancel round-trip percentiles
  (:data:`FIT_TARGETS`); for veth,
  ``local_veth_us`` to the lowest-rate veth run (:func:`fit_veth`).

When the lowest rate was measured several times (``twin testbed campaign --repeats N``), the
calibration reads the elementwise median of its runs' summaries
(:func:`calibration.testbed.summary.median_summary`). Nothing of the other rates is looked at: they
are what the twin then predicts.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from types import MappingProxyType
from typing import Any

import numpy as np

from calibration.hiccups import HICCUP_MIN_US
from calibration.syscalls import send_cost
from calibration.testbed.summary import LoadSummary, median_summary, read_summary, run_dirs
from twin.components.loopback import (
    EVENTS_PER_MSG,
    HICCUP_ALONE,
    HICCUP_BUSY,
    STALL_SHAPES,
    process_utilization,
)
from twin.errors import MeasurementError
from twin.jsontext import read_json
from twin.kinds import Transport
from twin.percentiles import HICCUP_QUANTILES
from twin.profile import Parameter, Profile
from twin.results import RunResult, rate_at_full_load
from twin.scenario import Scenario
from twin.simulation import prepare, run_prepared

Z99 = 2.3263  # standard normal quantile of 0.99
Z90 = 1.2816  # standard normal quantile of 0.90
STRUCTURAL = {
    "az_spine_cells": (1.0, "structural: one machine, placement is trivial"),
    "cell_racks": (1.0, "structural: one machine, placement is trivial"),
    "cpg_rack_span": (1.0, "structural: one machine, placement is trivial"),
    "az_datacenters": (1.0, "structural: one machine, placement is trivial"),
}
# A campaign's fit keeps the two processes on a vCPU each at every rate: fitted with Linux's
# imbalance_pct its shared vCPU missed the campaign's own calibration point (docs/design-notes.md).
NO_COLOCATION = Parameter(
    0.0,
    "assumption: the processes on a vCPU each at every rate (a campaign records no placement; "
    "fitted with Linux's imbalance_pct 117 the campaign's calibration point missed by +42% and "
    "8k msg/s was unstable, docs/design-notes.md); the load matrix's prior sets 117",
)
# ... and a thread's wake-up the same whatever the time its vCPU sat idle: a campaign records no
# halt probe (twin testbed wakeprobe --waiter spins).
NO_HALT = {
    "local_vcpu_halt_share": Parameter(
        0.0, "assumption: no halt probe beside a campaign; the load matrix's prior takes one"
    ),
    "local_vcpu_halt_tau_us": Parameter(0.0, "assumption: no halt time (local_vcpu_halt_share 0)"),
}
# ... and a socket's wake-up the fitted one: a campaign records no wake-up probes.
NO_SOCKET_WAKE = {
    "local_socket_wake_us": Parameter(
        0.0, "assumption: no wake-up probes beside a campaign; a socket's wake-up is the fitted one"
    ),
    "local_socket_wake_sigma": Parameter(0.0, "assumption: no socket wake-up of its own"),
}
# ... and the host's KVM polling a halted vCPU at its defaults: a campaign records no steady
# halt probe (the load matrix's prior measures its host's window, calibration.halt).
KVM_DEFAULT_POLLING = {
    "local_vcpu_halt_poll_us": Parameter(
        200.0,
        "assumption: the host's KVM at its default, a maximum polling window of 200000 ns on x86 "
        "(KVM_HALT_POLL_NS_DEFAULT; docs.kernel.org/virt/kvm/halt-polling.html); the lab's "
        "steady halt probe (twin testbed wakeprobe --order steady) measures its host's",
    ),
    "local_vcpu_halt_poll_grow_factor": Parameter(
        2.0,
        "assumption: the host's KVM at its default, the window doubled after a short halt "
        "(docs.kernel.org/virt/kvm/halt-polling.html)",
    ),
    "local_vcpu_halt_poll_grow_start_us": Parameter(
        10.0,
        "assumption: the host's KVM at its default, a first window of 10000 ns "
        "(docs.kernel.org/virt/kvm/halt-polling.html)",
    ),
    "local_vcpu_halt_poll_shrink_divisor": Parameter(
        2.0,
        "assumption: the host's KVM at its default, the window halved after a long halt since "
        "Linux 6.4 (commit aeb1b22a3ac8, 'KVM: Enable halt polling shrink parameter by "
        "default'; reset to 0 before); docs/design-notes.md has the lab host's pattern that "
        "tells the two apart",
    ),
}
# ... and no hiccups: a campaign records no hiccup probe (twin testbed hiccups).
NO_HICCUPS = {
    "local_vcpu_hiccup_rate_per_s": Parameter(
        0.0,
        "assumption: no hiccup probe beside a campaign (twin testbed hiccups); the load "
        "matrix's prior takes the one beside its corpus",
    ),
    "local_vcpu_hiccup_floor_us": Parameter(
        HICCUP_MIN_US,
        "assumption: the shortest gap the model counts as a hiccup (calibration.hiccups)",
    ),
    "local_vcpu_hiccup_alone_rate_per_s": Parameter(
        0.0, "assumption: no hiccup probe beside a campaign (twin testbed hiccups --alone)"
    ),
    **{
        f"{prefix}_{key}_us": Parameter(HICCUP_MIN_US, "assumption: unused while the rate is 0")
        for prefix in (HICCUP_BUSY, HICCUP_ALONE)
        for key in (*HICCUP_QUANTILES, "max")
    },
}
# ... and a read's system calls inside the wake-up's CPU: a campaign measures no native server.
NO_READ_CALLS = Parameter(
    0.0,
    "assumption: a read's system calls (the socket's read and the reply's write) are part of the "
    "wake-up's CPU (local_gateway_work_wake_cpu_us) where no native server that never sleeps "
    "measured them on the same route (the load matrix: sockperf's burst probe over TCP)",
)
ENGINE = "fast"  # the compiled engine: the fit calls the twin a few dozen times
FITTED = (
    "local_path_floor_us",
    "local_path_median_us",
    "local_path_sigma",
    "local_wake_stall_prob",
    "local_wake_stall_mean_us",
    "local_wake_median_us",
    "local_wake_cold_us",
)


def _sigma_from(p50: float, p90: float) -> float:
    """Log-space sigma of a lognormal with this p50 and p90 (kept in [0.05, 2])."""
    return min(2.0, max(0.05, math.log(max(p90, p50 * 1.01) / p50) / Z90))


def tail_sigma(p50: float, p99: float) -> float:
    """Log-space sigma of a lognormal with this p50 and p99 (at least 0.05): the spread of a
    wake-up's latency, from the timer's lateness or a wake-up probe."""
    return max(0.05, math.log(max(p99, p50 * 1.01) / p50) / Z99)


def gap_middles(gap_from_us: Sequence[float] | np.ndarray) -> np.ndarray:
    """The middle (us) of each idle-gap class that starts at ``gap_from_us`` and ends where the
    next starts (the last at twice its start): geometric, a quarter of the end for the first."""
    lo = np.asarray(gap_from_us, dtype=float)
    hi = np.append(lo[1:], lo[-1] * 2)
    return np.asarray(np.sqrt(np.maximum(lo, hi / 4) * hi))


def fit_cold_start(
    by_gap: Mapping[str, list[float]], statistic: str = "p50_us", max_gap_us: float = math.inf
) -> tuple[float, float, float]:
    """``(warm_us, cold_us, idle_us)`` of ``work(g) = warm + cold * (1 - exp(-g / idle))``.

    Weighted least squares (weights: square root of each class's count) on each idle-gap
    class's ``statistic`` (its median work, or ``mean_us``); a gap class is represented by its
    geometric middle. Only classes that end by ``max_gap_us`` count (a longer sleep than the
    load leaves: a stall's or a hiccup's, whose few reads weigh on the means).
    """
    from scipy.optimize import least_squares

    lo = np.asarray(by_gap["gap_from_us"], dtype=float)
    count = np.asarray(by_gap["count"], dtype=float)
    work = np.asarray(by_gap[statistic], dtype=float)
    hi = np.append(lo[1:], lo[-1] * 2)
    mid = gap_middles(lo)
    keep = (count >= 5) & (hi <= max_gap_us)
    if keep.sum() < 3:
        return float(np.average(work[count > 0], weights=count[count > 0])), 0.0, 1.0
    g, w, y = mid[keep], np.sqrt(count[keep]), work[keep]

    def residuals(x: np.ndarray) -> np.ndarray:
        return np.asarray(w * (x[0] + x[1] * (1 - np.exp(-g / x[2])) - y))

    x0 = np.array([y.min(), max(y.max() - y.min(), 0.1), float(np.median(g))])
    fit = least_squares(residuals, x0, bounds=([0.0, 0.0, 1.0], [np.inf, np.inf, 1e5]))
    return float(fit.x[0]), float(fit.x[1]), float(fit.x[2])


# A batch-size class enters the fit with at least this many batches.
MIN_CLASS_BATCHES = 5


def _sizes(by_batch: Mapping[str, list[float]]) -> int:
    """How many batch-size classes hold enough batches to fit on (:func:`fit_batching`)."""
    n = np.asarray(by_batch["batch_mean"], dtype=float)
    return len(np.unique(n[np.asarray(by_batch["count"], dtype=float) >= MIN_CLASS_BATCHES]))


def fit_batching(by_batch: Mapping[str, list[float]]) -> tuple[float, float]:
    """``(per_batch_us, marginal_us)`` of work per event ``= marginal + per_batch / n``.

    Weighted least squares (weights: events in each batch-size class) on the class means, both
    terms kept >= 0; ``n`` is the class's mean batch size. With batches of one size only, the
    whole work is taken as per-batch (no marginal can be told apart); with none, ``(0, 0)``.
    """
    n = np.asarray(by_batch["batch_mean"], dtype=float)
    count = np.asarray(by_batch["count"], dtype=float)
    work = np.asarray(by_batch["mean_us"], dtype=float)
    keep = count >= MIN_CLASS_BATCHES
    if not (count > 0).any():
        return 0.0, 0.0  # nothing measured
    if _sizes(by_batch) < 2:
        return float(np.average(work[count > 0], weights=count[count > 0])), 0.0
    x = np.column_stack([1.0 / n[keep], np.ones(int(keep.sum()))])
    w = np.sqrt(count[keep])
    from scipy.optimize import nnls

    (per_batch, marginal), _ = nnls(x * w[:, None], work[keep] * w)
    return float(per_batch), float(marginal)


def batch_split(
    summary: LoadSummary, probe: LoadSummary | None, who: str
) -> tuple[float, float, str]:
    """A process's work per event split into ``(per_batch_us, marginal_us, what it was fit on)``.

    Warm batches only (after an idle gap < 50 us): a batch after a long sleep is slower per
    event for its cold start, which is counted apart (work by idle gap). The burst probe's warm
    batches when they span two sizes or more; else the probe's every batch gives the marginal
    (a batch's cold start is per batch, so it stays out of ``b``), and the per-batch part is the
    run's own single-event warm work less it; without a probe, the run's own warm batches.
    """
    own_a, own_b = fit_batching(summary.work_by_batch_warm[who])
    if probe is None:
        return own_a, own_b, "the warm batches of the run"
    if _sizes(probe.work_by_batch_warm[who]) >= 2:
        a, b = fit_batching(probe.work_by_batch_warm[who])
        return a, b, "the warm batches of the burst probe"
    if _sizes(probe.work_by_batch[who]) < 2:
        return own_a, own_b, "the warm batches of the run (the burst probe's are of one size)"
    _, b = fit_batching(probe.work_by_batch[who])
    return (
        max(0.0, own_a + own_b - b),
        b,
        "the burst probe's batches (b; a: the run's warm work per event less b)",
    )


def _cpu_us_per_msg(summary: LoadSummary, process: str, where: str) -> float:
    value = summary.cpu_us_per_msg(process)
    if value is None:
        raise MeasurementError(
            f"{where}: {process}_cpu_us_per_msg is null (the process's CPU times could not be "
            "read): the fit needs it"
        )
    return float(value)


def wake_cold_start(summary: LoadSummary, who: str, where: str) -> dict[str, Parameter]:
    """A wake-up's whole CPU's cold start by the host's idle gap before its busy period
    (``{name}_wake_cold_us``, ``{name}_wake_idle_us``: :func:`twin.components.loopback.
    wake_cpu_us`): the mean CPU by gap class of the run's ``cpu_by_host_gap`` (the client's
    thread CPU a busy wake-up, the gateway's a read), :func:`fit_cold_start`. Without the table
    (a run recorded before it) or with fewer than three classes of five: none, the wake-up's
    CPU stays what the calibration rate measured at every rate."""
    name = f"local_{who}_work"
    table = summary.cpu_by_host_gap.get(who)
    if table is None or sum(c >= 5 for c in table["count"]) < 3:
        why = f"measurement: {where} has no CPU by the host's idle gap (no cold start)"
        return {
            f"{name}_wake_cold_us": Parameter(0.0, why),
            f"{name}_wake_idle_us": Parameter(1.0, why),
        }
    _, cold, idle = fit_cold_start(table, "mean_us")
    src = (
        f"fit: {who} CPU a {'read' if who == 'gateway' else 'wake-up'} by the host's idle gap "
        f"before its busy period, {where} (least squares on class means)"
    )
    return {
        f"{name}_wake_cold_us": Parameter(cold, src, fitted=True),
        f"{name}_wake_idle_us": Parameter(idle, src, fitted=True),
    }


def wake_cpu_left(
    demand_us: float, marginal_us: float, events: float, rate: float
) -> tuple[float, float]:
    """A wake-up's CPU ``c`` (us) and the utilization ``rho`` that make the model's CPU demand
    a message at ``rate`` (msg/s), ``e (b + (1 - rho) c)`` (:func:`twin.components.loopback.
    utilization`: ``e`` events of marginal work ``b``, the ``1 - rho`` of them that find the
    thread asleep waking it), the measured ``demand_us``; ``rho`` capped at 0.99."""
    rho = min(0.99, rate * 1e-6 * demand_us)
    return max(0.0, (demand_us - marginal_us * events) / (events * (1 - rho))), rho


def background(summary: LoadSummary, demand: Mapping[str, float], src: str) -> Parameter:
    """The host's background (``local_background_threads``, vCPUs kept busy by threads other
    than the two processes): its busy vCPUs over the run (``/proc/stat``: ``busy_pct`` of its
    ``cpus``) less the two processes' own CPU (``demand``, us a message, schedstat, at the
    run's rate); never below zero.

    Not the runnable threads the client samples (``runnable_mean``): it samples at the end of a
    pass of its loop, when its send has just woken the gateway or the gateway still finishes
    the pass that wrote the reply it handled, so the gateway is in nearly every sample at a low
    rate whatever its share of the CPU (docs/design-notes.md, "The host's background was the
    gateway the client woke")."""
    rate = float(summary.conditions.rate_msgs_per_s)
    cpus = float(summary.conditions.cpus)
    host = cpus * float(summary.host.get("busy_pct") or 0.0) / 100.0
    own = rate * 1e-6 * (demand["client"] + demand["gateway"])
    return Parameter(
        max(0.0, host - own),
        f"{src} (the host's busy vCPUs {host:.3f} of {cpus:g}, /proc/stat, less the two "
        f"processes' own {own:.3f}, schedstat)",
    )


def measured_parameters(
    summary: LoadSummary,
    where: str,
    probe: LoadSummary | None = None,
    read: Parameter | None = None,
) -> dict[str, Parameter]:
    """Per-message work, wake-ups, background and the threads' wake-up latency of a run.

    ``probe`` is the calibration rate's burst probe (``twin testbed campaign``: the same rate
    in groups of orders), whose warm multi-event batches give the marginal cost per event; the
    calibration run's own batches (few, mostly backlogs after a stall) are used without it.
    ``read``: the gateway's system calls per read of a connection, measured elsewhere
    (``local_gateway_work_read_us``); at the calibration rate each wake-up reads its one
    connection once, so they leave its bookkeeping after a wake-up (``linger``).
    """
    src = f"measurement: {where}"
    send, recv, gw = (
        summary.client_send_us,
        summary.client_recv_us,
        summary.gateway_service_us,
    )
    # The spread of each process's work: its in-process timings (per round trip the client
    # writes one order for two messages and handles one reply).
    client_sigma = _sigma_from(send["p50"] / 2 + recv["p50"], send["p90"] / 2 + recv["p90"])
    gw_sigma = _sigma_from(gw["p50"], gw["p90"])
    rate = float(summary.conditions.rate_msgs_per_s)
    # Service demand per message answered: on-CPU time (schedstat).
    demand = {who: _cpu_us_per_msg(summary, who, where) for who in ("client", "gateway")}
    lag = summary.send_lag_us
    lag_sigma = tail_sigma(lag["p50"], lag["p99"])
    cpus = float(summary.conditions.cpus)
    gap_src = f"fit: work by idle gap of {where} (least squares on class medians)"
    params: dict[str, Parameter] = {}
    for who in ("client", "gateway"):
        name = f"local_{who}_work"
        events = EVENTS_PER_MSG[name]
        _, cold, idle = fit_cold_start(summary.work_by_idle_gap[who])
        params[f"{name}_cold_us"] = Parameter(cold, gap_src, fitted=True)
        params[f"{name}_idle_us"] = Parameter(idle, gap_src, fitted=True)
        params.update(wake_cold_start(summary, who, where))
        per_batch_us, marginal_us, batch_where = batch_split(summary, probe, who)
        marginal_us = min(marginal_us, demand[who] / events)
        batch_src = (
            f"fit: work per event ({'thread CPU' if who == 'client' else 'gateway_ns'}) by "
            f"events per wake-up of {batch_where} at {where}, b + a / n least squares"
        )
        params[f"{name}_marginal_us"] = Parameter(marginal_us, f"{batch_src} (b)", fitted=True)
        params[f"{name}_wake_us"] = Parameter(per_batch_us, f"{batch_src} (a)", fitted=True)
        # A wake-up's whole CPU (system calls, epoll and work off the round trip's path
        # included) is what is left of the demand.
        wake_cpu_us, rho = wake_cpu_left(demand[who], marginal_us, events, rate)
        params[f"{name}_wake_cpu_us"] = Parameter(
            wake_cpu_us,
            f"{src} ({who} CPU per message {demand[who]:.1f} us, less {events:g} x the marginal "
            f"{marginal_us:.1f} us, over {events * (1 - rho):.3f} wake-ups per message)",
        )
        # What a wake-up costs the thread beyond the work on the message's path (its handlers'
        # per-wake-up part and cold start, at the calibration rate's mean idle gap): system
        # calls, bookkeeping and the return to its wait, after the message has left.
        cold_mean = cold / (1.0 + events * rate * 1e-6 * idle)
        read_us = read.value if read is not None and who == "gateway" else 0.0
        params[f"{name}_linger_us"] = Parameter(
            max(0.0, wake_cpu_us - per_batch_us - cold_mean - read_us),
            f"{src} (CPU per wake-up {wake_cpu_us:.1f} us less the handlers' part on the path "
            f"{per_batch_us:.1f} us and their mean cold start {cold_mean:.1f} us"
            + (f", less a read's system calls {read_us:.1f} us)" if read_us else ")"),
        )
    params["local_gateway_work_read_us"] = read if read is not None else NO_READ_CALLS
    return {
        **params,
        "local_calibration_rate_msgs_per_s": Parameter(rate, f"{src} (conditions)"),
        "local_client_work_sigma": Parameter(client_sigma, f"{src} (client p90 over p50)"),
        "local_gateway_work_sigma": Parameter(gw_sigma, f"{src} (gateway_ns p90 over p50)"),
        "local_host_cores": Parameter(cpus, f"{src} (conditions.cpus)"),
        "local_background_threads": background(summary, demand, src),
        "local_wake_floor_us": Parameter(0.0, "definition: latency above the event"),
        "local_wake_sigma": Parameter(
            lag_sigma, f"{src} (the timer's wake-up lateness, send lag p99 over p50)"
        ),
    }


def fitted_profile(
    measured: Mapping[str, Parameter],
    x: Sequence[float] | np.ndarray,
    shape: int,
    source: str = "fit",
    fitted: bool = False,
) -> Profile:
    """The local profile of a fit: the ``measured`` parameters, the :data:`FITTED` ones at ``x``
    with stall shape ``shape``, no veth, the two processes on a vCPU each at every rate
    (:data:`NO_COLOCATION`), no halt time (:data:`NO_HALT`), KVM's halt polling at its defaults
    (:data:`KVM_DEFAULT_POLLING`) and no hiccups (:data:`NO_HICCUPS`)."""
    params = {k: Parameter(float(v), source, fitted=fitted) for k, v in zip(FITTED, x, strict=True)}
    params["local_wake_stall_shape"] = Parameter(
        float(shape),
        f"{source} (the stall shape, {STALL_SHAPES[shape]}, that fits better)",
        fitted=fitted,
    )
    params["local_veth_us"] = Parameter(
        0.0, "assumption: veth adds nothing over loopback until a veth run is fitted"
    )
    return make_profile(
        {
            "local_balance_imbalance_pct": NO_COLOCATION,
            **NO_HALT,
            **KVM_DEFAULT_POLLING,
            **NO_HICCUPS,
            **NO_SOCKET_WAKE,
            # A campaign's client writes from its event loop; were its sender to spin, its send
            # is the probe's (TCP, as the testbed's).
            "local_sender_send_us": send_cost(Transport.TCP),
            **measured,
            **params,
        }
    )


def make_profile(params: Mapping[str, Parameter], name: str = "local") -> Profile:
    """An in-memory profile of the local scenario family."""
    full = {k: Parameter(v, s) for k, (v, s) in STRUCTURAL.items()}
    full.update(params)
    return Profile(name=name, params=MappingProxyType(full), meta=MappingProxyType({}))


def simulate(scenario: Scenario, profile: Profile, rate: float, duration_s: float) -> RunResult:
    """The twin's answer for the scenario at ``rate`` (engine :data:`ENGINE`)."""
    s = scenario.with_fields({"workload.rate_msgs_per_s": rate, "workload.duration_s": duration_s})
    return run_prepared(prepare(s, profile), ENGINE)


# What the fit matches, as (kind, percentile): the order and cancel round trips apart (an order
# wakes sleeping threads, its cancel mostly finds them awake; that difference is what tells the
# wake-up from the path) and the pooled far tail.
FIT_TARGETS = (
    ("order", "p50"),
    ("order", "p90"),
    ("order", "p99"),
    ("cancel", "p50"),
    ("cancel", "p90"),
    ("cancel", "p99"),
    ("all", "p99_9"),
)
# Weights of their log residuals: p50 and p99 are what the prediction is judged on.
FIT_WEIGHTS = np.array([2.0, 1.0, 2.0, 2.0, 1.0, 2.0, 0.5])
_SUMMARY_KEY = {"order": "order_rtt_us", "cancel": "cancel_rtt_us", "all": "rtt_us"}


def _target_name(kind: str, pct: str) -> str:
    return pct if kind == "all" else f"{kind}_{pct}"


def fit_local(
    scenario: Scenario,
    summary: LoadSummary,
    where: str,
    *,
    probe: LoadSummary | None = None,
    duration_s: float = 10.0,
) -> tuple[Profile, dict[str, float]]:
    """Fit the kernel path and the threads' wake-up latency to one run.

    Returns the profile and the fit's log residuals. ``probe`` is the run's burst probe, if
    measured (see :func:`measured_parameters`). Six parameters (the path body's median and
    sigma, its floor held at zero; the probability and mean of a stall met by a thread waking
    after a long sleep; the wake-up latency's median when warm and its cold part, which grows
    with the idle time like the work's cold start) against the log of the run's percentiles
    :data:`FIT_TARGETS`, weighted by :data:`FIT_WEIGHTS`, for each stall shape
    (:data:`twin.components.loopback.STALL_SHAPES`); the shape that fits the run better is kept.
    """
    shapes = range(len(STALL_SHAPES))
    fits = [_fit_path(scenario, summary, where, shape, duration_s, probe) for shape in shapes]
    best = min(fits, key=lambda f: f[2])
    return best[0], best[1]


def _fit_path(
    scenario: Scenario,
    summary: LoadSummary,
    where: str,
    shape: int,
    duration_s: float,
    probe: LoadSummary | None,
) -> tuple[Profile, dict[str, float], float]:
    """:func:`fit_local` for one stall shape: the profile, its residuals and its cost."""
    from scipy.optimize import minimize

    measured = measured_parameters(summary, where, probe)
    target = np.log([getattr(summary, _SUMMARY_KEY[kind])[p] for kind, p in FIT_TARGETS])
    rate = float(summary.conditions.rate_msgs_per_s)

    def profile_for(x: np.ndarray, source: str = "fit", fitted: bool = False) -> Profile:
        return fitted_profile(measured, x, shape, source, fitted)

    def residuals(x: np.ndarray) -> np.ndarray:
        r = simulate(scenario, profile_for(x), rate, duration_s)
        if not r.stable:
            return np.full(len(FIT_TARGETS), 10.0)
        kinds = {"all": r.rtt_us, **r.rtt_by_kind_us}
        got = np.log([kinds[kind][p] for kind, p in FIT_TARGETS])
        return np.asarray(FIT_WEIGHTS * (got - target))

    p50 = float(summary.rtt_us["p50"])
    p99 = float(summary.rtt_us["p99"])
    lo = np.array([0.1, 0.05, 1e-4, 1.0, 0.1, 0.01])
    hi = np.array([10 * p50, 3.0, 1.0, 20 * p99, 10 * p50, 10 * p50])

    def cost(z: np.ndarray) -> float:
        # Searched in log space, the floor held at zero (the body's median carries the floor).
        x = np.clip(np.exp(z), lo, hi)
        return float(np.sum(residuals(np.concatenate([[0.0], x])) ** 2))

    # The simulated percentiles move in steps, so the search is derivative-free (Nelder-Mead),
    # started from the best point of a coarse grid spanning the plausible range.
    grid = [
        np.log([m * p50, sig, q, t * p99, w * p50, c * p50])
        for m in (0.05, 0.2)
        for sig in (0.5, 1.0)
        for q in (0.01, 0.1)
        for t in (0.5, 1.5)
        for w in (0.05, 0.2)
        for c in (0.05, 0.5)
    ]
    z0 = min(grid, key=cost)
    fit = minimize(cost, z0, method="Nelder-Mead", options={"maxfev": 400, "xatol": 0.01})
    x = np.concatenate([[0.0], np.clip(np.exp(fit.x), lo, hi)])
    src = f"fit: log order/cancel p50/p90/p99 and p99.9 of {where} (Nelder-Mead)"
    got = residuals(x) / FIT_WEIGHTS
    errors = {_target_name(*t): float(v) for t, v in zip(FIT_TARGETS, got, strict=True)}
    return profile_for(x, src, fitted=True), errors, float(fit.fun)


def fit_veth(
    scenario: Scenario,
    profile: Profile,
    summary: LoadSummary,
    where: str,
    *,
    duration_s: float = 10.0,
) -> tuple[Profile, dict[str, float]]:
    """Fit ``local_veth_us`` (per direction) to one veth run, everything else as in ``profile``.

    One parameter against the run's p50 (bounded scalar search): veth adds a fixed time to
    the body of the distribution; its tail is the host's (stalls), which the loopback fit holds.
    Residuals of p50/p90/p99 (log) are returned.
    """
    from scipy.optimize import minimize_scalar

    target = np.log([summary.rtt_us[k] for k in ("p50", "p90", "p99")])
    rate = float(summary.conditions.rate_msgs_per_s)
    params = dict(profile.params)

    def residuals(veth_us: float) -> np.ndarray:
        params["local_veth_us"] = Parameter(float(veth_us), "fit")
        r = simulate(scenario, make_profile(params), rate, duration_s)
        return np.asarray(np.log([r.rtt_us[k] for k in ("p50", "p90", "p99")]) - target)

    p50 = float(summary.rtt_us["p50"])
    best = minimize_scalar(
        lambda v: float(residuals(v)[0] ** 2), bounds=(0.0, p50), method="bounded"
    )
    veth = float(best.x)
    errors = dict(zip(("p50", "p90", "p99"), (float(v) for v in residuals(veth)), strict=True))
    params["local_veth_us"] = Parameter(
        veth, f"fit: p50 of {where} (per direction, over loopback)", fitted=True
    )
    return make_profile(params), errors


# Comment lines at the top of the local profile (``twin/profiles/local.toml``).
LOCAL_PROFILE_HEADER = (
    "Local testbed profile: written by calibration.testbed.fit.fit_local (do not hand-edit\n"
    "fitted values; re-run calibration/notebooks/04_local_testbed.ipynb)."
)


def completed(profile: Profile, shipped: Profile) -> Profile:
    """The fitted profile with the ``shipped`` one's parameters a campaign does not measure
    (the relay's, the feed pipeline's), their values and sources kept."""
    params = {k: v for k, v in shipped.params.items() if k not in profile.params}
    return replace(profile, params=MappingProxyType({**params, **profile.params}))


def with_description(profile: Profile, description: str) -> Profile:
    """The fitted local profile with the metadata its file carries."""
    meta = {"description": description, "status": "fitted on the lowest-rate testbed run only"}
    return replace(profile, name="local", meta=MappingProxyType(meta))


KINDS = ("order", "cancel")


def kind_medians(root: Path, row: Mapping[str, Any]) -> dict[str, dict[str, float]]:
    """The order's and the cancel's p50 and p99 at one campaign rate: medians over its runs."""
    summaries = [read_summary(d) for d in run_dirs(root, dict(row))]
    return {
        kind: {
            k: float(np.median([getattr(s, f"{kind}_rtt_us")[k] for s in summaries]))
            for k in ("p50", "p99")
        }
        for kind in KINDS
    }


def prediction_table(
    scenario: Scenario,
    profile: Profile,
    rows: list[Mapping[str, Any]],
    duration_s: float = 10.0,
    root: Path | None = None,
) -> list[dict[str, Any]]:
    """Predicted vs measured p50/p90/p99 for every campaign row (errors relative, %).

    With the campaign's directory ``root``, each entry also has the order's and the cancel's
    p50 and p99, measured (medians over the rate's runs) and predicted.
    """
    out = []
    for row in rows:
        rate = float(row["rate_msgs_per_s"])
        r = simulate(scenario, profile, rate, duration_s)
        entry: dict[str, Any] = {"rate_msgs_per_s": rate, "stable": r.stable}
        if root is not None:
            measured_kinds = kind_medians(root, row)
            for kind in KINDS:
                for k in ("p50", "p99"):
                    entry[f"measured_{kind}_{k}_us"] = measured_kinds[kind][k]
                    entry[f"predicted_{kind}_{k}_us"] = (
                        r.rtt_by_kind_us[kind][k] if r.stable else None
                    )
        for k in ("p50", "p90", "p99"):
            measured = row.get(f"{k}_us")
            predicted = r.rtt_us.get(k) if r.stable else None
            entry[f"measured_{k}_us"] = measured
            entry[f"predicted_{k}_us"] = predicted
            entry[f"error_{k}_pct"] = (
                100.0 * (predicted - measured) / measured
                if predicted is not None and measured
                else None
            )
        out.append(entry)
    return out


def max_utilization(profile: Profile, rate: float) -> float:
    """The busiest process's offered utilization at ``rate`` (operational: measured demand).

    On one machine it depends on the profile alone, not on a scenario's placement.
    """
    return max(process_utilization(profile, rate).values())


def predicted_saturation(profile: Profile) -> float:
    """The rate at which the busiest process's offered utilization reaches 1 (msg/s).

    Found by bisection: the shared cores slow each process as the rate rises, so the
    utilization is not linear in the rate.
    """
    rate = rate_at_full_load(lambda r: max_utilization(profile, r))
    return math.inf if rate is None else rate


def calibration_summary(
    root: Path, rows: list[dict[str, Any]], where: str | None = None
) -> tuple[LoadSummary, str]:
    """The lowest rate's summary (the median over its repeats) and how to name it."""
    row = min(rows, key=lambda r: float(r["rate_msgs_per_s"]))
    dirs = run_dirs(root, row)
    name = f"{where or root}/rate_{int(row['rate_msgs_per_s'])}"
    if len(dirs) == 1:
        return read_summary(dirs[0]), f"{name}/summary.json"
    merged = median_summary([read_summary(d) for d in dirs])
    return merged, f"{name} (median of {len(dirs)} runs' summaries)"


def burst_probe(root: Path, campaign: Mapping[str, Any]) -> LoadSummary | None:
    """The summary of the campaign's burst probe at its lowest rate (None if not measured)."""
    entry = campaign.get("burst_probe") or {}
    if "dir" not in entry:
        return None
    return read_summary(root / entry["dir"])


def predict_campaign(
    scenario: Scenario,
    campaign_dir: str | Path,
    where: str | None = None,
    profile: Profile | None = None,
) -> dict[str, Any]:
    """Calibrate on a campaign's lowest rate, predict every rate and the saturation rate.

    ``where`` names the campaign in the profile's provenance (default: the directory). With a
    ``profile`` (one this function fitted before, such as ``twin/profiles/local.toml``)
    nothing is fitted: it predicts with that profile, and the residuals are None. Returns the
    profile, the fit's residuals, the prediction table and the saturation rates.
    """
    root = Path(campaign_dir)
    campaign = read_json(root / "campaign.json")
    rows = campaign["rows"]
    summary, label = calibration_summary(root, rows, where)
    lowest = int(summary.conditions.rate_msgs_per_s)
    residuals: dict[str, float] | None = None
    if profile is None:
        probe = burst_probe(root, campaign)
        profile, residuals = fit_local(scenario, summary, label, probe=probe)
    return {
        "profile": profile,
        "calibration_rate_msgs_per_s": float(lowest),
        "fit_residuals_log": residuals,
        "table": prediction_table(scenario, profile, rows, root=root),
        "measured_saturation_msgs_per_s": campaign["saturation_msgs_per_s"],
        # Whether any rate tried saturated: if none did, the "saturation" above is only the
        # highest rate tried (a lower bound), not a saturation measured.
        "saturation_reached": any(bool(r.get("saturated")) for r in rows),
        "predicted_saturation_msgs_per_s": predicted_saturation(profile),
    }


def format_kind_table(table: list[Mapping[str, Any]]) -> str:
    """The order's and the cancel's p50 and p99, measured / predicted, per rate (us)."""

    def pair(t: Mapping[str, Any], key: str) -> str:
        predicted = t[f"predicted_{key}_us"]
        got = "-" if predicted is None else f"{predicted:.0f}"
        return f"{t[f'measured_{key}_us']:.0f} / {got}".rjust(13)

    keys = [f"{kind}_{k}" for kind in KINDS for k in ("p50", "p99")]
    head = f"{'rate':>7s}" + "".join(f" {k.replace('_', ' ') + ' m/p':>13s}" for k in keys)
    lines = [head]
    for t in table:
        if "measured_order_p50_us" in t:
            lines.append(f"{t['rate_msgs_per_s']:7.0f}" + "".join(f" {pair(t, k)}" for k in keys))
    return "\n".join(lines)


def format_table(table: list[Mapping[str, Any]]) -> str:
    """The prediction table as fixed-width text (us and relative error)."""

    def num(v: float | None) -> str:
        return f"{'-':>9s}" if v is None else f"{v:9.0f}"

    def pct(v: float | None) -> str:
        return f"{'-':>6s}" if v is None else f"{v:+5.0f}%"

    head = f"{'rate':>7s}" + "".join(
        f" {'meas ' + k:>9s} {'pred ' + k:>9s} {'err':>6s}" for k in ("p50", "p90", "p99")
    )
    lines = [head]
    for t in table:
        cells = "".join(
            f" {num(t[f'measured_{k}_us'])} {num(t[f'predicted_{k}_us'])}"
            f" {pct(t[f'error_{k}_pct'])}"
            for k in ("p50", "p90", "p99")
        )
        lines.append(f"{t['rate_msgs_per_s']:7.0f}{cells}")
    return "\n".join(lines)
