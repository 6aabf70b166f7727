"""The student edition in the browser (``make student``; book/press/student.py): printed, it shows no answer.

Reads the student pages that ``make student`` writes (``_build/student/html``; ``STUDENT_HTML_DIR``
overrides) and the full book of ``make build`` (``_build/html``). What a passing run guarantees:

* the full book still shows every solution: each chapter page has one sphinx-exercise solution per
  gated solution of the chapter and holds every distinctive piece of their text, code and outputs
  (the pieces tests/test_student_edition.py looks for), and no page shows a ``### BEGIN SOLUTION``
  marker line;
* each student chapter, printed as a reader prints it (print media, after the toggle extension's
  ``beforeprint`` handler has opened every dropdown and every ``<details>`` is open), shows every
  exercise and none of those pieces; its page has no solution element at all, so no print style can
  bring one back;
* printed to PDF by Chromium and read back with pypdf, a student chapter holds no piece while the same
  chapter of the full book, printed with its solutions (print_pdf.py's switch), holds pieces of each.
"""

from __future__ import annotations

import io
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbformat
import pytest
from pypdf import PdfReader

from press import notebook_edition as nbe
from press import print_pdf, student

REPO_ROOT = Path(__file__).resolve().parents[2]

STUDENT_DIR = Path(os.environ.get("STUDENT_HTML_DIR", REPO_ROOT / "_build" / "student" / "html")).resolve()
# The chapters with exercises and solutions (not the going-deeper pages).
CHAPTERS = sorted(p.stem for p in (REPO_ROOT / "book").glob("[0-9]*.ipynb") if not nbe.is_deeper_page(p))
BEFOREPRINT_JS = """
() => {
  window.dispatchEvent(new Event('beforeprint'));
  document.querySelectorAll('details').forEach(d => { d.open = true; });
}
"""


@pytest.fixture(scope="module")
def student_dir() -> Path:
    if not (STUDENT_DIR / "index.html").is_file():
        pytest.fail(f"The student edition is missing: {STUDENT_DIR} has no index.html. Run `make student`.",
                    pytrace=False)
    return STUDENT_DIR


@pytest.fixture(scope="module")
def student_url(student_dir: Path) -> Iterator[str]:
    with print_pdf.serve(student_dir) as url:
        yield url


@pytest.fixture(scope="module")
def pieces() -> dict[str, list[student.Fragment]]:
    """Each chapter's distinctive pieces of solution text, code and outputs, by chapter stem."""
    sols = student.solutions(REPO_ROOT)
    elsewhere, _ = student.elsewhere_text(nbe.build(REPO_ROOT, edition="student"), REPO_ROOT)
    found: dict[str, list[student.Fragment]] = {c: [] for c in CHAPTERS}
    for frag in student.fragments(sols, elsewhere):
        if frag.kind in ("text", "code", "output"):
            found[frag.solution.split(":")[0].removesuffix(".ipynb")].append(frag)
    assert all(found.values()), {c: len(f) for c, f in found.items()}
    return found


def _gated(chapter: str) -> int:
    nb = nbformat.read(REPO_ROOT / "book" / f"{chapter}.ipynb", as_version=4)
    return sum(len(nbe.SOLUTION_START.findall(c.source)) for c in nb.cells if c.cell_type == "markdown")


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_the_full_book_shows_every_solution(html_dir: Path, pieces, chapter: str) -> None:
    page = html_dir / "book" / f"{chapter}.html"
    text = page.read_text(encoding="utf-8")
    assert len(re.findall(r'<div class="[^"]*\bsolution\b', text)) == _gated(chapter) > 0
    hits = student.found_in(pieces[chapter], [page])
    missing = [f for f in pieces[chapter] if f not in hits]
    assert not missing, f"{chapter}: the full page lacks {missing[:5]}"
    assert "BEGIN SOLUTION" not in text and "END SOLUTION" not in text, (
        f"{chapter}: the marker lines show: register book/press/student.py in _config.yml")


def _open(browser: Any, url: str) -> tuple[Any, Any, list[str]]:
    context = browser.new_context(viewport={"width": print_pdf.TEXT_WIDTH_PX, "height": 1000})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(url, wait_until="load")
    page.evaluate(print_pdf.SCRIPTS_JS)  # the page's scripts load after its first paint
    page.evaluate(print_pdf.READY_JS)
    return context, page, errors


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_a_printed_student_chapter_shows_its_exercises_and_no_answer(
    browser: Any, student_url: str, pieces, chapter: str
) -> None:
    context, page, errors = _open(browser, f"{student_url}/book/{chapter}.html")
    try:
        assert page.evaluate("() => document.querySelectorAll('.solution, [class*=solution-]').length") == 0
        page.evaluate(BEFOREPRINT_JS)
        page.emulate_media(media="print")
        printed = student.normalise(page.evaluate("() => document.body.innerText"))
        leaked = [f for f in pieces[chapter] if f.value in printed]
        assert not leaked, f"printing {chapter} shows solution text: {leaked[:3]}"
        n = int(chapter[:2])
        exercises = re.findall(rf"exercise{n}\.(\d+)", printed)
        assert exercises and sorted(set(map(int, exercises))) == list(range(1, max(map(int, exercises)) + 1))
        assert not errors, errors
    finally:
        context.close()


def _pdf_text(page: Any) -> str:
    reader = PdfReader(io.BytesIO(page.pdf(**print_pdf.PDF_OPTIONS)))
    return student.normalise("\n".join(p.extract_text() or "" for p in reader.pages))


def test_a_student_chapter_printed_to_pdf_holds_no_solution(
    browser: Any, student_url: str, base_url: str, pieces
) -> None:
    chapter = "03_worked_examples"
    frags = pieces[chapter]
    context, page, _ = _open(browser, f"{student_url}/book/{chapter}.html")
    try:
        page.evaluate(BEFOREPRINT_JS)
        page.emulate_media(media="print")
        printed = _pdf_text(page)
    finally:
        context.close()
    assert not [f for f in frags if f.value in printed], "the student PDF holds solution text"
    source = nbformat.read(REPO_ROOT / "book" / f"{chapter}.ipynb", as_version=4)
    count = sum(c.source.count(":::{exercise}") for c in source.cells if c.cell_type == "markdown")
    assert count >= 3 and all(f"exercise3.{k}" in printed for k in range(1, count + 1)), (
        f"an exercise of the {count} is missing from the PDF")
    # The same chapter of the full book, printed with its solutions, holds pieces of every solution:
    # the search above would have found them.
    context, page, _ = _open(browser, f"{base_url}/book/{chapter}.html")
    try:
        page.evaluate(f"() => document.documentElement.classList.add('{print_pdf.WITH_SOLUTIONS_CLASS}')")
        page.evaluate(BEFOREPRINT_JS)
        page.emulate_media(media="print")
        full = _pdf_text(page)
    finally:
        context.close()
    solutions = {f.solution for f in frags}
    shown = {f.solution for f in frags if f.value in full}
    assert shown == solutions, f"not found in the full PDF: {sorted(solutions - shown)}"
