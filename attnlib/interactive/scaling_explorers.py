"""Explorers for the chapter "Why divide by √d_k", static-HTML safe.

As in :mod:`attnlib.interactive.trace_explorers`, every state is computed here
in Python (by attnlib); the browser only switches between states with Plotly
sliders. No attention arithmetic happens in JavaScript.

* :func:`scaling_explorer` – one query against a few keys; a slider for
  ``d_k`` and a slider for the scale, from raw scores (scale 1) to
  ``1/√d_k``. Bars of the weights, with their maximum and entropy.
* :func:`variance_explorer` – histograms of ``q · k`` and of ``q · k / √d_k``
  for random vectors as ``d_k`` grows, with sample and theoretical variances.
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
from attnlib.core import scaled_dot_product_attention
from attnlib.interactive._render import StaticFigure, show
from attnlib.interactive.live import scaling_draws
from attnlib.plots import PALETTE

__all__ = [
    "FACTORS",
    "HIST_BINS",
    "HIST_SPAN",
    "SCALING_D_KS",
    "VARIANCE_D_KS",
    "histogram_edges",
    "scale_for",
    "scaling_explorer",
    "variance_explorer",
    "variance_samples",
]

#: Default ``d_k`` of :func:`scaling_explorer`: the powers of 2 from 1 to 1024.
SCALING_D_KS: tuple[int, ...] = tuple(2**p for p in range(11))
#: Default exponents ``t`` of the scale ``d_k^(−t/2)``: 0 is raw scores, 1 is ``1/√d_k``.
FACTORS: tuple[float, ...] = (0.0, 0.25, 0.5, 0.75, 1.0)
#: Default ``d_k`` of :func:`variance_explorer`.
VARIANCE_D_KS: tuple[int, ...] = (1, 4, 16, 64, 256, 1024)
#: Number of histogram bins per panel and state.
HIST_BINS = 60
#: The bins cover ``±HIST_SPAN`` standard deviations: ``±HIST_SPAN·√d_k`` for ``q·k``.
HIST_SPAN = 5.0

_MAX_D_K = 1024  # the length of the draws of attnlib.interactive.live.scaling_draws
_TEXT = "#222222"  # on the figure's light card, in light and dark mode alike
_GRID = "#e3e3e3"
_BAR = PALETTE["blue"]
_PEAK = PALETTE["vermillion"]
_RAW = PALETTE["vermillion"]
_SCALED = PALETTE["blue"]
_SLIDER_STYLE: dict[str, Any] = {
    "font": {"color": _TEXT}, "bgcolor": "#f2f2f2", "activebgcolor": PALETTE["orange"],
    "bordercolor": "#999999", "tickcolor": "#999999",
}


# --------------------------------------------------------------------------- checks
def _check_int(value: Any, name: str) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer; got {type(value).__name__} {value!r}")
    return int(value)


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
            raise ValueError(f"each factor t must lie in [0, 1] (scale d_k^(-t/2)); got {t}")
        out.append(t)
    if len(out) < 2:
        raise ValueError(f"factors must hold at least 2 values for a slider; got {tuple(out)}")
    if any(b <= a for a, b in itertools.pairwise(out)):
        raise ValueError(f"factors must be strictly increasing; got {tuple(out)}")
    return tuple(out)


def scale_for(d_k: int, t: float) -> float | None:
    """The ``scale`` argument of :func:`~attnlib.core.scaled_dot_product_attention` for ``d_k^(−t/2)``.

    ``t = 1`` gives ``None`` (attnlib's own ``1/√d_k``), ``t = 0`` gives ``1.0``
    (raw scores), anything between ``d_k ** (-t / 2)``.

    Examples
    --------
    >>> scale_for(512, 1.0) is None, scale_for(512, 0.0), scale_for(16, 0.5)
    (True, 1.0, 0.5)
    """
    if t == 1.0:
        return None
    if t == 0.0:
        return 1.0
    return float(d_k ** (-t / 2))


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
    grows. For each ``d_k`` and each factor ``t`` the weights are
    ``scaled_dot_product_attention(q, K, V, scale=scale_for(d_k, t))``: scale
    ``d_k^(−t/2)``, from raw scores (``t = 0``) to ``1/√d_k`` (``t = 1``).
    Their :func:`~attnlib.stats.max_weight` and :func:`~attnlib.stats.entropy`
    are written above the bars. All ``len(d_ks) × len(factors)`` states are
    computed here; the browser only switches between them.

    Parameters
    ----------
    n_keys : int
        Number of keys, at least 2.
    seed : int
        Seed of the draws.
    d_ks : sequence of int
        Strictly increasing, from 1 to 1024, at least 2 values.
    factors : sequence of float
        Exponents ``t``, strictly increasing in ``[0, 1]``, at least 2 values.
    div_id : str
        Fixed id of the figure's ``<div>``.

    Returns
    -------
    StaticFigure
        ``fig.data[k]`` is the bar trace of ``d_ks[k]`` (only the chosen one
        visible), ``fig.layout.annotations[k]`` its summary line.
        ``fig.layout.sliders[0]`` chooses ``d_k`` (visibility);
        ``fig.layout.sliders[1].steps[j]`` sets factor ``factors[j]`` for every
        ``d_k``: ``args[0]["y"][k]`` are the weights at ``d_ks[k]``, and
        ``args[1]["annotations[k].text"]`` their summary.

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
    >>> len(sf.fig.data), len(sf.fig.layout.sliders[1].steps)
    (11, 5)
    >>> raw, scaled = (sf.fig.layout.sliders[1].steps[j].args[0]["y"][9] for j in (0, 4))
    >>> max(raw) > max(scaled)  # d_k = 512: unscaled scores saturate the softmax
    True
    """
    n_keys = _v.check_positive_int(n_keys, "n_keys")
    if n_keys < 2:
        raise ValueError(f"n_keys must be at least 2 (one key always gets weight 1); got {n_keys}")
    seed = _check_int(seed, "seed")
    d_ks = _check_d_ks(d_ks)
    factors = _check_factors(factors)
    q_all, K_all = scaling_draws(n_keys, seed)  # (1024,), (n_keys, 1024)
    V = np.eye(n_keys)  # (n_keys, n_keys)
    keys = [f"k{j}" for j in range(n_keys)]
    log_n = math.log(n_keys)

    # states[j][k]: factor j, d_k index k
    states: list[list[dict[str, Any]]] = []
    for t in factors:
        row = []
        for d_k in d_ks:
            q, K = q_all[None, :d_k], K_all[:, :d_k]  # (1, d_k), (n_keys, d_k)
            _, W = scaled_dot_product_attention(q, K, V, scale=scale_for(d_k, t), return_weights=True)
            w = W[0]  # (n_keys,)
            top, ent = float(stats.max_weight(w)), float(stats.entropy(w))
            spread = float(np.std((q @ K.T)[0])) * d_k ** (-t / 2)  # std of the scores the softmax sees
            peak = int(np.argmax(w))
            row.append({
                "y": [float(v) for v in w],
                "text": [f"{v:.3f}" for v in w],
                "colour": [_PEAK if j == peak else _BAR for j in range(n_keys)],
                "note": (
                    f"<b>d_k = {d_k}</b>, {_scale_text(d_k, t)}: spread (std) of the scores {spread:.3g}"
                    f"<br><b>max weight {top:.3f}</b> · <b>entropy {ent:.3f} nats</b> "
                    f"(uniform: ln {n_keys} = {log_n:.3f}; one-hot: 0)"
                ),
            })
        states.append(row)

    k0 = d_ks.index(64) if 64 in d_ks else len(d_ks) // 2
    j0 = len(factors) - 1
    start = states[j0]
    fig = go.Figure()
    for k, d_k in enumerate(d_ks):
        fig.add_trace(go.Bar(
            x=keys, y=start[k]["y"], text=start[k]["text"], name=f"d_k = {d_k}", visible=k == k0,
            marker={"color": start[k]["colour"]}, textposition="outside", cliponaxis=False,
            textfont={"color": _TEXT}, hovertemplate="key %{x}: weight %{y:.4f}<extra></extra>",
        ))
    notes = [
        {
            "text": start[k]["note"], "visible": k == k0, "xref": "paper", "yref": "paper",
            "x": 0.0, "y": 1.02, "xanchor": "left", "yanchor": "bottom", "align": "left",
            "showarrow": False, "font": {"color": _TEXT, "size": 13},
        }
        for k in range(len(d_ks))
    ]
    d_k_steps = [
        {
            "label": str(d_k), "method": "update",
            "args": [{"visible": [i == k for i in range(len(d_ks))]},
                     {f"annotations[{i}].visible": i == k for i in range(len(d_ks))}],
        }
        for k, d_k in enumerate(d_ks)
    ]
    factor_steps = [
        {
            "label": _t_label(t), "method": "update",
            "args": [
                {"y": [s["y"] for s in row], "text": [s["text"] for s in row],
                 "marker.color": [s["colour"] for s in row]},
                {f"annotations[{k}].text": s["note"] for k, s in enumerate(row)},
            ],
        }
        for t, row in zip(factors, states, strict=True)
    ]
    fig.update_layout(
        height=600,
        margin={"l": 60, "r": 30, "t": 110, "b": 10},
        paper_bgcolor="#ffffff",
        plot_bgcolor="#ffffff",
        font={"color": _TEXT, "size": 13},
        title={"text": f"Weights of one random query over {n_keys} random keys",
               "x": 0.0, "xanchor": "left", "y": 0.98, "yanchor": "top"},
        showlegend=False,
        xaxis={"title": {"text": "key (the largest weight in vermillion)"}, "type": "category",
               "fixedrange": True},
        yaxis={"domain": [0.45, 1.0], "range": [0.0, 1.12], "title": {"text": "weight"},
               "gridcolor": _GRID, "zerolinecolor": "#888888", "fixedrange": True},
        annotations=notes,
        sliders=[
            {"steps": d_k_steps, "active": k0, "x": 0.03, "len": 0.94, "y": 0.3, "yanchor": "top",
             "currentvalue": {"prefix": "d_k = ", "font": {"color": _TEXT}}, "pad": {"t": 0, "b": 0},
             **_SLIDER_STYLE},
            {"steps": factor_steps, "active": j0, "x": 0.03, "len": 0.94, "y": 0.13, "yanchor": "top",
             "currentvalue": {"prefix": "scale d_k^(−t/2), t = ", "font": {"color": _TEXT}},
             "pad": {"t": 0, "b": 0}, **_SLIDER_STYLE},
        ],
    )
    return show(
        fig, div_id=div_id,
        caption=(
            "Move the d_k slider to lengthen the query and the keys, and the t slider to go from raw "
            "scores (t = 0) to scores divided by √d_k (t = 1). Without the division the weights pile "
            "onto one key as d_k grows: the max weight nears 1 and the entropy 0."
        ),
        alt=(
            f"An interactive bar chart of the attention weights of one random query over {n_keys} "
            f"random keys, for d_k from {d_ks[0]} to {d_ks[-1]} and scale d_k to the power −t/2 for t "
            f"from {factors[0]:g} to {factors[-1]:g}, with the maximum weight and the entropy written "
            "above the bars. Unscaled, the weights concentrate on one key as d_k grows; scaled by "
            "1/√d_k they stay spread out."
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


def _panel_note(name: str, theory: str, est: stats.VarianceEstimate, outside: int) -> str:
    note = (
        f"<b>{name}</b><br>sample variance {est.estimate:.3g} "
        f"(95% CI {est.low:.3g} to {est.high:.3g})<br>theory: {theory}"
    )
    if outside:
        note += f"<br>{outside} samples beyond ±{HIST_SPAN:g} std not drawn"
    return note


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
    only the counts reach the page. Each panel states the sample variance
    (:func:`attnlib.stats.variance_with_ci`) and the theory: ``d_k`` for
    ``q · k``, 1 for ``q · k / √d_k``.

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
        ``fig.data[0]`` is the histogram of ``q · k`` (left), ``fig.data[1]``
        that of ``q · k / √d_k`` (right), as bars at the bin centres.
        ``fig.layout.sliders[0].steps[k]`` shows ``d_ks[k]``: its
        ``args[0]["y"]`` are the two panels' counts, ``args[0]["x"]`` the bin
        centres, ``args[1]["annotations[0].text"]`` and ``[1]`` the variances,
        ``args[1]["yaxis.range"]`` the y range of both panels.

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
    """
    n_samples = _v.check_positive_int(n_samples, "n_samples")
    if n_samples < 2:
        raise ValueError(f"n_samples must be at least 2 for a sample variance; got {n_samples}")
    seed = _check_int(seed, "seed")
    d_ks = _check_d_ks(d_ks)
    samples = variance_samples(d_ks, n_samples, seed)

    states = []
    for d_k in d_ks:
        raw = samples[d_k]  # (n_samples,)
        scaled = raw / math.sqrt(d_k)  # (n_samples,)
        panels = []
        for values, is_scaled in ((raw, False), (scaled, True)):
            edges = histogram_edges(d_k, scaled=is_scaled)  # (HIST_BINS + 1,)
            counts, _ = np.histogram(values, bins=edges)  # (HIST_BINS,)
            panels.append({
                "x": [float(c) for c in (edges[:-1] + edges[1:]) / 2],
                "y": [int(c) for c in counts],
                "width": float(edges[1] - edges[0]),
                "outside": int(n_samples - counts.sum()),
                "est": stats.variance_with_ci(values),
            })
        states.append({
            "panels": panels,
            "y_range": [0, 1.1 * max(max(p["y"]) for p in panels)],  # one range for both panels
            "notes": [
                _panel_note("q · k", f"Var = d_k = {d_k}", panels[0]["est"], panels[0]["outside"]),
                _panel_note("q · k / √d_k", "Var = 1", panels[1]["est"], panels[1]["outside"]),
            ],
        })

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
                {"annotations[0].text": st["notes"][0], "annotations[1].text": st["notes"][1],
                 "yaxis.range": st["y_range"], "yaxis2.range": st["y_range"]},
            ],
        }
        for d_k, st in zip(d_ks, states, strict=True)
    ]
    notes = [
        {"text": states[k0]["notes"][i], "xref": "paper", "yref": "paper", "x": x, "y": 1.02,
         "xanchor": "left", "yanchor": "bottom", "align": "left", "showarrow": False,
         "font": {"color": _TEXT, "size": 13}}
        for i, x in enumerate((0.0, 0.54))
    ]
    axis = {"gridcolor": _GRID, "zerolinecolor": "#888888", "fixedrange": True}
    fig.update_layout(
        height=500,
        margin={"l": 60, "r": 30, "t": 120, "b": 10},
        paper_bgcolor="#ffffff",
        plot_bgcolor="#ffffff",
        font={"color": _TEXT, "size": 13},
        showlegend=False,
        bargap=0,
        title={"text": f"{n_samples:,} dot products of random vectors per d_k",
               "x": 0.0, "xanchor": "left", "y": 0.98, "yanchor": "top"},
        xaxis={"domain": [0.0, 0.46], "range": [-raw_max, raw_max], "anchor": "y",
               "title": {"text": "q · k (fixed axis: watch it widen)"}, **axis, "zeroline": False},
        yaxis={"domain": [0.3, 1.0], "range": states[k0]["y_range"], "title": {"text": "samples per bin"},
               "anchor": "x", **axis},
        xaxis2={"domain": [0.54, 1.0], "range": [-HIST_SPAN, HIST_SPAN], "anchor": "y2",
                "title": {"text": "q · k / √d_k"}, **axis, "zeroline": False},
        yaxis2={"domain": [0.3, 1.0], "range": states[k0]["y_range"], "anchor": "x2", **axis},
        annotations=notes,
        sliders=[{
            "steps": steps, "active": k0, "x": 0.03, "len": 0.94, "y": 0.12, "yanchor": "top",
            "currentvalue": {"prefix": "d_k = ", "font": {"color": _TEXT}}, "pad": {"t": 0, "b": 0},
            **_SLIDER_STYLE,
        }],
    )
    return show(
        fig, div_id=div_id,
        caption=(
            "Move the slider to lengthen the random vectors. The spread of q · k (left, on a fixed "
            "axis) grows like √d_k, its variance like d_k; divided by √d_k (right) it keeps variance 1."
        ),
        alt=(
            f"Two histograms of {n_samples} dot products of standard-normal vectors, for d_k from "
            f"{d_ks[0]} to {d_ks[-1]} chosen with a slider: on the left q · k, which widens as d_k "
            "grows, with sample variance close to d_k; on the right q · k divided by √d_k, which keeps "
            "the same width, with sample variance close to 1. Each panel states its sample variance "
            "with a 95% confidence interval and the theoretical value."
        ),
    )
