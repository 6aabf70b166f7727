"""No reader sees the book's plumbing (issue 28): no ``glue(...)`` call and no ``myst_nb`` import in the
code of any built page, hidden cells included (a reader can open them). Read from the built HTML, no
browser; the stored notebooks are checked the same way by tests/test_book_structure.py."""

from __future__ import annotations

import re
from pathlib import Path

from bs4 import BeautifulSoup

PLUMBING = re.compile(r"\bglue\(|\bmyst_nb\b")


def plumbing_in(page: str) -> list[str]:
    """The code blocks of a built page that show a glue call or the glue import."""
    soup = BeautifulSoup(page, "html.parser")
    return [block.get_text()[:80] for block in soup.select("div.cell_input pre, div.highlight pre")
            if PLUMBING.search(block.get_text())]


def test_the_rule_sees_a_glue_call_in_a_hidden_cell() -> None:
    page = ('<details class="hide above-input"><div class="cell_input"><pre>x = 1\nglue("x", x)</pre></div>'
            '</details><div class="cell_input"><pre>print(glued)</pre></div>')
    assert plumbing_in(page) == ['x = 1\nglue("x", x)']


def test_no_built_page_shows_glue(html_dir: Path, toc_pages: list[str]) -> None:
    shown = {rel: found for rel in toc_pages
             if (found := plumbing_in((html_dir / rel).read_text(encoding="utf-8")))}
    assert len(toc_pages) > 20
    assert not shown, f"book plumbing in readers' code: {shown}"
