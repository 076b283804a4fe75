"""The physical network between two hosts: switches and fibre, by how far apart they sit.

An AZ's fabric is a tree of layers (domain brief): hosts under one rack switch; racks under a spine
cell; cells joined by higher layers; AZs joined by inter-AZ links. Two hosts climb only as high as
their nearest common layer, and each layer climbed adds switch traversals, fibre (5 us per km) and
variance, because higher layers are shared with more traffic. This is where a cluster placement
group's benefit comes from.

Distance classes: ``rack`` (same rack), ``cell`` (same spine cell), ``cross_cell`` (same AZ,
different cells), ``cross_az``.
"""

from __future__ import annotations

from twin.components.stages import sources, stage
from twin.path import Hop
from twin.profile import Profile
from twin.units import FIBRE_US_PER_KM

LEVELS = ("rack", "cell", "cross_cell", "cross_az")


def fabric_hops(label: str, level: str, profile: Profile) -> list[Hop]:
    """Hops for one direction between two hosts whose nearest common layer is ``level``."""
    if level not in LEVELS:
        raise ValueError(f"Unknown fabric level {level!r}; allowed: {', '.join(LEVELS)}")
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
    hops.append(
        Hop(
            f"{label} between cells",
            "fabric",
            fixed_us=profile.value("cell_spine_us")
            + profile.value("az_spine_us")
            + FIBRE_US_PER_KM * profile.value("cross_cell_fibre_km"),
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
