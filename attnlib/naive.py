"""Deliberately naive reference implementations, for teaching and testing only.

Nothing here is meant to be used for real work; :mod:`attnlib.core` is.
The two functions are the formulas typed in as they appear on paper, so that
the book can show what the careful version guards against and the tests can
compare the careful version with something obviously right.

* :func:`naive_softmax` is ``exp(x) / Σ exp(x)`` without subtracting the
  maximum. It overflows as soon as a logit exceeds ``log(finfo(dtype).max)``
  (about 709.8 in float64, 88.7 in float32, 11.1 in float16) and then returns
  ``inf / inf = nan``; a row with every entry ``-inf`` gives ``0 / 0 = nan``.
  It never raises: the overflow is the point of the demonstration.
* :func:`loop_attention` computes attention with Python ``for`` loops over
  queries, keys and coordinates, one number at a time: slow, 2-D only, and
  easy to check line by line against the formula.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from attnlib import _validation as _v
from attnlib.core import scale_for

__all__ = ["naive_softmax", "loop_attention"]


def naive_softmax(x: Any, axis: int = -1) -> np.ndarray:
    """``exp(x) / Σ exp(x)`` along ``axis``, with no protection against overflow.

    A teaching foil for :func:`attnlib.core.softmax`: mathematically the same
    function, numerically fragile. ``exp`` of a logit above
    ``log(finfo(dtype).max)`` is ``inf``, and ``inf / inf`` is ``nan``.

    Parameters
    ----------
    x : array_like
        Logits. Lists become float64; float arrays keep their dtype; any value
        is accepted, including ``±inf`` and NaN, because showing what happens
        to them is the purpose of this function.
    axis : int
        The axis that sums to 1.

    Returns
    -------
    ndarray, same shape and dtype as ``x``
        The weights, or ``nan`` (and sometimes ``0``) where the computation
        overflowed or divided ``0 / 0``.

    Notes
    -----
    The floating-point overflow and ``0 / 0`` are computed under
    ``np.errstate(over="ignore", invalid="ignore")``: NumPy neither warns nor
    raises, whatever the caller's error settings, and the failure is visible
    only as ``inf``/``nan`` in the result, which is how it goes unnoticed in
    real code. Use :func:`attnlib.core.softmax` for anything but a demonstration.

    Raises
    ------
    TypeError
        ``x`` does not hold real numbers.
    ValueError
        ``x`` is a scalar. (Overflow raises nothing: that is the point, see Notes.)

    Examples
    --------
    >>> import numpy as np
    >>> naive_softmax([0.0, np.log(3.0)]).round(4)
    array([0.25, 0.75])
    >>> naive_softmax(np.array([1000.0, 999.0]))
    array([nan, nan])
    """
    arr = np.asarray(x)
    if arr.dtype.kind not in "iuf":
        raise TypeError(f"x must hold real numbers; got dtype {arr.dtype}")
    if arr.dtype.kind in "iu":
        arr = arr.astype(np.float64)
    if arr.ndim == 0:
        raise ValueError("x must have at least 1 dimension; got a scalar")
    with np.errstate(over="ignore", invalid="ignore"):
        e = np.exp(arr)  # overflows to inf for large logits
        return e / e.sum(axis=axis, keepdims=True)  # inf / inf = nan, 0 / 0 = nan


def loop_attention(Q: Any, K: Any, V: Any, scale: float | None = None) -> np.ndarray:
    """Attention with explicit Python loops, one query, key and coordinate at a time.

    ``o_i = Σ_j A_ij v_j`` with ``A_ij = exp(s_ij − m_i) / Σ_j' exp(s_ij' − m_i)``,
    ``s_ij = scale · Σ_t q_it k_jt`` and ``m_i = max_j s_ij``. The row maximum
    is subtracted (it changes nothing mathematically) so that ``math.exp``
    does not overflow; everything else is the formula as written. It is a
    reference for tests and for reading, about a thousand times slower than
    :func:`attnlib.core.scaled_dot_product_attention`.

    Parameters
    ----------
    Q : (n_q, d_k) array_like
    K : (n_k, d_k) array_like
    V : (n_k, d_v) array_like
    scale : float, optional
        ``None`` means ``1 / √d_k``.

    Returns
    -------
    ndarray, shape (n_q, d_v), float64
        Computed in Python floats (double precision) whatever the input dtype.

    Raises
    ------
    TypeError
        Non-real inputs or a non-numeric ``scale``.
    ValueError
        Inputs that are not 2-D, shapes that do not fit (the message names
        both arrays), NaN or infinite entries, a non-positive ``scale``.

    Examples
    --------
    >>> loop_attention([[1.0, 0.0]], [[1.0, 0.0], [0.0, 1.0]], [[1.0, 2.0], [3.0, 4.0]]).round(4)
    array([[1.6605, 2.6605]])
    """
    Q = _v.as_float_array(Q, "Q")
    K = _v.as_float_array(K, "K")
    V = _v.as_float_array(V, "V")
    for arr, name, rows, cols in ((Q, "Q", "n_q", "d_k"), (K, "K", "n_k", "d_k"), (V, "V", "n_k", "d_v")):
        if arr.ndim != 2:
            raise ValueError(
                f"loop_attention takes 2-D arrays only; {name} has shape {arr.shape} "
                f"(use scaled_dot_product_attention for batches)"
            )
        _v.check_sequence_matrix(arr, name, rows, cols)
    if K.shape[1] != Q.shape[1]:
        raise ValueError(f"K has d_k={K.shape[1]} but Q has d_k={Q.shape[1]} (Q {Q.shape}, K {K.shape})")
    if V.shape[0] != K.shape[0]:
        raise ValueError(f"V has n_k={V.shape[0]} rows but K has n_k={K.shape[0]} (K {K.shape}, V {V.shape})")
    scale = _v.check_scale(scale)
    q_rows, k_rows, v_rows = Q.tolist(), K.tolist(), V.tolist()
    n_k, d_v = len(v_rows), len(v_rows[0])
    alpha = scale_for(len(q_rows[0])) if scale is None else scale
    out = []
    for q in q_rows:
        s = [alpha * sum(q_t * k_t for q_t, k_t in zip(q, k, strict=True)) for k in k_rows]
        m = max(s)
        e = [math.exp(s_j - m) for s_j in s]
        total = sum(e)
        out.append([sum(e[j] * v_rows[j][c] for j in range(n_k)) / total for c in range(d_v)])
    return np.array(out, dtype=np.float64)  # (n_q, d_v)
