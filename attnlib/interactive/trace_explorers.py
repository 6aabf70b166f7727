"""Explorers of one :class:`~attnlib.trace.AttentionTrace` that work in the static HTML.

Every state is computed here, in Python, from the trace; the browser only
switches between states (native buttons and sliders in the book, Plotly's own in
JupyterLab, and hover labels). Each state also says its numbers in words and
holds them as a table, for keyboard and screen-reader users. All the arithmetic
shown is the text of :meth:`~attnlib.trace.AttentionTrace.explain`, so the figure and the
printed explanation can never disagree.

* :func:`pipeline_stepper` – choose a query, step through raw scores, scaled
  scores, weights and output, with that step's arithmetic written out.
* :func:`hover_heatmap` – the weight matrix; hovering a cell shows that
  pair's dot product term by term, its scaled score, exponential and weight;
  choosing a query writes out every cell of its row the same way.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import plotly.graph_objects as go

from attnlib.interactive._render import MONO, TEXT, DataTable, ExplorerState, StaticFigure
from attnlib.plots import CMAP, PALETTE
from attnlib.trace import AttentionTrace

__all__ = ["STEPS", "hover_heatmap", "pipeline_stepper"]

#: The steps of :func:`pipeline_stepper`: (trace attribute, label, title).
STEPS: tuple[tuple[str, str, str], ...] = (
    ("scores", "1 raw scores", "Step 1: raw scores q·k, one per key"),
    ("scaled_scores", "2 scaled", "Step 2: scaled scores q·k / √d_k"),
    ("weights", "3 weights", "Step 3: weights, a softmax of the scaled scores"),
    ("output", "4 output", "Step 4: output, the weighted sum of the value rows"),
)
# Which blocks of explain(i) each step writes out.
_STEP_BLOCKS = {"scores": ("1", "2"), "scaled_scores": ("3",), "weights": ("4", "5", "6"), "output": ("7",)}
_GRID = "#e3e3e3"
_BAR = PALETTE["blue"]
_OUT_BAR = PALETTE["green"]


def _check_trace(trace: Any) -> AttentionTrace:
    if not isinstance(trace, AttentionTrace):
        raise TypeError(f"trace must be an AttentionTrace (see trace_attention); got {type(trace).__name__}")
    return trace


def _step_lines(blocks: dict[str, list[str]], stage: str) -> list[str]:
    keys = _STEP_BLOCKS[stage]
    if stage == "weights" and "4-6" in blocks:  # every key masked: explain says so in one block
        keys = ("4-6",)
    lines: list[str] = []
    for key in keys:
        lines.extend(blocks.get(key, []))
        lines.append("")
    return lines[:-1]


def _finite(values: np.ndarray) -> list[float | None]:
    return [float(v) if math.isfinite(float(v)) else None for v in values]


def _labels_of(values: np.ndarray, decimals: int) -> list[str]:
    return ["masked" if not math.isfinite(float(v)) else f"{float(v):.{decimals}f}" for v in values]


def _row_decimals(row: np.ndarray, decimals: int) -> int:
    """``decimals``, or 4 when a row of raw scores is not exact at one decimal (as explain() prints it)."""
    finite = row[np.isfinite(row)]
    if decimals == 1 and not np.array_equal(np.round(finite, 1), finite):
        return 4
    return decimals


def _stage_labels(row: np.ndarray, stage: str) -> list[str]:
    """A row of a stage as its bars label it: raw scores to one decimal when exact, the rest to four."""
    return _labels_of(row, _row_decimals(row, 1 if stage == "scores" else 4))


def _named(names: list[str], values: list[str]) -> str:
    """``“The” 3.0, “cat” 0.0, ...``: each value after the name it belongs to."""
    return ", ".join(f"“{n}” {v}" for n, v in zip(names, values, strict=True))


def _largest(names: list[str], row: np.ndarray, labels: list[str]) -> str:
    finite = np.where(np.isfinite(row), row, -np.inf)
    if not np.isfinite(finite).any():
        return "every entry is masked"
    j = int(np.argmax(finite))
    return f"the largest, {labels[j]}, is on “{names[j]}”"


#: What each step of :data:`STEPS` is called in words, and its y-axis title.
_STEP_WORDS = {
    "scores": ("raw scores q·k", "raw score"),
    "scaled_scores": ("scaled scores q·k / √d_k", "scaled score"),
    "weights": ("weights, which add up to 1", "weight"),
    "output": ("output coordinates", "output"),
}
_TABLE_COLUMNS = {"scores": "raw score q·k", "scaled_scores": "scaled q·k / √d_k", "weights": "weight"}


def _pipeline_state(tr: AttentionTrace, blocks: dict[str, list[str]], i: int, s: int) -> ExplorerState:
    """Query ``i`` at step ``s``: the step's numbers in words, its arithmetic, and the query's table."""
    stage = STEPS[s][0]
    tok = tr.tokens[i]
    words = _STEP_WORDS[stage][0]
    if stage == "output":
        names = [f"d{c}" for c in range(tr.d_v)]
        labels = _labels_of(tr.output[i], 4)
        summary = (f"Query “{tok}”, step {s + 1} of 4, {words}: "
                   + ", ".join(f"{n} {v}" for n, v in zip(names, labels, strict=True)) + ".")
        table = DataTable(f"Output of query “{tok}”, one entry per coordinate", ["coordinate", "output"],
                          [[n, v] for n, v in zip(names, labels, strict=True)])
    else:
        names = list(tr.key_tokens)
        row = getattr(tr, stage)[i]  # (n_k,)
        labels = _stage_labels(row, stage)
        summary = (f"Query “{tok}”, step {s + 1} of 4, {words}: {_named(names, labels)}; "
                   f"{_largest(names, row, labels)}.")
        stages = [st for st, _, _ in STEPS[: s + 1]]
        columns = [_stage_labels(getattr(tr, st)[i], st) for st in stages]
        table = DataTable(
            f"Query “{tok}” over the {tr.n_k} keys, steps 1 to {s + 1}",
            ["key", *(_TABLE_COLUMNS[st] for st in stages)],
            [[n, *(col[j] for col in columns)] for j, n in enumerate(names)],
        )
    return ExplorerState(summary, lines=_step_lines(blocks, stage), tables=(table,))


def pipeline_stepper(trace: AttentionTrace, *, div_id: str = "pipeline-stepper") -> StaticFigure:
    """Step through the four steps of attention for a chosen query.

    ``n_q`` buttons choose the query; a slider chooses the step: raw scores, scaled scores, weights,
    output. The bars show that step's row for the chosen query. Under them each state says its numbers
    in words (announced to screen readers), writes out the step's arithmetic from
    :meth:`~attnlib.trace.AttentionTrace.explain`, and tabulates the query's row up to that step. All
    ``n_q × 4`` states are computed here; the browser only switches between them.

    Parameters
    ----------
    trace : AttentionTrace
        One attention call, from :func:`attnlib.trace.trace_attention`.
    div_id : str
        Fixed id of the figure's ``<div>``.

    Returns
    -------
    StaticFigure
        ``fig.data`` holds one bar trace per query (only the chosen one visible).
        ``fig.layout.updatemenus[0].buttons[i]`` selects query ``i`` and
        ``fig.layout.sliders[0].steps[s]`` sets step ``s`` of :data:`STEPS`
        for every query: its ``args[0]["y"][i]`` is row ``i`` of that stage.
        ``states[(i, s)]`` is the :class:`~attnlib.interactive._render.ExplorerState` of query ``i`` at
        step ``s``:
        its ``lines`` are that step's blocks of ``trace.explain(i)``.

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
    >>> state = sf.states[(1, 2)]  # query "cat", step 3
    >>> state.summary.split("; ")[1]
    'the largest, 0.4026, is on “The”.'
    >>> state.tables[0].columns
    ('key', 'raw score q·k', 'scaled q·k / √d_k', 'weight')
    """
    tr = _check_trace(trace)
    n_q = tr.n_q
    blocks = [tr.explain_steps(i) for i in range(n_q)]
    dims = [f"d{c}" for c in range(tr.d_v)]

    # One per step: x, y and bar labels of every query, axis titles, y range.
    stages: list[dict[str, Any]] = []
    for stage, _, _ in STEPS:
        matrix = getattr(tr, stage)  # (n_q, n_k) or (n_q, d_v)
        finite = matrix[np.isfinite(matrix)]
        lo = min(0.0, float(finite.min())) if finite.size else 0.0
        hi = max(0.0, float(finite.max())) if finite.size else 1.0
        pad = 0.15 * ((hi - lo) or 1.0)
        stages.append({
            "x": [dims if stage == "output" else list(tr.key_tokens)] * n_q,
            "y": [_finite(matrix[i]) for i in range(n_q)],
            "text": [_stage_labels(matrix[i], stage) for i in range(n_q)],
            "colour": _OUT_BAR if stage == "output" else _BAR,
            "range": [lo - (pad if lo < 0 else 0.0), hi + pad],
            "xtitle": "output coordinate" if stage == "output" else "key",
            "ytitle": _STEP_WORDS[stage][1],
        })

    first = stages[0]
    fig = go.Figure()
    for i, tok in enumerate(tr.tokens):
        fig.add_trace(go.Bar(
            x=first["x"][i], y=first["y"][i], text=first["text"][i], name=f"query {tok}",
            visible=i == 0, marker={"color": first["colour"]}, textposition="outside",
            cliponaxis=False, textfont={"color": TEXT}, hoverinfo="skip",
        ))
    token_buttons = [
        {"label": tok, "method": "restyle", "args": [{"visible": [k == i for k in range(n_q)]}]}
        for i, tok in enumerate(tr.tokens)
    ]
    steps = [
        {
            "label": label,
            "method": "update",
            "args": [{"x": st["x"], "y": st["y"], "text": st["text"], "marker.color": st["colour"]},
                     {"yaxis.range": st["range"], "xaxis.title.text": st["xtitle"],
                      "yaxis.title.text": st["ytitle"]}],
        }
        for (_, label, _), st in zip(STEPS, stages, strict=True)
    ]
    fig.update_layout(
        height=340,
        margin={"l": 56, "r": 12, "t": 28, "b": 10},
        paper_bgcolor="#ffffff",
        plot_bgcolor="#ffffff",
        font={"color": TEXT, "size": 13},
        showlegend=False,
        xaxis={"title": {"text": first["xtitle"]}, "type": "category", "fixedrange": True,
               "automargin": True},
        yaxis={"title": {"text": first["ytitle"]}, "range": first["range"], "gridcolor": _GRID,
               "zerolinecolor": "#888888", "fixedrange": True, "automargin": True},
        # Plotly's own controls, for JupyterLab; the book's HTML shows native ones instead.
        updatemenus=[{
            "type": "buttons", "direction": "right", "buttons": token_buttons, "active": 0,
            "showactive": True, "x": 0.0, "y": 1.04, "xanchor": "left", "yanchor": "bottom",
            "pad": {"l": 0, "r": 0, "t": 0, "b": 0}, "bgcolor": "#f2f2f2", "bordercolor": "#999999",
            "font": {"color": TEXT},
        }],
        sliders=[{
            "steps": steps, "active": 0, "x": 0.02, "len": 0.94, "y": -0.3, "yanchor": "top",
            "currentvalue": {"prefix": "step ", "font": {"color": TEXT}},
            "pad": {"t": 10, "b": 0}, "font": {"color": TEXT}, "bgcolor": "#f2f2f2",
            "activebgcolor": PALETTE["orange"], "bordercolor": "#999999", "tickcolor": "#999999",
        }],
    )
    states = {(i, s): _pipeline_state(tr, blocks[i], i, s) for i in range(n_q) for s in range(len(STEPS))}
    return StaticFigure(
        fig, div_id=div_id,
        control_labels=["Query", "Step"],
        states=states,
        caption=(
            "Choose a query and a step of attention: the bars show that query's row at that step, and "
            "the text under them its numbers and arithmetic."
        ),
        alt=(
            f"A bar chart for the {n_q} queries {', '.join(tr.tokens)}: for the chosen query it shows the "
            f"raw scores, scaled scores or weights over the keys, or the {tr.d_v} output coordinates; the "
            "text under it gives the same numbers and the step's arithmetic."
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


def _result(expression: str) -> str:
    """The number an arithmetic string ends in: ``"3.0 / √4 = 1.5000"`` -> ``"1.5000"``; or "masked"."""
    return "masked" if "masked" in expression else expression.rsplit(" = ", 1)[-1]


def _heatmap_state(tr: AttentionTrace, i: int, cells: list[list[str]]) -> ExplorerState:
    """Query ``i``'s row of the heatmap: its weights in words, each cell's arithmetic, and the table."""
    tok, names = tr.tokens[i], list(tr.key_tokens)
    allowed = np.ones(tr.n_k, dtype=bool) if tr.mask is None else np.asarray(tr.mask[i], dtype=bool)
    row = np.where(allowed, tr.weights[i], np.nan)  # (n_k,)
    labels = _labels_of(row, 4)
    lines: list[str] = []
    for key, (dot, scaled, exp, weight) in zip(names, cells, strict=True):
        lines += [f"{tok} → {key}", f"  q·k = {dot}", f"  scaled: {scaled}", f"  exp: {exp}",
                  f"  weight = {weight}", ""]
    return ExplorerState(
        f"Row of query “{tok}”: weights {_named(names, labels)}; {_largest(names, row, labels)}.",
        lines=lines[:-1],
        tables=(DataTable(
            f"How the weights of query “{tok}” were computed",
            ["key", "q·k", "scaled", "exp", "weight"],
            [[key, *(_result(part) for part in cell)] for key, cell in zip(names, cells, strict=True)],
        ),),
    )


def hover_heatmap(
    trace: AttentionTrace, *, query: int | str = 0, div_id: str = "weights-heatmap"
) -> StaticFigure:
    """The weight matrix as a heatmap, with each cell's arithmetic on hover and, per row, in words.

    Hovering a cell (or tapping it) shows that pair's dot product term by term, its scaled score,
    exponential and weight. The same arithmetic is there for the keyboard and for screen readers: a
    button per query outlines that row and shows, under the heatmap, its weights in words, every cell's
    arithmetic and a table of the row.

    Parameters
    ----------
    trace : AttentionTrace
        One attention call, from :func:`attnlib.trace.trace_attention`.
    query : int or str
        The query whose row is chosen at the start: an index or a token label (default: the first).
    div_id : str
        Fixed id of the figure's ``<div>``.

    Returns
    -------
    StaticFigure
        One heatmap trace: ``z`` is ``trace.weights`` (masked cells ``None``),
        ``customdata[i][j]`` holds the strings shown on hover for query ``i``
        and key ``j``: the dot product term by term, the scaling, the
        exponential and the weight, as :meth:`~attnlib.trace.AttentionTrace.explain` writes them.
        ``fig.layout.updatemenus[0].buttons[i]`` moves the outline
        (``fig.layout.shapes[0]``) to row ``i``, and ``states[(i,)]`` writes that
        row's cells out with the same strings.

    Raises
    ------
    TypeError
        ``trace`` is not an AttentionTrace, or ``query`` is neither an int nor a str.
    KeyError
        ``query`` is not one of the trace's tokens.
    IndexError
        ``query`` is out of range.

    Examples
    --------
    >>> from attnlib.examples import cat_sat_on_mat
    >>> from attnlib.trace import trace_attention
    >>> ex = cat_sat_on_mat()
    >>> sf = hover_heatmap(trace_attention(ex.Q, ex.K, ex.V, tokens=ex.tokens))
    >>> sf.fig.data[0].customdata[1][0][3]
    '4.4817 / 11.1327 = 0.4026'
    >>> sf.states[(1,)].lines[4]
    '  weight = 4.4817 / 11.1327 = 0.4026'
    """
    tr = _check_trace(trace)
    start = tr._index(query)
    custom = [[list(cell) for cell in _hover_lines(tr.explain_steps(i), tr.n_k)] for i in range(tr.n_q)]
    W = tr.weights  # (n_q, n_k)
    allowed = np.ones(W.shape, dtype=bool) if tr.mask is None else tr.mask  # (n_q, n_k)
    z = [_finite(np.where(allowed[i], W[i], np.nan)) for i in range(tr.n_q)]
    labels = [["masked" if v is None else f"{v:.2f}" for v in row] for row in z]
    fig = go.Figure(go.Heatmap(
        z=z, x=list(tr.key_tokens), y=list(tr.tokens), customdata=custom, text=labels,
        texttemplate="%{text}", textfont={"size": 13}, colorscale=CMAP.capitalize(), xgap=1, ygap=1,
        colorbar={"title": {"text": "weight", "side": "right", "font": {"color": TEXT}},
                  "tickfont": {"color": TEXT},
                  "thickness": 12, "len": 1.0},
        hovertemplate=(
            "<b>query %{y} → key %{x}</b><br>"
            "q·k = %{customdata[0]}<br>"
            "scaled: %{customdata[1]}<br>"
            "exp: %{customdata[2]}<br>"
            "weight = %{customdata[3]}<extra></extra>"
        ),
    ))
    buttons = [
        {"label": tok, "method": "relayout", "args": [{"shapes[0].y0": i - 0.5, "shapes[0].y1": i + 0.5}]}
        for i, tok in enumerate(tr.tokens)
    ]
    fig.update_layout(
        height=min(560, 52 * tr.n_q + 110),
        margin={"l": 12, "r": 12, "t": 12, "b": 12},
        paper_bgcolor="#ffffff",
        plot_bgcolor="#ffffff",
        font={"color": TEXT, "size": 13},
        xaxis={"title": {"text": "key"}, "side": "top", "type": "category", "fixedrange": True,
               "automargin": True},
        yaxis={"title": {"text": "query"}, "autorange": "reversed", "type": "category",
               "fixedrange": True, "automargin": True},
        hoverlabel={"font": {"family": MONO, "size": 12, "color": TEXT}, "bgcolor": "#ffffff",
                    "bordercolor": "#555555", "align": "left"},
        # The chosen query's row, outlined (orange reads on the viridis cells and on either theme).
        shapes=[{"type": "rect", "xref": "paper", "x0": 0.0, "x1": 1.0, "yref": "y", "y0": start - 0.5,
                 "y1": start + 0.5, "line": {"color": PALETTE["orange"], "width": 3},
                 "fillcolor": "rgba(0,0,0,0)"}],
        # Plotly's own buttons, for JupyterLab; the book's HTML shows native ones instead.
        updatemenus=[{
            "type": "buttons", "direction": "right", "buttons": buttons, "active": start, "showactive": True,
            "x": 0.0, "y": -0.02, "xanchor": "left", "yanchor": "top",
            "pad": {"l": 0, "r": 0, "t": 0, "b": 0}, "bgcolor": "#f2f2f2", "bordercolor": "#999999",
            "font": {"color": TEXT},
        }],
    )
    return StaticFigure(
        fig, div_id=div_id,
        control_labels=["Query"],
        states={(i,): _heatmap_state(tr, i, custom[i]) for i in range(tr.n_q)},
        caption=(
            "The weights of every query (rows) on every key (columns). Choose a query to outline its row "
            "and see, under the heatmap, how each of its weights was computed; hovering over a cell, or "
            "tapping it, shows the same arithmetic for that cell."
        ),
        alt=(
            f"Heatmap of the {tr.n_q} by {tr.n_k} attention weights, queries {', '.join(tr.tokens)} down "
            f"the side and keys {', '.join(tr.key_tokens)} along the top, each cell labelled with its "
            "weight to two decimals; the chosen query's row is outlined, and its weights and arithmetic "
            "are written out under the heatmap."
        ),
    )
