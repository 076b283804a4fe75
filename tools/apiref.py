"""The API reference (``docs/api.md``), generated from the public names' docstrings.

Every name in ``__all__`` of ``twin``, ``calibration`` and ``engine_ext``, in that order: its
signature and its docstring (the contract, invariants and units); for a class also its public
methods and properties. reST markup of the docstrings (````code````, ``:func:`name```) becomes
Markdown code. ``tools/gendocs.py`` writes it into the ``api`` block of ``docs/api.md``; the
test suite checks the page is current, so a docstring change shows up as a stale page.
"""

from __future__ import annotations

import enum
import importlib
import inspect
import re
from typing import Any

PACKAGES = ("twin", "calibration", "engine_ext")
_ROLE = re.compile(r":(?:[a-z]+:)?[a-z]+:`~?([^`]+)`")
_LITERAL = re.compile(r"``([^`]+)``")


def _markdown(doc: str) -> str:
    text = _ROLE.sub(lambda m: f"`{m.group(1)}`", doc)
    text = _LITERAL.sub(lambda m: f"`{m.group(1)}`", text)
    return text.replace("::\n", ":\n")


def _signature(obj: Any) -> str:
    try:
        return str(inspect.signature(obj))
    except (TypeError, ValueError):
        return "(...)"


def _members(cls: type) -> list[tuple[str, Any]]:
    """Public methods and properties defined on ``cls`` itself (not inherited)."""
    out = []
    for name, member in vars(cls).items():
        if name.startswith("_"):
            continue
        if isinstance(member, property) or inspect.isfunction(member):
            out.append((name, member))
        elif isinstance(member, classmethod | staticmethod):
            out.append((name, member.__func__))
    return out


def _entry(package: str, name: str, obj: Any) -> list[str]:
    qualified = f"{package}.{name}"
    if inspect.isclass(obj):
        kind = "enum" if issubclass(obj, enum.Enum) else "class"
        lines = [f"### `{qualified}` ({kind})", ""]
        if kind == "class":
            lines += [f"`{name}{_signature(obj)}`", ""]
        lines += [_markdown(inspect.getdoc(obj) or "(no docstring)"), ""]
        if kind == "enum":
            lines += ["Members: " + ", ".join(f"`{m.name}` = `{m.value!r}`" for m in obj), ""]
        for member_name, member in _members(obj):
            doc = inspect.getdoc(member) or ""
            summary = _markdown(doc.split("\n\n")[0]).replace("\n", " ")
            if isinstance(member, property):
                lines.append(f"- `{member_name}` (property): {summary}")
            else:
                lines.append(f"- `{member_name}{_signature(member)}`: {summary}")
        return [*lines, ""]
    if callable(obj):
        return [
            f"### `{qualified}{_signature(obj)}`",
            "",
            _markdown(inspect.getdoc(obj) or "(no docstring)"),
            "",
        ]
    shown = repr(obj) if len(repr(obj)) < 80 else f"<{type(obj).__name__}>"
    return [f"### `{qualified}` = `{shown}`", ""]


def api_reference() -> str:
    """The generated part of ``docs/api.md``."""
    lines: list[str] = []
    for package in PACKAGES:
        module = importlib.import_module(package)
        first = (inspect.getdoc(module) or "").split("\n\n")[0]
        lines += [f"## `{package}`", "", _markdown(first), ""]
        for name in module.__all__:
            lines += _entry(package, name, getattr(module, name))
    return "\n".join(lines).rstrip() + "\n"
