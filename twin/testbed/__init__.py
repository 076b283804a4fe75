"""The live testbed: a real TCP exchange gateway in front of ``engine_ext`` and a load client.

* :mod:`twin.testbed.protocol` - the 120-byte wire format (layout table in its docstring);
* :mod:`twin.testbed.gateway` - the uvloop TCP gateway (``twin testbed serve``);
* :mod:`twin.testbed.client` - the open/closed-loop order-loop client (``twin testbed load``);
* :mod:`twin.testbed.netns` - loopback or two namespaces joined by a veth pair;
* :mod:`twin.testbed.campaign` - one measurement per rate up to saturation.
"""

from twin.testbed.campaign import campaign, is_saturated, measure
from twin.testbed.client import LoadConfig, LoadRun

__all__ = ["LoadConfig", "LoadRun", "campaign", "is_saturated", "measure"]
