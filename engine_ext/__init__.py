"""A Numba matching engine with pre-trade risk checks, and the tools that prove and measure it.

Public API (see each module for the why):

* :class:`Engine`, :class:`EngineConfig` - the compiled engine and its validated configuration;
  :meth:`Engine.process` is the batch API (messages in, events out).
* :func:`process_one`, :class:`BookState` - the per-order path for other Numba code.
* :class:`ReferenceEngine` - the plain Python oracle the engine is tested against.
* :data:`MSG_DTYPE`, :data:`EVENT_DTYPE` and the integer codes in :mod:`engine_ext.types`.
* :class:`EngineError`, :class:`WorkloadError` - raised for API misuse; bad messages are rejects.
"""

from engine_ext.jit_cache import configure as _configure_jit_cache

_configure_jit_cache()

from engine_ext._book import BookState, process_one  # noqa: E402
from engine_ext.engine import Engine, EngineConfig  # noqa: E402
from engine_ext.errors import EngineError, WorkloadError  # noqa: E402
from engine_ext.reference import ReferenceEngine  # noqa: E402
from engine_ext.types import EVENT_DTYPE, MSG_DTYPE  # noqa: E402

__all__ = [
    "BookState",
    "EVENT_DTYPE",
    "Engine",
    "EngineConfig",
    "EngineError",
    "MSG_DTYPE",
    "ReferenceEngine",
    "WorkloadError",
    "process_one",
]
