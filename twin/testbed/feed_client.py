"""The feed client: a trading engine's inbound pipeline, each stage timed per message.

One thread, as the C++ engine of the domain brief does it: ``epoll`` says the socket is
readable (**poll**), one ``recv`` takes what is there (**read**), Python's ``ssl`` decrypts all
of it through memory BIOs (**tls**), then the read's WebSocket frames are decoded one by one
(**decode**, :mod:`twin.testbed.wsframe`), their JSON parsed one by one (**parse**, orjson) and
each applied to an order book (**update**). Each stage handles the whole read before the next
starts, so a message's time in a stage includes the stage's work on the messages ahead of it in
the same read: the k-th frame's decode latency is the decode time of frames 1..k. Per message:

* ``poll_to_read``: epoll returned -> recv returned (the read's, same for its messages);
* ``tls``: recv returned -> everything decrypted;
* ``decode``, ``parse``, ``update``: from the end of the previous stage to this message's end;
* ``inbound``: epoll returned -> this message's update applied (the write-up's p50 ~50 us);
* ``wire``: the server's send time (CLOCK_MONOTONIC in the message) -> epoll returned.

Raw rows for calibration go to ``reads.parquet`` (per read: its start, messages, bytes,
poll-to-read and TLS times, and the thread's work after the last update, ``after``) and
``messages.parquet`` (per message: its read, position, send time, the server's lateness, wire
time and its **own** decode, parse and update work, the difference of successive completions).

Bad input is counted and survived: a frame the feed never sends (truncated, fragmented) drops
the rest of that read's bytes and resynchronises at the next message boundary the server sends
(its next burst); invalid JSON skips that message; a TLS error ends the connection and the client
reconnects. Messages of the first ``warmup_s`` are not recorded.
"""

from __future__ import annotations

import selectors
import socket
import ssl
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import orjson

from twin.atomic import write_json, write_text
from twin.errors import SimulationError
from twin.histogram import to_hdr
from twin.output import hgrm_text
from twin.testbed.recorder import counts_of_ns, summary_us
from twin.testbed.wsframe import OP_CLOSE, OP_TEXT, FrameError, client_request, next_frame

STAGES = ("poll_to_read", "tls", "decode", "parse", "update", "inbound", "wire")
READ_BYTES = 1 << 18


@dataclass
class FeedCounts:
    """What the client saw, good and bad."""

    messages: int = 0
    recorded: int = 0
    reads: int = 0
    bytes: int = 0
    sequence_gaps: int = 0
    json_errors: int = 0
    frame_errors: int = 0
    tls_errors: int = 0
    reconnects: int = 0


@dataclass
class _Timings:
    stages: dict[str, list[int]] = field(default_factory=lambda: {s: [] for s in STAGES})
    batch: list[int] = field(default_factory=list)  # messages per read (recorded reads)
    # Raw rows for calibration (ns): per read, and per message its own work in each stage.
    reads: dict[str, list[int]] = field(
        default_factory=lambda: {
            c: [] for c in ("poll_ns", "messages", "bytes", "poll_to_read", "tls", "after")
        }
    )
    own: dict[str, list[int]] = field(
        default_factory=lambda: {
            c: [] for c in ("read", "k", "sent", "late", "wire", "decode", "parse", "update")
        }
    )


class _Book:
    """The model the pipeline updates: price -> quantity per side, as floats."""

    def __init__(self) -> None:
        self.bids: dict[float, float] = {}
        self.asks: dict[float, float] = {}

    def apply(self, update: dict[str, Any]) -> None:
        for side, levels in ((self.bids, update["b"]), (self.asks, update["a"])):
            for price, qty in levels:
                q = float(qty)
                if q == 0.0:
                    side.pop(float(price), None)
                else:
                    side[float(price)] = q


class _Connection:
    """A TLS WebSocket connection whose TLS runs through memory BIOs (so it can be timed)."""

    def __init__(self, host: str, port: int, cafile: Path) -> None:
        context = ssl.create_default_context(cafile=str(cafile))
        self.sock = socket.create_connection((host, port), timeout=10)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.incoming, self.outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
        self.tls = context.wrap_bio(self.incoming, self.outgoing, server_hostname="localhost")
        self._handshake()
        request, accept = client_request(host)
        self.tls.write(request)
        self._flush()
        response = b""
        while b"\r\n\r\n" not in response:
            response += self._read_plain()
        head, _, rest = response.partition(b"\r\n\r\n")
        if b" 101 " not in head.split(b"\r\n", 1)[0] or accept.encode() not in head:
            raise SimulationError(f"feed server refused the WebSocket upgrade: {head[:80]!r}")
        self.pending = bytearray(rest)
        self.sock.settimeout(None)

    def _flush(self) -> None:
        data = self.outgoing.read()
        if data:
            self.sock.sendall(data)

    def _handshake(self) -> None:
        while True:
            try:
                self.tls.do_handshake()
                self._flush()
                return
            except ssl.SSLWantReadError:
                self._flush()
                data = self.sock.recv(READ_BYTES)
                if not data:
                    raise SimulationError("feed server closed during the TLS handshake") from None
                self.incoming.write(data)

    def _read_plain(self) -> bytes:
        data = self.sock.recv(READ_BYTES)
        if not data:
            raise SimulationError("feed server closed the connection")
        self.incoming.write(data)
        return self.decrypt()

    def decrypt(self) -> bytes:
        """Everything the incoming BIO holds, decrypted (raises ssl.SSLError on a bad record)."""
        chunks = []
        while True:
            try:
                chunk = self.tls.read(READ_BYTES)
            except ssl.SSLWantReadError:
                break
            if not chunk:
                break
            chunks.append(chunk)
        return b"".join(chunks)

    def close(self) -> None:
        self.sock.close()


@dataclass(frozen=True)
class FeedRun:
    """One measurement: where the server is, how long, and where results go."""

    host: str
    port: int
    cafile: Path
    duration_s: float
    warmup_s: float
    out_dir: Path


def run_feed_client(run: FeedRun, conditions: dict[str, Any]) -> dict[str, Any]:
    """Read the feed for ``warmup_s + duration_s``; write per-stage HDR files and
    ``summary.json`` into ``out_dir``; return the summary."""
    counts, timings, book = FeedCounts(), _Timings(), _Book()
    started = time.monotonic_ns()
    t_warm = started + int(run.warmup_s * 1e9)
    t_end = t_warm + int(run.duration_s * 1e9)
    last_seq = 0
    cpu0 = time.process_time_ns()
    conn = _Connection(run.host, run.port, run.cafile)
    sel = selectors.EpollSelector()
    sel.register(conn.sock, selectors.EVENT_READ)
    try:
        while time.monotonic_ns() < t_end:
            if not sel.select(0.5):
                continue
            t_poll = time.perf_counter_ns()
            mono_poll = time.monotonic_ns()
            data = conn.sock.recv(READ_BYTES)
            t_read = time.perf_counter_ns()
            if not data:
                raise SimulationError("feed server closed the connection")
            counts.reads += 1
            counts.bytes += len(data)
            conn.incoming.write(data)
            try:
                plain = conn.decrypt()
            except ssl.SSLError:
                counts.tls_errors += 1
                sel.unregister(conn.sock)
                conn.close()
                conn = _Connection(run.host, run.port, run.cafile)
                sel.register(conn.sock, selectors.EVENT_READ)
                counts.reconnects += 1
                continue
            t_tls = time.perf_counter_ns()
            buffer = conn.pending + plain
            payloads, ends_dec = [], []
            at = 0
            try:
                while (frame := next_frame(buffer, at)) is not None:
                    opcode, payload, at = frame
                    if opcode == OP_CLOSE:
                        raise SimulationError("feed server sent a close frame")
                    if opcode == OP_TEXT:
                        payloads.append(payload)
                        ends_dec.append(time.perf_counter_ns())
                conn.pending = bytearray(buffer[at:])
            except FrameError:
                counts.frame_errors += 1
                conn.pending = bytearray()  # resynchronise on the server's next burst
            t_dec = time.perf_counter_ns()
            updates, ends_parse = [], []
            for payload in payloads:
                try:
                    updates.append(orjson.loads(payload))
                except orjson.JSONDecodeError:
                    counts.json_errors += 1
                    updates.append(None)
                ends_parse.append(time.perf_counter_ns())
            t_parse = time.perf_counter_ns()
            ends_upd = []
            for update in updates:
                if update is not None:
                    book.apply(update)
                ends_upd.append(time.perf_counter_ns())
            good = [i for i, u in enumerate(updates) if u is not None]
            counts.messages += len(good)
            for i in good:
                seq = updates[i]["u"]
                if last_seq and seq != last_seq + 1:
                    counts.sequence_gaps += 1
                last_seq = seq
            if not good or not t_warm <= mono_poll < t_end:
                continue
            stages = timings.stages
            timings.batch.append(len(good))
            reads, own = timings.reads, timings.own
            for column, value in (
                ("poll_ns", mono_poll - started), ("messages", len(good)), ("bytes", len(data)),
                ("poll_to_read", t_read - t_poll), ("tls", t_tls - t_read),
            ):  # fmt: skip
                reads[column].append(value)
            for k, i in enumerate(good):
                own["read"].append(len(reads["tls"]) - 1)
                own["k"].append(k)
                own["sent"].append(updates[i]["t"] - started)
                own["late"].append(updates[i]["t"] - updates[i]["d"])
                own["wire"].append(mono_poll - updates[i]["t"])
                own["decode"].append(ends_dec[i] - (ends_dec[i - 1] if i else t_tls))
                own["parse"].append(ends_parse[i] - (ends_parse[i - 1] if i else t_dec))
                own["update"].append(ends_upd[i] - (ends_upd[i - 1] if i else t_parse))
            for i in good:
                stages["poll_to_read"].append(t_read - t_poll)
                stages["tls"].append(t_tls - t_read)
                stages["decode"].append(ends_dec[i] - t_tls)
                stages["parse"].append(ends_parse[i] - t_dec)
                stages["update"].append(ends_upd[i] - t_parse)
                stages["inbound"].append(ends_upd[i] - t_poll)
                stages["wire"].append(mono_poll - updates[i]["t"])
                counts.recorded += 1
            # The thread's work after the last update (checks and these records): it delays
            # the next poll like any stage, so the model needs it too.
            reads["after"].append(time.perf_counter_ns() - ends_upd[-1])
    finally:
        conn.close()
    cpu_s = (time.process_time_ns() - cpu0) / 1e9
    return _write(run, conditions, counts, timings, cpu_s)


def _write(
    run: FeedRun, conditions: dict[str, Any], counts: FeedCounts, timings: _Timings, cpu_s: float
) -> dict[str, Any]:
    import polars as pl

    run.out_dir.mkdir(parents=True, exist_ok=True)
    pl.DataFrame(timings.reads, schema={c: pl.Int64 for c in timings.reads}).write_parquet(
        run.out_dir / "reads.parquet"
    )
    pl.DataFrame(timings.own, schema={c: pl.Int64 for c in timings.own}).write_parquet(
        run.out_dir / "messages.parquet"
    )
    stages = {}
    for stage, values in timings.stages.items():
        counts_ns = counts_of_ns(values)
        write_text(run.out_dir / f"{stage}.hgrm", hgrm_text(counts_ns))
        stages[stage] = summary_us(to_hdr(counts_ns))
    batch = np.asarray(timings.batch, dtype=np.int64)
    summary = {
        "conditions": {**conditions, "duration_s": run.duration_s, "warmup_s": run.warmup_s},
        "counts": vars(counts),
        "stages_us": stages,
        "messages_per_read": {
            "mean_weighted_by_message": float((batch**2).sum() / batch.sum())
            if batch.size
            else 0.0,
            "reads": int(batch.size),
            "max": int(batch.max()) if batch.size else 0,
        },
        "client_cpu_s": cpu_s,
        "achieved_msgs_per_s": counts.recorded / run.duration_s,
    }
    write_json(run.out_dir / "summary.json", summary)
    return summary
