"""Where Numba keeps the compiled kernels: one directory per version of the project's sources.

Numba's on-disk cache (``cache=True``) checks only the timestamp of the file that defines a
function. The kernels inline code and freeze constants from other files (the twin's engines call
its random-number and histogram helpers; the testbed gateway inlines ``engine_ext``'s book), so
after one of those files changed a cached kernel would keep running stale machine code. The cache
directory is keyed on Numba's version and the kernels' own sources (:func:`kernel_sources`: every
module that imports Numba, and every project module those import, transitively), so a change to
a kernel or to a constant it freezes starts from a fresh cache, an edit anywhere else (the CLI,
the scenario loader, the calibration) costs no compile, and an unchanged checkout loads at once.

:func:`configure` runs when a module that compiles is imported (``engine_ext``, ``twin.fast``,
``twin.histogram``), before any kernel is decorated. The
versions live in ``exchange-latency-twin/numba/`` under ``$NUMBA_CACHE_DIR`` when set, else
under ``$XDG_CACHE_HOME`` (or ``~/.cache``); only the most recently used few are kept.

Only the project's own kernels go there: a cache locator placed first in Numba's list claims the
functions defined in the files of ``twin`` and ``engine_ext`` and no others, so importing the
twin leaves ``numba.config.CACHE_DIR`` and the caching of a user's own ``@njit(cache=True)``
code as they were.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
import shutil
from pathlib import Path

import numba
from numba.core import caching

_PACKAGES = ("twin", "engine_ext")
_KEEP_VERSIONS = 4


def _module_files(root: Path) -> dict[str, Path]:
    """Dotted module name -> source file, for every module of the packages under ``root``."""
    files = {}
    for package in _PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            parts = path.relative_to(root).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            files[".".join(parts)] = path
    return files


# An import statement, found by its text: ``import a.b`` or ``from .a import (b, c)``. Reading
# text, not a syntax tree, keeps this quick enough to run at every import of the packages; an
# import inside a docstring counts too, which can only add a file to the digest.
_IMPORT = re.compile(
    rb"^[ \t]*(?:import[ \t]+([\w.]+)|from[ \t]+(\.*[\w.]*)[ \t]+import[ \t]+(\([^)]*\)|[^\n]*))",
    re.MULTILINE,
)


def _imports(text: bytes, module: str, is_package: bool, known: dict[str, Path]) -> set[str]:
    """Modules ``text`` imports by name: ``from a.b import c`` names ``a.b.c`` when it is a
    module, else ``a.b`` (a package's ``__init__`` counts only when a name is taken from it)."""
    found = set()
    for match in _IMPORT.finditer(text):
        plain, source, names = match.groups()
        if plain:
            found.add(plain.decode())
            continue
        base = source.lstrip(b".").decode()
        level = len(source) - len(base)
        if level:
            parts = module.split(".")
            parent = parts[: len(parts) - level + is_package]
            base = ".".join(parent + ([base] if base else []))
        for name in re.findall(rb"[\w]+", names.split(b"#")[0] if b"(" not in names else names):
            if name == b"as":
                continue
            sub = f"{base}.{name.decode()}"
            found.add(sub if sub in known else base)
    return found


def kernel_sources(root: Path) -> list[Path]:
    """The source files compiled code depends on: every module of the packages that imports
    Numba (it defines or wraps kernels), and the project modules those import, transitively."""
    known = _module_files(root)
    sources = {m: p.read_bytes() for m, p in known.items()}
    edges = {
        m: _imports(text, m, known[m].name == "__init__.py", known) for m, text in sources.items()
    }
    todo = [m for m, names in edges.items() if any(n.split(".")[0] == "numba" for n in names)]
    seen: set[str] = set()
    while todo:
        module = todo.pop()
        if module not in seen:
            seen.add(module)
            todo.extend(n for n in edges[module] if n in known)
    return sorted(known[m] for m in seen)


def sources_digest(root: Path) -> str:
    """A digest of Numba's version and of the :func:`kernel_sources` under ``root``."""
    h = hashlib.sha256(numba.__version__.encode())
    for path in kernel_sources(root):
        h.update(str(path.relative_to(root)).encode())
        h.update(path.read_bytes())
    return h.hexdigest()[:16]


def _base_dir() -> Path:
    home = (
        os.environ.get("NUMBA_CACHE_DIR")
        or os.environ.get("XDG_CACHE_HOME")
        or Path.home() / ".cache"
    )
    return Path(home) / "exchange-latency-twin" / "numba"


def _prune(base: Path, current: Path) -> None:
    """Remove all but the most recently used versions (a failure to remove is harmless)."""
    versions = [p for p in base.iterdir() if p.is_dir() and p != current]
    versions.sort(key=lambda p: p.stat().st_mtime, reverse=True)
    for old in versions[_KEEP_VERSIONS - 1 :]:
        shutil.rmtree(old, ignore_errors=True)


class _ProjectCacheLocator(caching._SourceFileBackedLocatorMixin, caching._CacheLocator):
    """Numba cache locator for the kernels of this project's packages only."""

    roots: tuple[str, ...] = ()  # package folders whose functions this locator claims
    cache_dir = ""

    def __init__(self, py_func, py_file):
        self._py_file = py_file
        self._lineno = py_func.__code__.co_firstlineno
        self._cache_path = os.path.join(self.cache_dir, self.get_suitable_cache_subpath(py_file))

    def get_cache_path(self) -> str:
        return self._cache_path

    @classmethod
    def from_function(cls, py_func, py_file):
        path = os.path.realpath(py_file)
        if not cls.cache_dir or not any(path.startswith(root) for root in cls.roots):
            return None  # someone else's function: Numba's own locators decide
        return super().from_function(py_func, py_file)


@functools.cache
def configure() -> Path:
    """Send this project's kernels to this source version's cache directory (once per
    process); return the directory."""
    root = Path(__file__).resolve().parent.parent
    base = _base_dir()
    cache_dir = base / sources_digest(root)
    try:
        cache_dir.mkdir(parents=True, exist_ok=True)
        os.utime(cache_dir)
        _prune(base, cache_dir)
    except OSError:
        # Not writable: Numba's own locators take over; results are unaffected.
        return cache_dir
    _ProjectCacheLocator.roots = tuple(os.path.join(str(root), p) + os.sep for p in _PACKAGES)
    _ProjectCacheLocator.cache_dir = str(cache_dir)
    locators = caching.CacheImpl._locator_classes
    if _ProjectCacheLocator not in locators:
        locators.insert(0, _ProjectCacheLocator)
    return cache_dir


def is_cold() -> bool:
    """True when this source version's cache holds no compiled kernel yet: the next run compiles
    them (tens of seconds; a front end says so, ``make setup`` warms it)."""
    return not any(configure().rglob("*.nbi"))
