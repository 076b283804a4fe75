"""The twin's exception hierarchy.

Every error the twin raises on purpose derives from :class:`TwinError`, and also from the
built-in exception a caller would naturally catch::

    TwinError (Exception)
    ├── ScenarioError (TwinError, ValueError)     a scenario or sweep file is invalid
    ├── ProfileError (TwinError, ValueError)      a calibration profile is invalid
    ├── MeasurementError (TwinError, ValueError)  a benchmark file cannot be read or fitted
    ├── ModelError (TwinError, ValueError)        a path, station or distribution is impossible
    ├── ConfigError (TwinError, ValueError)       an option of a run or a command is out of range
    ├── SimulationError (TwinError, RuntimeError) a run could not produce a result
    └── TopologyError (TwinError, RuntimeError)   a testbed topology cannot be set up here

Messages name the file, the field (or line), the value and what is allowed, so that a
one-line CLI error is enough to fix the input; they are one line by construction.
"""


class TwinError(Exception):
    """Root of every error the twin raises deliberately. Its message is always one line: a
    hostile value quoted in it (a path with a line break) has its control characters escaped."""

    def __init__(self, *args: object) -> None:
        super().__init__(*(one_line(a) if isinstance(a, str) else a for a in args))


class ScenarioError(TwinError, ValueError):
    """A scenario (or sweep) file is malformed or asks for something impossible."""


class ProfileError(TwinError, ValueError):
    """A calibration profile is malformed or lacks a parameter the model needs."""


class MeasurementError(TwinError, ValueError):
    """A benchmark output file is empty, truncated or not in a known format."""


class ModelError(TwinError, ValueError):
    """A path, station, hop or distribution is impossible (built from a profile or in code)."""


class ConfigError(TwinError, ValueError):
    """An option given to a run, a replication set, a calibration or a load run is invalid."""


class TopologyError(TwinError, RuntimeError):
    """The requested testbed topology cannot be set up on this machine."""


class SimulationError(TwinError, RuntimeError):
    """A simulation could not produce a result (for example an engine status failure)."""


def one_line(message: str) -> str:
    """``message`` on one line: line breaks and other control characters escaped (``\\n``), so
    an error quoting a hostile value still reads as one line."""
    return "".join(
        ch if ch.isprintable() else ch.encode("unicode_escape").decode("ascii") for ch in message
    )
