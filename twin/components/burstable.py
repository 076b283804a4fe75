"""CPU credits of a burstable instance (the ``t2`` family), hour by hour from its launch.

A burstable vCPU runs at full speed while it has credits and at its baseline share when they run
out (AWS documentation, "Burstable performance instances": standard mode). A client that needs
``demand`` of each vCPU (a share, busy time over wall time) spends ``60 * demand`` credits an hour
per vCPU, and the instance earns ``credits_per_hour``; the balance starts at the launch credits at
00 UTC and is capped at ``credits_max``. :func:`throttled_share` gives the share of an hour spent
at the baseline, which stretches the client's work by ``1 / cpu_baseline``: while the credits last
a small instance is as fast as its clock; once they are gone it serves at most ``cpu_baseline`` of
a core, and a client needing more saturates (the cliff the credits only postpone).
"""

from __future__ import annotations

from twin.catalogue import InstanceType

MINUTES_PER_HOUR = 60.0


def throttled_share(instance: InstanceType, demand: float, hour: int | None) -> float:
    """The share of hour ``hour`` (from launch at 00 UTC) the instance spends at its baseline,
    for a client needing ``demand`` of each vCPU at full speed. ``hour`` None: the steady state
    (throttled if and only if the demand exceeds what the credits earned sustain)."""
    if not instance.burstable or demand <= instance.cpu_baseline:
        return 0.0
    if hour is None:
        return 1.0
    # Credits lost per hour at full speed: spent by every vCPU, less those earned.
    net = MINUTES_PER_HOUR * demand * instance.vcpus - instance.credits_per_hour
    balance = min(instance.launch_credits, instance.credits_max)
    for _ in range(hour):
        balance = max(0.0, balance - net)
    if balance >= net:
        return 0.0
    return 1.0 - balance / net
