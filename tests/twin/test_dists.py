"""The distribution registry: each class encodes, decodes, draws and tabulates itself alike."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

from twin.dists import (
    REGISTRY,
    ZERO,
    BusyWait,
    Const,
    Dist,
    Empirical,
    Exponential,
    Occasional,
    ShiftedGamma,
    ShiftedLognormal,
    decode,
)
from twin.errors import ModelError
from twin.fast import _quantile

EXAMPLES: list[Dist] = [
    ZERO,
    Const(3.5),
    Exponential(2.0),
    Occasional(4.0, 0.25),
    BusyWait(3.0, 0.7),
    ShiftedLognormal(1.0, 2.0, 0.5),
    ShiftedGamma(0.5, 2.0, 1.5),
    Empirical((1.0, 2.0, 2.0, 7.0)),
]


def test_every_registered_class_has_an_example() -> None:
    assert {type(d) for d in EXAMPLES} == set(REGISTRY.values())
    assert sorted(REGISTRY) == sorted(d.code for d in EXAMPLES)


@pytest.mark.parametrize("dist", EXAMPLES, ids=lambda d: type(d).__name__)
def test_params_decode_to_the_same_distribution(dist: Dist) -> None:
    table = np.asarray(dist.samples_us) if isinstance(dist, Empirical) else None
    assert decode(dist.code, *dist.params(), table) == dist


@pytest.mark.parametrize("dist", EXAMPLES, ids=lambda d: type(d).__name__)
def test_scalar_draws_match_the_moments(dist: Dist) -> None:
    draw = dist.draw_function(np.random.default_rng(5))
    if draw is None:
        assert dist.is_zero
        return
    x = np.array([draw() for _ in range(40_000)])
    sd = np.sqrt(dist.variance)
    assert abs(x.mean() - dist.mean) <= 5 * sd / np.sqrt(len(x)) + 1e-12
    if sd > 0:
        assert x.std() == pytest.approx(sd, rel=0.05)


@pytest.mark.parametrize("dist", EXAMPLES[:-1], ids=lambda d: type(d).__name__)
def test_quantile_tables_match_the_moments(dist: Dist) -> None:
    """The fast engine's tables hold the same distribution: the mean of the table's draws by
    midpoint of each grid step, weighted by the step's probability, is the analytic mean."""
    table = _quantile.quantile_table(dist.code, *dist.params())
    mid = _quantile.quantile_table(dist.code, *dist.params(), sub_step=0.5)
    d = _quantile.distances()
    steps = np.abs(np.diff(d))  # probability of one step in one half
    half = _quantile.SIDE_LEN
    # d runs from 1/2 towards 0: the lower half descends, the upper half climbs.
    assert np.all(np.diff(table[:half]) <= 0) and np.all(np.diff(table[half:]) >= 0)
    mean = sum(float(np.sum(steps * mid[s * (half - 1) : (s + 1) * (half - 1)])) for s in (0, 1))
    assert mean == pytest.approx(dist.mean, rel=2e-3, abs=1e-9)


def test_empirical_has_no_quantile_table_and_needs_its_data() -> None:
    with pytest.raises(ModelError, match="resampled"):
        Empirical((1.0,)).quantiles(np.array([0.5]))
    with pytest.raises(ModelError, match="without its table"):
        decode(Empirical.code, 0.0, 0.0, 0.0)


def test_unknown_codes_and_taken_codes_are_refused() -> None:
    with pytest.raises(ModelError, match="unknown distribution code 99"):
        decode(99, 0.0, 0.0, 0.0)
    with pytest.raises(TypeError, match="Exponential"):

        @dataclass(frozen=True)
        class Clash(Dist):
            code = Exponential.code


def test_invalid_parameters_are_scenario_errors() -> None:
    with pytest.raises(ModelError):
        Exponential(-1.0)
    with pytest.raises(ValueError):  # ModelError is also a ValueError
        Occasional(1.0, 1.5)
