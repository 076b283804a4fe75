"""Workloads are deterministic, hashed and valid; service times and the bench CLI produce data.

Small streams keep these fast; the full-size runs are benchmarks, not tests.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from engine_ext import Engine, ReferenceEngine, WorkloadError, workloads
from engine_ext import bench as bench_cli
from engine_ext.reference import events_as_tuples
from engine_ext.service_time import measure_service_ns, service_time_samples_us, write_hgrm
from engine_ext.types import EV_ACK, EV_REJECT, MSG_CANCEL, REJ_UNKNOWN_ORDER
from engine_ext.workloads import WORKLOADS, generate, load, load_or_generate, save


@pytest.mark.parametrize("name", [w for w in WORKLOADS if w != "deep_book"])
def test_workload_is_deterministic_and_replays_identically(name: str) -> None:
    a = generate(name, seed=3, n_messages=1500)
    b = generate(name, seed=3, n_messages=1500)
    c = generate(name, seed=4, n_messages=1500)
    assert a.digest == b.digest and np.array_equal(a.messages, b.messages)
    assert a.digest != c.digest
    eng = Engine(a.config)
    ev = eng.process(a.messages)
    assert events_as_tuples(ev) == ReferenceEngine(a.config).process(a.messages)
    # The drain empties the book, so the stream can be replayed back to back.
    assert eng.n_live == 0 and eng.free_rows == a.config.capacity_orders
    again = eng.process(a.messages)
    assert len(again) == len(ev)


def test_cancels_target_live_orders_except_deliberately_stale_ones() -> None:
    wl = generate("exchange_core", seed=1, n_messages=3000)
    ev = Engine(wl.config).process(wl.messages)
    term = ev[(ev["kind"] == EV_ACK) | (ev["kind"] == EV_REJECT)]
    cancels = wl.messages["msg_type"] == MSG_CANCEL
    assert (term["kind"][cancels] == EV_ACK).all()
    crypto = generate("crypto_mm", seed=1, n_messages=3000)
    ev = Engine(crypto.config).process(crypto.messages)
    term = ev[(ev["kind"] == EV_ACK) | (ev["kind"] == EV_REJECT)]
    stale = term["code"][crypto.messages["msg_type"] == MSG_CANCEL] == REJ_UNKNOWN_ORDER
    assert 0 < stale.mean() < 0.3


def test_exchange_core_mix_and_book_shape() -> None:
    wl = generate("exchange_core", seed=2, n_messages=20_000, drain=False)
    eng = Engine(wl.config)
    eng.process(wl.warmup)
    book = eng.book(0)
    assert 900 <= eng.n_live <= 1100
    assert 600 <= len(book["bids"]) + len(book["asks"]) <= 900
    m = wl.measured
    share = lambda mask: float(np.mean(mask))  # noqa: E731
    assert share(m["msg_type"] == 2) == pytest.approx(0.82, abs=0.03)
    assert share((m["msg_type"] == 0) & (m["order_type"] == 0)) == pytest.approx(0.09, abs=0.02)
    assert share((m["msg_type"] == 0) & (m["order_type"] == 1)) == pytest.approx(0.03, abs=0.01)
    assert share(m["msg_type"] == 1) == pytest.approx(0.06, abs=0.02)


def test_save_load_round_trip_and_corruption_is_refused(tmp_path) -> None:
    wl = generate("crypto_mm", seed=5, n_messages=500)
    path = save(wl, tmp_path / "w.npz")
    back = load(path)
    assert back.digest == wl.digest and np.array_equal(back.messages, wl.messages)
    assert load_or_generate("crypto_mm", seed=5, n_messages=500, cache_dir=tmp_path).digest
    msgs = wl.messages.copy()
    msgs["qty_lots"][10] += 1
    np.savez(tmp_path / "bad.npz", messages=msgs, meta=np.load(path)["meta"])
    with pytest.raises(WorkloadError, match="hash"):
        load(tmp_path / "bad.npz")
    with pytest.raises(WorkloadError, match="unknown workload 'nope'"):
        generate("nope")


def test_service_times_are_measured_and_exported(tmp_path) -> None:
    wl = generate("crypto_mm", seed=1, n_messages=2000)
    ns = measure_service_ns(wl, 5000)
    assert ns.shape == (5000,) and np.isfinite(ns).all() and (ns >= 0).all()
    assert 1 < np.median(ns) < 100_000
    us = service_time_samples_us("crypto_mm", 100, 1)
    assert us.shape == (100,) and np.median(us) < 100
    text = write_hgrm(ns, tmp_path / "st.hgrm").read_text()
    assert text.lstrip().startswith("Value")
    assert "#[Mean" in text and "#[Max" in text


def test_bench_cli_prints_json_lines_and_writes_out(tmp_path, capsys) -> None:
    out = tmp_path / "engine.json"
    bench_cli.main([
        "--workload", "crypto_mm", "--messages", "2000", "--repeats", "1",
        "--reference-messages", "300", "--soak-seconds", "0.5", "--soak-rate", "20000",
        "--soak-workload", "crypto_mm",
        "--json", "--out", str(out), "--cache-dir", str(tmp_path),
    ])  # fmt: skip
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [r["workload"] for r in lines] == ["crypto_mm", "soak:crypto_mm"]
    for key in ("ops_per_s", "p50_ns", "p99_ns", "p999_ns", "reference_ops_per_s", "steal_pct"):
        assert key in lines[0]
    doc = json.loads(out.read_text())
    assert doc["results"][1]["free_rows_after"] >= 0 and "cpu" in doc["machine"]


def test_a_cached_stream_is_keyed_on_the_generators_sources(tmp_path, monkeypatch) -> None:
    first = load_or_generate("crypto_mm", seed=5, n_messages=300, cache_dir=tmp_path)
    assert len(list(tmp_path.glob("crypto_mm-seed5-n300-*.npz"))) == 1
    monkeypatch.setattr(workloads, "generator_digest", lambda: "0" * 64)  # an edited generator
    again = load_or_generate("crypto_mm", seed=5, n_messages=300, cache_dir=tmp_path)
    assert len(list(tmp_path.glob("crypto_mm-seed5-n300-*.npz"))) == 2
    assert again.digest == first.digest


@pytest.mark.parametrize("name", ["exchange_core", "itch", "crypto_mm"])
def test_the_reference_engines_indexes_match_its_book(name: str) -> None:
    wl = generate(name, seed=3, n_messages=3000, drain=False)
    ref = ReferenceEngine(wl.config)
    for i, row in enumerate(wl.messages.tolist()):
        ref.process_one(*row)
        if i % 97:
            continue
        counts: dict[tuple[int, int], int] = {}
        for o in ref.orders.values():
            counts[(o.account, o.symbol)] = counts.get((o.account, o.symbol), 0) + 1
        assert {k: v for k, v in ref.open_count.items() if v} == counts
        for sym in range(wl.config.n_symbols):
            for side in (0, 1):
                assert ref.levels[sym][side] == sorted(
                    p for p, q in ref.book[sym][side].items() if q
                )
