"""One measured latency distribution, whatever benchmark tool produced it.

A :class:`Measurement` is the canonical object every reader in :mod:`calibration.readers`
normalises into: either raw samples or a percentile table, always in microseconds, plus the
summary statistics the file stated (count, min, max, mean), where it came from and under which
conditions it was taken (instance types, placement, tier, rate, payload, tool, ...).

It is immutable: the sample array is a read-only copy and the conditions are a read-only
mapping. Bad values are refused at construction with the value in the message.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any

import numpy as np
import numpy.typing as npt

from twin.errors import MeasurementError
from twin.percentiles import PERCENTILES

__all__ = ["Measurement"]


def _optional_time(name: str, value: float | None) -> float | None:
    if value is None:
        return None
    value = float(value)
    if not math.isfinite(value) or value < 0:
        raise MeasurementError(f"{name} must be a finite time >= 0 us, got {value}")
    return value


@dataclass(frozen=True, eq=False)
class Measurement:
    """A latency distribution read from one benchmark output, in microseconds.

    Exactly one of ``samples_us`` (raw observations) or ``percentiles_us`` (a table of
    ``(percentile, value_us)`` pairs, percentile in [0, 100]) carries the distribution; a
    measurement that only states a mean (netperf's classic TCP_RR transaction rate) has neither.

    Attributes:
        format: name of the reader that produced it (``"hgrm"``, ``"hdr-log"``, ...).
        source: where it came from, ``"path"`` or ``"path:line"``.
        samples_us: read-only 1-D array of observations, in file order, or None.
        percentiles_us: sorted ``(percentile, value_us)`` pairs; percentiles non-decreasing
            (an equal percentile twice marks a jump between histogram buckets) and values
            non-decreasing.
        count, min_us, max_us, mean_us: as stated by the file (or computed from samples),
            None where unknown.
        conditions: read-only mapping of what the measurement was taken under.
    """

    format: str
    source: str
    samples_us: npt.NDArray[np.float64] | None = None
    percentiles_us: tuple[tuple[float, float], ...] = ()
    count: int | None = None
    min_us: float | None = None
    max_us: float | None = None
    mean_us: float | None = None
    conditions: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        if self.samples_us is not None:
            if self.percentiles_us:
                raise MeasurementError(
                    "a Measurement holds samples or a percentile table, not both"
                )
            samples = np.array(self.samples_us, dtype=np.float64).reshape(-1)
            if samples.size == 0:
                raise MeasurementError("samples_us is empty")
            bad = ~np.isfinite(samples) | (samples < 0)
            if bad.any():
                raise MeasurementError(
                    f"samples_us must be finite and >= 0, got {samples[bad][0]} "
                    f"at index {int(np.flatnonzero(bad)[0])}"
                )
            samples.setflags(write=False)
            set_(self, "samples_us", samples)
            set_(self, "_sorted", np.sort(samples))
            if self.count is None:
                set_(self, "count", int(samples.size))
            if self.min_us is None:
                set_(self, "min_us", float(samples.min()))
            if self.max_us is None:
                set_(self, "max_us", float(samples.max()))
            if self.mean_us is None:
                set_(self, "mean_us", float(samples.mean()))
        table = tuple((float(p), float(v)) for p, v in self.percentiles_us)
        previous = (-math.inf, -math.inf)
        for p, v in table:
            if not 0.0 <= p <= 100.0:
                raise MeasurementError(f"percentile must be in [0, 100], got {p}")
            if not math.isfinite(v) or v < 0:
                raise MeasurementError(f"percentile value must be a finite time >= 0 us, got {v}")
            if p < previous[0] or v < previous[1]:
                raise MeasurementError(
                    f"percentile table out of order: ({p}, {v}) after {previous}"
                )
            previous = (p, v)
        set_(self, "percentiles_us", table)
        if self.count is not None and (int(self.count) != self.count or self.count < 0):
            raise MeasurementError(f"count must be an integer >= 0, got {self.count}")
        for name in ("min_us", "max_us", "mean_us"):
            set_(self, name, _optional_time(name, getattr(self, name)))
        if self.min_us is not None and self.max_us is not None and self.min_us > self.max_us:
            raise MeasurementError(f"min_us {self.min_us} is above max_us {self.max_us}")
        set_(self, "conditions", MappingProxyType(dict(self.conditions)))

    @property
    def has_distribution(self) -> bool:
        """True when percentiles can be computed (samples or a non-empty table)."""
        return self.samples_us is not None or bool(self.percentiles_us)

    def _knots(self) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
        """The table plus (0, min) and (100, max) where known and not already in it."""
        ps = [p for p, _ in self.percentiles_us]
        vs = [v for _, v in self.percentiles_us]
        if self.min_us is not None and (not ps or ps[0] > 0.0):
            ps.insert(0, 0.0)
            vs.insert(0, min(self.min_us, vs[0]) if vs else self.min_us)
        if self.max_us is not None and (not ps or ps[-1] < 100.0):
            ps.append(100.0)
            vs.append(max(self.max_us, vs[-1]) if vs else self.max_us)
        return np.asarray(ps, dtype=np.float64), np.asarray(vs, dtype=np.float64)

    def percentile_us(self, p: float) -> float:
        """The latency at percentile ``p`` (0 = min, 100 = max), in microseconds.

        Samples: numpy's default ("linear", Hyndman-Fan type 7) interpolation between order
        statistics. Percentile table: piecewise-linear interpolation in percentile between the
        table's knots, with ``(0, min_us)`` and ``(100, max_us)`` added as knots when known.
        Both are monotone in ``p``. Outside the knots' range the nearest knot's value is
        returned (clamped), and the result is always clamped to ``[min_us, max_us]`` when
        those are known. A sparse table (netperf's P50/P90/P99) therefore gives only a rough
        value between its points, especially in the tail.

        Raises:
            ValueError: ``p`` is outside [0, 100].
            MeasurementError: the measurement has no distribution (only a mean).
        """
        p = float(p)
        if not 0.0 <= p <= 100.0:
            raise MeasurementError(f"percentile must be in [0, 100], got {p}")
        if self.samples_us is not None:
            return float(np.percentile(self._sorted, p))  # type: ignore[attr-defined]
        ps, vs = self._knots()
        if ps.size == 0:
            raise MeasurementError(
                f"{self.source}: {self.format} measurement has no percentile information "
                f"(only mean_us={self.mean_us}), cannot give percentile {p}"
            )
        # side="left" picks the knot interval (ps[i-1], ps[i]] holding p: at a repeated
        # percentile (a jump between histogram buckets) that is the lower bucket, as in
        # HdrHistogram's "smallest value whose cumulative count reaches p".
        i = int(np.searchsorted(ps, p, side="left"))
        if i == 0:
            value = float(vs[0])
        elif i == ps.size:
            value = float(vs[-1])
        else:
            p0, p1, v0, v1 = ps[i - 1], ps[i], vs[i - 1], vs[i]
            value = float(v0 + (v1 - v0) * (p - p0) / (p1 - p0))
        if self.min_us is not None:
            value = max(value, self.min_us)
        if self.max_us is not None:
            value = min(value, self.max_us)
        return value

    def covers(self, p: float) -> bool:
        """True when ``p`` lies inside the measured table (or the measurement has samples).

        Only the table's own rows count: a percentile between the last row and ``max_us``
        (netperf's P99 and its max, say) is interpolated by :meth:`percentile_us` but is not
        covered, because linear interpolation across the tail is only a guess.
        """
        if self.samples_us is not None:
            return True
        if not self.percentiles_us:
            return False
        return self.percentiles_us[0][0] <= p <= self.percentiles_us[-1][0]

    def summary(self) -> dict[str, float | int | None]:
        """count, min, p50, p90, p95, p99, p99_9, max, mean (us); None where unknown.

        A percentile is unknown when the measurement has no distribution or when it lies
        outside the measured table (see :meth:`covers`); :meth:`percentile_us` still gives an
        interpolated or clamped value for it.
        """
        out: dict[str, float | int | None] = {
            "count": self.count,
            "min": self.min_us,
        }
        for name, p in PERCENTILES.items():
            out[name] = self.percentile_us(p) if self.covers(p) else None
        out["max"] = self.max_us
        out["mean"] = self.mean_us
        return out

    def with_conditions(self, **conditions: Any) -> Measurement:
        """A copy whose conditions are these merged over the current ones."""
        return replace(self, conditions={**self.conditions, **conditions})

    def __repr__(self) -> str:
        kind = (
            f"samples={self.samples_us.size}"
            if self.samples_us is not None
            else f"percentiles={len(self.percentiles_us)}"
        )
        return (
            f"Measurement(format={self.format!r}, source={self.source!r}, {kind}, "
            f"count={self.count}, min_us={self.min_us}, max_us={self.max_us}, "
            f"mean_us={self.mean_us}, conditions={dict(self.conditions)!r})"
        )
