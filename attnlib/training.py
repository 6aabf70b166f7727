"""A small training experiment: does an attention layer learn, with and without the scale?

Built on the backward lines of :func:`attnlib.grad.attention_backward`: one attention layer with
learned ``W_Q`` and ``W_K`` must retrieve, for each query, the value of the key the query matches
among ``n_keys − 1`` distractors (:func:`retrieval_batch`). The loss is a mean squared error on the
attention *output*, as in a real network, so every gradient passes through the softmax Jacobian
(:func:`retrieval_loss_and_grads`, checked against finite differences and autograd).
:func:`train_retrieval` trains one layer from Xavier-uniform initialisation with plain SGD or Adam
under one of :data:`~attnlib.core.SCALE_RULES`; :func:`learning_rate_sweep` repeats it over ``d_k``,
scale rules, learning rates and seeds, and its :class:`SweepResult` chooses each seed's best rate on a
validation batch (:class:`BestRates` reports the chosen runs on a separate test batch, and the median and
range of the rates over the seeds). :meth:`SweepResult.relative_change` compares a sweep with its rerun
from initial weights moved by a few ulps (``init_ulps``), which shows where training is chaotic;
:func:`identity_form_accuracy` is the accuracy of the form the task is built for, ``W_Q W_Kᵀ = c ·
I``, and :func:`nearest_key_accuracy` that of the key nearest to the query in distance, which no
such form can compute.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
from threadpoolctl import threadpool_limits

from attnlib import _validation as _v
from attnlib.core import SCALE_RULES, scale_for, softmax

__all__ = [
    "xavier_uniform",
    "RetrievalBatch",
    "retrieval_batch",
    "OPTIMIZERS",
    "retrieval_loss_and_grads",
    "TrainingRun",
    "train_retrieval",
    "median_rate",
    "identity_form_accuracy",
    "nearest_key_accuracy",
    "BestRates",
    "SweepResult",
    "learning_rate_sweep",
]


#: The optimisers the experiment can train with: plain gradient descent and Adam.
OPTIMIZERS: tuple[str, ...] = ("sgd", "adam")
"""Optimisers of :func:`train_retrieval`: plain SGD and Adam (β1 = 0.9, β2 = 0.999, ε = 1e-8)."""

# A row of weights whose largest entry exceeds this counts as saturated (as in attnlib.stats).
_SATURATED = 0.99
_ADAM_BETA1, _ADAM_BETA2, _ADAM_EPS = 0.9, 0.999, 1e-8
# A perturbation of the start is a probe of rounding, a few ulps; more is a different experiment.
_MAX_INIT_ULPS = 1000


def _adam_update(param: np.ndarray, g: np.ndarray, m: np.ndarray, v: np.ndarray, t: int, lr: Any) -> None:
    """Step ``t`` (from 1) of Adam on ``param``, in place, with its moments ``m`` and ``v`` (also in place).

    ``m̂ / (√v̂ + ε)`` with ``m̂ = m / (1 − β1ᵗ)``, ``v̂ = v / (1 − β2ᵗ)`` equals
    ``m · (√(1 − β2ᵗ) / (1 − β1ᵗ)) / (√v + ε √(1 − β2ᵗ))``, which is what is computed.
    """
    m *= _ADAM_BETA1
    m += (1 - _ADAM_BETA1) * g
    v *= _ADAM_BETA2
    v += (1 - _ADAM_BETA2) * np.square(g)
    root = math.sqrt(1 - _ADAM_BETA2**t)
    step = np.sqrt(v)
    step += _ADAM_EPS * root
    np.divide(m, step, out=step)
    step *= lr * (root / (1 - _ADAM_BETA1**t))
    param -= step


def _check_seed(seed: Any) -> int:
    seed = _v.check_int(seed, "seed")
    if seed < 0:
        raise ValueError(f"seed must be non-negative; got {seed}")
    return seed


def _check_init_ulps(init_ulps: Any) -> int:
    init_ulps = _v.check_int(init_ulps, "init_ulps")
    if abs(init_ulps) > _MAX_INIT_ULPS:
        raise ValueError(f"init_ulps must be between -{_MAX_INIT_ULPS} and {_MAX_INIT_ULPS}; got {init_ulps}")
    return init_ulps


def _shift_ulps(W: np.ndarray, ulps: int) -> np.ndarray:
    """``W`` with every entry moved ``|ulps|`` representable floats up (``ulps > 0``) or down."""
    towards = np.inf if ulps > 0 else -np.inf
    for _ in range(abs(ulps)):
        W = np.nextafter(W, towards)
    return W


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
    (:func:`identity_form_accuracy` is about 0.87 at ``d_model = 8``), although
    the key nearest to the query in distance is still the target
    (:func:`nearest_key_accuracy`).

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


@dataclass(frozen=True)
class _Pass:
    """Everything one forward and backward pass of the retrieval layer computes, per run.

    ``runs`` is the leading shape of the weights, broadcast with that of the batch: ``()`` for one
    run, ``(n_seeds, n_lrs)`` in a sweep.
    """

    finite: np.ndarray  # runs, bool: the scores were finite (if not, that run's Q and K were zeroed)
    loss: np.ndarray  # runs
    grad_wq: np.ndarray  # (*runs, d_model, d_k) ∂L/∂W_Q
    grad_wk: np.ndarray  # (*runs, d_model, d_k) ∂L/∂W_K
    P: np.ndarray  # (*runs, batch, n_keys) attention weights
    row_score_grads: np.ndarray  # (*runs, batch, n_keys) ∂ℓ_b/∂S_b, ℓ_b the loss of query b alone
    accuracy: np.ndarray  # runs


def _forward_backward(W_Q: np.ndarray, W_K: np.ndarray, b: RetrievalBatch, scale: Any) -> _Pass:
    """Loss, parameter gradients and diagnostics of every run at once.

    ``W_Q, W_K`` have shape ``(*runs, d_model, d_k)``, ``scale`` is a number or an array of
    shape ``runs``; the batch's arrays have leading shape ``(*data_runs, batch)`` with
    ``data_runs`` broadcastable to ``runs``. A run whose scores are not finite is flagged in
    ``finite`` and computed with zero scores, so that the other runs go on and no NaN reaches
    the softmax.

    The keys ``X_k W_K`` (``batch · n_keys`` rows) are never formed: ``W_K`` moves to the query
    side, ``U = scale · Q W_Kᵀ`` with ``Q = X_q W_Q``, and ``S_bj = U_b · x_k[b, j]``. Every
    product of weights is then one of ``batch`` rows, which makes a sweep several times cheaper.
    The backward pass follows the same lines in reverse; its softmax line is that of
    :func:`~attnlib.grad.attention_backward`.
    """
    n_b = b.X_k.shape[-3]
    d_v = b.V.shape[-1]
    c = np.asarray(scale, dtype=np.float64)[..., None, None]  # (*runs, 1, 1) or (1, 1)
    X_q = b.X_q[..., 0, :]  # (*data_runs, batch, d_model)
    with np.errstate(over="ignore", invalid="ignore"):
        Q = X_q @ W_Q  # (*runs, batch, d_k)
        U = c * (Q @ W_K.swapaxes(-1, -2))  # (*runs, batch, d_model)
        S = np.einsum("...bd,...bnd->...bn", U, b.X_k)  # (*runs, batch, n_keys)
    finite = np.isfinite(S).all(axis=(-2, -1))  # runs
    if not finite.all():
        S = np.where(finite[..., None, None], S, 0.0)  # (*runs, batch, n_keys)
    P = softmax(S, axis=-1)  # (*runs, batch, n_keys)
    O = np.einsum("...bn,...bnv->...bv", P, b.V)  # (*runs, batch, d_v)
    Y = np.take_along_axis(b.V, b.target[..., None, None], axis=-2)[..., 0, :]  # (*data_runs, batch, d_v)
    err = O - Y  # (*runs, batch, d_v)
    loss = np.mean(err**2, axis=(-2, -1))  # runs
    # ∂ℓ_b/∂S_b for the loss of query b alone, ℓ_b = mean over d_v of err²: the softmax
    # Jacobian applied to ∂ℓ_b/∂P_b (the line dS = P ⊙ (dP − rowsum(dP ⊙ P)) of attention_backward).
    dP = (2.0 / d_v) * np.einsum("...bv,...bnv->...bn", err, b.V)  # (*runs, batch, n_keys)
    row_dS = P * (dP - (dP * P).sum(axis=-1, keepdims=True))  # (*runs, batch, n_keys)
    with np.errstate(over="ignore", invalid="ignore"):  # a diverging run is caught by the caller
        dU = np.einsum("...bn,...bnd->...bd", row_dS / n_b, b.X_k)  # (*runs, batch, d_model); L = mean_b ℓ_b
        dQ = c * (dU @ W_K)  # (*runs, batch, d_k)
        dW_Q = X_q.swapaxes(-1, -2) @ dQ  # (*runs, d_model, d_k)
        dW_K = (c * dU).swapaxes(-1, -2) @ Q  # (*runs, d_model, d_k)
    accuracy = np.mean(P.argmax(axis=-1) == b.target, axis=-1)  # runs
    return _Pass(finite, loss, dW_Q, dW_K, P, row_dS, accuracy)


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
    the lines of :func:`~attnlib.grad.attention_backward` give ``dQ`` and ``dK``; then
    ``dW_Q = Σ_b X_q[b]ᵀ dQ[b]`` and ``dW_K = Σ_b X_k[b]ᵀ dK[b]``. (The
    computation never forms ``K``: with ``U = scale · Q W_Kᵀ`` the scores are
    ``S_b = U_b X_k[b]ᵀ``, and ``dW_K = Σ_b X_k[b]ᵀ dK[b]`` is the same sum
    taken as ``dUᵀ Q``, which is much cheaper when ``n_keys · d_k`` is large.
    The tests compare the result with :func:`~attnlib.grad.attention_backward` itself.)

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
    if not out.finite:
        raise ValueError(
            f"the scores overflow float64 (largest |W_Q| = {np.abs(W_Q).max():.3g}, "
            f"|W_K| = {np.abs(W_K).max():.3g}, scale = {checked:.3g})"
        )
    return float(out.loss), out.grad_wq, out.grad_wk


@dataclass(frozen=True)
class TrainingRun:
    """One training run of :func:`train_retrieval`.

    Two held-out batches, drawn once per seed and never trained on, play two roles: the
    *validation* batch chooses among runs (the best learning rate of a seed is the one with the
    lowest ``val_loss``), and the *test* batch reports the chosen run (``test_loss``,
    ``test_accuracy``). Reporting on the batch that made the choice would flatter the winner.

    Attributes
    ----------
    d_k : int
        Width of queries and keys.
    scale_rule : str
        One of :data:`attnlib.core.SCALE_RULES`.
    lr : float
        Learning rate.
    seed : int
        Seed of the initial weights, the training data and the two held-out batches.
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
        Fraction of the validation batch's rows whose largest weight exceeds
        0.99 at initialisation.
    init_score_grad_norms : ndarray, shape (eval_batch,)
        At initialisation, for each query of the validation batch, the norm of
        ``∂ℓ_b/∂S_b``: the gradient of that query's own loss with respect to the
        softmax's input ``S = scale · Q Kᵀ`` (the gradient reaching the raw
        scores ``Q Kᵀ`` is ``scale`` times this). Per-query, so it does not
        depend on the batch size.
    init_max_weight_mean : float
        Mean largest weight over the validation batch at initialisation.
    val_loss, val_accuracy : float
        Loss and accuracy on the validation batch after training (``nan`` and
        0 if the run diverged); used to choose the learning rate.
    test_loss, test_accuracy : float
        The same on the test batch; used to report.
    diverged : bool
        The scores, loss, gradients or weights became non-finite.
    final_saturated_fraction : float
        Fraction of the validation batch's rows whose largest weight exceeds
        0.99 after training (``nan`` if the run diverged).
    weight_growth : float
        ``‖W_Q W_Kᵀ‖_F`` after training divided by its value at
        initialisation: how many times larger the weights make the scores
        (``nan`` if the run diverged).
    """

    d_k: int
    scale_rule: str
    lr: float
    seed: int
    steps: int
    optimizer: str
    losses: np.ndarray
    accuracy: np.ndarray
    init_saturated_fraction: float
    init_score_grad_norms: np.ndarray
    init_max_weight_mean: float
    val_loss: float
    val_accuracy: float
    test_loss: float
    test_accuracy: float
    diverged: bool
    final_saturated_fraction: float = math.nan
    weight_growth: float = math.nan


_INIT, _DATA, _VALIDATION, _TEST = range(4)  # the streams spawned from a seed, in this order


def _held_out_batch(
    streams: list[np.random.SeedSequence], which: int, eval_batch: int, n_keys: int, d_model: int, d_v: int
) -> RetrievalBatch:
    """The validation (``which = _VALIDATION``) or test batch of the seed whose ``streams`` these are."""
    return retrieval_batch(eval_batch, n_keys, d_model, d_v, np.random.default_rng(streams[which]))


def _train_runs(
    d_k: int,
    scale_rules: tuple[str, ...],
    lrs: tuple[float, ...],
    seeds: tuple[int, ...],
    *,
    steps: int,
    batch: int,
    n_keys: int,
    d_model: int,
    d_v: int,
    optimizer: str,
    eval_batch: int,
    init_ulps: int,
) -> list[TrainingRun]:
    """Train every (scale rule, learning rate) pair of one ``d_k`` for every seed, all at once.

    The weights carry leading axes ``(n_seeds, n_configs)``, a config being one scale rule and
    one learning rate; each step draws one batch per seed and every config of that seed trains
    on it, so one pass of array arithmetic serves all runs. Each run follows the arithmetic of
    a run trained alone; only the matrix products are batched. Returns the runs in the order
    scale rule, seed, learning rate. ``init_ulps`` moves every initial weight by that many ulps.
    """
    configs = [(rule, lr) for rule in scale_rules for lr in lrs]
    n_s, n_c, n_r = len(seeds), len(configs), len(scale_rules)
    scale = np.array([[scale_for(d_k, rule) for rule, _ in configs]])  # (1, configs)
    lr = np.array([lr for _, lr in configs])[None, :, None, None]  # (1, configs, 1, 1)
    streams = [np.random.SeedSequence(s).spawn(4) for s in seeds]  # init, data, validation, test
    init_rngs = [np.random.default_rng(ss[_INIT]) for ss in streams]
    pairs = [(xavier_uniform(d_model, d_k, r), xavier_uniform(d_model, d_k, r)) for r in init_rngs]
    if init_ulps:
        pairs = [(_shift_ulps(a, init_ulps), _shift_ulps(b, init_ulps)) for a, b in pairs]
    W0 = [np.stack([p[i] for p in pairs])[:, None] for i in (0, 1)]  # 2 × (seeds, 1, d_model, d_k)
    params = [np.repeat(w, n_c, axis=1) for w in W0]  # 2 × (seeds, configs, d_model, d_k)
    data_rngs = [np.random.default_rng(ss[_DATA]) for ss in streams]
    val, test = (
        _stack_batches([_held_out_batch(ss, i, eval_batch, n_keys, d_model, d_v) for ss in streams])
        for i in (_VALIDATION, _TEST)
    )  # one validation and one test batch per seed

    init = _forward_backward(W0[0], W0[1], val, np.array([[scale_for(d_k, r) for r in scale_rules]]))
    top = init.P.max(axis=-1)  # (seeds, rules, eval_batch)

    m = [np.zeros_like(p) for p in params]
    v = [np.zeros_like(p) for p in params]
    alive = np.ones((n_s, n_c), dtype=bool)
    losses = np.full((n_s, n_c, steps), np.nan)
    accuracy = np.full((n_s, n_c, steps), np.nan)
    for t in range(1, steps + 1):
        data = _stack_batches([retrieval_batch(batch, n_keys, d_model, d_v, r) for r in data_rngs])
        out = _forward_backward(params[0], params[1], data, scale)
        grads = [out.grad_wq, out.grad_wk]
        # A run diverges when its scores or loss stop being finite; weights or gradients that
        # overflow show up as non-finite scores one step later (or in the final passes).
        now = alive & out.finite & np.isfinite(out.loss)
        if not now.any():
            break
        if not now.all():  # a diverged run stops: its weights are frozen at zero (zero gradient)
            keep = now[..., None, None]
            params, grads = [np.where(keep, p, 0.0) for p in params], [np.where(keep, g, 0.0) for g in grads]
            m, v = [np.where(keep, a, 0.0) for a in m], [np.where(keep, a, 0.0) for a in v]
        alive = now
        losses[..., t - 1] = np.where(alive, out.loss, np.nan)
        accuracy[..., t - 1] = np.where(alive, out.accuracy, np.nan)
        with np.errstate(over="ignore", invalid="ignore"):  # an overflow is caught at the next step
            for i, g in enumerate(grads):
                if optimizer == "sgd":
                    params[i] -= lr * g
                    continue
                _adam_update(params[i], g, m[i], v[i], t, lr)

    steps_done = np.isfinite(losses).sum(axis=-1)  # (seeds, configs)
    final_val, final_test = (_forward_backward(params[0], params[1], held, scale) for held in (val, test))
    alive &= final_val.finite & final_test.finite & np.isfinite(final_val.loss) & np.isfinite(final_test.loss)
    final_sat = np.mean(final_val.P.max(axis=-1) > _SATURATED, axis=-1)  # (seeds, configs)
    with np.errstate(over="ignore", invalid="ignore"):  # a diverged run's weights may overflow
        size = [np.linalg.norm(a @ b.swapaxes(-1, -2), axis=(-2, -1)) for a, b in (W0, params)]
    growth = size[1] / size[0]  # (seeds, configs): ‖W_Q W_Kᵀ‖_F after / before
    return [
        TrainingRun(
            d_k=d_k,
            scale_rule=rule,
            lr=float(rate),
            seed=int(seeds[s]),
            steps=steps,
            optimizer=optimizer,
            losses=losses[s, j, : steps_done[s, j]].copy(),
            accuracy=accuracy[s, j, : steps_done[s, j]].copy(),
            init_saturated_fraction=float(np.mean(top[s, j // len(lrs)] > _SATURATED)),
            init_score_grad_norms=np.linalg.norm(init.row_score_grads[s, j // len(lrs)], axis=-1),
            init_max_weight_mean=float(top[s, j // len(lrs)].mean()),
            val_loss=float(final_val.loss[s, j]) if alive[s, j] else math.nan,
            val_accuracy=float(final_val.accuracy[s, j]) if alive[s, j] else 0.0,
            test_loss=float(final_test.loss[s, j]) if alive[s, j] else math.nan,
            test_accuracy=float(final_test.accuracy[s, j]) if alive[s, j] else 0.0,
            diverged=not alive[s, j],
            final_saturated_fraction=float(final_sat[s, j]) if alive[s, j] else math.nan,
            weight_growth=float(growth[s, j]) if alive[s, j] else math.nan,
        )
        for r in range(n_r)
        for s in range(n_s)
        for j, (rule, rate) in enumerate(configs)
        if j // len(lrs) == r
    ]


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
    eval_batch: int = 256,
    init_ulps: int = 0,
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
    the unit-variance vectors of the textbook argument, and the unscaled score
    of a query and a distractor key has variance ``≈ d_k``. (The matching key
    shares the query's embedding up to the noise, so that pair is not
    independent.)

    Fair comparisons: the seed fixes the initial weights, the training data
    stream, a validation batch and a test batch of ``eval_batch`` queries each
    (four independent streams spawned from ``numpy.random.SeedSequence(seed)``),
    so runs that differ only in ``scale_rule``, ``lr`` or ``optimizer`` see the
    same weights and data.

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
    eval_batch : int
        Queries in each of the two held-out batches.
    init_ulps : int
        Move every initial weight by this many ulps (units in the last place:
        representable float64 values), up if positive, down if negative, at
        most 1000 either way; 0 leaves the start as drawn. Comparing a run
        with its rerun at ``init_ulps=1`` shows how much a last-bit change,
        such as another CPU or BLAS library makes, moves its result.

    Returns
    -------
    TrainingRun

    Raises
    ------
    TypeError
        Non-integer sizes, seed or ``init_ulps``, a non-real ``lr``.
    ValueError
        An unknown ``scale_rule`` or ``optimizer``; a non-positive ``lr``,
        ``steps`` or size; ``n_keys < 2``; a negative seed; ``|init_ulps| > 1000``.

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

    At large learning rates training is chaotic: the final loss depends on
    rounding, so the same run can end at different losses on two CPUs. Such
    runs end with grown weights and mostly saturated rows (``weight_growth``,
    ``final_saturated_fraction``). Compare them over several seeds
    (:func:`learning_rate_sweep`), not one by one.

    Examples
    --------
    >>> run = train_retrieval(16, lr=1.0, steps=100, seed=0)
    >>> run.losses.shape
    (100,)
    >>> bool(run.test_loss < run.losses[0])
    True
    >>> run.init_score_grad_norms.shape
    (256,)
    """
    d_k = _v.check_positive_int(d_k, "d_k")
    scale_rule = _v.check_choice(scale_rule, "scale_rule", SCALE_RULES)
    lr = _v.check_real(lr, "lr", minimum="positive")
    seed = _check_seed(seed)
    kwargs = _check_train_kwargs(d_k, steps, batch, n_keys, d_model, d_v, optimizer, eval_batch, init_ulps)
    return _train_runs(d_k, (scale_rule,), (lr,), (seed,), **kwargs)[0]


def _check_train_kwargs(
    d_k: int,
    steps: Any,
    batch: Any,
    n_keys: Any,
    d_model: Any,
    d_v: Any,
    optimizer: Any,
    eval_batch: Any,
    init_ulps: Any,
) -> dict[str, Any]:
    """The sizes and optimiser of a run, checked; ``d_model=None`` becomes ``d_k``."""
    return {
        "steps": _v.check_positive_int(steps, "steps"),
        "batch": _v.check_positive_int(batch, "batch"),
        "n_keys": _check_n_keys(n_keys),
        "d_model": d_k if d_model is None else _v.check_positive_int(d_model, "d_model"),
        "d_v": _v.check_positive_int(d_v, "d_v"),
        "optimizer": _v.check_choice(optimizer, "optimizer", OPTIMIZERS),
        "eval_batch": _v.check_positive_int(eval_batch, "eval_batch"),
        "init_ulps": _check_init_ulps(init_ulps),
    }


def median_rate(rates: Iterable[float]) -> float:
    """The median of learning rates, taken on the logarithmic scale of a grid.

    For an odd number of rates this is the middle one, so the median of rates
    drawn from a grid is a grid value. For an even number it is the geometric
    mean of the two middle ones (the midpoint on a log axis), not their
    arithmetic mean.

    Parameters
    ----------
    rates : iterable of float
        Positive rates, at least one.

    Returns
    -------
    float

    Raises
    ------
    ValueError
        No rates, or a rate that is not positive and finite.

    Examples
    --------
    >>> median_rate([0.1, 3.0, 0.3, 0.3, 10.0])
    0.3
    >>> print(f"{median_rate([0.1, 1.0]):.4f}")
    0.3162
    """
    values = sorted(float(r) for r in rates)
    if not values:
        raise ValueError("rates must not be empty")
    if not all(math.isfinite(r) and r > 0 for r in values):
        raise ValueError(f"rates must be positive and finite; got {values}")
    n = len(values)
    if n % 2:
        return values[n // 2]
    return math.sqrt(values[n // 2 - 1] * values[n // 2])


def identity_form_accuracy(
    d_k: int, seed: int, *, n_keys: int = 16, d_model: int | None = None, d_v: int = 16, eval_batch: int = 256
) -> float:
    """Test accuracy of the layer whose ``W_Q W_Kᵀ`` is ``c · I``: the form the retrieval task is built for.

    With ``W_Q W_Kᵀ = c · I`` (``c > 0``) the layer scores each key by
    ``c · x_q · x_j`` and puts its largest weight on the key whose embedding
    has the largest dot product with the query's, whatever ``c`` and the scale
    rule are. This returns the fraction of the queries of ``seed``'s *test*
    batch (the batch on which :func:`train_retrieval` reports, drawn the same
    way) for which that key is the target: a reference point for trained
    layers. At small ``d_k`` it is below 1, because a distractor's dot product
    with the query, of size ``≈ √d_k``, then often exceeds the target's,
    ``≈ d_k``.

    Parameters
    ----------
    d_k : int
        Width of queries and keys (the embedding width when ``d_model`` is ``None``).
    seed : int
        The seed of the runs it is compared with.
    n_keys, d_model, d_v, eval_batch
        As in :func:`train_retrieval`.

    Returns
    -------
    float
        A multiple of ``1 / eval_batch``.

    Raises
    ------
    TypeError, ValueError
        Bad sizes or seed, as in :func:`train_retrieval`.

    Examples
    --------
    >>> identity_form_accuracy(128, 0)
    1.0
    >>> bool(identity_form_accuracy(2, 0) < 0.5)
    True
    """
    b = _seed_test_batch(d_k, seed, n_keys, d_model, d_v, eval_batch)
    S = np.einsum("bd,bnd->bn", b.X_q[:, 0, :], b.X_k)  # (eval_batch, n_keys): x_q · x_j
    return float(np.mean(S.argmax(axis=-1) == b.target))


def nearest_key_accuracy(
    d_k: int, seed: int, *, n_keys: int = 16, d_model: int | None = None, d_v: int = 16, eval_batch: int = 256
) -> float:
    """Test accuracy of choosing the key nearest to the query: how hard the retrieval task is in itself.

    Picks, for each query of ``seed``'s *test* batch (as
    :func:`identity_form_accuracy`), the key ``j`` with the smallest distance
    ``‖x_q − x_j‖`` and returns the fraction of queries for which it is the
    target. Since ``‖x_q − x_j‖² = ‖x_q‖² − 2 x_q · x_j + ‖x_j‖²``, this ranks
    the keys by ``x_q · x_j − ‖x_j‖² / 2``: the dot product of
    :func:`identity_form_accuracy` minus half the key's squared norm. No
    attention score ``x_q W_Q W_Kᵀ x_jᵀ`` contains that term, so where this
    accuracy is high and the identity form's is not, the task is hard only
    for a dot-product score. With the default noise 0.1 the target is at
    distance ``≈ 0.1 √d_model`` and a distractor at ``≈ √(2 d_model)``, so
    this is close to 1 at all but the smallest widths.

    Parameters
    ----------
    d_k : int
        Width of queries and keys (the embedding width when ``d_model`` is ``None``).
    seed : int
        The seed of the runs it is compared with.
    n_keys, d_model, d_v, eval_batch
        As in :func:`train_retrieval`.

    Returns
    -------
    float
        A multiple of ``1 / eval_batch``.

    Raises
    ------
    TypeError, ValueError
        Bad sizes or seed, as in :func:`train_retrieval`.

    Examples
    --------
    >>> nearest_key_accuracy(8, 0)
    1.0
    >>> bool(identity_form_accuracy(8, 0) < 0.9)
    True
    """
    b = _seed_test_batch(d_k, seed, n_keys, d_model, d_v, eval_batch)
    dist2 = np.sum((b.X_k - b.X_q) ** 2, axis=-1)  # (eval_batch, n_keys): ‖x_q − x_j‖²
    return float(np.mean(dist2.argmin(axis=-1) == b.target))


def _seed_test_batch(
    d_k: Any, seed: Any, n_keys: Any, d_model: Any, d_v: Any, eval_batch: Any
) -> RetrievalBatch:
    """The test batch of ``seed``'s runs, after checking the arguments as :func:`train_retrieval` does."""
    d_k = _v.check_positive_int(d_k, "d_k")
    seed = _check_seed(seed)
    n_keys = _check_n_keys(n_keys)
    d_model = d_k if d_model is None else _v.check_positive_int(d_model, "d_model")
    d_v = _v.check_positive_int(d_v, "d_v")
    eval_batch = _v.check_positive_int(eval_batch, "eval_batch")
    return _held_out_batch(np.random.SeedSequence(seed).spawn(4), _TEST, eval_batch, n_keys, d_model, d_v)


@dataclass(frozen=True)
class BestRates:
    """The best learning rate of one setting, seed by seed, and how the chosen runs do.

    For each seed the best rate is the one whose run has the lowest loss on
    the validation batch; the chosen run is then measured on the test batch.

    Attributes
    ----------
    d_k : int
    scale_rule : str
    seeds : tuple of int
    lrs : tuple of float
        The best rate of each seed, in the order of ``seeds``.
    test_losses, test_accuracies : tuple of float
        Test-batch loss and accuracy of each seed's chosen run.
    runner_up_lrs : tuple of float or None
        The rate of each seed's second-lowest validation loss (``None`` when
        the seed has only one run that did not diverge).
    leads : tuple of float
        Each seed's runner-up validation loss divided by its winner's: by how
        much the choice is won (``≥ 1``; ``inf`` without a runner-up or when
        only the winner's loss is 0). Where both runs are insensitive to the
        last bits (:meth:`SweepResult.relative_change` of a rerun tiny), any
        lead above 1 by more than rounding is safe. Where either run is
        chaotic, its loss can move by tens of percent from a start one ulp
        away, and the lead with it: no fixed threshold on the lead makes the
        choice safe; rerun the sweep from several shifted starts
        (``init_ulps``) and check that the choice stays.
    """

    d_k: int
    scale_rule: str
    seeds: tuple[int, ...]
    lrs: tuple[float, ...]
    test_losses: tuple[float, ...]
    test_accuracies: tuple[float, ...]
    runner_up_lrs: tuple[float | None, ...]
    leads: tuple[float, ...]

    @property
    def median_lr(self) -> float:
        """Median best rate over the seeds (:func:`median_rate`)."""
        return median_rate(self.lrs)

    @property
    def lr_range(self) -> tuple[float, float]:
        """Smallest and largest best rate over the seeds."""
        return min(self.lrs), max(self.lrs)

    @property
    def median_test_loss(self) -> float:
        """Median over the seeds of the chosen runs' test loss."""
        return float(np.median(self.test_losses))

    @property
    def median_test_accuracy(self) -> float:
        """Median over the seeds of the chosen runs' test accuracy."""
        return float(np.median(self.test_accuracies))


def _lead(winner: TrainingRun, runner_up: TrainingRun | None) -> float:
    """``runner_up.val_loss / winner.val_loss``, with the edge cases of :attr:`BestRates.leads`."""
    if runner_up is None:
        return math.inf
    if winner.val_loss == 0:
        return 1.0 if runner_up.val_loss == 0 else math.inf
    return runner_up.val_loss / winner.val_loss


@dataclass(frozen=True)
class SweepResult:
    """The runs of :func:`learning_rate_sweep`, with the best learning rates per setting.

    Attributes
    ----------
    runs : tuple of TrainingRun
        In the order ``d_k``, scale rule, seed, learning rate.
    """

    runs: tuple[TrainingRun, ...]

    def _distinct(self, field: str) -> tuple[Any, ...]:
        return tuple(dict.fromkeys(getattr(r, field) for r in self.runs))

    @property
    def d_ks(self) -> tuple[int, ...]:
        """The widths, in sweep order."""
        return self._distinct("d_k")

    @property
    def scale_rules(self) -> tuple[str, ...]:
        """The scale rules, in sweep order."""
        return self._distinct("scale_rule")

    @property
    def seeds(self) -> tuple[int, ...]:
        """The seeds, in sweep order."""
        return self._distinct("seed")

    @property
    def lrs(self) -> tuple[float, ...]:
        """The learning rates, in sweep order."""
        return self._distinct("lr")

    def _setting(self, d_k: int, scale_rule: str) -> list[TrainingRun]:
        matching = [r for r in self.runs if r.d_k == d_k and r.scale_rule == scale_rule]
        if not matching:
            have = sorted({(r.d_k, r.scale_rule) for r in self.runs})
            raise ValueError(f"no run with d_k={d_k} and scale_rule={scale_rule!r}; the sweep has {have}")
        return matching

    def run(self, d_k: int, scale_rule: str, seed: int, lr: float) -> TrainingRun:
        """The run of one setting, seed and learning rate.

        Raises
        ------
        ValueError
            The sweep has no such run.
        """
        for r in self._setting(d_k, scale_rule):
            if r.seed == seed and r.lr == lr:
                return r
        raise ValueError(
            f"no run with d_k={d_k}, scale_rule={scale_rule!r}, seed={seed}, lr={lr}; "
            f"the sweep has seeds {self.seeds} and learning rates {self.lrs}"
        )

    def best(self, d_k: int, scale_rule: str, seed: int) -> TrainingRun:
        """The run of one seed with the lowest ``val_loss`` among its non-diverged runs.

        Parameters
        ----------
        d_k : int
        scale_rule : str
        seed : int

        Returns
        -------
        TrainingRun
            Ties go to the first in sweep order (the smaller learning rate
            when the rates were given in increasing order). Its ``test_loss``
            and ``test_accuracy`` are the figures to report: the test batch
            played no part in the choice.

        Raises
        ------
        ValueError
            No run has this ``d_k``, ``scale_rule`` and ``seed``, or all of them diverged.

        Examples
        --------
        >>> sweep = learning_rate_sweep((8,), (0.1, 1.0), seeds=(0,), steps=20)
        >>> sweep.best(8, "inverse_sqrt", 0).lr in (0.1, 1.0)
        True
        """
        matching = [r for r in self._setting(d_k, scale_rule) if r.seed == seed]
        if not matching:
            raise ValueError(f"no run with d_k={d_k}, scale_rule={scale_rule!r} and seed={seed}; "
                             f"the sweep has seeds {self.seeds}")
        ok = [r for r in matching if not r.diverged]
        if not ok:
            raise ValueError(
                f"all {len(matching)} runs with d_k={d_k}, scale_rule={scale_rule!r} and seed={seed} "
                f"diverged (learning rates {[r.lr for r in matching]})"
            )
        return min(ok, key=lambda r: r.val_loss)

    def best_rates(self, d_k: int, scale_rule: str) -> BestRates:
        """Each seed's best learning rate for one setting, with the test results of the chosen runs.

        Returns
        -------
        BestRates
            ``median_lr`` and ``lr_range`` summarise the rates over the seeds.

        Raises
        ------
        ValueError
            As :meth:`best`, for the first seed that fails.

        Examples
        --------
        >>> sweep = learning_rate_sweep((8,), (0.1, 1.0), seeds=(0, 1, 2), steps=20)
        >>> b = sweep.best_rates(8, "inverse_sqrt")
        >>> len(b.lrs), b.median_lr in (0.1, 1.0)
        (3, True)
        """
        seeds = self._distinct_seeds(d_k, scale_rule)
        chosen = [self.best(d_k, scale_rule, s) for s in seeds]
        runners_up = [self._runner_up(d_k, scale_rule, s, r) for s, r in zip(seeds, chosen, strict=True)]
        return BestRates(
            d_k=d_k,
            scale_rule=scale_rule,
            seeds=tuple(r.seed for r in chosen),
            lrs=tuple(r.lr for r in chosen),
            test_losses=tuple(r.test_loss for r in chosen),
            test_accuracies=tuple(r.test_accuracy for r in chosen),
            runner_up_lrs=tuple(None if u is None else u.lr for u in runners_up),
            leads=tuple(_lead(r, u) for r, u in zip(chosen, runners_up, strict=True)),
        )

    def _runner_up(self, d_k: int, scale_rule: str, seed: int, winner: TrainingRun) -> TrainingRun | None:
        """The non-diverged run of a seed with the lowest ``val_loss`` other than ``winner``."""
        runs = self._setting(d_k, scale_rule)
        others = [r for r in runs if r.seed == seed and not r.diverged and r is not winner]
        return min(others, key=lambda r: r.val_loss) if others else None

    def relative_change(
        self, other: SweepResult, d_k: int, scale_rule: str, field: str = "val_loss"
    ) -> np.ndarray:
        """How much each run's result differs in ``other``, a rerun of this sweep, relative to its size.

        Run with ``init_ulps=1``, ``other`` starts every run from weights one
        ulp away: the size of the change shows how much the last bits of the
        arithmetic, which differ between CPUs and BLAS libraries, move each run.

        Parameters
        ----------
        other : SweepResult
            A sweep with the same seeds and learning rates for this setting.
        d_k : int
        scale_rule : str
        field : {"val_loss", "val_accuracy", "test_loss", "test_accuracy", \
                 "final_saturated_fraction", "weight_growth"}

        Returns
        -------
        ndarray, shape (len(seeds), len(lrs))
            ``|b − a| / |a|`` for this sweep's ``a`` and the other's ``b``:
            0 where they are equal (also where both runs diverged), ``inf``
            where only one diverged or ``a`` is 0 and ``b`` is not.

        Raises
        ------
        TypeError
            ``other`` is not a ``SweepResult``.
        ValueError
            An unknown ``field`` or setting, or different seeds or learning
            rates in the two sweeps.

        Examples
        --------
        >>> kw = dict(steps=10, seeds=(0, 1))
        >>> a = learning_rate_sweep((8,), (0.1, 30.0), **kw)
        >>> b = learning_rate_sweep((8,), (0.1, 30.0), init_ulps=1, **kw)
        >>> change = a.relative_change(b, 8, "none")  # (seeds, lrs)
        >>> bool((change[:, 0] < 1e-9).all())  # the small rate: rounding stays rounding
        True
        """
        if not isinstance(other, SweepResult):
            raise TypeError(f"other must be a SweepResult; got {type(other).__name__}")
        mine, theirs = self._setting(d_k, scale_rule), other._setting(d_k, scale_rule)
        keys = [(r.seed, r.lr) for r in mine]
        if sorted(keys) != sorted((r.seed, r.lr) for r in theirs):
            raise ValueError(
                f"the two sweeps differ in seeds or learning rates for d_k={d_k}, scale_rule={scale_rule!r}: "
                f"seeds {self.seeds} and {other.seeds}, learning rates {self.lrs} and {other.lrs}"
            )
        a, b = self.grid(d_k, scale_rule, field), other.grid(d_k, scale_rule, field)  # (seeds, lrs)
        seeds, lrs = self._distinct_seeds(d_k, scale_rule), tuple(dict.fromkeys(r.lr for r in mine))
        order_s = [other._distinct_seeds(d_k, scale_rule).index(s) for s in seeds]
        order_l = [tuple(dict.fromkeys(r.lr for r in theirs)).index(lr) for lr in lrs]
        b = b[np.ix_(order_s, order_l)]
        with np.errstate(divide="ignore", invalid="ignore"):
            change = np.abs(b - a) / np.abs(a)  # (seeds, lrs)
        change[a == b] = 0.0
        change[np.isnan(a) & np.isnan(b)] = 0.0
        change[np.isnan(a) ^ np.isnan(b)] = np.inf
        return change

    def _distinct_seeds(self, d_k: int, scale_rule: str) -> tuple[int, ...]:
        return tuple(dict.fromkeys(r.seed for r in self._setting(d_k, scale_rule)))

    def grid(self, d_k: int, scale_rule: str, field: str = "val_loss") -> np.ndarray:
        """One number per run of a setting, as a ``(seeds, learning rates)`` array.

        Parameters
        ----------
        d_k : int
        scale_rule : str
        field : {"val_loss", "val_accuracy", "test_loss", "test_accuracy", \
                 "final_saturated_fraction", "weight_growth"}
            The :class:`TrainingRun` attribute to collect (``nan`` loss for a
            diverged run).

        Returns
        -------
        ndarray, shape (len(seeds), len(lrs))
            Rows in the order of :attr:`seeds`, columns in that of :attr:`lrs`.

        Raises
        ------
        ValueError
            An unknown ``field`` or setting.

        Examples
        --------
        >>> sweep = learning_rate_sweep((8,), (0.1, 1.0), seeds=(0, 1), steps=5)
        >>> sweep.grid(8, "none").shape
        (2, 2)
        """
        fields = ("val_loss", "val_accuracy", "test_loss", "test_accuracy", "final_saturated_fraction",
                  "weight_growth")
        _v.check_choice(field, "field", fields)
        runs = self._setting(d_k, scale_rule)
        seeds, lrs = self._distinct_seeds(d_k, scale_rule), tuple(dict.fromkeys(r.lr for r in runs))
        out = np.full((len(seeds), len(lrs)), np.nan)
        for r in runs:
            out[seeds.index(r.seed), lrs.index(r.lr)] = getattr(r, field)
        return out

    def table(self) -> str:
        """A plain-text table of the best learning rates: per ``(d_k, scale rule)``, seed by seed.

        Columns: ``d_k``, scale rule, the best rate of each seed (in the
        order of :attr:`seeds`), their median and their range. Only rates
        are shown: they are values of the grid, so they print the same on
        every machine as long as each seed's choice does, while the losses
        of runs at large learning rates depend on rounding. A setting in
        which some seed's runs all diverged shows ``diverged``.

        Returns
        -------
        str

        Examples
        --------
        >>> sweep = learning_rate_sweep((8,), (0.1, 1.0), seeds=(0, 1, 2), steps=20)
        >>> print(sweep.table().splitlines()[0])
          d_k  scale         best lr per seed  median  range
        """
        rows = []
        for d_k in self.d_ks:
            for rule in self.scale_rules:
                try:
                    b = self.best_rates(d_k, rule)
                except ValueError:
                    rows.append((f"{d_k:>5}  {rule:<12}", "diverged", "", ""))
                    continue
                lo, hi = b.lr_range
                per_seed = ", ".join(f"{lr:g}" for lr in b.lrs)
                rows.append((f"{d_k:>5}  {rule:<12}", per_seed, f"{b.median_lr:g}", f"{lo:g} to {hi:g}"))
        width = max([len("best lr per seed")] + [len(r[1]) for r in rows])
        lines = [f"{'d_k':>5}  {'scale':<12}  {'best lr per seed':<{width}}  {'median':>6}  range"]
        lines += [f"{a}  {b:<{width}}  {c:>6}  {d}".rstrip() for a, b, c, d in rows]
        return "\n".join(lines)


def learning_rate_sweep(
    d_ks: Iterable[int],
    lrs: Iterable[float],
    *,
    scale_rules: Iterable[str] = ("inverse_sqrt", "none"),
    seeds: Iterable[int] = (0, 1, 2, 3, 4),
    **train_kwargs: Any,
) -> SweepResult:
    """Run :func:`train_retrieval` for every ``d_k``, scale rule, seed and learning rate.

    Runs with the same ``d_k`` and seed start from the same weights and see
    the same data: they differ only in the scale rule and the learning rate.
    The seeds are independent repetitions of the whole comparison.

    Parameters
    ----------
    d_ks : iterable of int
        Widths of queries and keys.
    lrs : iterable of float
        Learning rates, tried for every setting and seed. Chapter 4 of the
        book uses ``(0.1, 0.3, 1, 3, 10)`` with SGD and 50 steps: the grid
        holds each setting's best rate at ``d_k`` from 8 to 128, with a
        larger rate that is too large for it.
    scale_rules : iterable of str
        Members of :data:`attnlib.core.SCALE_RULES`.
    seeds : iterable of int
        Distinct non-negative seeds; each is one repetition.
    **train_kwargs
        Passed to :func:`train_retrieval` (``steps``, ``batch``, ``n_keys``,
        ``d_model``, ``d_v``, ``optimizer``, ``eval_batch``, ``init_ulps``).

    Returns
    -------
    SweepResult

    Raises
    ------
    TypeError, ValueError
        As :func:`train_retrieval`; ``ValueError`` also for an empty
        ``d_ks``, ``lrs``, ``scale_rules`` or ``seeds`` and for repeated
        seeds, ``TypeError`` for a keyword that :func:`train_retrieval` does
        not take.

    Notes
    -----
    All runs of one ``d_k`` are trained together, as one array computation
    with leading axes (seed, scale rule and learning rate), on one BLAS
    thread: the matrices are small, and on a busy machine a multithreaded
    BLAS waits for descheduled threads. Cost is linear in
    ``steps · batch · n_keys · d_model · d_k`` summed over the runs.

    Examples
    --------
    >>> sweep = learning_rate_sweep((8, 16), (0.3, 3.0), seeds=(0, 1), steps=20)
    >>> len(sweep.runs)  # 2 d_k × 2 scale rules × 2 seeds × 2 learning rates
    16
    >>> sweep.seeds, sweep.lrs
    ((0, 1), (0.3, 3.0))
    """
    d_ks = tuple(_v.check_positive_int(d, "d_k") for d in d_ks)
    lrs = tuple(_v.check_real(lr, "lr", minimum="positive") for lr in lrs)
    scale_rules = tuple(_v.check_choice(rule, "scale_rule", SCALE_RULES) for rule in scale_rules)
    seeds = tuple(_check_seed(s) for s in seeds)
    for name, values in (("d_ks", d_ks), ("lrs", lrs), ("scale_rules", scale_rules), ("seeds", seeds)):
        if not values:
            raise ValueError(f"{name} must not be empty")
    if len(set(seeds)) != len(seeds):
        raise ValueError(f"seeds must be distinct; got {seeds}")
    for forbidden in ("d_k", "lr", "scale_rule", "seed"):
        if forbidden in train_kwargs:
            raise TypeError(
                f"{forbidden} is swept; pass it in d_ks, lrs, scale_rules or seeds, not as a keyword"
            )
    allowed = ("steps", "batch", "n_keys", "d_model", "d_v", "optimizer", "eval_batch", "init_ulps")
    for key in train_kwargs:
        if key not in allowed:
            raise TypeError(
                f"learning_rate_sweep() got an unexpected keyword argument {key!r}; allowed: {allowed}"
            )
    defaults = {"steps": 100, "batch": 32, "n_keys": 16, "d_model": None, "d_v": 16, "optimizer": "sgd",
                "eval_batch": 256, "init_ulps": 0}  # those of train_retrieval
    options = defaults | train_kwargs
    runs: list[TrainingRun] = []
    with threadpool_limits(limits=1):
        for d_k in d_ks:
            kwargs = _check_train_kwargs(d_k, **options)
            runs.extend(_train_runs(d_k, scale_rules, lrs, seeds, **kwargs))
    return SweepResult(runs=tuple(runs))
