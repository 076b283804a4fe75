"""What a reported interval covers, how many digits it earns, and when a percentile has too few
samples to mean much: one home for the honesty rules of every output.

* **What varies** (:class:`Varied`): replications of ``twin run`` vary the seed with the
  placement fixed (the noise of one deployment), or with ``--vary placement`` also draw a new
  placement per replication (the spread a user sees across deployments); a sweep always draws
  the placement per replication. Every interval printed says which.
* **Significant figures follow the interval** (:func:`with_interval`): the half-width is shown
  with two significant figures and the value to the same decimal place, so ``572,820 +- 3,400``
  reads ``572,800 +- 3,400`` and claims no digit the interval does not support.
* **Too few samples** (:func:`few_samples`): a percentile ``q`` of ``n`` round trips rests on
  the ``n x (1 - q)`` samples beyond it. With fewer than :data:`MIN_TAIL_SAMPLES` it is one of
  the last few order statistics, whose spread dwarfs any interval from a handful of
  replications: it is flagged, and a sweep prints no interval for it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from enum import StrEnum

from twin.percentiles import PERCENTILES, label

MIN_TAIL_SAMPLES = 10


class Varied(StrEnum):
    """What changes between the replications behind an interval."""

    SEED = "seed"  # the seed; the placement stays the scenario's own draw
    PLACEMENT = "placement"  # the seed and the placement, drawn anew per replication

    @property
    def covers(self) -> str:
        """One phrase for output: what the interval's spread includes."""
        if self is Varied.SEED:
            return "seed noise, placement fixed"
        return "seed noise and a placement drawn per replication"


def decimals_for(half_width: float) -> int:
    """Decimal places that show ``half_width`` with two significant figures (may be negative:
    -2 rounds to hundreds)."""
    if not math.isfinite(half_width) or half_width <= 0:
        return 1
    return 1 - math.floor(math.log10(half_width))


def rounded(value: float, decimals: int) -> str:
    """``value`` with thousands separators at ``decimals`` places (negative: to tens, ...)."""
    if decimals >= 0:
        return f"{value:,.{decimals}f}"
    return f"{round(value, decimals):,.0f}"


def with_interval(value: float, high: float | None) -> str:
    """``value +- half-width`` (the upper half-width, ``high - value``), both rounded to the
    half-width's two significant figures; the value alone to 0.1 when there is no interval."""
    if high is None or not math.isfinite(high) or high <= value:
        return f"{value:,.1f}"
    half = high - value
    places = decimals_for(half)
    return f"{rounded(value, places)} ± {rounded(half, places)}"


def bounds_text(low: float, high: float) -> str:
    """``low .. high``, both to two significant figures of the interval's half-width."""
    places = max(0, decimals_for((high - low) / 2))
    return f"{low:,.{places}f} .. {high:,.{places}f}"


def tail_samples(statistic: str, messages: int) -> float:
    """Round trips beyond percentile ``statistic`` among ``messages`` (inf for non-percentiles)."""
    q = PERCENTILES.get(statistic)
    return math.inf if q is None else round(messages * (100 - q) / 100, 6)  # 10,000 -> 10.0


def few_samples(statistics: Iterable[str], messages: int) -> list[str]:
    """The percentiles among ``statistics`` that rest on fewer than :data:`MIN_TAIL_SAMPLES`."""
    return [s for s in statistics if tail_samples(s, messages) < MIN_TAIL_SAMPLES]


def few_samples_note(statistics: Iterable[str], messages: int) -> str | None:
    """A warning line naming the percentiles with too few samples beyond them, or None."""
    flagged = few_samples(statistics, messages)
    if not flagged:
        return None
    beyond = ", ".join(f"{label(s)} on {tail_samples(s, messages):,.1f}" for s in flagged)
    return (
        f"warning: few samples beyond {beyond} (of {messages:,} round trips; "
        f"under {MIN_TAIL_SAMPLES} is an extreme order statistic): run longer"
    )
