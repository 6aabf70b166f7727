"""A layer that learns what a pronoun refers to: weights that come from data, not from a keyboard.

The features of :func:`attnlib.features.animal_street` are typed in. Here one attention layer learns
its ``W_Q`` and ``W_K`` instead, from made-up sentences whose words have the same named features:
in every sentence a pronoun must find the one animate noun (:func:`pronoun_batch`).
:func:`train_layer` trains a layer on such a task, with the loss and the backward pass of
:mod:`attnlib.training`; its :class:`LearnedLayer` holds the weights before and after, so a chapter
can show what the layer learned: ``W_QK = W_Q W_Kᵀ`` with a name on every row and column, and the
weights it gives the words of a sentence it never saw.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from attnlib import _validation as _v
from attnlib.core import SCALE_RULES, scale_for, scaled_dot_product_attention
from attnlib.training.layer import OPTIMIZERS, _adam_update, _forward_backward
from attnlib.training.task import RetrievalBatch, _check_seed, xavier_uniform

__all__ = ["PRONOUN_FEATURES", "WORD_KINDS", "pronoun_batch", "LearnedLayer", "train_layer"]

#: The named features of a word's embedding, in order (the content features of
#: :func:`attnlib.features.animal_street`).
PRONOUN_FEATURES: tuple[str, ...] = ("noun", "animate", "pronoun", "state", "verb")

#: The kinds of word a made-up sentence is built from, each with its embedding (one 0 or 1 per
#: feature of :data:`PRONOUN_FEATURES`). An animate noun ("animal"), a noun that is a thing
#: ("street"), a pronoun ("it"), a word for a state ("tired"), a verb ("cross") and a function word
#: with none of the features ("the", "because").
WORD_KINDS: dict[str, tuple[float, ...]] = {
    "animate noun": (1.0, 1.0, 0.0, 0.0, 0.0),
    "thing noun": (1.0, 0.0, 0.0, 0.0, 0.0),
    "pronoun": (0.0, 0.0, 1.0, 0.0, 0.0),
    "state": (0.0, 0.0, 0.0, 1.0, 0.0),
    "verb": (0.0, 0.0, 0.0, 0.0, 1.0),
    "function word": (0.0, 0.0, 0.0, 0.0, 0.0),
}
_KIND_EMBEDDINGS = np.array(list(WORD_KINDS.values()))  # (kinds, d_model)
_ANIMATE, _PRONOUN = 0, 2  # rows of _KIND_EMBEDDINGS
_FILLERS = np.array([1, 3, 4, 5])  # the kinds that fill the other places of a sentence


def pronoun_batch(
    batch: int, rng: np.random.Generator, *, n_words: int = 8, d_v: int = 8, noise: float = 0.1
) -> RetrievalBatch:
    """Draw ``batch`` made-up sentences in which the pronoun must find the animate noun.

    Each sentence has ``n_words`` words at random places: one animate noun, one pronoun, and
    ``n_words − 2`` words drawn uniformly from the thing nouns, states, verbs and function words of
    :data:`WORD_KINDS`. A word's embedding is its kind's row of named features plus independent
    normal noise of standard deviation ``noise`` on every feature, so no two words are alike. The
    query is the pronoun (its embedding, which is also one of the keys: self-attention); the target
    is the animate noun. The values are independent standard normal, as in
    :func:`attnlib.training.task.retrieval_batch`: the layer is right only when it puts its weight on
    the animate noun.

    Draw order (fixed, so a seed fixes the batch): kinds, places, noise, values.

    Parameters
    ----------
    batch : int
        Number of sentences (one query each).
    rng : numpy.random.Generator
        The only source of randomness.
    n_words : int
        Words per sentence, at least 2 (the noun and the pronoun).
    d_v : int
        Length of the values.
    noise : float
        Standard deviation of the noise on each feature (non-negative).

    Returns
    -------
    RetrievalBatch
        ``X_q`` (batch, 1, d_model), ``X_k`` (batch, n_words, d_model), ``V`` (batch, n_words, d_v)
        and ``target`` (batch,), with ``d_model = len(PRONOUN_FEATURES)``.

    Raises
    ------
    TypeError
        Non-integer sizes, a non-real ``noise``, ``rng`` not a Generator.
    ValueError
        Sizes that are not positive, ``n_words < 2``, a negative or non-finite ``noise``.

    Examples
    --------
    >>> import numpy as np
    >>> b = pronoun_batch(3, np.random.default_rng(0), n_words=5, noise=0.0)
    >>> b.X_q.shape, b.X_k.shape, b.V.shape
    ((3, 1, 5), (3, 5, 5), (3, 5, 8))
    >>> b.X_k[np.arange(3), b.target].tolist()  # every target is an animate noun
    [[1.0, 1.0, 0.0, 0.0, 0.0], [1.0, 1.0, 0.0, 0.0, 0.0], [1.0, 1.0, 0.0, 0.0, 0.0]]
    """
    batch = _v.check_positive_int(batch, "batch")
    rng = _v.check_rng(rng)
    n_words = _v.check_positive_int(n_words, "n_words")
    if n_words < 2:
        raise ValueError(f"n_words must be at least 2 (the animate noun and the pronoun); got {n_words}")
    d_v = _v.check_positive_int(d_v, "d_v")
    noise = _v.check_real(noise, "noise", minimum="non-negative")
    kinds = _FILLERS[rng.integers(0, len(_FILLERS), size=(batch, n_words))]  # (batch, n_words)
    places = np.argsort(rng.random((batch, n_words)), axis=1)[:, :2]  # (batch, 2): noun, pronoun
    rows = np.arange(batch)  # (batch,)
    kinds[rows, places[:, 0]] = _ANIMATE
    kinds[rows, places[:, 1]] = _PRONOUN
    X = _KIND_EMBEDDINGS[kinds]  # (batch, n_words, d_model)
    X = X + noise * rng.standard_normal(X.shape)  # (batch, n_words, d_model)
    V = rng.standard_normal((batch, n_words, d_v))  # (batch, n_words, d_v)
    return RetrievalBatch(X_q=X[rows, places[:, 1]][:, None, :], X_k=X, V=V, target=places[:, 0])


@dataclass(frozen=True)
class LearnedLayer:
    """One attention layer's query and key projections, before and after :func:`train_layer`.

    Attributes
    ----------
    W_Q, W_K : ndarray, shape (d_model, d_k)
        The projections after training.
    W_Q0, W_K0 : ndarray, shape (d_model, d_k)
        The projections it started from (Xavier-uniform).
    scale : float
        The factor applied to ``Q Kᵀ`` (``1/√d_k`` by default).
    losses : ndarray, shape (steps,)
        Training loss at each step, on that step's fresh batch, before the update.
    accuracy : ndarray, shape (steps,)
        Fraction of that batch's queries whose largest weight was on the target.
    """

    W_Q: np.ndarray = field(repr=False)
    W_K: np.ndarray = field(repr=False)
    W_Q0: np.ndarray = field(repr=False)
    W_K0: np.ndarray = field(repr=False)
    scale: float
    losses: np.ndarray = field(repr=False)
    accuracy: np.ndarray = field(repr=False)

    @property
    def W_QK(self) -> np.ndarray:
        """``W_Q W_Kᵀ`` after training, (d_model, d_model): the score of embeddings ``x_i, x_j``
        is ``scale · x_i W_QK x_jᵀ``, so entry ``(a, b)`` says how much feature ``a`` of a query's
        word rewards feature ``b`` of a key's."""
        return self.W_Q @ self.W_K.T  # (d_model, d_k) @ (d_k, d_model) -> (d_model, d_model)

    def weights(self, X: Any, *, trained: bool = True) -> np.ndarray:
        """The attention weights this layer gives a sequence of embeddings (self-attention).

        Parameters
        ----------
        X : (n, d_model) array_like
            One embedding per word.
        trained : bool
            Use the weights after training (default) or those it started from.

        Returns
        -------
        ndarray, shape (n, n)
            Row ``i`` is word ``i``'s weights over the words.

        Raises
        ------
        TypeError
            ``X`` not real-valued.
        ValueError
            ``X`` not 2-D, its width not ``d_model``, or NaN or infinite entries.
        """
        X = _v.as_float_array(X, "X")
        if X.ndim != 2 or X.shape[1] != self.W_Q.shape[0]:
            raise ValueError(
                f"X must have shape (n, d_model) with d_model={self.W_Q.shape[0]} (the rows of W_Q); "
                f"got X {X.shape}"
            )
        W_Q, W_K = (self.W_Q, self.W_K) if _v.check_bool_flag(trained, "trained") else (self.W_Q0, self.W_K0)
        Q, K = X @ W_Q, X @ W_K  # (n, d_model) @ (d_model, d_k) -> (n, d_k)
        _, A = scaled_dot_product_attention(Q, K, X, scale=self.scale, return_weights=True)  # (n, n)
        return A


def train_layer(
    task: Callable[[int, np.random.Generator], RetrievalBatch],
    *,
    d_k: int,
    steps: int,
    lr: float,
    seed: int = 0,
    batch: int = 64,
    optimizer: str = "sgd",
    scale_rule: str = "inverse_sqrt",
) -> LearnedLayer:
    """Train one attention layer's ``W_Q`` and ``W_K`` on a task such as :func:`pronoun_batch`.

    ``W_Q`` and ``W_K`` start Xavier-uniform; each step draws ``task(batch, rng)``, a fresh
    :class:`~attnlib.training.task.RetrievalBatch`, and takes one step of ``optimizer`` on the loss of
    :func:`attnlib.training.layer.retrieval_loss_and_grads`: the mean squared error between the layer's
    output and the target word's value, whose gradient passes through the softmax.

    Parameters
    ----------
    task : callable
        ``task(batch, rng)`` returns a ``RetrievalBatch``; its embeddings' width is ``d_model``.
    d_k : int
        Width of queries and keys.
    steps : int
        Optimisation steps.
    lr : float
        Learning rate (positive).
    seed : int
        Non-negative seed of the initial weights and of the data.
    batch : int
        Sentences per step.
    optimizer : {"sgd", "adam"}
        Plain gradient descent on each step's batch, or Adam (β1 = 0.9, β2 = 0.999, ε = 1e-8,
        bias-corrected).
    scale_rule : {"inverse_sqrt", "none", "inverse"}
        The factor on ``Q Kᵀ``: ``1/√d_k``, 1 or ``1/d_k``.

    Returns
    -------
    LearnedLayer

    Raises
    ------
    TypeError
        ``task`` not callable or not returning a ``RetrievalBatch``; non-integer sizes or seed; a
        non-real ``lr``.
    ValueError
        Non-positive sizes or ``lr``, a negative seed, an unknown ``optimizer`` or ``scale_rule``;
        training that diverged (the scores or the loss stopped being finite), naming the step and
        the learning rate.

    Examples
    --------
    >>> layer = train_layer(pronoun_batch, d_k=5, steps=200, lr=5.0, seed=0)
    >>> bool(layer.losses[-20:].mean() < layer.losses[:20].mean() / 10)
    True
    >>> PRONOUN_FEATURES[int(layer.W_QK[2].argmax())]  # what the pronoun's features reward most
    'animate'
    """
    if not callable(task):
        raise TypeError(
            f"task must be a callable task(batch, rng) -> RetrievalBatch; got {type(task).__name__}"
        )
    d_k = _v.check_positive_int(d_k, "d_k")
    steps = _v.check_positive_int(steps, "steps")
    lr = _v.check_real(lr, "lr", minimum="positive")
    seed = _check_seed(seed)
    batch = _v.check_positive_int(batch, "batch")
    optimizer = _v.check_choice(optimizer, "optimizer", OPTIMIZERS)
    scale = scale_for(d_k, _v.check_choice(scale_rule, "scale_rule", SCALE_RULES))
    init, data = (np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(2))
    first = _draw(task, batch, data)
    d_model = first.X_k.shape[-1]
    W0 = (xavier_uniform(d_model, d_k, init), xavier_uniform(d_model, d_k, init))
    params = [w.copy() for w in W0]
    moments = [[np.zeros_like(w) for w in W0] for _ in range(2)]  # Adam's m and v, per matrix
    losses, accuracy = np.empty(steps), np.empty(steps)
    for t in range(1, steps + 1):
        b = first if t == 1 else _draw(task, batch, data)
        out = _forward_backward(params[0], params[1], b, scale)
        if not (out.finite and math.isfinite(float(out.loss))):
            raise ValueError(f"training diverged at step {t} with lr={lr:g}: the scores overflowed; "
                             "try a smaller learning rate")
        losses[t - 1], accuracy[t - 1] = out.loss, out.accuracy
        with np.errstate(over="ignore", invalid="ignore"):  # an overflow shows at the next step
            for i, g in enumerate((out.grad_wq, out.grad_wk)):
                if optimizer == "sgd":
                    params[i] -= lr * g
                else:
                    _adam_update(params[i], g, moments[0][i], moments[1][i], t, lr)
    if not all(np.isfinite(w).all() for w in params):
        raise ValueError(f"training diverged at the last step with lr={lr:g}: the weights overflowed; "
                         "try a smaller learning rate")
    return LearnedLayer(W_Q=params[0], W_K=params[1], W_Q0=W0[0], W_K0=W0[1], scale=scale,
                        losses=losses, accuracy=accuracy)


def _draw(task: Callable[[int, np.random.Generator], RetrievalBatch], batch: int,
          rng: np.random.Generator) -> RetrievalBatch:
    b = task(batch, rng)
    if not isinstance(b, RetrievalBatch):
        raise TypeError(f"task(batch, rng) must return a RetrievalBatch; got {type(b).__name__}")
    return b
