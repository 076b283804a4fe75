"""Compiled kernels are cached per version of the sources, so no stale machine code survives."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from engine_ext.jit_cache import kernel_sources, sources_digest

REPO = Path(__file__).resolve().parents[2]


def _tree(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def test_a_change_to_a_kernel_or_what_it_imports_changes_the_digest(tmp_path) -> None:
    _tree(
        tmp_path,
        {
            "twin/__init__.py": "",
            "twin/fast/__init__.py": "",
            "twin/fast/_rng.py": "from numba import njit\nfrom twin.path import (\n    WIDTH,\n)\n",
            "twin/path.py": "from twin import consts\nWIDTH = consts.W\n",
            "twin/consts.py": "W = 1\n",
            "engine_ext/__init__.py": "",
            "engine_ext/_book.py": "from numba import njit\nB = 1\n",
        },
    )
    first = sources_digest(tmp_path)
    assert sources_digest(tmp_path) == first
    (tmp_path / "engine_ext/_book.py").write_text("from numba import njit\nB = 2\n")
    second = sources_digest(tmp_path)
    assert second != first
    (tmp_path / "twin/consts.py").write_text("W = 2\n")  # a constant a kernel freezes, two hops on
    third = sources_digest(tmp_path)
    assert third not in {first, second}
    _tree(tmp_path, {"twin/fast/_extra.py": "import numba\n"})  # a new kernel module counts
    assert sources_digest(tmp_path) not in {first, second, third}


def test_an_edit_outside_the_kernels_costs_no_compile(tmp_path) -> None:
    """Issue 74: the digest covered every source file, so any edit cost a 16-20 CPU-s compile."""
    for package in ("twin", "engine_ext"):
        shutil.copytree(REPO / package, tmp_path / package, ignore=shutil.ignore_patterns("*.pyc"))
    before = sources_digest(tmp_path)
    kernels = {p.relative_to(tmp_path) for p in kernel_sources(tmp_path)}
    assert Path("twin/fast/_kernel.py") in kernels and Path("engine_ext/_book.py") in kernels
    outside = [Path("twin/scenario.py"), Path("twin/cli.py"), Path("engine_ext/workloads.py")]
    for rel in outside:
        assert rel not in kernels
        (tmp_path / rel).write_text((tmp_path / rel).read_text() + "\n# an edit\n")
    assert sources_digest(tmp_path) == before
    kernel = tmp_path / "twin/fast/_kernel.py"
    kernel.write_text(kernel.read_text() + "\n# an edit\n")
    assert sources_digest(tmp_path) != before


def _python(code: str, cache_home: Path) -> str:
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    env["XDG_CACHE_HOME"] = str(cache_home)
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    return out.stdout.strip()


def test_kernels_land_in_this_versions_directory_and_old_versions_are_pruned(tmp_path) -> None:
    base = tmp_path / "exchange-latency-twin" / "numba"
    for i in range(6):
        old = base / f"old{i}"
        old.mkdir(parents=True)
        stamp = time.time() - 3600 * (i + 1)
        os.utime(old, (stamp, stamp))
    code = (
        "import numpy as np, twin.histogram as h, engine_ext.jit_cache as j;"
        "h.counts_index(np.int64(12345));"
        "print(j.configure())"
    )
    cache_dir = Path(_python(code, tmp_path))
    assert cache_dir == base / sources_digest(REPO)
    assert list(cache_dir.rglob("*.nbi")), "the kernel's cache index was written there"
    kept = sorted(p.name for p in base.iterdir())
    assert kept == sorted([cache_dir.name, "old0", "old1", "old2"])


def test_a_users_own_cached_kernels_are_left_where_numba_puts_them(tmp_path) -> None:
    """Issue 22: ``import twin`` changed Numba's cache directory for the whole process. Now the
    user's ``NUMBA_CACHE_DIR`` setting and the user's own kernels stay as they were."""
    user = tmp_path / "mine"
    user.mkdir()
    (user / "mykernels.py").write_text(
        "from numba import njit\n\n@njit(cache=True)\ndef double(x):\n    return 2 * x\n"
    )
    code = (
        f"import sys; sys.path.insert(0, {str(user)!r});"
        "import numba, twin, twin.histogram as h, numpy as np;"
        "h.counts_index(np.int64(5));"
        "import mykernels; mykernels.double(3);"
        "print(repr(numba.config.CACHE_DIR))"
    )
    assert _python(code, tmp_path / "cache") == "''"  # untouched (unset)
    assert list((user / "__pycache__").glob("mykernels.double-*.nbi")), "numba's own place"
    ours = tmp_path / "cache" / "exchange-latency-twin" / "numba" / sources_digest(REPO)
    assert list(ours.rglob("*.nbi")) and not list(ours.rglob("mykernels*"))
