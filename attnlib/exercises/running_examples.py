"""The checks of the generic checks of the running examples."""

from __future__ import annotations

import numpy as np

from attnlib.core import causal_mask, softmax
from attnlib.exercises._registry import (
    _attention_exercise,
    _cat,
    _first_four,
    _register,
    _scalar_exercise,
)
from attnlib.exercises.implementation import _mask_exercise
from attnlib.misconceptions import (
    Candidates,
    _causal_variants,
)
from attnlib.naive import naive_softmax

_register(_attention_exercise(
    "attention-scores", "03_worked_examples",
    "The raw scores S = Q Kᵀ of 'The cat sat on mat'.",
    "A 5 × 5 matrix: one row per query, one column per key.",
    _cat, "scores",
))
_register(_attention_exercise(
    "attention-weights", "03_worked_examples",
    "The attention weights softmax(Q Kᵀ / √d_k) of 'The cat sat on mat'.",
    "A 5 × 5 matrix of weights: one row per query, one column per key.",
    _cat, "weights",
))
_register(_attention_exercise(
    "attention-output", "03_worked_examples",
    "The output softmax(Q Kᵀ / √d_k) V of 'The cat sat on mat'.",
    "A 5 × 4 matrix: one output row per query.",
    _cat, "output",
))
_register(_attention_exercise(
    "square-scores", "03_worked_examples",
    "The raw scores S = Q Kᵀ of the first four tokens of 'The cat sat on mat' (n = d_k = 4).",
    "A 4 × 4 matrix: one row per query (The, cat, sat, on), one column per key.",
    lambda: _first_four(*_cat()), "scores",
))
_register(_mask_exercise(
    "causal-mask", "05_masks_heads",
    "The causal mask for the 5 tokens of 'The cat sat on mat'.",
    "Your 5 × 5 mask: boolean (True = may attend), 0/1 or additive 0/-inf.",
    lambda: {"reference": causal_mask(5), **dict(_causal_variants(5))}, (5, 5),
))
_register(_attention_exercise(
    "causal-weights", "05_masks_heads",
    "The causal attention weights of 'The cat sat on mat'.",
    "A 5 × 5 matrix of weights, one row per query.",
    _cat, "weights", causal=True,
))

_LARGE_LOGITS = (1000.0, 1002.0, 999.0, 1001.0)


def _large_logits_wrong() -> Candidates:
    x = np.array(_LARGE_LOGITS)
    e = np.exp(x - x.max())
    return [("no-max-subtraction", naive_softmax(x)), ("not-normalised", e)]


_register(_scalar_exercise(
    "softmax-stable", "06_implementation",
    "The softmax, in float64, of the logits [1000, 1002, 999, 1001].",
    "4 numbers: the weights of the four logits, in order.",
    lambda: softmax(np.array(_LARGE_LOGITS)), _large_logits_wrong,
))
