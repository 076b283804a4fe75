"""Python's garbage collector, kept off the testbed's measured paths.

CPython collects its youngest generation after every 700 net allocations and the older ones
every tenth time (``gc.get_threshold()``), scanning every container object of the generations
collected. A process that allocates for each message therefore stops every few hundred
messages, and a collection that reaches the objects its start-up left (the imports, Numba's
dispatchers, the schedule) stops it for milliseconds. An open-loop client counts its round trips
from their scheduled times, so its own pauses land in the system's tail, more often the higher
the rate (design notes, "The load client's own stalls").

* :func:`freeze_startup`: collect once and move every object alive into the permanent generation
  (``gc.freeze``), which no collection scans again; the young collections stay, as short as
  what the messages themselves leave. For a server that runs for as long as it is asked.
* :func:`collector_off`: that, and no automatic collection at all inside the ``with`` block,
  the frozen objects returned to the collector after it (the load client's measured loop, which
  makes no reference cycles: what it allocates is freed by reference counting).
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


def freeze_startup() -> None:
    """Collect, then exempt every object alive now from later collections (``gc.freeze``)."""
    gc.collect()
    gc.freeze()


@contextmanager
def collector_off() -> Iterator[None]:
    """:func:`freeze_startup`, no automatic collection inside the block (``gc.disable``); after
    it, collection back on and the frozen objects collectable again (``gc.unfreeze``)."""
    freeze_startup()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
        gc.unfreeze()
