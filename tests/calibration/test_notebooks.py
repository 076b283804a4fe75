"""The calibration notebooks are stored without outputs and run top to bottom (nbclient)."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOKS = Path(__file__).resolve().parents[2] / "calibration" / "notebooks"
OURS = (
    "01_published_figures",
    "02_engine_service_time",
    "03_validation",
    "04_local_testbed",
    "05_load_response",
    "06_hunt",
    "07_replay_backtest",
)


@pytest.mark.parametrize("name", OURS)
def test_notebook_is_stored_without_outputs(name: str) -> None:
    nb = nbformat.read(NOTEBOOKS / f"{name}.ipynb", as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert not cell.outputs and cell.execution_count is None, name


@pytest.mark.slow
@pytest.mark.parametrize("name", OURS)
def test_notebook_runs(name: str) -> None:
    nb = nbformat.read(NOTEBOOKS / f"{name}.ipynb", as_version=4)
    client = NotebookClient(
        nb, timeout=240, kernel_name="python3", resources={"metadata": {"path": str(NOTEBOOKS)}}
    )
    client.execute()
    errors = [
        o for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"
    ]
    assert not errors
