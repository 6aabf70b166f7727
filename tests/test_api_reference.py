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
    if name in ("attnlib.interactive", "attnlib.training", "attnlib.transformer"):  # each module its names
        assert ":members:" not in options
        return
    assert ":members:" in options, f"{name} is documented without its members"
    for attr in module.__all__:
        value = getattr(module, attr)
        if inspect.isfunction(value) or inspect.isclass(value):
            assert inspect.getdoc(value), f"{name}.{attr} has no docstring"
        else:
            assert attr in commented, f"{name}.{attr} is a constant without a '#:' comment above it"


# ----------------------------------------------------------------------------------- Raises sections
def _raised(node: ast.AST) -> set[str]:
    """The exception classes a function's own ``raise`` statements name."""
    found = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Raise) and n.exc is not None:
            exc = n.exc.func if isinstance(n.exc, ast.Call) else n.exc
            if isinstance(exc, ast.Name):
                found.add(exc.id)
    return found


def _validator_raises() -> dict[str, set[str]]:
    """What each helper of ``attnlib._validation`` raises, itself or through the helpers it calls."""
    tree = ast.parse((ROOT / "attnlib" / "_validation.py").read_text(encoding="utf-8"))
    helpers = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    calls = {name: {c.func.id for c in ast.walk(fn)
                    if isinstance(c, ast.Call) and isinstance(c.func, ast.Name) and c.func.id in helpers}
             for name, fn in helpers.items()}
    raises = {name: _raised(fn) for name, fn in helpers.items()}
    for _ in helpers:  # to a fixed point: a chain of calls is at most as long as the list of helpers
        raises = {name: raises[name].union(*(raises[c] for c in calls[name])) for name in helpers}
    return raises


def _listed(doc: str) -> set[str] | None:
    """The exception classes a numpydoc ``Raises`` section names, or None without one."""
    section = re.search(r"^\s*Raises\n\s*-+\n(.*?)(?=^\s*\w[\w ]*\n\s*-+\n|\Z)", doc, re.S | re.M)
    if section is None:
        return None
    heads = [line.split(":")[0] for line in section.group(1).splitlines()
             if re.match(r"\s{0,8}\w+(Error|Exception)", line) and not line.startswith(" " * 8)]
    return {name for head in heads for name in re.findall(r"\w+(?:Error|Exception)", head)}


def _public_functions() -> list[tuple[str, ast.FunctionDef, str]]:
    """(where, function, docstring) of every public module-level function and method, ``__init__`` with
    its class's docstring (numpydoc documents a constructor there), ``__call__`` included."""
    found = []
    for name in DOCUMENTED:
        path = Path(importlib.import_module(name).__file__)
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for top in tree.body:
            methods = [(top, m) for m in top.body if isinstance(m, ast.FunctionDef)] if isinstance(
                top, ast.ClassDef) else [(None, top)] if isinstance(top, ast.FunctionDef) else []
            for cls, fn in methods:
                if fn.name.startswith("_") and fn.name not in ("__init__", "__call__"):
                    continue
                if cls is not None and cls.name.startswith("_"):
                    continue
                doc = ast.get_docstring(fn) or ""
                if fn.name == "__init__":
                    doc = (ast.get_docstring(cls) or "") + "\n" + doc
                where = f"{path.relative_to(ROOT)}:{fn.lineno} {cls.name + '.' if cls else ''}{fn.name}"
                found.append((where, fn, doc))
    return found


def test_every_exception_a_function_raises_itself_is_in_its_raises_section() -> None:
    """What a function raises with its own ``raise`` or through a ``_validation`` helper (``_v.check_…``)
    is listed in its docstring. (Exceptions passed up from other attnlib functions are not traced.)"""
    helpers = _validator_raises()
    missing = []
    for where, fn, doc in _public_functions():
        own = {n for n in ast.walk(fn) if isinstance(n, (ast.FunctionDef, ast.Lambda)) and n is not fn}
        nested = set().union(*(set(ast.walk(n)) for n in own)) if own else set()
        raised = set().union(*(_raised(n) for n in ast.walk(fn)
                               if isinstance(n, ast.Raise) and n not in nested))
        raised |= set().union(*(helpers.get(c.func.attr, set()) for c in ast.walk(fn) if c not in nested
                                and isinstance(c, ast.Call) and isinstance(c.func, ast.Attribute)
                                and isinstance(c.func.value, ast.Name) and c.func.value.id == "_v"))
        listed = _listed(doc)
        if raised and (listed is None or not raised <= listed):
            missing.append(f"{where}: raises {sorted(raised)}, its Raises section lists "
                           f"{sorted(listed) if listed is not None else 'nothing'}")
    assert not missing, "\n".join(missing)


def test_the_raises_reader_reads_numpydoc() -> None:
    doc = ("Summary.\n\nRaises\n------\nTypeError, ValueError\n    When.\nKeyError\n    Else.\n\n"
           "Examples\n--------\n")
    assert _listed(doc) == {"TypeError", "ValueError", "KeyError"}
    assert _listed("Summary; ``KeyError`` if absent.") is None
