"""Figures that stay interactive in the static HTML book, for every reader.

Every state of a figure is computed by attnlib in Python, with its numbers in words and as a data
table; the browser only switches between them (native buttons and range inputs a keyboard operates,
each state announced to screen readers). Nothing is computed in JavaScript, and nothing is fetched
from another host: the book serves its own plotly.js (a partial bundle, loaded only when a figure
nears the viewport) on pages that show such a figure.

* :mod:`attnlib.interactive._render` – :class:`~attnlib.interactive._render.StaticFigure`,
  :class:`~attnlib.interactive._render.ExplorerState`, :class:`~attnlib.interactive._render.DataTable`
  (deterministic HTML plus Plotly's mimetype for JupyterLab); ``explorer.js`` beside it is the browser
  side
* :mod:`attnlib.interactive.trace_explorers` – :func:`~attnlib.interactive.trace_explorers.pipeline_stepper`
  and :func:`~attnlib.interactive.trace_explorers.hover_heatmap` for one
  :class:`~attnlib.trace.AttentionTrace`
* :mod:`attnlib.interactive.qkv_explorers` – the "Cat sits" stepper and the click-a-word
  explorer of chapter 2
* :mod:`attnlib.interactive.scaling_explorers` – chapter 4's static scaling and variance explorers
  (:func:`~attnlib.interactive.scaling_explorers.scaling_explorer`,
  :func:`~attnlib.interactive.scaling_explorers.variance_explorer`)
* :mod:`attnlib.interactive.beyond_explorers` – chapter 5's causal-mask and heads explorers
* :mod:`attnlib.interactive.code_explorers` – chapter 6's overflow explorer and chapter 7's
  online-softmax explorer
* :mod:`attnlib.interactive.live` – ipywidgets explorers for a live kernel
  (:func:`~attnlib.interactive.live.explore`, :func:`~attnlib.interactive.live.live_scaling_explorer`);
  the static book shows a note instead
"""

from attnlib.interactive import _render, beyond_explorers, live, qkv_explorers, trace_explorers
from attnlib.interactive._render import *  # noqa: F403
from attnlib.interactive.beyond_explorers import *  # noqa: F403
from attnlib.interactive.code_explorers import online_softmax_explorer, stability_explorer
from attnlib.interactive.live import *  # noqa: F403
from attnlib.interactive.qkv_explorers import *  # noqa: F403
from attnlib.interactive.scaling_explorers import scaling_explorer, variance_explorer
from attnlib.interactive.trace_explorers import *  # noqa: F403

__all__ = [
    *_render.__all__,
    *trace_explorers.__all__,
    *live.__all__,
    *qkv_explorers.__all__,
    *beyond_explorers.__all__,
    "online_softmax_explorer",
    "scaling_explorer",
    "stability_explorer",
    "variance_explorer",
]
