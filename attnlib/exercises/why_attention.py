"""The checks of chapter 1, why attention."""

from __future__ import annotations

import math

import numpy as np

from attnlib.core import softmax
from attnlib.exercises._registry import (
    _register,
    _scalar_exercise,
)


def _margin_for(n: int, target: float = 0.9, rivals: int | None = None) -> float:
    """The margin m at which softmax([m, 0, ..., 0])[0] reaches ``target``, by bisection."""
    rivals = n - 1 if rivals is None else rivals
    lo, hi = 0.0, 50.0
    for _ in range(80):
        mid = (lo + hi) / 2
        w = softmax(np.r_[mid, np.zeros(rivals)])[0]
        lo, hi = (mid, hi) if w < target else (lo, mid)
    return (lo + hi) / 2


_MARGIN_NS = (10, 1000)
_register(_scalar_exercise(
    "why-ex-margin", "01_why_attention",
    "The margin m (token 0's score minus each tied score) for which the weight on token 0 reaches 0.9, "
    "for n = 10 and for n = 1000.",
    "2 numbers: m for n = 10, then m for n = 1000.",
    lambda: [_margin_for(n) for n in _MARGIN_NS],
    lambda: [("margin-n-keys", [_margin_for(n, rivals=n) for n in _MARGIN_NS]),
             ("margin-exp", [math.exp(_margin_for(n)) for n in _MARGIN_NS]),
             ("margin-log10", [_margin_for(n) / math.log(10) for n in _MARGIN_NS])],
    atol=5e-3, names=("m for n = 10", "m for n = 1000"),
))
