"""Issue 75: the lab's output reads as text: a child's repeated warning is one line and a
count, a campaign's progress is rounded, and a campaign whose rates all held does not call the
highest of them "saturation measured"."""

from __future__ import annotations

import io

from twin.testbed.cli import campaign_row_text, saturation_line
from twin.testbed.processes import collapse_repeats


def test_a_repeated_line_is_written_once_with_its_count() -> None:
    out = io.StringIO()
    warning = "socket.send() raised exception.\n"
    collapse_repeats(["start\n", *[warning] * 45_989, "done\n", "done\n"], out)
    assert out.getvalue().splitlines() == [
        "start",
        "socket.send() raised exception.",
        "  (the line above 45,988 more times)",
        "done",
        "  (the line above 1 more time)",
    ]


def test_a_campaign_row_is_rounded_not_seventeen_digits() -> None:
    row = {"rate_msgs_per_s": 4000.0, "achieved_msgs_per_s": 3998.123456789012,
           "p99_us": 83.12345678901234, "saturated": False, "lost": 0}  # fmt: skip
    text = campaign_row_text(row)
    assert text == (
        "campaign: rate_msgs_per_s 4,000, achieved_msgs_per_s 3,998, p99_us 83.12, "
        "saturated False, lost 0"
    )


def test_predict_says_saturation_was_not_reached_when_every_rate_held() -> None:
    held = {"measured_saturation_msgs_per_s": 8000.0, "predicted_saturation_msgs_per_s": 21_000.4,
            "saturation_reached": False}  # fmt: skip
    line = saturation_line(held)
    assert "measured" not in line and "not reached" in line and "8,000" in line
    reached = dict(held, saturation_reached=True)
    assert saturation_line(reached).startswith("saturation: measured 8,000 msg/s")
    none = dict(held, measured_saturation_msgs_per_s=None)
    assert "every rate tried saturated" in saturation_line(none)
