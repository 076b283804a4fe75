"""Issue 20: the inbound pipeline's batch semantics against exact arithmetic."""

from __future__ import annotations

import numpy as np
import pytest

from twin.errors import ModelError
from twin.pipeline import MESSAGE_STAGES, PipelineModel, burst_schedule, simulate_pipeline

WORK = {"decode": 1_000.0, "parse": 2_000.0, "update": 3_000.0}


def constant_model(**changes: float) -> PipelineModel:
    values = {
        "poll_to_read_ns": 500.0, "tls_ns": 4_000.0, "tls_per_message_ns": 100.0,
        "tls_per_record_ns": 700.0, "delivery_ns": 20_000.0, "source_lateness_ns": 0.0,
        "source_per_message_ns": 0.0, **changes,
    }  # fmt: skip
    scalars = ("tls_per_message_ns", "tls_per_record_ns", "source_per_message_ns")
    arrays = {k: np.array([v]) for k, v in values.items() if k not in scalars}
    return PipelineModel(
        **arrays,
        **{k: values[k] for k in scalars},
        first={s: np.array([WORK[s]]) for s in MESSAGE_STAGES},
        rest={s: np.array([WORK[s]]) for s in MESSAGE_STAGES},
    )


def test_a_batch_arriving_at_once_waits_for_the_work_ahead_of_it() -> None:
    """One burst of 5 to an idle thread: the k-th message's latency in each stage is the
    stage's work on messages 1..k; inbound adds the read, the TLS and the earlier stages'
    whole-batch work."""
    out = simulate_pipeline(constant_model(), np.array([0.0]), np.array([5]))
    k = np.arange(1, 6)
    for stage in MESSAGE_STAGES:
        assert out[stage].tolist() == (k * WORK[stage]).tolist()
    tls = 4_000 + 4 * 100
    assert out["tls"].tolist() == [tls] * 5
    before_update = 500 + tls + 5 * (WORK["decode"] + WORK["parse"])
    assert out["inbound"].tolist() == (before_update + k * WORK["update"]).tolist()
    assert out["wire"].tolist() == [20_000.0] * 5


def test_bursts_arriving_while_the_thread_works_join_one_read() -> None:
    """Three single messages 1 us apart: the first read takes one, the thread works 10.5 us,
    the next read takes the two that arrived meanwhile (two TLS records) and they waited."""
    due = np.array([0.0, 1_000.0, 2_000.0])
    out = simulate_pipeline(constant_model(), due, np.array([1, 1, 1]))
    first_read = 500 + 4_000 + sum(WORK.values())
    assert out["tls"].tolist() == [4_000, 4_000 + 100 + 700, 4_000 + 100 + 700]
    assert out["wire"].tolist() == [
        20_000,
        20_000 + first_read - 1_000,
        20_000 + first_read - 2_000,
    ]


def test_a_late_source_clumps_bursts_due_while_it_slept() -> None:
    """A source waking 2.5 periods late sends three bursts together, one after another."""
    due, sizes = burst_schedule(1_000_000, [1], 0.000003)  # 1 us apart, 3 bursts
    model = constant_model(source_lateness_ns=2_500.0, source_per_message_ns=50.0)
    out = simulate_pipeline(model, due, sizes)
    # Bursts due at 0, 1 and 2 us are worked through from the wake-up (2.5 us), 50 ns each,
    # and leave together when the clump is done (2.65 us): one read, three TLS records.
    assert out["tls"].tolist() == [4_000 + 2 * (100 + 700)] * 3
    assert out["wire"].tolist() == [20_150, 20_100, 20_050]  # stamped 2.5, 2.55, 2.6 us


def test_a_model_with_missing_or_negative_work_is_refused() -> None:
    with pytest.raises(ModelError):
        constant_model(tls_per_record_ns=-1.0)
    with pytest.raises(ModelError):
        PipelineModel(
            poll_to_read_ns=np.array([]), tls_ns=np.array([1.0]), tls_per_message_ns=0.0,
            tls_per_record_ns=0.0, first={}, rest={}, delivery_ns=np.array([1.0]),
            source_lateness_ns=np.array([0.0]), source_per_message_ns=0.0,
        )  # fmt: skip
