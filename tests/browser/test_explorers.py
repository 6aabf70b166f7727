"""The interactive figures of chapter 3, operated in headless Chromium on the built page.

Expected values come from attnlib (the same trace the chapter computes), never from the page:
* both figures render with plotly.js from the book, with native controls (query buttons, a step slider);
* the query buttons and the step slider, operated by keyboard alone, show the row of the chosen query
  at the chosen step in the bars, in words (also in the live region), as that step's arithmetic and as
  a table;
* choosing a query of the heatmap by keyboard outlines its row and writes out the arithmetic the hover
  label shows for each of its cells; moving the mouse over the cell "cat" → "The" still shows it;
* while doing so, no console error, no uncaught exception and no request to another host.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from explorer_helpers import assert_books_plotly, assert_clean, choose, plain, shown_state
from test_pages import PageLog

from attnlib.examples import cat_sat_on_mat
from attnlib.interactive import STEPS
from attnlib.interactive._render import _rounded as as_plotted  # the figure's rounding
from attnlib.trace import trace_attention

PAGE = "book/03_worked_examples.html"
STEPPER = "pipeline-stepper"
HEATMAP = "weights-heatmap"

_STATE_JS = """
id => { const gd = document.getElementById(id);
  return { visible: gd.data.map(t => t.visible !== false),
           x: gd.data.map(t => Array.from(t.x)), y: gd.data.map(t => Array.from(t.y)),
           ytitle: gd._fullLayout.yaxis.title.text }; }
"""


@pytest.fixture(scope="module")
def tr() -> Any:
    ex = cat_sat_on_mat()
    return trace_attention(ex.Q, ex.K, ex.V, tokens=ex.tokens)


@pytest.fixture
def chapter(open_page: Any) -> tuple[Any, PageLog]:
    return open_page(PAGE, [STEPPER, HEATMAP])


def _column(table: list[list[str]], column: int) -> np.ndarray:
    return np.array([float(row[column]) for row in table[1:]])


def test_figures_render_with_the_books_plotly(chapter: tuple[Any, PageLog], tr: Any) -> None:
    page, log = chapter
    assert_books_plotly(page)
    assert page.evaluate("() => typeof Plotly.newPlot") == "function"
    stepper = page.locator(f'figure[data-explorer="{STEPPER}"]')
    assert stepper.locator('button[data-control="0"]').all_inner_texts() == list(tr.tokens)
    slider = stepper.locator('input[type="range"][data-control="1"]')
    assert slider.get_attribute("max") == str(len(STEPS) - 1)
    heatmap = page.locator(f'figure[data-explorer="{HEATMAP}"]')
    assert heatmap.locator('button[data-control="0"]').all_inner_texts() == list(tr.tokens)
    assert page.locator(f"#{HEATMAP} .heatmaplayer image, #{HEATMAP} .hm image").count() >= 1
    assert_clean(log)


def test_buttons_and_slider_switch_states(chapter: tuple[Any, PageLog], tr: Any) -> None:
    page, log = chapter
    start = page.evaluate(_STATE_JS, STEPPER)
    assert start["visible"] == [True, False, False, False, False]
    np.testing.assert_array_equal(start["y"][0], as_plotted(tr.scores[0]))

    cat = tr.tokens.index("cat")
    choose(page, STEPPER, 0, cat)
    choose(page, STEPPER, 1, 2)  # step 3: weights, by the arrow keys
    state = page.evaluate(_STATE_JS, STEPPER)
    assert state["visible"] == [k == cat for k in range(tr.n_q)]
    np.testing.assert_array_equal(state["y"][cat], as_plotted(tr.weights[cat]))
    assert state["x"][cat] == list(tr.key_tokens) and state["ytitle"] == "weight"
    shown = shown_state(page, STEPPER)
    assert shown["count"] == 1 and shown["key"] == f"{cat},2"
    assert shown["summary"].startswith("Query “cat”, step 3 of 4, weights")
    assert f"the largest, {tr.weights[cat].max():.4f}, is on “The”" in shown["summary"]
    assert shown["live"] == shown["summary"]
    lines = plain(shown["lines"])
    for line in tr.explain_steps(cat)["6"][1:]:  # "w[The] = 4.4817 / 11.1327 = 0.4026", ...
        assert line.strip() in lines, f"{line.strip()!r} not shown; shown: {lines[:300]}"
    (table,) = shown["tables"]
    assert table[0] == ["key", "raw score q·k", "scaled q·k / √d_k", "weight"]
    np.testing.assert_allclose(_column(table, 3), tr.weights[cat], atol=5e-5, rtol=0)
    np.testing.assert_allclose(_column(table, 1), tr.scores[cat], atol=5e-5, rtol=0)

    choose(page, STEPPER, 1, 3)  # step 4: output
    state = page.evaluate(_STATE_JS, STEPPER)
    np.testing.assert_array_equal(state["y"][cat], as_plotted(tr.output[cat]))
    assert state["x"][cat] == [f"d{c}" for c in range(tr.d_v)]
    np.testing.assert_allclose(_column(shown_state(page, STEPPER)["tables"][0], 1), tr.output[cat],
                               atol=5e-5, rtol=0)

    the = tr.tokens.index("The")
    choose(page, STEPPER, 0, the)  # the step stays at "output"
    state = page.evaluate(_STATE_JS, STEPPER)
    assert state["visible"] == [k == the for k in range(tr.n_q)]
    np.testing.assert_array_equal(state["y"][the], as_plotted(tr.output[the]))
    shown = shown_state(page, STEPPER)
    assert shown["key"] == f"{the},3" and "out[The]" in plain(shown["lines"])
    assert_clean(log)


def test_heatmap_rows_by_keyboard_give_the_hover_arithmetic(chapter: tuple[Any, PageLog], tr: Any) -> None:
    page, log = chapter
    cat, the = tr.tokens.index("cat"), tr.key_tokens.index("The")
    choose(page, HEATMAP, 0, cat)
    outline = page.evaluate(
        "id => { const s = document.getElementById(id).layout.shapes[0]; return [s.y0, s.y1]; }", HEATMAP
    )
    assert outline == [cat - 0.5, cat + 0.5]
    shown = shown_state(page, HEATMAP)
    assert shown["key"] == str(cat) and shown["live"] == shown["summary"]
    assert f"“The” {tr.weights[cat, the]:.4f}" in shown["summary"]
    terms = " + ".join(f"({a:.1f})({b:.1f})" for a, b in zip(tr.Q[cat], tr.K[the], strict=True))
    lines = plain(shown["lines"])
    assert f"cat → The\n  q·k = {terms} = {tr.scores[cat, the]:.1f}\n" in lines
    assert f"  weight = 4.4817 / 11.1327 = {tr.weights[cat, the]:.4f}" in lines
    (table,) = shown["tables"]
    np.testing.assert_allclose(_column(table, 4), tr.weights[cat], atol=5e-5, rtol=0)
    np.testing.assert_allclose(_column(table, 2), tr.scaled_scores[cat], atol=5e-5, rtol=0)
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
