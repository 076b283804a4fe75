"""Placement rules, the path each tier builds, and the tier ordering that must emerge from them."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import pytest

from tests.twin.conftest import REPO, SCENARIOS, scenario_dict
from twin.profile import load_profile, profiles_dir
from twin.scenario import load_scenario, parse
from twin.simulation import apply_overrides, prepare, run, scenario_profile
from twin.topology import build_path, level_between, place

TIERS = ("tier1_peering_cpg", "tier2_peering", "tier3_privatelink", "tier4_cloudfront")


def names_of(scenario_name: str, **changes: object) -> list[str]:
    scenario = load_scenario(SCENARIOS / f"{scenario_name}.toml").with_fields(changes)
    return [h.name for h in build_path(scenario, scenario_profile(scenario))]


def test_cluster_group_members_share_a_spine_cell_for_every_seed() -> None:
    base = load_scenario(SCENARIOS / "tier1_peering_cpg.toml")
    profile = scenario_profile(base)
    for seed in range(50):
        placed = place(base.with_fields({"workload.seed": seed}), profile)
        assert placed["client"].cell == placed["gateway"].cell
        assert abs(placed["client"].rack - placed["gateway"].rack) < profile.value("cpg_rack_span")


def test_no_placement_group_is_random_but_seeded() -> None:
    base = load_scenario(SCENARIOS / "tier2_peering.toml")
    profile = scenario_profile(base)
    cells = {
        place(base.with_fields({"workload.seed": s}), profile)["gateway"].cell for s in range(40)
    }
    assert len(cells) > 5
    assert place(base, profile) == place(base, profile)


def test_cells_sit_in_data_centres_and_distance_follows() -> None:
    """Random pairs in one AZ are in one cell, one data centre, or two; fibre only for the last."""
    base = load_scenario(SCENARIOS / "tier2_peering.toml")
    profile = scenario_profile(base)
    datacenters = int(profile.value("az_datacenters"))
    levels = {}
    for seed in range(200):
        placed = place(base.with_fields({"workload.seed": seed}), profile)
        a, b = placed["client"], placed["gateway"]
        assert a.datacenter == a.cell % datacenters and b.datacenter == b.cell % datacenters
        level = level_between(a, b)
        expected = (
            "cross_datacenter"
            if a.datacenter != b.datacenter
            else "cross_cell"
            if a.cell != b.cell
            else "cell"
            if a.rack != b.rack
            else "rack"
        )
        assert level == expected
        names = [h.name for h in build_path(base.with_fields({"workload.seed": seed}), profile)]
        levels[level] = names
    assert {"cross_cell", "cross_datacenter"} <= set(levels)
    assert "client→gateway between cells" in levels["cross_cell"]
    assert "client→gateway between data centres" in levels["cross_datacenter"]


def test_managed_nodes_take_the_average_campus_fibre() -> None:
    """A Hyperplane node is in a random cell: its crossing costs between same- and other-DC."""
    from twin.components.fabric import fabric_hops

    profile = load_profile(profiles_dir() / "default.toml")

    def crossing_us(level: str) -> float:
        return fabric_hops("x", level, profile)[-1].fixed_us

    near, anywhere, far = (
        crossing_us(lv) for lv in ("cross_cell", "random_cell", "cross_datacenter")
    )
    share = 1 - 1 / profile.value("az_datacenters")
    assert near < anywhere < far
    assert anywhere == pytest.approx(near + share * (far - near))
    assert "x across the AZ" in [h.name for h in fabric_hops("x", "random_cell", profile)]


def test_a_connection_keeps_its_kernel_work_on_one_queue_core() -> None:
    """RSS hashes each flow to one queue: kernel network cores in use are min(flows, queues)."""

    def cores(name: str, accounts: int) -> tuple[int, int]:
        scenario = load_scenario(SCENARIOS / f"{name}.toml").with_fields(
            {"workload.accounts": accounts}
        )
        path = prepare(scenario).path
        servers = dict(zip(path.station_names, path.station_servers, strict=True))
        queues = scenario.roles["client"].instance.ena_queues
        return int(servers["client network cores"]), queues

    assert cores("aeron_echo_cpg", 1)[0] == 1
    assert cores("aeron_echo_cpg", 3)[0] == 3
    used, queues = cores("tier1_peering_cpg", 64)
    assert used == min(64, queues) and queues > 1


def test_partition_and_spread_use_distinct_racks() -> None:
    for strategy in ("partition", "spread"):
        raw = scenario_dict("tier1_peering_cpg")
        raw["placement_groups"]["venue-cpg"] = {
            "strategy": strategy,
            "owner": "exchange",
            "az_id": "use1-az4",
        }
        raw["roles"]["client"]["account"] = "exchange"
        scenario = parse(raw)
        for seed in range(20):
            placed = place(
                scenario.with_fields({"workload.seed": seed}), scenario_profile(scenario)
            )
            a, b = placed["client"], placed["gateway"]
            assert (a.cell, a.rack) != (b.cell, b.rack)


def test_cross_az_crosses_the_inter_az_link() -> None:
    raw = scenario_dict("tier2_peering")
    raw["roles"]["client"]["az_id"] = "use1-az6"
    scenario = parse(raw)
    placed = place(scenario, scenario_profile(scenario))
    assert level_between(placed["client"], placed["gateway"]) == "cross_az"
    names = [h.name for h in build_path(scenario, scenario_profile(scenario))]
    assert "client→gateway inter-AZ link" in names and "gateway→client inter-AZ link" in names


def test_each_tier_builds_its_logical_hops() -> None:
    assert not any("hyperplane" in n or "PrivateLink" in n for n in names_of("tier1_peering_cpg"))
    privatelink = names_of("tier3_privatelink")
    assert "client→gateway privatelink endpoint" in privatelink
    assert "client→gateway network load balancer" in privatelink
    assert "gateway→client network load balancer" in privatelink
    tgw = names_of("tier1_peering_cpg", **{"connectivity.tier": "transit_gateway"})
    assert "client→gateway transit gateway" in tgw
    cloudfront = names_of("tier4_cloudfront")
    assert "client→gateway CloudFront edge" in cloudfront
    assert "client→gateway application load balancer" in cloudfront
    nat = names_of("tier4_cloudfront", **{"connectivity.nat_gateway": True})
    assert "client→gateway NAT gateway" in nat and "gateway→client NAT gateway" in nat


def test_host_knobs_change_the_path() -> None:
    plain = names_of("tier1_peering_cpg")
    assert "gateway wake-up" in plain and "gateway C-state exit" in plain
    tuned = names_of(
        "tier1_peering_cpg",
        **{"hosts.exchange.busy_poll": True, "hosts.exchange.irq_pinning": True},
    )
    assert "gateway busy poll" in tuned and "gateway IRQ on another core" not in tuned
    assert "client JVM thread hand-off (send)" in plain
    assert not any("JVM" in n for n in names_of("aeron_echo_cpg"))
    bypass = names_of("tier1_peering_cpg", **{"hosts.client.stack": "bypass"})
    assert "client bypass tx" in bypass and "client kernel tx" not in bypass
    fresh = names_of("tier4_cloudfront", **{"hosts.client.connection_reuse": False})
    assert any(n.startswith("TCP handshake: ") for n in fresh)
    assert any(n.startswith("TLS handshake: ") for n in fresh)


def test_separate_engine_host_adds_a_network_leg() -> None:
    raw = scenario_dict("tier1_peering_cpg")
    raw["roles"]["engine"] = {
        "account": "exchange",
        "az_id": "use1-az4",
        "instance": "c6id.metal",
        "placement_group": "venue-cpg",
    }
    scenario = parse(raw)
    names = [h.name for h in build_path(scenario, scenario_profile(scenario))]
    assert "engine NIC rx" in names and "gateway NIC rx #2" in names
    assert any(n.startswith("gateway→engine") for n in names)
    assert any(n.startswith("engine→gateway") for n in names)


@pytest.fixture(scope="module")
def tier_results() -> dict[tuple[str, int], dict[str, float]]:
    """Each tier at both rates, on the compiled engine (its agreement with des is tested apart).

    The reference engine took 95 s here, mostly the 40,000 warm-up messages of each 400k run.
    """
    durations = {10_000: 2.0, 400_000: 0.25}
    out = {}
    for name in TIERS:
        base = load_scenario(SCENARIOS / f"{name}.toml")
        for rate, duration in durations.items():
            result = run(apply_overrides(base, rate, duration), engine="fast")
            assert result.stable
            out[(name, rate)] = result.rtt_us
    return out


@pytest.mark.slow
@pytest.mark.parametrize("rate", [10_000, 400_000])
@pytest.mark.parametrize("stat", ["p50", "p99"])
def test_tiers_order_at_both_rates(tier_results, rate: int, stat: str) -> None:
    values = [tier_results[(name, rate)][stat] for name in TIERS]
    assert values == sorted(values), dict(zip(TIERS, values, strict=True))


@pytest.mark.slow
@pytest.mark.parametrize("rate", [10_000, 400_000])
def test_cluster_group_narrows_the_p50_p90_gap(tier_results, rate: int) -> None:
    cpg = tier_results[("tier1_peering_cpg", rate)]
    nopg = tier_results[("tier2_peering", rate)]
    assert cpg["p90"] - cpg["p50"] < nopg["p90"] - nopg["p50"]


def test_same_seed_gives_identical_json() -> None:
    base = apply_overrides(load_scenario(SCENARIOS / "tier2_peering.toml"), 20_000, 0.05, 9)
    first = json.dumps(run(base).to_dict(), sort_keys=True)
    assert json.dumps(run(base).to_dict(), sort_keys=True) == first
    other = json.dumps(run(base.with_fields({"workload.seed": 10})).to_dict(), sort_keys=True)
    assert other != first


def test_saturation_is_reported_as_unstable_not_as_a_latency() -> None:
    base = load_scenario(SCENARIOS / "tier1_peering_cpg.toml").with_fields(
        {"exchange.gateway_threads": 1, "workload.rate_msgs_per_s": 400_000}
    )
    result = run(base)
    assert not result.stable
    assert result.to_dict()["rtt_us"] is None
    assert any("gateway threads" in s for s in result.saturated_stations)


def _published_ids() -> set[str]:
    with open(REPO / "calibration" / "data" / "published_figures.csv", newline="") as fh:
        return {row["id"] for row in csv.DictReader(fh)}


@pytest.mark.parametrize(
    "profile_path", sorted(profiles_dir().glob("*.toml")), ids=lambda p: p.stem
)
def test_every_parameter_cites_a_real_source(profile_path: Path) -> None:
    profile = load_profile(profile_path)
    ids = _published_ids()
    for name, param in profile.items():
        cited = set(re.findall(r"\b[a-z][a-z0-9]*(?:_[a-z0-9]+){2,}\b", param.source))
        unknown = {c for c in cited if c not in ids and c not in profile}
        assert not unknown, f"{name} cites unknown row ids {unknown}"
        assert param.source.strip()


def test_every_hop_of_every_shipped_scenario_has_a_source() -> None:
    for path in sorted(SCENARIOS.glob("*.toml")):
        scenario = load_scenario(path)
        for hop in build_path(scenario, scenario_profile(scenario)):
            assert hop.source, f"{path.name}: hop {hop.name!r} has no source"


def test_prepare_is_pure() -> None:
    scenario = load_scenario(SCENARIOS / "tier3_privatelink.toml")
    a, b = prepare(scenario), prepare(scenario)
    assert a.placements == b.placements
    assert (a.path.hops == b.path.hops).all()
