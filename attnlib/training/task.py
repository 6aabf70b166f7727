"""The retrieval task of the training experiment: Xavier-uniform weights and batches of queries and keys.

:func:`retrieval_batch` draws, for each query, a matching key among ``n_keys − 1`` distractors and the
values to retrieve; :func:`xavier_uniform` draws the weights a layer starts from.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from attnlib import _validation as _v

__all__ = ["xavier_uniform", "RetrievalBatch", "retrieval_batch"]


def _check_seed(seed: Any) -> int:
    seed = _v.check_int(seed, "seed")
    if seed < 0:
        raise ValueError(f"seed must be non-negative; got {seed}")
    return seed


def _check_n_keys(n_keys: Any) -> int:
    n_keys = _v.check_positive_int(n_keys, "n_keys")
    if n_keys < 2:
        raise ValueError(f"n_keys must be at least 2 (the matching key and a distractor); got {n_keys}")
    return n_keys


def xavier_uniform(fan_in: int, fan_out: int, rng: np.random.Generator) -> np.ndarray:
    """A weight matrix drawn from Glorot and Bengio's (2010) uniform initialisation.

    Entries are independent draws from ``U(−a, a)`` with
    ``a = √(6 / (fan_in + fan_out))``, so their variance is
    ``a² / 3 = 2 / (fan_in + fan_out)``: the compromise between keeping the
    variance of activations (``1 / fan_in``) and of gradients
    (``1 / fan_out``) constant from layer to layer. It is PyTorch's
    ``torch.nn.init.xavier_uniform_`` and the initialisation of the attention
    projections in the original Transformer code.

    Parameters
    ----------
    fan_in, fan_out : int
        Input and output dimensions; the matrix maps row vectors of length
        ``fan_in`` to length ``fan_out`` (``x @ W``).
    rng : numpy.random.Generator
        The only source of randomness.

    Returns
    -------
    ndarray, shape (fan_in, fan_out)
        float64.

    Raises
    ------
    TypeError
        Non-integer sizes or ``rng`` not a ``numpy.random.Generator``.
    ValueError
        Sizes that are not positive.

    Examples
    --------
    >>> import numpy as np
    >>> W = xavier_uniform(64, 64, np.random.default_rng(0))
    >>> W.shape
    (64, 64)
    >>> bool(np.abs(W).max() <= np.sqrt(6 / 128))
    True
    >>> print(f"{W.var() * 64:.2f}")  # ≈ 64 · 2 / (64 + 64) = 1
    1.00
    """
    fan_in = _v.check_positive_int(fan_in, "fan_in")
    fan_out = _v.check_positive_int(fan_out, "fan_out")
    rng = _v.check_rng(rng)
    bound = math.sqrt(6.0 / (fan_in + fan_out))
    return rng.uniform(-bound, bound, size=(fan_in, fan_out))  # (fan_in, fan_out)


@dataclass(frozen=True)
class RetrievalBatch:
    """One batch of the retrieval task of :func:`retrieval_batch`.

    Attributes
    ----------
    X_q : ndarray, shape (batch, 1, d_model)
        Query token embeddings: the target key's embedding plus noise.
    X_k : ndarray, shape (batch, n_keys, d_model)
        Key token embeddings, independent standard normal.
    V : ndarray, shape (batch, n_keys, d_v)
        Values, independent standard normal (given, not learned).
    target : ndarray of int, shape (batch,)
        Index of the key each query matches.
    """

    X_q: np.ndarray
    X_k: np.ndarray
    V: np.ndarray
    target: np.ndarray


def retrieval_batch(
    batch: int, n_keys: int, d_model: int, d_v: int, rng: np.random.Generator, noise: float = 0.1
) -> RetrievalBatch:
    """Draw a batch of the content-based retrieval task.

    Each example has ``n_keys`` key embeddings ``x_0 … x_{n_keys−1}`` with
    independent standard-normal entries, a target index ``t`` drawn uniformly
    from ``0 … n_keys − 1``, a query embedding ``x_q = x_t + noise · ε``
    (``ε`` standard normal) and standard-normal values
    ``v_0 … v_{n_keys−1}``. The layer must put its weight on key
    ``t`` and output ``v_t``; since the values are independent, any weight on
    a distractor costs. With ``W_Q W_Kᵀ = c · I`` the score of the target is
    ``≈ c · d_model`` and that of a distractor ``≈ c · √d_model`` in size, so
    once ``d_model`` is large a large enough ``c`` retrieves exactly (with 16
    keys, every test query of seeds 0 to 4 from ``d_model = 32`` on); at small
    ``d_model`` a distractor often has the larger dot product, whatever ``c``
    (:func:`~attnlib.training.sweep.identity_form_accuracy` is about 0.87 at ``d_model = 8``), although
    the key nearest to the query in distance is still the target
    (:func:`~attnlib.training.sweep.nearest_key_accuracy`).

    Draw order (fixed, so a seed fixes the batch): keys, targets, noise, values.

    Parameters
    ----------
    batch : int
        Number of queries (one query per example).
    n_keys : int
        Keys per example, at least 2: the match and ``n_keys − 1`` distractors.
    d_model : int
        Length of the token embeddings.
    d_v : int
        Length of the values.
    rng : numpy.random.Generator
        The only source of randomness.
    noise : float
        Standard deviation of the noise added to each query component
        (non-negative; 0 makes the query an exact copy of its key).

    Returns
    -------
    RetrievalBatch

    Raises
    ------
    TypeError
        Non-integer sizes, a non-real ``noise``, ``rng`` not a Generator.
    ValueError
        Sizes that are not positive, ``n_keys < 2``, a negative or non-finite ``noise``.

    Examples
    --------
    >>> import numpy as np
    >>> b = retrieval_batch(4, 8, 16, 3, np.random.default_rng(0), noise=0.0)
    >>> b.X_q.shape, b.X_k.shape, b.V.shape, b.target.shape
    ((4, 1, 16), (4, 8, 16), (4, 8, 3), (4,))
    >>> bool(np.array_equal(b.X_q[:, 0], b.X_k[np.arange(4), b.target]))
    True
    """
    batch = _v.check_positive_int(batch, "batch")
    n_keys = _check_n_keys(n_keys)
    d_model = _v.check_positive_int(d_model, "d_model")
    d_v = _v.check_positive_int(d_v, "d_v")
    rng = _v.check_rng(rng)
    noise = _v.check_real(noise, "noise", minimum="non-negative")
    X_k = rng.standard_normal((batch, n_keys, d_model))  # (batch, n_keys, d_model)
    target = rng.integers(0, n_keys, size=batch)  # (batch,)
    eps = rng.standard_normal((batch, 1, d_model))  # (batch, 1, d_model)
    X_q = X_k[np.arange(batch), target][:, None, :] + noise * eps  # (batch, 1, d_model)
    V = rng.standard_normal((batch, n_keys, d_v))  # (batch, n_keys, d_v)
    return RetrievalBatch(X_q=X_q, X_k=X_k, V=V, target=target)


def _stack_batches(batches: list[RetrievalBatch]) -> RetrievalBatch:
    """One batch per seed, stacked along a new leading axis and given a run axis of length 1.

    The arrays get shape ``(n_seeds, 1, batch, ...)``, which broadcasts against weights of shape
    ``(n_seeds, n_lrs, d_model, d_k)``: every learning rate of a seed sees that seed's data.
    """
    fields = ("X_q", "X_k", "V", "target")
    return RetrievalBatch(**{name: np.stack([getattr(b, name) for b in batches])[:, None] for name in fields})
