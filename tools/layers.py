"""Check that the project's imports run one way and form no cycle.

The layers, lowest first (a module may import its own layer or any lower one, never a higher one):

0. ``engine_ext``: the matching engine and risk check; imports nothing of the project.
1. the ``twin`` model: scenario, topology, components, path, engines, results, profiles.
2. ``calibration``: readers, fits, bands, validation; may import the model.
3. front ends: the ``twin`` command line (``twin.cli``, ``twin.demo``, ``twin.console``,
   ``twin.argtypes``), the sweep, hunt and testbed commands (``twin.sweep``, ``twin.hunt.cli``
   and ``twin.hunt.report``, ``twin.testbed``), the
   calibration commands (``calibration.*_cmd``) and the explorer (``app``).

Every import counts, at module level or inside a function. Usage::

    python tools/layers.py [ROOT]     # prints each violation and cycle; exit 1 if any

:func:`check` returns the same findings for a test.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterable
from pathlib import Path

PACKAGES = ("engine_ext", "twin", "calibration", "app")
LAYER_NAMES = ("engine_ext", "twin model", "calibration", "front end")

# Modules (and packages, with everything under them) of the twin package that are front ends.
FRONT_ENDS = (
    "twin.__main__",
    "twin.argtypes",
    "twin.cli",
    "twin.console",
    "twin.demo",
    "twin.hunt.cli",
    "twin.hunt.report",
    "twin.replay_cli",
    "twin.replay_report",
    "twin.sweep",
    "twin.testbed",
    "app",
)


def layer_of(module: str) -> int:
    """The layer (0-3) a module belongs to, by the rules in this module's docstring."""
    top = module.split(".")[0]
    if top == "engine_ext":
        return 0
    if any(module == f or module.startswith(f + ".") for f in FRONT_ENDS):
        return 3
    if top == "calibration":
        return 3 if module.rsplit(".", 1)[-1].endswith("_cmd") else 2
    return 1


def find_modules(root: Path, packages: Iterable[str] = PACKAGES) -> dict[str, Path]:
    """Dotted module name -> source file, for every ``.py`` file under the packages."""
    modules = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            modules[".".join(parts)] = path
    return modules


def import_graph(modules: dict[str, Path]) -> dict[str, set[str]]:
    """Module -> the project modules it imports (resolved to the longest known prefix)."""

    def resolve(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {m: set() for m in modules}
    for module, path in modules.items():
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                    base = ".".join(up + ([base] if base else []))
                targets = [
                    f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base
                    for a in node.names
                ]
            else:
                continue
            for target in targets:
                resolved = resolve(target)
                if resolved is not None and resolved != module:
                    graph[module].add(resolved)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def check(root: Path, packages: Iterable[str] = PACKAGES) -> list[str]:
    """Every upward import and every cycle under ``root``, one line each (empty: clean)."""
    graph = import_graph(find_modules(root, packages))
    problems = []
    for module in sorted(graph):
        for target in sorted(graph[module]):
            if layer_of(target) > layer_of(module):
                problems.append(
                    f"upward import: {module} ({LAYER_NAMES[layer_of(module)]}) imports "
                    f"{target} ({LAYER_NAMES[layer_of(target)]})"
                )
    problems.extend("cycle: " + " <-> ".join(c) for c in cycles(graph))
    return problems


def main(argv: list[str]) -> int:
    root = Path(argv[1]) if len(argv) > 1 else Path(__file__).resolve().parents[1]
    problems = check(root)
    for line in problems:
        print(line)
    print(f"layers: {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
