"""The reference engine's servers (``twin.des._Servers``) against ``simpy.Resource``.

``_Servers`` claims to schedule every grant and release where SimPy's ``Resource`` does, so a
run orders its events, and draws its numbers, exactly as with it. Each case here runs the
same path and load twice, once with ``simpy.Resource`` in its place, and asks for the same
output to the last bit: ties at a station (constant services, evenly spaced groups), several
servers, work left behind, hops that continue on their server, and shipped scenarios at a
rate that queues.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
import simpy

from tests.twin.conftest import SCENARIOS
from tests.twin.fast.test_fast_theory import poisson_load
from tests.twin.test_des_progress import assert_same_output
from twin import des, dtypes
from twin.dists import Const, Exponential
from twin.load import Load
from twin.path import CompiledPath, Hop, Station, compile_path
from twin.scenario import load_scenario
from twin.simulation import apply_overrides, prepare


def _both(path: CompiledPath, load: Load, monkeypatch: pytest.MonkeyPatch) -> None:
    ours = des.simulate(path, load)
    with monkeypatch.context() as m:
        m.setattr(des, "_Servers", simpy.Resource)
        theirs = des.simulate(path, load)
    assert ours.messages > 100
    assert_same_output(ours, theirs)


def _tied_path(servers: int) -> CompiledPath:
    """Constant services on a shared station visited twice, work left behind, a continuing hop:
    many messages reach a server at the same instant."""
    core = Station("core", servers)
    return compile_path(
        [
            Hop("in", "test", service=Const(2.0), station=core, linger=Const(1.0)),
            Hop("wire", "test", fixed_us=3.0),
            Hop("work", "test", service=Const(4.0), station=core, continues=True),
            Hop("reply", "test", service=Exponential(1.0), station=core),
        ]
    )


@pytest.mark.parametrize("servers", [1, 3])
def test_ties_at_a_station_are_served_in_simpys_order(servers, monkeypatch) -> None:
    groups = replace(
        poisson_load(0.06 * servers, 6_000, seed=5),
        arrivals=dtypes.ARRIVALS_UNIFORM,
        burst=4,
    )
    _both(_tied_path(servers), groups, monkeypatch)


@pytest.mark.parametrize(
    ("name", "rate"),
    [("tier1_peering_cpg", 400_000), ("local_sockperf", 50_000), ("cluster_cpg", 100_000)],
)
def test_shipped_scenarios_run_as_with_simpys_resource(name, rate, monkeypatch) -> None:
    scenario = apply_overrides(load_scenario(SCENARIOS / f"{name}.toml"), rate, 0.005, 3)
    prepared = prepare(scenario.with_fields({"workload.warmup_s": 0.002}))
    _both(prepared.path, prepared.load, monkeypatch)
