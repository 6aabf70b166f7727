"""Every decimal in the book's prose is computed, not typed.

A number with two or more decimals (``0.27``, ``-1.386``, ``12.50``) in a markdown cell of a chapter
notebook must either be inserted by a glue role (``{glue}``, ``{glue:text}``, ``{glue:md}``,
``{glue:math}``), whose value the build computes, or appear verbatim in the notebook's stored
printed outputs (stream text and the ``text/plain`` of execute results and display data, which
nbval re-checks against a fresh run) as a whole printed number: ``0.52`` is found in ``[0.52 0.48]``
and in ``0.52%``, not in ``0.5299``, ``0.525`` or ``10.52``. A typed number that the code does not
print exactly is the kind of number that goes stale, or is quietly rounded, when the library changes.

Before scanning, the text that is not prose is blanked out: glue, citation and cross-reference
roles, MyST substitutions, URLs and link targets, labels, HTML comments. Everything else counts,
including ``$...$`` math and inline code. Version strings such as ``2.13.0`` are not decimals.
Markdown pages (``book/**/*.md``) have no outputs, so they must not type such numbers at all.

The scanner itself is tested on small in-memory notebooks, so this file cannot pass vacuously.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

REPO_ROOT = Path(__file__).resolve().parents[1]
BOOK_DIR = REPO_ROOT / "book"
# notebooks: the edition, written from the chapters checked here (tests/test_notebook_edition.py)
SKIPPED_DIRS = {"_build", ".ipynb_checkpoints", "press", "notebooks", "_static"}

# Two or more decimals, not part of a word or of a longer dotted number (a version, an IP address).
NUMBER = re.compile(r"(?<![\w.])-?\d+\.\d{2,}(?!\d)(?!\.\d)")

# Text that is not prose: blanked out (same length, so positions still match the source).
NOT_PROSE = [
    re.compile(r"\{glue(?::\w+)?\}`[^`]*`"),  # {glue}`x`, {glue:text}`x:.4f`, {glue:md}, {glue:math}
    re.compile(r"\{cite(?::\w+)?\}`[^`]*`"),  # {cite}`key`, {cite:p}`key`, {cite:t}`key`
    re.compile(r"\{(?:ref|numref|eq|doc|download|prf:ref|term)\}`[^`]*`"),  # cross-references
    re.compile(r"^```\{glue(?::\w+)?\}.*$", re.MULTILINE),  # glue directives: the name argument
    re.compile(r"\{\{[^{}]*\}\}"),  # MyST substitutions
    re.compile(r"<!--.*?-->", re.DOTALL),  # HTML comments are not rendered
    re.compile(r"\]\([^)]*\)"),  # markdown link targets
    re.compile(r"<?(?:https?|ftp)://[^\s)>`]+>?"),  # bare URLs
    re.compile(r"^\([^)\s]+\)=\s*$", re.MULTILINE),  # (label)= targets
    re.compile(r"^:label:.*$", re.MULTILINE),  # directive labels
    re.compile(r"\\(?:label|ref|eqref)\{[^}]*\}"),  # labels inside math
]


@dataclass(frozen=True)
class TypedNumber:
    cell: int
    number: str
    snippet: str

    def __str__(self) -> str:
        return f"cell {self.cell}: {self.number} in {self.snippet!r}"


def blank_non_prose(text: str) -> str:
    for pattern in NOT_PROSE:
        text = pattern.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)
    return text


def printed_outputs(nb: nbformat.NotebookNode) -> str:
    """All text the notebook's code cells printed: streams and text/plain results, joined."""
    parts: list[str] = []
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        for output in cell.get("outputs", []):
            if output.get("output_type") == "stream":
                parts.append(_text(output.get("text", "")))
            elif output.get("output_type") in ("execute_result", "display_data"):
                parts.append(_text(output.get("data", {}).get("text/plain", "")))
    return "\n".join(parts)


def _text(value: str | list[str]) -> str:
    return value if isinstance(value, str) else "".join(value)


def _is_printed(number: str, printed: str) -> bool:
    """``number`` occurs in ``printed`` as a whole number, not inside another (``0.12`` in ``10.123``)."""
    return re.search(r"(?<![\d.])" + re.escape(number) + r"(?!\d)", printed) is not None


def typed_numbers(nb: nbformat.NotebookNode) -> list[TypedNumber]:
    """Decimals in markdown cells that are neither glued nor found in the printed outputs."""
    printed = printed_outputs(nb)
    found: list[TypedNumber] = []
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "markdown":
            continue
        source = _text(cell.source)
        for match in NUMBER.finditer(blank_non_prose(source)):
            if _is_printed(match.group(0), printed):
                continue
            start, end = max(0, match.start() - 40), match.end() + 40
            snippet = " ".join(source[start:end].split())
            found.append(TypedNumber(index, match.group(0), snippet))
    return found


def _book_files(pattern: str) -> list[Path]:
    return sorted(
        path
        for path in BOOK_DIR.rglob(pattern)
        if not any(part in SKIPPED_DIRS or part.startswith(".") for part in path.relative_to(BOOK_DIR).parts)
    )


NOTEBOOKS = _book_files("*.ipynb")
PAGES = _book_files("*.md")


def _ids(paths: list[Path]) -> list[str]:
    return [path.relative_to(REPO_ROOT).as_posix() for path in paths]


def test_notebooks_are_found() -> None:
    assert NOTEBOOKS, f"no notebooks found under {BOOK_DIR}: the prose-number tests would check nothing"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=_ids(NOTEBOOKS))
def test_notebook_prose_numbers_are_glued_or_printed(path: Path) -> None:
    nb = nbformat.read(path, as_version=4)
    offending = typed_numbers(nb)
    assert not offending, (
        f"{path.relative_to(REPO_ROOT)}: decimals typed in the prose that no output prints; "
        "glue them ({glue:text}`name:.4f`) or print them:\n  " + "\n  ".join(map(str, offending))
    )


@pytest.mark.parametrize("path", PAGES, ids=_ids(PAGES))
def test_markdown_page_has_no_typed_decimals(path: Path) -> None:
    page = new_notebook(cells=[new_markdown_cell(path.read_text(encoding="utf-8"))])
    offending = typed_numbers(page)
    assert not offending, (
        f"{path.relative_to(REPO_ROOT)} has no computed outputs, so it cannot quote these decimals; "
        "move them into a notebook and glue them:\n  " + "\n  ".join(map(str, offending))
    )


# The scanner on small in-memory notebooks.


def _nb(markdown: str, *outputs: nbformat.NotebookNode) -> nbformat.NotebookNode:
    code = new_code_cell("print(w)", outputs=list(outputs))
    return new_notebook(cells=[new_markdown_cell("# Title"), code, new_markdown_cell(markdown)])


def _numbers(nb: nbformat.NotebookNode) -> list[str]:
    return [typed.number for typed in typed_numbers(nb)]


def test_scanner_flags_a_typed_number_with_its_cell() -> None:
    (typed,) = typed_numbers(_nb("The first weight is 0.2689, as printed above."))
    assert (typed.cell, typed.number) == (2, "0.2689")
    assert "first weight is 0.2689" in typed.snippet


def test_scanner_flags_numbers_in_math_and_negative_numbers() -> None:
    nb = _nb(r"With $\alpha = 0.125$ the score is -1.386 and `0.50` in code.")
    assert _numbers(nb) == ["0.125", "-1.386", "0.50"]


def test_scanner_accepts_glued_numbers() -> None:
    text = (
        "The weight is {glue:text}`w00:.4f`, the table {glue:md}`table_0.25` and "
        "{glue:math}`alpha_0.125`, {glue}`raw_1.50`."
    )
    assert _numbers(_nb(text)) == []
    assert _numbers(_nb(text + " Typed: 0.25.")) == ["0.25"]


def test_scanner_accepts_printed_numbers() -> None:
    text = "The first row is 0.2689 and 0.7311; the output is -1.3863."
    stream = new_output("stream", name="stdout", text="[[0.2689 0.7311]]\n")
    result = new_output("execute_result", data={"text/plain": "np.float64(-1.3863)"}, execution_count=1)
    assert _numbers(_nb(text)) == ["0.2689", "0.7311", "-1.3863"]
    assert _numbers(_nb(text, stream)) == ["-1.3863"]
    assert _numbers(_nb(text, stream, result)) == []
    display = new_output("display_data", data={"text/plain": "-1.3863", "text/html": "<b>0.2689</b>"})
    assert _numbers(_nb(text, display)) == ["0.2689", "0.7311"]  # HTML does not count


def test_scanner_needs_the_whole_printed_number() -> None:
    printed = new_output("stream", name="stdout", text="[10.2689 0.73115]\n")
    assert _numbers(_nb("Quoted: 0.2689 and 0.7311.", printed)) == ["0.2689", "0.7311"]


def test_scanner_refuses_a_quote_that_drops_printed_digits() -> None:
    printed = new_output("stream", name="stdout", text="weight 0.5299, ratio 1.25x, share 0.37%\n")
    assert _numbers(_nb("The weight is 0.52, the share 0.37 %, the ratio 1.25.", printed)) == ["0.52"]


def test_scanner_ignores_what_is_not_a_decimal_in_the_prose() -> None:
    text = (
        "See https://arxiv.org/abs/1706.03762 and [the paper](https://doi.org/10.48550/x) "
        "{cite}`vaswani2017.12`; install torch==2.13.0; {ref}`sec-3.14`; {{ value_2.50 }}; "
        "<!-- 0.99 -->; 1.5, 10.0 and 3 have fewer than two decimals; v1.25 is a word."
    )
    assert _numbers(_nb(text)) == []


def test_scanner_reads_only_markdown_cells() -> None:
    nb = new_notebook(cells=[new_code_cell("x = 0.125  # typed in code, not prose")])
    assert _numbers(nb) == []
