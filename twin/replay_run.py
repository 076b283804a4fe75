"""Replaying an order flow through a scenario: per-request latency, its summary, its folder.

:func:`replay_output` runs a prepared scenario's path on either engine with the flow's arrivals
(:mod:`twin.flow`); :func:`replay_table` turns the result into the contract's table (one row
per request, in the flow's order):

==============  ======  =========================================================
``send_ns``     int64   when the client sent it (the flow file's epoch)
``kind``        string  ``new``, ``cancel`` or ``modify``
``entry_ns``    int64   send to the matching engine's done (exchange timestamp)
``response_ns`` int64   exchange timestamp to the reply at the client
``rtt_ns``      int64   send to reply (``entry_ns + response_ns``)
``rejected``    bool    the venue refused it (a throttle); its reply is the reject
``exch_ns``     int64   the exchange timestamp, ``send_ns + entry_ns``
``connection``  int64   the session it travelled on (0-based, in order of first use)
``payload_bytes`` int64 as in the flow file, -1 where it gives none
==============  ======  =========================================================

:func:`replay_to_folder` writes ``DIR/replay.parquet`` and ``DIR/summary.json`` atomically. On
the fast engine a long flow is run in chunks of requests: after each, the engine's state (every
request answered so far included) goes to ``DIR/replay_state-NNNNN.npz``, named by
``DIR/manifest.json`` with the chunks done; a rerun with the same flow, scenario and engine
continues from there (same draws as an uninterrupted run) and the state goes once the table
is written. The reference engine runs a flow whole.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from twin.atomic import atomic_write, write_json
from twin.errors import ConfigError, SimulationError
from twin.flow import KIND_NAMES, Arrivals, ReplayOutput, replay_load
from twin.percentiles import PERCENTILES
from twin.results import Progress
from twin.simulation import Prepared

#: Requests per saved chunk of a resumable replay: a few seconds of the fast engine (about 1.5
#: CPU s per million requests here), so an interruption loses little and saving the state (tens
#: of MB) stays a small share of the work.
CHUNK_REQUESTS = 2_000_000
MANIFEST_VERSION = 1


@dataclass(frozen=True)
class Flow:
    """What a replay sends and reports back: the arrivals, each request's ``send_ns`` as the
    flow gives it and its payload (-1: none). From :func:`twin.flowfile.read_order_flow` or
    :meth:`from_arrivals` (a rate trace's)."""

    arrivals: Arrivals
    send_ns: np.ndarray
    payload_bytes: np.ndarray
    source: str

    @classmethod
    def from_arrivals(cls, arrivals: Arrivals, source: str, origin_ns: int = 0) -> Flow:
        send_ns = origin_ns + np.rint(arrivals.send_us * 1e3).astype(np.int64)
        return cls(arrivals, send_ns, np.full(len(arrivals), -1, dtype=np.int64), source)

    def digest(self) -> str:
        h = hashlib.sha256()
        for array in (self.send_ns, self.arrivals.connection, self.arrivals.kind):
            h.update(np.ascontiguousarray(array).tobytes())
        h.update(np.ascontiguousarray(self.payload_bytes).tobytes())
        return h.hexdigest()


def _replayers() -> dict[str, Callable[..., ReplayOutput]]:
    from twin import des
    from twin.fast import engine as fast

    return {"des": des.replay, "fast": fast.replay}


def check_replayable(prepared: Prepared) -> None:
    """Refuse a scenario a flow cannot be replayed through (a whole day's hours)."""
    if prepared.by_hour:
        raise ConfigError(
            f"{prepared.scenario.source}: a whole-day scenario cannot replay a flow "
            "(set day.hour to replay through one hour)"
        )


def replay_output(
    prepared: Prepared, arrivals: Arrivals, engine: str = "fast", progress: Progress | None = None
) -> ReplayOutput:
    """Each request's exchange and reply times through ``prepared``'s path on ``engine``."""
    replayers = _replayers()
    if engine not in replayers:
        raise ConfigError(f"engine = {engine!r}: allowed: {', '.join(sorted(replayers))}")
    check_replayable(prepared)
    load = replay_load(prepared.load, arrivals)
    return replayers[engine](prepared.path, load, arrivals, progress)


def replay_columns(
    flow: Flow,
    exchange_us: np.ndarray,
    done_us: np.ndarray,
    rejected: np.ndarray | None,
    start: int = 0,
    model_us: np.ndarray | None = None,
) -> dict[str, np.ndarray]:
    """The contract's columns for requests ``start ..`` (as many as ``done_us`` has); on a
    feed path, ``md_latency_ns`` too (the update's latency to the client's model)."""
    stop = start + len(done_us)
    send_us = flow.arrivals.send_us[start:stop]
    missing = model_us is not None and bool(np.isnan(model_us).any())
    if missing or np.isnan(done_us).any() or np.isnan(exchange_us).any():
        raise SimulationError("A replayed request has no reply time (the run did not finish)")
    entry = np.rint((exchange_us - send_us) * 1e3).astype(np.int64)
    rtt = np.rint((done_us - send_us) * 1e3).astype(np.int64)
    send_ns = flow.send_ns[start:stop]
    return {
        "send_ns": send_ns,
        "kind": flow.arrivals.kind[start:stop],  # codes: replay_table names them
        "entry_ns": entry,
        "response_ns": rtt - entry,
        "rtt_ns": rtt,
        "rejected": np.zeros(len(rtt), dtype=bool) if rejected is None else rejected,
        "exch_ns": send_ns + entry,
        "connection": flow.arrivals.connection[start:stop],
        "payload_bytes": flow.payload_bytes[start:stop],
        **(
            {}
            if model_us is None
            else {"md_latency_ns": np.rint((model_us - send_us) * 1e3).astype(np.int64)}
        ),
    }


def replay_table(columns: dict[str, np.ndarray]) -> Any:
    """The columns as a pyarrow table, in the contract's order and types (``kind`` named)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    names = pa.array(KIND_NAMES, pa.string())
    return pa.table(
        {
            name: pc.take(names, pa.array(values)) if name == "kind" else pa.array(values)
            for name, values in columns.items()
        }
    )


def lag1_autocorrelation(values: np.ndarray) -> float | None:
    """The correlation of each value with the next (in send order); None under 3 values or
    when they do not vary."""
    x = np.asarray(values, dtype=np.float64)
    if len(x) < 3:
        return None
    a, b = x[:-1] - x[:-1].mean(), x[1:] - x[1:].mean()
    denominator = float(np.sqrt((a * a).sum() * (b * b).sum()))
    return float((a * b).sum() / denominator) if denominator > 0 else None


def _stats_us(ns: np.ndarray) -> dict[str, float | None]:
    if len(ns) == 0:
        return {**{k: None for k in PERCENTILES}, "mean": None, "max": None}
    us = ns.astype(np.float64) / 1e3
    out: dict[str, float | None] = {
        k: float(v)
        for k, v in zip(PERCENTILES, np.percentile(us, list(PERCENTILES.values())), strict=True)
    }
    out.update(mean=float(us.mean()), max=float(us.max()))
    return out


def summarise_replay(columns: dict[str, np.ndarray], scenario: str, engine: str) -> dict[str, Any]:
    """The replay's summary: requests, rejects, percentiles (us) of the round trip, entry and
    response, the round trip's lag-1 autocorrelation beside them, and each kind's round trip."""
    rtt = columns["rtt_ns"]
    codes = columns["kind"]
    return {
        "scenario": scenario,
        "engine": engine,
        "requests": int(len(rtt)),
        "rejected": int(columns["rejected"].sum()),
        "rtt_us": _stats_us(rtt),
        "entry_us": _stats_us(columns["entry_ns"]),
        "response_us": _stats_us(columns["response_ns"]),
        **(
            {"md_latency_us": _stats_us(columns["md_latency_ns"])}
            if "md_latency_ns" in columns
            else {}
        ),
        "rtt_lag1_autocorrelation": lag1_autocorrelation(rtt),
        "rtt_by_kind_us": {
            k: _stats_us(rtt[codes == c]) for c, k in enumerate(KIND_NAMES) if (codes == c).any()
        },
    }


def _read_json(path: Path) -> dict[str, Any] | None:
    """A JSON object from ``path``; None when absent, damaged or not an object (a manifest
    that is not ours: the replay starts afresh)."""
    import json

    try:
        value = json.loads(path.read_text())
    except (ValueError, OSError):
        return None
    return value if isinstance(value, dict) else None


def replay_to_folder(
    prepared: Prepared,
    flow: Flow,
    out_dir: Path,
    engine: str = "fast",
    progress: Progress | None = None,
    chunk_requests: int = CHUNK_REQUESTS,
    stop_after_chunks: int | None = None,
) -> dict[str, Any]:
    """Replay ``flow`` and write ``out_dir/replay.parquet`` and ``summary.json``; return the
    summary. Resumable on the fast engine (see the module's docstring); ``stop_after_chunks``
    stops after that many new chunks (an interruption, for tests), returning ``{}``."""
    check_replayable(prepared)

    out_dir.mkdir(parents=True, exist_ok=True)
    scenario = prepared.scenario
    key = hashlib.sha256(f"{scenario.to_toml()}\n{engine}\n{flow.digest()}".encode()).hexdigest()
    manifest_path = out_dir / "manifest.json"
    n = len(flow.arrivals)
    if engine != "fast":
        out = replay_output(prepared, flow.arrivals, engine, progress)
        return _finish(out_dir, flow, out, scenario.name, engine, key)
    from twin.fast.engine import Replayer

    manifest = _read_json(manifest_path)
    if manifest is not None and manifest.get("key") == key and manifest.get("complete"):
        summary = _read_json(out_dir / "summary.json")
        if summary is not None and (out_dir / "replay.parquet").is_file():
            return summary  # done before, with the same flow, scenario and engine
        manifest = None
    replayer = Replayer(prepared.path, replay_load(prepared.load, flow.arrivals), flow.arrivals)
    chunks: list[dict[str, int]] = []
    next_index = 0
    if manifest is not None and manifest.get("key") == key and "state" in manifest:
        with np.load(out_dir / str(manifest["state"])) as saved:
            replayer.restore({name: saved[name] for name in saved.files})
        chunks = list(manifest["chunks"])
        next_index = int(manifest["next_index"])
    new_chunks = 0
    done = False
    send_us = flow.arrivals.send_us
    while not done:
        next_index = min(next_index + chunk_requests, n)
        done = replayer.advance(float(send_us[next_index]) if next_index < n else np.inf)
        pending = np.flatnonzero(np.isnan(replayer.done_us()))
        answered = n if done or not len(pending) else int(pending[0])
        if progress is not None:
            progress(answered / n)
        if done:
            break
        # A chunk: the engine's state once every request before ``next_index`` was sent (the
        # rows answered so far are in it), and the manifest naming it.
        chunks.append({"sent": next_index, "answered": answered})
        state_name = f"replay_state-{len(chunks):05d}.npz"
        atomic_write(out_dir / state_name, lambda tmp: _save_state(tmp, replayer.state()))
        old = manifest.get("state") if manifest else None
        manifest = {
            "version": MANIFEST_VERSION,
            "key": key,
            "requests": n,
            "next_index": next_index,
            "chunks": chunks,
            "state": state_name,
        }
        write_json(manifest_path, manifest)
        if old and old != state_name:
            (out_dir / str(old)).unlink(missing_ok=True)
        new_chunks += 1
        if stop_after_chunks is not None and new_chunks >= stop_after_chunks:
            return {}
    summary = _finish(out_dir, flow, replayer.output(), scenario.name, engine, key)
    if manifest is not None and "state" in manifest:
        (out_dir / str(manifest["state"])).unlink(missing_ok=True)
    return summary


def _write_parquet(path: Path, table: Any) -> None:
    """Written atomically; a dictionary for ``kind`` only (the numbers would not gain from one,
    and trying costs more than half the write)."""
    import pyarrow.parquet as pq

    atomic_write(path, lambda tmp: pq.write_table(table, tmp, use_dictionary=["kind"]))


def _save_state(tmp: Path, state: dict[str, np.ndarray]) -> None:
    with tmp.open("wb") as f:
        np.savez(f, **state)  # type: ignore[arg-type]


def _finish(
    out_dir: Path, flow: Flow, out: ReplayOutput, scenario: str, engine: str, key: str
) -> dict[str, Any]:
    """Write the whole replay's table, summary and a complete manifest."""
    columns = replay_columns(flow, out.exchange_us, out.done_us, out.rejected, 0, out.model_us)
    _write_parquet(out_dir / "replay.parquet", replay_table(columns))
    summary = summarise_replay(columns, scenario, engine)
    summary["flow"] = flow.source
    write_json(out_dir / "summary.json", summary)
    manifest = {
        "version": MANIFEST_VERSION,
        "key": key,
        "requests": len(flow.arrivals),
        "complete": True,
    }
    write_json(out_dir / "manifest.json", manifest)
    return summary


def latency_over_time(
    send_ns: np.ndarray, rtt_ns: np.ndarray, rejected: np.ndarray, bins: int = 200
) -> dict[str, np.ndarray]:
    """A replay's latency beside its rate, in ``bins`` equal slices of its span: each slice's
    start (s from the first request), offered rate (msg/s), round trip p50 and p99 (us; NaN
    where it is empty) and rejected share (the explorer's and the report's chart)."""
    t = (np.asarray(send_ns, dtype=np.int64) - int(send_ns[0])).astype(np.float64) / 1e9
    span = max(float(t[-1]), 1e-9)
    edges = np.linspace(0.0, span, bins + 1)
    which = np.clip(np.searchsorted(edges, t, side="right") - 1, 0, bins - 1)
    order = np.argsort(which, kind="stable")
    bounds = np.searchsorted(which[order], np.arange(bins + 1))
    rtt_us = np.asarray(rtt_ns, dtype=np.float64)[order] / 1e3
    rej = np.asarray(rejected, dtype=bool)[order]
    p50, p99, share = np.full(bins, np.nan), np.full(bins, np.nan), np.zeros(bins)
    for b in range(bins):
        part = rtt_us[bounds[b] : bounds[b + 1]]
        if len(part):
            p50[b], p99[b] = np.percentile(part, [50, 99])
            share[b] = rej[bounds[b] : bounds[b + 1]].mean()
    counts = np.diff(bounds).astype(np.float64)
    return {
        "start_s": edges[:-1],
        "rate_msgs_per_s": counts / (span / bins),
        "rtt_p50_us": p50,
        "rtt_p99_us": p99,
        "rejected_share": share,
    }
