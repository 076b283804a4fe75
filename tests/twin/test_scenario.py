"""Scenario loading: shipped files are valid, and every validation rule names what is wrong."""

from __future__ import annotations

import copy
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.twin.conftest import SCENARIOS, scenario_dict
from twin.errors import ScenarioError
from twin.scenario import load_scenario, parse
from twin.tomlio import dump_toml

SHIPPED = sorted(SCENARIOS.glob("*.toml"))


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.stem)
def test_shipped_scenarios_load(path: Path) -> None:
    scenario = load_scenario(path)
    assert scenario.name == path.stem
    assert scenario.workload.rate_msgs_per_s > 0


def test_required_shipped_scenarios_exist() -> None:
    names = {p.stem for p in SHIPPED}
    assert {
        "tier1_peering_cpg",
        "tier2_peering",
        "tier3_privatelink",
        "tier4_cloudfront",
        "aeron_echo_cpg",
        "netperf_rr_c5n_cpg",
        "netperf_rr_c5n_nopg",
    } <= names


def test_scenario_is_immutable() -> None:
    scenario = load_scenario(SCENARIOS / "tier1_peering_cpg.toml")
    with pytest.raises(AttributeError):
        scenario.workload.rate_msgs_per_s = 5  # type: ignore[misc]
    with pytest.raises(TypeError):
        scenario.roles["x"] = scenario.roles["client"]  # type: ignore[index]


def test_with_fields_revalidates_and_leaves_original() -> None:
    scenario = load_scenario(SCENARIOS / "tier1_peering_cpg.toml")
    faster = scenario.with_fields({"workload.rate_msgs_per_s": 400_000})
    assert faster.workload.rate_msgs_per_s == 400_000
    assert scenario.workload.rate_msgs_per_s == 10_000
    with pytest.raises(ScenarioError, match="workload.rate_msgs_per_s = 0"):
        scenario.with_fields({"workload.rate_msgs_per_s": 0})


def test_toml_round_trip() -> None:
    scenario = load_scenario(SCENARIOS / "tier3_privatelink.toml")
    again = parse(__import__("tomllib").loads(scenario.to_toml()), source="again")
    assert again.raw == scenario.raw


def _mutate(base: str, path: str, value: Any) -> dict[str, Any]:
    raw = copy.deepcopy(scenario_dict(base))
    table = raw
    *parents, last = path.split(".")
    for part in parents:
        table = table.setdefault(part, {})
    if value is _DELETE:
        del table[last]
    else:
        table[last] = value
    return raw


_DELETE = object()

# (base scenario, dotted field, bad value, text the one-line error must contain)
BAD_INPUTS = [
    ("tier1_peering_cpg", "workload.colour", "blue", "workload.colour: unknown key"),
    ("tier1_peering_cpg", "surprise", 1, "surprise: unknown key"),
    ("tier1_peering_cpg", "hosts.client.busy_pol", True, "hosts.client.busy_pol: unknown key"),
    ("tier1_peering_cpg", "workload.rate_msgs_per_s", "fast", "workload.rate_msgs_per_s = 'fast'"),
    ("tier1_peering_cpg", "workload.accounts", 2.5, "workload.accounts = 2.5: must be an integer"),
    ("tier1_peering_cpg", "hosts.client.tls", "yes", "hosts.client.tls = 'yes': must be true"),
    ("tier1_peering_cpg", "workload.rate_msgs_per_s", -5, "workload.rate_msgs_per_s = -5"),
    ("tier1_peering_cpg", "workload.rate_msgs_per_s", 0, "workload.rate_msgs_per_s = 0"),
    ("tier1_peering_cpg", "workload.duration_s", 0, "workload.duration_s = 0"),
    ("tier1_peering_cpg", "workload.payload_bytes", 9000, "above the peering path MTU"),
    ("tier4_cloudfront", "workload.payload_bytes", 1480, "above the cloudfront path MTU"),
    ("tier1_peering_cpg", "roles.gateway.az_id", "use1-az6", "a group cannot span AZs"),
    ("tier1_peering_cpg", "roles.client.instance", "m7.huge", "not in the catalogue"),
    ("tier1_peering_cpg", "connectivity.tier", "carrier_pigeon", "allowed: peering"),
    ("tier1_peering_cpg", "connectivity.nat_gateway", True, "NAT gateway"),
    ("tier1_peering_cpg", "workload.kind", "batch", "allowed: order_loop, echo"),
    ("tier1_peering_cpg", "workload.loop", "half-open", "allowed: open, closed"),
    ("tier1_peering_cpg", "hosts.client.runtime", "cobol", "allowed: native, jvm"),
    ("tier1_peering_cpg", "roles.client.placement_group", "nope", "no such placement group"),
    ("tier1_peering_cpg", "placement_groups.venue-cpg.shared_with", [], "neither owns the group"),
    ("tier1_peering_cpg", "placement_groups.venue-cpg.strategy", "huddle", "allowed: cluster"),
    ("tier1_peering_cpg", "roles.client.az_id", "us-east-1a", "expected an AZ ID"),
    ("tier1_peering_cpg", "roles.client", _DELETE, "[roles.client] is required"),
    ("tier1_peering_cpg", "region", "mars", "expected a region code"),
    ("tier1_peering_cpg", "exchange.gateway_threads", 0, "exchange.gateway_threads = 0"),
    ("tier1_peering_cpg", "roles.client.partition", 2, "not a partition group"),
]


@pytest.mark.parametrize(
    ("base", "field", "value", "message"),
    BAD_INPUTS,
    ids=[f"{b[1]}=<deleted>" if b[2] is _DELETE else f"{b[1]}={b[2]!r}" for b in BAD_INPUTS],
)
def test_bad_input_names_field(base: str, field: str, value: Any, message: str) -> None:
    raw = _mutate(base, field, value)
    with pytest.raises(ScenarioError) as info:
        parse(raw, source="bad.toml")
    text = str(info.value)
    assert text.startswith("bad.toml: ")
    assert message in text
    assert "\n" not in text


def test_shared_cpg_with_different_az_ids_is_named() -> None:
    raw = _mutate("tier1_peering_cpg", "roles.client.az_id", "use1-az6")
    with pytest.raises(ScenarioError, match="shared cluster placement group 'venue-cpg'.*same AZ"):
        parse(raw, source="bad.toml")


def test_segmentation_allows_large_payloads() -> None:
    raw = _mutate("tier1_peering_cpg", "workload.payload_bytes", 20_000)
    raw["workload"]["segmentation"] = True
    assert parse(raw).workload.payload_bytes == 20_000


def test_unreadable_files(tmp_path: Path) -> None:
    with pytest.raises(ScenarioError, match="not found"):
        load_scenario(tmp_path / "missing.toml")
    broken = tmp_path / "broken.toml"
    broken.write_text("[workload\nrate = 1")
    with pytest.raises(ScenarioError, match="broken.toml: not valid TOML"):
        load_scenario(broken)


def test_cli_bad_input_exit_code_and_no_output(tmp_path: Path) -> None:
    raw = _mutate("tier1_peering_cpg", "workload.rate_msgs_per_s", -1)
    bad = tmp_path / "bad.toml"
    bad.write_text(dump_toml(raw))
    out = tmp_path / "out"
    proc = subprocess.run(
        [sys.executable, "-m", "twin", "run", str(bad), "--out", str(out), "--json"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert "workload.rate_msgs_per_s = -1" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    assert not out.exists()
