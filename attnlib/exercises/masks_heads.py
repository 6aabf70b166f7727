"""The checks of chapter 5, masks, heads and order."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from attnlib import examples as _examples
from attnlib.core import causal_mask, scale_for, softmax
from attnlib.exercises._registry import (
    _attention_exercise,
    _cat,
    _fmt_num,
    _register,
    _scalar_exercise,
)
from attnlib.exercises.implementation import _mask_exercise
from attnlib.misconceptions import (
    Candidates,
)
from attnlib.multihead import MultiHeadAttention


def _four_heads(scale_width: bool = False):
    ex = _examples.cat_sat_on_mat()
    n = len(ex.tokens)
    mha = MultiHeadAttention.from_weights(ex.Q, ex.K, ex.V, np.eye(4, n), n_heads=4)
    tr = mha(np.eye(n))  # X = I_5: the projections return Q, K, V
    if not scale_width:
        return mha, tr.weights[:, 0]  # (H, n_k): the row of "The" in each head
    Qh, Kh = tr.Q[:, 0:1], tr.K  # (H, 1, d_head), (H, n, d_head)
    scores = (Qh @ Kh.swapaxes(-1, -2))[:, 0] * scale_for(mha.n_heads * mha.d_head)
    return mha, softmax(scores, axis=-1)


def _four_heads_wrong() -> Candidates:
    _, w_full = _four_heads(scale_width=True)
    ex = _examples.cat_sat_on_mat()
    tr = MultiHeadAttention.from_weights(ex.Q, ex.K, ex.V, np.eye(4, 5), n_heads=4)(np.eye(5))
    scores = (tr.Q @ tr.K.swapaxes(-1, -2)) / math.sqrt(tr.Q.shape[-1])  # (H, n, n)
    wrong_axis = softmax(scores, axis=-2)[:, 0]
    return [("scale-full-width", w_full), ("wrong-axis", wrong_axis)]



def window_mask(n: int) -> np.ndarray:
    """The sliding window of width 2: query ``i`` may attend to keys ``i - 1`` and ``i``, shape ``(n, n)``."""
    return causal_mask(n) & ~np.tri(n, k=-2, dtype=bool)


_register(_mask_exercise(
    "masks-ex-window:mask", "05_masks_heads",
    "The sliding-window mask of width 2 for the 5 tokens of 'The cat sat on mat': query i sees keys i-1, i.",
    "Your 5 × 5 mask: boolean (True = may attend), 0/1 or additive 0/-inf.",
    lambda: {"reference": window_mask(5)}, (5, 5),
))
_register(_attention_exercise(
    "masks-ex-window:weights", "05_masks_heads",
    "The attention weights of 'The cat sat on mat' under the sliding-window mask of width 2.",
    "A 5 × 5 matrix of weights, one row per query.",
    _cat, "weights", mask=window_mask,
))
_four_heads_ex = _scalar_exercise(
    "masks-ex-four-heads:weights", "05_masks_heads",
    "The weights of the query 'The' in each of the 4 heads of d_head = 1.",
    "A 4 × 5 matrix: one row per head (0 to 3), one column per key (The, cat, sat, on, mat).",
    lambda: _four_heads()[1], _four_heads_wrong,
)
_register(replace(_four_heads_ex, rows_sum_to_one=True,
                  context=lambda: {"d_k": 1, "sqrt_d_k": "1", "n": 5, "sqrt_n": _fmt_num(math.sqrt(5)),
                                   "d_v": 1}))
