"""Add load matrices to the committed history of their summaries, so the model-history table of
``docs/notes/load-accuracy-history.md`` needs no full matrix file per model.

Each entry of ``calibration/validation/matrix_history.json`` is keyed by the matrix file's
name and holds what the table shows of it: the summary's p50 and p99 median absolute errors, the
share within the goal and the points it judged, the saturation goal judged from the systems
(:func:`calibration.matrix.summary`), the spread over seeds, and the matrix file's git blob id, so
an entry can be checked against the file in git history. Usage::

    python tools/matrix_history.py calibration/validation/load_matrix_X.json [...]

then name the matrix in a ``load-before-after`` row of ``docs/results-index.toml``; the matrix
file itself need not be committed unless another table reads it.
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
HISTORY = ROOT / "calibration" / "validation" / "matrix_history.json"
SUMMARY_KEYS = (
    "p50_median_abs_err_pct",
    "p99_median_abs_err_pct",
    "share_within_goal",
    "points_under_load_limit",
)


def git_blob(data: bytes) -> str:
    """The id git gives a file of these bytes (``git hash-object``)."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def entry(path: Path) -> dict[str, Any]:
    """What the history keeps of one matrix file."""
    from calibration.matrix import summary

    raw = path.read_bytes()
    data = json.loads(raw)
    try:
        sat = summary(data["systems"])
        kept = {key: data["summary"][key] for key in SUMMARY_KEYS}
    except (KeyError, TypeError) as exc:
        raise SystemExit(f"{path}: not a load matrix (no {exc})") from None
    return {
        "git_blob": git_blob(raw),
        "summary": kept,
        "saturation": {
            "median_abs_err_pct": sat["saturation_median_abs_err_pct"],
            "within_goal": sat["saturation_within_goal"],
            "judged": sat["saturations_judged"],
        },
        "seed_spread": data.get("seed_spread"),
    }


def main(argv: Sequence[str]) -> int:
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    history = json.loads(HISTORY.read_text()) if HISTORY.exists() else {}
    matrices = history.setdefault("matrices", {})
    for name in argv:
        path = Path(name)
        matrices[path.name] = entry(path)
    HISTORY.write_text(json.dumps(history, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
