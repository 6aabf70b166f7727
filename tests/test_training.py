"""Tests of the retrieval training experiment in attnlib.training.

1. ``xavier_uniform``: bounds, variance, determinism;
2. ``retrieval_batch``: shapes, the query matches its target key, determinism;
3. ``retrieval_loss_and_grads``: the loss against a naive loop, the parameter
   gradients against central finite differences (float64, relative error
   ≤ 1e-6) for every scale rule, and against PyTorch's autograd when installed;
4. ``train_retrieval``: learning happens, runs are deterministic and fair
   (same seed, same start and data), each step is the documented SGD step,
   unscaled scores saturate at large d_k, the final saturation and weight
   growth follow the trained weights, divergence is reported;
5. ``median_rate``, ``BestRates``, ``SweepResult`` and ``learning_rate_sweep``:
   the rate is chosen on the validation batch and reported on the test batch,
   the median over seeds is the middle rate, each seed's lead over its
   runner-up, a run in a sweep equals the run trained alone;
6. ``init_ulps`` and ``SweepResult.relative_change``: a rerun from weights one
   ulp away, and how much each run moves;
7. ``identity_form_accuracy`` and ``nearest_key_accuracy`` against the test batch drawn by hand;
8. bad inputs, each with its message.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from attnlib.core import SCALE_RULES, scaled_dot_product_attention
from attnlib.grad import attention_backward
from attnlib.training import (
    OPTIMIZERS,
    BestRates,
    RetrievalBatch,
    SweepResult,
    TrainingRun,
    identity_form_accuracy,
    learning_rate_sweep,
    median_rate,
    nearest_key_accuracy,
    retrieval_batch,
    retrieval_loss_and_grads,
    train_retrieval,
    xavier_uniform,
)


def rel_err(a, b):
    return np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-300)


# --------------------------------------------------------------------------- xavier_uniform
def test_xavier_bounds_shape_and_variance():
    fan_in, fan_out = 300, 100
    W = xavier_uniform(fan_in, fan_out, np.random.default_rng(0))
    bound = math.sqrt(6 / (fan_in + fan_out))
    assert W.shape == (fan_in, fan_out)
    assert W.dtype == np.float64
    assert np.abs(W).max() <= bound
    assert np.abs(W).max() > 0.99 * bound  # the whole interval is used
    assert W.var() == pytest.approx(2 / (fan_in + fan_out), rel=0.03)
    assert abs(W.mean()) < 0.01


def test_xavier_is_deterministic_given_the_generator():
    a = xavier_uniform(5, 7, np.random.default_rng(3))
    b = xavier_uniform(5, 7, np.random.default_rng(3))
    c = xavier_uniform(5, 7, np.random.default_rng(4))
    assert np.array_equal(a, b)
    assert not np.array_equal(a, c)


def test_xavier_gives_unit_variance_projections_when_d_model_equals_d_k():
    """The reason d_model defaults to d_k: components of x W have variance ≈ 1."""
    rng = np.random.default_rng(1)
    d = 128
    W = xavier_uniform(d, d, rng)
    x = rng.standard_normal((2000, d))
    assert (x @ W).var() == pytest.approx(1.0, rel=0.05)


# --------------------------------------------------------------------------- retrieval_batch
def test_retrieval_batch_shapes_and_targets():
    b = retrieval_batch(50, 6, 12, 4, np.random.default_rng(0), noise=0.0)
    assert isinstance(b, RetrievalBatch)
    assert b.X_q.shape == (50, 1, 12)
    assert b.X_k.shape == (50, 6, 12)
    assert b.V.shape == (50, 6, 4)
    assert b.target.shape == (50,)
    assert np.issubdtype(b.target.dtype, np.integer)
    assert ((0 <= b.target) & (b.target < 6)).all()
    assert len(np.unique(b.target)) == 6  # every position is used
    for i in range(50):  # the query is exactly its target's key, and no other key
        assert np.array_equal(b.X_q[i, 0], b.X_k[i, b.target[i]])
        others = [j for j in range(6) if j != b.target[i]]
        assert not any(np.array_equal(b.X_q[i, 0], b.X_k[i, j]) for j in others)


def test_retrieval_batch_noise_has_the_requested_size():
    b = retrieval_batch(400, 4, 32, 2, np.random.default_rng(0), noise=0.3)
    diff = b.X_q[:, 0] - b.X_k[np.arange(400), b.target]
    assert diff.std() == pytest.approx(0.3, rel=0.03)
    assert b.X_k.var() == pytest.approx(1.0, rel=0.05)
    assert b.V.var() == pytest.approx(1.0, rel=0.1)


def test_retrieval_batch_is_deterministic_given_the_generator():
    a = retrieval_batch(8, 5, 6, 3, np.random.default_rng(11))
    b = retrieval_batch(8, 5, 6, 3, np.random.default_rng(11))
    c = retrieval_batch(8, 5, 6, 3, np.random.default_rng(12))
    for name in ("X_q", "X_k", "V", "target"):
        assert np.array_equal(getattr(a, name), getattr(b, name))
    assert not np.array_equal(a.X_k, c.X_k)


# --------------------------------------------------------------------------- loss and gradients
def naive_loss(W_Q, W_K, b, scale):
    """The loss with explicit loops over examples and keys."""
    total = 0.0
    n_b, n_keys, _ = b.X_k.shape
    d_v = b.V.shape[-1]
    for i in range(n_b):
        q = b.X_q[i, 0] @ W_Q
        s = [scale * float(q @ (b.X_k[i, j] @ W_K)) for j in range(n_keys)]
        m = max(s)
        e = [math.exp(x - m) for x in s]
        p = [x / sum(e) for x in e]
        out = sum(p[j] * b.V[i, j] for j in range(n_keys))
        total += float(((out - b.V[i, b.target[i]]) ** 2).sum())
    return total / (n_b * d_v)


def fd_grads(W_Q, W_K, b, scale, h=1e-6):
    grads = []
    for which in range(2):
        W = (W_Q, W_K)[which]
        g = np.zeros_like(W)
        for idx in np.ndindex(W.shape):
            plus, minus = W.copy(), W.copy()
            plus[idx] += h
            minus[idx] -= h
            args_p = (plus, W_K) if which == 0 else (W_Q, plus)
            args_m = (minus, W_K) if which == 0 else (W_Q, minus)
            loss_p = retrieval_loss_and_grads(*args_p, b, scale)[0]
            loss_m = retrieval_loss_and_grads(*args_m, b, scale)[0]
            g[idx] = (loss_p - loss_m) / (2 * h)
        grads.append(g)
    return grads


@pytest.mark.parametrize("scale_rule", SCALE_RULES)
def test_parameter_gradients_match_finite_differences(scale_rule):
    rng = np.random.default_rng(5)
    d_model, d_k = 6, 4
    b = retrieval_batch(7, 5, d_model, 3, rng, noise=0.2)
    # weights larger than Xavier so that the softmax is neither uniform nor saturated
    W_Q = 2.0 * xavier_uniform(d_model, d_k, rng)
    W_K = 2.0 * xavier_uniform(d_model, d_k, rng)
    scale = {"inverse_sqrt": 1 / math.sqrt(d_k), "none": 1.0, "inverse": 1 / d_k}[scale_rule]
    loss, dW_Q, dW_K = retrieval_loss_and_grads(W_Q, W_K, b, scale)
    assert loss == pytest.approx(naive_loss(W_Q, W_K, b, scale), rel=1e-12)
    fd_Q, fd_K = fd_grads(W_Q, W_K, b, scale)
    assert dW_Q.shape == dW_K.shape == (d_model, d_k)
    assert rel_err(dW_Q, fd_Q) <= 1e-6
    assert rel_err(dW_K, fd_K) <= 1e-6


def test_parameter_gradients_match_torch_autograd():
    torch = pytest.importorskip("torch", reason="torch is not installed; the autograd cross-check is skipped")
    rng = np.random.default_rng(8)
    b = retrieval_batch(9, 6, 8, 5, rng)
    W_Q, W_K = xavier_uniform(8, 8, rng), xavier_uniform(8, 8, rng)
    loss, dW_Q, dW_K = retrieval_loss_and_grads(W_Q, W_K, b, 0.5)
    tQ = torch.tensor(W_Q, requires_grad=True)
    tK = torch.tensor(W_K, requires_grad=True)
    Q = torch.tensor(b.X_q) @ tQ
    K = torch.tensor(b.X_k) @ tK
    O = torch.softmax(0.5 * Q @ K.transpose(-1, -2), dim=-1) @ torch.tensor(b.V)
    Y = torch.tensor(b.V[np.arange(9), b.target][:, None, :])
    t_loss = ((O - Y) ** 2).mean()
    t_loss.backward()
    assert loss == pytest.approx(t_loss.item(), rel=1e-12)
    np.testing.assert_allclose(dW_Q, tQ.grad.numpy(), rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(dW_K, tK.grad.numpy(), rtol=1e-10, atol=1e-14)


def test_parameter_gradients_equal_those_through_attention_backward():
    """The layer's backward pass is attention_backward's, with K never formed."""
    rng = np.random.default_rng(9)
    d_model, d_k, scale = 7, 5, 0.6
    b = retrieval_batch(6, 4, d_model, 3, rng)
    W_Q, W_K = 2 * xavier_uniform(d_model, d_k, rng), 2 * xavier_uniform(d_model, d_k, rng)
    loss, dW_Q, dW_K = retrieval_loss_and_grads(W_Q, W_K, b, scale)
    Q, K = b.X_q @ W_Q, b.X_k @ W_K  # (batch, 1, d_k), (batch, n_keys, d_k)
    O = scaled_dot_product_attention(Q, K, b.V, scale=scale)  # (batch, 1, d_v)
    err = O - b.V[np.arange(6), b.target][:, None, :]
    dQ, dK, _ = attention_backward(Q, K, b.V, 2 * err / err.size, scale=scale)
    assert loss == pytest.approx(float(np.mean(err**2)), rel=1e-12)
    np.testing.assert_allclose(dW_Q, np.einsum("bim,bik->mk", b.X_q, dQ), rtol=1e-10, atol=1e-15)
    np.testing.assert_allclose(dW_K, np.einsum("bjm,bjk->mk", b.X_k, dK), rtol=1e-10, atol=1e-15)


def test_ideal_weights_solve_the_task():
    """W_Q W_Kᵀ = c · I retrieves exactly: the task is solvable as documented."""
    rng = np.random.default_rng(0)
    b = retrieval_batch(64, 16, 32, 8, rng, noise=0.1)
    W = 3.0 * np.eye(32)
    loss, _, _ = retrieval_loss_and_grads(W, W, b, 1 / math.sqrt(32))
    assert loss < 1e-6


# --------------------------------------------------------------------------- train_retrieval
def test_training_reduces_the_loss_on_a_small_scaled_problem():
    run = train_retrieval(16, lr=1.0, steps=60, seed=0)
    assert isinstance(run, TrainingRun)
    assert run.losses.shape == run.accuracy.shape == (60,)
    assert not run.diverged
    assert run.losses[-10:].mean() < 0.3 * run.losses[:5].mean()
    assert run.test_loss < 0.2 and run.val_loss < 0.2
    assert run.test_accuracy > 0.9 and run.val_accuracy > 0.9
    assert run.init_score_grad_norms.shape == (256,)
    assert (run.d_k, run.scale_rule, run.lr, run.seed, run.steps, run.optimizer) == (
        16, "inverse_sqrt", 1.0, 0, 60, "sgd")  # fmt: skip


def test_validation_and_test_batches_are_different_draws():
    run = train_retrieval(8, lr=0.5, steps=10, seed=2, eval_batch=64)
    assert run.val_loss != run.test_loss
    assert run.init_score_grad_norms.shape == (64,)


def test_adam_trains_too():
    run = train_retrieval(16, lr=0.03, steps=60, seed=0, optimizer="adam")
    assert run.optimizer == "adam"
    assert run.test_loss < 0.3 * run.losses[0]


def test_runs_are_deterministic_given_the_seed():
    a = train_retrieval(8, lr=0.5, steps=15, seed=3)
    b = train_retrieval(8, lr=0.5, steps=15, seed=3)
    c = train_retrieval(8, lr=0.5, steps=15, seed=4)
    assert np.array_equal(a.losses, b.losses)
    assert np.array_equal(a.init_score_grad_norms, b.init_score_grad_norms)
    assert a.test_loss == b.test_loss and a.val_loss == b.val_loss
    assert not np.array_equal(a.losses, c.losses)


def test_same_seed_gives_the_same_start_and_data_whatever_the_lr_or_optimizer():
    runs = [
        train_retrieval(8, lr=lr, steps=3, seed=1, optimizer=opt)
        for lr in (0.01, 1.0)
        for opt in OPTIMIZERS
    ]
    for r in runs[1:]:
        assert r.losses[0] == runs[0].losses[0]  # same weights, same first batch
        assert np.array_equal(r.init_score_grad_norms, runs[0].init_score_grad_norms)


def test_training_follows_retrieval_loss_and_grads_step_by_step():
    """The vectorised trainer takes exactly the SGD steps of the documented loss and gradients."""
    d_k, lr, steps = 6, 0.7, 4
    run = train_retrieval(d_k, lr=lr, steps=steps, seed=5, batch=8, n_keys=5, d_v=3, eval_batch=16)
    init_ss, data_ss, val_ss, test_ss = np.random.SeedSequence(5).spawn(4)
    init_rng, data_rng = np.random.default_rng(init_ss), np.random.default_rng(data_ss)
    W_Q, W_K = xavier_uniform(d_k, d_k, init_rng), xavier_uniform(d_k, d_k, init_rng)
    scale = 1 / math.sqrt(d_k)
    for t in range(steps):
        b = retrieval_batch(8, 5, d_k, 3, data_rng)
        loss, dW_Q, dW_K = retrieval_loss_and_grads(W_Q, W_K, b, scale)
        assert run.losses[t] == pytest.approx(loss, rel=1e-12)
        W_Q, W_K = W_Q - lr * dW_Q, W_K - lr * dW_K
    val = retrieval_batch(16, 5, d_k, 3, np.random.default_rng(val_ss))
    test = retrieval_batch(16, 5, d_k, 3, np.random.default_rng(test_ss))
    assert run.val_loss == pytest.approx(retrieval_loss_and_grads(W_Q, W_K, val, scale)[0], rel=1e-12)
    assert run.test_loss == pytest.approx(retrieval_loss_and_grads(W_Q, W_K, test, scale)[0], rel=1e-12)


def test_final_saturation_and_weight_growth_follow_the_trained_weights():
    """``final_saturated_fraction`` and ``weight_growth`` from the weights of the documented SGD steps."""
    d_k, lr, steps = 64, 1.0, 5
    run = train_retrieval(d_k, scale_rule="none", lr=lr, steps=steps, seed=2, batch=8, eval_batch=64)
    init_ss, data_ss, val_ss, _ = np.random.SeedSequence(2).spawn(4)
    init_rng, data_rng = np.random.default_rng(init_ss), np.random.default_rng(data_ss)
    W_Q, W_K = xavier_uniform(d_k, d_k, init_rng), xavier_uniform(d_k, d_k, init_rng)
    start = np.linalg.norm(W_Q @ W_K.T)
    for _ in range(steps):
        _, dW_Q, dW_K = retrieval_loss_and_grads(W_Q, W_K, retrieval_batch(8, 16, d_k, 16, data_rng), 1.0)
        W_Q, W_K = W_Q - lr * dW_Q, W_K - lr * dW_K
    val = retrieval_batch(64, 16, d_k, 16, np.random.default_rng(val_ss))
    _, P = scaled_dot_product_attention(val.X_q @ W_Q, val.X_k @ W_K, val.V, scale=1.0, return_weights=True)
    assert run.final_saturated_fraction == pytest.approx(np.mean(P.max(axis=-1) > 0.99))
    assert 0 < run.final_saturated_fraction < 1
    assert run.weight_growth == pytest.approx(np.linalg.norm(W_Q @ W_K.T) / start, rel=1e-9)
    assert run.weight_growth > 1  # this rate makes the scores larger
    small = train_retrieval(d_k, lr=1e-6, steps=2, seed=2)
    assert small.weight_growth == pytest.approx(1.0, abs=1e-5)
    assert small.final_saturated_fraction == small.init_saturated_fraction == 0.0
    sweep = learning_rate_sweep((8,), (0.1, 1.0), seeds=(0,), steps=3)
    grid = sweep.grid(8, "none", "weight_growth")
    assert grid[0, 1] == sweep.run(8, "none", 0, 1.0).weight_growth


def test_adam_follows_the_textbook_update_step_by_step():
    """Adam with bias correction, β1 = 0.9, β2 = 0.999, ε = 1e-8, as in Kingma and Ba's Algorithm 1."""
    d_k, lr, steps = 5, 0.05, 4
    run = train_retrieval(d_k, lr=lr, steps=steps, seed=7, batch=8, n_keys=4, d_v=3, eval_batch=8,
                          optimizer="adam", scale_rule="none")  # fmt: skip
    init_ss, data_ss, _, _ = np.random.SeedSequence(7).spawn(4)
    init_rng, data_rng = np.random.default_rng(init_ss), np.random.default_rng(data_ss)
    W = [xavier_uniform(d_k, d_k, init_rng), xavier_uniform(d_k, d_k, init_rng)]
    m, v = [np.zeros_like(w) for w in W], [np.zeros_like(w) for w in W]
    for t in range(1, steps + 1):
        b = retrieval_batch(8, 4, d_k, 3, data_rng)
        loss, *g = retrieval_loss_and_grads(W[0], W[1], b, 1.0)
        assert run.losses[t - 1] == pytest.approx(loss, rel=1e-10)
        for i in range(2):
            m[i] = 0.9 * m[i] + 0.1 * g[i]
            v[i] = 0.999 * v[i] + 0.001 * g[i] ** 2
            W[i] = W[i] - lr * (m[i] / (1 - 0.9**t)) / (np.sqrt(v[i] / (1 - 0.999**t)) + 1e-8)


def test_unscaled_rows_saturate_at_large_d_k_and_scaled_do_not():
    scaled = train_retrieval(256, scale_rule="inverse_sqrt", lr=1.0, steps=1)
    unscaled = train_retrieval(256, scale_rule="none", lr=1.0, steps=1)
    inverse = train_retrieval(256, scale_rule="inverse", lr=1.0, steps=1)
    assert unscaled.init_saturated_fraction > 0.3
    assert scaled.init_saturated_fraction < 0.05
    assert unscaled.init_saturated_fraction > scaled.init_saturated_fraction
    assert unscaled.init_max_weight_mean > 0.8 > 0.5 > scaled.init_max_weight_mean
    assert inverse.init_max_weight_mean < scaled.init_max_weight_mean  # 1/d_k: nearly uniform
    # the gradient reaching the softmax input collapses where it saturates
    assert np.median(unscaled.init_score_grad_norms) < 0.1 * np.median(scaled.init_score_grad_norms)


@pytest.mark.parametrize("optimizer", OPTIMIZERS)
def test_divergence_is_reported_and_the_curve_stops(optimizer):
    run = train_retrieval(8, lr=1e300, steps=5, seed=0, optimizer=optimizer)
    assert run.diverged
    assert math.isnan(run.val_loss) and math.isnan(run.test_loss)
    assert run.val_accuracy == run.test_accuracy == 0.0
    assert math.isnan(run.final_saturated_fraction) and math.isnan(run.weight_growth)
    assert 0 < len(run.losses) < 5
    assert np.isfinite(run.losses).all()
    assert len(run.accuracy) == len(run.losses)


# --------------------------------------------------------------------------- median_rate
def test_median_rate_is_the_middle_grid_value_not_the_mean():
    rates = [0.1, 3.0, 0.3, 0.3, 10.0]  # unsorted; mean 2.74, median 0.3
    assert median_rate(rates) == 0.3
    assert median_rate([1.0]) == 1.0
    assert median_rate([3.0, 1.0, 0.1]) == 1.0
    assert median_rate((0.1, 1.0)) == pytest.approx(math.sqrt(0.1))  # geometric midpoint of the two middle
    assert median_rate([0.1, 0.3, 3.0, 10.0]) == pytest.approx(math.sqrt(0.9))
    with pytest.raises(ValueError, match=r"rates must not be empty"):
        median_rate([])
    with pytest.raises(ValueError, match=r"rates must be positive and finite; got \[-1.0, 1.0\]"):
        median_rate([1.0, -1.0])


# --------------------------------------------------------------------------- sweep
def fake_run(d_k, rule, lr, val_loss, test_loss=None, *, seed=0, diverged=False, test_accuracy=0.5):
    return TrainingRun(
        d_k=d_k, scale_rule=rule, lr=lr, seed=seed, steps=1, optimizer="sgd",
        losses=np.array([1.0]), accuracy=np.array([0.0]),
        init_saturated_fraction=0.25, init_score_grad_norms=np.array([0.1, 0.3]),
        init_max_weight_mean=0.5, val_loss=val_loss, val_accuracy=0.5,
        test_loss=val_loss if test_loss is None else test_loss, test_accuracy=test_accuracy,
        diverged=diverged,
    )  # fmt: skip


def test_best_picks_the_lowest_validation_loss_among_non_diverged_runs():
    runs = (
        fake_run(8, "none", 0.1, 0.5),
        fake_run(8, "none", 0.3, 0.2),
        fake_run(8, "none", 1.0, math.nan, diverged=True),
        fake_run(8, "none", 3.0, 0.9),
        fake_run(8, "inverse_sqrt", 0.1, 0.05),
    )
    sweep = SweepResult(runs=runs)
    assert sweep.best(8, "none", 0).lr == 0.3
    assert sweep.best(8, "inverse_sqrt", 0).lr == 0.1
    assert sweep.d_ks == (8,) and sweep.scale_rules == ("none", "inverse_sqrt") and sweep.seeds == (0,)
    assert sweep.lrs == (0.1, 0.3, 1.0, 3.0)


def test_the_rate_is_chosen_on_the_validation_batch_and_reported_on_the_test_batch():
    """Validation prefers 0.3, the test batch would prefer 1.0: the choice must not look at it."""
    runs = (
        fake_run(8, "none", 0.3, val_loss=0.10, test_loss=0.40, test_accuracy=0.7),
        fake_run(8, "none", 1.0, val_loss=0.20, test_loss=0.05, test_accuracy=0.9),
    )
    sweep = SweepResult(runs=runs)
    best = sweep.best(8, "none", 0)
    assert best.lr == 0.3
    rates = sweep.best_rates(8, "none")
    assert rates.lrs == (0.3,)
    assert rates.test_losses == (0.40,)  # the chosen run's test loss, not the lowest test loss
    assert rates.test_accuracies == (0.7,)


def test_best_rates_gives_the_median_and_range_over_seeds():
    per_seed_best = [0.1, 3.0, 0.3, 0.3, 10.0]  # median 0.3 (the mean would be 2.74)
    grid = (0.1, 0.3, 1.0, 3.0, 10.0)
    runs = []
    for seed, best in enumerate(per_seed_best):
        for lr in grid:
            val = 0.01 if lr == best else 0.5 + lr / 100
            runs.append(fake_run(8, "none", lr, val, test_loss=val + 0.01 * seed, seed=seed))
    sweep = SweepResult(runs=tuple(runs))
    b = sweep.best_rates(8, "none")
    assert isinstance(b, BestRates)
    assert b.seeds == (0, 1, 2, 3, 4)
    assert b.lrs == tuple(per_seed_best)
    assert b.median_lr == 0.3
    assert b.lr_range == (0.1, 10.0)
    assert b.test_losses == pytest.approx((0.01, 0.02, 0.03, 0.04, 0.05))
    assert b.median_test_loss == pytest.approx(0.03)
    assert b.median_test_accuracy == 0.5
    assert sweep.grid(8, "none").shape == (5, 5)
    assert sweep.grid(8, "none")[1, grid.index(3.0)] == 0.01
    table = sweep.table().splitlines()
    assert len(table) == 2
    assert table[0].split() == ["d_k", "scale", "best", "lr", "per", "seed", "median", "range"]
    assert table[1].split() == ["8", "none", "0.1,", "3,", "0.3,", "0.3,", "10", "0.3", "0.1", "to", "10"]


def test_best_and_table_with_all_runs_diverged():
    sweep = SweepResult(runs=(fake_run(8, "none", 1.0, math.nan, diverged=True),))
    with pytest.raises(ValueError, match=r"all 1 runs with d_k=8, scale_rule='none' and seed=0 diverged"):
        sweep.best(8, "none", 0)
    with pytest.raises(ValueError, match=r"no run with d_k=16 and scale_rule='none'"):
        sweep.best(16, "none", 0)
    with pytest.raises(ValueError, match=r"no run with d_k=8, scale_rule='none' and seed=3"):
        sweep.best(8, "none", 3)
    with pytest.raises(ValueError, match=r"no run with d_k=8, scale_rule='none', seed=0, lr=0.5"):
        sweep.run(8, "none", 0, 0.5)
    with pytest.raises(ValueError, match=r"field must be one of"):
        sweep.grid(8, "none", "losses")
    assert "diverged" in sweep.table()


def test_learning_rate_sweep_runs_every_combination_in_order():
    rules = ("inverse_sqrt", "none", "inverse")
    sweep = learning_rate_sweep((4, 8), (0.1, 1.0), scale_rules=rules, seeds=(3, 1), steps=3)
    keys = [(r.d_k, r.scale_rule, r.seed, r.lr) for r in sweep.runs]
    assert keys == [(d, s, seed, lr) for d in (4, 8) for s in rules for seed in (3, 1) for lr in (0.1, 1.0)]
    assert all(r.steps == 3 for r in sweep.runs)
    assert sweep.seeds == (3, 1)
    best = sweep.best(8, "none", 1)
    same = [r for r in sweep.runs if r.d_k == 8 and r.scale_rule == "none" and r.seed == 1]
    assert best.val_loss == min(r.val_loss for r in same)
    assert len(sweep.table().splitlines()) == 1 + 2 * 3


def test_a_sweep_run_equals_the_same_run_trained_alone():
    """Batching runs together changes no run: same start, same data, same steps."""
    kw = dict(steps=8, batch=8, n_keys=6, eval_batch=32)
    sweep = learning_rate_sweep((6,), (0.3, 3.0, 1e300), seeds=(0, 2), **kw)
    for r in sweep.runs:
        alone = train_retrieval(6, scale_rule=r.scale_rule, lr=r.lr, seed=r.seed, **kw)
        assert r.diverged == alone.diverged == (r.lr == 1e300)
        np.testing.assert_allclose(r.losses, alone.losses, rtol=1e-9)
        np.testing.assert_allclose(r.init_score_grad_norms, alone.init_score_grad_norms, rtol=1e-12)
        if not r.diverged:
            assert r.val_loss == pytest.approx(alone.val_loss, rel=1e-9)
            assert r.test_loss == pytest.approx(alone.test_loss, rel=1e-9)
            assert r.test_accuracy == alone.test_accuracy


def test_best_rates_reports_each_seeds_runner_up_and_lead():
    runs = (
        fake_run(8, "none", 0.1, 0.5, seed=0),
        fake_run(8, "none", 0.3, 0.2, seed=0),
        fake_run(8, "none", 1.0, 0.1, seed=0, diverged=True),  # diverged: neither winner nor runner-up
        fake_run(8, "none", 0.1, 0.3, seed=1),
        fake_run(8, "none", 0.3, 0.3, seed=1),  # a tie: the first in sweep order wins, by a lead of 1
        fake_run(8, "none", 1.0, math.nan, seed=1, diverged=True),
        fake_run(8, "none", 0.1, 0.4, seed=2),  # the only run that did not diverge
        fake_run(8, "none", 0.3, math.nan, seed=2, diverged=True),
    )
    b = SweepResult(runs=runs).best_rates(8, "none")
    assert b.lrs == (0.3, 0.1, 0.1)
    assert b.runner_up_lrs == (0.1, 0.3, None)
    assert b.leads == pytest.approx((2.5, 1.0, math.inf))


def test_lead_of_a_zero_loss_winner():
    runs = (fake_run(8, "none", 0.1, 0.0), fake_run(8, "none", 0.3, 0.2),
            fake_run(8, "none", 1.0, 0.0, seed=1), fake_run(8, "none", 3.0, 0.0, seed=1))  # fmt: skip
    assert SweepResult(runs=runs).best_rates(8, "none").leads == (math.inf, 1.0)


# --------------------------------------------------------------------------- init_ulps, relative_change
def test_init_ulps_moves_every_initial_weight_by_that_many_ulps():
    """The run starts from the Xavier draw moved k floats up (or down); the rest of the run is unchanged."""
    kw = dict(lr=0.5, steps=3, seed=1, batch=4, n_keys=3, d_v=2, eval_batch=64)
    base = train_retrieval(4, **kw)
    assert train_retrieval(4, init_ulps=0, **kw).losses.tolist() == base.losses.tolist()
    init_ss, data_ss, _, _ = np.random.SeedSequence(1).spawn(4)
    rng = np.random.default_rng(init_ss)
    W_Q, W_K = xavier_uniform(4, 4, rng), xavier_uniform(4, 4, rng)
    b = retrieval_batch(4, 3, 4, 2, np.random.default_rng(data_ss))
    for k in (1, -2):
        W_Q_k, W_K_k = W_Q, W_K
        for _ in range(abs(k)):
            W_Q_k, W_K_k = (np.nextafter(w, math.copysign(math.inf, k)) for w in (W_Q_k, W_K_k))
        assert not np.array_equal(W_Q_k, W_Q)
        loss0 = retrieval_loss_and_grads(W_Q_k, W_K_k, b, 0.5)[0]
        moved = train_retrieval(4, init_ulps=k, **kw)
        assert moved.losses[0] == loss0  # the first step sees exactly the shifted weights
        assert moved.losses[0] == pytest.approx(base.losses[0], rel=1e-13)
        # and so does the diagnosis at initialisation: last bits move, nothing more
        assert not np.array_equal(moved.init_score_grad_norms, base.init_score_grad_norms)
        np.testing.assert_allclose(moved.init_score_grad_norms, base.init_score_grad_norms, rtol=1e-12)


def test_a_sweep_with_init_ulps_equals_its_runs_trained_alone():
    kw = dict(steps=4, batch=8, n_keys=5, eval_batch=16, init_ulps=1)
    sweep = learning_rate_sweep((6,), (0.3, 3.0), seeds=(0, 2), **kw)
    for r in sweep.runs:
        alone = train_retrieval(6, scale_rule=r.scale_rule, lr=r.lr, seed=r.seed, **kw)
        np.testing.assert_allclose(r.losses, alone.losses, rtol=1e-9)
        assert r.val_loss == pytest.approx(alone.val_loss, rel=1e-9)


def test_relative_change_is_zero_for_a_rerun_and_small_for_a_small_rate():
    kw = dict(steps=10, batch=8, n_keys=5, eval_batch=32, seeds=(0, 1))
    a = learning_rate_sweep((8,), (0.1, 1.0), **kw)
    same = learning_rate_sweep((8,), (0.1, 1.0), **kw)
    moved = learning_rate_sweep((8,), (0.1, 1.0), init_ulps=1, **kw)
    for rule in ("inverse_sqrt", "none"):
        assert (a.relative_change(same, 8, rule) == 0).all()
        change = a.relative_change(moved, 8, rule)
        assert change.shape == (2, 2)
        assert (change < 1e-9).all()
        assert (change > 0).any()  # one ulp does reach the loss
        expect = np.abs(moved.grid(8, rule) - a.grid(8, rule)) / a.grid(8, rule)
        np.testing.assert_array_equal(change, expect)


def test_relative_change_matches_runs_by_seed_and_rate_and_marks_divergence():
    mine = SweepResult(runs=(
        fake_run(8, "none", 0.1, 0.5, seed=0), fake_run(8, "none", 1.0, 0.2, seed=0),
        fake_run(8, "none", 0.1, 0.4, seed=1), fake_run(8, "none", 1.0, math.nan, seed=1, diverged=True),
    ))  # fmt: skip
    theirs = SweepResult(runs=(  # other order of seeds and rates
        fake_run(8, "none", 1.0, math.nan, seed=1, diverged=True), fake_run(8, "none", 0.1, 0.5, seed=1),
        fake_run(8, "none", 1.0, math.nan, seed=0, diverged=True), fake_run(8, "none", 0.1, 0.55, seed=0),
    ))  # fmt: skip
    change = mine.relative_change(theirs, 8, "none")
    np.testing.assert_allclose(change, [[0.1, math.inf], [0.25, 0.0]])


def test_relative_change_rejects_a_different_sweep():
    a = SweepResult(runs=(fake_run(8, "none", 0.1, 0.5),))
    with pytest.raises(ValueError, match=r"differ in seeds or learning rates .*rates \(0.1,\) and \(0.3,\)"):
        a.relative_change(SweepResult(runs=(fake_run(8, "none", 0.3, 0.5),)), 8, "none")
    with pytest.raises(ValueError, match=r"no run with d_k=16"):
        a.relative_change(a, 16, "none")
    with pytest.raises(TypeError, match=r"other must be a SweepResult; got tuple"):
        a.relative_change(a.runs, 8, "none")


# --------------------------------------------------------------------------- identity_form_accuracy
@pytest.mark.parametrize("d_k", [2, 8, 64])
def test_identity_form_accuracy_is_that_of_dot_products_on_the_seeds_test_batch(d_k):
    _, _, _, test_ss = np.random.SeedSequence(3).spawn(4)
    b = retrieval_batch(64, 6, d_k, 5, np.random.default_rng(test_ss))
    dots = [[float(b.X_q[i, 0] @ b.X_k[i, j]) for j in range(6)] for i in range(64)]
    hits = [int(np.argmax(row) == b.target[i]) for i, row in enumerate(dots)]
    assert identity_form_accuracy(d_k, 3, n_keys=6, d_v=5, eval_batch=64) == sum(hits) / 64


def test_identity_form_accuracy_equals_a_layer_with_that_form():
    """A layer whose W_Q W_Kᵀ is c · I picks the same keys: its accuracy on the same batch."""
    _, _, _, test_ss = np.random.SeedSequence(0).spawn(4)
    b = retrieval_batch(256, 16, 8, 16, np.random.default_rng(test_ss))
    W = 2.0 * np.eye(8)
    S = np.einsum("bd,bnd->bn", b.X_q[:, 0] @ W, b.X_k @ W)
    acc = float(np.mean(S.argmax(axis=-1) == b.target))
    assert identity_form_accuracy(8, 0) == acc
    assert 0.5 < acc < 1.0  # at d_k = 8 distractors sometimes win
    assert identity_form_accuracy(128, 0) == 1.0


@pytest.mark.parametrize("d_k", [2, 8, 64])
def test_nearest_key_accuracy_is_that_of_distances_on_the_seeds_test_batch(d_k):
    _, _, _, test_ss = np.random.SeedSequence(3).spawn(4)
    b = retrieval_batch(64, 6, d_k, 5, np.random.default_rng(test_ss))
    dist = [[math.dist(b.X_q[i, 0], b.X_k[i, j]) for j in range(6)] for i in range(64)]
    hits = [int(np.argmin(row) == b.target[i]) for i, row in enumerate(dist)]
    assert nearest_key_accuracy(d_k, 3, n_keys=6, d_v=5, eval_batch=64) == sum(hits) / 64


def test_nearest_key_is_the_dot_product_minus_half_the_squared_norm():
    """Distance ranks keys by x_q · x_j − ‖x_j‖²/2, the term a dot-product score lacks."""
    _, _, _, test_ss = np.random.SeedSequence(1).spawn(4)
    b = retrieval_batch(256, 16, 4, 16, np.random.default_rng(test_ss))
    score = np.einsum("bd,bnd->bn", b.X_q[:, 0], b.X_k) - 0.5 * np.sum(b.X_k**2, axis=-1)
    assert nearest_key_accuracy(4, 1) == float(np.mean(score.argmax(axis=-1) == b.target))


def test_at_small_width_the_nearest_key_succeeds_where_the_dot_product_fails():
    for seed in range(5):
        assert nearest_key_accuracy(8, seed) == 1.0
        assert identity_form_accuracy(8, seed) < 0.9


@pytest.mark.parametrize("reference", [identity_form_accuracy, nearest_key_accuracy])
@pytest.mark.parametrize(
    ("args", "kwargs", "exc", "match"),
    [
        ((0, 0), {}, ValueError, r"d_k must be positive; got 0"),
        ((8, -1), {}, ValueError, r"seed must be non-negative; got -1"),
        ((8, 0), {"n_keys": 1}, ValueError, r"n_keys must be at least 2"),
        ((8, 0), {"eval_batch": 2.0}, TypeError, r"eval_batch must be an integer"),
        ((8, 0), {"d_model": 8.0}, TypeError, r"d_model must be an integer"),
    ],
    ids=["d_k_0", "seed_negative", "one_key", "eval_batch_float", "d_model_float"],
)
def test_reference_accuracies_reject_bad_inputs(reference, args, kwargs, exc, match):
    with pytest.raises(exc, match=match):
        reference(*args, **kwargs)


# --------------------------------------------------------------------------- bad inputs
@pytest.mark.parametrize(
    ("kwargs", "exc", "match"),
    [
        (
            {"scale_rule": "sqrt"},
            ValueError,
            r"scale_rule must be one of \('inverse_sqrt', 'none', 'inverse'\); got 'sqrt'",
        ),
        ({"optimizer": "rmsprop"}, ValueError, r"optimizer must be one of \('sgd', 'adam'\); got 'rmsprop'"),
        ({"lr": 0.0}, ValueError, r"lr must be positive; got 0.0"),
        ({"lr": -0.1}, ValueError, r"lr must be positive; got -0.1"),
        ({"lr": math.inf}, ValueError, r"lr must be finite"),
        ({"lr": "1"}, TypeError, r"lr must be a real number; got str"),
        ({"steps": 0}, ValueError, r"steps must be positive; got 0"),
        ({"steps": 2.5}, TypeError, r"steps must be an integer; got float"),
        ({"batch": -1}, ValueError, r"batch must be positive; got -1"),
        ({"n_keys": 1}, ValueError, r"n_keys must be at least 2 .*got 1"),
        ({"d_model": 0}, ValueError, r"d_model must be positive; got 0"),
        ({"seed": -1}, ValueError, r"seed must be non-negative; got -1"),
        ({"seed": 1.0}, TypeError, r"seed must be an integer; got float"),
        ({"eval_batch": 0}, ValueError, r"eval_batch must be positive; got 0"),
        ({"init_ulps": 0.5}, TypeError, r"init_ulps must be an integer; got float"),
        ({"init_ulps": True}, TypeError, r"init_ulps must be an integer; got bool"),
        ({"init_ulps": 1001}, ValueError, r"init_ulps must be between -1000 and 1000; got 1001"),
    ],
)
def test_train_retrieval_rejects_bad_inputs(kwargs, exc, match):
    args = {"lr": 0.1, "steps": 2} | kwargs
    with pytest.raises(exc, match=match):
        train_retrieval(8, **args)


def test_train_retrieval_rejects_bad_d_k():
    with pytest.raises(ValueError, match=r"d_k must be positive; got 0"):
        train_retrieval(0, lr=0.1)


def test_xavier_and_batch_reject_bad_inputs():
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match=r"fan_in must be positive; got 0"):
        xavier_uniform(0, 3, rng)
    with pytest.raises(TypeError, match=r"rng must be a numpy.random.Generator .*got int"):
        xavier_uniform(3, 3, 0)
    with pytest.raises(ValueError, match=r"n_keys must be at least 2"):
        retrieval_batch(4, 1, 3, 3, rng)
    with pytest.raises(ValueError, match=r"noise must be non-negative; got -0.1"):
        retrieval_batch(4, 2, 3, 3, rng, noise=-0.1)
    with pytest.raises(TypeError, match=r"rng must be a numpy.random.Generator .*got RandomState"):
        retrieval_batch(4, 2, 3, 3, np.random.RandomState(0))


def test_loss_and_grads_reject_bad_inputs():
    rng = np.random.default_rng(0)
    b = retrieval_batch(4, 3, 5, 2, rng)
    W = xavier_uniform(5, 4, rng)
    with pytest.raises(ValueError, match=r"W_Q has d_model=6 rows but the batch's embeddings have d_model=5"):
        retrieval_loss_and_grads(np.ones((6, 4)), np.ones((6, 4)), b, 1.0)
    with pytest.raises(ValueError, match=r"same shape .*W_Q \(5, 4\), W_K \(5, 3\)"):
        retrieval_loss_and_grads(W, W[:, :3], b, 1.0)
    with pytest.raises(ValueError, match=r"must be 2-D .*W_Q \(5,\)"):
        retrieval_loss_and_grads(W[:, 0], W, b, 1.0)
    with pytest.raises(ValueError, match=r"scale must be positive; got -1.0"):
        retrieval_loss_and_grads(W, W, b, -1.0)
    with pytest.raises(TypeError, match=r"batch must be a RetrievalBatch .*got tuple"):
        retrieval_loss_and_grads(W, W, (b.X_q, b.X_k), 1.0)
    with pytest.raises(ValueError, match=r"the scores overflow float64"):
        retrieval_loss_and_grads(W * 1e200, W * 1e200, b, 1.0)


def test_learning_rate_sweep_rejects_bad_inputs():
    with pytest.raises(ValueError, match=r"lrs must not be empty"):
        learning_rate_sweep((8,), ())
    with pytest.raises(ValueError, match=r"d_ks must not be empty"):
        learning_rate_sweep((), (0.1,))
    with pytest.raises(ValueError, match=r"seeds must not be empty"):
        learning_rate_sweep((8,), (0.1,), seeds=())
    with pytest.raises(ValueError, match=r"seeds must be distinct; got \(1, 2, 1\)"):
        learning_rate_sweep((8,), (0.1,), seeds=(1, 2, 1))
    with pytest.raises(ValueError, match=r"seed must be non-negative; got -1"):
        learning_rate_sweep((8,), (0.1,), seeds=(-1,))
    with pytest.raises(ValueError, match=r"lr must be positive; got -0.1"):
        learning_rate_sweep((8,), (-0.1,))
    with pytest.raises(ValueError, match=r"scale_rule must be one of .*got 'root'"):
        learning_rate_sweep((8,), (0.1,), scale_rules=("root",))
    with pytest.raises(TypeError, match=r"lr is swept; pass it in d_ks, lrs, scale_rules or seeds"):
        learning_rate_sweep((8,), (0.1,), lr=0.3)
    with pytest.raises(TypeError, match=r"seed is swept"):
        learning_rate_sweep((8,), (0.1,), seed=0)
    with pytest.raises(ValueError, match=r"eval_batch must be positive; got 0"):
        learning_rate_sweep((8,), (0.1,), eval_batch=0)
    with pytest.raises(TypeError, match=r"unexpected keyword argument 'stepz'"):
        learning_rate_sweep((8,), (0.1,), stepz=3)


def test_scaling_is_a_reparametrisation_of_sgd():
    """Scaled SGD at lr η equals unscaled SGD at lr η·scale from weights √scale times smaller."""
    rng = np.random.default_rng(0)
    d_k, scale, lr = 16, 0.25, 2.0
    W = [xavier_uniform(d_k, d_k, rng) for _ in range(2)]
    U = [math.sqrt(scale) * w for w in W]
    for _ in range(5):
        b = retrieval_batch(16, 8, d_k, 4, rng)
        loss_w, *g_w = retrieval_loss_and_grads(W[0], W[1], b, scale)
        loss_u, *g_u = retrieval_loss_and_grads(U[0], U[1], b, 1.0)
        assert loss_w == pytest.approx(loss_u, rel=1e-12)
        W = [w - lr * g for w, g in zip(W, g_w, strict=True)]
        U = [u - lr * scale * g for u, g in zip(U, g_u, strict=True)]
    np.testing.assert_allclose(U[0], math.sqrt(scale) * W[0], rtol=1e-10, atol=1e-12)
