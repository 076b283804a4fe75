"""The halt law read off a halt probe (:mod:`calibration.halt`)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from calibration.halt import (
    HALT_PROBE,
    MIN_POLL_SAVING,
    POLLING_HALT_PROBE,
    STEADY_PROBE,
    halt_law,
    halt_parameters,
    poll_window,
    poll_window_parameters,
    polling_parameters,
    polling_saving,
    socket_wake_parameter,
)
from calibration.matrix import host_parameters
from twin.errors import MeasurementError
from twin.path import HaltPolling


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


def test_a_sockets_wake_up_is_what_the_halt_costs_beyond_an_awake_vcpu(tmp_path: Path) -> None:
    """On the law 30 us x (1 - 0.6 exp(-idle / 6 us)) a halted vCPU costs 18 us more than an
    awake one: a socket's wake-up (as fitted to binned medians: within 6%)."""
    wake = socket_wake_parameter(_probe(tmp_path / "p.json", 0.6, 6.0, 30.0))
    assert wake.value == pytest.approx(18.0, rel=0.06)
    assert "p.json" in wake.source


def test_a_probe_whose_sender_blocked_is_refused(tmp_path: Path) -> None:
    path = _probe(tmp_path / "blocked.json", 0.6, 6.0, 30.0, waiter="blocks")
    with pytest.raises(MeasurementError, match="blocked.json: not a halt probe"):
        halt_parameters(path)


@pytest.mark.parametrize(("key", "value"), [("latency_us", -4.0), ("idle_us", float("nan"))])
def test_a_probe_with_a_sample_that_is_not_a_time_is_refused(tmp_path: Path, key, value) -> None:
    path = _probe(tmp_path / "bad.json", 0.6, 6.0, 30.0)
    probe = json.loads(path.read_text())
    probe[key]["0.0"][7] = value
    path.write_text(json.dumps(probe))
    with pytest.raises(MeasurementError, match="bad.json: not a halt probe .*finite numbers >= 0"):
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


def _steady(path: Path, medians: dict[float, float], waiter: str = "spins", order: str = "steady"):
    """A steady probe: per gap 50 samples around the given median latency, idle = gap + 3 us."""
    rng = np.random.default_rng(5)
    path.write_text(
        json.dumps(
            {
                "waiter": waiter,
                "order": order,
                "latency_us": {
                    str(g): (m * rng.uniform(0.9, 1.1, 51)).tolist() for g, m in medians.items()
                },
                "idle_us": {str(g): [g + 3.0] * 51 for g in medians},
            }
        )
    )
    return path


def test_the_polling_window_is_where_steady_wake_ups_turn_dear(tmp_path: Path) -> None:
    """Polled (about 16 us) up to 175 us, halted (about 45 us) from 200 us: the window is
    halfway between the two gaps' idle times, 178 and 203 us; a noisy gap below stays polled."""
    medians = {25.0: 16.0, 100.0: 29.0, 150.0: 17.0, 175.0: 18.0, 200.0: 44.0, 500.0: 45.0}
    window, polled, halted = poll_window(_steady(tmp_path / "s.json", medians))
    assert window == pytest.approx(190.5)
    assert polled == pytest.approx(16.0, rel=0.05) and halted == pytest.approx(45.0, rel=0.05)
    params = poll_window_parameters(tmp_path / "s.json")
    assert params["local_vcpu_halt_poll_us"].value == pytest.approx(190.5)
    assert "s.json" in params["local_vcpu_halt_poll_us"].source


def test_a_steady_probe_without_a_step_has_no_window(tmp_path: Path) -> None:
    path = _steady(tmp_path / "flat.json", {25.0: 40.0, 200.0: 42.0, 500.0: 45.0})
    assert poll_window(path)[0] == 0.0
    param = poll_window_parameters(path)["local_vcpu_halt_poll_us"]
    assert param.value == 0.0 and "no polling window" in param.source


@pytest.mark.parametrize(
    ("medians", "kwargs", "message"),
    [
        ({25.0: 16.0, 200.0: 17.0, 500.0: 45.0}, {"order": "shuffled"}, "not a steady"),
        ({25.0: 16.0, 200.0: 17.0, 500.0: 45.0}, {"waiter": "blocks"}, "not a steady"),
        ({25.0: 16.0, 500.0: 45.0}, {}, "3 gaps or more"),
    ],
)
def test_a_probe_without_a_polling_step_is_refused(
    tmp_path: Path, medians: dict[float, float], kwargs: dict[str, str], message: str
) -> None:
    with pytest.raises(MeasurementError, match=f"bad.json: .*{message}"):
        poll_window(_steady(tmp_path / "bad.json", medians, **kwargs))


def test_the_committed_steady_probe_polls_for_about_200_us() -> None:
    """This VM (2026-11-26): KVM's default maximum window is 200 us."""
    window, polled, halted = poll_window(STEADY_PROBE)
    assert 100.0 < window < 400.0 and polled < 0.75 * halted


@pytest.mark.parametrize(
    ("probe", "polls"), [(POLLING_HALT_PROBE, True), (HALT_PROBE, False)], ids=["polls", "does-not"]
)
def test_a_shuffled_probe_replayed_tells_a_host_that_polls(probe: Path, polls: bool) -> None:
    """This VM on 2026-11-26 polls: the wake-ups KVM's window would have polled were about 40%
    cheaper; on 2026-11-25 (the committed halt probe, as on every corpus's day) they cost the
    same as the others."""
    polling = HaltPolling(max_us=200.0)
    saving = polling_saving(probe, polling)
    assert (saving >= MIN_POLL_SAVING) == polls
    assert saving > 0.3 if polls else abs(saving) < 0.05
    param = polling_parameters(probe, polling)["local_vcpu_halt_poll_us"]
    assert param.value == (200.0 if polls else 0.0)
    assert probe.name in param.source


def test_the_host_polls_as_its_probes_say(tmp_path: Path) -> None:
    """A corpus with a steady probe takes its window; one without, whether its halt probe's
    host polled (the committed one's did not)."""
    (tmp_path / "manifest.json").write_text("{}")
    assert host_parameters(tmp_path)["local_vcpu_halt_poll_us"].value == 0.0
    _steady(tmp_path / "steady.json", {25.0: 16.0, 175.0: 18.0, 200.0: 44.0, 500.0: 45.0})
    (tmp_path / "manifest.json").write_text(json.dumps({"wakeprobe_steady": "steady.json"}))
    assert host_parameters(tmp_path)["local_vcpu_halt_poll_us"].value == pytest.approx(190.5)


def test_on_a_host_that_polls_the_law_is_fitted_with_the_polled_wake_ups_apart() -> None:
    """The polling host's probe read as if nothing polled puts the window's saving into a halt
    time at its bound (1000 us) and a halted wake-up of over 100 us; with the wake-ups KVM's
    window polls apart, a halt time of microseconds and a halted wake-up of about 34 us."""
    share, tau, halted = halt_law(POLLING_HALT_PROBE)
    assert tau > 500.0 and halted > 100.0
    share, tau, halted = halt_law(POLLING_HALT_PROBE, HaltPolling(max_us=200.0))
    assert 0.3 < share < 0.6 and tau < 50.0 and 25.0 < halted < 45.0
