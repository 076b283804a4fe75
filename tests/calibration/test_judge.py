"""The model judged against its measurement's own noise (calibration.judge)."""

from __future__ import annotations

import math

import pytest

from calibration.judge import consistent, judge, point_spread, run_spread


def test_each_run_is_held_against_the_median_of_the_others() -> None:
    # 100 against median(110, 90) = 100: 0%; 110 against median(100, 90) = 95: 15.8%; ...
    spread = run_spread([100.0, 110.0, 90.0])
    assert spread == pytest.approx([0.0, 100 * (110 / 95 - 1), 100 * (1 - 90 / 105)])
    assert run_spread([100.0]) == [] and run_spread([None, 5.0]) == []
    assert run_spread([None, 5.0, 10.0]) == pytest.approx([50.0, 100.0])


def _point(measured: dict, error: dict, spread: dict, calibration: bool = False) -> dict:
    return {
        "calibration": calibration,
        "measured": measured,
        "error_pct": error,
        "run_spread_pct": spread,
    }


def test_repeat_ratio_and_consistent_share() -> None:
    measured = {"p50": 10.0, "p99": 50.0, "throughput": 1000.0}
    a = _point(measured, {"p50": 4.0, "p99": -20.0, "throughput": 1.0},
               {"p50": [1.0, 3.0, 5.0], "p99": [10.0, 30.0], "throughput": [2.0]})  # fmt: skip
    b = _point(measured, {"p50": -2.0, "p99": 5.0, "throughput": None},
               {"p50": [2.0, 2.0], "p99": [10.0, 10.0], "throughput": [1.0]})  # fmt: skip
    worst = {"p50": 99.0, "p99": 99.0, "throughput": 99.0}
    calibration = _point(measured, worst, {"p50": [1.0]}, calibration=True)
    judged = judge([a, b, calibration])  # the calibration point is not judged
    # p50: model median(4, 2) = 3 over runs' median(1, 3, 5, 2, 2) = 2.
    assert judged["repeat_ratio"]["p50"] == pytest.approx(1.5)
    assert judged["repeat_ratio"]["p99"] == pytest.approx(12.5 / 10.0)
    # Throughput: b's was measured and not predicted, an infinite error.
    assert judged["model_median_abs_err_pct"]["throughput"] == math.inf
    assert consistent(a) is True  # 4 <= 5, 20 <= 30, 1 <= 2
    assert consistent(b) is False  # throughput unpredicted
    assert judged["consistent_share"] == 0.5 and judged["consistent_points"] == 2


def test_points_without_a_stated_spread_are_left_out() -> None:
    old = {"calibration": False, "measured": {"p50": 1.0}, "error_pct": {"p50": 3.0}}
    assert judge([old]) == judge([])
    assert judge([])["repeat_ratio"] == {"p50": None, "p99": None, "throughput": None}
    assert point_spread({"p50": [1.0, 2.0]})["p99"] == []
