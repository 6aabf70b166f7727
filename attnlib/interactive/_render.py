"""Shared machinery: explorers that stay interactive in the static HTML book, for every reader.

:class:`StaticFigure` wraps a ``plotly.graph_objects.Figure`` whose every state was computed in
Python, with the words and numbers of each state (:class:`ExplorerState`, :class:`DataTable`). In a
notebook it displays as a bundle of two outputs:

* ``text/html``: a ``<figure>`` with native controls (buttons and range inputs a keyboard operates,
  at least 44 px tall, wrapping on a phone), the plot, an ``aria-live`` region that announces each
  state's numbers in words, the shown state's text and data tables (every other state's in an inert
  ``<template>``), the caption, and the figure as JSON.
  ``explorer.js`` (served by the book, ``book/press/offline_book.py``) draws the plot with plotly.js
  once the figure nears the viewport, so plotly.js never delays the page's first paint, and runs the
  Plotly update a control's option holds. No plotly.js, no MathJax, no CDN in the output itself.
* ``application/vnd.plotly.v1+json``: the same figure, with Plotly's own buttons and sliders, for
  JupyterLab, VS Code and other front ends that render Plotly's mimetype.

Colab renders neither a page's scripts nor Plotly's mimetype: it shows each output's ``text/html``
alone in a frame. There (``google.colab`` imported) the HTML loads plotly.js itself from Plotly's CDN,
as Plotly's own Colab renderer does, and carries ``explorer.js`` inline; Colab is online anyway. The
book's pages never do.

The output is deterministic (a fixed ``div_id``, no uids, no timestamps) and the same on every
machine: every float in the figure is rounded to :data:`FIGURE_SIGNIFICANT_DIGITS` significant digits,
far coarser than the last-bit differences that another CPU, BLAS kernel or summation order leaves in
a computed value, and far finer than a screen can show. So nbval can compare it anywhere.

``MystNbPlotlyMime`` is a myst-nb mime-render plugin (entry point group
``myst_nb.mime_renderers``): it tells myst-nb that the Plotly mimetype of a :class:`StaticFigure` is
handled by the ``text/html`` beside it, so the build renders the HTML without the "skipping unknown
output mime type" warning. A bare Plotly output without that HTML still warns.
"""

from __future__ import annotations

import base64
import html
import itertools
import json
import math
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio

__all__ = [
    "FIGURE_SIGNIFICANT_DIGITS", "PLOTLY_CONFIG", "PLOTLY_MIMETYPE", "DataTable", "ExplorerState",
    "StaticFigure",
]

#: Plotly's own output type, which JupyterLab, VS Code and nbviewer draw with their plotly.js.
PLOTLY_MIMETYPE = "application/vnd.plotly.v1+json"

#: The client-side options of every figure. No Plotly logo, no toolbar, no "send to cloud" button
#: (plotly.js 3 has no "Edit in Chart Studio" link left to switch off), no MathJax,
#: resize with the page.
PLOTLY_CONFIG: dict[str, Any] = {
    "displaylogo": False,
    "displayModeBar": False,  # a mouse-only toolbar of 24 px buttons; the data tables hold the numbers
    "showSendToCloud": False,
    "typesetMath": False,
    "responsive": True,
    "modeBarButtonsToRemove": ["select2d", "lasso2d"],
}

#: Significant digits of every float a StaticFigure stores (its data, layout and slider states).
FIGURE_SIGNIFICANT_DIGITS = 6


def _rounded(value: Any) -> Any:
    """``value`` (plain JSON) with every float rounded to FIGURE_SIGNIFICANT_DIGITS significant digits."""
    if isinstance(value, (np.ndarray, np.generic)):
        return _rounded(value.tolist())
    if isinstance(value, float):
        return float(f"{value:.{FIGURE_SIGNIFICANT_DIGITS}g}") if math.isfinite(value) else value
    if isinstance(value, dict) and {"dtype", "bdata"} <= value.keys():
        return _rounded(_decoded(value))
    if isinstance(value, dict):
        return {key: _rounded(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_rounded(item) for item in value]
    return value


def _decoded(typed_array: dict[str, Any]) -> list[Any]:
    """A Plotly typed array (``{"dtype", "bdata", "shape"}``, base64 bytes) as nested lists."""
    array = np.frombuffer(base64.b64decode(typed_array["bdata"]), dtype=typed_array["dtype"])
    shape = typed_array.get("shape")
    if shape is not None:
        shape = [int(n) for n in str(shape).split(",")] if isinstance(shape, str) else list(shape)
        array = array.reshape(shape)
    return array.tolist()


# Marks the outputs of StaticFigure, so the myst-nb plugin drops only their Plotly mimetype.
_OUTPUT_MARK = "attnlib.interactive"
_DIV_ID = re.compile(r"^[A-Za-z][A-Za-z0-9_-]*$")
#: The controller of every explorer: native controls, Plotly drawn lazily, states shown and announced.
EXPLORER_JS = Path(__file__).with_name("explorer.js")
_METHODS = ("restyle", "relayout", "update")
# Inline styles keep a figure readable where the book's explorer.css is absent (Jupyter, Colab);
# the stylesheet adds the rest (touch targets, focus ring, dark theme) in the book.
_VISUALLY_HIDDEN = (
    "position:absolute;width:1px;height:1px;margin:-1px;padding:0;overflow:hidden;"
    "clip:rect(0 0 0 0);white-space:nowrap;border:0"
)
_CARD = "margin:0.5em 0;border-radius:6px;background:var(--attnlib-card-bg, #ffffff);max-width:100%"
#: The explorers' text colour, on their light card (the book's explorer.css recolours SVG text in dark mode).
TEXT = "#222222"
#: The explorers' monospace font, for the arithmetic they show.
MONO = "Menlo, Consolas, 'DejaVu Sans Mono', 'Liberation Mono', monospace"


def _check_text(value: Any, name: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise TypeError(f"{name} must be a non-empty str; got {type(value).__name__} {value!r}")
    return value


@dataclass(frozen=True)
class DataTable:
    """The numbers of an explorer's state as a table: what a screen reader reads and a phone can scroll.

    Parameters
    ----------
    caption : str
        What the table holds, e.g. ``"Weights of 'it' over the 11 words"``.
    columns : sequence of str
        Column headers; the first heads the row labels.
    rows : sequence of sequences of str
        One row per line, the row label first, every entry already formatted (computed in Python).

    Raises
    ------
    TypeError
        ``caption`` is not a non-empty str, or an entry is not a str.
    ValueError
        A row's length differs from the number of columns, or there are no rows.

    Examples
    --------
    >>> t = DataTable("Weights", ["key", "weight"], [["cat", "0.7"], ["sat", "0.3"]])
    >>> '<th scope="row">cat</th>' in t.to_html()
    True
    """

    caption: str
    columns: Sequence[str]
    rows: Sequence[Sequence[str]]

    def __post_init__(self) -> None:
        _check_text(self.caption, "caption")
        object.__setattr__(self, "columns", tuple(self.columns))
        object.__setattr__(self, "rows", tuple(tuple(r) for r in self.rows))
        if not self.rows:
            raise ValueError(f"table {self.caption!r} has no rows")
        for r, row in enumerate(self.rows):
            if len(row) != len(self.columns):
                raise ValueError(
                    f"table {self.caption!r}: row {r} has {len(row)} entries, "
                    f"but there are {len(self.columns)} columns {list(self.columns)}"
                )
        for entry in (*self.columns, *(e for row in self.rows for e in row)):
            if not isinstance(entry, str):
                raise TypeError(
                    f"table {self.caption!r}: every entry must be a formatted str; "
                    f"got {type(entry).__name__} {entry!r}"
                )

    def to_html(self) -> str:
        """A ``<table>`` in a box that scrolls sideways by itself (and by keyboard) when it is too wide."""
        e = html.escape
        head = "".join(f'<th scope="col">{e(c)}</th>' for c in self.columns)
        body = "".join(
            f'<tr><th scope="row">{e(row[0])}</th>' + "".join(f"<td>{e(v)}</td>" for v in row[1:]) + "</tr>"
            for row in self.rows
        )
        return (
            f'<div class="attnlib-table-scroll" tabindex="0" role="region" aria-label="{e(self.caption)}" '
            'style="overflow-x:auto;max-width:100%">'
            f'<table class="attnlib-data-table"><caption>{e(self.caption)}</caption>'
            f"<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>"
        )


@dataclass(frozen=True)
class ExplorerState:
    """What one state of an explorer says in words and numbers (every string computed in Python).

    Parameters
    ----------
    summary : str
        One or two sentences with the state's numbers in words. Shown under the figure, and announced
        to screen readers (an ``aria-live`` region) whenever a control switches to this state.
    lines : sequence of str
        Optional arithmetic, one step per line, shown in a block that wraps on a phone.
    tables : sequence of DataTable
        The numbers of the state. In a figure they sit in a "the numbers of this view" disclosure; in an
        explorer without a figure (``fig=None``) they are the content and are shown open.

    Raises
    ------
    TypeError
        ``summary`` is not a non-empty str, a line not a str, or a table not a DataTable.
    """

    summary: str
    lines: Sequence[str] = ()
    tables: Sequence[DataTable] = ()

    def __post_init__(self) -> None:
        _check_text(self.summary, "summary")
        object.__setattr__(self, "lines", tuple(self.lines))
        object.__setattr__(self, "tables", tuple(self.tables))
        for line in self.lines:
            if not isinstance(line, str):
                raise TypeError(f"lines must hold str; got {type(line).__name__} {line!r}")
        for table in self.tables:
            if not isinstance(table, DataTable):
                raise TypeError(f"tables must hold DataTable; got {type(table).__name__}")


@dataclass(frozen=True)
class _Control:
    kind: str  # "buttons" (a Plotly updatemenu) or "slider"
    label: str
    options: tuple[tuple[str, str, list[Any]], ...]  # (label, Plotly method, args)
    active: int


class StaticFigure:
    """An explorer: a Plotly figure with native controls, a caption, and its states in words and tables.

    Every state is computed in Python. In the HTML, Plotly's own buttons and sliders (the figure's
    ``layout.updatemenus`` and ``layout.sliders``) become native HTML controls: buttons that take Tab,
    Enter and Space, and range inputs that take the arrow keys, each at least 44 px tall. Choosing a state
    runs the Plotly update that the figure's button or slider step holds, shows that state's
    :class:`ExplorerState` (text and data tables) and announces its summary in an ``aria-live`` region.
    plotly.js is loaded only when the figure nears the viewport (``explorer.js``), so it never delays the
    first paint of the page. In JupyterLab and VS Code, Plotly's mimetype shows the figure with Plotly's
    own controls.

    Parameters
    ----------
    fig : plotly.graph_objects.Figure or None
        Every state already in the figure (traces, buttons, sliders). ``None`` for an explorer made of
        HTML only: then ``controls`` gives its controls and its states' tables are its content.
    div_id : str
        The id of the figure's ``<div>``: a letter, then letters, digits, ``-`` or ``_``. Fixed, so the
        output is the same on every run; unique per page.
    caption : str
        Shown under the figure.
    alt : str
        What the figure shows, for readers who cannot see it (the plot's accessible name).
    control_labels : sequence of str, optional
        The label of each control, updatemenus first, then sliders (default: each menu's or slider's
        ``name``, else its ``currentvalue.prefix``).
    states : mapping of tuple of int to ExplorerState, optional
        One state per combination of the controls' options, keyed by the chosen option of each control
        (in the order of ``control_labels``). Without it, each state says which options are chosen.
    controls : sequence of (str, sequence of str), optional
        Only with ``fig=None``: each control's label and option labels (shown as buttons; the first
        option is chosen at the start).

    Raises
    ------
    TypeError
        ``fig`` is not a Figure or None, ``caption`` or ``alt`` not a non-empty str, a state not an
        ExplorerState.
    ValueError
        ``div_id`` is not a valid fixed id; a button or slider step uses a method other than restyle,
        relayout or update; the labels or states do not match the controls.

    Examples
    --------
    >>> import plotly.graph_objects as go
    >>> sf = StaticFigure(go.Figure(go.Bar(y=[1, 2])), div_id="demo", caption="Two bars.",
    ...                   alt="A bar chart with two bars, 1 and 2.")
    >>> sf.to_html() == sf.to_html()
    True
    >>> 'id="demo"' in sf.to_html()
    True
    """

    def __init__(
        self,
        fig: go.Figure | None,
        *,
        div_id: str,
        caption: str,
        alt: str,
        control_labels: Sequence[str] | None = None,
        states: Mapping[Any, ExplorerState] | None = None,
        controls: Sequence[tuple[str, Sequence[str]]] | None = None,
    ) -> None:
        if fig is not None and not isinstance(fig, go.Figure):
            raise TypeError(f"fig must be a plotly.graph_objects.Figure or None; got {type(fig).__name__}")
        if not isinstance(div_id, str) or not _DIV_ID.match(div_id):
            raise ValueError(
                f"div_id must start with a letter and hold only letters, digits, '-' and '_'; got {div_id!r}"
            )
        self.fig = fig
        self.div_id = div_id
        self.caption = _check_text(caption, "caption")
        self.alt = _check_text(alt, "alt")
        if fig is None:
            if not controls:
                raise ValueError(
                    "an explorer without a figure (fig=None) needs controls=[(label, options), ...]"
                )
            self._controls = tuple(
                _Control("buttons", _check_text(label, "control label"),
                         tuple((_check_text(o, "option label"), "", []) for o in options), 0)
                for label, options in controls
            )
        else:
            if controls is not None:
                raise ValueError("controls= is only for fig=None; a figure's controls are its updatemenus "
                                 "and sliders")
            self._controls = self._figure_controls(control_labels)
        self.states = self._check_states(states)

    def __repr__(self) -> str:
        return f"StaticFigure(div_id={self.div_id!r})"

    # -- controls and states ------------------------------------------------------------------------
    def _figure_controls(self, labels: Sequence[str] | None) -> tuple[_Control, ...]:
        layout = self._figure_json()["layout"]
        raw = [("buttons", m) for m in layout.get("updatemenus", [])]
        raw += [("slider", s) for s in layout.get("sliders", [])]
        if labels is not None and len(labels) != len(raw):
            raise ValueError(
                f"control_labels has {len(labels)} labels but the figure has {len(raw)} controls "
                f"({sum(k == 'buttons' for k, _ in raw)} updatemenus, then "
                f"{sum(k == 'slider' for k, _ in raw)} sliders)"
            )
        controls = []
        for c, (kind, spec) in enumerate(raw):
            items = spec.get("buttons" if kind == "buttons" else "steps", [])
            if not items:
                raise ValueError(f"control {c} ({kind}) of figure {self.div_id!r} has no options")
            label = labels[c] if labels is not None else (
                spec.get("name") or (spec.get("currentvalue") or {}).get("prefix", "").strip(" :=") or "Show")
            options = []
            for k, item in enumerate(items):
                method = item.get("method", "restyle")
                if method not in _METHODS:
                    raise ValueError(
                        f"control {c} option {k} of figure {self.div_id!r} uses Plotly method {method!r}; "
                        f"explorers support {', '.join(_METHODS)}"
                    )
                options.append((str(item.get("label", k + 1)), method, list(item.get("args", []))))
            controls.append(_Control(kind, _check_text(label, "control label"), tuple(options),
                                     int(spec.get("active", 0) or 0)))
        return tuple(controls)

    def _check_states(
        self, states: Mapping[Any, ExplorerState] | None
    ) -> dict[tuple[int, ...], ExplorerState]:
        keys = list(itertools.product(*(range(len(c.options)) for c in self._controls)))
        if states is None:
            return {
                key: ExplorerState("; ".join(f"{c.label}: {c.options[k][0]}"
                                             for c, k in zip(self._controls, key, strict=True)) or self.alt)
                for key in keys
            }
        for value in states.values():
            if not isinstance(value, ExplorerState):
                raise TypeError(f"states must map to ExplorerState; got {type(value).__name__}")
        missing = [k for k in keys if k not in states]
        extra = [k for k in states if k not in set(keys)]
        if missing or extra:
            raise ValueError(
                f"states of figure {self.div_id!r} must have one entry per combination of the "
                f"{len(self._controls)} controls' options ({len(keys)} in all); missing {missing[:5]}, "
                f"unexpected {extra[:5]}"
            )
        return {key: states[key] for key in keys}

    # -- HTML -----------------------------------------------------------------------------------------
    def _controls_html(self) -> str:
        e, did, parts = html.escape, self.div_id, []
        for c, control in enumerate(self._controls):
            if control.kind == "buttons":
                buttons = "".join(
                    f'<button type="button" class="attnlib-option" data-control="{c}" data-option="{k}" '
                    f'aria-pressed="{"true" if k == control.active else "false"}">{e(label)}</button>'
                    for k, (label, _, _) in enumerate(control.options)
                )
                parts.append(
                    f'<div class="attnlib-control attnlib-buttons" role="group" aria-labelledby="{did}-c{c}">'
                    f'<span class="attnlib-control-label" id="{did}-c{c}">{e(control.label)}</span>'
                    f'<span class="attnlib-button-row">{buttons}</span></div>'
                )
            else:
                n, label = len(control.options), control.options[control.active][0]
                parts.append(
                    f'<div class="attnlib-control attnlib-slider">'
                    f'<label class="attnlib-control-label" for="{did}-c{c}">{e(control.label)}</label>'
                    f'<input type="range" id="{did}-c{c}" data-control="{c}" min="0" max="{n - 1}" step="1" '
                    f'value="{control.active}" aria-valuetext="{e(label)}" '
                    f'data-labels="{e(json.dumps([o[0] for o in control.options], ensure_ascii=False))}">'
                    f'<output for="{did}-c{c}" aria-hidden="true">{e(label)}</output>'
                    f'<span class="attnlib-slider-ends" aria-hidden="true">'
                    f"<span>{e(control.options[0][0])}</span><span>{e(control.options[-1][0])}</span></span></div>"
                )
        return f'<div class="attnlib-controls">{"".join(parts)}</div>' if parts else ""

    def _states_html(self) -> str:
        """The active state's panel, then every other state's panel in a ``<template>``.

        A template's content is parsed but inert: it is not rendered, styled or laid out, so a figure of
        60 states costs the page one panel of layout, not 60 (chapter 4: 4,500 elements). ``explorer.js``
        clones a panel into the page when its state is chosen; the book moves the template and the spec
        into a script the page loads when the figure nears the viewport (``book/press/offline_book.py``).
        """
        e, active, shown, more = html.escape, tuple(c.active for c in self._controls), "", []
        for key, state in self.states.items():
            lines = (f'<pre class="attnlib-state-lines">{e(chr(10).join(state.lines))}</pre>'
                     if state.lines else "")
            tables = "".join(t.to_html() for t in state.tables)
            if tables and self.fig is not None:
                tables = (f'<details class="attnlib-state-tables"><summary>The numbers of this view'
                          f"</summary>{tables}</details>")
            panel = (f'<div class="attnlib-state" data-state="{",".join(map(str, key))}">'
                     f'<p class="attnlib-state-summary">{e(state.summary)}</p>{lines}{tables}</div>')
            if key == active:
                shown = panel
            else:
                more.append(panel)
        template = f'<template class="attnlib-more">{"".join(more)}</template>' if more else ""
        return f'<div class="attnlib-states">{shown}{template}</div>'

    def _spec(self) -> dict[str, Any]:
        spec: dict[str, Any] = {"controls": [[[m, a] for _, m, a in c.options] for c in self._controls]}
        if self.fig is not None:
            fig = self._figure_json()
            layout = {k: v for k, v in fig["layout"].items() if k not in ("updatemenus", "sliders")}
            spec.update(data=fig["data"], layout=layout, config=PLOTLY_CONFIG)
        return spec

    def to_html(self) -> str:
        """The ``<figure>``: controls, the plot (drawn by ``explorer.js``), the states, the caption."""
        did = self.div_id
        spec = json.dumps(self._spec(), separators=(",", ":"), sort_keys=True).replace("</", "<\\/")
        plot = ""
        if self.fig is not None:
            height = self.fig.layout.height
            style = f"height:{int(height)}px;width:100%" if height else "height:450px;width:100%"
            plot = (
                f'<div class="attnlib-explorer-card" style="{_CARD}">'
                f'<div id="{did}" class="attnlib-plot" role="img" aria-label="{html.escape(self.alt)}" '
                f'style="{style}"></div></div>'
            )
        loader = ""
        if _in_colab() and self.fig is not None:
            # Colab shows each output alone in a frame: plotly.js from Plotly's CDN, the controller inline.
            from plotly.offline import get_plotlyjs_version

            loader = f'<script src="https://cdn.plot.ly/plotly-{get_plotlyjs_version()}.min.js"></script>'
        if _in_colab() or self.fig is None:
            # Without a plot there is no Plotly mimetype for JupyterLab: the HTML must work on its own.
            loader += f"<script>{EXPLORER_JS.read_text(encoding='utf-8')}</script>"
        return (
            f'<figure class="attnlib-explorer" id="{did}-figure" data-explorer="{did}" '
            f'aria-describedby="{did}-alt">\n'
            f'<p id="{did}-alt" style="{_VISUALLY_HIDDEN}">{html.escape(self.alt)}</p>\n'
            f"{self._controls_html()}\n{plot}\n"
            f'<p class="attnlib-live" role="status" aria-live="polite" aria-atomic="true" '
            f'style="{_VISUALLY_HIDDEN}"></p>\n'
            f"{self._states_html()}\n"
            f"<figcaption>{html.escape(self.caption)}</figcaption>\n"
            f'<script type="application/json" class="attnlib-spec">{spec}</script>{loader}\n'
            "</figure>"
        )

    def _figure_json(self) -> dict[str, Any]:
        """Data and layout as plain JSON (arrays as lists, no uids), floats rounded."""
        if self.fig is None:
            return {"data": [], "layout": {}}
        fig_json = json.loads(pio.to_json(self.fig, validate=True, remove_uids=True, engine="json"))
        return _rounded(fig_json)

    def to_plotly_json(self) -> dict[str, Any]:
        """The figure as Plotly's mimetype holds it (data, layout, config), as plain JSON."""
        fig_dict = self._figure_json()
        fig_dict["config"] = dict(PLOTLY_CONFIG)
        return fig_dict

    def _repr_html_(self) -> str:
        return self.to_html()

    def _repr_mimebundle_(
        self, include: Any = None, exclude: Any = None
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        data: dict[str, Any] = {"text/html": self.to_html(),
                "text/plain": f"<interactive figure {self.div_id!r}: {self.alt}>"}
        if self.fig is not None:
            data[PLOTLY_MIMETYPE] = self.to_plotly_json()
        return data, {_OUTPUT_MARK: {"div_id": self.div_id}}


def _in_colab() -> bool:
    """True in a Colab kernel, whose outputs are isolated frames that must load plotly.js themselves."""
    return "google.colab" in sys.modules


class MystNbPlotlyMime:
    """myst-nb plugin: the Plotly mimetype of a StaticFigure output renders as nothing.

    The ``text/html`` in the same output bundle renders the figure in the book;
    Plotly's mimetype is there for JupyterLab. Outputs not made by
    :class:`StaticFigure` are left to myst-nb, which warns about them.
    """

    mime_priority_overrides: tuple[tuple[str, str, int | None], ...] = ()

    @staticmethod
    def handle_mime(renderer: Any, data: Any, inline: bool) -> list[Any] | None:
        if data.mime_type == PLOTLY_MIMETYPE and _OUTPUT_MARK in (data.output_metadata or {}):
            return []
        return None
