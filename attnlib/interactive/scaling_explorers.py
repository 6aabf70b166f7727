"""Explorers for the chapter "Why divide by √d_k", static-HTML safe.

As in :mod:`attnlib.interactive.trace_explorers`, every state is computed here
in Python (by attnlib), with its numbers in words and tables for readers who do
not see the plot; the browser only switches between the states (native range
inputs in the book, Plotly's sliders in JupyterLab). No attention arithmetic
happens in JavaScript.

* :func:`scaling_explorer` – one query against a few keys; a slider for
  ``d_k`` and a slider for the scale, from raw scores (scale 1) to
  ``1/√d_k``. Bars of the weights; the state says their maximum and entropy.
* :func:`variance_explorer` – histograms of ``q · k`` and of ``q · k / √d_k``
  for random vectors as ``d_k`` grows; the state says the sample and theoretical
  variances.
"""

from __future__ import annotations

import itertools
import math
import numbers
from collections.abc import Sequence
from typing import Any

import numpy as np
import plotly.graph_objects as go

from attnlib import _validation as _v
from attnlib import stats
from attnlib.core import scale_for, scaled_dot_product_attention
from attnlib.interactive._render import TEXT, DataTable, ExplorerState, StaticFigure
from attnlib.interactive.live import scaling_draws
from attnlib.plots import PALETTE

__all__ = [
    "FACTORS",
    "HIST_BINS",
    "HIST_SPAN",
    "SCALING_D_KS",
    "VARIANCE_D_KS",
    "histogram_edges",
    "scaling_explorer",
    "variance_explorer",
    "variance_samples",
]

#: Default ``d_k`` of :func:`scaling_explorer`: the powers of 2 from 1 to 1024.
SCALING_D_KS: tuple[int, ...] = tuple(2**p for p in range(11))
#: Default exponents ``τ`` of the scale ``d_k^(−τ/2)`` (``scale_for(d_k, τ / 2)``): 0 is raw scores, 1 is
#: ``1/√d_k``.
FACTORS: tuple[float, ...] = (0.0, 0.25, 0.5, 0.75, 1.0)
#: Default ``d_k`` of :func:`variance_explorer`.
VARIANCE_D_KS: tuple[int, ...] = (1, 4, 16, 64, 256, 1024)
#: Number of histogram bins per panel and state.
HIST_BINS = 60
#: The bins cover ``±HIST_SPAN`` standard deviations: ``±HIST_SPAN·√d_k`` for ``q·k``.
HIST_SPAN = 5.0

_MAX_D_K = 1024  # the length of the draws of attnlib.interactive.live.scaling_draws
_GRID = "#e3e3e3"
_BAR = PALETTE["blue"]
_PEAK = PALETTE["vermillion"]
_RAW = PALETTE["vermillion"]
_SCALED = PALETTE["blue"]
# Plotly's own sliders exist only in JupyterLab and VS Code (Plotly's mimetype), on a light page.
_SLIDER_STYLE: dict[str, Any] = {
    "font": {"color": TEXT}, "bgcolor": "#f2f2f2", "activebgcolor": PALETTE["orange"],
    "bordercolor": "#999999", "tickcolor": "#999999",
}


# --------------------------------------------------------------------------- checks
def _check_d_ks(d_ks: Any) -> tuple[int, ...]:
    if isinstance(d_ks, (str, bytes)) or not isinstance(d_ks, Sequence):
        raise TypeError(f"d_ks must be a sequence of integers; got {type(d_ks).__name__} {d_ks!r}")
    out = tuple(_v.check_positive_int(d, "each d_k") for d in d_ks)
    if len(out) < 2:
        raise ValueError(f"d_ks must hold at least 2 values for a slider; got {out}")
    if any(b <= a for a, b in itertools.pairwise(out)):
        raise ValueError(f"d_ks must be strictly increasing; got {out}")
    if out[-1] > _MAX_D_K:
        raise ValueError(f"d_ks must not exceed {_MAX_D_K}; got {out[-1]}")
    return out


def _check_factors(factors: Any) -> tuple[float, ...]:
    if isinstance(factors, (str, bytes)) or not isinstance(factors, Sequence):
        raise TypeError(f"factors must be a sequence of numbers in [0, 1]; got {type(factors).__name__}")
    out = []
    for t in factors:
        if isinstance(t, (bool, np.bool_)) or not isinstance(t, numbers.Real):
            raise TypeError(f"each factor must be a real number; got {type(t).__name__} {t!r}")
        t = float(t)
        if not 0.0 <= t <= 1.0:  # also rejects NaN
            raise ValueError(f"each factor τ must lie in [0, 1] (scale d_k^(−τ/2)); got {t}")
        out.append(t)
    if len(out) < 2:
        raise ValueError(f"factors must hold at least 2 values for a slider; got {tuple(out)}")
    if any(b <= a for a, b in itertools.pairwise(out)):
        raise ValueError(f"factors must be strictly increasing; got {tuple(out)}")
    return tuple(out)


def _t_label(t: float) -> str:
    if t == 0.0:
        return "0 raw"
    if t == 1.0:
        return "1 (÷√d_k)"
    return f"{t:g}"


def _scale_text(d_k: int, t: float) -> str:
    if t == 0.0:
        return "scale 1 (raw scores)"
    value = d_k ** (-t / 2)
    if t == 1.0:
        return f"scale 1/√{d_k} = {value:.4g}"
    return f"scale {d_k}^(−{t:g}/2) = {value:.4g}"


# --------------------------------------------------------------------------- scaling explorer
def _scaling_state(
    d_k: int, t: float, q: np.ndarray, K: np.ndarray, keys: Sequence[str]
) -> tuple[dict[str, Any], ExplorerState]:
    """One state of :func:`scaling_explorer`: the plotted bars and the state in words and numbers."""
    n_keys = len(keys)
    scale = scale_for(d_k, t / 2)  # d_k^(-t/2)
    _, W = scaled_dot_product_attention(q, K, np.eye(n_keys), scale=scale, return_weights=True)
    w = W[0]  # (n_keys,)
    scores = (q @ K.T)[0]  # (n_keys,) raw dot products
    factor = d_k ** (-t / 2)
    seen = scores * factor  # (n_keys,) what the softmax sees (attnlib scales q first: last-bit equal)
    top, ent = float(stats.max_weight(w)), float(stats.entropy(w))
    peak = int(np.argmax(w))
    spread = float(np.std(seen))
    bars = {
        "y": [float(v) for v in w],
        "text": [f"{v:.2f}" for v in w],
        "colour": [_PEAK if j == peak else _BAR for j in range(n_keys)],
    }
    summary = (
        f"d_k = {d_k}, {_scale_text(d_k, t)}: the largest weight is {top:.3f}, on key "
        f"{keys[peak]}, and the entropy is {ent:.3f} nats (uniform over {n_keys} keys: "
        f"ln {n_keys} = {math.log(n_keys):.3f}; all weight on one key: 0)."
    )
    lines = (
        f"scores q · k_j, a sum of {d_k} products each: spread (std) {float(np.std(scores)):.3g}",
        f"× {_scale_text(d_k, t)}: spread {spread:.3g}",
        "weights = softmax(scaled scores): "
        + ", ".join(f"{k} {v:.3f}" for k, v in zip(keys, w, strict=True)),
        f"max weight {top:.3f} (key {keys[peak]}) · entropy −Σ w ln w = {ent:.3f} nats",
    )
    table = DataTable(
        f"d_k = {d_k}, {_scale_text(d_k, t)}: the weights of one query over {n_keys} keys",
        ["key", "score q · k", "scaled score", "weight"],
        [[k, f"{s:.4g}", f"{x:.4g}", f"{v:.4f}"] for k, s, x, v in zip(keys, scores, seen, w, strict=True)],
    )
    return bars, ExplorerState(summary, lines, (table,))


def scaling_explorer(
    *,
    n_keys: int = 8,
    seed: int = 0,
    d_ks: Sequence[int] = SCALING_D_KS,
    factors: Sequence[float] = FACTORS,
    div_id: str = "scaling-explorer",
) -> StaticFigure:
    """One query's weights over ``n_keys`` keys as ``d_k`` grows, scaled or not.

    The query and keys are the standard-normal draws of
    :func:`attnlib.interactive.live.scaling_draws` (``seed``): for each ``d_k``
    the first ``d_k`` coordinates, so the row changes smoothly as ``d_k``
    grows. For each ``d_k`` and each exponent ``τ`` the weights are
    ``scaled_dot_product_attention(q, K, V, scale=scale_for(d_k, τ / 2))``: scale
    ``d_k^(−τ/2)``, from raw scores (``τ = 0``) to ``1/√d_k`` (``τ = 1``).
    Each state says its :func:`~attnlib.stats.max_weight` and
    :func:`~attnlib.stats.entropy` in words, shows the arithmetic line by line
    and holds a table of the scores and weights. All
    ``len(d_ks) × len(factors)`` states are computed here; the browser only
    switches between them.

    Parameters
    ----------
    n_keys : int
        Number of keys, at least 2.
    seed : int
        Seed of the draws.
    d_ks : sequence of int
        Strictly increasing, from 1 to 1024, at least 2 values.
    factors : sequence of float
        Exponents ``τ``, strictly increasing in ``[0, 1]``, at least 2 values.
    div_id : str
        Fixed id of the figure's ``<div>``.

    Returns
    -------
    StaticFigure
        Two controls, ``d_k`` then ``τ``. ``fig.data[k]`` is the bar trace of
        ``d_ks[k]`` (only the chosen one visible). ``fig.layout.sliders[0]``
        chooses ``d_k`` (visibility); ``fig.layout.sliders[1].steps[j]`` sets
        factor ``factors[j]`` for every ``d_k``: ``args[0]["y"][k]`` are the
        weights at ``d_ks[k]``. ``states[(k, j)]`` is the state at
        ``d_ks[k]`` and ``factors[j]``: its summary, its arithmetic, and a
        table of each key's score, scaled score and weight.

    Raises
    ------
    TypeError
        Non-integer ``n_keys``, ``seed`` or ``d_k``, non-real factors,
        ``d_ks`` or ``factors`` not sequences.
    ValueError
        ``n_keys`` below 2, ``d_ks`` or ``factors`` out of range, not strictly
        increasing or shorter than 2, a bad ``div_id``.

    Examples
    --------
    >>> sf = scaling_explorer()
    >>> len(sf.fig.data), len(sf.fig.layout.sliders[1].steps), len(sf.states)
    (11, 5, 55)
    >>> raw, scaled = (sf.fig.layout.sliders[1].steps[j].args[0]["y"][9] for j in (0, 4))
    >>> max(raw) > max(scaled)  # d_k = 512: unscaled scores saturate the softmax
    True
    >>> sf.states[(9, 0)].summary[:46]
    'd_k = 512, scale 1 (raw scores): the largest w'
    """
    n_keys = _v.check_positive_int(n_keys, "n_keys")
    if n_keys < 2:
        raise ValueError(f"n_keys must be at least 2 (one key always gets weight 1); got {n_keys}")
    seed = _v.check_int(seed, "seed")
    d_ks = _check_d_ks(d_ks)
    factors = _check_factors(factors)
    q_all, K_all = scaling_draws(n_keys, seed)  # (1024,), (n_keys, 1024)
    keys = [f"k{j}" for j in range(n_keys)]

    # bars[j][k], words[(k, j)]: factor j, d_k index k
    bars: list[list[dict[str, Any]]] = [[] for _ in factors]
    words: dict[tuple[int, int], ExplorerState] = {}
    for j, t in enumerate(factors):
        for k, d_k in enumerate(d_ks):
            bar, state = _scaling_state(d_k, t, q_all[None, :d_k], K_all[:, :d_k], keys)  # (1, d_k), (n, d_k)
            bars[j].append(bar)
            words[(k, j)] = state

    k0 = d_ks.index(64) if 64 in d_ks else len(d_ks) // 2
    j0 = len(factors) - 1
    start = bars[j0]
    fig = go.Figure()
    for k, d_k in enumerate(d_ks):
        fig.add_trace(go.Bar(
            x=keys, y=start[k]["y"], text=start[k]["text"], name=f"d_k = {d_k}", visible=k == k0,
            marker={"color": start[k]["colour"]}, textposition="outside", cliponaxis=False,
            textfont={"size": 12}, hovertemplate="key %{x}: weight %{y:.4f}<extra></extra>",
        ))
    d_k_steps = [
        {"label": str(d_k), "method": "restyle", "args": [{"visible": [i == k for i in range(len(d_ks))]}]}
        for k, d_k in enumerate(d_ks)
    ]
    factor_steps = [
        {
            "label": _t_label(t), "method": "restyle",
            "args": [{"y": [b["y"] for b in row], "text": [b["text"] for b in row],
                      "marker.color": [b["colour"] for b in row]}],
        }
        for t, row in zip(factors, bars, strict=True)
    ]
    fig.update_layout(
        height=380,
        margin={"l": 52, "r": 8, "t": 16, "b": 48},
        paper_bgcolor="#ffffff",
        plot_bgcolor="#ffffff",
        font={"color": TEXT, "size": 13},
        showlegend=False,
        xaxis={"title": {"text": "key (largest weight in vermillion)"}, "type": "category",
               "fixedrange": True},
        yaxis={"range": [0.0, 1.12], "title": {"text": "weight"}, "tickvals": [0, 0.25, 0.5, 0.75, 1],
               "gridcolor": _GRID, "zerolinecolor": "#888888", "fixedrange": True},
        # Plotly's own sliders, for JupyterLab (the book turns them into native range inputs): under the
        # plot, which they push up (margin autoexpand).
        sliders=[
            {"steps": d_k_steps, "active": k0, "x": 0.04, "len": 0.92, "y": -0.2, "yanchor": "top",
             "currentvalue": {"prefix": "d_k = "}, "pad": {"t": 0, "b": 0}, **_SLIDER_STYLE},
            {"steps": factor_steps, "active": j0, "x": 0.04, "len": 0.92, "y": -0.2, "yanchor": "top",
             "currentvalue": {"prefix": "τ = "}, "pad": {"t": 90, "b": 0}, **_SLIDER_STYLE},
        ],
    )
    return StaticFigure(
        fig, div_id=div_id,
        control_labels=["d_k", "τ"],
        states=words,
        caption=(
            "Choose d_k to widen the query and the keys, and τ to go from raw scores (τ = 0) to scores "
            "divided by √d_k (τ = 1). Without the division the weights pile onto one key as d_k grows: "
            "the largest weight nears 1 and the entropy 0."
        ),
        alt=(
            f"A bar chart of the attention weights of one random query over {n_keys} random keys, for d_k "
            f"from {d_ks[0]} to {d_ks[-1]} and scale d_k to the power −τ/2 for τ from {factors[0]:g} to "
            f"{factors[-1]:g}; the largest weight is in vermillion. Unscaled, the weights concentrate on "
            "one key as d_k grows; scaled by 1/√d_k they stay spread out."
        ),
    )


# --------------------------------------------------------------------------- variance explorer
def variance_samples(d_ks: Sequence[int], n_samples: int, seed: int) -> dict[int, np.ndarray]:
    """The samples of :func:`variance_explorer`: ``q · k`` for each ``d_k``, from one generator.

    ``rng = np.random.default_rng(seed)`` is passed to
    :func:`attnlib.stats.dot_product_samples` for each ``d_k`` in order.

    Examples
    --------
    >>> s = variance_samples((1, 64), 1000, 0)
    >>> sorted(s), s[64].shape
    ([1, 64], (1000,))
    """
    rng = np.random.default_rng(seed)
    return {d_k: stats.dot_product_samples(d_k, n_samples, rng) for d_k in d_ks}


def histogram_edges(d_k: int, *, scaled: bool) -> np.ndarray:
    """The :data:`HIST_BINS` + 1 bin edges: ``±HIST_SPAN`` standard deviations of the panel.

    The raw panel's bins grow with ``√d_k`` (its x axis stays fixed, so the
    histogram widens); the scaled panel's bins are the same for every ``d_k``.

    Examples
    --------
    >>> histogram_edges(16, scaled=False)[[0, -1]], histogram_edges(16, scaled=True)[[0, -1]]
    (array([-20.,  20.]), array([-5.,  5.]))
    """
    half = HIST_SPAN if scaled else HIST_SPAN * math.sqrt(d_k)
    return np.linspace(-half, half, HIST_BINS + 1)


def _ticks(half: float) -> list[float]:
    """Symmetric ticks of an axis ``±half``: a 1-2-5 step, none in its outer fifth.

    The outer fifth stays free so that the leftmost x label never meets the y axis's labels at the
    corner, even at phone width.
    """
    raw = half * 0.8 / 3  # two or three ticks on each side of 0
    step = min(m * 10 ** math.floor(math.log10(raw)) for m in (1, 2, 5, 10)
               if m * 10 ** math.floor(math.log10(raw)) >= raw)
    n = int(half * 0.8 // step)
    return [float(i * step) for i in range(-n, n + 1)]


def _g3(x: float) -> str:
    """``x`` to 3 significant digits, without an exponent: 0.996, 16.2, 255, 1,040."""
    rounded = float(f"{x:.3g}")
    return f"{rounded:,.0f}" if abs(rounded) >= 1000 else f"{x:.3g}"


def _ci(est: stats.VarianceEstimate) -> str:
    return f"{_g3(est.estimate)} (95% CI {_g3(est.low)} to {_g3(est.high)})"


def _variance_state(d_k: int, n_samples: int, panels: Sequence[dict[str, Any]]) -> ExplorerState:
    """One state of :func:`variance_explorer` in words and numbers."""
    raw, scaled = panels
    root = math.sqrt(d_k)
    root_text = f"√{d_k} = {root:.4g}"
    outside = raw["outside"]
    summary = (
        f"d_k = {d_k}: q · k has sample variance {_ci(raw['est'])}, theory d_k = {d_k}; divided by "
        f"{root_text} it has sample variance {_ci(scaled['est'])}, theory 1."
    )
    lines = [
        f"{n_samples:,} samples of q · k = Σ q_t k_t, a sum of {d_k} products of standard-normal numbers",
        f"Var(q · k): sample {_ci(raw['est'])}; theory d_k = {d_k}",
        f"Var(q · k / √d_k) = Var(q · k) / {d_k}: sample {_ci(scaled['est'])}; theory 1",
        f"bins: {HIST_BINS} over ±{HIST_SPAN:g} standard deviations, width {raw['width']:.4g} for q · k "
        f"and {scaled['width']:.4g} for q · k / √d_k"
        + (f"; {outside} samples beyond them are not drawn" if outside else ""),
    ]
    stats_table = DataTable(
        f"Sample variances at d_k = {d_k} ({n_samples:,} samples)",
        ["quantity", "sample variance", "95% CI low", "95% CI high", "theory"],
        [[name, f"{p['est'].estimate:.4g}", f"{p['est'].low:.4g}", f"{p['est'].high:.4g}", theory]
         for name, p, theory in (("q · k", raw, str(d_k)), ("q · k / √d_k", scaled, "1"))],
    )
    counts_table = DataTable(
        f"Samples per bin at d_k = {d_k} (the two histograms: the same samples, the same counts)",
        ["bin of q · k", "bin of q · k / √d_k", "samples"],
        [[f"{a:.4g} to {b:.4g}", f"{c:.4g} to {d:.4g}", str(n)]
         for a, b, c, d, n in zip(raw["edges"][:-1], raw["edges"][1:], scaled["edges"][:-1],
                                  scaled["edges"][1:], raw["y"], strict=True)],
    )
    return ExplorerState(summary, lines, (stats_table, counts_table))


def variance_explorer(
    *,
    n_samples: int = 20_000,
    seed: int = 0,
    d_ks: Sequence[int] = VARIANCE_D_KS,
    div_id: str = "variance-explorer",
) -> StaticFigure:
    """Histograms of ``q · k`` and ``q · k / √d_k`` for random vectors, with a slider for ``d_k``.

    For each ``d_k``, ``n_samples`` dot products of standard-normal vectors
    (:func:`variance_samples`, i.e. :func:`attnlib.stats.dot_product_samples`)
    are binned in Python with ``np.histogram`` on :func:`histogram_edges`;
    only the counts reach the page. The two histograms are stacked, ``q · k``
    on top. Each state states the sample variances
    (:func:`attnlib.stats.variance_with_ci`) and the theory in words (``d_k``
    for ``q · k``, 1 for ``q · k / √d_k``) and holds the variances and the
    counts per bin as tables.

    Parameters
    ----------
    n_samples : int
        Dot products per ``d_k``, at least 2.
    seed : int
        Seed of the one generator used for every ``d_k``.
    d_ks : sequence of int
        Strictly increasing, from 1 to 1024, at least 2 values.
    div_id : str
        Fixed id of the figure's ``<div>``.

    Returns
    -------
    StaticFigure
        One control, ``d_k``. ``fig.data[0]`` is the histogram of ``q · k``
        (top), ``fig.data[1]`` that of ``q · k / √d_k`` (bottom), as bars at
        the bin centres. ``fig.layout.sliders[0].steps[k]`` shows ``d_ks[k]``:
        its ``args[0]["y"]`` are the two panels' counts, ``args[0]["x"]`` the
        bin centres, ``args[1]["yaxis.range"]`` the y range of both panels.
        ``states[(k,)]`` says the variances of ``d_ks[k]`` in words and holds
        two tables: the variances, and the samples per bin.

    Raises
    ------
    TypeError
        Non-integer ``n_samples``, ``seed`` or ``d_k``; ``d_ks`` not a sequence.
    ValueError
        ``n_samples`` below 2, ``d_ks`` out of range, not strictly increasing
        or shorter than 2, a bad ``div_id``.

    Examples
    --------
    >>> sf = variance_explorer(n_samples=2_000)
    >>> [s.label for s in sf.fig.layout.sliders[0].steps]
    ['1', '4', '16', '64', '256', '1024']
    >>> sum(sf.fig.data[1].y) <= 2_000
    True
    >>> sf.states[(5,)].summary.startswith("d_k = 1024: q · k has sample variance")
    True
    """
    n_samples = _v.check_positive_int(n_samples, "n_samples")
    if n_samples < 2:
        raise ValueError(f"n_samples must be at least 2 for a sample variance; got {n_samples}")
    seed = _v.check_int(seed, "seed")
    d_ks = _check_d_ks(d_ks)
    samples = variance_samples(d_ks, n_samples, seed)

    states = []
    words: dict[tuple[int], ExplorerState] = {}
    for k, d_k in enumerate(d_ks):
        raw = samples[d_k]  # (n_samples,)
        scaled = raw * scale_for(d_k)  # (n_samples,)
        panels: list[dict[str, Any]] = []
        for values, is_scaled in ((raw, False), (scaled, True)):
            edges = histogram_edges(d_k, scaled=is_scaled)  # (HIST_BINS + 1,)
            counts, _ = np.histogram(values, bins=edges)  # (HIST_BINS,)
            panels.append({
                "edges": edges,
                "x": [float(c) for c in (edges[:-1] + edges[1:]) / 2],
                "y": [int(c) for c in counts],
                "width": float(edges[1] - edges[0]),
                "outside": int(n_samples - counts.sum()),
                "est": stats.variance_with_ci(values),
            })
        states.append({
            "panels": panels,
            "y_range": [0, 1.1 * max(max(p["y"]) for p in panels)],  # one range for both panels
        })
        words[(k,)] = _variance_state(d_k, n_samples, panels)

    k0 = 0
    first = states[k0]["panels"]
    raw_max = HIST_SPAN * math.sqrt(d_ks[-1])
    fig = go.Figure()
    for p, colour, axes, name in ((first[0], _RAW, ("x", "y"), "q · k"),
                                  (first[1], _SCALED, ("x2", "y2"), "q · k / √d_k")):
        fig.add_trace(go.Bar(
            x=p["x"], y=p["y"], width=p["width"], name=name, xaxis=axes[0], yaxis=axes[1],
            marker={"color": colour, "line": {"width": 0}},
            hovertemplate=f"{name} ≈ %{{x:.3g}}: %{{y}} samples<extra></extra>",
        ))
    steps = [
        {
            "label": str(d_k), "method": "update",
            "args": [
                {"x": [p["x"] for p in st["panels"]], "y": [p["y"] for p in st["panels"]],
                 "width": [p["width"] for p in st["panels"]]},
                {"yaxis.range": st["y_range"], "yaxis2.range": st["y_range"]},
            ],
        }
        for d_k, st in zip(d_ks, states, strict=True)
    ]
    axis = {"gridcolor": _GRID, "zerolinecolor": "#888888", "fixedrange": True}
    fig.update_layout(
        height=520,
        margin={"l": 60, "r": 12, "t": 12, "b": 48},
        paper_bgcolor="#ffffff",
        plot_bgcolor="#ffffff",
        font={"color": TEXT, "size": 13},
        showlegend=False,
        bargap=0,
        xaxis={"domain": [0.0, 1.0], "range": [-raw_max, raw_max], "anchor": "y", "tickvals": _ticks(raw_max),
               "title": {"text": "q · k (a fixed axis: watch it widen)"}, **axis, "zeroline": False},
        yaxis={"domain": [0.6, 1.0], "range": states[k0]["y_range"], "title": {"text": "samples"},
               "anchor": "x", "nticks": 5, **axis},
        xaxis2={"domain": [0.0, 1.0], "range": [-HIST_SPAN, HIST_SPAN], "anchor": "y2",
                "tickvals": _ticks(HIST_SPAN),
                "title": {"text": "q · k / √d_k"}, **axis, "zeroline": False},
        yaxis2={"domain": [0.0, 0.4], "range": states[k0]["y_range"], "title": {"text": "samples"},
                "anchor": "x2", "nticks": 5, **axis},
        # Plotly's own slider, for JupyterLab (the book turns it into a native range input): under the
        # plot, which it pushes up (margin autoexpand).
        sliders=[{
            "steps": steps, "active": k0, "x": 0.0, "len": 1.0, "y": -0.12, "yanchor": "top",
            "currentvalue": {"prefix": "d_k = "}, "pad": {"t": 0, "b": 0}, **_SLIDER_STYLE,
        }],
    )
    return StaticFigure(
        fig, div_id=div_id,
        control_labels=["d_k"],
        states=words,
        caption=(
            "Choose d_k to widen the random vectors. The spread of q · k (top, on a fixed axis) grows "
            "like √d_k, its variance like d_k; divided by √d_k (bottom) it keeps variance 1."
        ),
        alt=(
            f"Two histograms of {n_samples} dot products of standard-normal vectors, for d_k from "
            f"{d_ks[0]} to {d_ks[-1]}: on top q · k, which widens as d_k grows, with sample variance close "
            "to d_k; below, q · k divided by √d_k, which keeps the same width, with sample variance close "
            "to 1."
        ),
    )
