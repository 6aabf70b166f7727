"""Shared machinery: a Plotly figure that stays interactive in the static HTML book.

:class:`StaticFigure` wraps a ``plotly.graph_objects.Figure`` whose every state
was computed in Python. In a notebook it displays as a bundle of two outputs:

* ``text/html``: the figure as a ``<figure>`` with a caption, a description for
  screen readers and the ``<div class="plotly-graph-div">`` plus the inline
  ``Plotly.newPlot`` call. No plotly.js, no MathJax, no CDN: the book serves
  plotly.min.js itself (``book/_ext/offline_book.py``) on pages that have one.
* ``application/vnd.plotly.v1+json``: the same figure for JupyterLab, VS Code
  and other front ends that render Plotly's own mimetype.

Colab renders neither a page's plotly.js nor Plotly's mimetype: it shows each output's
``text/html`` alone in a frame. There (``google.colab`` imported) the HTML loads plotly.js
itself from Plotly's CDN, as Plotly's own Colab renderer does; Colab is online anyway. The
book's pages never do.

The output is deterministic (a fixed ``div_id``, no uids, no timestamps) and the
same on every machine: every float in the figure is rounded to
:data:`FIGURE_SIGNIFICANT_DIGITS` significant digits, far coarser than the last-bit
differences that another CPU, BLAS kernel or summation order leaves in a computed
value, and far finer than a screen can show. So nbval can compare it anywhere.

:class:`MystNbPlotlyMime` is a myst-nb mime-render plugin (entry point group
``myst_nb.mime_renderers``): it tells myst-nb that the Plotly mimetype of a
:class:`StaticFigure` is handled by the ``text/html`` beside it, so the build
renders the HTML without the "skipping unknown output mime type" warning. A
bare Plotly output without that HTML still warns.
"""

from __future__ import annotations

import base64
import html
import json
import math
import re
import sys
import warnings
from typing import Any

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio

__all__ = ["FIGURE_SIGNIFICANT_DIGITS", "PLOTLY_CONFIG", "PLOTLY_MIMETYPE", "StaticFigure", "show"]

PLOTLY_MIMETYPE = "application/vnd.plotly.v1+json"

#: Client-side options of every figure: no Plotly logo, no "send to cloud" button
#: (plotly.js 3 has no "Edit in Chart Studio" link left to switch off), no MathJax,
#: resize with the page.
PLOTLY_CONFIG: dict[str, Any] = {
    "displaylogo": False,
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
_VISUALLY_HIDDEN = (
    "position:absolute;width:1px;height:1px;margin:-1px;padding:0;overflow:hidden;"
    "clip:rect(0 0 0 0);white-space:nowrap;border:0"
)
_CARD = "margin:1em 0;padding:0.5em;border-radius:6px;background:#ffffff;max-width:100%;overflow-x:auto"


def _check_text(value: Any, name: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise TypeError(f"{name} must be a non-empty str; got {type(value).__name__} {value!r}")
    return value


class StaticFigure:
    """A Plotly figure with a fixed id, a caption and a text alternative.

    Parameters
    ----------
    fig : plotly.graph_objects.Figure
        Every state already in the figure (traces, buttons, sliders).
    div_id : str
        The id of the figure's ``<div>``: a letter, then letters, digits, ``-``
        or ``_``. Fixed, so the output is the same on every run; unique per page.
    caption : str
        Shown under the figure.
    alt : str
        What the figure shows, for readers who cannot see it (a visually hidden
        description the ``<figure>`` points to with ``aria-describedby``).

    Raises
    ------
    TypeError
        ``fig`` is not a Figure, ``caption`` or ``alt`` not a non-empty str.
    ValueError
        ``div_id`` is not a valid fixed id.

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

    def __init__(self, fig: go.Figure, *, div_id: str, caption: str, alt: str) -> None:
        if not isinstance(fig, go.Figure):
            raise TypeError(f"fig must be a plotly.graph_objects.Figure; got {type(fig).__name__}")
        if not isinstance(div_id, str) or not _DIV_ID.match(div_id):
            raise ValueError(
                f"div_id must start with a letter and hold only letters, digits, '-' and '_'; got {div_id!r}"
            )
        self.fig = fig
        self.div_id = div_id
        self.caption = _check_text(caption, "caption")
        self.alt = _check_text(alt, "alt")

    def __repr__(self) -> str:
        return f"StaticFigure(div_id={self.div_id!r})"

    def to_html(self) -> str:
        """The ``<figure>`` for the static page; it needs ``window.Plotly`` defined before it runs."""
        height = self.fig.layout.height
        with warnings.catch_warnings():
            # Plotly 5 (Colab ships 5.24) does not know plotly.js 3's typesetMath: it warns on stderr,
            # then passes the option on unchanged.
            warnings.filterwarnings("ignore", message=r"\s*Unrecognized config options supplied",
                                    category=UserWarning)
            plot = pio.to_html(
                self._figure_json(),
                include_plotlyjs="cdn" if _in_colab() else False,
                include_mathjax=False,
                full_html=False,
                div_id=self.div_id,
                config=PLOTLY_CONFIG,
                validate=True,
                default_height=f"{int(height)}px" if height else "100%",
            )
        did = self.div_id
        return (
            f'<figure class="attnlib-explorer" id="{did}-figure" aria-describedby="{did}-alt">\n'
            f'<p id="{did}-alt" style="{_VISUALLY_HIDDEN}">{html.escape(self.alt)}</p>\n'
            f'<div class="attnlib-explorer-card" style="{_CARD}">\n{plot}\n</div>\n'
            f"<figcaption>{html.escape(self.caption)}</figcaption>\n"
            "</figure>"
        )

    def _figure_json(self) -> dict[str, Any]:
        """Data and layout as plain JSON (arrays as lists, no uids), floats rounded."""
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
        data = {
            "text/html": self.to_html(),
            PLOTLY_MIMETYPE: self.to_plotly_json(),
            "text/plain": f"<interactive figure {self.div_id!r}: {self.alt}>",
        }
        return data, {_OUTPUT_MARK: {"div_id": self.div_id}}


def _in_colab() -> bool:
    """True in a Colab kernel, whose outputs are isolated frames that must load plotly.js themselves."""
    return "google.colab" in sys.modules


def show(fig: go.Figure, *, div_id: str, caption: str, alt: str) -> StaticFigure:
    """Wrap ``fig`` for display in the book: see :class:`StaticFigure`.

    Returns the :class:`StaticFigure`; as the last expression of a cell it
    displays itself.
    """
    return StaticFigure(fig, div_id=div_id, caption=caption, alt=alt)


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
