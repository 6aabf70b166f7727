"""The backward pass of scaled dot-product attention, derived by hand.

:func:`attention_backward` returns the gradients of a loss with respect to
``Q``, ``K`` and ``V`` given the gradient ``dO`` with respect to the output of
``out = softmax(Q Kᵀ · scale) V``. The tests check it against central finite
differences and against PyTorch's autograd. The training experiment of chapter 4,
built on the same lines, is :mod:`attnlib.training`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from attnlib import _validation as _v
from attnlib.core import causal_mask, scale_for, softmax

__all__ = ["attention_backward"]


def _sum_to_shape(g: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """Sum ``g`` over the axes along which an input of ``shape`` was broadcast."""
    extra = g.ndim - len(shape)
    if extra:
        g = g.sum(axis=tuple(range(extra)))
    axes = tuple(i for i, (a, b) in enumerate(zip(g.shape, shape, strict=True)) if b == 1 and a != 1)
    if axes:
        g = g.sum(axis=axes, keepdims=True)
    return g


def attention_backward(
    Q: Any, K: Any, V: Any, dO: Any, scale: float | None = None, *, is_causal: bool = False
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Gradients of ``out = softmax(Q Kᵀ · scale) V`` with respect to ``Q``, ``K`` and ``V``.

    Given ``dO = ∂L/∂out`` for some scalar loss ``L``, returns
    ``(∂L/∂Q, ∂L/∂K, ∂L/∂V)``. Forward pass, per batch element:

    ``S = scale · Q Kᵀ``,  ``P = softmax(S)`` (row-wise),  ``out = P V``.

    Backward pass, one line per forward line, read bottom up:

    * ``out = P V`` is a matrix product, so ``dV = Pᵀ dO`` and ``dP = dO Vᵀ``.
    * Row ``i`` of ``P`` is ``softmax(S_i)`` with Jacobian
      ``diag(P_i) − P_i P_iᵀ`` (:func:`attnlib.stats.softmax_jacobian`), which
      is symmetric, so ``dS_i = (diag(P_i) − P_i P_iᵀ) dP_i
      = P_i ⊙ dP_i − P_i (P_i · dP_i)``; for all rows at once
      ``dS = P ⊙ (dP − rowsum(dP ⊙ P))``. The ``n × n`` Jacobians are never
      formed.
    * ``S = scale · Q Kᵀ`` gives ``dQ = scale · dS K`` and
      ``dK = scale · dSᵀ Q``.

    With ``is_causal`` the forward pass is causal (``P = softmax(S)`` with
    query ``i`` seeing keys ``0..i``, :func:`attnlib.core.causal_mask`). The
    lines stay the same: a masked weight is exactly 0, so its ``dS`` entry is
    0 and it passes nothing back.

    Parameters
    ----------
    Q : (..., n_q, d_k) array_like
        Queries.
    K : (..., n_k, d_k) array_like
        Keys; must share ``d_k`` with ``Q``.
    V : (..., n_k, d_v) array_like
        Values; one row per key.
    dO : (..., n_q, d_v) array_like
        Gradient of the loss with respect to the output; its shape must be
        exactly the output's, ``batch + (n_q, d_v)``, where ``batch`` is the
        leading dimensions of ``Q``, ``K`` and ``V`` broadcast together.
    scale : float, optional
        Factor applied to ``Q Kᵀ``; ``None`` means ``1 / √d_k``.
    is_causal : bool
        The forward pass was causal (as ``scaled_dot_product_attention(...,
        is_causal=True)``).

    Returns
    -------
    dQ : ndarray, shape of ``Q``
    dK : ndarray, shape of ``K``
    dV : ndarray, shape of ``V``
        Where an input was broadcast over batch dimensions its gradient is
        summed over them, as autograd does. The dtype is that of the inputs
        promoted together (float64 for lists).

    Raises
    ------
    TypeError
        Non-real inputs or a non-numeric ``scale``.
    ValueError
        Shapes that do not fit (each message names the arrays and their
        shapes), empty sequences, NaN or infinite inputs, a non-positive or
        non-finite ``scale``, scores that overflow the dtype.

    Examples
    --------
    >>> import numpy as np
    >>> from attnlib.core import scaled_dot_product_attention
    >>> rng = np.random.default_rng(0)
    >>> Q, K, V = rng.normal(size=(3, 2)), rng.normal(size=(4, 2)), rng.normal(size=(4, 5))
    >>> dO = np.ones((3, 5))  # the gradient of L = out.sum()
    >>> dQ, dK, dV = attention_backward(Q, K, V, dO)
    >>> dQ.shape, dK.shape, dV.shape
    ((3, 2), (4, 2), (4, 5))
    >>> h = 1e-6
    >>> E = np.zeros_like(Q)
    >>> E[0, 1] = h
    >>> slope = (scaled_dot_product_attention(Q + E, K, V).sum()
    ...          - scaled_dot_product_attention(Q - E, K, V).sum()) / (2 * h)
    >>> bool(np.isclose(slope, dQ[0, 1], rtol=1e-6))
    True
    """
    Q, K, V, batch = _v.check_qkv(Q, K, V)
    dO = _v.as_float_array(dO, "dO")
    _v.check_sequence_matrix(dO, "dO", "n_q", "d_v")
    n_q, d_k = Q.shape[-2:]
    d_v = V.shape[-1]
    out_shape = batch + (n_q, d_v)
    if dO.shape != out_shape:
        raise ValueError(
            f"dO must have the output's shape (..., n_q, d_v) = {out_shape}; got {dO.shape} "
            f"(Q {Q.shape}, K {K.shape}, V {V.shape})"
        )
    scale = _v.check_scale(scale)
    if scale is None:
        scale = scale_for(d_k)
    is_causal = _v.check_bool_flag(is_causal, "is_causal")
    dtype = np.result_type(Q, K, V, dO)
    Q, K, V, dO = (a.astype(dtype, copy=False) for a in (Q, K, V, dO))
    scale_t = dtype.type(scale)

    with np.errstate(over="ignore", invalid="ignore"):  # overflow is detected below
        S = (Q * scale_t) @ K.swapaxes(-1, -2)  # (..., n_q, n_k)
    if not np.isfinite(S).all():
        raise _v.scores_overflow_error(dtype, Q, K)
    P = softmax(S, axis=-1, mask=causal_mask(n_q, K.shape[-2]) if is_causal else None)  # (..., n_q, n_k)
    dV = P.swapaxes(-1, -2) @ dO  # (..., n_k, d_v)
    dP = dO @ V.swapaxes(-1, -2)  # (..., n_q, n_k)
    dS = P * (dP - (dP * P).sum(axis=-1, keepdims=True))  # (..., n_q, n_k)
    dQ = scale_t * (dS @ K)  # (..., n_q, d_k)
    dK = scale_t * (dS.swapaxes(-1, -2) @ Q)  # (..., n_k, d_k)
    return _sum_to_shape(dQ, Q.shape), _sum_to_shape(dK, K.shape), _sum_to_shape(dV, V.shape)
