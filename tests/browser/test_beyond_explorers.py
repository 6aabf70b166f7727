"""The interactive figures of chapter 5, operated in headless Chromium on the built page.

Every control is operated with the keyboard alone (``choose``: focus a native button, Enter).
Expected values come from attnlib (the traces the chapter computes), never from the page:
* both figures render with plotly.js from the book, and each native button is there;
* the causal explorer: "causal" blanks the pairs above the diagonal in the heatmap (grey cells
  labelled hidden) and sets every query's bars to its causal weights; a query shows its bars and
  moves the outline; "off" restores the full weights; each time the shown state (summary,
  announced in the live region, and its tables) says the weights attnlib computes;
* the heads explorer: each button shows that head's weights, or the concatenated outputs, and
  the state's table holds that matrix;
* no console error, no uncaught exception and no request to another host.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from explorer_helpers import assert_books_plotly, assert_clean, choose, plain, shown_state
from test_pages import PageLog

from attnlib.core import causal_mask
from attnlib.examples import cat_sat_on_mat
from attnlib.interactive._render import _rounded as as_plotted  # the figure's rounding
from attnlib.multihead import MultiHeadAttention
from attnlib.trace import trace_attention

PAGE = "book/05_masks_heads.html"
CAUSAL = "causal-explorer"
HEADS = "heads-explorer"

_STATE_JS = """
id => { const gd = document.getElementById(id);
  const arr = a => a === undefined || a === null ? null : Array.from(a, r =>
      Array.isArray(r) || ArrayBuffer.isView(r) ? Array.from(r) : r);
  return { visible: gd.data.map(t => t.visible !== false),
           z: gd.data.map(t => arr(t.z)), y: gd.data.map(t => t.type === 'bar' ? arr(t.y) : null),
           text: gd.data.map(t => arr(t.text)),
           shape: gd.layout.shapes ? [gd.layout.shapes[0].y0, gd.layout.shapes[0].y1] : null,
           xtitle: gd.layout.xaxis.title.text }; }
"""
EX = cat_sat_on_mat()
HIDDEN = 1 + EX.n  # the trace of the hidden pairs' grey cells


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


def _heat(z: list[list[Any]]) -> np.ndarray:
    return np.array([[np.nan if v is None else v for v in row] for row in z], dtype=float)


def _assert_causal_state(page: Any, tr: Any, masked: bool, i: int, announced: bool = True) -> dict[str, Any]:
    """The panel of (mask, query i) is the only one shown, and says query i's weights in ``tr``.

    ``announced``: a control has changed the state, so the live region says the summary too.
    """
    shown = shown_state(page, CAUSAL)
    assert shown["count"] == 1 and shown["key"] == f"{int(masked)},{i}"
    summary = plain(shown["summary"])
    allowed = causal_mask(EX.n)[i] if masked else np.ones(EX.n, dtype=bool)
    weights = ", ".join(f"{t} {tr.weights[i, j]:.2f}" for j, t in enumerate(EX.tokens) if allowed[j])
    assert summary.startswith("Causal mask on." if masked else "No mask.")
    assert f"The query “{EX.tokens[i]}”" in summary and summary.endswith(f"its weights: {weights}.")
    assert plain(shown["live"]) == (summary if announced else ""), "the live region announces changes"
    row, matrix = shown["tables"]
    assert [r[2] for r in row[1:]] == [f"{w:.4f}" for w in tr.weights[i]]
    assert [r[1] == "−∞ (hidden)" for r in row[1:]] == (~allowed).tolist()
    assert matrix[0] == ["query", *EX.tokens] and len(matrix) == 1 + EX.n
    return shown


def test_figures_render_with_the_books_plotly(chapter: tuple[Any, PageLog]) -> None:
    page, log = chapter
    assert_books_plotly(page)
    causal = page.locator(f'figure[data-explorer="{CAUSAL}"] button.attnlib-option')
    heads = page.locator(f'figure[data-explorer="{HEADS}"] button.attnlib-option')
    assert causal.all_inner_texts() == ["off", "causal", *EX.tokens]
    assert heads.all_inner_texts() == ["head 0", "head 1", "concat"]
    for fig in (CAUSAL, HEADS):
        assert page.locator(f"#{fig} .updatemenu-button").count() == 0  # Plotly's own buttons are gone
        assert page.locator(f"#{fig} .heatmaplayer image, #{fig} .hm image").count() >= 1
    assert_clean(log)


def test_causal_mask_toggle_and_query_buttons(chapter: tuple[Any, PageLog], traces: Any) -> None:
    page, log = chapter
    full, causal = traces
    allowed = causal_mask(EX.n)
    page.locator(f"#{CAUSAL}").scroll_into_view_if_needed()
    start = page.evaluate(_STATE_JS, CAUSAL)
    np.testing.assert_array_equal(_heat(start["z"][0]), as_plotted(full.weights))
    assert start["visible"] == [True, True, False, False, False, False, True]
    assert np.isnan(_heat(start["z"][HIDDEN])).all(), "no pair is hidden without the mask"
    np.testing.assert_array_equal(start["y"][1], as_plotted(full.weights[0]))
    _assert_causal_state(page, full, False, 0, announced=False)

    choose(page, CAUSAL, 0, 1)  # causal mask on
    on = page.evaluate(_STATE_JS, CAUSAL)
    heat = _heat(on["z"][0])
    assert np.isnan(heat[~allowed]).all(), "pairs above the diagonal must have no weight colour"
    np.testing.assert_array_equal(heat[allowed], as_plotted(causal.weights[allowed]))
    assert (~np.isnan(_heat(on["z"][HIDDEN]))).tolist() == (~allowed).tolist(), "hidden pairs are grey"
    assert [t == "hidden" for row in on["text"][HIDDEN] for t in row] == (~allowed).ravel().tolist()
    for i in range(EX.n):
        np.testing.assert_array_equal(on["y"][1 + i], as_plotted(causal.weights[i]))
    _assert_causal_state(page, causal, True, 0)

    sat = EX.tokens.index("sat")
    choose(page, CAUSAL, 1, sat)
    state = page.evaluate(_STATE_JS, CAUSAL)
    assert state["visible"] == [True, *(k == sat for k in range(EX.n)), True]
    assert state["shape"] == [sat - 0.5, sat + 0.5]
    np.testing.assert_array_equal(state["y"][1 + sat], as_plotted(causal.weights[sat]))
    assert causal.weights[sat, sat + 1:].sum() == 0.0 and full.weights[sat, sat + 1:].sum() > 0
    shown = _assert_causal_state(page, causal, True, sat)
    assert "and not the later on and mat (weight 0)" in plain(shown["summary"])

    choose(page, CAUSAL, 0, 0)  # mask off: the chosen query stays
    off = page.evaluate(_STATE_JS, CAUSAL)
    np.testing.assert_array_equal(_heat(off["z"][0]), as_plotted(full.weights))
    assert np.isnan(_heat(off["z"][HIDDEN])).all()
    assert off["visible"][1 + sat] and off["shape"] == [sat - 0.5, sat + 0.5]
    np.testing.assert_array_equal(off["y"][1 + sat], as_plotted(full.weights[sat]))
    _assert_causal_state(page, full, False, sat)
    assert_clean(log)


def test_heads_buttons_switch_heatmaps(chapter: tuple[Any, PageLog], mh: Any) -> None:
    page, log = chapter
    page.locator(f"#{HEADS}").scroll_into_view_if_needed()
    start = page.evaluate(_STATE_JS, HEADS)
    assert start["visible"] == [True, False, False]
    np.testing.assert_array_equal(np.array(start["z"][0], dtype=float), as_plotted(mh.weights[0]))

    for index, label, expected in [(1, "head 1", mh.weights[1]), (2, "concat", mh.concat),
                                   (0, "head 0", mh.weights[0])]:
        choose(page, HEADS, 0, index)
        state = page.evaluate(_STATE_JS, HEADS)
        assert state["visible"] == [k == index for k in range(3)], label
        np.testing.assert_array_equal(np.array(state["z"][index], dtype=float), as_plotted(expected))
        assert state["xtitle"] == ("head · coordinate" if label == "concat" else "key")
        shown = page.evaluate(
            "id => document.getElementById(id)._fullData.filter(t => t.visible === true).map(t => t.name)",
            HEADS,
        )
        assert shown == [label]
        panel = shown_state(page, HEADS)
        assert panel["count"] == 1 and panel["key"] == str(index)
        assert plain(panel["summary"]).startswith("concat: " if label == "concat" else f"Head {index}: ")
        assert plain(panel["live"]) == plain(panel["summary"])
        (table,) = panel["tables"]
        assert [row[1:] for row in table[1:]] == [[f"{v:.4f}" for v in row] for row in expected]
        assert [row[0] for row in table[1:]] == list(EX.tokens)
    assert_clean(log)
