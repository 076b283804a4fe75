"""A prediction judged against the measurement's own noise: how far a point's runs stray from
each other, and how far the model strays from them.

For a point of at least two runs, each run's p50, p99 and throughput is held against the median
of the point's *other* runs (as :func:`calibration.repeatability.run_agreement` does); the
absolute relative error (%) of each is what repeating the measurement costs (:func:`run_spread`).
Over a set of predicted points (a system's, or every system's):

* ``repeat_ratio[k]`` (``k``: ``p50``, ``p99``, ``throughput``) is the model's median absolute
  error at ``k`` divided by the runs' median absolute error at ``k`` over the same points:
  1.0 is a prediction that strays from a point as far as a repeat of its measurement strays
  from the others; 2.0 twice as far. None where no point has both.
* ``consistent_share`` is the share of points whose prediction is inside what their runs allow:
  at every statistic both sides state, the model's error is at most the largest of the point's
  runs' errors. A prediction the model could not make (an unstable run) is never consistent.

Errors are relative to the point's median, in percent; a missing prediction of a measured value
counts as an infinite error (it raises a median rather than leaving the point out).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from typing import Any

STATISTICS = ("p50", "p99", "throughput")


def run_spread(values: Sequence[float | None]) -> list[float]:
    """Each known value's absolute error (%) against the median of the other known values;
    empty below two known values."""
    known = [v for v in values if v is not None and v > 0]
    if len(known) < 2:
        return []
    spread = []
    for i, value in enumerate(known):
        rest = statistics.median(known[:i] + known[i + 1 :])
        spread.append(abs(value / rest - 1.0) * 100.0)
    return spread


def point_spread(per_run: Mapping[str, Sequence[float | None]]) -> dict[str, list[float]]:
    """:func:`run_spread` of each statistic of :data:`STATISTICS` (``per_run``: its value in
    each run, in run order)."""
    return {k: run_spread(per_run.get(k, ())) for k in STATISTICS}


def _model_error(point: Mapping[str, Any], key: str) -> float | None:
    """The model's absolute error (%) at ``key``: None where nothing was measured, inf where a
    measured value was not predicted."""
    if point["measured"].get(key) is None:
        return None
    error = point["error_pct"].get(key)
    return math.inf if error is None else abs(error)


def judged_points(points: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The points the judge reads: predicted (not the calibration point), with their runs'
    spread stated (matrix files written before it was have none)."""
    return [p for p in points if not p["calibration"] and "run_spread_pct" in p]


def consistent(point: Mapping[str, Any]) -> bool | None:
    """Whether the prediction is within the widest of the point's runs' errors at every
    statistic both state; None when no statistic has both."""
    verdicts = []
    for key in STATISTICS:
        spread = point["run_spread_pct"].get(key) or []
        error = _model_error(point, key)
        if spread and error is not None:
            verdicts.append(error <= max(spread))
    return all(verdicts) if verdicts else None


def judge(points: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """``repeat_ratio`` and ``consistent_share`` (module docstring) over ``points`` (matrix
    point entries; only :func:`judged_points` count), with the medians they come from."""
    judged = judged_points(points)
    ratio: dict[str, float | None] = {}
    model_median: dict[str, float | None] = {}
    runs_median: dict[str, float | None] = {}
    for key in STATISTICS:
        errors: list[float] = []
        spreads: list[float] = []
        for p in judged:
            error, spread = _model_error(p, key), p["run_spread_pct"].get(key) or []
            if error is not None and spread:
                errors.append(error)
                spreads.extend(spread)
        model = float(statistics.median(errors)) if errors else None
        runs = float(statistics.median(spreads)) if spreads else None
        model_median[key], runs_median[key] = model, runs
        ratio[key] = None if model is None or not runs else model / runs
    verdicts = [v for v in (consistent(p) for p in judged) if v is not None]
    return {
        "repeat_ratio": ratio,
        "consistent_share": sum(verdicts) / len(verdicts) if verdicts else None,
        "consistent_points": len(verdicts),
        "model_median_abs_err_pct": model_median,
        "runs_median_abs_err_pct": runs_median,
    }
