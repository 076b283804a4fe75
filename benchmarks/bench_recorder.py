"""How long the load client's recorder stops its loop: folding as it goes against once a second.

The client's loop appends each round trip to a list and calls
:meth:`twin.testbed.recorder.IntervalRecorder.maybe_rotate` once a pass; whatever that call
takes, the loop sends nothing meanwhile, and an open loop's round trips, counted from their
scheduled times, carry the pause. This replays one second of passes at each rate (passes of 20
round trips, the lab's size at 128k msg/s) and times every call: the recorder as it is
(:data:`twin.testbed.recorder.FOLD_SAMPLES` at a time, the log written at close) and, side by
side, the same second's round trips turned into the interval's histogram and log line at once
(what the recorder did at each interval's end before 2026-11-26). Writes
``benchmarks/results/recorder.json``.
"""

from __future__ import annotations

import io
import tempfile
import time
from pathlib import Path

import numpy as np
from hdrh.log import HistogramLogWriter

from twin.atomic import write_json
from twin.histogram import to_hdr
from twin.testbed.recorder import FOLD_SAMPLES, KINDS, IntervalRecorder, counts_of_ns

RESULTS = Path(__file__).resolve().parent / "results" / "recorder.json"
RATES = (32_000, 128_000, 256_000)  # round trips recorded per second
PER_PASS = 20
REPEATS = 5


def _second(rate: int, seed: int) -> list[int]:
    rng = np.random.default_rng(seed)
    return [int(x) for x in rng.lognormal(np.log(100e3), 0.6, rate)]


def folding_pauses_us(values: list[int], log_dir: Path) -> np.ndarray:
    """Each ``maybe_rotate`` call's time (us) over one interval of passes, the interval's end
    included."""
    rec = IntervalRecorder(log_dir / "rtt.hlog", base_ns=0, start_wall_s=0.0, interval_s=1.0)
    gap_ns = 1_000_000_000 * PER_PASS // len(values)
    pauses, now = [], 0
    for start in range(0, len(values), PER_PASS):
        for i, rtt in enumerate(values[start : start + PER_PASS]):
            rec.pending[KINDS[i % 2]].append(rtt)
        now += gap_ns
        t = time.perf_counter_ns()
        rec.maybe_rotate(now)
        pauses.append(time.perf_counter_ns() - t)
    t = time.perf_counter_ns()
    rec.maybe_rotate(1_000_000_000)
    pauses.append(time.perf_counter_ns() - t)
    rec.close(1_000_000_000)
    return np.asarray(pauses) / 1e3


def at_once_pause_us(values: list[int]) -> float:
    """One interval's round trips turned into its histogram and log line in one call (us)."""
    t = time.perf_counter_ns()
    half = len(values) // 2
    counts = counts_of_ns(values[:half]) + counts_of_ns(values[half:])
    HistogramLogWriter(io.StringIO()).output_interval_histogram(
        to_hdr(counts), max_value_unit_ratio=1000.0
    )
    return (time.perf_counter_ns() - t) / 1e3


def main() -> dict[str, object]:
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for rate in RATES:
            longest, totals, at_once = [], [], []
            for repeat in range(REPEATS):
                values = _second(rate, repeat)
                pauses = folding_pauses_us(values, Path(tmp))
                longest.append(float(pauses.max()))
                totals.append(float(pauses.sum()))
                at_once.append(at_once_pause_us(values))
            row = {
                "round_trips_per_s": rate,
                "folding_longest_pause_us": float(np.median(longest)),
                "folding_total_us": float(np.median(totals)),
                "at_once_pause_us": float(np.median(at_once)),
            }
            row["longest_pause_ratio"] = row["at_once_pause_us"] / row["folding_longest_pause_us"]
            rows.append(row)
            print(
                f"{rate:>7} round trips/s: longest pause {row['folding_longest_pause_us']:.0f} us "
                f"folding every {FOLD_SAMPLES} (total {row['folding_total_us']:.0f} us) against "
                f"{row['at_once_pause_us']:.0f} us at once (x{row['longest_pause_ratio']:.0f})"
            )
    result = {
        "benchmark": "the load client's recorder: its longest stop of the loop in one interval",
        "fold_samples": FOLD_SAMPLES,
        "round_trips_per_pass": PER_PASS,
        "repeats": REPEATS,
        "rows": rows,
    }
    write_json(RESULTS, result)
    return result


if __name__ == "__main__":
    main()
