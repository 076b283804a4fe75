"""The docs' figure tables are generated from the committed results, and the README is short."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))

import gendocs  # noqa: E402


def test_every_table_in_docs_is_up_to_date() -> None:
    assert gendocs.main(["--check"]) == 0, "run make docs"


def test_the_api_pages_example_runs(monkeypatch) -> None:
    """Issue 22: there was no API reference; docs/api.md's example is a doctest."""
    import doctest

    monkeypatch.chdir(ROOT)
    failed, tried = doctest.testfile(
        str(ROOT / "docs" / "api.md"), module_relative=False, optionflags=doctest.ELLIPSIS
    )
    assert tried >= 8 and failed == 0


def test_a_hand_edited_figure_is_detected(tmp_path: Path, monkeypatch) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    page = (ROOT / "docs" / "performance.md").read_text()
    edited = re.sub(
        r"(<!-- table: engines -->\n\|[^\n]*\n\|[^\n]*\n\| [^|]+\| )[^|]+", r"\g<1>9 ", page
    )
    assert edited != page
    (docs / "performance.md").write_text(edited)
    monkeypatch.setattr(gendocs, "DOCS", docs)
    assert gendocs.main(["--check"]) == 1
    assert gendocs.main([]) == 0 and (docs / "performance.md").read_text() == page


def test_every_table_named_in_docs_exists_and_every_generator_is_used() -> None:
    names = set()
    for path in (ROOT / "docs").rglob("*.md"):
        names |= set(re.findall(r"<!-- table: ([a-z0-9-]+) -->", path.read_text()))
    assert names == set(gendocs.TABLES)


def test_readme_is_a_front_door_with_links_that_resolve() -> None:
    text = (ROOT / "README.md").read_text()
    assert len(text.splitlines()) <= 200
    for link in re.findall(r"\]\(((?:docs/)[^)#]+)", text):
        assert (ROOT / link).exists(), link


def test_the_results_index_names_every_table_and_only_committed_files(tmp_path: Path) -> None:
    """Issue 70: the generator reads which file feeds which table from docs/results-index.toml,
    not from constants; an entry naming an unknown table, a missing file or an unknown corpus is
    refused naming the index and the entry, and so is a table without an entry."""
    index = gendocs.read_index()
    assert set(index) == set(gendocs.TABLES) - gendocs.UNINDEXED
    assert not re.search(
        r"\d{4}-\d\d-\d\d|load_matrix_", (ROOT / "tools" / "gendocs.py").read_text()
    )
    text = gendocs.INDEX.read_text()
    for edit, message in (
        (text + '\n[tables.nope]\nfiles = ["README.md"]\n', "tables.nope: no such table"),
        (text.replace('"benchmarks/results/engines.json"', '"benchmarks/results/gone.json"'),
         "tables.engines: benchmarks/results/gone.json: no such file"),
        (text.replace('corpus = "night"', 'corpus = "dawn"', 1), "corpus: no such corpus"),
        (text.replace("engines = {", "# engines = {"), "no entry for table 'engines'"),
    ):  # fmt: skip
        bad = tmp_path / "index.toml"
        bad.write_text(edit)
        with pytest.raises(SystemExit, match=re.escape(message)) as exc:
            gendocs.read_index(bad)
        assert str(exc.value).startswith(str(bad))


def test_the_matrix_history_is_what_each_committed_matrix_says() -> None:
    """Issue 70: the model-history table reads one history of summaries, not 82 matrix files;
    each entry of a matrix still committed is what tools/matrix_history.py takes of it, and
    every entry names the matrix file's git blob."""
    import json

    import matrix_history

    history = json.loads(matrix_history.HISTORY.read_text())["matrices"]
    assert len(history) == 82
    assert all(len(e["git_blob"]) == 40 for e in history.values())
    committed = [n for n in history if (matrix_history.HISTORY.parent / n).exists()]
    assert "load_matrix.json" in committed and len(committed) >= 10
    for name in committed:
        assert matrix_history.entry(matrix_history.HISTORY.parent / name) == history[name], name
