"""attnlib: scaled dot-product attention, computed and explained.

The library every chapter of the book computes with. One module per concept:

* :mod:`attnlib.baselines` – what came before: a toy recurrent encoder and additive (Bahdanau) scoring
* :mod:`attnlib.core` – ``softmax``, ``scaled_dot_product_attention``, masks
* :mod:`attnlib.trace` – every intermediate of one attention call, explained
* :mod:`attnlib.examples` – the book's fixed examples as data
* :mod:`attnlib.features` – hand-built, named query/key features for a sentence
* :mod:`attnlib.stats` – dot-product variance, entropy and max weight, saturation, softmax Jacobian
* :mod:`attnlib.grad` – the analytic backward pass of attention
* :mod:`attnlib.training` – a small training experiment: one layer learns a retrieval task, scaled or not
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
* :mod:`attnlib.exercises` – ``check(label, answer)``: answers to the book's exercises checked against
  references recomputed at check time, with the likely misconception named
* :mod:`attnlib.data` – data files the chapters read, shipped inside the package
"""

from attnlib import (
    baselines,
    core,
    counts,
    examples,
    features,
    grad,
    kvcache,
    models,
    multihead,
    naive,
    plots,
    positions,
    stats,
    tiled,
    timing,
    trace,
    training,
    variants,
)
from attnlib.baselines import *  # noqa: F403
from attnlib.core import *  # noqa: F403
from attnlib.counts import *  # noqa: F403
from attnlib.examples import *  # noqa: F403
from attnlib.exercises import check
from attnlib.features import *  # noqa: F403
from attnlib.grad import *  # noqa: F403
from attnlib.kvcache import *  # noqa: F403
from attnlib.models import *  # noqa: F403
from attnlib.multihead import *  # noqa: F403
from attnlib.naive import *  # noqa: F403
from attnlib.plots import *  # noqa: F403
from attnlib.positions import *  # noqa: F403
from attnlib.stats import *  # noqa: F403
from attnlib.tiled import *  # noqa: F403
from attnlib.timing import *  # noqa: F403
from attnlib.trace import *  # noqa: F403
from attnlib.training import *  # noqa: F403
from attnlib.variants import *  # noqa: F403

__all__ = [
    *baselines.__all__,
    *core.__all__,
    *trace.__all__,
    *examples.__all__,
    *features.__all__,
    *stats.__all__,
    *grad.__all__,
    *training.__all__,
    *counts.__all__,
    *models.__all__,
    *timing.__all__,
    *variants.__all__,
    *tiled.__all__,
    *kvcache.__all__,
    *multihead.__all__,
    *naive.__all__,
    *positions.__all__,
    *plots.__all__,
    "check",
]

__version__ = "0.1.0"
