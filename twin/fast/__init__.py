"""The compiled engine: :mod:`twin.des`'s model run by a Numba event loop, for long runs.

Same :class:`~twin.path.CompiledPath`, same :class:`~twin.load.Load`, same
:class:`~twin.results.EngineOutput`; millions of simulated messages per second per core.
"""

from engine_ext.jit_cache import configure as _configure_jit_cache

_configure_jit_cache()  # before any kernel of this package is defined

from twin.fast.engine import simulate  # noqa: E402

__all__ = ["simulate"]
