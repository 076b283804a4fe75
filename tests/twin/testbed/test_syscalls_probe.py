"""The system-call probe (twin testbed syscalls), live on this host's loopback."""

from __future__ import annotations

import json

import pytest

from twin.cli import main
from twin.testbed import cli as testbed_cli
from twin.testbed.syscalls import BATCHES, DEFAULT_PAYLOAD, DEFAULT_SAMPLES, measure_syscalls


def test_a_tcp_read_takes_every_message_waiting_and_a_udp_read_one() -> None:
    """Over TCP one read of sixteen waiting messages costs far less than sixteen reads of one
    (the stream coalesces); over UDP a read is a datagram, so sixteen cost more than four times
    one. Every part is positive once the clock's own cost is off, and the per-read share of a
    one-message round is a share."""
    result = measure_syscalls(samples=200)
    tcp, udp = result["transports"]["tcp"], result["transports"]["udp"]
    assert set(tcp["recv_us"]) == set(udp["recv_us"]) == {str(k) for k in BATCHES}
    for t in (tcp, udp):
        assert t["send_us"] > 0 and t["poll_us"] > 0
        assert all(us > 0 for us in t["recv_us"].values())
    assert tcp["recv_us"]["16"] < 4 * tcp["recv_us"]["1"]
    assert udp["recv_us"]["16"] > 4 * udp["recv_us"]["1"]
    share = (tcp["poll_us"] + tcp["recv_us"]["1"]) / (
        tcp["poll_us"] + tcp["recv_us"]["1"] + tcp["send_us"]
    )
    assert result["per_read_share"] == pytest.approx(share)
    assert 0 < result["per_read_share"] < 1
    assert result["clock_us"] > 0 and result["payload"] == DEFAULT_PAYLOAD


def test_the_command_writes_its_result_and_rejects_bad_counts(tmp_path, capsys) -> None:
    out = tmp_path / "syscalls.json"
    assert main(["testbed", "syscalls", "--out", str(out), "--samples", "50"]) == 0
    written = json.loads(out.read_text())
    assert written["tool"] == "twin testbed syscalls" and written["samples"] == 50
    assert "per read" in capsys.readouterr().out
    with pytest.raises(SystemExit) as exc:
        main(["testbed", "syscalls", "--out", str(out), "--samples", "0"])
    assert exc.value.code == 2
    assert "--samples" in capsys.readouterr().err
    assert testbed_cli.SYSCALL_SAMPLES == DEFAULT_SAMPLES
    assert testbed_cli.SYSCALL_PAYLOAD == DEFAULT_PAYLOAD
