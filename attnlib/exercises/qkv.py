"""The checks of chapter 2, queries, keys and values."""

from __future__ import annotations

import math

import numpy as np

from attnlib import examples as _examples
from attnlib.core import scaled_dot_product_attention
from attnlib.exercises._registry import (
    _attention_exercise,
    _register,
    _scalar_exercise,
)
from attnlib.misconceptions import (
    Candidates,
)

_SHAPE_NAMES = ("W_Q", "W_K", "W_V", "Q", "K", "V", "S", "A", "O")
_CROSS_NAMES = ("K", "V", "S", "A", "O")


def _qkv_shapes(n_k: int | None = None) -> dict[str, tuple[int, ...]]:
    """Shapes of one layer with d_model 16, d_k 4, d_v 6 and 5 queries, computed by running it."""
    rng = np.random.default_rng(1)
    X = rng.normal(size=(5, 16))  # (n, d_model)
    Y = X if n_k is None else rng.normal(size=(n_k, 16))  # (n_k, d_model)
    W_Q, W_K, W_V = (rng.normal(size=(16, d)) for d in (4, 4, 6))
    Q, K, V = X @ W_Q, Y @ W_K, Y @ W_V
    O, A = scaled_dot_product_attention(Q, K, V, return_weights=True)
    S = Q @ K.T
    arrays = {"W_Q": W_Q, "W_K": W_K, "W_V": W_V, "Q": Q, "K": K, "V": V, "S": S, "A": A, "O": O}
    return {k: a.shape for k, a in arrays.items()}


def _shapes_wrong(cross: bool) -> Candidates:
    s = _qkv_shapes(7 if cross else None)
    names = _CROSS_NAMES if cross else _SHAPE_NAMES

    def variant(**changes: tuple[int, ...]) -> np.ndarray:
        return np.array([changes.get(k, s[k]) for k in names])

    out: Candidates = []
    if not cross:
        out.append(("shapes-w-transposed", variant(**{k: s[k][::-1] for k in ("W_Q", "W_K", "W_V")})))
    out.append(("shapes-output-d_k", variant(O=(s["O"][0], s["K"][1]))))
    out.append(("shapes-qt-k", variant(S=(s["K"][1], s["K"][1]), A=(s["K"][1], s["K"][1]))))
    if cross:
        out.append(("scores-transposed", variant(S=s["S"][::-1], A=s["A"][::-1])))
        out.append(("shapes-one-output-per-key", variant(O=(s["K"][0], s["O"][1]))))
    return out


_register(_scalar_exercise(
    "qkv-ex-shapes:self", "02_qkv",
    "The shapes of W_Q, W_K, W_V, Q, K, V, S, A and O for d_model = 16, d_k = 4, d_v = 6, n = 5.",
    "9 shapes as (rows, columns) pairs, in the order W_Q, W_K, W_V, Q, K, V, S, A, O.",
    lambda: [_qkv_shapes()[k] for k in _SHAPE_NAMES], lambda: _shapes_wrong(False),
    kind="integer", names=_SHAPE_NAMES, form="shapes",
))
_register(_scalar_exercise(
    "qkv-ex-shapes:params", "02_qkv",
    "How many numbers the three projection matrices hold together.",
    "1 whole number.",
    lambda: sum(math.prod(_qkv_shapes()[k]) for k in ("W_Q", "W_K", "W_V")),
    lambda: [("params-d_k-everywhere", 3 * math.prod(_qkv_shapes()["W_Q"]))],
    kind="integer",
))
_register(_scalar_exercise(
    "qkv-ex-shapes:cross", "02_qkv",
    "The shapes of K, V, S, A and O when the 5 tokens supply the queries and 7 other tokens the keys "
    "and values.",
    "5 shapes as (rows, columns) pairs, in the order K, V, S, A, O.",
    lambda: [_qkv_shapes(7)[k] for k in _CROSS_NAMES], lambda: _shapes_wrong(True),
    kind="integer", names=_CROSS_NAMES, form="shapes",
))


def _abc() -> tuple[np.ndarray, np.ndarray, np.ndarray, tuple[str, ...]]:
    ex = _examples.three_directions()
    return ex.Q, ex.K, ex.V, ex.tokens


def _abc_unit_keys() -> tuple[np.ndarray, np.ndarray, np.ndarray, tuple[str, ...]]:
    Q, K, V, tokens = _abc()
    return Q, K / np.linalg.norm(K, axis=1, keepdims=True), V, tokens


def _unit_extra() -> Candidates:
    Q, K, V, _ = _abc()
    Ku = K / np.linalg.norm(K, axis=1, keepdims=True)
    Qu = Q / np.linalg.norm(Q, axis=1, keepdims=True)
    both = scaled_dot_product_attention(Qu, Ku, V, return_weights=True)[1][1]
    unscaled = scaled_dot_product_attention(Q, Ku, V, scale=1.0, return_weights=True)[1][1]
    out = [("unit-keys-as-given", scaled_dot_product_attention(Q, K, V, return_weights=True)[1][1])]
    # Here |q_B| = √d_k, so normalising the query gives the unscaled weights: name only "no scaling".
    if not np.allclose(both, unscaled, atol=1e-3):
        out.append(("unit-normalised-queries", both))
    return out


_register(_attention_exercise(
    "qkv-ex-prefer:unit-weights", "02_qkv",
    "Query B's weights in A/B/C after every key is rescaled to length 1.",
    "3 numbers: query B's weights on keys A, B, C (the whole 3 × 3 weight matrix is accepted too).",
    _abc_unit_keys, "weights", row=1, extra=_unit_extra,
))


def _cat_sits(W_K: str = "W_K") -> tuple[np.ndarray, np.ndarray, np.ndarray, tuple[str, ...]]:
    cs = _examples.cat_sits()
    assert cs.X is not None and cs.W_Q is not None and cs.W_V is not None  # Cat sits has projections
    Q = cs.X @ cs.W_Q
    K = cs.X @ getattr(cs, W_K)
    V = cs.X @ cs.W_V
    return Q, K, V, cs.tokens


_register(_attention_exercise(
    "qkv-ex-symmetric:weights", "02_qkv",
    "The attention weights of 'Cat sits' with the key projection tied to the query projection, W_K = W_Q.",
    "A 2 × 2 matrix of weights, one row per query ('Cat', 'sits').",
    lambda: _cat_sits(W_K="W_Q"), "weights",
))
_register(_attention_exercise(
    "qkv-ex-symmetric:scores", "02_qkv",
    "The raw scores S = Q Kᵀ of 'Cat sits' with W_K = W_Q.",
    "A 2 × 2 matrix of raw scores (before the division by √d_k).",
    lambda: _cat_sits(W_K="W_Q"), "scores",
))
