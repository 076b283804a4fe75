"""Analytic sojourn-time results that the engines are checked against."""

from __future__ import annotations

import math

import numpy as np
from scipy.optimize import brentq


def mm1_sojourn_mean_us(arrival_per_us: float, service_mean_us: float) -> float:
    """M/M/1: the sojourn is exponential with rate mu - lambda."""
    return 1.0 / (1.0 / service_mean_us - arrival_per_us)


def mm1_sojourn_quantile_us(p: float, arrival_per_us: float, service_mean_us: float) -> float:
    return -math.log(1.0 - p) * mm1_sojourn_mean_us(arrival_per_us, service_mean_us)


def md1_sojourn_mean_us(arrival_per_us: float, service_us: float) -> float:
    """M/D/1 (Pollaczek-Khinchine): D + rho D / (2 (1 - rho))."""
    rho = arrival_per_us * service_us
    return service_us + rho * service_us / (2 * (1 - rho))


def md1_wait_cdf(t_us: float, arrival_per_us: float, service_us: float) -> float:
    """Erlang's M/D/1 FIFO waiting-time distribution, P(W <= t)."""
    rho = arrival_per_us * service_us
    total = 0.0
    for k in range(int(math.floor(t_us / service_us)) + 1):
        x = arrival_per_us * (t_us - k * service_us)
        total += (-x) ** k / math.factorial(k) * math.exp(x)
    return (1 - rho) * total


def md1_sojourn_quantile_us(p: float, arrival_per_us: float, service_us: float) -> float:
    # The alternating series loses precision for very long waits; 40 services covers p99 for
    # utilizations up to about 0.9.
    wait = brentq(lambda t: md1_wait_cdf(t, arrival_per_us, service_us) - p, 0.0, 40 * service_us)
    return wait + service_us


def mg1_setup_sojourn_mean_us(
    arrival_per_us: float,
    service_mean_us: float,
    service_second_moment: float,
    setup_mean_us: float,
    setup_second_moment: float,
) -> float:
    """M/G/1 whose first customer of each busy period adds a setup (exceptional first service).

    ``E[T] = E[S] + lambda E[S^2] / (2 (1 - rho)) + (2 E[D] + lambda E[D^2]) / (2 (1 + lambda
    E[D]))`` (Welch 1964; Harchol-Balter, *Performance Modeling and Design of Computer Systems*,
    ch. 27, M/G/1 with setup), ``rho = lambda E[S]``: the setup is paid once per busy period.
    """
    lam = arrival_per_us
    rho = lam * service_mean_us
    wait = lam * service_second_moment / (2 * (1 - rho))
    setup = (2 * setup_mean_us + lam * setup_second_moment) / (2 * (1 + lam * setup_mean_us))
    return service_mean_us + wait + setup


def group_commit_sojourn_mean_us(
    arrival_per_us: float, batch_mean_us: float, batch_second_moment: float, batch_laplace: float
) -> float:
    """A one-server station taking everything waiting as one batch of drawn length ``B``
    (i.i.d., independent of the load), messages needing no service of their own (a log's group
    commit), Poisson arrivals at ``lambda``.

    A batch is followed at once by another when an arrival came during it (probability
    ``1 - q``, ``q = E[exp(-lambda B)]``), else by an idle time ``Exp(lambda)``; by Wald's
    identity a busy period lasts ``E[B] / q`` on average, so the server is busy a share
    ``u = (E[B] / q) / (E[B] / q + 1 / lambda)`` of the time. An arrival (PASTA) finds it busy
    with probability ``u``, waits out the batch in progress (mean residual
    ``E[B^2] / (2 E[B])``, again by Wald over a busy period's batches) and then its own batch:
    ``E[T] = E[B] + u E[B^2] / (2 E[B])``. Stable at every rate.
    """
    busy = batch_mean_us / batch_laplace
    u = busy / (busy + 1.0 / arrival_per_us)
    return batch_mean_us + u * batch_second_moment / (2 * batch_mean_us)


def preemptive_priority_sojourn_mean_us(
    arrival_per_us: float,
    service_mean_us: float,
    service_second_moment: float,
    high_per_us: float,
    high_mean_us: float,
    high_second_moment: float,
) -> float:
    """The low class of a preemptive-resume priority M/G/1 queue, the high class arriving at
    ``high_per_us`` with work ``H`` (a vCPU's hiccups, which queue among themselves):
    ``E[T] = E[S] / (1 - rho_h) + (lambda_h E[H^2] + lambda E[S^2]) / (2 (1 - rho_h)
    (1 - rho_h - rho))`` (Harchol-Balter, *Performance Modeling and Design of Computer
    Systems*, ch. 32, preemptive priority)."""
    rho_h = high_per_us * high_mean_us
    rho = arrival_per_us * service_mean_us
    second = high_per_us * high_second_moment + arrival_per_us * service_second_moment
    return service_mean_us / (1 - rho_h) + second / (2 * (1 - rho_h) * (1 - rho_h - rho))


def mm1_transient_number(
    p0: np.ndarray, arrival_per_us: float, service_per_us: float, times_us: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """M/M/1 with a constant rate from a start distribution ``p0`` (over 0 .. K-1 in system, K
    large enough that the mass at K-1 stays negligible): the mean number in system at each of
    ``times_us`` (increasing, from 0), and the distribution at the last of them.

    The Kolmogorov forward equations p' = p Q of the birth-death chain, solved by
    uniformisation: p(t) = sum_n Poisson(n; q t) p0 P^n, with P = I + Q / q and q = lambda + mu.
    """
    k = len(p0)
    q = arrival_per_us + service_per_us
    step = np.zeros((k, k))
    for i in range(k):
        up = arrival_per_us / q if i < k - 1 else 0.0
        down = service_per_us / q if i > 0 else 0.0
        if i < k - 1:
            step[i, i + 1] = up
        if i > 0:
            step[i, i - 1] = down
        step[i, i] = 1.0 - up - down
    means = np.empty(len(times_us))
    p = np.asarray(p0, dtype=np.float64)
    now = 0.0
    for j, t in enumerate(times_us):
        dt = float(t) - now
        if dt > 0:
            # Terms of Poisson(q dt) up to well past its mean, each p P^n accumulated.
            lam = q * dt
            n_terms = int(lam + 12.0 * math.sqrt(lam) + 30)
            term = p.copy()
            weight = math.exp(-lam)
            acc = weight * term
            for n in range(1, n_terms):
                term = term @ step
                weight *= lam / n
                acc += weight * term
            p = acc / acc.sum()
            now = float(t)
        means[j] = float(np.arange(k) @ p)
    return means, p
