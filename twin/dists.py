"""Latency distributions: the one class per kind that knows everything about it.

Each class samples with an explicit :class:`numpy.random.Generator`, knows its analytic mean
and variance, encodes itself for the compiled path as an integer ``code`` and three parameters
(:meth:`Dist.params`; :func:`decode` reverses it), gives the SimPy engine a scalar draw
(:meth:`Dist.draw_function`) and the fast engine its quantiles (:meth:`Dist.quantiles`).
Adding a distribution is adding one class here with a new ``code``. Times are in microseconds.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np
from scipy import special

from twin.errors import ModelError

Draw = Callable[[], float]

# code -> class, filled as each class is defined.
REGISTRY: dict[int, type[Dist]] = {}


def _require(condition: bool, message: str) -> None:
    if not condition:
        raise ModelError(message)


def decode(code: int, p0: float, p1: float, p2: float, table: np.ndarray | None = None) -> Dist:
    """The distribution a compiled path stores as ``code, p0, p1, p2``.

    ``table`` is the resampled data of an :class:`Empirical` (whose ``p0`` is its row index).
    """
    kind = REGISTRY.get(int(code))
    if kind is None:
        raise ModelError(f"unknown distribution code {code} (known: {sorted(REGISTRY)})")
    return kind.from_params(p0, p1, p2, table)


@dataclass(frozen=True)
class Dist:
    """Base of every latency distribution (microseconds)."""

    code: ClassVar[int]

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        taken = REGISTRY.get(cls.code)
        if taken is not None:
            raise TypeError(f"{cls.__name__}: code {cls.code} is {taken.__name__}'s")
        REGISTRY[cls.code] = cls

    def params(self) -> tuple[float, float, float]:
        """The three numbers stored in the compiled path."""
        return (0.0, 0.0, 0.0)

    @classmethod
    def from_params(cls, p0: float, p1: float, p2: float, table: np.ndarray | None = None) -> Dist:
        """The distribution :meth:`params` encoded (``table``: only :class:`Empirical`'s)."""
        raise NotImplementedError

    @property
    def mean(self) -> float:
        return 0.0

    @property
    def variance(self) -> float:
        return 0.0

    def sample(self, rng: np.random.Generator, size: int) -> np.ndarray:
        return np.zeros(size)

    def draw_function(self, rng: np.random.Generator) -> Draw | None:
        """One draw per call from ``rng`` (None when always zero), for the SimPy engine."""
        raise NotImplementedError

    def quantiles(self, d: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The quantile function at ``d`` and at ``1 - d`` (``0 < d <= 1/2``), without
        cancellation near 1: the tables the fast engine interpolates."""
        raise NotImplementedError

    @property
    def is_zero(self) -> bool:
        return isinstance(self, Zero)


@dataclass(frozen=True)
class Zero(Dist):
    """No time at all."""

    code = 0

    @classmethod
    def from_params(cls, p0: float, p1: float, p2: float, table: np.ndarray | None = None) -> Zero:
        return ZERO

    def draw_function(self, rng: np.random.Generator) -> Draw | None:
        return None

    def quantiles(self, d: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return np.zeros_like(d), np.zeros_like(d)


@dataclass(frozen=True)
class Const(Dist):
    """A fixed time, e.g. serialisation of a known payload at a known bandwidth."""

    value_us: float
    code = 1

    def __post_init__(self) -> None:
        _require(self.value_us >= 0, f"Negative constant delay {self.value_us} us")

    def params(self) -> tuple[float, float, float]:
        return (self.value_us, 0.0, 0.0)

    @property
    def mean(self) -> float:
        return self.value_us

    def sample(self, rng: np.random.Generator, size: int) -> np.ndarray:
        return np.full(size, self.value_us)

    @classmethod
    def from_params(cls, p0: float, p1: float, p2: float, table: np.ndarray | None = None) -> Const:
        return cls(p0)

    def draw_function(self, rng: np.random.Generator) -> Draw | None:
        value = self.value_us
        return lambda: value

    def quantiles(self, d: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return np.full_like(d, self.value_us), np.full_like(d, self.value_us)


@dataclass(frozen=True)
class Exponential(Dist):
    """Memoryless time with the given mean: the M in M/M/1."""

    mean_us: float
    code = 2

    def __post_init__(self) -> None:
        _require(self.mean_us > 0, f"Exponential mean must be > 0 us, got {self.mean_us}")

    def params(self) -> tuple[float, float, float]:
        return (self.mean_us, 0.0, 0.0)

    @property
    def mean(self) -> float:
        return self.mean_us

    @property
    def variance(self) -> float:
        return self.mean_us**2

    def sample(self, rng: np.random.Generator, size: int) -> np.ndarray:
        return rng.exponential(self.mean_us, size)

    @classmethod
    def from_params(
        cls, p0: float, p1: float, p2: float, table: np.ndarray | None = None
    ) -> Exponential:
        return cls(p0)

    def draw_function(self, rng: np.random.Generator) -> Draw | None:
        mean = self.mean_us
        return lambda: rng.exponential(mean)

    def quantiles(self, d: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return -self.mean_us * np.log1p(-d), -self.mean_us * np.log(d)


@dataclass(frozen=True)
class Occasional(Dist):
    """``cost_us`` paid with the given probability, nothing otherwise.

    A cost some messages pay and others do not, of about the same size each time: the exit
    latency of a core that had gone into a deep C-state, or an interrupt taken on a core other
    than the one the receiving thread waits on. Unlike an exponential of the same mean, it has a
    floor at zero and a bounded top, which is the round-trip shape of an untuned host (netperf
    on c5n.xlarge: minimum 18 us under the mean, p99 only 13 us above it).
    """

    cost_us: float
    probability: float
    code = 6

    def __post_init__(self) -> None:
        _require(self.cost_us >= 0, f"Negative occasional cost {self.cost_us} us")
        _require(
            0.0 < self.probability <= 1.0,
            f"Occasional probability must be in (0, 1], got {self.probability}",
        )

    def params(self) -> tuple[float, float, float]:
        return (self.cost_us, self.probability, 0.0)

    @property
    def mean(self) -> float:
        return self.cost_us * self.probability

    @property
    def variance(self) -> float:
        return self.cost_us**2 * self.probability * (1.0 - self.probability)

    def sample(self, rng: np.random.Generator, size: int) -> np.ndarray:
        return np.where(rng.random(size) < self.probability, self.cost_us, 0.0)

    @classmethod
    def from_params(
        cls, p0: float, p1: float, p2: float, table: np.ndarray | None = None
    ) -> Occasional:
        return cls(p0, p1)

    def draw_function(self, rng: np.random.Generator) -> Draw | None:
        cost, probability = self.cost_us, self.probability
        return lambda: cost if rng.random() < probability else 0.0

    def quantiles(self, d: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        # Q(u) = cost for u > 1 - probability: at d the left limit at the step, at 1 - d the
        # right limit, so a step at u = 1/2 falls exactly between the two tables.
        cost, probability = self.cost_us, self.probability
        return np.where(d > 1.0 - probability, cost, 0.0), np.where(d <= probability, cost, 0.0)


@dataclass(frozen=True)
class BusyWait(Dist):
    """The wait a message finds at a busy server it hardly loads itself: other traffic's queue.

    A server shared with a Poisson stream of other work (exponential services of mean
    ``service_us``) at utilisation ``utilization``: by PASTA an arrival finds it busy with
    probability ``utilization`` and then waits an exponential time of mean
    ``service_us / (1 - utilization)`` (the M/M/1 waiting time, Kleinrock 1975, vol. 1, 3.2).
    So the wait is zero with probability ``1 - utilization``, its mean is
    ``utilization * service_us / (1 - utilization)``, and it grows without bound as the other
    traffic approaches the server's capacity. Used for a venue's load by hour of the day, which
    the twin does not simulate message by message.
    """

    service_us: float
    utilization: float
    code = 7

    def __post_init__(self) -> None:
        _require(self.service_us > 0, f"Busy-wait service must be > 0 us, got {self.service_us}")
        _require(
            0.0 <= self.utilization < 1.0,
            f"Busy-wait utilisation must be in [0, 1), got {self.utilization}",
        )

    @property
    def _busy_mean(self) -> float:
        return self.service_us / (1.0 - self.utilization)

    def params(self) -> tuple[float, float, float]:
        return (self.service_us, self.utilization, 0.0)

    @property
    def mean(self) -> float:
        return self.utilization * self._busy_mean

    @property
    def variance(self) -> float:
        rho, m = self.utilization, self._busy_mean
        return 2.0 * rho * m**2 - (rho * m) ** 2

    def sample(self, rng: np.random.Generator, size: int) -> np.ndarray:
        busy = rng.random(size) < self.utilization
        return np.where(busy, rng.exponential(self._busy_mean, size), 0.0)

    @classmethod
    def from_params(
        cls, p0: float, p1: float, p2: float, table: np.ndarray | None = None
    ) -> BusyWait:
        return cls(p0, p1)

    def draw_function(self, rng: np.random.Generator) -> Draw | None:
        rho, m = self.utilization, self._busy_mean
        return lambda: rng.exponential(m) if rng.random() < rho else 0.0

    def quantiles(self, d: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        # Q(u) = 0 for u <= 1 - rho, else -m log((1 - u) / rho): continuous (a kink, no step),
        # so the fast engine's interpolation stays exact to its grid.
        rho, m = self.utilization, self._busy_mean
        if rho == 0.0:
            return np.zeros_like(d), np.zeros_like(d)
        lower = np.where(d > 1.0 - rho, -m * np.log(np.maximum(1.0 - d, 1e-300) / rho), 0.0)
        upper = np.where(d < rho, -m * np.log(d / rho), 0.0)
        return np.maximum(lower, 0.0), np.maximum(upper, 0.0)


@dataclass(frozen=True)
class ShiftedLognormal(Dist):
    """``shift_us`` plus a lognormal with the given median and log-space sigma.

    The usual shape of a software or network stage: a hard floor and a right-skewed body.
    """

    shift_us: float
    median_us: float
    sigma: float
    code = 3

    def __post_init__(self) -> None:
        _require(self.shift_us >= 0, f"Negative lognormal shift {self.shift_us} us")
        _require(self.median_us > 0, f"Lognormal median must be > 0 us, got {self.median_us}")
        _require(self.sigma >= 0, f"Negative lognormal sigma {self.sigma}")

    def params(self) -> tuple[float, float, float]:
        return (self.shift_us, self.median_us, self.sigma)

    @property
    def mean(self) -> float:
        return self.shift_us + self.median_us * math.exp(self.sigma**2 / 2)

    @property
    def variance(self) -> float:
        s2 = self.sigma**2
        return self.median_us**2 * math.exp(s2) * (math.exp(s2) - 1)

    def sample(self, rng: np.random.Generator, size: int) -> np.ndarray:
        return self.shift_us + self.median_us * np.exp(self.sigma * rng.standard_normal(size))

    @classmethod
    def from_params(
        cls, p0: float, p1: float, p2: float, table: np.ndarray | None = None
    ) -> ShiftedLognormal:
        return cls(p0, p1, p2)

    def draw_function(self, rng: np.random.Generator) -> Draw | None:
        shift, median, sigma = self.shift_us, self.median_us, self.sigma
        return lambda: shift + median * np.exp(sigma * rng.standard_normal())

    def quantiles(self, d: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        z = special.ndtri(d)
        return (
            self.shift_us + self.median_us * np.exp(self.sigma * z),
            self.shift_us + self.median_us * np.exp(-self.sigma * z),
        )


@dataclass(frozen=True)
class ShiftedGamma(Dist):
    """``shift_us`` plus a gamma(shape, scale): a lighter tail than the lognormal."""

    shift_us: float
    shape: float
    scale_us: float
    code = 4

    def __post_init__(self) -> None:
        _require(self.shift_us >= 0, f"Negative gamma shift {self.shift_us} us")
        _require(self.shape > 0, f"Gamma shape must be > 0, got {self.shape}")
        _require(self.scale_us > 0, f"Gamma scale must be > 0 us, got {self.scale_us}")

    def params(self) -> tuple[float, float, float]:
        return (self.shift_us, self.shape, self.scale_us)

    @property
    def mean(self) -> float:
        return self.shift_us + self.shape * self.scale_us

    @property
    def variance(self) -> float:
        return self.shape * self.scale_us**2

    def sample(self, rng: np.random.Generator, size: int) -> np.ndarray:
        return self.shift_us + rng.gamma(self.shape, self.scale_us, size)

    @classmethod
    def from_params(
        cls, p0: float, p1: float, p2: float, table: np.ndarray | None = None
    ) -> ShiftedGamma:
        return cls(p0, p1, p2)

    def draw_function(self, rng: np.random.Generator) -> Draw | None:
        shift, shape, scale = self.shift_us, self.shape, self.scale_us
        return lambda: shift + rng.gamma(shape, scale)

    def quantiles(self, d: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return (
            self.shift_us + self.scale_us * special.gammaincinv(self.shape, d),
            self.shift_us + self.scale_us * special.gammainccinv(self.shape, d),
        )


@dataclass(frozen=True)
class Empirical(Dist):
    """Resampling of measured times (for example engine_ext's per-order service times).

    ``table`` is the row index given when the path is compiled; ``samples_us`` keeps the data.
    """

    samples_us: tuple[float, ...] = field(repr=False)
    label: str = "measured"
    code = 5

    def __post_init__(self) -> None:
        _require(len(self.samples_us) > 0, f"Empirical distribution {self.label!r} has no samples")
        _require(min(self.samples_us) >= 0, f"Empirical {self.label!r} has a negative sample")

    @property
    def mean(self) -> float:
        return float(np.mean(self.samples_us))

    @property
    def variance(self) -> float:
        return float(np.var(self.samples_us))

    def sample(self, rng: np.random.Generator, size: int) -> np.ndarray:
        data = np.asarray(self.samples_us)
        return data[rng.integers(0, len(data), size)]

    @classmethod
    def from_params(
        cls, p0: float, p1: float, p2: float, table: np.ndarray | None = None
    ) -> Empirical:
        if table is None:
            raise ModelError(f"empirical distribution (row {p0:g}) decoded without its table")
        return cls(tuple(float(x) for x in table))

    def draw_function(self, rng: np.random.Generator) -> Draw | None:
        data = np.asarray(self.samples_us)
        n = len(data)
        return lambda: data[rng.integers(n)]

    def quantiles(self, d: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        raise ModelError(
            f"empirical distribution {self.label!r} is resampled, it has no quantile table"
        )


ZERO = Zero()
