"""Tests of attnlib.grad.attention_backward.

1. central finite differences of ``L = Σ out ⊙ dO`` (whose gradients are
   exactly what ``attention_backward`` returns) on random float64 inputs,
   entry by entry, with non-square shapes, batch dimensions, broadcasting and
   a custom scale;
2. a naive version of the backward pass with explicit loops and the full
   softmax Jacobian of each row;
3. agreement with PyTorch's autograd through
   ``torch.nn.functional.scaled_dot_product_attention`` (skipped without torch);
4. a catalogue of bad inputs, each checked for its type and message.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from cases import case

from attnlib.core import scaled_dot_product_attention
from attnlib.grad import attention_backward

sdpa = scaled_dot_product_attention


def loss(Q, K, V, dO, scale):
    return float((sdpa(Q, K, V, scale=scale) * dO).sum())


def fd_gradients(Q, K, V, dO, scale=None, h=1e-6):
    """Central finite-difference gradients of ``loss`` with respect to Q, K and V."""
    grads = []
    args = [Q, K, V]
    for which in range(3):
        x = args[which]
        g = np.zeros_like(x)
        for idx in np.ndindex(x.shape):
            plus, minus = x.copy(), x.copy()
            plus[idx] += h
            minus[idx] -= h
            a_plus = list(args)
            a_minus = list(args)
            a_plus[which], a_minus[which] = plus, minus
            g[idx] = (loss(*a_plus, dO, scale) - loss(*a_minus, dO, scale)) / (2 * h)
        grads.append(g)
    return grads


def rel_err(a, b):
    return np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-300)


def naive_backward_2d(Q, K, V, dO, scale):
    """Backward pass of one (n_q, d_k) problem with loops and each row's full softmax Jacobian."""
    n_q, d_k = Q.shape
    n_k, d_v = V.shape
    S = [[scale * sum(Q[i, a] * K[j, a] for a in range(d_k)) for j in range(n_k)] for i in range(n_q)]
    P = []
    for row in S:
        e = [math.exp(s - max(row)) for s in row]
        P.append([v / sum(e) for v in e])
    dV = np.zeros((n_k, d_v))
    dS = np.zeros((n_q, n_k))
    for i in range(n_q):
        dP_i = [sum(dO[i, c] * V[j, c] for c in range(d_v)) for j in range(n_k)]
        for j in range(n_k):
            for c in range(d_v):
                dV[j, c] += P[i][j] * dO[i, c]
            # dS_ij = Σ_l J_lj dP_il, J_lj = P_l (δ_lj − P_j)
            dS[i, j] = sum(P[i][l] * ((1.0 if l == j else 0.0) - P[i][j]) * dP_i[l] for l in range(n_k))
    dQ = np.array([[scale * sum(dS[i, j] * K[j, a] for j in range(n_k)) for a in range(d_k)]
                   for i in range(n_q)])
    dK = np.array([[scale * sum(dS[i, j] * Q[i, a] for i in range(n_q)) for a in range(d_k)]
                   for j in range(n_k)])
    return dQ, dK, dV


# Shapes (Q, K, V) with n_q != n_k, d_v != d_k, batch dims and broadcasting.
SHAPES = {
    "2d_square": ((4, 3), (4, 3), (4, 3)),
    "2d_non_square": ((3, 2), (5, 2), (5, 4)),
    "one_query_one_key": ((1, 3), (1, 3), (1, 2)),
    "batch": ((2, 3, 4), (2, 5, 4), (2, 5, 2)),
    "two_batch_dims": ((2, 2, 3, 2), (2, 2, 4, 2), (2, 2, 4, 3)),
    "broadcast_K_V": ((3, 2, 4), (2, 4), (1, 2, 3)),
    "broadcast_Q": ((1, 2, 3), (2, 3, 5, 3), (3, 5, 2)),
}


def random_problem(seed, shapes, scale_factor=1.0):
    rng = np.random.default_rng(seed)
    Q, K, V = (scale_factor * rng.standard_normal(s) for s in shapes)
    batch = np.broadcast_shapes(*(s[:-2] for s in shapes))
    dO = rng.standard_normal(batch + (shapes[0][-2], shapes[2][-1]))
    return Q, K, V, dO


@pytest.mark.parametrize("scale", [None, 0.3, 2.0])
@pytest.mark.parametrize("shape_id", list(SHAPES))
def test_gradients_equal_central_finite_differences(shape_id, scale):
    shapes = SHAPES[shape_id]
    Q, K, V, dO = random_problem(len(shape_id), shapes)
    grads = attention_backward(Q, K, V, dO, scale=scale)
    for name, g, g_fd, x in zip("QKV", grads, fd_gradients(Q, K, V, dO, scale), (Q, K, V), strict=True):
        assert g.shape == x.shape, name
        assert g.dtype == np.float64
        assert rel_err(g, g_fd) <= 1e-6, (name, rel_err(g, g_fd))


@pytest.mark.parametrize("seed", range(3))
def test_gradients_match_naive_loops(seed):
    Q, K, V, dO = random_problem(seed, ((3, 2), (4, 2), (4, 3)))
    for scale, effective in ((None, 1 / math.sqrt(2)), (0.7, 0.7)):
        got = attention_backward(Q, K, V, dO, scale=scale)
        for g, ref in zip(got, naive_backward_2d(Q, K, V, dO, effective), strict=True):
            np.testing.assert_allclose(g, ref, rtol=1e-12, atol=1e-14)


def test_batched_gradients_equal_a_loop_over_the_batch():
    Q, K, V, dO = random_problem(0, SHAPES["two_batch_dims"])
    dQ, dK, dV = attention_backward(Q, K, V, dO, scale=0.5)
    for b in np.ndindex(Q.shape[:-2]):
        per_slice = attention_backward(Q[b], K[b], V[b], dO[b], 0.5)
        for g, ref in zip((dQ[b], dK[b], dV[b]), per_slice, strict=True):
            np.testing.assert_allclose(g, ref, rtol=1e-13, atol=1e-15)


def test_gradient_properties():
    """Invariances of the loss show up as exact identities of the gradients."""
    Q, K, V, dO = random_problem(4, SHAPES["2d_non_square"])
    dQ, dK, dV = attention_backward(Q, K, V, dO)
    # Rows of dS sum to 0 (softmax ignores a per-row constant), so Σ_j dS_ij = 0 and
    # dQ = scale · dS K is unchanged when the same vector is added to every key.
    np.testing.assert_allclose(attention_backward(Q, K + 3.0, V, dO)[0], dQ, rtol=1e-12, atol=1e-14)
    # L is invariant under K -> K + c for any c (a per-row constant added to the scores),
    # so Σ_j dK_j = 0.
    np.testing.assert_allclose(dK.sum(axis=0), 0.0, atol=1e-14)
    # L is linear in V: dV does not depend on V.
    np.testing.assert_array_equal(dV, attention_backward(Q, K, 5 * V + 1, dO)[2])
    # With dO = 0 every gradient is 0.
    assert all(not g.any() for g in attention_backward(Q, K, V, np.zeros_like(dO)))


def test_dtype_follows_promotion_and_float32_is_close_to_float64():
    Q, K, V, dO = random_problem(1, SHAPES["batch"])
    g32 = attention_backward(*(a.astype(np.float32) for a in (Q, K, V, dO)))
    g64 = attention_backward(Q, K, V, dO)
    for a, b in zip(g32, g64, strict=True):
        assert a.dtype == np.float32
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)
    lists = attention_backward(Q[0].tolist(), K[0].tolist(), V[0].tolist(), dO[0].tolist())
    assert all(g.dtype == np.float64 for g in lists)


def test_saturated_softmax_gives_vanishing_query_gradients():
    """Large unscaled scores: the softmax saturates and dQ, dK collapse while dV does not."""
    rng = np.random.default_rng(0)
    Q, K, V = rng.standard_normal((4, 64)), rng.standard_normal((6, 64)), rng.standard_normal((6, 3))
    dO = rng.standard_normal((4, 3))
    dQ_scaled = attention_backward(Q, K, V, dO)[0]
    dQ_raw = attention_backward(10 * Q, 10 * K, V, dO, scale=1.0)[0] * 10  # chain rule for Q -> 10 Q
    assert np.abs(dQ_raw).max() < 1e-6 * np.abs(dQ_scaled).max()


# --------------------------------------------------------------------------- torch autograd
@pytest.fixture(scope="module")
def torch():
    return pytest.importorskip(
        "torch",
        reason="torch not installed; pip install torch==2.13.0 to check the gradients against autograd",
    )


@pytest.mark.parametrize("seed", range(20))
def test_agreement_with_torch_autograd(torch, seed):
    """float64 gradients through torch's SDPA (expanded views, so broadcast gradients are summed)."""
    F = torch.nn.functional
    shapes = SHAPES[list(SHAPES)[seed % len(SHAPES)]]
    scale = (None, 0.25, 1.5)[seed % 3]
    Q, K, V, dO = random_problem(100 + seed, shapes)
    tQ, tK, tV = (torch.tensor(a, dtype=torch.float64, requires_grad=True) for a in (Q, K, V))
    batch = np.broadcast_shapes(Q.shape[:-2], K.shape[:-2], V.shape[:-2])
    out = F.scaled_dot_product_attention(
        tQ.expand(*batch, *Q.shape[-2:]), tK.expand(*batch, *K.shape[-2:]), tV.expand(*batch, *V.shape[-2:]),
        scale=scale,
    )
    out.backward(torch.tensor(dO, dtype=torch.float64))
    for name, g, t in zip("QKV", attention_backward(Q, K, V, dO, scale=scale), (tQ, tK, tV), strict=True):
        ref = t.grad.numpy()
        assert g.shape == ref.shape, name
        np.testing.assert_allclose(g, ref, rtol=1e-10, atol=1e-10, err_msg=name)


# --------------------------------------------------------------------------- bad inputs

ok = np.ones((3, 2))
BAD_INPUTS = [
    case("Q_1d", lambda: attention_backward(np.ones(2), ok, ok, ok), ValueError,
         "Q must have shape (..., n_q, d_k) with at least 2 dimensions; got shape (2,)"),
    case("d_k_mismatch", lambda: attention_backward(np.ones((3, 4)), ok, ok, np.ones((3, 2))), ValueError,
         "K has d_k=2 but Q has d_k=4 (last axes must match; Q (3, 4), K (3, 2))"),
    case("n_k_mismatch", lambda: attention_backward(ok, ok, np.ones((4, 2)), ok), ValueError,
         "V has n_k=4 rows but K has n_k=3"),
    case("dO_wrong_d_v", lambda: attention_backward(ok, ok, np.ones((3, 5)), ok), ValueError,
         "dO must have the output's shape (..., n_q, d_v) = (3, 5); got (3, 2)"),
    case("dO_wrong_n_q", lambda: attention_backward(np.ones((2, 2)), ok, ok, ok), ValueError,
         "= (2, 2); got (3, 2) (Q (2, 2), K (3, 2), V (3, 2))"),
    case("dO_missing_batch", lambda: attention_backward(np.ones((4, 3, 2)), ok, ok, ok), ValueError,
         "dO must have the output's shape ", " = (4, 3, 2); got (3, 2)"),
    case("dO_1d", lambda: attention_backward(ok, ok, ok, np.ones(2)), ValueError,
         "dO must have shape (..., n_q, d_v)"),
    case("batch_mismatch", lambda: attention_backward(np.ones((2, 3, 2)), np.ones((4, 3, 2)), ok, ok),
         ValueError, "the leading (batch) dimensions do not broadcast"),
    case("empty_keys", lambda: attention_backward(ok, np.ones((0, 2)), np.ones((0, 2)), ok), ValueError,
         "K has n_k=0 (an empty sequence)"),
    case("dO_nan", lambda: attention_backward(ok, ok, ok, np.full((3, 2), np.nan)), ValueError,
         "dO must be finite; it holds 6 NaN"),
    case("V_complex", lambda: attention_backward(ok, ok, ok.astype(complex), ok), TypeError,
         "V must hold real numbers, not complex ones"),
    case("scale_zero", lambda: attention_backward(ok, ok, ok, ok, scale=0), ValueError,
         "scale must be positive; got 0.0"),
    case("scale_str", lambda: attention_backward(ok, ok, ok, ok, scale="1"), TypeError,
         "scale must be a real number or None; got str"),
    case("is_causal_int", lambda: attention_backward(ok, ok, ok, ok, is_causal=1), TypeError,
         "is_causal must be True or False; got int 1"),
    case("scores_overflow",
         lambda: attention_backward(np.full((3, 2), 1e200), np.full((3, 2), 1e200), ok, ok), ValueError,
         "the scores Q Kᵀ · scale overflow float64"),
]


@pytest.mark.parametrize(("call", "exc", "match"), BAD_INPUTS)
def test_bad_input_raises_a_message_naming_it(call, exc, match):
    with pytest.raises(exc, match=match):
        call()


def test_bad_input_catalogue_is_distinct():
    ids = [p.id for p in BAD_INPUTS]
    assert len(ids) == len(set(ids)) >= 12
    assert len({p.values[2] for p in BAD_INPUTS}) == len(BAD_INPUTS)


def test_causal_backward_matches_differences_through_the_causal_forward() -> None:
    rng = np.random.default_rng(3)
    Q, K, V, dO = (rng.normal(size=(2, 5, 3)) * 2 for _ in range(4))
    dQ, dK, dV = attention_backward(Q, K, V, dO, scale=0.7, is_causal=True)

    def f(Q, K, V):
        return (scaled_dot_product_attention(Q, K, V, is_causal=True, scale=0.7) * dO).sum()

    for X, G, which in ((Q, dQ, 0), (K, dK, 1), (V, dV, 2)):
        num = np.zeros_like(X)
        for idx in np.ndindex(X.shape):
            E = np.zeros_like(X)
            E[idx] = 1e-6
            a, b = [Q, K, V], [Q, K, V]
            a[which], b[which] = X + E, X - E
            num[idx] = (f(*a) - f(*b)) / 2e-6
        np.testing.assert_allclose(G, num, rtol=1e-6, atol=1e-8)
    assert np.abs(dQ[:, 0]).max() < 1e-14  # query 0 sees only key 0: its weight is 1 whatever q_0
    ratio = dV[:, -1] / dO[:, -1]  # the last value reaches the last query only: dV = P[-1, -1] dO[-1]
    np.testing.assert_allclose(ratio, ratio[:, :1] * np.ones(3), rtol=1e-10)
