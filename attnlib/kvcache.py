"""Incremental decoding with a key/value cache, and what the cache saves.

A decoder produces one token at a time. Under causal attention the keys and
values of the tokens already seen never change, so there is no need to
recompute them, nor the attention of earlier rows: :class:`KVCache` stores
them, :meth:`KVCache.attend` lets the *new* query rows attend to everything
stored, and :func:`incremental_attention` shows that feeding a sequence
through the cache one token at a time gives exactly the rows of full causal
attention. :func:`decode_cost` counts the multiply-adds with and without the
cache: a sum of ``t`` against a sum of ``t²``.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass
from typing import Any

import numpy as np

from attnlib import _validation as _v
from attnlib.core import scaled_dot_product_attention
from attnlib.models import MODEL_CONFIGS, ModelConfig  # noqa: F401  (MODEL_CONFIGS: the doctest)

__all__ = [
    "KVCache", "incremental_attention", "DecodeCost", "decode_cost", "kv_cache_bytes"]

_DEFAULT_CAPACITY = 16


def _as_rows(x: Any, name: str, width: int, width_name: str) -> np.ndarray:
    """``x`` as a 2-D ``(t, width)`` float array; a single vector ``(width,)`` becomes ``(1, width)``."""
    arr = _v.as_float_array(x, name)
    if arr.ndim == 1:
        arr = arr[None, :]  # (1, width)
    if arr.ndim != 2:
        raise ValueError(
            f"{name} must be one vector ({width_name},) or rows (t, {width_name}); got shape {arr.shape}"
        )
    if arr.shape[0] == 0:
        raise ValueError(f"{name} has t=0 rows (nothing to add); shape {arr.shape}")
    if arr.shape[1] != width:
        raise ValueError(
            f"{name} has {width_name}={arr.shape[1]} but the cache has {width_name}={width} "
            f"({name} shape {arr.shape})"
        )
    return arr


class KVCache:
    """The keys and values of one sequence (one head), growing by appending rows.

    Storage is a pair of preallocated arrays whose capacity doubles when
    full, so appending ``n`` rows one at a time copies ``O(n)`` elements in
    all (amortised ``O(1)`` per row), as for a Python list.

    Parameters
    ----------
    d_k : int
        Length of each key (and of each query passed to :meth:`attend`).
    d_v : int
        Length of each value.
    dtype : floating dtype, default float64
        Storage dtype; appended rows are converted to it.
    capacity : int, optional
        Rows allocated up front (default 16); more are added by doubling.

    Attributes
    ----------
    keys : ndarray, shape (len, d_k)
        Read-only view of the cached keys (a snapshot: later appends do not
        change it; rows are never overwritten).
    values : ndarray, shape (len, d_v)
        Read-only view of the cached values.
    capacity : int
        Rows currently allocated.

    Raises
    ------
    TypeError
        Non-integer sizes or a dtype that is not floating.
    ValueError
        Non-positive sizes.

    Examples
    --------
    >>> import numpy as np
    >>> cache = KVCache(d_k=2, d_v=1, capacity=2)
    >>> cache.append([[1.0, 0.0], [0.0, 1.0]], [[10.0], [20.0]])
    >>> cache.append([1.0, 1.0], [30.0])  # a single vector is one row; capacity doubles
    >>> len(cache), cache.capacity
    (3, 4)
    >>> cache.attend([0.0, 0.0])  # equal scores: the mean of the values
    array([20.])
    """

    def __init__(self, d_k: int, d_v: int, dtype: Any = np.float64, capacity: int | None = None) -> None:
        self._d_k = _v.check_positive_int(d_k, "d_k")
        self._d_v = _v.check_positive_int(d_v, "d_v")
        dt = _v.check_float_dtype(dtype)
        self._dtype = dt
        cap = _DEFAULT_CAPACITY if capacity is None else _v.check_positive_int(capacity, "capacity")
        self._K = np.empty((cap, self._d_k), dtype=dt)  # (capacity, d_k)
        self._V = np.empty((cap, self._d_v), dtype=dt)  # (capacity, d_v)
        self._n = 0

    def __repr__(self) -> str:
        return (
            f"KVCache(d_k={self._d_k}, d_v={self._d_v}, dtype={self._dtype}, "
            f"len={self._n}, capacity={self.capacity})"
        )

    def __len__(self) -> int:
        return self._n

    @property
    def d_k(self) -> int:
        return self._d_k

    @property
    def d_v(self) -> int:
        return self._d_v

    @property
    def dtype(self) -> np.dtype:
        return self._dtype

    @property
    def capacity(self) -> int:
        return self._K.shape[0]

    @property
    def keys(self) -> np.ndarray:
        view = self._K[: self._n]  # (len, d_k)
        view.flags.writeable = False
        return view

    @property
    def values(self) -> np.ndarray:
        view = self._V[: self._n]  # (len, d_v)
        view.flags.writeable = False
        return view

    def append(self, k: Any, v: Any) -> None:
        """Add ``t`` new positions: their keys and values, in order.

        Parameters
        ----------
        k : (t, d_k) or (d_k,) array_like
            Keys of the new positions; a single vector is one position.
        v : (t, d_v) or (d_v,) array_like
            Their values, one row per key.

        Raises
        ------
        TypeError
            Non-real inputs.
        ValueError
            Wrong widths (the message names the cache's ``d_k``/``d_v``),
            different row counts in ``k`` and ``v``, no rows, NaN or
            infinite entries, or entries too large for the cache's dtype.
            Nothing is stored when an error is raised.

        Examples
        --------
        >>> cache = KVCache(d_k=3, d_v=2)
        >>> cache.append([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], [[1.0, 0.0], [0.0, 1.0]])
        >>> cache.keys
        array([[1., 2., 3.],
               [4., 5., 6.]])
        """
        k = _as_rows(k, "k", self._d_k, "d_k")
        v = _as_rows(v, "v", self._d_v, "d_v")
        if k.shape[0] != v.shape[0]:
            raise ValueError(
                f"k has {k.shape[0]} rows but v has {v.shape[0]} (one value per key; "
                f"k {k.shape}, v {v.shape})"
            )
        with np.errstate(over="ignore"):  # detected just below
            k = k.astype(self._dtype, copy=False)
            v = v.astype(self._dtype, copy=False)
        for name, arr in (("k", k), ("v", v)):
            if not np.isfinite(arr).all():
                raise ValueError(f"{name} has entries too large for the cache's dtype {self._dtype}")
        t = k.shape[0]
        needed = self._n + t
        if needed > self.capacity:
            self._grow(needed)
        self._K[self._n : needed] = k
        self._V[self._n : needed] = v
        self._n = needed

    def _grow(self, needed: int) -> None:
        cap = self.capacity
        while cap < needed:
            cap *= 2  # doubling: amortised O(1) copies per appended row
        K = np.empty((cap, self._d_k), dtype=self._dtype)  # (cap, d_k)
        V = np.empty((cap, self._d_v), dtype=self._dtype)  # (cap, d_v)
        K[: self._n] = self._K[: self._n]
        V[: self._n] = self._V[: self._n]
        self._K, self._V = K, V  # views handed out earlier keep the old buffers alive

    def attend(self, q: Any, *, scale: float | None = None) -> np.ndarray:
        """Attention of the newest positions' queries over everything cached.

        The ``t`` rows of ``q`` are taken to be the queries of the *last*
        ``t`` positions appended, so the causal mask is aligned to the end:
        with ``n = len(self)``, query ``i`` (``0 <= i < t``) sees keys
        ``0 .. n − t + i``. With one query (the usual decoding step) it sees
        every cached key. This is bottom-right alignment, unlike
        :func:`attnlib.core.causal_mask`, which is top-left aligned; the two
        agree when the cache holds exactly the ``t`` queries' positions.

        Parameters
        ----------
        q : (t, d_k) or (d_k,) array_like
            Queries of the last ``t`` positions, ``1 <= t <= len(self)``.
        scale : float, optional
            Factor applied to ``q Kᵀ``; ``None`` means ``1 / √d_k``.

        Returns
        -------
        ndarray, shape (t, d_v), or (d_v,) for a single vector ``q``
            The dtype follows NumPy's promotion of ``q`` with the cache's dtype.

        Raises
        ------
        TypeError
            Non-real ``q`` or a non-numeric ``scale``.
        ValueError
            An empty cache, ``q`` of the wrong width, more query rows than
            cached positions, NaN or infinite entries, or a bad ``scale``.

        Examples
        --------
        >>> import numpy as np
        >>> cache = KVCache(d_k=1, d_v=1)
        >>> cache.append([[0.0], [0.0], [0.0]], [[3.0], [6.0], [9.0]])
        >>> cache.attend([[0.0], [0.0]])  # rows see keys 0..1 and 0..2
        array([[4.5],
               [6. ]])
        """
        single = np.ndim(q) == 1
        q = _as_rows(q, "q", self._d_k, "d_k")
        if self._n == 0:
            raise ValueError("the cache is empty: append keys and values before attend")
        t = q.shape[0]
        if t > self._n:
            raise ValueError(
                f"q has t={t} rows but the cache holds only {self._n} positions "
                f"(the queries are those of the last t positions appended; q {q.shape})"
            )
        mask = None
        if t > 1:
            mask = np.tri(t, self._n, k=self._n - t, dtype=bool)  # (t, n): j <= n - t + i
        out = scaled_dot_product_attention(q, self.keys, self.values, mask, scale=scale)  # (t, d_v)
        return out[0] if single else out


def incremental_attention(Q: Any, K: Any, V: Any, *, scale: float | None = None) -> np.ndarray:
    """Causal attention computed as a decoder does: one token at a time, through a :class:`KVCache`.

    At step ``t`` the key and value of token ``t`` are appended to the cache
    and query ``t`` attends to the ``t + 1`` cached positions. The rows equal
    those of ``scaled_dot_product_attention(Q, K, V, is_causal=True)`` up to
    rounding (the tests ask for ``1e-12`` in float64).

    Parameters
    ----------
    Q : (n, d_k) array_like
        One query per token.
    K : (n, d_k) array_like
        One key per token.
    V : (n, d_v) array_like
        One value per token.
    scale : float, optional
        Factor applied to the scores; ``None`` means ``1 / √d_k``.

    Returns
    -------
    ndarray, shape (n, d_v)
        The dtype follows NumPy's promotion of ``Q``, ``K`` and ``V``.

    Raises
    ------
    TypeError
        Non-real inputs or a non-numeric ``scale``.
    ValueError
        Arrays that are not 2-D, different numbers of rows, different
        ``d_k``, empty sequences, NaN or infinite entries, or a bad ``scale``.

    Examples
    --------
    >>> import numpy as np
    >>> from attnlib import scaled_dot_product_attention
    >>> rng = np.random.default_rng(0)
    >>> Q, K, V = (rng.standard_normal((6, 3)) for _ in range(3))
    >>> full = scaled_dot_product_attention(Q, K, V, is_causal=True)
    >>> bool(np.abs(incremental_attention(Q, K, V) - full).max() < 1e-12)
    True
    """
    Q = _v.as_float_array(Q, "Q")
    K = _v.as_float_array(K, "K")
    V = _v.as_float_array(V, "V")
    for name, arr, dims in (("Q", Q, "(n, d_k)"), ("K", K, "(n, d_k)"), ("V", V, "(n, d_v)")):
        if arr.ndim != 2:
            raise ValueError(f"{name} must have shape {dims} (one sequence); got shape {arr.shape}")
    _v.check_sequence_matrix(Q, "Q", "n", "d_k")
    _v.check_sequence_matrix(K, "K", "n", "d_k")
    _v.check_sequence_matrix(V, "V", "n", "d_v")
    if K.shape[1] != Q.shape[1]:
        raise ValueError(
            f"K has d_k={K.shape[1]} but Q has d_k={Q.shape[1]} "
            f"(last axes must match; Q {Q.shape}, K {K.shape})"
        )
    if not Q.shape[0] == K.shape[0] == V.shape[0]:
        raise ValueError(
            f"Q, K and V must have one row per token; got Q {Q.shape}, K {K.shape}, V {V.shape}"
        )
    scale = _v.check_scale(scale)
    n, d_v = V.shape
    cache = KVCache(Q.shape[1], d_v, dtype=np.result_type(Q, K, V))
    out = np.empty((n, d_v), dtype=np.result_type(Q, K, V))
    for t in range(n):
        cache.append(K[t], V[t])  # the cache now holds tokens 0..t
        out[t] = cache.attend(Q[t], scale=scale)  # (d_v,)
    return out


@dataclass(frozen=True)
class DecodeCost:
    """Multiply-adds of the attention in ``m`` decoding steps, with and without a KV cache.

    Convention (see :func:`decode_cost`): one multiply-add (MAC) is one
    ``a · b + c``; a FLOP count is ``2 ×`` the MACs. Only the two products
    of attention are counted, scores ``q · k`` (``d_k`` MACs per pair) and
    the weighted sum of values (``d_v`` MACs per pair); the softmax's
    exponentials and divisions and the projections producing ``Q``, ``K``,
    ``V`` are not.

    Attributes
    ----------
    m, d_k, d_v, prompt : int
        The arguments of :func:`decode_cost`.
    macs_without_cache : int
        ``Σ_{t=p+1}^{p+m} t² (d_k + d_v)``: each step recomputes the full
        ``t × t`` attention of the prefix.
    macs_with_cache : int
        ``p² (d_k + d_v) + Σ_{t=p+1}^{p+m} t (d_k + d_v)``: the prompt once,
        then one new query against ``t`` cached keys per step.
    cache_elements : int
        ``(p + m)(d_k + d_v)``: the keys and values held at the end (multiply
        by the itemsize for bytes; per layer and per head).
    """

    m: int
    d_k: int
    d_v: int
    prompt: int
    macs_without_cache: int
    macs_with_cache: int
    cache_elements: int

    @property
    def flops_without_cache(self) -> int:
        return 2 * self.macs_without_cache

    @property
    def flops_with_cache(self) -> int:
        return 2 * self.macs_with_cache

    @property
    def saving(self) -> float:
        """``macs_without_cache / macs_with_cache``: how many times less work the cache does."""
        return self.macs_without_cache / self.macs_with_cache


def _sum_t(a: int, b: int) -> int:
    """``Σ_{t=a}^{b} t`` for integers ``0 <= a``, exactly."""
    return (b * (b + 1) - (a - 1) * a) // 2 if b >= a else 0


def _sum_t2(a: int, b: int) -> int:
    """``Σ_{t=a}^{b} t²`` for integers ``0 <= a``, exactly."""

    def upto(x: int) -> int:
        return x * (x + 1) * (2 * x + 1) // 6 if x > 0 else 0

    return upto(b) - upto(a - 1) if b >= a else 0


def decode_cost(m: int, d_k: int, d_v: int, prompt: int = 0) -> DecodeCost:
    """Attention work of generating ``m`` tokens after a ``prompt``, with and without a KV cache.

    Conventions, stated once: a *step* appends one token and computes the
    attention output of that newest position; after step ``s`` the sequence
    has ``t = prompt + s`` tokens, so the steps run over ``t = p+1 .. p+m``.
    Counts are multiply-adds (MACs) of the two products of attention only:
    ``d_k`` per (query, key) score and ``d_v`` per (weight, value) term.

    * Without a cache, each step recomputes attention over the whole prefix
      as a full ``t × t`` product (no saving from the causal triangle):
      ``t² (d_k + d_v)`` MACs, in all ``Σ_t t² (d_k + d_v)``, cubic in ``m``.
    * With a cache, the prompt is processed once as a full ``p × p``
      attention, ``p² (d_k + d_v)``, and each step is one query against
      ``t`` cached keys, ``t (d_k + d_v)``: in all quadratic in ``m``.
    * The cache holds ``(p + m)(d_k + d_v)`` elements at the end.

    With ``prompt=0`` and ``m = n``, the cached count ``n(n+1)/2 · (d_k + d_v)``
    is exactly the lower triangle that :func:`incremental_attention` computes.

    Parameters
    ----------
    m : int
        Tokens generated (steps), positive.
    d_k, d_v : int
        Key and value widths, positive.
    prompt : int
        Tokens already present before the first step, ``>= 0``.

    Returns
    -------
    DecodeCost
        Exact integer counts; FLOPs as properties (``2 ×`` MACs).

    Raises
    ------
    TypeError
        Non-integer arguments.
    ValueError
        ``m``, ``d_k`` or ``d_v`` not positive, or ``prompt`` negative.

    Examples
    --------
    >>> c = decode_cost(4, d_k=1, d_v=1)
    >>> c.macs_without_cache  # (1 + 4 + 9 + 16) · 2
    60
    >>> c.macs_with_cache  # (1 + 2 + 3 + 4) · 2
    20
    >>> c.cache_elements, c.flops_with_cache
    (8, 40)
    """
    m = _v.check_positive_int(m, "m")
    d_k = _v.check_positive_int(d_k, "d_k")
    d_v = _v.check_positive_int(d_v, "d_v")
    if isinstance(prompt, (bool, np.bool_)) or not isinstance(prompt, numbers.Integral):
        raise TypeError(f"prompt must be an integer; got {type(prompt).__name__} {prompt!r}")
    if prompt < 0:
        raise ValueError(f"prompt must be >= 0; got {prompt}")
    p = int(prompt)
    per_pair = d_k + d_v
    return DecodeCost(
        m=m,
        d_k=d_k,
        d_v=d_v,
        prompt=p,
        macs_without_cache=_sum_t2(p + 1, p + m) * per_pair,
        macs_with_cache=(p * p + _sum_t(p + 1, p + m)) * per_pair,
        cache_elements=(p + m) * per_pair,
    )


def kv_cache_bytes(config: ModelConfig, n_tokens: int, dtype_bytes: int = 2) -> int:
    """Bytes of the key–value cache of one sequence of ``n_tokens`` tokens.

    ``2 · n_layers · n_kv_heads · d_head · n_tokens · dtype_bytes``: a key and
    a value (the 2) of ``d_head`` numbers per token, per key–value head, per
    layer. This is ``cache_elements`` of :class:`DecodeCost` (for
    ``d_k = d_v = d_head``) times ``n_layers · n_kv_heads · dtype_bytes``.
    Grouped-query attention (``n_kv_heads < n_heads``) shrinks it by
    ``n_heads / n_kv_heads``.

    Parameters
    ----------
    config : ModelConfig
        The model, e.g. an entry of :data:`attnlib.models.MODEL_CONFIGS`.
    n_tokens : int
        Tokens held in the cache (prompt and generated).
    dtype_bytes : int
        Bytes per number: 2 for float16/bfloat16 (the default), 4 for float32.

    Returns
    -------
    int

    Raises
    ------
    TypeError
        ``config`` is not a :class:`attnlib.models.ModelConfig`, or ``n_tokens`` or
        ``dtype_bytes`` is not an integer.
    ValueError
        ``n_tokens`` or ``dtype_bytes`` is not positive.

    Examples
    --------
    >>> llama = next(c for c in MODEL_CONFIGS if c.name == "LLaMA-2 70B")
    >>> kv_cache_bytes(llama, 4096) / 2**30  # 2 · 80 · 8 · 128 · 4096 · 2 bytes
    1.25
    """
    if not isinstance(config, ModelConfig):
        raise TypeError(f"config must be a ModelConfig (e.g. MODEL_CONFIGS[0]); got {type(config).__name__}")
    n_tokens = _v.check_positive_int(n_tokens, "n_tokens")
    dtype_bytes = _v.check_positive_int(dtype_bytes, "dtype_bytes")
    return 2 * config.n_layers * config.n_kv_heads * config.d_head * n_tokens * dtype_bytes
