"""The backward pass of scaled dot-product attention, derived by hand.

:func:`attention_backward` returns the gradients of a loss with respect to
``Q``, ``K`` and ``V`` given the gradient ``dO`` with respect to the output of
``out = softmax(Q Kᵀ · scale) V``. The tests check it against central finite
differences and against PyTorch's autograd.

The rest of the module uses it in a small training experiment: one attention
layer with learned ``W_Q`` and ``W_K`` must retrieve, for each query, the
value of the key the query matches among ``n_keys − 1`` distractors
(:func:`retrieval_batch`). The loss is a mean squared error on the attention
*output*, as in a real network, so every gradient passes through the softmax
Jacobian. :func:`train_retrieval` trains one layer from Xavier-uniform
initialisation with plain SGD or Adam under one of :data:`SCALE_RULES`, and
:func:`learning_rate_sweep` repeats it over ``d_k``, scale rules and learning
rates.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from attnlib import _validation as _v
from attnlib.core import softmax

__all__ = [
    "attention_backward",
    "xavier_uniform",
    "RetrievalBatch",
    "retrieval_batch",
    "SCALE_RULES",
    "OPTIMIZERS",
    "retrieval_loss_and_grads",
    "TrainingRun",
    "train_retrieval",
    "SweepResult",
    "learning_rate_sweep",
]


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
    Q: Any, K: Any, V: Any, dO: Any, scale: float | None = None
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
        scale = 1.0 / math.sqrt(d_k)
    dtype = np.result_type(Q, K, V, dO)
    Q, K, V, dO = (a.astype(dtype, copy=False) for a in (Q, K, V, dO))
    scale_t = dtype.type(scale)

    with np.errstate(over="ignore", invalid="ignore"):  # overflow is detected below
        S = (Q * scale_t) @ K.swapaxes(-1, -2)  # (..., n_q, n_k)
    if not np.isfinite(S).all():
        raise ValueError(
            f"the scores Q Kᵀ · scale overflow {dtype} (largest |Q| = {np.abs(Q).max():.3g}, "
            f"|K| = {np.abs(K).max():.3g}); rescale the inputs or use a wider dtype"
        )
    P = softmax(S, axis=-1)  # (..., n_q, n_k)
    dV = P.swapaxes(-1, -2) @ dO  # (..., n_k, d_v)
    dP = dO @ V.swapaxes(-1, -2)  # (..., n_q, n_k)
    dS = P * (dP - (dP * P).sum(axis=-1, keepdims=True))  # (..., n_q, n_k)
    dQ = scale_t * (dS @ K)  # (..., n_q, d_k)
    dK = scale_t * (dS.swapaxes(-1, -2) @ Q)  # (..., n_k, d_k)
    return _sum_to_shape(dQ, Q.shape), _sum_to_shape(dK, K.shape), _sum_to_shape(dV, V.shape)


# =========================================================================== training experiment
SCALE_RULES: tuple[str, ...] = ("inverse_sqrt", "none", "inverse")
"""Scale rules of :func:`train_retrieval`: ``1/√d_k`` (the Transformer's), ``1`` (no
scaling) and ``1/d_k`` (the choice of μP, the maximal-update parametrisation)."""

OPTIMIZERS: tuple[str, ...] = ("sgd", "adam")
"""Optimisers of :func:`train_retrieval`: plain SGD and Adam (β1 = 0.9, β2 = 0.999, ε = 1e-8)."""

# Queries in the fixed evaluation batch of train_retrieval (init statistics and final scores).
_EVAL_BATCH = 256
# A row of weights whose largest entry exceeds this counts as saturated (as in attnlib.stats).
_SATURATED = 0.99
_ADAM_BETA1, _ADAM_BETA2, _ADAM_EPS = 0.9, 0.999, 1e-8


def _check_positive_real(value: Any, name: str, *, allow_zero: bool = False) -> float:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number; got {type(value).__name__} {value!r}")
    out = float(value)
    if not math.isfinite(out):
        raise ValueError(f"{name} must be finite; got {out}")
    if out < 0 or (out == 0 and not allow_zero):
        raise ValueError(f"{name} must be {'non-negative' if allow_zero else 'positive'}; got {out}")
    return out


def _check_seed(seed: Any) -> int:
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, numbers.Integral):
        raise TypeError(f"seed must be an integer; got {type(seed).__name__} {seed!r}")
    if seed < 0:
        raise ValueError(f"seed must be non-negative; got {seed}")
    return int(seed)


def _check_choice(value: Any, name: str, choices: tuple[str, ...]) -> str:
    if not isinstance(value, str) or value not in choices:
        raise ValueError(f"{name} must be one of {choices}; got {value!r}")
    return value


def _check_n_keys(n_keys: Any) -> int:
    n_keys = _v.check_positive_int(n_keys, "n_keys")
    if n_keys < 2:
        raise ValueError(f"n_keys must be at least 2 (the matching key and a distractor); got {n_keys}")
    return n_keys


def _scale_for(d_k: int, scale_rule: str) -> float:
    return {"inverse_sqrt": 1.0 / math.sqrt(d_k), "none": 1.0, "inverse": 1.0 / d_k}[scale_rule]


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

    Each example has ``n_keys`` key embeddings ``x_1 … x_n`` with independent
    standard-normal entries, a target index ``t`` drawn uniformly, a query
    embedding ``x_q = x_t + noise · ε`` (``ε`` standard normal) and
    standard-normal values ``v_1 … v_n``. The layer must put its weight on key
    ``t`` and output ``v_t``; since the values are independent, any weight on
    a distractor costs. The task is solvable: with ``W_Q W_Kᵀ = c · I`` the
    score of the target is ``≈ c · d_model`` and that of a distractor
    ``≈ c · √d_model`` in size, so a large enough ``c`` retrieves exactly.

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
    noise = _check_positive_real(noise, "noise", allow_zero=True)
    X_k = rng.standard_normal((batch, n_keys, d_model))  # (batch, n_keys, d_model)
    target = rng.integers(0, n_keys, size=batch)  # (batch,)
    eps = rng.standard_normal((batch, 1, d_model))  # (batch, 1, d_model)
    X_q = X_k[np.arange(batch), target][:, None, :] + noise * eps  # (batch, 1, d_model)
    V = rng.standard_normal((batch, n_keys, d_v))  # (batch, n_keys, d_v)
    return RetrievalBatch(X_q=X_q, X_k=X_k, V=V, target=target)


@dataclass(frozen=True)
class _Pass:
    """Everything one forward and backward pass of the retrieval layer computes."""

    loss: float
    grad_wq: np.ndarray  # (d_model, d_k) ∂L/∂W_Q
    grad_wk: np.ndarray  # (d_model, d_k) ∂L/∂W_K
    P: np.ndarray  # (batch, n_keys) attention weights
    row_score_grads: np.ndarray  # (batch, n_keys) ∂ℓ_b/∂S_b, ℓ_b the loss of query b alone
    accuracy: float


def _forward_backward(W_Q: np.ndarray, W_K: np.ndarray, b: RetrievalBatch, scale: float) -> _Pass | None:
    """Loss, parameter gradients and diagnostics; ``None`` if the scores are not finite."""
    n_b, n_keys, d_model = b.X_k.shape
    d_k = W_Q.shape[1]
    d_v = b.V.shape[-1]
    with np.errstate(over="ignore", invalid="ignore"):
        Q = b.X_q @ W_Q  # (batch, 1, d_k)
        K = (b.X_k.reshape(-1, d_model) @ W_K).reshape(n_b, n_keys, d_k)  # (batch, n_keys, d_k)
        S = scale * (Q @ K.swapaxes(-1, -2))  # (batch, 1, n_keys)
    if not np.isfinite(S).all():
        return None
    P = softmax(S, axis=-1)  # (batch, 1, n_keys)
    O = P @ b.V  # (batch, 1, d_v)
    Y = b.V[np.arange(n_b), b.target][:, None, :]  # (batch, 1, d_v)
    err = O - Y  # (batch, 1, d_v)
    loss = float(np.mean(err**2))
    dO = (2.0 / err.size) * err  # (batch, 1, d_v)
    dQ, dK, _ = attention_backward(Q, K, b.V, dO, scale=scale)
    dW_Q = b.X_q[:, 0, :].T @ dQ[:, 0, :]  # (d_model, d_k)
    dW_K = b.X_k.reshape(-1, d_model).T @ dK.reshape(-1, d_k)  # (d_model, d_k)
    # ∂ℓ_b/∂S_b for the loss of query b alone, ℓ_b = mean over d_v of err²: the
    # softmax Jacobian applied to ∂ℓ_b/∂P_b (the line dS = P ⊙ (dP − rowsum(dP ⊙ P))).
    dP = (2.0 / d_v) * (err @ b.V.swapaxes(-1, -2))  # (batch, 1, n_keys)
    dS = P * (dP - (dP * P).sum(axis=-1, keepdims=True))  # (batch, 1, n_keys)
    accuracy = float(np.mean(P[:, 0, :].argmax(axis=-1) == b.target))
    return _Pass(loss, dW_Q, dW_K, P[:, 0, :], dS[:, 0, :], accuracy)


def retrieval_loss_and_grads(
    W_Q: Any, W_K: Any, batch: RetrievalBatch, scale: float
) -> tuple[float, np.ndarray, np.ndarray]:
    """Loss of the retrieval layer on one batch and its gradients with respect to ``W_Q``, ``W_K``.

    Forward pass, per example (``n_q = 1`` query):

    ``Q = X_q W_Q``, ``K = X_k W_K``, ``S = scale · Q Kᵀ``,
    ``P = softmax(S)``, ``O = P V``,

    and the loss is the mean squared error between the output and the target
    key's value, averaged over the batch and the ``d_v`` components:
    ``L = mean((O − V[target])²)``. The loss sits downstream of the
    attention output, so its gradient reaches the scores only through the
    softmax Jacobian. Backward pass: ``dO = 2 (O − V[target]) / (batch · d_v)``;
    :func:`attention_backward` gives ``dQ`` and ``dK``; then
    ``dW_Q = Σ_b X_q[b]ᵀ dQ[b]`` and ``dW_K = Σ_b X_k[b]ᵀ dK[b]``.

    Parameters
    ----------
    W_Q, W_K : (d_model, d_k) array_like
        Query and key projections.
    batch : RetrievalBatch
        The data, as from :func:`retrieval_batch`.
    scale : float
        Factor applied to ``Q Kᵀ`` (positive).

    Returns
    -------
    loss : float
    dW_Q, dW_K : ndarray, shape (d_model, d_k)

    Raises
    ------
    TypeError
        Non-real weights, ``batch`` not a ``RetrievalBatch``, a non-real ``scale``.
    ValueError
        Weights that are not 2-D, differ in shape, or whose ``d_model`` is not
        the batch's; NaN or infinite weights; a non-positive ``scale``; scores
        that overflow float64.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> b = retrieval_batch(8, 4, 6, 3, rng)
    >>> W_Q, W_K = xavier_uniform(6, 5, rng), xavier_uniform(6, 5, rng)
    >>> loss, dW_Q, dW_K = retrieval_loss_and_grads(W_Q, W_K, b, scale=1 / np.sqrt(5))
    >>> dW_Q.shape
    (6, 5)
    >>> E = np.zeros_like(W_Q)
    >>> E[2, 3] = 1e-6
    >>> slope = (retrieval_loss_and_grads(W_Q + E, W_K, b, 1 / np.sqrt(5))[0]
    ...          - retrieval_loss_and_grads(W_Q - E, W_K, b, 1 / np.sqrt(5))[0]) / 2e-6
    >>> bool(np.isclose(slope, dW_Q[2, 3], rtol=1e-6))
    True
    """
    if not isinstance(batch, RetrievalBatch):
        raise TypeError(f"batch must be a RetrievalBatch (see retrieval_batch); got {type(batch).__name__}")
    W_Q = _v.as_float_array(W_Q, "W_Q").astype(np.float64, copy=False)
    W_K = _v.as_float_array(W_K, "W_K").astype(np.float64, copy=False)
    if W_Q.ndim != 2 or W_K.ndim != 2:
        raise ValueError(f"W_Q and W_K must be 2-D (d_model, d_k); got W_Q {W_Q.shape}, W_K {W_K.shape}")
    if W_Q.shape != W_K.shape:
        raise ValueError(
            f"W_Q and W_K must have the same shape (d_model, d_k); got W_Q {W_Q.shape}, W_K {W_K.shape}"
        )
    d_model = batch.X_k.shape[-1]
    if W_Q.shape[0] != d_model:
        raise ValueError(
            f"W_Q has d_model={W_Q.shape[0]} rows but the batch's embeddings have d_model={d_model} "
            f"(W_Q {W_Q.shape}, X_k {batch.X_k.shape})"
        )
    checked = _v.check_scale(scale)
    if checked is None:
        raise TypeError("scale must be a real number; got None")
    out = _forward_backward(W_Q, W_K, batch, checked)
    if out is None:
        raise ValueError(
            f"the scores overflow float64 (largest |W_Q| = {np.abs(W_Q).max():.3g}, "
            f"|W_K| = {np.abs(W_K).max():.3g}, scale = {checked:.3g})"
        )
    return out.loss, out.grad_wq, out.grad_wk


@dataclass(frozen=True)
class TrainingRun:
    """One training run of :func:`train_retrieval`.

    Attributes
    ----------
    d_k : int
        Width of queries and keys.
    scale_rule : str
        One of :data:`SCALE_RULES`.
    lr : float
        Learning rate.
    steps : int
        Steps requested.
    optimizer : str
        One of :data:`OPTIMIZERS`.
    losses : ndarray, shape (steps_done,)
        Training loss at each step, on that step's fresh batch, before the
        update. ``steps_done == steps`` unless the run diverged, in which case
        the curve stops at the last finite step.
    accuracy : ndarray, shape (steps_done,)
        Fraction of that batch's queries whose largest weight is on the target.
    init_saturated_fraction : float
        Fraction of the evaluation batch's rows whose largest weight exceeds
        0.99 at initialisation.
    init_score_grad_norms : ndarray, shape (eval_batch,)
        At initialisation, for each query of the evaluation batch, the norm of
        ``∂ℓ_b/∂S_b``: the gradient of that query's own loss with respect to the
        softmax's input ``S = scale · Q Kᵀ`` (the gradient reaching the raw
        scores ``Q Kᵀ`` is ``scale`` times this). Per-query, so it does not
        depend on the batch size.
    init_max_weight_mean : float
        Mean largest weight over the evaluation batch at initialisation.
    final_loss : float
        Loss on the evaluation batch after training (``nan`` if diverged).
    final_accuracy : float
        Accuracy on the evaluation batch after training (0 if diverged).
    diverged : bool
        The scores, loss, gradients or weights became non-finite.
    """

    d_k: int
    scale_rule: str
    lr: float
    steps: int
    optimizer: str
    losses: np.ndarray
    accuracy: np.ndarray
    init_saturated_fraction: float
    init_score_grad_norms: np.ndarray
    init_max_weight_mean: float
    final_loss: float
    final_accuracy: float
    diverged: bool


def train_retrieval(
    d_k: int,
    *,
    scale_rule: str = "inverse_sqrt",
    lr: float,
    steps: int = 100,
    batch: int = 32,
    n_keys: int = 16,
    d_model: int | None = None,
    d_v: int = 16,
    seed: int = 0,
    optimizer: str = "sgd",
) -> TrainingRun:
    """Train one attention layer's ``W_Q`` and ``W_K`` on the retrieval task.

    ``W_Q`` and ``W_K`` (``d_model × d_k``) start Xavier-uniform
    (:func:`xavier_uniform`); each step draws a fresh batch from
    :func:`retrieval_batch` and takes one step of ``optimizer`` on the
    output-MSE loss of :func:`retrieval_loss_and_grads` with
    ``scale = 1/√d_k``, ``1`` or ``1/d_k`` (``scale_rule``).

    ``d_model`` defaults to ``d_k``. The embeddings have unit variance and
    Xavier gives ``Var(W) = 2 / (d_model + d_k)``, so a component of
    ``q = x W_Q`` has variance ``d_model · 2 / (d_model + d_k)``, which is
    exactly 1 when ``d_model = d_k``: at initialisation queries and keys are
    the unit-variance vectors of the textbook argument, and an unscaled score
    ``q · k`` has variance ``≈ d_k``.

    Fair comparisons: the seed fixes the initial weights, the training data
    stream and a separate evaluation batch of 256 queries (three independent
    streams spawned from ``numpy.random.SeedSequence(seed)``), so runs that
    differ only in ``scale_rule``, ``lr`` or ``optimizer`` see the same
    weights and data.

    Parameters
    ----------
    d_k : int
        Width of queries and keys.
    scale_rule : {"inverse_sqrt", "none", "inverse"}
        ``1/√d_k``, no scaling, or ``1/d_k``.
    lr : float
        Learning rate (positive).
    steps : int
        Optimisation steps.
    batch : int
        Queries per training batch.
    n_keys : int
        Keys per query (the match and ``n_keys − 1`` distractors), at least 2.
    d_model : int, optional
        Embedding width; ``None`` means ``d_k``.
    d_v : int
        Width of the values.
    seed : int
        Non-negative seed of everything random.
    optimizer : {"sgd", "adam"}
        Plain SGD, or Adam with ``β1 = 0.9``, ``β2 = 0.999``, ``ε = 1e-8``
        and bias correction.

    Returns
    -------
    TrainingRun

    Raises
    ------
    TypeError
        Non-integer sizes or seed, a non-real ``lr``.
    ValueError
        An unknown ``scale_rule`` or ``optimizer``; a non-positive ``lr``,
        ``steps`` or size; ``n_keys < 2``; a negative seed.

    Notes
    -----
    Reference points for the loss with ``n_keys = 16``: uniform attention
    gives ``(n − 1)/n ≈ 0.94``, all weight on one random distractor ``≈ 2``,
    perfect retrieval ``0``. The loss is bounded (the output is a convex
    combination of the values), so a run does not blow up in loss; it
    diverges only if the weights or scores overflow.

    What the scale does, exactly: the loss depends on the weights only
    through ``scale · W_Q W_Kᵀ``, so with ``U = √scale · W`` a scaled layer
    is an unscaled one in ``U``. One SGD step of size ``lr`` on ``W`` is a
    step of size ``lr · scale`` on ``U``; for Adam, which normalises the
    gradient, ``lr · √scale``. Hence, under SGD, ``"inverse_sqrt"`` at
    learning rate ``η`` *is* ``"none"`` at ``η / √d_k`` started from weights
    ``d_k^{1/4}`` times smaller: once each rule gets its own learning rate,
    what remains of the comparison is the scale of the scores at
    initialisation (``init_saturated_fraction``).

    Examples
    --------
    >>> run = train_retrieval(16, lr=1.0, steps=100, seed=0)
    >>> run.losses.shape
    (100,)
    >>> bool(run.final_loss < run.losses[0])
    True
    >>> run.init_score_grad_norms.shape
    (256,)
    """
    d_k = _v.check_positive_int(d_k, "d_k")
    scale_rule = _check_choice(scale_rule, "scale_rule", SCALE_RULES)
    lr = _check_positive_real(lr, "lr")
    steps = _v.check_positive_int(steps, "steps")
    batch = _v.check_positive_int(batch, "batch")
    n_keys = _check_n_keys(n_keys)
    d_model = d_k if d_model is None else _v.check_positive_int(d_model, "d_model")
    d_v = _v.check_positive_int(d_v, "d_v")
    seed = _check_seed(seed)
    optimizer = _check_choice(optimizer, "optimizer", OPTIMIZERS)
    scale = _scale_for(d_k, scale_rule)

    init_ss, data_ss, eval_ss = np.random.SeedSequence(seed).spawn(3)
    init_rng = np.random.default_rng(init_ss)
    W_Q = xavier_uniform(d_model, d_k, init_rng)  # (d_model, d_k)
    W_K = xavier_uniform(d_model, d_k, init_rng)  # (d_model, d_k)
    data_rng = np.random.default_rng(data_ss)
    eval_b = retrieval_batch(_EVAL_BATCH, n_keys, d_model, d_v, np.random.default_rng(eval_ss))

    init = _forward_backward(W_Q, W_K, eval_b, scale)
    assert init is not None  # Xavier weights and Gaussian data give finite scores
    top = init.P.max(axis=-1)  # (eval_batch,)

    params = [W_Q, W_K]
    m = [np.zeros_like(W_Q), np.zeros_like(W_K)]
    v = [np.zeros_like(W_Q), np.zeros_like(W_K)]
    losses: list[float] = []
    accuracy: list[float] = []
    diverged = False
    for t in range(1, steps + 1):
        data = retrieval_batch(batch, n_keys, d_model, d_v, data_rng)
        out = _forward_backward(params[0], params[1], data, scale)
        grads = () if out is None else (out.grad_wq, out.grad_wk)
        if out is None or not (math.isfinite(out.loss) and all(np.isfinite(g).all() for g in grads)):
            diverged = True
            break
        losses.append(out.loss)
        accuracy.append(out.accuracy)
        for i, g in enumerate(grads):
            if optimizer == "sgd":
                params[i] = params[i] - lr * g
            else:
                m[i] = _ADAM_BETA1 * m[i] + (1 - _ADAM_BETA1) * g
                v[i] = _ADAM_BETA2 * v[i] + (1 - _ADAM_BETA2) * g * g
                m_hat = m[i] / (1 - _ADAM_BETA1**t)
                v_hat = v[i] / (1 - _ADAM_BETA2**t)
                params[i] = params[i] - lr * m_hat / (np.sqrt(v_hat) + _ADAM_EPS)
        if not (np.isfinite(params[0]).all() and np.isfinite(params[1]).all()):
            diverged = True
            break

    final = None if diverged else _forward_backward(params[0], params[1], eval_b, scale)
    if final is None:
        diverged = True
    return TrainingRun(
        d_k=d_k,
        scale_rule=scale_rule,
        lr=lr,
        steps=steps,
        optimizer=optimizer,
        losses=np.array(losses),
        accuracy=np.array(accuracy),
        init_saturated_fraction=float(np.mean(top > _SATURATED)),
        init_score_grad_norms=np.linalg.norm(init.row_score_grads, axis=-1),
        init_max_weight_mean=float(top.mean()),
        final_loss=math.nan if final is None else final.loss,
        final_accuracy=0.0 if final is None else final.accuracy,
        diverged=diverged,
    )


@dataclass(frozen=True)
class SweepResult:
    """The runs of :func:`learning_rate_sweep`, with the best learning rate per setting.

    Attributes
    ----------
    runs : tuple of TrainingRun
        In the order ``d_k``, then scale rule, then learning rate.
    """

    runs: tuple[TrainingRun, ...]

    def best(self, d_k: int, scale_rule: str) -> TrainingRun:
        """The run with the lowest ``final_loss`` among the non-diverged runs of one setting.

        Parameters
        ----------
        d_k : int
        scale_rule : str

        Returns
        -------
        TrainingRun
            Ties go to the first in sweep order (the smaller learning rate
            when the rates were given in increasing order).

        Raises
        ------
        ValueError
            No run has this ``d_k`` and ``scale_rule``, or all of them diverged.

        Examples
        --------
        >>> sweep = learning_rate_sweep((8,), (0.1, 1.0), steps=20)
        >>> sweep.best(8, "inverse_sqrt").lr in (0.1, 1.0)
        True
        """
        matching = [r for r in self.runs if r.d_k == d_k and r.scale_rule == scale_rule]
        if not matching:
            have = sorted({(r.d_k, r.scale_rule) for r in self.runs})
            raise ValueError(f"no run with d_k={d_k} and scale_rule={scale_rule!r}; the sweep has {have}")
        ok = [r for r in matching if not r.diverged]
        if not ok:
            raise ValueError(
                f"all {len(matching)} runs with d_k={d_k} and scale_rule={scale_rule!r} diverged "
                f"(learning rates {[r.lr for r in matching]})"
            )
        return min(ok, key=lambda r: r.final_loss)

    def table(self) -> str:
        """A plain-text table: per ``(d_k, scale rule)`` the best run and the initial statistics.

        Columns: ``d_k``, scale rule, optimiser, best learning rate, final
        loss and accuracy of that run on the evaluation batch, the fraction of
        saturated rows at initialisation (largest weight > 0.99), and the median
        over queries of ``‖∂ℓ/∂S‖`` at initialisation. A setting whose runs all
        diverged shows ``diverged``.

        Returns
        -------
        str

        Examples
        --------
        >>> sweep = learning_rate_sweep((8,), (0.1, 1.0), steps=20)
        >>> print(sweep.table().splitlines()[0])
          d_k  scale         opt   best lr  final loss  final acc  init sat  med |dL/dS|
        """
        header = (
            f"{'d_k':>5}  {'scale':<12}  {'opt':<4}  {'best lr':>7}  {'final loss':>10}  "
            f"{'final acc':>9}  {'init sat':>8}  {'med |dL/dS|':>11}"
        )
        lines = [header]
        seen: list[tuple[int, str, str]] = []
        for r in self.runs:
            if (r.d_k, r.scale_rule, r.optimizer) not in seen:
                seen.append((r.d_k, r.scale_rule, r.optimizer))
        for d_k, rule, opt in seen:
            group = [r for r in self.runs if (r.d_k, r.scale_rule, r.optimizer) == (d_k, rule, opt)]
            first = group[0]
            ok = [r for r in group if not r.diverged]
            med = float(np.median(first.init_score_grad_norms))
            if ok:
                b = min(ok, key=lambda r: r.final_loss)
                lr, loss, acc = f"{b.lr:>7.3g}", f"{b.final_loss:>10.4f}", f"{b.final_accuracy:>9.3f}"
            else:
                lr, loss, acc = f"{'—':>7}", f"{'diverged':>10}", f"{'—':>9}"
            lines.append(
                f"{d_k:>5}  {rule:<12}  {opt:<4}  {lr}  {loss}  {acc}  "
                f"{first.init_saturated_fraction:>8.3f}  {med:>11.3g}"
            )
        return "\n".join(lines)


def learning_rate_sweep(
    d_ks: Iterable[int],
    lrs: Iterable[float],
    *,
    scale_rules: Iterable[str] = ("inverse_sqrt", "none"),
    seed: int = 0,
    **train_kwargs: Any,
) -> SweepResult:
    """Run :func:`train_retrieval` for every ``d_k``, scale rule and learning rate.

    Every run uses the same ``seed``, so runs with the same ``d_k`` start from
    the same weights and see the same data: they differ only in the scale
    rule and the learning rate.

    Parameters
    ----------
    d_ks : iterable of int
        Widths of queries and keys.
    lrs : iterable of float
        Learning rates, tried for every setting. With the defaults of
        :func:`train_retrieval`, ``(0.1, 0.3, 1, 3, 10)`` for SGD and
        ``(0.001, 0.003, 0.01, 0.03, 0.1)`` for Adam include a good rate for
        both scale rules at ``d_k`` from 16 to 256, and rates too large for each.
    scale_rules : iterable of str
        Members of :data:`SCALE_RULES`.
    seed : int
        Seed of every run.
    **train_kwargs
        Passed to :func:`train_retrieval` (``steps``, ``batch``, ``n_keys``,
        ``d_model``, ``d_v``, ``optimizer``).

    Returns
    -------
    SweepResult

    Notes
    -----
    Cost is linear in ``steps · batch · n_keys · d_model · d_k`` summed over
    the runs; ``d_ks=(16, 64, 256)`` with five learning rates and two scale
    rules (30 runs of 100 steps) takes about 7 s on two cores with one BLAS
    thread. If other processes compete for the cores, a multithreaded BLAS can
    be several times slower; ``OPENBLAS_NUM_THREADS=1`` avoids that.

    Raises
    ------
    TypeError, ValueError
        As :func:`train_retrieval`; ``ValueError`` also for an empty
        ``d_ks``, ``lrs`` or ``scale_rules``, and ``TypeError`` for a keyword
        that :func:`train_retrieval` does not take.

    Examples
    --------
    >>> sweep = learning_rate_sweep((8, 16), (0.3, 3.0), steps=20)
    >>> len(sweep.runs)  # 2 d_k × 2 scale rules × 2 learning rates
    8
    """
    d_ks = tuple(d_ks)
    lrs = tuple(lrs)
    scale_rules = tuple(scale_rules)
    for name, values in (("d_ks", d_ks), ("lrs", lrs), ("scale_rules", scale_rules)):
        if not values:
            raise ValueError(f"{name} must not be empty")
    for rule in scale_rules:
        _check_choice(rule, "scale_rule", SCALE_RULES)
    for forbidden in ("d_k", "lr", "scale_rule"):
        if forbidden in train_kwargs:
            raise TypeError(f"{forbidden} is swept; pass it in d_ks, lrs or scale_rules, not as a keyword")
    runs = tuple(
        train_retrieval(d_k, scale_rule=rule, lr=lr, seed=seed, **train_kwargs)
        for d_k in d_ks
        for rule in scale_rules
        for lr in lrs
    )
    return SweepResult(runs=runs)
