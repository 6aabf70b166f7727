"""Local Sphinx extension: the exercise catalogue and the course plans of the instructors' page.

Every exercise of a chapter opens with one line that says what it asks and how long it takes::

    *Level 2, code · objective 3 · about 15 min*

(level 1 is a computation by hand, 2 a change to the code, 3 a derivation or an explanation; the
objective is item 3 of the chapter's own numbered "Learning objectives", which the catalogue and the
course plans call objective 4.3 in chapter 4). The level says what kind of work
an exercise is, not how hard: an exercise beyond the chapter's core, for strong students or projects,
ends its line with ``· challenge`` (``*Level 3, derive or explain · objective 5 · about 20 min ·
challenge*``), and every other exercise is *core*, within reach of the book's learner after the
chapter's core. Challenge exercises come last in their chapter. One core exercise of each chapter, the
one to do if a learner does only one, ends its line with ``· essential`` instead (``*Level 1, by hand ·
objective 2 · about 15 min · essential*``); an exercise is never both. An exercise with a computable
answer is followed, before its solution, by one cell per answer that the learner runs::

    answer = ...  # <what to submit>
    check("<label>", answer)

:func:`read_chapter` reads all of that from a chapter notebook, and two directives turn it into the
tables an instructor plans with, so that the instructors' page can never disagree with the chapters:

``{exercise-catalogue}``
    For every chapter, its numbered objectives with the exercises serving each, and a table of its
    exercises (level, core, essential or challenge, objective, time, checked answers); before them, a
    summary of the counts and minutes by chapter, level and pitch (core or challenge).
``{course-plan}``
    A course plan written in YAML in the directive's body (lectures, each with its minutes, what it
    teaches, the objectives it covers and the exercises set in class and as homework). The directive
    checks every objective and exercise it names against the chapters (a wrong one stops the build)
    and writes the plan with the exercises' times added up.

Exercises are referred to with ``{numref}``, so their numbers are those of the chapters' pages.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import nbformat
import yaml

BOOK = Path(__file__).resolve().parent.parent
CHALLENGE = "challenge"  # the word that ends the tag line of an exercise beyond the chapter's core
ESSENTIAL = "essential"  # the word that ends the tag line of the one core exercise to do first
TAG = re.compile(r"^\*Level ([123]), (by hand|code|derive or explain) · "
                 r"objective (\d+) · about (\d+) min(?: · (" + CHALLENGE + "|" + ESSENTIAL + r"))?\*$")
KINDS = {1: "by hand", 2: "code", 3: "derive or explain"}
EXERCISE = re.compile(r"^:::\{exercise\}[^\n]*\n(?::[\w-]+:[^\n]*\n)*?:label:\s*(\S+)\s*\n(.*?)^:::",
                      re.M | re.S)
SOLUTION_START = re.compile(r"^```\{solution-start\}\s*([\w:-]+)", re.M)
SOLUTION_END = re.compile(r"^```\{solution-end\}", re.M)
CHECK_CELL = re.compile(r'^answer = \.\.\.  # (?P<form>.+)\ncheck\("(?P<label>[\w:-]+)", answer\)$')
OBJECTIVES = re.compile(r"^## Learning objectives\s*$(.*?)(?=^#|\Z)", re.M | re.S)


class CatalogueError(ValueError):
    """A chapter's exercises or a course plan that does not follow the rules above."""


@dataclass
class Exercise:
    """One exercise of a chapter as the catalogue lists it."""

    label: str
    chapter: int
    cell: int  # index of the notebook cell that holds it
    first_line: str  # the tag line, as written
    level: int | None = None  # None when the tag line is missing or malformed
    kind: str | None = None
    objective: tuple[int, int] | None = None  # (chapter, item)
    minutes: int | None = None
    challenge: bool = False  # beyond the chapter's core; False for a core exercise
    essential: bool = False  # the chapter's one exercise to do first (always core)
    solution: tuple[int, int] | None = None  # cells of its gated solution, start and end
    checks: list[str] = field(default_factory=list)  # labels of its learner's check cells


@dataclass
class Chapter:
    path: Path
    number: int
    title: str
    objectives: list[str]  # the items of the numbered list, in order
    exercises: list[Exercise]
    check_cells: dict[str, int]  # label -> cell index of every learner's check cell


def _objectives(source: str) -> list[str] | None:
    m = OBJECTIVES.search(source)
    if not m:
        return None
    items = re.split(r"^\d+\. ", m.group(1), flags=re.M)[1:]
    return [" ".join(item.split("\n\n")[0].split()).rstrip(";.") for item in items]  # up to a blank line


def read_chapter(path: Path | str) -> Chapter:
    """Objectives, exercises (with their tag lines parsed), solutions and check cells of a chapter."""
    path = Path(path)
    nb = nbformat.read(path, as_version=4)
    number = int(path.name[:2])
    title, objectives, exercises = path.stem, None, []
    starts: dict[str, int] = {}
    check_cells: dict[str, int] = {}
    for i, cell in enumerate(nb.cells):
        if cell.cell_type == "code":
            if m := CHECK_CELL.match(cell.source.strip()):
                if m["label"] in check_cells:
                    raise CatalogueError(f"{path.name}: two check cells for {m['label']!r}")
                check_cells[m["label"]] = i
            continue
        if cell.cell_type != "markdown":
            continue
        if title == path.stem and (h := re.search(r"^# (.+)$", cell.source, re.M)):
            title = h.group(1).strip()
        if objectives is None:
            objectives = _objectives(cell.source)
        if m := SOLUTION_START.search(cell.source):
            starts[m.group(1)] = i
        for m in EXERCISE.finditer(cell.source):
            first = m.group(2).strip("\n").split("\n")[0].strip()
            ex = Exercise(m.group(1), number, i, first)
            apply_tag(ex)
            exercises.append(ex)
    for ex in exercises:
        if ex.label in starts:
            start = starts[ex.label]
            end = next((j for j in range(start, len(nb.cells))
                        if nb.cells[j].cell_type == "markdown" and SOLUTION_END.search(nb.cells[j].source)),
                       None)
            ex.solution = (start, end) if end is not None else None
    for label, i in check_cells.items():
        owners = [ex for ex in exercises if ex.cell < i]
        if owners:
            max(owners, key=lambda e: e.cell).checks.append(label)
    return Chapter(path, number, title, objectives or [], exercises, check_cells)


def apply_tag(ex: Exercise) -> Exercise:
    """Fill in the level, kind, objective, minutes and pitch of ``ex`` from its tag line, when it parses."""
    if t := TAG.match(ex.first_line):
        ex.level, ex.kind, ex.minutes = int(t[1]), t[2], int(t[4])
        ex.objective = (ex.chapter, int(t[3]))  # an exercise serves an objective of its own chapter
        ex.challenge, ex.essential = t[5] == CHALLENGE, t[5] == ESSENTIAL
    return ex


def chapters(book: Path = BOOK) -> list[Chapter]:
    """Every numbered chapter of the book, in order."""
    return [read_chapter(p) for p in sorted(book.glob("[0-9][0-9]_*.ipynb"))]


def tag_problems(chapter: Chapter) -> list[str]:
    """What is wrong with the tag lines of a chapter's exercises (empty when nothing is)."""
    problems = []
    for ex in chapter.exercises:
        if ex.level is None:
            problems.append(f"{ex.label}: first line {ex.first_line!r} is not "
                            "'*Level L, kind · objective k · about M min*' (or '... min · challenge*', "
                            "'... min · essential*')")
            continue
        if ex.kind != KINDS[ex.level]:
            problems.append(f"{ex.label}: level {ex.level} is {KINDS[ex.level]!r}, not {ex.kind!r}")
        if ex.objective is None:
            problems.append(f"{ex.label}: its first line names no objective")
            continue
        n, k = ex.objective
        if n != chapter.number or not 1 <= k <= len(chapter.objectives):
            problems.append(f"{ex.label}: objective {k} is not one of chapter {chapter.number}'s "
                            f"{len(chapter.objectives)}")
    return problems


# --------------------------------------------------------------------------- course plans
@dataclass
class Lecture:
    title: str
    minutes: int
    teach: str
    objectives: list[tuple[int, int]]
    in_class: list[str]
    homework: list[str]


def parse_plan(text: str, book: list[Chapter]) -> tuple[str, list[Lecture]]:
    """A course plan from its YAML, checked against the chapters: (its summary, its lectures)."""
    data = yaml.safe_load(text)
    if not isinstance(data, dict) or set(data) - {"summary", "lectures"} or "lectures" not in data:
        raise CatalogueError("a course plan is a mapping with 'lectures' (and optionally 'summary')")
    by_label = {ex.label: ex for ch in book for ex in ch.exercises}
    n_objectives = {ch.number: len(ch.objectives) for ch in book}
    lectures = []
    for i, raw in enumerate(data["lectures"], 1):
        keys = {"title", "minutes", "teach", "objectives", "in_class", "homework"}
        if not isinstance(raw, dict) or set(raw) != keys:
            raise CatalogueError(f"lecture {i}: needs exactly the keys {sorted(keys)}")
        objectives = []
        for obj in str(raw["objectives"]).replace(",", " ").split():
            m = re.fullmatch(r"(\d+)\.(\d+)", obj)
            if not m or not 1 <= int(m[2]) <= n_objectives.get(int(m[1]), 0):
                raise CatalogueError(f"lecture {i}: no learning objective {obj!r} in the chapters")
            objectives.append((int(m[1]), int(m[2])))
        for label in [*raw["in_class"], *raw["homework"]]:
            if label not in by_label:
                raise CatalogueError(f"lecture {i}: no exercise labelled {label!r} in the chapters")
        if not isinstance(raw["minutes"], int) or raw["minutes"] <= 0:
            raise CatalogueError(f"lecture {i}: minutes must be a positive whole number")
        in_class_minutes = sum(by_label[label].minutes or 0 for label in raw["in_class"])
        if in_class_minutes >= raw["minutes"]:
            raise CatalogueError(f"lecture {i}: its in-class exercises take {in_class_minutes} of its "
                                 f"{raw['minutes']} minutes")
        lectures.append(Lecture(str(raw["title"]), raw["minutes"], str(raw["teach"]).strip(), objectives,
                                list(raw["in_class"]), list(raw["homework"])))
    return str(data.get("summary", "")).strip(), lectures


# --------------------------------------------------------------------------- MyST written by the directives
def _ref(label: str) -> str:
    return f"{{numref}}`{label}`"


def _minutes(exercises: list[Exercise]) -> int:
    return sum(ex.minutes or 0 for ex in exercises)


def _pitch(ex: Exercise) -> str:
    return "**challenge**" if ex.challenge else "core, **essential**" if ex.essential else "core"


def _served(ex: Exercise) -> str:
    """An exercise named in a list: its number, and "challenge" or "essential" when it is one."""
    return _ref(ex.label) + (" (challenge)" if ex.challenge else " (essential)" if ex.essential else "")


def catalogue_markdown(book: list[Chapter]) -> str:
    """The catalogue as MyST: a summary table, then each chapter's objectives and exercises."""
    lines = ["| Chapter | Exercises | Core | Challenge | Level 1 | Level 2 | Level 3 | Minutes | "
             "Core minutes | Checked answers |",
             "|:--|--:|--:|--:|--:|--:|--:|--:|--:|--:|"]

    def counts(exercises: list[Exercise], checks: int) -> list[int]:
        core = [ex for ex in exercises if not ex.challenge]
        return [len(exercises), len(core), len(exercises) - len(core),
                *(sum(ex.level == lv for ex in exercises) for lv in (1, 2, 3)),
                _minutes(exercises), _minutes(core), checks]

    for ch in book:
        row = counts(ch.exercises, len(ch.check_cells))
        lines.append(f"| {ch.number}. {ch.title} | {' | '.join(map(str, row))} |")
    every = [ex for ch in book for ex in ch.exercises]
    row = counts(every, sum(len(ch.check_cells) for ch in book))
    lines.append(f"| **All** | {' | '.join(f'**{x}**' for x in row)} |")
    for ch in book:
        lines += ["", f"**Chapter {ch.number}. {ch.title}**", ""]
        for k, objective in enumerate(ch.objectives, 1):
            serving = [_served(ex) for ex in ch.exercises if ex.objective == (ch.number, k)]
            lines.append(f"{k}. *Objective {ch.number}.{k}:* {objective} "
                         f"— {', '.join(serving) if serving else 'the quiz and the text; no exercise'}")
        lines += ["", "| Exercise | Level | Core, essential or challenge | Objective | Time | "
                  "Checked answers |",
                  "|:--|:--|:--|:--|--:|--:|"]
        for ex in ch.exercises:
            level = f"{ex.level}, {ex.kind}" if ex.level else "—"
            objective = f"{ex.objective[0]}.{ex.objective[1]}" if ex.objective else "—"
            lines.append(f"| {_ref(ex.label)} | {level} | {_pitch(ex)} | {objective} | "
                         f"{ex.minutes or '—'} min | {len(ex.checks) or '—'} |")
    return "\n".join(lines) + "\n"


def plan_markdown(summary: str, lectures: list[Lecture], book: list[Chapter]) -> str:
    """A course plan as MyST: per lecture what it teaches, its objectives, exercises and their times."""
    by_label = {ex.label: ex for ch in book for ex in ch.exercises}

    def listed(labels: list[str]) -> str:
        return ", ".join(f"{_ref(label)} ({by_label[label].minutes} min"
                         f"{', challenge' if by_label[label].challenge else ''}"
                         f"{', essential' if by_label[label].essential else ''})"
                         for label in labels) or "none"

    homework_total = sum(_minutes([by_label[label] for label in lec.homework]) for lec in lectures)
    lines = [summary, ""] if summary else []
    lines.append(f"{len(lectures)} lectures, {sum(lec.minutes for lec in lectures)} minutes in class; "
                 f"homework about {homework_total} minutes in all.")
    for i, lec in enumerate(lectures, 1):
        in_class = _minutes([by_label[label] for label in lec.in_class])
        homework = _minutes([by_label[label] for label in lec.homework])
        lines += ["", f"**Lecture {i} ({lec.minutes} min): {lec.title}**", "",
                  f"- *Teach ({lec.minutes - in_class} min):* {lec.teach}",
                  f"- *Objectives:* {', '.join(f'{n}.{k}' for n, k in lec.objectives)}",
                  f"- *In class ({in_class} min):* {listed(lec.in_class)}",
                  f"- *Homework (about {homework} min):* {listed(lec.homework)}"]
    covered = {obj for lec in lectures for obj in lec.objectives}
    left = [f"{ch.number}.{k}" for ch in book for k in range(1, len(ch.objectives) + 1)
            if (ch.number, k) not in covered]
    lines += ["", f"Objectives this plan leaves to the reader: {', '.join(left)}." if left
              else "This plan covers every learning objective of the book."]
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------- Sphinx
def _directives() -> tuple[type, type]:
    """The two directives, built when Sphinx loads the extension (the tests import this module
    without Sphinx)."""
    from sphinx.errors import SphinxError
    from sphinx.util.docutils import SphinxDirective

    class CatalogueBuildError(SphinxError):
        category = "Exercise catalogue error"

    class _Base(SphinxDirective):
        def _book(self) -> list[Chapter]:
            found = chapters(BOOK)
            for ch in found:
                self.env.note_dependency(str(ch.path))
                problems = tag_problems(ch)
                if problems:
                    raise CatalogueBuildError(f"{ch.path.name}: " + "; ".join(problems))
            return found

    class ExerciseCatalogue(_Base):
        has_content = False

        def run(self) -> list[Any]:
            return self.parse_text_to_nodes(catalogue_markdown(self._book()))

    class CoursePlan(_Base):
        has_content = True

        def run(self) -> list[Any]:
            book = self._book()
            try:
                summary, lectures = parse_plan("\n".join(self.content), book)
            except (CatalogueError, yaml.YAMLError) as err:
                raise CatalogueBuildError(f"{self.env.docname}: course plan: {err}") from err
            return self.parse_text_to_nodes(plan_markdown(summary, lectures, book))

    return ExerciseCatalogue, CoursePlan


def setup(app: Any) -> dict[str, Any]:
    catalogue, plan = _directives()
    app.add_directive("exercise-catalogue", catalogue)
    app.add_directive("course-plan", plan)
    return {"parallel_read_safe": True, "parallel_write_safe": True}


__all__ = ["Chapter", "CatalogueError", "Exercise", "Lecture", "apply_tag", "catalogue_markdown", "chapters",
           "parse_plan", "plan_markdown", "read_chapter", "tag_problems"]
