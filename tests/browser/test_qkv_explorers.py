"""The explorers of chapter 2 (queries, keys and values), operated in headless Chromium.

Expected values come from attnlib, never from the page:
* clicking "it" in the click-a-word explorer shows the row of "it", whose largest bar is "animal";
  clicking another word shows that word's row instead;
* the slider of the "Cat sits" stepper switches the phase: its title and its tables change to the
  next phase's matrices;
* while doing so, no console error, no uncaught exception and no request to another host.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from explorer_helpers import assert_clean, plain
from test_pages import PageLog

from attnlib.examples import cat_sits
from attnlib.features import animal_street
from attnlib.interactive._render import _rounded as as_plotted  # the figure's rounding
from attnlib.interactive.qkv_explorers import PHASES
from attnlib.trace import trace_attention

PAGE = "book/02_qkv.html"
WORDS = "qkv-word-explorer"
STEPPER = "qkv-cat-sits-stepper"

_BARS_JS = """
id => { const gd = document.getElementById(id);
  return { visible: gd.data.map(t => t.visible !== false), y: gd.data.map(t => Array.from(t.y)),
           title: gd.layout.title.text,
           bars: Array.from(gd.querySelectorAll('.barlayer .trace'))
                      .filter(t => getComputedStyle(t).opacity !== '0' && t.querySelectorAll('path').length)
                      .length,
           shown: Array.from(gd.querySelectorAll('.annotation-text'))
                       .filter(e => e.closest('.annotation').style.display !== 'none')
                       .map(e => e.textContent) }; }
"""
_TABLES_JS = """
id => { const gd = document.getElementById(id);
  return { title: gd.layout.title.text,
           visible: gd.data.map(t => t.visible !== false),
           headers: gd.data.map(t => Array.from(t.header.values)),
           cells: gd.data.map(t => t.cells.values.map(c => Array.from(c))),
           svgTitle: gd.querySelector('.gtitle').textContent }; }
"""


@pytest.fixture(scope="module")
def tr_words() -> Any:
    f = animal_street()
    return trace_attention(f.Q, f.K, f.V, tokens=f.tokens)


@pytest.fixture(scope="module")
def tr_cs() -> Any:
    ex = cat_sits()
    return trace_attention(ex.Q, ex.K, ex.V, tokens=ex.tokens)


@pytest.fixture
def chapter(open_page: Any) -> tuple[Any, PageLog]:
    return open_page(PAGE, [WORDS, STEPPER])


def _matrix(cells: list[list[str]]) -> np.ndarray:
    return np.array([[float(v) for v in col] for col in cells[1:]]).T


def test_clicking_it_shows_its_row_with_the_most_on_animal(
    chapter: tuple[Any, PageLog], tr_words: Any
) -> None:
    page, log = chapter
    page.locator(f"#{WORDS}").scroll_into_view_if_needed()
    tokens = list(tr_words.tokens)
    assert page.locator(f"#{WORDS} .updatemenu-button").count() == len(tokens)
    start = page.evaluate(_BARS_JS, WORDS)
    assert start["visible"] == [k == 0 for k in range(len(tokens))]

    it, animal = tokens.index("it"), tokens.index("animal")
    page.locator(f"#{WORDS} .updatemenu-button").nth(it).click()
    page.wait_for_function("([id, i]) => document.getElementById(id).data[i].visible === true",
                           arg=[WORDS, it])
    state = page.evaluate(_BARS_JS, WORDS)
    assert state["visible"] == [k == it for k in range(len(tokens))]
    np.testing.assert_array_equal(state["y"][it], as_plotted(tr_words.weights[it]))
    assert int(np.argmax(state["y"][it])) == animal
    assert "“it”" in state["title"] and state["bars"] == 1
    shown = plain(" ".join(state["shown"]))
    assert "it looks for: noun 2.0, animate 6.0, state 1.5" in shown
    assert f"largest weight: animal, {tr_words.weights[it, animal]:.4f}" in shown

    tired = tokens.index("tired")
    page.locator(f"#{WORDS} .updatemenu-button").nth(tired).click()
    page.wait_for_function("([id, i]) => document.getElementById(id).data[i].visible === true",
                           arg=[WORDS, tired])
    after = page.evaluate(_BARS_JS, WORDS)
    assert after["visible"] == [k == tired for k in range(len(tokens))]
    np.testing.assert_array_equal(after["y"][tired], as_plotted(tr_words.weights[tired]))
    assert not np.allclose(after["y"][tired], state["y"][it]), "another word must change the bars"
    assert "“tired”" in after["title"]
    assert any("tired looks for" in plain(t) for t in after["shown"])
    assert_clean(log)


def test_slider_switches_the_phase_of_the_stepper(chapter: tuple[Any, PageLog], tr_cs: Any) -> None:
    page, log = chapter
    ex = cat_sits()
    page.locator(f"#{STEPPER}").scroll_into_view_if_needed()
    assert page.locator(f"#{STEPPER} .slider-label-group").count() == len(PHASES)
    start = page.evaluate(_TABLES_JS, STEPPER)
    assert start["title"] == PHASES[0][1] and start["svgTitle"] == PHASES[0][1]
    np.testing.assert_array_equal(_matrix(start["cells"][0]), ex.X)
    assert start["visible"] == [True, True, True, True]

    # the slider's labels sit under its touch area, which takes the click: force it through
    page.locator(f"#{STEPPER} .slider-label-group").nth(1).click(force=True)  # phase 2: Q, K, V
    page.wait_for_function("id => document.getElementById(id).layout.title.text.startsWith('Phase 2')",
                           arg=STEPPER)
    state = page.evaluate(_TABLES_JS, STEPPER)
    assert state["svgTitle"] == PHASES[1][1]
    assert state["visible"] == [True, True, True, False]
    assert [h[0] for h in state["headers"][:3]] == ["<b>Q</b>", "<b>K</b>", "<b>V</b>"]
    for k, M in enumerate((ex.Q, ex.K, ex.V)):
        np.testing.assert_array_equal(_matrix(state["cells"][k]), M)

    page.locator(f"#{STEPPER} .slider-label-group").nth(4).click(force=True)  # phase 5
    page.wait_for_function("id => document.getElementById(id).layout.title.text.startsWith('Phase 5')",
                           arg=STEPPER)
    state = page.evaluate(_TABLES_JS, STEPPER)
    np.testing.assert_allclose(_matrix(state["cells"][0]), tr_cs.weights, atol=5e-5, rtol=0)
    np.testing.assert_allclose(_matrix(state["cells"][2]), tr_cs.output, atol=5e-5, rtol=0)
    text = plain(page.locator(f"#{STEPPER} .annotation-text").first.text_content())
    assert f"w[Cat]  = 4.1133 / 6.1414 = {tr_cs.weights[0, 0]:.4f}" in text
    assert_clean(log)
