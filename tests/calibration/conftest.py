from __future__ import annotations

from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture
def fixture_path():
    def get(name: str) -> Path:
        return FIXTURES / name

    return get


@pytest.fixture
def variant(tmp_path):
    """Write a (usually broken) variant of a fixture; returns its path."""

    def make(name: str, text: str, encoding: str = "utf-8") -> Path:
        path = tmp_path / name
        path.write_text(text, encoding=encoding)
        return path

    return make
