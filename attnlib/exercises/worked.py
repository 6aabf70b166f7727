"""The checks of chapter 3, worked examples by hand."""

from __future__ import annotations

import numpy as np

from attnlib.exercises._registry import (
    _attention_exercise,
    _cat,
    _register,
)
from attnlib.misconceptions import (
    Candidates,
)
from attnlib.trace import trace_attention

_MAT = 4
for _what, _form in (
    ("scores", "5 numbers: the raw scores q_mat · k for the keys The, cat, sat, on, mat"),
    ("scaled", "5 numbers: the scaled scores of 'mat' for the keys The, cat, sat, on, mat"),
    ("weights", "5 numbers: the weights of 'mat' on The, cat, sat, on, mat"),
    ("output", "4 numbers: the output row of 'mat'"),
):
    _register(_attention_exercise(
        f"worked-ex-mat:{_what}", "03_worked_examples",
        f"The {_what} of the row of 'mat' in 'The cat sat on mat', by hand.",
        f"{_form} (the whole 5-row matrix is accepted too).",
        _cat, _what, row=_MAT,
    ))


def _v_doubled() -> np.ndarray:
    _, _, V, _ = _cat()
    V2 = np.array(V)
    V2[1] = 2 * V[1]  # v_cat: [0, 1, 0, 0] -> [0, 2, 0, 0]
    return V2


def _double_v_change(weights: np.ndarray) -> np.ndarray:
    _, _, V, _ = _cat()
    return weights[:, 1:2] * (_v_doubled()[1] - V[1])  # (n, 1) * (d_v,) -> (n, d_v)


def _double_v_extra() -> Candidates:
    Q, K, _, tokens = _cat()
    new = trace_attention(Q, K, _v_doubled(), tokens=tokens)
    old = trace_attention(Q, K, _cat()[2], tokens=tokens)
    return [("change-not-new", new.output),
            ("change-contribution", new.weights[:, 1:2] * _v_doubled()[1]),
            ("change-sign", old.output - new.output)]


_register(_attention_exercise(
    "worked-ex-double-v", "03_worked_examples",
    "How much every output of 'The cat sat on mat' changes when v_cat is doubled to [0, 2, 0, 0].",
    "A 5 × 4 matrix: the change O' − O of every output (new minus old), one row per query.",
    _cat, "weights", transform=_double_v_change, extra=_double_v_extra,
))
