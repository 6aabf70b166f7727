"""attnlib: scaled dot-product attention, computed and explained.

The library every chapter of the book computes with. One module per concept:

* :mod:`attnlib.baselines` – what came before: a toy recurrent encoder and additive (Bahdanau) scoring
* :mod:`attnlib.core` – ``softmax``, ``scaled_dot_product_attention``, masks
* :mod:`attnlib.reference` – the formula in four array operations, held equal to the fast path by the tests
* :mod:`attnlib.trace` – every intermediate of one attention call, explained
* :mod:`attnlib.pipeline` – the whole computation in one schematic figure, with its shapes
* :mod:`attnlib.examples` – the book's fixed examples as data
* :mod:`attnlib.features` – hand-built, named query/key features for a sentence
* :mod:`attnlib.stats` – dot-product variance, entropy and max weight, saturation, softmax Jacobian
* :mod:`attnlib.grad` – the analytic backward pass of attention
* :mod:`attnlib.training` – a small training experiment: one layer learns a retrieval task, scaled or not
* :mod:`attnlib.learned` – a layer that learns from made-up sentences what a pronoun refers to
* :mod:`attnlib.counts` – exact operation and memory counts of attention and of the projections around it
* :mod:`attnlib.models` – published model configurations and what attention costs in them
* :mod:`attnlib.timing` – measured time and memory, power-law fits with confidence intervals
* :mod:`attnlib.variants` – what sliding-window, sparse, linear and tiled attention cost
* :mod:`attnlib.multihead` – heads split and merged, multi-head attention returning a trace of every head
* :mod:`attnlib.naive` – deliberately naive versions (softmax without the max, loops) for teaching and tests
* :mod:`attnlib.positions` – sinusoidal position encodings
* :mod:`attnlib.tiled` – attention block by block with an online softmax, O(n) extra memory
* :mod:`attnlib.kvcache` – a key–value cache for incremental decoding, and its size in published models
* :mod:`attnlib.plots` – matplotlib figures with the book's look
* :mod:`attnlib.style` – the book's palette, colormap and matplotlib style
* :mod:`attnlib.exercises` – the book's exercises: what to submit, a reference recomputed at call time
* :mod:`attnlib.misconceptions` – the classic mistakes of attention, named and recomputed from the inputs
* :mod:`attnlib.feedback` – ``check(label, answer)``: an answer judged, with the mistake it matches named
* :mod:`attnlib.data` – data files the chapters read, shipped inside the package
"""

import importlib
from typing import Any

# The top level holds what a reader calls in the chapters, by the chapter that introduces it; every
# other public name (tables' row types, cost models, helpers) is imported from its module, e.g.
# ``from attnlib.counts import memory_bytes``. tests/test_core.py::test_top_level_is_lean checks the list.
from attnlib.core import (
    SCALE_RULES,
    causal_mask,
    padding_mask,
    scale_for,
    scaled_dot_product_attention,
    softmax,
)
from attnlib.examples import Example, cat_sat_on_mat, cat_sits, three_directions
from attnlib.kvcache import KVCache, incremental_attention
from attnlib.multihead import MultiHeadAttention
from attnlib.stats import (
    dot_product_samples,
    dot_product_variance,
    entropy,
    jacobian_norm,
    max_weight,
    saturation_stats,
    softmax_jacobian,
    variance_with_ci,
)
from attnlib.tiled import tiled_attention
from attnlib.trace import AttentionTrace, trace_attention
from attnlib.training import (
    identity_form_accuracy,
    learning_rate_sweep,
    nearest_key_accuracy,
    train_retrieval,
)

# The modules, as attnlib.<module> (the chapters' imports name them), load when first used, so that
# ``import attnlib`` does not load matplotlib (attnlib.plots) or the exercise registry (attnlib.check).
_MODULES = frozenset({
    "baselines", "core", "counts", "data", "diagnosis", "examples", "exercises", "features", "feedback",
    "grad", "interactive", "kvcache", "learned", "misconceptions", "models", "multihead", "naive",
    "pipeline", "plots", "positions", "reference", "stats", "style", "tiled", "timing", "trace",
    "training", "transformer", "variants",
})
_LAZY_NAMES = {"check": "attnlib.feedback"}


def __getattr__(name: str) -> Any:
    """``attnlib.<module>`` and ``attnlib.check``, imported on first use."""
    if name in _LAZY_NAMES:
        value = getattr(importlib.import_module(_LAZY_NAMES[name]), name)
    elif name in _MODULES:
        value = importlib.import_module(f"attnlib.{name}")
    else:
        raise AttributeError(f"module 'attnlib' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | _MODULES | set(_LAZY_NAMES))


__all__ = [
    # computing attention (chapters 1, 2, 6)
    "softmax", "scaled_dot_product_attention", "causal_mask", "padding_mask", "SCALE_RULES", "scale_for",
    "trace_attention", "AttentionTrace", "MultiHeadAttention",
    # the book's examples (chapters 1, 2, 3)
    "Example", "cat_sat_on_mat", "three_directions", "cat_sits",
    # why √d_k (chapter 4)
    "dot_product_samples", "dot_product_variance", "variance_with_ci", "entropy", "max_weight",
    "saturation_stats", "softmax_jacobian", "jacobian_norm",
    "train_retrieval", "learning_rate_sweep", "nearest_key_accuracy", "identity_form_accuracy",
    # beyond one call (chapters 6-5)
    "tiled_attention", "KVCache", "incremental_attention",
    # the exercises
    "check",
]

__version__ = "0.1.0"
