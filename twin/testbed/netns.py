"""Topologies on one machine: plain loopback, or two network namespaces joined by a veth pair.

In ``veth`` mode the gateway and the client run in their own namespaces (``twtb<pid>g`` with
10.200.<n>.1 and ``twtb<pid>c`` with 10.200.<n>.2 on a /30): separate hosts as far as the
network stack is concerned, each with its own addresses, routing and socket tables, joined by a
virtual Ethernet cable (MTU 1500). The namespaces are private to this run, created and torn
down by :class:`VethPair` (also on errors; ``ip netns del`` removes the veth with them). No
traffic ever leaves them.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from types import TracebackType
from typing import Self

from twin.errors import TopologyError


def _ip(*args: str) -> None:
    proc = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=10)
    if proc.returncode != 0:
        raise TopologyError(f"`ip {' '.join(args)}` failed: {proc.stderr.strip()}")


def netns_available() -> str | None:
    """None when veth mode can run here, else the reason it cannot."""
    if shutil.which("ip") is None:
        return "the `ip` tool (iproute2) is not installed"
    if os.geteuid() != 0:
        return "creating network namespaces needs root (CAP_SYS_ADMIN and CAP_NET_ADMIN)"
    probe = f"twtbprobe{os.getpid()}"
    try:
        _ip("netns", "add", probe)
    except TopologyError as exc:
        return f"network namespaces are not permitted here: {exc}"
    subprocess.run(["ip", "netns", "del", probe], capture_output=True, timeout=10)
    return None


class Namespaces:
    """Network namespaces built on entry and torn down on exit (also when building fails).

    A subclass says what it is (``what``), why it cannot run here (:meth:`unavailable`, default
    :func:`netns_available`), builds itself (:meth:`build`) and tears itself down
    (:meth:`teardown`, safe to call twice).
    """

    what = "namespace topology"

    def unavailable(self) -> str | None:
        return netns_available()

    def build(self) -> None:
        raise NotImplementedError

    def teardown(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        reason = self.unavailable()
        if reason is not None:
            raise TopologyError(f"{self.what} unavailable: {reason}")
        try:
            self.build()
        except BaseException:
            self.teardown()
            raise
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.teardown()


class VethPair(Namespaces):
    """Two namespaces and a veth pair between them; use as a context manager."""

    what = "veth topology"

    def __init__(self, index: int = 0) -> None:
        tag = f"{os.getpid() % 100000}{index}"
        self.gateway_ns = f"twtb{tag}g"
        self.client_ns = f"twtb{tag}c"
        subnet = 10 + (os.getpid() + index) % 240
        self.gateway_addr = f"10.200.{subnet}.1"
        self.client_addr = f"10.200.{subnet}.2"
        self._veth = (f"tw{tag}g", f"tw{tag}c")

    def build(self) -> None:
        g, c = self._veth
        _ip("netns", "add", self.gateway_ns)
        _ip("netns", "add", self.client_ns)
        _ip("link", "add", g, "type", "veth", "peer", "name", c)
        _ip("link", "set", g, "netns", self.gateway_ns)
        _ip("link", "set", c, "netns", self.client_ns)
        _ip("-n", self.gateway_ns, "addr", "add", f"{self.gateway_addr}/30", "dev", g)
        _ip("-n", self.client_ns, "addr", "add", f"{self.client_addr}/30", "dev", c)
        for ns, dev in ((self.gateway_ns, g), (self.client_ns, c)):
            _ip("-n", ns, "link", "set", "lo", "up")
            _ip("-n", ns, "link", "set", dev, "up")

    def teardown(self) -> None:
        """Delete both namespaces (and with them the veth pair); safe to call twice."""
        for ns in (self.gateway_ns, self.client_ns):
            subprocess.run(["ip", "netns", "del", ns], capture_output=True, timeout=10)

    def exec_prefix(self, side: str) -> list[str]:
        """The command prefix that runs a program in the gateway's or the client's namespace."""
        ns = self.gateway_ns if side == "gateway" else self.client_ns
        return ["ip", "netns", "exec", ns]
