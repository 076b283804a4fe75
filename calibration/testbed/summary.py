"""The live testbed's run summary (``summary.json``): one typed record, written and read alike.

The load client (:mod:`twin.testbed.client`) builds a :class:`LoadSummary` and writes
:meth:`LoadSummary.to_dict` as ``summary.json``; the campaign and the testbed fit
(:mod:`calibration.testbed.fit`) read it back with :func:`read_summary`. Times are in
microseconds, rates in messages per second. The JSON keys are a public contract: adding a field
is fine, renaming one is not.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import MISSING, asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from twin.errors import MeasurementError
from twin.jsontext import read_json, stated_number
from twin.kinds import Arrivals, Loop

TOOL = "twin testbed load"
# Per-process tables: "client" and "gateway", each a mapping of column name -> list.
PROCESSES = ("client", "gateway")


@dataclass(frozen=True)
class LoadConditions:
    """What a run was asked to do and where it ran."""

    host: str
    port: int
    rate_msgs_per_s: float
    connections: int
    duration_s: float
    warmup_s: float
    loop: Loop
    arrivals: Arrivals
    interval_s: float
    seed: int
    payload_bytes: int
    cpus: int
    kernel: str
    client: str
    coordinated_omission_corrected: bool
    burst_sizes: tuple[int, ...] = ()
    # Set by ``twin testbed campaign`` (loopback or veth); None for a run by hand.
    topology: str | None = None


@dataclass(frozen=True)
class LoadSummary:
    """One load run: counts, round-trip percentiles, in-process timings, costs, host state.

    Percentile mappings (``rtt_us``, ``send_lag_us``, ...) hold ``p50 .. p99_9``, ``max``,
    ``mean`` and ``count``. ``work_by_*`` map each process to its table by idle gap or batch
    size. ``cpu_by_host_gap`` maps each process to its thread's CPU a wake-up (the client's) or a
    read (the gateway's, a message of it) by the host's idle gap before the busy period it came
    in (the time since the loop last had no cycle in flight); empty in runs recorded before it.
    ``to_gateway_us`` and ``from_gateway_us`` split each round trip at the gateway's read (the
    reply's ``read_ns``): from the round trip's start to the read, and from the read to the
    client's; their means add up to ``rtt_us``'s; empty in runs recorded before them.
    Per-message costs are None when the process's CPU times could not be read.
    """

    conditions: LoadConditions
    counts: Mapping[str, int]
    recorded: Mapping[str, int]
    lost: int
    achieved_msgs_per_s: float
    rtt_us: Mapping[str, float]
    order_rtt_us: Mapping[str, float]
    cancel_rtt_us: Mapping[str, float]
    send_lag_us: Mapping[str, float]
    gateway_service_us: Mapping[str, float]
    client_send_us: Mapping[str, float]
    client_recv_us: Mapping[str, float]
    work_by_idle_gap: Mapping[str, Mapping[str, list[float]]]
    work_by_batch: Mapping[str, Mapping[str, list[float]]]
    work_by_batch_warm: Mapping[str, Mapping[str, list[float]]]
    client_cpu_us_per_msg: float | None
    gateway_cpu_us_per_msg: float | None
    client_runqueue_us_per_msg: float | None
    gateway_runqueue_us_per_msg: float | None
    client_wakeups_per_msg: float
    host: Mapping[str, float | None]
    cpu_by_host_gap: Mapping[str, Mapping[str, list[float]]] = field(default_factory=dict)
    to_gateway_us: Mapping[str, float] = field(default_factory=dict)
    from_gateway_us: Mapping[str, float] = field(default_factory=dict)
    tool: str = field(default=TOOL)

    def cpu_us_per_msg(self, process: str) -> float | None:
        """CPU per answered message of ``client`` or ``gateway``."""
        value: float | None = getattr(self, f"{process}_cpu_us_per_msg")
        return value

    def to_dict(self) -> dict[str, Any]:
        """The ``summary.json`` object (``tool`` first)."""
        data = asdict(self)
        data["conditions"]["burst_sizes"] = list(self.conditions.burst_sizes)
        if self.conditions.topology is None:
            del data["conditions"]["topology"]
        return {"tool": self.tool, **{k: v for k, v in data.items() if k != "tool"}}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], source: str) -> LoadSummary:
        """Validate a ``summary.json`` object; errors name ``source`` and the missing key."""
        if not isinstance(data, Mapping) or data.get("tool") != TOOL:
            raise MeasurementError(f"{source}: not a {TOOL!r} summary (tool = {_tool(data)!r})")
        raw_conditions = _table(data, "conditions", source)
        known = {f.name for f in fields(LoadConditions)}
        try:
            conditions = LoadConditions(
                **{k: v for k, v in raw_conditions.items() if k in known},
            )
            conditions = replace(
                conditions,
                loop=Loop(conditions.loop),
                arrivals=Arrivals(conditions.arrivals),
                burst_sizes=tuple(int(n) for n in conditions.burst_sizes),
            )
        except (TypeError, ValueError) as exc:
            raise MeasurementError(f"{source}: conditions: {exc}") from None
        try:
            for name in _CONDITION_NUMBERS:
                stated_number(getattr(conditions, name), f"conditions.{name}")
        except ValueError as exc:
            raise MeasurementError(f"{source}: {exc}") from None
        values: dict[str, Any] = {"conditions": conditions}
        for f in fields(cls):
            if f.name in ("conditions", "tool"):
                continue
            if f.name not in data:
                if f.default is not MISSING or f.default_factory is not MISSING:
                    continue  # a field added since: older runs do without it
                raise MeasurementError(f"{source}: {f.name} is missing")
            values[f.name] = _checked(f.name, data[f.name], source)
        return cls(**values)


# The conditions and top-level fields that are numbers (finite, >= 0; the optional ones may be
# None: a process whose CPU times could not be read); every other field is a table.
_CONDITION_NUMBERS = (
    "port",
    "rate_msgs_per_s",
    "connections",
    "duration_s",
    "warmup_s",
    "interval_s",
    "seed",
    "payload_bytes",
    "cpus",
)
_NUMBERS = ("lost", "achieved_msgs_per_s", "client_wakeups_per_msg")
_OPTIONAL_NUMBERS = (
    "client_cpu_us_per_msg",
    "gateway_cpu_us_per_msg",
    "client_runqueue_us_per_msg",
    "gateway_runqueue_us_per_msg",
)


def _checked(name: str, value: Any, source: str) -> Any:
    """A summary field's value, checked for its kind: one line naming ``source`` otherwise."""
    if name in _NUMBERS or (name in _OPTIONAL_NUMBERS and value is not None):
        try:
            stated_number(value, name)
        except ValueError as exc:
            raise MeasurementError(f"{source}: {exc}") from None
        return value
    if name in _OPTIONAL_NUMBERS:
        return None
    if not isinstance(value, Mapping):
        raise MeasurementError(f"{source}: {name} must be a table, got {value!r}")
    return dict(value)


def _tool(data: Any) -> Any:
    return data.get("tool") if isinstance(data, Mapping) else type(data).__name__


def _table(data: Mapping[str, Any], key: str, source: str) -> Mapping[str, Any]:
    value = data.get(key)
    if not isinstance(value, Mapping):
        raise MeasurementError(f"{source}: {key} must be a table, got {value!r}")
    return value


def read_summary(run_dir: str | Path) -> LoadSummary:
    """The ``summary.json`` of one testbed measurement directory."""
    path = Path(run_dir) / "summary.json"
    try:
        data = read_json(path)
    except (OSError, ValueError) as exc:
        raise MeasurementError(f"{path}: cannot read the summary: {exc}") from None
    return LoadSummary.from_dict(data, str(path))


def _median(values: Sequence[Any]) -> Any:
    known = [v for v in values if v is not None]
    return float(statistics.median(known)) if known else None


def _merge(values: list[Any]) -> Any:
    head = values[0]
    if isinstance(head, Mapping):
        return {k: _merge([v[k] for v in values if k in v]) for k in head}
    if isinstance(head, list) and head and isinstance(head[0], int | float):
        return [float(statistics.median(col)) for col in zip(*values, strict=True)]
    if isinstance(head, bool) or not isinstance(head, int | float):
        return head
    return _median(values)


def median_summary(summaries: Sequence[LoadSummary]) -> LoadSummary:
    """The elementwise median of several runs' summaries (numbers and number lists).

    What the calibration reads when a rate was measured several times: each percentile,
    timing and count is the median over the repeats; text fields come from the first run.
    """
    merged = _merge([s.to_dict() for s in summaries])
    return LoadSummary.from_dict(merged, "the median of the repeats' summaries")


def run_dirs(root: Path, row: Mapping[str, Any]) -> list[Path]:
    """The measurement directories of one campaign row (one per repeat)."""
    if "runs" in row:
        return [root / r["run"] for r in row["runs"]]
    return [root / f"rate_{int(row['rate_msgs_per_s'])}"]
