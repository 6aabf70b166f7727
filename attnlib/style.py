"""The book's one look for matplotlib: the colour-blind-safe palette and colormap, and sharp figures.

:data:`PALETTE` (Okabe–Ito) and :data:`CMAP` (viridis) are the colours every figure of the book uses,
the Plotly explorers included; :func:`use_book_style` sets matplotlib's defaults to the book's look and,
in Jupyter (and Colab), shows figures as sharp 2× PNGs (:func:`hidpi_png`). The figures themselves are
in :mod:`attnlib.plots`.
"""

from __future__ import annotations

import base64
import io
import numbers
from typing import Any

import matplotlib as mpl
import numpy as np
from cycler import cycler
from matplotlib.figure import Figure

from attnlib import _validation as _v

__all__ = ["CMAP", "PALETTE", "hidpi_png", "use_book_style"]


#: Eight colours that stay distinguishable under the common forms of
#: colour-vision deficiency (Okabe and Ito, 2008, "Color Universal Design"). The
#: order is the order of the book's colour cycle.
PALETTE: dict[str, str] = {
    "blue": "#0072B2",
    "orange": "#E69F00",
    "green": "#009E73",
    "vermillion": "#D55E00",
    "purple": "#CC79A7",
    "sky": "#56B4E9",
    "yellow": "#F0E442",
    "black": "#000000",
}

#: The sequential colormap of weights, perceptually uniform and readable with
#: colour-vision deficiencies (dark purple = low, yellow = high).
CMAP: str = "viridis"

_BOOK_RC: dict[str, Any] = {
    "axes.prop_cycle": cycler(color=list(PALETTE.values())),
    "image.cmap": CMAP,
    "font.size": 11.0,
    "axes.titlesize": 12.0,
    "axes.labelsize": 11.0,
    "xtick.labelsize": 10.0,
    "ytick.labelsize": 10.0,
    "legend.fontsize": 10.0,
    "legend.frameon": False,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": False,
    "grid.color": "#dddddd",
    "grid.linewidth": 0.6,
    "axes.axisbelow": True,
    "lines.linewidth": 1.8,
    "figure.dpi": 100.0,
    "savefig.dpi": 150.0,
    "savefig.bbox": "tight",
    "figure.facecolor": "white",
    "savefig.facecolor": "white",
    "svg.hashsalt": "attnlib",  # SVG element ids are then the same on every build
    "svg.fonttype": "path",  # text as paths: the SVG looks the same without our fonts
    "hatch.linewidth": 0.8,
}


def use_book_style(*, hidpi: bool = True) -> None:
    """Give every matplotlib figure from now on the book's look.

    Sets ``matplotlib.rcParams``: the Okabe–Ito colour cycle, :data:`CMAP`
    as the default colormap, readable font sizes, no top or right spines,
    no grid, ``figure.dpi = 100`` and ``savefig.dpi = 150`` for the web, and
    a fixed ``svg.hashsalt`` so SVG files are byte-for-byte reproducible
    (pass ``metadata={"Date": None}`` to ``savefig`` to drop the one
    timestamp matplotlib writes). Nothing depends on the time or on the
    machine. Calling it again changes nothing.

    Parameters
    ----------
    hidpi : bool
        In IPython with the inline backend (Jupyter, Colab, the book's
        build), show every figure as a 2× PNG that displays at its 1× size
        (:func:`hidpi_png`), sharp on high-density screens. Still a PNG, so
        nbval, which does not compare PNGs, is unaffected. Outside IPython,
        or with another backend, nothing is changed. The backend itself is
        never switched.

    Raises
    ------
    TypeError
        ``hidpi`` is not a bool.

    Examples
    --------
    >>> import matplotlib
    >>> use_book_style()
    >>> matplotlib.rcParams["svg.hashsalt"]
    'attnlib'
    >>> matplotlib.rcParams["axes.prop_cycle"].by_key()["color"][:3]
    ['#0072B2', '#E69F00', '#009E73']
    """
    hidpi = _v.check_bool_flag(hidpi, "hidpi")
    if hidpi:
        _show_figures_as_hidpi_png()  # first: loading the inline backend may reset rcParams it manages
    mpl.rcParams.update(_BOOK_RC)  # type: ignore[arg-type]  # keys are rcParams names (tested)


def hidpi_png(fig: Figure, *, scale: int = 2) -> tuple[str, dict[str, int]] | None:
    """``fig`` as a PNG with ``scale`` × its pixels, to be shown at its 1× size.

    This is the form IPython's own "retina" format has (base64 text, and the
    1× ``width`` and ``height`` in the output's metadata, which Jupyter, Colab
    and myst-nb use as the displayed size), with one difference that keeps
    pages light: the pixels are reduced to a palette of at most 256 colours
    (median cut, no dithering), which for a plot's flat colours, lines and
    text is not visible, and makes the 2× PNG smaller than a plain 1× one.
    Colours and the colour scale of a heatmap keep their order; a transparent
    background stays transparent.

    Parameters
    ----------
    fig : matplotlib.figure.Figure
        The figure, saved with ``bbox_inches="tight"`` and its own face and
        edge colours, as IPython saves it.
    scale : int
        Pixels per displayed pixel, 1 to 4.

    Returns
    -------
    tuple of (str, dict) or None
        The base64-encoded PNG and ``{"width": w, "height": h}`` in displayed
        pixels; None for a figure with nothing drawn (as IPython returns).

    Raises
    ------
    TypeError
        ``fig`` is not a matplotlib Figure, or ``scale`` is not an integer.
    ValueError
        ``scale`` is outside 1 to 4.

    Examples
    --------
    >>> import base64, matplotlib
    >>> matplotlib.use("Agg")
    >>> import matplotlib.pyplot as plt
    >>> fig, ax = plt.subplots(figsize=(3.2, 2.0), dpi=100)
    >>> _ = ax.plot([0, 1], [1, 0])
    >>> data, size = hidpi_png(fig)
    >>> base64.b64decode(data)[:4], size["width"] > 200
    (b'\\x89PNG', True)
    >>> plt.close("all")
    """
    from PIL import Image  # matplotlib depends on Pillow

    if not isinstance(fig, Figure):
        raise TypeError(f"fig must be a matplotlib Figure; got {type(fig).__name__}")
    if isinstance(scale, (bool, np.bool_)) or not isinstance(scale, numbers.Integral):
        raise TypeError(f"scale must be an integer; got {type(scale).__name__} {scale!r}")
    if not 1 <= scale <= 4:
        raise ValueError(f"scale must be between 1 and 4; got {scale}")
    if not fig.axes and not fig.lines:
        return None
    raw = io.BytesIO()
    fig.savefig(raw, format="png", dpi=fig.dpi * int(scale), bbox_inches="tight",
                facecolor=fig.get_facecolor(), edgecolor=fig.get_edgecolor())
    image = Image.open(io.BytesIO(raw.getvalue()))
    image.load()
    opaque = image.mode != "RGBA" or image.getchannel("A").getextrema()[0] == 255
    if opaque:
        palette = image.convert("RGB").quantize(256, method=Image.Quantize.MEDIANCUT,
                                                dither=Image.Dither.NONE)
    else:  # median cut cannot keep an alpha channel; the octree method can
        palette = image.quantize(256, method=Image.Quantize.FASTOCTREE, dither=Image.Dither.NONE)
    out = io.BytesIO()
    palette.save(out, format="PNG", optimize=True)
    width, height = image.size
    size = {"width": width // int(scale), "height": height // int(scale)}
    return base64.b64encode(out.getvalue()).decode("ascii"), size


_INLINE_BACKENDS = ("inline", "module://matplotlib_inline.backend_inline")


def _inline_shell() -> Any:
    """The running IPython shell when figures go to its inline backend, else None."""
    try:
        from IPython import get_ipython
    except ImportError:
        return None
    shell = get_ipython()
    if shell is None or not hasattr(shell, "display_formatter"):
        return None
    try:
        backend = mpl.get_backend(auto_select=False)  # matplotlib >= 3.10: without resolving it
    except TypeError:
        backend = mpl.rcParams._get("backend")
    return shell if str(backend).lower() in _INLINE_BACKENDS else None


def _show_figures_as_hidpi_png() -> bool:
    """Make :func:`hidpi_png` IPython's one display format of figures; False where there is none."""
    shell = _inline_shell()
    if shell is None:
        return False
    # Loading the inline backend now lets it choose its default formats once, before ours (it does
    # that only on its first load, so a later first figure cannot undo this).
    import matplotlib_inline.backend_inline  # noqa: F401

    formatters = shell.display_formatter.formatters
    for formatter in formatters.values():  # one output per figure, as IPython's own choice does
        formatter.pop(Figure, None)
    formatters["image/png"].for_type(Figure, hidpi_png)
    return True
