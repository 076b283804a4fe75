"""A thread's cold start by how long it slept, fitted to a wake-up probe's receive CPU."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pytest

from calibration import matrix
from calibration.coldstart import CPU_PROBE, fit_cold_start, probe_cpu
from twin.errors import MeasurementError

REPO = Path(__file__).resolve().parents[2]
CORPUS = REPO / "calibration" / "data" / "load"


def _probe(path: Path, cpu: dict[float, float] | None) -> Path:
    body = {"tool": "twin testbed wakeprobe", "percentiles_us": {}}
    if cpu is not None:
        body["cpu_median_us"] = {str(g): v for g, v in cpu.items()}
    path.write_text(json.dumps(body))
    return path


def test_a_known_curve_comes_back(tmp_path: Path) -> None:
    """Medians on ``4 + 12 (1 - exp(-gap / 400))``: the fit returns its three numbers, from the
    gaps up to the longest asked for only (a 10 ms gap far off the curve changes nothing)."""
    gaps = (10.0, 30.0, 100.0, 300.0, 700.0, 1000.0)
    cpu = {g: 4.0 + 12.0 * -math.expm1(-g / 400.0) for g in gaps}
    cold = fit_cold_start(_probe(tmp_path / "p.json", {**cpu, 10_000.0: 500.0}), 1000.0)
    assert (cold.warm_us, cold.cold_us, cold.tau_us) == pytest.approx((4.0, 12.0, 400.0), rel=1e-4)
    assert cold.cpu_us(300.0) == pytest.approx(cpu[300.0], rel=1e-4)
    params = cold.parameters("local_gateway_work")
    assert params["local_gateway_work_cold_us"].value == cold.cold_us
    assert params["local_gateway_work_idle_us"].value == cold.tau_us
    assert "p.json" in params["local_gateway_work_cold_us"].source


def test_the_committed_probe_has_a_cold_start_within_the_lab_gaps() -> None:
    """This VM's probe: the receive's CPU grows with the sleep, on a time constant inside the
    lab's gaps (10 us to 1 ms)."""
    cpu = probe_cpu(CPU_PROBE)
    assert cpu is not None and cpu[1000.0] > cpu[10.0]
    cold = fit_cold_start(CPU_PROBE, matrix.COLD_START_GAP_US)
    assert cold.cold_us > 0 and 10.0 < cold.tau_us < matrix.COLD_START_GAP_US
    assert cold.cpu_us(1000.0) == pytest.approx(cpu[1000.0], rel=0.1)


def test_a_probe_that_cannot_give_a_cold_start_is_named(tmp_path: Path) -> None:
    no_cpu = _probe(tmp_path / "old.json", None)
    assert probe_cpu(no_cpu) is None
    with pytest.raises(MeasurementError, match="old.json: the wake-up probe did not read"):
        fit_cold_start(no_cpu, 1000.0)
    few = _probe(tmp_path / "few.json", {10.0: 5.0, 100.0: 6.0, 5000.0: 9.0})
    with pytest.raises(MeasurementError, match="few.json: 2 gaps up to 1000 us"):
        fit_cold_start(few, 1000.0)
    flat = _probe(tmp_path / "flat.json", {10.0: 6.0, 100.0: 6.0, 1000.0: 5.0})
    with pytest.raises(MeasurementError, match="flat.json: the receive's CPU does not grow"):
        fit_cold_start(flat, 1000.0)
    (tmp_path / "bad.json").write_text("{not json")
    with pytest.raises(MeasurementError, match="bad.json: not a wake-up probe"):
        probe_cpu(tmp_path / "bad.json")


def test_a_corpus_takes_its_own_probe_when_it_read_the_cpu(tmp_path: Path) -> None:
    """The committed corpus's probe did not read its CPU: the committed CPU probe stands in. A
    corpus whose probe did is fitted to its own."""
    assert "wakeprobe_cpu.json" in matrix.native_cold_start(CORPUS).source
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    shutil.copy(CORPUS / "manifest.json", corpus)
    gaps = (10.0, 100.0, 300.0, 1000.0)
    _probe(corpus / "wakeprobe.json", {g: 3.0 + 9.0 * -math.expm1(-g / 200.0) for g in gaps})
    own = matrix.native_cold_start(corpus)
    assert "wakeprobe.json" in own.source and own.tau_us == pytest.approx(200.0, rel=1e-3)
