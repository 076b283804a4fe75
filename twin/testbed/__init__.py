"""The live testbed: a real TCP exchange gateway in front of ``engine_ext`` and a load client.

* :mod:`twin.testbed.protocol` - the 120-byte wire format (layout table in its docstring);
* :mod:`twin.testbed.gateway` - the uvloop TCP gateway (``twin testbed serve``);
* :mod:`twin.testbed.client` - the open/closed-loop order-loop client (``twin testbed load``),
  one thread on an epoll of its sockets and a :mod:`twin.testbed.timer` wake-up;
* :mod:`twin.testbed.recorder` - its HDR interval log, timings and result files;
* :mod:`twin.testbed.hoststat` - the run's conditions: CPU and run-queue wait per process, host
  busy/steal shares, load average, runnable threads;
* :mod:`twin.testbed.netns` - loopback or two namespaces joined by a veth pair;
* :mod:`twin.testbed.campaign` - one measurement per rate up to saturation.

The summary a run writes and the fit of the local profile on it live in
:mod:`calibration.testbed`.
"""

import importlib
from typing import TYPE_CHECKING, Any

# Each public name loads when first used (PEP 562): ``twin --help`` builds the testbed's parser
# without loading the client, its recorder and Numba.
_HOMES = {
    "LoadConfig": "twin.testbed.client",
    "LoadRun": "twin.testbed.client",
    "campaign": "twin.testbed.campaign",
    "is_saturated": "twin.testbed.campaign",
    "measure": "twin.testbed.campaign",
}

if TYPE_CHECKING:
    from twin.testbed.campaign import campaign, is_saturated, measure
    from twin.testbed.client import LoadConfig, LoadRun


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module 'twin.testbed' has no attribute {name!r}")
    return getattr(importlib.import_module(_HOMES[name]), name)


__all__ = ["LoadConfig", "LoadRun", "campaign", "is_saturated", "measure"]
