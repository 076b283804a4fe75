"""Issue 20: the real inbound pipeline (TLS WebSocket JSON feed) measured per stage."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from calibration.feed import fit_pipeline, predict_run
from twin.errors import ConfigError, MeasurementError
from twin.testbed.feed import FeedConfig, measure_feed
from twin.testbed.feed_client import STAGES
from twin.testbed.wsframe import (
    OP_TEXT,
    FrameError,
    accept_key,
    next_frame,
    server_response,
    text_frame,
)

pytestmark = [pytest.mark.timeout(180), pytest.mark.exclusive]


@pytest.mark.parametrize("size", [0, 125, 126, 65_535, 65_536])
def test_text_frames_round_trip_at_every_length_encoding(size: int) -> None:
    payload = bytes(range(256)) * (size // 256) + bytes(size % 256)
    wire = text_frame(payload) + text_frame(b"next")
    opcode, got, at = next_frame(wire, 0)
    assert (opcode, got) == (OP_TEXT, payload)
    assert next_frame(wire, at)[1] == b"next"
    assert next_frame(wire[: at - 1], 0) is None  # incomplete: wait for more bytes


def test_the_handshake_and_frames_the_feed_never_sends() -> None:
    # RFC 6455 section 1.3's example key and answer.
    assert accept_key("dGhlIHNhbXBsZSBub25jZQ==") == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="
    with pytest.raises(FrameError):
        server_response(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
    for bad in (b"\x01\x05hello", b"\x81\x85maskhello", b"\xc1\x05hello"):
        with pytest.raises(FrameError):
            next_frame(bad, 0)


def test_bad_feed_settings_are_refused() -> None:
    for kwargs in (
        {"rate_msgs_per_s": 0},
        {"rate_msgs_per_s": 10, "bursts": (0,)},
        {"rate_msgs_per_s": 10, "bursts": ()},
    ):
        with pytest.raises(ConfigError):
            FeedConfig(**kwargs)


def test_a_feed_run_times_every_stage_of_every_message(tmp_path) -> None:
    summary = measure_feed(FeedConfig(1_000, bursts=(8,), duration_s=1.5, warmup_s=0.3), tmp_path)
    recorded = summary["counts"]["recorded"]
    assert 0.8 * 1_500 <= recorded <= 1.2 * 1_500
    assert all(summary["stages_us"][s]["count"] == recorded for s in STAGES)
    assert {f"{s}.hgrm" for s in STAGES} <= {p.name for p in tmp_path.iterdir()}
    # Bursts of 8 arrive in reads of several messages, and a message's decode latency is the
    # read's decode work up to and including its own: the stage's mean equals the mean of the
    # per-read running sums of each message's own decode work (messages.parquet).
    assert summary["messages_per_read"]["mean_weighted_by_message"] > 2
    import polars as pl

    own = pl.read_parquet(tmp_path / "messages.parquet")
    running = own.with_columns(pl.col("decode").cum_sum().over("read").alias("so_far"))
    assert summary["stages_us"]["decode"]["mean"] == pytest.approx(
        running["so_far"].mean() / 1e3, rel=0.01
    )
    inbound = summary["stages_us"]["inbound"]
    assert inbound["p50"] >= summary["stages_us"]["tls"]["p50"]
    assert summary["counts"]["sequence_gaps"] == 0


def test_bad_input_is_counted_and_the_run_goes_on(tmp_path) -> None:
    """Invalid JSON, a truncated frame and a broken TLS record, in turn, every 10th burst."""
    config = FeedConfig(1_000, bursts=(4,), duration_s=1.5, warmup_s=0.2, fault_every=10)
    counts = measure_feed(config, tmp_path)["counts"]
    assert counts["json_errors"] >= 2 and counts["frame_errors"] >= 2
    assert counts["tls_errors"] >= 2 and counts["reconnects"] == counts["tls_errors"]
    assert counts["recorded"] > 500


def test_the_pipeline_calibrates_on_one_run_and_predicts_another(tmp_path) -> None:
    """fit_pipeline reads a calibration run (several burst sizes at one rate); predict_run
    compares every stage of another run, measured against predicted."""
    from calibration.feed import COMPARED, accuracy

    measure_feed(FeedConfig(4_000, bursts=(1, 2, 4, 8), duration_s=1.5, warmup_s=0.3),
                 tmp_path / "calibration")  # fmt: skip
    measure_feed(FeedConfig(2_000, bursts=(4,), duration_s=1.0, warmup_s=0.3), tmp_path / "b4")
    model = fit_pipeline(tmp_path / "calibration")
    assert model.tls_per_message_ns >= 0 and model.source_per_message_ns > 0
    result = predict_run(model, tmp_path / "b4", tmp_path / "calibration")
    assert set(result["stages"]) == set(COMPARED) and result["bursts"] == [4]
    for stage in result["stages"].values():
        assert (
            stage["p50_predicted_us"] > 0 and stage["p99_predicted_us"] >= stage["p50_predicted_us"]
        )
    assert 0 < result["thread_busy_share_predicted"] < 1 and not result["overloaded"]
    assert accuracy([result])["pairs"] == len(COMPARED)


@pytest.mark.parametrize(
    ("spoil", "message"),
    [
        (lambda s: s["conditions"].update(rate_msgs_per_s="x"), "rate_msgs_per_s = 'x'"),
        (lambda s: s["conditions"].update(bursts=[0]), "bursts: 0 is not a whole number >= 1"),
        (lambda s: s["stages_us"]["wire"].update(p99=float("nan")), "wire.p99 = nan"),
        (lambda s: s["stages_us"].pop("tls"), "(no 'tls')"),
    ],
    ids=["rate", "bursts", "stage-nan", "stage-missing"],
)
def test_a_feed_summary_that_is_not_the_labs_is_one_error_naming_it(tmp_path, spoil, message):
    """Read from the committed lab's run: not a traceback, nor a number taken into the model."""
    lab = Path(__file__).resolve().parents[3] / "calibration" / "data" / "feed"
    shutil.copytree(lab / "b1r5k", tmp_path / "b1r5k")
    path = tmp_path / "b1r5k" / "summary.json"
    summary = json.loads(path.read_text())
    spoil(summary)
    path.write_text(json.dumps(summary))
    expected = re.escape("summary.json: not a feed summary") + ".*" + re.escape(message)
    with pytest.raises(MeasurementError, match=expected):
        predict_run(fit_pipeline(lab / "calibration"), tmp_path / "b1r5k", lab / "calibration")
