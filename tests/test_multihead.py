"""Tests of attnlib.multihead: split/merge, the layer against a naive per-head loop, the trace, Xavier.

1. ``split_heads``/``merge_heads`` against explicit column slicing, and as inverses.
2. ``MultiHeadAttention`` against a naive loop: project, slice the columns of
   each head, attend with explicit loops and ``math.exp``, concatenate, project;
   with batch dimensions, masks, ``is_causal`` and cross-attention.
3. One head with identity projections is exactly ``scaled_dot_product_attention``.
4. Parameters: count, Xavier bounds, read-only, determinism; the variance of the
   scores at initialisation by Monte Carlo.
5. Hypothesis: permuting the tokens permutes the output rows.
6. A catalogue of bad inputs, each checked for its type and message.
"""

from __future__ import annotations

import dataclasses
import math

import hypothesis.extra.numpy as hnp
import numpy as np
import pytest
from cases import case
from hypothesis import given
from hypothesis import strategies as st

from attnlib.core import causal_mask, padding_mask, scaled_dot_product_attention
from attnlib.multihead import MultiHeadAttention, MultiHeadTrace, merge_heads, split_heads
from attnlib.trace import AttentionTrace


# --------------------------------------------------------------------------- naive reference
def naive_attention_2d(Q, K, V, keep=None, additive=None, scale=None):
    """One sequence by explicit loops; ``keep[i][j]`` False forbids a pair, ``additive`` is added."""
    n_q, d_k = len(Q), len(Q[0])
    n_k, d_v = len(K), len(V[0])
    scale = 1.0 / math.sqrt(d_k) if scale is None else scale
    out = np.zeros((n_q, d_v))
    weights = np.zeros((n_q, n_k))
    for i in range(n_q):
        logits = []
        for j in range(n_k):
            s = sum(float(Q[i][t]) * float(K[j][t]) for t in range(d_k)) * scale
            if additive is not None:
                s += float(additive[i][j])
            allowed = (keep is None or keep[i][j]) and s != -math.inf
            logits.append(s if allowed else None)
        allowed = [j for j in range(n_k) if logits[j] is not None]
        if not allowed:
            continue
        peak = max(logits[j] for j in allowed)
        exps = {j: math.exp(logits[j] - peak) for j in allowed}
        total = sum(exps.values())
        for j in allowed:
            weights[i, j] = exps[j] / total
            for c in range(d_v):
                out[i, c] += weights[i, j] * float(V[j][c])
    return out, weights


def naive_multihead(mha, X, X_kv=None, attn_mask=None, is_causal=False, scale=None):
    """Project, slice columns h·d_head:(h+1)·d_head, attend per head and batch element, concat, project."""
    X = np.asarray(X, dtype=np.float64)
    X_kv = X if X_kv is None else np.asarray(X_kv, dtype=np.float64)
    batch = np.broadcast_shapes(X.shape[:-2], X_kv.shape[:-2])
    n_q, n_k = X.shape[-2], X_kv.shape[-2]
    H, dh = mha.n_heads, mha.d_head
    Xb = np.broadcast_to(X, batch + X.shape[-2:])
    Xkvb = np.broadcast_to(X_kv, batch + X_kv.shape[-2:])
    mask = causal_mask(n_q, n_k) if is_causal else attn_mask
    if mask is not None:
        mask = np.broadcast_to(np.asarray(mask), batch + (n_q, n_k))
    out = np.zeros(batch + (n_q, mha.d_model))
    weights = np.zeros(batch + (H, n_q, n_k))
    for b in np.ndindex(batch):
        Qf, Kf, Vf = Xb[b] @ mha.W_Q, Xkvb[b] @ mha.W_K, Xkvb[b] @ mha.W_V
        heads = []
        for h in range(H):
            cols = slice(h * dh, (h + 1) * dh)
            keep = additive = None
            if mask is not None:
                if mask.dtype.kind == "b":
                    keep = mask[b]
                else:
                    additive = mask[b]
            o, w = naive_attention_2d(Qf[:, cols], Kf[:, cols], Vf[:, cols], keep, additive, scale)
            heads.append(o)
            weights[b + (h,)] = w
        out[b] = np.concatenate(heads, axis=1) @ mha.W_O
    return out, weights


def layer(d_model=8, n_heads=2, seed=0, **kw) -> MultiHeadAttention:
    return MultiHeadAttention(d_model, n_heads, np.random.default_rng(seed), **kw)


# --------------------------------------------------------------------------- split / merge
@pytest.mark.parametrize("shape", [(5, 12), (2, 5, 12), (2, 3, 4, 12)])
@pytest.mark.parametrize("n_heads", [1, 2, 3, 4, 6, 12])
def test_split_heads_matches_column_slices(shape, n_heads):
    X = np.random.default_rng(0).normal(size=shape)
    parts = split_heads(X, n_heads)
    d_head = 12 // n_heads
    assert parts.shape == shape[:-2] + (n_heads, shape[-2], d_head)
    for h in range(n_heads):
        assert np.array_equal(parts[..., h, :, :], X[..., h * d_head:(h + 1) * d_head])
    assert np.array_equal(merge_heads(parts), X)


def test_merge_heads_concatenates_heads_side_by_side():
    heads = np.random.default_rng(1).normal(size=(2, 3, 4, 5))  # (batch, H, n, d_head)
    merged = merge_heads(heads)
    assert merged.shape == (2, 4, 15)
    assert np.array_equal(merged, np.concatenate([heads[:, h] for h in range(3)], axis=-1))
    assert np.array_equal(split_heads(merged, 3), heads)


def test_split_heads_is_a_view_and_keeps_dtype():
    X = np.ones((3, 8), dtype=np.float32)
    parts = split_heads(X, 4)
    assert parts.dtype == np.float32 and np.shares_memory(parts, X)


# --------------------------------------------------------------------------- against the naive loop
CASES = {
    "2d": dict(d_model=8, n_heads=2, X=(5, 8)),
    "one_head": dict(d_model=6, n_heads=1, X=(4, 6)),
    "four_heads_batch": dict(d_model=8, n_heads=4, X=(3, 5, 8)),
    "two_batch_dims": dict(d_model=6, n_heads=3, X=(2, 2, 4, 6)),
    "d_head_given": dict(d_model=6, n_heads=4, X=(4, 6), d_head=5),
}


@pytest.mark.parametrize("case_id", list(CASES))
@pytest.mark.parametrize("mode", ["none", "causal", "bool", "float"])
def test_layer_matches_naive_per_head_loop(case_id, mode):
    c = CASES[case_id]
    mha = layer(c["d_model"], c["n_heads"], seed=3, **({"d_head": c["d_head"]} if "d_head" in c else {}))
    rng = np.random.default_rng(4)
    X = rng.normal(size=c["X"])
    n = c["X"][-2]
    kwargs: dict = {}
    if mode == "causal":
        kwargs["is_causal"] = True
    elif mode == "bool":
        m = rng.random((n, n)) < 0.6
        m[:, 0] = True
        kwargs["attn_mask"] = m
    elif mode == "float":
        kwargs["attn_mask"] = np.where(rng.random((n, n)) < 0.3, -np.inf, rng.normal(size=(n, n)))
    tr = mha(X, **kwargs)
    ref_out, ref_w = naive_multihead(mha, X, **kwargs)
    np.testing.assert_allclose(tr.weights, ref_w, rtol=1e-10, atol=1e-13)
    np.testing.assert_allclose(tr.output, ref_out, rtol=1e-10, atol=1e-12)
    assert tr.output.shape == X.shape
    assert tr.weights.shape == c["X"][:-2] + (mha.n_heads, n, n)


def test_trace_fields_are_consistent_with_each_other():
    mha = layer(12, 3, seed=5)
    X = np.random.default_rng(6).normal(size=(2, 4, 12))
    tr = mha(X)
    assert isinstance(tr, MultiHeadTrace) and tr.n_heads == 3 and tr.d_head == 4
    assert tr.X_kv is not None and np.array_equal(tr.X_kv, X) and np.array_equal(tr.X, X)
    assert np.array_equal(tr.Q, split_heads(X @ mha.W_Q, 3))
    assert np.array_equal(tr.K, split_heads(X @ mha.W_K, 3))
    assert np.array_equal(tr.V, split_heads(X @ mha.W_V, 3))
    np.testing.assert_allclose(tr.head_outputs, tr.weights @ tr.V, rtol=1e-12, atol=1e-14)
    assert np.array_equal(tr.concat, merge_heads(tr.head_outputs))
    assert np.array_equal(tr.output, tr.concat @ mha.W_O)
    assert tr.scale == 1 / math.sqrt(4) and tr.attn_mask is None


def test_cross_attention_matches_naive_and_has_n_q_rows():
    mha = layer(8, 2, seed=7)
    rng = np.random.default_rng(8)
    X, X_kv = rng.normal(size=(2, 3, 8)), rng.normal(size=(2, 6, 8))
    mask = rng.random((3, 6)) < 0.7
    mask[:, 0] = True
    tr = mha(X, X_kv, attn_mask=mask)
    ref_out, ref_w = naive_multihead(mha, X, X_kv, attn_mask=mask)
    assert tr.output.shape == (2, 3, 8) and tr.weights.shape == (2, 2, 3, 6)
    np.testing.assert_allclose(tr.output, ref_out, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(tr.weights, ref_w, rtol=1e-10, atol=1e-13)
    assert np.array_equal(tr.X_kv, X_kv)


def test_cross_attention_broadcasts_memory_over_the_batch():
    mha = layer(8, 2, seed=9)
    rng = np.random.default_rng(10)
    X, memory = rng.normal(size=(3, 4, 8)), rng.normal(size=(5, 8))
    tr = mha(X, memory)
    for b in range(3):
        np.testing.assert_allclose(tr.output[b], mha(X[b], memory).output, rtol=1e-12, atol=1e-14)


def test_padding_mask_is_broadcast_over_heads():
    mha = layer(8, 4, seed=11)
    X = np.random.default_rng(12).normal(size=(3, 5, 8))
    lengths = [2, 5, 3]
    tr = mha(X, attn_mask=padding_mask(lengths, 5))  # (batch, 1, n_k)
    for b, L in enumerate(lengths):
        assert (tr.weights[b, :, :, L:] == 0.0).all()
        np.testing.assert_allclose(tr.output[b, :L], mha(X[b, :L]).output, rtol=1e-12, atol=1e-13)


def test_is_causal_equals_the_causal_mask_and_hides_the_future():
    mha = layer(8, 2, seed=13)
    X = np.random.default_rng(14).normal(size=(6, 8))
    tr = mha(X, is_causal=True)
    assert np.array_equal(tr.output, mha(X, attn_mask=causal_mask(6)).output)
    assert (tr.weights[:, ~causal_mask(6)] == 0.0).all()
    assert np.array_equal(tr.attn_mask, causal_mask(6))
    # the first rows do not change when later tokens change
    X2 = X.copy()
    X2[4:] += 1.0
    assert np.array_equal(mha(X2, is_causal=True).output[:4], tr.output[:4])


def test_custom_scale_is_used_by_every_head():
    mha = layer(8, 2, seed=15)
    X = np.random.default_rng(16).normal(size=(4, 8))
    tr = mha(X, scale=0.1)
    ref_out, _ = naive_multihead(mha, X, scale=0.1)
    assert tr.scale == 0.1
    np.testing.assert_allclose(tr.output, ref_out, rtol=1e-10, atol=1e-12)
    assert not np.allclose(tr.output, mha(X).output)


# --------------------------------------------------------------------------- identity, single heads
@pytest.mark.parametrize("shape", [(4, 3), (1, 5), (2, 6, 4)])
def test_one_head_with_identity_projections_is_plain_attention_exactly(shape):
    X = np.random.default_rng(17).normal(size=shape)
    I = np.eye(shape[-1])
    mha = MultiHeadAttention.from_weights(I, I, I, I, 1)
    tr = mha(X)
    assert np.array_equal(tr.output, scaled_dot_product_attention(X, X, X))
    causal = scaled_dot_product_attention(X, X, X, is_causal=True)
    assert np.array_equal(mha(X, is_causal=True).output, causal)


@pytest.mark.parametrize(
    "kwargs", [{}, {"is_causal": True}, {"scale": 0.3}, {"mask": "bool"}, {"mask": "float"}]
)
def test_head_trace_equals_the_heads_weights_and_outputs(kwargs):
    mha = layer(12, 3, seed=18)
    rng = np.random.default_rng(19)
    X = rng.normal(size=(5, 12))
    kwargs = dict(kwargs)
    kind = kwargs.pop("mask", None)
    if kind == "bool":
        kwargs["attn_mask"] = rng.random((5, 5)) < 0.5
    elif kind == "float":
        kwargs["attn_mask"] = rng.normal(size=(5, 5))
    tr = mha(X, **kwargs)
    for h in range(3):
        ht = tr.head(h, tokens=list("abcde"))
        assert isinstance(ht, AttentionTrace)
        assert np.array_equal(ht.weights, tr.weights[h])
        assert np.array_equal(ht.output, tr.head_outputs[h])
        assert ht.tokens == tuple("abcde") and ht.scale == tr.scale
        assert "Query 0 'a'" in ht.explain(0)


def test_head_trace_for_cross_attention():
    mha = layer(8, 2, seed=20)
    rng = np.random.default_rng(21)
    tr = mha(rng.normal(size=(3, 8)), rng.normal(size=(4, 8)))
    ht = tr.head(1)
    assert ht.weights.shape == (3, 4) and np.array_equal(ht.weights, tr.weights[1])


def test_trace_is_frozen_and_read_only():
    tr = layer()(np.random.default_rng(22).normal(size=(3, 8)))
    with pytest.raises(dataclasses.FrozenInstanceError):
        tr.output = None  # type: ignore[misc]
    for name in ("X", "X_kv", "Q", "K", "V", "weights", "head_outputs", "concat", "output"):
        with pytest.raises(ValueError, match="read-only"):
            getattr(tr, name)[...] = 0.0
    assert "MultiHeadTrace(n_heads=2, d_head=4" in repr(tr)


def test_trace_does_not_alias_the_input():
    X = np.random.default_rng(23).normal(size=(3, 8))
    tr = layer()(X)
    X[0, 0] = 100.0
    assert tr.X[0, 0] != 100.0


# --------------------------------------------------------------------------- parameters
@pytest.mark.parametrize(
    ("d_model", "n_heads", "d_head"), [(8, 2, None), (12, 3, None), (6, 4, 5), (5, 1, None)]
)
def test_shapes_and_parameter_count(d_model, n_heads, d_head):
    mha = layer(d_model, n_heads, d_head=d_head)
    dh = d_model // n_heads if d_head is None else d_head
    assert (mha.d_model, mha.n_heads, mha.d_head) == (d_model, n_heads, dh)
    for W in (mha.W_Q, mha.W_K, mha.W_V):
        assert W.shape == (d_model, n_heads * dh)
    assert mha.W_O.shape == (n_heads * dh, d_model)
    assert mha.n_params == 4 * d_model * n_heads * dh
    assert repr(mha) == f"MultiHeadAttention(d_model={d_model}, n_heads={n_heads}, d_head={dh})"


def test_weights_are_xavier_uniform_within_bounds():
    mha = layer(64, 8, seed=24, d_head=16)  # fan_out 128
    bound = math.sqrt(6 / (64 + 128))
    for W in (mha.W_Q, mha.W_K, mha.W_V, mha.W_O):
        assert np.abs(W).max() <= bound
        assert np.abs(W).max() > 0.95 * bound  # fills the interval
        assert W.var() == pytest.approx(bound**2 / 3, rel=0.1)
        assert abs(W.mean()) < 0.01
    assert not np.array_equal(mha.W_Q, mha.W_K)


def test_weights_are_read_only_and_the_layer_is_immutable():
    mha = layer()
    for name in ("W_Q", "W_K", "W_V", "W_O"):
        with pytest.raises(ValueError, match="read-only"):
            getattr(mha, name)[0, 0] = 1.0
    with pytest.raises(AttributeError, match="immutable"):
        mha.n_heads = 4  # type: ignore[misc]


def test_same_rng_seed_same_layer_and_draw_order():
    a, b, c = layer(seed=25), layer(seed=25), layer(seed=26)
    for name in ("W_Q", "W_K", "W_V", "W_O"):
        assert np.array_equal(getattr(a, name), getattr(b, name))
        assert not np.array_equal(getattr(a, name), getattr(c, name))
    rng = np.random.default_rng(25)
    from attnlib.training import xavier_uniform

    expected = [xavier_uniform(8, 8, rng) for _ in range(4)]  # W_Q, W_K, W_V, W_O in that order
    for name, W in zip(("W_Q", "W_K", "W_V", "W_O"), expected, strict=True):
        assert np.array_equal(getattr(a, name), W)


def test_from_weights_copies_and_infers_sizes():
    rng = np.random.default_rng(27)
    Ws = [rng.normal(size=(6, 9)) for _ in range(3)] + [rng.normal(size=(9, 6))]
    mha = MultiHeadAttention.from_weights(*Ws, n_heads=3)
    assert (mha.d_model, mha.n_heads, mha.d_head, mha.n_params) == (6, 3, 3, 4 * 6 * 9)
    Ws[0][0, 0] = 99.0
    assert mha.W_Q[0, 0] != 99.0


@pytest.mark.parametrize(("d_model", "n_heads", "d_head"), [(32, 4, 8), (32, 4, 16), (24, 2, 6)])
def test_score_variance_at_xavier_init_matches_the_formula(d_model, n_heads, d_head):
    """Off-diagonal raw scores: Var(q·k) = d_head · (2 d_model / (d_model + H d_head))² (see the Notes)."""
    n = 16
    off = ~np.eye(n, dtype=bool)
    second = []
    for seed in range(200):
        rng = np.random.default_rng(seed)
        mha = MultiHeadAttention(d_model, n_heads, rng, d_head=d_head)
        tr = mha(rng.standard_normal((n, d_model)))
        S = tr.Q @ tr.K.swapaxes(-1, -2)  # (H, n, n)
        second.append((S[:, off] ** 2).mean())
    predicted = d_head * (2 * d_model / (d_model + n_heads * d_head)) ** 2
    assert np.mean(second) == pytest.approx(predicted, rel=0.08)
    if n_heads * d_head == d_model:  # the usual layout: Var(q·k) = d_head, scaled scores have variance 1
        assert predicted == d_head
        assert np.mean(second) / d_head == pytest.approx(1.0, rel=0.08)


# --------------------------------------------------------------------------- hypothesis
FINITE = st.floats(min_value=-3, max_value=3, allow_nan=False, allow_infinity=False)


@given(
    st.sampled_from([(4, 1), (4, 2), (6, 3), (8, 4)]),
    st.integers(1, 6),
    st.integers(0, 2**16),
    st.data(),
)
def test_property_permuting_tokens_permutes_output_rows(sizes, n, seed, data):
    d_model, n_heads = sizes
    mha = layer(d_model, n_heads, seed=seed)
    X = data.draw(hnp.arrays(np.float64, (n, d_model), elements=FINITE))
    perm = list(data.draw(st.permutations(range(n))))
    tr, tr_perm = mha(X), mha(X[perm])
    np.testing.assert_allclose(tr_perm.output, tr.output[perm], rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(tr_perm.weights, tr.weights[:, perm][:, :, perm], rtol=1e-10, atol=1e-12)


# --------------------------------------------------------------------------- bad inputs


M = layer(8, 2)
X38 = np.ones((3, 8))
I4 = np.eye(4)

BAD_INPUTS = [
    case("split_not_divisible", lambda: split_heads(np.ones((3, 10)), 4), ValueError,
         "n_heads=4 does not divide d_model=10", "(3, 10)"),
    case("split_n_heads_negative", lambda: split_heads(X38, -3), ValueError,
         "n_heads must be positive; got -3"),
    case("split_n_heads_float", lambda: split_heads(X38, 2.0), TypeError, "n_heads must be an integer"),
    case("split_1d", lambda: split_heads(np.ones(8), 2), ValueError,
         "X must have shape (..., n, d_model)", "got shape (8,)"),
    case("merge_2d", lambda: merge_heads(X38), ValueError,
         "X must have shape (..., n_heads, n, d_head)", "got shape (3, 8)"),
    case("init_not_divisible", lambda: MultiHeadAttention(10, 4, np.random.default_rng(0)), ValueError,
         "n_heads=4 does not divide d_model=10", "pass d_head"),
    case("init_n_heads_0", lambda: MultiHeadAttention(8, 0, np.random.default_rng(0)), ValueError,
         "n_heads must be positive; got 0"),
    case("init_n_heads_negative", lambda: MultiHeadAttention(8, -2, np.random.default_rng(0)), ValueError,
         "n_heads must be positive; got -2"),
    case("init_d_model_0", lambda: MultiHeadAttention(0, 1, np.random.default_rng(0)), ValueError,
         "d_model must be positive; got 0"),
    case("init_d_head_0", lambda: MultiHeadAttention(8, 2, np.random.default_rng(0), d_head=0), ValueError,
         "d_head must be positive; got 0"),
    case("init_rng_int", lambda: MultiHeadAttention(8, 2, 0), TypeError,  # type: ignore[arg-type]
         "rng must be a numpy.random.Generator", "got int"),
    case("X_wrong_width", lambda: M(np.ones((3, 6))), ValueError,
         "X has width 6 but the layer has d_model=8", "(3, 6)"),
    case("X_kv_wrong_width", lambda: M(X38, np.ones((4, 5))), ValueError,
         "X_kv has width 5 but the layer has d_model=8", "(4, 5)"),
    case("X_1d", lambda: M(np.ones(8)), ValueError,
         "X must have shape (..., n_q, d_model)", "got shape (8,)"),
    case("X_nan", lambda: M(np.full((3, 8), np.nan)), ValueError, "X must be finite", "NaN"),
    case("X_bool", lambda: M(np.ones((3, 8), dtype=bool)), TypeError,
         "X must hold real numbers, not booleans"),
    case("batch_mismatch", lambda: M(np.ones((2, 3, 8)), np.ones((3, 4, 8))), ValueError,
         "leading (batch) dimensions do not broadcast", "X (2, 3, 8)", "X_kv (3, 4, 8)"),
    case("mask_wrong_shape", lambda: M(X38, attn_mask=np.ones((3, 4), dtype=bool)), ValueError,
         "attn_mask of shape (3, 4) does not broadcast", "(3, 3)"),
    case("mask_int", lambda: M(X38, attn_mask=np.ones((3, 3), dtype=int)), TypeError,
         "attn_mask must be boolean", "integer"),
    case("mask_and_causal", lambda: M(X38, attn_mask=np.ones((3, 3), dtype=bool), is_causal=True),
         ValueError, "pass either attn_mask or is_causal=True"),
    case("causal_not_bool", lambda: M(X38, is_causal=1), TypeError, "is_causal must be True or False"),
    case("scale_negative", lambda: M(X38, scale=-1.0), ValueError, "scale must be positive"),
    case("from_weights_W_K_shape", lambda: MultiHeadAttention.from_weights(I4, np.eye(4, 6), I4, I4, 1),
         ValueError, "W_K has shape (4, 6) but W_Q has shape (4, 4)"),
    case("from_weights_W_O_shape", lambda: MultiHeadAttention.from_weights(I4, I4, I4, np.eye(4, 3), 1),
         ValueError, "W_O has shape (4, 3)", "(4, 4)"),
    case("from_weights_not_divisible", lambda: MultiHeadAttention.from_weights(I4, I4, I4, I4, 3),
         ValueError, "n_heads=3 does not divide the projection width 4"),
    case("from_weights_1d", lambda: MultiHeadAttention.from_weights(np.ones(4), I4, I4, I4, 1),
         ValueError, "W_Q must be a non-empty 2-D matrix", "(4,)"),
    case("from_weights_n_heads_negative", lambda: MultiHeadAttention.from_weights(I4, I4, I4, I4, -1),
         ValueError, "n_heads must be positive; got -1"),
    case("head_out_of_range", lambda: M(X38).head(2), IndexError, "head h=2 is out of range", "0..1"),
    case("head_negative", lambda: M(X38).head(-1), IndexError, "head h=-1 is out of range"),
    case("head_not_int", lambda: M(X38).head(1.0), TypeError, "h must be an integer head index"),
    case("head_batched", lambda: M(np.ones((2, 3, 8))).head(0), ValueError,
         "head() traces one sequence", "X (2, 3, 8)"),
]


@pytest.mark.parametrize(("call", "exc", "match"), BAD_INPUTS)
def test_bad_input_raises_a_message_naming_it(call, exc, match):
    with pytest.raises(exc, match=match):
        call()


def test_bad_input_catalogue_is_large_and_distinct():
    ids = [p.id for p in BAD_INPUTS]
    assert len(ids) == len(set(ids)) >= 20
    assert len({p.values[2] for p in BAD_INPUTS}) == len(BAD_INPUTS)


# --------------------------------------------------------------------------- PyTorch
@pytest.mark.parametrize("is_causal", [False, True])
def test_matches_torch_multihead_attention_without_biases(is_causal):
    torch = pytest.importorskip("torch", reason="torch not installed: cross-check skipped")
    mha = layer(12, 3, seed=30)
    rng = np.random.default_rng(31)
    X, X_kv = rng.normal(size=(2, 4, 12)), rng.normal(size=(2, 4, 12))
    ref = torch.nn.MultiheadAttention(12, 3, bias=False, batch_first=True, dtype=torch.float64)
    with torch.no_grad():  # torch computes x Wᵀ: its matrices are the transposes of ours
        ref.in_proj_weight.copy_(torch.from_numpy(np.concatenate([mha.W_Q, mha.W_K, mha.W_V], axis=1).T))
        ref.out_proj.weight.copy_(torch.from_numpy(mha.W_O.T.copy()))
        t_X, t_kv = torch.from_numpy(X), torch.from_numpy(X_kv)
        mask = torch.from_numpy(~causal_mask(4)) if is_causal else None  # torch: True = may NOT attend
        out, w = ref(t_X, t_kv, t_kv, attn_mask=mask, need_weights=True, average_attn_weights=False)
    tr = mha(X, X_kv, is_causal=is_causal)
    np.testing.assert_allclose(tr.output, out.numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(tr.weights, w.numpy(), rtol=1e-10, atol=1e-12)
