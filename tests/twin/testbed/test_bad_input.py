"""Bad input against the live gateway: it rejects or closes that connection, and keeps serving."""

from __future__ import annotations

import os
import socket
import time

import numpy as np
import pytest

from twin.testbed import protocol as P

pytestmark = [pytest.mark.timeout(120), pytest.mark.exclusive]


def _connect(port: int) -> socket.socket:
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


def _recv_frames(s: socket.socket, n: int) -> np.ndarray:
    data = b""
    while len(data) < n * P.FRAME_BYTES:
        chunk = s.recv(65536)
        if not chunk:
            break
        data += chunk
    return P.decode(data)


def _order(seq: int, oid: int, msg_type: int = P.MSG_NEW) -> np.ndarray:
    f = P.new_frames(1)
    f["seq"] = seq
    f["msg_type"] = msg_type
    f["order_id"] = oid
    f["price_ticks"] = 99_000
    f["qty_lots"] = 1
    f["account"] = 1
    f["client_ts_ns"] = 12345
    return f


def _well_behaved_round_trip(port: int) -> None:
    """A fresh client can still place and cancel an order."""
    with _connect(port) as s:
        s.sendall(_order(1, 7).tobytes())
        (ack,) = _recv_frames(s, 1)
        assert ack["msg_type"] == P.MSG_ACK and ack["ref_seq"] == 1
        assert ack["client_ts_ns"] == 12345
        s.sendall(_order(2, 7, P.MSG_CANCEL).tobytes())
        (cack,) = _recv_frames(s, 1)
        assert cack["msg_type"] == P.MSG_CANCEL_ACK and cack["seq"] == 2


def _closed_by_gateway(s: socket.socket) -> bool:
    s.settimeout(5)
    try:
        while s.recv(65536):
            pass
    except ConnectionResetError:
        pass
    return True


def test_order_cancel_round_trip(gateway):
    _well_behaved_round_trip(gateway[1])


def test_random_bytes_get_a_reject_and_a_close(gateway):
    rng = np.random.default_rng(5)
    for _ in range(5):
        with _connect(gateway[1]) as s:
            s.sendall(rng.integers(0, 256, 3 * P.FRAME_BYTES, dtype=np.uint8).tobytes())
            frames = _recv_frames(s, 1)
            assert frames.shape[0] >= 1
            assert frames[0]["msg_type"] == P.MSG_REJECT
            assert frames[0]["code"] in (P.REJ_BAD_MAGIC, P.REJ_BAD_LENGTH)
            assert _closed_by_gateway(s)
    _well_behaved_round_trip(gateway[1])


def test_wrong_length_is_rejected_and_closed(gateway):
    with _connect(gateway[1]) as s:
        f = _order(1, 1)
        f["length"] = 4096  # an "oversized" message
        s.sendall(f.tobytes())
        (rej,) = _recv_frames(s, 1)
        assert rej["msg_type"] == P.MSG_REJECT and rej["code"] == P.REJ_BAD_LENGTH
        assert _closed_by_gateway(s)
    _well_behaved_round_trip(gateway[1])


def test_unknown_type_gap_and_bad_id_are_rejected_connection_goes_on(gateway):
    with _connect(gateway[1]) as s:
        s.sendall(_order(1, 1, msg_type=9).tobytes())
        s.sendall(_order(5, 1).tobytes())  # sequence gap: 2 expected
        s.sendall(_order(6, P.ORDER_IDS_PER_CONNECTION).tobytes())
        s.sendall(_order(7, 2, P.MSG_CANCEL).tobytes())  # nothing to cancel: engine reject
        s.sendall(_order(8, 3).tobytes())
        r = _recv_frames(s, 5)
        codes = [(int(x["msg_type"]), int(x["code"])) for x in r]
        assert codes[0] == (P.MSG_REJECT, P.REJ_UNKNOWN_TYPE)
        assert codes[1] == (P.MSG_REJECT, P.REJ_SEQUENCE_GAP)
        assert codes[2] == (P.MSG_REJECT, P.REJ_BAD_ORDER_ID)
        assert codes[3][0] == P.MSG_REJECT and codes[3][1] < 100  # engine_ext REJ_UNKNOWN_ORDER
        assert codes[4][0] == P.MSG_ACK
        assert list(r["seq"]) == [1, 2, 3, 4, 5]


def test_truncated_frame_then_close(gateway):
    with _connect(gateway[1]) as s:
        s.sendall(_order(1, 1).tobytes()[:50])
        s.shutdown(socket.SHUT_WR)
        assert _recv_frames(s, 1).shape[0] == 0
    _well_behaved_round_trip(gateway[1])


def test_frames_split_across_writes_are_reassembled(gateway):
    with _connect(gateway[1]) as s:
        data = _order(1, 9).tobytes() + _order(2, 9, P.MSG_CANCEL).tobytes()
        for i in range(0, len(data), 7):
            s.sendall(data[i : i + 7])
            time.sleep(0.001)
        r = _recv_frames(s, 2)
        assert [int(x["msg_type"]) for x in r] == [P.MSG_ACK, P.MSG_CANCEL_ACK]


def test_client_that_never_reads_does_not_stall_others(gateway):
    """A client floods orders and never reads: others keep being served promptly."""
    hog = _connect(gateway[1])
    hog.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    hog.setblocking(False)
    frames = P.new_frames(2048)
    frames["msg_type"] = P.MSG_CANCEL  # cancels of unknown orders: each answered by a reject
    frames["order_id"] = 1
    frames["account"] = 1
    seq = 1
    deadline = time.monotonic() + 3.0
    try:
        while time.monotonic() < deadline:
            frames["seq"] = np.arange(seq, seq + frames.shape[0])
            try:
                hog.send(frames.tobytes())
                seq += frames.shape[0]
            except BlockingIOError:
                break  # the gateway stopped reading us: backpressure on this client only
        start = time.monotonic()
        _well_behaved_round_trip(gateway[1])
        assert time.monotonic() - start < 2.0
    finally:
        hog.close()
    _well_behaved_round_trip(gateway[1])


def test_half_open_clients_do_not_stall_others(gateway):
    idle = [_connect(gateway[1]) for _ in range(20)]
    try:
        idle[0].sendall(_order(1, 1).tobytes()[:60])  # half a frame, then silence
        _well_behaved_round_trip(gateway[1])
    finally:
        for s in idle:
            s.close()


def test_many_connections(gateway):
    socks = [_connect(gateway[1]) for _ in range(100)]
    try:
        for s in socks:
            s.sendall(_order(1, 1).tobytes())
        for s in socks:
            (ack,) = _recv_frames(s, 1)
            assert ack["msg_type"] == P.MSG_ACK
    finally:
        for s in socks:
            s.close()


def test_sigterm_drains_and_exits_cleanly(tmp_path):
    from twin.testbed.campaign import gateway_process

    with gateway_process() as (proc, port):
        s = _connect(port)
        s.sendall(_order(1, 1).tobytes())
        assert _recv_frames(s, 1)[0]["msg_type"] == P.MSG_ACK
        proc.terminate()
        proc.wait(timeout=20)
        assert _closed_by_gateway(s)
        s.close()
    assert proc.returncode == 0
    assert os.path.exists(tmp_path)


def test_an_idle_flood_cannot_lock_clients_out() -> None:
    """Issue 21: 1,030 idle connections took every slot and the next client was refused. Now one
    source holds at most --max-per-source connections, and those that send nothing are closed
    after --handshake-timeout: a good client gets in within a few seconds and is served."""
    from twin.testbed.campaign import gateway_process

    options = ["--handshake-timeout", "1", "--max-per-source", "256"]
    with gateway_process(options=options) as (_, port):
        flood = []
        refused = 0
        for _ in range(300):
            try:
                flood.append(_connect(port))
            except OSError:
                refused += 1
        try:
            started = time.monotonic()
            for s in flood[256:]:  # over the source cap: aborted at once, not at the timeout
                assert _closed_by_gateway(s)
            assert time.monotonic() - started < 0.9 and len(flood) + refused == 300
            deadline = time.monotonic() + 10
            while True:  # the idle ones are closed within the handshake timeout
                try:
                    _well_behaved_round_trip(port)
                    break
                except (OSError, ValueError, AssertionError):
                    assert time.monotonic() < deadline, "a good client stayed locked out"
                    time.sleep(0.2)
            for s in flood[:256]:
                assert _closed_by_gateway(s)  # closed by the handshake timeout
        finally:
            for s in flood:
                s.close()


def test_the_load_client_reports_a_vanished_gateway_in_one_line(tmp_path) -> None:
    """Issue 21: the well-behaved client crashed with a traceback when the gateway closed."""
    import signal
    import subprocess
    import sys

    from twin.testbed.campaign import gateway_process

    out = tmp_path / "run"
    with gateway_process() as (gateway, port):
        client = subprocess.Popen(
            [sys.executable, "-m", "twin", "testbed", "load", "--connect", f"127.0.0.1:{port}",
             "--rate", "2000", "--duration", "30", "--warmup", "0.1", "--out", str(out)],
            stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        try:
            deadline = time.monotonic() + 60
            while not _has_clients(gateway.pid) and time.monotonic() < deadline:
                time.sleep(0.1)
            time.sleep(0.5)
            gateway.send_signal(signal.SIGKILL)
            _, err = client.communicate(timeout=60)
        finally:
            if client.poll() is None:
                client.kill()
                client.wait()
    assert client.returncode == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "the gateway" in lines[0] and "Traceback" not in err
    assert not (out / "summary.json").exists()  # no summary: the run is not taken as finished


def _has_clients(pid: int) -> bool:
    """True once the gateway process has an established TCP connection (the client's)."""
    try:
        with open(f"/proc/{pid}/net/tcp") as fh:
            return any(line.split()[3] == "01" for line in fh.readlines()[1:])
    except OSError:
        return False


def test_the_load_client_reports_no_gateway_in_one_line(tmp_path) -> None:
    """A load client pointed at a port where nothing listens: one line, exit 2."""
    import subprocess
    import sys

    with socket.socket() as probe:  # a port that was free a moment ago
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    done = subprocess.run(
        [sys.executable, "-m", "twin", "testbed", "load", "--connect", f"127.0.0.1:{port}",
         "--rate", "1000", "--duration", "1", "--out", str(tmp_path / "run")],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 2
    (line,) = done.stderr.strip().splitlines()
    assert f"cannot reach the gateway at 127.0.0.1:{port}" in line
