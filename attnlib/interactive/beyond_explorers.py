"""Chapter 7's explorers, interactive in the static HTML: causal masking and the heads.

As in :mod:`attnlib.interactive.trace_explorers`, every state is computed here, in
Python, from traces attnlib returned; the browser only switches between them.

* :func:`causal_explorer` – toggle the causal mask on and off and choose a query:
  the weight matrix (hidden pairs greyed out and labelled) and the chosen query's
  weights over the keys.
* :func:`heads_explorer` – choose a head, or the concatenation of the heads'
  outputs: a heatmap of that head's weights (or of the concatenated outputs).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import plotly.graph_objects as go

from attnlib.interactive._render import StaticFigure
from attnlib.plots import CMAP, PALETTE
from attnlib.trace import AttentionTrace

__all__ = ["causal_explorer", "heads_explorer"]

_TEXT = "#222222"  # on the figure's light card, in light and dark mode alike
_GRID = "#e3e3e3"
_VISIBLE = PALETTE["blue"]
_HIDDEN = "#bbbbbb"
_HIGHLIGHT = PALETTE["orange"]
_BUTTONS = {"bgcolor": "#f2f2f2", "bordercolor": "#999999", "font": {"color": _TEXT}}


def _check_trace(trace: Any, name: str) -> AttentionTrace:
    if not isinstance(trace, AttentionTrace):
        raise TypeError(f"{name} must be an AttentionTrace (see trace_attention); got {type(trace).__name__}")
    return trace


def _allowed(trace: AttentionTrace) -> np.ndarray:
    """The boolean "may attend" matrix of a trace, (n_q, n_k)."""
    if trace.mask is None:
        return np.ones(trace.weights.shape, dtype=bool)
    return np.broadcast_to(np.asarray(trace.mask, dtype=bool), trace.weights.shape)


def _heat_cells(trace: AttentionTrace) -> tuple[list[list[float | None]], list[list[str]]]:
    """Heatmap values (hidden pairs None) and cell labels ("hidden" or the weight to 2 decimals)."""
    allowed = _allowed(trace)
    z: list[list[float | None]] = []
    text: list[list[str]] = []
    for i in range(trace.n_q):
        z.append([float(trace.weights[i, j]) if allowed[i, j] else None for j in range(trace.n_k)])
        text.append([f"{trace.weights[i, j]:.2f}" if allowed[i, j] else "hidden" for j in range(trace.n_k)])
    return z, text


def causal_explorer(
    trace_full: AttentionTrace, trace_causal: AttentionTrace, *, div_id: str = "causal-explorer"
) -> StaticFigure:
    """Switch a causal mask on and off and see which keys each query may use.

    Two rows of buttons: the first switches between ``trace_full`` (no mask)
    and ``trace_causal``; the second chooses a query. The left panel is the
    weight matrix, pairs the mask hides left blank and labelled ``hidden``,
    the chosen query's row outlined; the right panel is that query's weights
    over the keys, hidden keys in grey. All ``2 × n_q`` states are computed
    here from the two traces; the browser only switches between them.

    Parameters
    ----------
    trace_full : AttentionTrace
        Attention without a mask (or with any mask: it is shown as it is).
    trace_causal : AttentionTrace
        The same queries, keys and tokens with the causal mask, e.g.
        ``trace_attention(Q, K, V, tokens=..., attn_mask=causal_mask(n))``.
    div_id : str
        Fixed id of the figure's ``<div>``.

    Returns
    -------
    StaticFigure
        ``fig.data[0]`` is the heatmap (``z`` the weights, hidden pairs
        ``None``); ``fig.data[1 + i]`` are the bars of query ``i`` (only the
        chosen one visible). ``fig.layout.updatemenus[0].buttons[m]``
        (``m = 0`` off, ``1`` on) restyles every trace: its ``args[0]["z"][0]``
        is that state's heatmap and ``args[0]["y"][1 + i]`` row ``i`` of its
        weights. ``fig.layout.updatemenus[1].buttons[i]`` shows query ``i``.

    Raises
    ------
    TypeError
        Either trace is not an AttentionTrace.
    ValueError
        The traces differ in shape or tokens, or ``trace_causal`` has no mask.

    Examples
    --------
    >>> from attnlib.core import causal_mask
    >>> from attnlib.examples import cat_sat_on_mat
    >>> from attnlib.trace import trace_attention
    >>> ex = cat_sat_on_mat()
    >>> full = trace_attention(ex.Q, ex.K, ex.V, tokens=ex.tokens)
    >>> causal = trace_attention(ex.Q, ex.K, ex.V, tokens=ex.tokens, attn_mask=causal_mask(5))
    >>> sf = causal_explorer(full, causal)
    >>> [len(m.buttons) for m in sf.fig.layout.updatemenus]
    [2, 5]
    >>> sf.fig.layout.updatemenus[0].buttons[1].args[0]["y"][1]
    [1.0, 0.0, 0.0, 0.0, 0.0]
    """
    full = _check_trace(trace_full, "trace_full")
    causal = _check_trace(trace_causal, "trace_causal")
    if full.weights.shape != causal.weights.shape or full.tokens != causal.tokens:
        raise ValueError(
            f"trace_full and trace_causal must trace the same tokens: weights {full.weights.shape} with "
            f"tokens {full.tokens} vs {causal.weights.shape} with {causal.tokens}"
        )
    if causal.mask is None:
        raise ValueError("trace_causal has no mask; trace it with attn_mask=causal_mask(n)")
    n_q, n_k = full.n_q, full.n_k
    keys = list(full.key_tokens)

    states = []
    for tr, title in (
        (full, "no mask: every query sees every key"),
        (causal, "causal mask: query i sees keys 0 to i only"),
    ):
        allowed = _allowed(tr)
        z, text = _heat_cells(tr)
        states.append({
            "z": z,
            "text": text,
            "y": [[float(w) for w in tr.weights[i]] for i in range(n_q)],
            "bar_text": [[f"{tr.weights[i, j]:.2f}" if allowed[i, j] else "hidden" for j in range(n_k)]
                         for i in range(n_q)],
            "colours": [[_VISIBLE if allowed[i, j] else _HIDDEN for j in range(n_k)] for i in range(n_q)],
            "title": title,
        })

    first = states[0]
    fig = go.Figure()
    fig.add_trace(go.Heatmap(
        z=first["z"], text=first["text"], texttemplate="%{text}", textfont={"size": 12},
        colorscale=CMAP.capitalize(), zmin=0.0, zmax=1.0, xgap=2, ygap=2, showscale=False,
        hoverinfo="skip", xaxis="x", yaxis="y",
    ))
    for i, tok in enumerate(full.tokens):
        fig.add_trace(go.Bar(
            x=keys, y=first["y"][i], text=first["bar_text"][i], name=f"query {tok}", visible=i == 0,
            marker={"color": first["colours"][i]}, textposition="outside", cliponaxis=False,
            textfont={"color": _TEXT}, hoverinfo="skip", xaxis="x2", yaxis="y2",
        ))

    none = [None] * n_q
    mask_buttons = [
        {
            "label": label,
            "method": "update",
            "args": [
                {
                    # one entry per trace: the heatmap first, then the bars of each query
                    "z": [st["z"], *none],
                    "text": [st["text"], *st["bar_text"]],
                    "y": [None, *st["y"]],
                    "marker.color": [None, *st["colours"]],
                },
                {"title.text": st["title"]},
            ],
        }
        for label, st in zip(("mask off", "causal mask on"), states, strict=True)
    ]
    query_buttons = [
        {
            "label": tok,
            "method": "update",
            "args": [
                {"visible": [True, *(k == i for k in range(n_q))]},
                {"shapes[0].y0": i - 0.5, "shapes[0].y1": i + 0.5,
                 "xaxis2.title.text": f"key (weights of the query {tok!r})"},
            ],
        }
        for i, tok in enumerate(full.tokens)
    ]
    ticks = {"tickvals": list(range(n_k)), "ticktext": keys}
    fig.update_layout(
        height=520,
        margin={"l": 70, "r": 20, "t": 150, "b": 60},
        paper_bgcolor="#ffffff",
        plot_bgcolor="#ffffff",
        font={"color": _TEXT, "size": 13},
        title={"text": first["title"], "x": 0.0, "xanchor": "left", "y": 0.97, "yanchor": "top"},
        showlegend=False,
        xaxis={"domain": [0.0, 0.46], "side": "top", "title": {"text": "key"}, "fixedrange": True,
               "range": [-0.5, n_k - 0.5], "showgrid": False, "zeroline": False, **ticks},
        yaxis={"domain": [0.0, 0.82], "title": {"text": "query"}, "fixedrange": True,
               "range": [n_q - 0.5, -0.5], "showgrid": False, "zeroline": False,
               "tickvals": list(range(n_q)), "ticktext": list(full.tokens)},
        xaxis2={"domain": [0.56, 1.0], "anchor": "y2", "type": "category", "fixedrange": True,
                "title": {"text": f"key (weights of the query {full.tokens[0]!r})"}},
        yaxis2={"domain": [0.0, 0.82], "anchor": "x2", "range": [0.0, 1.15], "fixedrange": True,
                "title": {"text": "weight"}, "gridcolor": _GRID},
        shapes=[{
            "type": "rect", "xref": "x", "yref": "y", "x0": -0.5, "x1": n_k - 0.5, "y0": -0.5, "y1": 0.5,
            "line": {"color": _HIGHLIGHT, "width": 3}, "fillcolor": "rgba(0,0,0,0)",
        }],
        annotations=[
            {"text": "mask:", "xref": "paper", "yref": "paper", "x": 0.0, "y": 1.17, "xanchor": "right",
             "yanchor": "middle", "showarrow": False, "font": {"color": _TEXT}},
            {"text": "query:", "xref": "paper", "yref": "paper", "x": 0.0, "y": 1.06, "xanchor": "right",
             "yanchor": "middle", "showarrow": False, "font": {"color": _TEXT}},
        ],
        updatemenus=[
            {"type": "buttons", "direction": "right", "buttons": mask_buttons, "active": 0,
             "showactive": True, "x": 0.01, "y": 1.17, "xanchor": "left", "yanchor": "middle",
             "pad": {"l": 4, "r": 4, "t": 0, "b": 0}, **_BUTTONS},
            {"type": "buttons", "direction": "right", "buttons": query_buttons, "active": 0,
             "showactive": True, "x": 0.01, "y": 1.06, "xanchor": "left", "yanchor": "middle",
             "pad": {"l": 4, "r": 4, "t": 0, "b": 0}, **_BUTTONS},
        ],
    )
    return StaticFigure(
        fig, div_id=div_id,
        caption=(
            "Switch the causal mask on and off and choose a query. Left: every query's weights, the pairs "
            "the mask hides left blank; right: the chosen query's weights, hidden keys in grey at 0."
        ),
        alt=(
            f"An interactive figure for the {n_q} tokens {', '.join(full.tokens)}. Buttons switch a causal "
            "mask on or off and choose a query. A heatmap shows all attention weights; with the mask on, "
            "the cells above the diagonal are blank and labelled hidden. A bar chart shows the chosen "
            "query's weights over the keys, hidden keys as grey bars of height 0."
        ),
    )


def heads_explorer(mh_trace: Any, tokens: Any, *, div_id: str = "heads-explorer") -> StaticFigure:
    """Choose a head and see its weights, or the heads' outputs side by side.

    One button per head (``head 0`` to ``head H-1``, numbered as
    ``mh_trace.head(h)`` numbers them) shows that head's ``n × n`` weight matrix; the last
    button, ``concat``, shows the heads' outputs concatenated, the
    ``n × (H·d_head)`` matrix the output projection receives.

    Parameters
    ----------
    mh_trace : MultiHeadTrace
        One multi-head call on one sequence (no batch dimensions): its
        ``weights`` have shape ``(H, n_q, n_k)`` and its ``concat``
        ``(n_q, H·d_head)``.
    tokens : sequence of str, length n_q
        Labels of the queries (and of the keys, in self-attention).
    div_id : str
        Fixed id of the figure's ``<div>``.

    Returns
    -------
    StaticFigure
        ``fig.data[h]`` is the heatmap of head ``h`` (``z`` = ``weights[h]``)
        and ``fig.data[H]`` that of ``concat``; only one is visible.
        ``fig.layout.updatemenus[0].buttons[b]`` makes trace ``b`` visible.

    Raises
    ------
    TypeError
        ``mh_trace`` has no ``weights``/``concat`` arrays, or ``tokens`` is not a
        sequence of labels.
    ValueError
        The trace is batched, or ``tokens`` has the wrong length.
    """
    weights = getattr(mh_trace, "weights", None)
    concat = getattr(mh_trace, "concat", None)
    if not isinstance(weights, np.ndarray) or not isinstance(concat, np.ndarray):
        raise TypeError(
            f"mh_trace must be a MultiHeadTrace (weights and concat arrays); got {type(mh_trace).__name__}"
        )
    if weights.ndim != 3 or concat.ndim != 2:
        raise ValueError(
            "heads_explorer shows one sequence: weights must be (H, n_q, n_k) and concat (n_q, H*d_head); "
            f"got weights {weights.shape} and concat {concat.shape} (index the batch first)"
        )
    n_heads, n_q, n_k = weights.shape
    if isinstance(tokens, (str, bytes)) or not hasattr(tokens, "__len__"):
        raise TypeError(f"tokens must be a sequence of {n_q} labels; got {type(tokens).__name__} {tokens!r}")
    if len(tokens) != n_q:
        raise ValueError(f"tokens has {len(tokens)} labels but the trace has n_q={n_q} queries")
    labels = [str(t) for t in tokens]
    keys = labels if n_k == n_q else [f"k{j}" for j in range(n_k)]
    d_head = concat.shape[1] // n_heads
    columns = [f"h{h}·d{c}" for h in range(n_heads) for c in range(d_head)]

    fig = go.Figure()
    for h in range(n_heads):
        fig.add_trace(go.Heatmap(
            z=[[float(w) for w in row] for row in weights[h]], x=keys, y=labels,
            text=[[f"{w:.2f}" for w in row] for row in weights[h]], texttemplate="%{text}",
            textfont={"size": 12}, colorscale=CMAP.capitalize(), zmin=0.0, zmax=1.0, xgap=2, ygap=2,
            visible=h == 0, name=f"head {h}", hoverinfo="skip",
            colorbar={"title": {"text": "weight", "font": {"color": _TEXT}}, "tickfont": {"color": _TEXT},
                      "thickness": 14},
        ))
    lo, hi = float(concat.min()), float(concat.max())
    fig.add_trace(go.Heatmap(
        z=[[float(v) for v in row] for row in concat], x=columns, y=labels,
        text=[[f"{v:.2f}" for v in row] for row in concat], texttemplate="%{text}", textfont={"size": 12},
        colorscale=CMAP.capitalize(), zmin=min(0.0, lo), zmax=max(hi, 1e-12), xgap=2, ygap=2,
        visible=False, name="concat", hoverinfo="skip",
        colorbar={"title": {"text": "value", "font": {"color": _TEXT}}, "tickfont": {"color": _TEXT},
                  "thickness": 14},
    ))
    titles = [f"head {h}: its weights A_{h} (rows sum to 1)" for h in range(n_heads)]
    titles.append("concat: the heads' outputs side by side, the input of W_O")
    xtitles = ["key"] * n_heads + ["head and coordinate of its output"]
    buttons = [
        {
            "label": label,
            "method": "update",
            "args": [{"visible": [k == b for k in range(n_heads + 1)]},
                     {"title.text": titles[b], "xaxis.title.text": xtitles[b]}],
        }
        for b, label in enumerate([f"head {h}" for h in range(n_heads)] + ["concat"])
    ]
    side = 60 * max(n_q, n_k, len(columns))
    fig.update_layout(
        height=60 * n_q + 230,
        width=side + 260,
        margin={"l": 80, "r": 20, "t": 150, "b": 20},
        paper_bgcolor="#ffffff",
        plot_bgcolor="#ffffff",
        font={"color": _TEXT, "size": 13},
        title={"text": titles[0], "x": 0.0, "xanchor": "left", "y": 0.97, "yanchor": "top"},
        xaxis={"title": {"text": "key"}, "side": "top", "type": "category", "fixedrange": True},
        yaxis={"title": {"text": "query"}, "autorange": "reversed", "type": "category", "fixedrange": True},
        annotations=[{"text": "show:", "xref": "paper", "yref": "paper", "x": 0.0, "y": 1.2,
                      "xanchor": "right", "yanchor": "middle", "showarrow": False, "font": {"color": _TEXT}}],
        updatemenus=[{
            "type": "buttons", "direction": "right", "buttons": buttons, "active": 0, "showactive": True,
            "x": 0.01, "y": 1.2, "xanchor": "left", "yanchor": "middle",
            "pad": {"l": 4, "r": 4, "t": 0, "b": 0}, **_BUTTONS,
        }],
    )
    return StaticFigure(
        fig, div_id=div_id,
        caption=(
            "Choose a head to see its attention weights, queries down the side and keys along the top, "
            "or concat to see the heads' outputs side by side, the matrix the output projection receives."
        ),
        alt=(
            f"An interactive heatmap for the {n_q} tokens {', '.join(labels)}. Buttons choose one of the "
            f"{n_heads} heads, showing its {n_q} by {n_k} attention weights labelled to two decimals, or "
            f"concat, showing the {n_q} by {len(columns)} matrix of the heads' outputs side by side."
        ),
    )

