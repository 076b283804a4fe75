"""The scenario's vocabulary: each closed set of words a scenario file may use, as a StrEnum.

A member compares equal to its spelling (``Tier.PEERING == "peering"``) and serialises as it
(JSON, TOML), so files and outputs keep their words while code names the choice it means.
"""

from __future__ import annotations

from enum import StrEnum


class Tier(StrEnum):
    """How the market maker's VPC reaches the exchange's (or, on one machine, which link)."""

    PEERING = "peering"
    TRANSIT_GATEWAY = "transit_gateway"
    PRIVATELINK = "privatelink"
    CLOUDFRONT = "cloudfront"
    PUBLIC_API = "public_api"
    LOOPBACK = "loopback"
    VETH = "veth"
    RELAY = "relay"

    @property
    def local(self) -> bool:
        """True for the tiers of one machine (the live testbed: client and gateway together;
        ``relay``: loopback through the delaying relay of ``twin testbed relay``)."""
        return self in (Tier.LOOPBACK, Tier.VETH, Tier.RELAY)


#: The links the testbed's gateway and load client can run over (the relay carries sockperf).
TESTBED_TIERS = (Tier.LOOPBACK, Tier.VETH)


class Transport(StrEnum):
    """The transport between client and gateway: datagrams, each read and written apart, or a
    TCP stream, of which one read takes every message that has arrived (sockperf's ``--tcp``;
    on the one-machine tiers it decides how the delaying relay reads: a datagram a read, or a
    chunk of the stream)."""

    UDP = "udp"
    TCP = "tcp"


class Strategy(StrEnum):
    """An EC2 placement group's strategy."""

    CLUSTER = "cluster"
    PARTITION = "partition"
    SPREAD = "spread"


class Stack(StrEnum):
    """How a host moves packets between NIC and application."""

    KERNEL = "kernel"
    BYPASS = "bypass"


class Runtime(StrEnum):
    """What the application runs on."""

    NATIVE = "native"
    JVM = "jvm"


class Sender(StrEnum):
    """How the client's program sends (the live host's model, :mod:`twin.components.loopback`):
    from the event loop that also reads the replies, sleeping on a timer between sends (the
    testbed's client), or from a thread of its own that spins until each send is due while
    another thread sleeps until each reply (sockperf's under-load client)."""

    EVENT_LOOP = "event-loop"
    SPINNING = "spinning"


class WorkloadKind(StrEnum):
    """The client's traffic: the order loop (order, ack, cancel, cancel ack), an echo, the
    exchange's market-data feed into the client's inbound pipeline (tick to model), or a tick
    that, through the pipeline and a strategy decision, sends an order (tick to ack)."""

    ORDER_LOOP = "order_loop"
    ECHO = "echo"
    FEED = "feed"
    TICK_TO_TRADE = "tick_to_trade"

    @property
    def has_feed(self) -> bool:
        """Whether a cycle starts at the exchange's market-data publisher."""
        return self in (WorkloadKind.FEED, WorkloadKind.TICK_TO_TRADE)


class Encoding(StrEnum):
    """How a feed's updates are encoded: JSON text (a crypto venue's WebSocket streams) or a
    binary layout (SBE-like, decoded by reading fields at fixed offsets)."""

    JSON = "json"
    BINARY = "binary"


class Framing(StrEnum):
    """How a feed's updates are framed on the byte stream: WebSocket frames (RFC 6455) or
    length-prefixed messages on plain TCP."""

    WEBSOCKET = "websocket"
    RAW = "raw"


class Loop(StrEnum):
    """Open: sends follow a schedule whatever the replies; closed: each account waits."""

    OPEN = "open"
    CLOSED = "closed"


class Turns(StrEnum):
    """How a closed loop's accounts take turns: ``free``, each sends as soon as its previous
    cycle is answered (and its pacing allows); ``round_robin``, in a fixed rotation, as a client
    does that deals its cycles to its connections in turn (cycle ``k`` to connection
    ``k % accounts``): an account whose turn has not come waits though it is free, so a rotation
    leaves together behind a slow account. An open loop deals its cycles in turn either way."""

    FREE = "free"
    ROUND_ROBIN = "round_robin"


class Arrivals(StrEnum):
    """How an open loop spaces its sends."""

    POISSON = "poisson"
    UNIFORM = "uniform"


class BurstSizes(StrEnum):
    """How many cycles an open loop's arrival brings: always ``workload.burst``, or a geometric
    number with that mean (a compound Poisson stream: a feed's bursts, mostly small, now and
    then large)."""

    FIXED = "fixed"
    GEOMETRIC = "geometric"


class Sync(StrEnum):
    """How a consensus member makes its log durable before acknowledging: not at all (the page
    cache), ``fdatasync`` (the data) or ``fsync`` (data and metadata)."""

    NONE = "none"
    DATA = "data"
    DATA_METADATA = "data_metadata"


class Batching(StrEnum):
    """How a consensus leader's log writes its entries: ``group`` (one durable write for every
    entry that arrived while the previous write ran: etcd's Raft loop persists each ``Ready``'s
    entries with one ``fsync``, Aeron appends whatever its publication holds) or ``none`` (one
    write per entry, in order: the log's capacity is one write's rate)."""

    GROUP = "group"
    NONE = "none"


class Storage(StrEnum):
    """Where a consensus member writes its log."""

    INSTANCE_STORE = "instance_store"
    EBS = "ebs"
