"""Latency distributions: one small interface shared by every component.

Each distribution samples with an explicit :class:`numpy.random.Generator`, knows its analytic
mean and variance where one exists, and encodes itself as a code and three parameters for the
compiled path (see :mod:`twin.dtypes`). Times are in microseconds.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from twin import dtypes


def _require(condition: bool, message: str) -> None:
    if not condition:
        raise ValueError(message)


@dataclass(frozen=True)
class Dist:
    """Base of every latency distribution (microseconds)."""

    code = dtypes.DIST_NONE

    def params(self) -> tuple[float, float, float]:
        """The three numbers stored in the compiled path."""
        return (0.0, 0.0, 0.0)

    @property
    def mean(self) -> float:
        return 0.0

    @property
    def variance(self) -> float:
        return 0.0

    def sample(self, rng: np.random.Generator, size: int) -> np.ndarray:
        return np.zeros(size)

    @property
    def is_zero(self) -> bool:
        return self.code == dtypes.DIST_NONE


@dataclass(frozen=True)
class Zero(Dist):
    """No time at all."""


@dataclass(frozen=True)
class Const(Dist):
    """A fixed time, e.g. serialisation of a known payload at a known bandwidth."""

    value_us: float
    code = dtypes.DIST_CONST

    def __post_init__(self) -> None:
        _require(self.value_us >= 0, f"Negative constant delay {self.value_us} us")

    def params(self) -> tuple[float, float, float]:
        return (self.value_us, 0.0, 0.0)

    @property
    def mean(self) -> float:
        return self.value_us

    def sample(self, rng: np.random.Generator, size: int) -> np.ndarray:
        return np.full(size, self.value_us)


@dataclass(frozen=True)
class Exponential(Dist):
    """Memoryless time with the given mean: the M in M/M/1."""

    mean_us: float
    code = dtypes.DIST_EXP

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
    code = dtypes.DIST_OCCASIONAL

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


@dataclass(frozen=True)
class ShiftedLognormal(Dist):
    """``shift_us`` plus a lognormal with the given median and log-space sigma.

    The usual shape of a software or network stage: a hard floor and a right-skewed body.
    """

    shift_us: float
    median_us: float
    sigma: float
    code = dtypes.DIST_LOGNORMAL

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


@dataclass(frozen=True)
class ShiftedGamma(Dist):
    """``shift_us`` plus a gamma(shape, scale): a lighter tail than the lognormal."""

    shift_us: float
    shape: float
    scale_us: float
    code = dtypes.DIST_GAMMA

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


@dataclass(frozen=True)
class Empirical(Dist):
    """Resampling of measured times (for example engine_ext's per-order service times).

    ``table`` is the row index given when the path is compiled; ``samples_us`` keeps the data.
    """

    samples_us: tuple[float, ...] = field(repr=False)
    label: str = "measured"
    code = dtypes.DIST_EMPIRICAL

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


ZERO = Zero()
