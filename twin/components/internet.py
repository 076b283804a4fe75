"""The Internet tier: out through the region's border to a CloudFront point of presence and back.

CloudFront terminates the client's connection at an edge location and forwards to the origin, a
public Application Load Balancer in the exchange's region, which forwards to the gateways. Both
are layer-7 proxies (request parsing, TLS, connection pools): larger and heavier-tailed than a
Hyperplane node. The edge is some distance from the AZ, paid in fibre both ways.
"""

from __future__ import annotations

from twin.components.stages import sources, stage
from twin.path import Hop
from twin.profile import Profile
from twin.units import FIBRE_US_PER_KM


def border_hop(label: str, profile: Profile) -> Hop:
    """Leaving (or entering) the region through the Internet gateway and AWS's border routers."""
    return Hop(
        f"{label} Internet border",
        "internet",
        fixed_us=profile.value("internet_border_us"),
        source=sources(profile, "internet_border_us"),
    )


def edge_hops(label: str, profile: Profile) -> list[Hop]:
    """Fibre to the CloudFront point of presence and the edge proxy's processing."""
    return [
        Hop(
            f"{label} fibre to CloudFront PoP",
            "internet",
            fixed_us=FIBRE_US_PER_KM * profile.value("cloudfront_pop_km"),
            source=sources(profile, "cloudfront_pop_km"),
        ),
        Hop(
            f"{label} CloudFront edge",
            "cloudfront",
            delay=stage(profile, "cloudfront_edge"),
            source=sources(profile, "cloudfront_edge_median_us"),
        ),
    ]


def origin_hops(label: str, profile: Profile) -> list[Hop]:
    """Fibre back from the edge to the region and the public ALB in front of the gateways."""
    return [
        Hop(
            f"{label} fibre from CloudFront PoP",
            "internet",
            fixed_us=FIBRE_US_PER_KM * profile.value("cloudfront_pop_km"),
            source=sources(profile, "cloudfront_pop_km"),
        ),
        Hop(
            f"{label} application load balancer",
            "load_balancer",
            delay=stage(profile, "alb"),
            source=sources(profile, "alb_median_us"),
        ),
    ]
