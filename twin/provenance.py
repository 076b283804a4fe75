"""Which code produced a result: the package version and, in a git checkout, the commit.

Every artefact that may be compared later (a sweep's manifest, a fitted profile) records this,
so a number can be traced to the code that computed it. Outside a git checkout (an installed
wheel) the commit is ``None``; the lookup never fails a run.
"""

from __future__ import annotations

import subprocess
from importlib import metadata
from pathlib import Path
from typing import Any

# The checkout root when the packages are used from a clone (the parent of ``twin/``).
CHECKOUT = Path(__file__).resolve().parent.parent


def _git(*args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(CHECKOUT), *args],
        capture_output=True,
        text=True,
        timeout=10,
        check=True,
    ).stdout


def git_commit() -> str | None:
    """The checkout's ``HEAD`` commit, or ``None`` when there is no git checkout."""
    try:
        return _git("rev-parse", "HEAD").strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


def code_version() -> dict[str, Any]:
    """``{"twin": package version, "git_commit": ..., "git_dirty": ...}``.

    ``git_dirty`` says whether tracked files under ``twin/`` differ from the commit (``None``
    outside a checkout).
    """
    try:
        version = metadata.version("exchange-latency-twin")
    except metadata.PackageNotFoundError:
        version = "unknown"
    info: dict[str, Any] = {"twin": version, "git_commit": git_commit(), "git_dirty": None}
    if info["git_commit"] is not None:
        try:
            status = _git("status", "--porcelain", "--untracked-files=no", "twin")
            info["git_dirty"] = bool(status.strip())
        except (OSError, subprocess.SubprocessError):
            pass
    return info
