"""The physical network between two hosts: switches and fibre, by how far apart they sit.

An AZ's fabric is a tree of layers (domain brief): hosts under one rack switch; racks under a spine
cell; cells joined by higher layers; AZs joined by inter-AZ links. Two hosts climb only as high as
their nearest common layer, and each layer climbed adds switch traversals, fibre (5 us per km) and
variance, because higher layers are shared with more traffic. This is where a cluster placement
group's benefit comes from.

Distance classes: ``rack`` (same rack), ``cell`` (same spine cell), ``cross_cell`` (same data
centre, different cells: the AZ spine without the campus fibre), ``cross_datacenter`` (cells in
different data centres of the AZ: adds ``cross_cell_fibre_km`` of fibre), ``random_cell`` (a
host in a random cell of the AZ, such as a managed Hyperplane node: the campus fibre it takes on
average, ``cross_cell_fibre_km`` times the chance of another data centre), ``cross_az``.
"""

from __future__ import annotations

from twin.components.stages import sources, stage
from twin.errors import ModelError
from twin.path import Hop
from twin.profile import Profile
from twin.units import FIBRE_US_PER_KM

LEVELS = ("rack", "cell", "cross_cell", "random_cell", "cross_datacenter", "cross_az")


_CROSSING = {
    "cross_cell": "between cells",
    "random_cell": "across the AZ",
    "cross_datacenter": "between data centres",
    "cross_az": "between data centres",
}


def _campus_share(level: str, profile: Profile) -> float:
    """How much of the fibre between data centres a trip at ``level`` takes (on average)."""
    if level == "cross_cell":
        return 0.0
    if level == "random_cell":
        return 1.0 - 1.0 / profile.value("az_datacenters")
    return 1.0


def fabric_hops(label: str, level: str, profile: Profile) -> list[Hop]:
    """Hops for one direction between two hosts whose nearest common layer is ``level``."""
    if level not in LEVELS:
        raise ModelError(f"Unknown fabric level {level!r}; allowed: {', '.join(LEVELS)}")
    tor = profile.value("tor_switch_us")
    if level == "rack":
        return [
            Hop(
                f"{label} rack switch",
                "fabric",
                fixed_us=tor,
                delay=stage(profile, "fabric_jitter"),
                source=sources(profile, "tor_switch_us", "fabric_jitter_median_us"),
            )
        ]
    in_cell = 2 * tor + profile.value("cell_spine_us")
    hops = [
        Hop(
            f"{label} spine cell",
            "fabric",
            fixed_us=in_cell + FIBRE_US_PER_KM * profile.value("cell_fibre_km"),
            delay=stage(profile, "fabric_jitter"),
            source=sources(
                profile,
                "tor_switch_us",
                "cell_spine_us",
                "cell_fibre_km",
                "fabric_jitter_median_us",
            ),
        )
    ]
    if level == "cell":
        return hops
    campus_km = profile.value("cross_cell_fibre_km") * _campus_share(level, profile)
    hops.append(
        Hop(
            f"{label} {_CROSSING[level]}",
            "fabric",
            fixed_us=profile.value("cell_spine_us")
            + profile.value("az_spine_us")
            + FIBRE_US_PER_KM * campus_km,
            delay=stage(profile, "cross_cell"),
            source=sources(profile, "az_spine_us", "cross_cell_fibre_km", "cross_cell_median_us"),
        )
    )
    if level == "cross_az":
        hops.append(
            Hop(
                f"{label} inter-AZ link",
                "fabric",
                fixed_us=FIBRE_US_PER_KM * profile.value("inter_az_km"),
                delay=stage(profile, "inter_az"),
                source=sources(profile, "inter_az_km", "inter_az_median_us"),
            )
        )
    return hops
