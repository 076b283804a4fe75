"""Fuzzing the inputs a user hands the twin: every one is accepted or refused in one line.

Seeded (derandomized) Hypothesis runs, bounded for ``make test``; ``TWIN_FUZZ_EXAMPLES=N`` runs
N examples per class instead. Each class mutates real files (the shipped scenarios, sweep files
and benchmark fixtures) with hostile values: huge, tiny, negative and non-finite numbers,
strings with newlines and control characters, wrong types, deep nesting, truncation. The
contract (issue 21): the CLI exits 0 or 2, and on 2 prints exactly one line naming the file;
a reader returns a Measurement or raises MeasurementError; nothing raises anything else. The
live gateway gets hostile frames (straight into its compiled hot path: each answered once, the
engine's books sound after every read) and hostile connection patterns from several source
addresses (a fresh client is served afterwards).
"""

from __future__ import annotations

import os
import re
import socket
import struct
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from calibration import read
from engine_ext.types import C_FREE_TOP, C_N_LIVE
from twin.cli import main
from twin.errors import MeasurementError
from twin.testbed import _kernel
from twin.testbed import protocol as P
from twin.testbed.campaign import gateway_process
from twin.testbed.gateway import Gateway, GatewayLimits

REPO = Path(__file__).resolve().parents[1]
SCENARIOS = sorted((REPO / "scenarios").glob("*.toml"))
SWEEPS = sorted((REPO / "scenarios" / "sweeps").glob("*.toml"))
FIXTURES = REPO / "tests" / "calibration" / "fixtures"
BENCHMARKS = sorted(
    p
    for p in FIXTURES.iterdir()
    if p.is_file() and p.suffix in (".txt", ".csv", ".hgrm", ".hdr", ".hlog")
)
EXAMPLES = int(os.environ.get("TWIN_FUZZ_EXAMPLES", "60"))
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

# Hostile TOML values: what a typo, a copy-paste or an attacker puts after "key = ".
TOML_VALUES = st.sampled_from(
    [
        "1e308",
        "-1e308",
        "5e-324",
        "0",
        "-1",
        "1e9",
        "nan",
        "inf",
        "-inf",
        "9" * 30,
        '"x\\ny"',
        '"use1-az4\\n"',
        '"\\u0000"',
        '""',
        "[]",
        "[1, 2]",
        "{}",
        "true",
        '"../../../etc/passwd"',
        "[" * 200 + "]" * 200,
        "1979-05-27T07:32:00Z",
    ]
)
ASSIGNMENT = re.compile(r"(?m)^([A-Za-z_][A-Za-z0-9_.\"-]*) = .*$")


def _assign(text: str, key: str, value: str) -> str:
    """``text`` with the first ``key = ...`` line set to ``value`` (taken literally)."""
    line = re.compile(rf"(?m)^{re.escape(key)} = .*$")
    return line.sub(lambda _: f"{key} = {value}", text, count=1)


def _one_line_or_ok(code: int, err: str, name: str) -> None:
    assert code in (0, 2), (code, err)
    if code == 2:
        assert err.count("\n") == 1 and name in err, err


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda p: p.stem)
@FUZZ
@given(data=st.data())
def test_mutated_scenarios_are_accepted_or_refused_in_one_line(tmp_path, capsys, scenario, data):
    text = scenario.read_text()
    lines = ASSIGNMENT.findall(text)
    key = data.draw(st.sampled_from(lines))
    value = data.draw(TOML_VALUES)
    mutated = _assign(text, key, value)
    path = tmp_path / "fuzzed.toml"
    path.write_text(mutated)
    code = main(["check", str(path)])
    _one_line_or_ok(code, capsys.readouterr().err, "fuzzed.toml")


@pytest.mark.parametrize("sweep", SWEEPS, ids=lambda p: p.stem)
@FUZZ
@given(data=st.data())
def test_mutated_sweeps_are_accepted_or_refused_in_one_line(tmp_path, sweep, data):
    from twin.errors import TwinError
    from twin.sweep.spec import load_sweep

    text = sweep.read_text().replace('"../', f'"{REPO / "scenarios"}/')
    key = data.draw(st.sampled_from(ASSIGNMENT.findall(text)))
    value = data.draw(TOML_VALUES)
    mutated = _assign(text, key, value)
    path = tmp_path / "fuzzed_sweep.toml"
    path.write_text(mutated)
    try:
        load_sweep(path)
    except TwinError as exc:
        message = str(exc)
        assert "\n" not in message and "fuzzed_sweep.toml" in message, message


NUMBER = re.compile(r"\d+(?:\.\d+)?")
NUMBER_TOKENS = st.sampled_from(
    ["1e400", "-5", "nan", "inf", "1e308", "0", "999999999999999999999", "", "x", "1..2"]
)


@pytest.mark.parametrize("fixture", BENCHMARKS, ids=lambda p: p.name)
@FUZZ
@given(data=st.data())
def test_mutated_benchmark_files_read_or_fail_with_a_line(tmp_path, fixture, data):
    text = fixture.read_text(encoding="utf-8", errors="replace")
    how = data.draw(st.sampled_from(["number", "truncate", "duplicate"]))
    if how == "number" and NUMBER.search(text):
        spans = [m.span() for m in NUMBER.finditer(text)]
        start, end = data.draw(st.sampled_from(spans))
        text = text[:start] + data.draw(NUMBER_TOKENS) + text[end:]
    elif how == "truncate":
        text = text[: data.draw(st.integers(0, len(text)))]
    else:
        lines = text.splitlines(keepends=True)
        k = data.draw(st.integers(0, max(0, len(lines) - 1)))
        text = "".join(lines[: k + 1] + lines[k:])
    path = tmp_path / f"fuzzed{fixture.suffix}"
    path.write_text(text)
    try:
        read(path)
    except MeasurementError as exc:
        assert "\n" not in str(exc) and "fuzzed" in str(exc), str(exc)


# --- the live gateway: frames and connection patterns ---------------------------------------
FRAME_FIELDS = {
    "magic": st.sampled_from([P.MAGIC] * 8 + [0, 0xFFFF]),
    "version": st.sampled_from([P.VERSION] * 8 + [0, 255]),
    "length": st.sampled_from([P.FRAME_BYTES] * 8 + [0, 119, 65535]),
    "msg_type": st.sampled_from([P.MSG_NEW, P.MSG_CANCEL, P.MSG_NEW, 0, 3, 255]),
    "seq": st.one_of(st.just(-1), st.integers(0, 2**64 - 1)),  # -1: the expected next one
    "order_id": st.one_of(st.integers(0, 20), st.integers(-(2**63), 2**63 - 1)),
    "price_ticks": st.one_of(st.integers(97_000, 103_000), st.integers(-(2**63), 2**63 - 1)),
    "qty_lots": st.one_of(st.integers(1, 5), st.integers(-(2**63), 2**63 - 1)),
    "symbol": st.one_of(st.integers(0, 4), st.integers(-(2**31), 2**31 - 1)),
    "account": st.integers(-(2**31), 2**31 - 1),
    "side": st.integers(0, 255),
    "order_type": st.integers(0, 255),
    "stp": st.integers(0, 255),
}
FRAMES = st.lists(st.fixed_dictionaries(FRAME_FIELDS), min_size=1, max_size=40)


def _wire(rows: list[dict], next_seq: int) -> np.ndarray:
    frames = np.zeros(len(rows), dtype=P.WIRE_DTYPE)
    for i, row in enumerate(rows):
        for name, value in row.items():
            frames[i][name] = next_seq + i if name == "seq" and value == -1 else value
    return frames


def _sound(gw: Gateway) -> None:
    """The engine's own books add up after anything the wire sent."""
    st_ = gw.state
    live = int(st_.counters[C_N_LIVE])
    assert live == int((st_.order_index >= 0).sum())
    assert int(st_.counters[C_FREE_TOP]) + live == gw.config.capacity_orders
    assert int(st_.accounts["open_orders"].sum()) == live
    assert int(st_.accounts["open_orders"].max()) <= gw.config.max_open_orders


@FUZZ
@given(batches=st.lists(st.tuples(st.integers(0, 2), FRAMES), min_size=1, max_size=6))
def test_random_frames_are_each_answered_once_and_the_book_stays_sound(batches):
    """Hostile frames from three connections (two of one source) straight into the gateway's
    compiled hot path: every frame is answered exactly once until framing is lost, a lost
    framing is answered with one reject, and the engine's books add up after every read."""
    gw = Gateway(GatewayLimits(max_open_orders=8))
    accounts = [gw.join("10.0.0.1"), gw.join("10.0.0.1"), gw.join("10.0.0.2")]
    conns = [_kernel.empty_connection_state() for _ in accounts]
    for conn_index, rows in batches:
        conn = conns[conn_index]
        frames = _wire(rows, int(conn[_kernel.S_EXPECT_SEQ]))
        out = np.zeros(len(frames), dtype=P.WIRE_DTYPE)
        status, k = _kernel.handle_frames(
            gw.state, frames, conn_index, accounts[conn_index], conn, out, gw.events
        )
        replies = out[:k]
        assert (replies["ref_seq"] == frames["seq"][:k]).all()
        assert set(replies["msg_type"].tolist()) <= {P.MSG_ACK, P.MSG_CANCEL_ACK, P.MSG_REJECT}
        if status == _kernel.STATUS_OK:
            assert k == len(frames)
        else:
            assert replies["code"][-1] in (P.REJ_BAD_MAGIC, P.REJ_BAD_LENGTH)
            conns[conn_index] = _kernel.empty_connection_state()  # the gateway closes it
            _kernel.cancel_connection(gw.state, conn_index, gw.events)
        _sound(gw)
    for slot in range(len(conns)):
        _kernel.cancel_connection(gw.state, slot, gw.events)
    assert int(gw.state.counters[C_N_LIVE]) == 0
    _sound(gw)


@pytest.fixture(scope="module")
def live_gateway():
    with gateway_process(options=["--handshake-timeout", "2"]) as (_, port):
        yield port


ACTIONS = st.lists(
    st.tuples(
        st.sampled_from(["connect", "frames", "bytes", "half", "close", "reset"]),
        st.integers(0, 2),  # which source address
        st.binary(max_size=300),
        st.integers(1, 30),
    ),
    max_size=25,
)


@settings(FUZZ, max_examples=max(10, EXAMPLES // 3))
@given(actions=ACTIONS)
def test_connection_patterns_leave_the_gateway_serving_others(live_gateway, actions):
    """Connects, valid and partial frames, garbage, half-closes, closes and resets from three
    source addresses in any order: afterwards a fresh client is still served."""
    socks: list[tuple[socket.socket, int]] = []
    try:
        for action, source, payload, n in actions:
            if action == "connect" or not socks:
                s = socket.socket()
                s.bind((f"127.0.0.{2 + source}", 0))
                s.settimeout(2)
                s.connect(("127.0.0.1", live_gateway))
                socks.append((s, 1))
                continue
            index = source % len(socks)
            s, seq = socks[index]
            try:
                if action == "frames":
                    frames = P.new_frames(n)
                    frames["msg_type"] = P.MSG_NEW
                    frames["seq"] = np.arange(seq, seq + n)
                    frames["order_id"] = np.arange(n)
                    frames["price_ticks"] = 99_000
                    frames["qty_lots"] = 1
                    s.sendall(frames.tobytes()[: len(frames.tobytes()) - len(payload) % 60])
                    socks[index] = (s, seq + n)
                elif action == "bytes":
                    s.sendall(payload)
                elif action == "half":
                    s.shutdown(socket.SHUT_WR)
                elif action == "close":
                    s.close()
                    socks.pop(index)
                else:
                    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                    s.close()
                    socks.pop(index)
            except OSError:  # the gateway closed it first (bad framing): allowed
                s.close()
                socks.pop(index)
    finally:
        for s, _ in socks:
            s.close()
    with socket.create_connection(("127.0.0.1", live_gateway), timeout=5) as good:
        frame = P.new_frames(1)
        frame["msg_type"], frame["seq"], frame["price_ticks"], frame["qty_lots"] = (
            P.MSG_NEW, 1, 99_000, 1
        )  # fmt: skip
        good.sendall(frame.tobytes())
        data = b""
        while len(data) < P.FRAME_BYTES:
            chunk = good.recv(4096)
            assert chunk, "the gateway closed a good client"
            data += chunk
        assert P.decode(data)["msg_type"].tolist() == [P.MSG_ACK]
