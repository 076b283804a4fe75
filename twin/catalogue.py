"""The EC2 instance catalogue: the facts of each instance type the twin can place.

Facts come from the public EC2 instance-type pages (vCPUs, bare metal or not, network bandwidth,
hypervisor, processor). AWS does not publish packet-per-second allowances; the ``pps_allowance``
column is an order-of-magnitude assumption (about 100k packets/s per Gb/s of bandwidth, in line
with public packet-rate tests on ENA) and only binds on small instances. ENA exposes up to 32 queue
pairs, one per vCPU (ENA documentation), which is how many cores can run the receive path in
parallel.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class InstanceType:
    """One EC2 instance type as the network model sees it."""

    name: str
    vcpus: int
    metal: bool
    bandwidth_gbps: float
    hypervisor: str  # "nitro" (virtualised on Nitro), "metal" (Nitro card, no hypervisor), "xen"
    pps_allowance: float
    # Sizes rated "up to" N Gb/s (AWS: network I/O credits, "can burst for a limited time") send
    # at line rate ``burst_gbps`` while they have credit; ``bandwidth_gbps`` is their baseline.
    # Equal to ``bandwidth_gbps`` (0: the default) for sizes with a sustained rating.
    burst_gbps: float = 0.0
    # Single-thread speed relative to t2.micro's Haswell Xeon (up to 3.3 GHz): the clock AWS
    # quotes for the family times an instructions-per-clock ratio between processor generations
    # (an assumption: public generational gains compound to about 1.3x from Haswell to
    # Skylake/Cascade Lake, 1.4x to Ice Lake and Zen 3, 1.5x to Sapphire Rapids, 1.6x to Zen 5;
    # Graviton3 about 1.15x). Only a REST client's own work per request uses it.
    cpu_speed: float = 1.0
    # Burstable instances (AWS "CPU credits and baseline utilization for burstable performance
    # instances"): each vCPU runs at ``cpu_baseline`` of a core for as long as it likes, and
    # above it while it has CPU credits (one credit: one vCPU at 100% for a minute), earned at
    # ``credits_per_hour`` up to ``credits_max``, ``launch_credits`` at launch. 1.0: not burstable.
    cpu_baseline: float = 1.0
    credits_per_hour: float = 0.0
    credits_max: float = 0.0
    launch_credits: float = 0.0

    @property
    def line_rate_gbps(self) -> float:
        """The rate a packet is serialised at (credit or not: AWS's allowances hold packets
        back, they do not slow the wire)."""
        return max(self.burst_gbps, self.bandwidth_gbps)

    @property
    def burstable(self) -> bool:
        return self.cpu_baseline < 1.0

    @property
    def ena_queues(self) -> int:
        """Receive queues that can process packets in parallel (ENA: up to 32, one per vCPU)."""
        return 1 if self.hypervisor == "xen" else min(self.vcpus, 32)


def _nitro(
    name: str,
    vcpus: int,
    bandwidth_gbps: float,
    cpu_speed: float,
    metal: bool = False,
    burst_gbps: float = 0.0,
) -> InstanceType:
    return InstanceType(
        name=name,
        vcpus=vcpus,
        metal=metal,
        bandwidth_gbps=bandwidth_gbps,
        hypervisor="metal" if metal else "nitro",
        pps_allowance=bandwidth_gbps * 100_000.0,
        cpu_speed=cpu_speed,
        burst_gbps=burst_gbps,
    )


# Public EC2 documentation, "Network specifications" of each instance family (bandwidth is the
# sustained figure, the baseline for "up to" sizes, whose "up to" figure is their burst). CPU
# speed: the family's quoted clock over 3.3 GHz times the IPC ratio of its processor to Haswell
# (see InstanceType.cpu_speed).
CATALOGUE: dict[str, InstanceType] = {
    t.name: t
    for t in (
        _nitro("c6id.metal", 128, 50.0, 1.5, metal=True),
        _nitro("c5n.xlarge", 4, 5.0, 1.35, burst_gbps=25.0),
        _nitro("c5n.9xlarge", 36, 50.0, 1.35),
        _nitro("c5n.18xlarge", 72, 100.0, 1.35),
        _nitro("c5n.metal", 72, 100.0, 1.35, metal=True),
        _nitro("c5.xlarge", 4, 1.25, 1.4, burst_gbps=10.0),
        _nitro("c5.4xlarge", 16, 5.0, 1.4, burst_gbps=10.0),
        _nitro("c6i.32xlarge", 128, 50.0, 1.5),
        _nitro("c6in.32xlarge", 128, 200.0, 1.5),
        _nitro("c6in.metal", 128, 200.0, 1.5, metal=True),
        _nitro("c7gn.16xlarge", 64, 200.0, 0.9),
        _nitro("c7i.4xlarge", 16, 3.125, 1.45, burst_gbps=12.5),
        _nitro("c7i.24xlarge", 96, 37.5, 1.45),
        _nitro("c6a.2xlarge", 8, 3.125, 1.5, burst_gbps=12.5),
        # m8a.metal-24xl: 96 vCPUs, 37.5 Gb/s (EC2 M8a specifications);
        # pub_m8a_metal_cpg_udp_rtt_p50.
        _nitro("m8a.metal-24xl", 96, 37.5, 2.2, metal=True),
        InstanceType(
            name="t2.micro",
            vcpus=1,
            metal=False,
            bandwidth_gbps=0.1,
            hypervisor="xen",
            pps_allowance=50_000.0,
            # t2.micro: baseline 10% of its vCPU, 6 credits an hour, at most 144, 30 at launch.
            cpu_baseline=0.10,
            credits_per_hour=6.0,
            credits_max=144.0,
            launch_credits=30.0,
        ),
        # The testbed's own machine (``twin testbed``): client and gateway share its 2 vCPUs over
        # loopback or a veth pair; no NIC, so bandwidth and packet allowance never bind.
        InstanceType(
            name="local",
            vcpus=2,
            metal=False,
            bandwidth_gbps=100.0,
            hypervisor="none",
            pps_allowance=1e9,
        ),
    )
}
