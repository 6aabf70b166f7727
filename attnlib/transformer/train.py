"""Training the transformer on in-context copying, and what its heads do: scores and ablations.

:func:`train_copying` trains with Adam and returns a :class:`CopyingRun`: the loss on the repeated half
at every step, and at chosen checkpoints the weights, the held-out loss and accuracy and, per head, a
previous-token score and an induction score (:func:`head_scores`). :func:`ablation_losses` zeroes one
head at a time.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from threadpoolctl import threadpool_limits

from attnlib import _validation as _v
from attnlib.training.layer import _adam_update
from attnlib.training.task import _check_seed
from attnlib.transformer.backward import _loss_and_grads, _loss_grad
from attnlib.transformer.model import (
    TENSOR_NAMES,
    TransformerConfig,
    TransformerParams,
    _check_params,
    _forward,
    _layers,
    init_params,
)
from attnlib.transformer.task import CopyingBatch, _check_half_lengths, copying_batch

__all__ = [
    "COPYING_HALF_LENGTHS", "copying_config", "HeadScores", "head_scores", "copying_accuracy", "Checkpoint",
    "CopyingRun", "train_copying", "ablation_losses",
]

_INIT, _DATA, _HELD_OUT = range(3)  # the streams spawned from a seed, in this order

#: The half-lengths ``T`` of the chapter's task, drawn uniformly per sequence of 24 letters.
COPYING_HALF_LENGTHS: tuple[int, int] = (4, 10)


def copying_config(n_layers: int = 2) -> TransformerConfig:
    """The chapter's model: 26 letters, 24 positions, ``d_model = 24``, 2 heads of width 12.

    With :func:`train_copying`'s defaults (300 Adam steps of 32 sequences, ``lr = 0.015`` decaying
    linearly to 0 over the second half, :data:`COPYING_HALF_LENGTHS`) two layers learn the task in a
    few seconds; one layer cannot.

    Parameters
    ----------
    n_layers : int
        Attention layers.

    Returns
    -------
    TransformerConfig

    Raises
    ------
    TypeError
        ``n_layers`` is not an integer.
    ValueError
        ``n_layers`` is not positive.

    Examples
    --------
    >>> copying_config(1)
    TransformerConfig(vocab=26, n_ctx=24, d_model=24, n_layers=1, n_heads=2)
    """
    return TransformerConfig(vocab=26, n_ctx=24, d_model=24, n_layers=n_layers, n_heads=2)


@dataclass(frozen=True, eq=False)
class HeadScores:
    """What each head attends to on a batch of the copying task, as means of attention weights.

    Attributes
    ----------
    previous_token : ndarray, shape (n_layers, n_heads)
        Mean weight a position ``i ≥ 1`` puts on position ``i − 1``.
    induction : ndarray, shape (n_layers, n_heads)
        Mean weight a position ``i`` of the repeat puts on ``i − T + 1``, the position
        just after the previous occurrence of its token.
    """

    previous_token: np.ndarray
    induction: np.ndarray


def _scores_from_weights(weights: np.ndarray, batch: CopyingBatch) -> HeadScores:
    """:class:`HeadScores` from the weights ``(batch, layers, heads, n, n)`` of a pass on ``batch``."""
    n = batch.tokens.shape[-1]
    i = np.arange(n)  # (n,)
    prev = np.concatenate([np.zeros_like(weights[..., :1, 0]), np.diagonal(weights, -1, -2, -1)], -1)
    prev_mask = np.broadcast_to(i >= 1, batch.tokens.shape)  # (batch, n)
    src = np.clip(i - batch.half[:, None] + 1, 0, n - 1)  # (batch, n): just after the previous occurrence
    w_src = np.take_along_axis(weights, src[:, None, None, :, None], axis=-1)[..., 0]  # (batch, L, H, n)
    ind_mask = batch.second_half  # (batch, n)

    def mean(w: np.ndarray, m: np.ndarray) -> np.ndarray:
        return (w * m[:, None, None, :]).sum(axis=(0, -1)) / m.sum()  # (L, H)

    return HeadScores(previous_token=mean(prev, prev_mask), induction=mean(w_src, ind_mask))


def head_scores(params: TransformerParams, batch: CopyingBatch) -> HeadScores:
    """Previous-token and induction scores of every head on ``batch``.

    Parameters
    ----------
    params : TransformerParams
    batch : CopyingBatch
        As from :func:`~attnlib.transformer.task.copying_batch`, no longer than ``n_ctx``.

    Returns
    -------
    HeadScores
        Each score lies in ``[0, 1]``; 1 means all of the weight on that position.

    Raises
    ------
    TypeError
        ``params`` or ``batch`` of the wrong type.
    ValueError
        ``batch`` has more positions than ``n_ctx`` or tokens outside the vocabulary.

    Examples
    --------
    >>> from attnlib.transformer.model import TransformerConfig, init_params
    >>> cfg = TransformerConfig(vocab=26, n_ctx=8, d_model=8, n_layers=1, n_heads=2)
    >>> p = init_params(cfg, np.random.default_rng(0))
    >>> p.W_Q[:] = 0.0  # uniform attention: position i puts 1/(i+1) on each earlier position
    >>> s = head_scores(p, copying_batch(4, 8, np.random.default_rng(1), half_lengths=(4, 4)))
    >>> s.previous_token.round(4)  # mean of 1/(i+1) over i = 1..7
    array([[0.2454, 0.2454]])
    """
    p = _check_params(params)
    b = _check_batch(batch, p.config)
    _, trace = _forward(p, b.tokens)
    return _scores_from_weights(trace.weights, b)


def _check_batch(batch: Any, config: TransformerConfig) -> CopyingBatch:
    if not isinstance(batch, CopyingBatch):
        raise TypeError(f"batch must be a CopyingBatch (see copying_batch); got {type(batch).__name__}")
    n = batch.tokens.shape[-1]
    if n > config.n_ctx:
        raise ValueError(f"batch has n={n} positions but the model's n_ctx={config.n_ctx}")
    if batch.tokens.max() >= config.vocab:
        raise ValueError(f"batch holds token {int(batch.tokens.max())} but the model's vocab={config.vocab}")
    return batch


def _accuracy(logits: np.ndarray, batch: CopyingBatch) -> float:
    hit = logits.argmax(axis=-1) == batch.targets  # (batch, n)
    return float(hit[batch.loss_mask].mean())


def copying_accuracy(params: TransformerParams, batch: CopyingBatch) -> tuple[float, float]:
    """Loss and accuracy (greedy prediction equal to the target) on the repeated half of ``batch``.

    Parameters
    ----------
    params : TransformerParams
    batch : CopyingBatch

    Returns
    -------
    loss : float
        Mean cross-entropy at the positions of ``batch.loss_mask``, in nats.
    accuracy : float
        Fraction of those positions whose largest logit is the target's.

    Raises
    ------
    TypeError, ValueError
        As :func:`head_scores`.

    Examples
    --------
    >>> from attnlib.transformer.model import TransformerConfig, init_params
    >>> cfg = TransformerConfig(vocab=26, n_ctx=8, d_model=8, n_layers=1, n_heads=2)
    >>> p = init_params(cfg, np.random.default_rng(0))
    >>> p.W_U[:] = 0.0
    >>> loss, acc = copying_accuracy(p, copying_batch(4, 8, np.random.default_rng(1)))
    >>> round(loss, 4) == round(float(np.log(26)), 4)
    True
    """
    p = _check_params(params)
    b = _check_batch(batch, p.config)
    logits = _layers(p, b.tokens)[0]
    return _loss_grad(logits, b.targets, b.loss_mask)[0], _accuracy(logits, b)


@dataclass(frozen=True, eq=False)
class Checkpoint:
    """The state of a run after ``step`` updates (``step = 0``: the initial weights).

    Attributes
    ----------
    step : int
    params : TransformerParams
        A copy of the weights.
    loss, accuracy : float
        On the held-out batch, at the positions of its repeated half.
    scores : HeadScores
        On the held-out batch.
    """

    step: int
    params: TransformerParams
    loss: float
    accuracy: float
    scores: HeadScores


@dataclass(frozen=True, eq=False)
class CopyingRun:
    """One training run of :func:`train_copying`.

    Attributes
    ----------
    config : TransformerConfig
    seed, steps, batch : int
    lr, warmdown : float
    half_lengths : (int, int)
    losses : ndarray, shape (steps,)
        Training loss on the repeated half at each step, on that step's fresh batch, before the update.
    checkpoints : tuple of Checkpoint
        In increasing ``step``; the last one is after the final step.
    held_out : CopyingBatch
        The fixed batch the checkpoints are measured on (never trained on).
    seconds : float
        Wall time of the training loop (initialisation and checkpoints included).
    """

    config: TransformerConfig
    seed: int
    steps: int
    batch: int
    lr: float
    warmdown: float
    half_lengths: tuple[int, int]
    losses: np.ndarray
    checkpoints: tuple[Checkpoint, ...]
    held_out: CopyingBatch
    seconds: float

    @property
    def final(self) -> Checkpoint:
        """The checkpoint after the last step."""
        return self.checkpoints[-1]

    def drop_step(self, fraction: float = 0.5) -> int:
        """First step where the loss (mean of 20 steps) is below ``fraction`` of its start; -1 if never."""
        smooth = np.convolve(self.losses, np.ones(20) / 20, mode="valid")  # (steps − 19,)
        below = np.flatnonzero(smooth < fraction * smooth[0])
        return int(below[0]) + 19 if below.size else -1


def _checkpoint(step: int, p: TransformerParams, held: CopyingBatch) -> Checkpoint:
    logits, trace = _forward(p, held.tokens)
    loss = _loss_grad(logits, held.targets, held.loss_mask)[0]
    scores = _scores_from_weights(trace.weights, held)
    return Checkpoint(step, p.copy(), loss, _accuracy(logits, held), scores)


def train_copying(
    config: TransformerConfig,
    *,
    steps: int = 300,
    batch: int = 32,
    lr: float = 0.015,
    seed: int = 0,
    half_lengths: tuple[int, int] = COPYING_HALF_LENGTHS,
    checkpoints: Sequence[int] = (),
    eval_batch: int = 256,
    warmdown: float = 0.5,
) -> CopyingRun:
    """Train a model from :func:`~attnlib.transformer.model.init_params` on the copying task with Adam.

    Each step draws a fresh :func:`~attnlib.transformer.task.copying_batch` of ``n_ctx`` positions and
    takes one Adam step (``β1 = 0.9``, ``β2 = 0.999``, ``ε = 1e-8``, the update of
    :mod:`attnlib.training`) on the loss of the repeated half; the learning rate is constant, then
    decays linearly to 0 over the last ``warmdown`` fraction of the steps. The seed fixes the initial
    weights, the training data and the held-out batch (three streams spawned from
    ``numpy.random.SeedSequence(seed)``).
    BLAS runs on one thread: the matrices are small, and on a shared machine more threads only wait.

    Parameters
    ----------
    config : TransformerConfig
        Its ``vocab`` is the task's alphabet size (at most 26 for letters).
    steps : int
        Adam steps.
    batch : int
        Sequences per step.
    lr : float
        Peak learning rate.
    seed : int
        Non-negative seed of everything random.
    half_lengths : (int, int)
        Range of the half-length ``T`` (see :func:`~attnlib.transformer.task.copying_batch`).
    checkpoints : sequence of int
        Steps (``0 .. steps``) after which to record a :class:`Checkpoint`; step ``steps`` is always added.
    eval_batch : int
        Sequences in the held-out batch.
    warmdown : float
        Fraction of the steps, at the end, over which the learning rate falls linearly to 0
        (``0 <= warmdown <= 1``; 0 keeps it constant).

    Returns
    -------
    CopyingRun

    Raises
    ------
    TypeError
        ``config`` not a :class:`~attnlib.transformer.model.TransformerConfig`, non-integer sizes or
        seed, a non-real ``lr``.
    ValueError
        Non-positive sizes or ``lr``, a negative seed, a checkpoint outside ``0 .. steps``, bad
        ``half_lengths``, ``warmdown`` outside ``[0, 1]``.

    Examples
    --------
    >>> cfg = TransformerConfig(vocab=8, n_ctx=8, d_model=8, n_layers=2, n_heads=2)
    >>> run = train_copying(cfg, steps=20, batch=8, half_lengths=(2, 4), checkpoints=[0, 10], eval_batch=16)
    >>> run.losses.shape, [c.step for c in run.checkpoints]
    ((20,), [0, 10, 20])
    >>> run.final.scores.induction.shape
    (2, 2)
    """
    if not isinstance(config, TransformerConfig):
        raise TypeError(f"config must be a TransformerConfig; got {type(config).__name__}")
    steps = _v.check_positive_int(steps, "steps")
    batch = _v.check_positive_int(batch, "batch")
    lr = _v.check_real(lr, "lr", minimum="positive")
    seed = _check_seed(seed)
    eval_batch = _v.check_positive_int(eval_batch, "eval_batch")
    warmdown = _v.check_real(warmdown, "warmdown", minimum="non-negative")
    if warmdown > 1:
        raise ValueError(f"warmdown must lie in [0, 1] (a fraction of the steps); got {warmdown}")
    halves = _check_half_lengths(half_lengths, config.n_ctx, config.vocab)
    marks = sorted({_v.check_int(s, "checkpoints") for s in checkpoints} | {steps})
    if marks[0] < 0 or marks[-1] > steps:
        raise ValueError(f"checkpoints must lie in 0..steps={steps}; got {list(checkpoints)}")
    streams = np.random.SeedSequence(seed).spawn(3)
    n, vocab = config.n_ctx, config.vocab
    held_rng = np.random.default_rng(streams[_HELD_OUT])
    held = copying_batch(eval_batch, n, held_rng, vocab=vocab, half_lengths=halves)
    data_rng = np.random.default_rng(streams[_DATA])
    start = time.perf_counter()
    with threadpool_limits(limits=1):
        p = init_params(config, np.random.default_rng(streams[_INIT]))
        m = {k: np.zeros_like(v) for k, v in p.tensors().items()}
        v2 = {k: np.zeros_like(v) for k, v in p.tensors().items()}
        losses = np.empty(steps)
        saved = [_checkpoint(0, p, held)] if marks[0] == 0 else []
        for t in range(1, steps + 1):
            b = copying_batch(batch, n, data_rng, vocab=vocab, half_lengths=halves)
            losses[t - 1], g, _ = _loss_and_grads(p, b.tokens, b.targets, b.loss_mask)
            rate = lr * min(1.0, (steps - t + 1) / (warmdown * steps)) if warmdown else lr
            for name in TENSOR_NAMES:
                _adam_update(getattr(p, name), getattr(g, name), m[name], v2[name], t, rate)
            if t in marks:
                saved.append(_checkpoint(t, p, held))
    return CopyingRun(
        config=config, seed=seed, steps=steps, batch=batch, lr=lr, warmdown=warmdown, half_lengths=halves,
        losses=losses, checkpoints=tuple(saved), held_out=held, seconds=time.perf_counter() - start,
    )


def ablation_losses(params: TransformerParams, batch: CopyingBatch) -> np.ndarray:
    """The loss on the repeated half of ``batch`` with one head's output zeroed, for every head.

    Parameters
    ----------
    params : TransformerParams
    batch : CopyingBatch

    Returns
    -------
    ndarray, shape (n_layers, n_heads)
        Entry ``[l, h]`` is the loss with head ``h`` of layer ``l`` ablated (compare with the loss of
        :func:`copying_accuracy`).

    Raises
    ------
    TypeError, ValueError
        As :func:`head_scores`.

    Examples
    --------
    >>> from attnlib.transformer.model import TransformerConfig, init_params
    >>> cfg = TransformerConfig(vocab=26, n_ctx=8, d_model=8, n_layers=2, n_heads=2)
    >>> p = init_params(cfg, np.random.default_rng(0))
    >>> p.W_O[1, 4:] = 0.0  # head 1 of layer 1 writes nothing: ablating it changes nothing
    >>> b = copying_batch(4, 8, np.random.default_rng(1))
    >>> bool(np.isclose(ablation_losses(p, b)[1, 1], copying_accuracy(p, b)[0]))
    True
    """
    p = _check_params(params)
    b = _check_batch(batch, p.config)
    cfg = p.config
    out = np.empty((cfg.n_layers, cfg.n_heads))
    for layer in range(cfg.n_layers):
        for head in range(cfg.n_heads):
            logits = _layers(p, b.tokens, frozenset({(layer, head)}))[0]
            out[layer, head] = _loss_grad(logits, b.targets, b.loss_mask)[0]
    return out

