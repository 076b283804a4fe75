"""The curated public API: sorted, importable, and the error hierarchy matches built-ins."""

from __future__ import annotations

import twin
from twin.errors import MeasurementError, ProfileError, ScenarioError, SimulationError, TwinError


def test_all_is_sorted_and_importable() -> None:
    assert twin.__all__ == sorted(twin.__all__)
    for name in twin.__all__:
        assert hasattr(twin, name), name


def test_errors_inherit_the_matching_builtins() -> None:
    for error in (ScenarioError, ProfileError, MeasurementError):
        assert issubclass(error, TwinError) and issubclass(error, ValueError)
    assert issubclass(SimulationError, TwinError) and issubclass(SimulationError, RuntimeError)
