"""The engine's exception hierarchy.

Bad *messages* are never exceptions: the engine answers them with a reject event and a reason
code. Exceptions are for misuse of the Python API (an invalid configuration, an array of the
wrong dtype, a corrupted workload file)::

    EngineError (ValueError)          a configuration or an argument is invalid
    └── WorkloadError (EngineError)   a workload file is missing, corrupt or fails its hash

Messages name the argument (or file), the value and what is allowed.
"""


class EngineError(ValueError):
    """Root of every error the engine package raises deliberately."""


class WorkloadError(EngineError):
    """A saved workload cannot be read or its content does not match its recorded hash."""
