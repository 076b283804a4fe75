"""What each explorer control does to a scenario (app.controls), without Streamlit."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app import controls
from twin import ScenarioError, load_scenario, prepare

# The shipped cloud scenarios (live-testbed ones, loopback and veth, are outside the explorer).
SCENARIOS = [
    Path(__file__).resolve().parents[2] / "scenarios" / f"{name}.toml"
    for name in (
        "aeron_echo_cpg",
        "netperf_rr_c5n_cpg",
        "netperf_rr_c5n_nopg",
        "tier1_peering_cpg",
        "tier2_peering",
        "tier3_privatelink",
        "tier4_cloudfront",
    )
]


@pytest.fixture(scope="module")
def tier1():
    return load_scenario(SCENARIOS[0].parent / "tier1_peering_cpg.toml")


@pytest.fixture(scope="module")
def tier2():
    return load_scenario(SCENARIOS[0].parent / "tier2_peering.toml")


@pytest.mark.parametrize("path", SCENARIOS, ids=lambda p: p.stem)
def test_untouched_controls_leave_every_shipped_scenario_unchanged(path: Path) -> None:
    scenario = load_scenario(path)
    assert controls.apply(scenario, controls.defaults_from(scenario)).raw == scenario.raw


@pytest.mark.parametrize(
    ("name", "tier", "placement"),
    [
        ("tier1_peering_cpg", 1, "shared CPG"),
        ("tier2_peering", 2, "none"),
        ("tier3_privatelink", 3, "shared CPG"),
        ("tier4_cloudfront", 4, "none"),
    ],
)
def test_defaults_read_the_tier_and_placement(name: str, tier: int, placement: str) -> None:
    defaults = controls.defaults_from(load_scenario(SCENARIOS[0].parent / f"{name}.toml"))
    assert (defaults.tier, defaults.placement) == (tier, placement)


def test_tier_4_goes_through_cloudfront_with_tls_and_no_placement_group(tier1) -> None:
    picked = controls.for_tier(controls.defaults_from(tier1), 4)
    assert picked.placement == "none"
    scenario = controls.apply(tier1, picked)
    assert scenario.connectivity.tier == "cloudfront"
    assert scenario.hosts["client"].tls
    assert not scenario.placement_groups
    assert all(role.placement_group is None for role in scenario.roles.values())
    assert controls.defaults_from(scenario).tier == 4


def test_none_removes_the_placement_group_keys(tier1) -> None:
    scenario = controls.apply(tier1, controls.defaults_from(tier1).replace(placement="none"))
    assert "placement_groups" not in scenario.raw
    assert all("placement_group" not in role for role in scenario.raw["roles"].values())
    assert controls.defaults_from(scenario).tier == 2


def test_shared_cpg_is_owned_by_the_exchange_and_shared_with_the_market_maker(tier2) -> None:
    scenario = controls.apply(tier2, controls.defaults_from(tier2).replace(placement="shared CPG"))
    (group,) = scenario.placement_groups.values()
    assert (group.strategy, group.owner, group.shared_with) == (
        "cluster",
        "exchange",
        ("market-maker",),
    )
    assert group.az_id == scenario.roles["gateway"].az_id
    assert {r.placement_group for r in scenario.roles.values()} == {group.name}
    assert controls.defaults_from(scenario).tier == 1


def test_partition_gives_each_account_its_own_partition_group(tier1) -> None:
    scenario = controls.apply(tier1, controls.defaults_from(tier1).replace(placement="partition"))
    groups = scenario.placement_groups
    assert {g.strategy for g in groups.values()} == {"partition"}
    for role in scenario.roles.values():
        assert groups[role.placement_group].owner == role.account
    prepare(scenario)  # places and builds a path


def test_cross_az_moves_the_client_out_of_the_cluster_group(tier1) -> None:
    scenario = controls.apply(tier1, controls.defaults_from(tier1).replace(az_layout="cross-AZ"))
    client, gateway = scenario.roles["client"], scenario.roles["gateway"]
    assert client.az_id != gateway.az_id
    assert client.placement_group is None
    assert gateway.placement_group == controls.CPG_NAME
    assert scenario.placement_groups[controls.CPG_NAME].shared_with == ()
    assert any("cross" in name for name in prepare(scenario).path.hop_names) or (
        prepare(scenario).placements["client"].split()[0]
        != prepare(scenario).placements["gateway"].split()[0]
    )
    assert controls.defaults_from(scenario).az_layout == "cross-AZ"


def test_workload_and_host_controls_map_to_their_fields(tier1) -> None:
    changed = controls.defaults_from(tier1).replace(
        rate_msgs_per_s=400_000.0,
        payload_bytes=512,
        accounts=8,
        loop="closed",
        client_bypass=True,
        exchange_tuning=True,
        client_instance="c5n.xlarge",
        exchange_instance="c7gn.16xlarge",
    )
    s = controls.apply(tier1, changed)
    assert s.workload.rate_msgs_per_s == 400_000
    assert (s.workload.payload_bytes, s.workload.accounts, s.workload.loop) == (512, 8, "closed")
    assert s.hosts["client"].stack == "bypass" and s.hosts["exchange"].stack == "kernel"
    exchange = s.hosts["exchange"]
    assert exchange.busy_poll and exchange.irq_pinning and not exchange.deep_cstates
    assert not s.hosts["client"].busy_poll
    assert s.roles["client"].instance.name == "c5n.xlarge"
    assert s.roles["gateway"].instance.name == "c7gn.16xlarge"
    assert controls.defaults_from(s) == changed


def test_partly_tuned_hosts_stay_as_written_until_the_switch_moves() -> None:
    aeron = load_scenario(SCENARIOS[0].parent / "aeron_echo_cpg.toml")
    defaults = controls.defaults_from(aeron)
    assert not defaults.client_tuning  # busy polling alone is not full tuning
    other = controls.apply(aeron, defaults.replace(rate_msgs_per_s=50_000.0))
    assert other.hosts == aeron.hosts


def test_a_payload_above_the_internet_mtu_is_segmented(tier1) -> None:
    on_tier4 = controls.for_tier(controls.defaults_from(tier1), 4).replace(payload_bytes=4000)
    assert controls.apply(tier1, on_tier4).workload.segmentation
    jumbo = controls.defaults_from(tier1).replace(payload_bytes=4000)
    assert not controls.apply(tier1, jumbo).workload.segmentation


def test_other_az_id_differs_and_stays_in_the_region() -> None:
    assert controls.other_az_id("use1-az4") == "use1-az1"
    assert controls.other_az_id("use1-az1") == "use1-az2"


def test_a_valid_upload_parses(tier1) -> None:
    scenario = controls.load_upload("mine.toml", tier1.to_toml().encode())
    assert scenario.raw == tier1.raw and scenario.source == "mine.toml"


@pytest.mark.parametrize(
    ("data", "named"),
    [
        (b"name = \n", "not valid TOML"),
        (b"\xff\xfe", "not UTF-8"),
        (b'name = "x"\n[roles.client]\naccount = "a"\naz_id = "use1-az1"\n', "[roles.gateway]"),
    ],
)
def test_an_invalid_upload_names_the_file_and_the_problem(data: bytes, named: str) -> None:
    with pytest.raises(ScenarioError) as info:
        controls.load_upload("bad.toml", data)
    message = str(info.value)
    assert message.startswith("bad.toml: ") and named in message and "\n" not in message


def test_a_wrong_field_in_an_upload_is_named(tier1) -> None:
    text = tier1.to_toml().replace('instance = "c6id.metal"', 'instance = "c9.huge"', 1)
    with pytest.raises(ScenarioError, match=r"roles\.client\.instance = 'c9\.huge'"):
        controls.load_upload("bad.toml", text.encode())


control_values = st.builds(
    controls.Controls,
    tier=st.sampled_from(list(controls.TIERS)),
    placement=st.sampled_from(controls.PLACEMENTS),
    client_instance=st.sampled_from(controls.INSTANCE_TYPES),
    exchange_instance=st.sampled_from(controls.INSTANCE_TYPES),
    rate_msgs_per_s=st.sampled_from(controls.RATES_MSGS_PER_S).map(float),
    payload_bytes=st.integers(1, 20_000),
    accounts=st.integers(1, 1000),
    loop=st.sampled_from(controls.LOOPS),
    client_bypass=st.booleans(),
    exchange_bypass=st.booleans(),
    client_tuning=st.booleans(),
    exchange_tuning=st.booleans(),
    az_layout=st.sampled_from(controls.AZ_LAYOUTS),
)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(values=control_values, name=st.sampled_from([p.stem for p in SCENARIOS]))
def test_any_combination_of_controls_gives_a_valid_scenario(values, name: str) -> None:
    scenario = controls.apply(load_scenario(SCENARIOS[0].parent / f"{name}.toml"), values)
    seen = controls.defaults_from(scenario)
    for key in ("client_instance", "exchange_instance", "rate_msgs_per_s", "payload_bytes"):
        assert getattr(seen, key) == getattr(values, key)
    for key in ("accounts", "loop", "client_bypass", "exchange_bypass", "az_layout"):
        assert getattr(seen, key) == getattr(values, key)
    assert seen.placement == values.placement
    assert scenario.connectivity.tier == controls.TIERS[values.tier].connectivity


@pytest.mark.parametrize(
    ("old", "new", "named"),
    [
        # Issue 21: a profile path read any .toml on the server and listed its keys.
        ('profile = "default"', 'profile = "/etc/some.toml"', "names a shipped profile"),
        ('profile = "default"', 'profile = "../../x"', "names a shipped profile"),
        ('profile = "default"', 'profile = "nosuch"', "nosuch.toml: profile file not found"),
        ('name = "', "x = " + "[" * 100 + "]" * 100 + '\nname = "', "nested"),
    ],
)
def test_a_hostile_upload_is_one_error(tier1, old: str, new: str, named: str) -> None:
    text = tier1.to_toml()
    assert old in text
    with pytest.raises(ScenarioError) as info:
        controls.load_upload("up.toml", text.replace(old, new, 1).encode())
    message = str(info.value)
    assert named in message and "\n" not in message


def test_a_live_testbed_upload_is_refused_with_the_reason(tier1) -> None:
    text = tier1.to_toml().replace('tier = "peering"', 'tier = "loopback"')
    with pytest.raises(ScenarioError, match=r"connectivity\.tier = 'loopback'"):
        controls.load_upload("lab.toml", text.encode())


def test_the_explorer_uses_no_emoji_icons() -> None:
    """Issue 22: an emoji icon drew a missing-glyph box where the machine has no colour-emoji
    font (Debian's chromium without fonts-noto-color-emoji); Streamlit's Material icons ship
    with its own font."""
    import re

    source = (Path(__file__).resolve().parents[2] / "app" / "explorer.py").read_text()
    assert not re.findall("[\U0001f300-\U0001faff\u2600-\u27bf]", source)
    assert ":material/warning:" in source
