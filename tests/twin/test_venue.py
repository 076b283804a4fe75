"""A venue's public API: the busy-wait distribution, the day's conditions, the calibrated rows."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from calibration.calibrate import evaluate_targets
from calibration.targets import load_targets
from tests.twin.conftest import REPO, SCENARIOS
from twin.catalogue import CATALOGUE
from twin.cli import main
from twin.components.burstable import throttled_share
from twin.day import hour_seed
from twin.dists import BusyWait
from twin.errors import ScenarioError
from twin.profile import load_profile, resolve_profile_path
from twin.scenario import load_scenario
from twin.simulation import prepare, run
from twin.tomlio import dump_toml

KEEPALIVE = SCENARIOS / "venue_api_keepalive.toml"
NEW_CONNECTION = SCENARIOS / "venue_api_new_connection.toml"


def lindley_waits(rho: float, service_us: float, n: int, seed: int) -> np.ndarray:
    """Waiting times of an M/M/1 queue by Lindley's recursion (independent of the twin)."""
    rng = np.random.default_rng(seed)
    gaps = rng.exponential(service_us / rho, n)
    services = rng.exponential(service_us, n)
    waits = np.zeros(n)
    for i in range(1, n):
        waits[i] = max(0.0, waits[i - 1] + services[i - 1] - gaps[i])
    return waits[n // 10 :]


@pytest.mark.parametrize("rho", [0.3, 0.8])
def test_busy_wait_is_the_mm1_waiting_time(rho: float) -> None:
    waits = lindley_waits(rho, 100.0, 400_000, seed=3)
    dist = BusyWait(100.0, rho)
    assert dist.mean == pytest.approx(rho * 100.0 / (1 - rho))
    assert np.mean(waits == 0.0) == pytest.approx(1 - rho, abs=0.01)
    # Correlated queue samples: compare shapes, not a strict sampling test.
    drawn = dist.sample(np.random.default_rng(1), 200_000)
    assert stats.ks_2samp(drawn, waits).statistic < 0.02
    assert np.mean(waits) == pytest.approx(dist.mean, rel=0.05)


def test_busy_wait_quantiles_invert_its_distribution() -> None:
    dist = BusyWait(50.0, 0.6)
    d = np.array([0.01, 0.2, 0.45, 0.5])
    lower, upper = dist.quantiles(d)
    cdf = lambda x: 1 - 0.6 * np.exp(-x / (50.0 / 0.4))  # noqa: E731
    assert np.all(lower[d < 0.4] == 0.0)  # the atom at zero holds 40% of the mass
    np.testing.assert_allclose(cdf(upper), 1 - d, rtol=1e-12)
    assert np.var(dist.sample(np.random.default_rng(2), 400_000)) == pytest.approx(
        dist.variance, rel=0.02
    )


def test_a_whole_day_runs_every_hour_and_pools_them() -> None:
    scenario = load_scenario(KEEPALIVE).with_fields({"workload.duration_s": 5.0})
    result = run(scenario)
    assert [h.hour for h in result.by_hour] == list(range(24))
    assert sum(h.messages for h in result.by_hour) == result.messages
    pooled = sum(h.rtt_us["mean"] * h.messages for h in result.by_hour) / result.messages
    assert result.rtt_us["mean"] == pytest.approx(pooled, rel=1e-9)
    means = [h.rtt_us["mean"] for h in result.by_hour]
    venue_load = scenario.day.venue_load
    # The mechanism: the busiest hour of the venue is the slowest, the quietest the fastest.
    assert int(np.argmax(means)) == int(np.argmax(venue_load))
    assert means[int(np.argmin(venue_load))] < np.percentile(means, 25)
    assert result.to_dict()["by_hour"][14]["hour"] == 14


def test_hours_draw_from_their_own_streams_at_one_placement() -> None:
    seeds = {hour_seed(7, h) for h in range(24)}
    assert len(seeds) == 24 and all(0 <= s < 2**63 for s in seeds)
    prepared = prepare(load_scenario(KEEPALIVE))
    assert len({p.placements["client"] for p in prepared.by_hour}) == 1
    assert len({p.load.seed for p in prepared.by_hour}) == 24


def test_a_new_connection_pays_its_handshakes() -> None:
    keep = prepare(load_scenario(KEEPALIVE).with_fields({"day.hour": 3}))
    new = prepare(load_scenario(NEW_CONNECTION).with_fields({"day.hour": 3}))
    extra = new.path.unloaded_mean_us() - keep.path.unloaded_mean_us()
    profile = keep.profile
    network = [n for n in keep.path.hop_names if "→" in n]
    assert any(n.startswith("TCP handshake") for n in new.path.hop_names)
    assert any(n.startswith("TLS handshake") for n in new.path.hop_names)
    assert extra > profile.value("venue_connection_setup_us") + profile.value("tls_handshake_us")
    assert network  # the request crosses the fabric and the border both ways


def test_tuning_removes_the_xen_wake_and_a_faster_instance_does_less_work() -> None:
    base = load_scenario(KEEPALIVE).with_fields({"day.hour": 3})
    tuned = base.with_fields({"hosts.client.busy_poll": True, "hosts.client.deep_cstates": False})
    names = prepare(base).path.hop_names
    assert "client Xen vCPU wake" in names
    assert "client Xen vCPU wake" not in prepare(tuned).path.hop_names
    larger = base.with_fields({"roles.client.instance": "c6a.2xlarge"})
    assert "client Xen vCPU wake" not in prepare(larger).path.hop_names
    assert prepare(larger).path.unloaded_mean_us() < prepare(base).path.unloaded_mean_us()


def test_the_venue_profile_reproduces_the_rows_it_was_fitted_to() -> None:
    targets = load_targets(REPO / "calibration" / "targets" / "venue.toml")
    profile = load_profile(resolve_profile_path("venue"))
    predicted = evaluate_targets(targets.targets, profile)
    for t in targets.targets:
        assert abs(t.error(predicted[t.id])) <= 10.0, (t.id, predicted[t.id], t.value)


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"venue_load": [0.5] * 23}, "day.venue_load"),
        ({"path_load": [0.5] * 25}, "day.path_load"),
        ({"venue_load": [0.5] * 23 + [1.5]}, "day.venue_load[23]"),
        ({"hour": 24}, "day.hour"),
    ],
)
def test_a_day_that_does_not_cover_24_hours_is_refused(
    tmp_path: Path, change: dict[str, object], field: str, capsys: pytest.CaptureFixture[str]
) -> None:
    raw = dict(load_scenario(KEEPALIVE).raw)
    raw["day"] = {**raw["day"], **change}
    path = tmp_path / "bad.toml"
    path.write_text(dump_toml(raw))
    assert main(["check", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert str(path) in err and field in err


def test_a_day_on_a_private_tier_is_refused() -> None:
    day = dict(load_scenario(KEEPALIVE).raw["day"])
    tier1 = load_scenario(SCENARIOS / "tier1_peering_cpg.toml")
    with pytest.raises(ScenarioError, match=r"\[day\].*public_api"):
        tier1.with_fields({"day": day})


def test_cpu_credits_run_out_hour_by_hour() -> None:
    t2 = CATALOGUE["t2.micro"]  # 10% baseline, 6 credits an hour, 30 at launch
    # Needing 17.5% of the vCPU: 10.5 credits spent an hour, 6 earned: 4.5 lost an hour; the 30
    # launch credits last 6 hours and two thirds.
    shares = [throttled_share(t2, 0.175, h) for h in range(9)]
    assert shares[:6] == [0.0] * 6
    assert shares[6] == pytest.approx(1 - 3.0 / 4.5)
    assert shares[7:] == [1.0, 1.0]
    assert throttled_share(t2, 0.05, 20) == 0.0  # under the baseline: credits never run out
    assert throttled_share(t2, 0.175, None) == 1.0  # the steady state
    assert throttled_share(CATALOGUE["c6a.2xlarge"], 0.9, 20) == 0.0  # not burstable


def test_a_small_instance_out_of_credits_saturates_its_cpu() -> None:
    scenario = load_scenario(KEEPALIVE).with_fields({"workload.duration_s": 20.0})
    assert run(scenario).stable  # 5 requests a second: a few percent of the vCPU
    busy = run(scenario.with_fields({"workload.rate_msgs_per_s": 25}))
    assert not busy.stable
    (reason,) = busy.saturated_stations
    assert reason.startswith("client CPU") and reason.endswith("23 UTC") and " 00," not in reason
    larger = scenario.with_fields(
        {"workload.rate_msgs_per_s": 25, "roles.client.instance": "c6a.2xlarge"}
    )
    assert run(larger).stable


def test_every_way_of_running_a_whole_day_covers_the_day(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from calibration.bands import _stats
    from twin.simulation import ENGINES, engine_output

    scenario = load_scenario(KEEPALIVE).with_fields({"workload.duration_s": 5.0})
    prepared = prepare(scenario)
    pooled = engine_output(prepared, ENGINES["fast"])
    assert pooled.messages == run(scenario).messages  # the same 24 hours as twin run
    assert _stats(scenario, prepared.profile, ENGINES["fast"])["mean"] == pytest.approx(
        pooled.rtt_sum_us / pooled.messages
    )
    assert main(["run", str(KEEPALIVE), "--replications", "2"]) == 2
    err = capsys.readouterr().err.strip()
    assert "day.hour" in err and len(err.splitlines()) == 1
