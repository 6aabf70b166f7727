"""Sentences that interpret a computed result are checked by the computation.

The HTML book re-executes every chapter when it is built, so a typed sentence such as "the ratio is
above 1 at every d_k" can end up under a table that says otherwise. The book's convention: such a
sentence is either filled in from a computed value (a ``{glue}`` role) or guarded by a *claim cell*,
a code cell placed after the computation that

* carries the tags ``claim`` (what it is) and ``remove-cell`` (the reader sees the sentence, not the
  check),
* holds only ``assert condition, "the sentence it guards"`` statements (plus, at most, assignments
  of names the asserts use), each with a message, so a failure says which sentence became false,
* prints nothing.

An assert that fails stops the build (execution errors are fatal) and nbval. A chapter whose code runs
an experiment whose outcome could change (a sweep, a Monte Carlo estimate, a fit, a timing) must have
claim cells. These tests check the convention on the stored notebooks, and the checker on small
in-memory cells, so it cannot pass vacuously.
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CHAPTERS = sorted((ROOT / "book").glob("[0-9]*.ipynb"))

CLAIM_TAG = "claim"

# attnlib functions whose results are experiments (random, fitted or timed): a chapter that calls one
# reads a trend into data that could come out otherwise, so it must check its reading.
EXPERIMENTS = {
    "input_influence",  # baselines: influence of the first input over many steps and gains
    "dot_product_samples",
    "dot_product_variance",
    "variance_with_ci",
    "saturation_stats",  # stats: Monte Carlo estimates
    "train_retrieval",
    "learning_rate_sweep",  # grad: training runs
    "fit_power_law",
    "time_attention",
    "compare_times",
    "peak_memory",  # complexity: measurements and fits
    "xavier_uniform",
    "MultiHeadAttention",  # random initialisations whose statistics a chapter reads
}


def _cells(path: Path) -> list[dict]:
    return json.loads(path.read_text(encoding="utf-8"))["cells"]


def _source(cell: dict) -> str:
    return "".join(cell["source"])


def claim_problems(cell: dict) -> list[str]:
    """What is wrong with a claim cell (empty list: nothing)."""
    problems: list[str] = []
    tags = set(cell.get("metadata", {}).get("tags", []))
    if "remove-cell" not in tags:
        problems.append("is not tagged remove-cell (the reader should see the sentence, not the check)")
    if cell.get("outputs"):
        problems.append("prints something (a claim cell only asserts)")
    try:
        body = ast.parse(_source(cell)).body
    except SyntaxError as err:
        return [*problems, f"does not parse: {err}"]
    asserts = [node for node in body if isinstance(node, ast.Assert)]
    if not asserts:
        problems.append("has no assert")
    for node in asserts:
        if node.msg is None:
            problems.append(f"line {node.lineno}: the assert has no message naming the sentence it guards")
        elif isinstance(node.msg, ast.Constant) and not str(node.msg.value).strip():
            problems.append(f"line {node.lineno}: the assert's message is empty")
        if isinstance(node.test, ast.Constant):
            problems.append(f"line {node.lineno}: asserts a constant, which cannot fail")
    for node in body:
        if not isinstance(node, (ast.Assert, ast.Assign, ast.AnnAssign)):
            problems.append(f"line {node.lineno}: only asserts (and names they use) belong in a claim cell")
    return problems


def _runs_experiments(cells: list[dict]) -> set[str]:
    code = "\n".join(_source(c) for c in cells if c["cell_type"] == "code")
    return {name for name in EXPERIMENTS if re.search(rf"\b{name}\(", code)}


def _claims(cells: list[dict]) -> list[tuple[int, dict]]:
    return [
        (i, c)
        for i, c in enumerate(cells)
        if c["cell_type"] == "code" and CLAIM_TAG in c.get("metadata", {}).get("tags", [])
    ]


def test_chapters_found() -> None:
    assert len(CHAPTERS) >= 7, f"expected the seven chapters under book/, found {CHAPTERS}"


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_every_claim_cell_asserts_with_a_message(path: Path) -> None:
    bad = [f"cell {i}: {p}" for i, cell in _claims(_cells(path)) for p in claim_problems(cell)]
    assert not bad, f"{path.name}: claim cells that do not follow the convention:\n  " + "\n  ".join(bad)


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_a_chapter_that_runs_experiments_checks_its_reading_of_them(path: Path) -> None:
    cells = _cells(path)
    experiments = _runs_experiments(cells)
    if not experiments:
        pytest.skip(f"{path.name} runs none of {sorted(EXPERIMENTS)}")
    assert _claims(cells), (
        f"{path.name} runs {sorted(experiments)} but has no cell tagged {CLAIM_TAG!r}: every sentence that "
        "reads a trend into those results must be glued or guarded by an assert in a claim cell"
    )


def test_claim_tag_is_not_hidden_from_nbval() -> None:
    """A claim cell must run under nbval: it may not also be skipped."""
    for path in CHAPTERS:
        for i, cell in _claims(_cells(path)):
            tags = set(cell["metadata"]["tags"])
            skipped = tags & {"nbval-skip", "skip-execution", "raises-exception"}
            assert not skipped, f"{path.name} cell {i}: a claim cell tagged {skipped} is never checked"


# The checker itself.


def _cell(source: str, tags: tuple[str, ...] = ("claim", "remove-cell"), outputs: list | None = None) -> dict:
    return {"cell_type": "code", "source": source, "metadata": {"tags": list(tags)}, "outputs": outputs or []}


def test_checker_accepts_a_well_formed_claim() -> None:
    assert claim_problems(_cell('best = min(losses)\nassert best < 0.5, "the best loss is below 0.5"')) == []


@pytest.mark.parametrize(
    ("source", "tags", "outputs", "expected"),
    [
        ("assert x > 0", ("claim", "remove-cell"), None, "no message"),
        ('assert True, "always"', ("claim", "remove-cell"), None, "constant"),
        ("x = 1", ("claim", "remove-cell"), None, "no assert"),
        ('assert x > 0, "x is positive"', ("claim",), None, "remove-cell"),
        ('print(x)\nassert x > 0, "x is positive"', ("claim", "remove-cell"), None, "only asserts"),
        ('assert x > 0, "x"', ("claim", "remove-cell"), [{"output_type": "stream"}], "prints"),
        ('assert x > 0, ""', ("claim", "remove-cell"), None, "empty"),
    ],
    ids=["no_message", "constant", "no_assert", "visible", "prints_code", "has_output", "empty_message"],
)
def test_checker_names_what_is_wrong(
    source: str, tags: tuple[str, ...], outputs: list | None, expected: str
) -> None:
    problems = claim_problems(_cell(source, tags, outputs))
    assert any(expected in p for p in problems), problems


def test_experiment_detection() -> None:
    cells = [_cell("sweep = attnlib.learning_rate_sweep(d_ks, lrs)", tags=())]
    assert _runs_experiments(cells) == {"learning_rate_sweep"}
    assert _runs_experiments([_cell("x = my_learning_rate_sweep_table", tags=())]) == set()
