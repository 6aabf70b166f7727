"""Every intermediate of one attention call, with token labels, explained step by step.

:func:`trace_attention` runs :func:`attnlib.core.scaled_dot_product_attention`
on one sequence and keeps what happens on the way, as a frozen
:class:`AttentionTrace`: the raw scores ``Q Kᵀ``, the scale, the scaled
(and masked) scores, the weights and the output. Its weights and output are
the ones ``core`` returns, bit for bit; the intermediates are recomputed for
display only.

``AttentionTrace.explain(i)`` writes out query ``i``'s arithmetic as a reader
would do it by hand; ``AttentionTrace.table(stage)`` prints one stage as a
labelled matrix.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from attnlib import _validation as _v
from attnlib.core import scaled_dot_product_attention

__all__ = ["AttentionTrace", "trace_attention"]

_STAGES = ("Q", "K", "V", "scores", "scaled_scores", "weights", "output")

# explain() shows exp(s) of the scaled scores themselves unless the largest
# would print as more than this (then it shows exp(s - max), as the code does).
_MAX_READABLE_EXP = 1e6


def _readonly(arr: np.ndarray | None) -> np.ndarray | None:
    if arr is None:
        return None
    out = np.array(arr, copy=True)
    out.flags.writeable = False
    return out


def _check_decimals(decimals: Any) -> int:
    if isinstance(decimals, (bool, np.bool_)) or not isinstance(decimals, numbers.Integral):
        raise TypeError(f"decimals must be an integer; got {type(decimals).__name__} {decimals!r}")
    if decimals < 0:
        raise ValueError(f"decimals must be >= 0; got {decimals}")
    return int(decimals)


def _fixed(x: float, decimals: int) -> str:
    """``x`` with exactly ``decimals`` decimals; ``-inf`` as ``-inf``; no ``-0.0000``."""
    if np.isneginf(x):
        return "-inf"
    s = f"{float(x):.{decimals}f}"
    if s.startswith("-") and float(s) == 0.0:
        s = s[1:]
    return s


def _compact(x: float, decimals: int) -> str:
    """An input number as a reader would write it: ``1.0``, ``0.5``, ``-0.25``, ``0.1235``."""
    s = _fixed(x, max(decimals, 1))
    if "." in s:
        s = s.rstrip("0")
        if s.endswith("."):
            s += "0"
    return s


def _paren(x: float, decimals: int) -> str:
    return f"({_compact(x, decimals)})"


def _vector(row: np.ndarray, fmt: Any, decimals: int) -> str:
    return "[" + ", ".join(fmt(float(x), decimals) for x in row) + "]"


@dataclass(frozen=True, eq=False, repr=False)
class AttentionTrace:
    """Every intermediate of ``softmax(Q Kᵀ · scale + mask) V`` for one sequence.

    Build one with :func:`trace_attention`. All arrays are read-only copies,
    and the dataclass is frozen: a trace is a value, not a state that a later
    cell could change.

    Attributes
    ----------
    tokens : tuple of str, length n_q
        Query labels.
    key_tokens : tuple of str, length n_k
        Key labels (the same as ``tokens`` for self-attention).
    Q : ndarray, shape (n_q, d_k)
    K : ndarray, shape (n_k, d_k)
    V : ndarray, shape (n_k, d_v)
    scores : ndarray, shape (n_q, n_k)
        Raw dot products ``Q @ K.T``.
    scale : float
        The factor applied to the scores (``1 / √d_k`` unless given).
    scaled_scores : ndarray, shape (n_q, n_k)
        ``scores * scale`` plus the additive float mask, if any; pairs that
        may not attend are ``-inf``.
    weights : ndarray, shape (n_q, n_k)
        Softmax of each row of ``scaled_scores``, exactly as returned by
        :func:`attnlib.core.scaled_dot_product_attention`.
    output : ndarray, shape (n_q, d_v)
        ``weights @ V``, exactly as returned by ``core``.
    mask : ndarray of bool, shape (n_q, n_k), or None
        True where query ``i`` may attend to key ``j``; None without a mask.

    Notes
    -----
    ``scaled_scores`` is computed as ``(Q @ K.T) * scale`` for display,
    while ``core`` scales ``Q`` before the product for speed; the two can
    differ in the last bit. ``weights`` and ``output`` always come from
    ``core``.
    """

    tokens: tuple[str, ...]
    key_tokens: tuple[str, ...]
    Q: np.ndarray  # (n_q, d_k)
    K: np.ndarray  # (n_k, d_k)
    V: np.ndarray  # (n_k, d_v)
    scores: np.ndarray  # (n_q, n_k)
    scale: float
    scaled_scores: np.ndarray  # (n_q, n_k)
    weights: np.ndarray  # (n_q, n_k)
    output: np.ndarray  # (n_q, d_v)
    mask: np.ndarray | None  # (n_q, n_k) or None

    def __post_init__(self) -> None:
        for name in ("Q", "K", "V", "scores", "scaled_scores", "weights", "output", "mask"):
            object.__setattr__(self, name, _readonly(getattr(self, name)))
        object.__setattr__(self, "tokens", tuple(str(t) for t in self.tokens))
        object.__setattr__(self, "key_tokens", tuple(str(t) for t in self.key_tokens))
        object.__setattr__(self, "scale", float(self.scale))

    # -- sizes -------------------------------------------------------------
    @property
    def n_q(self) -> int:
        return int(self.Q.shape[0])

    @property
    def n_k(self) -> int:
        return int(self.K.shape[0])

    @property
    def d_k(self) -> int:
        return int(self.Q.shape[1])

    @property
    def d_v(self) -> int:
        return int(self.V.shape[1])

    def __repr__(self) -> str:
        masked = "" if self.mask is None else f", masked={int((~self.mask).sum())}"
        return (
            f"AttentionTrace(n_q={self.n_q}, n_k={self.n_k}, d_k={self.d_k}, d_v={self.d_v}, "
            f"scale={self.scale:.6g}{masked}, tokens={self.tokens!r})"
        )

    # -- helpers -----------------------------------------------------------
    def _index(self, i: int | str) -> int:
        valid = (
            f"valid indices are 0..{self.n_q - 1} (or -{self.n_q}..-1) "
            f"and labels {', '.join(repr(t) for t in self.tokens)}"
        )
        if isinstance(i, str):
            hits = [j for j, t in enumerate(self.tokens) if t == i]
            if not hits:
                raise KeyError(f"no query token {i!r}; {valid}")
            if len(hits) > 1:
                raise ValueError(
                    f"token {i!r} occurs at positions {hits}; pass the index instead"
                )
            return hits[0]
        if isinstance(i, (bool, np.bool_)) or not isinstance(i, numbers.Integral):
            raise TypeError(f"i must be an int index or a token label; got {type(i).__name__} {i!r}")
        if not -self.n_q <= i < self.n_q:
            raise IndexError(f"query index {i} is out of range for {self.n_q} queries; {valid}")
        return int(i) % self.n_q

    def _allowed(self, row: int) -> np.ndarray:
        if self.mask is None:
            return np.ones(self.n_k, dtype=bool)
        return self.mask[row]

