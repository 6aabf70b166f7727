"""The student edition (book/press/student.py, ``make student``): no solution left, everything else kept.

The module builds both editions of the web pages the way ``make student`` does (stored outputs; a
repository URL set, so the full pages have launch buttons) and runs every student notebook in the
project's kernel, side by side, in about a minute. Then:

* no solution leaves anything in any file of the student build: several distinctive pieces of every
  solution's text, code and outputs (normalised: no whitespace, straight quotes), its figures (by their
  bytes and their base64 text) and the search-index stems of words only solutions use are looked for
  in every file (but those copied unchanged from an installed package, recognised by their bytes:
  MathJax, Plotly, the theme), and each is first found in the full build, so the search cannot pass by
  finding nothing anywhere;
* each student notebook is the notebook edition less its solution cells, and runs from its first cell
  through its last exercise;
* the chapters mark every solution, and the notebook edition is what nbgrader needs.

The printed student page (print media) is tests/browser/test_student.py, with the full book as built.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import nbformat
import pytest

from press import notebook_edition as nbe
from press import student

ROOT = Path(__file__).resolve().parents[1]

CHAPTERS = sorted(p.name for p in (ROOT / "book").glob("[0-9]*.ipynb"))  # with the going-deeper pages
WITH_EXERCISES = [name for name in CHAPTERS if not nbe.is_deeper_page(name)]
EXERCISE = re.compile(r"^### Exercise (\d+)\.(\d+)", re.M)
REPO = "https://github.com/example/attention-book"
LAUNCH = re.compile(r"https://(?:mybinder\.org|colab\.research\.google\.com)/")

# Runs one student notebook in the kernel of this Python, from its first cell through cell `stop`, in
# the current directory; an error in a cell ends it with nbclient's message (the cell and traceback).
RUN_NOTEBOOK = """
import sys, nbformat
from nbclient import NotebookClient
nb = nbformat.read(sys.argv[1], as_version=4)
stop = int(sys.argv[2])
client = NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": "."}})
with client.setup_kernel():
    for i, cell in enumerate(nb.cells[:stop + 1]):
        if cell.cell_type == "code":
            client.execute_cell(cell, i)
print(sum(c.cell_type == "code" for c in nb.cells[:stop + 1]), "code cells ran")
"""


@dataclass
class Runs:
    student: Path  # `student.py --edition student --out`: html/, notebooks/, jupyter_execute/, .doctrees/
    full: Path  # the same for the full book
    notebooks: dict[str, subprocess.CompletedProcess]  # each student notebook's run
    stops: dict[str, int]  # the index of its last exercise cell
    seconds: dict[str, float]


def last_exercise_cell(nb: nbformat.NotebookNode) -> int:
    """The index of the last cell of the last exercise (before the next heading, or the last cell)."""
    starts = [i for i, c in enumerate(nb.cells) if c.cell_type == "markdown" and EXERCISE.search(c.source)]
    if not starts:
        return len(nb.cells) - 1  # a going-deeper page has none: it runs to its end
    stop = len(nb.cells) - 1
    for i in range(starts[-1] + 1, len(nb.cells)):
        cell = nb.cells[i]
        heading = cell.cell_type == "markdown" and re.match(r"#{1,3} ", cell.source)
        if heading and not EXERCISE.match(cell.source):
            stop = i - 1
            break
    return stop


@pytest.fixture(scope="module")
def student_notebooks() -> dict[str, nbformat.NotebookNode]:
    return nbe.build(ROOT, edition="student")


@pytest.fixture(scope="module")
def full_notebooks() -> dict[str, nbformat.NotebookNode]:
    return nbe.build(ROOT)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory,
         student_notebooks: dict[str, nbformat.NotebookNode]) -> Runs:
    """Both builds and every student notebook's run, at most four at a time, longest first."""
    out = tmp_path_factory.mktemp("editions")
    env = {**os.environ, "BOOK_REPOSITORY_URL": REPO}
    env.pop("BOOK_EDITION", None)
    # One BLAS thread per kernel: the runs go side by side on a few cores (only errors are compared).
    kernel_env = {**env, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    jobs: dict[str, tuple[list[str], Path]] = {}
    stops = {}
    for name, nb in student_notebooks.items():
        folder = out / "run" / Path(name).stem  # a fresh directory for each, outside the repository
        folder.mkdir(parents=True)
        (folder / name).write_text(nbe.serialise(nb), encoding="utf-8")
        stops[name] = last_exercise_cell(nb)
        jobs[name] = ([sys.executable, "-c", RUN_NOTEBOOK, name, str(stops[name])], folder)
    for edition in ("student", "full"):
        jobs[edition] = ([sys.executable, "-m", "press.student", "--edition", edition, "--out",
                          str(out / edition)], ROOT)
    order = sorted(jobs, key=lambda k: (k != "04_scaling.ipynb", k not in ("student", "full"), k))

    def run(key: str) -> tuple[subprocess.CompletedProcess, float]:
        argv, cwd = jobs[key]
        start = time.perf_counter()
        done = subprocess.run(argv, cwd=cwd, env=env if key in ("student", "full") else kernel_env,
                              capture_output=True, text=True, timeout=900)
        return done, time.perf_counter() - start

    with ThreadPoolExecutor(max_workers=4) as pool:
        results = dict(zip(order, pool.map(run, order), strict=True))
    for edition in ("student", "full"):
        done = results[edition][0]
        assert done.returncode == 0, (
            f"the {edition} build failed:\n{done.stdout[-4000:]}\n{done.stderr[-4000:]}")
    return Runs(out / "student", out / "full", {k: results[k][0] for k in student_notebooks}, stops,
                {k: round(v[1], 1) for k, v in results.items()})


# --------------------------------------------------------------------------- the markers
@pytest.mark.parametrize("name", WITH_EXERCISES)
def test_every_solution_of_the_chapters_is_marked(name):
    nb = nbformat.read(ROOT / "book" / name, as_version=4)
    assert nbe.marker_problems(nb, name) == [], "run `python -m press.notebook_edition --mark`"
    gated = sum(len(nbe.SOLUTION_START.findall(c.source)) for c in nb.cells if c.cell_type == "markdown")
    marked = [c for c in nb.cells if nbe.is_solution(c)]
    assert gated >= 3 and len(marked) > gated, (name, gated, len(marked))
    assert all(c.source.startswith(nbe.BEGIN_SOLUTION) for c in marked if c.cell_type == "code")
    for cell in nb.cells:  # every check a learner runs stays (a solution's check of its own answer goes)
        if (cell.cell_type == "code" and not nbe.is_solution(cell)
                and re.search(r"\bcheck\(", nbe.without_markers(cell.source))):
            kept = nbe.student_source(cell)
            assert kept is not None and re.search(r"\bcheck\(", kept), (name, cell.source)


def test_an_answer_folded_into_a_box_is_a_region_of_its_box():
    begin, end = nbe.BEGIN_SOLUTION, nbe.END_SOLUTION
    box = (f"::::{{admonition}} Check by hand\nCompute the weight.\n{begin}\n"
           f":::{{admonition}} Answer\n:class: dropdown attnlib-answer\nScores 1, 1, 0, 2, 1.\n:::\n"
           f"{end}\n::::")
    cell = _cell("markdown", box, solution=True)
    (region,) = nbe.solution_regions(cell.source)
    assert region.startswith(":::{admonition} Answer") and nbe.is_solution(cell)
    kept = nbe.student_source(cell)
    assert "Check by hand" in kept and "Answer" not in kept and "Scores 1, 1, 0, 2, 1" not in kept
    assert kept.endswith("Compute the weight.\n::::")  # the box still closes


def _cell(kind: str, source: str, solution: bool = False, grade_id: str = "x-1") -> nbformat.NotebookNode:
    cell = nbformat.v4.new_code_cell(source) if kind == "code" else nbformat.v4.new_markdown_cell(source)
    if solution:
        cell.metadata["nbgrader"] = nbe.nbgrader_metadata(grade_id, kind)
    return cell


def test_student_source_reads_the_markers_as_nbgrader_does():
    begin, end = nbe.BEGIN_SOLUTION, nbe.END_SOLUTION
    assert nbe.student_source(_cell("code", "x = 1")) == "x = 1"
    assert nbe.student_source(_cell("markdown", "All answer.", solution=True)) is None
    assert nbe.student_source(_cell("code", f"{begin}\nx = 1\n{end}", solution=True)) is None
    partial = _cell("code", f"x = None\nif True:\n    {begin}\n    x = 1\n    {end}\ncheck(x)", solution=True)
    assert nbe.student_source(partial) == f"x = None\nif True:\n    {nbe.CODE_STUB}\ncheck(x)"
    text = _cell("markdown", f"Question.\n{begin}\nAnswer.\n{end}\nMore.", solution=True)
    assert nbe.student_source(text) == "Question.\nMore."
    with pytest.raises(ValueError, match="not marked as a solution"):
        nbe.student_source(_cell("code", f"{begin}\nx = 1\n{end}"))
    with pytest.raises(ValueError, match="without its"):
        nbe.student_source(_cell("code", f"{begin}\nx = 1", solution=True))
    cell = partial.copy()
    cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text="the answer\n")]
    stripped = nbe.student_cell(cell)
    assert stripped.outputs == [] and "nbgrader" not in stripped.metadata


def test_marker_problems_finds_every_missing_marker_and_mark_solutions_adds_them():
    nb = nbformat.v4.new_notebook(cells=[
        _cell("markdown", ":::{exercise}\n:label: ex-a\nDo it.\n:::"),
        _cell("markdown", "```{solution-start} ex-a\n:class: dropdown\n```\nBecause."),
        _cell("code", "print(42)"),
        _cell("markdown", "```{solution-end}\n```"),
        _cell("markdown", "Not a solution.", solution=True, grade_id="stray"),
    ])
    problems = nbe.marker_problems(nb, "x.ipynb")
    assert len(problems) == 5, problems  # three cells unmarked, the code unwrapped, one stray mark
    nb.cells.pop()
    nbe.mark_solutions(nb)
    assert nbe.marker_problems(nb, "x.ipynb") == []
    assert nb.cells[2].source == f"{nbe.BEGIN_SOLUTION}\nprint(42)\n{nbe.END_SOLUTION}"
    grade_ids = [c.metadata.get("nbgrader", {}).get("grade_id") for c in nb.cells]
    assert grade_ids == [None, "ex-a-1", "ex-a-2", "ex-a-3"]
    again = nbformat.from_dict(json.loads(json.dumps(nb)))
    assert nbe.mark_solutions(again) == nb  # idempotent
    nb.cells[1].metadata["nbgrader"]["grade"] = False
    assert any("not graded" in p for p in nbe.marker_problems(nb))


def test_a_cell_added_to_a_marked_solution_gets_an_id_of_its_own():
    """nbgrader refuses a notebook with two cells of one grade id: a new cell in a solution that is
    already marked (ids -1 to -3) takes the next free id, not its position's."""
    nb = nbformat.v4.new_notebook(cells=[
        _cell("markdown", ":::{exercise}\n:label: ex-a\nDo it.\n:::"),
        _cell("markdown", "```{solution-start} ex-a\n:class: dropdown\n```\nBecause.", True, "ex-a-1"),
        _cell("code", "print(41)"),  # new, in second place
        _cell("code", f"{nbe.BEGIN_SOLUTION}\nprint(42)\n{nbe.END_SOLUTION}", True, "ex-a-2"),
        _cell("markdown", "```{solution-end}\n```", True, "ex-a-3"),
    ])
    nbe.mark_solutions(nb)
    grade_ids = [c.metadata.get("nbgrader", {}).get("grade_id") for c in nb.cells]
    assert grade_ids == [None, "ex-a-1", "ex-a-4", "ex-a-2", "ex-a-3"]
    assert nbe.marker_problems(nb, "x.ipynb") == []


@pytest.mark.parametrize(("grade_id", "kind", "match"), [
    ("a b", "code", "grade_id"), ("a.b", "markdown", "grade_id"), ("ok", "raw", "cell_type")])
def test_nbgrader_metadata_refuses_what_nbgrader_refuses(grade_id, kind, match):
    with pytest.raises(ValueError, match=match):
        nbe.nbgrader_metadata(grade_id, kind)


def test_an_unknown_edition_is_an_error():
    with pytest.raises(ValueError, match="edition must be one of"):
        nbe.build(ROOT, edition="teacher")


# --------------------------------------------------------------------------- the notebooks
@pytest.mark.parametrize("name", CHAPTERS)
def test_a_student_notebook_is_the_notebook_edition_less_its_solutions(name, full_notebooks,
                                                                       student_notebooks):
    full, st = full_notebooks[name], student_notebooks[name]
    expected = [c for c in full.cells if not nbe.is_solution(c)]
    assert [c.id for c in st.cells] == [c.id for c in expected]
    heading = 1  # the title cell's note names the edition; every other cell is the same
    assert "student edition" in st.cells[heading].source and "student edition" not in expected[heading].source
    for got, want in zip(st.cells[heading + 1:], expected[heading + 1:], strict=True):
        if got.source.startswith("## References"):  # less the works only solutions cite
            assert set(got.source.split("\n")) < set(want.source.split("\n")) or got.source == want.source
            continue
        assert (got.source, got.get("outputs")) == (want.source, want.get("outputs")), (name, got.id)
    assert st.metadata["attnbook"]["edition"] == "student"
    solutions = [c for c in full.cells if nbe.is_solution(c)]
    assert len(solutions) >= len(EXERCISE.findall("\n".join(c.source for c in full.cells)))
    assert EXERCISE.findall(_text(st)) == EXERCISE.findall(_text(full)), "an exercise went missing"
    for marker in ("Solution to Exercise", "<summary>Answer</summary>", nbe.BEGIN_SOLUTION, "attachment:"):
        assert marker not in _text(st), (name, marker)
    assert not any("nbgrader" in c.metadata for c in st.cells)


def _text(nb: nbformat.NotebookNode) -> str:
    return "\n".join(c.source for c in nb.cells)


def test_the_notebook_edition_is_an_nbgrader_source(full_notebooks, student_notebooks):
    """One answer cell per exercise (and per answer folded into a box) that nbgrader replaces with its stub;
    what it keeps is the student notebook."""
    for name, nb in full_notebooks.items():
        answers = [c for c in nb.cells if nbe.is_solution(c)]
        ids = [c.metadata["nbgrader"]["grade_id"] for c in answers]
        assert len(ids) == len(set(ids)) and all(nbe.GRADE_ID.match(i) for i in ids), (name, ids)
        n_exercises = len(EXERCISE.findall(_text(nb)))
        assert len([c for c in answers if "solution" in c.metadata.get("tags", [])]) == n_exercises
        for cell in answers:
            meta = cell.metadata["nbgrader"]
            assert cell.cell_type == "markdown" and meta["grade"] and meta["points"] == 1, (name, meta)
            assert set(meta) == {"grade", "grade_id", "locked", "points", "schema_version", "solution",
                                 "task"}
        release = [c for c in nb.cells if not nbe.is_solution(c)]  # what nbgrader's stubs stand between
        assert [c.id for c in release] == [c.id for c in student_notebooks[name].cells]


def test_make_student_writes_the_student_notebooks(runs, student_notebooks):
    written = sorted(p.name for p in (runs.student / "notebooks").glob("*.ipynb"))
    assert written == CHAPTERS
    for name, nb in student_notebooks.items():
        assert (runs.student / "notebooks" / name).read_text(encoding="utf-8") == nbe.serialise(nb), name


@pytest.mark.parametrize("name", CHAPTERS)
def test_every_student_notebook_runs_through_its_exercises(runs, name, student_notebooks):
    done = runs.notebooks[name]
    assert done.returncode == 0, f"{name} failed after {runs.seconds[name]} s:\n{done.stderr[-6000:]}"
    n_code = sum(c.cell_type == "code" for c in student_notebooks[name].cells[:runs.stops[name] + 1])
    assert f"{n_code} code cells ran" in done.stdout and n_code > 5, done.stdout
    cells = student_notebooks[name].cells  # a page without exercises runs to its end
    assert runs.stops[name] >= max((i for i, c in enumerate(cells) if EXERCISE.search(c.source)),
                                   default=len(cells) - 1)


# --------------------------------------------------------------------------- the web pages
def _files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.is_file())


def test_no_solution_text_anywhere_in_the_student_edition(runs, student_notebooks, capsys):
    sols = student.solutions(ROOT)
    elsewhere, words = student.elsewhere_text(student_notebooks, ROOT)
    frags = student.fragments(sols, elsewhere) + _image_data(sols)
    terms = student.search_terms(sols, words)
    # Every solution leaves several pieces to find, its text among them.
    for sol in sols:
        mine = [f for f in frags if f.solution == f"{sol.chapter}:{sol.label}"]
        assert len(mine) >= 2 and "text" in {f.kind for f in mine}, f"{sol.chapter}:{sol.label}: {mine}"

    # The full build holds each piece where a reader would meet it: its chapter's page, the page's
    # ".ipynb" download and the notebook edition (text, code, outputs), the page's images, the search index.
    full_html = runs.full / "html"
    for frag in frags:
        chapter = frag.solution.split(":")[0]
        if frag.kind in ("text", "code", "output"):
            where = [full_html / "book" / chapter.replace(".ipynb", ".html"),
                     full_html / "_sources" / "book" / chapter, runs.full / "notebooks" / chapter]
        elif frag.kind == "image":
            where = _files(full_html / "_images")
        else:  # imagedata: the figure as the notebook edition attaches it
            where = [runs.full / "notebooks" / chapter]
        hits = student.found_in([frag], where)
        assert frag in hits and (frag.kind == "image" or len(hits[frag]) == len(where)), (
            f"{frag} is not in every place of the full build it should be: {hits.get(frag)}")
    full_terms = student.index_terms(full_html)
    assert all(t.value in full_terms for t in terms), [t.value for t in terms if t.value not in full_terms]

    # The student build holds none of them, in any file.
    files = _files(runs.student)
    packages = student.package_files(p.name for p in files)
    searched = [p for p in files if not student.is_package_copy(p, packages)]
    leaks = student.found_in(frags, searched)
    assert not leaks, "solution text in the student edition:\n" + "\n".join(
        f"{f.solution} {f.kind} {f.value!r}: {[str(p.relative_to(runs.student)) for p in paths]}"
        for f, paths in leaks.items())
    student_terms = student.index_terms(runs.student / "html")
    assert not [t for t in terms if t.value in student_terms]
    with capsys.disabled():
        kinds = {k: sum(f.kind == k for f in frags) for k in ("text", "code", "output", "image", "imagedata")}
        print(f"\n  student edition: {len(sols)} solutions, {len(frags)} pieces ({kinds}) and {len(terms)} "
              f"search terms looked for in {len(searched)} files ({len(files) - len(searched)} more are "
              f"package files copied unchanged); none found. Run times: {runs.seconds}")


def _image_data(sols: list[student.Solution]) -> list[student.Fragment]:
    """A stretch of each solution figure's base64 text (past the PNG header every figure shares)."""
    import base64

    out = []
    for sol in sols:
        for img in sol.images:
            text = base64.b64encode(img).decode()
            piece = student.normalise(text[400:480])
            out.append(student.Fragment(f"{sol.chapter}:{sol.label}", "imagedata", piece))
    return out


def _page(folder: Path, name: str) -> str:
    return (folder / "html" / "book" / name.replace(".ipynb", ".html")).read_text(encoding="utf-8")


@pytest.mark.parametrize("name", WITH_EXERCISES)
def test_the_student_page_keeps_every_exercise_and_shows_no_solution(runs, name):
    source = nbformat.read(ROOT / "book" / name, as_version=4)
    exercises = "\n".join(c.source for c in source.cells if "{exercise}" in c.source)
    labels = re.findall(r":label:\s*(\S+)", exercises)
    gated = sum(len(nbe.SOLUTION_START.findall(c.source)) for c in source.cells if c.cell_type == "markdown")
    full, st = _page(runs.full, name), _page(runs.student, name)
    assert len(re.findall(r'class="[^"]*\bsolution\b', full)) == gated > 0
    assert not re.findall(r'class="[^"]*\bsolution\b', st)
    for label in labels:
        assert f'id="{label}"' in st and f'id="{label}"' in full, (name, label)
    assert LAUNCH.search(full) and not LAUNCH.search(st), "launch buttons would open the notebook edition"
    title = re.compile(r"<title>[^<]*\(student edition\)</title>")
    assert title.search(st) and not title.search(full)


def test_the_full_book_never_shows_the_marker_lines(runs):
    pages = [p for p in _files(runs.full / "html") if p.suffix == ".html"]
    assert len(pages) > len(CHAPTERS)
    for path in pages + _files(runs.full / "jupyter_execute"):
        assert "BEGIN SOLUTION" not in path.read_text(encoding="utf-8", errors="ignore"), path


def test_the_download_items_give_the_student_notebooks(runs, student_notebooks):
    for name, nb in student_notebooks.items():
        served = runs.student / "html" / "_sources" / "book" / name
        assert served.read_text(encoding="utf-8") == nbe.serialise(nb)
        assert (runs.full / "html" / "_sources" / "book" / name).read_bytes() == (
            ROOT / nbe.OUT_DIR / name).read_bytes(), "the full book's download is the notebook edition"


# --------------------------------------------------------------------------- the safety net
def test_a_solution_without_markers_fails_the_student_build(tmp_path):
    """A gated solution on a Markdown page (where no marker can go) reaches the doctree: it is removed,
    and the warning fails a build with -W."""
    (tmp_path / "conf.py").write_text(
        "extensions = ['myst_nb', 'sphinx_exercise', 'press.student']\n"
        "book_edition = 'student'\n", encoding="utf-8")
    (tmp_path / "index.md").write_text(
        "# Page\n\n:::{exercise}\n:label: ex-page\nWhat is six times seven?\n:::\n\n"
        "```{solution-start} ex-page\n:class: dropdown\n```\nForty-two, said the unmarked solution.\n"
        "```{solution-end}\n```\n", encoding="utf-8")
    argv = [sys.executable, "-m", "sphinx", "-b", "html", "-q", str(tmp_path), str(tmp_path / "_build")]
    env = {k: v for k, v in os.environ.items() if k != "BOOK_EDITION"}
    done = subprocess.run(argv, capture_output=True, text=True, timeout=300, env=env)
    assert "a solution without nbgrader markers reached the student edition" in done.stderr, done.stderr
    page = (tmp_path / "_build" / "index.html").read_text(encoding="utf-8")
    assert "six times seven" in page and "Forty-two" not in page
    strict = subprocess.run([*argv[:3], "-W", *argv[3:-1], str(tmp_path / "_strict")],
                            capture_output=True, text=True, timeout=300, env=env)
    assert strict.returncode != 0


@pytest.mark.parametrize("out", [ROOT, ROOT / "book", ROOT / "_build"])
def test_make_student_never_writes_over_the_sources(out):
    with pytest.raises(ValueError, match="out must be a folder under"):
        student.build(out)
    with pytest.raises(ValueError, match="edition must be one of"):
        student.build(ROOT / "_build" / "x", edition="teacher")
