"""The venue's software: gateway threads, and the risk check + matching engine.

The gateway decodes, validates and routes each inbound message on one of a pool of threads (a
multi-server station) and encodes the reply; the matching engine is single-threaded (one server),
as in the published venue and in ``engine_ext``. Service times come from the profile unless the
scenario overrides their mean; the matching engine's may be an empirical distribution measured
from ``engine_ext``.
"""

from __future__ import annotations

from twin.components.stages import sources
from twin.dists import Const, Dist, ShiftedLognormal
from twin.path import Hop, Station
from twin.profile import Profile
from twin.scenario import Exchange


def _service(profile: Profile, name: str, override_mean_us: float | None) -> Dist:
    """A lognormal service time with the profile's shape, rescaled to an override mean."""
    sigma = profile.value(f"{name}_sigma")
    dist = ShiftedLognormal(0.0, profile.value(f"{name}_median_us"), sigma)
    if override_mean_us is None:
        return dist
    return ShiftedLognormal(0.0, override_mean_us * dist.median_us / dist.mean, sigma)


def inbound_hops(exchange: Exchange, profile: Profile, engine: Dist | None = None) -> list[Hop]:
    """Gateway decode + risk check and matching for one inbound message."""
    threads = Station("gateway threads", exchange.gateway_threads)
    risk_match = engine or _service(profile, "risk_match", exchange.risk_match_service_us)
    return [
        Hop(
            "gateway decode",
            "gateway",
            service=_service(profile, "gateway_service", exchange.gateway_service_us),
            station=threads,
            source=sources(profile, "gateway_service_median_us"),
        ),
        Hop(
            "risk check + matching",
            "engine",
            service=risk_match,
            station=Station("matching engine", 1),
            source=sources(profile, "risk_match_median_us"),
        ),
    ]


def speed_bump(exchange: Exchange) -> list[Hop]:
    """The venue's speed bump, if it has one: a fixed delay before its gateway, which keeps
    the order requests reach it in (twin.protections; IEX's is 350 us)."""
    if exchange.speed_bump_us <= 0:
        return []
    return [
        Hop(
            "speed bump",
            "gateway",
            fixed_us=exchange.speed_bump_us,
            source="scenario exchange.speed_bump_us (IEX: 350 us)",
        )
    ]


def reply_hop(exchange: Exchange, profile: Profile) -> Hop:
    """Gateway encoding the ack (or cancel ack) on its thread pool."""
    return Hop(
        "gateway encode reply",
        "gateway",
        service=Const(profile.value("gateway_reply_us")),
        station=Station("gateway threads", exchange.gateway_threads),
        source=sources(profile, "gateway_reply_us"),
    )


def echo_hop(profile: Profile) -> Hop:
    """The echo server's turnaround (netperf/sockperf/Aeron echo): one thread, tiny service."""
    return Hop(
        "echo server",
        "app",
        service=Const(profile.value("echo_service_us")),
        station=Station("echo server", 1),
        source=sources(profile, "echo_service_us"),
    )
