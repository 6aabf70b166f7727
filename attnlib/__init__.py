"""attnlib: scaled dot-product attention, computed and explained.

The library every chapter of the book computes with. One module per concept:

* :mod:`attnlib.core` – ``softmax``, ``scaled_dot_product_attention``, masks
* :mod:`attnlib.trace` – every intermediate of one attention call, explained
* :mod:`attnlib.examples` – the book's fixed examples as data
* :mod:`attnlib.plots` – matplotlib figures with the book's look
"""

from attnlib.core import causal_mask, padding_mask, scaled_dot_product_attention, softmax
from attnlib.examples import Example, abc, cat_sat_on_mat, cat_sits
from attnlib.plots import CMAP, PALETTE, bars, heatmap, use_book_style, vectors_2d
from attnlib.trace import AttentionTrace, trace_attention

__all__ = [
    "softmax",
    "scaled_dot_product_attention",
    "causal_mask",
    "padding_mask",
    "Example",
    "cat_sat_on_mat",
    "abc",
    "cat_sits",
    "AttentionTrace",
    "trace_attention",
    "PALETTE",
    "CMAP",
    "use_book_style",
    "heatmap",
    "vectors_2d",
    "bars",
]

__version__ = "0.1.0"
