"""Explorers of one :class:`~attnlib.trace.AttentionTrace` that work in the static HTML.

Every state is computed here, in Python, from the trace; the browser only
switches between states (Plotly buttons, sliders and hover labels). All the
arithmetic shown is the text of :meth:`AttentionTrace.explain`, so the figure
and the printed explanation can never disagree.

* :func:`pipeline_stepper` – choose a query, step through raw scores, scaled
  scores, weights and output, with that step's arithmetic written out.
* :func:`hover_heatmap` – the weight matrix; hovering a cell shows that
  pair's dot product term by term, its scaled score, exponential and weight.
"""

from __future__ import annotations

import html
import math
import re
from typing import Any

import numpy as np
import plotly.graph_objects as go

from attnlib.interactive._render import StaticFigure
from attnlib.plots import CMAP, PALETTE
from attnlib.trace import AttentionTrace

__all__ = ["STEPS", "explain_blocks", "hover_heatmap", "pipeline_stepper"]

#: The steps of :func:`pipeline_stepper`: (trace attribute, label, title).
STEPS: tuple[tuple[str, str, str], ...] = (
    ("scores", "1 raw scores", "Step 1: raw scores q·k, one per key"),
    ("scaled_scores", "2 scaled", "Step 2: scaled scores q·k / √d_k"),
    ("weights", "3 weights", "Step 3: weights, a softmax of the scaled scores"),
    ("output", "4 output", "Step 4: output, the weighted sum of the value rows"),
)
# Which blocks of explain(i) each step writes out.
_STEP_BLOCKS = {"scores": ("1", "2"), "scaled_scores": ("3",), "weights": ("4", "5", "6"), "output": ("7",)}
_HEADER = re.compile(r"^(\d+(?:-\d+)?)\. ")
_MONO = "Menlo, Consolas, 'DejaVu Sans Mono', 'Liberation Mono', monospace"
_TEXT = "#222222"  # on the figure's light card, in light and dark mode alike
_GRID = "#e3e3e3"
_BAR = PALETTE["blue"]
_OUT_BAR = PALETTE["green"]


def _check_trace(trace: Any) -> AttentionTrace:
    if not isinstance(trace, AttentionTrace):
        raise TypeError(f"trace must be an AttentionTrace (see trace_attention); got {type(trace).__name__}")
    return trace


def explain_blocks(trace: AttentionTrace, i: int) -> dict[str, list[str]]:
    """``trace.explain(i)`` split into its numbered blocks.

    Returns
    -------
    dict
        Block number (``"1"`` to ``"7"``, or ``"4-6"`` for a row whose keys
        are all masked) to the block's lines, its heading first. The lines
        before block 1 are under ``"0"``.

    Examples
    --------
    >>> from attnlib.examples import cat_sat_on_mat
    >>> from attnlib.trace import trace_attention
    >>> ex = cat_sat_on_mat()
    >>> tr = trace_attention(ex.Q, ex.K, ex.V, tokens=ex.tokens)
    >>> explain_blocks(tr, 1)["2"][1]
    '  q·k[The] = (0.0)(0.0) + (2.0)(1.0) + (0.0)(0.0) + (1.0)(1.0) = 3.0'
    """
    blocks: dict[str, list[str]] = {"0": []}
    current = "0"
    for line in _check_trace(trace).explain(i).splitlines():
        match = _HEADER.match(line)
        if match:
            current = match.group(1)
            blocks[current] = []
        if line.strip():
            blocks[current].append(line)
    return blocks


def _step_lines(blocks: dict[str, list[str]], stage: str) -> list[str]:
    keys = _STEP_BLOCKS[stage]
    if stage == "weights" and "4-6" in blocks:  # every key masked: explain says so in one block
        keys = ("4-6",)
    lines: list[str] = []
    for key in keys:
        for line in blocks.get(key, []):
            if line.startswith("  (attnlib subtracts"):  # a note on overflow, not arithmetic
                break
            lines.append(line)
        lines.append("")
    return lines[:-1]


def _as_annotation_text(lines: list[str]) -> str:
    # Non-breaking spaces keep the columns of explain() aligned (SVG collapses plain spaces).
    return "<br>".join(html.escape(line, quote=False).replace(" ", "\u00a0") for line in lines)


def _finite(values: np.ndarray) -> list[float | None]:
    return [float(v) if math.isfinite(float(v)) else None for v in values]


def _labels_of(values: np.ndarray, decimals: int) -> list[str]:
    return ["masked" if not math.isfinite(float(v)) else f"{float(v):.{decimals}f}" for v in values]


def pipeline_stepper(trace: AttentionTrace, *, div_id: str = "pipeline-stepper") -> StaticFigure:
    """Step through the four steps of attention for a chosen query.

    Five (``n_q``) buttons choose the query; a slider chooses the step: raw
    scores, scaled scores, weights, output. The bars show that step's row
    for the chosen query, and the text under them is the step's arithmetic
    from :meth:`AttentionTrace.explain`. All ``n_q × 4`` states are computed
    here; the browser only switches between them.

    Parameters
    ----------
    trace : AttentionTrace
        One attention call, from :func:`attnlib.trace.trace_attention`.
    div_id : str
        Fixed id of the figure's ``<div>``.

    Returns
    -------
    StaticFigure
        ``fig.data`` holds one bar trace per query (only the chosen one
        visible); ``fig.layout.annotations[i]`` is query ``i``'s arithmetic.
        ``fig.layout.updatemenus[0].buttons[i]`` selects query ``i`` and
        ``fig.layout.sliders[0].steps[s]`` sets step ``s`` of :data:`STEPS`
        for every query: its ``args[0]["y"][i]`` is row ``i`` of that stage.

    Raises
    ------
    TypeError
        ``trace`` is not an AttentionTrace.

    Examples
    --------
    >>> from attnlib.examples import cat_sat_on_mat
    >>> from attnlib.trace import trace_attention
    >>> ex = cat_sat_on_mat()
    >>> sf = pipeline_stepper(trace_attention(ex.Q, ex.K, ex.V, tokens=ex.tokens))
    >>> len(sf.fig.layout.updatemenus[0].buttons), len(sf.fig.layout.sliders[0].steps)
    (5, 4)
    """
    tr = _check_trace(trace)
    n_q = tr.n_q
    blocks = [explain_blocks(tr, i) for i in range(n_q)]
    dims = [f"d{c}" for c in range(tr.d_v)]

    states = []  # one per step: x, y and bar labels of every query, text of every query, y range
    for stage, _, _ in STEPS:
        matrix = getattr(tr, stage)  # (n_q, n_k) or (n_q, d_v)
        x = dims if stage == "output" else list(tr.key_tokens)
        finite = matrix[np.isfinite(matrix)]
        lo = min(0.0, float(finite.min())) if finite.size else 0.0
        hi = max(0.0, float(finite.max())) if finite.size else 1.0
        pad = 0.18 * ((hi - lo) or 1.0)
        states.append({
            "x": [x] * n_q,
            "y": [_finite(matrix[i]) for i in range(n_q)],
            "text": [_labels_of(matrix[i], 1 if stage == "scores" else 4) for i in range(n_q)],
            "colour": _OUT_BAR if stage == "output" else _BAR,
            "notes": [_as_annotation_text(_step_lines(blocks[i], stage)) for i in range(n_q)],
            "range": [lo - (pad if lo < 0 else 0.0), hi + pad],
            "xtitle": "coordinate of the output" if stage == "output" else "key",
        })

    first = states[0]
    fig = go.Figure()
    for i, tok in enumerate(tr.tokens):
        fig.add_trace(go.Bar(
            x=first["x"][i], y=first["y"][i], text=first["text"][i], name=f"query {tok}",
            visible=i == 0, marker={"color": first["colour"]}, textposition="outside",
            cliponaxis=False, textfont={"color": _TEXT}, hoverinfo="skip",
        ))

    token_buttons = [
        {
            "label": tok,
            "method": "update",
            "args": [
                {"visible": [k == i for k in range(n_q)]},
                {f"annotations[{k}].visible": k == i for k in range(n_q)},
            ],
        }
        for i, tok in enumerate(tr.tokens)
    ]
    steps = []
    for (_, label, title), st in zip(STEPS, states, strict=True):
        layout_args: dict[str, Any] = {f"annotations[{k}].text": st["notes"][k] for k in range(n_q)}
        layout_args.update(
            {"yaxis.range": st["range"], "xaxis.title.text": st["xtitle"], "title.text": title}
        )
        steps.append({
            "label": label,
            "method": "update",
            "args": [{"x": st["x"], "y": st["y"], "text": st["text"], "marker.color": st["colour"]},
                     layout_args],
        })

    notes = [
        {
            "text": first["notes"][i], "visible": i == 0, "xref": "paper", "yref": "paper",
            "x": 0.0, "y": 0.42, "xanchor": "left", "yanchor": "top", "align": "left",
            "showarrow": False, "font": {"family": _MONO, "size": 12, "color": _TEXT},
        }
        for i in range(n_q)
    ]
    notes.append({
        "text": "query:", "xref": "paper", "yref": "paper", "x": 0.0, "y": 1.1,
        "xanchor": "right", "yanchor": "middle", "showarrow": False, "font": {"color": _TEXT},
    })
    fig.update_layout(
        height=760,
        margin={"l": 60, "r": 30, "t": 110, "b": 10},
        paper_bgcolor="#ffffff",
        plot_bgcolor="#ffffff",
        font={"color": _TEXT, "size": 13},
        title={"text": STEPS[0][2], "x": 0.0, "xanchor": "left", "y": 0.985, "yanchor": "top"},
        showlegend=False,
        xaxis={"title": {"text": first["xtitle"]}, "type": "category", "fixedrange": True},
        yaxis={"domain": [0.62, 1.0], "range": first["range"], "gridcolor": _GRID,
               "zerolinecolor": "#888888", "fixedrange": True},
        annotations=notes,
        updatemenus=[{
            "type": "buttons", "direction": "right", "buttons": token_buttons, "active": 0,
            "showactive": True, "x": 0.01, "y": 1.1, "xanchor": "left", "yanchor": "middle",
            "pad": {"l": 4, "r": 4, "t": 0, "b": 0}, "bgcolor": "#f2f2f2", "bordercolor": "#999999",
            "font": {"color": _TEXT},
        }],
        sliders=[{
            "steps": steps, "active": 0, "x": 0.03, "len": 0.92, "y": 0.565, "yanchor": "top",
            "currentvalue": {"prefix": "step ", "font": {"color": _TEXT}},
            "pad": {"t": 10, "b": 0}, "font": {"color": _TEXT}, "bgcolor": "#f2f2f2",
            "activebgcolor": PALETTE["orange"], "bordercolor": "#999999", "tickcolor": "#999999",
        }],
    )
    return StaticFigure(
        fig, div_id=div_id,
        caption=(
            "Choose a query with the buttons and move the slider through the four steps of attention: "
            "the bars show that query's row at the current step, the text under them the arithmetic."
        ),
        alt=(
            f"An interactive bar chart for the {n_q} queries {', '.join(tr.tokens)}: for the chosen query "
            f"it shows the raw scores, scaled scores or weights over the keys, or the {tr.d_v} output "
            "coordinates, with the arithmetic of that step written out below as text."
        ),
    )


def _hover_lines(blocks: dict[str, list[str]], n_k: int) -> list[tuple[str, str, str, str]]:
    """Per key: the dot product term by term, the scaling, the exponential, the weight."""

    def rhs(lines: list[str]) -> list[str]:
        return [line.split(" = ", 1)[1] if " = " in line else line.strip() for line in lines]

    dots = rhs(blocks["2"][1 : 1 + n_k])
    scaled = rhs(blocks["3"][1 : 1 + n_k])
    if "6" in blocks:
        exps = rhs([line for line in blocks["4"] if line.startswith("  exp(")])
        weights = rhs(blocks["6"][1 : 1 + n_k])
    else:  # every key masked
        exps = ["0 (masked)"] * n_k
        weights = ["0 (every key is masked)"] * n_k
    return list(zip(dots, scaled, exps, weights, strict=True))


def hover_heatmap(trace: AttentionTrace, *, div_id: str = "weights-heatmap") -> StaticFigure:
    """The weight matrix as a heatmap; hovering a cell shows how its weight was computed.

    Parameters
    ----------
    trace : AttentionTrace
        One attention call, from :func:`attnlib.trace.trace_attention`.
    div_id : str
        Fixed id of the figure's ``<div>``.

    Returns
    -------
    StaticFigure
        One heatmap trace: ``z`` is ``trace.weights`` (masked cells ``None``),
        ``customdata[i][j]`` holds the strings shown on hover for query ``i``
        and key ``j``: the dot product term by term, the scaling, the
        exponential and the weight, as :meth:`AttentionTrace.explain` writes them.

    Raises
    ------
    TypeError
        ``trace`` is not an AttentionTrace.

    Examples
    --------
    >>> from attnlib.examples import cat_sat_on_mat
    >>> from attnlib.trace import trace_attention
    >>> ex = cat_sat_on_mat()
    >>> sf = hover_heatmap(trace_attention(ex.Q, ex.K, ex.V, tokens=ex.tokens))
    >>> sf.fig.data[0].customdata[1][0][3]
    '4.4817 / 11.1327 = 0.4026'
    """
    tr = _check_trace(trace)
    custom = [[list(cell) for cell in _hover_lines(explain_blocks(tr, i), tr.n_k)] for i in range(tr.n_q)]
    W = tr.weights  # (n_q, n_k)
    allowed = np.ones(W.shape, dtype=bool) if tr.mask is None else tr.mask  # (n_q, n_k)
    z = [_finite(np.where(allowed[i], W[i], np.nan)) for i in range(tr.n_q)]
    labels = [["masked" if v is None else f"{v:.2f}" for v in row] for row in z]
    fig = go.Figure(go.Heatmap(
        z=z, x=list(tr.key_tokens), y=list(tr.tokens), customdata=custom, text=labels,
        texttemplate="%{text}", textfont={"size": 13}, colorscale=CMAP.capitalize(), xgap=1, ygap=1,
        colorbar={"title": {"text": "weight", "font": {"color": _TEXT}}, "tickfont": {"color": _TEXT},
                  "thickness": 14},
        hovertemplate=(
            "<b>query %{y} → key %{x}</b><br>"
            "q·k = %{customdata[0]}<br>"
            "scaled: %{customdata[1]}<br>"
            "exp: %{customdata[2]}<br>"
            "weight = %{customdata[3]}<extra></extra>"
        ),
    ))
    side = 64 * max(tr.n_q, tr.n_k)
    fig.update_layout(
        height=side + 150,
        width=side + 260,
        margin={"l": 80, "r": 20, "t": 120, "b": 20},
        paper_bgcolor="#ffffff",
        plot_bgcolor="#ffffff",
        font={"color": _TEXT, "size": 13},
        title={"text": "weights A: hover over a cell to see its arithmetic", "x": 0.0, "xanchor": "left",
               "y": 0.97, "yanchor": "top"},
        xaxis={"title": {"text": "key"}, "side": "top", "type": "category", "fixedrange": True},
        yaxis={"title": {"text": "query"}, "autorange": "reversed", "type": "category",
               "fixedrange": True, "scaleanchor": "x"},
        hoverlabel={"font": {"family": _MONO, "size": 12, "color": _TEXT}, "bgcolor": "#ffffff",
                    "bordercolor": "#555555", "align": "left"},
    )
    return StaticFigure(
        fig, div_id=div_id,
        caption=(
            "The weights of every query (rows) on every key (columns). Hover over a cell, or tap it, to see "
            "its dot product term by term, the scaled score, its exponential and the weight."
        ),
        alt=(
            f"Heatmap of the {tr.n_q} by {tr.n_k} attention weights, queries {', '.join(tr.tokens)} down "
            f"the side and keys {', '.join(tr.key_tokens)} along the top, each cell labelled with its "
            "weight to two decimals; the same numbers are printed as a table above."
        ),
    )
