"""A market-data feed and a trading engine's inbound pipeline (tick to model, tick to trade).

The venue's publisher (one thread) encodes each update; the gateway host's send stack, the
tier's network and the client's NIC and kernel deliver it to the client's socket; there the
engine's one thread works **read by read** (:attr:`twin.path.Station.reader`): poll -> read,
TLS decrypt, frame decode, parse, model update (and, for tick to trade, the strategy decision),
each stage over the whole read before the next, so a message waits for the work on the messages
ahead of it in its read: the C++ engine write-up's pipeline (domain brief; rows ``engine_*`` of
the published figures), whose semantics :mod:`twin.pipeline` replays against the lab.

The publisher writes each update as it is encoded, as its own WebSocket frame and TLS record,
so a burst's updates reach the client a few microseconds apart and a read takes whatever
arrived by its read call. Per read: the poll -> read stage (``feed_poll_to_read``) and the TLS
work of a read (``feed_tls_read``), plus, per update, ``feed_tls_per_record_us`` (its record)
and ``feed_tls_per_kb_us`` per KB; each
per-message stage pays ``feed_stage_startup_us`` once per read (its loop starting cold) and its
own median per message (``feed_*_us``, a lognormal of spread ``feed_work_sigma``). A thread that
sleeps in ``epoll_wait`` (no busy polling) pays the host's wake-up when a read finds it idle.
The numbers are the profile's, with their sources; what the write-up reports (a p50 near 50 us,
tails of hundreds of microseconds) is not fitted: it comes from the reads the load makes.
"""

from __future__ import annotations

from twin.components.stages import sources, stage
from twin.dists import ZERO, Const, ShiftedLognormal
from twin.kinds import Encoding, Framing, Stack, WorkloadKind
from twin.path import Hop, Span, Station
from twin.profile import Profile
from twin.scenario import Feed, HostStack

#: The component name of a pipeline's stages (how :func:`feed_spans` finds them).
PIPELINE = "pipeline"
MODEL_UPDATE = "client model update"
DECISION = "client strategy decision"
#: The hop after which a tick-to-trade order is on the wire (the client's NIC sending it).
CLIENT_WIRE = "client NIC tx"


def publisher_hop(profile: Profile) -> Hop:
    """The venue's market-data publisher: one thread encoding, framing and writing updates."""
    return Hop(
        "exchange market-data publish",
        "exchange",
        service=stage(profile, "feed_publish"),
        station=Station("exchange market-data publisher", 1),
        source=sources(profile, "feed_publish_median_us"),
    )


def _work(profile: Profile, name: str) -> ShiftedLognormal:
    """A per-message stage's own work: lognormal with the stage's median, the shared spread."""
    return ShiftedLognormal(0.0, profile.value(f"{name}_us"), profile.value("feed_work_sigma"))


def pipeline_hops(
    feed: Feed, client: HostStack, payload_bytes: int, profile: Profile, kind: WorkloadKind
) -> list[Hop]:
    """The client engine thread's stages over each read (a reader station)."""
    sleeps = not client.busy_poll and client.stack != Stack.BYPASS
    thread = Station(
        "client engine thread", 1, wake=stage(profile, "wakeup") if sleeps else ZERO, reader=True
    )
    startup = Const(profile.value("feed_stage_startup_us"))
    hops = [
        Hop(
            "client poll → read",
            PIPELINE,
            per_read=stage(profile, "feed_poll_to_read"),
            whole_read=True,
            station=thread,
            source=sources(profile, "feed_poll_to_read_median_us", "wakeup_median_us"),
        )
    ]
    if client.tls:
        hops.append(
            Hop(
                "client TLS decrypt",
                PIPELINE,
                per_read=stage(profile, "feed_tls_read"),
                service=Const(
                    profile.value("feed_tls_per_record_us")
                    + profile.value("feed_tls_per_kb_us") * payload_bytes / 1024
                ),
                whole_read=True,
                station=thread,
                source=sources(
                    profile,
                    "feed_tls_read_median_us",
                    "feed_tls_per_kb_us",
                    "feed_tls_per_record_us",
                ),
            )
        )
    steps = [
        ("client WebSocket decode", "feed_ws_decode")
        if feed.framing == Framing.WEBSOCKET
        else ("client frame decode", "feed_raw_frame"),
        ("client JSON parse", "feed_json_parse")
        if feed.encoding == Encoding.JSON
        else ("client binary decode", "feed_binary_decode"),
        (MODEL_UPDATE, "feed_model_update"),
    ]
    if kind == WorkloadKind.TICK_TO_TRADE:
        steps.append((DECISION, "feed_decision"))
    for name, param in steps:
        hops.append(
            Hop(
                name,
                PIPELINE,
                per_read=startup,
                service=_work(profile, param),
                station=thread,
                source=sources(profile, f"{param}_us", "feed_stage_startup_us"),
            )
        )
    return hops


def feed_spans(hops: list[Hop], kind: WorkloadKind) -> tuple[Span, ...]:
    """What a feed path reports besides the round trip: each pipeline stage (its latency as the
    pipeline's own timers measure it), ``inbound`` (poll to model updated, the write-up's
    cumulative figure) and, for tick to trade, ``tick to model``, ``decision to wire`` (from
    the decision to the order leaving the client's NIC) and ``tick to wire``; the round trip
    itself is tick to model (feed) or tick to ack (tick to trade)."""
    names = [h.name for h in hops]
    stages = [h.name for h in hops if h.component == PIPELINE]
    spans = [Span(n, n, n) for n in stages]
    spans.append(Span("inbound", stages[0], MODEL_UPDATE))
    if kind == WorkloadKind.TICK_TO_TRADE:
        after = names.index(DECISION) + 1
        wire = next(n for n in names[after:] if n == CLIENT_WIRE)
        spans += [
            Span("tick to model", names[0], MODEL_UPDATE),
            Span("decision to wire", names[after], wire),
            Span("tick to wire", names[0], wire),
        ]
    return tuple(spans)
