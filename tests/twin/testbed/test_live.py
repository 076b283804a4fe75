"""Gateway + load client on loopback for a few seconds: files, counts, percentiles."""

from __future__ import annotations

import gc
import json

import numpy as np
import pytest
from hdrh.histogram import HdrHistogram

import calibration
from twin.testbed.client import LoadConfig, LoadRun

pytestmark = [pytest.mark.timeout(120), pytest.mark.exclusive]


@pytest.fixture(scope="module")
def run(gateway, tmp_path_factory):
    proc, port = gateway
    out = tmp_path_factory.mktemp("load")
    cfg = LoadConfig(
        host="127.0.0.1",
        port=port,
        rate_msgs_per_s=1000,
        connections=3,
        duration_s=2.0,
        warmup_s=0.5,
        interval_s=0.5,
        gateway_pid=proc.pid,
    )
    summary = LoadRun(cfg, str(out)).run()
    return out, summary


def test_the_collector_is_back_on_after_the_run(run):
    # The loop ran with automatic collection off (twin.testbed.collector); the process gets it back.
    assert gc.isenabled()
    assert gc.get_freeze_count() == 0


def test_files_written(run):
    out, _ = run
    for name in ("rtt.hlog", "rtt.hgrm", "order.hgrm", "cancel.hgrm", "summary.json"):
        assert (out / name).stat().st_size > 0, name
    assert json.loads((out / "summary.json").read_text())["tool"] == "twin testbed load"


def test_every_order_and_cancel_answered(run):
    _, s = run
    c = s.counts
    assert s.lost == 0
    assert c["orders_sent"] > 0
    assert c["acks"] == c["orders_sent"] == c["cancels_sent"] == c["cancel_acks"]
    assert c["order_rejects"] == c["cancel_rejects"] == c["other_rejects"] == 0
    rec = s.recorded
    assert rec["acks"] == rec["orders_sent"] == rec["cancel_acks"]
    assert s.rtt_us["count"] == rec["acks"] + rec["cancel_acks"]
    # Poisson arrivals over 2 s at 1000 msg/s: 2000 messages, give or take a few percent.
    assert 1700 <= s.rtt_us["count"] <= 2300


def _log_histogram(path) -> HdrHistogram:
    total = None
    for line in path.read_text().splitlines():
        if line.startswith("#") or line.startswith('"'):
            continue
        payload = line.rsplit(",", 1)[1]
        h = HdrHistogram.decode(payload.encode())
        if total is None:
            total = h
        else:
            total.add(h)
    assert total is not None
    return total


def test_json_percentiles_match_the_interval_log(run):
    out, s = run
    hist = _log_histogram(out / "rtt.hlog")
    assert hist.get_total_count() == s.rtt_us["count"]
    for key, p in (("p50", 50), ("p90", 90), ("p99", 99), ("p99_9", 99.9)):
        assert hist.get_value_at_percentile(p) / 1e3 == pytest.approx(s.rtt_us[key])


def test_calibration_reads_every_output(run):
    out, s = run
    log = calibration.read(out / "rtt.hlog")
    hgrm = calibration.read(out / "rtt.hgrm")
    assert log.count == hgrm.count == s.rtt_us["count"]
    # The log reader keeps every bucket (values spread uniformly inside one), so its p50 lies in
    # the bucket HDR reports (0.1% wide). The .hgrm table only has the rows python-hdrh prints
    # (0, 10, 19, 27.1, ... %); between two rows the reader interpolates linearly, so its p50
    # lies between HDR's values at the two rows around 50%, and not necessarily near HDR's p50.
    hist = _log_histogram(out / "rtt.hlog")
    assert log.summary()["p50"] == pytest.approx(hist.get_value_at_percentile(50.0) / 1e3, rel=1e-3)
    below = max(p for p, _ in hgrm.percentiles_us if p <= 50.0)
    above = min(p for p, _ in hgrm.percentiles_us if p >= 50.0)
    lo, hi = (hist.get_value_at_percentile(q) / 1e3 for q in (below, above))
    assert lo * 0.999 <= hgrm.summary()["p50"] <= hi * 1.001
    assert calibration.read(out / "order.hgrm").count == s.order_rtt_us["count"]


def test_round_trips_are_plausible(run):
    _, s = run
    rtt = s.rtt_us
    assert 1 < rtt["p50"] <= rtt["p90"] <= rtt["p99"] <= rtt["max"]
    assert np.isfinite(s.client_cpu_us_per_msg) and s.gateway_cpu_us_per_msg is not None


def test_in_process_timings_reported(run):
    _, s = run
    for key in ("client_send_us", "client_recv_us", "gateway_service_us"):
        t = getattr(s, key)
        assert t["count"] > 0 and 0 < t["p50"] <= t["p90"] <= t["max"], key
    assert s.client_send_us["count"] == s.recorded["orders_sent"]
    # Replies are timed by when they arrive, round trips by when they were scheduled.
    assert s.client_recv_us["count"] == pytest.approx(s.rtt_us["count"], rel=0.03)
    gaps = s.work_by_idle_gap
    assert sum(gaps["gateway"]["count"]) == s.gateway_service_us["count"]
    assert sum(gaps["client"]["count"]) == s.client_send_us["count"] + s.client_recv_us["count"]
    assert s.host["runnable_mean"] >= 0
    assert 0.0 <= s.host["same_cpu_share"] <= 1.0  # both processes' placement, per reply
    batches = s.work_by_batch
    assert sum(batches["gateway"]["count"]) == s.gateway_service_us["count"]
    # Every busy wake-up in the window is classed by its events (replies + orders).
    assert sum(batches["client"]["count"]) >= s.client_recv_us["count"]
    for who in ("client", "gateway"):
        b = batches[who]
        for lo, n, mean in zip(b["batch_from"], b["count"], b["batch_mean"], strict=True):
            assert n == 0 or mean >= lo
    assert s.client_cpu_us_per_msg > 0 and s.client_runqueue_us_per_msg >= 0


def test_each_round_trip_splits_at_the_gateways_read(run):
    """The reply's ``read_ns`` (the gateway's clock, the client's too) splits every recorded
    round trip in two positive legs whose means add up to the round trip's."""
    _, s = run
    to, back = s.to_gateway_us, s.from_gateway_us
    assert to["count"] == back["count"] == s.rtt_us["count"]
    for leg in (to, back):
        assert 0 < leg["p50"] <= leg["p99"] <= leg["max"] <= s.rtt_us["max"] * 1.001
    assert to["mean"] + back["mean"] == pytest.approx(s.rtt_us["mean"], rel=0.01)


def test_each_wake_up_and_read_is_classed_by_the_hosts_idle_gap(run):
    """Every busy wake-up of the client and every reply's read by the host's idle gap before
    their busy period; the gateway's read CPU (its thread's clock, from the end of its previous
    read) is at least the handling's wall time it holds, save the clocks' granularity."""
    _, s = run
    host = s.cpu_by_host_gap
    # A busy wake-up handles one event or more (work_by_batch counts events).
    events = sum(s.work_by_batch["client"]["count"])
    assert events / 4 < sum(host["client"]["count"]) <= events
    assert sum(host["gateway"]["count"]) == s.gateway_service_us["count"]
    read = np.average(
        host["gateway"]["mean_us"], weights=np.maximum(host["gateway"]["count"], 1e-9)
    )
    assert read >= 0.9 * s.gateway_service_us["mean"]
    # At 1k msg/s a cycle (about 100 us) mostly ends before the next starts: most busy periods
    # begin after a gap longer than 100 us.
    gaps = np.asarray(host["client"]["gap_from_us"])
    count = np.asarray(host["client"]["count"])
    assert count[gaps >= 100].sum() > count.sum() / 4


def test_closed_loop_keeps_one_message_in_flight_per_connection(gateway, tmp_path):
    """Closed loop, target far above what two connections can do: bound by round trips."""
    proc, port = gateway
    connections = 2
    cfg = LoadConfig(
        host="127.0.0.1",
        port=port,
        rate_msgs_per_s=200_000,
        connections=connections,
        duration_s=1.0,
        warmup_s=0.3,
        loop="closed",
        gateway_pid=proc.pid,
    )
    s = LoadRun(cfg, str(tmp_path)).run()
    c = s.counts
    assert s.lost == 0 and c["skipped_no_id"] == 0
    assert c["acks"] == c["orders_sent"] == c["cancels_sent"] == c["cancel_acks"] > 0
    assert s.conditions.coordinated_omission_corrected is False
    assert s.rtt_us["count"] == s.recorded["acks"] + s.recorded["cancel_acks"]
    # Little's law with at most one message in flight per connection.
    assert s.achieved_msgs_per_s <= 1.05 * connections * 1e6 / s.rtt_us["mean"]
    assert s.achieved_msgs_per_s < 0.5 * cfg.rate_msgs_per_s


def test_warm_batches_and_no_bursts_by_default(run):
    _, s = run
    assert s.conditions.burst_sizes == ()
    assert s.work_by_batch_warm.keys() == s.work_by_batch.keys() == {"client", "gateway"}
    for who in ("client", "gateway"):
        every, warm = s.work_by_batch[who], s.work_by_batch_warm[who]
        assert warm.keys() == every.keys() and warm["batch_from"] == every["batch_from"]
        assert all(w <= n for w, n in zip(warm["count"], every["count"], strict=True))
        for n, w_us, n_all, all_us in zip(
            warm["count"], warm["mean_us"], every["count"], every["mean_us"], strict=True
        ):
            # Every batch of a class warm: the same mean.
            assert n < n_all or w_us == pytest.approx(all_us)
