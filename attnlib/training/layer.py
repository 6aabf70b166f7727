"""One attention layer trained on the retrieval task, with and without the scale.

:func:`retrieval_loss_and_grads` is the mean squared error of the layer's output and its exact gradients
(built on the backward lines of :func:`attnlib.grad.attention_backward`); :func:`train_retrieval` trains
one layer from Xavier-uniform weights with plain SGD or Adam under one scale rule and returns a
:class:`TrainingRun`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from attnlib import _validation as _v
from attnlib.core import SCALE_RULES, scale_for, softmax
from attnlib.training.task import (
    RetrievalBatch,
    _check_n_keys,
    _check_seed,
    _stack_batches,
    retrieval_batch,
    xavier_uniform,
)

__all__ = ["OPTIMIZERS", "retrieval_loss_and_grads", "TrainingRun", "train_retrieval"]


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
        The data, as from :func:`~attnlib.training.task.retrieval_batch`.
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
    (:func:`~attnlib.training.task.xavier_uniform`); each step draws a fresh batch from
    :func:`~attnlib.training.task.retrieval_batch` and takes one step of ``optimizer`` on the
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
    (:func:`~attnlib.training.sweep.learning_rate_sweep`), not one by one.

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
