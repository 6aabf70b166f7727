"""attnlib.interactive.beyond_explorers: deterministic HTML, every state equal to attnlib's arrays."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from attnlib.core import causal_mask
from attnlib.examples import cat_sat_on_mat
from attnlib.interactive._render import PLOTLY_MIMETYPE, StaticFigure
from attnlib.interactive.beyond_explorers import causal_explorer, heads_explorer
from attnlib.multihead import MultiHeadAttention
from attnlib.trace import trace_attention

EX = cat_sat_on_mat()


@pytest.fixture(scope="module")
def traces():
    full = trace_attention(EX.Q, EX.K, EX.V, tokens=EX.tokens)
    causal = trace_attention(EX.Q, EX.K, EX.V, tokens=EX.tokens, attn_mask=causal_mask(EX.n))
    return full, causal


@pytest.fixture(scope="module")
def mh():
    # the chapter's construction: one-hot tokens, so X @ W_Q = W_Q = Q
    mha = MultiHeadAttention.from_weights(EX.Q, EX.K, EX.V, np.eye(4, EX.n), n_heads=2)
    return mha(np.eye(EX.n))


def _build(kind, traces, mh) -> StaticFigure:
    if kind == "causal":
        return causal_explorer(*traces, div_id="t-causal")
    return heads_explorer(mh, EX.tokens, div_id="t-heads")


@pytest.mark.parametrize("kind", ["causal", "heads"])
def test_html_is_deterministic_offline_and_described(kind, traces, mh) -> None:
    sf, again = _build(kind, traces, mh), _build(kind, traces, mh)
    html = sf.to_html()
    assert html == again.to_html(), "two calls must give the same HTML (nbval compares it)"
    assert sf.to_plotly_json() == again.to_plotly_json()
    assert f'id="{sf.div_id}"' in html and 'class="attnlib-spec"' in html
    assert "<script src" not in html.lower() and "https://" not in html and "mathjax" not in html.lower()
    assert "<figcaption>" in html and f'aria-describedby="{sf.div_id}-alt"' in html
    assert len(sf.alt) > 20
    data, meta = sf._repr_mimebundle_()
    assert set(data) == {"text/html", PLOTLY_MIMETYPE, "text/plain"} and "attnlib.interactive" in meta


def _spec(sf: StaticFigure) -> dict:
    """The JSON the page's explorer.js reads: the controls' updates, the data and layout it draws."""
    m = re.search(r'<script type="application/json" class="attnlib-spec">(.*?)</script>', sf.to_html(), re.S)
    assert m, "the explorer's spec is missing from its HTML"
    return json.loads(m.group(1).replace("<\\/", "</"))


@pytest.mark.parametrize("kind", ["causal", "heads"])
def test_native_buttons_and_a_plot_that_fits_a_phone(kind, traces, mh) -> None:
    """Labelled rows of native buttons; no Plotly button, no text box and no fixed width on the page."""
    sf = _build(kind, traces, mh)
    page = sf.to_html()
    groups = re.findall(r'<span class="attnlib-control-label" id="[^"]+">([^<]+)</span>', page)
    buttons = re.findall(r'<button type="button" class="attnlib-option" data-control="(\d)" '
                         r'data-option="(\d)" aria-pressed="(true|false)">([^<]+)</button>', page)
    menus = sf.fig.layout.updatemenus
    assert groups == (["Mask", "Query"] if kind == "causal" else ["Show"])
    assert buttons == [(str(c), str(k), "true" if k == 0 else "false", b.label)
                       for c, menu in enumerate(menus) for k, b in enumerate(menu.buttons)]
    layout = _spec(sf)["layout"]
    assert "updatemenus" not in layout and "sliders" not in layout, "Plotly's controls stay out of the page"
    assert "annotations" not in layout and "title" not in layout, "the state's words live in the HTML"
    assert "width" not in layout and layout["height"] <= 600
    assert layout["margin"]["l"] <= 60 and layout["margin"]["r"] <= 12
    heatmaps = [t for t in _spec(sf)["data"] if t["type"] == "heatmap"]
    assert heatmaps and all(t["showscale"] is False for t in heatmaps), "no colour bar: cells are labelled"


def test_causal_states_equal_the_traces(traces) -> None:
    full, causal = traces
    sf = causal_explorer(full, causal)
    fig = sf.fig
    mask_menu, query_menu = fig.layout.updatemenus
    assert [b.label for b in mask_menu.buttons] == ["off", "causal"]
    assert [b.label for b in query_menu.buttons] == list(EX.tokens)
    allowed = causal_mask(EX.n)
    hidden_trace = 1 + EX.n
    for tr, button, visible in zip((full, causal), mask_menu.buttons, (np.ones_like(allowed), allowed),
                                   strict=True):
        update = button.args[0]
        z, hidden_z = update["z"][0], update["z"][hidden_trace]
        for i in range(tr.n_q):
            np.testing.assert_array_equal(np.array(update["y"][1 + i], dtype=float), tr.weights[i])
            for j in range(tr.n_k):
                if visible[i, j]:
                    assert z[i][j] == tr.weights[i, j] and hidden_z[i][j] is None
                    assert update["text"][0][i][j] == f"{tr.weights[i, j]:.2f}"
                    assert update["text"][hidden_trace][i][j] == ""
                else:
                    assert z[i][j] is None and update["text"][0][i][j] == ""
                    assert hidden_z[i][j] == 1.0 and update["text"][hidden_trace][i][j] == "hidden"
                    assert update["text"][1 + i][j] == "hidden"
            colours = update["marker.color"][1 + i]
            assert (np.array(colours) == "#bbbbbb").tolist() == (~visible[i].astype(bool)).tolist()
        # nothing foreign restyled: bars get no z, heatmaps no y
        assert update["y"][0] is None and update["y"][hidden_trace] is None
        assert update["z"][1:hidden_trace] == [None] * tr.n_q
    # the causal state really hides the future: every weight above the diagonal is exactly 0
    assert np.all(causal.weights[~allowed] == 0.0)
    # the initial figure is the "mask off" state for query 0
    assert [list(row) for row in fig.data[0].z] == mask_menu.buttons[0].args[0]["z"][0]
    assert [t.visible is not False for t in fig.data[1:]] == [True, False, False, False, False, True]
    for i, button in enumerate(query_menu.buttons):
        traces_args, layout_args = button.args
        assert traces_args["visible"] == [True, *(k == i for k in range(EX.n)), True]
        assert layout_args == {"shapes[0].y0": i - 0.5, "shapes[0].y1": i + 0.5}
        np.testing.assert_array_equal(np.array(fig.data[1 + i].y, dtype=float), full.weights[i])


def test_causal_states_in_words_and_tables(traces) -> None:
    """Each (mask, query) state names the keys the query may use, its softmax and its weights."""
    full, causal = traces
    sf = causal_explorer(full, causal)
    assert set(sf.states) == {(m, i) for m in range(2) for i in range(EX.n)}
    allowed = causal_mask(EX.n)
    for (m, i), state in sf.states.items():
        tr = (full, causal)[m]
        query, w = EX.tokens[i], tr.weights[i]
        seen = [EX.tokens[j] for j in range(EX.n) if m == 0 or allowed[i, j]]
        later = [EX.tokens[j] for j in range(EX.n) if m == 1 and not allowed[i, j]]
        assert state.summary.startswith("Causal mask on." if m else "No mask.")
        assert f"The query “{query}”" in state.summary
        assert state.summary.endswith(
            "its weights: " + ", ".join(f"{t} {w[EX.tokens.index(t)]:.2f}" for t in seen) + ".")
        assert all(t in state.summary.split("and not the later")[1] for t in later)
        # the softmax, step by step, from the trace's scaled scores
        s = tr.scaled_scores[i]
        assert state.lines[0] == f"scores of “{query}”: q · k_j × 1/√4 = 0.5: " + ", ".join(
            f"{t} {s[j]:.3g}" if t in seen else f"{t} −∞ (hidden)" for j, t in enumerate(EX.tokens))
        assert state.lines[2].startswith("weights = exp / sum: " + ", ".join(
            f"{t} {w[j]:.3f}" for j, t in enumerate(EX.tokens)))
        row, matrix = state.tables
        assert [r[2] for r in row.rows] == [f"{v:.4f}" for v in w]
        assert [r[1] == "−∞ (hidden)" for r in row.rows] == [t not in seen for t in EX.tokens]
        assert matrix.columns == ("query", *EX.tokens)
        for r, cells in enumerate(matrix.rows):
            assert cells[1:] == tuple(f"{tr.weights[r, j]:.2f}" if m == 0 or allowed[r, j] else "hidden"
                                      for j in range(EX.n))
    # the state's words are the page's: the initial panel is shown, every other one in the template
    page, more = sf.to_html().split('<template class="attnlib-more">')
    assert re.findall(r'<div class="attnlib-state" data-state="([\d,]+)">', page) == ["0,0"]
    assert len(re.findall(r'<div class="attnlib-state" data-state="[\d,]+">', more)) == 2 * EX.n - 1


def test_heads_states_equal_the_multihead_trace(mh) -> None:
    sf = heads_explorer(mh, EX.tokens)
    fig = sf.fig
    buttons = fig.layout.updatemenus[0].buttons
    assert [b.label for b in buttons] == ["head 0", "head 1", "concat"]
    for h in range(2):
        np.testing.assert_array_equal(np.array(fig.data[h].z, dtype=float), mh.weights[h])
        np.testing.assert_array_equal(np.array(fig.data[h].z, dtype=float), mh.head(h).weights)
        assert list(fig.data[h].x) == list(EX.tokens) and list(fig.data[h].y) == list(EX.tokens)
    np.testing.assert_array_equal(np.array(fig.data[2].z, dtype=float), mh.concat)
    assert list(fig.data[2].x) == ["h0·d0", "h0·d1", "h1·d0", "h1·d1"]
    assert [t.visible for t in fig.data] == [True, False, False]
    for b, button in enumerate(buttons):
        assert button.args[0]["visible"] == [k == b for k in range(3)]
        assert button.args[1] == {"xaxis.title.text": "head · coordinate" if b == 2 else "key"}
    # each state in words and as a table of the matrix it shows
    for b, (name, matrix, columns) in enumerate(
        [("head 0", mh.weights[0], EX.tokens), ("head 1", mh.weights[1], EX.tokens),
         ("concat", mh.concat, ("h0·d0", "h0·d1", "h1·d0", "h1·d1"))]
    ):
        state = sf.states[(b,)]
        assert state.summary.startswith(name.capitalize() if b < 2 else "concat: the 2 heads' outputs")
        assert state.lines == tuple(
            f"{name}, row “{q}”: " + ", ".join(f"{c} {v:.2f}" for c, v in zip(columns, row, strict=True))
            for q, row in zip(EX.tokens, matrix, strict=True))
        (table,) = state.tables
        assert table.columns == ("query", *columns)
        assert [r[1:] for r in table.rows] == [tuple(f"{v:.4f}" for v in row) for row in matrix]
    # the largest weights, ties named together: head 0's query "The" gives 0.25 to cat, sat and mat
    assert "“The” → cat, sat and mat 0.25;" in sf.states[(0,)].summary
    assert "“on” → every key 0.20;" in sf.states[(0,)].summary
    # heads are numbered from 0, as mh.head(h): head 0 works on d0, d1 of the example, head 1 on d2, d3
    np.testing.assert_array_equal(mh.Q[0], EX.Q[:, :2])
    np.testing.assert_array_equal(mh.V[1], EX.V[:, 2:])


def test_errors_name_the_argument(traces, mh) -> None:
    full, causal = traces
    with pytest.raises(TypeError, match="trace_full must be an AttentionTrace"):
        causal_explorer(full.weights, causal)
    with pytest.raises(TypeError, match="trace_causal must be an AttentionTrace"):
        causal_explorer(full, None)
    with pytest.raises(ValueError, match="has no mask"):
        causal_explorer(full, full)
    short = trace_attention(EX.Q[:3], EX.K[:3], EX.V[:3], tokens=EX.tokens[:3], attn_mask=causal_mask(3))
    with pytest.raises(ValueError, match="same tokens"):
        causal_explorer(full, short)
    with pytest.raises(TypeError, match="MultiHeadTrace"):
        heads_explorer(full, EX.tokens)
    with pytest.raises(ValueError, match="tokens has 3 labels"):
        heads_explorer(mh, EX.tokens[:3])
    with pytest.raises(TypeError, match="sequence of 5 labels"):
        heads_explorer(mh, "The cat sat on mat")
    batched = MultiHeadAttention(4, 2, np.random.default_rng(0))(np.ones((2, 3, 4)))
    with pytest.raises(ValueError, match="one sequence"):
        heads_explorer(batched, ["a", "b", "c"])
    with pytest.raises(ValueError, match="div_id"):
        causal_explorer(full, causal, div_id="1 bad id")
