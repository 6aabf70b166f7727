"""The notebook edition (book/press/notebook_edition.py, written to book/notebooks/ by `make edition`).

It is committed, because Colab opens notebooks from the repository, so the first test is that it is
what the generator writes from the chapters now. The others check what a reader outside the book's
build meets: no MyST syntax, no glue, the values the HTML shows, exercises and solutions in order,
and a first cell that installs attnlib only where something is missing. Whether every notebook runs
top to bottom in a Colab-like environment is tests/test_colab.py.
"""

from __future__ import annotations

import re
from pathlib import Path
from types import SimpleNamespace

import nbformat
import pytest
from IPython.core.inputtransformer2 import TransformerManager
from IPython.utils.text import DollarFormatter

from press import notebook_edition as edition

ROOT = Path(__file__).resolve().parents[1]

CHAPTERS = sorted(p.name for p in (ROOT / "book").glob("[0-9]*.ipynb"))  # with the going-deeper pages
WITH_EXERCISES = [name for name in CHAPTERS if not edition.is_deeper_page(name)]
# the pages whose prose glues a number (a page may print all its numbers instead)
GLUING = [name for name in CHAPTERS if "{glue:text}" in (ROOT / "book" / name).read_text(encoding="utf-8")]
RAW_MYST = {
    "role": re.compile(r"\{[\w:-]+\}`"),
    "directive fence": re.compile(r"^\s*(`{3,}|:{3,})\{", re.M),
    "colon fence": re.compile(r"^\s*:{3,}", re.M),
    "target": re.compile(r"^\([\w.:-]+\)=\s*$", re.M),
    "directive option": re.compile(r"^\s*:(label|class|nonumber|name):", re.M),
    "substitution": re.compile(r"\{\{"),
}


@pytest.fixture(scope="module")
def built() -> dict[str, nbformat.NotebookNode]:
    return edition.build(ROOT)


def _markdown(nb: nbformat.NotebookNode) -> str:
    return "\n\n".join(c.source for c in nb.cells if c.cell_type == "markdown")


def _code(nb: nbformat.NotebookNode) -> list[nbformat.NotebookNode]:
    return [c for c in nb.cells if c.cell_type == "code"]


def test_the_committed_edition_is_up_to_date(built):
    assert sorted(built) == CHAPTERS
    committed = sorted(p.name for p in (ROOT / edition.OUT_DIR).glob("*.ipynb"))
    assert committed == CHAPTERS, "run `make edition`"
    for name, nb in built.items():
        text = (ROOT / edition.OUT_DIR / name).read_text(encoding="utf-8")
        assert text == edition.serialise(nb), f"{name} is out of date: run `make edition`"


def test_writing_twice_gives_the_same_bytes(built):
    again = edition.build(ROOT)
    assert {k: edition.serialise(v) for k, v in again.items()} == {
        k: edition.serialise(v) for k, v in built.items()
    }


@pytest.mark.parametrize("name", CHAPTERS)
def test_no_raw_myst_and_no_glue(built, name):
    nb = built[name]
    nbformat.validate(nb)
    text = _markdown(nb)
    for what, pattern in RAW_MYST.items():
        found = pattern.findall(text)
        assert not found, f"{name}: raw MyST {what}: {found[:3]}"
    for cell in _code(nb):
        assert "glue(" not in cell.source and "myst_nb" not in cell.source, (name, cell.source[:200])
        for output in cell.outputs:
            data = output.get("data", {})
            assert edition.GLUE_MIME not in data and edition.WIDGET_MIME not in data, (name, list(data))
    # The claim checks the HTML removes are not in the edition either.
    assert not [c for c in nb.cells if "claim" in c.metadata.get("tags", [])]


def test_most_pages_glue_numbers_into_their_prose():
    assert len(GLUING) >= len(CHAPTERS) - 2, sorted(set(CHAPTERS) - set(GLUING))


@pytest.mark.parametrize("name", GLUING)
def test_every_glued_number_is_the_one_the_html_shows(built, name):
    """Each {glue:text} role of the chapter is replaced by myst-nb's own formatting of the stored value."""
    source = nbformat.read(ROOT / "book" / name, as_version=4)
    values = edition._glue_values(source)
    text = _markdown(built[name])
    roles = [m for c in source.cells if c.cell_type == "markdown"
             for m in re.findall(r"\{glue:text\}`([^`]*)`", c.source)]
    assert roles, f"{name} glues no number (the test would check nothing)"
    for role in roles:
        key, _, spec = role.partition(":")
        shown = edition.format_plain_text(values[key], spec or "s")
        assert shown in text, f"{name}: {role} should show {shown!r}"


@pytest.mark.parametrize("name", WITH_EXERCISES)
def test_exercises_are_numbered_headings_each_followed_by_its_solution(built, name):
    source = nbformat.read(ROOT / "book" / name, as_version=4)
    src_md = "\n".join(c.source for c in source.cells if c.cell_type == "markdown")
    n_exercises = len(re.findall(r"^:{3,}\{exercise\}", src_md, re.M))
    n_solutions = len(re.findall(r"\{solution-start\}", src_md))
    chapter = int(name[:2])
    nb = built[name]
    headings = [(i, m) for i, c in enumerate(nb.cells) if c.cell_type == "markdown"
                for m in re.findall(r"^### Exercise (\d+)\.(\d+)", c.source, re.M)]
    assert [(int(a), int(b)) for _, (a, b) in headings] == [(chapter, k) for k in range(1, n_exercises + 1)]
    solutions = [(i, c) for i, c in enumerate(nb.cells) if "solution" in c.metadata.get("tags", [])]
    assert len(solutions) == n_solutions > 0
    for (i, cell), (j, (a, b)) in zip(solutions, headings, strict=False):
        assert cell.source.startswith(f"<details>\n<summary>Solution to Exercise {a}.{b}</summary>")
        assert cell.source.rstrip().endswith("</details>")
        assert j < i, f"{name}: the solution to {a}.{b} comes before its exercise"
        # nbgrader clears a solution's text but keeps its attachments: figures are inline, none attached
        assert not cell.get("attachments") and "attachment:" not in cell.source, name


def test_references_become_plain_text(built):
    text = _markdown(built["04_scaling.ipynb"])
    assert "**Theorem 4.1** (Variance of a dot product)." in text
    assert "*Proof.*" in _markdown(built["04a_scaling_deeper.ipynb"])  # the chapter's proofs live there
    assert "“Worked examples by hand” (chapter 3)" in text  # a {doc} into another chapter
    assert "Figure 2.1" in text  # a {numref} to another chapter's figure (the pipeline)
    assert "[Vaswani et al., 2017]" in text  # {cite}, as the HTML's author-year label
    assert "[Glorot and Bengio, 2010]" in text  # two authors
    references = built["04_scaling.ipynb"].cells[-1].source
    assert references.startswith("## References\n")
    assert "attention is all you need" in references.lower()


def test_the_chapter_data_is_read_from_the_package(built):
    # chapter 6's agreement data with PyTorch is read on its going-deeper page
    code = "\n".join(c.source for c in _code(built["06a_implementation_deeper.ipynb"]))
    assert "torch_agreement()" in code and "data/" not in code


# --------------------------------------------------------------------------- the install cell
def _run_install_cell(
    source: str, missing: set[str], environ: dict[str, str], pip_works: bool = True,
    ran: list[str] | None = None,
) -> list[str]:
    """Execute the install cell with find_spec and %pip replaced; return the pip lines it ran."""
    missing = set(missing)
    import importlib.util

    code = TransformerManager().transform_cell(source)
    ran = [] if ran is None else ran
    namespace: dict = {}

    def run_line_magic(magic, line, *args, **kwargs):  # as IPython does: expand {name} from the namespace
        ran.append(f"%{magic} " + DollarFormatter().vformat(line, (), namespace))
        if pip_works:
            missing.clear()

    shell = SimpleNamespace(run_line_magic=run_line_magic)

    def find_spec(name, *args, **kwargs):
        return None if name in missing else SimpleNamespace(name=name)

    real = importlib.util.find_spec
    importlib.util.find_spec = find_spec
    try:
        namespace["get_ipython"] = lambda: shell
        import os

        saved = dict(os.environ)
        os.environ.clear()
        os.environ.update(environ)
        try:
            exec(compile(code, "<install cell>", "exec"), namespace)
        finally:
            os.environ.clear()
            os.environ.update(saved)
    finally:
        importlib.util.find_spec = real
    return ran


@pytest.mark.parametrize("name", CHAPTERS)
def test_the_first_cell_is_the_install_cell(built, name):
    first = built[name].cells[0]
    assert first.cell_type == "code" and first.metadata["tags"] == [edition.INSTALL_TAG]


REPO = "git+https://github.com/o/r.git@v0.1.0"
WHEEL = "attnlib-0.1.0-py3-none-any.whl"
SITE_WHEEL = f"https://o.example/book/attnlib/{WHEEL}"


def _pip(source: str) -> str:
    return f'%pip install --quiet "attnlib[interactive] @ {source}"'


def test_the_install_cell_does_nothing_where_everything_is_installed():
    cell = edition.install_cell([REPO, SITE_WHEEL], WHEEL)
    assert _run_install_cell(cell.source, missing=set(), environ={}) == []


@pytest.mark.parametrize(
    "missing", [{"attnlib"}, {"plotly"}, {"ipywidgets"}, {"attnlib", "plotly", "ipywidgets"}]
)
def test_the_install_cell_installs_from_the_configured_tag_where_something_is_missing(missing):
    cell = edition.install_cell([REPO, SITE_WHEEL], WHEEL)
    assert _run_install_cell(cell.source, missing=missing, environ={}) == [_pip(REPO)]


def test_attnlib_source_overrides_the_configured_url():
    cell = edition.install_cell([REPO, SITE_WHEEL], WHEEL)
    ran = _run_install_cell(cell.source, missing={"attnlib"}, environ={"ATTNLIB_SOURCE": "git+file:///tmp/x"})
    assert ran == [_pip("git+file:///tmp/x")]


def test_the_install_cell_falls_back_in_order_then_says_how_to_upload_the_wheel(tmp_path, monkeypatch):
    """Each source is tried until one installs: $ATTNLIB_SOURCE, the repository, the book's wheel, a wheel
    beside the notebook. When every one fails, the error names the wheel, where it is, and Colab's upload."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / WHEEL).write_bytes(b"")
    cell = edition.install_cell([REPO, SITE_WHEEL], WHEEL, SITE_WHEEL)
    ran: list[str] = []
    expected = r"(?s)could not be installed.*" + re.escape(SITE_WHEEL) + ".*Colab"
    with pytest.raises(RuntimeError, match=expected):
        _run_install_cell(cell.source, missing={"attnlib"}, environ={"ATTNLIB_SOURCE": "/src"},
                          pip_works=False, ran=ran)
    assert ran == [_pip("/src"), _pip(REPO), _pip(SITE_WHEEL), _pip((tmp_path / WHEEL).resolve().as_uri())]


def test_without_a_repository_or_site_the_install_cell_says_how_to_get_the_wheel(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    cell = edition.install_cell(["", ""], WHEEL)
    comment = cell.source.split("sources = [")[0]
    assert "repository" not in comment and "own wheel" not in comment, "the comment names sources not tried"
    full = edition.install_cell([REPO, SITE_WHEEL], WHEEL).source.split("sources = [")[0]
    assert "the book's repository, the book's own wheel" in full
    assert '\n        "",\n' not in cell.source  # no empty source listed
    with pytest.raises(RuntimeError, match=r"(?s)" + re.escape(WHEEL) + ".*foot of any page.*Files panel"):
        _run_install_cell(cell.source, missing={"attnlib"}, environ={})
    ran = _run_install_cell(cell.source, missing={"attnlib"}, environ={"ATTNLIB_SOURCE": "/src"})
    assert ran == [_pip("/src")]
    (tmp_path / WHEEL).write_bytes(b"")  # uploaded beside the notebook
    assert _run_install_cell(cell.source, missing={"attnlib"}, environ={}) == [
        _pip((tmp_path / WHEEL).resolve().as_uri())
    ]


@pytest.mark.parametrize(
    ("url", "expected"),
    [("", ""), ("https://github.com/o/r", "git+https://github.com/o/r.git@v1.2.3"),
     ("https://github.com/o/r.git/", "git+https://github.com/o/r.git@v1.2.3")],
)
def test_install_source_is_the_repository_at_the_version_tag(url, expected):
    assert edition.install_source(edition.Repository(url), "1.2.3") == expected


@pytest.mark.parametrize(
    ("site", "expected"),
    [("", ""), ("https://o.example/book/", SITE_WHEEL), ("https://o.example/book", SITE_WHEEL)],
)
def test_the_book_s_wheel_url_is_under_the_site(site, expected):
    assert edition.wheel_url(edition.Repository(site_url=site), WHEEL) == expected


def test_the_edition_installs_from_the_repository_in_config():
    repository = edition.Repository.from_config(ROOT)
    import attnlib

    link = edition.wheel_url(repository, edition.wheel_ext.wheel_name(ROOT))
    cell = edition.install_cell([edition.install_source(repository, attnlib.__version__), link],
                                edition.wheel_ext.wheel_name(ROOT), link)
    committed = nbformat.read(ROOT / edition.OUT_DIR / CHAPTERS[0], as_version=4)
    assert committed.cells[0].source == cell.source
    assert edition.wheel_ext.wheel_name(ROOT) == f"attnlib-{attnlib.__version__}-py3-none-any.whl"


# --------------------------------------------------------------------------- the pieces
def test_without_glue_keeps_everything_else():
    source = 'x = 1\nglue("a", x,\n     display=False)\nprint(x)\nfrom myst_nb import glue\n'
    assert edition.without_glue(source) == "x = 1\nprint(x)"


def test_a_glue_call_inside_a_block_is_refused():
    with pytest.raises(ValueError, match="inside a block"):
        edition.without_glue('for k in range(2):\n    glue(f"a{k}", k, display=False)\n')


def test_an_unknown_role_or_directive_is_an_error_not_raw_text():
    chapter = edition.Chapter(ROOT / "book" / "99_x.ipynb", 9, "X", nbformat.v4.new_notebook(), {"v": "0.5"})
    r = edition.Renderer(chapter, edition.Labels(), edition.Bibliography({}))
    assert r.markdown("v = {glue:text}`v:.2f`") == "v = 0.50"
    assert r.markdown("the {term}`keys <Key>` and the {term}`softmax`") == "the keys and the softmax"
    with pytest.raises(ValueError, match="role"):
        r.markdown("{kbd}`Ctrl`")
    with pytest.raises(ValueError, match="directive"):
        r.markdown(":::{figure} x.png\n:::")
    with pytest.raises(KeyError, match="no stored glue output"):
        r.markdown("{glue:text}`missing`")
    with pytest.raises(ValueError, match="unclosed"):
        r.markdown(":::{exercise}\nnever closed")


def test_nested_directives_and_plain_code_fences():
    chapter = edition.Chapter(ROOT / "book" / "99_x.ipynb", 9, "X", nbformat.v4.new_notebook(), {})
    r = edition.Renderer(chapter, edition.Labels(), edition.Bibliography({}))
    text = ("::::{admonition} Check\n:class: tip\nDo it.\n\n"
            ":::{admonition} Answer\n:class: dropdown\n42\n:::\n::::")
    assert r.markdown(text) == ("**Check.**\n\nDo it.\n\n<details>\n<summary>Answer</summary>\n\n42\n\n"
                                "</details>")
    code = "```python\n(label)=\n:::\nx = 1\n```"
    assert r.markdown(f"Before.\n\n{code}\n\n(target)=\n## After") == f"Before.\n\n{code}\n\n## After"


def _code_cell(source: str, outputs: list | None = None) -> nbformat.NotebookNode:
    cell = nbformat.v4.new_code_cell(source)
    cell.outputs = outputs or []
    return cell


def test_cells_left_with_only_unread_assignments_are_dropped():
    printed = [nbformat.v4.new_output("stream", name="stdout", text="1\n")]
    cells = [
        _code_cell("a = 1"),  # read by the last cell: kept
        _code_cell("b = a + 1"),  # read only by the next, which is dropped: dropped too
        _code_cell("c = b * 2"),  # read by nothing: dropped
        _code_cell("obj.attr = 3"),  # changes an object: kept
        _code_cell("d = 4"),  # read by a solution's code: kept
        _code_cell("e = 5", printed),  # has an output: kept
        nbformat.v4.new_markdown_cell("<details>\n\n```python\nprint(d)\n```\n\n</details>"),
        _code_cell("print(a)"),
    ]
    kept = [c.source for c in edition._without_dead_cells(cells) if c.cell_type == "code"]
    assert kept == ["a = 1", "obj.attr = 3", "d = 4", "e = 5", "print(a)"]


def test_a_live_explorers_stored_note_says_to_run_the_cell():
    output = nbformat.v4.new_output(
        "display_data", data={"text/html": "<div>download this page</div>", "text/plain": "x",
                              edition.WIDGET_MIME: {"model_id": "abc"}},
        metadata={edition.LIVE_MARK: {"title": "d_k and the scaling"}},
    )
    (cleaned,) = edition.clean_outputs([output])
    assert cleaned["data"] == {"text/plain": "Live explorer: d_k and the scaling. Run this cell "
                                             "(after the cells above it) to open its controls."}


def test_chapter_titles_are_numbered_as_on_the_page(built):
    for name in CHAPTERS:
        title = next(c for c in built[name].cells if c.cell_type == "markdown").source.splitlines()[0]
        if edition.is_deeper_page(name):
            # Sphinx numbers the nested page after its chapter's sections (its level-2 headings).
            parent = next(n for n in CHAPTERS if n[:2] == name[:2] and not edition.is_deeper_page(n))
            chapter = nbformat.read(ROOT / "book" / parent, as_version=4)
            h2 = sum(len(re.findall(r"^## ", c.source, re.M))
                     for c in chapter.cells if c.cell_type == "markdown")
            assert title.startswith(f"# {int(name[:2])}.{h2 + 1}. Going deeper"), title
        else:
            assert title.startswith(f"# {int(name[:2])}. "), title


def test_several_citations_are_sorted_and_joined_as_the_page_does(built):
    text = _markdown(built["01_why_attention.ipynb"])
    assert "[Cho et al., 2014, Sutskever et al., 2014]" in text
    references = built["01_why_attention.ipynb"].cells[-1].source
    assert "\\" not in references and "Merriënboer" in references, "LaTeX left in the reference list"


def test_the_install_cell_fails_loudly_when_pip_fails():
    cell = edition.install_cell([REPO], WHEEL)
    with pytest.raises(RuntimeError, match="could not be installed"):
        _run_install_cell(cell.source, missing={"attnlib"}, environ={}, pip_works=False)


def test_code_cells_are_numbered_as_one_run_from_the_top(built):
    """Execution counts 1, 2, 3, ... with the install cell first, as a reader's run from the top gives
    them (the chapter's counts had gaps where cells were dropped); execute results carry their cell's."""
    for name, nb in built.items():
        code = [c for c in nb.cells if c.cell_type == "code"]
        assert "install" in code[0].metadata.get("tags", []), name
        assert [c.execution_count for c in code] == list(range(1, len(code) + 1)), name
        for cell in code:
            for output in cell.outputs:
                if output.output_type == "execute_result":
                    assert output.execution_count == cell.execution_count, (name, cell.source[:60])


# --------------------------------------------------------------------------- figures and citations
def _source_figures(name: str) -> list[dict]:
    source = nbformat.read(ROOT / "book" / name, as_version=4)
    return [options for c in source.cells if c.cell_type == "code" and (options := edition.figure_options(c))]


# The pages with captioned figures (06, code and tables, and some going-deeper pages have none).
FIGURED = [name for name in CHAPTERS if _source_figures(name)]


def test_most_chapters_have_captioned_figures():
    assert len([n for n in FIGURED if not edition.is_deeper_page(n)]) >= 5, FIGURED


@pytest.mark.parametrize("name", FIGURED)
def test_figures_are_numbered_under_their_images_as_on_the_page(built, name):
    """Each captioned figure of the chapter (mystnb.figure in its cell's metadata) reads "**Figure 3.2.**
    caption" under its image, numbered 1, 2, ... in order; a solution's figure inside its solution."""
    figures = _source_figures(name)
    assert figures, f"{name} has no captioned figure (the test would check nothing)"
    chapter, cells = int(name[:2]), built[name].cells
    # A going-deeper page continues its chapter's numbers (Figure 3.5 follows Figure 3.4).
    first = 1 + sum(len(_source_figures(other)) for other in CHAPTERS
                    if other < name and other[:2] == name[:2]) if edition.is_deeper_page(name) else 1
    found = [(i, m) for i, c in enumerate(cells) if c.cell_type == "markdown"
             for m in re.findall(r"\*\*Figure (\d+)\.(\d+)\.\*\* ", c.source)]
    expected = [(chapter, k) for k in range(first, first + len(figures))]
    assert [(int(a), int(b)) for _, (a, b) in found] == expected
    for i, _ in found:
        if "solution" in cells[i].metadata.get("tags", []):
            assert "data:image/png;base64," in cells[i].source, f"{name}: a solution's caption, no figure"
        else:
            outputs = cells[i - 1].get("outputs", []) if cells[i - 1].cell_type == "code" else []
            # a plotted image, or a drawn schematic (attnlib.pipeline's inline SVG, as HTML)
            assert any("image/png" in (d := o.get("data", {})) or "<svg" in "".join(d.get("text/html", ""))
                       for o in outputs), (
                f"{name}: the caption in cell {i} is not under its figure"
            )


def test_figure_references_read_as_the_figures_are_numbered(built):
    text = _markdown(built["04_scaling.ipynb"])
    assert "at $T = 2$ (Figure 4.1)" in text
    # a going-deeper page refers to its chapter's figures by the chapter's numbers
    assert "the top panel of Figure 4.1." in _markdown(built["04a_scaling_deeper.ipynb"])


def test_a_figure_without_a_name_keeps_its_caption_unnumbered():
    chapter = edition.Chapter(Path("book/09_x.ipynb"), 9, "X", nbformat.v4.new_notebook())
    r = edition.Renderer(chapter, edition.Labels(), SimpleNamespace())
    cell = nbformat.v4.new_code_cell("plt.show()")
    assert edition.figure_caption(r, cell) == ""
    cell.metadata["mystnb"] = {"figure": {"caption": "A plot of $x$."}}
    assert edition.figure_caption(r, cell) == "*A plot of $x$.*"
    cell.metadata["mystnb"]["figure"]["name"] = "fig-x"
    r.labels.text["fig-x"] = "Figure 9.1"
    assert edition.figure_caption(r, cell) == "**Figure 9.1.** A plot of $x$."


def test_two_works_of_the_same_authors_and_year_are_cited_with_letters(built):
    """As the References page labels them (book/press/bibstyle.py): 2023a and 2023b, never two 2023s."""
    text = _markdown(built["07a_complexity_deeper.ipynb"])  # LLaMA 65B and LLaMA-2 70B, both cited there
    assert "[Touvron et al., 2023a]" in text and "[Touvron et al., 2023b]" in text
    assert "[Touvron et al., 2023]" not in text
    assert "[Vaswani et al., 2017]" in _markdown(built["04_scaling.ipynb"])  # no letter when unique
