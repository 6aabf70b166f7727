"""Attention as the formula reads, in a few vectorised lines: the reference beside the fast path.

:func:`attnlib.core.scaled_dot_product_attention`, which the chapters call, computes the batch in
chunks, into reused buffers, with one matrix product for the values and the softmax sums together.
:func:`reference_attention` is the formula and nothing else, with the same arguments and the same
checks of its inputs. ``tests/test_reference.py`` holds the two equal on random shapes, masks and
scales, so that reading the short one is reading what the long one computes.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from attnlib import _validation as _v
from attnlib.core import causal_mask, scale_for, softmax

__all__ = ["reference_attention"]


def reference_attention(
    Q: Any, K: Any, V: Any, attn_mask: Any = None, *, is_causal: bool = False, scale: float | None = None
) -> np.ndarray:
    """``softmax(Q Kᵀ · scale + mask) V``, one array operation a step.

    Parameters
    ----------
    Q, K, V : (..., n_q, d_k), (..., n_k, d_k), (..., n_k, d_v) array_like
        Queries, keys and values; leading axes broadcast.
    attn_mask : array_like, optional
        Broadcastable to ``(..., n_q, n_k)``: boolean ("may attend") or float (added to the scaled
        scores, ``-inf`` forbids a pair).
    is_causal : bool
        Query ``i`` may attend to keys ``0, ..., i`` (:func:`attnlib.core.causal_mask`).
    scale : float, optional
        The factor of ``Q Kᵀ``; ``None`` means ``1/√d_k`` (:func:`attnlib.core.scale_for`).

    Returns
    -------
    (..., n_q, d_v) ndarray
        The outputs; a query allowed no key gets a zero row.

    Raises
    ------
    TypeError, ValueError
        As :func:`attnlib.core.scaled_dot_product_attention` for the same bad input.

    Examples
    --------
    >>> Q, K, V = np.array([[1.0, 0.0]]), np.array([[1.0, 0.0], [0.0, 1.0]]), np.array([[1.0], [3.0]])
    >>> reference_attention(Q, K, V).round(4)
    array([[1.6605]])
    """
    Q, K, V, batch = _v.check_qkv(Q, K, V)
    is_causal = _v.check_bool_flag(is_causal, "is_causal")
    if is_causal and attn_mask is not None:
        raise ValueError("pass either attn_mask or is_causal=True, not both (as in PyTorch)")
    scale = _v.check_scale(scale)
    n_q, n_k, d_k = Q.shape[-2], K.shape[-2], Q.shape[-1]
    mask = causal_mask(n_q, n_k) if is_causal else attn_mask
    if mask is not None:
        mask = _v.as_mask(mask, "attn_mask", batch + (n_q, n_k))

    scores = Q @ K.swapaxes(-1, -2)  # step 1: (..., n_q, n_k)
    scaled = scores * (scale_for(d_k) if scale is None else scale)  # step 2
    if mask is not None and mask.dtype.kind == "f":
        scaled = scaled + mask  # a float mask adds to the scaled scores
    allowed = mask if mask is not None and mask.dtype.kind == "b" else None
    weights = softmax(scaled, axis=-1, mask=allowed)  # step 3: each row sums to 1 (or is all 0)
    return weights @ V  # step 4: (..., n_q, d_v)
