"""Tests of attnlib.tiled: attention by blocks with an online softmax.

1. a naive pure-Python online softmax (one key at a time, ``math.exp``)
   checked against the direct softmax, then used as the reference;
2. tiled equals direct ``scaled_dot_product_attention`` for any block sizes
   (hypothesis), with batch dimensions, causal masking and both float dtypes;
3. memory: the ``n_q × n_k`` matrix is never allocated (tracemalloc);
4. a catalogue of bad inputs, each with its message.
"""

from __future__ import annotations

import math
import tracemalloc
from functools import partial

import hypothesis.extra.numpy as hnp
import numpy as np
import pytest
from cases import case
from hypothesis import given, settings
from hypothesis import strategies as st

from attnlib.core import scaled_dot_product_attention
from attnlib.tiled import tiled_attention

sdpa = scaled_dot_product_attention


# --------------------------------------------------------------------------- naive reference
def naive_online_attention(Q, K, V, *, is_causal=False, scale=None) -> np.ndarray:
    """The online-softmax recurrence with Python floats, one key at a time (block size 1).

    For each query row: ``m`` running max, ``l`` running sum, ``acc`` running
    unnormalised output, rescaled by ``exp(m_old - m_new)`` when ``m`` grows.
    2-D inputs only.
    """
    Q, K, V = (np.asarray(a, dtype=np.float64).tolist() for a in (Q, K, V))
    n_q, n_k, d_k, d_v = len(Q), len(K), len(Q[0]), len(V[0])
    if scale is None:
        scale = 1.0 / math.sqrt(d_k)
    out = []
    for i in range(n_q):
        m, l, acc = -math.inf, 0.0, [0.0] * d_v
        for j in range(n_k):
            if is_causal and j > i:
                break
            s = sum(Q[i][t] * K[j][t] for t in range(d_k)) * scale
            m_new = max(m, s)
            alpha = math.exp(m - m_new)  # exp(-inf) = 0 on the first key
            e = math.exp(s - m_new)
            l = l * alpha + e
            acc = [a * alpha + e * V[j][c] for c, a in enumerate(acc)]
            m = m_new
        out.append([a / l for a in acc])
    return np.array(out)


def test_naive_online_reference_on_a_hand_computed_case():
    # scores 1, 3, 2 (d_k = 1, scale 1): the maximum changes at the second key.
    out = naive_online_attention([[1.0]], [[1.0], [3.0], [2.0]], [[1.0], [0.0], [5.0]], scale=1.0)
    e = [math.exp(1.0), math.exp(3.0), math.exp(2.0)]
    assert out.shape == (1, 1)
    assert out[0, 0] == pytest.approx((e[0] * 1.0 + e[2] * 5.0) / sum(e), rel=1e-15)


@pytest.mark.parametrize("is_causal", [False, True])
@pytest.mark.parametrize(("n_q", "n_k"), [(1, 1), (3, 7), (7, 3), (6, 6)])
def test_naive_online_reference_equals_direct_attention(n_q, n_k, is_causal):
    rng = np.random.default_rng(n_q * 10 + n_k)
    Q, K, V = rng.standard_normal((n_q, 3)), rng.standard_normal((n_k, 3)), rng.standard_normal((n_k, 2))
    np.testing.assert_allclose(
        naive_online_attention(Q, K, V, is_causal=is_causal),
        sdpa(Q, K, V, is_causal=is_causal),
        rtol=1e-13,
        atol=1e-14,
    )


# --------------------------------------------------------------------------- tiled vs references
# (n_q, n_k, block_q, block_k): blocks that divide n, do not, equal 1, exceed n.
BLOCKINGS = [
    (12, 12, 4, 4),
    (12, 12, 5, 7),
    (13, 9, 1, 1),
    (9, 13, 2, 3),
    (10, 10, 10, 10),
    (10, 10, 64, 3),
    (10, 10, 3, 64),
    (7, 11, 100, 100),
    (1, 20, 1, 6),
    (20, 1, 6, 1),
]


@pytest.mark.parametrize("is_causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize(("n_q", "n_k", "block_q", "block_k"), BLOCKINGS)
def test_tiled_matches_naive_online_loops_and_direct(n_q, n_k, block_q, block_k, is_causal):
    rng = np.random.default_rng(n_q * 1000 + n_k * 10 + block_q)
    Q, K, V = rng.standard_normal((n_q, 4)), rng.standard_normal((n_k, 4)), rng.standard_normal((n_k, 3))
    got = tiled_attention(Q, K, V, block_q=block_q, block_k=block_k, is_causal=is_causal)
    assert got.shape == (n_q, 3) and got.dtype == np.float64
    ref = naive_online_attention(Q, K, V, is_causal=is_causal)
    np.testing.assert_allclose(got, ref, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(got, sdpa(Q, K, V, is_causal=is_causal), rtol=1e-12, atol=1e-14)


def test_tiled_with_a_custom_scale():
    rng = np.random.default_rng(3)
    Q, K, V = rng.standard_normal((9, 4)), rng.standard_normal((11, 4)), rng.standard_normal((11, 2))
    got = tiled_attention(Q, K, V, block_q=4, block_k=3, scale=2.5)
    np.testing.assert_allclose(got, naive_online_attention(Q, K, V, scale=2.5), rtol=1e-12, atol=1e-14)
    assert not np.allclose(got, tiled_attention(Q, K, V, block_q=4, block_k=3))


def test_large_scores_make_the_running_maximum_change_often():
    # Increasing scores: every key block raises the maximum, so every rescaling path runs;
    # the early keys end up with weights that underflow to 0 in the direct computation too.
    n = 30
    Q = np.ones((3, 1))
    K = np.arange(n, dtype=np.float64)[:, None] * 40.0  # scores 0, 40, ..., 1160
    V = np.random.default_rng(0).standard_normal((n, 2))
    got = tiled_attention(Q, K, V, block_q=2, block_k=4)
    np.testing.assert_allclose(got, sdpa(Q, K, V), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(got[0], V[-1], rtol=1e-12)  # all weight on the last key


def test_causal_tiles_above_the_diagonal_are_never_computed(monkeypatch):
    # n = 10 in blocks of 4: query blocks [0,4) [4,8) [8,10) need key blocks up to their last row.
    rng = np.random.default_rng(1)
    Q, K, V = rng.standard_normal((10, 5)), rng.standard_normal((10, 5)), rng.standard_normal((10, 3))
    expected = sdpa(Q, K, V, is_causal=True)
    score_tiles = []
    matmul = np.matmul

    def spy(a, b, *args, **kwargs):
        if b.shape[-2] == 5:  # (rows, d_k) @ (d_k, cols), a tile of scores; never (cols <= 4, d_v + 1)
            score_tiles.append((a.shape[-2], b.shape[-1]))
        return matmul(a, b, *args, **kwargs)

    monkeypatch.setattr(np, "matmul", spy)
    got = tiled_attention(Q, K, V, block_q=4, block_k=4, is_causal=True)
    monkeypatch.undo()
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-14)
    assert score_tiles == [(4, 4), (4, 4), (4, 4), (2, 4), (2, 4), (2, 2)]
    assert sum(r * c for r, c in score_tiles) == 68  # of 100 scores; the causal triangle has 55


# --------------------------------------------------------------------------- hypothesis
FINITE = st.floats(-10, 10, allow_nan=False, allow_infinity=False)
TOL = {np.float64: 1e-12, np.float32: 1e-6}


@st.composite
def tiled_cases(draw, *, adversarial: bool = False):
    """Shapes, block sizes, causal flag and dtype drawn by hypothesis.

    The data are standard normal from a drawn seed, except with ``adversarial`` (float64 only),
    where hypothesis picks every entry itself (repeated values, exact ties, large scores).
    In float32 that second kind would test float32 rounding rather than tiling: with 40 equal
    weights the direct computation itself is off by ~1.4e-6 relative.
    """
    dtype = np.float64 if adversarial else draw(st.sampled_from([np.float64, np.float32]))
    n_q, n_k = draw(st.integers(1, 40)), draw(st.integers(1, 40))
    d_k, d_v = draw(st.integers(1, 8)), draw(st.integers(1, 8))
    shapes = [(n_q, d_k), (n_k, d_k), (n_k, d_v)]
    if adversarial:
        Q, K, V = (draw(hnp.arrays(dtype, s, elements=FINITE)) for s in shapes)
    else:
        rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
        Q, K, V = (rng.standard_normal(s).astype(dtype) for s in shapes)
    blocks = {"block_q": draw(st.integers(1, 50)), "block_k": draw(st.integers(1, 50))}
    return Q, K, V, blocks, draw(st.booleans())


@settings(max_examples=150)
@given(tiled_cases())
def test_property_tiled_equals_direct_for_any_block_sizes(case):
    Q, K, V, blocks, is_causal = case
    got = tiled_attention(Q, K, V, is_causal=is_causal, **blocks)
    expected = sdpa(Q, K, V, is_causal=is_causal)
    assert got.dtype == expected.dtype == Q.dtype
    tol = TOL[Q.dtype.type]
    np.testing.assert_allclose(got, expected, rtol=tol, atol=tol)


@given(tiled_cases(adversarial=True))
def test_property_tiled_equals_direct_on_adversarial_float64_data(case):
    Q, K, V, blocks, is_causal = case
    got = tiled_attention(Q, K, V, is_causal=is_causal, **blocks)
    np.testing.assert_allclose(got, sdpa(Q, K, V, is_causal=is_causal), rtol=1e-12, atol=1e-12)


@given(tiled_cases(), st.data())
def test_property_causal_row_ignores_later_tokens(case, data):
    Q, K, V, blocks, _ = case
    i = data.draw(st.integers(0, Q.shape[0] - 1))
    K2, V2 = K.copy(), V.copy()
    K2[i + 1 :] = K2[i + 1 :] * 2 + 1  # change every key and value after position i
    V2[i + 1 :] = V2[i + 1 :] * 2 + 1
    out1 = tiled_attention(Q, K, V, is_causal=True, **blocks)
    out2 = tiled_attention(Q, K2, V2, is_causal=True, **blocks)
    np.testing.assert_array_equal(out1[: i + 1], out2[: i + 1])


# --------------------------------------------------------------------------- batch dimensions
@pytest.mark.parametrize(
    "shapes",
    [
        ((2, 9, 4), (2, 11, 4), (2, 11, 3)),
        ((2, 3, 9, 4), (2, 3, 11, 4), (2, 3, 11, 3)),
        ((2, 1, 9, 4), (1, 3, 11, 4), (3, 11, 3)),  # broadcast against each other
        ((9, 4), (3, 11, 4), (11, 3)),  # only K has a batch
    ],
    ids=["batch1", "batch2", "broadcast", "K_only"],
)
@pytest.mark.parametrize("is_causal", [False, True], ids=["full", "causal"])
def test_batch_dims_equal_direct_and_a_loop_over_slices(shapes, is_causal):
    rng = np.random.default_rng(len(shapes[0]))
    Q, K, V = (rng.standard_normal(s) for s in shapes)
    batch = np.broadcast_shapes(*(s[:-2] for s in shapes))
    got = tiled_attention(Q, K, V, block_q=4, block_k=5, is_causal=is_causal)
    assert got.shape == batch + (9, 3)
    np.testing.assert_allclose(got, sdpa(Q, K, V, is_causal=is_causal), rtol=1e-12, atol=1e-14)
    Qb, Kb, Vb = (np.broadcast_to(a, batch + a.shape[-2:]) for a in (Q, K, V))
    for b in np.ndindex(batch):
        np.testing.assert_allclose(
            got[b], naive_online_attention(Qb[b], Kb[b], Vb[b], is_causal=is_causal), rtol=1e-12, atol=1e-14
        )


# --------------------------------------------------------------------------- dtypes and inputs
@pytest.mark.parametrize(
    ("dtype", "expected"),
    [(np.float32, np.float32), (np.float64, np.float64), (np.int64, np.float64), (np.float16, np.float16)],
)
def test_dtype_is_kept_as_in_core(dtype, expected):
    rng = np.random.default_rng(0)
    Q, K, V = (rng.integers(-3, 4, size=s).astype(dtype) for s in [(5, 3), (6, 3), (6, 2)])
    got = tiled_attention(Q, K, V, block_q=2, block_k=4)
    direct = sdpa(Q, K, V)
    assert got.dtype == direct.dtype == expected
    tol = {np.float16: 1e-2, np.float32: 1e-6}.get(expected, 1e-12)
    np.testing.assert_allclose(got, direct, rtol=tol, atol=tol)


def test_lists_read_only_and_broadcast_views_are_accepted_and_inputs_unchanged():
    Q = np.broadcast_to(np.array([[1.0, 0.0]]), (2, 3, 2))
    K = np.eye(2)
    K.flags.writeable = False
    V = [[1.0, 2.0], [3.0, 4.0]]
    got = tiled_attention(Q, K, V, block_q=2, block_k=1)
    np.testing.assert_allclose(got, sdpa(Q, K, V), rtol=1e-14)
    assert K.tolist() == [[1.0, 0.0], [0.0, 1.0]] and V == [[1.0, 2.0], [3.0, 4.0]]


# --------------------------------------------------------------------------- memory
def _peak_bytes(fn) -> int:
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        before = tracemalloc.get_traced_memory()[0]
        fn()
        return tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("is_causal", [False, True], ids=["full", "causal"])
def test_tiled_never_allocates_the_n_by_n_matrix(is_causal):
    n, d = 2048, 16
    rng = np.random.default_rng(0)
    Q, K, V = (rng.standard_normal((n, d)) for _ in range(3))
    n_by_n = n * n * 8  # bytes of one float64 (n, n) array: 32 MiB
    tiled_peak = _peak_bytes(lambda: tiled_attention(Q, K, V, block_q=256, block_k=256, is_causal=is_causal))
    direct_peak = _peak_bytes(lambda: sdpa(Q, K, V, is_causal=is_causal))
    assert direct_peak >= n_by_n  # the measurement sees NumPy's allocations
    assert tiled_peak < 0.10 * n_by_n, f"tiled peak {tiled_peak / 2**20:.1f} MiB"


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.float16])
@pytest.mark.parametrize("is_causal", [False, True], ids=["full", "causal"])
def test_tiled_memory_is_the_n_by_d_copies_plus_a_tile_whatever_n(is_causal, dtype):
    # The module docstring: besides the output and a copy of V with a column of ones (both about n·d
    # numbers; float16 inputs add float32 copies of Q and K), one tile of scores and a state of
    # block_q rows, whatever n is. So the rest of the peak is a few tiles, the same at every n.
    d, b = 16, 128
    item, work = np.dtype(dtype).itemsize, max(np.dtype(dtype).itemsize, 4)
    rest = []
    for n in (1024, 4096):
        Q, K, V = np.random.default_rng(n).standard_normal((3, n, d)).astype(dtype)
        n_by_d = n * d * item + n * (d + 1) * work + (2 * n * d * work if item == 2 else 0)
        peak = _peak_bytes(partial(tiled_attention, Q, K, V, block_q=b, block_k=b, is_causal=is_causal))
        rest.append(peak - n_by_d)
    tile = b * b * work
    assert all(tile <= r <= 8 * tile for r in rest), (rest, tile)
    assert abs(rest[1] - rest[0]) <= tile // 4, (rest, tile)  # does not grow with n


# --------------------------------------------------------------------------- bad inputs

Q34, K54, V56 = np.ones((3, 4)), np.ones((5, 4)), np.ones((5, 6))


def tiled(Q=Q34, K=K54, V=V56, **kwargs):
    kwargs = {"block_q": 2, "block_k": 2, **kwargs}
    return tiled_attention(Q, K, V, **kwargs)


def _with(arr: np.ndarray, index: tuple, value: float) -> np.ndarray:
    arr = arr.copy()
    arr[index] = value
    return arr



BAD_INPUTS = [
    case("d_k_mismatch", lambda: tiled(K=np.ones((5, 8))), ValueError,
         "K has d_k=8 but Q has d_k=4", "Q (3, 4)", "K (5, 8)"),
    case("n_k_K_vs_V", lambda: tiled(V=np.ones((4, 6))), ValueError,
         "V has n_k=4 rows but K has n_k=5", "K (5, 4)", "V (4, 6)"),
    case("Q_1d", lambda: tiled(Q=np.ones(4)), ValueError,
         "Q must have shape (..., n_q, d_k)", "got shape (4,)"),
    case("n_q_0", lambda: tiled(Q=np.ones((0, 4))), ValueError, "Q has n_q=0", "shape (0, 4)"),
    case("d_v_0", lambda: tiled(V=np.ones((5, 0))), ValueError, "V has d_v=0", "shape (5, 0)"),
    case("batch_dims_do_not_broadcast",
         lambda: tiled(np.ones((2, 3, 4)), np.ones((3, 5, 4)), np.ones((3, 5, 6))), ValueError,
         "leading (batch) dimensions do not broadcast", "Q (2, 3, 4)", "K (3, 5, 4)", "V (3, 5, 6)"),
    case("strings", lambda: tiled(Q=[["a", "b"]]), TypeError, "Q must hold real numbers; got dtype <U1"),
    case("complex", lambda: tiled(K=K54 + 1j), TypeError, "K must hold real numbers, not complex ones"),
    case("nan_in_V", lambda: tiled(V=_with(V56, (2, 3), np.nan)), ValueError,
         "V must be finite; it holds 1 NaN (first at index (2, 3) of shape (5, 6))"),
    case("inf_in_Q", lambda: tiled(Q=_with(Q34, (0, 1), np.inf)), ValueError,
         "Q must be finite; it holds 1 +inf (first at index (0, 1)"),
    case("block_q_0", lambda: tiled(block_q=0), ValueError, "block_q must be positive; got 0"),
    case("block_k_negative", lambda: tiled(block_k=-3), ValueError, "block_k must be positive; got -3"),
    case("block_q_float", lambda: tiled(block_q=2.0), TypeError, "block_q must be an integer; got float 2.0"),
    case("block_k_bool", lambda: tiled(block_k=True), TypeError, "block_k must be an integer; got bool True"),
    case("block_k_none", lambda: tiled(block_k=None), TypeError, "block_k must be an integer; got NoneType"),
    case("block_q_missing", lambda: tiled_attention(Q34, K54, V56, block_k=2), TypeError,
         "missing 1 required keyword-only argument: 'block_q'"),
    case("is_causal_int", lambda: tiled(is_causal=1), TypeError,
         "is_causal must be True or False; got int 1"),
    case("scale_0", lambda: tiled(scale=0), ValueError, "scale must be positive; got 0.0"),
    case("scale_nan", lambda: tiled(scale=float("nan")), ValueError, "scale must be finite; got nan"),
    case("scale_string", lambda: tiled(scale="1"), TypeError, "scale must be a real number or None; got str"),
    case("scores_overflow_float32",
         lambda: tiled(*(np.full((2, 1), 1e20, np.float32) for _ in "QK"), np.ones((2, 1), np.float32)),
         ValueError, "the scores Q Kᵀ · scale overflow float32", "largest |Q| = 1e+20"),
    case("scores_inf_minus_inf",
         lambda: tiled(np.array([[1e300, 1e300]]), np.array([[1e300, -1e300]]), np.ones((1, 1))),
         ValueError, "overflow float64"),
    # every score of a row overflowing to -inf must not pass for "nothing to attend to" (zeros)
    case("scores_all_overflow_to_minus_inf",
         lambda: tiled(np.full((2, 4), 1e20, np.float32), np.full((3, 4), -1e20, np.float32),
                      np.ones((3, 2), np.float32)),
         ValueError, "overflow float32", "|K| = 1e+20"),
    case("scores_minus_inf_under_a_mask",
         lambda: tiled(np.array([[1e300, 0.0]]), np.array([[-1e300, 0.0], [1.0, 1.0]]), np.ones((2, 1)),
                      is_causal=True),
         ValueError, "overflow float64", "largest |Q| = 1e+300"),
]


@pytest.mark.parametrize(("call", "exc", "match"), BAD_INPUTS)
def test_bad_input_raises_a_message_naming_it(call, exc, match):
    with pytest.raises(exc, match=match):
        call()


def test_bad_input_catalogue_is_distinct():
    ids = [p.id for p in BAD_INPUTS]
    assert len(ids) == len(set(ids)) >= 20
    assert len({p.values[2] for p in BAD_INPUTS}) == len(BAD_INPUTS)


@pytest.mark.parametrize("n_k", [65_536, 131_072])
@pytest.mark.parametrize("equal_keys", [False, True], ids=["random_keys", "equal_keys"])
def test_float16_tiles_accumulate_in_float32_over_long_rows(n_k: int, equal_keys: bool) -> None:
    """A running sum l of n_k terms up to 1 would overflow float16 (65,504); it is kept in float32."""
    rng = np.random.default_rng(n_k)
    Q = rng.standard_normal((3, 16)).astype(np.float16)  # (n_q, d_k)
    K = np.ones((n_k, 16), np.float16) if equal_keys else rng.standard_normal((n_k, 16)).astype(np.float16)
    V = rng.standard_normal((n_k, 8)).astype(np.float16)  # (n_k, d_v)
    want = scaled_dot_product_attention(Q.astype(np.float64), K.astype(np.float64), V.astype(np.float64))
    got = tiled_attention(Q, K, V, block_q=2, block_k=8192)
    assert got.dtype == np.float16
    np.testing.assert_allclose(got.astype(np.float64), want, atol=1e-3)
    assert np.abs(want).max() > 1e-3, "the reference is not trivially zero, so zeros would fail"
