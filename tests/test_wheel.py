"""Issues 22 and 75: the twin as a wheel, installed into a fresh venv with its ``[app]`` extra.

Builds the wheel from a copy of this checkout, creates a new virtual environment outside the
checkout, installs ``requirements/app.lock`` (hash-checked: the core and the explorer's
Streamlit, the versions the README's install line gives) and the wheel, and uses it from an
empty folder that is not the checkout: ``twin scenarios`` and ``twin demo`` work from package
data, a listed scenario runs by its name (``twin run tier1_peering_cpg``), ``twin capacity``
answers, ``twin app`` serves the shipped explorer (its health endpoint answers), the declared
dependencies are satisfied by the lock (``pip check``), importing the twin pulls in none of the
extras, and a command that needs a missing extra says which one in one line.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
_SKIP_NAMES = shutil.ignore_patterns(
    ".git", ".venv", "build", "*.egg-info", "__pycache__", "sweep-results", "tests", ".*cache"
)
# The lab's measurements (about 30 MB), which the wheel does not ship (pyproject's package data).
_MEASUREMENTS = REPO / "calibration" / "data"


def _skip(folder: str, names: list[str]) -> set[str]:
    """What the copy leaves out: the build's own clutter, the tests and the measurements."""
    skipped = set(_SKIP_NAMES(folder, names))
    if Path(folder) == _MEASUREMENTS.parent:
        skipped.add(_MEASUREMENTS.name)
    return skipped


pytestmark = pytest.mark.timeout(900)


def _run(*cmd: str | Path, cwd: Path, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(
        [str(c) for c in cmd], cwd=cwd, env=env, capture_output=True, text=True, timeout=800
    )
    assert done.returncode == 0, f"{cmd}: exit {done.returncode}\n{done.stderr[-3000:]}"
    return done.stdout


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> tuple[Path, dict[str, str], Path]:
    """(venv bin folder, environment, a working folder outside the checkout)."""
    root = tmp_path_factory.mktemp("wheel")
    source = root / "source"
    shutil.copytree(REPO, source, symlinks=True, ignore=_skip)
    _run(sys.executable, "-m", "pip", "wheel", source, "--no-deps", "--no-build-isolation",
         "-q", "-w", root / "dist", cwd=root)  # fmt: skip
    (wheel,) = (root / "dist").glob("exchange_latency_twin-*.whl")
    # A venv without its own pip (creating one installs pip: 8 s), filled by this pip
    # (``--python``); no byte-compiling of every installed module: the imports compile what
    # they use.
    _run(sys.executable, "-m", "venv", "--without-pip", root / "venv", cwd=root)
    python = root / "venv" / "bin" / "python"
    pip = [sys.executable, "-m", "pip", "--python", python, "--disable-pip-version-check", "-q"]
    _run(*pip, "install", "--no-compile", "-r", REPO / "requirements" / "app.lock", cwd=root)
    _run(*pip, "install", "--no-compile", "--no-deps", "--no-index", wheel, cwd=root)
    _run(*pip, "check", cwd=root)  # the wheel's own dependencies: all in the core lock
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "NUMBA_CACHE_DIR")}
    env["XDG_CACHE_HOME"] = str(root / "cache")
    work = root / "elsewhere"
    work.mkdir()
    return root / "venv" / "bin", env, work


def test_the_wheel_lists_the_scenarios_and_runs_the_demo(installed) -> None:
    bin_dir, env, work = installed
    listed = _run(bin_dir / "twin", "scenarios", cwd=work, env=env)
    assert "tier1_peering_cpg.toml" in listed and len(listed.splitlines()) >= 10
    table = _run(bin_dir / "twin", "demo", cwd=work, env=env)
    for tier in ("tier1_peering_cpg", "tier2_peering", "tier3_privatelink", "tier4_cloudfront"):
        assert sum(line.startswith(tier) for line in table.splitlines()) == 2, table


def test_the_core_imports_no_extra_and_an_extra_is_named_when_missing(installed) -> None:
    bin_dir, env, work = installed
    code = (
        "import sys, twin, twin.cli, calibration, engine_ext;"
        "extras = ('dask', 'distributed', 'streamlit', 'uvloop');"
        "print(sorted(m for m in extras if m in sys.modules))"
    )
    assert _run(bin_dir / "python", "-c", code, cwd=work, env=env).strip() == "[]"
    done = subprocess.run(
        [bin_dir / "twin", "testbed", "serve", "--port", "0"],
        cwd=work, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "twin testbed: the testbed gateway needs uvloop, which is not installed: "
        "pip install 'exchange-latency-twin[testbed]'"
    ]


def test_a_listed_scenario_runs_by_its_name_and_capacity_answers(installed) -> None:
    bin_dir, env, work = installed
    empty = work / "empty"
    empty.mkdir()
    payload = json.loads(
        _run(
            bin_dir / "twin",
            "run",
            "tier1_peering_cpg",
            "--duration",
            "0.2",
            "--json",
            cwd=empty,
            env=env,
        )  # fmt: skip
    )
    assert payload["scenario"] == "tier1_peering_cpg" and payload["stable"]
    assert payload["duration_s"] == 0.2 and payload["overrides"] == {"workload.duration_s": 0.2}
    answer = json.loads(
        _run(
            bin_dir / "twin",
            "capacity",
            "tier1_peering_cpg",
            "--p99-ceiling-us",
            "1000",
            "--duration",
            "0.02",
            "--set",
            "workload.warmup_s=0.005",
            "--replications",
            "2",
            "--refine",
            "0",
            "--workers",
            "1",
            "--no-progress",
            "--json",
            cwd=empty,
            env=env,
        )  # fmt: skip
    )
    assert answer["max_rate_msgs_per_s"] > 0 and answer["answer"]
    assert list(empty.iterdir()) == []  # nothing written where it ran


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_twin_app_serves_the_shipped_explorer(installed) -> None:
    bin_dir, env, work = installed
    port = _free_port()
    server = subprocess.Popen(
        [bin_dir / "twin", "app", "--port", str(port)],
        cwd=work, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 300
        health = ""
        while time.monotonic() < deadline and server.poll() is None:
            try:
                with urllib.request.urlopen(
                    f"http://127.0.0.1:{port}/_stcore/health", timeout=5
                ) as r:
                    health = r.read().decode()
                    break
            except OSError:
                time.sleep(1)
        assert server.poll() is None, server.stdout.read() if server.stdout else ""
        assert health == "ok"
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=10) as page:
            assert page.status == 200 and "<html" in page.read().decode().lower()
    finally:
        server.terminate()
        server.communicate(timeout=60)  # waits, and closes its output pipe
