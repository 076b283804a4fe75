"""Files written whole or not at all: results, manifests, profiles, measurements.

Every file is written to a temporary name in the destination folder and renamed into place
(``os.replace`` is atomic on POSIX), so readers see either the old file or the complete new one,
and an interrupted or failed write never leaves a partial file.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from twin.jsontext import dumps


def atomic_write(path: Path, write: Callable[[Path], None]) -> None:
    """Call ``write(tmp)`` on a temporary file beside ``path``, then rename it over ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        write(tmp)
        # mkstemp creates owner-only files; results are ordinary files, so honour the umask.
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def write_text(path: Path, text: str) -> None:
    def write(tmp: Path) -> None:
        tmp.write_text(text)

    atomic_write(path, write)


def write_json(path: Path, payload: Any) -> None:
    write_text(path, dumps(payload, indent=2) + "\n")
