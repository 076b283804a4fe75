"""A reader station (one thread working read by read), in both engines, against exact answers
and against the pipeline's reference semantics (:func:`twin.pipeline.simulate_pipeline`).

A read takes everything that arrived by its poll; each stage runs over the whole read before the
next; a message's stage latency is the work of the messages ahead of it in the read plus its
own; data arriving while the thread works waits for the next poll, after the bookkeeping.
"""

from __future__ import annotations

from dataclasses import replace
from functools import reduce

import numpy as np
import pytest
from scipy import stats

from tests.twin.test_group_arrivals import ENGINES, grouped
from twin import dtypes
from twin.dists import Const, Exponential, ShiftedLognormal
from twin.errors import ModelError
from twin.histogram import empty_counts, record_us
from twin.path import Hop, Span, Station, compile_path
from twin.pipeline import PipelineModel, burst_schedule, simulate_pipeline


def pipeline_hops(thread: Station, *, poll=2.0, tls=5.0, tls_msg=1.0, decode_start=0.5,
                  decode=2.0, update=3.0, per_record=0.0) -> list[Hop]:  # fmt: skip
    """Network (10 us), then poll -> read, TLS, decode and update on one reader thread."""
    return [
        Hop("network", "test", fixed_us=10.0),
        Hop("poll", "test", per_read=Const(poll), whole_read=True, station=thread),
        Hop(
            "tls",
            "test",
            per_read=Const(tls),
            service=Const(tls_msg),
            whole_read=True,
            per_record_us=per_record,
            station=thread,
        ),  # fmt: skip
        Hop(
            "decode", "test", per_read=Const(decode_start), service=Const(decode), station=thread
        ),  # fmt: skip
        Hop("update", "test", service=Const(update), station=thread),
    ]


SPANS = (
    Span("decode", "decode", "decode"),
    Span("update", "update", "update"),
    Span("inbound", "poll", "update"),
    Span("tick to model", "network", "update"),
)


def counts_of(values) -> np.ndarray:
    counts = empty_counts()
    record_us(counts, np.asarray(values, dtype=float))
    return counts


@pytest.mark.parametrize("engine", sorted(ENGINES))
def test_a_group_reaching_an_idle_reader_waits_for_the_work_ahead_of_it(engine: str) -> None:
    """Groups of 4 every 1 ms: one read each; the k-th message leaves decode after the read's
    start-up and k decodes, update after every decode and k updates."""
    n = 4
    path = compile_path(pipeline_hops(Station("thread", 1, reader=True)), SPANS)
    out = ENGINES[engine](path, grouped(n, n / 1000, 4_000, seed=3, uniform=True))
    groups = out.messages // n
    assert out.messages % n == 0 and groups >= 900
    k = np.arange(1, n + 1)
    tls_end = 2.0 + 5.0 + n * 1.0
    decode = 0.5 + 2.0 * k
    update = 3.0 * k
    inbound = tls_end + decode[-1] + update
    for name, values in zip(
        ("decode", "update", "inbound", "tick to model"),
        (decode, update, inbound, 10.0 + inbound),
        strict=True,
    ):
        expected = counts_of(np.tile(values, groups))
        assert np.array_equal(out.span_counts[path.span_names.index(name)], expected), name
    assert np.array_equal(out.counts, counts_of(np.tile(10.0 + inbound, groups)))
    # Hop times add up to the round trip: update's includes waiting for the later decodes.
    per_hop = out.hop_time_sum_us / out.messages
    assert per_hop == pytest.approx(
        [10.0, 2.0, 5.0 + n, float(np.mean(decode)), float(np.mean(decode[-1] - decode + update))]
    )


@pytest.mark.parametrize("engine", sorted(ENGINES))
def test_a_woken_reader_pays_its_wake_up_in_the_first_stage(engine: str) -> None:
    """Lone messages 100 us apart: every read finds the thread asleep and its poll stage takes
    the 2 us of work plus a 7 us wake-up."""
    thread = Station("thread", 1, wake=Const(7.0), reader=True)
    path = compile_path(pipeline_hops(thread), (Span("poll", "poll", "poll"),))
    out = ENGINES[engine](path, grouped(1, 0.01, 1_000, seed=1, uniform=True))
    assert np.array_equal(out.span_counts[0], counts_of(np.full(out.messages, 9.0)))
    assert out.rtt_sum_us / out.messages == pytest.approx(10 + 9 + 6 + 2.5 + 3)


@pytest.mark.parametrize("engine", sorted(ENGINES))
def test_a_reader_woken_before_its_vcpu_halted_pays_less(engine: str) -> None:
    """The same lone messages with a halt time far beyond their 100 us gaps: the vCPU never
    halted, so each wake-up costs 1 - halt_share of its 7 us (2.8 us with a share 0.6)."""
    thread = Station("thread", 1, wake=Const(7.0), reader=True, halt_share=0.6, halt_tau_us=1e9)
    path = compile_path(pipeline_hops(thread), (Span("poll", "poll", "poll"),))
    out = ENGINES[engine](path, grouped(1, 0.01, 1_000, seed=1, uniform=True))
    assert np.array_equal(out.span_counts[0], counts_of(np.full(out.messages, 2.0 + 2.8)))


@pytest.mark.parametrize("engine", sorted(ENGINES))
def test_data_arriving_during_the_bookkeeping_waits_for_the_next_poll(engine: str) -> None:
    """Sends at 40 and 80 us; a read of one takes 13.5 us and 30 us of bookkeeping follow it:
    the second message reaches the socket at 90 us, the thread polls at 93.5 us."""
    thread = Station("thread", 1, linger_us=30.0, reader=True)
    path = compile_path(pipeline_hops(thread))
    load = replace(grouped(1, 1 / 40, 2, seed=1, uniform=True), duration_us=81.0)
    out = ENGINES[engine](path, load)
    assert out.messages == 2
    assert np.array_equal(out.counts, counts_of([23.5, 27.0]))
    # Busy time counts the reads polled inside the window: the first (the second polls at 93.5).
    assert out.station_busy_us[0] == pytest.approx(13.5 + 30.0)


@pytest.mark.parametrize("engine", sorted(ENGINES))
def test_reads_match_the_pipelines_reference_semantics(engine: str) -> None:
    """Bursts of 4 every 10 us with 8 us of work per read and 1.5 us per message: the thread
    falls behind one burst, catches up by reading two at once; every message's stage latencies
    equal those of twin.pipeline.simulate_pipeline on the same schedule (constant work)."""
    burst, gap_us = 4, 10.0
    thread = Station("thread", 1, linger_us=1.0, reader=True)
    hops = pipeline_hops(thread, poll=3.0, tls=2.0, tls_msg=0.5, decode_start=0.2,
                         decode=0.5, update=0.5, per_record=0.7)  # fmt: skip
    stages = (
        Span("poll_to_read", "poll", "poll"),
        Span("tls", "tls", "tls"),
        Span("decode", "decode", "decode"),
        Span("update", "update", "update"),
        Span("inbound", "poll", "update"),
    )
    path = compile_path(hops, stages)
    load = grouped(burst, burst / gap_us, 40_000, seed=1, uniform=True)
    out = ENGINES[engine](path, replace(load, warmup_us=0.0))

    ns = 1e3
    model = PipelineModel(
        poll_to_read_ns=np.array([3.0 * ns]),
        tls_ns=np.array([(2.0 + 0.5) * ns]),
        tls_per_message_ns=0.5 * ns,
        tls_per_record_ns=0.7 * ns,
        first={"decode": np.array([0.7 * ns]), "parse": np.zeros(1), "update": np.array([500.0])},
        rest={"decode": np.array([500.0]), "parse": np.zeros(1), "update": np.array([500.0])},
        delivery_ns=np.array([10.0 * ns]),
        source_lateness_ns=np.zeros(1),
        source_per_message_ns=0.0,
        after_ns=np.array([1.0 * ns]),
    )
    due, sizes = burst_schedule(burst / gap_us * 1e6, [burst], 0.01)
    reference = simulate_pipeline(model, due + gap_us * ns, sizes)
    assert reference["read_size"].max() == 2 * burst  # the reads do merge
    for k, name in enumerate(path.span_names):
        ref = {"poll_to_read": "poll_to_read", "tls": "tls", "decode": "decode",
               "update": "update", "inbound": "inbound"}[name]  # fmt: skip
        got = out.span_counts[k]
        expected = counts_of(reference[ref] / ns)
        # Same distinct values in the same proportions (the runs differ in length).
        assert np.array_equal(got.nonzero()[0], expected.nonzero()[0]), name
        assert got[got > 0] / got.sum() == pytest.approx(
            expected[expected > 0] / expected.sum(), abs=0.01
        ), name


def random_reader_path() -> tuple:
    thread = Station("thread", 1, wake=Exponential(3.0), cold_us=5.0, cold_tau_us=50.0,
                     linger_us=2.0, reader=True)  # fmt: skip
    hops = [
        Hop("network", "test", fixed_us=20.0, delay=ShiftedLognormal(1.0, 3.0, 0.9)),
        Hop(
            "poll",
            "test",
            per_read=ShiftedLognormal(1.0, 2.5, 0.5),
            whole_read=True,
            station=thread,
        ),  # fmt: skip
        Hop(
            "tls",
            "test",
            per_read=Exponential(2.0),
            service=Const(0.4),
            per_record_us=1.0,
            whole_read=True,
            station=thread,
        ),  # fmt: skip
        Hop("decode", "test", per_read=Const(0.5), service=Exponential(1.0), station=thread),
        Hop("update", "test", service=ShiftedLognormal(0.3, 1.0, 0.8), station=thread),
        Hop("reply", "test", service=Exponential(2.0), station=Station("sender", 1)),
    ]
    spans = (Span("decode", "decode", "decode"), Span("inbound", "poll", "update"))
    return compile_path(hops, spans)


@pytest.mark.parametrize("burst", [1, 8])
def test_engines_agree_on_a_random_reader(burst: int) -> None:
    """Poisson groups at 60% of the per-message work plus per-read costs: the two engines'
    round trips and spans have the same distribution (KS over four pooled seeds: a group's
    messages, and reads, are correlated, so one seed's groups are too few for a tight test)."""
    path = random_reader_path()
    outs = {}
    for name, simulate in ENGINES.items():
        runs = [
            simulate(path, replace(grouped(burst, 0.12, 30_000, seed=s), warmup_us=2_000.0))
            for s in (7, 8, 9, 10)
        ]
        outs[name] = reduce(lambda a, b: a.merge(b), runs)
    assert outs["fast"].messages == pytest.approx(outs["des"].messages, rel=0.03)

    def sample(counts: np.ndarray) -> np.ndarray:
        return np.repeat(np.arange(counts.size, dtype=float), counts.astype(np.int64))

    for row in ("rtt", 0, 1):
        a, b = ((o.counts if row == "rtt" else o.span_counts[row]) for o in outs.values())
        assert stats.ks_2samp(sample(a), sample(b)).statistic < 0.02, row
    assert outs["fast"].station_busy_us[0] == pytest.approx(
        outs["des"].station_busy_us[0], rel=0.02
    )


def test_reader_paths_are_checked() -> None:
    thread = Station("thread", 1, reader=True)
    with pytest.raises(ModelError, match="contiguous"):
        compile_path([Hop("a", "t", station=thread), Hop("b", "t", fixed_us=1.0),
                      Hop("c", "t", station=thread)])  # fmt: skip
    with pytest.raises(ModelError, match="reader station"):
        Hop("a", "t", per_read=Const(1.0), station=Station("s", 1))
    with pytest.raises(ModelError, match="thread's time only"):
        Hop("a", "t", fixed_us=1.0, station=thread)
    with pytest.raises(ModelError, match="one thread"):
        Station("pool", 2, reader=True)
    with pytest.raises(ModelError, match="no hop named"):
        compile_path([Hop("a", "t", fixed_us=1.0)], (Span("x", "a", "b"),))
    with pytest.raises(ModelError, match="comes after"):
        compile_path([Hop("a", "t"), Hop("b", "t")], (Span("x", "b", "a"),))
    assert dtypes.HOP_DTYPE["whole_read"] == np.int64
