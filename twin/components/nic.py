"""The ENA network interface on the Nitro card, one traversal per direction.

A traversal costs a fixed Nitro pipeline time plus jitter, plus the hypervisor's share on
virtualised sizes (bare metal pays none; Xen-based t2 pays much more). Each packet occupies the
NIC for its serialisation at line rate (the instance's, or the flow's limit if lower), behind
the instance's **allowance**, one token bucket (:class:`twin.path.Allowance`) for both
directions: a message takes the longer of its packets' share of the packet-per-second
allowance and its bytes' share of the sustained (baseline) bandwidth, and waits when the bucket
is short, as AWS describes for ``pps_allowance_exceeded`` ("packets queued or dropped because
the bidirectional PPS exceeded the maximum"). One bucket stands for both allowances: exact
when one of them binds for every message, as here (the packet allowance, for packets under
about 1,250 B). The bucket's depth (``ena_allowance_depth_packets`` packets' worth) is not
published: a burst up to it passes at line rate, a sustained rate above the allowance queues
whatever the depth.

Per-flow bandwidth is 10 Gb/s between members of one cluster placement group and 5 Gb/s otherwise
(``ec2_cpg_per_flow_limit``, AWS EC2 network bandwidth documentation).
"""

from __future__ import annotations

from twin.catalogue import InstanceType
from twin.components.stages import sources, stage
from twin.dists import Const
from twin.path import Allowance, Hop, Station
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
    wire_us = serialisation_us(payload_bytes, min(flow_gbps, instance.line_rate_gbps))
    packet_us = US_PER_S / instance.pps_allowance
    sustained_us = max(
        packets * packet_us, serialisation_us(payload_bytes, instance.bandwidth_gbps)
    )
    depth_us = max(profile.value("ena_allowance_depth_packets") * packet_us, sustained_us)
    fixed = profile.value("nitro_traversal_us")
    names = ["nitro_traversal_us", "nitro_jitter_median_us", "ena_allowance_depth_packets"]
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
        service=Const(wire_us),
        station=Station(f"{role} NIC {direction}", 1),
        allowance=Allowance(f"{role} network allowance", depth_us),
        allowance_us=sustained_us,
        source=sources(profile, *names) + "; per-flow limit: ec2_cpg_per_flow_limit",
    )
