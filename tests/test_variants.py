"""Tests of attnlib.variants: the costs of sliding-window, sparse, linear and tiled attention.

1. Score counts against masks built entry by entry, and by hypothesis.
2. Full and tiled attention agree with flop_counts; linear attention against a counted loop.
3. Bad inputs, each checked for its type and message.
"""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from attnlib.core import scaled_dot_product_attention
from attnlib.counts import (
    flop_counts,
    memory_bytes,
)
from attnlib.variants import VariantCost, attention_variant_costs


# --------------------------------------------------------------------------- efficient variants
def sliding_window_mask(n: int, window: int) -> np.ndarray:
    """Query i may see key j iff j <= i and i - j < window, built entry by entry."""
    mask = np.zeros((n, n), dtype=bool)
    for i in range(n):
        for j in range(n):
            mask[i, j] = j <= i and i - j < window
    return mask


def sparse_fixed_mask(n: int, block: int) -> np.ndarray:
    """Child et al. (2019) causal fixed pattern, one summary column per block, entry by entry."""
    mask = np.zeros((n, n), dtype=bool)
    for i in range(n):
        for j in range(i + 1):
            mask[i, j] = j // block == i // block or j % block == block - 1
    return mask


def counted_masked_attention_multiplies(mask: np.ndarray, d: int) -> int:
    """Multiplies of q·k and of weight·v over the allowed pairs, counted one loop iteration at a time."""
    count = 0
    n_q, n_k = mask.shape
    for i in range(n_q):
        for j in range(n_k):
            if mask[i, j]:
                count += d  # q_i · k_j
                count += d  # w_ij v_j added into out_i
    return count


def counted_linear_attention(Q, K, V, phi):
    """Katharopoulos et al. (2020), non-causal, by loops; returns (out, multiplies, state numbers)."""
    n, d = len(Q), len(V[0])
    fq, fk = [phi(q) for q in Q], [phi(k) for k in K]
    F = len(fk[0])
    mults = 0
    S = [[0.0] * d for _ in range(F)]
    z = [0.0] * F
    for j in range(n):
        for f in range(F):
            z[f] += fk[j][f]
            for c in range(d):
                S[f][c] += fk[j][f] * V[j][c]
                mults += 1
    out = []
    for i in range(n):
        num = [0.0] * d
        den = 0.0
        for f in range(F):
            den += fq[i][f] * z[f]
            mults += 1
            for c in range(d):
                num[c] += fq[i][f] * S[f][c]
                mults += 1
        out.append([x / den for x in num])
    return np.array(out), mults, F * d + F


def elu_plus_one(x):
    return [xi + 1.0 if xi > 0 else math.exp(xi) for xi in x]


def costs_by_name(*args, **kwargs) -> dict[str, VariantCost]:
    return {c.name: c for c in attention_variant_costs(*args, **kwargs)}


@pytest.mark.parametrize("n", [1, 2, 3, 5, 8, 13, 16, 30])
@pytest.mark.parametrize("window", [1, 2, 4, 7, 40])
def test_sliding_window_counts_match_the_mask(n, window):
    mask = sliding_window_mask(n, window)
    c = costs_by_name(n, 3, window=window)["sliding_window"]
    assert c.scores == int(mask.sum()) == c.memory_scores
    assert c.multiply_adds == counted_masked_attention_multiplies(mask, 3)
    assert not c.exact


@pytest.mark.parametrize("n", [1, 2, 3, 5, 8, 13, 16, 30])
@pytest.mark.parametrize("block", [1, 2, 3, 4, 7, 40])
def test_sparse_fixed_counts_match_the_mask(n, block):
    mask = sparse_fixed_mask(n, block)
    c = costs_by_name(n, 2, window=3, block=block)["sparse_fixed"]
    assert c.scores == int(mask.sum()) == c.memory_scores
    assert c.multiply_adds == counted_masked_attention_multiplies(mask, 2)
    assert not c.exact


def test_sparse_fixed_pattern_by_hand():
    # n = 6, b = 3: blocks {0,1,2} {3,4,5}, summary columns 2 and 5
    expected = np.array([
        [1, 0, 0, 0, 0, 0],
        [1, 1, 0, 0, 0, 0],
        [1, 1, 1, 0, 0, 0],
        [0, 0, 1, 1, 0, 0],
        [0, 0, 1, 1, 1, 0],
        [0, 0, 1, 1, 1, 1],
    ], dtype=bool)
    assert np.array_equal(sparse_fixed_mask(6, 3), expected)
    assert costs_by_name(6, 1, window=1, block=3)["sparse_fixed"].scores == 15


@given(st.integers(1, 60), st.integers(1, 70), st.integers(1, 70))
@settings(max_examples=60)
def test_property_masked_counts_match_brute_force(n, window, block):
    c = costs_by_name(n, 1, window=window, block=block)
    assert c["sliding_window"].scores == int(sliding_window_mask(n, window).sum())
    assert c["sparse_fixed"].scores == int(sparse_fixed_mask(n, block).sum())
    assert c["sliding_window"].scores <= n * (n + 1) // 2 and c["sparse_fixed"].scores <= n * (n + 1) // 2


def test_default_block_is_rounded_square_root():
    for n, b in [(1, 1), (2, 1), (10, 3), (16, 4), (20, 4), (300, 17)]:
        c = costs_by_name(n, 4, window=2)
        assert c["sparse_fixed"].scores == int(sparse_fixed_mask(n, b).sum())
        assert c["tiled"].memory_scores == min(b, n) ** 2
        assert f"block {b}" in c["sparse_fixed"].note


@pytest.mark.parametrize(("n_q", "d"), [(1, 1), (4, 3), (9, 8), (32, 16)])
def test_full_and_tiled_agree_with_flop_counts(n_q, d):
    fc = flop_counts(n_q, n_q, d, d)
    c = costs_by_name(n_q, d, window=2, block=3)
    for name in ("full", "tiled"):
        assert c[name].scores == n_q * n_q == fc.stage("QK").multiplies // d
        matmul_multiplies = fc.stage("QK").multiplies + fc.stage("AV").multiplies
        assert c[name].multiply_adds == matmul_multiplies == 2 * n_q**2 * d
        assert c[name].exact
    assert c["full"].memory_scores == memory_bytes(n_q, n_q, d, d).score_bytes // 8
    assert c["tiled"].memory_scores == min(3, n_q) ** 2


def test_window_at_least_n_is_causal_full_attention():
    c = costs_by_name(10, 4, window=10)
    assert c["sliding_window"].scores == 55 == costs_by_name(10, 4, window=1000)["sliding_window"].scores
    assert costs_by_name(10, 4, window=1)["sliding_window"].scores == 10  # each token sees only itself


@pytest.mark.parametrize(("n", "d", "features"), [(1, 1, None), (5, 3, None), (6, 4, 2), (4, 2, 7)])
def test_linear_attention_counts_match_a_counted_loop(n, d, features):
    rng = np.random.default_rng(n * 10 + d)
    Q, K, V = (rng.normal(size=(n, d)).tolist() for _ in range(3))
    F = d if features is None else features
    P = rng.normal(size=(d, F))  # a fixed feature map with F dimensions: elu(x P) + 1

    def phi(x):
        return elu_plus_one((np.array(x) @ P).tolist())

    out, mults, state = counted_linear_attention(Q, K, V, phi)
    c = costs_by_name(n, d, window=1, features=features)["linear"]
    assert c.multiply_adds == mults == 2 * n * F * d + n * F
    assert c.memory_scores == state == F * d + F
    assert c.scores == 0 and not c.exact
    # the loop really is linear attention: compare with the quadratic form φ(q)·φ(k) normalised
    fq, fk = np.array([phi(q) for q in Q]), np.array([phi(k) for k in K])
    A = fq @ fk.T  # (n, n), positive
    np.testing.assert_allclose(out, (A / A.sum(1, keepdims=True)) @ np.array(V), rtol=1e-10)


def test_linear_attention_is_not_softmax_attention():
    rng = np.random.default_rng(3)
    Q, K, V = (rng.normal(size=(6, 4)) for _ in range(3))
    out, _, _ = counted_linear_attention(Q.tolist(), K.tolist(), V.tolist(), elu_plus_one)
    assert not np.allclose(out, scaled_dot_product_attention(Q, K, V), atol=1e-3)


def test_variant_order_exactness_and_notes():
    costs = attention_variant_costs(64, 8, window=8)
    assert [c.name for c in costs] == ["full", "sliding_window", "sparse_fixed", "linear", "tiled"]
    assert [c.exact for c in costs] == [True, False, False, False, True]
    assert all(isinstance(c, VariantCost) and c.note for c in costs)
    assert "a different function from softmax attention" in costs[3].note
    assert "approximates" not in costs[3].note and "Child et al. (2019)" in costs[2].note
    assert "state U (F × d)" in costs[3].note  # S is the score matrix everywhere else in the book
    with pytest.raises(AttributeError):
        costs[0].scores = 1  # type: ignore[misc]


def test_cheap_variants_grow_more_slowly_than_full():
    small, big = costs_by_name(1024, 64, window=128), costs_by_name(4096, 64, window=128)
    assert big["full"].scores == 16 * small["full"].scores
    for n, c in ((1024, small), (4096, big)):  # n · w minus the triangle the first w − 1 queries miss
        assert c["sliding_window"].scores == n * 128 - 128 * 127 // 2
    assert big["sliding_window"].scores < 4.5 * small["sliding_window"].scores
    assert big["linear"].multiply_adds == 4 * small["linear"].multiply_adds
    assert big["sparse_fixed"].scores < 9 * small["sparse_fixed"].scores  # ≈ n^1.5
    assert big["tiled"].memory_scores == 64**2 and small["tiled"].memory_scores == 32**2


@pytest.mark.parametrize(
    ("kwargs", "exc", "match"),
    [
        ({"n": 0, "d": 4, "window": 2}, ValueError, r"n must be positive; got 0"),
        ({"n": 8, "d": 0, "window": 2}, ValueError, r"d must be positive; got 0"),
        ({"n": 8, "d": 4, "window": 0}, ValueError, r"window must be positive; got 0"),
        ({"n": 8, "d": 4, "window": 2, "block": -1}, ValueError, r"block must be positive; got -1"),
        ({"n": 8, "d": 4, "window": 2, "features": 0}, ValueError, r"features must be positive; got 0"),
        ({"n": 8.0, "d": 4, "window": 2}, TypeError, r"n must be an integer; got float 8.0"),
        ({"n": 8, "d": 4, "window": "2"}, TypeError, r"window must be an integer; got str"),
    ],
)
def test_attention_variant_costs_bad_inputs(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        attention_variant_costs(**kwargs)
