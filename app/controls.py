"""The explorer's controls as plain values, and how they change a scenario.

The Streamlit script only draws widgets; everything a control *means* lives here as pure
functions so that it can be tested without a browser:

- :func:`defaults_from` reads the control values a scenario already implies;
- :func:`apply` turns control values back into a validated :class:`twin.Scenario`, changing only
  what differs from the base scenario's own values (so untouched controls never rewrite a file);
- :func:`tier_preset` says what picking an access tier resets (placement and client TLS).

Placement choices map onto the scenario schema as follows: ``shared CPG`` puts every role in one
cluster placement group owned by the exchange and shared (AWS RAM) with the market maker's account;
``none`` removes the roles' ``placement_group`` keys; ``partition`` gives each account its own
partition group. ``cross-AZ`` moves the client to another AZ ID and out of any cluster group.
"""

from __future__ import annotations

import copy
import dataclasses
from dataclasses import dataclass
from typing import Any

from twin import Scenario, ScenarioError, parse
from twin.catalogue import CATALOGUE
from twin.errors import TwinError
from twin.kinds import Loop, Stack, Strategy, Tier
from twin.profile import SHIPPED_NAME, shipped_profile_names
from twin.scenario import MTU_BYTES, TCP_IP_HEADER_BYTES
from twin.simulation import prepare
from twin.tomlio import parse_toml

PLACEMENTS = ("shared CPG", "none", "partition")
AZ_LAYOUTS = ("same AZ", "cross-AZ")
LOOPS = tuple(Loop)
# EC2 types only: a catalogue entry with no hypervisor is a live testbed's own machine.
INSTANCE_TYPES = tuple(name for name, t in CATALOGUE.items() if t.hypervisor != "none")
EXCHANGE_ROLES = ("gateway", "engine")
# Rates offered by the rate slider (client messages per second).
RATES_MSGS_PER_S = (
    1_000,
    2_000,
    5_000,
    10_000,
    20_000,
    50_000,
    100_000,
    200_000,
    300_000,
    400_000,
    500_000,
    750_000,
    1_000_000,
)
CPG_NAME = "venue-cpg"


@dataclass(frozen=True)
class AccessTier:
    """One numbered access tier of the domain brief and the deployment it implies by default."""

    number: int
    label: str
    connectivity: Tier
    placement: str
    client_tls: bool


TIERS = {
    1: AccessTier(1, "Tier 1 · VPC peering + shared CPG", Tier.PEERING, "shared CPG", False),
    2: AccessTier(2, "Tier 2 · VPC peering, default placement", Tier.PEERING, "none", False),
    3: AccessTier(3, "Tier 3 · PrivateLink", Tier.PRIVATELINK, "shared CPG", False),
    4: AccessTier(4, "Tier 4 · Internet via CloudFront", Tier.CLOUDFRONT, "none", True),
}


@dataclass(frozen=True)
class Controls:
    """Every value the explorer's sidebar sets."""

    tier: int
    placement: str
    client_instance: str
    exchange_instance: str
    rate_msgs_per_s: float
    payload_bytes: int
    accounts: int
    loop: Loop
    client_bypass: bool
    exchange_bypass: bool
    client_tuning: bool
    exchange_tuning: bool
    az_layout: str

    def replace(self, **changes: Any) -> Controls:
        return dataclasses.replace(self, **changes)


CLOUD_CONNECTIVITY = tuple(t for t in Tier if not t.local)


def unsupported_reason(scenario: Scenario) -> str | None:
    """Why the explorer's controls cannot describe ``scenario`` (None when they can).

    The controls describe cloud deployments; live-testbed paths (loopback, veth) are left to the
    CLI.
    """
    tier = scenario.connectivity.tier
    if tier not in CLOUD_CONNECTIVITY:
        return (
            f"{scenario.source}: connectivity.tier = '{tier}': the explorer covers the cloud "
            f"access tiers ({', '.join(CLOUD_CONNECTIVITY)}); run this one with the twin CLI"
        )
    return None


def tier_preset(tier: int) -> dict[str, Any]:
    """Control values that picking ``tier`` resets (the tier's usual placement)."""
    return {"placement": TIERS[tier].placement}


def infer_tier(scenario: Scenario) -> int:
    """The access tier a scenario is closest to (peering splits on the shared CPG)."""
    connectivity = scenario.connectivity.tier
    if connectivity == Tier.PEERING:
        return 1 if infer_placement(scenario) == "shared CPG" else 2
    if connectivity == Tier.CLOUDFRONT:
        return 4
    # PrivateLink, and Transit Gateway (also Hyperplane-based, the nearest of the four).
    return 3


def infer_placement(scenario: Scenario) -> str:
    """The placement choice a scenario's client and gateway show."""
    group = scenario.placement_groups.get(scenario.roles["gateway"].placement_group or "")
    if group is None:
        return "none"
    return "partition" if group.strategy == Strategy.PARTITION else "shared CPG"


def _tuned(scenario: Scenario, side: str) -> bool:
    host = scenario.hosts[side]
    return host.busy_poll and not host.deep_cstates and host.irq_pinning


def defaults_from(scenario: Scenario) -> Controls:
    """The control values that reproduce ``scenario`` exactly."""
    roles = scenario.roles
    same_az = roles["client"].az_id == roles["gateway"].az_id
    return Controls(
        tier=infer_tier(scenario),
        placement=infer_placement(scenario),
        client_instance=roles["client"].instance.name,
        exchange_instance=roles["gateway"].instance.name,
        rate_msgs_per_s=scenario.workload.rate_msgs_per_s,
        payload_bytes=scenario.workload.payload_bytes,
        accounts=scenario.workload.accounts,
        loop=scenario.workload.loop,
        client_bypass=scenario.hosts["client"].stack == Stack.BYPASS,
        exchange_bypass=scenario.hosts["exchange"].stack == Stack.BYPASS,
        client_tuning=_tuned(scenario, "client"),
        exchange_tuning=_tuned(scenario, "exchange"),
        az_layout="same AZ" if same_az else "cross-AZ",
    )


def other_az_id(az_id: str) -> str:
    """A different AZ ID in the same region (``use1-az4`` -> ``use1-az1``)."""
    prefix, number = az_id.rsplit("-az", 1)
    return f"{prefix}-az{1 if number != '1' else 2}"


def field_changes(
    base: Controls, controls: Controls, exchange_roles: tuple[str, ...] = ("gateway",)
) -> dict[str, Any]:
    """Dotted scenario fields for every control that differs from ``base`` (placement aside).

    ``exchange_roles`` are the exchange's roles the scenario has (the engine may be colocated).
    """
    changes: dict[str, Any] = {}
    if controls.tier != base.tier:
        tier = TIERS[controls.tier]
        changes["connectivity.tier"] = tier.connectivity
        changes["connectivity.nat_gateway"] = False
        changes["hosts.client.tls"] = tier.client_tls
    if controls.client_instance != base.client_instance:
        changes["roles.client.instance"] = controls.client_instance
    if controls.exchange_instance != base.exchange_instance:
        for role in exchange_roles:
            changes[f"roles.{role}.instance"] = controls.exchange_instance
    if controls.rate_msgs_per_s != base.rate_msgs_per_s:
        changes["workload.rate_msgs_per_s"] = controls.rate_msgs_per_s
    if controls.payload_bytes != base.payload_bytes:
        changes["workload.payload_bytes"] = controls.payload_bytes
        mtu = MTU_BYTES[TIERS[controls.tier].connectivity]
        changes["workload.segmentation"] = controls.payload_bytes + TCP_IP_HEADER_BYTES > mtu
    if controls.accounts != base.accounts:
        changes["workload.accounts"] = controls.accounts
    if controls.loop != base.loop:
        changes["workload.loop"] = controls.loop
    for side in ("client", "exchange"):
        bypass = getattr(controls, f"{side}_bypass")
        if bypass != getattr(base, f"{side}_bypass"):
            changes[f"hosts.{side}.stack"] = Stack.BYPASS if bypass else Stack.KERNEL
        tuned = getattr(controls, f"{side}_tuning")
        if tuned != getattr(base, f"{side}_tuning"):
            changes[f"hosts.{side}.busy_poll"] = tuned
            changes[f"hosts.{side}.deep_cstates"] = not tuned
            changes[f"hosts.{side}.irq_pinning"] = tuned
    return changes


def _without_groups(raw: dict[str, Any]) -> None:
    for role in raw["roles"].values():
        role.pop("placement_group", None)
        role.pop("partition", None)
    raw.pop("placement_groups", None)


def placed_raw(raw: dict[str, Any], placement: str, az_layout: str) -> dict[str, Any]:
    """A copy of a scenario's raw table with placement groups and AZs rewritten."""
    raw = copy.deepcopy(raw)
    roles = raw["roles"]
    gateway = roles["gateway"]
    client = roles["client"]
    client["az_id"] = gateway["az_id"] if az_layout == "same AZ" else other_az_id(gateway["az_id"])
    _without_groups(raw)
    exchange_account = gateway["account"]
    if placement == "shared CPG":
        members = [name for name, r in roles.items() if r["az_id"] == gateway["az_id"]]
        others = sorted({roles[n]["account"] for n in members} - {exchange_account})
        group: dict[str, Any] = {
            "strategy": Strategy.CLUSTER,
            "owner": exchange_account,
            "az_id": gateway["az_id"],
        }
        if others:
            group["shared_with"] = others
        raw["placement_groups"] = {CPG_NAME: group}
        for name in members:
            roles[name]["placement_group"] = CPG_NAME
    elif placement == "partition":
        # Partition groups cannot be shared (only cluster groups can), so each account has its own.
        groups = {}
        for r in roles.values():
            name = f"{r['account']}-ppg"
            groups[name] = {"strategy": Strategy.PARTITION, "owner": r["account"]}
            r["placement_group"] = name
        raw["placement_groups"] = groups
    return raw


def apply(scenario: Scenario, controls: Controls) -> Scenario:
    """``scenario`` changed by every control that differs from its own values, validated.

    Raises :class:`twin.ScenarioError` (one line naming the field) if the combination is invalid.
    """
    base = defaults_from(scenario)
    if (controls.placement, controls.az_layout) != (base.placement, base.az_layout):
        raw = placed_raw(dict(scenario.raw), controls.placement, controls.az_layout)
        scenario = parse(raw, source=scenario.source)
    roles = tuple(role for role in EXCHANGE_ROLES if role in scenario.roles)
    changes = field_changes(base, controls, roles)
    return scenario.with_fields(changes) if changes else scenario


def for_tier(controls: Controls, tier: int) -> Controls:
    """``controls`` with ``tier`` picked as the sidebar would (its preset applied)."""
    return controls.replace(tier=tier, **tier_preset(tier))


def load_upload(file_name: str, data: bytes) -> Scenario:
    """Validate an uploaded scenario file; raises :class:`twin.ScenarioError` naming the problem.

    An upload names a shipped profile only (a path would read any ``.toml`` on the server), and
    it must hold up as the page will use it: its TOML round trip parses and its profile,
    topology and path build. Every failure is one :class:`twin.ScenarioError`, never another
    exception reaching the page.
    """
    try:
        scenario = parse(parse_toml(data, file_name, ScenarioError), source=file_name)
        if not SHIPPED_NAME.fullmatch(scenario.profile):
            raise ScenarioError(
                f"{file_name}: profile = {scenario.profile!r}: an uploaded scenario names a "
                f"shipped profile ({', '.join(shipped_profile_names())})"
            )
        reason = unsupported_reason(scenario)
        if reason is not None:
            raise ScenarioError(reason)
        parse(parse_toml(scenario.to_toml(), file_name, ScenarioError), source=file_name)
        prepare(scenario)
    except TwinError as exc:
        raise ScenarioError(str(exc)) from None
    return scenario
