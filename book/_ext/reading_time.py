"""Local Sphinx extension: each chapter page says how long its prose takes to read, and so does each section.

Under the title of a chapter page (``book/0*``: the chapters and their going-deeper pages such as
``03a_scaling_deeper``) a line gives the whole page, "About 20 min of reading, plus exercises"
("About 13 min of reading" on a page without exercises), and under each ``##`` heading a line gives
that section, subsections included: "About 4 min read". The lines are paragraphs of text with the
class ``reading-time`` (``attnbook.css`` sets them small and muted), placed after the heading, never
inside it: the table of contents, the headings' anchors and the PDF's outline stay as they were.

What counts, at :data:`WORDS_PER_MINUTE` words a minute, rounded up to whole minutes (at least one):

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
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from docutils import nodes
from sphinx import addnodes

WORDS_PER_MINUTE = 200
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


def setup(app: Any) -> dict[str, Any]:
    app.add_config_value("reading_time_pages", CHAPTER_PAGES, "html", types=[str])
    app.add_node(ReadingTime, html=(_visit_html, None))
    app.connect("doctree-resolved", _resolved)
    return {"parallel_read_safe": True, "parallel_write_safe": True}


__all__ = ["PageTimes", "ReadingTime", "TimedSection", "add_lines", "count_words", "minutes", "page_line",
           "page_times", "section_line"]
