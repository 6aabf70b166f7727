"""Explorers for the chapter on queries, keys and values, static-HTML safe.

As in :mod:`attnlib.interactive.trace_explorers`, every state is computed here
in Python (by attnlib); the browser only switches between them with Plotly
buttons and sliders.

* :func:`qkv_stepper` – a two-token example such as "Cat sits" from its
  embeddings ``X`` and projections ``W_Q, W_K, W_V`` to its output, in five
  phases, each with its matrices as tables and its arithmetic written out.
* :func:`word_explorer` – choose a word of a sentence and see its attention
  weights over the sentence as bars, with what its query looks for.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import plotly.graph_objects as go

from attnlib.examples import Example
from attnlib.interactive._render import TEXT, DataTable, ExplorerState, StaticFigure
from attnlib.interactive.trace_explorers import _named
from attnlib.plots import PALETTE
from attnlib.trace import AttentionTrace, trace_attention

__all__ = ["PHASES", "TIE_RTOL", "qkv_phases", "qkv_stepper", "tie_groups", "word_explorer", "word_notes"]

#: The phases of :func:`qkv_stepper`: (button label, title).
PHASES: tuple[tuple[str, str], ...] = (
    ("1 inputs", "Phase 1: the embeddings X and the projections W_Q, W_K, W_V"),
    ("2 Q, K, V", "Phase 2: Q = X W_Q, K = X W_K, V = X W_V"),
    ("3 scores", "Phase 3: raw scores S = Q Kᵀ"),
    ("4 scaled", "Phase 4: scaled scores S / √d_k"),
    ("5 weights, output", "Phase 5: weights = softmax of each scaled row; output = weights · V"),
)
_GRID = "#e3e3e3"


def _num(x: float) -> str:
    """An entry as a reader writes it: ``1.0``, ``0.5``, ``1.4142``; never ``-0.0``."""
    x = float(x)
    if x == 0.0:
        return "0.0"
    if round(x, 1) == x:
        return f"{x:.1f}"
    return f"{x:.4f}"


def _vector(v: np.ndarray, fmt: Any = _num) -> str:
    return f"[{', '.join(fmt(x) for x in v)}]"


def _matrix(
    name: str, M: np.ndarray, rows: Sequence[str], cols: Sequence[str], *, computed: bool = False
) -> dict[str, Any]:
    """One matrix of a phase: its name, column labels, entries column by column (row labels first).

    Inputs print as a reader writes them (``1.0``); ``computed`` stages with four decimals.
    """
    fmt = (lambda v: f"{float(v):.4f}") if computed else _num
    header = [name, *cols]
    cells = [list(rows)] + [[fmt(M[r, c]) for r in range(M.shape[0])] for c in range(M.shape[1])]
    return {"name": name, "header": header, "cells": cells, "matrix": np.array(M, dtype=float)}


def _data_table(m: dict[str, Any]) -> DataTable:
    """A phase's matrix as a table: its name heads the row labels, one row per row of the matrix."""
    rows, cols = m["matrix"].shape
    by_row = [list(r) for r in zip(*m["cells"], strict=True)]
    return DataTable(f"{m['name']} ({rows} × {cols})", m["header"], by_row)


def _check_example(example: Any) -> Example:
    if not isinstance(example, Example):
        raise TypeError(f"example must be an attnlib.examples.Example; got {type(example).__name__}")
    missing = [n for n in ("X", "W_Q", "W_K", "W_V") if getattr(example, n) is None]
    if missing:
        raise ValueError(
            f"example {example.name!r} has no {', '.join(missing)}: qkv_stepper needs the embeddings X and "
            "the three projections (e.g. attnlib.examples.cat_sits())"
        )
    return example


def _row_times(x: np.ndarray, W: np.ndarray) -> str:
    """``1.0×[1.0, 0.0] + 0.0×[0.0, 1.0] + ...``: a row of X mixes the rows of W."""
    return " + ".join(f"{_num(a)}×[{', '.join(_num(v) for v in W[f])}]" for f, a in enumerate(x))


def qkv_phases(example: Example) -> list[dict[str, Any]]:
    """Every state of :func:`qkv_stepper`: per phase, its matrices and its arithmetic.

    Q, K and V are computed as ``X @ W``; scores, scaled scores, weights and
    output come from :func:`attnlib.trace.trace_attention` on them, and the
    arithmetic of phases 3 to 5 is the text of :meth:`~attnlib.trace.AttentionTrace.explain`.

    Parameters
    ----------
    example : Example
        With ``X``, ``W_Q``, ``W_K`` and ``W_V`` (e.g. :func:`attnlib.examples.cat_sits`).

    Returns
    -------
    list of dict, one per phase of :data:`PHASES`
        ``"title"``; ``"summary"``: the title and the phase's numbers in words;
        ``"matrices"``: list of ``{"name", "header", "cells", "matrix"}`` (at
        most four; ``header`` the name then the column labels, ``cells`` column
        by column, row labels first); ``"notes"``: two groups of lines.

    Raises
    ------
    TypeError
        ``example`` is not an Example.
    ValueError
        ``example`` has no ``X`` or no projection matrices.

    Examples
    --------
    >>> from attnlib.examples import cat_sits
    >>> phases = qkv_phases(cat_sits())
    >>> [m["name"] for m in phases[2]["matrices"]]
    ['Q', 'Kᵀ', 'S']
    >>> phases[2]["matrices"][2]["matrix"].tolist()
    [[2.0, 1.0], [1.0, 1.0]]
    """
    ex = _check_example(example)
    X, W_Q, W_K, W_V = (np.asarray(m, dtype=float) for m in (ex.X, ex.W_Q, ex.W_K, ex.W_V))
    Q, K, V = X @ W_Q, X @ W_K, X @ W_V  # (n, d_model) @ (d_model, d) -> (n, d)
    tr = trace_attention(Q, K, V, tokens=ex.tokens)
    toks = list(tr.tokens)
    feats = [f"f{c}" for c in range(X.shape[1])]
    dk = [f"d{c}" for c in range(Q.shape[1])]
    dv = [f"d{c}" for c in range(V.shape[1])]
    blocks = [tr.explain_steps(i) for i in range(tr.n_q)]

    def explain_lines(i: int, keys: Sequence[str]) -> list[str]:
        lines = [f"query {toks[i]}:"]
        for key in keys:
            lines.extend(blocks[i].get(key, [])[1:])
        return lines

    d_model, d_k = X.shape[1], Q.shape[1]
    phase1_left = [
        f"X: {tr.n_q} tokens × {d_model} features, one row per token",
        *(f"  x[{t}] = [{', '.join(_num(v) for v in X[i])}]" for i, t in enumerate(toks)),
    ]
    phase1_right = [
        f"W_Q, W_K: {d_model} × {d_k}, W_V: {d_model} × {V.shape[1]}",
        "row f = embedding feature f,",
        "column c = output coordinate c",
    ]
    phase2: list[list[str]] = [["each row of Q, K, V: the token's features mixing the rows of W"], []]
    for i, t in enumerate(toks):
        for label, W, R in (("q", W_Q, Q), ("k", W_K, K), ("v", W_V, V)):
            phase2[0].append(
                f"  {label}[{t}] = x[{t}] W_{label.upper()} = {_row_times(X[i], W)}"
                f" = [{', '.join(_num(v) for v in R[i])}]"
            )
    left_right = lambda keys: [explain_lines(0, keys), explain_lines(1, keys) if tr.n_q > 1 else []]  # noqa: E731

    def rows_in_words(M: np.ndarray, fmt: Any) -> str:
        return "; ".join(f"row {t}: {_named(toks, [fmt(v) for v in M[i]])}" for i, t in enumerate(toks))

    four = lambda v: f"{float(v):.4f}"  # noqa: E731
    summaries = [
        f"X holds the {tr.n_q} tokens {', '.join(toks)} as rows of {d_model} features; W_Q and W_K are "
        f"{d_model} × {d_k}, W_V is {d_model} × {V.shape[1]}.",
        "; ".join(f"q[{t}] = {_vector(Q[i])}, k[{t}] = {_vector(K[i])}, v[{t}] = {_vector(V[i])}"
                  for i, t in enumerate(toks)) + ".",
        f"S = Q Kᵀ, {rows_in_words(tr.scores, _num)}.",
        f"S / √{d_k}, {rows_in_words(tr.scaled_scores, four)}.",
        f"Weights, {rows_in_words(tr.weights, four)}. Output: "
        + "; ".join(f"out[{t}] = {_vector(tr.output[i], four)}" for i, t in enumerate(toks)) + ".",
    ]
    phases = [
        {"notes": [phase1_left, phase1_right], "matrices": [
            _matrix("X", X, toks, feats), _matrix("W_Q", W_Q, feats, dk),
            _matrix("W_K", W_K, feats, dk), _matrix("W_V", W_V, feats, dv)]},
        {"notes": phase2, "matrices": [
            _matrix("Q", Q, toks, dk), _matrix("K", K, toks, dk), _matrix("V", V, toks, dv)]},
        {"notes": left_right(("2",)), "matrices": [
            _matrix("Q", Q, toks, dk), _matrix("Kᵀ", K.T, dk, toks),
            _matrix("S", tr.scores, toks, toks)]},
        {"notes": left_right(("3",)), "matrices": [
            _matrix("S", tr.scores, toks, toks),
            _matrix(f"S / √{d_k}", tr.scaled_scores, toks, toks, computed=True)]},
        {"notes": left_right(("4", "5", "6", "7")), "matrices": [
            _matrix("weights", tr.weights, toks, toks, computed=True), _matrix("V", V, toks, dv),
            _matrix("output", tr.output, toks, dv, computed=True)]},
    ]
    for p, (phase, summary) in enumerate(zip(phases, summaries, strict=True)):
        phase["title"] = PHASES[p][1]
        phase["summary"] = f"{PHASES[p][1]} (phase {p + 1} of {len(PHASES)}). {summary}"
    return phases


def _phase_lines(notes: list[list[str]]) -> list[str]:
    """The two groups of lines of a phase, one under the other."""
    return notes[0] + ([""] + notes[1] if notes[1] else [])


def qkv_stepper(example: Example, *, div_id: str = "qkv-stepper") -> StaticFigure:
    """Step through attention from the embeddings and projections to the output, in five phases.

    A row of buttons chooses the phase of :data:`PHASES`: (1) ``X``, ``W_Q``, ``W_K``, ``W_V``;
    (2) ``Q, K, V = XW``; (3) the raw scores ``QKᵀ``; (4) the scaled scores; (5) the weights and the
    output. Each phase shows its matrices as HTML tables (they reflow on a phone and a screen reader
    reads them), its numbers in words (announced when the phase changes) and its arithmetic written
    out for each token. It is an explorer of HTML only, without a plot. All states come from
    :func:`qkv_phases`.

    Parameters
    ----------
    example : Example
        With ``X`` and the three projections, e.g. :func:`attnlib.examples.cat_sits`.
    div_id : str
        Fixed id of the explorer.

    Returns
    -------
    StaticFigure
        Without a figure (``fig is None``). ``states[(p,)]`` is phase ``p``: its ``tables`` are
        the phase's matrices (row labels first, entries formatted as :func:`qkv_phases` gives them),
        its ``lines`` the arithmetic, token by token, and its ``summary`` the phase's title and
        numbers in words.

    Raises
    ------
    TypeError
        ``example`` is not an Example.
    ValueError
        ``example`` has no ``X`` or projections, or ``div_id`` is not a valid id.

    Examples
    --------
    >>> from attnlib.examples import cat_sits
    >>> sf = qkv_stepper(cat_sits())
    >>> sf.fig is None, len(sf.states)
    (True, 5)
    >>> [t.caption for t in sf.states[(2,)].tables]
    ['Q (2 × 2)', 'Kᵀ (2 × 2)', 'S (2 × 2)']
    """
    phases = qkv_phases(example)
    states = {
        (p,): ExplorerState(ph["summary"], lines=_phase_lines(ph["notes"]),
                            tables=[_data_table(m) for m in ph["matrices"]])
        for p, ph in enumerate(phases)
    }
    names = "; ".join(f"phase {i + 1}: " + ", ".join(m["name"] for m in ph["matrices"])
                      for i, ph in enumerate(phases))
    return StaticFigure(
        None, div_id=div_id,
        controls=[("Phase", [label for label, _ in PHASES])],
        states=states,
        caption=(
            f"\"{example.name}\" from embeddings to output. Choose one of the five phases: the tables show "
            "that phase's matrices, the text under them its arithmetic, token by token."
        ),
        alt=(
            f"An explorer of matrix tables for the {len(example.tokens)} tokens {', '.join(example.tokens)}, "
            f"with a button per phase ({names}) and the arithmetic of each phase written out as text."
        ),
    )


def _check_trace(trace: Any) -> AttentionTrace:
    if not isinstance(trace, AttentionTrace):
        raise TypeError(f"trace must be an AttentionTrace (see trace_attention); got {type(trace).__name__}")
    return trace


#: The relative tolerance under which two weights of a row count as tied, equal up to rounding (their
#: scaled scores differ by less than about 1e-9; a one-ulp change of a score or of ``exp`` stays far below).
TIE_RTOL = 1e-9


def tie_groups(w: Any) -> list[list[int]]:
    """The indices of a row of weights, grouped by equal weight, largest weight first.

    Two weights are tied when they agree to a relative :data:`TIE_RTOL`, so
    that keys whose scores are equal in exact arithmetic stay tied after
    rounding. Each group lists its keys in key order.

    Examples
    --------
    >>> tie_groups([0.1322, 0.3888, 0.1322 * (1 + 1e-15), 0.05])
    [[1], [0, 2], [3]]
    """
    w = np.asarray(w, dtype=float)
    groups: list[list[int]] = []
    for j in (int(j) for j in np.argsort(-w, kind="stable")):
        if groups and np.isclose(w[j], w[groups[-1][0]], rtol=TIE_RTOL, atol=0.0):
            groups[-1].append(j)
        else:
            groups.append([j])
    return [sorted(g) for g in groups]


def word_notes(trace: AttentionTrace, feature_names: Sequence[str] | None = None) -> list[list[str]]:
    """Per query: what it looks for, and its largest weight with that score's terms.

    Lines for query ``i``: the nonzero features of ``Q[i]`` by name, then
    the key with the largest weight (the first of keys tied for it, the
    others named; see :func:`tie_groups`), its weight, and its score ``q·k``
    as a sum of ``wanted × offered`` over the features both have.

    Raises
    ------
    ValueError
        ``feature_names`` does not name each of the trace's ``d_k`` features.

    Examples
    --------
    >>> from attnlib.features import animal_street
    >>> f = animal_street()
    >>> tr = trace_attention(f.Q, f.K, f.V, tokens=f.tokens)
    >>> word_notes(tr, f.feature_names)[7][0]
    'it looks for: noun 2.0, animate 6.0, state 1.5'
    """
    tr = _check_trace(trace)
    names = list(feature_names) if feature_names is not None else [f"d{t}" for t in range(tr.d_k)]
    if len(names) != tr.d_k:
        raise ValueError(f"feature_names has {len(names)} names but the trace has d_k={tr.d_k}")
    out = []
    for i, tok in enumerate(tr.tokens):
        wanted = ", ".join(f"{names[t]} {_num(tr.Q[i, t])}" for t in range(tr.d_k) if tr.Q[i, t] != 0)
        j, *tied = tie_groups(tr.weights[i])[0]
        terms = [f"{_num(tr.Q[i, t])}×{_num(tr.K[j, t])} ({names[t]})"
                 for t in range(tr.d_k) if tr.Q[i, t] != 0 and tr.K[j, t] != 0]
        ties = f" (tied with {_and([tr.key_tokens[k] for k in tied])})" if tied else ""
        out.append([
            f"{tok} looks for: {wanted or 'nothing'}",
            f"largest weight: {tr.key_tokens[j]}, {tr.weights[i, j]:.4f}{ties}",
            f"  q·k[{tr.key_tokens[j]}] = {' + '.join(terms) or '0'} = {_num(tr.scores[i, j])}",
            f"  scaled: {_num(tr.scores[i, j])} / √{tr.d_k} = {tr.scaled_scores[i, j]:.4f}",
        ])
    return out


def _and(words: Sequence[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    return " and ".join(words) if len(words) < 3 else ", ".join(words[:-1]) + " and " + words[-1]


def _on(weight: float, keys: Sequence[str]) -> str:
    """``0.1322 on “The”``, or for tied keys ``0.1322 on both “The” and “street” (a tie)``."""
    quoted = [f"“{k}”" for k in keys]
    if len(quoted) == 1:
        return f"{weight:.4f} on {quoted[0]}"
    return f"{weight:.4f} on {'both' if len(quoted) == 2 else 'each of'} {_and(quoted)} (a tie)"


def _word_state(tr: AttentionTrace, i: int, lines: list[str]) -> ExplorerState:
    """Query ``i`` of the word explorer: its largest weights in words, its notes, its row as a table.

    The summary names the keys of the largest weight and, if only one key has
    it, those of the next largest; every key tied with a named one is named too.
    """
    tok, keys, w = tr.tokens[i], list(tr.key_tokens), tr.weights[i]  # w: (n_k,)
    groups = [g for g in tie_groups(w) if w[g[0]] > 0] or tie_groups(w)
    if len(groups) == 1 and len(groups[0]) == 1:  # one key, or the only key a mask lets it see
        summary = f"Query “{tok}”: all its weight, {w[groups[0][0]]:.4f}, is on “{keys[groups[0][0]]}”."
    else:
        named = groups[:1] if len(groups[0]) > 1 or len(groups) == 1 else groups[:2]
        parts = [_on(w[g[0]], [keys[j] for j in g]) for g in named]
        head = (f"its largest weight is {parts[0]}" if len(named) == 1
                else f"its largest weights are {' and '.join(parts)}")
        others = sorted(set(range(len(keys))) - {j for g in named for j in g})
        rest = float(np.sum(w[others]))
        tail = ("" if not others else f"; the other word gets {rest:.4f}" if len(others) == 1
                else f"; the other {len(others)} words share {rest:.4f}")
        summary = f"Query “{tok}”: {head}{tail}."
    table = DataTable(
        f"Weights of “{tok}” over the {tr.n_k} words",
        ["key", "weight", "score q·k", f"scaled q·k / √{tr.d_k}"],
        [[key, f"{w[j]:.4f}", _num(tr.scores[i, j]), f"{tr.scaled_scores[i, j]:.4f}"]
         for j, key in enumerate(keys)],
    )
    return ExplorerState(summary, lines=lines, tables=(table,))


def word_explorer(
    trace: AttentionTrace,
    *,
    feature_names: Sequence[str] | None = None,
    div_id: str = "word-explorer",
) -> StaticFigure:
    """Choose a word of the sentence: its attention weights over every word, as bars.

    One button per token chooses the query; the bars are that query's row of
    ``trace.weights`` (computed by :func:`attnlib.core.scaled_dot_product_attention`
    inside :func:`attnlib.trace.trace_attention`), the chosen word's own bar in
    orange. Under the bars each state names the query's largest weights, and every
    key tied with one of them (announced to screen readers), says what the query
    looks for, writes out the score of its largest weight (see :func:`word_notes`)
    and tabulates the whole row.

    Parameters
    ----------
    trace : AttentionTrace
        Self-attention over one sentence (``tokens`` label queries and keys).
    feature_names : sequence of str, length d_k, optional
        Names of the query/key dimensions, used in the text; default ``d0, d1, ...``.
    div_id : str
        Fixed id of the figure's ``<div>``.

    Returns
    -------
    StaticFigure
        ``fig.data[i]`` is the bar trace of query ``i`` (``y = trace.weights[i]``,
        ``x = 0..n_k-1`` with the tokens as tick labels); only the chosen one is
        visible. ``fig.layout.updatemenus[0].buttons[i]`` selects query ``i``, and
        ``states[(i,)]`` is its :class:`~attnlib.interactive._render.ExplorerState`: ``lines`` are
        ``word_notes(trace, feature_names)[i]``.

    Raises
    ------
    TypeError
        ``trace`` is not an AttentionTrace.
    ValueError
        ``feature_names`` has the wrong length, or ``div_id`` is not a valid id.

    Examples
    --------
    >>> from attnlib.features import animal_street
    >>> f = animal_street()
    >>> sf = word_explorer(trace_attention(f.Q, f.K, f.V, tokens=f.tokens), feature_names=f.feature_names)
    >>> len(sf.fig.data), len(sf.fig.layout.updatemenus[0].buttons)
    (11, 11)
    >>> sf.states[(7,)].summary.split("; ")  # "it"
    ['Query “it”: its largest weights are 0.6336 on “animal” and 0.0656 on “street”', \
'the other 9 words share 0.3008.']
    """
    tr = _check_trace(trace)
    notes_lines = word_notes(tr, feature_names)
    n_q, n_k = tr.n_q, tr.n_k
    x = list(range(n_k))
    start = 0
    top = float(np.max(tr.weights))
    fig = go.Figure()
    for i, tok in enumerate(tr.tokens):
        colours = [PALETTE["orange"] if (n_q == n_k and j == i) else PALETTE["blue"] for j in range(n_k)]
        fig.add_trace(go.Bar(
            x=x, y=[float(w) for w in tr.weights[i]], name=f"query {tok}", visible=i == start,
            text=[f"{float(w):.2f}" for w in tr.weights[i]], textposition="outside", cliponaxis=False,
            textfont={"color": TEXT}, marker={"color": colours},
            customdata=list(tr.key_tokens),
            hovertemplate=f"query {tok} → key %{{customdata}}<br>weight %{{y:.4f}}<extra></extra>",
        ))
    buttons = [
        {"label": tok, "method": "restyle", "args": [{"visible": [k == i for k in range(n_q)]}]}
        for i, tok in enumerate(tr.tokens)
    ]
    fig.update_layout(
        height=360,
        margin={"l": 56, "r": 12, "t": 24, "b": 10},
        paper_bgcolor="#ffffff",
        plot_bgcolor="#ffffff",
        font={"color": TEXT, "size": 13},
        showlegend=False,
        # Words side by side where they fit, turned upright on a phone so that none overlaps another.
        xaxis={"tickvals": x, "ticktext": list(tr.key_tokens), "title": {"text": "key"},
               "fixedrange": True, "range": [-0.6, n_k - 0.4], "autotickangles": [0, -90],
               "automargin": True},
        yaxis={"range": [0.0, min(1.0, top * 1.18) if math.isfinite(top) else 1.0],
               "title": {"text": "weight"}, "gridcolor": _GRID, "zerolinecolor": "#888888",
               "fixedrange": True, "automargin": True},
        # Plotly's own buttons, for JupyterLab; the book's HTML shows native ones instead.
        updatemenus=[{
            "type": "buttons", "direction": "right", "buttons": buttons, "active": start,
            "showactive": True, "x": 0.0, "y": 1.03, "xanchor": "left", "yanchor": "bottom",
            "pad": {"l": 0, "r": 0, "t": 0, "b": 0}, "bgcolor": "#f2f2f2", "bordercolor": "#999999",
            "font": {"color": TEXT, "size": 12},
        }],
    )
    return StaticFigure(
        fig, div_id=div_id,
        control_labels=["Query word"],
        states={(i,): _word_state(tr, i, lines) for i, lines in enumerate(notes_lines)},
        caption=(
            "Choose a word of the sentence to make it the query: the bars are its attention weights over "
            "every word (its own bar in orange), and the text says what its query looks for."
        ),
        alt=(
            f"A bar chart over the {n_k} words {' '.join(tr.key_tokens)}: one button per word chooses the "
            f"query, and the bars show that word's {n_k} attention weights, which add up to 1; text below "
            "names its largest weights, the features its query looks for, and the score of its largest "
            "weight."
        ),
    )
