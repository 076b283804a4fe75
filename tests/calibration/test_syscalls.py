"""The syscall probe's reader (:mod:`calibration.syscalls`): the committed probe, and refusals."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from calibration.syscalls import SYSCALL_PROBE, per_read_share, read_probe, send_cost
from twin.errors import MeasurementError
from twin.kinds import Transport


def test_the_committed_probe_says_what_its_parts_say() -> None:
    probe = read_probe()
    tcp = Transport.TCP
    per_read = probe.poll_us[tcp] + probe.recv_one_us[tcp]
    assert probe.read_share == pytest.approx(per_read / (per_read + probe.send_us[tcp]))
    share = per_read_share()
    assert share.value == probe.read_share and SYSCALL_PROBE.name in share.source
    for transport in Transport:
        cost = send_cost(transport)
        assert cost.value == probe.send_us[transport] > 0
        assert str(transport) in cost.source


def _write(tmp_path: Path, data: object) -> Path:
    path = tmp_path / "syscalls.json"
    path.write_text(json.dumps(data))
    return path


def test_a_file_that_is_no_probes_is_refused_by_name(tmp_path: Path) -> None:
    good = json.loads(SYSCALL_PROBE.read_text())
    del good["transports"]["udp"]
    for bad in (_write(tmp_path, good), tmp_path / "missing.json"):
        with pytest.raises(MeasurementError, match=bad.name):
            read_probe(bad)
    good = json.loads(SYSCALL_PROBE.read_text())
    good["per_read_share"] = 1.5
    with pytest.raises(MeasurementError, match="per_read_share 1.5"):
        per_read_share(_write(tmp_path, good))


def test_a_corpus_takes_its_own_probe_over_the_committed_one(tmp_path: Path) -> None:
    """The matrix reads the probe the lab ran beside a corpus (manifest key ``syscalls``): a
    native TCP server's work a message is its own calls less that probe's share; a corpus
    without one takes the committed probe."""
    from calibration import matrix
    from twin.kinds import Sender
    from twin.profile import load_profile, resolve_profile_path

    root = Path(__file__).resolve().parents[2] / "calibration" / "data" / "load_2026-11-27"
    assert matrix.syscall_probe(root) == SYSCALL_PROBE
    (tmp_path / "manifest.json").write_text(json.dumps({"syscalls": "syscalls.json"}))
    probe = json.loads(SYSCALL_PROBE.read_text())
    probe["per_read_share"] = 0.25
    probe["transports"]["udp"]["send_us"] = 42.0
    (tmp_path / "syscalls.json").write_text(json.dumps(probe))
    ours = matrix.syscall_probe(tmp_path)
    assert ours == tmp_path / "syscalls.json"
    shipped = load_profile(resolve_profile_path("local"))
    tcp = next(s for s in matrix.load_corpus(root) if s.name == "sockperf-tcp-loopback")
    whole = matrix.native_work(tcp, Sender.SPINNING)["local_gateway_work_marginal_us"].value
    prior, _ = matrix.measured_prior(tcp, shipped, syscalls=ours)
    assert prior.value("local_gateway_work_marginal_us") == pytest.approx(0.75 * whole)
    # Where the runs do not state the receiver's own calls, the sender's send is the probe's.
    older = next(
        s for s in matrix.load_corpus(root.parent / "load") if s.name == "sockperf-udp-loopback"
    )
    prior, _ = matrix.measured_prior(older, shipped, syscalls=ours)
    assert prior.value("local_sender_send_us") == 42.0
