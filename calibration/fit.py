"""Distribution fitting for one component: estimators in the scikit-learn style.

Four families describe a stage's latency (microseconds):

- :class:`ShiftedLognormalFit`: a floor plus a lognormal (the twin's usual stage shape);
- :class:`ShiftedGammaFit`: a floor plus a gamma (a lighter tail);
- :class:`LognormalMixtureFit`: a floor plus a two-component lognormal mixture (body + tail);
- :class:`EmpiricalFit`: the data themselves (resampled by the twin's ``Empirical`` dist).

Each estimator takes keyword-only settings and only stores them; :meth:`fit` checks them, fits
from **samples** (maximum likelihood) or from a **percentile table** (quantile matching, when only
a few published percentiles are known), and returns ``self``. Fitted attributes end in ``_``;
goodness of fit is reported as ``ks_`` (Kolmogorov-Smirnov statistic against the samples, None
for a percentile table) and ``percentile_errors_`` (relative error of the fitted percentile at
each checked percentile). ``fit`` accepts an array of samples, a
:class:`~calibration.measurement.Measurement`, or a mapping ``{percentile: value_us}``.

What a fit hands to the twin is a frozen snapshot: :meth:`dist` (a :mod:`twin.dists` object) and
:meth:`profile_values` (the ``<stage>_floor_us / _median_us / _sigma`` entries of a profile).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import numpy.typing as npt
from scipy import optimize, special, stats

from calibration.measurement import Measurement
from twin.dists import Dist, Empirical, ShiftedGamma, ShiftedLognormal
from twin.errors import MeasurementError

__all__ = [
    "EmpiricalFit",
    "LognormalMixtureFit",
    "ShiftedGammaFit",
    "ShiftedLognormalFit",
    "fit_best",
]

#: Percentiles at which goodness of fit is reported when fitting from samples.
CHECK_PERCENTILES = (50.0, 90.0, 99.0, 99.9)
_METHODS = ("auto", "mle", "quantiles")


def _as_data(
    data: Any,
) -> tuple[npt.NDArray[np.float64] | None, tuple[tuple[float, float], ...]]:
    """Normalise the accepted inputs into (samples or None, percentile table)."""
    if isinstance(data, Measurement):
        if data.samples_us is not None:
            return np.asarray(data.samples_us, dtype=np.float64), ()
        if not data.percentiles_us:
            raise MeasurementError(
                f"{data.source}: measurement has neither samples nor percentiles"
            )
        return None, tuple((float(p), float(v)) for p, v in data.percentiles_us)
    if isinstance(data, Mapping):
        table = tuple(sorted((float(p), float(v)) for p, v in data.items()))
        for p, v in table:
            if not 0 <= p <= 100 or not math.isfinite(v) or v < 0:
                raise MeasurementError(
                    f"Bad percentile entry {p!r}: {v!r} (need 0 <= p <= 100, v >= 0)"
                )
        return None, table
    samples = np.asarray(data, dtype=np.float64).reshape(-1)
    if samples.size < 2:
        raise MeasurementError(f"Need at least 2 samples to fit, got {samples.size}")
    if not np.all(np.isfinite(samples)) or samples.min() < 0:
        raise MeasurementError("Samples must be finite times >= 0 us")
    return samples, ()


def _usable_table(table: tuple[tuple[float, float], ...]) -> tuple[np.ndarray, np.ndarray]:
    """Interior percentiles (0 < p < 100) with one value each, as arrays in (0, 1)."""
    seen: dict[float, float] = {}
    for p, v in table:
        if 0 < p < 100:
            seen[p] = v
    if len(seen) < 2:
        raise MeasurementError(
            f"Quantile matching needs >= 2 percentiles strictly inside (0, 100), got {table}"
        )
    q = np.array(sorted(seen)) / 100.0
    return q, np.array([seen[p * 100.0] for p in q])


class _DistFit:
    """Shared contract: settings stored in ``__init__``, checked and used in :meth:`fit`."""

    loglik_: float | None
    samples_us_: np.ndarray | None
    knots_: tuple[np.ndarray, np.ndarray] | None

    _constraints: dict[str, tuple[Any, ...]] = {"method": _METHODS}
    n_params = 0

    def __init__(self, *, method: str = "auto") -> None:
        self.method = method

    def get_params(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self._constraints}

    def _check_params(self) -> None:
        for key, allowed in self._constraints.items():
            value = getattr(self, key)
            if isinstance(allowed, tuple) and allowed and isinstance(allowed[0], str):
                if value not in allowed:
                    raise MeasurementError(
                        f"{type(self).__name__}: {key} = {value!r}; allowed: {allowed}"
                    )

    def fit(self, data: Any) -> _DistFit:
        """Fit to samples (MLE) or a percentile table (quantile matching); returns ``self``."""
        self._check_params()
        samples, table = _as_data(data)
        method = self.method
        if method == "auto":
            method = "mle" if samples is not None else "quantiles"
        if method == "mle" and samples is None:
            raise MeasurementError(
                f"{type(self).__name__}: method='mle' needs samples, got a table"
            )
        if method == "mle":
            assert samples is not None
            self._fit_samples(samples)
        else:
            if samples is not None:
                qs = np.array(CHECK_PERCENTILES) / 100.0
                table = tuple(
                    (100.0 * q, float(v)) for q, v in zip(qs, np.quantile(samples, qs), strict=True)
                )
            q, v = _usable_table(table)
            self._fit_quantiles(q, v)
        self.method_ = method
        self._goodness(samples, table)
        return self

    # -- family hooks --------------------------------------------------------------------------
    def _fit_samples(self, x: np.ndarray) -> None:
        raise NotImplementedError

    def _fit_quantiles(self, q: np.ndarray, v: np.ndarray) -> None:
        """Default quantile matching: least squares on relative percentile errors."""
        start = self._start_from_quantiles(q, v)

        def residual(theta: np.ndarray) -> np.ndarray:
            self._set_theta(theta)
            return (self.ppf(q) - v) / np.maximum(v, 1e-9)

        sol = optimize.least_squares(residual, start, method="trf")
        self._set_theta(sol.x)

    def _start_from_quantiles(self, q: np.ndarray, v: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def _set_theta(self, theta: np.ndarray) -> None:
        raise NotImplementedError

    def cdf(self, x: npt.ArrayLike) -> np.ndarray:
        raise NotImplementedError

    def ppf(self, q: npt.ArrayLike) -> np.ndarray:
        """Quantile function (q in (0, 1)), by bisection on :meth:`cdf` unless overridden."""
        q = np.atleast_1d(np.asarray(q, dtype=np.float64))
        lo = np.zeros_like(q)
        hi = np.full_like(q, 1.0)
        while np.any(self.cdf(hi) < q):
            hi = np.where(self.cdf(hi) < q, hi * 4.0, hi)
        for _ in range(80):
            mid = 0.5 * (lo + hi)
            below = self.cdf(mid) < q
            lo = np.where(below, mid, lo)
            hi = np.where(below, hi, mid)
        return 0.5 * (lo + hi)

    def dist(self) -> Dist:
        """The fitted distribution as a twin :mod:`twin.dists` object."""
        raise NotImplementedError

    def sample(self, rng: np.random.Generator, size: int) -> np.ndarray:
        return self.dist().sample(rng, size)

    def _goodness(self, samples: np.ndarray | None, table: tuple[tuple[float, float], ...]) -> None:
        if samples is not None:
            self.n_samples_ = int(samples.size)
            self.ks_: float | None = float(stats.kstest(samples, self.cdf).statistic)
            checks = np.array(CHECK_PERCENTILES)
            measured = np.quantile(samples, checks / 100.0)
        else:
            self.n_samples_ = 0
            self.ks_ = None
            checks, measured = (np.array(a) for a in zip(*table, strict=True))
            inside = (checks > 0) & (checks < 100)
            checks, measured = checks[inside], measured[inside]
        fitted = self.ppf(checks / 100.0)
        self.percentile_errors_ = {
            float(p): float((f - m) / m) if m > 0 else float("nan")
            for p, f, m in zip(checks, fitted, measured, strict=True)
        }


# ---- shifted lognormal ---------------------------------------------------------------------


def _lognormal_given_shift(x: np.ndarray, shift: float) -> tuple[float, float, float]:
    """MLE (mu, sigma) of log(x - shift) and the log-likelihood of x."""
    y = np.log(x - shift)
    mu = float(y.mean())
    sigma = float(max(y.std(), 1e-9))
    n = x.size
    loglik = -n * (math.log(sigma) + 0.5 * math.log(2 * math.pi) + 0.5) - float(y.sum())
    return mu, sigma, loglik


def _shift_bounds(x: np.ndarray, fixed: float | None) -> tuple[float, float]:
    lo_x = float(x.min())
    spread = float(np.median(x)) - lo_x
    return 0.0, max(lo_x - max(1e-3 * spread, 1e-9), 0.0)


class ShiftedLognormalFit(_DistFit):
    """Floor + lognormal(median, sigma); ``shift_us`` fixes the floor (e.g. 0) instead of fitting.

    Fitted: ``shift_us_``, ``median_us_``, ``sigma_``.
    MLE maximises the profile likelihood over the floor (a 1-D bounded search; for each floor the
    lognormal part has a closed form), so 1e6 samples take well under a second.
    """

    _constraints = {"method": _METHODS, "shift_us": (None, float)}
    n_params = 3

    def __init__(self, *, method: str = "auto", shift_us: float | None = None) -> None:
        self.method = method
        self.shift_us = shift_us

    def _check_params(self) -> None:
        super()._check_params()
        if self.shift_us is not None and not self.shift_us >= 0:
            raise MeasurementError(
                f"ShiftedLognormalFit: shift_us = {self.shift_us!r}; allowed >= 0"
            )

    def _fit_samples(self, x: np.ndarray) -> None:
        if self.shift_us is not None:
            if x.min() <= self.shift_us:
                raise MeasurementError(
                    f"shift_us = {self.shift_us} is not below the smallest sample {x.min()}"
                )
            shift = float(self.shift_us)
        else:
            lo, hi = _shift_bounds(x, None)
            if hi <= lo:
                shift = 0.0
            else:
                # Profile likelihood on a thinned copy first (cheap), then refine on all data.
                res = optimize.minimize_scalar(
                    lambda c: -_lognormal_given_shift(x, c)[2],
                    bounds=(lo, hi),
                    method="bounded",
                    options={"xatol": 1e-4 * max(hi, 1e-6)},
                )
                shift = float(res.x)
        mu, sigma, loglik = _lognormal_given_shift(x, shift)
        self.shift_us_, self.median_us_, self.sigma_ = shift, math.exp(mu), sigma
        self.loglik_ = loglik

    def _start_from_quantiles(self, q: np.ndarray, v: np.ndarray) -> np.ndarray:
        shift = 0.0 if self.shift_us is not None else 0.8 * float(v.min())
        return np.array([shift, math.log(max(float(np.median(v)) - shift, 1e-6)), math.log(0.5)])

    def _set_theta(self, theta: np.ndarray) -> None:
        self.shift_us_ = (
            float(self.shift_us) if self.shift_us is not None else max(float(theta[0]), 0.0)
        )
        self.median_us_ = math.exp(float(theta[1]))
        self.sigma_ = math.exp(float(theta[2]))

    def _fit_quantiles(self, q: np.ndarray, v: np.ndarray) -> None:
        super()._fit_quantiles(q, v)
        self.loglik_ = None

    def cdf(self, x: npt.ArrayLike) -> np.ndarray:
        x = np.asarray(x, dtype=np.float64)
        z = np.log(np.maximum(x - self.shift_us_, 1e-300) / self.median_us_) / self.sigma_
        return np.where(x > self.shift_us_, special.ndtr(z), 0.0)

    def ppf(self, q: npt.ArrayLike) -> np.ndarray:
        z = special.ndtri(np.asarray(q, dtype=np.float64))
        return self.shift_us_ + self.median_us_ * np.exp(self.sigma_ * z)

    def dist(self) -> ShiftedLognormal:
        return ShiftedLognormal(self.shift_us_, self.median_us_, self.sigma_)

    def profile_values(self, stage: str, *, floor: bool = True) -> dict[str, float]:
        """The profile entries of stage ``stage`` (``<stage>_floor_us`` only if ``floor``)."""
        out = {f"{stage}_median_us": self.median_us_, f"{stage}_sigma": self.sigma_}
        if floor:
            out[f"{stage}_floor_us"] = self.shift_us_
        return out


# ---- shifted gamma -------------------------------------------------------------------------


def _gamma_given_shift(x: np.ndarray, shift: float) -> tuple[float, float, float]:
    """MLE (shape, scale) of x - shift (Minka's Newton steps) and the log-likelihood."""
    y = x - shift
    mean = float(y.mean())
    logs = np.log(y)
    s = math.log(mean) - float(logs.mean())
    s = max(s, 1e-12)
    k = (3 - s + math.sqrt((s - 3) ** 2 + 24 * s)) / (12 * s)
    for _ in range(6):
        k -= (math.log(k) - special.digamma(k) - s) / (1 / k - special.polygamma(1, k))
        k = max(k, 1e-6)
    theta = mean / k
    n = x.size
    loglik = (
        (k - 1) * float(logs.sum())
        - n * mean / theta
        - n * (special.gammaln(k) + k * math.log(theta))
    )
    return k, theta, float(loglik)


class ShiftedGammaFit(_DistFit):
    """Floor + gamma(shape, scale). Fitted: ``shift_us_``, ``shape_``, ``scale_us_``."""

    n_params = 3

    def _fit_samples(self, x: np.ndarray) -> None:
        lo, hi = _shift_bounds(x, None)
        shift = 0.0
        if hi > lo:
            res = optimize.minimize_scalar(
                lambda c: -_gamma_given_shift(x, c)[2],
                bounds=(lo, hi),
                method="bounded",
                options={"xatol": 1e-4 * max(hi, 1e-6)},
            )
            shift = float(res.x)
        k, theta, loglik = _gamma_given_shift(x, shift)
        self.shift_us_, self.shape_, self.scale_us_, self.loglik_ = shift, k, theta, loglik

    def _start_from_quantiles(self, q: np.ndarray, v: np.ndarray) -> np.ndarray:
        shift = 0.8 * float(v.min())
        return np.array(
            [shift, math.log(2.0), math.log(max(float(np.median(v)) - shift, 1e-6) / 2)]
        )

    def _set_theta(self, theta: np.ndarray) -> None:
        self.shift_us_ = max(float(theta[0]), 0.0)
        self.shape_ = math.exp(float(theta[1]))
        self.scale_us_ = math.exp(float(theta[2]))

    def _fit_quantiles(self, q: np.ndarray, v: np.ndarray) -> None:
        super()._fit_quantiles(q, v)
        self.loglik_ = None

    def cdf(self, x: npt.ArrayLike) -> np.ndarray:
        y = np.maximum(np.asarray(x, dtype=np.float64) - self.shift_us_, 0.0)
        return special.gammainc(self.shape_, y / self.scale_us_)

    def ppf(self, q: npt.ArrayLike) -> np.ndarray:
        q = np.asarray(q, dtype=np.float64)
        return self.shift_us_ + self.scale_us_ * special.gammaincinv(self.shape_, q)

    def dist(self) -> ShiftedGamma:
        return ShiftedGamma(self.shift_us_, self.shape_, self.scale_us_)


# ---- two-component lognormal mixture (body + tail) -----------------------------------------


class LognormalMixtureFit(_DistFit):
    """Floor + a mixture of two lognormals: a body and a heavier, rarer tail.

    Fitted: ``shift_us_``, ``weights_`` (body, tail), ``medians_us_``, ``sigmas_``. The floor is
    the shifted-lognormal MLE's; the mixture over ``log(x - floor)`` is fitted by EM (a
    two-Gaussian mixture in log space), vectorised over all samples.
    """

    _constraints = {"method": _METHODS, "max_iter": (int,)}
    n_params = 6

    def __init__(self, *, method: str = "auto", max_iter: int = 200) -> None:
        self.method = method
        self.max_iter = max_iter

    def _fit_samples(self, x: np.ndarray) -> None:
        base = ShiftedLognormalFit(method="mle")
        base._fit_samples(x)
        shift = base.shift_us_
        y = np.log(x - shift)
        # EM on a fine histogram of log(x - floor): exact to the bin width (1/4096 of the range)
        # and independent of the sample count, so 1e6 samples cost the same as 1e4.
        counts, edges = np.histogram(y, bins=4096)
        keep = counts > 0
        yc = (0.5 * (edges[:-1] + edges[1:]))[keep]
        cw = counts[keep].astype(np.float64)
        mu = np.array([np.quantile(y, 0.5), np.quantile(y, 0.99)])
        sd = np.array([y.std() * 0.7, y.std()]) + 1e-9
        w = np.array([0.95, 0.05])
        prev = -np.inf
        ll = prev
        for _ in range(self.max_iter):
            dens = w * np.exp(-0.5 * ((yc[:, None] - mu) / sd) ** 2) / (sd * math.sqrt(2 * math.pi))
            total = dens.sum(axis=1) + 1e-300
            resp = dens / total[:, None] * cw[:, None]
            nk = resp.sum(axis=0) + 1e-12
            w = nk / nk.sum()
            mu = (resp * yc[:, None]).sum(axis=0) / nk
            sd = np.sqrt((resp * (yc[:, None] - mu) ** 2).sum(axis=0) / nk) + 1e-9
            ll = float((cw * np.log(total)).sum())
            if ll - prev < 1e-9 * abs(ll):
                break
            prev = ll
        order = np.argsort(mu)
        self.shift_us_ = shift
        self.weights_ = tuple(float(v) for v in w[order])
        self.medians_us_ = tuple(float(math.exp(v)) for v in mu[order])
        self.sigmas_ = tuple(float(v) for v in sd[order])
        self.loglik_ = ll - float(y.sum())

    def _start_from_quantiles(self, q: np.ndarray, v: np.ndarray) -> np.ndarray:
        shift = 0.8 * float(v.min())
        body = max(float(np.median(v)) - shift, 1e-6)
        return np.array(
            [
                shift,
                special.logit(0.95),
                math.log(body),
                math.log(0.3),
                math.log(3 * body),
                math.log(0.8),
            ]
        )

    def _set_theta(self, theta: np.ndarray) -> None:
        self.shift_us_ = max(float(theta[0]), 0.0)
        wb = float(special.expit(theta[1]))
        self.weights_ = (wb, 1.0 - wb)
        self.medians_us_ = (math.exp(float(theta[2])), math.exp(float(theta[4])))
        self.sigmas_ = (math.exp(float(theta[3])), math.exp(float(theta[5])))

    def _fit_quantiles(self, q: np.ndarray, v: np.ndarray) -> None:
        # Six parameters from a handful of percentiles is under-determined: regularise towards
        # a 95/5 split with the tail three times the body, and report it as such.
        start = self._start_from_quantiles(q, v)

        def residual(theta: np.ndarray) -> np.ndarray:
            self._set_theta(theta)
            fit = (self.ppf(q) - v) / np.maximum(v, 1e-9)
            return np.concatenate([fit, 0.05 * (theta - start)])

        sol = optimize.least_squares(residual, start, method="trf")
        self._set_theta(sol.x)
        self.loglik_ = None

    def cdf(self, x: npt.ArrayLike) -> np.ndarray:
        x = np.asarray(x, dtype=np.float64)
        y = np.log(np.maximum(x - self.shift_us_, 1e-300))
        out = np.zeros_like(y)
        for w, m, s in zip(self.weights_, self.medians_us_, self.sigmas_, strict=True):
            out = out + w * special.ndtr((y - math.log(m)) / s)
        return np.where(x > self.shift_us_, out, 0.0)

    def sample(self, rng: np.random.Generator, size: int) -> np.ndarray:
        tail = rng.random(size) < self.weights_[1]
        z = rng.standard_normal(size)
        med = np.where(tail, self.medians_us_[1], self.medians_us_[0])
        sig = np.where(tail, self.sigmas_[1], self.sigmas_[0])
        return self.shift_us_ + med * np.exp(sig * z)

    def dist(self) -> Empirical:
        """The twin has no mixture dist: hand it 20 000 draws as an empirical table."""
        draws = self.sample(np.random.default_rng(0), 20_000)
        return Empirical(tuple(float(v) for v in draws), label="lognormal mixture fit")


# ---- empirical -----------------------------------------------------------------------------


class EmpiricalFit(_DistFit):
    """The data themselves: samples are kept (thinned to ``max_samples``); a percentile table is
    interpolated linearly between its points. Fitted: ``samples_us_`` (sorted) or ``knots_``."""

    _constraints = {"method": _METHODS, "max_samples": (int,)}

    def __init__(self, *, method: str = "auto", max_samples: int = 100_000) -> None:
        self.method = method
        self.max_samples = max_samples

    def _fit_samples(self, x: np.ndarray) -> None:
        xs = np.sort(x)
        if xs.size > self.max_samples:
            idx = np.linspace(0, xs.size - 1, self.max_samples).round().astype(np.int64)
            xs = xs[idx]
        self.samples_us_ = xs
        self.knots_ = None

    def _fit_quantiles(self, q: np.ndarray, v: np.ndarray) -> None:
        self.samples_us_ = None
        self.knots_ = (q, np.maximum.accumulate(v))

    def cdf(self, x: npt.ArrayLike) -> np.ndarray:
        x = np.asarray(x, dtype=np.float64)
        if self.samples_us_ is not None:
            return np.searchsorted(self.samples_us_, x, side="right") / self.samples_us_.size
        assert self.knots_ is not None
        q, v = self.knots_
        return np.interp(x, v, q, left=0.0, right=1.0)

    def ppf(self, q: npt.ArrayLike) -> np.ndarray:
        q = np.asarray(q, dtype=np.float64)
        if self.samples_us_ is not None:
            return np.quantile(self.samples_us_, q)
        assert self.knots_ is not None
        kq, kv = self.knots_
        return np.interp(q, kq, kv)

    def dist(self) -> Empirical:
        if self.samples_us_ is not None:
            data = self.samples_us_
        else:
            data = self.ppf((np.arange(2000) + 0.5) / 2000)
        return Empirical(tuple(float(v) for v in data), label="empirical fit")


def fit_best(data: Any) -> _DistFit:
    """Fit the three parametric families and return the one with the smallest KS statistic
    (samples) or largest absolute percentile error (percentile table)."""
    fits = [ShiftedLognormalFit(), ShiftedGammaFit(), LognormalMixtureFit()]
    scored = []
    for est in fits:
        est.fit(data)
        score = (
            est.ks_ if est.ks_ is not None else max(abs(e) for e in est.percentile_errors_.values())
        )
        scored.append((score, est.n_params, est))
    return min(scored, key=lambda t: (t[0], t[1]))[2]
