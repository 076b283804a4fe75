"""The burst probe: cycles started in groups of known sizes (load client, CLI, live campaign)."""

from __future__ import annotations

import importlib
import json

import numpy as np
import pytest

from calibration.testbed.summary import read_summary
from twin.cli import build_parser, main
from twin.testbed import cli as testbed_cli
from twin.testbed.client import MAX_BURST, LoadConfig, LoadRun, _schedule

# The module, not the function ``twin.testbed.campaign`` that the package re-exports.
C = importlib.import_module("twin.testbed.campaign")

pytestmark = [pytest.mark.timeout(120), pytest.mark.exclusive]


def _cfg(**kw) -> LoadConfig:
    return LoadConfig(host="127.0.0.1", port=1, rate_msgs_per_s=1000, **kw)


def _class(batches: dict, size: int) -> int:
    """Index of the batch-size class that holds ``size``."""
    return int(np.searchsorted(batches["batch_from"], size, side="right") - 1)


# -- the schedule ---------------------------------------------------------------------------


def test_groups_share_one_instant_in_turn_and_keep_the_mean_rate():
    sizes = (1, 4, 16)
    due = _schedule(_cfg(burst_sizes=sizes, duration_s=60.0, warmup_s=0.0))
    starts, first, counts = np.unique(due, return_index=True, return_counts=True)
    assert np.all(np.diff(due) >= 0)
    assert list(counts[:30]) == [1, 4, 16] * 10
    assert all(n == sizes[g % 3] for g, n in enumerate(counts[:-1]))
    # 1000 msg/s = 500 cycles/s in groups of 7 on average: 71.4 groups/s (Poisson).
    assert len(due) / 60 == pytest.approx(500, rel=0.05)
    assert len(starts) / 60 == pytest.approx(500 / 7, rel=0.05)


def test_no_bursts_is_the_default_schedule():
    assert _cfg().burst_sizes == ()
    plain = _schedule(_cfg(seed=3))
    assert np.array_equal(_schedule(_cfg(seed=3, burst_sizes=())), plain)
    assert np.unique(plain).size == plain.size  # one cycle per instant
    # Groups of one: the same process at the same rate.
    assert np.array_equal(_schedule(_cfg(seed=3, burst_sizes=[1])), plain)


@pytest.mark.parametrize("sizes", [(0,), (1, -2), (1.5,), (True,), (MAX_BURST + 1,)])
def test_bad_burst_sizes_are_refused(sizes):
    with pytest.raises(ValueError, match="burst sizes"):
        _cfg(burst_sizes=sizes)


def test_bursts_need_the_open_loop():
    with pytest.raises(ValueError, match="open loop"):
        _cfg(burst_sizes=(4,), loop="closed")


# -- the command line ------------------------------------------------------------------------


@pytest.mark.parametrize("text", ["0", "1,0", "-1", "1.5", "a", "", "1,,4", "none", "99999"])
def test_load_refuses_bad_burst_sizes(text, tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["testbed", "load", "--rate", "1000", "--out", str(tmp_path), "--burst-sizes", text])
    assert exc.value.code == 2
    assert "--burst-sizes" in capsys.readouterr().err


def test_campaign_probe_option(tmp_path, capsys):
    parse = build_parser().parse_args
    base = ["testbed", "campaign", "--rates", "1000", "--out", str(tmp_path)]
    assert parse(base).probe_bursts == C.DEFAULT_PROBE_BURSTS == testbed_cli.DEFAULT_PROBE_BURSTS
    assert parse([*base, "--probe-bursts", "none"]).probe_bursts == ()
    assert parse([*base, "--probe-bursts", "2, 8"]).probe_bursts == (2, 8)
    with pytest.raises(SystemExit) as exc:
        parse([*base, "--probe-bursts", "0,4"])
    assert exc.value.code == 2 and "--probe-bursts" in capsys.readouterr().err


def test_load_bursts_with_the_closed_loop_is_bad_input(tmp_path, capsys):
    argv = ["testbed", "load", "--rate", "1000", "--out", str(tmp_path), "--loop", "closed"]
    assert main([*argv, "--burst-sizes", "4"]) == 2
    assert "open loop" in capsys.readouterr().err


# -- live ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def burst_run(gateway, tmp_path_factory):
    """Groups of 1 and 8 on one connection: the gateway reads each group's frames at once."""
    proc, port = gateway
    cfg = LoadConfig(
        host="127.0.0.1",
        port=port,
        rate_msgs_per_s=1000,
        connections=1,
        duration_s=1.5,
        warmup_s=0.3,
        interval_s=0.5,
        gateway_pid=proc.pid,
        burst_sizes=(1, 8),
    )
    return LoadRun(cfg, tmp_path_factory.mktemp("burst")).run()


def test_burst_run_answers_everything_and_records_its_sizes(burst_run):
    s = burst_run
    assert s.conditions.burst_sizes == (1, 8)
    c = s.counts
    assert s.lost == 0 and c["skipped_no_id"] == 0 and c["orders_sent"] > 0
    assert c["acks"] == c["orders_sent"] == c["cancels_sent"] == c["cancel_acks"]
    assert c["order_rejects"] == c["cancel_rejects"] == c["other_rejects"] == 0
    rec = s.recorded
    assert rec["acks"] == rec["orders_sent"] == rec["cancel_acks"] == rec["cancels_sent"]
    assert s.rtt_us["count"] == rec["acks"] + rec["cancel_acks"]


def test_burst_run_has_batches_of_eight(burst_run):
    s = burst_run
    gw = s.work_by_batch["gateway"]
    k8 = _class(gw, 8)
    assert gw["batch_from"][k8] == 8
    # Eight of every nine cycles are in a group of 8: their orders and cancels reach the
    # gateway eight to a read.
    assert gw["count"][k8] >= 0.5 * s.gateway_service_us["count"]
    assert gw["batch_mean"][k8] == pytest.approx(8, abs=1) and gw["mean_us"][k8] > 0
    client = s.work_by_batch["client"]
    assert sum(client["count"][_class(client, 8) :]) > 0


def test_warm_batches_are_a_subset_with_the_same_layout(burst_run):
    s = burst_run
    for who in ("client", "gateway"):
        every, warm = s.work_by_batch[who], s.work_by_batch_warm[who]
        assert warm.keys() == every.keys() and warm["batch_from"] == every["batch_from"]
        assert all(w <= n for w, n in zip(warm["count"], every["count"], strict=True))


def test_campaign_runs_one_burst_probe_at_the_lowest_rate(tmp_path):
    """Two low rates, one repeat, short runs; then the probe, groups spread over 2 connections."""
    result = C.campaign(
        tmp_path,
        [1000, 500],
        duration_s=0.5,
        warmup_s=0.2,
        connections=2,
        probe_bursts=(1, 4),
    )
    saved = json.loads((tmp_path / "campaign.json").read_text())
    probe = {"dir": "rate_500/burst", "rate_msgs_per_s": 500.0, "burst_sizes": [1, 4]}
    assert result["burst_probe"] == saved["burst_probe"] == probe, saved["burst_probe"]
    assert [r["run"] for row in saved["rows"] for r in row["runs"]] == ["rate_500", "rate_1000"]
    s = read_summary(tmp_path / "rate_500/burst")
    assert s.conditions.burst_sizes == (1, 4) and s.conditions.rate_msgs_per_s == 500
    assert s.conditions.connections == 2 and s.conditions.duration_s == 0.5
    assert s.lost == 0 and s.counts["acks"] == s.counts["cancel_acks"] > 0
    for name in ("rtt.hlog", "rtt.hgrm"):
        assert (tmp_path / "rate_500/burst" / name).stat().st_size > 0
    # Round-robin: a group of 4 puts 2 frames on each connection, so the gateway reads 2 at once.
    # On one connection it would read all 4 together. A read of 3 is a late frame of the last
    # group (or a cancel) coalescing with the next on a busy host: allowed; reads of 4 are not.
    gw = s.work_by_batch["gateway"]
    assert gw["count"][_class(gw, 2)] > 0
    assert sum(gw["count"][_class(gw, 4) :]) <= 0.05 * sum(gw["count"]), gw
    client = s.work_by_batch["client"]
    assert sum(client["count"][_class(client, 4) :]) > 0
