"""The checks of chapter 4, why divide by √d_k."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from attnlib import stats as _stats
from attnlib.exercises._registry import (
    _attention_exercise,
    _cat,
    _register,
    _scalar_exercise,
)
from attnlib.trace import trace_attention


def _the_unscaled_row(scale: float | None = 1.0) -> np.ndarray:
    Q, K, V, tokens = _cat()
    return trace_attention(Q, K, V, tokens=tokens, scale=scale).weights[0]


_register(_attention_exercise(
    "sc-ex-cat:weights", "04_scaling",
    "The weights of the query 'The' in 'The cat sat on mat' without the division by √d_k.",
    "5 numbers: the weights of 'The' on The, cat, sat, on, mat (the whole 5 × 5 matrix is accepted too).",
    _cat, "weights", scale=1.0, row=0,
))


def _row_stats(p: np.ndarray, *, bits: bool = False) -> list[float]:
    h = float(_stats.entropy(p))
    return [float(_stats.max_weight(p)), h / math.log(2) if bits else h]


_register(_scalar_exercise(
    "sc-ex-cat:stats", "04_scaling",
    "For the unscaled row of 'The': its largest weight and its entropy.",
    "2 numbers: largest weight, entropy (natural log).",
    lambda: _row_stats(_the_unscaled_row()),
    lambda: [("entropy-bits", _row_stats(_the_unscaled_row(), bits=True)),
             ("stats-of-scaled-row", _row_stats(_the_unscaled_row(None)))],
    names=("largest weight", "entropy"),
))

_SIGMA: dict[str, Any] = {"d_k": 64, "sigma_q": 3.0, "sigma_k": 0.5}


def _sigma_alpha() -> float:
    return 1 / math.sqrt(_stats.dot_product_variance(**_SIGMA))


_register(_scalar_exercise(
    "sc-ex-sigma", "04_scaling",
    "The factor α that gives α q·k variance 1 for d_k = 64, σ_q = 3, σ_k = 0.5.",
    "1 number: α.",
    _sigma_alpha,
    lambda: [("sigma-ignored", 1 / math.sqrt(_stats.dot_product_variance(_SIGMA["d_k"]))),
             ("sigma-d_k", _sigma_alpha() / math.sqrt(_SIGMA["d_k"])),
             ("sigma-variances", math.sqrt(_SIGMA["d_k"]) / _stats.dot_product_variance(**_SIGMA)),
             ("sigma-multiplied", _SIGMA["sigma_q"] * _SIGMA["sigma_k"] / math.sqrt(_SIGMA["d_k"])),
             ("abc-divisor", 1 / _sigma_alpha())],
    form="variance",
))
