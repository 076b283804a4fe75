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
