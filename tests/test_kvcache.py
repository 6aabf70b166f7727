"""Tests of attnlib.kvcache: KVCache, incremental_attention and decode_cost.

1. the cache against full causal attention: one token at a time, for every
   prefix, and with blocks of several rows (end-aligned causal masking), by
   hypothesis, plus a naive loop for the end-aligned mask;
2. storage: growth by doubling, read-only snapshot views, dtypes;
3. the cost model against a brute-force count of multiply-adds;
4. a catalogue of bad inputs, each with its message;
5. kv_cache_bytes against hand sums for published models.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from cases import case
from hypothesis import given
from hypothesis import strategies as st

from attnlib.core import scaled_dot_product_attention
from attnlib.kvcache import DecodeCost, KVCache, decode_cost, incremental_attention, kv_cache_bytes
from attnlib.models import MODEL_CONFIGS

sdpa = scaled_dot_product_attention


def random_qkv(seed: int, n: int, d_k: int, d_v: int, dtype=np.float64):
    rng = np.random.default_rng(seed)
    return tuple(rng.standard_normal((n, d)).astype(dtype) for d in (d_k, d_k, d_v))


def naive_end_aligned(q, K, V, scale=None) -> np.ndarray:
    """Row ``i`` of the last ``t`` queries attends to keys ``0..n-t+i``: explicit loops, math.exp."""
    q, K, V = (np.asarray(a, dtype=np.float64).tolist() for a in (q, K, V))
    t, n, d_k = len(q), len(K), len(q[0])
    scale = 1.0 / math.sqrt(d_k) if scale is None else scale
    out = []
    for i in range(t):
        visible = range(n - t + i + 1)
        s = [sum(a * b for a, b in zip(q[i], K[j], strict=True)) * scale for j in visible]
        peak = max(s)
        e = [math.exp(x - peak) for x in s]
        out.append([sum(e[j] * V[j][c] for j in visible) / sum(e) for c in range(len(V[0]))])
    return np.array(out)


# --------------------------------------------------------------------------- equals full causal
@given(
    st.integers(1, 24), st.integers(1, 6), st.integers(1, 6), st.integers(0, 2**32 - 1),
    st.sampled_from([None, 0.3, 2.0]),
)
def test_property_incremental_equals_full_causal_for_every_prefix(n, d_k, d_v, seed, scale):
    Q, K, V = random_qkv(seed, n, d_k, d_v)
    full = sdpa(Q, K, V, is_causal=True, scale=scale)
    got = incremental_attention(Q, K, V, scale=scale)
    assert got.shape == (n, d_v) and got.dtype == np.float64
    np.testing.assert_allclose(got, full, rtol=1e-12, atol=1e-12)
    for L in range(1, n + 1):  # the cache after L tokens equals causal attention on the prefix
        prefix = sdpa(Q[:L], K[:L], V[:L], is_causal=True, scale=scale)
        np.testing.assert_allclose(got[:L], prefix, rtol=1e-12, atol=1e-12)


@given(
    st.lists(st.integers(1, 5), min_size=1, max_size=8),  # rows appended together, step by step
    st.integers(1, 5), st.integers(1, 5), st.integers(0, 2**32 - 1),
)
def test_property_blocks_of_rows_with_end_aligned_masking_equal_full_causal(chunks, d_k, d_v, seed):
    n = sum(chunks)
    Q, K, V = random_qkv(seed, n, d_k, d_v)
    full = sdpa(Q, K, V, is_causal=True)
    cache = KVCache(d_k, d_v, capacity=1)
    start = 0
    for t in chunks:
        rows = slice(start, start + t)
        cache.append(K[rows], V[rows])
        got = cache.attend(Q[rows])  # the last t queries: end-aligned causal mask
        assert got.shape == (t, d_v)
        np.testing.assert_allclose(got, full[rows], rtol=1e-12, atol=1e-12)
        start += t
    assert len(cache) == n
    np.testing.assert_array_equal(cache.keys, K)
    np.testing.assert_array_equal(cache.values, V)


@pytest.mark.parametrize("t", [1, 2, 3, 5])
def test_attend_masks_causally_aligned_to_the_end(t):
    Q, K, V = random_qkv(7, 5, 3, 2)
    cache = KVCache(3, 2)
    cache.append(K, V)
    q = Q[:t]  # any t queries, read as those of positions 5 - t .. 4
    got = cache.attend(q)
    np.testing.assert_allclose(got, naive_end_aligned(q, K, V), rtol=1e-12, atol=1e-14)
    end_aligned = np.tri(t, 5, k=5 - t, dtype=bool)  # query i sees keys 0..5-t+i
    np.testing.assert_allclose(got, sdpa(q, K, V, end_aligned), rtol=1e-13, atol=1e-15)
    if 1 < t < 5:  # top-left alignment (core's is_causal) would hide keys these rows see
        assert not np.allclose(got, sdpa(q, K, V, is_causal=True))


def test_attend_with_all_cached_queries_is_core_causal_and_one_query_sees_everything():
    Q, K, V = random_qkv(3, 6, 4, 3)
    cache = KVCache(4, 3)
    cache.append(K, V)
    np.testing.assert_allclose(cache.attend(Q), sdpa(Q, K, V, is_causal=True), rtol=1e-13, atol=1e-15)
    one = cache.attend(Q[2])  # a single vector: shape (d_v,), no mask
    assert one.shape == (3,)
    np.testing.assert_allclose(one, sdpa(Q[2:3], K, V)[0], rtol=1e-13, atol=1e-15)


def test_attend_with_a_custom_scale():
    Q, K, V = random_qkv(5, 4, 2, 2)
    cache = KVCache(2, 2)
    cache.append(K, V)
    got = cache.attend(Q[1:], scale=3.0)
    np.testing.assert_allclose(got, naive_end_aligned(Q[1:], K, V, scale=3.0), rtol=1e-12, atol=1e-14)


# --------------------------------------------------------------------------- storage
def test_growth_by_doubling_keeps_every_row():
    _, K, V = random_qkv(1, 100, 3, 2)
    cache = KVCache(3, 2, capacity=1)
    capacities = [cache.capacity]
    for t in range(100):
        cache.append(K[t], V[t])
        if cache.capacity != capacities[-1]:
            capacities.append(cache.capacity)
    assert capacities == [1, 2, 4, 8, 16, 32, 64, 128]  # 7 reallocations for 100 appends
    assert len(cache) == 100
    np.testing.assert_array_equal(cache.keys, K)
    np.testing.assert_array_equal(cache.values, V)
    # rows copied by all reallocations: 1 + 2 + ... + 64 = 127 < 2 × 100 (amortised O(1))
    assert sum(capacities[:-1]) < 2 * len(cache)


def test_appending_many_rows_at_once_grows_past_double():
    Q, K, V = random_qkv(2, 50, 2, 3)
    cache = KVCache(2, 3, capacity=4)
    cache.append(K[:3], V[:3])
    assert cache.capacity == 4
    cache.append(K[3:], V[3:])  # 50 rows needed: 4 → 8 → 16 → 32 → 64
    assert cache.capacity == 64 and len(cache) == 50
    np.testing.assert_array_equal(cache.keys, K)
    np.testing.assert_allclose(cache.attend(Q[-1]), sdpa(Q[-1:], K, V)[0], rtol=1e-13)


def test_default_capacity_and_repr():
    cache = KVCache(4, 2)
    assert cache.capacity == 16 and len(cache) == 0
    assert (cache.d_k, cache.d_v, cache.dtype) == (4, 2, np.float64)
    assert repr(cache) == "KVCache(d_k=4, d_v=2, dtype=float64, len=0, capacity=16)"
    assert cache.keys.shape == (0, 4) and cache.values.shape == (0, 2)


def test_views_are_read_only_snapshots_that_survive_growth():
    cache = KVCache(2, 1, capacity=2)
    cache.append([[1.0, 2.0], [3.0, 4.0]], [[5.0], [6.0]])
    keys, values = cache.keys, cache.values
    for view in (keys, values):
        assert not view.flags.writeable
        with pytest.raises(ValueError, match="read-only"):
            view[0, 0] = 99.0
    cache.append([[7.0, 8.0]], [[9.0]])  # grows: new buffers
    assert cache.capacity == 4
    assert keys.tolist() == [[1.0, 2.0], [3.0, 4.0]] and values.tolist() == [[5.0], [6.0]]
    assert cache.keys.tolist() == [[1.0, 2.0], [3.0, 4.0], [7.0, 8.0]]
    assert cache.values.flags.writeable is False


def test_appended_arrays_are_copied_not_referenced():
    k, v = np.ones((2, 2)), np.zeros((2, 1))
    cache = KVCache(2, 1)
    cache.append(k, v)
    k[:] = 5.0
    assert cache.keys.tolist() == [[1.0, 1.0], [1.0, 1.0]]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_dtype_of_storage_and_of_incremental_attention(dtype):
    Q, K, V = random_qkv(4, 9, 3, 2, dtype=dtype)
    cache = KVCache(3, 2, dtype=dtype)
    cache.append(K[0].astype(np.float64), [1, 2])  # converted to the cache's dtype; ints accepted
    assert cache.keys.dtype == cache.values.dtype == dtype
    assert cache.attend(Q[0]).dtype == dtype
    got = incremental_attention(Q, K, V)
    assert got.dtype == dtype
    tol = 1e-6 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(got, sdpa(Q, K, V, is_causal=True), rtol=tol, atol=tol)


def test_a_failed_append_stores_nothing():
    cache = KVCache(2, 1)
    cache.append([1.0, 2.0], [3.0])
    with pytest.raises(ValueError, match="v must be finite"):
        cache.append([[1.0, 1.0], [2.0, 2.0]], [[1.0], [np.nan]])
    assert len(cache) == 1 and cache.keys.tolist() == [[1.0, 2.0]]


# --------------------------------------------------------------------------- cost model
def brute_force_cost(m: int, d_k: int, d_v: int, prompt: int) -> tuple[int, int, int]:
    """Count multiply-adds pair by pair: (without cache, with cache, cache elements)."""
    without = with_cache = 0
    for _ in range(prompt):  # prefill, once, with the cache
        for _ in range(prompt):
            with_cache += d_k + d_v
    for step in range(1, m + 1):
        t = prompt + step
        for _ in range(t):  # without: every query of the prefix ...
            for _ in range(t):  # ... against every key (full t × t, scores and values)
                without += d_k + d_v
        for _ in range(t):  # with: the one new query against the t cached keys
            with_cache += d_k + d_v
    return without, with_cache, (prompt + m) * (d_k + d_v)


@pytest.mark.parametrize("prompt", [0, 1, 5])
@pytest.mark.parametrize("m", [1, 2, 7, 12])
@pytest.mark.parametrize(("d_k", "d_v"), [(1, 1), (3, 5)])
def test_decode_cost_matches_a_brute_force_count(m, d_k, d_v, prompt):
    c = decode_cost(m, d_k, d_v, prompt=prompt)
    expected = brute_force_cost(m, d_k, d_v, prompt)
    assert (c.macs_without_cache, c.macs_with_cache, c.cache_elements) == expected
    assert (c.m, c.d_k, c.d_v, c.prompt) == (m, d_k, d_v, prompt)
    assert c.flops_without_cache == 2 * c.macs_without_cache
    assert c.flops_with_cache == 2 * c.macs_with_cache


@pytest.mark.parametrize("n", [1, 4, 9])
def test_cached_cost_without_prompt_is_the_causal_triangle_incremental_attention_computes(n):
    c = decode_cost(n, d_k=3, d_v=2)
    assert c.macs_with_cache == int(np.tri(n).sum()) * (3 + 2)
    assert c.saving == pytest.approx((2 * n + 1) / 3, rel=1e-15)  # Σ t² / Σ t


def test_decode_cost_is_frozen_and_exact_for_large_sizes():
    c = decode_cost(10**6, d_k=128, d_v=128, prompt=10**5)
    assert isinstance(c, DecodeCost) and isinstance(c.macs_without_cache, int)
    a, b = 10**5 + 1, 10**5 + 10**6
    assert c.macs_without_cache == sum(t * t for t in range(a, b + 1)) * 256
    with pytest.raises(dataclasses.FrozenInstanceError):
        c.m = 3  # type: ignore[misc]


# --------------------------------------------------------------------------- bad inputs


inc = incremental_attention


def cache_with(n: int) -> KVCache:
    cache = KVCache(4, 2)
    if n:
        cache.append(np.ones((n, 4)), np.ones((n, 2)))
    return cache


BAD_INPUTS = [
    # --- constructor
    case("d_k_0", lambda: KVCache(0, 2), ValueError, "d_k must be positive; got 0"),
    case("d_v_float", lambda: KVCache(4, 2.0), TypeError, "d_v must be an integer; got float 2.0"),
    case("dtype_int", lambda: KVCache(4, 2, dtype=np.int64), TypeError,
         "dtype must be a floating NumPy dtype (float16/32/64); got int64"),
    case("dtype_nonsense", lambda: KVCache(4, 2, dtype="banana"), TypeError,
         "dtype must be a floating NumPy dtype such as np.float32; got 'banana'"),
    case("capacity_0", lambda: KVCache(4, 2, capacity=0), ValueError, "capacity must be positive; got 0"),
    # --- append
    case("append_wrong_d_k", lambda: cache_with(0).append(np.ones((2, 3)), np.ones((2, 2))), ValueError,
         "k has d_k=3 but the cache has d_k=4", "(k shape (2, 3))"),
    case("append_wrong_d_v", lambda: cache_with(0).append(np.ones(4), np.ones(5)), ValueError,
         "v has d_v=5 but the cache has d_v=2", "(v shape (1, 5))"),
    case("append_row_mismatch", lambda: cache_with(0).append(np.ones((3, 4)), np.ones((2, 2))), ValueError,
         "k has 3 rows but v has 2", "k (3, 4), v (2, 2)"),
    case("append_3d", lambda: cache_with(0).append(np.ones((1, 2, 4)), np.ones((2, 2))), ValueError,
         "k must be one vector (d_k,) or rows (t, d_k); got shape (1, 2, 4)"),
    case("append_no_rows", lambda: cache_with(0).append(np.ones((0, 4)), np.ones((0, 2))), ValueError,
         "k has t=0 rows (nothing to add); shape (0, 4)"),
    case("append_nan_k", lambda: cache_with(0).append([1.0, np.nan, 0.0, 0.0], [1.0, 1.0]), ValueError,
         "k must be finite; it holds 1 NaN (first at index (1,) of shape (4,))"),
    case("append_inf_v", lambda: cache_with(0).append(np.ones(4), [np.inf, 1.0]), ValueError,
         "v must be finite; it holds 1 +inf (first at index (0,)"),
    case("append_strings", lambda: cache_with(0).append(["a"] * 4, [1.0, 1.0]), TypeError,
         "k must hold real numbers; got dtype <U1"),
    case("append_overflows_float32",
         lambda: KVCache(1, 1, dtype=np.float32).append([1e300], [1.0]), ValueError,
         "k has entries too large for the cache's dtype float32"),
    # --- attend
    case("attend_empty", lambda: cache_with(0).attend(np.ones(4)), ValueError,
         "the cache is empty: append keys and values before attend"),
    case("attend_wrong_d_k", lambda: cache_with(3).attend(np.ones((2, 5))), ValueError,
         "q has d_k=5 but the cache has d_k=4", "(q shape (2, 5))"),
    case("attend_too_many_queries", lambda: cache_with(3).attend(np.ones((4, 4))), ValueError,
         "q has t=4 rows but the cache holds only 3 positions", "q (4, 4)"),
    case("attend_nan", lambda: cache_with(3).attend([0.0, 0.0, np.nan, 0.0]), ValueError,
         "q must be finite; it holds 1 NaN"),
    case("attend_scale_0", lambda: cache_with(3).attend(np.ones(4), scale=0), ValueError,
         "scale must be positive; got 0.0"),
    # --- incremental_attention
    case("incremental_3d", lambda: inc(np.ones((1, 3, 4)), np.ones((3, 4)), np.ones((3, 2))),
         ValueError, "Q must have shape (n, d_k) (one sequence); got shape (1, 3, 4)"),
    case("incremental_rows", lambda: inc(np.ones((3, 4)), np.ones((2, 4)), np.ones((2, 2))),
         ValueError, "one row per token; got Q (3, 4), K (2, 4), V (2, 2)"),
    case("incremental_d_k", lambda: inc(np.ones((3, 4)), np.ones((3, 5)), np.ones((3, 2))),
         ValueError, "K has d_k=5 but Q has d_k=4", "Q (3, 4), K (3, 5)"),
    case("incremental_empty", lambda: inc(np.ones((0, 4)), np.ones((0, 4)), np.ones((0, 2))),
         ValueError, "Q has n=0 (an empty sequence)"),
    case("incremental_inf", lambda: inc(np.ones((2, 1)), [[1.0], [-np.inf]], np.ones((2, 1))),
         ValueError, "K must be finite; it holds 1 -inf"),
    # --- decode_cost
    case("cost_m_0", lambda: decode_cost(0, 4, 4), ValueError, "m must be positive; got 0"),
    case("cost_d_k_bool", lambda: decode_cost(3, True, 4), TypeError,
         "d_k must be an integer; got bool True"),
    case("cost_prompt_negative", lambda: decode_cost(3, 4, 4, prompt=-1), ValueError,
         "prompt must be >= 0; got -1"),
    case("cost_prompt_float", lambda: decode_cost(3, 4, 4, prompt=1.5), TypeError,
         "prompt must be an integer; got float 1.5"),
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
def test_float16_cache_attends_over_long_prefixes_like_float64(n_k: int) -> None:
    """The cache's float16 rows are attended in float32 (as PyTorch does), not summed in float16."""
    rng = np.random.default_rng(n_k)
    K = rng.standard_normal((n_k, 16))  # (n_k, d_k)
    V = rng.standard_normal((n_k, 8))  # (n_k, d_v)
    q = rng.standard_normal((2, 16))  # (t, d_k): the last two positions
    cache = KVCache(d_k=16, d_v=8, dtype=np.float16)
    cache.append(K, V)
    got = cache.attend(q.astype(np.float16))
    K16, V16, q16 = (a.astype(np.float16).astype(np.float64) for a in (K, V, q))
    mask = np.tri(2, n_k, k=n_k - 2, dtype=bool)  # (t, n): row i sees keys j <= n - t + i
    want = scaled_dot_product_attention(q16, K16, V16, mask)
    assert got.dtype == np.float16
    np.testing.assert_allclose(got.astype(np.float64), want, atol=1e-3)
    assert np.abs(want).max() > 1e-3


# ---------------------------------------------------------------- KV-cache size in published models
def test_kv_cache_bytes_hand_checked():
    configs = {c.name: c for c in MODEL_CONFIGS}
    gpt3 = configs["GPT-3 175B"]  # 96 layers, 96 KV heads of 128, context 2048
    assert kv_cache_bytes(gpt3, 2048) == 2 * 96 * 96 * 128 * 2048 * 2 == 9 * 2**30
    assert kv_cache_bytes(gpt3, 2048, dtype_bytes=4) == 18 * 2**30
    llama = configs["LLaMA-2 70B"]  # 80 layers, 8 KV heads of 128, context 4096
    assert kv_cache_bytes(llama, 4096) == 2 * 80 * 8 * 128 * 4096 * 2 == 5 * 2**28  # 1.25 GiB
    assert kv_cache_bytes(dataclasses.replace(llama, n_kv_heads=64), 4096) == 10 * 2**30  # without GQA
    assert kv_cache_bytes(llama, 1) == 2 * 80 * 8 * 128 * 2  # per token: 320 KiB
    kv = decode_cost(4096, llama.d_head, llama.d_head)  # the notebook's route
    assert kv.cache_elements * llama.n_layers * llama.n_kv_heads * 2 == kv_cache_bytes(llama, 4096)


@pytest.mark.parametrize(
    ("call", "exc", "match"),
    [
        (lambda: kv_cache_bytes("GPT-3", 2048), TypeError, r"config must be a ModelConfig.*got str"),
        (lambda: kv_cache_bytes(MODEL_CONFIGS[0], 0), ValueError, r"n_tokens must be positive; got 0"),
        (lambda: kv_cache_bytes(MODEL_CONFIGS[0], 8, dtype_bytes=-2), ValueError,
         r"dtype_bytes must be positive; got -2"),
    ],
)
def test_kv_cache_bytes_bad_input(call, exc, match):
    with pytest.raises(exc, match=match):
        call()
