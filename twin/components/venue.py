"""A venue reached through its public API: a REST order request over HTTPS from another account.

The request leaves the client's host, crosses the AZ's fabric to where the venue's public front
end sits (so the client's placement matters: the level between the two placements, across AZs
when they differ), passes the Internet gateway and border routers to the venue's public address
(path congestion by hour of the day queues there), reaches the venue's public load balancer
(TLS terminated at a layer-7 balancer: the ``alb`` stage the Internet tier uses too) and the
venue's API servers and matching engine, which other traders load by hour of the day. The
response comes back the same way. A REST client does work of its own per request (HTTP, TLS
records, JSON) at its instance's single-thread speed.

Everything the venue does with everybody else's traffic is a wait, not simulated message by
message: a :class:`twin.dists.BusyWait` at the hour's utilisation (the ``[day]`` table of the
scenario and the profile's peak utilisations). The hour is the scenario's ``day.hour``;
:mod:`twin.day` runs a scenario without one hour by hour.
"""

from __future__ import annotations

from twin.catalogue import InstanceType
from twin.components import burstable
from twin.components.stages import sources, stage
from twin.dists import ZERO, BusyWait, Const, Dist, Occasional
from twin.path import Hop, Station
from twin.profile import Profile
from twin.scenario import Day


def _busy(profile: Profile, service: str, peak: str, load: float) -> Dist:
    utilization = load * profile.value(peak)
    return ZERO if utilization == 0.0 else BusyWait(profile.value(service), utilization)


def _hour(day: Day | None) -> int | None:
    return None if day is None else day.hour


def border_hop(label: str, profile: Profile, day: Day | None) -> Hop:
    """The Internet gateway and border routers to (or from) the venue's public address, with the
    path's congestion at the hour."""
    hour = _hour(day)
    load = 0.0 if day is None or hour is None else day.path_load[hour]
    return Hop(
        f"{label} Internet gateway and border",
        "internet",
        fixed_us=profile.value("internet_border_us"),
        delay=_busy(profile, "venue_path_service_us", "venue_path_peak_utilization_prob", load),
        source=sources(
            profile,
            "internet_border_us",
            "venue_path_service_us",
            "venue_path_peak_utilization_prob",
        ),
    )


def load_balancer_hop(label: str, profile: Profile) -> Hop:
    """The venue's public layer-7 load balancer (TLS terminated there)."""
    return Hop(
        f"{label} venue load balancer",
        "load_balancer",
        delay=stage(profile, "alb"),
        source=sources(profile, "alb_median_us"),
    )


def venue_hops(profile: Profile, day: Day | None) -> list[Hop]:
    """The venue's API servers, risk and matching, then the wait other traders' load adds."""
    hour = _hour(day)
    load = 0.0 if day is None or hour is None else day.venue_load[hour]
    return [
        Hop(
            "venue API and matching",
            "venue",
            delay=stage(profile, "venue_service"),
            source=sources(profile, "venue_service_median_us"),
        ),
        Hop(
            "venue queue (other traders)",
            "venue",
            delay=_busy(profile, "venue_queue_service_us", "venue_peak_utilization_prob", load),
            source=sources(profile, "venue_queue_service_us", "venue_peak_utilization_prob"),
        ),
    ]


def client_work_hops(
    instance: InstanceType, profile: Profile, rate_msgs_per_s: float, day: Day | None
) -> list[Hop]:
    """The REST client's own work per request (HTTP, TLS records, JSON) on its vCPUs, at the
    instance's single-thread speed (:attr:`twin.catalogue.InstanceType.cpu_speed`); on a
    burstable instance out of CPU credits, stretched to its baseline share
    (:mod:`twin.components.burstable`) for the share of the hour it is throttled."""
    work = profile.value("client_request_work_us") / instance.cpu_speed
    cpu = Station("client CPU", instance.vcpus)
    hops = [
        Hop(
            "client REST request work",
            "host",
            service=Const(work),
            station=cpu,
            source=sources(profile, "client_request_work_us"),
        )
    ]
    demand = rate_msgs_per_s * work / 1e6 / instance.vcpus
    throttled = burstable.throttled_share(instance, demand, _hour(day))
    if throttled > 0.0:
        hops.append(
            Hop(
                "client CPU throttled (no CPU credits)",
                "host",
                service=Occasional(work * (1.0 / instance.cpu_baseline - 1.0), throttled),
                station=cpu,
                source="AWS burstable performance instances: baseline utilisation and CPU credits",
            )
        )
    return hops


def connection_setup_hop(profile: Profile) -> Hop:
    """What a new connection costs the venue's front end beyond the round trips (TCP accept,
    the TLS server handshake's signature and key exchange, connection bookkeeping)."""
    return Hop(
        "venue connection setup",
        "load_balancer",
        fixed_us=profile.value("venue_connection_setup_us"),
        source=sources(profile, "venue_connection_setup_us"),
    )
