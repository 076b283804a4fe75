"""Scenario files: a deployment and a workload, loaded from TOML, immutable and validated.

Loading runs parse -> defaults -> cross-checks -> build. Every error is one line that names the
file, the field, the value and what is allowed. A :class:`Scenario` keeps the raw table it was
built from so that sweeps and the explorer can change any field by its dotted name and have the
result validated by exactly the same rules (:meth:`Scenario.with_fields`).
"""

from __future__ import annotations

import copy
import dataclasses
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from enum import StrEnum
from importlib import resources
from pathlib import Path
from types import MappingProxyType
from typing import Any, TypeVar

from twin.catalogue import CATALOGUE, InstanceType
from twin.errors import ScenarioError
from twin.kinds import (
    Arrivals,
    Batching,
    BurstSizes,
    Encoding,
    Framing,
    Loop,
    Runtime,
    Sender,
    Stack,
    Storage,
    Strategy,
    Sync,
    Tier,
    Transport,
    Turns,
    WorkloadKind,
)
from twin.protections import Throttle, parse_throttle
from twin.tomlio import dump_toml, read_toml

E = TypeVar("E", bound=StrEnum)

ROLE_NAMES = ("client", "gateway", "engine")
HOST_SIDES = ("client", "exchange")

# Largest frame each path carries (AWS VPC documentation, "Network maximum transmission unit"):
# jumbo frames inside a VPC and over in-region peering, 8500 B through Transit Gateway and
# PrivateLink, 1500 B once traffic leaves for the Internet; on one machine, the kernel's loopback
# and veth defaults.
MTU_BYTES = {
    Tier.PEERING: 9001,
    Tier.TRANSIT_GATEWAY: 8500,
    Tier.PRIVATELINK: 8500,
    Tier.CLOUDFRONT: 1500,
    Tier.PUBLIC_API: 1500,
    Tier.LOOPBACK: 65536,  # Linux lo default MTU
    Tier.VETH: 1500,  # veth default MTU
    Tier.RELAY: 65536,  # over loopback, both legs
}
# IPv4 + TCP headers without options.
TCP_IP_HEADER_BYTES = 40
AZ_ID_PATTERN = re.compile(r"[a-z]{2,5}[0-9]-az[0-9]{1,2}")  # whole string (fullmatch)
# Bounds that keep a run finite and its time arithmetic exact: a day of simulated time (the fast
# engine's calendar keys hold a day at 400k msg/s with room to spare) and a rate whose message
# spacing is still a finite number of microseconds.
MAX_BURST = 1_000  # cycles per group arrival
MAX_SIMULATED_S = 86_400.0
MIN_RATE_MSGS_PER_S = 1e-3
# A profile is a shipped name or a .toml path: printable, no control characters.
PROFILE_PATTERN = re.compile(r"[^\x00-\x1f\x7f]{1,4096}")
# A service time the distributions can hold: from a nanosecond to ten seconds.
MIN_SERVICE_US, MAX_SERVICE_US = 1e-3, 1e7
SERVICE_ALLOWED = f"{MIN_SERVICE_US:g}..{MAX_SERVICE_US:g} us (omit to use the profile)"
REGION_PATTERN = re.compile(r"^[a-z]{2}(-[a-z]+)+-[0-9]$")


@dataclass(frozen=True)
class PlacementGroup:
    """An EC2 placement group; a cluster group may be shared with other accounts through RAM."""

    name: str
    strategy: Strategy
    owner: str
    az_id: str | None
    shared_with: tuple[str, ...]
    partitions: int


@dataclass(frozen=True)
class Role:
    """Where one role (client, gateway, engine) runs."""

    name: str
    account: str
    az_id: str
    instance: InstanceType
    placement_group: str | None
    partition: int | None


@dataclass(frozen=True)
class HostStack:
    """How one side's hosts move packets between the NIC and the application."""

    stack: Stack
    busy_poll: bool
    deep_cstates: bool
    irq_pinning: bool
    tls: bool
    connection_reuse: bool
    io_threads: int
    runtime: Runtime
    sender: Sender = Sender.EVENT_LOOP  # the live host's model only


@dataclass(frozen=True)
class Connectivity:
    """The logical access tier between the market maker's VPC and the exchange's."""

    tier: Tier
    nat_gateway: bool
    transport: Transport = Transport.TCP


@dataclass(frozen=True)
class Workload:
    """The client's traffic: the order loop (order -> ack -> cancel -> cancel ack) or an echo.

    ``burst`` cycles start together at each arrival of an open loop (a feed's burst of updates,
    several orders at once); arrivals then come ``burst`` times less often, so
    ``rate_msgs_per_s`` stays the mean rate.
    """

    kind: WorkloadKind
    accounts: int
    rate_msgs_per_s: float
    payload_bytes: int
    loop: Loop
    arrivals: Arrivals
    duration_s: float
    warmup_s: float
    seed: int
    segmentation: bool
    burst: int = 1  # cycles that start together (an open loop's arrival is a group of them)
    burst_sizes: BurstSizes = BurstSizes.FIXED  # always ``burst``, or geometric with that mean
    turns: Turns = Turns.FREE  # how a closed loop's accounts take turns (an open loop: ignored)

    @property
    def messages_per_cycle(self) -> int:
        """Client messages per loop iteration: order + cancel, or one echo."""
        return 2 if self.kind == WorkloadKind.ORDER_LOOP else 1


@dataclass(frozen=True)
class Feed:
    """The market-data feed of the ``feed`` and ``tick_to_trade`` workloads: each update is
    ``workload.payload_bytes`` long; TLS is ``hosts.client.tls`` (the venue's end encrypts)."""

    encoding: Encoding = Encoding.JSON
    framing: Framing = Framing.WEBSOCKET


@dataclass(frozen=True)
class Member:
    """Where one member of a replicated engine's consensus cluster runs."""

    az_id: str
    instance: InstanceType
    placement_group: str | None


@dataclass(frozen=True)
class Failover:
    """The leader fails at ``leader_fails_at_s`` into the run; followers notice after
    ``heartbeat_timeout_ms`` without a heartbeat (sent every ``heartbeat_interval_ms``) and the
    new leader takes over ``election_ms`` after its election (:mod:`twin.failover`)."""

    leader_fails_at_s: float
    heartbeat_timeout_ms: float
    election_ms: float
    heartbeat_interval_ms: float = 100.0


@dataclass(frozen=True)
class Replication:
    """A replicated matching engine: a consensus cluster of ``members`` (3 or 5), the leader at
    position ``leader`` (1-based) running on the ``engine`` role's host (the gateway's when the
    engine runs there), each member's log made durable by ``sync`` on ``storage`` before it
    acknowledges, the leader's writes grouped by ``batching``; an optional warm ``standby``
    (asynchronous, outside the quorum) and a scheduled leader failure."""

    members: tuple[Member, ...]
    leader: int
    sync: Sync
    storage: Storage
    standby: Member | None
    failover: Failover | None
    batching: Batching = Batching.GROUP

    @property
    def followers(self) -> tuple[Member, ...]:
        return tuple(m for i, m in enumerate(self.members, start=1) if i != self.leader)

    @property
    def quorum(self) -> int:
        """Members whose durable append commits a message (a majority)."""
        return len(self.members) // 2 + 1


@dataclass(frozen=True)
class Exchange:
    """The venue's software: gateway threads, optional service-time overrides (us) and an
    optional replicated engine."""

    gateway_threads: int
    gateway_service_us: float | None
    risk_match_service_us: float | None
    replication: Replication | None = None
    throttle: Throttle | None = None  # the venue's order-rate limit (twin.protections)
    speed_bump_us: float = 0.0  # a fixed delay before the gateway, order kept


HOURS_PER_DAY = 24


@dataclass(frozen=True)
class Day:
    """Conditions that change over a day (UTC hours), for a venue reached through its public API.

    ``venue_load[h]`` is the venue's activity at hour ``h`` relative to its busiest hour (0..1):
    how busy its API servers and matching engine are with everybody else's traffic;
    ``path_load[h]`` likewise for the Internet path's congestion. The profile turns them into
    utilisations (``venue_peak_utilization_prob``, ``venue_path_peak_utilization_prob``).
    ``hour`` runs one hour; without it a run covers all 24 and pools them
    (:mod:`twin.day`).
    """

    venue_load: tuple[float, ...]
    path_load: tuple[float, ...]
    hour: int | None


@dataclass(frozen=True)
class Scenario:
    """A validated deployment + workload. Build with :func:`load_scenario` or :func:`parse`."""

    name: str
    description: str
    source: str
    region: str
    profile: str
    roles: Mapping[str, Role]
    placement_groups: Mapping[str, PlacementGroup]
    connectivity: Connectivity
    hosts: Mapping[str, HostStack]
    workload: Workload
    exchange: Exchange
    raw: Mapping[str, Any]
    day: Day | None = None
    feed: Feed = Feed()
    # The dotted fields changed since the file was read (:meth:`with_fields`, ``--set``,
    # ``--rate``...), in the order given: what a result reports as its changes.
    overrides: Mapping[str, Any] = dataclasses.field(default_factory=lambda: MappingProxyType({}))

    @property
    def base_dir(self) -> Path | None:
        """Folder of the scenario file (profiles given as paths are relative to it)."""
        return Path(self.source).parent if self.source != "<memory>" else None

    @property
    def engine_colocated(self) -> bool:
        """True when the matching engine runs on the gateway's host (no network hop between)."""
        return "engine" not in self.roles

    def with_fields(self, changes: Mapping[str, Any]) -> Scenario:
        """A new scenario with dotted fields changed, validated by the same rules.

        Values are made plain at this edge (:func:`plain_value`: a numpy number from
        ``np.linspace`` becomes a Python float, an array a list); a value TOML cannot hold is
        refused in one line naming the field. The changes are kept in :attr:`overrides`.
        """
        raw = copy.deepcopy(dict(self.raw))
        plain = {
            dotted: plain_value(value, f"{self.source}: {dotted}")
            for dotted, value in changes.items()
        }
        for dotted, value in plain.items():
            table = raw
            parts = dotted.split(".")
            for part in parts[:-1]:
                nxt = table.setdefault(part, {})
                if not isinstance(nxt, dict):
                    raise ScenarioError(f"{self.source}: {dotted}: {part!r} is not a table")
                table = nxt
            table[parts[-1]] = value
        changed = parse(raw, source=self.source)
        return replace(changed, overrides=MappingProxyType({**self.overrides, **plain}))

    def to_toml(self) -> str:
        """The scenario as TOML text (what a user downloads or saves next to results)."""
        return dump_toml(self.raw)


class _Table:
    """Reads one TOML table, checking types and ranges and refusing keys nobody asked for."""

    def __init__(self, source: str, prefix: str, data: Any):
        self.source = source
        self.prefix = prefix
        if not isinstance(data, dict):
            raise self.error(prefix.rstrip("."), data, "must be a table")
        self.data = data
        self.used: set[str] = set()

    def error(self, field: str, value: Any, problem: str) -> ScenarioError:
        return ScenarioError(f"{self.source}: {field} = {value!r}: {problem}")

    def _get(self, key: str, default: Any) -> tuple[str, Any]:
        self.used.add(key)
        return f"{self.prefix}{key}", self.data.get(key, default)

    def string(self, key: str, default: Any = ..., choices: tuple[str, ...] | None = None) -> Any:
        field, value = self._get(key, default)
        if value is ...:
            raise ScenarioError(f"{self.source}: {field} is required")
        if value is None and default is None:
            return None
        if not isinstance(value, str):
            raise self.error(field, value, "must be a string")
        if choices is not None and value not in choices:
            raise self.error(field, value, f"allowed: {', '.join(choices)}")
        return value

    def choice(self, key: str, kind: type[E], default: Any = ...) -> E:
        """One of a StrEnum's words, as its member."""
        names = tuple(member.value for member in kind)
        return kind(self.string(key, default, choices=names))

    def boolean(self, key: str, default: bool) -> bool:
        field, value = self._get(key, default)
        if not isinstance(value, bool):
            raise self.error(field, value, "must be true or false")
        return value

    def number(
        self,
        key: str,
        default: Any = ...,
        *,
        check: Callable[[float], bool],
        allowed: str,
        integer: bool = False,
    ) -> Any:
        field, value = self._get(key, default)
        if value is ...:
            raise ScenarioError(f"{self.source}: {field} is required ({allowed})")
        if value is None and default is None:
            return None
        kinds: tuple[type, ...] = (int,) if integer else (int, float)
        if isinstance(value, bool) or not isinstance(value, kinds):
            kind = "an integer" if integer else "a number"
            raise self.error(field, value, f"must be {kind} ({allowed})")
        assert isinstance(value, int | float)
        number = float(value)
        if not math.isfinite(number) or not check(number):
            raise self.error(field, value, f"allowed: {allowed}")
        return value if integer else number

    def hourly(self, key: str) -> tuple[float, ...]:
        """One number in 0..1 for each hour of the day (a list of exactly 24)."""
        field, value = self._get(key, ...)
        if value is ...:
            raise ScenarioError(f"{self.source}: {field} is required (24 numbers, 0..1)")
        if not isinstance(value, list) or len(value) != HOURS_PER_DAY:
            size = len(value) if isinstance(value, list) else "not a list"
            raise ScenarioError(
                f"{self.source}: {field}: must cover the day: a list of {HOURS_PER_DAY} numbers, "
                f"one per hour from 00 UTC (got {size})"
            )
        for hour, v in enumerate(value):
            ok = isinstance(v, int | float) and not isinstance(v, bool)
            if not ok or not (0.0 <= float(v) <= 1.0):
                raise self.error(f"{field}[{hour}]", v, "allowed: 0..1 (relative to the peak)")
        return tuple(float(v) for v in value)

    def string_list(self, key: str) -> tuple[str, ...]:
        field, value = self._get(key, [])
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise self.error(field, value, "must be a list of strings")
        return tuple(value)

    def table(self, key: str, required: bool = True) -> Any:
        field, value = self._get(key, None)
        if value is None:
            if required:
                raise ScenarioError(f"{self.source}: [{field}] table is required")
            return {}
        if not isinstance(value, dict):
            raise self.error(field, value, "must be a table")
        return value

    def done(self) -> None:
        unknown = sorted(set(self.data) - self.used)
        if unknown:
            allowed = ", ".join(sorted(self.used))
            raise ScenarioError(
                f"{self.source}: {self.prefix}{unknown[0]}: unknown key; allowed here: {allowed}"
            )


def _service_time(v: float) -> bool:
    return MIN_SERVICE_US <= v <= MAX_SERVICE_US


def _parse_group(source: str, name: str, data: Any) -> PlacementGroup:
    t = _Table(source, f"placement_groups.{name}.", data)
    strategy = t.choice("strategy", Strategy)
    owner = t.string("owner")
    az_id = t.string("az_id", None)
    shared_with = t.string_list("shared_with")
    partitions = t.number(
        "partitions",
        7 if strategy == Strategy.PARTITION else 1,
        check=lambda v: 1 <= v <= 7,
        allowed="1..7 (EC2 allows up to 7 partitions per AZ)",
        integer=True,
    )
    t.done()
    if strategy == Strategy.CLUSTER and az_id is None:
        raise ScenarioError(
            f"{source}: placement_groups.{name}.az_id is required: a cluster group lives in one AZ"
        )
    if az_id is not None and not AZ_ID_PATTERN.fullmatch(az_id):
        raise t.error(f"placement_groups.{name}.az_id", az_id, "expected an AZ ID like use1-az4")
    if shared_with and strategy != Strategy.CLUSTER:
        raise t.error(
            f"placement_groups.{name}.shared_with",
            list(shared_with),
            "only cluster placement groups can be shared (AWS RAM shared CPG)",
        )
    return PlacementGroup(name, strategy, owner, az_id, shared_with, partitions)


def _parse_role(source: str, name: str, data: Any) -> Role:
    t = _Table(source, f"roles.{name}.", data)
    account = t.string("account")
    az_id = t.string("az_id")
    if not AZ_ID_PATTERN.fullmatch(az_id):
        raise t.error(f"roles.{name}.az_id", az_id, "expected an AZ ID like use1-az4 (not a name)")
    instance_name = t.string("instance")
    if instance_name not in CATALOGUE:
        raise t.error(
            f"roles.{name}.instance",
            instance_name,
            f"not in the catalogue; allowed: {', '.join(CATALOGUE)}",
        )
    group = t.string("placement_group", None)
    partition = t.number(
        "partition", None, check=lambda v: 1 <= v <= 7, allowed="1..7", integer=True
    )
    t.done()
    return Role(name, account, az_id, CATALOGUE[instance_name], group, partition)


def _parse_host(source: str, side: str, data: Any) -> HostStack:
    t = _Table(source, f"hosts.{side}.", data)
    host = HostStack(
        stack=t.choice("stack", Stack, Stack.KERNEL),
        busy_poll=t.boolean("busy_poll", False),
        deep_cstates=t.boolean("deep_cstates", True),
        irq_pinning=t.boolean("irq_pinning", False),
        tls=t.boolean("tls", False),
        connection_reuse=t.boolean("connection_reuse", True),
        runtime=t.choice("runtime", Runtime, Runtime.NATIVE),
        io_threads=t.number(
            "io_threads", 4, check=lambda v: 1 <= v <= 1024, allowed="1..1024", integer=True
        ),
        sender=t.choice("sender", Sender, Sender.EVENT_LOOP),
    )
    if side != "client" and host.sender != Sender.EVENT_LOOP:
        raise ScenarioError(f"{source}: hosts.{side}.sender: only the client's program sends")
    t.done()
    return host


def _parse_workload(source: str, data: Any) -> Workload:
    t = _Table(source, "workload.", data)
    workload = Workload(
        kind=t.choice("kind", WorkloadKind, WorkloadKind.ORDER_LOOP),
        accounts=t.number(
            "accounts", 1, check=lambda v: 1 <= v <= 100_000, allowed="1..100000", integer=True
        ),
        rate_msgs_per_s=t.number(
            "rate_msgs_per_s",
            check=lambda v: MIN_RATE_MSGS_PER_S <= v <= 1e9,
            allowed=f"{MIN_RATE_MSGS_PER_S:g}..1e9 messages per second",
        ),
        payload_bytes=t.number(
            "payload_bytes",
            120,
            check=lambda v: 1 <= v <= 1_000_000,
            allowed="1..1000000",
            integer=True,
        ),
        loop=t.choice("loop", Loop, Loop.OPEN),
        arrivals=t.choice("arrivals", Arrivals, Arrivals.POISSON),
        duration_s=t.number(
            "duration_s",
            1.0,
            check=lambda v: 0 < v <= MAX_SIMULATED_S,
            allowed=f"> 0 and <= {MAX_SIMULATED_S:g} seconds",
        ),
        warmup_s=t.number(
            "warmup_s",
            0.1,
            check=lambda v: 0 <= v <= MAX_SIMULATED_S,
            allowed=f"0..{MAX_SIMULATED_S:g} seconds",
        ),
        seed=t.number(
            "seed", 1, check=lambda v: 0 <= v < 2**63, allowed="0..2**63-1", integer=True
        ),
        segmentation=t.boolean("segmentation", False),
        burst=t.number(
            "burst", 1, check=lambda v: 1 <= v <= MAX_BURST, allowed=f"1..{MAX_BURST}", integer=True
        ),
        burst_sizes=t.choice("burst_sizes", BurstSizes, BurstSizes.FIXED),
        turns=t.choice("turns", Turns, Turns.FREE),
    )
    t.done()
    if workload.burst > 1 and workload.loop != Loop.OPEN:
        raise ScenarioError(
            f"{source}: workload.burst = {workload.burst}: groups of cycles need the open loop"
        )
    return workload


def _parse_member(source: str, prefix: str, data: Any) -> Member:
    t = _Table(source, prefix, data)
    az_id = t.string("az_id")
    if not AZ_ID_PATTERN.fullmatch(az_id):
        raise t.error(f"{prefix}az_id", az_id, "expected an AZ ID like use1-az4")
    name = t.string("instance")
    if name not in CATALOGUE:
        raise t.error(
            f"{prefix}instance", name, f"not in the catalogue; allowed: {', '.join(CATALOGUE)}"
        )
    standby = prefix.endswith("standby.")
    voting = t.boolean("voting", not standby)
    member = Member(az_id, CATALOGUE[name], t.string("placement_group", None))
    t.done()
    if standby and voting:
        raise t.error(
            f"{prefix}voting", True, "a warm standby replicates asynchronously, outside the quorum"
        )
    if not standby and not voting:
        raise t.error(
            f"{prefix}voting", False, "every member votes; a copy outside the quorum is a standby"
        )
    return member


def _parse_replication(source: str, data: Any) -> Replication:
    t = _Table(source, "exchange.replication.", data)
    raw_members = t._get("members", None)[1]
    if not isinstance(raw_members, list) or not raw_members:
        raise t.error("exchange.replication.members", raw_members, "a list of member tables")
    if len(raw_members) not in (3, 5):
        raise t.error(
            "exchange.replication.members",
            f"{len(raw_members)} members",
            "3 or 5: an odd count, so that a majority survives a member's loss",
        )
    members = tuple(
        _parse_member(source, f"exchange.replication.members[{i}].", m)
        for i, m in enumerate(raw_members, start=1)
    )
    leader = t.number(
        "leader",
        1,
        check=lambda v: 1 <= v <= len(members),
        allowed=f"1..{len(members)}",
        integer=True,
    )
    sync = t.choice("sync", Sync, Sync.DATA)
    storage = t.choice("storage", Storage, Storage.INSTANCE_STORE)
    batching = t.choice("batching", Batching, Batching.GROUP)
    raw_standby = t.table("standby", required=False)
    standby = (
        _parse_member(source, "exchange.replication.standby.", raw_standby) if raw_standby else None
    )
    raw_failover = t.table("failover", required=False)
    failover = None
    if raw_failover:
        f = _Table(source, "exchange.replication.failover.", raw_failover)
        failover = Failover(
            leader_fails_at_s=f.number(
                "leader_fails_at_s",
                check=lambda v: 0 < v <= MAX_SIMULATED_S,
                allowed=f"0..{MAX_SIMULATED_S:g} seconds into the run",
            ),
            heartbeat_timeout_ms=f.number(
                "heartbeat_timeout_ms",
                1000.0,
                check=lambda v: 0 < v <= 600_000,
                allowed="0..600000 ms",
            ),
            election_ms=f.number(
                "election_ms", 100.0, check=lambda v: 0 <= v <= 600_000, allowed="0..600000 ms"
            ),
            heartbeat_interval_ms=f.number(
                "heartbeat_interval_ms",
                100.0,
                check=lambda v: 0 < v <= 600_000,
                allowed="0..600000 ms",
            ),
        )
        f.done()
    t.done()
    return Replication(members, leader, sync, storage, standby, failover, batching)


def _parse_exchange(source: str, data: Any) -> Exchange:
    t = _Table(source, "exchange.", data)
    raw_replication = t.table("replication", required=False)
    raw_throttle = t.table("throttle", required=False)
    exchange = Exchange(
        gateway_threads=t.number(
            "gateway_threads", 4, check=lambda v: 1 <= v <= 1024, allowed="1..1024", integer=True
        ),
        gateway_service_us=t.number(
            "gateway_service_us", None, check=_service_time, allowed=SERVICE_ALLOWED
        ),
        risk_match_service_us=t.number(
            "risk_match_service_us", None, check=_service_time, allowed=SERVICE_ALLOWED
        ),
        replication=_parse_replication(source, raw_replication) if raw_replication else None,
        throttle=(
            parse_throttle(_Table(source, "exchange.throttle.", raw_throttle))
            if raw_throttle
            else None
        ),
        speed_bump_us=t.number(
            "speed_bump_us", 0.0, check=lambda v: 0 <= v <= 1e6, allowed="0..1e6"
        ),
    )
    t.done()
    return exchange


def _parse_feed(source: str, data: Any) -> Feed:
    t = _Table(source, "feed.", data)
    feed = Feed(
        encoding=t.choice("encoding", Encoding, Encoding.JSON),
        framing=t.choice("framing", Framing, Framing.WEBSOCKET),
    )
    t.done()
    return feed


def _parse_day(source: str, data: Any) -> Day:
    t = _Table(source, "day.", data)
    day = Day(
        venue_load=t.hourly("venue_load"),
        path_load=t.hourly("path_load"),
        hour=t.number(
            "hour", None, check=lambda v: 0 <= v < HOURS_PER_DAY, allowed="0..23", integer=True
        ),
    )
    t.done()
    return day


def _check_groups(source: str, roles: Mapping[str, Role], groups: Mapping[str, PlacementGroup]):
    for role in roles.values():
        if role.placement_group is None:
            if role.partition is not None:
                raise ScenarioError(
                    f"{source}: roles.{role.name}.partition = {role.partition}: "
                    "a partition needs a partition placement group"
                )
            continue
        field = f"roles.{role.name}.placement_group"
        group = groups.get(role.placement_group)
        if group is None:
            raise ScenarioError(
                f"{source}: {field} = {role.placement_group!r}: no such placement group; "
                f"defined: {', '.join(groups) or 'none'}"
            )
        if role.account != group.owner and role.account not in group.shared_with:
            raise ScenarioError(
                f"{source}: {field} = {group.name!r}: account {role.account!r} neither owns the "
                f"group (owner {group.owner!r}) nor has it shared (shared_with: "
                f"{list(group.shared_with)})"
            )
        if group.az_id is not None and role.az_id != group.az_id:
            if role.account != group.owner:
                raise ScenarioError(
                    f"{source}: roles.{role.name}.az_id = {role.az_id!r}: shared cluster "
                    f"placement group {group.name!r} is in AZ ID {group.az_id!r} (owner "
                    f"{group.owner!r}); both accounts must target the same AZ ID"
                )
            raise ScenarioError(
                f"{source}: roles.{role.name}.az_id = {role.az_id!r}: {group.strategy} placement "
                f"group {group.name!r} is in {group.az_id!r}; a group cannot span AZs"
            )
        if role.partition is not None and group.strategy != Strategy.PARTITION:
            raise ScenarioError(
                f"{source}: roles.{role.name}.partition = {role.partition}: group "
                f"{group.name!r} is a {group.strategy} group, not a partition group"
            )
        if role.partition is not None and role.partition > group.partitions:
            raise ScenarioError(
                f"{source}: roles.{role.name}.partition = {role.partition}: group "
                f"{group.name!r} has {group.partitions} partitions"
            )
    members: dict[str, set[str]] = {}
    for role in roles.values():
        if role.placement_group is not None:
            members.setdefault(role.placement_group, set()).add(role.az_id)
    for name, azs in members.items():
        if len(azs) > 1 and groups[name].strategy == Strategy.CLUSTER:
            raise ScenarioError(
                f"{source}: placement_groups.{name}: a cluster group cannot span AZs "
                f"(members name {sorted(azs)})"
            )


_DIRECTIONS = {
    "east": "e",
    "west": "w",
    "north": "n",
    "south": "s",
    "central": "c",
    "northeast": "ne",
    "northwest": "nw",
    "southeast": "se",
    "southwest": "sw",
}


def az_id_prefix(region: str) -> str | None:
    """The prefix of a region's AZ IDs (``us-east-1`` -> ``use1``, ``ap-northeast-1`` ->
    ``apne1``: AWS's AZ ID naming), or None for a region name outside that pattern."""
    parts = region.split("-")
    if len(parts) != 3 or parts[1] not in _DIRECTIONS:
        return None
    return f"{parts[0]}{_DIRECTIONS[parts[1]]}{parts[2]}"


def _check_replication(
    source: str,
    region: str,
    roles: Mapping[str, Role],
    groups: Mapping[str, PlacementGroup],
    replication: Replication,
) -> None:
    where = "exchange.replication"
    engine = roles.get("engine") or roles["gateway"]  # the leader's host
    prefix = az_id_prefix(region)
    named = [(f"{where}.members[{i}]", m) for i, m in enumerate(replication.members, start=1)]
    if replication.standby is not None:
        named.append((f"{where}.standby", replication.standby))
    for field, m in named:
        if prefix is not None and not m.az_id.startswith(prefix + "-"):
            raise ScenarioError(
                f"{source}: {field}.az_id = {m.az_id!r}: not an AZ of region {region!r} "
                f"(its AZ IDs start {prefix}-)"
            )
        if m.placement_group is not None and m.placement_group not in groups:
            raise ScenarioError(
                f"{source}: {field}.placement_group = {m.placement_group!r}: no such placement "
                f"group; defined: {', '.join(groups) or 'none'}"
            )
    leader = replication.members[replication.leader - 1]
    if (leader.az_id, leader.instance.name, leader.placement_group) != (
        engine.az_id,
        engine.instance.name,
        engine.placement_group,
    ):
        raise ScenarioError(
            f"{source}: {where}.members[{replication.leader}]: the leader must be where "
            f"[roles.{engine.name}] is (AZ {engine.az_id}, {engine.instance.name}, placement "
            f"group {engine.placement_group})"
        )
    azs: dict[str, set[str]] = {}
    for field, m in named:
        if m.placement_group is not None:
            azs.setdefault(m.placement_group, set()).add(m.az_id)
            group = groups[m.placement_group]
            if group.strategy == Strategy.CLUSTER and len(azs[m.placement_group]) > 1:
                raise ScenarioError(
                    f"{source}: {field}.placement_group = {m.placement_group!r}: a cluster group "
                    f"lives in one AZ; its members name {sorted(azs[m.placement_group])}"
                )


def _check_payload(source: str, workload: Workload, connectivity: Connectivity) -> None:
    mtu = MTU_BYTES[connectivity.tier]
    if workload.payload_bytes + TCP_IP_HEADER_BYTES > mtu and not workload.segmentation:
        raise ScenarioError(
            f"{source}: workload.payload_bytes = {workload.payload_bytes}: above the "
            f"{connectivity.tier} path MTU of {mtu} B less {TCP_IP_HEADER_BYTES} B of headers; "
            "set workload.segmentation = true to split messages into several packets"
        )


def _check_local(source: str, roles: Mapping[str, Role], connectivity: Connectivity) -> None:
    """One-machine tiers and the ``local`` instance type go together, and have no engine host."""
    local_tier = connectivity.tier.local
    local_tiers = ", ".join(t for t in Tier if t.local)
    for role in roles.values():
        if (role.instance.name == "local") != local_tier:
            raise ScenarioError(
                f"{source}: roles.{role.name}.instance = {role.instance.name!r}: tiers "
                f"{local_tiers} run on instance 'local' and only they do "
                f"(connectivity.tier = '{connectivity.tier}')"
            )
    if local_tier and "engine" in roles:
        raise ScenarioError(
            f"{source}: roles.engine: on tier '{connectivity.tier}' the matching engine runs "
            "inside the gateway process; remove the role"
        )


def parse(data: Mapping[str, Any], source: str = "<memory>") -> Scenario:
    """Validate a scenario given as a (TOML-shaped) mapping."""
    t = _Table(source, "", dict(data))
    name = t.string("name", Path(source).stem if source != "<memory>" else "scenario")
    description = t.string("description", "")
    region = t.string("region", "us-east-1")
    if not REGION_PATTERN.match(region):
        raise t.error("region", region, "expected a region code like us-east-1")
    profile = t.string("profile", "default")
    if not PROFILE_PATTERN.fullmatch(profile):
        raise t.error(
            "profile", profile, "a shipped profile name or a path to a .toml file (printable)"
        )
    raw_groups = t.table("placement_groups", required=False)
    groups = {n: _parse_group(source, n, g) for n, g in raw_groups.items()}
    raw_roles = t.table("roles")
    for role_name in raw_roles:
        if role_name not in ROLE_NAMES:
            raise ScenarioError(
                f"{source}: roles.{role_name}: unknown role; allowed: {', '.join(ROLE_NAMES)}"
            )
    for required in ("client", "gateway"):
        if required not in raw_roles:
            raise ScenarioError(f"{source}: [roles.{required}] is required")
    roles = {n: _parse_role(source, n, raw_roles[n]) for n in ROLE_NAMES if n in raw_roles}
    c = _Table(source, "connectivity.", t.table("connectivity"))
    connectivity = Connectivity(
        tier=c.choice("tier", Tier),
        nat_gateway=c.boolean("nat_gateway", False),
        transport=c.choice("transport", Transport, Transport.TCP),
    )
    c.done()
    if connectivity.nat_gateway and connectivity.tier != Tier.CLOUDFRONT:
        raise ScenarioError(
            f"{source}: connectivity.nat_gateway = true: a NAT gateway sits on the Internet path "
            f"only (tier cloudfront), not on tier '{connectivity.tier}'"
        )
    raw_hosts = t.table("hosts", required=False)
    for side in raw_hosts:
        if side not in HOST_SIDES:
            raise ScenarioError(
                f"{source}: hosts.{side}: unknown host side; allowed: {', '.join(HOST_SIDES)}"
            )
    hosts = {s: _parse_host(source, s, raw_hosts.get(s, {})) for s in HOST_SIDES}
    workload = _parse_workload(source, t.table("workload"))
    exchange = _parse_exchange(source, t.table("exchange", required=False))
    raw_day = t.table("day", required=False)
    day = _parse_day(source, raw_day) if raw_day else None
    raw_feed = t.table("feed", required=False)
    feed = _parse_feed(source, raw_feed)
    t.done()
    if raw_feed and not workload.kind.has_feed:
        raise ScenarioError(
            f"{source}: [feed]: describes the market-data feed of workload.kind = 'feed' or "
            f"'tick_to_trade', not '{workload.kind}'"
        )
    if workload.kind.has_feed and (connectivity.tier.local or connectivity.tier == Tier.PUBLIC_API):
        raise ScenarioError(
            f"{source}: workload.kind = '{workload.kind}': a feed runs from the exchange's VPC "
            f"(tiers peering, transit_gateway, privatelink, cloudfront), not tier "
            f"'{connectivity.tier}'"
        )
    if day is not None and connectivity.tier != Tier.PUBLIC_API:
        raise ScenarioError(
            f"{source}: [day]: conditions by hour describe a venue's public API "
            f"(connectivity.tier = 'public_api'), not tier '{connectivity.tier}'"
        )
    _check_groups(source, roles, groups)
    if exchange.replication is not None:
        _check_replication(source, region, roles, groups, exchange.replication)
    _check_payload(source, workload, connectivity)
    _check_local(source, roles, connectivity)
    if workload.kind in (WorkloadKind.ECHO, WorkloadKind.FEED) and "engine" in roles:
        raise ScenarioError(
            f"{source}: roles.engine: an {workload.kind} workload has no matching engine; "
            "remove the role"
        )
    return Scenario(
        name=name,
        description=description,
        source=source,
        region=region,
        profile=profile,
        roles=MappingProxyType(roles),
        placement_groups=MappingProxyType(groups),
        connectivity=connectivity,
        hosts=MappingProxyType(hosts),
        workload=workload,
        exchange=exchange,
        raw=MappingProxyType(copy.deepcopy(dict(data))),
        day=day,
        feed=feed,
    )


def plain_value(value: Any, where: str) -> Any:
    """``value`` as a plain TOML value: numpy scalars (``np.float64``, ``np.int64``,
    ``np.bool_``) become Python's, arrays and tuples lists, mappings dicts; anything else that
    is not bool, int, float or str raises :class:`ScenarioError` naming ``where``. numpy is not
    imported: its values are recognised by their type's module and ``tolist``."""
    kind = type(value)
    if kind in (bool, int, float, str):
        return value
    if kind.__module__ == "numpy" and hasattr(value, "tolist"):
        return plain_value(value.tolist(), where)  # a scalar's is Python's, an array's a list
    if isinstance(value, bool):
        return bool(value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, str):
        return str(value)
    if isinstance(value, list | tuple):
        return [plain_value(v, f"{where}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, Mapping):
        return {str(k): plain_value(v, f"{where}.{k}") for k, v in value.items()}
    raise ScenarioError(
        f"{where} = {value!r}: a {kind.__name__} is not a scenario value "
        "(allowed: bool, int, float, str, a list or a table of them)"
    )


def scenarios_dir() -> Path:
    """The folder of shipped scenarios: package data of ``twin`` (``twin/scenarios``; a checkout
    also reaches it as ``scenarios/``)."""
    return Path(str(resources.files("twin"))) / "scenarios"


def shipped_scenarios() -> list[Path]:
    """The shipped scenario files, sorted by name."""
    return sorted(scenarios_dir().glob("*.toml"))


def scenario_path(path: str | Path) -> Path:
    """The file ``path`` names: itself when it exists or names a folder, else the shipped
    scenario of that name (``tier1_peering_cpg`` or ``tier1_peering_cpg.toml``, as ``twin
    scenarios`` lists them), so a listed name runs from any directory."""
    path = Path(path)
    if path.exists() or path.parent != Path(".") or path.name in ("", ".", ".."):
        return path
    shipped = scenarios_dir() / (path.name if path.suffix == ".toml" else f"{path.name}.toml")
    return shipped if shipped.is_file() else path


def load_scenario(path: str | Path) -> Scenario:
    """Read and validate a scenario TOML file, or a shipped scenario by its listed name
    (:func:`scenario_path`)."""
    path = scenario_path(path)
    if not path.exists() and path.parent == Path(".") and path.suffix != ".toml":
        raise ScenarioError(
            f"{path}: scenario file not found, nor a shipped scenario of that name "
            "(twin scenarios lists them)"
        )
    return parse(read_toml(path, "scenario", ScenarioError), source=str(path))
