"""Scaled dot-product attention and the softmax it rests on.

``Attention(Q, K, V) = softmax(Q Kᵀ / √d_k) V``

The public functions follow the semantics of PyTorch's
``torch.nn.functional.scaled_dot_product_attention`` (batch dimensions,
boolean or additive masks, ``is_causal``, ``scale``), with two deliberate
differences that are stated where they apply: attnlib refuses NaN and
infinite inputs (and scores that overflow their dtype) with an error, and it
defines a query row with nothing it may attend to as zero weights and a zero
output (PyTorch returned NaN there before version 2.5 and returns zeros since).

float16 input is computed in float32 and the result returned as float16, as
PyTorch does: a row sum of ``n_k`` terms up to 1 would overflow float16
(largest finite value 65,504) once ``n_k`` is about 65,520, and 16-bit
weighted sums lose most of their digits long before that.
"""

from __future__ import annotations

import math
from typing import Any, Literal, overload

import numpy as np

from attnlib import _validation as _v

__all__ = [
    "softmax", "scaled_dot_product_attention", "causal_mask", "padding_mask", "SCALE_RULES", "scale_for",
]

#: The rules for the number the scores are multiplied by, each ``d_k ** -p``: ``"inverse_sqrt"``
#: (``1/√d_k``, ``p = 1/2``: the paper's rule and attnlib's default), ``"none"`` (``1``, ``p = 0``: raw
#: scores) and ``"inverse"`` (``1/d_k``, ``p = 1``: the μP rule). The training experiment, the live and
#: the static explorers all name a scale by these (see :func:`scale_for`).
SCALE_RULES: tuple[str, ...] = ("inverse_sqrt", "none", "inverse")
_RULE_EXPONENTS = {"inverse_sqrt": 0.5, "none": 0.0, "inverse": 1.0}

# Batch slices are processed in chunks holding at most this many scores (256 KiB in
# float32, 512 KiB in float64), a heuristic meant to keep a chunk's scores in a core's
# cache (not measured here) while small batched problems still go through NumPy in one call.
_CHUNK_SCORES = 1 << 16


def scale_for(d_k: int, rule: str | float = "inverse_sqrt") -> float:
    """The ``scale`` of the scores, ``d_k ** -p``, for a rule of :data:`SCALE_RULES` or an exponent ``p``.

    Parameters
    ----------
    d_k : int
        The query/key width.
    rule : str or float
        A name of :data:`SCALE_RULES`, or the exponent ``p ≥ 0`` itself (the static scaling explorer
        slides ``p`` from 0 to 1/2).

    Returns
    -------
    float
        ``1/√d_k`` exactly as :func:`scaled_dot_product_attention` computes its default (``p = 1/2``),
        ``1.0`` (``p = 0``), ``1/d_k`` (``p = 1``), ``d_k ** -p`` otherwise.

    Raises
    ------
    TypeError
        ``d_k`` is not an integer, or ``rule`` is neither a string nor a real number.
    ValueError
        ``d_k`` is not positive, ``rule`` names no rule, or the exponent is negative or not finite.

    Examples
    --------
    >>> scale_for(16), scale_for(16, "none"), scale_for(16, "inverse"), scale_for(16, 0.25)
    (0.25, 1.0, 0.0625, 0.5)
    """
    d_k = _v.check_positive_int(d_k, "d_k")
    if isinstance(rule, str):
        p = _RULE_EXPONENTS[_v.check_choice(rule, "rule", SCALE_RULES)]
    else:
        p = _v.check_real(rule, "rule", minimum="non-negative")
    if p == 0.5:
        return 1.0 / math.sqrt(d_k)  # the book's 1/√d_k, written here only
    if p == 0.0:
        return 1.0
    if p == 1.0:
        return 1.0 / d_k
    return float(d_k ** -p)


def _scores_may_overflow(Q: np.ndarray, K: np.ndarray, scale: float, work: np.dtype) -> bool:
    """Whether some score ``scale · q·k`` could leave ``work``'s range: ``|q·k| ≤ d_k max|q| max|k|``.

    False for every ordinary input, so the finiteness check of the scores costs nothing then.
    """
    bound = abs(scale) * Q.shape[-1] * float(np.abs(Q).max()) * float(np.abs(K).max())
    return bound > float(np.finfo(work).max) / 4  # a margin for the rounding of the products


def _working_dtype(dtype: np.dtype) -> np.dtype:
    """The dtype scores, sums and weighted values are computed in: float32 for float16 data."""
    return np.dtype(np.float32) if dtype == np.float16 else np.dtype(dtype)


def softmax(x: Any, axis: int = -1, mask: Any = None) -> np.ndarray:
    """Numerically stable softmax along ``axis``, with an optional mask.

    ``softmax(x)_i = exp(x_i - m) / Σ_j exp(x_j - m)`` with ``m = max_j x_j``;
    subtracting the maximum changes nothing mathematically and keeps every
    exponent ``≤ 0``, so no logit overflows (``1e4`` in float32 is fine).

    Parameters
    ----------
    x : array_like
        Logits. Lists become float64; float arrays keep their dtype. ``-inf``
        is allowed and gets weight exactly 0; NaN and ``+inf`` are refused.
    axis : int
        The axis that sums to 1.
    mask : array_like of bool, optional
        Broadcastable to ``x.shape``; where False the weight is exactly 0.

    Returns
    -------
    ndarray, same shape and dtype as ``x``
        Non-negative weights summing to 1 along ``axis``. A slice in which
        nothing is allowed (all masked, or all ``-inf``) is all zeros, never
        NaN. float16 logits are computed in float32 (the sum of many weights
        would overflow float16) and the weights returned as float16.

    Raises
    ------
    TypeError
        ``x`` is not real-valued, ``mask`` is not boolean, ``axis`` is not an int.
    ValueError
        ``x`` holds NaN or ``+inf``, ``axis`` is out of range, ``x`` has
        length 0 along ``axis``, or ``mask`` does not broadcast to ``x``.

    Examples
    --------
    >>> import numpy as np
    >>> softmax([0.0, 0.0, np.log(2.0)]).round(4)
    array([0.25, 0.25, 0.5 ])
    >>> softmax([1.0, 2.0, 3.0], mask=[True, False, True]).round(4)
    array([0.1192, 0.    , 0.8808])
    """
    x = _v.as_float_array(x, "x", allow_neg_inf=True)
    if isinstance(axis, (bool, np.bool_)) or not isinstance(axis, (int, np.integer)):
        raise TypeError(f"axis must be an integer; got {type(axis).__name__} {axis!r}")
    if x.ndim == 0:
        raise ValueError("x must have at least 1 dimension; got a scalar")
    if not -x.ndim <= axis < x.ndim:
        raise ValueError(f"axis {axis} is out of range for x of shape {x.shape}")
    if x.shape[axis] == 0:
        raise ValueError(f"x has length 0 along axis {axis} (shape {x.shape}); there is nothing to normalise")
    if mask is not None:
        m = np.asarray(mask)
        if m.dtype.kind != "b":
            raise TypeError(f"mask must be boolean (True = keep); got dtype {m.dtype}")
        m = _v.as_mask(m, "mask", x.shape)
        x = np.where(m, x, -np.inf)
    weights = _softmax_inplace(np.array(x, dtype=_working_dtype(x.dtype), copy=True), axis)
    return weights.astype(x.dtype, copy=False)


@overload
def _softmax_inplace(z: np.ndarray, axis: int, *, normalise: Literal[True] = ...) -> np.ndarray: ...
@overload
def _softmax_inplace(
    z: np.ndarray, axis: int, *, normalise: Literal[False]
) -> tuple[np.ndarray, np.ndarray]: ...
def _softmax_inplace(
    z: np.ndarray, axis: int, *, normalise: bool = True
) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
    """Softmax of ``z`` along ``axis``, overwriting ``z``; ``-inf`` entries give 0.

    With ``normalise=False`` returns ``(exp(z - max), sum)`` so a caller can
    divide something smaller than the weights by the sum.
    """
    peak = z.max(axis=axis, keepdims=True)
    empty = np.isneginf(peak)  # every entry -inf: nothing to attend to
    if empty.any():
        peak = np.where(empty, 0.0, peak).astype(z.dtype)
    np.subtract(z, peak, out=z)
    np.exp(z, out=z)  # exp(-inf) = 0 exactly
    total = z.sum(axis=axis, keepdims=True)
    if empty.any():
        total = np.where(empty, 1.0, total).astype(z.dtype)  # 0 / 1 = 0, not 0 / 0
    if not normalise:
        return z, total
    np.divide(z, total, out=z)
    return z


def causal_mask(n_q: int, n_k: int | None = None) -> np.ndarray:
    """Boolean mask letting query ``i`` attend to keys ``0..i`` (top-left aligned).

    Parameters
    ----------
    n_q : int
        Number of queries.
    n_k : int, optional
        Number of keys; defaults to ``n_q``.

    Returns
    -------
    ndarray of bool, shape (n_q, n_k)
        ``mask[i, j] = j <= i``. As in PyTorch, the diagonal starts at the top
        left, so with ``n_q < n_k`` the last keys are visible to no query.

    Raises
    ------
    TypeError
        ``n_q`` or ``n_k`` is not an integer.
    ValueError
        ``n_q`` or ``n_k`` is less than 1.

    Examples
    --------
    >>> causal_mask(3).astype(int)
    array([[1, 0, 0],
           [1, 1, 0],
           [1, 1, 1]])
    """
    n_q = _v.check_positive_int(n_q, "n_q")
    n_k = n_q if n_k is None else _v.check_positive_int(n_k, "n_k")
    return np.tri(n_q, n_k, dtype=bool)  # (n_q, n_k)


def padding_mask(lengths: Any, n_k: int) -> np.ndarray:
    """Boolean mask hiding the padding at the end of each sequence of a batch.

    Parameters
    ----------
    lengths : array_like of int, shape (batch,)
        True length of each sequence, ``0 <= length <= n_k``.
    n_k : int
        Padded length (number of keys).

    Returns
    -------
    ndarray of bool, shape (batch, 1, n_k)
        ``mask[b, 0, j] = j < lengths[b]``; the middle axis broadcasts over
        the queries. For multi-head inputs ``(batch, heads, n_q, n_k)`` use
        ``mask[:, None]``. A sequence of length 0 leaves its rows with
        nothing to attend to, which attention turns into zero outputs.

    Raises
    ------
    TypeError
        ``n_k`` is not an integer, or ``lengths`` holds values that are not whole numbers.
    ValueError
        ``n_k < 1``; ``lengths`` is not a non-empty 1-D sequence, or a length lies outside
        ``0..n_k`` (the message names the lengths and their positions).

    Examples
    --------
    >>> padding_mask([2, 3], 3).astype(int)
    array([[[1, 1, 0]],
    <BLANKLINE>
           [[1, 1, 1]]])
    """
    n_k = _v.check_positive_int(n_k, "n_k")
    arr = np.asarray(lengths)
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"lengths must be a non-empty 1-D sequence; got shape {arr.shape}")
    if arr.dtype.kind not in "iu":
        if arr.dtype.kind == "f" and np.all(np.isfinite(arr)) and np.all(arr == np.round(arr)):
            arr = arr.astype(np.int64)
        else:
            raise TypeError(f"lengths must be integers; got dtype {arr.dtype}: {arr.tolist()}")
    bad = (arr < 0) | (arr > n_k)
    if bad.any():
        raise ValueError(
            f"lengths must lie in 0..n_k={n_k}; got {arr[bad].tolist()} "
            f"at positions {np.flatnonzero(bad).tolist()}"
        )
    return (np.arange(n_k) < arr[:, None])[:, None, :]  # (batch, 1, n_k)


@overload
def scaled_dot_product_attention(
    Q: Any, K: Any, V: Any, attn_mask: Any = ..., *, is_causal: bool = ..., scale: float | None = ...,
    return_weights: Literal[False] = ..., enable_gqa: bool = ...,
) -> np.ndarray: ...
@overload
def scaled_dot_product_attention(
    Q: Any, K: Any, V: Any, attn_mask: Any = ..., *, is_causal: bool = ..., scale: float | None = ...,
    return_weights: Literal[True], enable_gqa: bool = ...,
) -> tuple[np.ndarray, np.ndarray]: ...
def scaled_dot_product_attention(
    Q: Any,
    K: Any,
    V: Any,
    attn_mask: Any = None,
    *,
    is_causal: bool = False,
    scale: float | None = None,
    return_weights: bool = False,
    enable_gqa: bool = False,
) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
    """``softmax(Q Kᵀ · scale + mask) V`` with PyTorch's conventions.

    Parameters
    ----------
    Q : (..., n_q, d_k) array_like
        Queries, one row per position that asks.
    K : (..., n_k, d_k) array_like
        Keys; must share ``d_k`` with ``Q``.
    V : (..., n_k, d_v) array_like
        Values; one row per key, ``d_v`` may differ from ``d_k``.
    attn_mask : array_like, optional
        Broadcastable to ``(..., n_q, n_k)``. Boolean: True means "may
        attend" (as in PyTorch). Float: added to the scaled scores; ``-inf``
        forbids a pair.
    is_causal : bool
        Apply ``causal_mask(n_q, n_k)`` (top-left aligned, as in PyTorch).
        Cannot be combined with ``attn_mask``.
    scale : float, optional
        Factor applied to ``Q Kᵀ``; ``None`` means ``1 / √d_k``.
    return_weights : bool
        Also return the attention weights.
    enable_gqa : bool
        Grouped-query attention, as PyTorch's ``enable_gqa``: ``Q`` is
        ``(..., n_heads, n_q, d_k)`` and ``K``, ``V`` may have fewer heads,
        ``(..., n_kv_heads, n_k, ·)``, with ``n_heads`` a multiple of
        ``n_kv_heads``; key/value head ``j`` serves the query heads
        ``j·g … (j+1)·g − 1``, ``g = n_heads // n_kv_heads``.

    Returns
    -------
    out : ndarray, shape (..., n_q, d_v)
        Leading dimensions are those of Q, K and V broadcast together.
    weights : ndarray, shape (..., n_q, n_k)
        Only with ``return_weights``; each row sums to 1 (or is all zero).

    Raises
    ------
    TypeError
        Non-real inputs, a mask that is neither boolean nor float, a
        non-numeric ``scale`` or non-boolean flags.
    ValueError
        Shapes that do not fit (each message names the arrays and their
        shapes), empty sequences, NaN or infinite inputs, a non-positive or
        non-finite ``scale``, ``is_causal`` together with ``attn_mask``,
        scores ``Q Kᵀ · scale`` that overflow the dtype (to +inf or to -inf),
        or, with ``enable_gqa``, inputs without a head axis or query heads
        that are not a multiple of the key/value heads.

    Notes
    -----
    Differences from ``torch.nn.functional.scaled_dot_product_attention``,
    on purpose:

    * NaN or ±inf in ``Q``, ``K`` or ``V`` raise ``ValueError`` instead of
      propagating, and so do scores that overflow the dtype (e.g. entries of
      ``1e20`` in float32), which would otherwise turn into NaN (+inf) or into
      a row that looks fully masked (-inf).
    * A query row whose keys are all masked gets all-zero weights and a zero
      output, by definition here; PyTorch returned NaN there before 2.5 and
      has returned zeros since.
    * There is no dropout argument: this library computes, it does not train.

    The dtype is kept (float16/32/64); lists and integer arrays give float64;
    mixed dtypes follow NumPy's promotion. float16 data is computed in float32
    (scores, row sums and weighted values) and returned as float16, as in
    PyTorch, so long rows neither overflow nor lose their small weights.

    Examples
    --------
    >>> Q = [[1.0, 0.0]]
    >>> K = [[1.0, 0.0], [0.0, 1.0]]
    >>> V = [[1.0, 2.0], [3.0, 4.0]]
    >>> out, w = scaled_dot_product_attention(Q, K, V, return_weights=True)
    >>> w.round(4)
    array([[0.6698, 0.3302]])
    >>> out.round(4)
    array([[1.6605, 2.6605]])

    Two query heads sharing one key/value head (grouped-query attention):

    >>> Q2 = np.stack([Q, Q])  # (n_heads=2, n_q=1, d_k=2)
    >>> scaled_dot_product_attention(Q2, [K], [V], enable_gqa=True).round(4)
    array([[[1.6605, 2.6605]],
    <BLANKLINE>
           [[1.6605, 2.6605]]])
    """
    if _v.check_bool_flag(enable_gqa, "enable_gqa"):
        Q, K, V = _v.repeat_kv_heads(Q, K, V)
    Q, K, V, batch = _v.check_qkv(Q, K, V)
    is_causal = _v.check_bool_flag(is_causal, "is_causal")
    return_weights = _v.check_bool_flag(return_weights, "return_weights")
    scale = _v.check_scale(scale)
    n_q, d_k = Q.shape[-2:]
    n_k, d_v = V.shape[-2:]
    if is_causal and attn_mask is not None:
        raise ValueError("pass either attn_mask or is_causal=True, not both (as in PyTorch)")
    if scale is None:
        scale = scale_for(d_k)
    dtype = np.result_type(Q, K, V)
    mask = None
    if attn_mask is not None:
        mask = _v.as_mask(attn_mask, "attn_mask", batch + (n_q, n_k))
        if mask.dtype.kind == "f":
            dtype = np.result_type(dtype, mask.dtype)
            mask = mask.astype(dtype, copy=False)
    elif is_causal:
        mask = causal_mask(n_q, n_k)

    # Flatten the batch so a loop can take chunks of whole (n_q, n_k) blocks.
    n_batch = math.prod(batch)
    Qf = np.broadcast_to(Q.astype(dtype, copy=False), batch + (n_q, d_k)).reshape(n_batch, n_q, d_k)
    Kf = np.broadcast_to(K.astype(dtype, copy=False), batch + (n_k, d_k)).reshape(n_batch, n_k, d_k)
    Vf = np.broadcast_to(V.astype(dtype, copy=False), batch + (n_k, d_v)).reshape(n_batch, n_k, d_v)
    Mf = None
    if mask is not None:
        Mf = np.broadcast_to(mask, batch + (n_q, n_k)).reshape(n_batch, n_q, n_k)
    out = np.empty((n_batch, n_q, d_v), dtype=dtype)
    weights = np.empty((n_batch, n_q, n_k), dtype=dtype) if return_weights else None
    step = max(1, _CHUNK_SCORES // (n_q * n_k))
    work = _working_dtype(dtype)  # float16 data is computed in float32, as in PyTorch
    scale_t = work.type(scale)
    may_overflow = _scores_may_overflow(Q, K, scale, work)
    c_max = min(step, n_batch)
    buffer = np.empty((c_max, n_q, n_k), dtype=work)  # reused: no page faults per slice
    # V with a column of ones: one matmul gives both Σ_j e_ij v_j and the softmax sum Σ_j e_ij.
    V1 = np.ones((c_max, n_k, d_v + 1), dtype=work)
    result = np.empty((c_max, n_q, d_v + 1), dtype=work)
    for start in range(0, n_batch, step):
        sl = slice(start, start + step)
        c = len(Qf[sl])
        scores = buffer[:c]
        with np.errstate(over="ignore", invalid="ignore"):  # overflow is detected below
            q_scaled = Qf[sl].astype(work, copy=False) * scale_t  # (c, n_q, d_k)
            np.matmul(q_scaled, Kf[sl].swapaxes(-1, -2).astype(work, copy=False), out=scores)  # (c, n_q, n_k)
        if may_overflow and not np.isfinite(scores).all():  # to +inf, or to -inf, which would pass for a mask
            raise _v.scores_overflow_error(work, Q, K)
        if Mf is not None:
            if Mf.dtype.kind == "b":
                np.copyto(scores, -np.inf, where=~Mf[sl])
            else:
                scores += Mf[sl]
        peak = scores.max(axis=-1, keepdims=True)  # (c, n_q, 1)
        if (np.isposinf(peak) | np.isnan(peak)).any():  # a float mask pushed a score to +inf
            raise _v.scores_overflow_error(work, Q, K)
        empty = np.isneginf(peak)  # rows with nothing allowed
        if empty.any():
            peak[empty] = 0.0
        scores -= peak  # every exponent <= 0: no overflow
        np.exp(scores, out=scores)  # unnormalised weights e_ij; exp(-inf) = 0 exactly
        V1[:c, :, :d_v] = Vf[sl]
        np.matmul(scores, V1[:c], out=result[:c])  # (c, n_q, d_v + 1)
        total = result[:c, :, d_v:]  # (c, n_q, 1) = Σ_j e_ij, >= 1 unless the row is empty
        if empty.any():
            total[empty] = 1.0  # 0 / 1 = 0 rather than 0 / 0
        np.divide(result[:c, :, :d_v], total, out=out[sl])  # (c, n_q, d_v)
        if weights is not None:
            np.divide(scores, total, out=weights[sl])
    out = out.reshape(batch + (n_q, d_v))
    if weights is not None:
        return out, weights.reshape(batch + (n_q, n_k))
    return out
