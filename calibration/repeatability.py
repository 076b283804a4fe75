"""How well a point's measured runs agree with each other: the part of the goal a model can meet.

The accuracy matrix compares one simulated run with the median of a point's measured runs. A
model whose distribution were exactly the system's would still miss by as much as one run
misses the others, so each run is held against the median of the point's *other* runs with the
same thresholds (p50 within ``p50_pct``, p99 within ``p99_pct``): the share of runs that meet
them is about the share of points such a model would bring within the goal, the ceiling a
prediction's ``share_within_goal`` is to be read against. At high load a point's p99 rests on a
few long pauses in a run of seconds, and the runs of one point disagree by more than the goal
(design notes, 2026-11-28).

A point's measurement is the median of a few runs (the lab's three), which strays less from the
system's own median than one run does: :func:`median_agreement` holds the median of every
``k`` of a point's runs against the median of the rest, the share of points an exact model
would bring within the goal where a point is measured ``k`` times (``twin testbed repeat``
measures one point often enough to tell it).
"""

from __future__ import annotations

import itertools
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class RunAgreement:
    """Counts of runs (each against the median of its point's others) whose p50, p99, and both,
    are within the thresholds."""

    runs: int = 0
    p50_within: int = 0
    p99_within: int = 0
    within_goal: int = 0

    def __add__(self, other: RunAgreement) -> RunAgreement:
        return RunAgreement(
            self.runs + other.runs,
            self.p50_within + other.p50_within,
            self.p99_within + other.p99_within,
            self.within_goal + other.within_goal,
        )

    @property
    def share_within_goal(self) -> float | None:
        return self.within_goal / self.runs if self.runs else None

    def shares(self) -> tuple[float, float, float]:
        """The shares of the runs within the thresholds: p50, p99, both (0 of no runs)."""
        n = self.runs or 1
        return self.p50_within / n, self.p99_within / n, self.within_goal / n

    def as_dict(self) -> dict[str, int]:
        return asdict(self)


def _within(value: float, reference: float, pct: float) -> bool:
    return reference > 0 and abs(value / reference - 1.0) * 100.0 <= pct


def run_agreement(
    p50s: Sequence[float], p99s: Sequence[float], p50_pct: float, p99_pct: float
) -> RunAgreement:
    """Each of a point's runs (their p50s and p99s, us, in the same order) against the median of
    the others; no run counted for a point of fewer than two runs."""
    return median_agreement(p50s, p99s, 1, p50_pct, p99_pct)


def median_agreement(
    p50s: Sequence[float], p99s: Sequence[float], k: int, p50_pct: float, p99_pct: float
) -> RunAgreement:
    """The medians of every ``k`` of a point's runs (their p50s and p99s, us, in the same order)
    against the medians of the other runs, each such choice counted as one ``run``; none counted
    for a point of ``k`` runs or fewer. ``k`` 1 is each run against the others
    (:func:`run_agreement`)."""
    if len(p50s) != len(p99s):
        raise ValueError(f"{len(p50s)} p50s for {len(p99s)} p99s: one of each a run")
    if k < 1:
        raise ValueError(f"k {k}: a median of at least one run")
    total = RunAgreement()
    runs = range(len(p50s))
    for chosen in itertools.combinations(runs, k):
        rest = [i for i in runs if i not in chosen]
        if not rest:
            break
        p50 = _within(_median(p50s, chosen), _median(p50s, rest), p50_pct)
        p99 = _within(_median(p99s, chosen), _median(p99s, rest), p99_pct)
        total += RunAgreement(1, int(p50), int(p99), int(p50 and p99))
    return total


def _median(values: Sequence[float], indices: Iterable[int]) -> float:
    return statistics.median(values[i] for i in indices)


def pooled(agreements: Iterable[RunAgreement]) -> RunAgreement:
    """The counts of several points (or systems) added."""
    return sum(agreements, RunAgreement())
