"""Tests of attnlib.core: softmax, scaled_dot_product_attention, causal_mask, padding_mask.

Three layers, as for every computing module of attnlib:

1. comparison with a naive pure-Python implementation written below with
   explicit loops and ``math.exp`` (no NumPy arithmetic), on random inputs;
2. hypothesis properties that any correct attention must satisfy;
3. a catalogue of bad inputs, each checked for its exception type and for a
   message that names the argument and the offending shapes or values.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import hypothesis.extra.numpy as hnp
import numpy as np
import pytest
from cases import case
from hypothesis import given
from hypothesis import strategies as st

from attnlib import core
from attnlib.core import causal_mask, padding_mask, scaled_dot_product_attention, softmax
from attnlib.examples import cat_sat_on_mat

sdpa = scaled_dot_product_attention


# --------------------------------------------------------------------------- naive reference
def naive_softmax_1d(logits: list[float], keep: list[bool] | None = None) -> list[float]:
    """Softmax of a list of Python floats; ``keep[j] is False`` or ``logits[j] == -inf`` gives 0."""
    allowed = [
        j for j, s in enumerate(logits) if (keep is None or keep[j]) and s != -math.inf
    ]
    if not allowed:  # nothing to attend to: all zeros, by attnlib's convention
        return [0.0] * len(logits)
    peak = max(logits[j] for j in allowed)
    exps = [math.exp(logits[j] - peak) if j in allowed else 0.0 for j in range(len(logits))]
    total = sum(exps)
    return [e / total for e in exps]


def naive_softmax(x, axis: int = -1, mask=None) -> np.ndarray:
    """``naive_softmax_1d`` applied along ``axis`` of an array, one slice at a time."""
    x = np.asarray(x, dtype=np.float64)
    keep = np.ones(x.shape, dtype=bool) if mask is None else np.broadcast_to(mask, x.shape)
    xm, km = np.moveaxis(x, axis, -1), np.moveaxis(keep, axis, -1)
    out = np.zeros(xm.shape)
    for idx in np.ndindex(xm.shape[:-1]):
        out[idx] = naive_softmax_1d(xm[idx].tolist(), km[idx].tolist())
    return np.moveaxis(out, -1, axis)


def naive_attention(Q, K, V, attn_mask=None, *, is_causal=False, scale=None):
    """Scaled dot-product attention by explicit loops over batch, i, j (and the vector axes).

    Returns ``(out, weights)`` as float64 arrays.
    """
    Q, K, V = (np.asarray(a, dtype=np.float64) for a in (Q, K, V))
    n_q, d_k = Q.shape[-2:]
    n_k, d_v = V.shape[-2:]
    batch = np.broadcast_shapes(Q.shape[:-2], K.shape[:-2], V.shape[:-2])
    if scale is None:
        scale = 1.0 / math.sqrt(d_k)
    if is_causal:
        attn_mask = [[j <= i for j in range(n_k)] for i in range(n_q)]
    M = None
    if attn_mask is not None:
        M = np.broadcast_to(np.asarray(attn_mask), batch + (n_q, n_k))
    Qb = np.broadcast_to(Q, batch + (n_q, d_k))
    Kb = np.broadcast_to(K, batch + (n_k, d_k))
    Vb = np.broadcast_to(V, batch + (n_k, d_v))
    out = np.zeros(batch + (n_q, d_v))
    weights = np.zeros(batch + (n_q, n_k))
    for b in np.ndindex(batch):
        q, k, v = Qb[b].tolist(), Kb[b].tolist(), Vb[b].tolist()
        m = None if M is None else M[b].tolist()
        for i in range(n_q):
            logits, keep = [], []
            for j in range(n_k):
                s = sum(q[i][t] * k[j][t] for t in range(d_k)) * scale
                if m is not None and isinstance(m[i][j], bool):
                    keep.append(m[i][j])
                else:
                    if m is not None:
                        s += m[i][j]  # additive mask
                    keep.append(True)
                logits.append(s)
            w = naive_softmax_1d(logits, keep)
            for j in range(n_k):
                weights[b + (i, j)] = w[j]
            for c in range(d_v):
                out[b + (i, c)] = sum(w[j] * v[j][c] for j in range(n_k))
    return out, weights


def test_naive_reference_on_a_hand_computed_case():
    # Guard the guard: one query, two keys, scores 1 and 0 after scaling by 1/√1.
    out, w = naive_attention([[1.0]], [[1.0], [0.0]], [[2.0, 0.0], [0.0, 4.0]])
    e = math.e
    assert w.tolist() == [[e / (e + 1), 1 / (e + 1)]]
    np.testing.assert_allclose(out, [[2 * e / (e + 1), 4 / (e + 1)]], rtol=1e-15)


# --------------------------------------------------------------------------- vs naive: attention
# (Q shape, K shape, V shape); "square" has n_k == d_k so a missing transpose of K would still run.
SHAPES = {
    "n_q<n_k": ((3, 4), (5, 4), (5, 2)),
    "square_n_k=d_k": ((4, 4), (4, 4), (4, 3)),
    "n_q>n_k": ((6, 3), (2, 3), (2, 5)),
    "batch1": ((2, 3, 4), (2, 5, 4), (2, 5, 6)),
    "batch2": ((2, 3, 1, 3), (2, 3, 6, 3), (2, 3, 6, 2)),
    "broadcast": ((2, 1, 3, 4), (1, 3, 5, 4), (3, 5, 2)),
}
MASK_KINDS = ["none", "bool", "bool_padding", "float", "float_neg_inf", "causal", "scale"]


def _batch_of(shapes) -> tuple[int, ...]:
    return np.broadcast_shapes(*(s[:-2] for s in shapes))


def make_case(shape_id: str, kind: str, seed: int, dtype=np.float64):
    """Random Q, K, V and keyword arguments for one (shapes, mask kind) combination."""
    rng = np.random.default_rng(seed)
    shapes = SHAPES[shape_id]
    Q, K, V = (rng.standard_normal(s).astype(dtype) for s in shapes)
    batch = _batch_of(shapes)
    n_q, n_k = shapes[0][-2], shapes[1][-2]
    kwargs: dict = {}
    if kind == "bool":
        kwargs["attn_mask"] = rng.random(batch + (n_q, n_k)) < 0.6
    elif kind == "bool_padding":
        # (n_k,) broadcasts; at least 2 visible keys so the weights depend on the scores
        kwargs["attn_mask"] = np.arange(n_k) < rng.integers(min(2, n_k), n_k + 1)
    elif kind == "float":
        kwargs["attn_mask"] = rng.standard_normal((n_q, n_k))
    elif kind == "float_neg_inf":
        m = rng.standard_normal(batch + (n_q, n_k))
        m[rng.random(m.shape) < 0.4] = -np.inf
        kwargs["attn_mask"] = m
    elif kind == "causal":
        kwargs["is_causal"] = True
    elif kind == "scale":
        kwargs["scale"] = 0.37
    return Q, K, V, kwargs


@pytest.mark.parametrize("kind", MASK_KINDS)
@pytest.mark.parametrize("shape_id", list(SHAPES))
def test_attention_matches_naive_loops(shape_id, kind):
    seed = 1000 * list(SHAPES).index(shape_id) + MASK_KINDS.index(kind)
    Q, K, V, kwargs = make_case(shape_id, kind, seed)
    out, w = sdpa(Q, K, V, return_weights=True, **kwargs)
    ref_out, ref_w = naive_attention(Q, K, V, **kwargs)
    assert out.shape == ref_out.shape == _batch_of(SHAPES[shape_id]) + (Q.shape[-2], V.shape[-1])
    assert w.shape == ref_w.shape
    np.testing.assert_allclose(w, ref_w, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(out, ref_out, rtol=1e-12, atol=1e-14)
    # without return_weights the output is the same
    np.testing.assert_array_equal(sdpa(Q, K, V, **kwargs), out)


@pytest.mark.parametrize("shape_id", ["n_q<n_k", "square_n_k=d_k", "batch2"])
def test_attention_float32_matches_naive(shape_id):
    Q, K, V, kwargs = make_case(shape_id, "float_neg_inf", 7, dtype=np.float32)
    kwargs["attn_mask"] = kwargs["attn_mask"].astype(np.float32)
    out, w = sdpa(Q, K, V, return_weights=True, **kwargs)
    ref_out, ref_w = naive_attention(Q, K, V, **kwargs)
    assert out.dtype == w.dtype == np.float32
    np.testing.assert_allclose(w, ref_w, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(out, ref_out, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(("n_q", "n_k"), [(3, 3), (2, 5), (5, 2), (1, 4), (4, 1)])
def test_is_causal_is_top_left_aligned(n_q, n_k):
    rng = np.random.default_rng(n_q * 10 + n_k)
    Q, K, V = rng.standard_normal((n_q, 3)), rng.standard_normal((n_k, 3)), rng.standard_normal((n_k, 2))
    out, w = sdpa(Q, K, V, is_causal=True, return_weights=True)
    top_left = np.array([[j <= i for j in range(n_k)] for i in range(n_q)])
    np.testing.assert_array_equal(w > 0, top_left)  # exactly the pairs j <= i get weight
    ref_out, ref_w = naive_attention(Q, K, V, attn_mask=top_left)
    np.testing.assert_allclose(w, ref_w, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(out, ref_out, rtol=1e-12, atol=1e-14)
    np.testing.assert_array_equal(out, sdpa(Q, K, V, causal_mask(n_q, n_k)))


def test_custom_scale_matches_naive_and_differs_from_default():
    Q, K, V, _ = make_case("batch1", "none", 3)
    out = sdpa(Q, K, V, scale=2.5)
    np.testing.assert_allclose(out, naive_attention(Q, K, V, scale=2.5)[0], rtol=1e-12, atol=1e-14)
    assert not np.allclose(out, sdpa(Q, K, V))
    # the default is 1/√d_k, i.e. 1/2 here
    np.testing.assert_allclose(sdpa(Q, K, V), naive_attention(Q, K, V, scale=0.5)[0], rtol=1e-12)


@pytest.mark.parametrize(("chunk", "batch"), [(7, (5,)), (40, (5,)), (40, (2, 3))])
def test_chunked_batches_match_naive(monkeypatch, chunk, batch):
    # A tiny chunk size forces several passes through the batch loop (step 1 or 2 here).
    monkeypatch.setattr(core, "_CHUNK_SCORES", chunk)
    rng = np.random.default_rng(chunk)
    Q, K, V = (rng.standard_normal(batch + s) for s in [(3, 4), (5, 4), (5, 2)])
    mask = rng.random(batch + (3, 5)) < 0.7
    out, w = sdpa(Q, K, V, mask, return_weights=True)
    ref_out, ref_w = naive_attention(Q, K, V, mask)
    np.testing.assert_allclose(w, ref_w, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(out, ref_out, rtol=1e-12, atol=1e-14)


def test_large_batch_uses_several_chunks_and_matches_per_slice():
    # 64 × 64 scores per slice → 16 slices per chunk at the default chunk size: chunks 16, 16, 5.
    rng = np.random.default_rng(5)
    Q, K, V = (rng.standard_normal((37, 64, d)) for d in (8, 8, 3))
    assert core._CHUNK_SCORES // (64 * 64) < 37
    out = sdpa(Q, K, V, is_causal=True)
    for b in range(37):
        np.testing.assert_allclose(out[b], sdpa(Q[b], K[b], V[b], is_causal=True), rtol=1e-13, atol=1e-15)


# --------------------------------------------------------------------------- the book's example
def test_cat_sat_on_mat_row_0_by_hand():
    ex = cat_sat_on_mat()
    # Q[The] = [1, 0, 1, 0] against each key, term by term:
    scores = [
        1 * 0 + 0 * 1 + 1 * 0 + 0 * 1,  # The · [0, 1, 0, 1]
        1 * 1 + 0 * 0 + 1 * 1 + 0 * 0,  # cat · [1, 0, 1, 0]
        1 * 1 + 0 * 1 + 1 * 0 + 0 * 0,  # sat · [1, 1, 0, 0]
        1 * 0 + 0 * 0 + 1 * 1 + 0 * 1,  # on  · [0, 0, 1, 1]
        1 * 1 + 0 * 0 + 1 * 0.5 + 0 * 0.5,  # mat · [1, 0, 0.5, 0.5]
    ]
    assert scores == [0, 2, 1, 1, 1.5]
    assert (ex.Q[0] @ ex.K.T).tolist() == scores  # the hand reading of the data is right
    exps = [math.exp(s / 2) for s in scores]  # √d_k = √4 = 2
    w = [e / sum(exps) for e in exps]
    # V is one-hot for the first four tokens and 0.5 everywhere for "mat":
    out = [w[0] + 0.5 * w[4], w[1] + 0.5 * w[4], w[2] + 0.5 * w[4], w[3] + 0.5 * w[4]]

    got_out, got_w = sdpa(ex.Q, ex.K, ex.V, return_weights=True)
    np.testing.assert_allclose(got_w[0], w, rtol=1e-14)
    np.testing.assert_allclose(got_out[0], out, rtol=1e-14)
    ref_out, ref_w = naive_attention(ex.Q, ex.K, ex.V)
    np.testing.assert_allclose(got_w, ref_w, rtol=1e-13)
    np.testing.assert_allclose(got_out, ref_out, rtol=1e-13)
    # the figures printed in the book
    assert got_w[0].round(4).tolist() == [0.1095, 0.2976, 0.1805, 0.1805, 0.2318]
    assert got_out[0].round(4).tolist() == [0.2254, 0.4135, 0.2964, 0.2964]


# --------------------------------------------------------------------------- softmax
@pytest.mark.parametrize("shape", [(5,), (3, 5), (2, 3, 4)])
@pytest.mark.parametrize("with_mask", [False, True])
def test_softmax_matches_naive_on_every_axis(shape, with_mask):
    rng = np.random.default_rng(len(shape))
    x = rng.normal(scale=3.0, size=shape)
    for axis in range(-len(shape), len(shape)):
        mask = rng.random(shape) < 0.7 if with_mask else None
        got = softmax(x, axis=axis, mask=mask)
        np.testing.assert_allclose(got, naive_softmax(x, axis, mask), rtol=1e-13, atol=1e-16)


def test_softmax_axis_is_respected_on_a_non_square_matrix():
    x = np.arange(15.0).reshape(3, 5) / 4
    along_rows = softmax(x, axis=-1)
    along_cols = softmax(x, axis=0)
    np.testing.assert_allclose(along_rows.sum(axis=1), np.ones(3), rtol=1e-15)
    np.testing.assert_allclose(along_cols.sum(axis=0), np.ones(5), rtol=1e-15)
    # column sums of the row softmax are not 1, and vice versa
    assert not np.allclose(along_rows.sum(axis=0), 1.0)
    assert not np.allclose(along_cols.sum(axis=1), 1.0)
    np.testing.assert_allclose(along_cols, naive_softmax(x, axis=0), rtol=1e-14)
    np.testing.assert_allclose(along_rows, naive_softmax(x, axis=1), rtol=1e-14)
    np.testing.assert_array_equal(softmax(x), along_rows)  # default axis is -1
    np.testing.assert_array_equal(softmax(x, axis=np.int64(0)), along_cols)


def test_softmax_is_stable_for_huge_float32_logits():
    x = np.array([[1e4, 1e4 - 1, 0.0], [-1e4, -1e4, -1e4]], dtype=np.float32)
    got = softmax(x)  # RuntimeWarnings are errors in this suite, so an overflow would fail here
    assert got.dtype == np.float32
    assert np.isfinite(got).all()
    e = math.exp(-1.0)
    np.testing.assert_allclose(got[0], [1 / (1 + e), e / (1 + e), 0.0], rtol=1e-6)
    np.testing.assert_allclose(got[1], [1 / 3] * 3, rtol=1e-6)
    assert got[0, 2] == 0.0  # exp(-1e4) underflows to exactly 0


def test_softmax_neg_inf_gives_exactly_zero():
    got = softmax([1.0, -np.inf, 2.0, -np.inf])
    assert got[1] == 0.0 and got[3] == 0.0
    np.testing.assert_allclose(got[[0, 2]], naive_softmax_1d([1.0, 2.0]), rtol=1e-15)


def test_softmax_mask_false_gives_exactly_zero_and_renormalises_the_rest():
    x = np.array([[1.0, 2.0, 3.0], [3.0, 2.0, 1.0]])
    mask = np.array([True, False, True])  # broadcasts over rows
    got = softmax(x, mask=mask)
    assert (got[:, 1] == 0.0).all()
    np.testing.assert_allclose(got.sum(axis=-1), [1.0, 1.0], rtol=1e-15)
    np.testing.assert_allclose(got[0, [0, 2]], naive_softmax_1d([1.0, 3.0]), rtol=1e-15)


def test_softmax_fully_masked_rows_are_zero_not_nan():
    x = np.array([[1.0, 2.0], [3.0, 4.0], [-np.inf, -np.inf]])
    mask = np.array([[True, True], [False, False], [True, True]])
    got = softmax(x, mask=mask)
    assert not np.isnan(got).any()
    assert got[1].tolist() == [0.0, 0.0]  # every key masked
    assert got[2].tolist() == [0.0, 0.0]  # every logit -inf
    np.testing.assert_allclose(got[0], naive_softmax_1d([1.0, 2.0]), rtol=1e-15)


@pytest.mark.parametrize(
    ("x", "dtype"),
    [
        (np.array([1.0, 2.0], dtype=np.float32), np.float32),
        (np.array([1.0, 2.0], dtype=np.float16), np.float16),
        (np.array([1.0, 2.0], dtype=np.float64), np.float64),
        ([1.0, 2.0], np.float64),
        ([1, 2], np.float64),
        (np.array([1, 2], dtype=np.int32), np.float64),
        (np.array([1, 2], dtype=np.uint8), np.float64),
    ],
    ids=["float32", "float16", "float64", "list_float", "list_int", "int32", "uint8"],
)
def test_softmax_dtype(x, dtype):
    got = softmax(x)
    assert got.dtype == dtype
    np.testing.assert_allclose(got, naive_softmax_1d([1.0, 2.0]), rtol=1e-3 if dtype == np.float16 else 1e-6)
    assert softmax(x, mask=[True, False]).dtype == dtype  # the mask does not promote


def test_softmax_does_not_modify_its_input():
    x = np.array([3.0, 1.0, 2.0])
    softmax(x, mask=[True, False, True])
    softmax(x)
    assert x.tolist() == [3.0, 1.0, 2.0]


# --------------------------------------------------------------------------- attention: dtypes, zeros
@pytest.mark.parametrize(
    ("dtypes", "expected"),
    [
        ((np.float32, np.float32, np.float32), np.float32),
        ((np.float16, np.float16, np.float16), np.float16),
        ((np.float64, np.float64, np.float64), np.float64),
        ((np.float16, np.float32, np.float32), np.float32),
        ((np.float32, np.float32, np.float64), np.float64),
        ((np.int64, np.int64, np.int64), np.float64),
        ((np.int32, np.float32, np.float32), np.float64),  # as np.result_type(int32, float32)
    ],
)
def test_attention_dtype_follows_numpy_promotion(dtypes, expected):
    rng = np.random.default_rng(0)
    shapes = [(2, 3), (4, 3), (4, 2)]
    Q, K, V = (rng.integers(-3, 4, size=s).astype(dt) for s, dt in zip(shapes, dtypes, strict=True))
    out, w = sdpa(Q, K, V, return_weights=True)
    assert out.dtype == w.dtype == expected
    rtol = {np.float16: 1e-2, np.float32: 1e-5}.get(expected, 1e-12)
    np.testing.assert_allclose(out, naive_attention(Q, K, V)[0], rtol=rtol, atol=rtol)


def test_attention_lists_give_float64():
    out = sdpa([[1, 0]], [[1, 0], [0, 1]], [[1, 2], [3, 4]])
    assert out.dtype == np.float64
    np.testing.assert_allclose(out, naive_attention([[1, 0]], [[1, 0], [0, 1]], [[1, 2], [3, 4]])[0])


@pytest.mark.parametrize(
    ("mask_dtype", "expected"), [(np.bool_, np.float32), (np.float32, np.float32), (np.float64, np.float64)]
)
def test_attention_mask_dtype_promotion(mask_dtype, expected):
    Q = np.ones((2, 3), np.float32)
    mask = np.array([[1, 0, 1], [1, 1, 0]]).astype(mask_dtype)
    assert sdpa(Q, Q[[0, 1, 0]], Q[[0, 1, 0]], mask).dtype == expected


def test_attention_fully_masked_rows_give_zero_weights_and_zero_output():
    rng = np.random.default_rng(11)
    Q, K, V = rng.standard_normal((2, 3, 4)), rng.standard_normal((2, 5, 4)), rng.standard_normal((2, 5, 3))
    bool_mask = rng.random((2, 3, 5)) < 0.8
    bool_mask[0, 1] = False
    float_mask = np.where(bool_mask, 0.0, -np.inf)
    for mask in (bool_mask, float_mask):
        out, w = sdpa(Q, K, V, mask, return_weights=True)
        assert not np.isnan(out).any() and not np.isnan(w).any()
        assert w[0, 1].tolist() == [0.0] * 5
        assert out[0, 1].tolist() == [0.0] * 3
        assert (w[~bool_mask] == 0.0).all()
        np.testing.assert_allclose(out, naive_attention(Q, K, V, bool_mask)[0], rtol=1e-12, atol=1e-14)


def test_attention_does_not_modify_its_inputs():
    rng = np.random.default_rng(2)
    Q, K, V = rng.standard_normal((3, 2)), rng.standard_normal((4, 2)), rng.standard_normal((4, 2))
    mask = rng.standard_normal((3, 4))
    copies = [a.copy() for a in (Q, K, V, mask)]
    sdpa(Q, K, V, mask, scale=3.0)
    for a, c in zip((Q, K, V, mask), copies, strict=True):
        np.testing.assert_array_equal(a, c)


def test_attention_accepts_read_only_and_broadcast_views():
    Q = np.broadcast_to(np.array([[1.0, 0.0]]), (2, 3, 2))
    K = np.eye(2)
    K.flags.writeable = False
    out = sdpa(Q, K, K)
    np.testing.assert_allclose(out, naive_attention(Q, K, K)[0], rtol=1e-14)


# --------------------------------------------------------------------------- masks
@pytest.mark.parametrize(("n_q", "n_k"), [(1, None), (3, None), (2, 5), (5, 2), (4, 4)])
def test_causal_mask_matches_naive(n_q, n_k):
    m = causal_mask(n_q) if n_k is None else causal_mask(n_q, n_k)
    cols = n_q if n_k is None else n_k
    assert m.shape == (n_q, cols) and m.dtype == np.bool_
    assert m.tolist() == [[j <= i for j in range(cols)] for i in range(n_q)]


def test_causal_mask_accepts_numpy_integers():
    assert causal_mask(np.int64(2), np.int32(3)).tolist() == [[True, False, False], [True, True, False]]


@pytest.mark.parametrize(
    ("lengths", "n_k"), [([2, 3], 3), ([0, 1, 4], 4), ([5], 5), (np.array([1, 2], np.int8), 3)]
)
def test_padding_mask_matches_naive(lengths, n_k):
    m = padding_mask(lengths, n_k)
    assert m.shape == (len(lengths), 1, n_k) and m.dtype == np.bool_
    assert m[:, 0].tolist() == [[j < L for j in range(n_k)] for L in np.asarray(lengths).tolist()]


def test_padding_mask_accepts_whole_floats():
    assert padding_mask([1.0, 2.0], 2)[:, 0].tolist() == [[True, False], [True, True]]


def test_padding_mask_in_attention_hides_the_padding():
    rng = np.random.default_rng(4)
    Q, K, V = rng.standard_normal((3, 2, 4)), rng.standard_normal((3, 5, 4)), rng.standard_normal((3, 5, 2))
    lengths = [5, 2, 0]
    out, w = sdpa(Q, K, V, padding_mask(lengths, 5), return_weights=True)
    for b, L in enumerate(lengths):
        assert (w[b, :, L:] == 0.0).all()
        if L:
            np.testing.assert_allclose(out[b], sdpa(Q[b], K[b, :L], V[b, :L]), rtol=1e-13)
            np.testing.assert_allclose(w[b].sum(-1), 1.0, rtol=1e-14)
    assert (out[2] == 0.0).all()  # a sequence of length 0 has nothing to attend to


# --------------------------------------------------------------------------- hypothesis properties
FINITE = st.floats(min_value=-10, max_value=10, allow_nan=False, allow_infinity=False)


@st.composite
def attention_inputs(draw, *, min_d_k: int = 1, max_batch_dims: int = 2, square: bool = False):
    batch = draw(hnp.array_shapes(min_dims=0, max_dims=max_batch_dims, min_side=1, max_side=3))
    n_q = draw(st.integers(1, 5))
    n_k = n_q if square else draw(st.integers(1, 5))
    d_k = draw(st.integers(min_d_k, 4))
    d_v = draw(st.integers(1, 4))
    Q = draw(hnp.arrays(np.float64, batch + (n_q, d_k), elements=FINITE))
    K = draw(hnp.arrays(np.float64, batch + (n_k, d_k), elements=FINITE))
    V = draw(hnp.arrays(np.float64, batch + (n_k, d_v), elements=FINITE))
    return Q, K, V


@given(attention_inputs())
def test_property_weights_rows_sum_to_one(qkv):
    _, w = sdpa(*qkv, return_weights=True)
    assert (w >= 0).all()
    np.testing.assert_allclose(w.sum(axis=-1), 1.0, rtol=1e-12)


@given(attention_inputs(max_batch_dims=1))
def test_property_matches_naive(qkv):
    out, w = sdpa(*qkv, return_weights=True)
    ref_out, ref_w = naive_attention(*qkv)
    np.testing.assert_allclose(w, ref_w, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(out, ref_out, rtol=1e-9, atol=1e-10)


@given(attention_inputs(), st.data())
def test_property_permuting_queries_permutes_output_rows(qkv, data):
    Q, K, V = qkv
    perm = data.draw(st.permutations(range(Q.shape[-2])))
    expected = sdpa(Q, K, V)[..., perm, :]
    np.testing.assert_allclose(sdpa(Q[..., perm, :], K, V), expected, rtol=1e-12, atol=1e-12)


@given(attention_inputs(), st.data())
def test_property_permuting_keys_and_values_together_changes_nothing(qkv, data):
    Q, K, V = qkv
    perm = data.draw(st.permutations(range(K.shape[-2])))
    permuted = sdpa(Q, K[..., perm, :], V[..., perm, :])
    np.testing.assert_allclose(permuted, sdpa(Q, K, V), rtol=1e-10, atol=1e-10)


@given(
    hnp.arrays(np.float64, hnp.array_shapes(min_dims=2, max_dims=2, max_side=6), elements=FINITE),
    st.floats(-100, 100),
    st.data(),
)
def test_property_softmax_is_invariant_to_a_constant_per_row(x, c, data):
    per_row = data.draw(hnp.arrays(np.float64, (x.shape[0], 1), elements=st.floats(-100, 100)))
    per_col = data.draw(hnp.arrays(np.float64, (1, x.shape[1]), elements=st.floats(-100, 100)))
    np.testing.assert_allclose(softmax(x + per_row), softmax(x), rtol=1e-11, atol=1e-12)
    np.testing.assert_allclose(softmax(x + per_col, axis=0), softmax(x, axis=0), rtol=1e-11, atol=1e-12)
    np.testing.assert_allclose(softmax(x + c, axis=0), softmax(x, axis=0), rtol=1e-11, atol=1e-12)


@given(attention_inputs(), st.data())
def test_property_masked_entries_get_exactly_zero_weight(qkv, data):
    Q, K, V = qkv
    n_q, n_k = Q.shape[-2], K.shape[-2]
    mask = data.draw(hnp.arrays(np.bool_, (n_q, n_k)))
    out, w = sdpa(Q, K, V, mask, return_weights=True)
    keep = np.broadcast_to(mask, w.shape)
    assert (w[~keep] == 0.0).all()
    empty = ~mask.any(axis=-1)  # (n_q,)
    assert (out[..., empty, :] == 0.0).all()
    np.testing.assert_allclose(w.sum(axis=-1)[..., ~empty], 1.0, rtol=1e-12)


@given(attention_inputs(), st.data())
def test_property_causal_row_ignores_later_tokens(qkv, data):
    Q, K, V = qkv
    i = data.draw(st.integers(0, Q.shape[-2] - 1))
    Q2, K2, V2 = (data.draw(hnp.arrays(np.float64, a.shape, elements=FINITE)) for a in (Q, K, V))
    Q2[..., : i + 1, :] = Q[..., : i + 1, :]  # rows 0..i kept, later rows replaced
    K2[..., : i + 1, :] = K[..., : i + 1, :]
    V2[..., : i + 1, :] = V[..., : i + 1, :]
    out1, w1 = sdpa(Q, K, V, is_causal=True, return_weights=True)
    out2 = sdpa(Q2, K2, V2, is_causal=True)
    np.testing.assert_allclose(out2[..., : i + 1, :], out1[..., : i + 1, :], rtol=1e-12, atol=1e-12)
    assert (w1[..., i, i + 1 :] == 0.0).all()  # row i puts no weight on keys after i


@given(attention_inputs(min_d_k=2))
def test_property_default_scale_is_one_over_sqrt_d_k(qkv):
    Q, K, V = qkv
    d_k = Q.shape[-1]
    np.testing.assert_array_equal(sdpa(Q, K, V), sdpa(Q, K, V, scale=1 / math.sqrt(d_k)))


@st.composite
def broadcastable_inputs(draw):
    """Q, K, V and a mask whose leading dims are the batch with some dims set to 1 or dropped."""
    batch = draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=3))
    n_q, n_k, d_k, d_v = (draw(st.integers(1, 4)) for _ in range(4))

    def leading():
        dims = tuple(1 if draw(st.booleans()) else b for b in batch)
        return dims[draw(st.integers(0, len(dims))):]

    Q = draw(hnp.arrays(np.float64, leading() + (n_q, d_k), elements=FINITE))
    K = draw(hnp.arrays(np.float64, leading() + (n_k, d_k), elements=FINITE))
    V = draw(hnp.arrays(np.float64, leading() + (n_k, d_v), elements=FINITE))
    full = np.broadcast_shapes(Q.shape[:-2], K.shape[:-2], V.shape[:-2])
    mask_lead = full[len(full) - draw(st.integers(0, len(full))):]  # a suffix of the batch shape
    mask = draw(st.none() | hnp.arrays(np.bool_, mask_lead + (n_q, n_k)))
    return Q, K, V, mask


@given(broadcastable_inputs())
def test_property_batch_broadcasting_equals_an_explicit_loop(args):
    Q, K, V, mask = args
    batch = np.broadcast_shapes(Q.shape[:-2], K.shape[:-2], V.shape[:-2])
    out = sdpa(Q, K, V, mask)
    assert out.shape == batch + (Q.shape[-2], V.shape[-1])
    Qb = np.broadcast_to(Q, batch + Q.shape[-2:])
    Kb = np.broadcast_to(K, batch + K.shape[-2:])
    Vb = np.broadcast_to(V, batch + V.shape[-2:])
    Mb = None if mask is None else np.broadcast_to(mask, batch + mask.shape[-2:])
    for b in np.ndindex(batch):
        expected = sdpa(Qb[b], Kb[b], Vb[b], None if Mb is None else Mb[b])
        np.testing.assert_allclose(out[b], expected, rtol=1e-13, atol=1e-13)


# --------------------------------------------------------------------------- bad inputs

Q34, K54, V56 = np.ones((3, 4)), np.ones((5, 4)), np.ones((5, 6))


def _with(arr: np.ndarray, index: tuple, value: float) -> np.ndarray:
    arr = arr.copy()
    arr[index] = value
    return arr



BAD_INPUTS = [
    # --- scaled_dot_product_attention: shapes
    case("d_k_mismatch", lambda: sdpa(Q34, np.ones((5, 8)), np.ones((5, 6))), ValueError,
         "K has d_k=8 but Q has d_k=4", "Q (3, 4)", "K (5, 8)"),
    case("n_k_K_vs_V", lambda: sdpa(Q34, K54, np.ones((4, 6))), ValueError,
         "V has n_k=4 rows but K has n_k=5", "K (5, 4)", "V (4, 6)"),
    case("Q_1d", lambda: sdpa(np.ones(4), K54, V56), ValueError,
         "Q must have shape (..., n_q, d_k)", "got shape (4,)"),
    case("K_1d", lambda: sdpa(Q34, np.ones(4), V56), ValueError,
         "K must have shape (..., n_k, d_k)", "got shape (4,)"),
    case("Q_scalar", lambda: sdpa(2.0, K54, V56), ValueError,
         "Q must have shape", "got shape ()"),
    case("n_q_0", lambda: sdpa(np.ones((0, 4)), K54, V56), ValueError,
         "Q has n_q=0", "shape (0, 4)"),
    case("n_k_0", lambda: sdpa(Q34, np.ones((0, 4)), np.ones((0, 6))), ValueError,
         "K has n_k=0", "shape (0, 4)"),
    case("d_k_0", lambda: sdpa(np.ones((3, 0)), np.ones((5, 0)), V56), ValueError,
         "Q has d_k=0", "shape (3, 0)"),
    case("d_v_0", lambda: sdpa(Q34, K54, np.ones((5, 0))), ValueError,
         "V has d_v=0", "shape (5, 0)"),
    case("batch_dims_do_not_broadcast",
         lambda: sdpa(np.ones((2, 3, 4)), np.ones((3, 5, 4)), np.ones((3, 5, 6))), ValueError,
         "leading (batch) dimensions do not broadcast", "Q (2, 3, 4)", "K (3, 5, 4)", "V (3, 5, 6)"),
    # --- dtypes and values
    case("strings", lambda: sdpa([["a", "b"]], K54, V56), TypeError,
         "Q must hold real numbers; got dtype <U1"),
    case("object_array", lambda: sdpa(Q34, K54, np.array([[1.0, 2.0], [3.0]], dtype=object)), TypeError,
         "V must be a numeric array; got an object array"),
    case("ragged_list", lambda: sdpa(Q34, [[1.0, 2.0], [3.0]], V56), ValueError,
         "K could not be read as an array", "inhomogeneous"),
    case("complex", lambda: sdpa(Q34 + 1j, K54, V56), TypeError,
         "Q must hold real numbers, not complex ones (dtype complex128)"),
    case("bool_Q", lambda: sdpa(Q34 > 0, K54, V56), TypeError,
         "Q must hold real numbers, not booleans (dtype bool)"),
    case("nan_in_Q", lambda: sdpa(_with(Q34, (1, 2), np.nan), K54, V56), ValueError,
         "Q must be finite; it holds 1 NaN (first at index (1, 2) of shape (3, 4))"),
    case("inf_in_V", lambda: sdpa(Q34, K54, _with(V56, (2, 3), np.inf)), ValueError,
         "V must be finite; it holds 1 +inf (first at index (2, 3) of shape (5, 6))"),
    case("neg_inf_in_K", lambda: sdpa(Q34, _with(K54, (4, 0), -np.inf), V56), ValueError,
         "K must be finite; it holds 1 -inf (first at index (4, 0)"),
    # --- grouped-query attention
    case("gqa_no_head_axis", lambda: sdpa(Q34, K54, V56, enable_gqa=True), ValueError,
         "enable_gqa=True needs a head axis: Q must be (..., n_heads, n, d); got shape (3, 4)"),
    case("gqa_heads_not_a_multiple",
         lambda: sdpa(np.ones((3, 2, 4)), np.ones((2, 5, 4)), np.ones((2, 5, 6)), enable_gqa=True),
         ValueError, "the 3 query heads must be a multiple of the 2 key/value heads", "Q (3, 2, 4)"),
    case("gqa_K_V_heads_differ",
         lambda: sdpa(np.ones((4, 2, 4)), np.ones((2, 5, 4)), np.ones((1, 5, 6)), enable_gqa=True),
         ValueError, "V has 1 heads but K has 2", "V (1, 5, 6)"),
    case("gqa_flag_not_bool", lambda: sdpa(Q34, K54, V56, enable_gqa="yes"), TypeError, "enable_gqa"),
    # --- masks
    case("mask_wrong_shape", lambda: sdpa(Q34, K54, V56, np.ones((3, 4), bool)), ValueError,
         "attn_mask of shape (3, 4) does not broadcast to the scores' shape (3, 5)"),
    case("mask_wrong_batch", lambda: sdpa(np.ones((2, 3, 4)), K54, V56, np.ones((3, 3, 5), bool)), ValueError,
         "attn_mask of shape (3, 3, 5) does not broadcast to the scores' shape (2, 3, 5)"),
    case("int_mask", lambda: sdpa(Q34, K54, V56, np.ones((3, 5), int)), TypeError,
         "attn_mask must be boolean", "got integer dtype int64", "astype(bool)"),
    case("string_mask", lambda: sdpa(Q34, K54, V56, np.full((3, 5), "x")), TypeError,
         "attn_mask must be boolean", "got dtype <U1"),
    case("nan_in_float_mask", lambda: sdpa(Q34, K54, V56, _with(np.zeros((3, 5)), (0, 1), np.nan)),
         ValueError, "attn_mask must be finite; it holds 1 NaN (first at index (0, 1) of shape (3, 5))"),
    case("pos_inf_in_float_mask", lambda: sdpa(Q34, K54, V56, _with(np.zeros((3, 5)), (2, 4), np.inf)),
         ValueError, "attn_mask must be finite; it holds 1 +inf (first at index (2, 4)"),
    case("mask_and_is_causal", lambda: sdpa(Q34, K54, V56, np.ones((3, 5), bool), is_causal=True), ValueError,
         "either attn_mask or is_causal=True, not both"),
    # --- scale and flags
    case("scale_0", lambda: sdpa(Q34, K54, V56, scale=0), ValueError,
         "scale must be positive; got 0.0"),
    case("scale_negative", lambda: sdpa(Q34, K54, V56, scale=-0.5), ValueError,
         "scale must be positive; got -0.5"),
    case("scale_nan", lambda: sdpa(Q34, K54, V56, scale=float("nan")), ValueError,
         "scale must be finite; got nan"),
    case("scale_inf", lambda: sdpa(Q34, K54, V56, scale=np.inf), ValueError,
         "scale must be finite; got inf"),
    case("scale_string", lambda: sdpa(Q34, K54, V56, scale="0.5"), TypeError,
         "scale must be a real number or None; got str '0.5'"),
    case("scale_bool", lambda: sdpa(Q34, K54, V56, scale=True), TypeError,
         "scale must be a real number or None; got bool True"),
    case("is_causal_int", lambda: sdpa(Q34, K54, V56, is_causal=1), TypeError,
         "is_causal must be True or False; got int 1"),
    case("is_causal_str", lambda: sdpa(Q34, K54, V56, is_causal="yes"), TypeError,
         "is_causal must be True or False; got str 'yes'"),
    case("return_weights_none", lambda: sdpa(Q34, K54, V56, return_weights=None), TypeError,
         "return_weights must be True or False; got NoneType None"),
    # --- softmax
    case("softmax_axis_too_big", lambda: softmax(np.ones((2, 3)), axis=2), ValueError,
         "axis 2 is out of range for x of shape (2, 3)"),
    case("softmax_axis_too_negative", lambda: softmax(np.ones((2, 3)), axis=-3), ValueError,
         "axis -3 is out of range for x of shape (2, 3)"),
    case("softmax_axis_float", lambda: softmax(np.ones((2, 3)), axis=1.0), TypeError,
         "axis must be an integer; got float 1.0"),
    case("softmax_float_mask", lambda: softmax(np.ones((2, 3)), mask=np.ones((2, 3))), TypeError,
         "mask must be boolean (True = keep); got dtype float64"),
    case("softmax_int_mask", lambda: softmax(np.ones((2, 3)), mask=np.ones((2, 3), int)), TypeError,
         "mask must be boolean (True = keep); got dtype int64"),
    case("softmax_mask_wrong_shape", lambda: softmax(np.ones((2, 3)), mask=[True, False]), ValueError,
         "mask of shape (2,) does not broadcast", "(2, 3)"),
    case("softmax_nan", lambda: softmax([1.0, np.nan]), ValueError,
         "x must be finite; it holds 1 NaN (first at index (1,) of shape (2,))"),
    case("softmax_pos_inf", lambda: softmax([np.inf, 1.0]), ValueError,
         "x must be finite; it holds 1 +inf (first at index (0,)"),
    case("softmax_scalar", lambda: softmax(3.0), ValueError,
         "x must have at least 1 dimension; got a scalar"),
    case("softmax_strings", lambda: softmax(["a", "b"]), TypeError,
         "x must hold real numbers; got dtype <U1"),
    case("softmax_empty_axis", lambda: softmax(np.ones((3, 0))), ValueError,
         "x has length 0 along axis -1", "shape (3, 0)"),
    # --- causal_mask
    case("causal_mask_0", lambda: causal_mask(0), ValueError, "n_q must be positive; got 0"),
    case("causal_mask_float", lambda: causal_mask(2.5), TypeError, "n_q must be an integer; got float 2.5"),
    case("causal_mask_n_k_negative", lambda: causal_mask(3, -1), ValueError, "n_k must be positive; got -1"),
    case("causal_mask_bool", lambda: causal_mask(True), TypeError, "n_q must be an integer; got bool True"),
    # --- padding_mask
    case("padding_too_long", lambda: padding_mask([1, 5], 4), ValueError,
         "lengths must lie in 0..n_k=4; got [5] at positions [1]"),
    case("padding_negative", lambda: padding_mask([-1, 2], 4), ValueError,
         "lengths must lie in 0..n_k=4; got [-1] at positions [0]"),
    case("padding_non_integer", lambda: padding_mask([1, 2.5], 4), TypeError,
         "lengths must be integers; got dtype float64: [1.0, 2.5]"),
    case("padding_empty", lambda: padding_mask([], 4), ValueError,
         "lengths must be a non-empty 1-D sequence; got shape (0,)"),
    case("padding_2d", lambda: padding_mask([[1, 2]], 4), ValueError,
         "lengths must be a non-empty 1-D sequence; got shape (1, 2)"),
    case("padding_n_k_0", lambda: padding_mask([1, 2], 0), ValueError, "n_k must be positive; got 0"),
    # --- finite inputs whose scores overflow the dtype (would be inf - inf = NaN)
    case("scores_overflow_float32",
         lambda: sdpa(*(np.full((2, 1), 1e20, np.float32) for _ in "QK"), np.ones((2, 1), np.float32)),
         ValueError, "the scores Q Kᵀ · scale overflow float32", "largest |Q| = 1e+20"),
    case("scores_inf_minus_inf",
         lambda: sdpa(np.array([[1e300, 1e300]]), np.array([[1e300, -1e300]]), np.ones((1, 1))),
         ValueError, "overflow float64"),
    # every score of a row overflowing to -inf must not pass for "nothing to attend to" (zeros)
    case("scores_all_overflow_to_minus_inf",
         lambda: sdpa(np.full((2, 4), 1e20, np.float32), np.full((3, 4), -1e20, np.float32),
                      np.ones((3, 2), np.float32)),
         ValueError, "overflow float32", "|K| = 1e+20"),
    case("scores_minus_inf_under_a_mask",
         lambda: sdpa(np.array([[1e300, 0.0]]), np.array([[-1e300, 0.0], [1.0, 1.0]]), np.ones((2, 1)),
                      attn_mask=np.array([[True, False]])),
         ValueError, "overflow float64", "largest |Q| = 1e+300"),
]


@pytest.mark.parametrize(("n_heads", "n_kv"), [(4, 1), (4, 2), (6, 3), (2, 2)])
@pytest.mark.parametrize("batch", [(), (3,)])
def test_grouped_query_heads_use_their_groups_key_value_head(n_heads, n_kv, batch):
    """enable_gqa: query head h attends with key/value head h // (n_heads // n_kv), as the naive loop."""
    rng = np.random.default_rng(n_heads * 10 + n_kv)
    Q = rng.normal(size=batch + (n_heads, 3, 4))  # (..., n_heads, n_q, d_k)
    K = rng.normal(size=batch + (n_kv, 5, 4))  # (..., n_kv_heads, n_k, d_k)
    V = rng.normal(size=batch + (n_kv, 5, 2))  # (..., n_kv_heads, n_k, d_v)
    mask = rng.random((3, 5)) < 0.7
    out, w = scaled_dot_product_attention(Q, K, V, mask, enable_gqa=True, return_weights=True)
    assert out.shape == batch + (n_heads, 3, 2) and w.shape == batch + (n_heads, 3, 5)
    group = n_heads // n_kv
    for idx in np.ndindex(*batch):
        for h in range(n_heads):
            expected, _ = naive_attention(Q[idx][h], K[idx][h // group], V[idx][h // group], mask)
            np.testing.assert_allclose(out[idx][h], expected, rtol=1e-12, atol=1e-12)
    if group > 1 and n_kv > 1:  # not pairing head h with K head h % n_kv (tiling instead of repeating)
        tiled = scaled_dot_product_attention(Q, np.concatenate([K] * group, axis=-3),
                                             np.concatenate([V] * group, axis=-3), mask)
        assert not np.allclose(out, tiled)


@pytest.mark.parametrize(("call", "exc", "match"), BAD_INPUTS)
def test_bad_input_raises_a_message_naming_it(call, exc, match):
    with pytest.raises(exc, match=match):
        call()


def test_bad_input_catalogue_is_large_and_distinct():
    ids = [p.id for p in BAD_INPUTS]
    assert len(ids) == len(set(ids)) >= 20
    assert len({p.values[2] for p in BAD_INPUTS}) == len(BAD_INPUTS)  # every message pattern differs


# float16: computed in float32, returned as float16 (as PyTorch does). A row sum of n_k weights up to 1
# overflows float16 (largest finite 65,504) once n_k reaches about 65,520: before this rule attnlib returned
# all-zero rows there, or NaN for equal keys.

LONG_ROWS = [65_536, 131_072]


@pytest.mark.parametrize("n_k", LONG_ROWS)
def test_float16_softmax_of_a_long_row_is_uniform_not_zero(n_k: int) -> None:
    w = softmax(np.zeros((2, n_k), dtype=np.float16))
    assert w.dtype == np.float16
    np.testing.assert_allclose(w.astype(np.float64), 1.0 / n_k, rtol=1e-3)
    np.testing.assert_allclose(w.astype(np.float64).sum(axis=-1), 1.0, rtol=2e-3)


@pytest.mark.parametrize("n_k", LONG_ROWS)
def test_float16_softmax_of_a_long_random_row_matches_float64(n_k: int) -> None:
    x = np.random.default_rng(n_k).standard_normal(n_k).astype(np.float16)
    got = softmax(x)
    want = softmax(x.astype(np.float64))
    assert got.dtype == np.float16
    # Weights this small are float16 subnormals, spaced 2**-24 apart: half of that is the best possible.
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=2e-3, atol=2.0**-25)


@pytest.mark.parametrize("n_k", LONG_ROWS)
@pytest.mark.parametrize("equal_keys", [False, True], ids=["random_keys", "equal_keys"])
def test_float16_attention_over_long_rows_matches_float64(n_k: int, equal_keys: bool) -> None:
    rng = np.random.default_rng(n_k)
    Q = rng.standard_normal((3, 16)).astype(np.float16)  # (n_q, d_k)
    K = np.ones((n_k, 16), np.float16) if equal_keys else rng.standard_normal((n_k, 16)).astype(np.float16)
    V = rng.standard_normal((n_k, 8)).astype(np.float16)  # (n_k, d_v)
    want = scaled_dot_product_attention(Q.astype(np.float64), K.astype(np.float64), V.astype(np.float64))
    got, weights = scaled_dot_product_attention(Q, K, V, return_weights=True)
    assert got.dtype == weights.dtype == np.float16
    np.testing.assert_allclose(got.astype(np.float64), want, atol=1e-3)
    np.testing.assert_allclose(weights.astype(np.float64).sum(axis=-1), 1.0, rtol=2e-3)
    assert np.abs(want).max() > 1e-3, "the reference is not trivially zero, so zeros would fail"


# The contract of the docstring, in every path that computes attention: a row whose allowed scores all
# overflow to -inf is an error, never a row that passes for fully masked (zero weights, zero output).
def _overflowing_rows():
    from attnlib.grad import attention_backward
    from attnlib.kvcache import KVCache, incremental_attention
    from attnlib.tiled import tiled_attention

    Q = np.array([[1e300, 0.0], [1e300, 0.0]])  # both rows' scores -1e600 / sqrt(2): -inf in float64
    K = np.array([[-1e300, 0.0], [-1e300, 0.0]])
    V = np.ones((2, 1))

    def cached():
        cache = KVCache(2, 1)
        cache.append(K, V)
        return cache.attend(Q[:1])

    return {
        "core": lambda: scaled_dot_product_attention(Q, K, V),
        "core, causal": lambda: scaled_dot_product_attention(Q, K, V, is_causal=True),
        "core, float32": lambda: scaled_dot_product_attention(
            (Q * 1e-280).astype(np.float32), (K * 1e-280).astype(np.float32), V.astype(np.float32)),
        "tiled": lambda: tiled_attention(Q, K, V, block_q=1, block_k=1),
        "incremental": lambda: incremental_attention(Q, K, V),
        "KV cache": cached,
        "backward": lambda: attention_backward(Q, K, V, np.ones((2, 1))),
    }


@pytest.mark.parametrize("path", list(_overflowing_rows()))
def test_scores_overflowing_to_minus_inf_raise_in_every_path(path):
    with pytest.raises(ValueError, match=r"the scores Q Kᵀ · scale overflow float(64|32)"):
        _overflowing_rows()[path]()


# --------------------------------------------------------------------------- scale rules
@pytest.mark.parametrize("d_k", [1, 2, 3, 7, 64, 100, 512])
def test_scale_rules_are_the_powers_of_d_k_and_the_default_is_the_same_float(d_k):
    rng = np.random.default_rng(d_k)
    Q, K, V = (rng.standard_normal((3, d_k)) for _ in range(3))
    default = scaled_dot_product_attention(Q, K, V)
    # bit for bit: the training code and the explorers name the default scale by its rule
    np.testing.assert_array_equal(scaled_dot_product_attention(Q, K, V, scale=core.scale_for(d_k)), default)
    assert core.scale_for(d_k, "inverse_sqrt") == core.scale_for(d_k, 0.5) == 1 / math.sqrt(d_k)
    assert core.scale_for(d_k, "none") == core.scale_for(d_k, 0) == 1.0
    assert core.scale_for(d_k, "inverse") == core.scale_for(d_k, 1) == 1 / d_k
    assert core.scale_for(d_k, 0.25) == pytest.approx(d_k ** -0.25, rel=1e-15)
    assert core.SCALE_RULES == ("inverse_sqrt", "none", "inverse")


@pytest.mark.parametrize(
    ("args", "exc", "match"),
    [
        ((16, "sqrt"), ValueError, "rule must be one of ('inverse_sqrt', 'none', 'inverse'); got 'sqrt'"),
        ((16, -0.5), ValueError, "rule must be non-negative; got -0.5"),
        ((16, float("inf")), ValueError, "rule must be finite; got inf"),
        ((16, [0.5]), TypeError, "rule must be a real number; got list"),
        ((0, "none"), ValueError, "d_k must be positive; got 0"),
        ((2.0, "none"), TypeError, "d_k must be an integer; got float"),
    ],
)
def test_scale_for_bad_input(args, exc, match):
    with pytest.raises(exc, match=re.escape(match)):
        core.scale_for(*args)


def test_top_level_is_lean():
    """attnlib exports what the chapters call as attnlib.<name>; everything else stays in its module."""
    import glob
    import json

    import attnlib

    chapters = sorted(glob.glob(str(Path(__file__).resolve().parents[1] / "book" / "0*.ipynb")))
    assert len(chapters) >= 7, chapters  # found from any working directory, not only the repository root
    called = set()
    for path in chapters:
        for cell in json.load(open(path, encoding="utf-8"))["cells"]:
            if cell["cell_type"] == "code":
                # import lines name modules, not calls
                code = re.sub(r"(?m)^\s*(from|import) .*$", "", "".join(cell["source"]))
                called |= set(re.findall(r"\battnlib\.([A-Za-z_]\w*)", code))
    modules = {name for name in called if type(getattr(attnlib, name, None)).__name__ == "module"}
    assert called - modules <= set(attnlib.__all__), called - modules - set(attnlib.__all__)
    assert len(attnlib.__all__) <= 32 and "abc" not in dir(attnlib)
    assert all(getattr(attnlib, name) is not None for name in attnlib.__all__)
    assert not {"KINDS", "CMAP", "StageCount", "ScoreCosts"} & set(dir(attnlib))  # helpers stay home


def test_import_attnlib_loads_neither_matplotlib_nor_the_exercise_registry():
    """``import attnlib`` is the mechanism only; attnlib.plots and attnlib.check load when first used."""
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[1]
    code = (
        "import sys, attnlib\n"
        "heavy = ('matplotlib', 'plotly', 'ipywidgets', 'attnlib.plots', 'attnlib.exercises',\n"
        "         'attnlib.feedback')\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in heavy or m in heavy))\n"
        "attnlib.scaled_dot_product_attention, attnlib.check, attnlib.plots.CMAP\n"
        "print(sorted(m for m in ('matplotlib', 'attnlib.exercises') if m in sys.modules))\n"
        "print(sorted(set(attnlib.__all__) - set(dir(attnlib))))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True, check=True)
    assert out.stdout.splitlines() == ["[]", "['attnlib.exercises', 'matplotlib']", "[]"], out.stdout


def test_every_public_module_is_reachable_as_an_attribute():
    import attnlib

    root = Path(attnlib.__file__).parent
    on_disk = {p.stem for p in root.glob("*.py") if not p.stem.startswith("_")}
    on_disk |= {p.parent.name for p in root.glob("*/__init__.py")}
    assert on_disk == set(attnlib._MODULES), on_disk ^ set(attnlib._MODULES)
    assert all(type(getattr(attnlib, name)).__name__ == "module" for name in on_disk)
    with pytest.raises(AttributeError, match="no attribute 'softmaxx'"):
        attnlib.softmaxx  # noqa: B018


def test_the_factor_one_over_sqrt_d_k_is_written_once():
    """Every default scale comes from core.scale_for: the expression 1/√d_k appears once in attnlib's code."""
    import io
    import tokenize

    root = Path(__file__).resolve().parents[1] / "attnlib"
    factor = re.compile(r"/(math|np)\.sqrt\([^)]*d_(k|head)|1(\.0)?/(math|np)\.sqrt\(len\(|\*\*-0\.5")
    found = []
    for path in sorted(root.rglob("*.py")):
        tokens = tokenize.generate_tokens(io.StringIO(path.read_text(encoding="utf-8")).readline)
        code = {}  # line number -> the line's code without strings and comments, spaces removed
        for tok in tokens:
            if tok.type not in (tokenize.STRING, tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE):
                code[tok.start[0]] = code.get(tok.start[0], "") + tok.string
        found += [f"{path.relative_to(root)}:{n}" for n, line in code.items() if factor.search(line)]
    assert len(found) == 1 and found[0].startswith("core.py:"), found
