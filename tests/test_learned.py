"""Tests of attnlib.learned: a layer that learns what a pronoun refers to.

1. ``pronoun_batch``: shapes, one animate noun and one pronoun per sentence at the places drawn, the
   query is the pronoun's own embedding, the other words are fillers, noise as documented, determinism;
2. ``train_layer``: each step is the documented SGD or Adam step (checked against a loop written
   here), the run is deterministic and its seed matters, the pronoun task is learned (loss and
   accuracy, the pronoun row of ``W_QK``, the weights of "it" in the book's sentence), divergence is
   reported;
3. ``LearnedLayer.weights`` against ``scaled_dot_product_attention``;
4. bad inputs, each with its message.
"""

from __future__ import annotations

import numpy as np
import pytest

from attnlib.core import scaled_dot_product_attention, softmax
from attnlib.features import animal_street
from attnlib.learned import PRONOUN_FEATURES, WORD_KINDS, LearnedLayer, pronoun_batch, train_layer
from attnlib.training import RetrievalBatch, retrieval_batch, retrieval_loss_and_grads, xavier_uniform

KIND_ROWS = np.array(list(WORD_KINDS.values()))


def kinds_of(X: np.ndarray) -> np.ndarray:
    """The kind (row of WORD_KINDS) of each noise-free embedding in X (..., d_model)."""
    match = (X[..., None, :] == KIND_ROWS).all(axis=-1)  # (..., kinds)
    assert match.sum(axis=-1).min() == 1, "every word is exactly one kind"
    return match.argmax(axis=-1)


# ---------------------------------------------------------------------- pronoun_batch
def test_pronoun_features_are_the_content_features_of_the_book_sentence() -> None:
    assert PRONOUN_FEATURES == animal_street().feature_names[: len(PRONOUN_FEATURES)]
    assert KIND_ROWS.shape == (len(WORD_KINDS), len(PRONOUN_FEATURES))
    assert len({tuple(r) for r in KIND_ROWS}) == len(WORD_KINDS), "kinds have distinct embeddings"


@pytest.mark.parametrize("n_words", [2, 3, 8])
def test_each_sentence_has_one_animate_noun_the_target_and_one_pronoun_the_query(n_words: int) -> None:
    b = pronoun_batch(200, np.random.default_rng(1), n_words=n_words, d_v=3, noise=0.0)
    assert b.X_q.shape == (200, 1, 5) and b.X_k.shape == (200, n_words, 5) and b.V.shape == (200, n_words, 3)
    kinds = kinds_of(b.X_k)  # (200, n_words)
    names = list(WORD_KINDS)
    animate, pronoun = names.index("animate noun"), names.index("pronoun")
    assert ((kinds == animate).sum(axis=1) == 1).all() and ((kinds == pronoun).sum(axis=1) == 1).all()
    assert (kinds[np.arange(200), b.target] == animate).all()
    where_pronoun = (kinds == pronoun).argmax(axis=1)
    assert np.array_equal(b.X_q[:, 0], b.X_k[np.arange(200), where_pronoun]), "the query is the pronoun's key"
    if n_words > 3:
        fillers = set(np.unique(kinds)) - {animate, pronoun}
        assert fillers == {names.index(k) for k in ("thing noun", "state", "verb", "function word")}
        assert len(np.unique(b.target)) == n_words, "the noun's place is drawn over the whole sentence"


def test_noise_is_added_to_every_feature_and_the_query_keeps_its_words_noise() -> None:
    clean = pronoun_batch(500, np.random.default_rng(2), noise=0.0)
    noisy = pronoun_batch(500, np.random.default_rng(2), noise=0.1)
    assert np.array_equal(clean.target, noisy.target)
    diff = noisy.X_k - clean.X_k  # (500, 8, 5)
    assert abs(diff.std() - 0.1) < 0.005 and abs(diff.mean()) < 0.005
    rows = np.arange(500)
    is_query = (clean.X_k == clean.X_q).all(axis=-1)  # (500, 8): the pronoun's place
    assert (is_query.sum(axis=1) == 1).all()
    places = is_query.argmax(axis=1)
    assert np.array_equal(noisy.X_q[:, 0], noisy.X_k[rows, places])


def test_pronoun_batch_is_fixed_by_its_generator() -> None:
    a, b = (pronoun_batch(16, np.random.default_rng(7)) for _ in range(2))
    c = pronoun_batch(16, np.random.default_rng(8))
    assert all(np.array_equal(getattr(a, f), getattr(b, f)) for f in ("X_q", "X_k", "V", "target"))
    assert not np.array_equal(a.X_k, c.X_k)


# ---------------------------------------------------------------------- train_layer
def reference_run(task, *, d_k: int, steps: int, lr: float, seed: int, batch: int, optimizer: str):
    """The documented training loop, written out: same streams, same start, textbook update rules."""
    init, data = (np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(2))
    batches = [task(batch, data) for _ in range(steps)]
    d_model = batches[0].X_k.shape[-1]
    W = [xavier_uniform(d_model, d_k, init), xavier_uniform(d_model, d_k, init)]
    m = [np.zeros_like(w) for w in W]
    v = [np.zeros_like(w) for w in W]
    losses = []
    for t, b in enumerate(batches, start=1):
        loss, *grads = retrieval_loss_and_grads(W[0], W[1], b, scale=1 / np.sqrt(d_k))
        losses.append(loss)
        for i, g in enumerate(grads):
            if optimizer == "sgd":
                W[i] = W[i] - lr * g
                continue
            m[i] = 0.9 * m[i] + 0.1 * g
            v[i] = 0.999 * v[i] + 0.001 * g**2
            W[i] = W[i] - lr * (m[i] / (1 - 0.9**t)) / (np.sqrt(v[i] / (1 - 0.999**t)) + 1e-8)
    return W, np.array(losses)


@pytest.mark.parametrize(("optimizer", "lr"), [("sgd", 0.5), ("adam", 0.05)])
def test_each_step_is_the_documented_update(optimizer: str, lr: float) -> None:
    layer = train_layer(pronoun_batch, d_k=4, steps=30, lr=lr, seed=3, batch=16, optimizer=optimizer)
    W, losses = reference_run(pronoun_batch, d_k=4, steps=30, lr=lr, seed=3, batch=16, optimizer=optimizer)
    np.testing.assert_allclose(layer.losses, losses, rtol=1e-9)
    np.testing.assert_allclose(layer.W_Q, W[0], rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(layer.W_K, W[1], rtol=1e-9, atol=1e-12)
    init = np.random.default_rng(np.random.SeedSequence(3).spawn(2)[0])
    assert np.array_equal(layer.W_Q0, xavier_uniform(5, 4, init)), "W_Q0 is the Xavier start"
    assert np.array_equal(layer.W_QK, layer.W_Q @ layer.W_K.T)


def test_train_layer_accepts_any_task_such_as_retrieval() -> None:
    def retrieval(batch: int, rng: np.random.Generator) -> RetrievalBatch:
        return retrieval_batch(batch, 4, 6, 3, rng)

    layer = train_layer(retrieval, d_k=6, steps=5, lr=0.5, seed=0, optimizer="sgd", batch=8)
    assert layer.W_Q.shape == (6, 6) and layer.losses.shape == layer.accuracy.shape == (5,)


def test_training_is_deterministic_and_the_seed_matters() -> None:
    runs = [train_layer(pronoun_batch, d_k=5, steps=20, lr=0.05, seed=s, optimizer="adam") for s in (0, 0, 1)]
    assert np.array_equal(runs[0].W_QK, runs[1].W_QK) and np.array_equal(runs[0].losses, runs[1].losses)
    assert not np.allclose(runs[0].W_QK, runs[2].W_QK)


@pytest.fixture(scope="module")
def learned() -> LearnedLayer:
    return train_layer(pronoun_batch, d_k=5, steps=300, lr=5.0, seed=0)


def test_the_layer_learns_to_find_the_animate_noun(learned: LearnedLayer) -> None:
    assert learned.losses[-20:].mean() < learned.losses[:20].mean() / 100
    assert learned.accuracy[0] < 0.5 and learned.accuracy[-20:].min() == 1.0
    row = learned.W_QK[PRONOUN_FEATURES.index("pronoun")]
    assert PRONOUN_FEATURES[int(row.argmax())] == "animate"


def test_it_finds_animal_in_the_book_sentence_only_after_training(learned: LearnedLayer) -> None:
    words = animal_street()
    X = words.K[:, : len(PRONOUN_FEATURES)]  # (n, d_model): the words' content features
    it, animal = words.tokens.index("it"), words.tokens.index("animal")
    before, after = learned.weights(X, trained=False)[it], learned.weights(X)[it]
    assert before.max() < 0.3 and after[animal] > 0.95
    assert after.argmax() == animal


@pytest.mark.parametrize("trained", [True, False])
def test_weights_are_those_of_scaled_dot_product_attention(learned: LearnedLayer, trained: bool) -> None:
    X = np.random.default_rng(4).normal(size=(6, 5))
    W_Q, W_K = (learned.W_Q, learned.W_K) if trained else (learned.W_Q0, learned.W_K0)
    S = (X @ W_Q) @ (X @ W_K).T / np.sqrt(5)  # (6, 6)
    np.testing.assert_allclose(learned.weights(X, trained=trained), softmax(S, axis=-1), rtol=1e-12)
    _, A = scaled_dot_product_attention(X @ W_Q, X @ W_K, X, return_weights=True)
    np.testing.assert_allclose(learned.weights(X, trained=trained), A, rtol=1e-12)


def test_a_learning_rate_that_makes_the_scores_overflow_is_reported() -> None:
    with pytest.raises(ValueError, match=r"training diverged at step \d+ with lr=1e\+200"):
        train_layer(pronoun_batch, d_k=5, steps=5, lr=1e200, seed=0, optimizer="sgd")


# ---------------------------------------------------------------------- bad inputs
@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"batch": 0}, ValueError, "batch"),
        ({"batch": 2.5}, TypeError, "batch"),
        ({"n_words": 1}, ValueError, r"n_words must be at least 2 .*got 1"),
        ({"d_v": 0}, ValueError, "d_v"),
        ({"noise": -0.1}, ValueError, "noise"),
        ({"noise": float("nan")}, ValueError, "noise"),
        ({"rng": 0}, TypeError, "rng"),
    ],
)
def test_pronoun_batch_rejects_bad_input(kwargs: dict, error: type, match: str) -> None:
    args = {"batch": 4, "rng": np.random.default_rng(0)} | kwargs
    with pytest.raises(error, match=match):
        pronoun_batch(**args)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"task": "pronouns"}, TypeError, r"task must be a callable .*got str"),
        ({"task": lambda batch, rng: 3}, TypeError, r"must return a RetrievalBatch; got int"),
        ({"d_k": 0}, ValueError, "d_k"),
        ({"steps": 0}, ValueError, "steps"),
        ({"lr": 0.0}, ValueError, "lr"),
        ({"lr": "fast"}, TypeError, "lr"),
        ({"seed": -1}, ValueError, r"seed must be non-negative; got -1"),
        ({"seed": 1.5}, TypeError, "seed"),
        ({"batch": 0}, ValueError, "batch"),
        ({"optimizer": "rmsprop"}, ValueError, "optimizer"),
        ({"scale_rule": "sqrt"}, ValueError, "scale_rule"),
    ],
)
def test_train_layer_rejects_bad_input(kwargs: dict, error: type, match: str) -> None:
    args = {"task": pronoun_batch, "d_k": 5, "steps": 3, "lr": 0.05} | kwargs
    task = args.pop("task")
    with pytest.raises(error, match=match):
        train_layer(task, **args)


@pytest.mark.parametrize(("X", "match"), [(np.ones((3, 4)), r"d_model=5 .*got X \(3, 4\)"),
                                          (np.ones(5), r"got X \(5,\)"),
                                          (np.full((2, 5), np.nan), "X")])
def test_weights_reject_embeddings_of_the_wrong_shape(
    learned: LearnedLayer, X: np.ndarray, match: str
) -> None:
    with pytest.raises(ValueError, match=match):
        learned.weights(X)
