"""The latency-throughput curves of docs/curves.md (``benchmarks/load_curves.py``): each point
names the station that fills and what grew, and the committed curves are the shipped model's."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks import load_curves

REPO = Path(__file__).resolve().parents[3]


def test_a_curve_runs_from_10k_to_near_saturation_and_names_what_fills(monkeypatch) -> None:
    monkeypatch.setattr(load_curves, "MESSAGES_PER_POINT", 40_000)
    monkeypatch.setattr(load_curves, "MIN_DURATION_S", 0.1)
    monkeypatch.setattr(load_curves, "SHARES", (0.5, 0.98))
    c = load_curves.curve("aeron_echo_cpg", {}, "aeron_echo_cpg")
    rates = [p["rate_msgs_per_s"] for p in c["points"]]
    assert rates[0] == load_curves.LOWEST_RATE and rates == sorted(rates)
    last = c["points"][-1]
    assert last["share_of_saturation"] == pytest.approx(0.98)
    assert last["busiest_station"].endswith("network cores")
    assert last["busiest_utilization"] == pytest.approx(0.98, abs=0.02)
    # The kernel's work on the cores queues near saturation: the p99 grows, and the hop that
    # grew most is a kernel hop on those cores.
    assert last["rtt_us"]["p99"] > c["points"][0]["rtt_us"]["p99"]
    assert "kernel" in last["bends"]["hop"] and last["bends"]["mean_growth_us"] > 0


def test_the_committed_curves_start_where_the_shipped_scenarios_run() -> None:
    """The committed 10k msg/s points are what the shipped model gives there (a stale results
    file after a model change fails here, not only in the docs)."""
    committed = json.loads((REPO / "benchmarks/results/load_curves.json").read_text())
    by_name = {c["label"]: c for c in committed["curves"]}
    assert set(by_name) == {label for _, _, label in load_curves.SCENARIOS}
    for name in ("tier1_peering_cpg", "aeron_echo_cpg"):
        sat = load_curves.saturation_rate(
            load_curves.load_scenario(REPO / "scenarios" / f"{name}.toml")
        )
        assert by_name[name]["saturation_msgs_per_s"] == pytest.approx(sat)


def test_a_small_instance_fills_its_network_allowance(monkeypatch) -> None:
    """netperf's echo between two c5n.xlarge, made an open loop: the NICs' shared allowance is
    what fills (250k round trips/s: one packet sent and one received per instance each), and
    its queue shows only near the end (a bucket 64 packets deep)."""
    monkeypatch.setattr(load_curves, "MESSAGES_PER_POINT", 40_000)
    monkeypatch.setattr(load_curves, "MIN_DURATION_S", 0.1)
    monkeypatch.setattr(load_curves, "SHARES", (0.5, 0.98))
    c = load_curves.curve("netperf_rr_c5n_cpg", load_curves.OPEN_LOOP, "netperf, open loop")
    assert c["saturation_msgs_per_s"] == pytest.approx(250_000)
    first, half, last = c["points"]
    assert "NIC" in last["busiest_station"]
    assert last["busiest_utilization"] == pytest.approx(0.98, abs=0.02)
    assert half["rtt_us"]["p99"] < 1.1 * first["rtt_us"]["p99"] < last["rtt_us"]["p99"]
