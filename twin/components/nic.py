"""The ENA network interface on the Nitro card, one traversal per direction.

A traversal costs a fixed Nitro pipeline time plus jitter, plus the hypervisor's share on
virtualised sizes (bare metal pays none; Xen-based t2 pays much more). Each packet also occupies
the NIC for the longer of its serialisation at the flow's bandwidth limit and one slot of the
instance's packet-per-second allowance: a deterministic single-server station, so exceeding the
allowance queues, as AWS describes for ``pps_allowance_exceeded``.

Per-flow bandwidth is 10 Gb/s between members of one cluster placement group and 5 Gb/s otherwise
(``ec2_cpg_per_flow_limit``, AWS EC2 network bandwidth documentation).
"""

from __future__ import annotations

from twin.catalogue import InstanceType
from twin.components.stages import sources, stage
from twin.dists import Const
from twin.path import Hop, Station
from twin.profile import Profile
from twin.units import US_PER_S, serialisation_us

FLOW_LIMIT_IN_CPG_GBPS = 10.0
FLOW_LIMIT_OUTSIDE_GBPS = 5.0


def nic_hop(
    role: str,
    direction: str,
    instance: InstanceType,
    payload_bytes: int,
    packets: int,
    in_cluster_group: bool,
    profile: Profile,
) -> Hop:
    """One NIC traversal (``direction`` is ``tx`` or ``rx``) for a message of ``packets``."""
    flow_gbps = FLOW_LIMIT_IN_CPG_GBPS if in_cluster_group else FLOW_LIMIT_OUTSIDE_GBPS
    wire_us = serialisation_us(payload_bytes, min(flow_gbps, instance.bandwidth_gbps))
    slot_us = packets * US_PER_S / instance.pps_allowance
    fixed = profile.value("nitro_traversal_us")
    names = ["nitro_traversal_us", "nitro_jitter_median_us"]
    if instance.hypervisor == "nitro":
        fixed += profile.value("nitro_virt_us")
        names.append("nitro_virt_us")
    elif instance.hypervisor == "xen":
        fixed += profile.value("xen_virt_us")
        names.append("xen_virt_us")
    return Hop(
        f"{role} NIC {direction}",
        "nic",
        fixed_us=fixed,
        delay=stage(profile, "nitro_jitter"),
        service=Const(max(wire_us, slot_us)),
        station=Station(f"{role} NIC {direction}", 1),
        source=sources(profile, *names) + "; per-flow limit: ec2_cpg_per_flow_limit",
    )
