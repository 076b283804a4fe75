"""Distribution estimators: one shared contract test over every estimator, then recovery tests."""

from __future__ import annotations

import numpy as np
import pytest

from calibration import Measurement
from calibration.fit import (
    EmpiricalFit,
    LognormalMixtureFit,
    ShiftedGammaFit,
    ShiftedLognormalFit,
    fit_best,
)
from twin.dists import Dist

ESTIMATORS = [ShiftedLognormalFit, ShiftedGammaFit, LognormalMixtureFit, EmpiricalFit]


def lognormal_samples(n: int = 20_000, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return 5.0 + 3.0 * np.exp(0.5 * rng.standard_normal(n))


@pytest.mark.parametrize("cls", ESTIMATORS)
def test_estimator_contract(cls) -> None:
    est = cls()
    assert est.get_params()["method"] == "auto"
    assert not [k for k in vars(est) if k.endswith("_")], "init stores settings only"
    x = lognormal_samples()
    assert est.fit(x) is est
    assert est.method_ == "mle" and est.n_samples_ == x.size
    assert 0 <= est.ks_ < 0.05
    assert set(est.percentile_errors_) == {50.0, 90.0, 99.0, 99.9}
    assert isinstance(est.dist(), Dist)
    q = np.array([0.1, 0.5, 0.9])
    assert np.all(np.diff(est.ppf(q)) > 0)
    np.testing.assert_allclose(est.cdf(est.ppf(q)), q, atol=0.01)
    table = {50.0: 8.0, 90.0: 10.7, 99.0: 14.6}
    assert cls().fit(table).method_ == "quantiles"
    assert cls().fit(table).ks_ is None


@pytest.mark.parametrize("cls", ESTIMATORS)
def test_bad_inputs_are_refused(cls) -> None:
    with pytest.raises(ValueError, match="method"):
        cls(method="magic").fit(lognormal_samples(100))
    with pytest.raises(ValueError, match="samples"):
        cls().fit([1.0])
    with pytest.raises(ValueError, match=">= 0"):
        cls().fit([1.0, -2.0, 3.0])
    with pytest.raises(ValueError, match="needs samples"):
        cls(method="mle").fit({50: 1.0, 90: 2.0})
    with pytest.raises(ValueError, match="2 percentiles"):
        cls().fit({50: 1.0})


def test_lognormal_mle_recovers_the_parameters() -> None:
    est = ShiftedLognormalFit().fit(lognormal_samples(200_000))
    assert est.shift_us_ == pytest.approx(5.0, abs=0.1)
    assert est.median_us_ == pytest.approx(3.0, rel=0.03)
    assert est.sigma_ == pytest.approx(0.5, rel=0.03)
    values = est.profile_values("kernel_rx")
    assert set(values) == {"kernel_rx_floor_us", "kernel_rx_median_us", "kernel_rx_sigma"}


def test_lognormal_quantile_matching_from_published_percentiles() -> None:
    # pub_m8a_metal_cpg_udp_rtt_p50: P50 20.7, P90 21.7, P99 24.1, P99.9 25.1
    est = ShiftedLognormalFit().fit({50: 20.7, 90: 21.7, 99: 24.1, 99.9: 25.1})
    assert max(abs(e) for e in est.percentile_errors_.values()) < 0.03


def test_fixed_shift_for_a_zero_floor_stage() -> None:
    rng = np.random.default_rng(3)
    x = 0.4 * np.exp(0.35 * rng.standard_normal(50_000))
    est = ShiftedLognormalFit(shift_us=0.0).fit(x)
    assert est.shift_us_ == 0.0
    assert est.median_us_ == pytest.approx(0.4, rel=0.02)
    assert est.sigma_ == pytest.approx(0.35, rel=0.03)


def test_gamma_mle_recovers_the_parameters() -> None:
    rng = np.random.default_rng(1)
    x = 2.0 + rng.gamma(3.0, 1.5, 100_000)
    est = ShiftedGammaFit().fit(x)
    assert est.shape_ == pytest.approx(3.0, rel=0.1)
    assert est.scale_us_ == pytest.approx(1.5, rel=0.1)


def test_mixture_finds_a_rare_tail() -> None:
    rng = np.random.default_rng(2)
    body = 10 + 5 * np.exp(0.2 * rng.standard_normal(95_000))
    tail = 10 + 60 * np.exp(0.3 * rng.standard_normal(5_000))
    est = LognormalMixtureFit().fit(np.concatenate([body, tail]))
    assert est.weights_[1] == pytest.approx(0.05, abs=0.02)
    assert est.ks_ < ShiftedLognormalFit().fit(np.concatenate([body, tail])).ks_


def test_fit_from_a_measurement_and_best_family() -> None:
    m = Measurement(format="samples-csv", source="memory", samples_us=lognormal_samples(5_000))
    assert ShiftedLognormalFit().fit(m).n_samples_ == 5_000
    assert isinstance(fit_best(lognormal_samples(5_000)), ShiftedLognormalFit | LognormalMixtureFit)
