"""Matplotlib figures with the book's one look: heatmaps, 2-D vectors, bars.

Every helper has the form ``f(data, *, ax=None, **style) -> Axes``: it draws
on ``ax`` when given, otherwise on a new figure of a size that suits the
data, and returns the axes so a chapter can add to them. Nothing here calls
``plt.show()``; the book's look is switched on once, explicitly, with
:func:`~attnlib.style.use_book_style`, which in Jupyter (and Colab) also shows
figures as sharp 2× PNGs (:func:`~attnlib.style.hidpi_png`); the palette and the style live in
:mod:`attnlib.style` and are importable from here too.

Colours are colour-blind safe: categorical colours come from the
Okabe–Ito palette (:data:`~attnlib.style.PALETTE`), weights are drawn with the perceptually
uniform :data:`~attnlib.style.CMAP`, and every heatmap cell and bar can carry its number as
text, so no reading depends on colour alone.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from typing import Any

import matplotlib as mpl
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.axes import Axes
from matplotlib.colors import Normalize
from matplotlib.font_manager import FontProperties
from matplotlib.lines import Line2D
from matplotlib.patches import Rectangle
from matplotlib.ticker import FuncFormatter

from attnlib import _validation as _v
from attnlib.style import CMAP, PALETTE
from attnlib.style import hidpi_png as hidpi_png  # importable from here, as the chapters do
from attnlib.style import use_book_style as use_book_style

__all__ = ["bars", "heatmap", "vectors_2d"]

# Colours with a job of their own.
_MASKED_FACE = "#ececec"  # a masked heatmap cell: neutral light grey, hatched
_MASKED_HATCH = "#a8a8a8"
_MASKED_TEXT = "#4d4d4d"
_LIGHT_TEXT = "#ffffff"
_DARK_TEXT = PALETTE["black"]
_BAR = PALETTE["blue"]
_ACCENT = PALETTE["vermillion"]  # blue vs vermillion: the pair that survives every CVD type
_MINUS = "\u2212"  # typographic minus, as on matplotlib's own tick labels

# --------------------------------------------------------------------------- validation


def _labels(labels: Any, name: str) -> list[str]:
    """Return ``labels`` as a list of strings; a bare string is refused (it would be split)."""
    if isinstance(labels, (str, bytes)):
        raise TypeError(f"{name} must be a sequence of labels, not a single string {labels!r}")
    if labels is None or not isinstance(labels, (Sequence, np.ndarray)):
        raise TypeError(f"{name} must be a sequence of labels (list or tuple); got {type(labels).__name__}")
    return [str(label) for label in labels]


def _check_limit(value: Any, name: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number or None; got {type(value).__name__} {value!r}")
    if not math.isfinite(float(value)):
        raise ValueError(f"{name} must be finite; got {value}")
    return float(value)


def _check_ax(ax: Any) -> None:
    if ax is not None and not isinstance(ax, Axes):
        raise TypeError(f"ax must be a matplotlib Axes or None; got {type(ax).__name__}")


def _fmt(value: float, decimals: int) -> str:
    """``value`` to ``decimals`` places, with a typographic minus and no ``-0.00``."""
    text = f"{value:.{decimals}f}"
    if text.startswith("-"):
        text = text[1:] if float(text) == 0 else _MINUS + text[1:]
    return text


def _points(key: str) -> float:
    """The font size rcParams[key] in points (rcParams may hold names such as "medium")."""
    return float(FontProperties(size=mpl.rcParams[key]).get_size_in_points())  # type: ignore[index]


def _new_axes(ax: Axes | None, figsize: tuple[float, float]) -> Axes:
    if ax is not None:
        return ax
    _, ax = plt.subplots(figsize=figsize, layout="constrained")
    return ax


# --------------------------------------------------------------------------- heatmap


def _contrast_text(rgba: tuple[float, float, float, float]) -> str:
    """White or black, whichever has the higher WCAG contrast ratio against ``rgba``."""
    channels = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in rgba[:3]]
    luminance = 0.2126 * channels[0] + 0.7152 * channels[1] + 0.0722 * channels[2]
    against_white = 1.05 / (luminance + 0.05)
    against_black = (luminance + 0.05) / 0.05
    return _LIGHT_TEXT if against_white > against_black else _DARK_TEXT


def heatmap(
    weights: Any,
    *,
    x_labels: Sequence[str],
    y_labels: Sequence[str],
    ax: Axes | None = None,
    annotate: bool = True,
    decimals: int = 2,
    cmap: str | None = None,
    vmin: float | None = 0.0,
    vmax: float | None = None,
    title: str | None = None,
    xlabel: str | None = "key",
    ylabel: str | None = "query",
    colorbar: bool = True,
) -> Axes:
    """Draw a matrix of attention weights (or scores) with token labels.

    Row ``i`` is query ``y_labels[i]``, column ``j`` is key ``x_labels[j]``;
    the keys are written along the top, so the figure reads like the
    matrix ``weights[i, j]`` printed on the page.

    Parameters
    ----------
    weights : (n_q, n_k) array_like
        The matrix to show. ``-inf`` entries (a masked score) and the masked
        entries of a ``numpy.ma.MaskedArray`` are drawn as hatched grey cells
        annotated ``−∞`` and ``masked``; they take no part in the colour scale.
    x_labels : sequence of str, length n_k
        Key tokens, one per column.
    y_labels : sequence of str, length n_q
        Query tokens, one per row.
    ax : matplotlib Axes, optional
        Where to draw; by default a new figure sized to the matrix.
    annotate : bool
        Write each value in its cell, rounded to ``decimals`` places
        (negative numbers with the typographic minus ``−``). The text is
        white on dark cells and black on light ones.
    decimals : int
        Decimal places of the annotations.
    cmap : str, optional
        Colormap name; default :data:`~attnlib.style.CMAP`.
    vmin, vmax : float, optional
        Colour scale limits. ``vmin`` defaults to 0, right for weights; pass
        ``vmin=None`` for scores, which can be negative, to use the smallest
        finite value. ``vmax=None`` uses the largest finite value.
    title, xlabel, ylabel : str, optional
        Axes title and axis labels (``None`` leaves a label out).
    colorbar : bool
        Add a colour bar beside the axes.

    Returns
    -------
    matplotlib.axes.Axes
        The axes drawn on. ``ax.texts`` holds the ``n_q * n_k`` annotations
        in row-major order when ``annotate`` is True.

    Raises
    ------
    TypeError
        ``weights`` is not real-valued, labels are not a sequence of labels,
        ``decimals`` is not an integer, ``ax`` is not an Axes.
    ValueError
        ``weights`` is not 2-D or is empty, holds NaN or ``+inf``, the label
        counts do not match its shape, or ``vmax <= vmin``.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import matplotlib.pyplot as plt
    >>> from attnlib.core import causal_mask, softmax
    >>> scores = np.where(causal_mask(3), [[1.0, 2.0, 0.5]] * 3, -np.inf)
    >>> ax = heatmap(scores, x_labels=["A", "B", "C"], y_labels=["A", "B", "C"], vmin=None)
    >>> [t.get_text() for t in ax.texts[:3]]
    ['1.00', '−∞', '−∞']
    >>> ax = heatmap(softmax(scores), x_labels="ABC", y_labels=list("ABC"))
    Traceback (most recent call last):
    ...
    TypeError: x_labels must be a sequence of labels, not a single string 'ABC'
    >>> plt.close("all")
    """
    _check_ax(ax)
    decimals = _v.check_decimals(decimals)
    annotate = _v.check_bool_flag(annotate, "annotate")
    colorbar = _v.check_bool_flag(colorbar, "colorbar")
    vmin = _check_limit(vmin, "vmin")
    vmax = _check_limit(vmax, "vmax")

    hidden = None  # entries of a MaskedArray that are masked
    if isinstance(weights, np.ma.MaskedArray):
        hidden = np.ma.getmaskarray(weights)
        weights = np.ma.filled(weights.astype(np.float64), 0.0)
    W = _v.as_float_array(weights, "weights", allow_neg_inf=True).astype(np.float64)
    if W.ndim != 2:
        raise ValueError(
            f"weights must be a 2-D (n_q, n_k) matrix; got shape {W.shape}"
            + (" (select one batch element or head first)" if W.ndim > 2 else "")
        )
    if W.size == 0:
        raise ValueError(f"weights is empty; got shape {W.shape}")
    n_q, n_k = W.shape
    xs = _labels(x_labels, "x_labels")
    ys = _labels(y_labels, "y_labels")
    if len(xs) != n_k:
        raise ValueError(
            f"x_labels has {len(xs)} entries, shape ({len(xs)},), but weights has shape {W.shape}: "
            f"need n_k={n_k} key labels, one per column"
        )
    if len(ys) != n_q:
        raise ValueError(
            f"y_labels has {len(ys)} entries, shape ({len(ys)},), but weights has shape {W.shape}: "
            f"need n_q={n_q} query labels, one per row"
        )

    neg_inf = np.isneginf(W)
    if hidden is None:
        hidden = np.zeros(W.shape, dtype=bool)
    hidden = hidden & ~neg_inf
    blank = neg_inf | hidden  # cells without a colour
    finite = W[~blank]
    lo = vmin if vmin is not None else (float(finite.min()) if finite.size else 0.0)
    hi = vmax if vmax is not None else (float(finite.max()) if finite.size else lo + 1.0)
    if vmax is None and hi <= lo:  # constant matrix: any positive range shows it
        hi = lo + 1.0
    if hi <= lo:
        raise ValueError(f"vmax must be greater than vmin; got vmin={lo}, vmax={hi}")
    norm = Normalize(vmin=lo, vmax=hi)
    colormap = plt.get_cmap(CMAP if cmap is None else cmap)

    width = min(max(0.75 * n_k + (2.4 if colorbar else 1.6), 3.5), 12.0)
    height = min(max(0.7 * n_q + 1.4, 2.5), 10.0)
    ax = _new_axes(ax, figsize=(width, height))
    edges_x = np.arange(n_k + 1) - 0.5  # (n_k + 1,)
    edges_y = np.arange(n_q + 1) - 0.5  # (n_q + 1,)
    mesh = ax.pcolormesh(
        edges_x,
        edges_y,
        np.ma.masked_array(W, mask=blank),
        cmap=colormap,
        norm=norm,
        edgecolors="white",
        linewidth=1.0,
    )
    # Matplotlib >= 3.10 colours a hatch on its own; before, the hatch takes the edge colour.
    outline: dict[str, Any] = (
        {"edgecolor": "white", "hatchcolor": _MASKED_HATCH, "linewidth": 1.0}
        if hasattr(Rectangle, "set_hatchcolor")
        else {"edgecolor": _MASKED_HATCH, "linewidth": 0.0}
    )
    for i, j in zip(*np.nonzero(blank), strict=True):
        cell = Rectangle((j - 0.5, i - 0.5), 1.0, 1.0, facecolor=_MASKED_FACE, hatch="///", **outline)
        cell.set_zorder(mesh.get_zorder() + 0.1)
        ax.add_patch(cell)
    if annotate:
        for i in range(n_q):
            for j in range(n_k):
                if neg_inf[i, j]:
                    text, colour = _MINUS + "∞", _MASKED_TEXT
                elif hidden[i, j]:
                    text, colour = "masked", _MASKED_TEXT
                else:
                    text, colour = _fmt(W[i, j], decimals), _contrast_text(colormap(norm(W[i, j])))
                ax.text(j, i, text, ha="center", va="center", color=colour, zorder=3)

    ax.set_xlim(-0.5, n_k - 0.5)
    ax.set_ylim(n_q - 0.5, -0.5)  # row 0 at the top, as printed
    ax.set_aspect("equal")
    ax.set_xticks(np.arange(n_k), xs)
    ax.set_yticks(np.arange(n_q), ys)
    ax.xaxis.tick_top()
    ax.xaxis.set_label_position("top")
    ax.tick_params(length=0)
    for spine in ax.spines.values():
        spine.set_visible(False)
    if xlabel is not None:
        ax.set_xlabel(xlabel, labelpad=10)  # clear of the tick labels, so it does not read as one of them
    if ylabel is not None:
        ax.set_ylabel(ylabel)
    if title is not None:
        ax.set_title(title, pad=10.0)
    if colorbar:
        # Arrows on the colour bar say that some cells lie beyond vmin/vmax and share its end colour.
        below = bool(finite.size) and float(finite.min()) < lo
        above = bool(finite.size) and float(finite.max()) > hi
        extend = ("both" if above else "min") if below else ("max" if above else "neither")
        bar = ax.figure.colorbar(mesh, ax=ax, shrink=0.9, pad=0.03, extend=extend)
        bar.outline.set_visible(False)
        bar.ax.tick_params(length=2)
    return ax


# --------------------------------------------------------------------------- vectors


def _as_plane_vectors(x: Any, name: str) -> np.ndarray:
    arr = _v.as_float_array(x, name).astype(np.float64)
    if arr.ndim != 2 or arr.shape[1] != 2:
        raise ValueError(
            f"{name} must have shape (n, 2) (one 2-D vector per token) to be drawn in the plane; "
            f"got shape {arr.shape}"
        )
    if arr.shape[0] == 0:
        raise ValueError(f"{name} has no vectors; got shape {arr.shape}")
    return arr


_MATHTEXT_ESCAPES = {
    "$": r"\$", "_": r"\_", "{": r"\{", "}": r"\}", "#": r"\#", "%": r"\%", "&": r"\&", " ": r"\ ",
}


def _vector_label(letter: str, token: str) -> str:
    r"""``$q_{A}$`` for one-character tokens, ``$q_{\mathrm{cat}}$`` for words, plain text if unsafe."""
    if any(c in token for c in "\\^~") or not token:
        return f"{letter}_{token}"
    safe = "".join(_MATHTEXT_ESCAPES.get(c, c) for c in token)
    return f"${letter}_{{{safe}}}$" if len(token) == 1 else f"${letter}_{{\\mathrm{{{safe}}}}}$"


def vectors_2d(
    Q: Any,
    K: Any = None,
    *,
    tokens: Sequence[str],
    ax: Axes | None = None,
    title: str | None = None,
) -> Axes:
    r"""Draw 2-D queries (solid arrows) and keys (dashed arrows) from the origin.

    Token ``i`` has one colour for both ``q_i`` and ``k_i``, so a reader can
    see at a glance which key a query lines up with (a large dot product)
    and which it points away from.

    Parameters
    ----------
    Q : (n, 2) array_like
        Query vectors, drawn as solid arrows labelled ``q_token``.
    K : (n, 2) array_like, optional
        Key vectors, drawn as dashed arrows labelled ``k_token``.
    tokens : sequence of str, length n
        Token names; a one-character token ``A`` gives the label
        :math:`q_{A}` (mathtext ``$q_{A}$``), a word is set upright.
    ax : matplotlib Axes, optional
        Where to draw; by default a new square figure.
    title : str, optional
        Axes title.

    Returns
    -------
    matplotlib.axes.Axes
        Equal aspect, axes through the origin, limits with a margin around
        every arrow tip. Each arrow is a ``matplotlib.text.Annotation`` with
        empty text whose ``xy`` is the tip (queries first, then keys);
        the labels are further annotations with non-empty text.

    Raises
    ------
    TypeError
        Non-real vectors, ``tokens`` not a sequence, ``ax`` not an Axes.
    ValueError
        ``Q`` or ``K`` not of shape ``(n, 2)`` (the message gives the shape),
        ``K`` with a different ``n``, NaN or infinite entries, or a token
        count that is not ``n``.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import matplotlib.pyplot as plt
    >>> ax = vectors_2d([[1.0, 0.0], [0.0, 1.0]], [[0.8, 0.2], [0.1, 0.9]], tokens=["A", "B"])
    >>> [a.xy for a in ax.texts if a.get_text() == ""]
    [(1.0, 0.0), (0.0, 1.0), (0.8, 0.2), (0.1, 0.9)]
    >>> vectors_2d([[1.0, 0.0, 2.0]], tokens=["A"])
    Traceback (most recent call last):
    ...
    ValueError: Q must have shape (n, 2) (one 2-D vector per token) to be drawn in the plane; got shape (1, 3)
    >>> plt.close("all")
    """
    _check_ax(ax)
    Qa = _as_plane_vectors(Q, "Q")
    n = Qa.shape[0]
    Ka = None
    if K is not None:
        Ka = _as_plane_vectors(K, "K")
        if Ka.shape[0] != n:
            raise ValueError(
                f"K has {Ka.shape[0]} vectors but Q has {n} (one key per query token; "
                f"Q {Qa.shape}, K {Ka.shape})"
            )
    names = _labels(tokens, "tokens")
    if len(names) != n:
        raise ValueError(
            f"tokens has {len(names)} entries, shape ({len(names)},), but Q has shape {Qa.shape}: "
            f"need one token per vector"
        )

    ax = _new_axes(ax, figsize=(4.8, 4.8))
    colours = list(PALETTE.values())
    groups = [("q", Qa, "-")] + ([("k", Ka, "--")] if Ka is not None else [])
    for _, vecs, style in groups:
        for i, tip in enumerate(vecs):
            ax.annotate(
                "",
                xy=(float(tip[0]), float(tip[1])),
                xytext=(0.0, 0.0),
                arrowprops={
                    "arrowstyle": "-|>,head_length=0.6,head_width=0.3",
                    "color": colours[i % len(colours)],
                    "linewidth": 1.8,
                    "linestyle": style,
                    "shrinkA": 0.0,
                    "shrinkB": 0.0,
                },
                zorder=3,
            )
    for letter, vecs, _ in groups:
        for i, tip in enumerate(vecs):
            length = math.hypot(tip[0], tip[1])
            ux, uy = (tip[0] / length, tip[1] / length) if length > 0 else (-0.7071, -0.7071)
            ax.annotate(
                _vector_label(letter, names[i]),
                xy=(float(tip[0]), float(tip[1])),
                xytext=(9.0 * ux, 9.0 * uy),
                textcoords="offset points",
                ha="left" if ux > 0.3 else ("right" if ux < -0.3 else "center"),
                va="bottom" if uy > 0.3 else ("top" if uy < -0.3 else "center"),
                color=colours[i % len(colours)],
                fontsize=_points("font.size") * 1.1,
                bbox={"boxstyle": "round,pad=0.15", "facecolor": "white", "edgecolor": "none", "alpha": 0.85},
                zorder=4,
            )

    tips = np.vstack([Qa] + ([Ka] if Ka is not None else []))  # (n or 2n, 2)
    lo = np.minimum(tips.min(axis=0), 0.0)  # (2,)
    hi = np.maximum(tips.max(axis=0), 0.0)  # (2,)
    span = max(float((hi - lo).max()), 1e-9)
    margin = 0.22 * span  # room for the labels beyond the tips
    ax.set_xlim(lo[0] - margin, hi[0] + margin)
    ax.set_ylim(lo[1] - margin, hi[1] + margin)
    ax.set_aspect("equal", adjustable="box")
    for side in ("left", "bottom"):
        ax.spines[side].set_position("zero")
        ax.spines[side].set_color("#555555")
        ax.spines[side].set_visible(True)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    ax.grid(True, color="#e6e6e6", linewidth=0.6)
    no_zero = FuncFormatter(lambda v, _: "" if abs(v) < 1e-12 else f"{v:g}".replace("-", _MINUS))
    ax.xaxis.set_major_formatter(no_zero)  # the origin is where the axes cross; "0" twice only clutters it
    ax.yaxis.set_major_formatter(no_zero)
    ax.set_axisbelow(True)

    handles = [Line2D([], [], color=_DARK_TEXT, linestyle="-", linewidth=1.8, label="query (solid)")]
    if Ka is not None:
        handles.append(Line2D([], [], color=_DARK_TEXT, linestyle="--", linewidth=1.8, label="key (dashed)"))
    ax.legend(handles=handles, loc="best", handlelength=2.4)
    if title is not None:
        ax.set_title(title)
    return ax


# --------------------------------------------------------------------------- bars


def bars(
    values: Any,
    *,
    labels: Sequence[str],
    ax: Axes | None = None,
    series_labels: Sequence[str] | None = None,
    annotate: bool = True,
    decimals: int = 2,
    ylabel: str | None = None,
    title: str | None = None,
    highlight: int | str | None = None,
) -> Axes:
    """Draw one bar per label, or groups of bars for several series.

    Parameters
    ----------
    values : (n_labels,) or (n_series, n_labels) array_like
        Bar heights. One row per series gives grouped bars, series ``s`` in
        colour ``s`` of the book's cycle (Okabe–Ito).
    labels : sequence of str, length n_labels
        One label per bar (per group of bars for 2-D ``values``).
    ax : matplotlib Axes, optional
        Where to draw; by default a new figure sized to the number of bars.
    series_labels : sequence of str, length n_series, optional
        Names of the series, shown in a legend. Without them there is no legend.
    annotate : bool
        Write each value above its bar (below for negative values), rounded
        to ``decimals`` places.
    decimals : int
        Decimal places of the annotations.
    ylabel, title : str, optional
        Axis label and title.
    highlight : int or str, optional
        Position (negative counts from the end) or label of the bar to pick
        out. With 1-D ``values`` that bar is drawn in the accent colour
        ``PALETTE["vermillion"]`` against ``PALETTE["blue"]``; with 2-D
        ``values`` the series keep their colours and the group gets a black
        outline. Its tick label is set in bold in both cases.

    Returns
    -------
    matplotlib.axes.Axes
        ``ax.containers`` holds one ``BarContainer`` per series.

    Raises
    ------
    TypeError
        ``values`` is not real-valued, labels are not a sequence of labels,
        ``highlight`` is neither an int nor a str, ``ax`` not an Axes.
    ValueError
        ``values`` is not 1-D or 2-D, is empty, holds NaN or infinities; the
        number of ``labels`` or ``series_labels`` does not match its shape;
        ``highlight`` is out of range or not one of the labels.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import matplotlib.pyplot as plt
    >>> ax = bars([0.2, 0.5, 0.3], labels=["A", "B", "C"], highlight="B")
    >>> [float(b.get_height()) for b in ax.containers[0]]
    [0.2, 0.5, 0.3]
    >>> bars([0.2, 0.5], labels=["A", "B", "C"])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: labels has 3 entries, shape (3,), but values has shape (2,): need n_labels=2 labels, ...
    >>> plt.close("all")
    """
    _check_ax(ax)
    decimals = _v.check_decimals(decimals)
    annotate = _v.check_bool_flag(annotate, "annotate")
    arr = _v.as_float_array(values, "values").astype(np.float64)
    if arr.ndim not in (1, 2):
        raise ValueError(f"values must be 1-D (n_labels,) or 2-D (n_series, n_labels); got shape {arr.shape}")
    if arr.size == 0:
        raise ValueError(f"values is empty; got shape {arr.shape}")
    grouped = arr.ndim == 2
    table = arr if grouped else arr[None, :]  # (n_series, n_labels)
    n_series, n_labels = table.shape
    names = _labels(labels, "labels")
    if len(names) != n_labels:
        raise ValueError(
            f"labels has {len(names)} entries, shape ({len(names)},), but values has shape {arr.shape}: "
            f"need n_labels={n_labels} labels, one per {'group' if grouped else 'bar'}"
        )
    series = None
    if series_labels is not None:
        series = _labels(series_labels, "series_labels")
        if len(series) != n_series:
            raise ValueError(
                f"series_labels has {len(series)} entries, shape ({len(series)},), but values has shape "
                f"{arr.shape}: need n_series={n_series} names, one per row"
            )
    pick = None
    if highlight is not None:
        if isinstance(highlight, (bool, np.bool_)):
            raise TypeError(f"highlight must be a bar index or a label; got {highlight!r}")
        if isinstance(highlight, str):
            if highlight not in names:
                raise ValueError(f"highlight {highlight!r} is not one of the labels {names}")
            pick = names.index(highlight)
        elif isinstance(highlight, numbers.Integral):
            if not -n_labels <= highlight < n_labels:
                raise ValueError(
                    f"highlight index {highlight} is out of range for {n_labels} bars "
                    f"(values shape {arr.shape})"
                )
            pick = int(highlight) % n_labels
        else:
            raise TypeError(
                f"highlight must be a bar index (int) or a label (str); got {type(highlight).__name__} "
                f"{highlight!r}"
            )

    per_group = 0.55 + 0.3 * n_series if grouped else 0.75
    ax = _new_axes(ax, figsize=(min(max(1.2 + per_group * n_labels, 3.6), 10.0), 3.2))
    x = np.arange(n_labels, dtype=np.float64)  # (n_labels,)
    width = 0.8 / n_series if grouped else 0.65
    colours = list(PALETTE.values())
    for s in range(n_series):
        offset = (s - (n_series - 1) / 2) * width
        if grouped:
            face: str | list[str] = colours[s % len(colours)]
        else:
            face = [_ACCENT if j == pick else _BAR for j in range(n_labels)]
        container = ax.bar(
            x + offset,
            table[s],
            width=width * (0.92 if grouped else 1.0),
            color=face,
            label=series[s] if series is not None else None,
            zorder=2,
        )
        if grouped and pick is not None:
            container.patches[pick].set_edgecolor(_DARK_TEXT)
            container.patches[pick].set_linewidth(1.6)
        if annotate:
            ax.bar_label(
                container,
                labels=[_fmt(v, decimals) for v in table[s]],
                padding=2,
                fontsize=_points("xtick.labelsize") * (0.85 if grouped else 1.0),
            )

    ticks = ax.set_xticks(x, names)  # the Text objects, also when a shared axis hides them
    ax.tick_params(axis="x", length=0)
    if pick is not None:
        tick = ticks[pick].label1
        tick.set_fontweight("bold")
        if not grouped:
            tick.set_color(_ACCENT)
    if (table < 0).any():
        ax.axhline(0.0, color="#555555", linewidth=0.8, zorder=1)
    ax.margins(x=0.04, y=0.14)
    if ylabel is not None:
        ax.set_ylabel(ylabel)
    if title is not None:
        ax.set_title(title)
    if series is not None:  # outside the axes, on the right: a legend inside would hide bars
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)
    return ax
