"""The occasional cost (paid with some probability, else nothing) in both engines.

As a service it makes an M/G/1 queue whose mean sojourn Pollaczek-Khinchine gives exactly; as a
plain delay its two values and their frequencies can be read off the round trips.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from tests.twin.fast.test_fast_theory import covering_interval, poisson_load
from tests.twin.fast.test_rng import table_sample
from twin import des
from twin.dists import Occasional
from twin.fast import _quantile
from twin.fast import engine as fast
from twin.histogram import to_hdr
from twin.path import Hop, Station, compile_path
from twin.replicate import run_replications

COST_US, PROBABILITY = 2.0, 0.5


def pollaczek_khinchine_sojourn_mean_us(rho: float) -> float:
    """M/G/1 with an occasional service: E[S] = c p, E[S^2] = c^2 p."""
    service_mean = COST_US * PROBABILITY
    lam = rho / service_mean
    return service_mean + lam * COST_US**2 * PROBABILITY / (2 * (1 - rho))


def occasional_queue() -> list[Hop]:
    return [
        Hop("work", "test", service=Occasional(COST_US, PROBABILITY), station=Station("cpu", 1))
    ]


@pytest.mark.parametrize("rho", [0.5, 0.9])
def test_fast_occasional_service_matches_pollaczek_khinchine(rho: float) -> None:
    expected = pollaczek_khinchine_sojourn_mean_us(rho)
    load = poisson_load(rho / (COST_US * PROBABILITY), 400_000, seed=13)
    result = run_replications(compile_path(occasional_queue()), load, 10, engine="fast")
    got = result.estimates["mean"]
    assert got == pytest.approx(expected, rel=0.01)
    lo, hi = covering_interval(got, result.ci95["mean"])
    assert lo <= expected <= hi, (lo, expected, hi)


def test_des_occasional_service_matches_pollaczek_khinchine() -> None:
    expected = pollaczek_khinchine_sojourn_mean_us(0.5)
    load = poisson_load(0.5 / (COST_US * PROBABILITY), 100_000, seed=3)
    out = des.simulate(compile_path(occasional_queue()), load)
    assert out.rtt_sum_us / out.messages == pytest.approx(expected, rel=0.03)


def test_both_engines_pay_an_occasional_delay_as_often_as_asked() -> None:
    """Two occasional delays of 4 us on a 10 us floor, no queue: round trips are 10, 14 or
    18 us with probabilities 1/4, 1/2, 1/4 in both engines."""
    hops = [
        Hop("floor", "test", fixed_us=10.0),
        Hop("first", "test", delay=Occasional(4.0, 0.5)),
        Hop("second", "test", delay=Occasional(4.0, 0.5)),
    ]
    path = compile_path(hops)
    load = replace(poisson_load(0.01, 40_000, seed=5), warmup_us=0.0)
    for simulate in (fast.simulate, des.simulate):
        out = simulate(path, load)
        hist = to_hdr(out.counts)
        values = {
            round(v.value_iterated_to / 1e3): v.count_added_in_this_iter_step
            for v in hist.get_recorded_iterator()
        }
        assert set(values) == {10, 14, 18}, values
        shares = np.array([values[10], values[14], values[18]]) / out.messages
        np.testing.assert_allclose(shares, [0.25, 0.5, 0.25], atol=5 * (0.25 / out.messages) ** 0.5)


def test_the_table_of_an_even_chance_is_exact() -> None:
    """At probability 1/2 the step falls between the table's halves: draws are exactly 0 or the
    cost, half each, and the lerp never leaves the two values."""
    assert _quantile.interpolation_error(Occasional.code, 3.0, 0.5, 0.0) == 0.0
    x = table_sample(Occasional.code, (3.0, 0.5, 0.0))
    assert set(np.unique(x)) == {0.0, 3.0}
    assert float((x == 3.0).mean()) == pytest.approx(0.5, abs=5 * (0.25 / len(x)) ** 0.5)


def test_another_probability_spreads_at_most_one_grid_step() -> None:
    x = table_sample(Occasional.code, (3.0, 0.3, 0.0))
    between = float(((x > 0.0) & (x < 3.0)).mean())
    assert between <= 1 / 128 + 5 * (1 / 128 / len(x)) ** 0.5
    assert float((x >= 1.5).mean()) == pytest.approx(0.3, abs=1 / 128)


@pytest.mark.parametrize(
    ("cost", "probability", "message"),
    [
        (-1.0, 0.5, "Negative occasional cost"),
        (1.0, 0.0, "probability must be in"),
        (1.0, 1.5, "probability must be in"),
    ],
)
def test_bad_occasional_costs_are_refused(cost: float, probability: float, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Occasional(cost, probability)


def test_moments_and_samples_agree() -> None:
    dist = Occasional(COST_US, 0.25)
    x = dist.sample(np.random.default_rng(1), 400_000)
    assert dist.mean == pytest.approx(0.5)
    assert dist.variance == pytest.approx(4 * 0.25 * 0.75)
    assert x.mean() == pytest.approx(dist.mean, rel=0.01)
    assert x.var() == pytest.approx(dist.variance, rel=0.01)
    assert set(np.unique(x)) == {0.0, COST_US}
