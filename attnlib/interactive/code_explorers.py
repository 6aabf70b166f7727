"""Chapters 6 and 7's explorers, interactive in the static HTML: overflow, and the online softmax.

As in :mod:`attnlib.interactive.beyond_explorers`, every state is computed here, in Python, with its
numbers in words and tables for readers who do not see the plot; the browser only switches between the
states (native buttons and range inputs in the book, Plotly's own in JupyterLab).

* :func:`stability_explorer` – add a number ``c`` to every logit of a short row and choose the dtype:
  the textbook softmax (:func:`attnlib.naive.naive_softmax`) overflows to ``inf / inf = NaN`` once a
  logit passes ``log`` of the dtype's largest number, while the stable one
  (:func:`attnlib.core.softmax`) gives the same weights for every ``c``.
* :func:`online_softmax_explorer` – read one query's keys one at a time with the online softmax
  (:func:`attnlib.tiled.online_softmax_steps`), with the old terms rescaled or, the mistake, never
  rescaled: the weights so far against the softmax over all the keys.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import plotly.graph_objects as go

from attnlib import _validation as _v
from attnlib.core import softmax
from attnlib.interactive._render import TEXT, DataTable, ExplorerState, StaticFigure
from attnlib.naive import naive_softmax
from attnlib.plots import PALETTE
from attnlib.tiled import OnlineStep, online_softmax_steps

__all__ = ["STABILITY_SHIFTS", "online_softmax_explorer", "stability_explorer"]

_GRID = "#e3e3e3"
_NAIVE = PALETTE["vermillion"]
_STABLE = PALETTE["blue"]
_EXACT = TEXT
_SLIDER_STYLE = {"bgcolor": "#f2f2f2", "bordercolor": "#999999", "activebgcolor": "#cccccc",
                 "font": {"color": TEXT}, "currentvalue": {"font": {"color": TEXT}}}
_BUTTONS = {"bgcolor": "#f2f2f2", "bordercolor": "#999999", "font": {"color": TEXT}}

#: The numbers added to every logit in :func:`stability_explorer`: each dtype's overflow lies between two
#: of them (exp overflows float16 above 11.09, float32 above 88.72, float64 above 709.78, for a largest
#: logit c + 3; at c = 8 in float16 only the sum of the exponentials does).
STABILITY_SHIFTS = (0, 8, 10, 80, 100, 700, 720)
_DTYPES = (np.float16, np.float32, np.float64)


def _fmt(x: float) -> str:
    """An exponential as the explorer says it: 2 significant digits (a float16 exponential is good to
    about 3, and another CPU's may differ in the last), ``inf``, ``NaN``."""
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "inf"
    return f"{x:.2g}"


def _layout(fig: go.Figure, *, x_title: str, y_max: float, buttons: list[dict[str, Any]],
            active: tuple[int, int], steps: list[dict[str, Any]], prefix: str, **extra: Any) -> None:
    """The layout both explorers share: weights on y, a legend and the buttons above, the slider below.

    Plotly's own buttons and slider are for JupyterLab; the book turns them into native controls."""
    fig.update_layout(
        height=400,
        margin={"l": 52, "r": 8, "t": 56, "b": 48},
        paper_bgcolor="#ffffff",
        plot_bgcolor="#ffffff",
        font={"color": TEXT, "size": 13},
        showlegend=True,
        legend={"orientation": "h", "x": 0.0, "y": 1.02, "xanchor": "left", "yanchor": "bottom"},
        xaxis={"title": {"text": x_title}, "type": "category", "fixedrange": True},
        yaxis={"range": [0.0, y_max], "title": {"text": "weight"}, "tickvals": [0, 0.25, 0.5, 0.75, 1],
               "gridcolor": _GRID, "zerolinecolor": "#888888", "fixedrange": True},
        updatemenus=[{"type": "buttons", "direction": "right", "buttons": buttons, "active": active[0],
                      "showactive": True, "x": 0.0, "y": 1.0, "xanchor": "left", "yanchor": "bottom",
                      "pad": {"l": 0, "r": 0, "t": 0, "b": 40}, **_BUTTONS}],
        sliders=[{"steps": steps, "active": active[1], "x": 0.04, "len": 0.92, "y": -0.2, "yanchor": "top",
                  "currentvalue": {"prefix": prefix}, "pad": {"t": 0, "b": 0}, **_SLIDER_STYLE}],
        **extra,
    )


def _weight(x: float) -> str:
    """A weight as the stability explorer says and plots it: 2 significant digits (a float16 weight is
    good to about 3), ``NaN``."""
    return "NaN" if math.isnan(x) else f"{x:.2g}"


def _stability_state(dtype: Any, c: float, base: np.ndarray) -> tuple[dict[str, list[Any]], ExplorerState]:
    """The bars (``naive_y``/``_text``, ``stable_y``/``_text``, ``names``) and the words of one state."""
    x = (base + c).astype(dtype)  # the logits, in the dtype
    name = np.dtype(dtype).name
    limit = math.log(float(np.finfo(dtype).max))
    with np.errstate(over="ignore", invalid="ignore"):
        e = np.exp(x)  # what the textbook formula divides, in the dtype
        total = e.sum()
        naive = naive_softmax(x)
    stable = softmax(x)
    names = [f"x{j + 1} = {float(v):g}" for j, v in enumerate(x)]
    bars: dict[str, list[Any]] = {
        "naive_y": [None if not np.isfinite(w) else float(_weight(float(w))) for w in naive],
        "naive_text": [_weight(float(w)) for w in naive],
        "stable_y": [float(_weight(float(w))) for w in stable],
        "stable_text": [_weight(float(w)) for w in stable],
    }
    top = float(x.max())
    head = f"{name}, c = {c:g}: the largest logit {top:g} is"
    if not np.isfinite(e).all():
        summary = (f"{head} above log(largest {name}) = {limit:.2f}, so exp overflows to inf and the "
                   f"textbook softmax gives {', '.join(bars['naive_text'])}; the stable softmax still gives "
                   f"{', '.join(bars['stable_text'])}.")
    elif not np.isfinite(total):
        summary = (f"{head} below log(largest {name}) = {limit:.2f}, but the sum of the exponentials "
                   f"overflows, so the textbook softmax gives {', '.join(bars['naive_text'])}; the stable "
                   f"softmax still gives {', '.join(bars['stable_text'])}.")
    else:
        summary = (f"{head} below log(largest {name}) = {limit:.2f}; both softmaxes give "
                   f"{', '.join(bars['stable_text'])}.")
    lines = [
        "logits x = (3, 1, 0) + c: " + ", ".join(f"{float(v):g}" for v in x),
        "textbook: exp(x) = " + ", ".join(_fmt(float(v)) for v in e)
        + f"; each divided by their sum {_fmt(float(total))}",
        f"stable: exp(x − max {top:g}) = " + ", ".join(_fmt(float(v)) for v in np.exp(x - x.max()))
        + ", so the largest term is exactly 1 and nothing overflows",
    ]
    table = DataTable(
        f"The softmax of (3, 1, 0) + {c:g} in {name}",
        ["logit", "value", "textbook softmax", "stable softmax"],
        [[f"x{j + 1}", f"{float(x[j]):g}", bars["naive_text"][j], bars["stable_text"][j]]
         for j in range(x.size)],
    )
    return bars | {"names": names}, ExplorerState(summary, lines, (table,))


def stability_explorer(*, shifts: Sequence[float] = STABILITY_SHIFTS,
                       div_id: str = "stability-explorer") -> StaticFigure:
    """The textbook softmax against the stable one, as a number ``c`` is added to every logit.

    The logits are ``(3, 1, 0) + c`` in float16, float32 or float64. A softmax ignores a number added to
    every entry, so the right weights are the same for every ``c``; the textbook formula
    ``exp(x) / Σ exp(x)`` (:func:`~attnlib.naive.naive_softmax`) returns NaN once ``exp`` of the largest
    logit overflows, above ``log`` of the dtype's largest number; :func:`~attnlib.core.softmax`
    subtracts the row's maximum first and never does. Each state says both results in words, shows the
    arithmetic and holds a table of the logits and both softmaxes. All ``3 × len(shifts)`` states are
    computed here; the browser only switches between them.

    Parameters
    ----------
    shifts : sequence of float
        The values of ``c``, strictly increasing, each at least 0 and finite, at least 2 of them.
    div_id : str
        Fixed id of the figure's ``<div>``.

    Returns
    -------
    StaticFigure
        Two controls: the dtype (buttons), then ``c`` (a slider). ``fig.data[2k]`` and ``fig.data[2k + 1]``
        are the textbook and the stable bars of dtype ``k`` (float16, float32, float64; only the chosen
        dtype's visible); ``fig.layout.sliders[0].steps[i]`` restyles every trace to ``shifts[i]``.
        ``states[(k, i)]`` is dtype ``k`` at ``shifts[i]``.

    Raises
    ------
    TypeError
        ``shifts`` not a sequence of real numbers.
    ValueError
        Fewer than 2 shifts, a negative, infinite or repeated shift, shifts not increasing, a bad ``div_id``.

    Examples
    --------
    >>> sf = stability_explorer()
    >>> [len(m.buttons) for m in sf.fig.layout.updatemenus], len(sf.fig.layout.sliders[0].steps)
    ([3], 7)
    >>> print(sf.states[(1, 4)].summary)  # doctest: +NORMALIZE_WHITESPACE
    float32, c = 100: the largest logit 103 is above log(largest float32) = 88.72, so exp overflows to inf
    and the textbook softmax gives NaN, NaN, NaN; the stable softmax still gives 0.84, 0.11, 0.042.
    """
    if isinstance(shifts, (str, bytes)) or not isinstance(shifts, Sequence):
        raise TypeError(f"shifts must be a sequence of numbers; got {type(shifts).__name__}")
    cs = tuple(_v.check_real(c, "each shift", minimum="non-negative") for c in shifts)
    if len(cs) < 2:
        raise ValueError(f"shifts must hold at least 2 values; got {list(cs)}")
    if any(b <= a for a, b in itertools.pairwise(cs)):
        raise ValueError(f"shifts must be strictly increasing; got {list(cs)}")
    base = np.array([3.0, 1.0, 0.0])

    # per[i][k]: shift i, dtype k
    per = [[_stability_state(dt, c, base) for dt in _DTYPES] for c in cs]
    words = {(k, i): per[i][k][1] for i in range(len(cs)) for k in range(len(_DTYPES))}
    i0, k0 = 0, 1
    fig = go.Figure()
    for k, dt in enumerate(_DTYPES):
        bars = per[i0][k][0]
        for kind, colour in (("naive", _NAIVE), ("stable", _STABLE)):
            fig.add_trace(go.Bar(
                x=["x1", "x2", "x3"], y=bars[f"{kind}_y"], text=bars[f"{kind}_text"], visible=k == k0,
                name=f"{'textbook' if kind == 'naive' else 'stable'} softmax ({np.dtype(dt).name})",
                marker={"color": colour}, textposition="outside", cliponaxis=False, textfont={"size": 12},
                hoverinfo="skip",
            ))
    n = 2 * len(_DTYPES)
    dtype_buttons = [
        {"label": np.dtype(dt).name, "method": "restyle",
         "args": [{"visible": [j // 2 == k for j in range(n)]}]}
        for k, dt in enumerate(_DTYPES)
    ]
    steps = [
        {
            "label": f"{c:g}", "method": "restyle",
            "args": [{
                "y": [per[i][j // 2][0]["naive_y" if j % 2 == 0 else "stable_y"] for j in range(n)],
                "text": [per[i][j // 2][0]["naive_text" if j % 2 == 0 else "stable_text"] for j in range(n)],
            }],
        }
        for i, c in enumerate(cs)
    ]
    _layout(fig, x_title="logit (3, 1, 0) + c; a missing bar is NaN", y_max=1.0, buttons=dtype_buttons,
            active=(k0, i0), steps=steps, prefix="c = ", barmode="group")
    return StaticFigure(
        fig, div_id=div_id,
        control_labels=["dtype", "c added to every logit"],
        states=words,
        caption=(
            "Choose a dtype and add c to the logits (3, 1, 0). The stable softmax (blue) gives the same "
            "weights for every c; the textbook formula (vermillion) returns NaN, a missing bar, once exp of "
            "the largest logit overflows, and zeros when only the sum of the exponentials does."
        ),
        alt=(
            "A grouped bar chart of the softmax of the three logits (3, 1, 0) + c, computed by the textbook "
            "formula and by the stable softmax, in float16, float32 or float64, for c from "
            f"{cs[0]:g} to {cs[-1]:g}. The stable weights stay 0.84, 0.11 and 0.042; the textbook ones "
            "match them until the exponentials overflow the dtype, then become NaN or 0."
        ),
    )


# --------------------------------------------------------------------------- the online softmax
def _online_bars(step: OnlineStep, n: int) -> dict[str, list[Any]]:
    w = step.weights
    return {
        "y": [float(w[j]) if j < step.keys_read else 0.0 for j in range(n)],
        "text": [f"{w[j]:.2f}" if j < step.keys_read else "unread" for j in range(n)],
    }


def _online_state(step: OnlineStep, steps: Sequence[OnlineStep], exact: np.ndarray, exact_out: np.ndarray,
                  s: np.ndarray, rescale: bool) -> ExplorerState:
    n, t = s.size, step.keys_read
    before = steps[t - 2].m if t > 1 else None
    if before is None:
        grew = f"the first key sets m = {step.m:.3g}"
    elif step.m > before:
        grew = (f"key {t} raises the maximum from {before:.3g} to {step.m:.3g}, so the old sum is "
                + (f"multiplied by e^(m − m') = {step.correction:.3g}" if rescale
                   else f"left as it was (it should be multiplied by {step.correction:.3g})"))
    else:
        grew = f"key {t} is below the maximum {step.m:.3g}: the correction is 1"
    out = ", ".join(f"{v:.3f}" for v in step.output)
    want = ", ".join(f"{v:.3f}" for v in exact_out)
    if t < n:
        read = "the first key" if t == 1 else f"the {t} keys read"
        tail = f"the output over {read} is ({out}); over all {n} it will be ({want})."
    elif np.allclose(step.output, exact_out, rtol=0, atol=1e-12):
        tail = f"all {n} keys read: the output ({out}) equals the softmax over all of them ({want})."
    else:
        tail = (f"all {n} keys read: the output ({out}) is not the softmax's ({want}); without the "
                "rescaling the early keys keep too much weight.")
    summary = f"{'Rescaled' if rescale else 'Never rescaled'}: {grew}; ℓ = {step.l:.3g}; {tail}"
    lines = [
        "scores s: " + ", ".join(f"{v:.3g}" for v in s),
        f"after key {t}: m = {step.m:.4g}, correction {step.correction:.4g}, ℓ = {step.l:.4g}",
        "weights so far, terms / ℓ: " + ", ".join(f"{w:.3f}" for w in step.weights),
        "softmax over all keys: " + ", ".join(f"{w:.3f}" for w in exact),
    ]
    table = DataTable(
        f"After key {t} of {n}, {'rescaled' if rescale else 'never rescaled'}",
        ["key", "score", "term in ℓ", "weight so far", "softmax over all keys"],
        [[f"k{j + 1}", f"{s[j]:.3g}", f"{step.terms[j]:.4g}" if j < t else "unread",
          f"{step.weights[j]:.4f}" if j < t else "unread", f"{exact[j]:.4f}"] for j in range(n)],
    )
    return ExplorerState(summary, lines, (table,))


def online_softmax_explorer(scores: Any, values: Any, *, div_id: str = "online-explorer") -> StaticFigure:
    """Read one query's keys one at a time with the online softmax, the old terms rescaled or not.

    A slider reads the keys ``1 … n`` (one key per block, :func:`~attnlib.tiled.online_softmax_steps`);
    buttons choose the online softmax (old terms multiplied by ``e^(m − m')`` when the maximum grows) or
    the mistake of never rescaling them. The bars are the weights so far, ``terms / ℓ``, of the keys read;
    the markers are the softmax of all the scores, where the rescaled bars arrive after the last key and
    the others do not. Each state says the maximum, the correction, ``ℓ`` and the output so far in words
    and holds a table per key. All ``2 n`` states are computed here; the browser only switches between
    them.

    Parameters
    ----------
    scores : array_like, shape (n,)
        One query's scaled scores, finite, ``2 <= n <= 16``.
    values : array_like, shape (n, d_v)
        The value rows, finite, ``d_v <= 4`` (the output is said in words).
    div_id : str
        Fixed id of the figure's ``<div>``.

    Returns
    -------
    StaticFigure
        Two controls: the buttons (rescaled, never rescaled), then the slider (keys read).
        ``fig.data[0]`` holds the markers of the softmax over all keys; ``fig.data[1]`` and
        ``fig.data[2]`` the bars rescaled and never rescaled (only the chosen one visible);
        ``fig.layout.sliders[0].steps[t - 1]`` restyles both to ``t`` keys read.
        ``states[(r, t - 1)]`` is mode ``r`` (0 rescaled) after ``t`` keys.

    Raises
    ------
    TypeError
        Non-numeric scores or values.
    ValueError
        Shapes as in :func:`~attnlib.tiled.online_softmax_steps`, fewer than 2 or more than 16 keys, more
        than 4 value columns, a bad ``div_id``.

    Examples
    --------
    >>> sf = online_softmax_explorer([2.0, 0.0, 3.0, 5.0], np.eye(4)[:, :2])
    >>> len(sf.states), len(sf.fig.layout.sliders[0].steps)
    (8, 4)
    >>> print(sf.states[(1, 3)].summary)  # doctest: +NORMALIZE_WHITESPACE
    Never rescaled: key 4 raises the maximum from 3 to 5, so the old sum is left as it was (it should be
    multiplied by 0.135); ℓ = 3.14; all 4 keys read: the output (0.319, 0.043) is not the softmax's
    (0.042, 0.006); without the rescaling the early keys keep too much weight.
    """
    fine = online_softmax_steps(scores, values)
    s = np.asarray(scores, dtype=np.float64)
    v = np.asarray(values, dtype=np.float64)
    if not 2 <= s.size <= 16:
        raise ValueError(f"scores must hold 2 to 16 keys for the explorer; got {s.size}")
    if v.shape[1] > 4:
        raise ValueError(f"values must have at most 4 columns (the output is said in words); got {v.shape}")
    wrong = online_softmax_steps(s, v, rescale=False)
    exact = softmax(s)
    exact_out = exact @ v
    n = s.size
    words = {(r, t): _online_state(st, run, exact, exact_out, s, rescale=r == 0)
             for r, run in enumerate((fine, wrong)) for t, st in enumerate(run)}
    keys = [f"k{j + 1}" for j in range(n)]
    t0 = 0
    fig = go.Figure()
    fig.add_trace(go.Scatter(
        x=keys, y=[float(w) for w in exact], mode="markers", name="softmax over all keys",
        marker={"symbol": "line-ew-open", "size": 28, "line": {"width": 3, "color": _EXACT}},
        hoverinfo="skip",
    ))
    for r, (run, colour) in enumerate(((fine, _STABLE), (wrong, _NAIVE))):
        bars = _online_bars(run[t0], n)
        fig.add_trace(go.Bar(
            x=keys, y=bars["y"], text=bars["text"], visible=r == 0, marker={"color": colour},
            name="weights so far" + ("" if r == 0 else " (never rescaled)"), textposition="outside",
            cliponaxis=False, textfont={"size": 12}, hoverinfo="skip",
        ))
    mode_buttons = [
        {"label": label, "method": "restyle", "args": [{"visible": [True, r == 0, r == 1]}]}
        for r, label in enumerate(("rescaled", "never rescaled"))
    ]
    steps = []
    for t in range(n):
        a, b = _online_bars(fine[t], n), _online_bars(wrong[t], n)
        steps.append({"label": str(t + 1), "method": "restyle",
                      "args": [{"y": [[float(w) for w in exact], a["y"], b["y"]],
                                "text": [None, a["text"], b["text"]]}]})
    _layout(fig, x_title="key", y_max=1.1, buttons=mode_buttons, active=(0, t0), steps=steps,
            prefix="keys read: ")
    return StaticFigure(
        fig, div_id=div_id,
        control_labels=["Old terms", "Keys read"],
        states=words,
        caption=(
            "Read the keys one at a time. Bars: the weights so far, each key's term divided by the running "
            "sum ℓ; markers: the softmax over all the keys. Rescaled, the bars reach the markers after the "
            "last key; never rescaled, the early keys keep too much weight."
        ),
        alt=(
            f"A bar chart of one query's weights over {n} keys as the online softmax reads them one at a "
            "time, unread keys at 0, with horizontal markers at the softmax of all the scores. With the old "
            "terms rescaled the bars end on the markers; never rescaled, they do not."
        ),
    )
