"""The house rules of the chapters, checked on the stored notebooks.

The house style asks every chapter for learning objectives, one import cell, no reusable code defined in
the notebook, a summary, and exercises with solutions; nbval compares stored outputs, so the
notebooks must also be stored as executed top to bottom in one run. These tests read the .ipynb
files as JSON and fail with the notebook and cell named.
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest

from press.notebook_edition import is_deeper_page

ROOT = Path(__file__).resolve().parents[1]
BOOK = ROOT / "book"

CHAPTERS = sorted(p for p in BOOK.glob("*.ipynb") if not p.name.startswith("."))  # and going-deeper pages
# A going-deeper page (04a_scaling_deeper.ipynb) follows its chapter (04_scaling.ipynb): material the core
# path leaves out, with no objectives or exercises of its own.
DEEPER = [p for p in CHAPTERS if is_deeper_page(p)]
MIN_EXERCISES = 3


def _load(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def _code_cells(nb: dict) -> list[tuple[int, str, dict]]:
    return [
        (i, "".join(c["source"]), c)
        for i, c in enumerate(nb["cells"])
        if c["cell_type"] == "code" and "".join(c["source"]).strip()
    ]


def _markdown(nb: dict) -> str:
    return "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")


def _toc_files() -> list[str]:
    text = (ROOT / "_toc.yml").read_text(encoding="utf-8")
    return re.findall(r"^\s*(?:root|- file):\s*(\S+)\s*$", text, flags=re.MULTILINE)


def test_chapters_found() -> None:
    assert len(CHAPTERS) >= 2, f"expected the chapters under {BOOK}, found {CHAPTERS}"


def test_toc_lists_existing_files_and_every_chapter() -> None:
    listed = _toc_files()
    assert listed, "no files found in _toc.yml"
    for entry in listed:
        candidates = [ROOT / f"{entry}{ext}" for ext in (".md", ".ipynb")]
        assert any(c.exists() for c in candidates), f"_toc.yml lists {entry}, which does not exist"
    for chapter in CHAPTERS:
        assert f"book/{chapter.stem}" in listed, f"{chapter.name} is not in _toc.yml"


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_executed_top_to_bottom_without_errors(path: Path) -> None:
    cells = _code_cells(_load(path))
    counts = [c.get("execution_count") for _, _, c in cells]
    assert counts == list(range(1, len(cells) + 1)), (
        f"{path.name}: execution counts {counts} are not 1..{len(cells)}; "
        "re-run it top to bottom: jupyter execute --inplace"
    )
    for i, _, cell in cells:
        for out in cell.get("outputs", []):
            assert out.get("output_type") != "error", f"{path.name} cell {i} stores an error"


def _removed_glue_import(src: str, cell: dict) -> bool:
    """The one import a reader never sees: ``from myst_nb import glue`` in a removed cell of its own."""
    return src.strip() == "from myst_nb import glue" and "remove-cell" in cell["metadata"].get("tags", [])


def _glue_calls(src: str) -> int:
    return sum(isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "glue"
               for n in ast.walk(ast.parse(src)))


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_no_reader_sees_book_plumbing(path: Path) -> None:
    """``glue(...)`` puts a computed number into the prose; the reader sees the number, not the call. Every
    glue call and its import sit in removed cells (hidden cells count as seen: a reader can open them)."""
    shown = [i for i, src, cell in _code_cells(_load(path))
             if "remove-cell" not in cell["metadata"].get("tags", [])
             and (_glue_calls(src) or "myst_nb" in src)]
    assert not shown, f"{path.name}: cells {shown} show glue(...) or its import; move it to a removed cell"


def test_the_plumbing_rule_sees_a_glue_call_and_its_import() -> None:
    assert _glue_calls('x = 1\nglue("x", x, display=False)') == 1
    assert _glue_calls("for k in ks:\n    glue(k, 1)") == 1
    assert _glue_calls("print(glued)") == 0
    cell = {"metadata": {"tags": ["remove-cell"]}}
    assert _removed_glue_import("from myst_nb import glue", cell)
    assert not _removed_glue_import("from myst_nb import glue", {"metadata": {}})


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_one_import_cell_and_no_definitions(path: Path) -> None:
    cells = _code_cells(_load(path))
    first, *rest = cells
    assert any(isinstance(n, (ast.Import, ast.ImportFrom)) for n in ast.parse(first[1]).body), (
        f"{path.name}: the first code cell should be the import cell"
    )
    for i, src, cell in rest:
        if _removed_glue_import(src, cell):
            continue
        tree = ast.parse(src)
        for node in ast.walk(tree):
            assert not isinstance(node, (ast.Import, ast.ImportFrom)), (
                f"{path.name} cell {i}: imports belong in the one import cell at the top"
            )
            assert not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)), (
                f"{path.name} cell {i}: defines {type(node).__name__}; reusable code belongs in attnlib"
            )


@pytest.mark.parametrize("path", [p for p in CHAPTERS if p not in DEEPER], ids=lambda p: p.name)
def test_chapter_template(path: Path) -> None:
    nb = _load(path)
    md = _markdown(nb)
    assert re.search(r"^#\s+\S", md, flags=re.MULTILINE), f"{path.name}: no title"
    assert re.search(r"^#+\s+Learning objectives", md, flags=re.MULTILINE | re.IGNORECASE), (
        f"{path.name}: no 'Learning objectives' section"
    )
    assert re.search(r"^#+\s+Summary", md, flags=re.MULTILINE | re.IGNORECASE), (
        f"{path.name}: no 'Summary' section"
    )
    exercises = re.findall(r"[:`]{3,}\{exercise\}[^\n]*\n(?::[a-z-]+:[^\n]*\n)*?:label:\s*(\S+)", md)
    assert len(exercises) >= MIN_EXERCISES, f"{path.name}: {len(exercises)} exercises, need {MIN_EXERCISES}"
    solved = set(re.findall(r"\{solution(?:-start)?\}\s+(\S+)", md))
    missing = [label for label in exercises if label not in solved]
    assert not missing, f"{path.name}: exercises without a solution: {missing}"
    dropdown = re.findall(r"\{solution(?:-start)?\}\s+\S+\s*\n:class:\s*dropdown", md)
    assert len(dropdown) >= len(exercises), f"{path.name}: every solution should be a dropdown"


@pytest.mark.parametrize("path", DEEPER, ids=lambda p: p.name)
def test_going_deeper_page_template(path: Path) -> None:
    """Marked as such, nested under its chapter in the table of contents, announced by the chapter's own
    "Going deeper" section, with a summary and no exercises (the core path never needs it)."""
    md = _markdown(_load(path))
    assert re.search(r"^# Going deeper: \S", md, flags=re.MULTILINE), path.name
    assert re.search(r"^#+\s+Summary", md, flags=re.MULTILINE), f"{path.name}: no 'Summary' section"
    assert "{exercise}" not in md, f"{path.name}: exercises belong to the chapter"
    chapter = next(p for p in CHAPTERS if p.name[:2] == path.name[:2] and p not in DEEPER)
    toc = (ROOT / "_toc.yml").read_text(encoding="utf-8")
    nested = re.search(rf"- file: book/{chapter.stem}\n\s+sections:\n(?:\s+- file: \S+\n)*?"
                       rf"\s+- file: book/{path.stem}\n", toc)
    assert nested, f"_toc.yml should list {path.stem} among the sections of {chapter.stem}"
    section = re.search(r"^## Going deeper\n(.*?)(?=^## |\Z)", _markdown(_load(chapter)),
                        flags=re.MULTILINE | re.S)
    # the link may carry its own text: {doc}`The going-deeper page <04a_scaling_deeper>`
    assert section and re.search(rf"\{{doc\}}`(?:[^`<]*<{path.stem}>|{path.stem})`", section.group(1)), (
        f"{chapter.name} should point to {path.stem} from a '## Going deeper' section")


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_every_glue_reference_is_glued(path: Path) -> None:
    nb = _load(path)
    referenced = set(re.findall(r"\{glue(?::\w+)?\}`([A-Za-z_][\w]*)", _markdown(nb)))
    glued = set()
    for _, src, _ in _code_cells(nb):
        glued |= set(re.findall(r"glue\(\s*[\"']([\w]+)[\"']", src))
    assert referenced <= glued, f"{path.name}: referenced but never glued: {sorted(referenced - glued)}"


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_no_saved_widget_state(path: Path) -> None:
    # Saved widget state is dead weight in the static book (no kernel); `make execute` strips it.
    assert "widgets" not in _load(path).get("metadata", {}), f"{path.name} stores widget state"


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_every_image_has_alt_text(path: Path) -> None:
    # myst-nb writes metadata.mystnb.image.alt into the <img>; screen readers need it.
    for i, _, cell in _code_cells(_load(path)):
        if any("image/png" in out.get("data", {}) for out in cell.get("outputs", [])):
            alt = cell.get("metadata", {}).get("mystnb", {}).get("image", {}).get("alt", "")
            assert len(alt) > 20, f"{path.name} cell {i}: a figure without alt text (mystnb.image.alt)"


# Provenance a reader can follow: the book and attnlib cite public sources from references.bib and
# never point to documents a reader cannot see.
UNFOLLOWABLE = re.compile(
    r"reference documents?|commissioned|\bdocument\s*0\d\d\b|shared/seeds", flags=re.IGNORECASE
)
PROVENANCE_FILES = sorted(
    [*BOOK.rglob("*.md"), *BOOK.glob("*.ipynb"), *BOOK.glob("*.bib"), *(ROOT / "attnlib").rglob("*.py")]
)


@pytest.mark.parametrize("path", PROVENANCE_FILES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_no_pointer_to_documents_a_reader_cannot_see(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    hits = [
        f"line {text.count(chr(10), 0, m.start()) + 1}: {text[max(0, m.start() - 40) : m.end() + 40]!r}"
        for m in UNFOLLOWABLE.finditer(text)
    ]
    assert not hits, f"{path.relative_to(ROOT)} points to unpublished documents:\n  " + "\n  ".join(hits)


def test_provenance_pattern_finds_what_it_should() -> None:
    for text in ("see reference document 004", "the book was commissioned from", "Document 003"):
        assert UNFOLLOWABLE.search(text), text
    assert not UNFOLLOWABLE.search("a published model such as GPT-2; see the documentation")
