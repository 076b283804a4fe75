"""The halt law read off a halt probe (:mod:`calibration.halt`)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from calibration.halt import HALT_PROBE, halt_law, halt_parameters
from calibration.matrix import host_parameters
from twin.errors import MeasurementError


def _probe(path: Path, share: float, tau_us: float, halted_us: float, waiter: str = "spins"):
    """A probe whose samples lie exactly on the law, at idle times 0.5-150 us."""
    rng = np.random.default_rng(3)
    idle = rng.uniform(0.5, 150.0, 2000)
    latency = halted_us * (1.0 - share * np.exp(-idle / tau_us))
    path.write_text(
        json.dumps(
            {
                "waiter": waiter,
                "latency_us": {"0.0": latency.tolist()},
                "idle_us": {"0.0": idle.tolist()},
            }
        )
    )
    return path


def test_the_law_is_recovered_from_samples_on_it(tmp_path: Path) -> None:
    share, tau, halted = halt_law(_probe(tmp_path / "p.json", 0.6, 6.0, 30.0))
    # Binned medians of the law itself: close, not exact (a bin's median idle is not its mean).
    assert share == pytest.approx(0.6, rel=0.05)
    assert tau == pytest.approx(6.0, rel=0.1)
    assert halted == pytest.approx(30.0, rel=0.01)


def test_a_probe_whose_sender_blocked_is_refused(tmp_path: Path) -> None:
    path = _probe(tmp_path / "blocked.json", 0.6, 6.0, 30.0, waiter="blocks")
    with pytest.raises(MeasurementError, match="blocked.json: not a halt probe"):
        halt_parameters(path)


def test_the_committed_probe_gives_a_halt_time_of_microseconds() -> None:
    """This VM (2026-11-25): a vCPU idle for several microseconds has halted."""
    share, tau, halted = halt_law(HALT_PROBE)
    assert 0.3 < share < 0.9 and 1.0 < tau < 20.0 and 15.0 < halted < 60.0


def test_a_corpus_without_a_halt_probe_takes_the_committed_one(tmp_path: Path) -> None:
    (tmp_path / "manifest.json").write_text("{}")
    params = host_parameters(tmp_path)
    share, tau, _ = halt_law(HALT_PROBE)
    assert params["local_vcpu_halt_share"].value == pytest.approx(share)
    assert params["local_vcpu_halt_tau_us"].value == pytest.approx(tau)
    assert "wakeprobe_halt.json" in params["local_vcpu_halt_tau_us"].source
    assert math.isfinite(params["local_wake_cold_us"].value)
