"""Local Sphinx extension: each chapter page says how long its prose takes to read, and so does each section.

Under the title of a chapter page (``book/0*``: the chapters and their going-deeper pages such as
``03a_scaling_deeper``) a line gives the whole page, "About 20 min of reading, plus exercises"
("About 13 min of reading" on a page without exercises), and under each ``##`` heading a line gives
that section, subsections included: "About 4 min read". The lines are paragraphs of text with the
class ``reading-time`` (``attnbook.css`` sets them small and muted), placed after the heading, never
inside it: the table of contents, the headings' anchors and the PDF's outline stay as they were.

What counts, at :data:`WORDS_PER_MINUTE` words a minute, rounded up to whole minutes (at least one).
That is a study pace, not a skimming one (200-250 words a minute): the prose of this book is read with
its formulas, code and figures, which are not counted but take their time inside that pace. A learner
who read every chapter's prose, 29,000 words, took about six and a half hours, 75 words a minute.

* prose: paragraphs, headings, list items, admonitions and dropdowns (an in-text answer is prose the
  reader is invited to read), figure captions, tables written in Markdown, cross-references and
  citations as the reader sees them (the count runs on the resolved doctree);
* a word is a run of non-space characters holding a letter or a digit ("—" alone is none); an inline
  formula ``$...$`` is one word, joined to the text it touches ("$n$-th" is one word);
* a display formula counts as :data:`DISPLAY_MATH_WORDS` (none): the estimate is of the prose, and
  formulas, code and figures take the time their reader gives them.

What does not count: code cells whole (MyST-NB's ``container`` of class ``cell``: their source and
their outputs, hidden cells included; removed cells are not in the doctree), code blocks written in
Markdown, raw HTML, images, comments and targets, footnote marks and the toctree.

Sections without a line: "Exercises" and "Self-check quiz" (:data:`UNTIMED_SECTIONS`). Their time is
the reader's work, not reading, so the page total leaves them out too and says "plus exercises" when the
page has an Exercises section. The page total is the count of everything else on the page, its
introduction under the title included, rounded once: it is at most the sum of the sections' minutes
plus the introduction's, and at least that sum less one minute a section. "Learning objectives"
and "Summary" are prose and are timed like any other section.

Only HTML builders (``html``, ``dirhtml``, ``singlehtml``, ``epub``) get the lines; the lines are
hidden in print (``attnbook.css``), so neither the PDF (printed from the HTML by ``print_pdf.py``) nor
a LaTeX build shows them. The notebook edition is written from the notebooks, not from the doctree, and
has none. The line is a node of its own whose HTML writer writes the text, so the search index, which
reads the doctree's text, does not index "min read" on every chapter.

The pages are chosen by the regular expression ``reading_time_pages`` (configuration; by default
:data:`CHAPTER_PAGES`), matched against the whole docname.
"""

from __future__ import annotations

import html
import math
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from docutils import nodes
from docutils.parsers.rst import Directive
from sphinx import addnodes

WORDS_PER_MINUTE = 80  # a study pace: the words are prose; formulas, code and figures are read too
DISPLAY_MATH_WORDS = 0
UNTIMED_SECTIONS = ("Exercises", "Self-check quiz")
EXERCISES = "Exercises"
CHAPTER_PAGES = r"book/0\d+[a-z]?_[^/]+"  # book/03_scaling, book/03a_scaling_deeper; not book/api/...
CSS_CLASS = "reading-time"

_WORD = re.compile(r"\S+")


class ReadingTime(nodes.General, nodes.Element):
    """The reading-time line of a page (``kind="page"``) or of a section (``kind="section"``).

    Attributes ``minutes`` (int) and, for a page, ``exercises`` (bool): the HTML writer formats them.
    """


_SKIPPED = (nodes.literal_block, nodes.doctest_block, nodes.raw, nodes.image, nodes.Invisible,
            nodes.footnote_reference, nodes.system_message, addnodes.toctree, ReadingTime)
_CELL_CLASSES = {"cell", "cell_input", "cell_output", "toctree-wrapper"}


@dataclass(frozen=True)
class TimedSection:
    """A section that gets a reading-time line: its node, its word count and its minutes."""

    section: nodes.section
    words: int
    minutes: int

    @property
    def title(self) -> str:
        return _title(self.section)


@dataclass(frozen=True)
class PageTimes:
    """The reading times of a page: the page's words (untimed sections left out), its minutes, whether
    it has an Exercises section, and its timed ``##`` sections in order."""

    page: nodes.section
    words: int
    minutes: int
    exercises: bool
    sections: tuple[TimedSection, ...]


# --------------------------------------------------------------------------- counting
def minutes(words: int) -> int:
    """Reading minutes of ``words`` words at :data:`WORDS_PER_MINUTE`, rounded up, at least one."""
    if words < 0:
        raise ValueError(f"words must be zero or more, got {words}")
    return max(1, math.ceil(words / WORDS_PER_MINUTE))


def _skipped(node: nodes.Node, skip: tuple[nodes.Node, ...]) -> bool:
    if isinstance(node, _SKIPPED) or any(node is s for s in skip):
        return True
    return isinstance(node, nodes.Element) and bool(_CELL_CLASSES & set(node.get("classes", ())))


def _pieces(node: nodes.Node, skip: tuple[nodes.Node, ...]) -> Iterator[str]:
    """The text of ``node`` as the reader reads it: inline elements joined to their neighbours, block
    elements apart, an inline formula as one word, a display formula as none; ``skip`` left out."""
    if isinstance(node, nodes.math):
        yield "x"  # one word; with no space of its own, "$n$-th" stays one word
    elif isinstance(node, nodes.math_block):
        yield " x" * DISPLAY_MATH_WORDS + " "
    elif _skipped(node, skip):
        return
    elif isinstance(node, nodes.Text):
        yield str(node)
    else:
        block = not isinstance(node, nodes.Inline)
        if block:
            yield " "
        for child in node.children:
            yield from _pieces(child, skip)
        if block:
            yield " "


def count_words(node: nodes.Node, skip: tuple[nodes.Node, ...] = ()) -> int:
    """Words of prose in ``node`` (the rules of the module's docstring), the subtrees in ``skip`` left out.

    Examples
    --------
    >>> from docutils import nodes
    >>> count_words(nodes.paragraph("", "", nodes.Text("Divide by "), nodes.math("", "\\\\sqrt{d_k}"),
    ...                                              nodes.Text(" — always.")))
    4
    """
    text = "".join(_pieces(node, skip))
    return sum(1 for word in _WORD.findall(text) if any(c.isalnum() for c in word))


def _title(section: nodes.section) -> str:
    first = section.next_node(nodes.title)
    return first.astext().strip() if first is not None else ""


def _subsections(section: nodes.Element) -> list[nodes.section]:
    return [child for child in section.children if isinstance(child, nodes.section)]


def page_times(document: nodes.document) -> PageTimes | None:
    """The reading times of ``document``'s page: its first top-level section (the ``#`` title) and
    that section's ``##`` sections. None for a document without a titled section."""
    pages = [child for child in document.children if isinstance(child, nodes.section)]
    if not pages:
        return None
    page = pages[0]
    timed, untimed = [], []
    for section in _subsections(page):
        if _title(section) in UNTIMED_SECTIONS:
            untimed.append(section)
        else:
            words = count_words(section)
            timed.append(TimedSection(section, words, minutes(words)))
    words = count_words(page, skip=tuple(untimed))
    exercises = any(_title(s) == EXERCISES for s in untimed)
    return PageTimes(page, words, minutes(words), exercises, tuple(timed))


# --------------------------------------------------------------------------- formatting
def section_line(minutes: int) -> str:
    """The line under a ``##`` heading: ``About 4 min read``."""
    return f"About {minutes} min read"


def page_line(minutes: int, exercises: bool) -> str:
    """The line under a page's title: ``About 20 min of reading, plus exercises``."""
    return f"About {minutes} min of reading" + (", plus exercises" if exercises else "")


def _line_text(node: ReadingTime) -> str:
    if node["kind"] == "page":
        return page_line(node["minutes"], node["exercises"])
    return section_line(node["minutes"])


def _after_title(section: nodes.section, line: ReadingTime) -> None:
    title = section.next_node(nodes.title)
    section.insert(section.index(title) + 1, line)


def add_lines(times: PageTimes) -> None:
    """Put a :class:`ReadingTime` line after the title of the page and of each timed section."""
    _after_title(times.page, ReadingTime(kind="page", minutes=times.minutes, exercises=times.exercises))
    for timed in times.sections:
        _after_title(timed.section, ReadingTime(kind="section", minutes=timed.minutes))


# --------------------------------------------------------------------------- Sphinx
def _visit_html(translator: Any, node: ReadingTime) -> None:
    translator.body.append(f'<p class="{CSS_CLASS}">{html.escape(_line_text(node))}</p>\n')
    raise nodes.SkipNode


def _resolved(app: Any, doctree: nodes.document, docname: str) -> None:
    if app.builder.format != "html" or not re.fullmatch(app.config.reading_time_pages, docname):
        return
    times = page_times(doctree)
    if times is not None:
        add_lines(times)
        _path_minutes(app)[docname] = (times.minutes, times.exercises)


# --------------------------------------------------------------------------- the reading path
# ``{reading-path}`` (on the introduction) is a table of every chapter's minutes, core and going deeper,
# with the totals. The minutes are those the pages show, known only once every page is resolved: the
# directive leaves a placeholder that the build's end replaces in the written HTML (before lean_pages
# and mathml_pages read the pages, so the table's rules stay in that page's stylesheets).
PATH_MARK = "<!-- reading_time: the reading path -->"
PATH_CLASS = "reading-path"


class ReadingPath(nodes.General, nodes.Element):
    """Where ``{reading-path}`` stands; the HTML writer leaves :data:`PATH_MARK`."""


class ReadingPathDirective(Directive):
    """``{reading-path}``: the table of the chapters' reading times (no arguments, no content)."""

    has_content = False

    def run(self) -> list[nodes.Node]:
        return [ReadingPath()]


def _visit_path(translator: Any, node: ReadingPath) -> None:
    translator.body.append(f'<div class="{PATH_CLASS}">{PATH_MARK}</div>\n')
    raise nodes.SkipNode


def _skip_path(translator: Any, node: ReadingPath) -> None:
    raise nodes.SkipNode


def _path_minutes(app: Any) -> dict[str, tuple[int, bool]]:
    if not hasattr(app, "reading_path_minutes"):
        app.reading_path_minutes = {}
    return app.reading_path_minutes


@dataclass(frozen=True)
class PathRow:
    """One chapter of the reading path: its page and minutes, and its going-deeper pages' minutes."""

    chapter: str
    minutes: int
    exercises: bool
    deeper: tuple[tuple[str, int], ...]


def reading_path(minutes_by_page: dict[str, tuple[int, bool]]) -> list[PathRow]:
    """The chapters in order (``book/03_...``), each with its going-deeper pages (``book/03a_...``)."""
    rows: list[PathRow] = []
    for page in sorted(minutes_by_page):
        name = page.rsplit("/", 1)[-1]
        deeper = re.match(r"(\d\d)[a-z]_", name)
        if deeper is None:
            rows.append(PathRow(page, *minutes_by_page[page], ()))
        elif rows and rows[-1].chapter.rsplit("/", 1)[-1].startswith(deeper.group(1) + "_"):
            last = rows[-1]
            rows[-1] = PathRow(last.chapter, last.minutes, last.exercises,
                               (*last.deeper, (page, minutes_by_page[page][0])))
        else:
            raise ValueError(f"going-deeper page {page} has no chapter before it")
    return rows


def hours(total: int) -> str:
    """``total`` minutes as a reader says them: ``"45 min"``, ``"3 h"``, ``"4 h 35 min"``."""
    h, m = divmod(total, 60)
    return " ".join(part for part in (f"{h} h" if h else "", f"{m} min" if m or not h else "") if part)


def path_table(rows: list[PathRow], link: Callable[[str], str], title: Callable[[str], str]) -> str:
    """The HTML table of ``rows``; ``link(page)`` gives a page's address, ``title(page)`` its title."""
    def a(page: str, text: str) -> str:
        return f'<a href="{html.escape(link(page))}">{html.escape(text)}</a>'

    def short(page: str) -> str:  # "3.12. Going deeper: one draw, …" -> "one draw, …"
        return re.sub(r"^.*?Going deeper:\s*", "", title(page))

    body = []
    for row in rows:
        deep = "<br>".join(f"{a(page, short(page))}, {m} min" for page, m in row.deeper) or "none"
        body.append(f'<tr><th scope="row">{a(row.chapter, title(row.chapter))}</th><td>{row.minutes} min</td>'
                    f"<td>{deep}</td></tr>")
    core = sum(r.minutes for r in rows)
    deeper = sum(m for r in rows for _, m in r.deeper)
    caption = (f"Minutes of reading at {WORDS_PER_MINUTE} words a minute, exercises not included: each"
               " chapter's core, and its going-deeper page")
    head = '<tr><th scope="col">Chapter</th><th scope="col">Core</th><th scope="col">Going deeper</th></tr>'
    foot = f'<tr><th scope="row">All chapters</th><td>{hours(core)}</td><td>{hours(deeper)}</td></tr>'
    return (f'<table class="table {PATH_CLASS}-table">\n<caption>{caption}</caption>\n'
            f"<thead>{head}</thead>\n<tbody>\n" + "\n".join(body) +
            f"\n</tbody>\n<tfoot>{foot}</tfoot>\n</table>")


def _page_title(app: Any, page: str) -> str:
    """``page``'s title with its number as the toc shows it: "3. Why divide by √dₖ", "3.12. Going …"."""
    number = ".".join(map(str, app.env.toc_secnumbers.get(page, {}).get("", ())))
    text = app.env.titles[page].astext()
    return f"{number}. {text}" if number else text


def _write_path(app: Any, exception: Exception | None) -> None:
    if exception is not None or app.builder.format != "html":
        return
    found = _path_minutes(app)
    for docname in sorted(app.env.found_docs):
        target = Path(app.outdir) / app.builder.get_target_uri(docname)
        if not target.is_file() or PATH_MARK not in (text := target.read_text(encoding="utf-8")):
            continue
        missing = sorted(d for d in app.env.found_docs
                         if re.fullmatch(app.config.reading_time_pages, d) and d not in found)
        if missing:
            raise ValueError(f"{docname}: the reading path misses {missing} (not written in this build)")
        table = path_table(reading_path(found), partial(app.builder.get_relative_uri, docname),
                           partial(_page_title, app))
        target.write_text(text.replace(PATH_MARK, table), encoding="utf-8")


def setup(app: Any) -> dict[str, Any]:
    app.add_config_value("reading_time_pages", CHAPTER_PAGES, "html", types=[str])
    app.add_node(ReadingTime, html=(_visit_html, None))
    app.connect("doctree-resolved", _resolved)
    app.add_node(ReadingPath, html=(_visit_path, None), latex=(_skip_path, None), text=(_skip_path, None))
    app.add_directive("reading-path", ReadingPathDirective)
    app.connect("build-finished", _write_path, priority=800)  # before mathml_pages (850), lean_pages (900)
    return {"parallel_read_safe": True, "parallel_write_safe": False}  # the path's minutes live on app


__all__ = ["PageTimes", "PathRow", "ReadingPath", "ReadingTime", "TimedSection", "add_lines", "count_words",
           "hours", "minutes", "page_line", "page_times", "path_table", "reading_path", "section_line"]
