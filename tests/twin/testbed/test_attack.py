"""Issue 21: clients protected from each other on the live gateway.

Attackers connect from other loopback source addresses (127.0.0.2..4), as other hosts would,
while a well-behaved load client runs from 127.0.0.1: an idle flood, a client filling the book
and a client sending far prices. The good client must keep at least 95% of the answered rate it
gets from the same gateway unattacked, with none of its orders rejected.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from engine_ext.types import REJ_MAX_OPEN_ORDERS, REJ_OUT_OF_WINDOW, REJ_PRICE_BAND
from twin.testbed import protocol as P
from twin.testbed.campaign import gateway_process
from twin.testbed.gateway import MAX_OPEN_ORDERS, Gateway

pytestmark = [pytest.mark.timeout(240), pytest.mark.exclusive]

FILLER, FLOODER, FAR = "127.0.0.2", "127.0.0.3", "127.0.0.4"
BOOK_ROWS = Gateway().config.capacity_orders


def _connect(port: int, source: str) -> socket.socket:
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind((source, 0))
    s.settimeout(5)
    s.connect(("127.0.0.1", port))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


def _orders(first_seq: int, prices: np.ndarray, symbol: int = 0) -> bytes:
    """GTC buy orders at ``prices``, order ids 0.. and sequence numbers from ``first_seq``."""
    f = P.new_frames(len(prices))
    f["msg_type"] = P.MSG_NEW
    f["seq"] = np.arange(first_seq, first_seq + len(prices))
    f["order_id"] = np.arange(len(prices))
    f["price_ticks"] = prices
    f["qty_lots"] = 1
    f["symbol"] = symbol
    return f.tobytes()


def _replies(s: socket.socket, n: int) -> np.ndarray:
    data = b""
    while len(data) < n * P.FRAME_BYTES:
        chunk = s.recv(1 << 20)
        if not chunk:
            break
        data += chunk
    return P.decode(data)


def _fill_book(port: int, connections: int, per_connection: int) -> list[np.ndarray]:
    """Open ``connections`` from the filler's address, each sending ``per_connection`` resting
    orders; return each connection's replies (the sockets stay open: the orders stay)."""
    out = []
    prices = 99_999 - (np.arange(per_connection) % 1_500)  # inside the window, below the market
    for _ in range(connections):
        s = _connect(port, FILLER)
        s.sendall(_orders(1, prices))
        out.append((s, _replies(s, per_connection)))
    return out


def test_one_source_filling_the_book_rejects_only_its_own_orders() -> None:
    """Before: one client rested 65,536 orders and every other client's orders were rejected.
    Now a source rests at most ``--max-open-orders`` per symbol; the rest of its orders are
    refused with REJ_MAX_OPEN_ORDERS, and another source still rests and cancels."""
    with gateway_process() as (_, port):
        filled = _fill_book(port, connections=BOOK_ROWS // 4096 + 1, per_connection=4096)
        try:
            replies = np.concatenate([r for _, r in filled])
            assert len(replies) == len(filled) * 4096
            acked = int((replies["msg_type"] == P.MSG_ACK).sum())
            capped = int(
                (
                    (replies["msg_type"] == P.MSG_REJECT) & (replies["code"] == REJ_MAX_OPEN_ORDERS)
                ).sum()
            )
            assert acked == MAX_OPEN_ORDERS and capped == len(replies) - acked
            with _connect(port, "127.0.0.1") as good:
                good.sendall(_orders(1, np.full(100, 99_000)))
                answers = _replies(good, 100)
                assert (answers["msg_type"] == P.MSG_ACK).all()
                # Each reply names the CPU its read ran on, one of the host's.
                assert set(answers["gateway_cpu"].tolist()) <= set(os.sched_getaffinity(0))
            # A closed connection's orders are cancelled: the source may rest again.
            filled[0][0].close()
            time.sleep(0.3)
            s, _ = filled[1]
            s.sendall(_orders(4097, np.full(1, 99_000)))
            assert _replies(s, 1)["msg_type"].tolist() == [P.MSG_ACK]
        finally:
            for s, _ in filled:
                s.close()


def test_a_far_price_from_another_connection_does_not_move_the_window() -> None:
    """Before: one order at a far price re-centred the window of an empty book and a good
    client's orders were rejected as out of window."""
    with gateway_process() as (_, port):
        with _connect(port, FAR) as far:
            far.sendall(_orders(1, np.array([1, 100_000 + 3_000, 100_000 - 2_500, 1 << 50])))
            codes = _replies(far, 4)["code"].tolist()
            assert codes == [REJ_OUT_OF_WINDOW] * 3 + [REJ_PRICE_BAND]
        with _connect(port, "127.0.0.1") as good:
            good.sendall(_orders(1, np.array([99_000, 101_000 - 2, 98_000])))
            assert (_replies(good, 3)["msg_type"] == P.MSG_ACK).all()


class _Attack:
    """An idle flood, a book filler and a far-price sender, in threads, until stopped."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.stop = threading.Event()
        self.counts = {"flood_connects": 0, "filler_orders": 0, "far_orders": 0}
        self.threads = [
            threading.Thread(target=run, daemon=True)
            for run in (self._flood, self._filler, self._far)
        ]

    def __enter__(self) -> _Attack:
        for t in self.threads:
            t.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        for t in self.threads:
            t.join(timeout=30)

    def _flood(self) -> None:
        """Hold as many idle connections as the gateway lets one source have, reopening the
        ones it closes."""
        held: list[socket.socket] = []
        while not self.stop.is_set():
            try:
                while len(held) < 300:
                    held.append(_connect(self.port, FLOODER))
                    self.counts["flood_connects"] += 1
            except OSError:
                pass
            for s in list(held):
                s.setblocking(False)
                try:
                    if s.recv(1) == b"":
                        raise ConnectionResetError
                except BlockingIOError:
                    continue
                except OSError:
                    pass
                s.close()
                held.remove(s)
            self.stop.wait(0.2)
        for s in held:
            s.close()

    def _filler(self) -> None:
        """Send more resting orders than the whole book holds, then keep sending."""
        filled = _fill_book(self.port, connections=BOOK_ROWS // 4096 + 1, per_connection=4096)
        self.counts["filler_orders"] += len(filled) * 4096
        s = filled[-1][0]
        seq = 4097
        prices = 99_999 - np.arange(100)
        try:
            while not self.stop.is_set():
                s.sendall(_orders(seq, prices))  # over the source's limit: rejected
                _replies(s, 100)
                seq += 100
                self.counts["filler_orders"] += 100
                self.stop.wait(0.05)
        finally:
            for c, _ in filled:
                c.close()

    def _far(self) -> None:
        """Orders at far prices, 2,000 per second."""
        with _connect(self.port, FAR) as s:
            seq = 1
            far = np.array([1, 102_500, 97_000, 1 << 50] * 25)
            while not self.stop.is_set():
                s.sendall(_orders(seq, far))
                _replies(s, len(far))
                seq += len(far)
                self.counts["far_orders"] += len(far)
                self.stop.wait(0.05)


def _good_client(port: int, out: Path) -> dict:
    subprocess.run(
        [sys.executable, "-m", "twin", "testbed", "load", "--connect", f"127.0.0.1:{port}",
         "--rate", "4000", "--duration", "3", "--warmup", "0.5", "--seed", "3",
         "--out", str(out)],
        check=True, capture_output=True, timeout=120,
    )  # fmt: skip
    return json.loads((out / "summary.json").read_text())


def test_a_good_client_keeps_its_answered_rate_under_attack(tmp_path) -> None:
    with gateway_process(options=["--handshake-timeout", "1"]) as (_, port):
        calm = _good_client(port, tmp_path / "calm")
        with _Attack(port) as attack:
            time.sleep(1.0)  # the book is full and the flood holds its connections
            attacked = _good_client(port, tmp_path / "attacked")
        assert attack.counts["flood_connects"] >= 256
        assert attack.counts["filler_orders"] > BOOK_ROWS and attack.counts["far_orders"] > 1000
    rate, base = attacked["achieved_msgs_per_s"], calm["achieved_msgs_per_s"]
    assert rate >= 0.95 * base, (rate, base, attack.counts)
    assert attacked["counts"]["order_rejects"] == 0 and attacked["lost"] == 0
