"""Hyperplane nodes: the network-function fleet behind PrivateLink, NLB, Transit Gateway and NAT.

Hyperplane is a horizontally scaled fleet, so a node is modelled as a non-queueing delay (its
capacity is not the limit at these rates), and it sits **outside** any cluster placement group:
reaching it always crosses spine cells (domain brief, tier 3). Transit Gateway adds a routing
lookup on top of the node traversal.
"""

from __future__ import annotations

from twin.components.stages import sources, stage
from twin.errors import ModelError
from twin.path import Hop
from twin.profile import Profile

FUNCTIONS = ("privatelink endpoint", "network load balancer", "transit gateway", "NAT gateway")


def hyperplane_hop(label: str, function: str, profile: Profile) -> Hop:
    """One traversal of a Hyperplane node performing ``function``."""
    if function not in FUNCTIONS:
        raise ModelError(f"Unknown Hyperplane function {function!r}; allowed: {FUNCTIONS}")
    fixed = profile.value("tgw_route_us") if function == "transit gateway" else 0.0
    names = ["hyperplane_median_us"] + (["tgw_route_us"] if fixed else [])
    return Hop(
        f"{label} {function}",
        "hyperplane",
        fixed_us=fixed,
        delay=stage(profile, "hyperplane"),
        source=sources(profile, *names),
    )
