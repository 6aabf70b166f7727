"""The notebook edition against the built HTML: the same numbering and the same citation labels.

tests/test_notebook_edition.py checks the edition on its own; here each chapter's edition is set beside
the page the build made from the same chapter. Exercises, theorems and propositions must carry the
numbers the page shows, in the same order, and every author–year label the edition prints must be one
the page links to a bibliography entry. (No browser is needed: the built files are read.)
"""

from __future__ import annotations

import html
import re
from pathlib import Path

import nbformat
import pytest

from press.notebook_edition import is_deeper_page

REPO_ROOT = Path(__file__).resolve().parents[2]
CHAPTERS = sorted(p.stem for p in (REPO_ROOT / "book").glob("[0-9]*.ipynb"))
NUMBERED = re.compile(r"\b(Exercise|Theorem|Proposition|Lemma|Corollary|Definition) (\d+\.\d+)")


def _html_text(path: Path) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", path.read_text(encoding="utf-8")))


def _titles_in_html(path: Path) -> list[str]:
    raw = path.read_text(encoding="utf-8")
    titles = re.findall(r'<p class="admonition-title">(.*?)</p>', raw, re.S)
    plain = [html.unescape(re.sub(r"<[^>]+>", "", t)) for t in titles]
    return [" ".join(m) for t in plain if not t.startswith("Solution") for m in NUMBERED.findall(t)[:1]]


def _titles_in_edition(nb: nbformat.NotebookNode) -> list[str]:
    titles = []
    for cell in nb.cells:
        if cell.cell_type != "markdown":
            continue
        for line in cell.source.splitlines():
            m = re.match(r"^### (Exercise \d+\.\d+)|^\*\*((?:Theorem|Proposition|Lemma) \d+\.\d+)\*\*", line)
            if m:
                titles.append(m.group(1) or m.group(2))
    return titles


# Every chapter numbers its exercises; a going-deeper page (03a_...) has none, and numbers only its
# propositions, if it has any.
NUMBERING = [c for c in CHAPTERS if not is_deeper_page(c)
             or "{prf:" in (REPO_ROOT / "book" / f"{c}.ipynb").read_text(encoding="utf-8")]


@pytest.mark.parametrize("chapter", NUMBERING)
def test_numbering_matches_the_page(html_dir: Path, chapter: str) -> None:
    page = _titles_in_html(html_dir / "book" / f"{chapter}.html")
    nb = nbformat.read(REPO_ROOT / "book" / "notebooks" / f"{chapter}.ipynb", as_version=4)
    assert page, f"{chapter}: no numbered exercise on the page (the test would check nothing)"
    assert _titles_in_edition(nb) == page


CITING = [c for c in CHAPTERS if "{cite" in (REPO_ROOT / "book" / f"{c}.ipynb").read_text(encoding="utf-8")]


@pytest.mark.parametrize("chapter", CITING)
def test_citation_labels_are_the_pages(html_dir: Path, chapter: str) -> None:
    raw = (html_dir / "book" / f"{chapter}.html").read_text(encoding="utf-8")
    link = r'<a class="reference internal" href="[^"]*bibliography[^"]*"[^>]*>(.*?)</a>'
    linked = {html.unescape(re.sub(r"<[^>]+>", "", t)).strip() for t in re.findall(link, raw, re.S)}
    nb = nbformat.read(REPO_ROOT / "book" / "notebooks" / f"{chapter}.ipynb", as_version=4)
    text = "\n".join(c.source for c in nb.cells
                     if c.cell_type == "markdown" and not c.source.startswith("## References"))
    one = r"[A-Z][^\[\];\n]*?, \d{4}[a-z]?"  # "Vaswani et al., 2017"; several are joined by ", "
    parenthetical = {label.strip() for group in re.findall(rf"\[({one}(?:, {one})*)\]", text)
                     for label in re.split(r"(?<=\d{4}), (?=[A-Z])", group)}
    assert parenthetical, f"{chapter}: no citation found (the test would check nothing)"
    assert parenthetical <= linked, sorted(parenthetical - linked)
