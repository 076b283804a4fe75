"""The host's network stack between the application and the NIC, on either side.

Send: application encode/write, optional TLS encryption, then the kernel (or a kernel-bypass
poll-mode driver) building and queueing the packet. Receive: the kernel's receive path (softirq,
TCP), waking the application thread (unless it busy-polls), optional TLS decryption and the
application's decode. Kernel packet processing costs CPU on the ENA queues' cores: that part is
a queued service at a station with one server per receive queue in use, so it saturates under
load. Receive-side scaling hashes each flow (connection) to one queue, so a connection's packets
are processed one after another on one core: ``flows`` connections use min(flows, queues).
The application's encode and decode run on its pool of I/O threads (``io_threads``), another
station: at high message rates this is where a JVM client or gateway starts to queue. Their cost
depends on the runtime (``native`` C programs such as netperf and Aeron's echo, or a ``jvm``
program such as the published order-loop client with Netty), each with its own parameters; a JVM
program also hands each message between its application and I/O threads (a delay, not CPU).

Tuning knobs follow the domain brief: ``busy_poll`` replaces the interrupt wake-up with a spin;
deep C-states add the exit latency of a core that had gone to sleep; unpinned IRQs add the cost
of an interrupt taken on the wrong core. Both of the last two are occasional costs (paid by
some messages, not others, see :class:`twin.dists.Occasional`), and the wrong core costs
differently by how the thread waits: a sleeping thread is woken across cores (an
inter-processor interrupt), a busy-polling thread loses its core to the softirq for a while.
On a Xen guest (the burstable ``t2`` family) a thread that sleeps lets its vCPU halt, and the
hypervisor must schedule the vCPU again before the thread runs: on a host shared with other
tenants' vCPUs that is sometimes a wait for another vCPU's time slice (Xen's credit scheduler
rate-limits preemption, ``sched_ratelimit_us``, to 1 ms by default). A busy-polling thread never
halts its vCPU.
"""

from __future__ import annotations

from twin.catalogue import InstanceType
from twin.components.stages import sources, stage
from twin.dists import Const, Occasional
from twin.kinds import Runtime, Stack
from twin.path import Hop, Station
from twin.profile import Profile
from twin.scenario import HostStack


def network_cores_name(role: str) -> str:
    """The name of the station of ``role``'s cores serving its flows' queues."""
    return f"{role} network cores"


def _cores(role: str, instance: InstanceType, flows: int) -> Station:
    return Station(network_cores_name(role), min(instance.ena_queues, flows))


def _occasional(profile: Profile, mean: str, probability: str) -> Occasional:
    """An occasional cost given by its mean per message and how often it is paid."""
    p = profile.value(probability)
    return Occasional(profile.value(mean) / p, p)


def _io_threads(role: str, host: HostStack) -> Station:
    return Station(f"{role} I/O threads", host.io_threads)


def _handoff(role: str, host: HostStack, profile: Profile, direction: str) -> list[Hop]:
    """A JVM program's hand-off between its application thread and its I/O thread.

    Latency without CPU work on the I/O threads (a queue hand-off and the other thread's wake-up),
    so it does not queue; native programs read and write on the application thread itself.
    """
    if host.runtime != Runtime.JVM:
        return []
    return [
        Hop(
            f"{role} JVM thread hand-off ({direction})",
            "host",
            delay=stage(profile, "jvm_handoff"),
            source=sources(profile, "jvm_handoff_median_us"),
        )
    ]


def send_hops(
    role: str, host: HostStack, instance: InstanceType, profile: Profile, flows: int
) -> list[Hop]:
    """Hops from the application's write to the packet handed to the NIC."""
    hops = _handoff(role, host, profile, "send") + [
        Hop(
            f"{role} app send",
            "host",
            service=stage(profile, f"app_send_{host.runtime}"),
            station=_io_threads(role, host),
            source=sources(profile, f"app_send_{host.runtime}_median_us"),
        ),
    ]
    if host.tls:
        hops.append(
            Hop(
                f"{role} TLS encrypt",
                "host",
                delay=stage(profile, "tls_record"),
                source=sources(profile, "tls_record_median_us"),
            )
        )
    kind = "kernel_tx" if host.stack == Stack.KERNEL else "bypass_tx"
    hops.append(
        Hop(
            f"{role} {host.stack} tx",
            "host",
            delay=stage(profile, kind),
            service=Const(profile.value(f"{kind}_cpu_us")),
            station=_cores(role, instance, flows),
            source=sources(profile, f"{kind}_median_us", f"{kind}_cpu_us"),
        )
    )
    return hops


def stack_receive_hop(
    role: str, host: HostStack, instance: InstanceType, profile: Profile, flows: int
) -> Hop:
    """The kernel's (or the bypass driver's) receive path: from the NIC's delivery to data
    waiting in the socket, on the cores of the receive queues in use."""
    kind = "kernel_rx" if host.stack == Stack.KERNEL else "bypass_rx"
    return Hop(
        f"{role} {host.stack} rx",
        "host",
        delay=stage(profile, kind),
        service=Const(profile.value(f"{kind}_cpu_us")),
        station=_cores(role, instance, flows),
        source=sources(profile, f"{kind}_median_us", f"{kind}_cpu_us"),
    )


def receive_hops(
    role: str, host: HostStack, instance: InstanceType, profile: Profile, flows: int
) -> list[Hop]:
    """Hops from the NIC's delivery to the application holding the decoded message."""
    hops = [stack_receive_hop(role, host, instance, profile, flows)]
    if host.busy_poll or host.stack == Stack.BYPASS:
        hops.append(
            Hop(
                f"{role} busy poll",
                "host",
                fixed_us=profile.value("busy_poll_us"),
                source=sources(profile, "busy_poll_us"),
            )
        )
    else:
        hops.append(
            Hop(
                f"{role} wake-up",
                "host",
                delay=stage(profile, "wakeup"),
                source=sources(profile, "wakeup_median_us"),
            )
        )
        if instance.hypervisor == "xen":
            hops.append(
                Hop(
                    f"{role} Xen vCPU wake",
                    "host",
                    delay=_occasional(
                        profile, "xen_vcpu_wake_mean_us", "xen_vcpu_wake_probability"
                    ),
                    source=sources(profile, "xen_vcpu_wake_mean_us", "xen_vcpu_wake_probability"),
                )
            )
        if host.deep_cstates:
            hops.append(
                Hop(
                    f"{role} C-state exit",
                    "host",
                    delay=_occasional(profile, "cstate_exit_mean_us", "cstate_exit_probability"),
                    source=sources(profile, "cstate_exit_mean_us", "cstate_exit_probability"),
                )
            )
    if not host.irq_pinning and host.stack == Stack.KERNEL:
        mean = "irq_unpinned_polling_mean_us" if host.busy_poll else "irq_unpinned_mean_us"
        hops.append(
            Hop(
                f"{role} IRQ on another core",
                "host",
                delay=_occasional(profile, mean, "irq_unpinned_probability"),
                source=sources(profile, mean, "irq_unpinned_probability"),
            )
        )
    if host.tls:
        hops.append(
            Hop(
                f"{role} TLS decrypt",
                "host",
                delay=stage(profile, "tls_record"),
                source=sources(profile, "tls_record_median_us"),
            )
        )
    hops.append(
        Hop(
            f"{role} app receive",
            "host",
            service=stage(profile, f"app_recv_{host.runtime}"),
            station=_io_threads(role, host),
            source=sources(profile, f"app_recv_{host.runtime}_median_us"),
        )
    )
    hops += _handoff(role, host, profile, "receive")
    return hops
