"""Token buckets on the path: a NIC's allowance (delays) and a venue's throttle (rejects).

:class:`Allowance` holds what exceeds it in a queue; :class:`Throttle` is a venue's order-rate
limit, which refuses what exceeds it. A throttle is the lazy-fill token bucket that venues
document: it holds at most ``burst`` tokens, refills at ``rate_per_s``, starts full; a request
arriving at the venue's gateway takes its kind's weight of tokens, or, short of them, is
rejected there: the gateway answers it at once (its reply hop), never reaching the matching
engine. ``per = "session"``: one bucket per connection (an order-entry session);
``"all"``: one for the whole flow (a REST API's request weight per IP). ``action =
"disconnect"``: a rejected session is cut off for ``disconnect_s``, every request meanwhile
rejected. A speed bump (``exchange.speed_bump_us``) is a fixed delay before the gateway, so it
keeps the order in which requests reach it.

Public limits these stand for (cited in :data:`CITED_LIMITS`): Coinbase Exchange FIX 4.2, 50
requests per rolling second per session, bursts of 100, "a lazy-fill token bucket
implementation"; its FIX 5 disconnects a session above 200 messages per second; Binance's FIX
order entry 10,000 messages per 10 s per connection, disconnected on breach; Binance's REST API
a REQUEST_WEIGHT of 6,000 per minute per IP, each endpoint weighing its own; IEX's speed bump
350 us.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from twin.errors import ModelError

CITED_LIMITS = {
    "coinbase_fix42_session": (
        "50 req/s per session, burst 100 (docs.cdp.coinbase.com/exchange/fix-api/rate-limits)"
    ),
    "coinbase_fix5_disconnect": "disconnected above 200 msg/s (same page)",
    "binance_fix_order_entry": "10,000 messages per 10 s per connection, disconnect on breach "
    "(developers.binance.com, FIX API limits)",
    "binance_rest_weight": "REQUEST_WEIGHT 6,000 per minute per IP "
    "(developers.binance.com/docs/binance-spot-api-docs/websocket-api/rate-limits)",
    "iex_speed_bump": "350 us (IEX's published speed bump)",
}
PER = ("session", "all")
ACTIONS = ("reject", "disconnect")


@dataclass(frozen=True)
class Allowance:
    """A token bucket: an EC2 instance's packet-per-second or bandwidth allowance, which lets a
    burst through at line rate while it has credit and holds what exceeds it in a queue (AWS:
    "packets queued or dropped because the bidirectional PPS exceeded the maximum",
    ``pps_allowance_exceeded``). Hops that name the same allowance share its bucket (both
    directions of one instance's NIC).

    Credit is counted in microseconds of the sustained rate: it refills at one microsecond per
    microsecond up to ``depth_us``; a message takes its hop's :attr:`Hop.allowance_us` of it on
    arriving at the hop's station and joins the servers' queue once the credit is there, in
    arrival order, waiting for the refill when the bucket is short. The bucket is full when the
    run starts (what it held before only shows in the warm-up: under the sustained rate it
    refills, above it the queue grows either way).

    Invariants: ``depth_us > 0``; a bucket one message deep is a deterministic server of that
    message's cost (its wait is an M/D/1 queue's), a deeper one waits that queue's wait less
    ``depth_us - allowance_us``, never less than zero; at most ``1 / allowance_us`` messages per
    microsecond pass in the long run, whatever the depth.
    """

    name: str
    depth_us: float

    def __post_init__(self) -> None:
        if not (self.depth_us > 0 and math.isfinite(self.depth_us)):
            raise ModelError(f"Allowance {self.name!r}: depth_us must be > 0, got {self.depth_us}")


@dataclass(frozen=True)
class Throttle:
    """A venue's order-rate limit (see the module's docstring); weights by request kind (new,
    cancel, modify; the order loop's order is a new one, its cancel a cancel)."""

    rate_per_s: float
    burst: float
    per: str = "session"
    action: str = "reject"
    disconnect_s: float = 0.0
    weights: tuple[float, float, float] = (1.0, 1.0, 1.0)

    def __post_init__(self) -> None:
        if not (self.rate_per_s > 0 and math.isfinite(self.rate_per_s)):
            raise ModelError(f"Throttle: rate_per_s must be > 0, got {self.rate_per_s}")
        if not (math.isfinite(self.burst) and self.burst >= max(self.weights)):
            raise ModelError(f"Throttle: burst {self.burst} must hold the heaviest request")
        if self.per not in PER or self.action not in ACTIONS:
            raise ModelError(f"Throttle: per {self.per!r}, action {self.action!r}")
        if not all(w > 0 and math.isfinite(w) for w in self.weights):
            raise ModelError(f"Throttle: weights must be > 0, got {self.weights}")

    @property
    def per_session(self) -> bool:
        return self.per == "session"

    @property
    def disconnect_us(self) -> float:
        return self.disconnect_s * 1e6 if self.action == "disconnect" else 0.0


def parse_throttle(t: Any) -> Throttle:
    """``[exchange.throttle]`` read through the scenario's table reader ``t``
    (:class:`twin.scenario._Table`: its errors name the file, field and value)."""
    positive = {"check": lambda v: 0 < v <= 1e9, "allowed": "> 0 and <= 1e9"}
    rate = t.number("rate_per_s", **positive)
    burst = t.number("burst", **positive)
    weights = tuple(t.number(f"weight_{k}", 1.0, **positive) for k in ("new", "cancel", "modify"))
    if burst < max(weights):
        raise t.error(f"{t.prefix}burst", burst, "must be at least the heaviest weight_*")
    action = t.string("action", "reject", choices=ACTIONS)
    disconnect_s = t.number(
        "disconnect_s", 1.0 if action == "disconnect" else 0.0,
        check=lambda v: 0 <= v <= 86400, allowed="0..86400 s",
    )  # fmt: skip
    throttle = Throttle(
        rate_per_s=rate,
        burst=burst,
        per=t.string("per", "session", choices=PER),
        action=action,
        disconnect_s=disconnect_s,
        weights=(float(weights[0]), float(weights[1]), float(weights[2])),
    )
    t.done()
    return throttle


def throttle_hops(hop_names: tuple[str, ...]) -> tuple[int, int]:
    """Where a venue's throttle acts on a round trip: the gateway's decode (a request is
    checked as it reaches it) and the gateway's reply (where a reject goes)."""
    try:
        return hop_names.index("gateway decode"), hop_names.index("gateway encode reply")
    except ValueError:
        raise ModelError("A throttle needs the venue's gateway on the path") from None
