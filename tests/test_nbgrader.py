"""The notebook edition is an nbgrader source: nbgrader itself releases it without a solution and grades it.

Issue 12 promises that an instructor can give the notebooks of ``book/notebooks/`` to nbgrader.
``tests/test_student_edition.py`` checks the solution markers by our own reading of nbgrader's rules;
this module asks nbgrader (:data:`nbgrader_env.NBGRADER_PIN`, in a virtual environment of its own built
once under ``_build/nbgrader-venv``, ``tests/reproducibility/nbgrader_env.py``). It follows the recipe of
``book/instructors.md``: in a fresh course directory outside the checkout, with every notebook of the
edition as the assignment ``attention`` (``source/attention/*.ipynb``) and no configuration, it runs

1. ``nbgrader generate_assignment attention --force`` (with the gradebook, nbgrader's default), and checks
   that it succeeds without a warning (but that there is no ``nbgrader_config.py``) and that each released
   notebook (``release/attention/``)

   a. holds no solution: no line of its own of any solution (its text, the code of a solution region) is
      left anywhere in the notebook, and no figure attached to a solution cell;
   b. keeps every other cell as it was, the ``answer = ...`` / ``check("label", answer)`` cells among
      them, still editable;
   c. has nbgrader's stubs where the solutions were ("YOUR ANSWER HERE", "# YOUR CODE HERE"), one graded
      Markdown answer per exercise (and per other graded answer), each recorded in the gradebook at its
      points;

2. ``nbgrader autograde attention --no-execute`` on two submissions, ``answered`` (the source notebooks, so
   every answer written) and ``blank`` (the released notebooks as handed out), and checks in the gradebook
   (nbgrader's own API) that each answer of ``answered`` waits for manual grading and that ``blank``
   scores 0 with nothing to grade. The notebooks are not executed: every graded answer is written
   (Markdown), there are no nbgrader tests to run, and tests/test_colab.py runs the notebooks already.

The counts come from the notebooks as they are (another process may be rewriting them; the module reads
each once, at its start). A run takes about half a minute with the environment cached, a minute more to
build it. When the environment cannot be built, the tests fail with pip's message (they are never
skipped).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import nbformat
import nbgrader_env
import pytest

from press import notebook_edition as nbe

REPO_ROOT = Path(__file__).resolve().parents[1]
EDITION = REPO_ROOT / "book" / "notebooks"
HELPERS = REPO_ROOT / "tests" / "reproducibility"
VENV = REPO_ROOT / "_build" / "nbgrader-venv"

ASSIGNMENT = "attention"  # as in book/instructors.md
COURSE_ID = ""  # nbgrader's default: the recipe sets no course
STUDENTS = ("answered", "blank")
NAMES = sorted(p.stem for p in EDITION.glob("*.ipynb"))
# The notebooks with exercises: a going-deeper page has none (released unchanged, graded for nothing).
GRADED = [name for name in NAMES if not nbe.is_deeper_page(name)]
# nbgrader 0.9.6's stubs (ClearSolutions.text_stub, ClearSolutions.code_stub["python"]): an instructor
# who keeps nbgrader's defaults hands out these.
TEXT_STUB = "YOUR ANSWER HERE"
CODE_STUB = "# YOUR CODE HERE\nraise NotImplementedError()"
EXERCISE = re.compile(r"^### Exercise (\d+)\.(\d+)", re.M)
CHECK = re.compile(r"\bcheck\(")
LOG_PROBLEM = re.compile(r"\| (WARNING|ERROR|CRITICAL)\]")
NO_CONFIG = "No nbgrader_config.py file found"  # the one warning the recipe (no configuration) gives
MIN_PIECE = 12  # characters: a shorter solution line ("</details>", "$$") says nothing of its own


@dataclass
class Course:
    """What one run of nbgrader on the edition left behind (notebooks by name, without ``.ipynb``)."""

    root: Path
    source: dict[str, nbformat.NotebookNode]
    release: dict[str, nbformat.NotebookNode] = field(default_factory=dict)
    autograded: dict[str, dict[str, nbformat.NotebookNode]] = field(default_factory=dict)
    gradebook: dict[str, Any] = field(default_factory=dict)
    logs: dict[str, str] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)


def _nbgrader(venv: Path, args: list[str], course: Course) -> None:
    """Run ``nbgrader ARGS`` of ``venv`` in the course directory; fail the tests with its log if it fails."""
    started = time.monotonic()
    done = subprocess.run([str(venv / "bin" / "nbgrader"), *args], cwd=course.root,
                          env=nbgrader_env.nbgrader_env(venv), capture_output=True, text=True, timeout=900)
    course.seconds[args[0]] = round(time.monotonic() - started, 1)
    course.logs[args[0]] = done.stdout + done.stderr
    if done.returncode != 0:
        pytest.fail(f"nbgrader {' '.join(args)} failed (exit {done.returncode}):\n"
                    f"{done.stdout[-4000:]}\n{done.stderr[-6000:]}", pytrace=False)


def _read(folder: Path) -> dict[str, nbformat.NotebookNode]:
    return {p.stem: nbformat.read(p, as_version=4) for p in sorted(folder.glob("*.ipynb"))}


@pytest.fixture(scope="module")
def course(tmp_path_factory: pytest.TempPathFactory) -> Course:
    texts = {p.stem: p.read_text(encoding="utf-8") for p in sorted(EDITION.glob("*.ipynb"))}
    assert texts, f"no notebook edition in {EDITION} (make edition writes it)"
    source: dict[str, nbformat.NotebookNode] = {}
    for name, text in texts.items():
        try:
            source[name] = nbformat.reads(text, as_version=4)
        except Exception as err:  # nbformat raises several kinds for a half-written file
            pytest.fail(f"book/notebooks/{name}.ipynb is not a notebook ({err}); if `make edition` was "
                        "writing it, run the tests again", pytrace=False)
    root = tmp_path_factory.mktemp("nbgrader-course")
    assert not root.resolve().is_relative_to(REPO_ROOT), "the course directory must be outside the checkout"
    folder = root / "source" / ASSIGNMENT
    folder.mkdir(parents=True)
    for name, text in texts.items():
        (folder / f"{name}.ipynb").write_text(text, encoding="utf-8")
    run = Course(root=root, source=source)

    with nbgrader_env.locked(VENV):
        started = time.monotonic()
        try:
            venv, built = nbgrader_env.ensure_venv(VENV)
        except nbgrader_env.NbgraderEnvError as err:
            pytest.fail(f"the nbgrader environment could not be built:\n{err}", pytrace=False)
        run.seconds["environment"] = round(time.monotonic() - started, 1)
        _nbgrader(venv, ["generate_assignment", ASSIGNMENT, "--force"], run)
        run.release = _read(root / "release" / ASSIGNMENT)
        for student, given in zip(STUDENTS, (folder, root / "release" / ASSIGNMENT), strict=True):
            shutil.copytree(given, root / "submitted" / student / ASSIGNMENT)
        _nbgrader(venv, ["autograde", ASSIGNMENT, "--no-execute", "--force"], run)
        run.autograded = {s: _read(root / "autograded" / s / ASSIGNMENT) for s in STUDENTS}
        started = time.monotonic()
        argv = [str(venv / "bin" / "python"), str(HELPERS / "nbgrader_env.py"), "gradebook", str(root),
                COURSE_ID, ASSIGNMENT]
        query = subprocess.run(argv, cwd=root, env=nbgrader_env.nbgrader_env(venv), capture_output=True,
                               text=True, timeout=300)
        run.seconds["gradebook"] = round(time.monotonic() - started, 1)
        assert query.returncode == 0, f"reading the gradebook failed:\n{query.stderr[-4000:]}"
        run.gradebook = json.loads(query.stdout)
    print(f"\n{nbgrader_env.NBGRADER_PIN}: environment {'built' if built else 'cached'}; seconds "
          + ", ".join(f"{k} {v}" for k, v in run.seconds.items()))
    return run


def _pair(course: Course, name: str) -> tuple[nbformat.NotebookNode, nbformat.NotebookNode]:
    if name not in course.source:
        pytest.fail(f"{name}.ipynb left book/notebooks/ after collection; run the tests again", pytrace=False)
    assert name in course.release, f"nbgrader released no {name}.ipynb: {sorted(course.release)}"
    return course.source[name], course.release[name]


def _by_id(nb: nbformat.NotebookNode) -> dict[str, nbformat.NotebookNode]:
    return {cell.id: cell for cell in nb.cells}


def _stubbed(cell: nbformat.NotebookNode) -> str:
    """The source nbgrader should give a solution cell: the stub for the whole cell or for each region."""
    stub = CODE_STUB if cell.cell_type == "code" else TEXT_STUB
    if not nbe.solution_regions(cell.source):  # ValueError for unbalanced markers
        return stub
    kept, inside = [], False
    for line in cell.source.split("\n"):
        if line.strip() == nbe.BEGIN_SOLUTION:
            indent = line[:len(line) - len(line.lstrip())]
            kept += [indent + s for s in stub.split("\n")]
            inside = True
        elif line.strip() == nbe.END_SOLUTION:
            inside = False
        elif not inside:
            kept.append(line)
    return "\n".join(kept)


def _solution_text(cell: nbformat.NotebookNode) -> str:
    regions = nbe.solution_regions(cell.source)
    return "\n".join(regions) if regions else nbe.without_markers(cell.source)


def _kept_text(nb: nbformat.NotebookNode) -> str:
    """What a student edition keeps of the source's text (by our reading of the markers)."""
    return "\n".join(kept for cell in nb.cells if (kept := nbe.student_source(cell)) is not None)


def _pieces(cell: nbformat.NotebookNode, kept: str) -> list[str]:
    """The lines of a solution that say something of their own: long enough and nowhere outside solutions."""
    lines = {line.strip() for line in _solution_text(cell).split("\n")}
    return sorted(line for line in lines if len(line) >= MIN_PIECE and line not in kept)


def _everything(nb: nbformat.NotebookNode) -> str:
    """Every text of a notebook: sources, outputs and attachments (their names and data)."""
    parts = []
    for cell in nb.cells:
        parts += [cell.source, json.dumps(cell.get("outputs", []), ensure_ascii=False),
                  json.dumps(cell.get("attachments", {}), ensure_ascii=False)]
    return "\n".join(parts)


def _payloads(cell: nbformat.NotebookNode) -> list[str]:
    """The data of each attachment of a cell, without whitespace (base64 may be split into lines)."""
    return ["".join(str(data).split()) for bundle in cell.get("attachments", {}).values()
            for data in bundle.values()]


# --------------------------------------------------------------------------- 1. generate_assignment
def test_generate_assignment_releases_every_notebook_without_a_warning(course):
    assert sorted(course.release) == sorted(course.source), (sorted(course.release), sorted(course.source))
    problems = [line for line in course.logs["generate_assignment"].splitlines()
                if LOG_PROBLEM.search(line) and NO_CONFIG not in line]
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("name", GRADED)
def test_the_release_holds_no_solution_text(course, name):
    source, release = _pair(course, name)
    solutions = [c for c in source.cells if nbe.is_solution(c)]
    assert solutions, f"{name} has no solution cell: nothing for nbgrader to take out"
    kept, released = _kept_text(source), _everything(release)
    for cell in solutions:
        pieces = _pieces(cell, kept)
        assert pieces, f"{name}: the solution {cell.id} has no line of its own to look for:\n{cell.source}"
        leaked = [piece for piece in pieces if piece in released]
        assert not leaked, f"{name}: nbgrader released lines of the solution {cell.id}: {leaked}"
    assert "BEGIN SOLUTION" not in released


@pytest.mark.parametrize("name", NAMES)
def test_the_release_holds_no_figure_of_a_solution(course, name):
    """nbgrader replaces a solution cell's source but keeps its attachments (0.9.6, ClearSolutions): a
    figure attached to a graded answer would be handed out with the stub."""
    source, release = _pair(course, name)
    released = _by_id(release)
    leaks = []
    handed_out = {data for cell in release.cells for data in _payloads(cell)}
    handed_out |= {"".join(str(v).split()) for cell in release.cells for out in cell.get("outputs", [])
                   for v in out.get("data", {}).values()}
    for cell in source.cells:
        if not nbe.is_solution(cell):
            continue
        names = sorted(released[cell.id].get("attachments", {})) if cell.id in released else []
        data = [d for d in _payloads(cell) if d in handed_out]
        if names or data:
            grade_id = cell.metadata["nbgrader"]["grade_id"]
            leaks.append(f"{grade_id}: attachments {names}, {len(data)} image(s) of it handed out")
    assert not leaks, f"{name}: the released notebook hands out solution figures: {leaks}"


@pytest.mark.parametrize("name", NAMES)
def test_every_other_cell_is_released_unchanged(course, name):
    source, release = _pair(course, name)
    assert [c.id for c in release.cells] == [c.id for c in source.cells], "cells added, removed or moved"
    changed = [c.id for c, r in zip(source.cells, release.cells, strict=True)
               if not nbe.is_solution(c) and (r.cell_type, r.source) != (c.cell_type, c.source)]
    assert not changed, f"{name}: nbgrader changed cells that hold no solution: {changed}"


def test_every_check_cell_is_released_unchanged_and_editable(course):
    checks = 0
    for name in course.source:
        source, release = _pair(course, name)
        released = _by_id(release)
        for cell in source.cells:
            if cell.cell_type != "code" or not CHECK.search(cell.source) or nbe.is_solution(cell):
                continue
            checks += 1
            out = released.get(cell.id)
            assert out is not None and out.source == cell.source, (name, cell.source)
            editable = out.metadata.get("editable", True) and out.metadata.get("deletable", True)
            assert editable, f"{name}: nbgrader locked a check cell: {out.metadata}"
    assert checks > 0, "no check cell (`check(\"label\", answer)`) in the notebook edition"


@pytest.mark.parametrize("name", GRADED)
def test_each_solution_became_nbgraders_stub(course, name):
    source, release = _pair(course, name)
    released = _by_id(release)
    for cell in source.cells:
        if nbe.is_solution(cell):
            assert released[cell.id].source == _stubbed(cell), (name, cell.id, released[cell.id].source)


@pytest.mark.parametrize("name", GRADED)
def test_one_graded_answer_per_exercise_and_the_gradebook_has_each(course, name):
    source, release = _pair(course, name)
    graded = [c for c in release.cells if c.metadata.get("nbgrader", {}).get("grade")]
    answers = [c for c in graded if c.cell_type == "markdown" and c.metadata["nbgrader"].get("solution")]
    assert all(c.source == TEXT_STUB for c in answers), [c.source for c in answers if c.source != TEXT_STUB]
    exercises = len(EXERCISE.findall("\n".join(c.source for c in release.cells)))
    assert exercises > 0, f"{name} has no exercise heading"
    tagged = [c for c in answers if "solution" in c.metadata.get("tags", [])]
    assert len(tagged) == exercises, (name, exercises, [c.metadata["nbgrader"]["grade_id"] for c in tagged])
    assert len(answers) == sum(nbe.is_solution(c) and c.cell_type == "markdown" for c in source.cells)
    in_book = course.gradebook["notebooks"].get(name)
    assert in_book is not None, f"no {name} in the gradebook: {sorted(course.gradebook['notebooks'])}"
    recorded = {cell_name: points for cell_name, _, points in in_book["grade_cells"]}
    expected = {c.metadata["nbgrader"]["grade_id"]: float(c.metadata["nbgrader"]["points"]) for c in graded}
    assert recorded == expected


# --------------------------------------------------------------------------- 2. autograde
@pytest.mark.parametrize("name", GRADED)
def test_autograde_waits_for_written_answers_and_scores_blank_ones_zero(course, name):
    _pair(course, name)
    points = sum(p for _, _, p in course.gradebook["notebooks"][name]["grade_cells"])
    answered = course.gradebook["submissions"]["answered"][name]
    blank = course.gradebook["submissions"]["blank"][name]
    assert answered["max_score"] == blank["max_score"] == points > 0
    assert answered["needs_manual_grade"] and all(needs for _, _, needs in answered["grades"]), answered
    assert not blank["needs_manual_grade"] and blank["score"] == 0, blank
    assert all(score == 0 and not needs for _, score, needs in blank["grades"]), blank
    for student in STUDENTS:
        assert name in course.autograded[student], f"no autograded {name} for {student}"
