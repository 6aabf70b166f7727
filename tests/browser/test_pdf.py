"""``make pdf``: the built book printed by headless Chromium into two PDFs (book/press/print_pdf.py).

The two PDFs are made once per session from the built HTML, into a temporary directory. What a passing
run guarantees:

* both files open with pypdf and have pages; the full one has more (it holds the solutions);
* every page of ``_toc.yml`` has its title (the ``<h1>`` of the built page) at the head of a PDF page,
  in table-of-contents order, in both PDFs; the outline has one entry per page of the book, in order,
  pointing at that page; no link points at the local server the pages were printed from;
* no raw TeX outside code: in each chapter's pages a TeX command (``\\frac``, ``\\sqrt``, ...) occurs no
  more often than in that chapter's code blocks (the HTML's math holds hundreds of them);
* every solution (sphinx-exercise's ``div.solution`` in the HTML) is in the full PDF, after its chapter's
  exercises and before the next chapter, titled "Solution to Exercise N.k", in exercise order, found by
  several distinctive pieces of its text (pieces that occur nowhere else in the book); none of these
  pieces and no solution title is in the student PDF, which still has every exercise;
* every static explorer prints with the line saying that it is interactive online;
* the browser's own print of a chapter (the page's ".pdf" item: print media, after the toggle
  extension's ``beforeprint`` handler has opened every dropdown and every ``<details>`` is open) shows
  no solution text, while the same page on screen after that handler does show it.

Text is compared after Unicode NFKC (the PDF's ligatures ``ﬁ`` become ``fi``) with all whitespace
removed, because the PDF's line breaks fall elsewhere than the HTML's.
"""

from __future__ import annotations

import multiprocessing
import re
import unicodedata
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from bs4 import BeautifulSoup, Tag
from pypdf import PdfReader

from press import print_pdf

REPO_ROOT = Path(__file__).resolve().parents[2]
from sections import DRAW_SECTIONS_JS  # noqa: E402

# TeX commands that would show if math were not typeset.
TEX_COMMANDS = (
    "frac",
    "sqrt",
    "mathrm",
    "operatorname",
    "mathbb",
    "mathbf",
    "left",
    "right",
    "cdot",
    "top",
    "sum",
    "exp",
    "tilde",
    "hat",
    "dots",
    "ldots",
    "text",
    "le",
    "ge",
    "in",
    "ln",
    "log",
    "bigl",
    "bigr",
)
TEX = re.compile(r"\\(" + "|".join(TEX_COMMANDS) + r")(?![A-Za-z])")
# Left out of the prose runs: math, code, titles and anything else that the PDF does not print as
# running text (the visually hidden descriptions of the figures).
NOT_PROSE = (
    ".math, mjx-container, pre, code, .admonition-title, .headerlink, .caption-number, "
    "[style*='position:absolute']"
)
BLOCKS = "p, li, ol, ul, dl, dt, dd, div, section, table, tr, td, th, h1, h2, h3, h4, blockquote, figcaption"
MIN_PIECE = 24  # characters (whitespace removed) of a piece of text looked for in a PDF
WORDS_PER_PIECE = 8
PIECES_PER_SOLUTION = 4  # spread over the solution; all but one must be found (one may cross a page)
EXPLORER_NOTE = "Interactive in the online book"


def squash(text: str) -> str:
    """``text`` in the form both sides are compared in: NFKC, no whitespace at all."""
    return re.sub(r"\s+", "", unicodedata.normalize("NFKC", text))


def prose_runs(element: Tag) -> list[str]:
    """The prose of ``element`` (not math, code or titles) in pieces of at most WORDS_PER_PIECE words.

    A piece never spans a paragraph, a list item or a formula. Short pieces, because the PDF's text
    does not always run on where a paragraph crosses a page break: pypdf gives a page's text in the
    order Chromium painted it, and the formulas and code blocks of the page come after its prose.
    """
    clone = BeautifulSoup(str(element), "html.parser")
    for node in clone.select(NOT_PROSE):
        node.replace_with("\x00")
    for block in clone.select(BLOCKS):
        block.insert(0, "\x00")
        block.append("\x00")
    pieces = []
    for run in clone.get_text().split("\x00"):
        words = run.split()
        for start in range(0, len(words), WORDS_PER_PIECE):
            piece = squash(" ".join(words[start : start + WORDS_PER_PIECE]))
            if len(piece) >= MIN_PIECE:
                pieces.append(piece)
    return pieces


def code_lines(element: Tag) -> list[str]:
    """The lines of the code blocks and outputs in ``element``, as squashed strings."""
    return [
        squash(line)
        for pre in element.select("pre")
        for line in pre.get_text().splitlines()
        if len(squash(line)) >= MIN_PIECE
    ]


@dataclass
class Chapter:
    """What the built HTML of one page of the toc says that the PDFs must show."""

    rel: str
    title: str  # the <h1>, with its number
    opening: str  # the first run of prose of the page
    code_tex: dict[str, int]  # TeX commands in the page's printed code blocks
    exercises: list[tuple[str, list[str]]] = field(default_factory=list)  # (label, prose pieces)
    solutions: list[tuple[str, list[str]]] = field(default_factory=list)  # (exercise label, pieces)
    explorers: int = 0


def _label(exercise: Tag) -> str:
    return " ".join(exercise.select_one(".caption-number").get_text().split())


def read_chapter(html_dir: Path, rel: str) -> Chapter:
    soup = BeautifulSoup((html_dir / rel).read_text(encoding="utf-8"), "html.parser")
    article = soup.select_one("article.bd-article")
    assert article is not None, f"{rel} has no article"
    for folded in article.select(".tag_hide-cell, .reading-time"):  # folded away or screen-only: not printed
        folded.decompose()
    h1 = article.find("h1")
    for link in h1.select(".headerlink"):
        link.decompose()
    counts: dict[str, int] = {}
    for pre in article.select("pre"):
        for match in TEX.finditer(pre.get_text()):
            counts[match.group(1)] = counts.get(match.group(1), 0) + 1
    runs = prose_runs(article)
    assert runs, f"{rel} has no prose"
    chapter = Chapter(rel, " ".join(h1.get_text().split()), runs[0], counts)
    chapter.explorers = len(article.select("figure.attnlib-explorer"))
    chapter.exercises = [(_label(e), prose_runs(e)) for e in article.select("div.exercise")]
    for solution in article.select("div.solution"):
        target = solution.select_one(".admonition-title a")["href"].lstrip("#")
        label = _label(article.find(id=target))
        chapter.solutions.append((label, [*prose_runs(solution), *code_lines(solution)]))
    return chapter


@dataclass
class Book:
    chapters: list[Chapter]
    formulas: int  # .math elements of the toc's pages: MathML, or TeX for MathJax in a build without Node.js


@pytest.fixture(scope="session")
def book(html_dir: Path, toc_pages: list[str]) -> Book:
    """The toc's pages as the HTML has them; each solution keeps pieces found nowhere else in the book."""
    chapters = [read_chapter(html_dir, rel) for rel in toc_pages]
    rest, formulas = [], 0
    for rel in toc_pages:
        soup = BeautifulSoup((html_dir / rel).read_text(encoding="utf-8"), "html.parser")
        formulas += len(soup.select(".math"))
        for solution in soup.select("div.solution"):
            solution.decompose()
        rest.append(squash(soup.select_one("article.bd-article").get_text()))
    everything_else = "\n".join(rest)
    all_pieces = [p for c in chapters for _, pieces in c.solutions for p in pieces]
    for chapter in chapters:
        distinct = []
        for label, pieces in chapter.solutions:
            unique = [p for p in pieces if p not in everything_else and sum(p in q for q in all_pieces) == 1]
            # Spread over the solution: its start, its end and between.
            count = min(PIECES_PER_SOLUTION, len(unique))
            picks = sorted({round(i * (len(unique) - 1) / max(count - 1, 1)) for i in range(count)})
            distinct.append((label, [unique[i] for i in picks]))
        chapter.solutions = distinct
    return Book(chapters, formulas)


@dataclass
class Pdf:
    path: Path
    pages: list[str]  # the squashed text of each page, without its page number
    numbered: list[bool]  # does the page end with its number?
    outline: list[tuple[str, int]]  # top-level entries: (title, page index)
    uris: list[str]
    internal_links: int

    @property
    def text(self) -> str:
        return "".join(self.pages)

    def find(self, needle: str, first: int = 0, stop: int | None = None) -> int | None:
        """The page where ``needle`` starts, first found in the text of pages ``[first, stop)``.

        Searched through the pages' text joined, so that text running over a page break is found.
        """
        pages = self.pages[first:stop]
        found = "".join(pages).find(needle)
        if found < 0:
            return None
        for index, page in enumerate(pages):
            if found < len(page):
                return first + index
            found -= len(page)
        raise AssertionError("unreachable")


def read_pdf(path: Path) -> Pdf:
    """Text (pypdf's plain mode: within a page, in the order Chromium painted it), outline and links."""
    reader = PdfReader(path)
    pages, numbered = [], []
    for index, page in enumerate(reader.pages):
        text, number = squash(page.extract_text()), str(index + 1)
        numbered.append(text.endswith(number))  # print_pdf.py draws the number after everything else
        pages.append(text.removesuffix(number))
    outline = [
        (item.title, reader.get_destination_page_number(item))
        for item in reader.outline
        if not isinstance(item, list)
    ]
    uris, internal = [], 0
    for page in reader.pages:
        for annot in page.get("/Annots") or []:
            annot = annot.get_object()
            action = annot.get("/A")
            if action is not None and "/URI" in action:
                uris.append(str(action["/URI"]))
            elif "/Dest" in annot or action is not None:
                internal += 1
    return Pdf(path, pages, numbered, outline, uris, internal)


@pytest.fixture(scope="session")
def pdfs(html_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Pdf]]:
    """Both PDFs, printed once per session from the built book; their text read in two processes."""
    result = print_pdf.build_pdfs(html_dir, tmp_path_factory.mktemp("pdf"))
    print(f"\n{result.summary()}")
    # Spawned, not forked: the session's Playwright driver runs threads that a fork would copy mid-way.
    with ProcessPoolExecutor(max_workers=2, mp_context=multiprocessing.get_context("spawn")) as pool:
        full, student = pool.map(read_pdf, [result.full, result.student])
    yield {"full": full, "student": student}


def chapter_starts(pdf: Pdf, book: Book) -> list[int]:
    """The first PDF page of each toc page, from the outline, checked against the page's own text."""
    entries = [(title, page) for title, page in pdf.outline if title != "Contents"]
    assert [squash(t) for t, _ in entries] == [squash(c.title) for c in book.chapters], (
        f"{pdf.path.name}: the outline is not the toc: {[t for t, _ in entries]}"
    )
    starts = [page for _, page in entries]
    assert starts == sorted(starts) and len(set(starts)) == len(starts), f"{pdf.path.name}: {starts}"
    for chapter, start in zip(book.chapters, starts, strict=True):
        for needle in (squash(chapter.title), chapter.opening):
            assert needle in pdf.pages[start], (
                f"{pdf.path.name}: page {start + 1}, where the outline starts {chapter.rel}, "
                f"lacks {needle[:60]!r}"
            )
    return starts


def test_both_pdfs_open_and_have_pages(pdfs: dict[str, Pdf], book: Book) -> None:
    full, student = pdfs["full"], pdfs["student"]
    assert full.path.name == "book.pdf" and student.path.name == "book-student.pdf"
    for pdf in (full, student):
        assert len(pdf.pages) > len(book.chapters), f"{pdf.path.name}: only {len(pdf.pages)} pages"
        assert pdf.path.stat().st_size > 100_000
    assert len(full.pages) > len(student.pages), "the solutions take no pages in the full PDF"
    for pdf in (full, student):  # every page but the title page shows its number
        assert pdf.numbered[1:] == [True] * (len(pdf.pages) - 1), f"{pdf.path.name}: unnumbered pages"


@pytest.mark.parametrize("edition", ["full", "student"])
def test_every_chapter_title_in_toc_order(pdfs: dict[str, Pdf], book: Book, edition: str) -> None:
    """Each toc page starts where the outline says, with its title and first words, in toc order."""
    pdf = pdfs[edition]
    starts = chapter_starts(pdf, book)
    # The titles also read in toc order through the text itself (the contents page lists them first).
    position = len("".join(pdf.pages[: starts[0]]))
    for chapter in book.chapters:
        found = pdf.text.find(squash(chapter.title), position)
        assert found >= 0, f"{pdf.path.name}: {chapter.title!r} is missing or out of toc order"
        position = found


@pytest.mark.parametrize("edition", ["full", "student"])
def test_links_stay_in_the_pdf(pdfs: dict[str, Pdf], edition: str) -> None:
    """Links between pages of the book go to places in the PDF, never to the server that printed it."""
    pdf = pdfs[edition]
    local = [u for u in pdf.uris if re.match(r"https?://(127\.|localhost|\[::1\])", u)]
    assert not local, f"{pdf.path.name} links to the printing server: {local[:5]}"
    assert pdf.internal_links >= 50, f"{pdf.path.name}: only {pdf.internal_links} links inside the PDF"


@pytest.mark.parametrize("edition", ["full", "student"])
def test_no_raw_tex_outside_code(pdfs: dict[str, Pdf], book: Book, edition: str) -> None:
    pdf = pdfs[edition]
    assert book.formulas >= 1000, f"the pages hold only {book.formulas} formulas: nothing to check"
    starts = [*chapter_starts(pdf, book), len(pdf.pages)]
    for chapter, start, end in zip(book.chapters, starts, starts[1:], strict=False):
        text = "".join(pdf.pages[start:end])
        for command in TEX_COMMANDS:
            found = len(re.findall(r"\\" + command + r"(?![A-Za-z])", text))
            allowed = chapter.code_tex.get(command, 0)
            assert found <= allowed, (
                f"{pdf.path.name}, {chapter.rel}: \\{command} {found} times in the PDF text, only {allowed} "
                "times in the page's code: raw TeX is showing"
            )


def test_full_pdf_collects_the_solutions_after_each_chapters_exercises(
    pdfs: dict[str, Pdf], book: Book
) -> None:
    """Page by page (within a page, the PDF's text follows paint order, not reading order)."""
    pdf = pdfs["full"]
    starts = [*chapter_starts(pdf, book), len(pdf.pages)]
    checked = 0
    for chapter, begin, end in zip(book.chapters, starts, starts[1:], strict=False):
        if not chapter.solutions:
            continue
        # The page of the end of the last exercise.
        page = begin
        for label, pieces in chapter.exercises:
            for needle in [squash(label), *pieces]:
                found = pdf.find(needle, page, end)
                assert found is not None, (
                    f"{chapter.rel}: {label}: {needle[:60]!r} not in the chapter's pages"
                )
                page = found
        heading = pdf.find("Solutions", page, end)
        assert heading is not None, f"{chapter.rel}: no Solutions section after the exercises"
        # The solution titles, in exercise order, after the exercises; each solution's text under its title.
        order = [label for label, _ in chapter.exercises]
        solutions = sorted(chapter.solutions, key=lambda s: order.index(s[0]))
        titles = []
        for label, _ in solutions:
            found = pdf.find(squash(f"Solution to {label}"), titles[-1] if titles else heading, end)
            assert found is not None, f"{chapter.rel}: 'Solution to {label}' missing, or out of order"
            titles.append(found)
        for (label, pieces), first, last in zip(solutions, titles, [*titles[1:], end - 1], strict=True):
            assert len(pieces) >= 3, f"{chapter.rel}: too few distinctive pieces of the solution to {label}"
            missing = [p for p in pieces if pdf.find(p, first, last + 1) is None]
            assert len(missing) <= 1, (
                f"{chapter.rel}: pieces of the solution to {label} are not under its title: {missing}"
            )
            checked += len(pieces) - len(missing)
    assert checked >= 2 * sum(len(c.solutions) for c in book.chapters) > 0


def test_student_pdf_has_every_exercise_and_no_solution(pdfs: dict[str, Pdf], book: Book) -> None:
    text = pdfs["student"].text
    solutions = [(c.rel, label, pieces) for c in book.chapters for label, pieces in c.solutions]
    assert len(solutions) >= 7, f"only {len(solutions)} solutions in the HTML: the check would be vacuous"
    for rel, label, pieces in solutions:
        assert pieces, f"{rel}: no distinctive text of the solution to {label}"
        for piece in pieces:
            assert piece not in text, f"{rel}: the student PDF holds the solution to {label}: {piece[:60]!r}"
    assert squash("Solution to Exercise") not in text
    for chapter in book.chapters:
        for label, pieces in chapter.exercises:
            assert squash(label) in text, f"{chapter.rel}: {label} is missing from the student PDF"
            for piece in pieces:
                assert piece in text, f"{chapter.rel}: {label}: {piece[:60]!r} missing from the student PDF"


def test_explorers_print_with_a_note_that_they_are_interactive(pdfs: dict[str, Pdf], book: Book) -> None:
    explorers = sum(c.explorers for c in book.chapters)
    assert explorers >= 1, "no static explorer in the HTML"
    for edition, pdf in pdfs.items():
        notes = pdf.text.count(squash(EXPLORER_NOTE))
        assert notes == explorers, f"{edition}: {notes} explorer notes for {explorers} explorers"


def test_toc_order_is_read_from_the_built_navigation(html_dir: Path, toc_pages: list[str]) -> None:
    assert [e.rel for e in print_pdf.toc_entries(html_dir)] == toc_pages


def test_bad_arguments_fail_clearly(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="workers"):
        print_pdf.build_pdfs(tmp_path, tmp_path, workers=0)
    with pytest.raises(TypeError, match="workers"):
        print_pdf.build_pdfs(tmp_path, tmp_path, workers="2")  # type: ignore[arg-type]
    with pytest.raises(FileNotFoundError, match="make build"):
        print_pdf.build_pdfs(tmp_path / "nothing", tmp_path)


def test_a_wait_in_the_page_is_bounded(browser: Any) -> None:
    """print_pdf.bounded: the value and argument pass through; a promise that never settles, or a
    function that throws, rejects with an error naming what was awaited (Playwright would wait forever)."""
    context = browser.new_context()
    try:
        page = context.new_page()
        assert page.evaluate(print_pdf.bounded("(x) => x * 2", "doubling", 5), 21) == 42
        assert page.evaluate(print_pdf.bounded("async () => 'typeset'", "an async step", 5)) == "typeset"
        never = print_pdf.bounded("() => new Promise(() => {})", "a promise that never settles", 0.3)
        with pytest.raises(Exception, match=r"a promise that never settles did not finish within 0\.3 s"):
            page.evaluate(never)
        with pytest.raises(Exception, match="no MathJax here"):
            page.evaluate(print_pdf.bounded("() => { throw new Error('no MathJax here'); }", "throwing", 5))
    finally:
        context.close()


# The browser's own print of a page (the ".pdf" item calls window.print()).
SOLUTION_TEXT_JS = """
pieces => {
  const text = document.body.innerText.normalize('NFKC').replace(/\\s+/g, '');
  return pieces.filter(p => text.includes(p));
}
"""
BEFOREPRINT_JS = """
() => {
  window.dispatchEvent(new Event('beforeprint'));
  document.querySelectorAll('details').forEach(d => { d.open = true; });
}
"""


def test_browser_print_of_a_chapter_shows_no_solution(browser: Any, base_url: str, book: Book) -> None:
    chapter = next(c for c in book.chapters if c.solutions)
    pieces = [p for _, ps in chapter.solutions for p in ps]
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    try:
        page = context.new_page()
        page.goto(f"{base_url}/{chapter.rel}", wait_until="load")
        page.evaluate(print_pdf.SCRIPTS_JS)  # the page's scripts load after its first paint
        page.evaluate(print_pdf.READY_JS)
        page.evaluate(DRAW_SECTIONS_JS)  # innerText leaves out sections not drawn yet (sections.py)
        page.evaluate(BEFOREPRINT_JS)
        # On screen, the toggle extension's print handler has opened every solution: the check can see them.
        shown = page.evaluate(SOLUTION_TEXT_JS, pieces)
        assert len(shown) == len(pieces), f"after beforeprint only {len(shown)} of {len(pieces)} pieces show"
        page.emulate_media(media="print")
        printed = page.evaluate(SOLUTION_TEXT_JS, pieces)
        assert not printed, f"printing {chapter.rel} shows solutions: {printed[:3]}"
        # print_pdf.py's switch for the full PDF shows them in print again.
        page.evaluate(f"() => document.documentElement.classList.add('{print_pdf.WITH_SOLUTIONS_CLASS}')")
        assert len(page.evaluate(SOLUTION_TEXT_JS, pieces)) == len(pieces)
    finally:
        context.close()
