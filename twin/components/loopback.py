"""One machine: client and gateway processes joined by the kernel's loopback or a veth pair.

This is the live testbed (``twin testbed``): no NIC and no fabric. What a message meets:

* the **client process** (station ``client process``, one server: the load client's two
  threads share one interpreter lock) spends CPU to encode and write each message and to read
  and decode each reply, including the kernel's send path, which on loopback and veth runs in
  the sender's context;
* the **kernel path** between the processes (loopback, or veth between two namespaces): a
  non-queueing delay per direction covering the wake-up of the receiving thread, the scheduler
  and softirq, shifted lognormal ``local_path`` (veth adds ``local_veth_us``);
* the **client's send lateness**: the open-loop sender sleeps to each scheduled time and wakes
  late by a random amount (timer, scheduler); the order's round trip counts it, since it is
  measured from the scheduled time (shifted lognormal ``local_send_lag``); the cancel, sent on
  the ack, does not;
* the **gateway process** (station ``gateway process``, one server: one event loop) spends CPU
  per message to read, decode, run risk + matching in ``engine_ext`` and write the reply.

Service times are CPU per message *measured* by the testbed (``client_cpu_us_per_msg``,
``gateway_cpu_us_per_msg`` of a run's summary); the non-queueing delays are fitted to a low-rate
run. The two processes share the host's vCPUs with each other and anything else running: that
sharing is not modelled as a station (one server each stands for "gets a core when it needs
one"), which is the main limit of this model on a busy host.
"""

from __future__ import annotations

import numpy as np

from twin.components.stages import sources, stage
from twin.dists import Const, Empirical
from twin.path import Hop, Station
from twin.profile import Profile

CLIENT = Station("client process", 1)
GATEWAY = Station("gateway process", 1)


# Draws of the sender's lateness kept in the compiled path (a fixed seed: same profile, same path).
LAG_TABLE_SIZE = 4096


def _order_lateness(profile: Profile) -> Empirical:
    """Lateness of the order half of the loop: the cancel goes at once on the ack, on time.

    The path has one round trip per message, so the mixture (half the messages late by the
    lognormal lateness, half not at all) is carried as an empirical table.
    """
    draws = stage(profile, "local_send_lag").sample(np.random.default_rng(0), LAG_TABLE_SIZE)
    draws[1::2] = 0.0
    return Empirical(tuple(float(x) for x in draws), label="order send lateness")


def client_send_hops(profile: Profile) -> list[Hop]:
    """The client's lateness against its schedule (orders only), then its encode + write."""
    return [
        Hop(
            "client send lateness",
            "host",
            delay=_order_lateness(profile),
            source=sources(profile, "local_send_lag_median_us"),
        ),
        Hop(
            "client encode + write",
            "host",
            service=Const(profile.value("local_client_send_cpu_us")),
            station=CLIENT,
            source=sources(profile, "local_client_send_cpu_us"),
        ),
    ]


def client_receive_hops(profile: Profile) -> list[Hop]:
    """The client's read + decode + record of one reply."""
    return [
        Hop(
            "client read + decode",
            "host",
            service=Const(profile.value("local_client_recv_cpu_us")),
            station=CLIENT,
            source=sources(profile, "local_client_recv_cpu_us"),
        )
    ]


def path_hops(label: str, tier: str, profile: Profile) -> list[Hop]:
    """The kernel path between the two processes, one direction."""
    fixed = profile.value("local_veth_us") if tier == "veth" else 0.0
    names = ["local_path_median_us"] + (["local_veth_us"] if tier == "veth" else [])
    return [
        Hop(
            f"{label} {tier}",
            "kernel",
            fixed_us=fixed,
            delay=stage(profile, "local_path"),
            source=sources(profile, *names),
        )
    ]


def gateway_hops(profile: Profile) -> list[Hop]:
    """The gateway's read, decode, risk check + matching and reply write (one event loop)."""
    return [
        Hop(
            "gateway read + engine + write",
            "gateway",
            service=Const(profile.value("local_gateway_cpu_us")),
            station=GATEWAY,
            source=sources(profile, "local_gateway_cpu_us"),
        )
    ]
