"""Local Sphinx extension: the built book serves attnlib's wheel, and its pages link to it.

A reader who has only the website (a notebook downloaded from a chapter, a student notebook from an
instructor, a Colab session) can install attnlib without the repository: every HTML build writes the
wheel and the sdist, built by ``python -m build`` from the sources of this checkout, to
``<html>/attnlib/`` (:data:`DIST_DIR`), and

* the footer of every page links to the wheel (a relative link, so it works from any copy of the site);
* the ``{attnlib-wheel}`` role writes the same link in prose (the introduction's "How to run it");
* the notebook edition's install cell falls back to ``<book_site_url>/attnlib/<wheel>`` when no
  repository is configured or it cannot be reached (``book/press/notebook_edition.py``).

The version is written once, as ``__version__`` in ``attnlib/__init__.py``; ``pyproject.toml`` reads it
from there (``[tool.setuptools.dynamic]``), and so does this module, without importing attnlib.
"""

from __future__ import annotations

import ast
import importlib.util
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from docutils import nodes
from sphinx.application import Sphinx

ROOT = Path(__file__).resolve().parents[2]
DIST_DIR = "attnlib"  # the folder of the built site that holds the wheel and the sdist
#: What the sdist and the wheel are built from (everything else in the repository is the book).
SOURCES = ("pyproject.toml", "README.md", "LICENSE", "LICENSE-text.md", "attnlib")


def source_root() -> Path:
    """The checkout attnlib is built from: the one around this file, or (when the book is built from a
    copy that holds no attnlib/, as the launch test does) the one the importable attnlib comes from."""
    if (ROOT / "attnlib" / "__init__.py").is_file():
        return ROOT
    spec = importlib.util.find_spec("attnlib")
    if spec is None or spec.origin is None:
        raise RuntimeError(f"no attnlib/ beside {ROOT} and no attnlib installed: no wheel to build")
    return Path(spec.origin).resolve().parents[1]


def version(root: Path = ROOT) -> str:
    """attnlib's version: the string literal ``__version__`` in ``attnlib/__init__.py``."""
    if not (root / "attnlib" / "__init__.py").is_file():
        root = source_root()
    tree = ast.parse((root / "attnlib" / "__init__.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "__version__" for t in node.targets):
            if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
                return node.value.value
    raise ValueError(f"{root / 'attnlib' / '__init__.py'} sets no string __version__")


def wheel_name(root: Path = ROOT) -> str:
    """The file name of attnlib's wheel (pure Python, any platform)."""
    return f"attnlib-{version(root)}-py3-none-any.whl"


def build_distributions(outdir: Path, root: Path = ROOT) -> tuple[Path, Path]:
    """Build attnlib's wheel and sdist into ``outdir`` with ``python -m build``; return (wheel, sdist).

    The sources are copied to a temporary folder first, so the build leaves nothing (``build/``,
    ``*.egg-info``) in the checkout. ``--no-isolation``: setuptools comes from this environment
    (``requirements.txt``), so building the book needs no download.
    """
    if not (root / "attnlib" / "__init__.py").is_file():
        root = source_root()
    outdir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="attnlib-dist-") as tmp:
        src = Path(tmp) / "src"
        src.mkdir()
        for name in SOURCES:
            path = root / name
            if path.is_dir():
                shutil.copytree(path, src / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
            else:
                shutil.copy2(path, src / name)
        run = subprocess.run(
            [sys.executable, "-m", "build", "--no-isolation", "--outdir", str(outdir), str(src)],
            capture_output=True, text=True, timeout=300,
        )
    if run.returncode != 0:
        raise RuntimeError(f"python -m build failed for attnlib:\n{run.stdout[-3000:]}\n{run.stderr[-3000:]}")
    wheel = outdir / wheel_name(root)
    sdists = sorted(outdir.glob(f"attnlib-{version(root)}.tar.gz"))
    if not wheel.is_file() or not sdists:
        wrote = sorted(p.name for p in outdir.iterdir())
        raise RuntimeError(f"python -m build wrote {wrote}, not {wheel.name}")
    return wheel, sdists[0]


def _href(docname: str, root: Path = ROOT) -> str:
    """The wheel's URL relative to the page of ``docname`` (HTML pages sit at ``<docname>.html``)."""
    return "../" * docname.count("/") + f"{DIST_DIR}/{wheel_name(root)}"


def link_html(docname: str, root: Path = ROOT) -> str:
    """The footer's line: where to get attnlib without the repository."""
    return (
        f'<p class="attnlib-wheel">To run the chapters outside this site\'s repository: '
        f'<a href="{_href(docname, root)}" download>attnlib {version(root)}</a> '
        f"(a wheel: <code>pip install \"{wheel_name(root)}[interactive]\"</code>).</p>"
    )


def wheel_role(name: str, rawtext: str, text: str, lineno: int, inliner: Any,
               options: dict[str, Any] | None = None, content: list[str] | None = None):
    """``{attnlib-wheel}`text``: a link to the served wheel with ``text`` (default: its file name)."""
    docname = inliner.document.settings.env.docname
    label = text.strip() or wheel_name()
    node = nodes.reference(rawtext, label, refuri=_href(docname), classes=["attnlib-wheel-link"])
    return [node], []


def _footer(app: Sphinx, pagename: str, templatename: str, context: dict[str, Any], doctree: Any) -> None:
    context["theme_extra_footer"] = (context.get("theme_extra_footer") or "") + link_html(pagename)


def _write(app: Sphinx, exception: Exception | None) -> None:
    if exception is None and app.builder.format == "html":
        build_distributions(Path(app.outdir) / DIST_DIR)


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_config_value("book_site_url", "", "env", [str])  # read by notebook_edition.Repository
    app.add_role("attnlib-wheel", wheel_role)
    app.connect("html-page-context", _footer)
    app.connect("build-finished", _write)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
