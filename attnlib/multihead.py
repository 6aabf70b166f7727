"""Multi-head attention: project, split into heads, attend per head, merge, project back.

For input rows ``X`` (queries' side) and ``X_kv`` (keys' and values' side,
``X_kv = X`` in self-attention), with ``H`` heads of width ``d_head``::

    Q = X W_Q,  K = X_kv W_K,  V = X_kv W_V          # (..., n, H·d_head)
    head_h = softmax(Q_h K_hᵀ / √d_head) V_h           # Q_h = columns h·d_head : (h+1)·d_head
    output = [head_0 | head_1 | ... | head_{H-1}] W_O   # (..., n_q, d_model)

(Vaswani et al. 2017, Sec. 3.2.2). :func:`split_heads` and :func:`merge_heads`
are the two reshapes that turn the column blocks into a head axis and back;
:class:`MultiHeadAttention` holds the four matrices and returns a
:class:`MultiHeadTrace` holding every intermediate, one call at a time.
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from attnlib import _validation as _v
from attnlib.core import causal_mask, scale_for, scaled_dot_product_attention
from attnlib.trace import AttentionTrace, trace_attention
from attnlib.training import xavier_uniform

__all__ = ["split_heads", "merge_heads", "MultiHeadTrace", "MultiHeadAttention"]


def split_heads(X: Any, n_heads: int) -> np.ndarray:
    """Cut the last axis into ``n_heads`` blocks and move them to a head axis.

    Head ``h`` gets the columns ``h·d_head : (h+1)·d_head`` of ``X``, with
    ``d_head = d_model // n_heads``.

    Parameters
    ----------
    X : (..., n, d_model) array_like
        Rows of a sequence (typically a projection such as ``X @ W_Q``).
    n_heads : int
        Number of heads; must divide ``d_model``.

    Returns
    -------
    ndarray, shape (..., n_heads, n, d_model // n_heads)
        A view of ``X`` when ``X`` is already a float array.

    Raises
    ------
    TypeError
        ``X`` is not real-valued or ``n_heads`` is not an integer.
    ValueError
        ``X`` has fewer than 2 dimensions or holds NaN/inf, ``n_heads`` is not
        positive, or ``n_heads`` does not divide ``d_model``.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.arange(12.0).reshape(2, 6)  # n = 2 tokens, d_model = 6
    >>> split_heads(X, 3)[1]  # head 1: columns 2 and 3
    array([[2., 3.],
           [8., 9.]])
    >>> split_heads(X, 3).shape
    (3, 2, 2)
    """
    X = _v.as_float_array(X, "X")
    n_heads = _v.check_positive_int(n_heads, "n_heads")
    _v.check_sequence_matrix(X, "X", "n", "d_model")
    d_model = X.shape[-1]
    if d_model % n_heads:
        raise ValueError(
            f"n_heads={n_heads} does not divide d_model={d_model} (X of shape {X.shape}); "
            f"each head needs d_model / n_heads columns"
        )
    d_head = d_model // n_heads
    parts = X.reshape(*X.shape[:-1], n_heads, d_head)  # (..., n, n_heads, d_head)
    return parts.swapaxes(-2, -3)  # (..., n_heads, n, d_head)


def merge_heads(X: Any) -> np.ndarray:
    """Concatenate the heads side by side: the inverse of :func:`split_heads`.

    Parameters
    ----------
    X : (..., n_heads, n, d_head) array_like
        One block of rows per head.

    Returns
    -------
    ndarray, shape (..., n, n_heads * d_head)
        Row ``i`` is ``[X[0, i] | X[1, i] | ... ]``; ``merge_heads(split_heads(X, H))``
        equals ``X``.

    Raises
    ------
    TypeError
        ``X`` is not real-valued.
    ValueError
        ``X`` has fewer than 3 dimensions, an empty axis, or NaN/inf.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.arange(12.0).reshape(2, 6)
    >>> bool(np.array_equal(merge_heads(split_heads(X, 3)), X))
    True
    """
    X = _v.as_float_array(X, "X")
    if X.ndim < 3:
        raise ValueError(
            f"X must have shape (..., n_heads, n, d_head) with at least 3 dimensions; got shape {X.shape}"
        )
    if 0 in X.shape[-3:]:
        raise ValueError(f"X has an empty head, token or feature axis; shape {X.shape}")
    n_heads, n, d_head = X.shape[-3:]
    rows = X.swapaxes(-3, -2)  # (..., n, n_heads, d_head)
    return rows.reshape(*X.shape[:-3], n, n_heads * d_head)  # (..., n, n_heads * d_head)


@dataclass(frozen=True, eq=False, repr=False)
class MultiHeadTrace:
    """Every intermediate of one multi-head attention call.

    Returned by :meth:`MultiHeadAttention.__call__`. All arrays are read-only
    copies and the dataclass is frozen: a trace is a value.

    Attributes
    ----------
    n_heads : int
    X : ndarray, shape (..., n_q, d_model)
        The queries' input.
    X_kv : ndarray, shape (..., n_k, d_model)
        The keys' and values' input (equal to ``X`` for self-attention).
    Q : ndarray, shape (..., n_heads, n_q, d_head)
        ``split_heads(X @ W_Q, n_heads)``.
    K : ndarray, shape (..., n_heads, n_k, d_head)
        ``split_heads(X_kv @ W_K, n_heads)``.
    V : ndarray, shape (..., n_heads, n_k, d_head)
        ``split_heads(X_kv @ W_V, n_heads)``.
    weights : ndarray, shape (..., n_heads, n_q, n_k)
        Each head's attention weights.
    head_outputs : ndarray, shape (..., n_heads, n_q, d_head)
        Each head's ``weights @ V``.
    concat : ndarray, shape (..., n_q, n_heads * d_head)
        ``merge_heads(head_outputs)``.
    output : ndarray, shape (..., n_q, d_model)
        ``concat @ W_O``.
    scale : float
        The factor applied to every head's scores (``1 / √d_head`` unless given).
    attn_mask : ndarray or None
        The mask applied to every head, broadcastable to ``(..., n_q, n_k)``
        (no head axis): as given, or ``causal_mask(n_q, n_k)`` for
        ``is_causal=True``; None without a mask.
    """

    n_heads: int
    X: np.ndarray  # (..., n_q, d_model)
    X_kv: np.ndarray  # (..., n_k, d_model)
    Q: np.ndarray  # (..., n_heads, n_q, d_head)
    K: np.ndarray  # (..., n_heads, n_k, d_head)
    V: np.ndarray  # (..., n_heads, n_k, d_head)
    weights: np.ndarray  # (..., n_heads, n_q, n_k)
    head_outputs: np.ndarray  # (..., n_heads, n_q, d_head)
    concat: np.ndarray  # (..., n_q, n_heads * d_head)
    output: np.ndarray  # (..., n_q, d_model)
    scale: float = float("nan")
    attn_mask: np.ndarray | None = None

    def __post_init__(self) -> None:
        for name in ("X", "X_kv", "Q", "K", "V", "weights", "head_outputs", "concat", "output", "attn_mask"):
            object.__setattr__(self, name, _v.readonly_copy(getattr(self, name)))
        object.__setattr__(self, "n_heads", int(self.n_heads))
        object.__setattr__(self, "scale", float(self.scale))

    @property
    def d_head(self) -> int:
        return int(self.Q.shape[-1])

    def __repr__(self) -> str:
        return (
            f"MultiHeadTrace(n_heads={self.n_heads}, d_head={self.d_head}, X={self.X.shape}, "
            f"X_kv={self.X_kv.shape}, output={self.output.shape}, scale={self.scale:.6g})"
        )

    def head(self, h: int, tokens: Sequence[str] | None = None) -> AttentionTrace:
        """The single-head trace of head ``h``, with every intermediate and ``explain``.

        Computed by :func:`attnlib.trace.trace_attention` on ``Q[h]``,
        ``K[h]``, ``V[h]`` with this call's scale and mask, so its
        ``weights`` and ``output`` equal ``weights[h]`` and ``head_outputs[h]``.

        Parameters
        ----------
        h : int
            Head index, ``0 <= h < n_heads``.
        tokens : sequence of str, optional
            Query labels, passed to :func:`~attnlib.trace.trace_attention`.

        Returns
        -------
        AttentionTrace

        Raises
        ------
        TypeError
            ``h`` is not an integer.
        IndexError
            ``h`` is out of range (the message gives the range).
        ValueError
            The call had batch dimensions (``X`` or ``X_kv`` not 2-D): trace
            one sequence at a time.

        Examples
        --------
        >>> import numpy as np
        >>> mha = MultiHeadAttention(8, 2, np.random.default_rng(0))
        >>> tr = mha(np.random.default_rng(1).normal(size=(3, 8)))
        >>> bool(np.array_equal(tr.head(1).weights, tr.weights[1]))
        True
        """
        if isinstance(h, (bool, np.bool_)) or not isinstance(h, numbers.Integral):
            raise TypeError(f"h must be an integer head index; got {type(h).__name__} {h!r}")
        if not 0 <= h < self.n_heads:
            raise IndexError(f"head h={h} is out of range; valid heads are 0..{self.n_heads - 1}")
        if self.X.ndim != 2 or self.X_kv.ndim != 2:
            raise ValueError(
                "head() traces one sequence: X and X_kv must be 2-D (n, d_model); "
                f"got X {self.X.shape}, X_kv {self.X_kv.shape}. Call the layer on X[b] for one batch element"
            )
        return trace_attention(
            self.Q[h], self.K[h], self.V[h], tokens=tokens, scale=self.scale, attn_mask=self.attn_mask
        )


class MultiHeadAttention:
    """Multi-head attention with four weight matrices and no biases.

    Parameters
    ----------
    d_model : int
        Width of the input and output rows.
    n_heads : int
        Number of heads ``H``.
    rng : numpy.random.Generator
        The only source of randomness: ``W_Q``, ``W_K``, ``W_V``, ``W_O`` are
        drawn in that order by :func:`attnlib.training.task.xavier_uniform`.
    d_head : int, optional
        Width of each head; default ``d_model // n_heads`` (then ``n_heads``
        must divide ``d_model``).

    Attributes
    ----------
    W_Q, W_K, W_V : ndarray, shape (d_model, n_heads * d_head)
        Read-only.
    W_O : ndarray, shape (n_heads * d_head, d_model)
        Read-only.
    d_model, n_heads, d_head : int
    n_params : int
        ``4 · d_model · n_heads · d_head``.

    Raises
    ------
    TypeError
        Non-integer sizes or ``rng`` not a ``numpy.random.Generator``.
    ValueError
        Non-positive sizes, or ``n_heads`` not dividing ``d_model`` when
        ``d_head`` is not given.

    Notes
    -----
    **Why Xavier keeps the scores at the scale the √d_k argument assumes.**
    Let the entries of ``X`` be independent with mean 0 and variance 1, and
    the weights independent ``U(−a, a)`` with variance
    ``σ² = 2 / (d_model + H·d_head)`` (Xavier, ``fan_in = d_model``,
    ``fan_out = H·d_head``). Each entry of ``q = x W_Q`` is a sum of
    ``d_model`` products, so ``Var(q_c) = d_model σ²``, and different
    entries are uncorrelated. For two different tokens (``x``, ``x'``
    independent) the raw score ``q·k = Σ_c q_c k_c`` of one head has mean 0
    and, over both ``X`` and the weights,

    ``Var(q·k) = d_head · (d_model σ²)² = d_head · (2 d_model / (d_model + H·d_head))²``.

    In the usual layout ``H·d_head = d_model`` the bracket is exactly 1: the
    projected entries have unit variance and ``Var(q·k) = d_head = d_k``, the
    assumption behind dividing by ``√d_k``; the scaled scores then have
    variance 1 (measured in the tests by Monte Carlo). A token with itself
    (the diagonal) has a slightly larger variance,
    ``d_head σ⁴ d_model (d_model − 1 + κ)`` with ``κ = E[x⁴]`` (3 for
    Gaussian ``X``), because ``q`` and ``k`` then share ``x``.

    Examples
    --------
    >>> import numpy as np
    >>> mha = MultiHeadAttention(d_model=8, n_heads=2, rng=np.random.default_rng(0))
    >>> mha.W_Q.shape, mha.d_head, mha.n_params
    ((8, 8), 4, 256)
    >>> tr = mha(np.random.default_rng(1).normal(size=(5, 8)), is_causal=True)
    >>> tr.weights.shape, tr.output.shape
    ((2, 5, 5), (5, 8))
    """

    __slots__ = ("_W_K", "_W_O", "_W_Q", "_W_V", "_d_head", "_n_heads")
    _W_Q: np.ndarray
    _W_K: np.ndarray
    _W_V: np.ndarray
    _W_O: np.ndarray
    _n_heads: int
    _d_head: int

    def __init__(self, d_model: int, n_heads: int, rng: np.random.Generator, *, d_head: int | None = None):
        d_model = _v.check_positive_int(d_model, "d_model")
        n_heads = _v.check_positive_int(n_heads, "n_heads")
        rng = _v.check_rng(rng)
        if d_head is None:
            if d_model % n_heads:
                raise ValueError(
                    f"n_heads={n_heads} does not divide d_model={d_model}; "
                    "choose a divisor or pass d_head explicitly"
                )
            d_head = d_model // n_heads
        else:
            d_head = _v.check_positive_int(d_head, "d_head")
        width = n_heads * d_head
        W_Q = xavier_uniform(d_model, width, rng)  # (d_model, H·d_head)
        W_K = xavier_uniform(d_model, width, rng)  # (d_model, H·d_head)
        W_V = xavier_uniform(d_model, width, rng)  # (d_model, H·d_head)
        W_O = xavier_uniform(width, d_model, rng)  # (H·d_head, d_model)
        self._set(W_Q, W_K, W_V, W_O, n_heads, d_head)

    def _set(
        self, W_Q: np.ndarray, W_K: np.ndarray, W_V: np.ndarray, W_O: np.ndarray, n_heads: int, d_head: int
    ) -> None:
        for slot, W in (("_W_Q", W_Q), ("_W_K", W_K), ("_W_V", W_V), ("_W_O", W_O)):
            object.__setattr__(self, slot, _v.readonly_copy(W))
        object.__setattr__(self, "_n_heads", n_heads)
        object.__setattr__(self, "_d_head", d_head)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(
            "MultiHeadAttention is immutable; build a new layer (e.g. with from_weights) "
            f"instead of setting {name}"
        )

    @classmethod
    def from_weights(cls, W_Q: Any, W_K: Any, W_V: Any, W_O: Any, n_heads: int) -> MultiHeadAttention:
        """A layer with the given matrices (copied, read-only).

        Parameters
        ----------
        W_Q, W_K, W_V : (d_model, n_heads * d_head) array_like
            Same shape; ``n_heads`` must divide the number of columns.
        W_O : (n_heads * d_head, d_model) array_like
        n_heads : int

        Returns
        -------
        MultiHeadAttention

        Raises
        ------
        TypeError
            Non-real matrices or a non-integer ``n_heads``.
        ValueError
            Matrices that are not 2-D, shapes that do not fit together (the
            message names the matrices and their shapes), NaN/inf, a
            non-positive ``n_heads`` or one that does not divide the width.

        Examples
        --------
        >>> import numpy as np
        >>> from attnlib.core import scaled_dot_product_attention
        >>> I = np.eye(4)
        >>> X = np.random.default_rng(0).normal(size=(3, 4))
        >>> mha = MultiHeadAttention.from_weights(I, I, I, I, n_heads=1)
        >>> bool(np.array_equal(mha(X).output, scaled_dot_product_attention(X, X, X)))
        True
        """
        n_heads = _v.check_positive_int(n_heads, "n_heads")
        given = (("W_Q", W_Q), ("W_K", W_K), ("W_V", W_V), ("W_O", W_O))
        mats = {name: _v.as_float_array(W, name) for name, W in given}
        for name, W in mats.items():
            if W.ndim != 2 or 0 in W.shape:
                raise ValueError(f"{name} must be a non-empty 2-D matrix; got shape {W.shape}")
        shape = mats["W_Q"].shape
        for name in ("W_K", "W_V"):
            if mats[name].shape != shape:
                raise ValueError(
                    f"{name} has shape {mats[name].shape} but W_Q has shape {shape} "
                    "(W_Q, W_K, W_V must all be (d_model, n_heads * d_head))"
                )
        d_model, width = shape
        if mats["W_O"].shape != (width, d_model):
            raise ValueError(
                f"W_O has shape {mats['W_O'].shape} but must be (n_heads * d_head, d_model) = "
                f"{(width, d_model)} to match W_Q {shape}"
            )
        if width % n_heads:
            raise ValueError(
                f"n_heads={n_heads} does not divide the projection width {width} (W_Q {shape}); "
                "each head needs width / n_heads columns"
            )
        layer = cls.__new__(cls)
        layer._set(mats["W_Q"], mats["W_K"], mats["W_V"], mats["W_O"], n_heads, width // n_heads)
        return layer

    # -- read-only attributes ------------------------------------------------
    @property
    def W_Q(self) -> np.ndarray:
        return self._W_Q

    @property
    def W_K(self) -> np.ndarray:
        return self._W_K

    @property
    def W_V(self) -> np.ndarray:
        return self._W_V

    @property
    def W_O(self) -> np.ndarray:
        return self._W_O

    @property
    def n_heads(self) -> int:
        return self._n_heads

    @property
    def d_head(self) -> int:
        return self._d_head

    @property
    def d_model(self) -> int:
        return int(self._W_Q.shape[0])

    @property
    def n_params(self) -> int:
        """The number of weights, ``4 · d_model · n_heads · d_head`` (no biases)."""
        return int(self._W_Q.size + self._W_K.size + self._W_V.size + self._W_O.size)

    def __repr__(self) -> str:
        return f"MultiHeadAttention(d_model={self.d_model}, n_heads={self.n_heads}, d_head={self.d_head})"

    def _check_input(self, X: Any, name: str, rows: str) -> np.ndarray:
        arr = _v.as_float_array(X, name)
        _v.check_sequence_matrix(arr, name, rows, "d_model")
        if arr.shape[-1] != self.d_model:
            raise ValueError(
                f"{name} has width {arr.shape[-1]} but the layer has d_model={self.d_model} "
                f"({name} {arr.shape} must be (..., {rows}, {self.d_model}) to multiply W_Q {self.W_Q.shape})"
            )
        return arr

    def __call__(
        self,
        X: Any,
        X_kv: Any = None,
        *,
        attn_mask: Any = None,
        is_causal: bool = False,
        scale: float | None = None,
    ) -> MultiHeadTrace:
        """Attend with every head and return the whole computation as a trace.

        Parameters
        ----------
        X : (..., n_q, d_model) array_like
            The queries' input rows.
        X_kv : (..., n_k, d_model) array_like, optional
            The keys' and values' input (cross-attention); default ``X``
            (self-attention). Leading dimensions broadcast with ``X``'s.
        attn_mask : array_like, optional
            Broadcastable to ``(..., n_q, n_k)``, the same for every head (a
            head axis is inserted before the last two axes). Boolean: True
            means "may attend"; float: added to the scaled scores.
        is_causal : bool
            ``causal_mask(n_q, n_k)`` for every head; not together with ``attn_mask``.
        scale : float, optional
            Factor on each head's ``Q_h K_hᵀ``; default ``1 / √d_head``.

        Returns
        -------
        MultiHeadTrace
            ``.output`` has shape ``(..., n_q, d_model)``.

        Raises
        ------
        TypeError
            Non-real inputs, a mask neither boolean nor float, a non-numeric
            ``scale``, a non-boolean ``is_causal``.
        ValueError
            ``X`` or ``X_kv`` whose width is not ``d_model`` or that is not
            ``(..., n, d_model)``, leading dimensions that do not broadcast, a
            mask that does not broadcast to ``(..., n_q, n_k)``, ``is_causal``
            together with ``attn_mask``, NaN/inf, a bad ``scale``.

        Examples
        --------
        >>> import numpy as np
        >>> mha = MultiHeadAttention(6, 3, np.random.default_rng(0))
        >>> rng = np.random.default_rng(1)
        >>> tr = mha(rng.normal(size=(2, 4, 6)), rng.normal(size=(2, 5, 6)))  # cross-attention, batch 2
        >>> tr.Q.shape, tr.K.shape, tr.weights.shape, tr.output.shape
        ((2, 3, 4, 2), (2, 3, 5, 2), (2, 3, 4, 5), (2, 4, 6))
        """
        X = self._check_input(X, "X", "n_q")
        X_kv = X if X_kv is None else self._check_input(X_kv, "X_kv", "n_k")
        batch = _v.broadcast_leading({"X": X.shape, "X_kv": X_kv.shape})
        is_causal = _v.check_bool_flag(is_causal, "is_causal")
        scale = _v.check_scale(scale)
        if is_causal and attn_mask is not None:
            raise ValueError("pass either attn_mask or is_causal=True, not both (as in PyTorch)")
        n_q, n_k = X.shape[-2], X_kv.shape[-2]
        mask = None
        if attn_mask is not None:
            mask = _v.as_mask(attn_mask, "attn_mask", batch + (n_q, n_k))
        elif is_causal:
            mask = causal_mask(n_q, n_k)  # (n_q, n_k)
        head_mask = mask if mask is None or mask.ndim < 2 else np.expand_dims(mask, -3)  # (..., 1, n_q, n_k)
        H = self.n_heads
        Q = split_heads(X @ self.W_Q, H)  # (..., H, n_q, d_head)
        K = split_heads(X_kv @ self.W_K, H)  # (..., H, n_k, d_head)
        V = split_heads(X_kv @ self.W_V, H)  # (..., H, n_k, d_head)
        head_outputs, weights = scaled_dot_product_attention(
            Q, K, V, head_mask, scale=scale, return_weights=True
        )  # (..., H, n_q, d_head), (..., H, n_q, n_k)
        concat = merge_heads(head_outputs)  # (..., n_q, H·d_head)
        output = concat @ self.W_O  # (..., n_q, d_model)
        return MultiHeadTrace(
            n_heads=H,
            X=X,
            X_kv=X_kv,
            Q=Q,
            K=K,
            V=V,
            weights=weights,
            head_outputs=head_outputs,
            concat=concat,
            output=output,
            scale=scale_for(self.d_head) if scale is None else scale,
            attn_mask=mask,
        )
