"""How ``make app`` serves the explorer: on loopback unless asked otherwise (issue 21)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _app_address(env: dict[str, str]) -> str:
    """The ``--server.address`` that ``make app`` would give Streamlit in ``env``."""
    base = {k: v for k, v in os.environ.items() if k != "TWIN_APP_ADDRESS"}
    plan = subprocess.run(
        ["make", "-n", "app"], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout
    (line,) = [ln for ln in plan.splitlines() if "-m app.serve" in ln]
    words = subprocess.run(
        ["sh", "-c", f"printf '%s\\n' {line.split('app.serve', 1)[1]}"],
        env={**base, **env}, capture_output=True, text=True, check=True,
    ).stdout.split()  # fmt: skip
    return words[words.index("--server.address") + 1]


@pytest.mark.parametrize(
    ("env", "address"), [({}, "127.0.0.1"), ({"TWIN_APP_ADDRESS": "0.0.0.0"}, "0.0.0.0")]
)
def test_make_app_listens_on_loopback_unless_asked(env: dict[str, str], address: str) -> None:
    assert _app_address(env) == address
