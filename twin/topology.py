"""Where instances land in an AZ, and the path each message takes between them.

An AZ is made of spine cells, each with racks of hosts (sizes from the profile), spread over the
AZ's data centres (an AZ is "one or more discrete data centers", AWS documentation; cell ``c``
sits in data centre ``c mod az_datacenters``). Placement follows the placement group's rules,
drawn from a generator seeded by the scenario:

- cluster: every member under one spine cell, on racks within a small span of each other;
- no group: each instance on a random cell and rack (random from the customer's point of view);
- partition: each partition on its own racks; spread: every instance on distinct racks;
- roles in different AZs reach each other over the inter-AZ link;
- tiers ``loopback`` and ``veth`` are one machine (the live testbed): no NIC or fabric, the
  client and gateway processes each a station of their own, slowed when the shared cores are
  short (which depends on the scenario's rate).

:func:`build_path` then lays out the ordered hops of one round trip (request, exchange, reply) for
the scenario's tier. Both engines execute the result, compiled by :func:`twin.path.compile_path`.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, replace

import numpy as np

from twin.catalogue import InstanceType
from twin.components import (
    consensus,
    exchange,
    fabric,
    feed,
    host,
    hyperplane,
    internet,
    loopback,
    nic,
    venue,
)
from twin.dists import Dist
from twin.errors import ModelError
from twin.kinds import Arrivals, Batching, Loop, Strategy, Tier, WorkloadKind
from twin.path import Hop, Span
from twin.profile import Profile
from twin.scenario import MTU_BYTES, TCP_IP_HEADER_BYTES, Scenario

# Stream id separating placement randomness from the engines' (same seed, different streams).
PLACEMENT_STREAM = 0x504C4143


@dataclass(frozen=True)
class Placement:
    """The host one role's instance landed on."""

    role: str
    az_id: str
    datacenter: int
    cell: int
    rack: int
    group: str | None
    strategy: Strategy | None

    def describe(self) -> str:
        where = f"{self.az_id} data centre {self.datacenter} cell {self.cell} rack {self.rack}"
        return f"{where} ({self.strategy} group {self.group})" if self.group else where


def level_between(a: Placement, b: Placement) -> str:
    """The nearest common fabric layer of two placements (see :mod:`twin.components.fabric`)."""
    if a.az_id != b.az_id:
        return "cross_az"
    if a.datacenter != b.datacenter:
        return "cross_datacenter"
    if a.cell != b.cell:
        return "cross_cell"
    if a.rack != b.rack:
        return "cell"
    return "rack"


def place(scenario: Scenario, profile: Profile) -> dict[str, Placement]:
    """Place every role that has its own instance, following its placement group's rules."""
    rng = np.random.default_rng([scenario.workload.seed, PLACEMENT_STREAM])
    cells = int(profile.value("az_spine_cells"))
    racks = int(profile.value("cell_racks"))
    span = int(profile.value("cpg_rack_span"))
    datacenters = int(profile.value("az_datacenters"))
    group_cell: dict[tuple[str, str, int], tuple[int, int]] = {}
    used_racks: dict[str, set[tuple[str, int, int]]] = {}
    placements = {}

    def land(name: str, az_id: str, group_name: str | None, partition: int | None) -> None:
        group = scenario.placement_groups.get(group_name or "")
        if group is None:
            cell, rack = int(rng.integers(cells)), int(rng.integers(racks))
        elif group.strategy == Strategy.CLUSTER:
            key = (group.name, az_id, 0)
            if key not in group_cell:
                group_cell[key] = (int(rng.integers(cells)), int(rng.integers(racks - span + 1)))
            cell, first_rack = group_cell[key]
            rack = first_rack + int(rng.integers(span))
        else:
            taken = used_racks.setdefault(group.name, set())
            partition = partition or (len(taken) % group.partitions) + 1
            if group.strategy == Strategy.PARTITION:
                key = (group.name, az_id, partition)
                if key not in group_cell:
                    group_cell[key] = (int(rng.integers(cells)), int(rng.integers(racks)))
                cell, rack = group_cell[key]
            else:
                cell, rack = int(rng.integers(cells)), int(rng.integers(racks))
                while (az_id, cell, rack) in taken:
                    cell, rack = int(rng.integers(cells)), int(rng.integers(racks))
            taken.add((az_id, cell, rack))
        placements[name] = Placement(
            name,
            az_id,
            cell % datacenters,
            cell,
            rack,
            group_name,
            group.strategy if group else None,
        )

    for role in scenario.roles.values():
        land(role.name, role.az_id, role.placement_group, role.partition)
    replication = scenario.exchange.replication
    if replication is not None:
        # Followers and the standby after the roles: a scenario without them places as before.
        for position, member in enumerate(replication.members, start=1):
            if position != replication.leader:
                land(member_role(position), member.az_id, member.placement_group, None)
        if replication.standby is not None:
            m = replication.standby
            land(STANDBY_ROLE, m.az_id, m.placement_group, None)
    return placements


def member_role(position: int) -> str:
    """The placement name of a follower of the replicated engine (1-based member position)."""
    return f"member {position}"


STANDBY_ROLE = "standby"


class _PathBuilder:
    """Assembles the hops of one round trip for a scenario and its placements."""

    def __init__(
        self,
        scenario: Scenario,
        profile: Profile,
        placements: dict[str, Placement],
        rate_msgs_per_s: float | None = None,
    ):
        self.s = scenario
        self.profile = profile
        self.placements = placements
        # The rate the path's load-dependent parts see (shared cores, CPU credits): the
        # workload's, or a closed loop's own throughput (twin.operating_point).
        self.rate = (
            scenario.workload.rate_msgs_per_s if rate_msgs_per_s is None else rate_msgs_per_s
        )
        tier = scenario.connectivity.tier
        payload = scenario.workload.payload_bytes
        self.packets = max(1, math.ceil(payload / (MTU_BYTES[tier] - TCP_IP_HEADER_BYTES)))
        # Each account runs its loop on a connection of its own: one flow for the NIC's RSS.
        self.flows = scenario.workload.accounts

    def side(self, role: str) -> str:
        return "client" if role == "client" else "exchange"

    def instance(self, name: str) -> InstanceType:
        """The instance type of a role, or of a follower or standby of the replicated engine."""
        if name in self.s.roles:
            return self.s.roles[name].instance
        replication = self.s.exchange.replication
        assert replication is not None, name
        if name == STANDBY_ROLE and replication.standby is not None:
            return replication.standby.instance
        for position, member in enumerate(replication.members, start=1):
            if member_role(position) == name:
                return member.instance
        raise KeyError(name)

    def in_same_cluster_group(self, a: str, b: str) -> bool:
        pa, pb = self.placements[a], self.placements[b]
        return pa.group is not None and pa.group == pb.group and pa.strategy == Strategy.CLUSTER

    def nic(self, role: str, direction: str, peer: str) -> Hop:
        return nic.nic_hop(
            role,
            direction,
            self.instance(role),
            self.s.workload.payload_bytes,
            self.packets,
            self.in_same_cluster_group(role, peer),
            self.profile,
        )

    def fabric(self, src: str, dst: str) -> list[Hop]:
        level = level_between(self.placements[src], self.placements[dst])
        return fabric.fabric_hops(f"{src}→{dst}", level, self.profile)

    def outside(self, label: str, cross_az: bool) -> list[Hop]:
        """A trip to a node outside any placement group (a Hyperplane or load-balancer host).

        The node sits in some cell of the AZ, unknown to the customer: its trip crosses cells
        and takes the campus fibre a random cell is away on average (or the inter-AZ link).
        """
        return fabric.fabric_hops(label, "cross_az" if cross_az else "random_cell", self.profile)

    def tier_network(self, src: str, dst: str, stop_at_edge: bool = False) -> list[Hop]:
        """The logical + physical path between the client and the gateway, one direction."""
        tier = self.s.connectivity.tier
        label = f"{src}→{dst}"
        cross_az = self.placements[src].az_id != self.placements[dst].az_id
        p = self.profile
        if tier == Tier.PEERING:
            return self.fabric(src, dst)
        if tier == Tier.PUBLIC_API:
            # The venue's public front end is the gateway role's placement: how far the client
            # landed from it is the fabric level between them (across AZs if they differ).
            return self.fabric(src, dst) + [venue.border_hop(label, p, self.s.day)]
        if tier == Tier.TRANSIT_GATEWAY:
            return (
                self.outside(f"{label} to TGW", False)
                + [hyperplane.hyperplane_hop(label, "transit gateway", p)]
                + self.outside(f"{label} from TGW", cross_az)
            )
        if tier == Tier.PRIVATELINK:
            first, second = ("privatelink endpoint", "network load balancer")
            if src != "client":
                first, second = second, first
            return (
                self.outside(f"{label} to {first}", False)
                + [hyperplane.hyperplane_hop(label, first, p)]
                + self.outside(f"{label} {first} to {second}", cross_az)
                + [hyperplane.hyperplane_hop(label, second, p)]
                + self.outside(f"{label} from {second}", False)
            )
        client_end: list[Hop] = []
        if self.s.connectivity.nat_gateway:
            client_end = self.outside(f"{label} NAT gateway leg", False) + [
                hyperplane.hyperplane_hop(label, "NAT gateway", p)
            ]
        client_end += self.outside(f"{label} client to border", False)
        client_end.append(internet.border_hop(f"{label} client side", p))
        client_end += internet.edge_hops(label, p)
        exchange_end = internet.origin_hops(label, p)
        exchange_end.append(internet.border_hop(f"{label} exchange side", p))
        exchange_end += self.outside(f"{label} border to gateway", False)
        if stop_at_edge:
            return client_end
        return (
            client_end + exchange_end
            if src == "client"
            else _reverse_internet(exchange_end, client_end)
        )

    def send(self, role: str, peer: str) -> list[Hop]:
        return host.send_hops(
            role,
            self.s.hosts[self.side(role)],
            self.instance(role),
            self.profile,
            self.flows,
        ) + [self.nic(role, "tx", peer)]

    def receive(self, role: str, peer: str) -> list[Hop]:
        return [self.nic(role, "rx", peer)] + host.receive_hops(
            role,
            self.s.hosts[self.side(role)],
            self.instance(role),
            self.profile,
            self.flows,
        )

    def handshake(self) -> list[Hop]:
        """Round trips paid before every request when the client does not reuse connections."""
        if self.s.hosts["client"].connection_reuse:
            return []
        edge = self.s.connectivity.tier == Tier.CLOUDFRONT
        trip = self.tier_network("client", "gateway", stop_at_edge=edge)
        back = list(reversed(trip)) if edge else self.tier_network("gateway", "client")
        rounds = 2 if self.s.hosts["client"].tls else 1  # TCP SYN/SYN-ACK, then TLS 1.3 hello
        hops: list[Hop] = []
        for r in range(rounds):
            what = "TCP handshake" if r == 0 else "TLS handshake"
            hops += [_renamed(h, f"{what}: {h.name}") for h in trip + back]
        if self.s.connectivity.tier == Tier.PUBLIC_API:
            hops.append(venue.connection_setup_hop(self.profile))
        if self.s.hosts["client"].tls:
            hops.append(
                Hop(
                    "TLS handshake crypto",
                    "host",
                    fixed_us=self.profile.value("tls_handshake_us"),
                    source=self.profile["tls_handshake_us"].source,
                )
            )
        return hops

    def exchange_work(self, engine: Dist | None) -> list[Hop]:
        return exchange.speed_bump(self.s.exchange) + self._exchange_work(engine)

    def _exchange_work(self, engine: Dist | None) -> list[Hop]:
        inbound = exchange.inbound_hops(self.s.exchange, self.profile, engine)
        if self.s.engine_colocated:
            decode, match = inbound
            return (
                [decode]
                + self.commit()
                + [match, exchange.reply_hop(self.s.exchange, self.profile)]
            )
        decode, match = inbound
        return (
            [decode]
            + self.send("gateway", "engine")
            + self.fabric("gateway", "engine")
            + self.receive("engine", "gateway")
            + self.commit()
            + [match]
            + self.send("engine", "gateway")
            + self.fabric("engine", "gateway")
            + self.receive("gateway", "engine")
            + [exchange.reply_hop(self.s.exchange, self.profile)]
        )

    def commit(self) -> list[Hop]:
        """The replicated engine's consensus commit on the leader's host
        (:mod:`twin.components.consensus`); nothing without replication."""
        replication = self.s.exchange.replication
        if replication is None:
            return []
        leader = self.leader_role()
        write = consensus.durable_write(self.profile, replication.storage, replication.sync)
        trips = []
        for follower in self.followers():
            trips.append(
                self.send(leader, follower)
                + self.fabric(leader, follower)
                + self.receive(follower, leader)
                + [Hop("follower log append", "consensus", delay=write)]
                + self.send(follower, leader)
                + self.fabric(follower, leader)
                + self.receive(leader, follower)
            )
        return consensus.replication_commit_hops(
            replication, write, trips, self.profile, self.s.workload.seed
        )

    def leader_role(self) -> str:
        """The role whose host leads the replicated engine (it runs the engine; an echo's
        gateway)."""
        kind = self.s.workload.kind
        has_engine = kind in (WorkloadKind.ORDER_LOOP, WorkloadKind.TICK_TO_TRADE)
        return "engine" if has_engine and not self.s.engine_colocated else "gateway"

    def followers(self) -> list[str]:
        """The roles of the replicated engine's members other than its leader."""
        replication = self.s.exchange.replication
        assert replication is not None
        return [
            member_role(position)
            for position in range(1, len(replication.members) + 1)
            if position != replication.leader
        ]

    def charge_replication(self, hops: list[Hop]) -> list[Hop]:
        """``hops`` with the replication traffic's work on the leader's shared stations
        (:func:`twin.components.consensus.charge_replication`); unchanged without replication."""
        replication = self.s.exchange.replication
        if replication is None:
            return hops
        leader = self.leader_role()
        recipients = self.followers()
        if replication.standby is not None:
            recipients.append(STANDBY_ROLE)
        # The replication's own flows are spread over the NIC's queues by RSS: its kernel work
        # is not on the cores of the client flows' queues (that station).
        cores = host.network_cores_name(leader)
        traffic = [
            h
            for r in recipients
            for h in self.send(leader, r) + self.receive(leader, r)
            if h.station is None or h.station.name != cores
        ]
        work = consensus.replication_work(traffic, self.s.workload.seed)
        per_batch = replication.batching == Batching.GROUP
        return consensus.charge_replication(hops, work, per_batch)

    def local_round_trip(self) -> list[Hop]:
        """Client and gateway processes on one machine (see :mod:`twin.components.loopback`)."""
        tier = self.s.connectivity.tier
        rate = self.rate
        sender = self.s.hosts["client"].sender
        transport = self.s.connectivity.transport
        workload = self.s.workload
        cycles = local_cycles(self.s)
        relay = (
            loopback.relay_speed_ratio(self.profile, rate, sender, cycles)
            if cycles.relayed
            else 1.0
        )
        hops = (
            loopback.client_send_hops(self.profile, rate, sender, cycles)
            + loopback.path_hops("client→gateway", tier, self.profile, transport, sender, relay)
            + loopback.gateway_hops(self.profile, rate, sender, cycles)
            + loopback.path_hops("gateway→client", tier, self.profile, transport, sender, relay)
            + loopback.client_receive_hops(self.profile, rate, sender, cycles)
        )
        alternating = workload.loop == Loop.CLOSED and workload.accounts == 1
        return loopback.shared_vcpu_hops(hops, self.profile, rate, sender, alternating, cycles)

    def public_api_round_trip(self) -> list[Hop]:
        """A REST request to a venue's public endpoint (see :mod:`twin.components.venue`): the
        venue's own hosts are inside its service time, not modelled host by host."""
        return (
            self.handshake()
            + venue.client_work_hops(
                self.s.roles["client"].instance,
                self.profile,
                self.rate,
                self.s.day,
            )
            + self.send("client", "gateway")
            + self.tier_network("client", "gateway")
            + [venue.load_balancer_hop("request", self.profile)]
            + venue.venue_hops(self.profile, self.s.day)
            + [venue.load_balancer_hop("response", self.profile)]
            + self.tier_network("gateway", "client")
            + self.receive("client", "gateway")
        )

    def feed_in(self) -> list[Hop]:
        """A market-data update from the venue's publisher into the client's pipeline
        (:mod:`twin.components.feed`); the gateway host sends the feed."""
        client = self.s.hosts["client"]
        return (
            [feed.publisher_hop(self.profile)]
            + self.send("gateway", "client")
            + self.tier_network("gateway", "client")
            + [
                self.nic("client", "rx", "gateway"),
                host.stack_receive_hop(
                    "client", client, self.instance("client"), self.profile, self.flows
                ),
            ]
            + feed.pipeline_hops(
                self.s.feed,
                client,
                self.s.workload.payload_bytes,
                self.profile,
                self.s.workload.kind,
            )
        )

    def order_out_and_back(self, engine: Dist | None) -> list[Hop]:
        """An order from the client to the venue's engine and its ack back."""
        return (
            self.send("client", "gateway")
            + self.tier_network("client", "gateway")
            + self.receive("gateway", "client")
            + self.exchange_work(engine)
            + self.send("gateway", "client")
            + self.tier_network("gateway", "client")
            + self.receive("client", "gateway")
        )

    def round_trip(self, engine: Dist | None) -> list[Hop]:
        if self.s.connectivity.tier.local:
            return _unique_names(self.local_round_trip())
        if self.s.connectivity.tier == Tier.PUBLIC_API:
            return _unique_names(self.public_api_round_trip())
        kind = self.s.workload.kind
        if kind == WorkloadKind.FEED:
            return _unique_names(self.feed_in())
        if kind == WorkloadKind.TICK_TO_TRADE:
            hops = self.feed_in() + self.order_out_and_back(engine)
            return _unique_names(self.charge_replication(hops))
        middle = (
            self.exchange_work(engine)
            if self.s.workload.kind == WorkloadKind.ORDER_LOOP
            else self.commit() + [exchange.echo_hop(self.profile)]
        )
        hops = (
            self.handshake()
            + self.send("client", "gateway")
            + self.tier_network("client", "gateway")
            + self.receive("gateway", "client")
            + middle
            + self.send("gateway", "client")
            + self.tier_network("gateway", "client")
            + self.receive("client", "gateway")
        )
        return _unique_names(self.charge_replication(hops))


def _reverse_internet(exchange_end: list[Hop], client_end: list[Hop]) -> list[Hop]:
    """The reply leg of the Internet tier: the client-side legs in reverse order."""
    return list(reversed(exchange_end)) + list(reversed(client_end))


def _renamed(hop: Hop, name: str) -> Hop:
    return replace(hop, name=name)


def _unique_names(hops: list[Hop]) -> list[Hop]:
    seen: Counter[str] = Counter()
    out = []
    for hop in hops:
        seen[hop.name] += 1
        out.append(hop if seen[hop.name] == 1 else _renamed(hop, f"{hop.name} #{seen[hop.name]}"))
    return out


def build_path(
    scenario: Scenario,
    profile: Profile,
    placements: dict[str, Placement] | None = None,
    engine_service: Dist | None = None,
    rate_msgs_per_s: float | None = None,
) -> list[Hop]:
    """The ordered hops of one round trip (order -> ack, cancel -> cancel ack, or echo);
    ``rate_msgs_per_s`` is the rate its load-dependent parts see (default: the workload's)."""
    placements = placements if placements is not None else place(scenario, profile)
    builder = _PathBuilder(scenario, profile, placements, rate_msgs_per_s)
    return builder.round_trip(engine_service)


def build_spans(scenario: Scenario, hops: list[Hop]) -> tuple[Span, ...]:
    """The spans a scenario's path reports besides its round trip (a feed's stages)."""
    kind = scenario.workload.kind
    return feed.feed_spans(hops, kind) if kind.has_feed else ()


def local_cycles(scenario: Scenario) -> loopback.Cycles:
    """How a local scenario's messages reach its host (:class:`twin.components.loopback.Cycles`):
    its messages a cycle, an open loop's groups (``workload.burst``) and arrival law."""
    workload = scenario.workload
    is_open = workload.loop == Loop.OPEN
    return loopback.Cycles(
        per_cycle=workload.messages_per_cycle,
        group=float(workload.burst) if is_open else 1.0,
        uniform=is_open and workload.arrivals == Arrivals.UNIFORM,
        relayed=scenario.connectivity.tier == Tier.RELAY,
    )


def local_cpu_us_per_msg(scenario: Scenario, profile: Profile, rate: float) -> dict[str, float]:
    """Each local process's CPU a message (us) the model spends at ``rate`` (msg/s) under the
    scenario's workload: its utilization (:func:`twin.components.loopback.process_utilization`)
    over the rate, keyed ``client`` and ``gateway``; what a run's schedstat measures."""
    if rate <= 0:
        raise ModelError(f"rate {rate} msg/s: need > 0")
    sender = scenario.hosts["client"].sender
    busy = loopback.process_utilization(profile, rate, sender, local_cycles(scenario))
    return {
        name.removeprefix("local_").removesuffix("_work"): rho / (rate * 1e-6)
        for name, rho in busy.items()
    }
