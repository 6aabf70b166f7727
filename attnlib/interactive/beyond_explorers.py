"""Chapter 5's explorers, interactive in the static HTML: causal masking and the heads.

As in :mod:`attnlib.interactive.trace_explorers`, every state is computed here, in
Python, from traces attnlib returned, with its numbers in words and tables for
readers who do not see the plot; the browser only switches between the states
(native buttons in the book, Plotly's buttons in JupyterLab).

* :func:`causal_explorer` – toggle the causal mask on and off and choose a query:
  the weight matrix (hidden pairs greyed out and labelled) above the chosen
  query's weights over the keys, and the softmax of that query step by step.
* :func:`heads_explorer` – choose a head, or the concatenation of the heads'
  outputs: a heatmap of that head's weights (or of the concatenated outputs).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import plotly.graph_objects as go

from attnlib.core import scale_for
from attnlib.interactive._render import TEXT, DataTable, ExplorerState, StaticFigure
from attnlib.plots import CMAP, PALETTE
from attnlib.trace import AttentionTrace

__all__ = ["causal_explorer", "heads_explorer"]

_GRID = "#e3e3e3"
_VISIBLE = PALETTE["blue"]
_HIDDEN = "#bbbbbb"
_HIDDEN_CELL = "#d5d9de"  # dark text on it: 11:1
_HIGHLIGHT = PALETTE["orange"]
# Plotly's own buttons exist only in JupyterLab and VS Code (Plotly's mimetype), on a light page.
_BUTTONS = {"bgcolor": "#f2f2f2", "bordercolor": "#999999", "font": {"color": TEXT}}


def _check_trace(trace: Any, name: str) -> AttentionTrace:
    if not isinstance(trace, AttentionTrace):
        raise TypeError(f"{name} must be an AttentionTrace (see trace_attention); got {type(trace).__name__}")
    return trace


def _allowed(trace: AttentionTrace) -> np.ndarray:
    """The boolean "may attend" matrix of a trace, (n_q, n_k)."""
    if trace.mask is None:
        return np.ones(trace.weights.shape, dtype=bool)
    return np.broadcast_to(np.asarray(trace.mask, dtype=bool), trace.weights.shape)


def _heat_cells(trace: AttentionTrace) -> dict[str, list[list[Any]]]:
    """The two heatmaps of a trace: the weights of the pairs that may attend, and the hidden pairs.

    ``z``/``text``: the weight and its label to 2 decimals, ``None``/``""`` where hidden;
    ``hidden_z``/``hidden_text``: 1 and ``"hidden"`` where hidden, ``None``/``""`` elsewhere.
    """
    allowed = _allowed(trace)
    cells: dict[str, list[list[Any]]] = {"z": [], "text": [], "hidden_z": [], "hidden_text": []}
    for i in range(trace.n_q):
        row = range(trace.n_k)
        cells["z"].append([float(trace.weights[i, j]) if allowed[i, j] else None for j in row])
        cells["text"].append([f"{trace.weights[i, j]:.2f}" if allowed[i, j] else "" for j in row])
        cells["hidden_z"].append([None if allowed[i, j] else 1.0 for j in row])
        cells["hidden_text"].append(["" if allowed[i, j] else "hidden" for j in row])
    return cells


def _words(items: Sequence[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    items = list(items)
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _causal_state(trace: AttentionTrace, i: int, masked: bool) -> ExplorerState:
    """Query ``i`` of ``trace`` in words: which keys it may use, and its softmax step by step."""
    allowed = _allowed(trace)
    keys, query = trace.key_tokens, trace.tokens[i]
    seen = [j for j in range(trace.n_k) if allowed[i, j]]
    hidden = [j for j in range(trace.n_k) if not allowed[i, j]]
    w = trace.weights[i]
    weights = ", ".join(f"{keys[j]} {w[j]:.2f}" for j in seen)
    if not masked:
        summary = f"No mask. The query “{query}” uses all {trace.n_k} keys; its weights: {weights}."
    elif hidden:
        summary = (
            f"Causal mask on. The query “{query}” may use {_words([keys[j] for j in seen])} and not the "
            f"later {_words([keys[j] for j in hidden])} (weight 0); its weights: {weights}."
        )
    else:
        summary = (f"Causal mask on. The query “{query}”, the last token, may use every key, as without the "
                   f"mask; its weights: {weights}.")
    s = trace.scaled_scores[i]  # (n_k,) -inf where hidden
    top = max(float(s[j]) for j in seen)
    e = {j: math.exp(float(s[j]) - top) for j in seen}
    total = sum(e.values())
    d_k = trace.Q.shape[-1]
    scale = f"{trace.scale:.4g}"
    if math.isclose(trace.scale, scale_for(d_k)):
        scale = f"1/√{d_k} = {scale}"
    lines = [
        f"scores of “{query}”: q · k_j × {scale}: "
        + ", ".join(f"{keys[j]} {s[j]:.3g}" if allowed[i, j] else f"{keys[j]} −∞ (hidden)"
                    for j in range(trace.n_k)),
        f"exp(score − max {top:.3g}): " + ", ".join(
            f"{keys[j]} {e[j]:.3f}" if allowed[i, j] else f"{keys[j]} 0" for j in range(trace.n_k))
        + f"; sum {total:.3f}",
        "weights = exp / sum: " + ", ".join(f"{keys[j]} {w[j]:.3f}" for j in range(trace.n_k))
        + f" (sum {float(w.sum()):.3f})",
    ]
    row = DataTable(
        f"The query “{query}”{' with the causal mask' if masked else ' without a mask'}",
        ["key", "scaled score", "weight"],
        [[keys[j], f"{s[j]:.4g}" if allowed[i, j] else "−∞ (hidden)", f"{w[j]:.4f}"]
         for j in range(trace.n_k)],
    )
    matrix = DataTable(
        f"All weights{' with the causal mask' if masked else ' without a mask'} "
        "(rows: queries; columns: keys)",
        ["query", *keys],
        [[q, *(f"{trace.weights[r, j]:.2f}" if allowed[r, j] else "hidden" for j in range(trace.n_k))]
         for r, q in enumerate(trace.tokens)],
    )
    return ExplorerState(summary, lines, (row, matrix))


def causal_explorer(
    trace_full: AttentionTrace, trace_causal: AttentionTrace, *, div_id: str = "causal-explorer"
) -> StaticFigure:
    """Switch a causal mask on and off and see which keys each query may use.

    Two controls: the first switches between ``trace_full`` (no mask) and
    ``trace_causal``; the second chooses a query. The top panel is the weight
    matrix, pairs the mask hides greyed out and labelled ``hidden``, the chosen
    query's row outlined; the bottom panel is that query's weights over the
    keys, hidden keys as grey bars at 0. Each state says the query's keys and
    weights in words, shows its softmax step by step (scaled scores, their
    exponentials, the weights) and holds two tables: the query's row and the
    whole weight matrix. All ``2 × n_q`` states are computed here from the two
    traces; the browser only switches between them.

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
        chosen one visible); ``fig.data[1 + n_q]`` is the heatmap of the hidden
        pairs (grey cells labelled ``hidden``).
        ``fig.layout.updatemenus[0].buttons[m]`` (``m = 0`` off, ``1`` on)
        restyles every trace: its ``args[0]["z"][0]`` is that state's heatmap,
        ``args[0]["y"][1 + i]`` row ``i`` of its weights and
        ``args[0]["z"][1 + n_q]`` its hidden pairs.
        ``fig.layout.updatemenus[1].buttons[i]`` shows query ``i``.
        ``states[(m, i)]`` is mask ``m`` and query ``i`` in words and tables.

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
    >>> print(sf.states[(1, 1)].summary)  # doctest: +NORMALIZE_WHITESPACE
    Causal mask on. The query “cat” may use The and cat and not the later sat, on and mat
    (weight 0); its weights: The 0.82, cat 0.18.
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
    for tr in (full, causal):
        allowed = _allowed(tr)
        states.append({
            **_heat_cells(tr),
            "y": [[float(w) for w in tr.weights[i]] for i in range(n_q)],
            "bar_text": [[f"{tr.weights[i, j]:.2f}" if allowed[i, j] else "hidden" for j in range(n_k)]
                         for i in range(n_q)],
            "colours": [[_VISIBLE if allowed[i, j] else _HIDDEN for j in range(n_k)] for i in range(n_q)],
        })
    words = {(m, i): _causal_state(tr, i, masked=m == 1)
             for m, tr in enumerate((full, causal)) for i in range(n_q)}

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
            textfont={"size": 12}, hoverinfo="skip", xaxis="x2", yaxis="y2",
        ))
    # the hidden pairs: grey cells labelled in dark text, readable in the light and the dark theme
    fig.add_trace(go.Heatmap(
        z=first["hidden_z"], text=first["hidden_text"], texttemplate="%{text}",
        textfont={"size": 12, "color": TEXT}, colorscale=[[0.0, _HIDDEN_CELL], [1.0, _HIDDEN_CELL]],
        zmin=0.0, zmax=1.0, xgap=2, ygap=2, showscale=False, hoverinfo="skip", xaxis="x", yaxis="y",
        name="hidden pairs",
    ))

    none = [None] * n_q
    mask_buttons = [
        {
            "label": label,
            "method": "restyle",
            "args": [{
                # one entry per trace: the heatmap, the bars of each query, the hidden pairs
                "z": [st["z"], *none, st["hidden_z"]],
                "text": [st["text"], *st["bar_text"], st["hidden_text"]],
                "y": [None, *st["y"], None],
                "marker.color": [None, *st["colours"], None],
            }],
        }
        for label, st in zip(("off", "causal"), states, strict=True)
    ]
    query_buttons = [
        {
            "label": tok,
            "method": "update",
            "args": [{"visible": [True, *(k == i for k in range(n_q)), True]},
                     {"shapes[0].y0": i - 0.5, "shapes[0].y1": i + 0.5}],
        }
        for i, tok in enumerate(full.tokens)
    ]
    ticks = {"tickvals": list(range(n_k)), "ticktext": keys}
    fig.update_layout(
        height=40 * n_q + 360,
        margin={"l": 56, "r": 8, "t": 56, "b": 44},
        paper_bgcolor="#ffffff",
        plot_bgcolor="#ffffff",
        font={"color": TEXT, "size": 13},
        showlegend=False,
        xaxis={"domain": [0.0, 1.0], "side": "top", "title": {"text": "key"}, "fixedrange": True,
               "range": [-0.5, n_k - 0.5], "showgrid": False, "zeroline": False, **ticks},
        yaxis={"domain": [0.48, 1.0], "title": {"text": "query"}, "fixedrange": True,
               "range": [n_q - 0.5, -0.5], "showgrid": False, "zeroline": False,
               "tickvals": list(range(n_q)), "ticktext": list(full.tokens)},
        xaxis2={"domain": [0.0, 1.0], "anchor": "y2", "type": "category", "fixedrange": True,
                "title": {"text": "key"}},
        yaxis2={"domain": [0.0, 0.37], "anchor": "x2", "range": [0.0, 1.18], "fixedrange": True,
                "title": {"text": "weight"}, "gridcolor": _GRID, "tickvals": [0, 0.5, 1]},
        shapes=[{
            "type": "rect", "xref": "x", "yref": "y", "x0": -0.5, "x1": n_k - 0.5, "y0": -0.5, "y1": 0.5,
            "line": {"color": _HIGHLIGHT, "width": 3}, "fillcolor": "rgba(0,0,0,0)",
        }],
        # Plotly's own buttons, for JupyterLab (the book turns them into native buttons): above the
        # plot, which they push down (margin autoexpand).
        updatemenus=[
            {"type": "buttons", "direction": "right", "buttons": mask_buttons, "active": 0,
             "showactive": True, "x": 0.0, "y": 1.0, "xanchor": "left", "yanchor": "bottom",
             "pad": {"l": 0, "r": 0, "t": 0, "b": 96}, **_BUTTONS},
            {"type": "buttons", "direction": "right", "buttons": query_buttons, "active": 0,
             "showactive": True, "x": 0.0, "y": 1.0, "xanchor": "left", "yanchor": "bottom",
             "pad": {"l": 0, "r": 0, "t": 0, "b": 56}, **_BUTTONS},
        ],
    )
    return StaticFigure(
        fig, div_id=div_id,
        control_labels=["Mask", "Query"],
        states=words,
        caption=(
            "Switch the causal mask on and off and choose a query. Top: every query's weights, the pairs "
            "the mask hides in grey and labelled hidden, the chosen query outlined; bottom: the chosen "
            "query's weights, hidden keys at 0."
        ),
        alt=(
            f"A figure for the {n_q} tokens {', '.join(full.tokens)}, with or without a causal mask. On "
            "top, a heatmap of all attention weights; with the mask on, the cells above the diagonal are "
            "grey and labelled hidden. Below it, a bar chart of the chosen query's weights over the keys, "
            "hidden keys as grey bars of height 0."
        ),
    )


def _largest(query: str, row: np.ndarray, keys: Sequence[str]) -> str:
    """Where the largest weight of a row goes, every tied key named: "“cat” → The and sat 0.37"."""
    top = float(row.max())
    tied = [k for k, w in zip(keys, row, strict=True) if w >= top - 1e-12]
    if len(tied) == len(keys):
        return f"“{query}” → every key {top:.2f}"
    return f"“{query}” → {_words(tied)} {top:.2f}"


def _heads_state(matrix: np.ndarray, labels: Sequence[str], columns: Sequence[str], name: str,
                 summary: str, caption: str) -> ExplorerState:
    """One state of :func:`heads_explorer`: ``summary``, each row in a line, and the matrix as a table."""
    lines = [f"{name}, row “{q}”: " + ", ".join(f"{c} {v:.2f}" for c, v in zip(columns, row, strict=True))
             for q, row in zip(labels, matrix, strict=True)]
    table = DataTable(caption, ["query", *columns],
                      [[q, *(f"{v:.4f}" for v in row)] for q, row in zip(labels, matrix, strict=True)])
    return ExplorerState(summary, lines, (table,))


def heads_explorer(mh_trace: Any, tokens: Any, *, div_id: str = "heads-explorer") -> StaticFigure:
    """Choose a head and see its weights, or the heads' outputs side by side.

    One button per head (``head 0`` to ``head H-1``, numbered as
    ``mh_trace.head(h)`` numbers them) shows that head's ``n × n`` weight matrix; the last
    button, ``concat``, shows the heads' outputs concatenated, the
    ``n × (H·d_head)`` matrix the output projection receives. Each state says
    in words where each query's weight goes (or what the columns of ``concat``
    are), lists each row, and holds the matrix as a table.

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
        ``fig.layout.updatemenus[0].buttons[b]`` makes trace ``b`` visible;
        ``states[(b,)]`` says it in words and holds its matrix as a table.

    Raises
    ------
    TypeError
        ``mh_trace`` has no ``weights``/``concat`` arrays, or ``tokens`` is not a
        sequence of labels.
    ValueError
        The trace is batched, or ``tokens`` has the wrong length.

    Examples
    --------
    >>> import numpy as np
    >>> from attnlib.examples import cat_sat_on_mat
    >>> from attnlib.multihead import MultiHeadAttention
    >>> ex = cat_sat_on_mat()
    >>> mh = MultiHeadAttention.from_weights(ex.Q, ex.K, ex.V, np.eye(4, 5), n_heads=2)(np.eye(5))
    >>> sf = heads_explorer(mh, ex.tokens)
    >>> [b.label for b in sf.fig.layout.updatemenus[0].buttons]
    ['head 0', 'head 1', 'concat']
    >>> sf.states[(2,)].lines[0]
    'concat, row “The”: h0·d0 0.25, h0·d1 0.38, h1·d0 0.23, h1·d1 0.37'
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
            visible=h == 0, name=f"head {h}", hoverinfo="skip", showscale=False,
        ))
    lo, hi = float(concat.min()), float(concat.max())
    fig.add_trace(go.Heatmap(
        z=[[float(v) for v in row] for row in concat], x=columns, y=labels,
        text=[[f"{v:.2f}" for v in row] for row in concat], texttemplate="%{text}", textfont={"size": 12},
        colorscale=CMAP.capitalize(), zmin=min(0.0, lo), zmax=max(hi, 1e-12), xgap=2, ygap=2,
        visible=False, name="concat", hoverinfo="skip", showscale=False,
    ))
    xtitles = ["key"] * n_heads + ["head · coordinate"]
    buttons = [
        {
            "label": label,
            "method": "update",
            "args": [{"visible": [k == b for k in range(n_heads + 1)]}, {"xaxis.title.text": xtitles[b]}],
        }
        for b, label in enumerate([f"head {h}" for h in range(n_heads)] + ["concat"])
    ]

    words: dict[tuple[int], ExplorerState] = {}
    for h in range(n_heads):
        strongest = "; ".join(_largest(q, row, keys) for q, row in zip(labels, weights[h], strict=True))
        words[(h,)] = _heads_state(
            weights[h], labels, keys, f"head {h}",
            summary=(f"Head {h}: its {n_q} × {n_k} weights A_{h}, each row summing to 1. Each query's "
                     f"largest weight: {strongest}."),
            caption=f"Weights of head {h} (rows: queries; columns: keys)",
        )
    words[(n_heads,)] = _heads_state(
        concat, labels, columns, "concat",
        summary=(f"concat: the {n_heads} heads' outputs side by side, a {n_q} × {len(columns)} matrix, the "
                 f"input of W_O; column h·d holds coordinate d of head h's output (values from {lo:.2f} to "
                 f"{hi:.2f})."),
        caption=(f"The concatenated outputs of the {n_heads} heads "
                 "(rows: queries; columns: head · coordinate)"),
    )
    fig.update_layout(
        height=48 * n_q + 150,
        margin={"l": 56, "r": 8, "t": 64, "b": 8},
        paper_bgcolor="#ffffff",
        plot_bgcolor="#ffffff",
        font={"color": TEXT, "size": 13},
        xaxis={"title": {"text": "key"}, "side": "top", "type": "category", "fixedrange": True},
        yaxis={"title": {"text": "query"}, "autorange": "reversed", "type": "category", "fixedrange": True},
        # Plotly's own buttons, for JupyterLab (the book turns them into native buttons): above the
        # plot, which they push down (margin autoexpand).
        updatemenus=[{
            "type": "buttons", "direction": "right", "buttons": buttons, "active": 0, "showactive": True,
            "x": 0.0, "y": 1.0, "xanchor": "left", "yanchor": "bottom",
            "pad": {"l": 0, "r": 0, "t": 0, "b": 64}, **_BUTTONS,
        }],
    )
    return StaticFigure(
        fig, div_id=div_id,
        control_labels=["Show"],
        states=words,
        caption=(
            "Choose a head to see its attention weights, queries down the side and keys along the top, "
            "or concat to see the heads' outputs side by side, the matrix the output projection receives."
        ),
        alt=(
            f"A heatmap for the {n_q} tokens {', '.join(labels)}: one of the {n_heads} heads, showing its "
            f"{n_q} by {n_k} attention weights labelled to two decimals, or concat, showing the {n_q} by "
            f"{len(columns)} matrix of the heads' outputs side by side."
        ),
    )
