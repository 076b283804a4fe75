"""exchange-latency-twin: a digital twin of order round-trip latency to a cloud exchange.

The public API: load a scenario, run it on an engine, read the result.

>>> from twin import load_scenario, run
>>> result = run(load_scenario("scenarios/tier1_peering_cpg.toml"))  # doctest: +SKIP
>>> result.rtt_us["p99"]  # doctest: +SKIP
"""

from twin.errors import (
    MeasurementError,
    ProfileError,
    ScenarioError,
    SimulationError,
    TwinError,
)
from twin.profile import Profile, load_profile
from twin.results import RunResult
from twin.scenario import Scenario, load_scenario, parse
from twin.simulation import (
    ENGINES,
    Prepared,
    apply_overrides,
    prepare,
    run,
    run_prepared,
    scenario_profile,
)

__all__ = [
    "ENGINES",
    "MeasurementError",
    "Prepared",
    "Profile",
    "ProfileError",
    "RunResult",
    "Scenario",
    "ScenarioError",
    "SimulationError",
    "TwinError",
    "apply_overrides",
    "load_profile",
    "load_scenario",
    "parse",
    "prepare",
    "run",
    "run_prepared",
    "scenario_profile",
]
