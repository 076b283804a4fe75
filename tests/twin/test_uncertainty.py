"""Issue 22: digits that follow the interval, and percentiles flagged when few samples back them."""

from __future__ import annotations

import pytest

from twin.uncertainty import Varied, few_samples, few_samples_note, with_interval


@pytest.mark.parametrize(
    ("value", "high", "shown"),
    [
        (572_820.0, 576_220.0, "572,800 ± 3,400"),  # the capacity of the issue
        (69.534, 69.747, "69.53 ± 0.21"),
        (1_234.5, 1_294.5, "1,234 ± 60"),
        (101.0, 101.0, "101.0"),  # no spread: no interval
        (101.0, None, "101.0"),
    ],
)
def test_digits_follow_the_half_width(value: float, high: float | None, shown: str) -> None:
    assert with_interval(value, high) == shown


def test_a_percentile_with_few_samples_beyond_it_is_flagged() -> None:
    stats = ["p50", "p90", "p99", "p99_9", "max", "mean"]
    assert few_samples(stats, 1_000) == ["p99_9"]  # one sample beyond p99.9
    assert few_samples(stats, 10_000) == []  # ten beyond it
    assert few_samples(stats, 500) == ["p99", "p99_9"]
    note = few_samples_note(stats, 1_000)
    assert note is not None and "p99.9 on 1.0" in note and "run longer" in note
    assert few_samples_note(stats, 100_000) is None


def test_each_kind_of_interval_says_what_it_covers() -> None:
    assert "placement fixed" in Varied.SEED.covers
    assert "placement drawn" in Varied.PLACEMENT.covers
