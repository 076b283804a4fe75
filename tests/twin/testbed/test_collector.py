"""The garbage collector kept off the load client's measured loop."""

from __future__ import annotations

import gc

import pytest

from twin.testbed.collector import collector_off, freeze_startup


@pytest.fixture(autouse=True)
def _restore_collector():
    yield
    gc.enable()
    gc.unfreeze()


def test_inside_the_block_nothing_collects_and_what_lived_before_is_frozen():
    before = [object() for _ in range(3)]
    with collector_off():
        assert not gc.isenabled()
        assert gc.get_freeze_count() >= len(before)
        # Cycles made inside wait for the block to end: no automatic collection runs.
        collections = gc.get_stats()[0]["collections"]
        for _ in range(10 * gc.get_threshold()[0]):
            a: list[object] = []
            a.append(a)
        assert gc.get_stats()[0]["collections"] == collections
    assert gc.isenabled()
    assert gc.get_freeze_count() == 0


def test_the_collector_comes_back_when_the_block_raises():
    with pytest.raises(RuntimeError), collector_off():
        raise RuntimeError("the loop failed")
    assert gc.isenabled()
    assert gc.get_freeze_count() == 0


def test_freeze_startup_leaves_collection_on():
    freeze_startup()
    assert gc.isenabled()
    assert gc.get_freeze_count() > 0
