"""The tools whose systems the load-response lab measures (a lab system's name starts with its
tool's: ``sockperf-udp-loopback``, ``testbed-veth``)."""

from __future__ import annotations

from enum import StrEnum


class Tool(StrEnum):
    """sockperf (Debian's package: a system the project did not write) or the project's own
    testbed (its gateway and load client)."""

    SOCKPERF = "sockperf"
    TESTBED = "testbed"
