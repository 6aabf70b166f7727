"""attnlib.interactive.beyond_explorers: deterministic HTML, every state equal to attnlib's arrays."""

from __future__ import annotations

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
    assert f'id="{sf.div_id}"' in html and "Plotly.newPlot" in html
    assert "<script src" not in html.lower() and "https://" not in html and "mathjax" not in html.lower()
    assert "<figcaption>" in html and f'aria-describedby="{sf.div_id}-alt"' in html
    assert len(sf.alt) > 20
    data, meta = sf._repr_mimebundle_()
    assert set(data) == {"text/html", PLOTLY_MIMETYPE, "text/plain"} and "attnlib.interactive" in meta


def test_causal_states_equal_the_traces(traces) -> None:
    full, causal = traces
    fig = causal_explorer(full, causal).fig
    mask_menu, query_menu = fig.layout.updatemenus
    assert [b.label for b in mask_menu.buttons] == ["mask off", "causal mask on"]
    assert [b.label for b in query_menu.buttons] == list(EX.tokens)
    allowed = causal_mask(EX.n)
    for tr, button, visible in zip((full, causal), mask_menu.buttons, (np.ones_like(allowed), allowed),
                                   strict=True):
        update = button.args[0]
        z = update["z"][0]
        for i in range(tr.n_q):
            np.testing.assert_array_equal(np.array(update["y"][1 + i], dtype=float), tr.weights[i])
            for j in range(tr.n_k):
                if visible[i, j]:
                    assert z[i][j] == tr.weights[i, j]
                    assert update["text"][0][i][j] == f"{tr.weights[i, j]:.2f}"
                else:
                    assert z[i][j] is None and update["text"][0][i][j] == "hidden"
                    assert update["text"][1 + i][j] == "hidden"
            colours = update["marker.color"][1 + i]
            assert (np.array(colours) == "#bbbbbb").tolist() == (~visible[i].astype(bool)).tolist()
        assert update["y"][0] is None and update["z"][1:] == [None] * tr.n_q  # nothing foreign restyled
    # the causal state really hides the future: every weight above the diagonal is exactly 0
    assert np.all(causal.weights[~allowed] == 0.0)
    # the initial figure is the "mask off" state for query 0
    assert [list(row) for row in fig.data[0].z] == mask_menu.buttons[0].args[0]["z"][0]
    assert [t.visible for t in fig.data[1:]] == [True, False, False, False, False]
    for i, button in enumerate(query_menu.buttons):
        traces_args, layout_args = button.args
        assert traces_args["visible"] == [True, *(k == i for k in range(EX.n))]
        assert (layout_args["shapes[0].y0"], layout_args["shapes[0].y1"]) == (i - 0.5, i + 0.5)
        np.testing.assert_array_equal(np.array(fig.data[1 + i].y, dtype=float), full.weights[i])


def test_heads_states_equal_the_multihead_trace(mh) -> None:
    fig = heads_explorer(mh, EX.tokens).fig
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
