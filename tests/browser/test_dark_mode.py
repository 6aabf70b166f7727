"""Text the book writes into its pages stays readable in the theme's dark mode.

The live-explorer notes and the explorers' captions are HTML outputs; in dark mode the theme and
myst-nb colour them differently from the prose, and without the book's stylesheet a note once
rendered dark text on a dark background. This test measures the contrast the browser computes.
"""

from __future__ import annotations

import pytest
from wcag import CONTRAST_HELPERS

from press.print_pdf import SCRIPTS_JS

PAGES = ["book/04_scaling.html", "book/03_worked_examples.html", "book/02_qkv.html"]
SELECTORS = ".attnlib-live-note p, figure.attnlib-explorer figcaption"

# The WCAG contrast ratio of each element's text, as the browser renders it.
CONTRASTS = "(sel) => {" + CONTRAST_HELPERS + """
  return [...document.querySelectorAll(sel)].map((el) => ({
    text: el.textContent.slice(0, 60),
    ratio: ratio(lum(getComputedStyle(el).color), lum(behind(el))),
  }));
}"""


@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("page_path", PAGES)
def test_book_html_outputs_have_readable_contrast(
    browser, base_url: str, page_path: str, scheme: str
) -> None:
    context = browser.new_context(color_scheme=scheme)
    try:
        page = context.new_page()
        page.goto(f"{base_url}/{page_path}")
        page.evaluate(SCRIPTS_JS)  # the page's scripts load after its first paint
        page.wait_for_load_state("load")
        found = page.evaluate(CONTRASTS, SELECTORS)
    finally:
        context.close()
    assert found, f"{page_path}: no live note or explorer caption found ({SELECTORS})"
    poor = [f for f in found if f["ratio"] < 4.5]
    assert not poor, f"{page_path} in {scheme} mode: contrast below 4.5:1 for {poor}"
