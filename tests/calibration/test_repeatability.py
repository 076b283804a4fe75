"""A point's runs held against each other (calibration.repeatability): exact counts."""

from __future__ import annotations

import pytest

from calibration.repeatability import RunAgreement, pooled, run_agreement


def test_each_run_is_held_against_the_median_of_the_others() -> None:
    # Run 0 against the others' median 155 (p50) and 455 (p99): -35%, -34%, out on both.
    # Run 1 against 150 and 450: -27%, -31%, out. Run 2 against 105 and 305: +90%, +97%, out.
    assert run_agreement([100, 110, 200], [300, 310, 600], 15, 25) == RunAgreement(3, 0, 0, 0)
    # Four runs, one far off: the others' medians are 101 (p50) and 400 (p99) for runs 0-2
    # (within), and 100 against run 3's 150 (+50%, out) with p99 400 (within).
    agreement = run_agreement([100, 101, 102, 150], [400, 400, 400, 400], 15, 25)
    assert agreement == RunAgreement(runs=4, p50_within=3, p99_within=4, within_goal=3)
    assert agreement.share_within_goal == 0.75


def test_the_thresholds_are_inclusive_and_one_run_counts_nothing() -> None:
    # 115 against 100 is +15%, 100 against 115 -13%: both within; 116 against 100 is not.
    assert run_agreement([100, 115], [100, 125], 15, 25) == RunAgreement(2, 2, 2, 2)
    assert run_agreement([100, 116], [100, 100], 15, 25) == RunAgreement(2, 1, 2, 1)
    assert run_agreement([100], [100], 15, 25) == RunAgreement()
    assert RunAgreement().share_within_goal is None


def test_counts_pool_and_mismatched_runs_are_refused() -> None:
    total = pooled([RunAgreement(3, 2, 1, 1), RunAgreement(2, 2, 2, 2)])
    assert total == RunAgreement(5, 4, 3, 3)
    assert total.as_dict() == {"runs": 5, "p50_within": 4, "p99_within": 3, "within_goal": 3}
    with pytest.raises(ValueError, match="one of each a run"):
        run_agreement([1.0, 2.0], [1.0], 15, 25)
