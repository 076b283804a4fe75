"""The offered load as both engines see it: plain numbers derived from a scenario's workload.

Rates count client messages (orders and cancels, or echoes) per second. In an open loop, cycles
(order + cancel, or one echo) start on a schedule at ``rate / messages_per_cycle`` per second,
whatever the replies do: Poisson or evenly spaced, one cycle at a time or ``burst`` together
(the schedule's arrivals then come ``burst`` times less often), or a geometric number of
cycles with mean ``burst`` (a feed's bursts: mostly small, now and then large). In a closed
loop each of ``accounts`` loops waits for its reply before sending again and paces its cycles
to share the target rate, so the achieved rate falls below target when latency grows (the
closed-loop property); its accounts send each on its own, or in a fixed rotation (``in_turn``:
an account's cycle waits for the previous account's to be sent, :class:`twin.kinds.Turns`).

Messages are recorded when they are **sent** inside ``[warmup, warmup + duration)``; a run goes
on until every recorded message has been answered, so slow replies are never cut off.
"""

from __future__ import annotations

from dataclasses import dataclass

from twin import dtypes
from twin.errors import ConfigError
from twin.kinds import Arrivals, BurstSizes, Loop, Turns
from twin.scenario import Workload
from twin.units import seconds_to_us


@dataclass(frozen=True)
class Load:
    """Numbers that drive an engine run (times in us)."""

    loop: int
    arrivals: int
    rate_msgs_per_s: float
    accounts: int
    messages_per_cycle: int
    duration_us: float
    warmup_us: float
    seed: int
    burst: int = 1  # cycles per arrival (open loop): always, or on average
    burst_sizes: int = dtypes.BURST_FIXED
    in_turn: bool = False  # a closed loop's accounts send in a fixed rotation (Turns)

    def __post_init__(self) -> None:
        if self.burst < 1 or (self.burst > 1 and self.loop != dtypes.LOOP_OPEN):
            raise ConfigError(f"Burst {self.burst}: need >= 1, and > 1 only in an open loop")
        if self.in_turn and self.loop != dtypes.LOOP_CLOSED:
            raise ConfigError("Turns in a fixed rotation need a closed loop")
        if self.rate_msgs_per_s <= 0:
            raise ConfigError(f"Rate must be > 0 msg/s, got {self.rate_msgs_per_s}")
        if self.duration_us <= 0:
            raise ConfigError(f"Duration must be > 0 us, got {self.duration_us}")
        if self.warmup_us < 0:
            raise ConfigError(f"Negative warm-up {self.warmup_us} us")
        if self.accounts < 1 or self.messages_per_cycle not in (1, 2):
            raise ConfigError(
                f"Need >= 1 account and 1 or 2 messages per cycle, got {self.accounts}, "
                f"{self.messages_per_cycle}"
            )

    @property
    def cycle_rate_per_us(self) -> float:
        """Cycles started per microsecond across all accounts."""
        return self.rate_msgs_per_s / self.messages_per_cycle / 1e6

    def span_us(self, messages: int) -> float:
        """Simulated time in which ``messages`` client messages are sent (at least 1 us)."""
        return max(messages / (self.rate_msgs_per_s / 1e6), 1.0)

    @property
    def end_us(self) -> float:
        """Time after which no recorded message is sent."""
        return self.warmup_us + self.duration_us

    @classmethod
    def from_workload(cls, workload: Workload) -> Load:
        return cls(
            loop=dtypes.LOOP_OPEN if workload.loop == Loop.OPEN else dtypes.LOOP_CLOSED,
            arrivals=(
                dtypes.ARRIVALS_POISSON
                if workload.arrivals == Arrivals.POISSON
                else dtypes.ARRIVALS_UNIFORM
            ),
            rate_msgs_per_s=workload.rate_msgs_per_s,
            accounts=workload.accounts,
            messages_per_cycle=workload.messages_per_cycle,
            duration_us=seconds_to_us(workload.duration_s),
            warmup_us=seconds_to_us(workload.warmup_s),
            seed=workload.seed,
            burst=workload.burst,
            burst_sizes=(
                dtypes.BURST_GEOMETRIC
                if workload.burst_sizes == BurstSizes.GEOMETRIC
                else dtypes.BURST_FIXED
            ),
            in_turn=workload.loop == Loop.CLOSED and workload.turns == Turns.ROUND_ROBIN,
        )
