"""Local Sphinx extension: each chapter page says how long it takes to read, and so does each section.

Under the title of a chapter page (``book/0*``: the chapters and their going-deeper pages such as
``04a_scaling_deeper``) a line gives the whole page, "About 20 min of reading with the code and figures, plus
exercises" (without "plus exercises" on a page that has none), and under each ``##`` heading of at least
:data:`SECTION_LINE_MINUTES` minutes a line gives that section, subsections included: "About 4 min" (a line
under a one-minute section tells the reader nothing the page line does not). The lines are paragraphs of text
with the class ``reading-time`` (``attnbook.css`` sets them small and muted), placed after the heading, never
inside it: the table of contents, the headings' anchors and the PDF's outline stay as they were.

The model: what a reader reads and looks at, each at its own pace (:data:`PACE`), summed and rounded up
to whole minutes (at least one).

* prose at :data:`WORDS_PER_MINUTE` (100) words a minute: paragraphs, headings, list items,
  admonitions and dropdowns (an in-text answer is prose the reader is invited to read), figure captions,
  tables written in Markdown, cross-references and citations as the reader sees them (the count runs on
  the resolved doctree). A word is a run of non-space characters holding a letter or a digit ("—" alone
  is none); an inline formula ``$...$`` is one word, joined to the text it touches ("$n$-th" is one
  word); a display formula counts as :data:`DISPLAY_MATH_WORDS` (none);
* each code cell whose source the page shows: 15 s, and 3 s a line of its code; code blocks written in
  Markdown count their lines the same way;
* each line of output the page shows (3 s): a line of text, a row of an HTML table; an explorer (an
  ``attnlib-explorer`` figure, worked in the page) 2 min; a figure (an image, an inline SVG) 30 s.
  Images in the prose are figures too.

Cells hidden behind a toggle (``hide-cell``; ``hide-input`` for their source, ``hide-output`` for their
output) are not counted: the reader may skip them; removed cells are not in the doctree. Raw HTML,
comments, targets, footnote marks and the toctree are not counted.

The paces were set on a learner's measured reading of the whole book (a second-year student with the
book's brief, commit 31b3948): prose at 100-120 words a minute, about 15 s a code cell, 3 s a line of
code or output, 30 s a static figure and 2 min an explorer; with them the model gives that reader's
minutes per chapter, code and figures included, to within a few minutes. Prose is timed at the slow end
of that range: at 110 words a minute the core path came out at the low end of what three later fresh
readers estimated for themselves (2 h 38–3 h 02), at 100 it sits in its middle. It times reading, not
doing: the exercises and the quiz are the reader's work.

Sections without a line: "Exercises" and "Self-check quiz" (:data:`UNTIMED_SECTIONS`). The page total leaves
them out too and says "plus exercises" when the page has an Exercises section. What a reader spends on them
before doing any exercise, reading each statement and check cell (not the folded solutions) at the same paces
and taking the quiz at :attr:`Pace.quiz_question` a question, is the page's ``practice``; the reading path on
the introduction gives it in a column of its own. The essential exercise (its tag line ends "· essential") is
timed by its own line's "about N min": the path's last column adds it to the core. The page total is the cost
of everything else on the page, its introduction under the title included, rounded once: it is at most the sum
of the sections' minutes plus the introduction's, and at least that sum less one minute a section. "Learning
objectives" and "Summary" are timed like any other section.

Only HTML builders (``html``, ``dirhtml``, ``singlehtml``, ``epub``) get the lines; the lines are
hidden in print (``attnbook.css``), so neither the PDF (printed from the HTML by ``print_pdf.py``) nor
a LaTeX build shows them. The notebook edition is written from the notebooks, not from the doctree, and
has none. The line is a node of its own whose HTML writer writes the text, so the search index, which
reads the doctree's text, does not index "min" on every chapter.

The pages are chosen by the regular expression ``reading_time_pages`` (configuration; by default
:data:`CHAPTER_PAGES`), matched against the whole docname.
"""

from __future__ import annotations

import html
import math
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from docutils import nodes
from docutils.parsers.rst import Directive
from sphinx import addnodes

WORDS_PER_MINUTE = 100  # prose; code, outputs, figures and explorers have paces of their own (PACE)
DISPLAY_MATH_WORDS = 0
UNTIMED_SECTIONS = ("Exercises", "Self-check quiz")
EXERCISES = "Exercises"
CHAPTER_PAGES = r"book/0\d+[a-z]?_[^/]+"  # book/04_scaling, book/04a_scaling_deeper; not book/api/...
CSS_CLASS = "reading-time"
SECTION_LINE_MINUTES = 3  # a shorter section gets no line of its own
#: The tag line of the exercise to do if a learner does only one: "... · about 25 min · essential".
ESSENTIAL_TAG = re.compile(r"about (\d+) min · essential")

_WORD = re.compile(r"\S+")


@dataclass(frozen=True)
class Pace:
    """Seconds a reader gives each thing a page shows besides its prose."""

    code_cell: float = 15.0
    line: float = 3.0  # of code or of output (a row of a table)
    figure: float = 30.0
    explorer: float = 120.0
    quiz_question: float = 60.0  # reading a question and its options, choosing, checking


PACE = Pace()


def whole_minutes(seconds: float) -> int:
    """``seconds`` as whole minutes, rounded up (a float's last-place error does not add a minute)."""
    return math.ceil(seconds / 60 - 1e-9)


@dataclass(frozen=True)
class Cost:
    """What a part of a page holds: words of prose, code cells shown, lines of code and output shown,
    figures and explorers."""

    words: int = 0
    code_cells: int = 0
    lines: int = 0
    figures: int = 0
    explorers: int = 0

    def __add__(self, other: Cost) -> Cost:
        return Cost(self.words + other.words, self.code_cells + other.code_cells, self.lines + other.lines,
                    self.figures + other.figures, self.explorers + other.explorers)

    @property
    def seconds(self) -> float:
        return (self.words * 60 / WORDS_PER_MINUTE + self.code_cells * PACE.code_cell + self.lines * PACE.line
                + self.figures * PACE.figure + self.explorers * PACE.explorer)

    @property
    def minutes(self) -> int:
        """Whole minutes, rounded up, at least one."""
        return max(1, whole_minutes(self.seconds))


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
    cost: Cost = Cost()

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
    cost: Cost = Cost()
    practice: int = 0  # minutes to read the exercise statements and check cells and take the quiz
    essential: int = 0  # minutes the essential exercise's tag line states (0: the page has none)


QUIZ_QUESTION = 'class="attnlib-quiz-question"'  # one per question in the quiz directive's HTML


def _solutions(node: nodes.Node) -> tuple[nodes.Node, ...]:
    """The solutions under ``node`` (sphinx-exercise's, folded): read after an exercise is tried."""
    return tuple(n for n in node.findall(nodes.Element) if type(n).__name__ == "solution_node")


def essential_minutes(sections: list[nodes.section]) -> int:
    """The minutes the essential exercise's tag line states ("... · about 25 min · essential"), summed
    over ``sections`` (a chapter has one); 0 when none is marked."""
    return sum(int(m) for section in sections for m in ESSENTIAL_TAG.findall(section.astext()))


def practice_seconds(sections: list[nodes.section]) -> float:
    """Seconds to read the exercise statements (their check cells included, their solutions not) and to
    take the quiz, a minute a question: the reader's time before doing any exercise."""
    seconds = 0.0
    for section in sections:
        seconds += measure(section, skip=_solutions(section)).seconds
        raw = "".join(n.astext() for n in section.findall(nodes.raw))
        seconds += raw.count(QUIZ_QUESTION) * PACE.quiz_question
    return seconds


# --------------------------------------------------------------------------- counting
def minutes(words: int) -> int:
    """Reading minutes of ``words`` words of prose alone at :data:`WORDS_PER_MINUTE`, rounded up, at least
    one."""
    if words < 0:
        raise ValueError(f"words must be zero or more, got {words}")
    return Cost(words=words).minutes


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


def _text_lines(node: nodes.Node) -> int:
    return len([line for line in node.astext().splitlines() if line.strip()])


def _output_cost(node: nodes.Node) -> Cost:
    """What one shown output holds: lines of text, rows of a table, a figure or an explorer."""
    if isinstance(node, nodes.image):
        return Cost(figures=1)
    if isinstance(node, nodes.raw):
        text = node.astext()
        if "attnlib-explorer" in text:
            return Cost(explorers=1)
        if "<svg" in text or "<img" in text:
            return Cost(figures=1)
        rows = len(re.findall(r"<tr[\s>]", text))
        return Cost(lines=rows) if rows else Cost(lines=_text_lines(nodes.Text(re.sub(r"<[^>]+>", "", text))))
    if isinstance(node, nodes.literal_block):
        return Cost(lines=_text_lines(node))
    if isinstance(node, nodes.Element) and node.children:
        total = Cost()
        for child in node.children:
            total += _output_cost(child)
        return total
    return Cost(lines=_text_lines(node)) if isinstance(node, nodes.Text) else Cost()


def _hidden(node: nodes.Element, part: str) -> bool:
    """Whether a cell's ``part`` ("source" or "output") sits behind a toggle (MyST-NB's hide_mode)."""
    mode = node.get("hide_mode")
    return mode == "all" or (mode in ("input", "input+output") if part == "source"
                             else mode in ("output", "input+output"))


def _cells_cost(node: nodes.Node, skip: tuple[nodes.Node, ...]) -> Cost:
    """The code cells, Markdown code blocks and images under ``node`` (``skip`` left out)."""
    total = Cost()
    stack = [node]
    while stack:
        here = stack.pop()
        if any(here is s for s in skip) or isinstance(here, (nodes.Invisible, nodes.system_message)):
            continue
        if isinstance(here, nodes.container) and here.get("nb_element") == "cell_code":
            for part in here.findall(nodes.container):
                kind = part.get("nb_element")
                if kind == "cell_code_source" and not _hidden(here, "source"):
                    code = sum(_text_lines(block) for block in part.findall(nodes.literal_block))
                    total += Cost(code_cells=1, lines=code)
                elif kind == "cell_code_output" and not _hidden(here, "output"):
                    total += _output_cost(part)
            continue
        if isinstance(here, nodes.literal_block):
            total += Cost(lines=_text_lines(here))
            continue
        if isinstance(here, nodes.image):
            total += Cost(figures=1)
            continue
        if isinstance(here, nodes.Element):
            stack.extend(here.children)
    return total


def measure(node: nodes.Node, skip: tuple[nodes.Node, ...] = ()) -> Cost:
    """What a reader reads and looks at in ``node``: its prose words, and the code, outputs, figures and
    explorers it shows (the rules of the module's docstring), the subtrees in ``skip`` left out."""
    return Cost(words=count_words(node, skip)) + _cells_cost(node, skip)


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
            cost = measure(section)
            timed.append(TimedSection(section, cost.words, cost.minutes, cost))
    cost = measure(page, skip=tuple(untimed))
    exercises = any(_title(s) == EXERCISES for s in untimed)
    practice = whole_minutes(practice_seconds(untimed))
    return PageTimes(page, cost.words, cost.minutes, exercises, tuple(timed), cost, practice,
                     essential_minutes(untimed))


# --------------------------------------------------------------------------- formatting
def section_line(minutes: int) -> str:
    """The line under a ``##`` heading: ``About 4 min``."""
    return f"About {minutes} min"


def page_line(minutes: int, exercises: bool) -> str:
    """The line under a page's title: ``About 20 min of reading with the code and figures, plus
    exercises``."""
    tail = ", plus exercises" if exercises else ""
    return f"About {minutes} min of reading with the code and figures{tail}"


def _line_text(node: ReadingTime) -> str:
    if node["kind"] == "page":
        return page_line(node["minutes"], node["exercises"])
    return section_line(node["minutes"])


def _after_title(section: nodes.section, line: ReadingTime) -> None:
    title = section.next_node(nodes.title)
    section.insert(section.index(title) + 1, line)


def add_lines(times: PageTimes) -> None:
    """Put a :class:`ReadingTime` line after the title of the page and of each timed section of at least
    :data:`SECTION_LINE_MINUTES` minutes."""
    _after_title(times.page, ReadingTime(kind="page", minutes=times.minutes, exercises=times.exercises))
    for timed in times.sections:
        if timed.minutes >= SECTION_LINE_MINUTES:
            _after_title(timed.section, ReadingTime(kind="section", minutes=timed.minutes))


# --------------------------------------------------------------------------- Sphinx
def _visit_html(translator: Any, node: ReadingTime) -> None:
    translator.body.append(f'<p class="{CSS_CLASS}">{html.escape(_line_text(node))}</p>\n')
    raise nodes.SkipNode


def _resolved(app: Any, doctree: nodes.document, docname: str) -> None:
    if app.builder.format != "html":
        return
    if re.fullmatch(START_PAGES, docname):  # timed for the reading path only: no line under its title
        start = page_times(doctree)
        if start is not None:
            _start_minutes(app)[docname] = start.minutes
        return
    if not re.fullmatch(app.config.reading_time_pages, docname):
        return
    times = page_times(doctree)
    if times is not None:
        add_lines(times)
        _path_minutes(app)[docname] = (times.minutes, times.exercises, times.practice, times.essential)


# --------------------------------------------------------------------------- the reading path
# ``{reading-path}`` (on the introduction) is a table of every chapter's minutes, core and going deeper,
# with the totals. The minutes are those the pages show, known only once every page is resolved: the
# directive leaves a placeholder that the build's end replaces in the written HTML (before lean_pages
# and mathml_pages read the pages, so the table's rules stay in that page's stylesheets).
PATH_MARK = "<!-- reading_time: the reading path -->"
PATH_CLASS = "reading-path"
FIRST_EVENING = 3  # chapters: why attention, queries keys and values, worked examples
#: The pages read before chapter 1 (the introduction asks for Notation first): counted in the path's
#: "Start here" row, in the first evening and in the whole path.
START_PAGES = r"book/(intro|notation)"


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


def _start_minutes(app: Any) -> dict[str, int]:
    if not hasattr(app, "reading_start_minutes"):
        app.reading_start_minutes = {}
    return app.reading_start_minutes


def _path_minutes(app: Any) -> dict[str, tuple[int, bool, int, int]]:
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
    practice: int = 0  # minutes to read its exercise statements and take its quiz (PageTimes.practice)
    essential: int = 0  # minutes its essential exercise's tag line states (PageTimes.essential)


def reading_path(minutes_by_page: Mapping[str, tuple[int, ...]]) -> list[PathRow]:
    """The chapters in order (``book/03_...``), each with its going-deeper pages (``book/03a_...``).
    A page's value is (minutes, has exercises), optionally followed by its practice minutes and its
    essential exercise's minutes."""
    rows: list[PathRow] = []
    for page in sorted(minutes_by_page):
        name = page.rsplit("/", 1)[-1]
        deeper = re.match(r"(\d\d)[a-z]_", name)
        minutes, has_exercises, *extra = minutes_by_page[page]
        exercises = bool(has_exercises)
        practice = int(extra[0]) if extra else 0
        essential = int(extra[1]) if len(extra) > 1 else 0
        if deeper is None:
            rows.append(PathRow(page, minutes, exercises, (), practice, essential))
        elif rows and rows[-1].chapter.rsplit("/", 1)[-1].startswith(deeper.group(1) + "_"):
            last = rows[-1]
            rows[-1] = PathRow(last.chapter, last.minutes, last.exercises,
                               (*last.deeper, (page, minutes)), last.practice, last.essential)
        else:
            raise ValueError(f"going-deeper page {page} has no chapter before it")
    return rows


def hours(total: int) -> str:
    """``total`` minutes as a reader says them: ``"45 min"``, ``"3 h"``, ``"4 h 35 min"``."""
    h, m = divmod(total, 60)
    return " ".join(part for part in (f"{h} h" if h else "", f"{m} min" if m or not h else "") if part)


def path_table(rows: list[PathRow], link: Callable[[str], str], title: Callable[[str], str],
               start: int = 0) -> str:
    """The HTML table of ``rows``; ``link(page)`` gives a page's address, ``title(page)`` its title;
    ``start`` is the minutes of the pages read before chapter 1 (a row of its own, counted in the totals)."""
    def a(page: str, text: str) -> str:
        return f'<a href="{html.escape(link(page))}">{html.escape(text)}</a>'

    def short(page: str) -> str:  # "3.12. Going deeper: one draw, …" -> "one draw, …"
        return re.sub(r"^.*?Going deeper:\s*", "", title(page))

    body = []
    if start:
        body.append(f'<tr><th scope="row">Start here: the introduction and Notation</th><td>{start} min</td>'
                    f"<td>none</td><td>{hours(start)}</td><td>{hours(start)}</td></tr>")
    for row in rows:
        deep = "<br>".join(f"{a(page, short(page))}, {m} min" for page, m in row.deeper) or "none"
        body.append(f'<tr><th scope="row">{a(row.chapter, title(row.chapter))}</th><td>{row.minutes} min</td>'
                    f"<td>{deep}</td><td>{hours(row.minutes + row.practice)}</td>"
                    f"<td>{hours(row.minutes + row.essential)}</td></tr>")
    core = start + sum(r.minutes for r in rows)
    deeper = sum(m for r in rows for _, m in r.deeper)
    practice = sum(r.practice for r in rows)
    essential = sum(r.essential for r in rows)
    first = rows[:FIRST_EVENING]
    caption = (f"Minutes of reading, with the code, outputs, figures and explorers (prose at about"
               f" {WORDS_PER_MINUTE} words a minute); doing the exercises and the quizzes not included."
               " The fourth column adds reading each exercise's statement and taking the quiz, a minute a"
               " question; the last adds doing each chapter's essential exercise, at the time its statement"
               " gives")
    head = ('<tr><th scope="col">Chapter</th><th scope="col">Core</th><th scope="col">Going deeper</th>'
            '<th scope="col">Core with exercise statements and quiz</th>'
            '<th scope="col">Core with the essential exercises done</th></tr>')
    whole = "The whole path" if start else "All chapters"
    foot = (f'<tr><th scope="row">{whole}</th><td>{hours(core)}</td><td>{hours(deeper)}</td>'
            f"<td>{hours(core + practice)}</td><td>{hours(core + essential)}</td></tr>")
    if len(rows) > FIRST_EVENING:
        pages = f"start here and chapters 1–{FIRST_EVENING}" if start else f"chapters 1–{FIRST_EVENING}"
        foot += (f'<tr><th scope="row">A first evening: {pages}</th>'
                 f"<td>{hours(start + sum(r.minutes for r in first))}</td>"
                 f"<td>{hours(sum(m for r in first for _, m in r.deeper))}</td>"
                 f"<td>{hours(start + sum(r.minutes + r.practice for r in first))}</td>"
                 f"<td>{hours(start + sum(r.minutes + r.essential for r in first))}</td></tr>")
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
                           partial(_page_title, app), start=sum(_start_minutes(app).values()))
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
           "essential_minutes",
           "hours", "minutes", "page_line", "page_times", "path_table", "practice_seconds", "reading_path",
           "section_line"]
