"""The reference engine reports progress without changing a single event."""

from __future__ import annotations

import numpy as np
import pytest

from tests.twin.fast.test_fast_crosscheck import prepared_for
from tests.twin.fast.test_fast_ties import tied_path
from twin import des, dtypes
from twin.load import Load
from twin.path import compile_path
from twin.results import EngineOutput


def assert_same_output(plain: EngineOutput, other: EngineOutput) -> None:
    """Two runs' outputs equal to the last bit."""
    np.testing.assert_array_equal(plain.counts, other.counts)
    np.testing.assert_array_equal(plain.counts_by_kind, other.counts_by_kind)
    assert plain.messages == other.messages > 0
    assert (plain.rtt_sum_us, plain.rtt_max_us) == (other.rtt_sum_us, other.rtt_max_us)
    assert plain.duration_us == other.duration_us
    np.testing.assert_array_equal(plain.hop_time_sum_us, other.hop_time_sum_us)
    np.testing.assert_array_equal(plain.station_busy_us, other.station_busy_us)


def test_progress_on_a_random_path_changes_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    prep = prepared_for("tier1_peering_cpg", 400_000, 3_000, seed=5)
    plain = des.simulate(prep.path, prep.load)
    monkeypatch.setattr(des, "MESSAGES_PER_CHUNK", 37)
    reported: list[float] = []
    chunked = des.simulate(prep.path, prep.load, progress=reported.append)
    assert_same_output(plain, chunked)
    assert len(reported) > 10 and reported[-1] == 1.0
    assert reported == sorted(reported)


def test_progress_keeps_the_order_of_exact_ties(monkeypatch: pytest.MonkeyPatch) -> None:
    """Evenly spaced sends over constant times, a report due at nearly every event."""
    path = compile_path(tied_path(1))
    load = Load(
        loop=dtypes.LOOP_OPEN,
        arrivals=dtypes.ARRIVALS_UNIFORM,
        rate_msgs_per_s=2 / 3.5 * 1e6,
        accounts=1,
        messages_per_cycle=2,
        duration_us=400 * 3.5,
        warmup_us=16 * 3.5,
        seed=3,
    )
    monkeypatch.setattr(des, "MESSAGES_PER_CHUNK", 1)  # a report due every 1.75 us
    plain = des.simulate(path, load)
    reported: list[float] = []
    chunked = des.simulate(path, load, progress=reported.append)
    assert_same_output(plain, chunked)
    assert reported[-1] == 1.0
