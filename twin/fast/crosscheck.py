"""Comparing two engines' outputs on the same path and load: the fast-vs-reference contract.

Both engines fill histograms with the same HDR layout, so distributions compare bucket by bucket:
:func:`ks_distance` is the two-sample Kolmogorov-Smirnov statistic on the common buckets (exact up
to the 0.1% bucket width), and :func:`compare` adds each percentile's relative difference and a
distribution-free check of where one engine's percentile falls in the other's sample.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from twin.percentiles import PERCENTILES
from twin.replicate import statistics_of
from twin.results import EngineOutput

# Flows a shipped scenario needs to carry a cross-check rate: one kernel flow cannot carry 400k
# msg/s (RSS keeps it on one queue core, which saturates), so the Aeron echo spreads it over 4.
CROSSCHECK_FLOWS = {("aeron_echo_cpg", 400_000): 4}


def ks_distance(counts_a: np.ndarray, counts_b: np.ndarray) -> float:
    """Largest gap between the two empirical CDFs (histograms in the twin's layout)."""
    cdf_a = np.cumsum(counts_a) / counts_a.sum()
    cdf_b = np.cumsum(counts_b) / counts_b.sum()
    return float(np.max(np.abs(cdf_a - cdf_b)))


def ks_critical(n_a: int, n_b: int, alpha: float = 0.001) -> float:
    """Two-sample KS distance exceeded with probability ``alpha`` when both samples are i.i.d.

    Queueing samples are positively correlated, so this is a lower bound on the honest threshold.
    """
    c = math.sqrt(-0.5 * math.log(alpha / 2))
    return c * math.sqrt((n_a + n_b) / (n_a * n_b))


def cdf_at(counts: np.ndarray, value_us: float) -> float:
    """Fraction of a histogram's samples at or below ``value_us`` (to bucket resolution)."""
    from twin.histogram import counts_index

    index = int(counts_index(np.int64(round(value_us * 1e3))))
    return float(counts[: index + 1].sum() / counts.sum())


@dataclass(frozen=True)
class Comparison:
    """How far a candidate engine's output is from a reference's."""

    reference: dict[str, float]
    candidate: dict[str, float]
    relative_difference: dict[str, float]  # candidate / reference - 1
    reference_rank: dict[str, float]  # reference CDF at the candidate's percentile
    ks: float
    reference_messages: int
    candidate_messages: int

    def to_dict(self) -> dict[str, object]:
        return {
            "reference": self.reference,
            "candidate": self.candidate,
            "relative_difference": self.relative_difference,
            "reference_rank": self.reference_rank,
            "ks": self.ks,
            "reference_messages": self.reference_messages,
            "candidate_messages": self.candidate_messages,
        }


def compare(reference: EngineOutput, candidate: EngineOutput) -> Comparison:
    """Percentiles, their relative differences, ranks and the KS distance of two outputs."""
    ref = statistics_of(reference)
    cand = statistics_of(candidate)
    return Comparison(
        reference=ref,
        candidate=cand,
        relative_difference={k: cand[k] / ref[k] - 1 for k in ref},
        reference_rank={k: cdf_at(reference.counts, cand[k]) for k in PERCENTILES},
        ks=ks_distance(reference.counts, candidate.counts),
        reference_messages=reference.messages,
        candidate_messages=candidate.messages,
    )
