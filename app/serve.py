"""``make app``: warm the model in this process, then serve the explorer with Streamlit.

Streamlit runs the explorer's script in the server's own interpreter, but only when a browser
session opens; the first visitor of a fresh ``streamlit run`` paid for importing the model, the
charts and Numba and for loading the compiled kernels (about 1.5 s of a 3.1 s first result,
``benchmarks/results/explorer.json``). Serving from here runs the script once without a
browser first, so the first visitor meets a warm server. Arguments are Streamlit's own
(``--server.address``, ``--server.port``, ...).
"""

from __future__ import annotations

import sys
from pathlib import Path

EXPLORER = Path(__file__).resolve().parent / "explorer.py"


def warm() -> None:
    """Import what the explorer imports and run the default scenario once, briefly."""
    from app import charts, controls, runner  # noqa: F401 (imported to be warm)
    from twin import load_scenario
    from twin.scenario import scenarios_dir
    from twin.simulation import DEFAULT_ENGINE

    runner.simulate(
        load_scenario(scenarios_dir() / "tier1_peering_cpg.toml"), DEFAULT_ENGINE, 2_000
    )


def main(argv: list[str] | None = None) -> None:
    from streamlit.web import cli

    warm()
    sys.argv = ["streamlit", "run", str(EXPLORER), *(sys.argv[1:] if argv is None else argv)]
    cli.main()


if __name__ == "__main__":
    main()
