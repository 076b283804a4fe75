"""An open-loop write load on an etcd cluster, timed per request (``twin testbed cluster``).

Writes small keys through etcd's HTTP/JSON gateway (``POST /v3/kv/put``, key and value base64:
etcd's documented gRPC gateway) on a pool of keep-alive HTTP/1.1 connections. Sends follow a
Poisson schedule fixed in advance, and each latency runs from the **scheduled** send time to the
response, so a stalled cluster (a leader election) shows as the latency it causes instead of
silently thinning the load (no coordinated omission). A request is given to a free connection,
or a new one up to ``max_connections``; beyond that it waits, and its wait counts. With
``burst = k`` the schedule's points come at ``rate / k`` a second and bring ``k`` writes each,
sent together (the lab's burst probe: the same writes a second, the host kept awake within a
burst).

Results: ``DIR/rtt.hgrm`` (microseconds), ``DIR/summary.json`` (rate asked and achieved,
percentiles, errors by kind, the longest gap between two successful responses and when it began:
the outage a leader's loss causes), ``DIR/completions.npy`` (send and finish times, ns).
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from twin.atomic import write_json, write_text
from twin.histogram import percentile_from_counts_us, to_hdr
from twin.output import hgrm_text
from twin.percentiles import ALL_PERCENTILES
from twin.testbed.recorder import counts_of_ns, summary_us

Endpoint = tuple[str, int]
VALUE = base64.b64encode(b"v" * 64).decode()


@dataclass
class _Outcome:
    scheduled_ns: int
    finished_ns: int
    ok: bool
    error: str = ""


class _Connection:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter):
        self.reader, self.writer = reader, writer

    async def put(self, host: str, key: str) -> tuple[bool, str]:
        body = json.dumps({"key": base64.b64encode(key.encode()).decode(), "value": VALUE})
        request = (
            f"POST /v3/kv/put HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n\r\n{body}"
        )
        self.writer.write(request.encode())
        await self.writer.drain()
        status = await self.reader.readline()
        length = 0
        while True:
            line = await self.reader.readline()
            if not line:
                raise ConnectionError("connection closed")
            if line in (b"\r\n", b"\n"):
                break
            name, _, value = line.decode("latin-1").partition(":")
            if name.strip().lower() == "content-length":
                length = int(value.strip())
        payload = await self.reader.readexactly(length) if length else b""
        code = status.split(b" ")[1] if b" " in status else b"?"
        if code != b"200":
            return False, f"http {code.decode(errors='replace')}"
        if b"error" in payload[:200]:
            return False, "etcd error"
        return True, ""


async def _load(
    target: Endpoint,
    rate_per_s: float,
    duration_s: float,
    max_connections: int,
    seed: int,
    timeout_s: float,
    kill: tuple[float, tuple[int, ...]] | None,
    burst: int,
) -> tuple[list[_Outcome], float]:
    rng = np.random.default_rng(seed)
    n = int(rate_per_s / burst * duration_s * 1.2) + 16
    gaps = rng.exponential(1e9 * burst / rate_per_s, n)
    offsets = np.cumsum(gaps)
    offsets = np.repeat(offsets[offsets < duration_s * 1e9].astype(np.int64), burst)
    idle: list[_Connection] = []
    opened = 0
    slots = asyncio.Semaphore(max_connections)
    outcomes: list[_Outcome] = []
    host = f"{target[0]}:{target[1]}"

    async def one(i: int, scheduled_ns: int) -> None:
        nonlocal opened
        async with slots:
            conn = idle.pop() if idle else None
            try:
                if conn is None:
                    reader, writer = await asyncio.wait_for(
                        asyncio.open_connection(*target), timeout_s
                    )
                    opened += 1
                    conn = _Connection(reader, writer)
                ok, error = await asyncio.wait_for(conn.put(host, f"k{i % 1000}"), timeout_s)
                outcomes.append(_Outcome(scheduled_ns, time.monotonic_ns(), ok, error))
                idle.append(conn)
            except (OSError, asyncio.IncompleteReadError, ValueError) as exc:  # timeouts too
                kind = "timeout" if isinstance(exc, TimeoutError) else type(exc).__name__
                outcomes.append(_Outcome(scheduled_ns, time.monotonic_ns(), False, kind))
                if conn is not None:
                    conn.writer.close()

    start = time.monotonic_ns() + 50_000_000
    if kill is not None:
        at_s, pids = kill

        def crash() -> None:
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass

        asyncio.get_running_loop().call_at(asyncio.get_running_loop().time() + 0.05 + at_s, crash)
    tasks = []
    for i, offset in enumerate(offsets):
        due = start + int(offset)
        delay = (due - time.monotonic_ns()) / 1e9
        if delay > 0:  # the rest of a burst is due at once
            await asyncio.sleep(delay)
        tasks.append(asyncio.create_task(one(i, due)))
    await asyncio.gather(*tasks)
    for conn in idle:
        conn.writer.close()
    return outcomes, (time.monotonic_ns() - start) / 1e9


def longest_gap(outcomes: list[_Outcome], start_ns: int) -> tuple[float, float]:
    """The longest time (ms) without a successful response, and when it began (s into the run)."""
    done = np.sort([o.finished_ns for o in outcomes if o.ok])
    if done.size < 2:
        return float("nan"), float("nan")
    gaps = np.diff(done)
    k = int(np.argmax(gaps))
    return float(gaps[k] / 1e6), float((done[k] - start_ns) / 1e9)


def run_load(
    target: Endpoint,
    rate_per_s: float,
    duration_s: float,
    out_dir: Path,
    max_connections: int = 1024,
    seed: int = 1,
    timeout_s: float = 10.0,
    kill: tuple[float, tuple[int, ...]] | None = None,
    burst: int = 1,
) -> dict[str, Any]:
    """Drive the open-loop write load and write its results to ``out_dir``. ``burst``: writes
    sent together at each point of the schedule (``rate`` stays the writes a second). ``kill``:
    at that many seconds into the schedule, SIGKILL these processes (a member's crash, timed on
    the load's own clock). Connections are many (a request stuck on a dead leader holds one until
    etcd times it out, 7 s by default) so that new writes go out meanwhile."""
    out_dir.mkdir(parents=True, exist_ok=True)
    cpu_before = time.process_time()
    outcomes, elapsed_s = asyncio.run(
        _load(target, rate_per_s, duration_s, max_connections, seed, timeout_s, kill, burst)
    )
    good = [o for o in outcomes if o.ok]
    latencies = [o.finished_ns - o.scheduled_ns for o in good]
    counts = counts_of_ns(latencies)
    errors: dict[str, int] = {}
    for o in outcomes:
        if not o.ok:
            errors[o.error] = errors.get(o.error, 0) + 1
    first = min((o.scheduled_ns for o in outcomes), default=0)
    gap_ms, gap_at_s = longest_gap(outcomes, first)
    summary = {
        "target": f"{target[0]}:{target[1]}",
        "rate_per_s": rate_per_s,
        "burst": burst,
        "duration_s": duration_s,
        "requests": len(outcomes),
        "achieved_per_s": len(good) / duration_s,
        "errors": errors,
        # Every percentile the twin reports (p10..p99.9), for calibration on the distribution.
        "rtt_us": {
            **(
                {k: percentile_from_counts_us(counts, p) for k, p in ALL_PERCENTILES.items()}
                if good
                else {}
            ),
            **summary_us(to_hdr(counts)),
        },
        "longest_gap_ms": gap_ms,
        "longest_gap_at_s": gap_at_s,
        "killed_at_s": None if kill is None else kill[0],
        "elapsed_s": elapsed_s,
        "client_cpu_s": time.process_time() - cpu_before,
    }
    write_text(out_dir / "rtt.hgrm", hgrm_text(counts))
    np.save(
        out_dir / "completions.npy",
        np.array([(o.scheduled_ns - first, o.finished_ns - first, o.ok) for o in outcomes]),
    )
    write_json(out_dir / "summary.json", summary)
    return summary
