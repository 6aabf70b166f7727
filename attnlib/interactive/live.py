"""Live explorers for a running kernel (Jupyter, Binder, Colab), built on ipywidgets.

Unlike :mod:`attnlib.interactive.trace_explorers`, whose every state is
computed in advance, these recompute on every change: the reader edits the
matrices, picks a query, switches the scale or moves ``d_k``, and Python
calls the same attnlib functions again (:func:`~attnlib.trace.trace_attention`,
:func:`~attnlib.core.scaled_dot_product_attention`, :mod:`attnlib.stats`) and
redraws with :mod:`attnlib.plots`.

* :func:`explore` – editable ``Q``, ``K``, ``V``, a query picker and a scale
  toggle; draws the weights and prints :meth:`~attnlib.trace.AttentionTrace.explain`.
* :func:`live_scaling_explorer` – one random query against ``n_keys`` random keys
  for any ``d_k`` from 1 to 1024, scaled or not; draws the weights with their
  largest weight and entropy.

Both return a :class:`LiveExplorer`. As the last expression of a cell it
displays as a bundle of two outputs: the widget view, which a live kernel's
front end renders, and a ``text/html`` note saying that the explorer runs
live in Jupyter, Binder or Colab. The static book has no kernel behind its
controls, so its build renders the note instead of the widget (the book's
``nb_mime_priority_overrides`` drops the widget view for HTML).

The bundle works under ipywidgets 8 and under ipywidgets 7, which Colab keeps
(7.7.1; its front end breaks under 8): an ipywidgets 8 widget gives its view
through its own ``_repr_mimebundle_``, a 7 widget has no such method and only
sends the same view from ``_ipython_display_``; see ``_widget_view``.
"""

from __future__ import annotations

import base64
import html
import io
import math
import numbers
import re
from collections.abc import Callable, Sequence
from typing import Any

import ipywidgets as widgets
import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from attnlib import _validation as _v
from attnlib import plots, stats
from attnlib.core import scale_for, scaled_dot_product_attention
from attnlib.trace import AttentionTrace, trace_attention

__all__ = [
    "LIVE_NOTE",
    "SCALES",
    "WIDGET_VIEW_MIMETYPE",
    "LiveExplorer",
    "explore",
    "format_matrix",
    "parse_matrix",
    "scaling_draws",
    "live_scaling_explorer",
]

#: The output type of an ipywidgets view, which a live Jupyter front end draws as controls.
WIDGET_VIEW_MIMETYPE = "application/vnd.jupyter.widget-view+json"

#: The scale toggle of :func:`explore`: (button label, rule of :data:`attnlib.core.SCALE_RULES`).
SCALES: tuple[tuple[str, str], ...] = (("1/√d_k", "inverse_sqrt"), ("none", "none"), ("1/d_k", "inverse"))

#: The note the static book shows in place of the controls.
#:
#: :meta hide-value:
LIVE_NOTE = (
    "This is a live explorer: its controls need a running Python kernel, so the static book does not "
    "show them. Download this page as a notebook (the download button at the top of the page) and run it "
    "in Jupyter, Binder or Colab; this cell then shows the controls."
)

_OUTPUT_MARK = "attnlib.interactive.live"  # in the output metadata, as StaticFigure marks its outputs
_MAX_D_K = 1024
_DPI = 100
_NUMBER_SEP = re.compile(r"[,\s;]+")
_ERROR_STYLE = (
    "color:#b00020;background:#fdecea;border-left:4px solid #b00020;padding:0.4em 0.6em;margin:0.3em 0"
)
_PRE_STYLE = "font-size:12px;line-height:1.35;margin:0.3em 0;white-space:pre;overflow-x:auto"


# --------------------------------------------------------------------------- matrices as text
def format_matrix(M: Any) -> str:
    """A matrix as editable text: one row per line, entries separated by two spaces.

    Every entry is written with ``repr(float)``, so :func:`parse_matrix` gives
    back exactly the same numbers.

    Raises
    ------
    ValueError
        ``matrix`` is not 2-D.

    Examples
    --------
    >>> print(format_matrix([[1.0, 0.5], [-2.0, 0.25]]))
    1.0  0.5
    -2.0  0.25
    """
    arr = np.asarray(M, dtype=np.float64)
    if arr.ndim != 2:
        raise ValueError(f"format_matrix needs a 2-D matrix; got shape {arr.shape}")
    return "\n".join("  ".join(repr(float(x)) for x in row) for row in arr)


def parse_matrix(text: str, name: str) -> np.ndarray:
    """Numbers typed one row per line into a 2-D float64 array.

    Entries are separated by spaces, commas or semicolons; blank lines are
    skipped; brackets are ignored, so ``[[1, 2], [3, 4]]`` pasted on two lines
    works too.

    Parameters
    ----------
    text : str
        The matrix, one row per line.
    name : str
        The matrix's name, used in error messages (``"Q"``, ``"K"``, ``"V"``).

    Returns
    -------
    ndarray, shape (n_rows, n_cols)

    Raises
    ------
    ValueError
        No rows, an entry that is not a finite number (the message names the
        matrix, row and entry), or rows of different lengths.

    Examples
    --------
    >>> parse_matrix("1, 2\\n3 4", "Q")
    array([[1., 2.],
           [3., 4.]])
    >>> parse_matrix("1 2\\n3 x", "K")
    Traceback (most recent call last):
    ...
    ValueError: K, row 2, entry 2: 'x' is not a number
    """
    rows: list[list[float]] = []
    for line in text.replace("[", " ").replace("]", " ").splitlines():
        entries = [e for e in _NUMBER_SEP.split(line.strip()) if e]
        if not entries:
            continue
        row = []
        for c, entry in enumerate(entries, start=1):
            try:
                value = float(entry)
            except ValueError:
                where = f"{name}, row {len(rows) + 1}, entry {c}"
                raise ValueError(f"{where}: {entry!r} is not a number") from None
            if not math.isfinite(value):
                where = f"{name}, row {len(rows) + 1}, entry {c}"
                raise ValueError(f"{where}: {entry!r} is not a finite number")
            row.append(value)
        if rows and len(row) != len(rows[0]):
            raise ValueError(
                f"{name}, row {len(rows) + 1} has {len(row)} numbers but row 1 has {len(rows[0])}: "
                "every row needs the same number of columns"
            )
        rows.append(row)
    if not rows:
        raise ValueError(f"{name} is empty: type one row of numbers per line")
    return np.array(rows, dtype=np.float64)  # (n_rows, n_cols)


# --------------------------------------------------------------------------- the explorer object
def _png_output(fig: Figure) -> dict[str, Any]:
    """``fig`` as one display_data output of an Output widget (no IPython shell needed)."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=_DPI)
    return {
        "output_type": "display_data",
        "data": {
            "image/png": base64.b64encode(buf.getvalue()).decode("ascii"),
            "text/plain": f"<Figure: {fig.get_label() or 'live explorer'}>",
        },
        "metadata": {},
    }


def _widget_view(widget: Any) -> dict[str, Any]:
    """The widget-view entry (``{"version_major", "version_minor", "model_id"}``) of ``widget``.

    ipywidgets 8 returns it from ``widget._repr_mimebundle_()``. ipywidgets 7
    widgets have no ``_repr_mimebundle_``: ``Widget._ipython_display_`` builds
    the entry (format version 2.0 of the Jupyter widget-view schema, the same
    numbers as 8) and publishes it directly, then fires the widget's
    ``on_displayed`` callbacks. Without a method to ask, this builds the same
    entry from ``widget.model_id`` and fires the callbacks as 7 does, so the
    explorer can put the view into one bundle with its note.

    Raises
    ------
    TypeError
        ``widget`` has no view to display (no widget-view entry or model id).
    """
    own_bundle = getattr(widget, "_repr_mimebundle_", None)
    if own_bundle is not None:  # ipywidgets 8
        view = (own_bundle() or {}).get(WIDGET_VIEW_MIMETYPE)
    else:  # ipywidgets 7: what Widget._ipython_display_ publishes
        view = {"version_major": 2, "version_minor": 0, "model_id": getattr(widget, "model_id", None)}
        handle_displayed = getattr(widget, "_handle_displayed", None)
        if view["model_id"] and handle_displayed is not None:
            handle_displayed()
    if not view or not view.get("model_id"):
        raise TypeError(f"widget {type(widget).__name__} has no widget view to display (no model id)")
    return dict(view)


def _note_html(title: str, what: str) -> str:
    return (
        '<div class="admonition note attnlib-live-note" role="note">\n'
        f'<p class="admonition-title">Live explorer: {html.escape(title)}</p>\n'
        f"<p>{html.escape(what)}</p>\n"
        f"<p>{html.escape(LIVE_NOTE)}</p>\n"
        "</div>"
    )


class LiveExplorer:
    """A live explorer: widgets, the state they last computed, and its drawing.

    Build one with :func:`explore` or :func:`live_scaling_explorer`. Every change
    of a control calls :meth:`redraw`, which reads all the controls, computes
    with attnlib and, if that succeeds, replaces ``state``,
    ``last_trace``, ``figure`` and the text; if the input is invalid
    it shows the message in the widget and keeps the previous state.

    Attributes
    ----------
    widget : ipywidgets.VBox
        The whole explorer, for ``display``.
    controls : dict of str to ipywidgets.Widget
        The controls by name; setting a control's ``value`` redraws.
    state : dict
        What the last successful redraw computed (inputs and results).
    last_trace : AttentionTrace or None
        The trace drawn by :func:`explore` (None for :func:`live_scaling_explorer`).
    figure : matplotlib.figure.Figure
        The figure of the last successful redraw (not registered with pyplot).
    axes : dict of str to matplotlib Axes
        Its axes by name: ``"weights"`` (heatmap) and ``"row"`` (bars) for
        :func:`explore`, ``"weights"`` (bars) for :func:`live_scaling_explorer`.
    text : str
        The text shown under the figure (``trace.explain(i)`` for :func:`explore`).
    error : str or None
        The message shown for invalid input, None after a successful redraw.
    n_redraws : int
        How many redraws succeeded.
    """

    def __init__(
        self,
        *,
        title: str,
        what: str,
        controls: dict[str, widgets.Widget],
        layout: Sequence[widgets.Widget],
        compute: Callable[[dict[str, Any]], dict[str, Any]],
        draw: Callable[[dict[str, Any]], tuple[Figure, dict[str, Axes], str]],
    ) -> None:
        self.title = title
        self.what = what
        self.controls = controls
        self._compute = compute
        self._draw = draw
        self.state: dict[str, Any] = {}
        self.last_trace: AttentionTrace | None = None
        self.figure: Figure | None = None
        self.axes: dict[str, Axes] = {}
        self.text = ""
        self.error: str | None = None
        self.n_redraws = 0
        self.plot = widgets.Output(layout={"min_height": "200px"})
        self.text_view = widgets.HTML()
        self.error_view = widgets.HTML()
        heading = widgets.HTML(f"<b>{html.escape(title)}</b>")
        self.widget = widgets.VBox([heading, *layout, self.error_view, self.plot, self.text_view])
        self.redraw()
        for control in controls.values():
            control.observe(self._on_change, names="value")

    def _on_change(self, change: dict[str, Any]) -> None:
        self.redraw()

    def redraw(self) -> bool:
        """Recompute from the controls and redraw; False (and a message shown) on invalid input."""
        values = {name: control.value for name, control in self.controls.items()}
        try:
            state = self._compute(values)
        except (ValueError, TypeError, KeyError, IndexError) as err:  # attnlib's input errors
            # str(KeyError) adds quotes around the message; its first argument is the message itself.
            self.error = str(err.args[0]) if isinstance(err, KeyError) and err.args else str(err)
            self.error_view.value = (
                f'<div role="alert" style="{_ERROR_STYLE}">{html.escape(self.error)}<br>'
                "<small>The figure below still shows the last valid input.</small></div>"
            )
            return False
        fig, axes, text = self._draw(state)
        self.state, self.figure, self.axes, self.text = state, fig, axes, text
        self.last_trace = state.get("trace")
        self.error = None
        self.error_view.value = ""
        self.plot.outputs = (_png_output(fig),)
        self.text_view.value = f'<pre style="{_PRE_STYLE}">{html.escape(text)}</pre>'
        self.n_redraws += 1
        return True

    # -- display -------------------------------------------------------------
    def note_html(self) -> str:
        """The ``text/html`` the static book shows instead of the controls."""
        return _note_html(self.title, self.what)

    def __repr__(self) -> str:
        return f"<live explorer {self.title!r}: runs in Jupyter, Binder or Colab>"

    def _repr_mimebundle_(
        self, include: Any = None, exclude: Any = None
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """One output: the widget view (live kernels), the note (the static book) and a text form.

        Front ends with a widget manager (JupyterLab, Notebook, Colab) render the
        view; the book's build drops it and renders the note. Works under
        ipywidgets 7 and 8 (``_widget_view``).
        """
        data = {
            WIDGET_VIEW_MIMETYPE: _widget_view(self.widget),  # ipywidgets 7 or 8
            "text/html": self.note_html(),
            "text/plain": repr(self),
        }
        return data, {_OUTPUT_MARK: {"title": self.title}}


# --------------------------------------------------------------------------- explore
def _matrix_box(name: str, M: np.ndarray, shape: str) -> widgets.Textarea:
    rows = M.shape[0]
    return widgets.Textarea(
        value=format_matrix(M),
        description=f"{name} {shape}",
        continuous_update=False,  # redraw when the reader leaves the box, not on every key
        rows=max(3, rows + 1),
        layout={"width": "auto", "flex": "1 1 0"},
        style={"description_width": "initial"},
    )


def explore(Q: Any, K: Any, V: Any, tokens: Sequence[str] | None = None) -> LiveExplorer:
    """Edit ``Q``, ``K`` and ``V``, pick a query and a scale, and watch the trace change.

    Each change calls :func:`attnlib.trace.trace_attention` on the edited
    matrices and draws the weight matrix (:func:`attnlib.plots.heatmap`), the
    chosen query's weights (:func:`attnlib.plots.bars`) and the text of
    :meth:`~attnlib.trace.AttentionTrace.explain` for that query.

    Parameters
    ----------
    Q : (n_q, d_k) array_like
    K : (n_k, d_k) array_like
    V : (n_k, d_v) array_like
    tokens : sequence of str, length n_q, optional
        Query labels, as in :func:`~attnlib.trace.trace_attention`.

    Returns
    -------
    LiveExplorer
        Controls ``"Q"``, ``"K"``, ``"V"`` (Textarea, one row per line),
        ``"token"`` (Dropdown; its value is the query's index, its label the
        token) and ``"scale"`` (ToggleButtons with the values of
        :data:`SCALES`). ``state`` holds ``Q``, ``K``, ``V``, ``i``,
        ``scale_mode``, ``scale`` and ``trace``.

    Raises
    ------
    TypeError, ValueError
        As :func:`~attnlib.trace.trace_attention` for the initial inputs.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> from attnlib.examples import cat_sat_on_mat
    >>> ex = cat_sat_on_mat()
    >>> live = explore(ex.Q, ex.K, ex.V, ex.tokens)
    >>> live.controls["token"].label = "cat"
    >>> live.text.splitlines()[0]
    "Query 1 'cat': attention over 5 keys, d_k = 4, d_v = 4"
    >>> live.controls["Q"].value = "1 2 oops"
    >>> print(live.error)
    Q, row 1, entry 3: 'oops' is not a number
    >>> live.state["i"]  # the last valid state is kept
    1
    """
    first = trace_attention(Q, K, V, tokens=tokens)  # validates the initial inputs, as trace_attention does
    labels = first.tokens
    controls: dict[str, widgets.Widget] = {
        "Q": _matrix_box("Q", first.Q, "(n_q, d_k)"),
        "K": _matrix_box("K", first.K, "(n_k, d_k)"),
        "V": _matrix_box("V", first.V, "(n_k, d_v)"),
        "token": widgets.Dropdown(
            options=[(t, i) for i, t in enumerate(labels)], value=0, description="query",
        ),
        "scale": widgets.ToggleButtons(
            options=list(SCALES), value="inverse_sqrt", description="scale",
            tooltips=["divide the scores by √d_k (attention as published)", "no scaling",
                      "divide the scores by d_k"],
        ),
    }
    layout = [
        widgets.HBox([controls["Q"], controls["K"], controls["V"]]),
        widgets.HBox([controls["token"], controls["scale"]]),
    ]

    def compute(values: dict[str, Any]) -> dict[str, Any]:
        Qe = parse_matrix(values["Q"], "Q")
        Ke = parse_matrix(values["K"], "K")
        Ve = parse_matrix(values["V"], "V")
        if Qe.shape[0] != len(labels):
            raise ValueError(
                f"Q has {Qe.shape[0]} rows but there are {len(labels)} tokens ({', '.join(labels)}): "
                "one row per query token"
            )
        scale = scale_for(Qe.shape[1], values["scale"])
        tr = trace_attention(Qe, Ke, Ve, tokens=labels, scale=scale)
        i = int(values["token"])
        return {"Q": Qe, "K": Ke, "V": Ve, "i": i, "scale_mode": values["scale"], "scale": scale,
                "trace": tr, "explain": tr.explain(i)}

    def draw(state: dict[str, Any]) -> tuple[Figure, dict[str, Axes], str]:
        tr: AttentionTrace = state["trace"]
        i = state["i"]
        fig = Figure(figsize=(10.0, max(3.2, 0.55 * tr.n_q + 1.6)), layout="constrained", label="explore")
        ax_map, ax_row = fig.subplots(1, 2)
        plots.heatmap(tr.weights, x_labels=tr.key_tokens, y_labels=tr.tokens, ax=ax_map,
                      title="weights A (rows sum to 1)", vmax=1.0)
        plots.bars(tr.weights[i], labels=tr.key_tokens, ax=ax_row, ylabel="weight",
                   highlight=int(np.argmax(tr.weights[i])),
                   title=f"query {tr.tokens[i]!r}: its row of A")
        ax_row.set_ylim(0.0, 1.12)
        return fig, {"weights": ax_map, "row": ax_row}, state["explain"]

    return LiveExplorer(
        title="edit Q, K and V",
        what=(
            "Edit the matrices Q, K and V, pick a query token and a scale (1/√d_k, none or 1/d_k), "
            "and the weights and the step-by-step arithmetic of that query are recomputed."
        ),
        controls=controls, layout=layout, compute=compute, draw=draw,
    )


# --------------------------------------------------------------------------- scaling
def scaling_draws(n_keys: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The random query and keys of :func:`live_scaling_explorer`, for every ``d_k`` at once.

    ``rng = np.random.default_rng(seed)`` draws the query ``q`` of length
    1024 first, then the keys ``K`` of shape ``(n_keys, 1024)``; the
    explorer uses ``q[:d_k]`` and ``K[:, :d_k]``, so growing ``d_k`` adds
    coordinates and keeps the earlier ones.
    """
    rng = np.random.default_rng(seed)
    q = rng.standard_normal(_MAX_D_K)  # (1024,)
    K = rng.standard_normal((n_keys, _MAX_D_K))  # (n_keys, 1024)
    return q, K


def live_scaling_explorer(n_keys: int = 8, seed: int = 0) -> LiveExplorer:
    """Move ``d_k`` and switch the √d_k scaling on and off: watch the softmax saturate.

    One standard-normal query against ``n_keys`` standard-normal keys (see
    :func:`scaling_draws`); for the chosen ``d_k`` the weights come from
    :func:`attnlib.core.scaled_dot_product_attention` (``scale=None`` scaled,
    ``scale=1.0`` unscaled), and :func:`attnlib.stats.max_weight` and
    :func:`attnlib.stats.entropy` summarise them.

    Parameters
    ----------
    n_keys : int
        Number of keys, 2 or more.
    seed : int
        Seed of the draws.

    Returns
    -------
    LiveExplorer
        Controls ``"d_k"`` (IntSlider from 1 to 1024; its readout is editable,
        so any value can be typed) and ``"scaled"`` (ToggleButtons, True or
        False). ``state`` holds ``d_k``, ``scaled``, ``q``, ``K``, ``scores``,
        ``weights`` (shape ``(n_keys,)``), ``max_weight`` and ``entropy``.

    Raises
    ------
    TypeError
        ``n_keys`` or ``seed`` not an integer.
    ValueError
        ``n_keys`` below 2.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> live = live_scaling_explorer()
    >>> live.controls["d_k"].value = 512
    >>> live.controls["scaled"].value = False
    >>> bool(live.state["max_weight"] > 0.9)
    True
    """
    n_keys = _v.check_positive_int(n_keys, "n_keys")
    if n_keys < 2:
        raise ValueError(f"n_keys must be at least 2 (one key always gets weight 1); got {n_keys}")
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, numbers.Integral):
        raise TypeError(f"seed must be an integer; got {type(seed).__name__} {seed!r}")
    q_all, K_all = scaling_draws(n_keys, int(seed))
    keys = [f"k{j}" for j in range(n_keys)]
    V = np.eye(n_keys)  # (n_keys, n_keys): the output is the weights themselves
    controls: dict[str, widgets.Widget] = {
        "d_k": widgets.IntSlider(value=64, min=1, max=_MAX_D_K, description="d_k",
                                 continuous_update=False, layout={"width": "32em"}),
        "scaled": widgets.ToggleButtons(options=[("scaled by 1/√d_k", True), ("unscaled", False)],
                                        value=True, description="scores"),
    }
    layout = [widgets.HBox([controls["d_k"], controls["scaled"]])]

    def compute(values: dict[str, Any]) -> dict[str, Any]:
        d_k = int(values["d_k"])
        if not 1 <= d_k <= _MAX_D_K:
            raise ValueError(f"d_k must lie between 1 and {_MAX_D_K}; got {d_k}")
        scaled = bool(values["scaled"])
        q = q_all[None, :d_k]  # (1, d_k)
        K = K_all[:, :d_k]  # (n_keys, d_k)
        _, W = scaled_dot_product_attention(q, K, V, scale=None if scaled else 1.0, return_weights=True)
        w = W[0]  # (n_keys,)
        scores = (q @ K.T)[0]  # (n_keys,)
        return {"d_k": d_k, "scaled": scaled, "q": q[0], "K": K, "scores": scores, "weights": w,
                "max_weight": float(stats.max_weight(w)), "entropy": float(stats.entropy(w))}

    def draw(state: dict[str, Any]) -> tuple[Figure, dict[str, Axes], str]:
        d_k, w = state["d_k"], state["weights"]
        how = "scaled by 1/√d_k" if state["scaled"] else "unscaled"
        fig = Figure(figsize=(7.0, 3.4), layout="constrained", label="scaling")
        ax = fig.subplots()
        plots.bars(w, labels=keys, ax=ax, ylabel="weight", highlight=int(np.argmax(w)),
                   title=f"d_k = {d_k}, scores {how}")
        ax.set_ylim(0.0, 1.12)
        uniform = math.log(n_keys)
        text = "\n".join([
            f"d_k = {d_k}; {n_keys} keys; scores {how}",
            f"raw scores q·k: standard deviation {np.std(state['scores']):.2f} "
            f"(√d_k = {math.sqrt(d_k):.2f} expected)",
            f"largest weight {state['max_weight']:.4f} (1 = all weight on one key, "
            f"{1 / n_keys:.4f} = uniform)",
            f"entropy {state['entropy']:.4f} nats (0 = one key, log {n_keys} = {uniform:.4f} = uniform)",
        ])
        return fig, {"weights": ax}, text

    return LiveExplorer(
        title="d_k and the scaling",
        what=(
            f"Choose d_k from 1 to {_MAX_D_K} and switch the 1/√d_k scaling on or off: the bars show the "
            f"weights of one random query over {n_keys} random keys, with their largest weight and entropy."
        ),
        controls=controls, layout=layout, compute=compute, draw=draw,
    )
