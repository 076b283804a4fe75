"""``twin replay``: the table's contract, both engines agreeing, resuming, bad flow files, and a
stationary flow replayed against ``twin run`` at its rate."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from tests.twin.conftest import SCENARIOS
from twin.cli import main
from twin.flow import rate_trace_arrivals
from twin.replay_run import Flow, replay_output, replay_to_folder
from twin.scenario import load_scenario
from twin.simulation import prepare, run_prepared

TIER1 = str(SCENARIOS / "tier1_peering_cpg.toml")
COLUMNS = ["send_ns", "kind", "entry_ns", "response_ns", "rtt_ns", "rejected"]


def write_flow(path: Path, n: int = 2000, gap_ns: float = 100_000.0, seed: int = 3) -> Path:
    rng = np.random.default_rng(seed)
    t = 1_700_000_000_000_000_000 + np.cumsum(rng.exponential(gap_ns, n)).astype(np.int64)
    kinds = rng.choice(["new", "cancel", "modify"], n)
    lines = ["send_ns,kind,account,payload_bytes"]
    lines += [f"{a},{k},acct{a % 3},{100 + a % 50}" for a, k in zip(t, kinds, strict=True)]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_replay_writes_the_contract_columns(tmp_path: Path) -> None:
    flow = write_flow(tmp_path / "flow.csv")
    out = tmp_path / "out"
    assert main(["replay", TIER1, "--orders", str(flow), "--out", str(out)]) == 0
    table = pq.read_table(out / "replay.parquet").to_pydict()
    assert list(table)[: len(COLUMNS)] == COLUMNS
    n = len(table["send_ns"])
    assert n == 2000
    rtt, entry, resp = (np.array(table[c]) for c in ("rtt_ns", "entry_ns", "response_ns"))
    assert (entry > 0).all() and (resp > 0).all()
    assert (rtt == entry + resp).all()
    assert np.array_equal(np.array(table["exch_ns"]), np.array(table["send_ns"]) + entry)
    assert set(table["kind"]) == {"new", "cancel", "modify"}
    assert set(table["connection"]) == {0, 1, 2}
    assert not any(table["rejected"])
    assert not list(out.glob("replay_state*"))


def test_engines_agree_on_a_replay() -> None:
    prepared = prepare(load_scenario(TIER1))
    arrivals = rate_trace_arrivals(np.array([0.0, 1e6]), np.array([20_000.0, 0.0]), 64, seed=4)
    rtt = {
        e: replay_output(prepared, arrivals, e).done_us - arrivals.send_us for e in ("fast", "des")
    }
    for p in (50, 90, 99):
        fast, ref = (np.percentile(rtt[e], p) for e in ("fast", "des"))
        assert fast == pytest.approx(ref, rel=0.03), p


def test_an_interrupted_replay_continues_to_the_same_table(tmp_path: Path) -> None:
    prepared = prepare(load_scenario(TIER1))
    arrivals = rate_trace_arrivals(np.array([0.0, 5e5]), np.array([40_000.0, 0.0]), 64, seed=2)
    flow = Flow.from_arrivals(arrivals, "trace")
    whole = tmp_path / "whole"
    replay_to_folder(prepared, flow, whole, chunk_requests=3000)
    cut = tmp_path / "cut"
    assert replay_to_folder(prepared, flow, cut, chunk_requests=3000, stop_after_chunks=2) == {}
    assert (cut / "manifest.json").is_file() and not (cut / "replay.parquet").exists()
    assert len(json.loads((cut / "manifest.json").read_text())["chunks"]) == 2
    summary = replay_to_folder(prepared, flow, cut, chunk_requests=3000)
    assert summary["requests"] == len(arrivals)
    assert pq.read_table(cut / "replay.parquet").equals(pq.read_table(whole / "replay.parquet"))
    assert not list(cut.glob("replay_state*"))


def test_a_stationary_flow_gives_twin_runs_percentiles() -> None:
    """The same rate as a Poisson flow: each of the run's percentiles falls where the replay's
    distribution puts it, within 4 standard errors of the two samples' quantile ranks."""
    scenario = load_scenario(TIER1).with_fields(
        {"workload.kind": "echo", "workload.duration_s": 2.0}
    )
    prepared = prepare(scenario)
    result = run_prepared(prepared, "fast")
    rate = scenario.workload.rate_msgs_per_s
    arrivals = rate_trace_arrivals(np.array([0.0, 2e6]), np.array([rate, 0.0]), 64, seed=8)
    rtt = np.sort(replay_output(prepared, arrivals, "fast").done_us - arrivals.send_us)
    for key, p in (("p50", 0.5), ("p90", 0.9), ("p99", 0.99)):
        rank = np.searchsorted(rtt, result.rtt_us[key]) / len(rtt)
        se = np.sqrt(p * (1 - p) * (1 / len(rtt) + 1 / result.messages))
        assert abs(rank - p) <= 4 * se, (key, rank, p)


BAD_FLOWS = {
    "unsorted": ("send_ns,kind\n100,new\n300,new\n200,cancel\n", "row 3"),
    "negative": ("send_ns,kind\n100,new\n-5,new\n", "row 2"),
    "not finite": ("send_ns,kind\n100,new\nnan,new\n", "row 2"),
    "unknown kind": ("send_ns,kind\n100,new\n200,amend\n", "row 2"),
    "no kind": ("send_ns\n100\n", "kind"),
}


@pytest.mark.parametrize("case", sorted(BAD_FLOWS))
def test_a_bad_flow_file_is_one_line_naming_file_and_row(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], case: str
) -> None:
    text, where = BAD_FLOWS[case]
    flow = tmp_path / "flow.csv"
    flow.write_text(text)
    out = tmp_path / "out"
    assert main(["replay", TIER1, "--orders", str(flow), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(flow) in err and where in err, err
    assert not out.exists()


def test_a_bad_parquet_flow_names_its_row(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import pyarrow as pa

    flow = tmp_path / "flow.parquet"
    pq.write_table(pa.table({"send_ns": [1.0, 2.0, float("inf")], "kind": ["new"] * 3}), flow)
    assert main(["replay", TIER1, "--orders", str(flow), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "row 3" in err and str(flow) in err


def test_a_huge_file_and_a_fifo_are_refused_unread(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    huge = tmp_path / "huge.csv"
    with huge.open("wb") as f:
        f.truncate(10 * 1024**3)  # sparse: 10 GB that take no disk
    fifo = tmp_path / "flow.fifo"
    os.mkfifo(fifo)
    for path in (huge, fifo):
        out = tmp_path / "out"
        assert main(["replay", TIER1, "--orders", str(path), "--out", str(out)]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and str(path) in err, err
        assert not out.exists()


def test_a_bad_rate_trace_names_its_row(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace = tmp_path / "trace.csv"
    trace.write_text("time_ns,rate_msgs_per_s\n0,1000\n1000000,-3\n2000000,0\n")
    assert main(["replay", TIER1, "--rate-trace", str(trace), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert "row 2" in err and str(trace) in err


def test_a_feed_scenario_gives_each_updates_market_data_latency(tmp_path: Path) -> None:
    """Through a feed path each replayed update gets its latency to the client's model: for
    a feed scenario that is its round trip, for tick to trade a part of it; both engines
    agree, and hftbacktest's feed pairs are built from it."""
    for name in ("feed_tls_websocket", "tick_to_trade_tier1"):
        prepared = prepare(load_scenario(SCENARIOS / f"{name}.toml"))
        arrivals = rate_trace_arrivals(np.array([0.0, 3e5]), np.array([10_000.0, 0.0]), 1, 6)
        md = {}
        for engine in ("fast", "des"):
            out = replay_output(prepared, arrivals, engine)
            assert out.model_us is not None and not np.isnan(out.model_us).any()
            md[engine] = out.model_us - arrivals.send_us
            rtt = out.done_us - arrivals.send_us
            if name == "feed_tls_websocket":
                assert np.allclose(md[engine], rtt)
            else:
                assert (md[engine] > 0).all() and (md[engine] < rtt).all()
        assert np.median(md["fast"]) == pytest.approx(np.median(md["des"]), rel=0.03)
    out_dir = tmp_path / "feed"
    flow = Flow.from_arrivals(arrivals, "trace")
    summary = replay_to_folder(prepared, flow, out_dir)
    assert summary["md_latency_us"]["p50"] > 0
    from twin import backtest_export

    backtest_export.export("hftbacktest", out_dir)
    feed = np.load(out_dir / "feed_latency.npz")["data"]
    table = pq.read_table(out_dir / "replay.parquet").to_pydict()
    assert np.array_equal(feed["local_ts"] - feed["exch_ts"], np.array(table["md_latency_ns"]))
