"""Campaign bookkeeping without live processes: interleaved repeats, medians and spread."""

from __future__ import annotations

import importlib
import json
import re

import pytest

from calibration.testbed.summary import (
    LoadConditions,
    LoadSummary,
    median_summary,
    read_summary,
    run_dirs,
)
from twin.errors import MeasurementError, SimulationError
from twin.kinds import Arrivals, Loop

# The module, not the function ``twin.testbed.campaign`` that the package re-exports.
C = importlib.import_module("twin.testbed.campaign")


def _summary(rate: float, p50: float, seed: int) -> LoadSummary:
    rtt = {"p50": p50, "p90": 2 * p50, "p95": 3 * p50, "p99": 4 * p50, "p99_9": 5 * p50}
    conditions = LoadConditions(
        host="127.0.0.1",
        port=9000,
        rate_msgs_per_s=rate,
        connections=4,
        duration_s=4.0,
        warmup_s=1.0,
        loop=Loop.OPEN,
        arrivals=Arrivals.POISSON,
        interval_s=1.0,
        seed=seed,
        payload_bytes=120,
        cpus=2,
        kernel="test",
        client="one thread",
        coordinated_omission_corrected=True,
    )
    work = {"client": {"count": [1.0, 2.0 * seed]}, "gateway": {"count": [1.0]}}
    return LoadSummary(
        conditions=conditions,
        counts={"orders_sent": 10},
        recorded={"acks": 10},
        lost=0,
        achieved_msgs_per_s=rate if rate < 5000 else 0.5 * rate,
        rtt_us=rtt,
        order_rtt_us=rtt,
        cancel_rtt_us=rtt,
        send_lag_us=rtt,
        gateway_service_us=rtt,
        client_send_us=rtt,
        client_recv_us=rtt,
        work_by_idle_gap=work,
        work_by_batch=work,
        work_by_batch_warm=work,
        client_cpu_us_per_msg=50.0 + seed,
        gateway_cpu_us_per_msg=20.0,
        client_runqueue_us_per_msg=5.0,
        gateway_runqueue_us_per_msg=1.0,
        client_wakeups_per_msg=1.0,
        host={"busy_pct": 10.0 * seed, "steal_pct": 0.0, "loadavg_1m": 1.0, "runnable_mean": 1},
    )


class Calls(list):
    """The rate runs' (rate, seed); the burst probes' (directory, rate, seed, sizes, options)."""

    probes: list[tuple]
    fail_probe: BaseException | None = None


@pytest.fixture
def fake_measure(monkeypatch):
    calls = Calls()
    calls.probes = []

    def measure(out_dir, *, rate_msgs_per_s, seed, burst_sizes=(), **options):
        if burst_sizes:
            calls.probes.append((out_dir, rate_msgs_per_s, seed, tuple(burst_sizes), options))
            if calls.fail_probe is not None:
                raise calls.fail_probe
        else:
            calls.append((rate_msgs_per_s, seed))
        return _summary(rate_msgs_per_s, 100.0 + 10 * seed, seed)

    monkeypatch.setattr(C, "measure", measure)
    return calls


def test_repeats_interleave_rates_and_stop_at_saturation(tmp_path, fake_measure):
    result = C.campaign(tmp_path, [4000, 1000, 8000, 16000, 32000], repeats=3, seed=1)
    # Pass 1 runs up to the second saturated rate (8000, 16000); passes 2 and 3 repeat that list.
    rates = [1000, 4000, 8000, 16000]
    assert fake_measure == [(r, s) for s in (1, 2, 3) for r in rates]
    rows = result["rows"]
    assert [r["rate_msgs_per_s"] for r in rows] == rates
    low = rows[0]
    assert low["repeats"] == 3 and low["p50_us"] == 120.0
    assert low["spread"]["p50_us"] == [110.0, 130.0]
    assert low["client_cpu_us_per_msg"] == 52.0
    assert [r["run"] for r in low["runs"]] == [f"rate_1000/run_{i}" for i in range(3)]
    assert result["saturation_msgs_per_s"] == 4000
    assert json.loads((tmp_path / "campaign.json").read_text())["rows"][0]["p50_us"] == 120.0
    assert run_dirs(tmp_path, low) == [tmp_path / f"rate_1000/run_{i}" for i in range(3)]


def test_one_repeat_keeps_the_flat_layout(tmp_path, fake_measure):
    result = C.campaign(tmp_path, [1000, 2000], seed=7)
    row = result["rows"][0]
    assert row["runs"][0]["run"] == "rate_1000" and fake_measure[0] == (1000, 7)
    assert run_dirs(tmp_path, {"rate_msgs_per_s": 2000.0}) == [tmp_path / "rate_2000"]


def test_median_summary_is_elementwise():
    runs = [_summary(1000, p, s) for p, s in ((100.0, 1), (300.0, 2), (200.0, 3))]
    m = median_summary(runs)
    assert m.rtt_us["p50"] == 200.0 and m.rtt_us["p99"] == 800.0
    assert m.work_by_idle_gap["client"]["count"] == [1.0, 4.0]
    assert m.host["busy_pct"] == 20.0
    assert m.conditions.client == "one thread" and m.conditions.rate_msgs_per_s == 1000
    assert m.conditions.loop is Loop.OPEN


def test_a_summary_round_trips_through_json_and_names_what_is_missing(tmp_path):
    summary = _summary(1000, 100.0, 1)
    (tmp_path / "summary.json").write_text(json.dumps(summary.to_dict()))
    assert read_summary(tmp_path) == summary
    data = summary.to_dict()
    del data["send_lag_us"]
    (tmp_path / "summary.json").write_text(json.dumps(data))
    with pytest.raises(MeasurementError, match="summary.json: send_lag_us is missing"):
        read_summary(tmp_path)
    data = summary.to_dict()
    data["conditions"]["loop"] = "sideways"
    (tmp_path / "summary.json").write_text(json.dumps(data))
    with pytest.raises(MeasurementError, match="conditions"):
        read_summary(tmp_path)


@pytest.mark.parametrize(
    ("table", "key", "value", "message"),
    [
        (None, "achieved_msgs_per_s", -3, "achieved_msgs_per_s = -3: expected a finite"),
        (None, "gateway_cpu_us_per_msg", "x", "gateway_cpu_us_per_msg = 'x': expected a"),
        (None, "host", [1], "host must be a table, got [1]"),
        ("conditions", "rate_msgs_per_s", "x", "conditions.rate_msgs_per_s = 'x'"),
        ("conditions", "connections", float("nan"), "conditions.connections = nan"),
    ],
)
def test_a_summarys_numbers_and_tables_are_checked(tmp_path, table, key, value, message):
    """A field of the wrong kind is one line naming the file, not a number read wrong later."""
    data = _summary(1000, 100.0, 1).to_dict()
    (data if table is None else data[table])[key] = value
    (tmp_path / "summary.json").write_text(json.dumps(data))
    with pytest.raises(MeasurementError, match=re.escape(f"summary.json: {message}")):
        read_summary(tmp_path)


def test_repeats_must_be_positive(tmp_path):
    with pytest.raises(ValueError, match="repeats 0"):
        C.campaign(tmp_path, [1000], repeats=0)


def test_burst_probe_runs_once_after_the_rates_and_changes_no_row(tmp_path, fake_measure):
    rates = [4000, 1000, 8000, 16000]
    plain = C.campaign(tmp_path / "plain", rates, repeats=2, probe_bursts=(), loop="closed")
    assert "burst_probe" not in plain and fake_measure.probes == []
    assert "burst_probe" not in json.loads((tmp_path / "plain/campaign.json").read_text())
    fake_measure.clear()
    result = C.campaign(tmp_path, rates, repeats=2, loop="closed")
    assert fake_measure == [(r, s) for s in (1, 2) for r in (1000, 4000, 8000, 16000)]
    ((out, rate, seed, sizes, options),) = fake_measure.probes
    assert (out, rate, seed, sizes) == (tmp_path / "rate_1000/burst", 1000, 1, (1, 2, 4, 8, 16, 32))
    assert options == {"loop": "open"}  # groups are an open-loop schedule
    probe = {"dir": "rate_1000/burst", "rate_msgs_per_s": 1000, "burst_sizes": [1, 2, 4, 8, 16, 32]}
    assert result["burst_probe"] == probe
    saved = json.loads((tmp_path / "campaign.json").read_text())
    assert saved["burst_probe"] == probe
    for key in ("rows", "saturation_msgs_per_s", "conditions"):
        assert saved[key] == json.loads((tmp_path / "plain/campaign.json").read_text())[key]


def test_a_failed_probe_keeps_the_campaign(tmp_path, fake_measure):
    fake_measure.fail_probe = SimulationError("load client failed (1): boom")
    result = C.campaign(tmp_path, [2000, 1000], probe_bursts=[1, 8])
    assert result["burst_probe"] == {"error": "SimulationError: load client failed (1): boom"}
    saved = json.loads((tmp_path / "campaign.json").read_text())
    assert saved["burst_probe"] == result["burst_probe"]
    assert [r["rate_msgs_per_s"] for r in saved["rows"]] == [1000, 2000]


def test_an_interrupted_probe_keeps_the_campaign(tmp_path, fake_measure):
    fake_measure.fail_probe = KeyboardInterrupt()
    with pytest.raises(KeyboardInterrupt):
        C.campaign(tmp_path, [1000, 2000], probe_bursts=[4])
    saved = json.loads((tmp_path / "campaign.json").read_text())
    assert [r["rate_msgs_per_s"] for r in saved["rows"]] == [1000, 2000]
    assert saved["saturation_msgs_per_s"] == 2000
    assert "not finished" in saved["burst_probe"]["error"]
