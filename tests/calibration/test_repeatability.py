"""A point's runs held against each other (calibration.repeatability): exact counts."""

from __future__ import annotations

import pytest

from calibration.repeatability import RunAgreement, median_agreement, pooled, run_agreement


def test_each_run_is_held_against_the_median_of_the_others() -> None:
    # Run 0 against the others' median 155 (p50) and 455 (p99): -35%, -34%, out on both.
    # Run 1 against 150 and 450: -27%, -31%, out. Run 2 against 105 and 305: +90%, +97%, out.
    assert run_agreement([100, 110, 200], [300, 310, 600], 15, 25) == RunAgreement(3, 0, 0, 0)
    # Four runs, one far off: the others' medians are 101 (p50) and 400 (p99) for runs 0-2
    # (within), and 100 against run 3's 150 (+50%, out) with p99 400 (within).
    agreement = run_agreement([100, 101, 102, 150], [400, 400, 400, 400], 15, 25)
    assert agreement == RunAgreement(runs=4, p50_within=3, p99_within=4, within_goal=3)
    assert agreement.share_within_goal == 0.75
    assert agreement.shares() == (0.75, 1.0, 0.75)


def test_the_thresholds_are_inclusive_and_one_run_counts_nothing() -> None:
    # 115 against 100 is +15%, 100 against 115 -13%: both within; 116 against 100 is not.
    assert run_agreement([100, 115], [100, 125], 15, 25) == RunAgreement(2, 2, 2, 2)
    assert run_agreement([100, 116], [100, 100], 15, 25) == RunAgreement(2, 1, 2, 1)
    assert run_agreement([100], [100], 15, 25) == RunAgreement()
    assert RunAgreement().share_within_goal is None
    assert RunAgreement().shares() == (0.0, 0.0, 0.0)


def test_counts_pool_and_mismatched_runs_are_refused() -> None:
    total = pooled([RunAgreement(3, 2, 1, 1), RunAgreement(2, 2, 2, 2)])
    assert total == RunAgreement(5, 4, 3, 3)
    assert total.as_dict() == {"runs": 5, "p50_within": 4, "p99_within": 3, "within_goal": 3}
    with pytest.raises(ValueError, match="one of each a run"):
        run_agreement([1.0, 2.0], [1.0], 15, 25)


def test_the_median_of_a_few_runs_is_held_against_the_median_of_the_rest() -> None:
    p50s, p99s = [100, 100, 100, 100], [100, 110, 300, 320]
    # One run against the other three's median: 100 and 110 against 300, 300 and 320 against
    # 110: every p99 out.
    assert median_agreement(p50s, p99s, 1, 15, 25) == RunAgreement(4, 4, 0, 0)
    # Two runs' median against the other two's, six choices: {0, 1} 105 against 310 and {2, 3}
    # 310 against 105 out; {0, 2} 200 against 215, {0, 3} 210 against 205, {1, 2} 205 against
    # 210, {1, 3} 215 against 200 within.
    assert median_agreement(p50s, p99s, 2, 15, 25) == RunAgreement(6, 6, 4, 4)
    # As many runs as the median takes leaves nothing to hold it against.
    assert median_agreement(p50s, p99s, 4, 15, 25) == RunAgreement()
    assert median_agreement(p50s, p99s, 1, 15, 25) == run_agreement(p50s, p99s, 15, 25)
    with pytest.raises(ValueError, match="at least one run"):
        median_agreement(p50s, p99s, 0, 15, 25)
