"""A market-data feed server: exchange-like JSON depth updates over TLS WebSocket, in bursts.

One asyncio server (Python's ``ssl``, a certificate made for the run) accepts WebSocket clients
and sends each one ``rate`` messages per second in bursts: burst ``i`` has ``bursts[i % len]``
messages (one size, or a cycle of sizes for a calibration run), written together so they arrive
in one read at the client, as an exchange's updates for several symbols or levels do. Bursts
start evenly spaced, ``mean burst / rate`` apart. Each
message is a Binance-style ``depthUpdate`` carrying its send time (``t``, CLOCK_MONOTONIC
nanoseconds: the client on the same host measures the wire and wake-up time from it), the time
its burst was due (``d``: asyncio wakes late, and bursts that fell due meanwhile leave together)
and a sequence number (``u``).

Faults for the client's robustness (``fault_every`` bursts, rotating): a text frame holding
invalid JSON, a frame header announcing more bytes than follow before the next frame
(truncated), and raw bytes written around TLS (a broken TLS record, which ends that
connection: the client reconnects).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import ssl
import subprocess
import sys
import time
from pathlib import Path

import orjson

from twin.testbed.wsframe import FrameError, server_response, text_frame

FAULTS = ("json", "truncated", "tls")
LEVELS = 5  # price levels per side in an update


def make_certificate(folder: Path) -> tuple[Path, Path]:
    """A self-signed certificate and key for ``localhost`` (Debian's openssl)."""
    cert, key = folder / "feed.pem", folder / "feed.key"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
         "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1",
         "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True,
    )  # fmt: skip
    return cert, key


def depth_update(seq: int, now_ns: int, due_ns: int) -> bytes:
    """One depth update (about 340 bytes of JSON), stamped with its send time and the time
    its burst was due (the server's own lateness: bursts due while it was late go together)."""
    mid = 100_000 + (seq % 97)
    bids = [
        [f"{mid - 0.1 * (i + 1):.1f}", f"{0.25 + 0.01 * ((seq + i) % 40):.3f}"]
        for i in range(LEVELS)
    ]
    asks = [
        [f"{mid + 0.1 * (i + 1):.1f}", f"{0.25 + 0.01 * ((seq * 3 + i) % 40):.3f}"]
        for i in range(LEVELS)
    ]
    return orjson.dumps(
        {"e": "depthUpdate", "E": now_ns // 1_000_000, "s": "BTCUSDT", "U": seq, "u": seq,
         "t": now_ns, "d": due_ns, "b": bids, "a": asks}
    )  # fmt: skip


async def _stream(
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    rate: float,
    bursts_cycle: tuple[int, ...],
    fault_every: int,
    stop: asyncio.Event,
) -> None:
    loop = asyncio.get_running_loop()
    period = sum(bursts_cycle) / len(bursts_cycle) / rate
    seq, bursts = 0, 0
    due = loop.time() + 0.05
    # The client never sends after its upgrade: a read that completes means it has gone.
    gone = asyncio.ensure_future(reader.read(1))
    try:
        while not stop.is_set() and not writer.is_closing() and not gone.done():
            delay = due - loop.time()
            if delay > 0:
                await asyncio.sleep(delay)
            now_ns = time.monotonic_ns()
            frames = []
            for _ in range(bursts_cycle[bursts % len(bursts_cycle)]):
                seq += 1
                frames.append(text_frame(depth_update(seq, now_ns, int(due * 1e9))))
            bursts += 1
            if fault_every and bursts % fault_every == 0:
                fault = FAULTS[(bursts // fault_every - 1) % len(FAULTS)]
                if fault == "json":
                    frames.append(text_frame(b'{"e": "depthUpdate", "u": '))
                elif fault == "truncated":
                    frames.append(text_frame(b"x" * 200)[:60])  # header says 200, 58 follow
                else:
                    writer.write(b"".join(frames))
                    await writer.drain()
                    raw = writer.get_extra_info("socket").fileno()
                    os.write(raw, b"\x17\x03\x03\x00\x10" + b"\x00" * 16)  # a record no key made
                    return
            writer.write(b"".join(frames))
            await writer.drain()
            due += period
    finally:
        gone.cancel()


async def serve(
    host: str,
    port: int,
    cert: Path,
    key: Path,
    rate: float,
    bursts: tuple[int, ...],
    fault_every: int = 0,
) -> None:
    """Serve the feed until SIGTERM; announce ``listening on HOST:PORT`` on stdout."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(str(cert), str(key))
    stop = asyncio.Event()

    async def client(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(
            ConnectionError, FrameError, asyncio.IncompleteReadError, ssl.SSLError
        ):
            request = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 5)
            writer.write(server_response(request))
            await writer.drain()
            await _stream(reader, writer, rate, bursts, fault_every, stop)
        writer.close()

    server = await asyncio.start_server(client, host, port, ssl=context)
    bound = server.sockets[0].getsockname()
    print(f"twin testbed feed: listening on {bound[0]}:{bound[1]}", flush=True)
    loop = asyncio.get_running_loop()
    import signal

    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    async with server:
        await stop.wait()


def main(argv: list[str]) -> None:
    """``python -m twin.testbed.feed_server HOST PORT CERT KEY RATE BURSTS FAULT_EVERY``
    (``BURSTS``: comma-separated sizes, cycled)."""
    host, port, cert, key, rate, burst_list, fault_every = argv
    bursts = tuple(int(n) for n in burst_list.split(","))
    asyncio.run(
        serve(host, int(port), Path(cert), Path(key), float(rate), bursts, int(fault_every))
    )


if __name__ == "__main__":
    main(sys.argv[1:])
