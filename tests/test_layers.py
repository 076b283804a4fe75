"""The project's imports run one way (engine_ext <- twin model <- calibration <- front ends)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _layers():  # tools/ is not a package: load the checker from its file
    spec = importlib.util.spec_from_file_location("layers", ROOT / "tools" / "layers.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["layers"] = module
    spec.loader.exec_module(module)
    return module


layers = _layers()


def test_the_project_has_no_upward_import_and_no_cycle() -> None:
    assert layers.check(ROOT) == []


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def test_an_injected_cycle_is_reported(tmp_path: Path) -> None:
    _write(
        tmp_path,
        {
            "twin/__init__.py": "",
            "twin/a.py": "from twin import b\n",
            "twin/b.py": "def f():\n    import twin.a\n",  # a function-level import counts
        },
    )
    assert layers.check(tmp_path, ("twin",)) == ["cycle: twin.a <-> twin.b"]


@pytest.mark.parametrize(
    ("importer", "imported"),
    [
        ("engine_ext/x.py", "twin/y.py"),
        ("twin/x.py", "calibration/y.py"),
        ("calibration/x.py", "twin/cli.py"),
        ("twin/x.py", "app/y.py"),
        ("twin/x.py", "twin/sweep/y.py"),
    ],
)
def test_an_upward_import_is_reported(tmp_path: Path, importer: str, imported: str) -> None:
    target = imported.removesuffix(".py").replace("/", ".")
    files = {importer: f"import {target}\n", imported: ""}
    for name in (importer, imported):
        for parent in Path(name).parents[:-1]:
            files.setdefault(str(parent / "__init__.py"), "")
    _write(tmp_path, files)
    problems = layers.check(tmp_path, ("engine_ext", "twin", "calibration", "app"))
    assert len(problems) == 1 and problems[0].startswith("upward import:"), problems


def test_downward_imports_are_allowed(tmp_path: Path) -> None:
    _write(
        tmp_path,
        {
            "engine_ext/__init__.py": "",
            "engine_ext/e.py": "",
            "twin/__init__.py": "",
            "twin/m.py": "import engine_ext.e\n",
            "twin/cli.py": "import calibration.c\nimport twin.m\n",
            "calibration/__init__.py": "",
            "calibration/c.py": "from twin import m\n",
            "calibration/c_cmd.py": "from twin import cli\n",
        },
    )
    assert layers.check(tmp_path, ("engine_ext", "twin", "calibration")) == []
