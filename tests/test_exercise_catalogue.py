"""The exercises of every chapter as an instructor plans with them and a learner works through them.

Each chapter numbers its learning objectives and has 3 to 8 exercises covering the three levels
(1: compute by hand, 2: change or write code, 3: derive or explain). The first line of every
exercise says its level, the objective it serves and an estimated time, and ends with "challenge"
when the exercise goes beyond the chapter's core, or with "essential" for the one core exercise of each
chapter that a learner who does only one should do; ``book/instructors.md`` and the course plans are
built on those lines. Every other exercise is core, within reach of the book's learner (a
second-year student who has never met attention) after the chapter's core: each chapter has at least
three, a level 1 and a level 2 among them; its challenge exercises come after them; at most 40% of
the book's exercises are challenge; and an exercise that links a going-deeper page is a challenge
that says it builds on that page. Every exercise with a computable answer is followed,
before its solution, by one cell per answer that the learner fills in and runs
(``answer = ...`` then ``check(label, answer)``, stored output "Not answered yet"), and its solution
checks its own answer with the same label (stored output "Correct"). Across the book the checks
exercise every classic misconception of the issue that introduced them.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import nbformat
import pytest

from attnlib import check
from attnlib.exercises import EXERCISES, exercise
from press import catalogue as cat
from press.notebook_edition import is_deeper_page

ROOT = Path(__file__).resolve().parents[1]

CHAPTERS = sorted((ROOT / "book").glob("[0-9][0-9]_*.ipynb"))
CHECK_CALL = re.compile(r'\bcheck\(\s*"([\w:-]+)"')
MIN_EXERCISES, MAX_EXERCISES = 3, 4  # few, each asking something no other exercise or the text asks
MIN_MINUTES, MAX_MINUTES = 5, 45
MIN_CORE = 3  # core exercises per chapter, a level 1 and a level 2 among them
MAX_CHALLENGE_SHARE = 0.4  # of the book's exercises
DEEPER = sorted(p for p in (ROOT / "book").glob("[0-9][0-9]*_*.ipynb") if is_deeper_page(p))
ROLE = re.compile(r"\{(ref|numref|prf:ref|doc)\}`([^`]*)`")

# The wrong answers the issue lists, each of which some check of the book must recognise by name.
CLASSIC = {
    "scale-d_k": "scaled by d_k instead of √d_k",
    "no-scale": "no scaling",
    "scale-sqrt-n": "√n instead of √d_k",
    "wrong-axis": "softmax over the wrong axis",
    "k-not-transposed": "K not transposed",
    "no-max-subtraction": "no max subtraction",
    "not-normalised": "weights that do not sum to 1",
    "weights-not-output": "the weights instead of weights · V",
    "mask-flipped": "causal mask flipped",
    "mask-one-ahead": "causal mask shifted by one (one token ahead)",
    "mask-diagonal-excluded": "causal mask shifted by one (diagonal excluded)",
}


def _text(cell: nbformat.NotebookNode) -> str:
    return "".join(o.get("text", "") if o.output_type == "stream" else o.get("data", {}).get("text/plain", "")
                   for o in cell.get("outputs", []))


def _is_solution_cell(cell: nbformat.NotebookNode) -> bool:
    return bool(cell.metadata.get("nbgrader", {}).get("solution"))


def _chapter(path: Path) -> tuple[cat.Chapter, nbformat.NotebookNode]:
    return cat.read_chapter(path), nbformat.read(path, as_version=4)


def test_found_the_chapters():
    assert [p.name[:2] for p in CHAPTERS] == ["01", "02", "03", "04", "05", "06", "07"]


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_objectives_are_a_numbered_list(path):
    nb = nbformat.read(path, as_version=4)
    section = next(m.group(1) for c in nb.cells if c.cell_type == "markdown"
                   and (m := cat.OBJECTIVES.search(c.source)))
    numbers = [int(k) for k in re.findall(r"^(\d+)\. ", section, re.M)]
    assert numbers == list(range(1, len(numbers) + 1)) and len(numbers) >= 2, numbers
    assert not re.findall(r"^[-*] ", section, re.M), "the learning objectives are numbered, not bullets"
    assert len(cat.read_chapter(path).objectives) == len(numbers)


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_exercise_counts_and_levels(path):
    ch = cat.read_chapter(path)
    assert MIN_EXERCISES <= len(ch.exercises) <= MAX_EXERCISES, \
        f"{path.name}: {len(ch.exercises)} exercises, want {MIN_EXERCISES} to {MAX_EXERCISES}"
    levels = {ex.level for ex in ch.exercises}
    assert levels == {1, 2, 3}, f"{path.name}: levels present {levels}, want all of 1, 2, 3"


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_every_exercise_states_level_objective_and_time(path):
    ch = cat.read_chapter(path)
    assert not cat.tag_problems(ch), cat.tag_problems(ch)
    for ex in ch.exercises:
        assert MIN_MINUTES <= ex.minutes <= MAX_MINUTES, f"{ex.label}: {ex.minutes} min"
        assert ex.solution is not None, f"{ex.label}: no solution"


def test_tag_problems_are_found():
    """The parser the test relies on rejects what it should: a missing tag, a wrong kind, an objective
    past the end of the chapter's list."""
    ch = cat.Chapter(CHAPTERS[1], 2, "Queries, keys and values", ["one", "two", "three"], [], {})
    cases = [("Compute the shapes.", "is not"),
             ("*Level 1, code · objective 1 · about 5 min*", "is 'by hand'"),
             ("*Level 1, by hand · objective 4 · about 5 min*", "not one of"),
             ("*Level 2, code · objective 3 · about 15 min · hard*", "is not"),
             ("*Level 2, code · objective 3 · about 15 min · Challenge*", "is not"),
             ("*Level 2, code · objective 3 · about 15 min · Essential*", "is not"),
             ("*Level 2, code · objective 3 · about 15 min · essential · challenge*", "is not"),
             ("*Level 2, code · objective 3 · about 15 min · challenge · essential*", "is not"),
             ("*Level 2, code · objective 3 · about 15 min*", None),
             ("*Level 1, by hand · objective 2 · about 15 min · essential*", None),
             ("*Level 3, derive or explain · objective 3 · about 20 min · challenge*", None)]
    for first, problem in cases:
        broken = cat.apply_tag(cat.Exercise("qkv-ex-x", ch.number, 0, first))
        problems = cat.tag_problems(cat.Chapter(ch.path, ch.number, ch.title, ch.objectives, [broken], {}))
        assert (problems == []) if problem is None else (len(problems) == 1 and problem in problems[0]), \
            (first, problems)
        assert not (broken.challenge and broken.essential)
        if problem is None:
            assert broken.challenge == first.endswith("· challenge*")
            assert broken.essential == first.endswith("· essential*")


# --------------------------------------------------------------------------- core and challenge
def pitch_problems(ch: cat.Chapter) -> list[str]:
    """What breaks the rules of core and challenge in one chapter (empty when nothing does)."""
    core = [ex for ex in ch.exercises if not ex.challenge]
    problems = []
    if len(core) < MIN_CORE:
        problems.append(f"chapter {ch.number}: {len(core)} core exercises, want at least {MIN_CORE}")
    for level in (1, 2):
        if not any(ex.level == level for ex in core):
            problems.append(f"chapter {ch.number}: no core exercise of level {level}")
    first_challenge = next((k for k, ex in enumerate(ch.exercises) if ex.challenge), len(ch.exercises))
    late = [ex.label for ex in ch.exercises[first_challenge:] if not ex.challenge]
    if late:
        problems.append(f"chapter {ch.number}: core {late} after the challenge "
                        f"{ch.exercises[first_challenge].label}: challenge exercises come last")
    return problems


ESSENTIAL_MINUTES = (15, 25)  # the essential exercise is a sitting's work, not a glance or a project


def essential_problems(ch: cat.Chapter) -> list[str]:
    """What breaks the rule of the essential exercise in one chapter: exactly one, core (the tag line
    cannot say both), of 15 to 25 minutes."""
    essential = [ex for ex in ch.exercises if ex.essential]
    if len(essential) != 1:
        return [f"chapter {ch.number}: {len(essential)} essential exercises "
                f"({', '.join(ex.label for ex in essential) or 'none'}), want exactly one: end the tag line "
                "of the one a learner who does only one should do with '· essential'"]
    ex = essential[0]
    low, high = ESSENTIAL_MINUTES
    if not low <= (ex.minutes or 0) <= high:
        return [f"chapter {ch.number}: the essential {ex.label} takes {ex.minutes} min, want {low} to {high}"]
    return []


def challenge_share(book: list[cat.Chapter]) -> float:
    every = [ex for ch in book for ex in ch.exercises]
    return sum(ex.challenge for ex in every) / len(every)


def _deeper_targets() -> tuple[set[str], set[str]]:
    """The going-deeper pages' document names, and every label defined on them."""
    docs, labels = set(), set()
    for path in DEEPER:
        docs.add(path.stem)
        for cell in nbformat.read(path, as_version=4).cells:
            if cell.cell_type == "markdown":
                labels |= set(re.findall(r"^\(([\w:-]+)\)=\s*$", cell.source, re.M))
                labels |= set(re.findall(r"^:label:\s*([\w:-]+)", cell.source, re.M))
    return docs, labels


def exercise_texts(ex: cat.Exercise, nb: nbformat.NotebookNode) -> tuple[str, str]:
    """The exercise's own block, and the text of its solution (from solution-start to solution-end)."""
    block = next(m.group(0) for m in cat.EXERCISE.finditer(nb.cells[ex.cell].source)
                 if m.group(1) == ex.label)
    start, end = ex.solution
    parts = [nb.cells[j].source for j in range(start, end + 1)]
    parts[0] = parts[0][cat.SOLUTION_START.search(parts[0]).start():]
    parts[-1] = parts[-1][:cat.SOLUTION_END.search(parts[-1]).start()]
    return block, "\n".join(parts)


def deeper_links(text: str, docs: set[str], labels: set[str]) -> list[str]:
    """The links of a text to a going-deeper page: {doc} to the page, or a reference to a label on it."""
    found = []
    for role, body in ROLE.findall(text):
        target = m.group(1) if (m := re.search(r"<([^>]+)>\s*$", body)) else body.strip()
        if (role == "doc" and target.split("/")[-1] in docs) or (role != "doc" and target in labels):
            found.append(f"{{{role}}}`{body}`")
    return found


def going_deeper_problems(ch: cat.Chapter, nb: nbformat.NotebookNode) -> list[str]:
    """Exercises that link a going-deeper page without being challenges that say they build on it."""
    docs, labels = _deeper_targets()
    problems = []
    for ex in ch.exercises:
        block, solution = exercise_texts(ex, nb)
        links = deeper_links(block + "\n" + solution, docs, labels)
        if links and not ex.challenge:
            problems.append(f"{ex.label} links a going-deeper page ({', '.join(links)}) but is core: "
                            "mark it challenge, or give what it needs from that page in the exercise")
        elif links and "builds on" not in block:
            problems.append(f"{ex.label} links a going-deeper page ({', '.join(links)}): its text should say "
                            "that it builds on that page")
    return problems


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_each_chapter_has_core_exercises_first_and_challenges_last(path):
    ch = cat.read_chapter(path)
    assert not pitch_problems(ch), pitch_problems(ch)


def test_the_pitch_rules_catch_a_chapter_that_breaks_them():
    ch = cat.read_chapter(CHAPTERS[0])
    levels = [1, 2, 3, 1, 3]  # made-up levels: the last exercise a challenge, the others core
    first = ch.exercises[0]
    exercises = [cat.Exercise(**{**vars(first), "level": lv, "challenge": k == len(levels) - 1})
                 for k, lv in enumerate(levels)]

    def with_(changed: list[cat.Exercise]) -> list[str]:
        return pitch_problems(cat.Chapter(ch.path, ch.number, ch.title, ch.objectives, changed, {}))

    assert with_(exercises) == []
    everything_hard = [cat.Exercise(**{**vars(ex), "challenge": True}) for ex in exercises]
    assert any("core exercises, want" in p for p in with_(everything_hard))
    no_core_level_2 = [cat.Exercise(**{**vars(ex), "challenge": ex.challenge or ex.level == 2})
                       for ex in exercises]
    assert any("no core exercise of level 2" in p for p in with_(no_core_level_2))
    first_last = exercises[1:] + exercises[:1]  # a core exercise moved after the challenges
    assert any("challenge exercises come last" in p for p in with_(first_last))


def test_at_most_two_fifths_of_the_book_is_challenge():
    book = cat.chapters()
    assert challenge_share(book) <= MAX_CHALLENGE_SHARE, \
        f"{challenge_share(book):.0%} of the exercises are challenge"
    assert challenge_share(book) > 0, "no exercise is marked challenge"
    harder = [cat.Chapter(ch.path, ch.number, ch.title, ch.objectives,
                          [cat.Exercise(**{**vars(ex), "challenge": ex.level != 1 or ex.challenge})
                           for ex in ch.exercises], ch.check_cells) for ch in book]
    assert challenge_share(harder) > MAX_CHALLENGE_SHARE  # a book with every level 2 and 3 marked


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_each_core_chapter_has_exactly_one_essential_exercise(path):
    problems = essential_problems(cat.read_chapter(path))
    assert not problems, "\n".join(problems)


def test_the_essential_rule_catches_none_two_and_a_long_one():
    ch = cat.read_chapter(CHAPTERS[0])

    def with_(essential: dict[int, int]) -> list[str]:  # exercise index -> its minutes, marked essential
        exercises = [cat.Exercise(**{**vars(ex), "challenge": False, "essential": k in essential,
                                     "minutes": essential.get(k, ex.minutes)})
                     for k, ex in enumerate(ch.exercises)]
        return essential_problems(cat.Chapter(ch.path, ch.number, ch.title, ch.objectives, exercises, {}))

    assert with_({0: 15}) == [] and with_({1: 25}) == []
    assert "0 essential exercises (none)" in with_({})[0]
    assert "2 essential exercises" in with_({0: 15, 1: 20})[0]
    assert "takes 40 min, want 15 to 25" in with_({0: 40})[0]
    assert "takes 5 min" in with_({0: 5})[0]


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_an_exercise_that_links_a_going_deeper_page_is_a_challenge(path):
    ch, nb = _chapter(path)
    assert not going_deeper_problems(ch, nb), going_deeper_problems(ch, nb)


def test_links_to_a_going_deeper_page_are_found():
    docs, labels = _deeper_targets()
    assert {"04a_scaling_deeper", "06a_implementation_deeper"} <= docs and "scaling-mup" in labels
    assert "prop-unscaled-reparam" in labels and "scaling-temperature" not in labels
    found = deeper_links("see {doc}`04a_scaling_deeper`, {ref}`the proof <scaling-mup>`, "
                         "{prf:ref}`prop-unscaled-reparam`, {numref}`impl-ex-pow2` and "
                         "{ref}`scaling-temperature`", docs, labels)
    assert found == ["{doc}`04a_scaling_deeper`", "{ref}`the proof <scaling-mup>`",
                     "{prf:ref}`prop-unscaled-reparam`"], found
    # a core exercise of chapter 4 given such a link is reported, and so is a challenge that does not say
    # it builds on the page
    ch, nb = _chapter(ROOT / "book" / "04_scaling.ipynb")
    nb = nbformat.from_dict(nb)
    core = next(ex for ex in ch.exercises if not ex.challenge)
    nb.cells[core.cell].source = nb.cells[core.cell].source.replace(
        f":label: {core.label}\n", f":label: {core.label}\n\nRead {{ref}}`scaling-mup` first.\n", 1)
    assert any(p.startswith(f"{core.label} links a going-deeper page") for p in going_deeper_problems(ch, nb))
    hard = next(ex for ex in ch.exercises if ex.challenge)
    nb.cells[hard.cell].source = nb.cells[hard.cell].source.replace("builds on", "uses")
    assert any("should say" in p and p.startswith(hard.label) for p in going_deeper_problems(ch, nb))


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_computable_exercises_end_with_a_check_cell(path):
    ch, nb = _chapter(path)
    exercises = {ex.label: ex for ex in ch.exercises}
    # every registered answer of this chapter's exercises has its cell
    own = [label for label in EXERCISES if label.split(":")[0] in exercises]
    assert not [label for label in own if label not in ch.check_cells], \
        f"{path.name}: no check cell for {[label for label in own if label not in ch.check_cells]}"
    for label, i in ch.check_cells.items():
        cell = nb.cells[i]
        ex = exercise(label)  # a label the library does not know raises here
        form = cat.CHECK_CELL.match(cell.source.strip())["form"]
        assert form == ex.answer_form, f"{label}: comment {form!r}, answer form {ex.answer_form!r}"
        assert not _is_solution_cell(cell) and "remove-cell" not in cell.metadata.get("tags", []), \
            f"{label}: the check cell must reach the student edition"
        assert _text(cell).strip() == str(check(label, ...)).strip(), f"{label}: stored {_text(cell)!r}"
        # it sits after its exercise and before that exercise's solution
        owner = max((e for e in ch.exercises if e.cell < i), key=lambda e: e.cell)
        assert label in owner.checks and i < owner.solution[0], \
            f"{label}: check cell {i} is not between {owner.label} and its solution"
        if label.split(":")[0] in exercises:
            assert owner.label == label.split(":")[0], f"{label}: checked under {owner.label}"
    # no other check call outside solutions (a learner's cell that is not of the tested form)
    for i, cell in enumerate(nb.cells):
        if cell.cell_type == "code" and CHECK_CALL.search(cell.source) and i not in ch.check_cells.values():
            inside = [e for e in ch.exercises if e.solution and e.solution[0] < i < e.solution[1]]
            assert inside, f"{path.name} cell {i}: a check call outside any solution:\n{cell.source}"


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_solutions_check_their_own_answers(path):
    ch, nb = _chapter(path)
    for ex in ch.exercises:
        for label in ex.checks:
            start, end = ex.solution
            calls = [c for c in nb.cells[start:end]
                     if c.cell_type == "code" and label in CHECK_CALL.findall(c.source)]
            assert calls, f"{label}: the solution of {ex.label} does not check its answer"
            assert all(_is_solution_cell(c) for c in calls), f"{label}: the solution's check is not marked"
            said = _text(calls[-1])
            assert "✓ Correct" in said, f"{label}: the solution's check says {said!r}"


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_import_cell_imports_check(path):
    nb = nbformat.read(path, as_version=4)
    first = next(c for c in nb.cells if c.cell_type == "code" and "import" in c.source
                 and "install" not in c.metadata.get("tags", []))
    names = {alias.name for node in ast.walk(ast.parse(first.source))
             if isinstance(node, ast.ImportFrom) and node.module in ("attnlib", "attnlib.feedback")
             for alias in node.names}
    assert "check" in names, f"{path.name}: the import cell does not import check from attnlib"


def test_every_classic_misconception_is_exercised():
    checked = {label for path in CHAPTERS for label in cat.read_chapter(path).check_cells}
    detected = {key for label in checked for key in exercise(label).detects()}
    missing = {key: what for key, what in CLASSIC.items() if key not in detected}
    assert not missing, f"no check in the book recognises: {missing}"


# --------------------------------------------------------------------------- the instructors' page
INSTRUCTORS = ROOT / "book" / "instructors.md"


def _plans() -> list[str]:
    text = INSTRUCTORS.read_text(encoding="utf-8")
    return re.findall(r"^```\{course-plan\}\n(.*?)^```$", text, re.M | re.S)


def test_the_instructors_page_has_a_two_and_a_four_lecture_plan_that_fit_the_chapters():
    book = cat.chapters()
    plans = [cat.parse_plan(text, book)[1] for text in _plans()]
    assert [len(p) for p in plans] == [2, 4]
    labels = {ex.label for ch in book for ex in ch.exercises}
    for lectures in plans:
        for lec in lectures:
            assert lec.objectives and lec.in_class and lec.homework
            assert set(lec.in_class + lec.homework) <= labels
    # the four-lecture plan covers every objective of the book
    every = {(ch.number, k) for ch in book for k in range(1, len(ch.objectives) + 1)}
    assert {obj for lec in plans[1] for obj in lec.objectives} == every
    assert "```{exercise-catalogue}" in INSTRUCTORS.read_text(encoding="utf-8")


def test_the_course_plans_set_core_exercises():
    """Core exercises are the default work of a course; a challenge is for strong students or projects."""
    book = cat.chapters()
    challenges = {ex.label for ch in book for ex in ch.exercises if ex.challenge}
    for text in _plans():
        for lec in cat.parse_plan(text, book)[1]:
            set_there = challenges & set(lec.in_class + lec.homework)
            assert not set_there, f"{lec.title}: sets the challenge exercises {sorted(set_there)}"


@pytest.mark.parametrize(("change", "match"), [
    (("qkv-ex-shapes]", "qkv-ex-nope]"), "no exercise labelled 'qkv-ex-nope'"),
    (("objectives: 1.1,", "objectives: 1.9,"), "no learning objective '1.9'"),
    (("minutes: 90", "minutes: 10"), "take 15 of its 10 minutes"),
    (("minutes: 90", "minutes: ninety"), "positive whole number"),
    (("    teach:", "    teaches:"), "needs exactly the keys"),
])
def test_a_wrong_course_plan_stops_the_build_with_a_message(change, match):
    text = _plans()[0].replace(*change, 1)
    with pytest.raises(cat.CatalogueError, match=re.escape(match)):
        cat.parse_plan(text, cat.chapters())


def test_the_catalogue_counts_what_the_chapters_hold():
    book = cat.chapters()
    md = cat.catalogue_markdown(book)
    rows = [line.split("|")[1:-1] for line in md.splitlines() if re.match(r"^\| \d\. ", line)]
    assert len(rows) == len(book)
    for ch, row in zip(book, rows, strict=True):
        n, core, challenge, l1, l2, l3, minutes, core_minutes, checks = (int(x) for x in row[1:])
        assert n == len(ch.exercises) == l1 + l2 + l3 == core + challenge
        assert challenge == sum(ex.challenge for ex in ch.exercises)
        assert minutes == sum(ex.minutes for ex in ch.exercises)
        assert core_minutes == sum(ex.minutes for ex in ch.exercises if not ex.challenge)
        assert checks == len(ch.check_cells)
    every = [ex for ch in book for ex in ch.exercises]
    total = next(line for line in md.splitlines() if line.startswith("| **All** |"))
    assert [int(x.strip(" *")) for x in total.split("|")[2:-1]][1:3] == \
        [sum(not ex.challenge for ex in every), sum(ex.challenge for ex in every)]
    for ch in book:
        for ex in ch.exercises:  # a row of its chapter's table, with its level, pitch, objective and time
            pitch = "**challenge**" if ex.challenge else "core, **essential**" if ex.essential else "core"
            row = (f"| {{numref}}`{ex.label}` | {ex.level}, {ex.kind} | {pitch} | "
                   f"{ex.objective[0]}.{ex.objective[1]} | ")
            assert row + f"{ex.minutes} min |" in md, ex.label


def test_the_catalogue_marks_the_essential_exercise():
    """The catalogue's row and objective list of an essential exercise say so, and a plan's list too."""
    ch = cat.read_chapter(CHAPTERS[0])
    marked = [cat.Exercise(**{**vars(ex), "challenge": False, "essential": k == 0})
              for k, ex in enumerate(ch.exercises)]
    one = cat.Chapter(ch.path, ch.number, ch.title, ch.objectives, marked, ch.check_cells)
    md = cat.catalogue_markdown([one])
    first, second = marked[0], marked[1]
    assert f"| {{numref}}`{first.label}` | {first.level}, {first.kind} | core, **essential** |" in md
    assert f"| {{numref}}`{second.label}` | {second.level}, {second.kind} | core |" in md
    assert f"{{numref}}`{first.label}` (essential)" in md
    lecture = cat.Lecture("t", 90, "x", [(ch.number, 1)], [first.label], [second.label])
    plan = cat.plan_markdown("", [lecture], [one])
    assert f"{{numref}}`{first.label}` ({first.minutes} min, essential)" in plan
    assert f"{{numref}}`{second.label}` ({second.minutes} min)" in plan
