"""The fast engine against queueing theory: M/M/1, M/M/c, M/D/1 and two M/M/1 in tandem.

Each case runs independent replications (:mod:`twin.replicate`) at utilization 0.5, 0.8 and 0.95
and checks the mean within 1%, the p99 within 3%, and that the 95% confidence interval from the
replications covers the analytic value. Run lengths grow with the relaxation time of the queue
(about ``1 / (1 - sqrt(rho))**2`` services), which is what makes the 0.95 cases expensive.

Coverage is asserted with the interval widened from 95% to 99.9% (same replications, Student-t
quantile ratio): the 12 cases make 24 coverage checks, and at 95% each a correct engine would
fail at least one of them about 70% of the time (it did, on a new random stream, at 0.95).
"""

from __future__ import annotations

import math
from decimal import Decimal, getcontext

import pytest
from scipy import stats
from scipy.optimize import brentq

from twin import dtypes
from twin.dists import Const, Exponential
from twin.load import Load
from twin.path import CompiledPath, Hop, Station, compile_path
from twin.replicate import run_replications

SERVICE_US = 1.0
REPLICATIONS = 10
# Messages per replication, by utilization: enough for a 1% mean at 0.95 with margin.
MESSAGES = {0.5: 4_000_000, 0.8: 24_000_000, 0.95: 160_000_000}
UTILIZATIONS = sorted(MESSAGES)


def poisson_load(arrival_per_us: float, messages: int, seed: int) -> Load:
    """Open-loop Poisson echo (one message per cycle) with a warm-up of many relaxation times."""
    return Load(
        loop=dtypes.LOOP_OPEN,
        arrivals=dtypes.ARRIVALS_POISSON,
        rate_msgs_per_s=arrival_per_us * 1e6,
        accounts=1,
        messages_per_cycle=1,
        duration_us=messages / arrival_per_us,
        warmup_us=20_000.0,
        seed=seed,
    )


def station_hop(name: str, service: Const | Exponential, servers: int = 1) -> Hop:
    return Hop(name, "test", service=service, station=Station(name, servers))


# --- analytic sojourn times (service mean 1 us) ---------------------------------------------


def erlang_c(servers: int, offered: float) -> float:
    """Probability of waiting in M/M/c (offered load a = lambda / mu)."""
    rho = offered / servers
    top = offered**servers / math.factorial(servers) / (1 - rho)
    bottom = sum(offered**k / math.factorial(k) for k in range(servers)) + top
    return top / bottom


def mmc_sojourn(servers: int, rho: float) -> tuple[float, float]:
    """Mean and p99 of the M/M/c FIFO sojourn: W = Wq + S, Wq = 0 or Exp(c mu - lambda)."""
    lam = rho * servers / SERVICE_US
    mu = 1 / SERVICE_US
    wait_prob = erlang_c(servers, lam / mu)
    theta = servers * mu - lam
    mean = wait_prob / theta + 1 / mu

    def tail(t: float) -> float:
        if abs(theta - mu) < 1e-12:
            both = (1 + mu * t) * math.exp(-mu * t)
        else:
            both = (theta * math.exp(-mu * t) - mu * math.exp(-theta * t)) / (theta - mu)
        return (1 - wait_prob) * math.exp(-mu * t) + wait_prob * both

    return mean, brentq(lambda t: tail(t) - 0.01, 0.0, 1e4)


def tandem_sojourn(rho: float) -> tuple[float, float]:
    """Two M/M/1 in series: independent Exp(mu - lambda) sojourns (Burke, Reich): Erlang-2."""
    rate = (1 - rho) / SERVICE_US
    x = brentq(lambda x: math.exp(-x) * (1 + x) - 0.01, 0.0, 100.0)
    return 2 / rate, x / rate


def md1_sojourn(rho: float) -> tuple[float, float]:
    """M/D/1: Pollaczek-Khinchine mean; p99 from Erlang's waiting-time distribution.

    ``P(W <= t) = (1 - rho) sum_{k <= t/D} (lambda (k D - t))**k / k! exp(-lambda (k D - t))``
    alternates with terms up to e**100 at high utilization, so it is summed in 80-digit decimals.
    """
    getcontext().prec = 80
    lam = Decimal(rho) / Decimal(SERVICE_US)
    d = Decimal(SERVICE_US)

    def cdf(t: float) -> float:
        td = Decimal(t)
        total = Decimal(0)
        factorial = Decimal(1)
        for k in range(int(t / SERVICE_US) + 1):
            if k:
                factorial *= k
            x = lam * (k * d - td)
            total += (x**k if k else Decimal(1)) / factorial * (-x).exp()
        return float((1 - Decimal(rho)) * total)

    mean = SERVICE_US + rho * SERVICE_US / (2 * (1 - rho))
    wait = brentq(lambda t: cdf(t) - 0.99, 0.0, 100 * SERVICE_US, xtol=1e-6)
    return mean, wait + SERVICE_US


CASES = {
    "M/M/1": (lambda: [station_hop("q", Exponential(SERVICE_US))], 1, lambda r: mmc_sojourn(1, r)),
    "M/M/4": (
        lambda: [station_hop("q", Exponential(SERVICE_US), servers=4)],
        4,
        lambda r: mmc_sojourn(4, r),
    ),
    "M/D/1": (lambda: [station_hop("q", Const(SERVICE_US))], 1, md1_sojourn),
    "M/M/1 tandem": (
        lambda: [
            station_hop("a", Exponential(SERVICE_US)),
            station_hop("b", Exponential(SERVICE_US)),
        ],
        1,
        tandem_sojourn,
    ),
}


@pytest.mark.slow
@pytest.mark.parametrize("rho", UTILIZATIONS)
@pytest.mark.parametrize("case", sorted(CASES))
def test_theory(case: str, rho: float) -> None:
    build, servers, theory = CASES[case]
    path: CompiledPath = compile_path(build())
    expected_mean, expected_p99 = theory(rho)
    load = poisson_load(rho * servers / SERVICE_US, MESSAGES[rho] // REPLICATIONS, seed=2024)
    result = run_replications(path, load, REPLICATIONS, engine="fast")
    mean, p99 = result.estimates["mean"], result.estimates["p99"]
    assert mean == pytest.approx(expected_mean, rel=0.01)
    assert p99 == pytest.approx(expected_p99, rel=0.03)
    lo, hi = covering_interval(result.estimates["mean"], result.ci95["mean"])
    assert lo <= expected_mean <= hi, (lo, expected_mean, hi)
    lo, hi = covering_interval(p99, result.ci95["p99"])
    # HDR buckets report a bucket's highest value: allow the 0.1% recording resolution.
    assert lo * 0.999 <= expected_p99 <= hi * 1.001, (lo, expected_p99, hi)


def covering_interval(estimate: float, ci95: tuple[float, float]) -> tuple[float, float]:
    """The 99.9% Student-t interval with the same centre and spread as a 95% one."""
    k = REPLICATIONS - 1
    widen = float(stats.t.ppf(0.9995, k) / stats.t.ppf(0.975, k))
    half = (ci95[1] - ci95[0]) / 2 * widen
    return estimate - half, estimate + half
