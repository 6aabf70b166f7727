"""The interactive figures of chapter 4, operated in headless Chromium on the built page.

Expected values come from attnlib (the same trace the chapter computes), never from the page:
* both figures render (a ``.plotly-graph-div`` with ``_fullData``) with plotly.js from the book;
* the query buttons and the step slider, clicked with the mouse, show the row of the chosen query
  at the chosen step, and that step's arithmetic;
* moving the mouse over the cell "cat" → "The" of the heatmap shows its dot product term by term,
  its scaled score and its weight;
* while doing so, no console error, no uncaught exception and no request to another host.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from explorer_helpers import assert_books_plotly, assert_clean, plain
from test_pages import PageLog

from attnlib.examples import cat_sat_on_mat
from attnlib.interactive import STEPS, explain_blocks
from attnlib.interactive._render import _rounded as as_plotted  # the figure's rounding
from attnlib.trace import trace_attention

PAGE = "book/04_worked_examples.html"
STEPPER = "worked-stepper"
HEATMAP = "worked-weights-hover"

_STATE_JS = """
id => { const gd = document.getElementById(id);
  return { visible: gd.data.map(t => t.visible !== false),
           x: gd.data.map(t => Array.from(t.x)), y: gd.data.map(t => Array.from(t.y)),
           notes: gd.layout.annotations.map(a => ({text: a.text, visible: a.visible !== false})),
           shown: Array.from(gd.querySelectorAll('.annotation-text'))
                       .filter(e => e.closest('.annotation').style.display !== 'none')
                       .map(e => e.textContent) }; }
"""


@pytest.fixture(scope="module")
def tr() -> Any:
    ex = cat_sat_on_mat()
    return trace_attention(ex.Q, ex.K, ex.V, tokens=ex.tokens)


@pytest.fixture
def chapter(open_page: Any) -> tuple[Any, PageLog]:
    return open_page(PAGE, [STEPPER, HEATMAP])


def test_figures_render_with_the_books_plotly(chapter: tuple[Any, PageLog]) -> None:
    page, log = chapter
    assert_books_plotly(page)
    assert page.evaluate("() => typeof Plotly.newPlot") == "function"
    assert page.locator(f"#{STEPPER} .updatemenu-button").count() == 5
    assert page.locator(f"#{STEPPER} .slider-label-group").count() == len(STEPS)
    assert page.locator(f"#{HEATMAP} .heatmaplayer image, #{HEATMAP} .hm image").count() >= 1
    assert_clean(log)


def test_buttons_and_slider_switch_states(chapter: tuple[Any, PageLog], tr: Any) -> None:
    page, log = chapter
    page.locator(f"#{STEPPER}").scroll_into_view_if_needed()
    start = page.evaluate(_STATE_JS, STEPPER)
    assert start["visible"] == [True, False, False, False, False]
    np.testing.assert_array_equal(start["y"][0], as_plotted(tr.scores[0]))

    cat = tr.tokens.index("cat")
    page.locator(f"#{STEPPER} .updatemenu-button").nth(cat).click()
    # the slider's labels sit under its touch area, which takes the click: force it through
    page.locator(f"#{STEPPER} .slider-label-group").nth(2).click(force=True)  # step 3: weights
    page.wait_for_function(
        "([id, i]) => document.getElementById(id).data[i].visible === true "
        "&& document.getElementById(id).layout.title.text.startsWith('Step 3')",
        arg=[STEPPER, cat],
    )
    state = page.evaluate(_STATE_JS, STEPPER)
    assert state["visible"] == [k == cat for k in range(tr.n_q)]
    np.testing.assert_array_equal(state["y"][cat], as_plotted(tr.weights[cat]))
    assert state["x"][cat] == list(tr.key_tokens)
    shown = " ".join(plain(t) for t in state["shown"])
    for line in explain_blocks(tr, cat)["6"][1:]:  # "w[The] = 4.4817 / 11.1327 = 0.4026", ...
        assert line.strip() in shown, f"{line.strip()!r} not shown; shown: {shown[:300]}"
    assert f"{tr.weights[cat, 0]:.4f}" in shown

    page.locator(f"#{STEPPER} .slider-label-group").nth(3).click(force=True)  # step 4: output
    page.wait_for_function(
        "id => document.getElementById(id).layout.title.text.startsWith('Step 4')", arg=STEPPER
    )
    state = page.evaluate(_STATE_JS, STEPPER)
    np.testing.assert_array_equal(state["y"][cat], as_plotted(tr.output[cat]))
    assert state["x"][cat] == [f"d{c}" for c in range(tr.d_v)]

    the = tr.tokens.index("The")
    page.locator(f"#{STEPPER} .updatemenu-button").nth(the).click()  # the step stays at "output"
    page.wait_for_function("([id, i]) => document.getElementById(id).data[i].visible === true",
                           arg=[STEPPER, the])
    state = page.evaluate(_STATE_JS, STEPPER)
    assert state["visible"] == [k == the for k in range(tr.n_q)]
    np.testing.assert_array_equal(state["y"][the], as_plotted(tr.output[the]))
    assert any("out[The]" in plain(t) for t in state["shown"])
    assert_clean(log)


def test_hover_shows_the_arithmetic_of_cat_the(chapter: tuple[Any, PageLog], tr: Any) -> None:
    page, log = chapter
    page.locator(f"#{HEATMAP}").scroll_into_view_if_needed()
    q, k = tr.tokens.index("cat"), tr.key_tokens.index("The")
    x, y = page.evaluate(
        """([id, q, k]) => { const gd = document.getElementById(id), L = gd._fullLayout;
             const box = gd.getBoundingClientRect();
             return [box.left + L.xaxis._offset + L.xaxis.c2p(k),
                     box.top + L.yaxis._offset + L.yaxis.c2p(q)]; }""",
        [HEATMAP, q, k],
    )
    page.mouse.move(x, y)
    page.wait_for_selector(f"#{HEATMAP} .hovertext")
    text = page.locator(f"#{HEATMAP} .hovertext").first.text_content()
    terms = " + ".join(f"({a:.1f})({b:.1f})" for a, b in zip(tr.Q[q], tr.K[k], strict=True))
    assert "query cat → key The" in text
    assert f"q·k = {terms} = {tr.scores[q, k]:.1f}" in text  # ... = 3.0
    assert f"= {tr.scaled_scores[q, k]:.4f}" in text and "1.5" in text
    assert f"= {tr.weights[q, k]:.4f}" in text and "0.4026" in text
    assert_clean(log)
