"""The student edition: every chapter without its solutions, as web pages and as notebooks.

``make student`` (``python -m press.student``) writes

* ``_build/student/html``: the book as web pages, every exercise kept and every solution left out: no
  text, code, output, figure or search-index entry of a solution, and each chapter's ".ipynb" download
  item gives its student notebook;
* ``_build/student/notebooks``: the student notebooks, the notebook edition (``book/notebooks``) with
  the cells of every solution left out.

Nothing of a solution reaches the build: the solution cells are taken out of each chapter when Sphinx
reads it (``source-read``), before myst-nb parses it, so no doctree, search index, image, executed copy
(``jupyter_execute``) or glue value ever holds them, and sphinx-exercise's ``hide_solutions`` (which
crashes on the gated ``{solution-start}``/``{solution-end}`` form the chapters use, executablebooks/
sphinx-exercise#89) is not needed. A solution that reaches a doctree all the same (a cell without its
marker) is removed and reported as a warning, which fails the build (``-W``). The pages are built from
the stored outputs, with execution off: nbval checks that they are current.

**Markers.** The chapters mark their solutions as nbgrader does (``notebook_edition.mark_solutions``
adds them; ``python -m press.notebook_edition --mark`` after writing a new exercise):

* every cell between ``{solution-start}`` and ``{solution-end}`` has nbgrader cell metadata with
  ``"solution": true``; a code cell among them opens with ``### BEGIN SOLUTION`` and ends with
  ``### END SOLUTION``;
* a solution inside a cell that holds other text too (the "Answer" dropdown of chapter 3's "Check by
  hand" box) is a region between those two lines, in a cell marked as a solution;
* a Markdown solution cell is also a grade cell (``"grade": true``, ``"points": 0``): nbgrader refuses
  a Markdown solution cell that is not graded ("Markdown solution cell is not marked as a grade cell",
  its metadata validator), so ``"grade": false`` would not be nbgrader-compatible.

The web pages of the full book (``make book``) never show the marker lines: this extension removes
them as the chapters are read (comment lines: the outputs are the same).

**nbgrader.** An instructor feeds nbgrader the notebook edition, ``book/notebooks/<chapter>.ipynb``
(copied to ``source/<assignment>/``), not the chapters: the chapters are MyST notebooks whose text
shows role and directive syntax in Jupyter and whose code needs myst-nb. In the notebook edition each
exercise's solution is one Markdown cell (a ``<details>`` block holding its text, code and outputs),
marked as a manually graded answer worth 1 point (grade id: the exercise's label), and so is the
answer of a "Check by hand" box; ``nbgrader generate_assignment`` replaces each with "YOUR ANSWER
HERE" and keeps everything else, which gives the student notebook with a place for every answer
(nbgrader 0.9.6 accepts the notebook edition, and the chapters too, checked by hand).
Solution code inside other code (``### BEGIN SOLUTION`` lines in an exercise cell) keeps its markers
there, and nbgrader replaces it with its code stub; the student edition puts ``# YOUR CODE HERE`` in its
place, without nbgrader's ``raise NotImplementedError()``, so the student notebook still runs.

The edition is chosen by the Sphinx configuration value ``book_edition`` (``full`` or ``student``) or
the environment variable ``BOOK_EDITION``, which wins. In the student edition the page title says so
and there are no Binder or Colab buttons: they would open the notebook edition, with its solutions.

The second half of this module finds what a solution would leave behind (distinctive pieces of its
text, code and outputs, its figures, search-index stems of words only solutions use) and searches a
build's files for them, reading HTML, JavaScript and JSON every way that could hide a piece; files
copied unchanged from an installed package (MathJax, Plotly, the theme) are recognised by their bytes.
tests/test_student_edition.py and tests/browser/test_student.py use it.

Usage: ``python -m press.student [--out DIR] [--edition student|full]``; ``--edition full`` builds
the full book the same way (stored outputs), which the tests compare against.
"""

from __future__ import annotations

import argparse
import ast
import base64
import functools
import hashlib
import html
import json
import os
import re
import shutil
import sys
import time
import unicodedata
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import nbformat
from sphinx.errors import ConfigError
from sphinx.transforms import SphinxTransform
from sphinx.util import logging
from sphinx_exercise.nodes import solution_end_node, solution_node, solution_start_node

from press import notebook_edition as nbe

ROOT = Path(__file__).resolve().parents[2]
EDITION_VARIABLE = "BOOK_EDITION"
EDITIONS = ("full", "student")
STUDENT_TITLE = "student edition"
logger = logging.getLogger(__name__)


# --------------------------------------------------------------------------- the chapters as read
def student_notebook(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """A copy of a chapter, every solution cell and region left out (``notebook_edition.student_cell``)."""
    new = nbformat.from_dict(dict(nb))
    new.cells = [kept for cell in nb.cells if (kept := nbe.student_cell(cell)) is not None]
    return new


def full_notebook(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """A copy of a chapter with the marker lines removed (what the full book shows)."""
    new = nbformat.from_dict(dict(nb))
    for cell in new.cells:
        cell.source = nbe.without_markers(cell.source)
    return new


# --------------------------------------------------------------------------- the Sphinx extension
def edition_of(config: Any) -> str:
    """``full`` or ``student``: ``BOOK_EDITION`` in the environment, else ``book_edition`` in the config."""
    value = os.environ.get(EDITION_VARIABLE, "").strip() or str(config.book_edition or "full").strip()
    if value not in EDITIONS:
        raise ConfigError(f"{EDITION_VARIABLE} / book_edition must be one of {EDITIONS}; got {value!r}")
    return value


def _configure(app: Any, config: Any) -> None:
    """Student edition: say so in the title, and no launch buttons (after launch.py's, at 500)."""
    if edition_of(config) != "student":
        return
    title = str(config.html_title or config.project or "")
    if STUDENT_TITLE not in title:
        config.html_title = f"{title} ({STUDENT_TITLE})" if title else STUDENT_TITLE
    options = dict(config.html_theme_options or {})
    options["launch_buttons"] = {}
    options.pop("repository_url", None)
    config.html_theme_options = options


def _read(app: Any, docname: str, source: list[str]) -> None:
    """``source-read``: a chapter without its solutions (student) or without the marker lines (full)."""
    path = Path(app.env.doc2path(docname))
    if path.suffix != ".ipynb":
        return
    nb = nbformat.reads(source[0], as_version=4)
    if edition_of(app.config) == "student":
        for problem in nbe.marker_problems(nb, path.name):
            logger.warning(
                f"{problem}: the student edition would show it (run `python -m press.notebook_edition "
                "--mark`)", location=docname, type="student", subtype="markers")
        nb = student_notebook(nb)
    else:
        nb = full_notebook(nb)
    source[0] = nbformat.writes(nb)


class NoSolutionInTheStudentEdition(SphinxTransform):
    """Remove any solution that reached a student doctree, with a warning (its cells lack markers)."""

    default_priority = 11  # after sphinx-exercise merges the gated solutions (10)

    def apply(self, **kwargs: Any) -> None:
        if edition_of(self.config) != "student":
            return
        for kind in (solution_node, solution_start_node, solution_end_node):
            for node in list(self.document.findall(kind)):
                logger.warning(
                    "a solution without nbgrader markers reached the student edition and was removed; mark "
                    "it (notebook cells: `python -m press.notebook_edition --mark`; a Markdown page "
                    "cannot hold a solution in the student edition)",
                    location=node, type="student", subtype="unmarked")
                node.parent.remove(node)


def _serve_student_notebooks(app: Any, exception: Exception | None) -> None:
    """Each chapter's ".ipynb" download item gives its student notebook (after launch.py's copy, at 500)."""
    if exception is not None or app.builder.format != "html" or edition_of(app.config) != "student":
        return
    for name, nb in nbe.build(Path(app.srcdir), edition="student").items():
        target = Path(app.outdir) / "_sources" / "book" / name
        if target.exists():
            target.write_text(nbe.serialise(nb), encoding="utf-8")


def setup(app: Any) -> dict[str, Any]:
    app.add_config_value("book_edition", "full", "env", [str])
    app.connect("config-inited", _configure, priority=600)
    app.connect("source-read", _read)
    app.add_transform(NoSolutionInTheStudentEdition)
    app.connect("build-finished", _serve_student_notebooks, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}


# --------------------------------------------------------------------------- what a solution leaves behind
QUOTES = {"“": '"', "”": '"', "„": '"', "″": '"', "‘": "'", "’": "'", "‚": "'", "′": "'", "–": "-",
          "—": "-", "…": "...", "\u200b": ""}


def normalise(text: str) -> str:
    """Text as compared: NFKC, straight quotes and dashes (Sphinx's smart quotes undone), lower case,
    no whitespace at all (a web page breaks lines and splits code into spans where the source does not)
    and no ``*`` or backtick (Markdown's emphasis and code marks, which a page renders as tags)."""
    if not text.isascii():
        text = unicodedata.normalize("NFKC", text)  # also no-break and thin spaces to spaces
        for fancy, plain in QUOTES.items():
            if fancy in text:
                text = text.replace(fancy, plain)
    text = re.sub(r"-{2,}", "-", text)
    return re.sub(r"[\s*`]+", "", text).lower()


@dataclass
class Solution:
    """One solution of a chapter, as its cells hold it."""

    chapter: str
    label: str
    markdown: list[str] = field(default_factory=list)
    code: list[str] = field(default_factory=list)  # cells the page shows (not remove-cell)
    outputs: list[str] = field(default_factory=list)  # their text outputs (those every run prints alike)
    images: list[bytes] = field(default_factory=list)  # their PNG outputs


def solutions(root: Path = ROOT) -> list[Solution]:
    """Every solution of every chapter, found by its markers (gated solutions and regions)."""
    found = []
    for path in sorted((root / "book").glob("[0-9]*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        current: Solution | None = None
        for cell, label in zip(nb.cells, nbe._in_gated_solution(nb), strict=True):
            if label is not None:
                if current is None or current.label != label:
                    current = Solution(path.name, label)
                    found.append(current)
                _add_cell(current, cell, nbe.without_markers(cell.source))
                continue
            current = None
            for k, region in enumerate(nbe.solution_regions(cell.source), start=1):
                sol = Solution(path.name, f"{cell.metadata['nbgrader']['grade_id']}-{k}")
                _add_cell(sol, cell, region, outputs=False)
                found.append(sol)
    return found


def _add_cell(sol: Solution, cell: nbformat.NotebookNode, text: str, outputs: bool = True) -> None:
    if cell.cell_type == "markdown":
        sol.markdown.append(text)
        return
    tags = cell.metadata.get("tags", [])
    if "remove-cell" in tags:
        return
    sol.code.append(text)
    if "nbval-ignore-output" in tags:  # timings: each run prints other numbers
        outputs = False
    for output in cell.get("outputs", []) if outputs else []:
        data = output.get("data", {})
        if output.get("output_type") == "stream":
            sol.outputs.append(output["text"])
        elif "image/png" in data:
            sol.images.append(base64.b64decode(data["image/png"]))
        elif "text/plain" in data and not any(k.startswith("application/") for k in data):
            sol.outputs.append(data["text/plain"])


SPLIT = re.compile(
    r"\$\$.*?\$\$|\$[^$]+\$|\{[\w:-]+\}`[^`]*`|\[[^\]]*\]\([^)]*\)|<[^>]+>"  # math, roles, links, tags
    r"|^[ \t]*(?:[`:]{3,}|:[\w-]+:)[^\n]*$"  # directive fences and options
    r"|^[ \t]*(?:#+|[-*+]|\d+\.)[ \t]|\n[ \t]*\n"  # headings, list items, paragraph breaks
    r"|\|",  # table cells (each its own <td> on a page)
    re.S | re.M,
)


def prose_pieces(markdown: str) -> list[str]:
    """Runs of plain text in MyST Markdown: split at math, roles, links, tags, directive lines, list
    markers, table cell borders and paragraph breaks (each renders differently on a page)."""
    return [piece for piece in SPLIT.split(markdown) if piece and piece.strip()]


def _windows(text: str, words: int) -> Iterator[str]:
    tokens = text.split()
    if len(tokens) <= words:
        yield " ".join(tokens)
        return
    for start in (0, (len(tokens) - words) // 2, len(tokens) - words):
        yield " ".join(tokens[start:start + words])


@dataclass(frozen=True)
class Fragment:
    """A distinctive piece of one solution: ``kind`` is text, code, output, image (sha256) or term."""

    solution: str
    kind: str
    value: str


def fragments(sols: list[Solution], elsewhere: str, per_kind: int = 3, min_chars: int = 24) -> list[Fragment]:
    """Up to ``per_kind`` pieces of each kind per solution, taken from its start, end and middle, that
    do not occur in ``elsewhere`` (the normalised text of everything that is not a solution), each at
    least ``min_chars`` long once normalised. Images are their SHA-256."""
    out: list[Fragment] = []
    for sol in sols:
        name = f"{sol.chapter}:{sol.label}"
        candidates = {
            "text": [w for text in sol.markdown for piece in prose_pieces(text) for w in _windows(piece, 7)],
            "code": [line for code in sol.code for line in nbe.without_glue(code).split("\n")
                     if line.strip() and not line.lstrip().startswith("#")],
            "output": [line for text in sol.outputs for line in text.split("\n")],
        }
        for kind, pieces in candidates.items():
            keys = [k for k in dict.fromkeys(normalise(p) for p in pieces) if len(k) >= min_chars]
            chosen: list[str] = []
            for key in _spread(keys):
                if key not in elsewhere:
                    chosen.append(key)
                    if len(chosen) == per_kind:
                        break
            out += [Fragment(name, kind, key) for key in chosen]
        out += [Fragment(name, "image", hashlib.sha256(img).hexdigest()) for img in sol.images]
    return out


def _spread(items: list[str]) -> list[str]:
    """``items`` reordered: first, last, middle, quarters, then the rest in order."""
    n = len(items)
    first = [i for i in dict.fromkeys((0, n - 1, n // 2, n // 4, 3 * n // 4)) if 0 <= i < n]
    return [items[i] for i in first] + [x for i, x in enumerate(items) if i not in first]


def search_terms(sols: list[Solution], elsewhere_words: Iterable[str],
                 per_solution: int = 3) -> list[Fragment]:
    """Search-index stems (Sphinx's English stemmer; 5 letters or more) of prose words that only
    solutions use: no word anywhere else has the same stem."""
    from sphinx.search.en import SearchEnglish

    lang = SearchEnglish({})
    words = {f"{sol.chapter}:{sol.label}": [w.lower() for text in sol.markdown for piece in prose_pieces(text)
                                            for w in re.findall(r"[A-Za-z]{6,}", piece)] for sol in sols}
    prefixes = {w[:3] for ws in words.values() for w in ws}  # the stemmer only changes a word's ending
    taken = {lang.stem(w) for w in {w.lower() for w in elsewhere_words} if w[:3] in prefixes}
    out = []
    for name, ws in words.items():
        stems = [s for s in dict.fromkeys(lang.stem(w) for w in ws) if s not in taken and len(s) >= 5]
        out += [Fragment(name, "term", s) for s in stems[:per_solution]]
    return out


def file_views(path: Path) -> tuple[str, str]:
    """(normalised text, sha256) of a file, read every way that could hide a solution's text: HTML and
    JavaScript with and without tags (attributes such as tooltips included) and with string escapes
    decoded (Plotly figures); JSON (a notebook, the search index, a source map) by its strings."""
    stat = path.stat()
    return _file_views(str(path), stat.st_mtime_ns, stat.st_size)


@functools.lru_cache(maxsize=256)
def _file_views(name: str, mtime_ns: int, size: int) -> tuple[str, str]:
    path = Path(name)
    data = path.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    text = data.decode("utf-8", errors="ignore")
    views = [text]
    if path.suffix in (".html", ".htm", ".xml", ".svg", ".js"):
        unescaped = html.unescape(text)
        views = [unescaped, html.unescape(re.sub(r"<[^>]*>", "", text))]  # tags first: "&lt;" is no tag
        if "\\" in text:
            views.append(_js_unescape(unescaped))
    if path.suffix in (".ipynb", ".json", ".js", ".map"):
        body = re.sub(r"^\s*Search\.setIndex\((.*)\)\s*;?\s*$", r"\1", text, flags=re.S)
        try:
            views = ["\n".join(_strings(json.loads(body)))]  # every string, escapes decoded
        except ValueError:
            pass
    return "\n".join(normalise(v) for v in views), digest


def _js_unescape(text: str) -> str:
    """JavaScript/JSON string escapes decoded: \\uXXXX, \\n, \\", \\/ and the like."""
    text = re.sub(r"\\u([0-9a-fA-F]{4})", lambda m: chr(int(m.group(1), 16)), text)
    return re.sub(r"\\(.)", lambda m: {"n": "\n", "r": "\n", "t": " "}.get(m.group(1), m.group(1)), text)


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield str(k)
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)


def index_terms(html_dir: Path) -> set[str]:
    """Every term of a build's search index (body and titles)."""
    text = (html_dir / "searchindex.js").read_text(encoding="utf-8")
    index = json.loads(re.sub(r"^\s*Search\.setIndex\((.*)\)\s*;?\s*$", r"\1", text, flags=re.S))
    return set(index.get("terms", {})) | set(index.get("titleterms", {}))


def package_files(names: Iterable[str]) -> dict[tuple[str, int], list[str]]:
    """The files of the installed Python packages with one of these ``names``, by (name, size)."""
    import sysconfig

    wanted = set(names)
    index: dict[tuple[str, int], list[str]] = {}
    for top in dict.fromkeys((sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"])):
        for folder, _, found in os.walk(top):
            for name in wanted.intersection(found):
                path = os.path.join(folder, name)
                index.setdefault((name, os.path.getsize(path)), []).append(path)
    return index


def is_package_copy(path: Path, index: dict[tuple[str, int], list[str]]) -> bool:
    """True if ``path`` has the bytes of an installed package's file of the same name (MathJax, Plotly,
    the theme's scripts and fonts, copied unchanged into ``_static``): such a file holds no book text."""
    candidates = index.get((path.name, path.stat().st_size), [])
    if not candidates:
        return False
    digest = hashlib.sha256(path.read_bytes()).digest()
    return any(hashlib.sha256(Path(c).read_bytes()).digest() == digest for c in candidates)


def found_in(fragments_: list[Fragment], files: Iterable[Path]) -> dict[Fragment, list[Path]]:
    """Which files hold which fragment: images by the hash of a file, terms not here (`index_terms`),
    every other kind as a substring of the file's normalised text (`file_views`)."""
    hits: dict[Fragment, list[Path]] = {}
    texts = [f for f in fragments_ if f.kind not in ("image", "term")]
    images = {f.value: f for f in fragments_ if f.kind == "image"}
    for path in files:
        text, digest = file_views(path)
        if digest in images:
            hits.setdefault(images[digest], []).append(path)
        for frag in texts:
            if frag.value in text:
                hits.setdefault(frag, []).append(path)
    return hits


def docstrings(source: str) -> list[str]:
    """The docstrings of a module, its classes and functions, and its ``#:`` attribute comments."""
    nodes = [n for n in ast.walk(ast.parse(source))
             if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))]
    found = [doc for n in nodes if (doc := ast.get_docstring(n))]
    return found + re.findall(r"^\s*#: ?(.*)$", source, flags=re.M)


def elsewhere_text(student_notebooks: dict[str, nbformat.NotebookNode],
                   root: Path = ROOT) -> tuple[str, list[str]]:
    """The normalised text of everything that is not a solution (the student notebooks, with their
    outputs, the chapters' cells outside solutions, the Markdown pages and the docstrings of attnlib that
    the API reference shows), and its words."""
    parts = []
    for nb in student_notebooks.values():
        for cell in nb.cells:
            parts.append(cell.source)
            for output in cell.get("outputs", []):
                data = {k: v for k, v in output.get("data", {}).items() if not k.startswith("image/")}
                rest = {k: v for k, v in output.items() if k != "data"}
                parts.append(_js_unescape(json.dumps([rest, data], ensure_ascii=False)))  # Plotly JSON too
    for path in sorted((root / "book").glob("[0-9]*.ipynb")):
        for cell in student_notebook(nbformat.read(path, as_version=4)).cells:
            parts.append(cell.source)
    for path in sorted((root / "book").rglob("*.md")):
        parts.append(path.read_text(encoding="utf-8"))
    for path in sorted((root / "attnlib").rglob("*.py")):
        parts += docstrings(path.read_text(encoding="utf-8"))
    text = "\n".join(parts)
    return normalise(text), re.findall(r"[A-Za-z]+", text)


# --------------------------------------------------------------------------- make student
def build(out: Path, edition: str = "student", root: Path = ROOT) -> int:
    """Write ``out/notebooks`` and ``out/html`` of ``edition`` from scratch; Sphinx's exit status."""
    from jupyter_book.sphinx import build_sphinx

    if edition not in EDITIONS:
        raise ValueError(f"edition must be one of {EDITIONS}; got {edition!r}")
    out = out.resolve()
    build_dir = root.resolve() / "_build"
    # Its html/ and notebooks/ are deleted first: never the repository's own (book/notebooks).
    if out == build_dir or (out.is_relative_to(root.resolve()) and not out.is_relative_to(build_dir)):
        raise ValueError(f"out must be a folder under {root / '_build'} or outside the repository; got {out}")
    for sub in ("html", "notebooks", "jupyter_execute", ".doctrees"):
        shutil.rmtree(out / sub, ignore_errors=True)
    (out / "notebooks").mkdir(parents=True)
    for name, nb in nbe.build(root, edition="student" if edition == "student" else "notebook").items():
        (out / "notebooks" / name).write_text(nbe.serialise(nb), encoding="utf-8")
    overrides = {
        "external_toc_path": (root / "_toc.yml").as_posix(),
        "latex_individualpages": False,
        "nitpicky": True,
        "nb_execution_mode": "off",  # the stored outputs, which nbval checks are current
        "book_edition": edition,
    }
    result = build_sphinx(root, out / "html", noconfig=True, path_config=str(root / "_config.yml"),
                          confoverrides=overrides, builder="html", warningiserror=True, keep_going=True,
                          quiet=True)
    return result if isinstance(result, int) else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "_build" / "student",
                        help="where html/ and notebooks/ go (default: _build/student)")
    parser.add_argument("--edition", choices=EDITIONS, default="student",
                        help="student (default), or the full book built the same way, to compare")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    status = build(args.out, args.edition)
    took = time.perf_counter() - start
    if status:
        print(f"The {args.edition} edition failed to build (status {status}); see the messages above.")
        return status
    print(f"Wrote the {args.edition} edition to {args.out}/html and {args.out}/notebooks in {took:.0f} s.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
