"""Shared reading of a software or network stage's latency from a profile.

A stage named ``x`` is described by three profile parameters: ``x_floor_us`` (the time it never
beats), ``x_median_us`` (median of the random part above the floor) and ``x_sigma`` (log-space
spread of that random part): a shifted lognormal, the usual shape of measured stage latencies.
"""

from __future__ import annotations

from twin.dists import ShiftedLognormal
from twin.profile import Profile


def stage(profile: Profile, name: str) -> ShiftedLognormal:
    """The shifted-lognormal latency of stage ``name`` as given by the profile."""
    return ShiftedLognormal(
        shift_us=profile.value(f"{name}_floor_us"),
        median_us=profile.value(f"{name}_median_us"),
        sigma=profile.value(f"{name}_sigma"),
    )


def sources(profile: Profile, *names: str) -> str:
    """The distinct sources of the given parameters, for a hop's provenance."""
    seen: dict[str, None] = {}
    for name in names:
        seen.setdefault(profile[name].source, None)
    return "; ".join(seen)
