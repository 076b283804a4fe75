"""The tools whose systems the load-response lab measures (a lab system's name starts with its
tool's: ``sockperf-udp-loopback``, ``testbed-veth``) and the routes their messages take.

Plain enums, imported by the testbed's parser without the measuring code (``twin --help``
loads no numerical library)."""

from __future__ import annotations

from enum import StrEnum


class Tool(StrEnum):
    """sockperf (Debian's package: a system the project did not write) or the project's own
    testbed (its gateway and load client)."""

    SOCKPERF = "sockperf"
    TESTBED = "testbed"


class Route(StrEnum):
    """Where a sockperf message travels between client and server."""

    LOOPBACK = "loopback"
    VETH = "veth"
    RELAY = "relay"
