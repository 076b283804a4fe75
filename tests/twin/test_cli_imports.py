"""Issue 75: ``twin --help`` answers without loading a numerical library; each command imports
what it needs when it runs."""

from __future__ import annotations

import subprocess
import sys

from twin.cli import DEFAULT_ENGINE_NAME, ENGINE_NAMES
from twin.simulation import DEFAULT_ENGINE, ENGINES, EngineName

HEAVY = (
    "numpy", "scipy", "numba", "llvmlite", "polars", "pyarrow", "pandas", "simpy", "hdrh",
    "plotly", "streamlit", "dask",
)  # fmt: skip


def _loaded_by(argv: list[str]) -> list[str]:
    code = (
        "import sys, contextlib, io\n"
        f"sys.argv = {['twin', *argv]!r}\n"
        "from twin.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    try:\n"
        "        main(sys.argv[1:])\n"
        "    except SystemExit:\n"
        "        pass\n"
        f"print(sorted(m for m in {HEAVY!r} if m in sys.modules))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    return eval(done.stdout.strip().splitlines()[-1])  # a list of names printed by repr


def test_help_imports_no_numerical_library() -> None:
    assert _loaded_by(["--help"]) == []
    assert _loaded_by(["run", "--help"]) == []
    assert _loaded_by(["capacity", "--help"]) == []


def test_a_command_that_simulates_loads_them_when_it_runs() -> None:
    """The check is not vacuous: a command that needs the model imports it."""
    loaded = _loaded_by(["check", "tier1_peering_cpg"])
    assert "numpy" in loaded and "numba" in loaded


def test_the_parser_names_the_engines_the_model_registers() -> None:
    assert set(ENGINE_NAMES) == set(ENGINES) == {str(e) for e in EngineName}
    assert DEFAULT_ENGINE_NAME == DEFAULT_ENGINE
