"""The compiled engine: :mod:`twin.des`'s model run by a Numba event loop, for long runs.

Same :class:`~twin.path.CompiledPath`, same :class:`~twin.load.Load`, same
:class:`~twin.results.EngineOutput`; millions of simulated messages per second per core.
"""

from twin.fast.engine import simulate

__all__ = ["simulate"]
