"""The project's TOML files, read and written one way (scenarios, profiles, sweeps, targets).

Reading refuses, with one line naming the file, anything that is not a regular file of UTF-8
TOML within :data:`MAX_TOML_BYTES` and :data:`MAX_TOML_DEPTH`, raising the caller's error
class (a :class:`twin.errors.TwinError` subclass), so every loader reports a bad file alike.
Writing (:func:`dump_toml`) produces TOML that :mod:`tomllib` reads back to the same values.
"""

from __future__ import annotations

import stat
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from twin.errors import TwinError

# Shipped files are at most tens of kilobytes; anything far larger is not an input of ours.
MAX_TOML_BYTES = 4 * 1024 * 1024
# Tables and arrays nested deeper than any file of the project needs.
MAX_TOML_DEPTH = 32


def _depth(value: Any, level: int = 0) -> int:
    if isinstance(value, dict):
        return max((_depth(v, level + 1) for v in value.values()), default=level + 1)
    if isinstance(value, list):
        return max((_depth(v, level + 1) for v in value), default=level + 1)
    return level


def parse_toml(text: str | bytes, source: str, error: type[TwinError]) -> dict[str, Any]:
    """Parse TOML text; ``error(f"{source}: ...")`` on bad encoding, syntax or nesting."""
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise error(f"{source}: not UTF-8 text: {exc}") from None
    if len(text) > MAX_TOML_BYTES:
        raise error(f"{source}: {len(text):,} characters, more than {MAX_TOML_BYTES:,} allowed")
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise error(f"{source}: not valid TOML: {exc}") from None
    except RecursionError:
        raise error(f"{source}: nested too deeply") from None
    except ValueError:  # an integer of more digits than Python converts (4300)
        raise error(f"{source}: an integer with more than 4300 digits") from None
    if _depth(data) > MAX_TOML_DEPTH:
        raise error(f"{source}: nested deeper than {MAX_TOML_DEPTH} levels")
    return data


def read_toml_bytes(path: str | Path, what: str, error: type[TwinError]) -> bytes:
    """The bytes of a regular file of at most :data:`MAX_TOML_BYTES` (``what`` names it)."""
    path = Path(path)
    try:
        info = path.stat()
    except FileNotFoundError:
        raise error(f"{path}: {what} file not found") from None
    except OSError as exc:  # a symlink loop, a name too long, no permission
        raise error(f"{path}: cannot read {what} file: {exc.strerror or exc}") from None
    except ValueError:  # a NUL byte in the name
        raise error(f"{path}: not a usable file name (NUL byte)") from None
    if not stat.S_ISREG(info.st_mode):
        kind = "a directory" if stat.S_ISDIR(info.st_mode) else "not a regular file"
        raise error(f"{path}: {kind}, not a {what} file")
    if info.st_size > MAX_TOML_BYTES:
        raise error(
            f"{path}: {info.st_size:,} bytes, more than the {MAX_TOML_BYTES:,} a {what} file "
            "may have"
        )
    try:
        with path.open("rb") as f:
            return f.read(MAX_TOML_BYTES + 1)
    except OSError as exc:
        raise error(f"{path}: cannot read {what} file: {exc.strerror or exc}") from None


def read_toml(path: str | Path, what: str, error: type[TwinError]) -> dict[str, Any]:
    """Read and parse a TOML file, naming the file (and ``what`` it should be) in any error."""
    return parse_toml(read_toml_bytes(path, what, error), str(path), error)


def dump_toml(data: Mapping[str, Any]) -> str:
    """Write a nested mapping of plain values (bool, int, float, str, lists, tables) as TOML.

    The maintained writer tomli-w does the quoting and escaping (the hand-written one before it
    wrote any other value by ``repr``, so a numpy number became ``np.float64(...)``, which no
    reader takes); a value of another type raises ``TypeError``: values are made plain where
    they enter (:meth:`twin.scenario.Scenario.with_fields`).
    """
    import tomli_w

    return tomli_w.dumps(dict(data))
