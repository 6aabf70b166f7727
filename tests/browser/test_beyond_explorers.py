"""The interactive figures of chapter 7, operated in headless Chromium on the built page.

Expected values come from attnlib (the traces the chapter computes), never from the page:
* both figures render with plotly.js from the book, and each control is there;
* the causal explorer: clicking "causal mask on" blanks the pairs above the diagonal in the
  heatmap and sets every query's bars to its causal weights; clicking a query shows its bars and
  moves the outline; clicking "mask off" restores the full weights;
* the heads explorer: each button shows that head's weights, or the concatenated outputs;
* no console error, no uncaught exception and no request to another host.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest
from explorer_helpers import assert_books_plotly, assert_clean
from test_pages import PageLog

from attnlib.core import causal_mask
from attnlib.examples import cat_sat_on_mat
from attnlib.interactive._render import _rounded as as_plotted  # the figure's rounding
from attnlib.multihead import MultiHeadAttention
from attnlib.trace import trace_attention

PAGE = "book/07_beyond.html"
CAUSAL = "beyond-causal-explorer"
HEADS = "beyond-heads-explorer"

_STATE_JS = """
id => { const gd = document.getElementById(id);
  const arr = a => a === undefined || a === null ? null : Array.from(a, r =>
      Array.isArray(r) || ArrayBuffer.isView(r) ? Array.from(r) : r);
  return { visible: gd.data.map(t => t.visible !== false),
           z: gd.data.map(t => arr(t.z)), y: gd.data.map(t => t.type === 'bar' ? arr(t.y) : null),
           shape: gd.layout.shapes ? [gd.layout.shapes[0].y0, gd.layout.shapes[0].y1] : null,
           title: gd.layout.title.text }; }
"""
EX = cat_sat_on_mat()


@pytest.fixture(scope="module")
def traces() -> tuple[Any, Any]:
    full = trace_attention(EX.Q, EX.K, EX.V, tokens=EX.tokens)
    causal = trace_attention(EX.Q, EX.K, EX.V, tokens=EX.tokens, attn_mask=causal_mask(EX.n))
    return full, causal


@pytest.fixture(scope="module")
def mh() -> Any:
    mha = MultiHeadAttention.from_weights(EX.Q, EX.K, EX.V, np.eye(4, EX.n), n_heads=2)
    return mha(np.eye(EX.n))


@pytest.fixture
def chapter(open_page: Any) -> tuple[Any, PageLog]:
    return open_page(PAGE, [CAUSAL, HEADS])


def _button(page: Any, fig: str, label: str) -> Any:
    return page.locator(f"#{fig} .updatemenu-button", has_text=re.compile(rf"^\s*{re.escape(label)}\s*$"))


def _heat(z: list[list[Any]]) -> np.ndarray:
    return np.array([[np.nan if v is None else v for v in row] for row in z], dtype=float)


def test_figures_render_with_the_books_plotly(chapter: tuple[Any, PageLog]) -> None:
    page, log = chapter
    assert_books_plotly(page)
    assert page.locator(f"#{CAUSAL} .updatemenu-button").count() == 2 + EX.n
    assert page.locator(f"#{HEADS} .updatemenu-button").count() == 3
    for fig in (CAUSAL, HEADS):
        assert page.locator(f"#{fig} .heatmaplayer image, #{fig} .hm image").count() >= 1
    assert_clean(log)


def test_causal_mask_toggle_and_query_buttons(chapter: tuple[Any, PageLog], traces: Any) -> None:
    page, log = chapter
    full, causal = traces
    allowed = causal_mask(EX.n)
    page.locator(f"#{CAUSAL}").scroll_into_view_if_needed()
    start = page.evaluate(_STATE_JS, CAUSAL)
    np.testing.assert_array_equal(_heat(start["z"][0]), as_plotted(full.weights))
    assert start["visible"] == [True, True, False, False, False, False]
    np.testing.assert_array_equal(start["y"][1], as_plotted(full.weights[0]))

    _button(page, CAUSAL, "causal mask on").click()
    page.wait_for_function("id => document.getElementById(id).layout.title.text.startsWith('causal')",
                           arg=CAUSAL)
    on = page.evaluate(_STATE_JS, CAUSAL)
    heat = _heat(on["z"][0])
    assert np.isnan(heat[~allowed]).all(), "pairs above the diagonal must be blank"
    np.testing.assert_array_equal(heat[allowed], as_plotted(causal.weights[allowed]))
    for i in range(EX.n):
        np.testing.assert_array_equal(on["y"][1 + i], as_plotted(causal.weights[i]))
    assert page.locator(f"#{CAUSAL} .hm text, #{CAUSAL} text", has_text="hidden").count() >= 1

    sat = EX.tokens.index("sat")
    _button(page, CAUSAL, "sat").click()
    page.wait_for_function("([id, i]) => document.getElementById(id).data[i].visible === true",
                           arg=[CAUSAL, 1 + sat])
    state = page.evaluate(_STATE_JS, CAUSAL)
    assert state["visible"] == [True, *(k == sat for k in range(EX.n))]
    assert state["shape"] == [sat - 0.5, sat + 0.5]
    np.testing.assert_array_equal(state["y"][1 + sat], as_plotted(causal.weights[sat]))
    assert causal.weights[sat, sat + 1:].sum() == 0.0 and full.weights[sat, sat + 1:].sum() > 0

    _button(page, CAUSAL, "mask off").click()  # the chosen query stays
    page.wait_for_function("id => document.getElementById(id).layout.title.text.startsWith('no mask')",
                           arg=CAUSAL)
    off = page.evaluate(_STATE_JS, CAUSAL)
    np.testing.assert_array_equal(_heat(off["z"][0]), as_plotted(full.weights))
    assert off["visible"][1 + sat] and off["shape"] == [sat - 0.5, sat + 0.5]
    np.testing.assert_array_equal(off["y"][1 + sat], as_plotted(full.weights[sat]))
    assert_clean(log)


def test_heads_buttons_switch_heatmaps(chapter: tuple[Any, PageLog], mh: Any) -> None:
    page, log = chapter
    page.locator(f"#{HEADS}").scroll_into_view_if_needed()
    start = page.evaluate(_STATE_JS, HEADS)
    assert start["visible"] == [True, False, False]
    np.testing.assert_array_equal(np.array(start["z"][0], dtype=float), as_plotted(mh.weights[0]))

    for b, (label, expected) in enumerate(
        [("head 1", mh.weights[1]), ("concat", mh.concat), ("head 0", mh.weights[0])]
    ):
        index = [1, 2, 0][b]
        _button(page, HEADS, label).click()
        page.wait_for_function("([id, i]) => document.getElementById(id).data[i].visible === true",
                               arg=[HEADS, index])
        state = page.evaluate(_STATE_JS, HEADS)
        assert state["visible"] == [k == index for k in range(3)], label
        np.testing.assert_array_equal(np.array(state["z"][index], dtype=float), as_plotted(expected))
        assert state["title"].startswith(label), state["title"]
        shown = page.evaluate(
            "id => document.getElementById(id)._fullData.filter(t => t.visible === true).map(t => t.name)",
            HEADS,
        )
        assert shown == [label]
    assert_clean(log)
