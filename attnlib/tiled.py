"""Attention computed block by block with an online softmax (the FlashAttention idea).

``softmax(Q Kᵀ · scale) V`` needs, for each query row ``i``, the maximum
``m_i`` and the sum ``l_i = Σ_j exp(s_ij − m_i)`` over *all* keys before any
weight is known. The online softmax (Milakov & Gimelshein, 2018) removes that
need: walking over the keys in blocks, keep a running maximum ``m``, a running
sum ``l`` and a running unnormalised output ``acc``; when a block raises the
maximum from ``m_old`` to ``m_new``, everything accumulated so far was
computed with ``exp(· − m_old)`` and is brought up to date by one factor
``exp(m_old − m_new)``. Dividing ``acc`` by ``l`` at the end gives the
attention output, exactly in exact arithmetic and up to rounding in floating
point. FlashAttention (Dao et al., 2022) uses the same recurrence so that the
``n_q × n_k`` score matrix never leaves fast memory; here it means the matrix
is never formed at all. Besides the output and a copy of ``V`` with a column
of ones (both about ``n · d`` numbers), the function holds one
``block_q × block_k`` tile of scores and a running state of ``block_q`` rows,
whatever ``n`` is (see the Notes of :func:`tiled_attention`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from attnlib import _validation as _v
from attnlib.core import _scores_may_overflow, _working_dtype, scale_for

__all__ = ["OnlineStep", "online_softmax_steps", "tiled_attention"]


def _buffer(flat: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """A C-contiguous array of ``shape`` on the front of the reusable 1-D ``flat`` buffer."""
    return flat[: math.prod(shape)].reshape(shape)


def tiled_attention(
    Q: Any,
    K: Any,
    V: Any,
    *,
    block_q: int,
    block_k: int,
    is_causal: bool = False,
    scale: float | None = None,
) -> np.ndarray:
    """``softmax(Q Kᵀ · scale) V`` block by block, without forming the ``n_q × n_k`` scores.

    For each block of ``block_q`` queries, the keys are visited in blocks of
    ``block_k``; per query row the function keeps

    * ``m`` – the largest score seen so far,
    * ``l`` – ``Σ exp(s_j − m)`` over the keys seen so far,
    * ``acc`` – ``Σ exp(s_j − m) v_j`` over the keys seen so far,

    and on each new block with scores ``s`` sets ``m_new = max(m, max s)``,
    ``l ← l · exp(m − m_new) + Σ exp(s − m_new)`` and
    ``acc ← acc · exp(m − m_new) + exp(s − m_new) V_block``. The output rows
    are ``acc / l``: the same numbers as
    :func:`attnlib.core.scaled_dot_product_attention`, up to rounding.

    Parameters
    ----------
    Q : (..., n_q, d_k) array_like
        Queries.
    K : (..., n_k, d_k) array_like
        Keys; must share ``d_k`` with ``Q``.
    V : (..., n_k, d_v) array_like
        Values, one row per key.
    block_q : int
        Queries per block (positive). May exceed ``n_q`` and need not divide it.
    block_k : int
        Keys per block (positive). May exceed ``n_k`` and need not divide it.
    is_causal : bool
        Query ``i`` attends to keys ``0..i`` only (top-left aligned, as
        :func:`attnlib.core.causal_mask`). Key blocks that lie entirely above
        the diagonal are skipped, so causal attention does about half the work.
    scale : float, optional
        Factor applied to ``Q Kᵀ``; ``None`` means ``1 / √d_k``.

    Returns
    -------
    ndarray, shape (..., n_q, d_v)
        Leading dimensions are those of ``Q``, ``K`` and ``V`` broadcast
        together; the dtype follows NumPy's promotion as in
        :func:`attnlib.core.scaled_dot_product_attention` (float16 data is
        computed in float32 and returned as float16).

    Raises
    ------
    TypeError
        Non-real inputs, non-integer block sizes, a non-numeric ``scale`` or
        a non-boolean ``is_causal``.
    ValueError
        Shapes that do not fit (each message names the arrays and their
        shapes), empty sequences, NaN or infinite inputs, scores that
        overflow the dtype, non-positive block sizes, or a non-positive or
        non-finite ``scale``.

    Notes
    -----
    Memory: besides the inputs and the output, one tile of scores
    ``(..., block_q, block_k)``, the running state ``(..., block_q, d_v + 1)``
    and a copy of ``V`` with a column of ones, ``(..., n_k, d_v + 1)`` (one
    matrix product then gives both ``Σ e_j v_j`` and ``Σ e_j``); float16
    inputs are computed in float32, which adds float32 copies of ``Q`` and
    ``K``. That is ``O(block_q · block_k + n · d)`` per batch element
    instead of the ``O(n_q · n_k)`` of the direct computation: the tile is the
    largest temporary only while it is larger than the ``n · d`` copies.

    There is no ``attn_mask`` argument; with ``is_causal`` every row may
    attend to at least key 0, so no row is ever empty. The code nevertheless
    treats a row with nothing allowed as :mod:`attnlib.core` does (zero
    output), should a mask ever be added.

    Examples
    --------
    >>> import numpy as np
    >>> from attnlib import scaled_dot_product_attention
    >>> rng = np.random.default_rng(0)
    >>> Q, K, V = (rng.standard_normal((10, 4)) for _ in range(3))
    >>> out = tiled_attention(Q, K, V, block_q=4, block_k=3, is_causal=True)
    >>> out.shape
    (10, 4)
    >>> direct = scaled_dot_product_attention(Q, K, V, is_causal=True)
    >>> bool(np.abs(out - direct).max() < 1e-12)
    True
    """
    Q, K, V, batch = _v.check_qkv(Q, K, V)
    block_q = _v.check_positive_int(block_q, "block_q")
    block_k = _v.check_positive_int(block_k, "block_k")
    is_causal = _v.check_bool_flag(is_causal, "is_causal")
    scale = _v.check_scale(scale)
    n_q, d_k = Q.shape[-2:]
    n_k, d_v = V.shape[-2:]
    if scale is None:
        scale = scale_for(d_k)
    dtype = np.result_type(Q, K, V)
    work = _working_dtype(dtype)  # float16 data is computed in float32, as in core and PyTorch
    scale_t = work.type(scale)
    Q = Q.astype(work, copy=False)
    K = K.astype(work, copy=False)
    may_overflow = _scores_may_overflow(Q, K, scale, work)
    bq = min(block_q, n_q)
    bk = min(block_k, n_k)

    # V with a column of ones: S_block @ V1_block gives (Σ_j e_ij v_j, Σ_j e_ij) in one product.
    V1 = np.ones(V.shape[:-1] + (d_v + 1,), dtype=work)  # (..., n_k, d_v + 1)
    V1[..., :d_v] = V
    out = np.empty(batch + (n_q, d_v), dtype=dtype)  # (..., n_q, d_v)

    # Reusable flat buffers; _buffer() gives contiguous views of any smaller block shape.
    n_batch = math.prod(batch)
    scores_buf = np.empty(n_batch * bq * bk, dtype=work)
    q_buf = np.empty(math.prod(Q.shape[:-2]) * bq * d_k, dtype=work)
    acc_buf = np.empty(n_batch * bq * (d_v + 1), dtype=work)
    tmp_buf = np.empty_like(acc_buf)
    state_buf = np.empty(3 * n_batch * bq, dtype=work)

    for i0 in range(0, n_q, bq):
        i1 = min(i0 + bq, n_q)
        rows = i1 - i0
        q = _buffer(q_buf, Q.shape[:-2] + (rows, d_k))
        np.multiply(Q[..., i0:i1, :], scale_t, out=q)  # (..., rows, d_k), scaled once per block
        acc = _buffer(acc_buf, batch + (rows, d_v + 1))  # running (Σ e v, Σ e) = (acc, l)
        tmp = _buffer(tmp_buf, batch + (rows, d_v + 1))
        state = _buffer(state_buf, (3,) + batch + (rows, 1))
        m, m_new, alpha = state[0], state[1], state[2]  # each (..., rows, 1)
        m.fill(-np.inf)
        acc.fill(0.0)
        # Causal: row i sees keys j <= i, so keys from i1 on are invisible to the whole block.
        k_end = min(n_k, i1) if is_causal else n_k
        for j0 in range(0, k_end, bk):
            j1 = min(j0 + bk, k_end)
            s = _buffer(scores_buf, batch + (rows, j1 - j0))
            with np.errstate(over="ignore", invalid="ignore"):  # overflow is detected below
                np.matmul(q, K[..., j0:j1, :].swapaxes(-1, -2), out=s)  # (..., rows, cols)
            if may_overflow and not np.isfinite(s).all():  # to +inf, or to -inf, which would pass for a mask
                raise _v.scores_overflow_error(work, Q, K)
            if is_causal and j1 - 1 > i0:  # the tile straddles the diagonal
                above = np.arange(j0, j1) > np.arange(i0, i1)[:, None]  # (rows, cols): j > i
                np.copyto(s, -np.inf, where=above)
            np.max(s, axis=-1, keepdims=True, out=m_new)  # (..., rows, 1)
            np.maximum(m_new, m, out=m_new)
            empty = np.isneginf(m_new)  # rows with nothing allowed so far
            has_empty = bool(empty.any())
            if has_empty:
                m_new[empty] = 0.0  # shift by 0: exp(-inf - 0) = 0, never -inf - (-inf)
            np.subtract(m, m_new, out=alpha)
            np.exp(alpha, out=alpha)  # exp(m_old - m_new) <= 1; 0 on a row's first keys
            s -= m_new  # every exponent <= 0: no overflow
            np.exp(s, out=s)  # unnormalised weights e_ij; exp(-inf) = 0 exactly
            acc *= alpha  # rescale what was summed against the old maximum
            np.matmul(s, V1[..., j0:j1, :], out=tmp)  # (..., rows, d_v + 1)
            acc += tmp
            m[...] = m_new
            if has_empty:
                m[empty] = -np.inf  # still nothing seen: the next block starts afresh
        total = acc[..., d_v:]  # (..., rows, 1) = l, >= 1 unless the row saw nothing
        total[total == 0.0] = 1.0  # 0 / 1 = 0 for an empty row, as in attnlib.core
        np.divide(acc[..., :d_v], total, out=out[..., i0:i1, :])  # (..., rows, d_v)
    return out


@dataclass(frozen=True)
class OnlineStep:
    """The online softmax of one query row after a block of keys (see :func:`online_softmax_steps`).

    Attributes
    ----------
    keys_read : int
        How many keys have been read (the keys ``0 … keys_read − 1``).
    m : float
        The running maximum of the scores read.
    correction : float
        ``exp(m_old − m)``, the factor this block applied to what was accumulated before it (0 at the
        first block, where nothing was; 1 when the maximum did not grow). Without rescaling it is still
        reported, though not applied.
    l : float
        The running sum ``Σ_j exp(s_j − m)`` over the keys read.
    acc : numpy.ndarray
        The running unnormalised output ``Σ_j exp(s_j − m) v_j``, shape ``(d_v,)``.
    terms : numpy.ndarray
        Each read key's term of ``l`` as it stands (``exp(s_j − m)`` when rescaled; the term as it was
        added, ``exp(s_j − m_then)``, when not), shape ``(keys_read,)``.
    """

    keys_read: int
    m: float
    correction: float
    l: float
    acc: np.ndarray
    terms: np.ndarray

    @property
    def output(self) -> np.ndarray:
        """``acc / l``: the attention output over the keys read so far, shape ``(d_v,)``."""
        return self.acc / self.l

    @property
    def weights(self) -> np.ndarray:
        """``terms / l``: the weights of the keys read so far, shape ``(keys_read,)``."""
        return self.terms / self.l


def online_softmax_steps(
    scores: Any, values: Any, *, block: int = 1, rescale: bool = True
) -> list[OnlineStep]:
    """The online softmax of one query row, block by block: the state after each block of keys.

    For scaled scores ``s`` and value rows ``v``, start from ``m = −∞``, ``l = 0``, ``acc = 0``; a block
    ``J`` of keys updates them to ``m' = max(m, max_J s_j)``, ``l' = e^(m − m') l + Σ_J e^(s_j − m')``
    and ``acc' = e^(m − m') acc + Σ_J e^(s_j − m') v_j``. After the last block ``acc / l`` equals
    ``softmax(s) @ v`` up to rounding. With ``rescale=False`` the old sums are never multiplied by
    ``e^(m − m')``: the mistake the recurrence exists to avoid (each old term stays relative to the
    maximum at the time it was added, so the early keys keep too much weight).

    Parameters
    ----------
    scores : array_like, shape (n,)
        One query's scaled scores, finite.
    values : array_like, shape (n, d_v)
        The value rows, finite.
    block : int
        Keys per block, at least 1 (the last block may be shorter).
    rescale : bool
        Apply the correction ``e^(m − m')`` (the online softmax) or not (the mistake).

    Returns
    -------
    list of OnlineStep
        One state per block, in order; ``steps[-1].output`` is the attention output.

    Raises
    ------
    TypeError
        Non-numeric ``scores`` or ``values``, a non-integer ``block``, a non-bool ``rescale``.
    ValueError
        ``scores`` not 1-D and non-empty, ``values`` not ``(n, d_v)``, NaN or infinities, ``block`` below 1.

    Examples
    --------
    >>> steps = online_softmax_steps([2.0, 0.0, 3.0, 5.0], np.eye(4))
    >>> [(st.keys_read, st.m) for st in steps]
    [(1, 2.0), (2, 2.0), (3, 3.0), (4, 5.0)]
    >>> e = np.exp([2.0, 0.0, 3.0, 5.0])
    >>> bool(np.allclose(steps[-1].weights, e / e.sum()))
    True
    >>> wrong = online_softmax_steps([2.0, 0.0, 3.0, 5.0], np.eye(4), rescale=False)
    >>> round(wrong[-1].l, 4)  # 1 + e^-2 + 1 + 1: each term relative to the maximum when it came
    3.1353
    """
    s = _v.as_float_array(scores, "scores").astype(np.float64)
    if s.ndim != 1 or s.size == 0:
        raise ValueError(f"scores must be one query's scores, shape (n,) with n >= 1; got shape {s.shape}")
    v = _v.as_float_array(values, "values").astype(np.float64)
    if v.ndim != 2 or v.shape[0] != s.shape[0]:
        raise ValueError(f"values must have shape (n, d_v) = ({s.shape[0]}, d_v) to match scores {s.shape}; "
                         f"got {v.shape}")
    block = _v.check_positive_int(block, "block")
    rescale = _v.check_bool_flag(rescale, "rescale")
    m, l, acc = -math.inf, 0.0, np.zeros(v.shape[1])
    terms = np.zeros(0)
    steps = []
    for j0 in range(0, s.size, block):
        s_b, v_b = s[j0:j0 + block], v[j0:j0 + block]
        m_new = max(m, float(s_b.max()))
        correction = math.exp(m - m_new) if m > -math.inf else 0.0
        keep = correction if rescale else 1.0
        e = np.exp(s_b - m_new)
        l = keep * l + float(e.sum())
        acc = keep * acc + e @ v_b
        terms = np.concatenate([keep * terms, e])
        m = m_new
        steps.append(OnlineStep(j0 + s_b.size, m, correction, l, acc.copy(), terms.copy()))
    return steps
