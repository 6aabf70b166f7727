"""The API reference (``book/api/``) documents every public module, function, class and constant.

Sphinx's autodoc writes the pages from the docstrings; ``automodule`` with ``:members:`` documents the names
of a module's ``__all__`` that have a docstring (or a ``#:`` comment, for a constant) and silently skips the
rest. These tests read the sources, so a new module or an undocumented public name fails here, before a
reader finds it missing from the book.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
API = ROOT / "book" / "api"


def public_modules() -> list[str]:
    """Every module of attnlib with an ``__all__``, but the top level (which re-exports) and the private
    ones (``_validation``; ``_table`` and ``interactive._render``, whose classes the pages document)."""
    names = []
    for path in sorted((ROOT / "attnlib").rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        exports = re.search(r"^__all__\s*[:=]", path.read_text(encoding="utf-8"), re.M)
        if name != "attnlib" and not parts[-1].startswith("_") and exports:
            names.append(name)
    return names


def documented() -> dict[str, tuple[str, str]]:
    """Module name -> (page, options) for each ``automodule`` directive of the API pages."""
    found = {}
    for page in sorted(API.glob("*.md")):
        text = page.read_text(encoding="utf-8")
        for m in re.finditer(r"^\.\. automodule:: (\S+)\n((?:   :.*\n)*)", text, re.M):
            assert m.group(1) not in found, f"{m.group(1)} is documented twice"
            found[m.group(1)] = (page.name, m.group(2))
    return found


MODULES = public_modules()
DOCUMENTED = sorted(documented())


def test_every_public_module_has_its_place_in_the_api_reference() -> None:
    pages = documented()
    assert set(MODULES) <= set(pages), f"not in the API reference: {sorted(set(MODULES) - set(pages))}"
    index = (API / "index.md").read_text(encoding="utf-8")
    for name in MODULES:
        assert f"{{mod}}`{name}`" in index, f"book/api/index.md does not list {name}"


@pytest.mark.parametrize("name", DOCUMENTED)
def test_every_public_name_has_a_docstring(name: str) -> None:
    module = importlib.import_module(name)
    options = documented()[name][1]
    source = inspect.getsource(module)
    commented = {t.id for node in ast.parse(source).body if isinstance(node, (ast.Assign, ast.AnnAssign))
                 for t in (node.targets if isinstance(node, ast.Assign) else [node.target])
                 if isinstance(t, ast.Name)
                 and source.splitlines()[node.lineno - 2].lstrip().startswith("#:")}
    if name == "attnlib.interactive":  # the package page lists its modules; each documents its own names
        assert ":members:" not in options
        return
    assert ":members:" in options, f"{name} is documented without its members"
    for attr in module.__all__:
        value = getattr(module, attr)
        if inspect.isfunction(value) or inspect.isclass(value):
            assert inspect.getdoc(value), f"{name}.{attr} has no docstring"
        else:
            assert attr in commented, f"{name}.{attr} is a constant without a '#:' comment above it"
