"""The explorers of chapter 2 (queries, keys and values), operated by keyboard in headless Chromium.

Expected values come from attnlib, never from the page:
* choosing "it" in the word explorer (focus its button, Enter) shows the row of "it", whose largest bar
  is "animal", says so in the state's text and its live region, and tabulates the row; choosing another
  word shows that word's row instead;
* at 390 px every word's button, "it" included, is inside the viewport and at least 44 px square;
* while doing so, no console error, no uncaught exception and no request to another host.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from explorer_helpers import assert_clean, choose, plain, shown_state
from test_pages import PageLog

from attnlib.features import animal_street
from attnlib.interactive._render import _rounded as as_plotted  # the figure's rounding
from attnlib.trace import trace_attention

PAGE = "book/02_qkv.html"
WORDS = "word-explorer"

_BARS_JS = """
id => { const gd = document.getElementById(id);
  return { visible: gd.data.map(t => t.visible !== false), y: gd.data.map(t => Array.from(t.y)),
           bars: Array.from(gd.querySelectorAll('.barlayer .trace'))
                      .filter(t => getComputedStyle(t).opacity !== '0' && t.querySelectorAll('path').length)
                      .length }; }
"""


@pytest.fixture(scope="module")
def tr_words() -> Any:
    f = animal_street()
    return trace_attention(f.Q, f.K, f.V, tokens=f.tokens)


@pytest.fixture
def chapter(open_page: Any) -> tuple[Any, PageLog]:
    return open_page(PAGE, [WORDS])


def _numbers(table: list[list[str]], column: int) -> np.ndarray:
    """One column of a shown table (its header row dropped) as floats."""
    return np.array([float(row[column]) for row in table[1:]])


def test_choosing_it_shows_its_row_with_the_most_on_animal(
    chapter: tuple[Any, PageLog], tr_words: Any
) -> None:
    page, log = chapter
    tokens = list(tr_words.tokens)
    buttons = page.locator(f'figure[data-explorer="{WORDS}"] button[data-control="0"]')
    assert buttons.all_inner_texts() == tokens
    assert page.evaluate(_BARS_JS, WORDS)["visible"] == [k == 0 for k in range(len(tokens))]

    it, animal = tokens.index("it"), tokens.index("animal")
    w = tr_words.weights[it]
    choose(page, WORDS, 0, it)
    state = page.evaluate(_BARS_JS, WORDS)
    assert state["visible"] == [k == it for k in range(len(tokens))] and state["bars"] == 1
    np.testing.assert_array_equal(state["y"][it], as_plotted(w))
    assert int(np.argmax(state["y"][it])) == animal
    assert buttons.nth(it).get_attribute("aria-pressed") == "true"
    shown = shown_state(page, WORDS)
    assert shown["count"] == 1 and shown["key"] == str(it)
    assert f"Query “it”: its largest weights are {w[animal]:.4f} on “animal”" in shown["summary"]
    assert shown["live"] == shown["summary"], "the live region announces the state"
    lines = plain(shown["lines"])
    assert "it looks for: noun 2.0, animate 6.0, state 1.5" in lines
    assert f"largest weight: animal, {w[animal]:.4f}" in lines
    (table,) = shown["tables"]
    assert [row[0] for row in table[1:]] == tokens
    np.testing.assert_allclose(_numbers(table, 1), w, atol=5e-5, rtol=0)

    tired = tokens.index("tired")
    choose(page, WORDS, 0, tired)
    after = page.evaluate(_BARS_JS, WORDS)
    assert after["visible"] == [k == tired for k in range(len(tokens))]
    np.testing.assert_array_equal(after["y"][tired], as_plotted(tr_words.weights[tired]))
    shown = shown_state(page, WORDS)
    assert shown["key"] == str(tired) and "Query “tired”" in shown["live"]
    assert "tired looks for" in plain(shown["lines"])
    np.testing.assert_allclose(_numbers(shown["tables"][0], 1), tr_words.weights[tired], atol=5e-5, rtol=0)
    assert_clean(log)


def test_every_word_can_be_tapped_on_a_phone(chapter: tuple[Any, PageLog], tr_words: Any) -> None:
    """The review found 6 of the 11 words clipped off the plot at 390 px, "it" among them."""
    page, log = chapter
    page.set_viewport_size({"width": 390, "height": 844})
    boxes = page.evaluate(
        """id => [...document.querySelectorAll(`figure[data-explorer="${id}"] button[data-control="0"]`)]
             .map(b => { const r = b.getBoundingClientRect();
                         return [b.textContent, r.left, r.right, r.width, r.height]; })""",
        WORDS,
    )
    assert [b[0] for b in boxes] == list(tr_words.tokens)
    for word, left, right, width, height in boxes:
        assert 0 <= left and right <= 390, f"{word!r} is outside the 390 px viewport: {left:.0f}..{right:.0f}"
        assert width >= 44 and height >= 44, f"{word!r} is {width:.0f}×{height:.0f} px, under 44×44"
    assert page.evaluate("() => document.documentElement.scrollWidth") <= 390
    assert_clean(log)
