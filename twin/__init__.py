"""exchange-latency-twin: a digital twin of order round-trip latency to a cloud exchange.

The public API: load a scenario, run it on an engine, read the result.

>>> from twin import load_scenario, run
>>> result = run(load_scenario("scenarios/tier1_peering_cpg.toml"))  # fast engine  # doctest: +SKIP
>>> result.rtt_us["p99"]  # doctest: +SKIP
"""

import importlib
from typing import TYPE_CHECKING, Any

# Where each public name lives. They load when first used (PEP 562), so a process that imports
# one module of the twin (the testbed's gateway and client, a sweep's workers, ``twin --help``)
# starts without the engines, the model and Numba: half a second of every start-up. The modules
# that compile kernels (twin.fast, twin.histogram, and engine_ext's) send them to the project's
# cache (engine_ext.jit_cache) before they define them.
_HOMES = {
    "compare": "twin.compare",
    "MeasurementError": "twin.errors",
    "ProfileError": "twin.errors",
    "ScenarioError": "twin.errors",
    "SimulationError": "twin.errors",
    "TwinError": "twin.errors",
    "Profile": "twin.profile",
    "load_profile": "twin.profile",
    "RunResult": "twin.results",
    "Scenario": "twin.scenario",
    "load_scenario": "twin.scenario",
    "parse": "twin.scenario",
    "DEFAULT_ENGINE": "twin.simulation",
    "ENGINES": "twin.simulation",
    "EngineName": "twin.simulation",
    "Prepared": "twin.simulation",
    "apply_overrides": "twin.simulation",
    "prepare": "twin.simulation",
    "run": "twin.simulation",
    "run_prepared": "twin.simulation",
    "scenario_profile": "twin.simulation",
}

if TYPE_CHECKING:
    from twin.compare import compare
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


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'twin' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
