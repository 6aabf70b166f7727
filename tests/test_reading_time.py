"""Reading times (book/press/reading_time.py): what counts as a word, the rounding, the Exercises, the HTML.

The counting runs on doctrees parsed from small MyST texts, and on a small Sphinx project built with
MyST-NB (a real code cell, with its output). The built book's lines are checked after the build, with the
other checks of the built pages: tests/browser/test_reading_time_html.py.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from bs4 import BeautifulSoup
from docutils import nodes
from docutils.core import publish_doctree
from myst_parser.parsers.docutils_ import Parser

from press import reading_time as rt

BOOK = Path(__file__).resolve().parents[1] / "book"


def _doctree(markdown: str) -> nodes.document:
    """``markdown`` parsed by MyST with dollar math; the first heading stays a section (as in Sphinx)."""
    return publish_doctree(markdown, parser=Parser(), settings_overrides={
        "myst_enable_extensions": ["dollarmath", "colon_fence"], "doctitle_xform": False,
        "report_level": 5})


def _words(n: int, word: str = "word") -> str:
    return " ".join([word] * n)


def _cell(source: str, output: nodes.Node | str, hide_mode: str | None = None) -> nodes.container:
    """A code cell as MyST-NB writes it: its source, and an output (plain text unless a node is given)."""
    code = nodes.container("", nodes.literal_block(source, source), classes=["cell_input"],
                           nb_element="cell_code_source")
    shown = nodes.literal_block(output, output) if isinstance(output, str) else output
    out = nodes.container("", shown, classes=["cell_output"], nb_element="cell_code_output")
    cell = nodes.container("", code, out, classes=["cell"], nb_element="cell_code")
    if hide_mode:
        cell["hide_mode"] = hide_mode
    return cell


# --------------------------------------------------------------------------- minutes
@pytest.mark.parametrize(("words", "expected"), [(0, 1), (1, 1), (100, 1), (101, 2), (200, 2), (201, 3),
                                                 (4001, 41)])
def test_prose_minutes_round_up_at_100_words_a_minute_and_are_at_least_one(words: int, expected: int) -> None:
    assert rt.WORDS_PER_MINUTE == 100  # the slow end of the learners' measured 100-120 words a minute
    assert rt.minutes(words) == expected


@pytest.mark.parametrize(("cost", "seconds"), [
    (rt.Cost(code_cells=1, lines=5), 15 + 5 * 3),
    (rt.Cost(figures=2), 60),
    (rt.Cost(explorers=1), 120),
    (rt.Cost(words=50, code_cells=2, lines=10, figures=1, explorers=1), 30 + 30 + 30 + 30 + 120),
])
def test_code_outputs_figures_and_explorers_take_their_own_time(cost: rt.Cost, seconds: float) -> None:
    assert cost.seconds == pytest.approx(seconds)
    assert (cost + rt.Cost(words=100)).seconds == pytest.approx(seconds + 60)
    assert rt.Cost(code_cells=4).minutes == 1 and rt.Cost(code_cells=5).minutes == 2  # 60 s, then 75 s


def test_minutes_of_a_negative_count_is_an_error() -> None:
    with pytest.raises(ValueError, match="words must be zero or more, got -1"):
        rt.minutes(-1)


def test_lines_say_the_minutes() -> None:
    assert rt.section_line(4) == "About 4 min"
    assert rt.page_line(20, exercises=True) == (
        "About 20 min of reading with the code and figures, plus exercises")
    assert rt.page_line(13, exercises=False) == "About 13 min of reading with the code and figures"


# --------------------------------------------------------------------------- words
@pytest.mark.parametrize(("markdown", "expected"), [
    ("Plain prose, of six words here.", 6),
    ("Divide by $\\sqrt{d_k}$ always.", 4),           # an inline formula is one word
    ("The $n$-th row, and $Q K^\\top$ too.", 6),      # joined to the text it touches
    ("Scores:\n\n$$\nS = \\frac{QK^\\top}{\\sqrt{d_k}}\n$$\n\nthen a softmax.", 4),  # display: none
    ("Words *in emphasis* and **str**ong.", 5),       # inline markup splits no word
    ("A dash — is no word, nor is 3.14 not one.", 10),  # "—" alone is none; a number is a word
    ("- one item\n- two items\n\n1. three", 5),
    ("| head | col |\n| --- | --- |\n| a cell | b |", 5),
    (":::{note}\nMind the scale.\n:::", 3),               # "Note" is the writer's, not in the doctree
    (":::{admonition} Mind this\nThe scale matters.\n:::", 5),  # a title of its own counts
    ("Call `scaled_dot_product_attention` here.", 3),
    ("```python\nx = softmax(Q @ K.T)\nprint(x)\n```\n\nAfter the code.", 3),  # code blocks: none
    ("<div>raw html words</div>\n\nText.", 1),
    ("% a comment\n\n(a-label)=\nText.", 1),
])
def test_count_words_counts_prose_only(markdown: str, expected: int) -> None:
    assert rt.count_words(_doctree(markdown)) == expected


def test_a_code_cell_is_no_prose_but_its_code_and_output_lines_take_time() -> None:
    prose = nodes.paragraph("", "Three words here.")
    cell = _cell("x = attention(Q, K, V)\n\nprint(x)", "[[0.43 0.30 0.26]\n [0.31 0.41 0.28]]")
    section = nodes.section("", prose, cell)
    assert rt.count_words(section) == 3
    assert rt.measure(section) == rt.Cost(words=3, code_cells=1, lines=2 + 2)  # blank lines not counted


@pytest.mark.parametrize(("hide_mode", "expected"), [
    ("all", rt.Cost()), ("input", rt.Cost(lines=1)), ("output", rt.Cost(code_cells=1, lines=1)),
    ("input+output", rt.Cost()), (None, rt.Cost(code_cells=1, lines=2)),
])
def test_what_hides_behind_a_toggle_is_not_counted(hide_mode: str | None, expected: rt.Cost) -> None:
    assert rt.measure(_cell("plot()", "one line out", hide_mode)) == expected


@pytest.mark.parametrize(("output", "expected"), [
    (nodes.raw("", '<figure class="attnlib-explorer"><table><tr><td>1</td></tr></table></figure>',
               format="html"), rt.Cost(explorers=1)),
    (nodes.raw("", '<svg role="img"><title>t</title></svg>', format="html"), rt.Cost(figures=1)),
    (nodes.image(uri="fig.png"), rt.Cost(figures=1)),
    (nodes.raw("", "<table><tr><th>a</th></tr><tr><td>1</td></tr><tr><td>2</td></tr></table>",
               format="html"), rt.Cost(lines=3)),  # a table: its rows
    (nodes.paragraph("", "a markdown output"), rt.Cost(lines=1)),
])
def test_an_output_costs_its_lines_rows_figure_or_explorer(output: nodes.Node, expected: rt.Cost) -> None:
    assert rt.measure(_cell("show()", output)) == expected + rt.Cost(code_cells=1, lines=1)


def test_markdown_code_blocks_and_images_in_the_prose_count_too() -> None:
    doc = _doctree("Text here.\n\n```python\nx = 1\ny = 2\n```\n\n![a plot](plot.png)\n")
    assert rt.measure(doc) == rt.Cost(words=2, lines=2, figures=1)


def test_count_words_leaves_out_the_subtrees_it_is_told_to_skip() -> None:
    doc = _doctree("# T\n\nOne two.\n\n## Skipped\n\nThree four five.\n")
    skipped = doc.next_node(lambda n: isinstance(n, nodes.section) and "skipped" in n["ids"])
    assert rt.count_words(doc) == 1 + 2 + 1 + 3
    assert rt.count_words(doc, skip=(skipped,)) == 1 + 2


def test_the_docstring_example() -> None:
    import doctest

    result = doctest.testmod(rt)
    assert result.attempted >= 1 and result.failed == 0, result


# --------------------------------------------------------------------------- a page
CHAPTER = f"""# A chapter

{_words(98)}

## Learning objectives

{_words(150)}

## The variance

{_words(300)} $d_k$

### A subsection

{_words(148)}

```python
{_words(500, "code")}
```

## Exercises

{_words(900)}

## Self-check quiz

{_words(300)}
"""


def test_page_times_time_each_section_and_leave_the_exercises_and_quiz_out() -> None:
    times = rt.page_times(_doctree(CHAPTER))
    assert times is not None
    titles = [t.title for t in times.sections]
    assert titles == ["Learning objectives", "The variance"], "no line for Exercises and the quiz"
    assert [t.words for t in times.sections] == [2 + 150, 2 + 301 + 2 + 148]  # titles are read too
    # 152 words: 91 s; 453 words and a one-line code block: 272 s + 3 s; rounded up
    assert [t.minutes for t in times.sections] == [2, 5]
    assert times.words == 2 + 98 + 152 + 453, "the intro and the timed sections, not the exercises"
    assert times.minutes == 8 and times.exercises  # 705 words (423 s) and the code line


def test_a_page_without_exercises_says_so_and_counts_everything() -> None:
    times = rt.page_times(_doctree(f"# Deeper\n\n{_words(10)}\n\n## Summary\n\n{_words(199)}\n"))
    assert times is not None and not times.exercises
    assert (times.words, times.minutes) == (1 + 10 + 1 + 199, 3)  # 211 words: 127 s
    assert [t.minutes for t in times.sections] == [2]


def test_a_document_without_a_section_has_no_times() -> None:
    assert rt.page_times(_doctree("Just a paragraph.")) is None


def test_add_lines_puts_each_line_after_its_title_never_inside() -> None:
    doc = _doctree(CHAPTER)
    times = rt.page_times(doc)
    assert times is not None
    rt.add_lines(times)
    lines = list(doc.findall(rt.ReadingTime))
    # the 2-minute section gets no line: under SECTION_LINE_MINUTES a line says nothing the page's does not
    assert rt.SECTION_LINE_MINUTES == 3
    assert [(n["kind"], n["minutes"]) for n in lines] == [("page", 8), ("section", 5)]
    for line in lines:
        section = line.parent
        assert isinstance(section, nodes.section)
        assert isinstance(section[section.index(line) - 1], nodes.title)
    assert not any(doc.findall(lambda n: isinstance(n, rt.ReadingTime) and isinstance(n.parent, nodes.title)))
    assert rt.count_words(doc) == rt.count_words(_doctree(CHAPTER)), "the lines are not counted"


# --------------------------------------------------------------------------- the Sphinx extension
CONF = """
extensions = ["myst_nb", "press.reading_time"]
myst_enable_extensions = ["dollarmath"]
nb_execution_mode = "off"
reading_time_pages = r"0\\d+[a-z]?_.*"
html_theme = "basic"
"""

def _notebook() -> str:
    """A chapter notebook as MyST-NB reads it: prose, and a code cell with a stored output of 400 words."""
    import nbformat

    nb = nbformat.v4.new_notebook(metadata={"kernelspec": {"name": "python3", "display_name": "Python 3",
                                                           "language": "python"}})
    nb.cells = [
        nbformat.v4.new_markdown_cell(f"# A chapter\n\n{_words(50)}\n\n## First section\n\n{_words(250)}"),
        nbformat.v4.new_code_cell("print(text)", outputs=[
            nbformat.v4.new_output("stream", name="stdout", text=_words(400, "output"))]),
        nbformat.v4.new_markdown_cell(f"## Exercises\n\n{_words(300)}"),
    ]
    return nbformat.writes(nb)


def _sphinx(root: Path, builder: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "sphinx", "-W", "-q", "-b", builder, str(root / "src"),
                           str(root / builder)], capture_output=True, text=True, timeout=180)


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("reading-time")
    (root / "src").mkdir()
    (root / "src" / "conf.py").write_text(CONF, encoding="utf-8")
    (root / "src" / "index.md").write_text(
        f"# Index\n\n{_words(20)}\n\n## Part\n\n{_words(20)}\n\n```{{toctree}}\n01_chapter\n```\n",
        encoding="utf-8")
    (root / "src" / "01_chapter.ipynb").write_text(_notebook(), encoding="utf-8")
    return root


def test_html_has_a_line_under_the_title_and_each_section_but_not_the_exercises(project: Path) -> None:
    run = _sphinx(project, "html")
    assert run.returncode == 0, run.stdout + run.stderr
    page = (project / "html" / "01_chapter.html").read_text(encoding="utf-8")
    assert "output output" in page, "the cell's output is on the page (and was counted as a line)"
    lines = re.findall(r'<p class="reading-time">([^<]*)</p>', page)
    # the page: 2 + 50 + 2 + 250 words (166 s; not the output's 400 words, not the exercises' 301) and a
    # cell of one line with one line of output (15 + 3 + 3 s) -> 187 s, 4 min; the section 158.5 s, 3 min
    assert lines == ["About 4 min of reading with the code and figures, plus exercises", "About 3 min"], lines
    assert re.search(r'</h1>\s*<p class="reading-time">About 4 min of reading', page)
    assert re.search(r'First section<a class="headerlink"[^>]*>[^<]*</a></h2>\s*<p class="reading-time">',
                     page)
    assert not re.search(r"<h[1-6][^>]*>(?:(?!</h[1-6]>).)*reading-time", page, re.S), "never in a heading"
    index = (project / "html" / "index.html").read_text(encoding="utf-8")
    assert "reading-time" not in index, "only the pages reading_time_pages names"
    search = (project / "html" / "searchindex.js").read_text(encoding="utf-8")
    terms = json.loads(re.fullmatch(r"Search\.setIndex\((.*)\)\s*", search, re.S).group(1))["terms"]
    assert "chapter" in terms and "min" not in terms, "the lines are not in the search index"


def test_other_builders_get_no_line(project: Path) -> None:
    run = _sphinx(project, "text")
    assert run.returncode == 0, run.stdout + run.stderr
    text = (project / "text" / "01_chapter.txt").read_text(encoding="utf-8")
    assert "First section" in text and "min read" not in text and "min of reading" not in text


# --------------------------------------------------------------------------- the reading path
@pytest.mark.parametrize(("total", "said"), [(0, "0 min"), (45, "45 min"), (60, "1 h"), (180, "3 h"),
                                             (275, "4 h 35 min")])
def test_hours_say_the_minutes_as_a_reader_would(total: int, said: str) -> None:
    assert rt.hours(total) == said


def test_the_reading_path_puts_each_going_deeper_page_under_its_chapter() -> None:
    found = {"book/03a_scaling_deeper": (13, False), "book/01_why": (12, True), "book/03_scaling": (20, True),
             "book/02_qkv": (18, True), "book/03b_more": (4, False)}
    rows = rt.reading_path(found)
    assert [r.chapter for r in rows] == ["book/01_why", "book/02_qkv", "book/03_scaling"]
    assert rows[2].deeper == (("book/03a_scaling_deeper", 13), ("book/03b_more", 4))
    assert rows[0].deeper == () and rows[0].minutes == 12 and rows[0].exercises


def test_a_going_deeper_page_without_its_chapter_is_an_error() -> None:
    with pytest.raises(ValueError, match="book/04a_x has no chapter before it"):
        rt.reading_path({"book/03_scaling": (20, True), "book/04a_x": (3, False)})


def test_the_path_table_sums_core_and_deeper_minutes() -> None:
    rows = rt.reading_path({"book/01_a": (50, True), "book/02_b": (40, True), "book/02a_c": (25, False)})
    table = rt.path_table(rows, link=lambda p: p.split("/")[1] + ".html", title=lambda p: p.upper())
    soup = BeautifulSoup(table, "html.parser")
    caption = soup.caption.get_text()
    assert "with the code, outputs, figures and explorers" in caption and "100 words a minute" in caption
    assert "doing the exercises and the quizzes not included" in caption
    body = [[c.get_text(" ", strip=True) for c in tr.find_all(["th", "td"])]
            for tr in soup.tbody.find_all("tr")]
    assert body == [["BOOK/01_A", "50 min", "none", "50 min", "50 min"],
                    ["BOOK/02_B", "40 min", "BOOK/02A_C , 25 min", "40 min", "40 min"]]
    foot = [c.get_text() for c in soup.tfoot.find_all(["th", "td"])]
    assert foot == ["All chapters", "1 h 30 min", "25 min", "1 h 30 min", "1 h 30 min"]
    assert soup.find("a", href="02a_c.html") is not None
    assert all(th.get("scope") == "row" for th in soup.tbody.find_all("th"))


def test_the_path_table_names_a_going_deeper_page_by_what_it_holds() -> None:
    rows = rt.reading_path({"book/03_s": (49, True), "book/03a_d": (32, False)})
    titles = {"book/03_s": "3. Why divide", "book/03a_d": "3.12. Going deeper: one draw, and training"}
    soup = BeautifulSoup(rt.path_table(rows, link=lambda p: p, title=titles.__getitem__), "html.parser")
    assert soup.find("a", href="book/03a_d").get_text() == "one draw, and training"
    assert soup.find("a", href="book/03_s").get_text() == "3. Why divide"


def test_the_path_table_says_what_a_first_evening_reads() -> None:
    rows = rt.reading_path({"book/01_a": (20, True), "book/02_b": (35, True), "book/02a_x": (10, False),
                            "book/03_c": (30, True), "book/04_d": (25, True)})
    soup = BeautifulSoup(rt.path_table(rows, link=lambda p: p, title=lambda p: p), "html.parser")
    foot = [[c.get_text() for c in tr.find_all(["th", "td"])] for tr in soup.tfoot.find_all("tr")]
    assert foot == [["All chapters", "1 h 50 min", "10 min", "1 h 50 min", "1 h 50 min"],
                    ["A first evening: chapters 1–3", "1 h 25 min", "10 min", "1 h 25 min", "1 h 25 min"]]


def test_the_pages_read_first_count_in_the_first_evening_and_the_whole_path() -> None:
    rows = rt.reading_path({"book/01_a": (20, True), "book/02_b": (35, True), "book/02a_x": (10, False),
                            "book/03_c": (30, True), "book/04_d": (25, True)})
    soup = BeautifulSoup(rt.path_table(rows, link=lambda p: p, title=lambda p: p, start=12), "html.parser")
    first = [c.get_text() for c in soup.tbody.find("tr").find_all(["th", "td"])]
    assert first == ["Start here: the introduction and Notation", "12 min", "none", "12 min", "12 min"]
    foot = [[c.get_text() for c in tr.find_all(["th", "td"])] for tr in soup.tfoot.find_all("tr")]
    assert foot == [["The whole path", "2 h 2 min", "10 min", "2 h 2 min", "2 h 2 min"],
                    ["A first evening: start here and chapters 1–3", "1 h 37 min", "10 min", "1 h 37 min",
                     "1 h 37 min"]]


def test_the_path_table_adds_the_exercise_statements_and_quiz_in_a_column_of_its_own() -> None:
    rows = rt.reading_path({"book/01_a": (20, True, 15), "book/02_b": (35, True, 12),
                            "book/02a_x": (10, False, 0), "book/03_c": (30, True, 20),
                            "book/04_d": (25, False)})
    assert [r.practice for r in rows] == [15, 12, 20, 0]
    soup = BeautifulSoup(rt.path_table(rows, link=lambda p: p, title=lambda p: p), "html.parser")
    assert soup.thead.find_all("th")[-2].get_text() == "Core with exercise statements and quiz"
    assert [tr.find_all("td")[-2].get_text() for tr in soup.tbody.find_all("tr")] == [
        "35 min", "47 min", "50 min", "25 min"]
    foot = [[c.get_text() for c in tr.find_all(["th", "td"])][-2] for tr in soup.tfoot.find_all("tr")]
    assert foot == ["2 h 37 min", "2 h 12 min"]
    caption = soup.caption.get_text()
    assert "reading each exercise's statement and taking the quiz, a minute a question" in caption


def test_practice_reads_the_exercise_statements_and_check_cells_not_the_solutions_and_a_minute_a_question():
    from sphinx_exercise.nodes import solution_node

    doc = _doctree(f"# A chapter\n\n{_words(50)}\n\n## Exercises\n\n{_words(218)}\n\n"
                   "## Self-check quiz\n\nx\n")
    exercises, quiz = rt._subsections(doc.children[0])
    exercises += solution_node("", nodes.paragraph("", _words(5000)))  # folded: not read before trying
    exercises += _cell("answer = ...\ncheck('x', answer)", "")  # a check cell: 15 s and 2 lines
    form = '<form class="attnlib-quiz-question" id="q{}"></form>'
    quiz += nodes.raw("", "".join(form.format(i) for i in range(3)), format="html")
    # 219 + 3 words (titles included) at 100 a minute; the check cell 15 s + 2 lines; 3 questions
    assert rt.practice_seconds([exercises, quiz]) == pytest.approx(60 / 100 * (219 + 3) + 21 + 180)
    times = rt.page_times(doc)
    assert times.practice == 6 and times.minutes == 1  # ceil(5.45 min); the page's reading stays its own


def test_the_path_table_adds_each_chapters_essential_exercise_in_the_last_column() -> None:
    rows = rt.reading_path({"book/01_a": (20, True, 15, 25), "book/02_b": (35, True, 12, 20),
                            "book/02a_x": (10, False, 0, 0), "book/03_c": (30, True, 20, 15),
                            "book/04_d": (25, False)})
    assert [r.essential for r in rows] == [25, 20, 15, 0], "a going-deeper page adds nothing"
    soup = BeautifulSoup(rt.path_table(rows, link=lambda p: p, title=lambda p: p, start=5), "html.parser")
    assert soup.thead.find_all("th")[-1].get_text() == "Core with the essential exercises done"
    assert [tr.find_all("td")[-1].get_text() for tr in soup.tbody.find_all("tr")] == [
        "5 min", "45 min", "55 min", "45 min", "25 min"]
    foot = [[c.get_text() for c in tr.find_all(["th", "td"])][-1] for tr in soup.tfoot.find_all("tr")]
    assert foot == ["2 h 55 min", "2 h 30 min"]  # 5 + 110 + 60 essential; 5 + 85 + 60 over the first three
    assert "essential exercise, at the time its statement gives" in soup.caption.get_text()


def test_the_essential_exercise_is_timed_by_its_own_tag_line() -> None:
    doc = _doctree(f"# A chapter\n\n{_words(50)}\n\n## Exercises\n\n"
                   "*Level 1, by hand · objective 1 · about 25 min · essential*\n\n"
                   "*Level 2, code · objective 2 · about 15 min*\n\n"
                   "*Level 3, derive or explain · objective 2 · about 30 min · challenge*\n")
    times = rt.page_times(doc)
    assert times is not None and times.essential == 25, "only the essential one, at its own minutes"
    assert rt.page_times(_doctree(f"# Deeper\n\n{_words(10)}\n")).essential == 0
