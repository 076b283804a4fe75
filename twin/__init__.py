"""exchange-latency-twin: a digital twin of order round-trip latency to a cloud exchange.

The public API: load a scenario, run it on an engine, read the result.

>>> from twin import load_scenario, run
>>> result = run(load_scenario("scenarios/tier1_peering_cpg.toml"))  # fast engine  # doctest: +SKIP
>>> result.rtt_us["p99"]  # doctest: +SKIP
"""

from engine_ext.jit_cache import configure as _configure_jit_cache

_configure_jit_cache()

from twin.compare import compare  # noqa: E402
from twin.errors import (  # noqa: E402
    MeasurementError,
    ProfileError,
    ScenarioError,
    SimulationError,
    TwinError,
)
from twin.profile import Profile, load_profile  # noqa: E402
from twin.results import RunResult  # noqa: E402
from twin.scenario import Scenario, load_scenario, parse  # noqa: E402
from twin.simulation import (  # noqa: E402
    DEFAULT_ENGINE,
    ENGINES,
    EngineName,
    Prepared,
    apply_overrides,
    prepare,
    run,
    run_prepared,
    scenario_profile,
)

__all__ = [
    "DEFAULT_ENGINE",
    "ENGINES",
    "EngineName",
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
    "compare",
    "load_profile",
    "load_scenario",
    "parse",
    "prepare",
    "run",
    "run_prepared",
    "scenario_profile",
]
