"""The inbound pipeline calibrated on one measured feed run, and its predictions of the others.

:func:`fit_pipeline` reads a ``twin testbed feed`` run folder (``reads.parquet``,
``messages.parquet``) into a :class:`twin.pipeline.PipelineModel`: the work samples of each
stage as measured (the first message of a read apart from the others), the TLS work's growth
with a read's size (a least-squares line through the median TLS time of each read size, which
is why the calibration run cycles several burst sizes at one rate), the cost of each further
TLS record in a read (reads that caught several bursts), the feed source's lateness and work per
message, and the delivery time of reads the thread was idle for. :func:`predict_run` replays
another run's rate and bursts through the model and compares each stage's p50 and p99 with what
that run measured.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from twin.errors import MeasurementError
from twin.jsontext import read_json, regular_file, stated_number
from twin.pipeline import MESSAGE_STAGES, PipelineModel, burst_schedule, simulate_pipeline

COMPARED = ("poll_to_read", "tls", *MESSAGE_STAGES, "inbound", "wire")
# A run whose wire p99 is this many times the calibration run's was overloaded somewhere (the
# source or the client fell behind): beyond the pipeline's saturation, not a point to predict.
OVERLOAD_FACTOR = 10.0
# A poll this long after the previous read's work ended found the thread asleep.
IDLE_GAP_NS = 20_000
# Reads after a longer idle gap are cold. The class boundary is chosen from the calibration
# data: after 20-100 us idle a read's TLS took ~5 us, after more than 1 ms ~13 us.
COLD_GAP_NS = 100_000


def _summary(run_dir: Path) -> dict[str, Any]:
    try:
        summary = read_json(run_dir / "summary.json")
    except (OSError, ValueError) as exc:
        raise MeasurementError(f"{run_dir}: not a twin testbed feed run ({exc})") from None
    if not isinstance(summary, dict) or not {"conditions", "stages_us"} <= summary.keys():
        raise MeasurementError(f"{run_dir}/summary.json: not a feed summary (conditions, stages)")
    try:
        _check_summary(summary)
    except KeyError as exc:
        raise MeasurementError(f"{run_dir}/summary.json: not a feed summary (no {exc})") from None
    except (TypeError, ValueError, AttributeError) as exc:
        raise MeasurementError(f"{run_dir}/summary.json: not a feed summary ({exc})") from None
    return summary


def _check_summary(summary: dict[str, Any]) -> None:
    """A feed run's conditions, stages and messages a read, as :func:`predict_run` reads them:
    numbers that are finite and >= 0 (a rate > 0, bursts whole numbers >= 1), every compared
    stage's p50 and p99; TypeError, ValueError or KeyError otherwise."""
    c = summary["conditions"]
    if not stated_number(c["rate_msgs_per_s"], "conditions.rate_msgs_per_s") > 0:
        raise ValueError("conditions.rate_msgs_per_s must be > 0")
    stated_number(c["duration_s"], "conditions.duration_s")
    bursts = c["bursts"]
    if not isinstance(bursts, list) or not bursts:
        raise TypeError(f"conditions.bursts = {bursts!r}: expected a list of burst sizes")
    for b in bursts:
        if isinstance(b, bool) or not isinstance(b, int) or b < 1:
            raise ValueError(f"conditions.bursts: {b!r} is not a whole number >= 1")
    for stage in COMPARED:
        for q in ("p50", "p99"):
            stated_number(summary["stages_us"][stage][q], f"stages_us.{stage}.{q}")
    mean = summary["messages_per_read"]["mean_weighted_by_message"]
    stated_number(mean, "messages_per_read.mean_weighted_by_message")


MAX_FEED_ROWS_BYTES = 1 << 30  # a feed run's raw rows (its largest committed: a few MB)


def _frames(run_dir: Path) -> tuple[pl.DataFrame, pl.DataFrame]:
    try:
        # A FIFO or device in their place would block polars' reader for good.
        reads = pl.read_parquet(regular_file(run_dir / "reads.parquet", MAX_FEED_ROWS_BYTES))
        messages = pl.read_parquet(regular_file(run_dir / "messages.parquet", MAX_FEED_ROWS_BYTES))
    except MeasurementError:
        raise
    except (OSError, ValueError, pl.exceptions.PolarsError) as exc:
        raise MeasurementError(f"{run_dir}: no raw feed rows to calibrate on ({exc})") from None
    if reads.height == 0 or messages.height == 0:
        raise MeasurementError(f"{run_dir}: no recorded reads")
    return reads, messages


def _line(x: np.ndarray, y: np.ndarray) -> float:
    """Slope of a least-squares line through the medians of ``y`` at each ``x`` (0 for one x)."""
    cells = pl.DataFrame({"x": x, "y": y}).group_by("x").agg(pl.col("y").median()).sort("x")
    if cells.height < 2:
        return 0.0
    return max(float(np.polyfit(cells["x"].to_numpy(), cells["y"].to_numpy(), 1)[0]), 0.0)


def fit_pipeline(run_dir: Path) -> PipelineModel:
    """The pipeline model of one measured run (module docstring)."""
    reads, messages = _frames(run_dir)
    per_read = (
        messages.group_by("read")
        .agg(
            pl.col("sent").n_unique().alias("records"),
            pl.col("wire").first().alias("wire"),
            pl.col("decode", "parse", "update").sum(),
        )
        .with_columns(pl.col("read").cast(pl.UInt32))
    )
    table = reads.with_row_index("read").join(per_read, on="read", how="inner").sort("read")
    n = table["messages"].to_numpy()
    records = table["records"].to_numpy()
    tls = table["tls"].to_numpy().astype(float)
    end = (
        table["poll_ns"] + table["poll_to_read"] + table["tls"]
        + table["decode"] + table["parse"] + table["update"] + table["after"]
    ).to_numpy()  # fmt: skip
    gap = np.concatenate([[np.inf], table["poll_ns"].to_numpy()[1:] - end[:-1]])
    cold = gap > COLD_GAP_NS
    # TLS work: a cold or warm base, plus per further message (bytes) and per further record.
    design = np.column_stack([np.ones(n.size), cold, n - 1, records - 1])
    (_, _, per_message, per_record), *_ = np.linalg.lstsq(design, tls, rcond=None)
    per_message, per_record = max(float(per_message), 0.0), max(float(per_record), 0.0)
    tls_one = np.maximum(tls - per_message * (n - 1) - per_record * (records - 1), 0.0)
    idle = (gap > IDLE_GAP_NS) & (records == 1)
    if not idle.any():
        idle = records == 1
    wire = table["wire"].to_numpy().astype(float)
    source_per_message = _line(n[idle], wire[idle])
    delivery = wire[idle] - source_per_message * n[idle]
    bursts = messages.group_by("sent").agg(pl.col("late").first()).sort("sent")
    late, sent = bursts["late"].to_numpy(), bursts["sent"].to_numpy()
    slept = np.concatenate([[True], sent[1:] - late[1:] > sent[:-1]])  # due after the last send
    after = table["after"].to_numpy().astype(float) if "after" in table.columns else np.zeros(1)
    after_per_message = _line(n, after) if after.size == n.size else 0.0
    after_one = (
        np.maximum(after - after_per_message * (n - 1), 0.0) if after.size == n.size else after
    )
    cold_reads = table["read"].filter(pl.Series(cold)).to_list()
    first = messages.filter(pl.col("k") == 0)
    first_cold = first.filter(pl.col("read").is_in(cold_reads))
    first_warm = first.filter(~pl.col("read").is_in(cold_reads))
    first_warm = first_warm if first_warm.height else first
    first_cold = first_cold if first_cold.height else first
    rest = messages.filter(pl.col("k") > 0)
    rest = rest if rest.height else first
    return PipelineModel(
        poll_to_read_ns=reads["poll_to_read"].to_numpy().astype(float),
        tls_ns=tls_one[~cold] if (~cold).any() else tls_one,
        tls_cold_ns=tls_one[cold] if cold.any() else tls_one,
        cold_after_ns=COLD_GAP_NS,
        tls_per_message_ns=per_message,
        tls_per_record_ns=per_record,
        first={s: first_warm[s].to_numpy().astype(float) for s in MESSAGE_STAGES},
        first_cold={s: first_cold[s].to_numpy().astype(float) for s in MESSAGE_STAGES},
        rest={s: rest[s].to_numpy().astype(float) for s in MESSAGE_STAGES},
        delivery_ns=np.maximum(delivery, 0.0),
        source_lateness_ns=np.maximum(late[slept], 0).astype(float),
        source_per_message_ns=source_per_message,
        after_ns=after_one,
        after_per_message_ns=after_per_message,
    )


def _percentiles_us(values_ns: np.ndarray) -> dict[str, float]:
    return {
        "p50": float(np.percentile(values_ns, 50)) / 1e3,
        "p99": float(np.percentile(values_ns, 99)) / 1e3,
    }


def predict_run(
    model: PipelineModel, run_dir: Path, calibration_dir: Path, seed: int = 1
) -> dict[str, Any]:
    """Measured vs predicted p50 and p99 (us) per stage of one run, with relative errors; the
    run is flagged ``overloaded`` when its wire p99 is :data:`OVERLOAD_FACTOR` times the
    calibration run's."""
    summary = _summary(run_dir)
    reference = _summary(calibration_dir)["stages_us"]["wire"]["p99"]
    c = summary["conditions"]
    send, sizes = burst_schedule(c["rate_msgs_per_s"], c["bursts"], c["duration_s"])
    predicted = simulate_pipeline(model, send, sizes, seed)
    stages = {}
    for stage in COMPARED:
        measured = summary["stages_us"][stage]
        guess = _percentiles_us(predicted[stage])
        stages[stage] = {
            f"{q}_{side}": value
            for q in ("p50", "p99")
            for side, value in (("measured_us", measured[q]), ("predicted_us", guess[q]))
        } | {
            f"{q}_error": guess[q] / measured[q] - 1 if measured[q] > 0 else None
            for q in ("p50", "p99")
        }
    return {
        "run": run_dir.name,
        "rate_msgs_per_s": c["rate_msgs_per_s"],
        "bursts": c["bursts"],
        "messages_per_read_measured": summary["messages_per_read"]["mean_weighted_by_message"],
        "messages_per_read_predicted": float(predicted["read_size"].mean()),
        "thread_busy_share_predicted": float(predicted["thread_busy_share"][0]),
        "overloaded": summary["stages_us"]["wire"]["p99"] > OVERLOAD_FACTOR * reference,
        "stages": stages,
    }


def accuracy(predictions: list[dict[str, Any]]) -> dict[str, Any]:
    """Median absolute p50 and p99 errors over every stage of every run that was not
    overloaded, and the share of (run, stage) pairs within the issue's goals (p50 15%, p99
    25%); ``overloaded_runs`` names the runs left out."""
    left_out = [r["run"] for r in predictions if r["overloaded"]]
    predictions = [r for r in predictions if not r["overloaded"]]
    p50 = [abs(st["p50_error"]) for r in predictions for st in r["stages"].values()
           if st["p50_error"] is not None]  # fmt: skip
    p99 = [abs(st["p99_error"]) for r in predictions for st in r["stages"].values()
           if st["p99_error"] is not None]  # fmt: skip
    within = [
        st["p50_error"] is not None and abs(st["p50_error"]) <= 0.15
        and st["p99_error"] is not None and abs(st["p99_error"]) <= 0.25
        for r in predictions for st in r["stages"].values()
    ]  # fmt: skip
    return {
        "p50_median_abs_error": float(np.median(p50)) if p50 else None,
        "p99_median_abs_error": float(np.median(p99)) if p99 else None,
        "within_goal_share": float(np.mean(within)) if within else None,
        "pairs": len(within),
        "overloaded_runs": left_out,
    }
