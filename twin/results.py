"""What a run produces: round-trip percentiles, throughput and where the time went.

Both engines return an :class:`EngineOutput` (plain arrays); :func:`summarise` turns it into a
:class:`RunResult`, the one object the CLI, sweeps, the explorer and the notebooks read. A station
offered a utilization at or above 1 has no steady state: such a run is reported as **unstable**,
with the saturated stations named, never as a latency.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from hdrh.histogram import HdrHistogram

from twin.errors import ModelError
from twin.histogram import cdf_points_us, to_hdr
from twin.jsontext import dumps
from twin.load import Load
from twin.path import CompiledPath
from twin.percentiles import ALL_PERCENTILES, PERCENTILES
from twin.uncertainty import few_samples

# How an engine reports how far a run got: called with the fraction of simulated time done.
Progress = Callable[[float], None]


def percentiles_us(
    hist: HdrHistogram, max_us: float, keys: Mapping[str, float] = PERCENTILES
) -> dict[str, float]:
    """HdrHistogram's value at each of :data:`PERCENTILES` (us), capped at the exact maximum.

    A bucket reports its highest equivalent value, up to 0.1% above the samples in it, so the
    top percentiles of a short run could exceed the largest round trip, which no percentile of
    the sample can.
    """
    return {k: min(hist.get_value_at_percentile(p) / 1e3, max_us) for k, p in keys.items()}


# Names of the messages of a cycle, by messages per cycle: the order loop's two round trips
# (order -> ack, cancel -> cancel ack) are reported apart as well as pooled.
MESSAGE_KINDS = {2: ("order", "cancel")}


@dataclass
class EngineOutput:
    """Raw totals of one engine run over the measurement window."""

    counts: np.ndarray  # round-trip histogram (twin.histogram layout, ns)
    messages: int
    rtt_sum_us: float
    rtt_max_us: float
    hop_time_sum_us: np.ndarray  # per hop, summed over recorded messages
    station_busy_us: np.ndarray  # service time begun inside the window, per station
    duration_us: float
    # One histogram per message of a cycle (rows sum to ``counts``); None: not kept.
    counts_by_kind: np.ndarray | None = None
    # One histogram per span of the path (twin.path.Span), in the path's order; None: not kept.
    span_counts: np.ndarray | None = None
    # Recorded messages the venue's throttle rejected (twin.protections.Throttle); among
    # ``messages``, their round trip the reject's.
    rejected: int = 0

    def merge(self, other: EngineOutput) -> EngineOutput:
        """Pool two independent runs of the same path (replications or batches)."""
        return EngineOutput(
            counts=self.counts + other.counts,
            messages=self.messages + other.messages,
            rtt_sum_us=self.rtt_sum_us + other.rtt_sum_us,
            rtt_max_us=max(self.rtt_max_us, other.rtt_max_us),
            hop_time_sum_us=self.hop_time_sum_us + other.hop_time_sum_us,
            station_busy_us=self.station_busy_us + other.station_busy_us,
            duration_us=self.duration_us + other.duration_us,
            counts_by_kind=self._kinds_with(other),
            span_counts=self._spans_with(other),
            rejected=self.rejected + other.rejected,
        )

    def merge_round_trips(self, other: EngineOutput) -> EngineOutput:
        """Pool the round trips of a run of another path (another placement, whose hops may
        differ): round trips, messages and duration add up (so throughput is the pooled one);
        per-hop means and station utilizations stay this run's own (its sums are scaled)."""
        messages = self.messages + other.messages
        duration = self.duration_us + other.duration_us
        return EngineOutput(
            counts=self.counts + other.counts,
            messages=messages,
            rtt_sum_us=self.rtt_sum_us + other.rtt_sum_us,
            rtt_max_us=max(self.rtt_max_us, other.rtt_max_us),
            hop_time_sum_us=self.hop_time_sum_us * (messages / max(self.messages, 1)),
            station_busy_us=self.station_busy_us * (duration / max(self.duration_us, 1e-9)),
            duration_us=duration,
            counts_by_kind=self._kinds_with(other),
            span_counts=self._spans_with(other),
            rejected=self.rejected + other.rejected,
        )

    def _spans_with(self, other: EngineOutput) -> np.ndarray | None:
        if self.span_counts is None or other.span_counts is None:
            return None
        if self.span_counts.shape != other.span_counts.shape:
            return None
        return self.span_counts + other.span_counts

    def _kinds_with(self, other: EngineOutput) -> np.ndarray | None:
        if self.counts_by_kind is None or other.counts_by_kind is None:
            return None
        return self.counts_by_kind + other.counts_by_kind


@dataclass(frozen=True)
class HourStat:
    """One hour of a whole-day run (:mod:`twin.day`): its round trips' mean and percentiles."""

    hour: int
    messages: int
    rtt_us: dict[str, float]
    sd_us: float  # standard deviation of the hour's round trips


@dataclass(frozen=True)
class HopStat:
    name: str
    component: str
    mean_us: float
    utilization: float | None  # None for hops that never queue


@dataclass(frozen=True)
class StationStat:
    name: str
    servers: int
    utilization: float


@dataclass(frozen=True)
class RunResult:
    """A run's answer. ``rtt_us`` is empty when the run is unstable."""

    scenario: str
    engine: str
    rate_msgs_per_s: float
    seed: int
    messages: int
    rtt_us: dict[str, float]
    throughput_msgs_per_s: float
    hops: tuple[HopStat, ...]
    stations: tuple[StationStat, ...]
    stable: bool
    saturated_stations: tuple[str, ...] = ()
    placements: dict[str, str] = field(default_factory=dict)
    counts: np.ndarray | None = field(default=None, repr=False, compare=False)
    # The order loop's order and cancel round trips apart (same keys as rtt_us, no max).
    rtt_by_kind_us: dict[str, dict[str, float]] = field(default_factory=dict)
    by_hour: tuple[HourStat, ...] = ()
    # The path's spans (twin.path.Span: a feed's pipeline stages, tick to model, ...), same
    # keys as rtt_us.
    spans_us: dict[str, dict[str, float]] = field(default_factory=dict)
    # Each span's histogram (twin.histogram layout, ns), for its .hgrm file.
    span_counts: dict[str, np.ndarray] = field(default_factory=dict, repr=False, compare=False)
    # The rate the path's load-dependent parts were built for (msg/s): a closed loop's own
    # throughput (twin.operating_point); None: ``rate_msgs_per_s``.
    path_rate_msgs_per_s: float | None = None
    # Recorded messages the venue's throttle rejected (twin.protections.Throttle).
    rejected: int = 0
    # What was run (twin.simulation.described): the scenario's whole table as run (its TOML
    # shape, every change applied), the dotted fields changed from its file, and the run length
    # (measured window after the warm-up, in seconds of simulated time).
    scenario_as_run: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    overrides: dict[str, Any] = field(default_factory=dict)
    duration_s: float | None = None
    warmup_s: float | None = None

    @property
    def title(self) -> str:
        """The scenario's name, with its changes when it was run changed (``tier1_peering_cpg
        with connectivity.tier=privatelink``): a result never passes for its file's."""
        if not self.overrides:
            return self.scenario
        changes = ", ".join(f"{k}={v}" for k, v in self.overrides.items())
        return f"{self.scenario} with {changes}"

    def cdf(self) -> tuple[np.ndarray, np.ndarray]:
        """The round trips' empirical CDF: (bucket floor in us, share of messages at or below).

        Raises:
            ModelError: the run kept no histogram (it was unstable).
        """
        return cdf_points_us(self._counts())

    def to_polars(self) -> dict[str, Any]:
        """Tidy frames of the result: ``percentiles`` (statistic, value_us: every message, then
        per kind), ``hops`` (name, component, mean_us, utilization) and ``histogram``
        (value_us: bucket floor, count, cdf), and ``run`` (one row: scenario, engine,
        rate_msgs_per_s, seed, duration_s, warmup_s, overrides as JSON text), as :mod:`polars`
        DataFrames."""
        import polars as pl

        rows = [("all", k, v) for k, v in self.rtt_us.items()] + [
            (kind, k, v) for kind, table in self.rtt_by_kind_us.items() for k, v in table.items()
        ]
        counts = self._counts() if self.stable else None
        if counts is not None:
            index = np.flatnonzero(counts)
            values, share = cdf_points_us(counts)
            histogram = pl.DataFrame(
                {"value_us": values, "count": counts[index].astype(np.int64), "cdf": share}
            )
        else:
            histogram = pl.DataFrame(
                schema={"value_us": pl.Float64, "count": pl.Int64, "cdf": pl.Float64}
            )
        return {
            "percentiles": pl.DataFrame(
                rows, schema=["kind", "statistic", "value_us"], orient="row"
            ),
            "hops": pl.DataFrame(
                [(h.name, h.component, h.mean_us, h.utilization) for h in self.hops],
                schema={
                    "name": pl.Utf8,
                    "component": pl.Utf8,
                    "mean_us": pl.Float64,
                    "utilization": pl.Float64,
                },
                orient="row",
            ),
            "histogram": histogram,
            "run": pl.DataFrame(
                [
                    {
                        "scenario": self.scenario,
                        "engine": self.engine,
                        "rate_msgs_per_s": float(self.rate_msgs_per_s),
                        "seed": self.seed,
                        "duration_s": self.duration_s,
                        "warmup_s": self.warmup_s,
                        "overrides": dumps(self.overrides),
                    }
                ],
                schema={
                    "scenario": pl.Utf8,
                    "engine": pl.Utf8,
                    "rate_msgs_per_s": pl.Float64,
                    "seed": pl.Int64,
                    "duration_s": pl.Float64,
                    "warmup_s": pl.Float64,
                    "overrides": pl.Utf8,
                },
            ),
        }

    def to_pandas(self) -> dict[str, Any]:
        """:meth:`to_polars`'s frames as pandas DataFrames (pandas must be installed)."""
        return {name: frame.to_pandas() for name, frame in self.to_polars().items()}

    def _counts(self) -> np.ndarray:
        if self.counts is None or not self.counts.any():
            raise ModelError(f"{self.scenario}: the run kept no round-trip histogram (unstable)")
        return self.counts

    def to_dict(self) -> dict[str, Any]:
        """The public JSON shape of ``twin run --json``."""
        return {
            "scenario": self.scenario,
            "engine": self.engine,
            "rate_msgs_per_s": self.rate_msgs_per_s,
            "seed": self.seed,
            "messages": self.messages,
            "rejected": self.rejected,
            "stable": self.stable,
            "saturated_stations": list(self.saturated_stations),
            "rtt_us": dict(self.rtt_us) if self.stable else None,
            "rtt_by_kind_us": (
                {k: dict(v) for k, v in self.rtt_by_kind_us.items()} if self.stable else None
            ),
            "spans_us": {k: dict(v) for k, v in self.spans_us.items()} if self.stable else None,
            "throughput_msgs_per_s": self.throughput_msgs_per_s,
            "path_rate_msgs_per_s": self.path_rate_msgs_per_s,
            "hops": [
                {
                    "name": h.name,
                    "component": h.component,
                    "mean_us": h.mean_us,
                    "utilization": h.utilization,
                }
                for h in self.hops
            ],
            "stations": [
                {"name": s.name, "servers": s.servers, "utilization": s.utilization}
                for s in self.stations
            ],
            "placements": dict(self.placements),
            "few_samples": self.few_samples,
            "by_hour": [
                {"hour": h.hour, "messages": h.messages, "rtt_us": dict(h.rtt_us), "sd_us": h.sd_us}
                for h in self.by_hour
            ],
            "overrides": dict(self.overrides),
            "duration_s": self.duration_s,
            "warmup_s": self.warmup_s,
            "scenario_as_run": self.scenario_as_run,
        }

    @property
    def few_samples(self) -> list[str]:
        """Percentiles resting on too few round trips beyond them
        (:func:`twin.uncertainty.few_samples`); empty for an unstable run."""
        return few_samples(self.rtt_us, self.messages) if self.stable else []


def rate_at_full_load(
    utilization_at: Callable[[float], float], rel_tol: float = 1e-3, max_rate: float = 1e8
) -> float | None:
    """The rate (msg/s) at which ``utilization_at(rate)`` reaches 1, by doubling then bisection
    to ``rel_tol``; None when it stays below 1 up to ``max_rate``. Utilization need not be
    linear in the rate (shared cores slow a process as the rate rises), only increasing."""
    lo, hi = 1.0, 1e3
    while utilization_at(hi) < 1.0:
        lo, hi = hi, hi * 2
        if hi > max_rate:
            return None
    while hi - lo > rel_tol * hi:
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if utilization_at(mid) < 1.0 else (lo, mid)
    return (lo + hi) / 2


def offered_utilization(path: CompiledPath, load: Load) -> np.ndarray:
    """Offered load per station: rate x mean service / servers, plus the share of its vCPU its
    hiccups take (:class:`twin.path.Hiccups`), or the share of an allowance's sustained rate its
    hops take when that is larger; >= 1 means no steady state."""
    per_us = load.rate_msgs_per_s / 1e6
    servers = per_us * path.station_service_mean_us() / path.station_servers
    servers = servers + path.station_hiccup_share()
    return np.maximum(servers, path.allowance_share(load.rate_msgs_per_s))


def unstable_result(
    scenario: str, engine: str, path: CompiledPath, load: Load, placements: dict[str, str]
) -> RunResult:
    """The report for a run whose offered load saturates a station (no simulation is run)."""
    rho = offered_utilization(path, load)
    saturated = tuple(
        f"{path.station_names[i]} (offered utilization {rho[i]:.2f})"
        for i in np.flatnonzero(rho >= 1.0)
    )
    return RunResult(
        scenario=scenario,
        engine=engine,
        rate_msgs_per_s=load.rate_msgs_per_s,
        seed=load.seed,
        messages=0,
        rtt_us={},
        throughput_msgs_per_s=0.0,
        hops=(),
        stations=tuple(
            StationStat(n, int(c), float(r))
            for n, c, r in zip(path.station_names, path.station_servers, rho, strict=True)
        ),
        stable=False,
        saturated_stations=saturated,
        placements=placements,
    )


def histogram_table_us(
    counts: np.ndarray, cap_us: float = np.inf, keys: Mapping[str, float] = PERCENTILES
) -> dict[str, float]:
    """Percentiles ``keys``, max and mean (us) of a histogram (:mod:`twin.histogram` layout),
    to HDR precision (0.1%), capped at ``cap_us`` (a run's exact maximum, when known)."""
    hist = to_hdr(counts)
    table = percentiles_us(hist, min(cap_us, hist.get_max_value() / 1e3), keys)
    table["max"] = min(hist.get_max_value() / 1e3, cap_us)
    table["mean"] = hist.get_mean_value() / 1e3
    return table


def summarise(
    scenario: str,
    engine: str,
    path: CompiledPath,
    load: Load,
    out: EngineOutput,
    placements: dict[str, str],
) -> RunResult:
    """Percentiles, throughput and per-hop accounting of a finished run."""
    if out.messages == 0:
        raise ModelError(
            "No message was recorded: the measurement window is too short for the rate "
            f"({load.rate_msgs_per_s} msg/s over {load.duration_us} us)"
        )
    rtt = percentiles_us(to_hdr(out.counts), out.rtt_max_us)
    rtt["max"] = out.rtt_max_us
    rtt["mean"] = out.rtt_sum_us / out.messages
    throughput = out.messages / (out.duration_us / 1e6)
    # A station's utilization: its servers' busy share, or the share of an allowance its hops
    # take at the achieved rate when that is larger (how close it is to its limit).
    busy = out.station_busy_us / (out.duration_us * path.station_servers)
    station_util = np.maximum(busy, path.allowance_share(throughput))
    kinds = MESSAGE_KINDS.get(load.messages_per_cycle, ())
    by_kind = {}
    if kinds and out.counts_by_kind is not None:
        for name, counts in zip(kinds, out.counts_by_kind, strict=True):
            if counts.any():
                by_kind[name] = histogram_table_us(counts, out.rtt_max_us)
    spans, span_counts = {}, {}
    if out.span_counts is not None:
        for name, counts in zip(path.span_names, out.span_counts, strict=True):
            if counts.any():
                spans[name] = histogram_table_us(counts, keys=ALL_PERCENTILES)
                span_counts[name] = counts
    hops = tuple(
        HopStat(
            name=path.hop_names[i],
            component=path.hop_components[i],
            mean_us=float(out.hop_time_sum_us[i] / out.messages),
            utilization=(
                float(station_util[path.hops[i]["station"]])
                if path.hops[i]["station"] >= 0
                else None
            ),
        )
        for i in range(path.n_hops)
    )
    return RunResult(
        scenario=scenario,
        engine=engine,
        rate_msgs_per_s=load.rate_msgs_per_s,
        seed=load.seed,
        messages=out.messages,
        rtt_us=rtt,
        throughput_msgs_per_s=throughput,
        hops=hops,
        stations=tuple(
            StationStat(n, int(c), float(u))
            for n, c, u in zip(path.station_names, path.station_servers, station_util, strict=True)
        ),
        stable=True,
        placements=placements,
        counts=out.counts,
        rtt_by_kind_us=by_kind,
        spans_us=spans,
        span_counts=span_counts,
        rejected=out.rejected,
    )
