"""Tests of attnlib.complexity: FLOP and memory counts, the model-scale table, timing and fits.

1. The FLOP counts are checked against a naive pure-Python attention that
   increments a counter at every multiply, add, comparison, exp and divide,
   and computes the right answer while doing so.
2. The memory counts are checked against the ``nbytes`` of real arrays.
3. The model table is checked against rows worked out by hand.
4. The projection counts are checked against a brute-force count of the four
   products, the crossover against flop_counts, the KV cache against hand sums.
5. The power-law fit recovers known exponents, and its t quantiles match
   printed tables; the timing helpers limit BLAS threads and interleave.
6. peak_memory measures known allocations.
7. A catalogue of bad inputs, each checked for its type and message.
"""

from __future__ import annotations

import math
import tracemalloc
from collections import Counter
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from threadpoolctl import threadpool_info

from attnlib.complexity import (
    MODEL_CONFIGS,
    AttentionScaleTable,
    AttentionTiming,
    FlopCounts,
    LayerCrossover,
    MemoryCounts,
    ModelConfig,
    PowerLawFit,
    TimingComparison,
    VariantCost,
    attention_scale_table,
    attention_variant_costs,
    compare_times,
    fit_power_law,
    flop_counts,
    kv_cache_bytes,
    layer_crossover,
    memory_bytes,
    peak_memory,
    projection_flops,
    time_attention,
)
from attnlib.core import scaled_dot_product_attention


# --------------------------------------------------------------------------- counted reference
def counted_attention(Q: list[list[float]], K: list[list[float]], V: list[list[float]]):
    """Textbook attention with explicit loops, counting every scalar operation by stage.

    Returns ``(O, ops)`` with ``ops[(stage, kind)]`` the number of operations
    of that kind in that stage; kinds are ``mul, add, cmp, exp, div``.
    """
    ops: Counter[tuple[str, str]] = Counter()
    n_q, n_k, d_k, d_v = len(Q), len(K), len(Q[0]), len(V[0])

    def dot(a: list[float], b: list[float], stage: str) -> float:
        acc = a[0] * b[0]
        ops[stage, "mul"] += 1
        for x, y in zip(a[1:], b[1:], strict=True):
            acc += x * y
            ops[stage, "mul"] += 1
            ops[stage, "add"] += 1
        return acc

    S = [[dot(Q[i], K[j], "QK") for j in range(n_k)] for i in range(n_q)]
    factor = 1.0 / math.sqrt(d_k)  # computed once, not per score
    for i in range(n_q):
        for j in range(n_k):
            S[i][j] *= factor
            ops["scale", "mul"] += 1
    A = []
    for i in range(n_q):
        m = S[i][0]
        for j in range(1, n_k):
            ops["max", "cmp"] += 1
            if S[i][j] > m:
                m = S[i][j]
        E = []
        for j in range(n_k):
            E.append(S[i][j] - m)
            ops["subtract", "add"] += 1
        for j in range(n_k):
            E[j] = math.exp(E[j])
            ops["exp", "exp"] += 1
        total = E[0]
        for j in range(1, n_k):
            total += E[j]
            ops["sum", "add"] += 1
        for j in range(n_k):
            E[j] /= total
            ops["divide", "div"] += 1
        A.append(E)
    Vt = [[V[j][c] for j in range(n_k)] for c in range(d_v)]
    O = [[dot(A[i], Vt[c], "AV") for c in range(d_v)] for i in range(n_q)]
    return O, ops


def as_counter(c: FlopCounts) -> Counter[tuple[str, str]]:
    out: Counter[tuple[str, str]] = Counter()
    for s in c.stages:
        for kind, attr in (("mul", "multiplies"), ("add", "adds"), ("cmp", "compares"),
                           ("exp", "exps"), ("div", "divides")):
            if getattr(s, attr):
                out[s.name, kind] = getattr(s, attr)
    return out


# --------------------------------------------------------------------------- FLOP counts
@pytest.mark.parametrize(
    ("n_q", "n_k", "d_k", "d_v"),
    [(1, 1, 1, 1), (3, 5, 2, 4), (4, 4, 8, 8), (2, 7, 1, 3), (6, 1, 3, 2)],
)
def test_flop_counts_equal_a_brute_force_count(n_q, n_k, d_k, d_v):
    rng = np.random.default_rng(n_q * 100 + n_k)
    Q, K, V = (rng.standard_normal(s) for s in ((n_q, d_k), (n_k, d_k), (n_k, d_v)))
    O, ops = counted_attention(Q.tolist(), K.tolist(), V.tolist())
    np.testing.assert_allclose(O, scaled_dot_product_attention(Q, K, V), rtol=1e-12, atol=1e-12)
    c = flop_counts(n_q, n_k, d_k, d_v)
    assert as_counter(c) == ops
    assert c.multiplies == sum(v for (_, k), v in ops.items() if k == "mul")
    assert c.adds == sum(v for (_, k), v in ops.items() if k == "add")
    assert c.flops == sum(v for (_, k), v in ops.items() if k != "exp")
    assert c.exps == n_q * n_k


@settings(max_examples=50, deadline=None, derandomize=True)
@given(
    st.integers(1, 300), st.integers(1, 300), st.integers(1, 256), st.integers(1, 256)
)
def test_flop_counts_match_the_closed_forms(n_q, n_k, d_k, d_v):
    c = flop_counts(n_q, n_k, d_k, d_v)
    assert c.stage("QK").multiplies == n_q * n_k * d_k
    assert c.stage("QK").adds == n_q * n_k * (d_k - 1)
    assert c.stage("scale").multiplies == n_q * n_k
    assert c.stage("max").compares == n_q * (n_k - 1)
    assert c.stage("subtract").adds == n_q * n_k
    assert c.stage("exp").exps == n_q * n_k
    assert c.stage("sum").adds == n_q * (n_k - 1)
    assert c.stage("divide").divides == n_q * n_k
    assert c.stage("AV").multiplies == n_q * d_v * n_k
    assert c.stage("AV").adds == n_q * d_v * (n_k - 1)
    assert c.flops == n_q * n_k * (2 * d_k + 2) + 2 * n_q * (n_k - 1) + n_q * d_v * (2 * n_k - 1)
    assert c.matmul_flops == n_q * n_k * (2 * d_k - 1) + n_q * d_v * (2 * n_k - 1)
    assert [s.name for s in c.stages] == ["QK", "scale", "max", "subtract", "exp", "sum", "divide", "AV"]


def test_flop_table_has_every_stage_and_the_totals():
    c = flop_counts(512, 512, 64, 64)
    text = c.table()
    lines = text.splitlines()
    assert len(lines) == 2 + 8 + 1 + 1
    assert lines[-2].split()[0] == "total"
    assert lines[-2].split()[-1] == f"{c.flops:,}"
    assert "exps counted separately" in lines[-1]
    for s in c.stages:
        assert any(line.startswith(s.name) and line.endswith(f"{s.flops:,}") for line in lines), s.name


def test_flop_counts_is_a_frozen_value():
    c = flop_counts(2, 3, 4, 5)
    assert c == flop_counts(2, 3, 4, 5)
    with pytest.raises(AttributeError):
        c.n_q = 3  # type: ignore[misc]
    with pytest.raises(KeyError, match=r"no stage 'softmax'.*'QK'"):
        c.stage("softmax")


# --------------------------------------------------------------------------- memory
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("in_place", [True, False])
def test_memory_stages_are_sums_of_real_arrays(dtype, in_place):
    n_q, n_k, d_k, d_v = 7, 11, 3, 5
    m = memory_bytes(n_q, n_k, d_k, d_v, dtype, in_place=in_place)
    assert isinstance(m, MemoryCounts)
    arrays = {
        "Q": np.empty((n_q, d_k), dtype), "K": np.empty((n_k, d_k), dtype), "V": np.empty((n_k, d_v), dtype),
        "S": np.empty((n_q, n_k), dtype), "A": np.empty((n_q, n_k), dtype),
        "m/ℓ": np.empty((n_q,), dtype), "O": np.empty((n_q, d_v), dtype),
    }
    inputs = arrays["Q"].nbytes + arrays["K"].nbytes + arrays["V"].nbytes
    softmax = inputs + arrays["A"].nbytes + arrays["m/ℓ"].nbytes + (0 if in_place else arrays["S"].nbytes)
    expected = {
        "inputs": inputs,
        "scores": inputs + arrays["S"].nbytes,
        "softmax": softmax,
        "output": inputs + arrays["A"].nbytes + arrays["O"].nbytes,
        "result": inputs + arrays["O"].nbytes,
    }
    assert {s.name: s.bytes for s in m.stages} == expected
    for s in m.stages:
        assert s.bytes == sum(arrays[name].nbytes for name, _ in s.arrays)
        assert s.bytes == s.elements * np.dtype(dtype).itemsize
    assert m.peak_bytes == max(expected.values())
    assert m.score_bytes == arrays["S"].nbytes
    assert expected[m.peak_stage] == m.peak_bytes


def test_memory_peak_grows_as_n_squared_and_table_reports_it():
    small = memory_bytes(1024, 1024, 64, 64, np.float32)
    big = memory_bytes(2048, 2048, 64, 64, np.float32)
    for m, n in ((small, 1024), (big, 2048)):
        assert m.peak_bytes - m.stage("inputs").bytes == 4 * (n * n + n * 64)  # weights A + output O
    extra = [m.peak_bytes - m.stage("inputs").bytes for m in (small, big)]
    assert 3.8 < extra[1] / extra[0] < 4.0  # the n² term dominates the n·d term
    text = big.table()
    assert f"peak: {big.peak_bytes:,} bytes" in text
    assert "(18 MiB)" in text  # 4·(3·2048·64 + 2048² + 2048·64) bytes
    assert len(text.splitlines()) == 2 + 5 + 1
    assert "weights in a new array" in memory_bytes(2, 2, 2, 2, in_place=False).table()


# --------------------------------------------------------------------------- published models
def test_gpt3_row_is_96_layers_times_96_heads_times_2048_squared():
    row = attention_scale_table().row("GPT-3 175B")
    assert row.n == 2048
    assert row.scores_per_layer == 96 * 2048**2
    assert row.scores_per_forward == 96 * 96 * 2048**2 == 38_654_705_664
    assert row.bytes_per_forward == 2 * 96 * 96 * 2048**2
    assert row.bytes_per_forward == 72 * 2**30


def test_hand_checked_rows():
    t = attention_scale_table(dtype_bytes=4)
    assert isinstance(t, AttentionScaleTable)
    gpt2 = t.row("GPT-2 small")
    assert gpt2.scores_per_layer == 12 * 1024**2 == 12_582_912
    assert gpt2.scores_per_forward == 12 * 12 * 1024**2
    assert gpt2.bytes_per_layer == 48 * 2**20  # float32: 48 MiB per layer
    assert t.row("BERT-base").scores_per_forward == 12 * 12 * 512**2
    llama = t.row("LLaMA-2 70B")
    assert llama.scores_per_forward == 80 * 64 * 4096**2  # 64 query heads, GQA does not shrink scores
    assert llama.config.n_kv_heads == 8
    vit = t.row("ViT-L/16")
    assert vit.n == (224 // 16) ** 2 + 1 == 197
    assert vit.scores_per_forward == 24 * 16 * 197**2
    assert t.row("ESM-2 650M").scores_per_forward == 33 * 20 * 1024**2


def test_model_configs_are_the_published_numbers():
    got = {c.name: (c.n_layers, c.n_heads, c.d_model, c.d_head, c.max_context, c.n_kv_heads)
           for c in MODEL_CONFIGS}
    assert got == {
        "GPT-2 small": (12, 12, 768, 64, 1024, 12),
        "BERT-base": (12, 12, 768, 64, 512, 12),
        "GPT-3 175B": (96, 96, 12288, 128, 2048, 96),
        "LLaMA-2 70B": (80, 64, 8192, 128, 4096, 8),
        "ViT-L/16": (24, 16, 1024, 64, 197, 16),
        "ESM-2 650M": (33, 20, 1280, 64, 1024, 20),
    }
    for c in MODEL_CONFIGS:
        assert c.n_heads * c.d_head == c.d_model, c.name
        assert c.citation == c.citations[0] and c.source
        # The book writes H for the number of heads; BERT's "H=768" (its hidden size) would misread.
        assert "H=" not in c.source and "A=" not in c.source, c.name


def test_scale_table_renders_one_line_per_model():
    t = attention_scale_table()
    lines = t.table().splitlines()
    assert len(lines) == 2 + len(MODEL_CONFIGS)
    gpt3 = next(line for line in lines if line.startswith("GPT-3 175B"))
    assert "38,654,705,664" in gpt3 and "72 GiB" in gpt3 and "brown2020language" in gpt3
    assert "64 (8 KV)" in next(line for line in lines if line.startswith("LLaMA-2"))
    with pytest.raises(KeyError, match=r"no model 'GPT-5'.*'GPT-3 175B'"):
        t.row("GPT-5")


# --------------------------------------------------------------------------- projections, crossover, KV cache
def counted_matmul_flops(X: list[list[float]], W: list[list[float]]) -> tuple[list[list[float]], int]:
    """``X @ W`` with explicit loops, counting one FLOP per multiply and per add."""
    flops = 0
    out = []
    for row in X:
        out_row = []
        for j in range(len(W[0])):
            acc = row[0] * W[0][j]
            flops += 1
            for i in range(1, len(row)):
                acc += row[i] * W[i][j]
                flops += 2
            out_row.append(acc)
        out.append(out_row)
    return out, flops


@pytest.mark.parametrize(
    ("n", "d_model", "n_heads", "n_kv_heads", "d_head"),
    [(1, 1, 1, 1, 1), (3, 4, 2, 1, 2), (5, 6, 4, 2, 3), (2, 8, 2, 2, 4), (4, 3, 3, 1, 5)],
)
def test_projection_flops_equal_a_brute_force_count(n, d_model, n_heads, n_kv_heads, d_head):
    rng = np.random.default_rng(n + 10 * d_model)
    X = rng.standard_normal((n, d_model))
    W_Q = rng.standard_normal((d_model, n_heads * d_head))
    W_K = rng.standard_normal((d_model, n_kv_heads * d_head))
    W_V = rng.standard_normal((d_model, n_kv_heads * d_head))
    W_O = rng.standard_normal((n_heads * d_head, d_model))
    total = 0
    for W in (W_Q, W_K, W_V):
        out, flops = counted_matmul_flops(X.tolist(), W.tolist())
        np.testing.assert_allclose(out, X @ W, rtol=1e-12)
        total += flops
    heads_out = rng.standard_normal((n, n_heads * d_head))  # the concatenated heads' outputs
    out, flops = counted_matmul_flops(heads_out.tolist(), W_O.tolist())
    np.testing.assert_allclose(out, heads_out @ W_O, rtol=1e-12)
    total += flops
    assert projection_flops(n, d_model, n_heads, n_kv_heads, d_head) == total


@settings(max_examples=50, deadline=None, derandomize=True)
@given(st.integers(1, 512), st.integers(1, 64), st.integers(1, 8), st.integers(1, 64))
def test_projection_flops_are_linear_in_n(d_model, d_head, group, n_kv_heads):
    n_heads = group * n_kv_heads
    one = projection_flops(1, d_model, n_heads, n_kv_heads, d_head)
    assert projection_flops(7, d_model, n_heads, n_kv_heads, d_head) == 7 * one
    single_head = projection_flops(5, d_head, 1, 1, d_head)
    assert single_head == 4 * 5 * d_head * (2 * d_head - 1)  # four (n, d) @ (d, d) products


def brute_force_crossover(d_model: int, n_heads: int, n_kv_heads: int, d_head: int) -> int:
    n = 1
    while n_heads * flop_counts(n, n, d_head, d_head).flops < projection_flops(
        n, d_model, n_heads, n_kv_heads, d_head
    ):
        n += 1
    return n


@pytest.mark.parametrize(
    ("d_model", "n_heads", "n_kv_heads", "d_head"),
    [(64, 1, 1, 64), (1, 1, 1, 1), (8, 2, 1, 4), (768, 12, 12, 64), (96, 4, 2, 24), (40, 8, 8, 5)],
)
def test_layer_crossover_is_where_flop_counts_overtake_projection_flops(d_model, n_heads, n_kv_heads, d_head):
    c = layer_crossover(d_model, n_heads, n_kv_heads, d_head)
    assert isinstance(c, LayerCrossover)
    assert c.exact == brute_force_crossover(d_model, n_heads, n_kv_heads, d_head)
    n = c.exact
    assert n_heads * flop_counts(n, n, d_head, d_head).flops >= projection_flops(
        n, d_model, n_heads, n_kv_heads, d_head
    )
    if n > 1:
        assert n_heads * flop_counts(n - 1, n - 1, d_head, d_head).flops < projection_flops(
            n - 1, d_model, n_heads, n_kv_heads, d_head
        )
    assert c.leading == pytest.approx(d_model * (1 + n_kv_heads / n_heads))


def test_layer_crossover_of_the_published_models():
    for cfg in MODEL_CONFIGS:
        c = layer_crossover(cfg.d_model, cfg.n_heads, cfg.n_kv_heads, cfg.d_head)
        expected = 2 * cfg.d_model if cfg.n_kv_heads == cfg.n_heads else cfg.d_model * 9 / 8
        assert c.leading == expected, cfg.name
        assert 0.9 * c.leading < c.exact <= c.leading, cfg.name  # the softmax makes attention cross earlier
        assert cfg.max_context < c.exact, cfg.name
    head = layer_crossover(64, 1, 1, 64)
    assert (head.leading, head.exact) == (128.0, 126)


def test_kv_cache_bytes_hand_checked():
    configs = {c.name: c for c in MODEL_CONFIGS}
    gpt3 = configs["GPT-3 175B"]  # 96 layers, 96 KV heads of 128, context 2048
    assert kv_cache_bytes(gpt3, 2048) == 2 * 96 * 96 * 128 * 2048 * 2 == 9 * 2**30
    assert kv_cache_bytes(gpt3, 2048, dtype_bytes=4) == 18 * 2**30
    llama = configs["LLaMA-2 70B"]  # 80 layers, 8 KV heads of 128, context 4096
    assert kv_cache_bytes(llama, 4096) == 2 * 80 * 8 * 128 * 4096 * 2 == 5 * 2**28  # 1.25 GiB
    assert kv_cache_bytes(replace(llama, n_kv_heads=64), 4096) == 10 * 2**30  # without GQA
    assert kv_cache_bytes(llama, 1) == 2 * 80 * 8 * 128 * 2  # per token: 320 KiB
    from attnlib.kvcache import decode_cost

    kv = decode_cost(4096, llama.d_head, llama.d_head)  # the notebook's route
    assert kv.cache_elements * llama.n_layers * llama.n_kv_heads * 2 == kv_cache_bytes(llama, 4096)


# --------------------------------------------------------------------------- fits and timing
@pytest.mark.parametrize(
    ("df", "t_975"),  # two-sided 95% Student quantiles from printed tables
    [(1, 12.7062), (2, 4.3027), (3, 3.1824), (4, 2.7764), (5, 2.5706), (10, 2.2281), (30, 2.0423)],
)
def test_t_quantiles_match_printed_tables(df, t_975):
    from attnlib.complexity import _t_quantile

    assert _t_quantile(0.95, df) == pytest.approx(t_975, abs=1e-4)


def test_fit_recovers_an_exact_square_law():
    ns = np.array([256, 512, 1024, 2048, 4096])
    fit = fit_power_law(ns, 2.5e-9 * ns.astype(float) ** 2)
    assert isinstance(fit, PowerLawFit)
    assert fit.exponent == pytest.approx(2.0, abs=1e-12)
    assert fit.prefactor == pytest.approx(2.5e-9, rel=1e-9)
    assert fit.high - fit.low < 1e-9 and fit.contains(fit.exponent)
    assert fit.df == 3 and fit.r_squared == pytest.approx(1.0)
    np.testing.assert_allclose(fit.predict(ns), 2.5e-9 * ns.astype(float) ** 2, rtol=1e-9)
    assert "n^2.000" in str(fit)


def test_fit_matches_a_hand_computed_regression():
    ns, ts = [2.0, 4.0, 8.0, 16.0], [1.0, 3.0, 7.0, 20.0]
    x, y = [math.log(v) for v in ns], [math.log(v) for v in ts]
    xm, ym = sum(x) / 4, sum(y) / 4
    sxx = sum((a - xm) ** 2 for a in x)
    slope = sum((a - xm) * (b - ym) for a, b in zip(x, y, strict=True)) / sxx
    intercept = ym - slope * xm
    s2 = sum((b - intercept - slope * a) ** 2 for a, b in zip(x, y, strict=True)) / 2
    half = 4.302653 * math.sqrt(s2 / sxx)  # t quantile for df = 2
    fit = fit_power_law(ns, ts)
    assert fit.exponent == pytest.approx(slope, rel=1e-12)
    assert fit.prefactor == pytest.approx(math.exp(intercept), rel=1e-12)
    assert fit.low == pytest.approx(slope - half, rel=1e-6)
    assert fit.high == pytest.approx(slope + half, rel=1e-6)


@pytest.mark.parametrize("seed", range(5))
def test_fit_of_noisy_square_law_covers_two(seed):
    rng = np.random.default_rng(seed)
    ns = np.array([256, 512, 1024, 2048, 4096, 8192])
    ts = 1e-9 * ns**2.0 * np.exp(rng.normal(0.0, 0.1, ns.size))  # 10% multiplicative noise
    fit = fit_power_law(ns, ts)
    assert fit.contains(2.0), fit
    assert fit.low < fit.exponent < fit.high
    assert 0.0 < fit.high - fit.low < 0.5
    wider = fit_power_law(ns, ts, confidence=0.99)
    assert wider.low < fit.low and wider.high > fit.high


def test_time_attention_returns_positive_medians_of_the_right_length():
    timing = time_attention([8, 16, 32], d=4, rng=np.random.default_rng(0), repeats=2)
    assert timing.ns == (8, 16, 32) and timing.d == 4 and timing.dtype == "float32"
    assert timing.medians.shape == (3,) and timing.times.shape == (3, 2)
    assert (timing.medians > 0).all() and (timing.times > 0).all()
    np.testing.assert_array_equal(timing.medians, np.median(timing.times, axis=1))
    assert not timing.medians.flags.writeable
    assert isinstance(timing.fit(), PowerLawFit)
    assert time_attention([4], 2, np.random.default_rng(1), repeats=1, dtype=np.float64).dtype == "float64"


def _timing(ns: tuple[int, ...], times: list[list[float]]) -> AttentionTiming:
    t = np.array(times)
    return AttentionTiming(ns, 8, "float32", np.median(t, axis=1), t)


def test_quartiles_are_the_middle_half_of_each_size():
    t = [[4.0, 1.0, 3.0, 2.0, 5.0], [10.0, 30.0, 20.0, 50.0, 40.0]]
    q1, q3 = _timing((16, 32), t).quartiles
    np.testing.assert_array_equal(q1, [2.0, 20.0])  # sorted: 1 2 3 4 5 and 10 20 30 40 50
    np.testing.assert_array_equal(q3, [4.0, 40.0])
    timing = time_attention([8, 16], d=4, rng=np.random.default_rng(0), repeats=3)
    q1, q3 = timing.quartiles
    assert q1.shape == q3.shape == (2,) and (q1 <= timing.medians).all() and (timing.medians <= q3).all()


@pytest.mark.parametrize(
    ("ns", "medians", "expected"),
    [
        ((10, 20, 30), [1.0, 2.0, 3.0], ()),
        ((10, 20, 30), [1.0, 3.0, 2.0], ((20, 30),)),
        ((10, 20, 30), [2.0, 2.0, 3.0], ((10, 20),)),  # a tie is not a rise
        ((30, 10, 20), [3.0, 1.0, 2.0], ()),  # taken in increasing n, whatever the order given
        ((30, 10, 20), [1.0, 2.0, 3.0], ((20, 30),)),
        ((10, 20, 30, 40), [4.0, 3.0, 2.0, 1.0], ((10, 20), (20, 30), (30, 40))),
        ((10,), [1.0], ()),
    ],
)
def test_inversions_list_neighbouring_sizes_whose_medians_do_not_rise(ns, medians, expected):
    timing = _timing(ns, [[m, m] for m in medians])
    assert timing.inversions() == expected
    assert timing.rises_with_n is (expected == ())


def test_round_ratios_pair_the_calls_of_each_round():
    frozen = {"a": (2.0, 3.0, 8.0), "b": (1.0, 4.0, 2.0)}
    c = TimingComparison(("a", "b"), frozen, {"a": 3.0, "b": 2.0}, 3, 1)
    np.testing.assert_array_equal(c.round_ratios("a", "b"), [2.0, 0.75, 4.0])
    np.testing.assert_array_equal(c.round_ratios("b", "b"), [1.0, 1.0, 1.0])
    with pytest.raises(KeyError, match=r"no candidate 'c'; the candidates are \['a', 'b'\]"):
        c.round_ratios("c", "a")
    real = compare_times({"x": lambda: None, "y": lambda: None}, repeats=4)
    assert real.round_ratios("x", "y").shape == (4,)


def _blas_threads() -> list[int]:
    return [p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"]


def test_time_attention_limits_blas_threads_only_while_timing(monkeypatch):
    import attnlib.complexity as cx

    seen: list[list[int]] = []
    real = cx.scaled_dot_product_attention

    def spy(*args, **kwargs):
        seen.append(_blas_threads())
        return real(*args, **kwargs)

    before = _blas_threads()
    monkeypatch.setattr(cx, "scaled_dot_product_attention", spy)
    time_attention([4, 8], 2, np.random.default_rng(0), repeats=2)
    assert len(seen) == 2 * 3 and all(t == [1] * len(before) for t in seen)
    seen.clear()
    time_attention([4], 2, np.random.default_rng(0), repeats=1, threads=None)
    assert seen == [before, before]
    assert _blas_threads() == before


def test_compare_times_returns_interleaved_medians_and_ratio():
    calls: list[str] = []
    candidates = {name: (lambda name=name: calls.append(name)) for name in "abc"}
    result = compare_times(candidates, repeats=4)
    assert isinstance(result, TimingComparison)
    assert calls == ["a", "b", "c"] * 5  # one warm-up round, then 4 interleaved rounds
    assert result.names == ("a", "b", "c") and result.repeats == 4 and result.threads == 1
    assert set(result.medians) == set(result.times) == {"a", "b", "c"}
    for name in result.names:
        assert len(result.times[name]) == 4 and all(t >= 0 for t in result.times[name])
        assert result.medians[name] == pytest.approx(float(np.median(result.times[name])), rel=1e-12)
    assert result.ratio("a", "b") == result.medians["a"] / result.medians["b"]
    assert result.ratio("c", "c") == 1.0
    with pytest.raises(KeyError, match=r"no candidate 'd'; the candidates are \['a', 'b', 'c'\]"):
        result.ratio("a", "d")
    with pytest.raises(TypeError):
        result.medians["a"] = 0.0  # type: ignore[index]
    with pytest.raises(AttributeError):
        result.repeats = 1  # type: ignore[misc]


def test_compare_times_sees_the_slower_candidate():
    x = np.ones(10**5)
    result = compare_times({"small": lambda: x[:10].sum(), "large": lambda: np.sort(x * 1.5)}, repeats=5)
    assert result.ratio("large", "small") > 1


def test_compare_times_limits_blas_threads():
    before = _blas_threads()
    seen: dict[str, list[list[int]]] = {"one": [], "as is": []}
    limited = compare_times({"probe": lambda: seen["one"].append(_blas_threads())}, repeats=2, threads=1)
    assert limited.threads == 1
    assert seen["one"] == [[1] * len(before)] * 3  # warm-up and both rounds
    compare_times({"probe": lambda: seen["as is"].append(_blas_threads())}, repeats=2, threads=None)
    assert seen["as is"] == [before] * 3
    assert _blas_threads() == before  # restored afterwards


# --------------------------------------------------------------------------- peak memory
def test_peak_memory_measures_a_known_allocation():
    assert peak_memory(np.ones, 10**6) >= 8 * 10**6
    assert peak_memory(np.ones, 10**6) < 8 * 10**6 + 64 * 1024
    assert peak_memory(np.ones, (1000, 1000), dtype=np.float32) >= 4 * 10**6
    assert peak_memory(lambda: None) < 1024
    x = np.ones(10**6)
    assert peak_memory(np.sum, x) < 64 * 1024  # the argument existed before the call: not counted
    assert peak_memory(lambda: [np.ones(10**5) for _ in range(10)]) >= 10 * 8 * 10**5  # all alive at once
    assert not tracemalloc.is_tracing()


def test_peak_memory_leaves_running_tracing_on():
    tracemalloc.start()
    try:
        assert peak_memory(np.ones, 10**5) >= 8 * 10**5
        assert tracemalloc.is_tracing()
    finally:
        tracemalloc.stop()


# --------------------------------------------------------------------------- bad inputs
rng0 = np.random.default_rng(0)


@pytest.mark.parametrize(
    ("call", "exc", "match"),
    [
        (lambda: flop_counts(0, 4, 2, 2), ValueError, r"n_q must be positive; got 0"),
        (lambda: flop_counts(4, 4, 2.0, 2), TypeError, r"d_k must be an integer; got float 2.0"),
        (lambda: flop_counts(4, -1, 2, 2), ValueError, r"n_k must be positive; got -1"),
        (lambda: flop_counts(4, 4, 2, True), TypeError, r"d_v must be an integer; got bool"),
        (lambda: memory_bytes(4, 4, 2, 2, np.int32), TypeError, r"dtype must be a floating dtype.*int32"),
        (lambda: memory_bytes(4, 4, 2, 2, "nonsense"), TypeError, r"dtype must be a NumPy floating dtype"),
        (lambda: memory_bytes(4, 4, 2, 2, in_place=1), TypeError, r"in_place must be True or False"),
        (lambda: attention_scale_table(dtype_bytes=0), ValueError, r"dtype_bytes must be positive; got 0"),
        (lambda: attention_scale_table(()), ValueError, r"configs is empty"),
        (lambda: attention_scale_table(["GPT-3"]), TypeError, r"configs\[0\] must be a ModelConfig; got str"),
        (lambda: ModelConfig("bad", 2, 6, 384, 64, 128, 4, ("k",), "s"), ValueError,
         r"bad: n_heads=6 is not a multiple of n_kv_heads=4"),
        (lambda: ModelConfig("bad", 0, 6, 384, 64, 128, 6, ("k",), "s"), ValueError,
         r"n_layers must be positive; got 0"),
        (lambda: fit_power_law([1, 2], [1.0, 4.0]), ValueError, r"at least 3 points.*got 2"),
        (lambda: fit_power_law([1, 2, 3], [1.0, 4.0]), ValueError, r"same length; got 3 and 2"),
        (lambda: fit_power_law([1, 2, 3], [1.0, 0.0, 9.0]), ValueError, r"times must be positive.*got 0.0"),
        (lambda: fit_power_law([1, -2, 3], [1.0, 4.0, 9.0]), ValueError, r"ns must be positive.*got -2.0"),
        (lambda: fit_power_law([5, 5, 5], [1.0, 2.0, 3.0]), ValueError, r"two distinct sizes; got all 5"),
        (lambda: fit_power_law([[1, 2, 3]], [[1, 2, 3]]), ValueError, r"ns must be 1-D; got shape \(1, 3\)"),
        (lambda: fit_power_law([1, 2, 3], [1.0, np.nan, 9.0]), ValueError, r"times must be finite"),
        (lambda: fit_power_law([1, 2, 3], [1, 4, 9], confidence=1.0), ValueError,
         r"confidence must lie strictly between 0 and 1; got 1.0"),
        (lambda: fit_power_law([1, 2, 3], [1, 4, 9], confidence="95%"), TypeError,
         r"confidence must be a real number; got str"),
        (lambda: time_attention([8], 4, rng=0), TypeError, r"rng must be a numpy.random.Generator.*got int"),
        (lambda: time_attention([], 4, rng0), ValueError, r"ns is empty"),
        (lambda: time_attention(8, 4, rng0), TypeError, r"ns must be a sequence of integers; got int 8"),
        (lambda: time_attention([8, 0], 4, rng0), ValueError, r"ns\[1\] must be positive; got 0"),
        (lambda: time_attention([8], 0, rng0), ValueError, r"d must be positive; got 0"),
        (lambda: time_attention([8], 4, rng0, repeats=0), ValueError, r"repeats must be positive; got 0"),
        (lambda: time_attention([8], 4, rng0, dtype=np.int64), TypeError, r"dtype must be a floating dtype"),
        (lambda: time_attention([8], 4, rng0, threads=0), ValueError,
         r"threads must be a positive integer or None \(leave BLAS as is\); got 0"),
        (lambda: time_attention([8], 4, rng0, threads=1.0), TypeError,
         r"threads must be a positive integer or None; got float 1.0"),
        (lambda: projection_flops(0, 8, 2, 1, 4), ValueError, r"n must be positive; got 0"),
        (lambda: projection_flops(4, 8, 3, 2, 4), ValueError, r"n_heads=3 is not a multiple of n_kv_heads=2"),
        (lambda: projection_flops(4, 8.0, 2, 1, 4), TypeError, r"d_model must be an integer; got float 8.0"),
        (lambda: layer_crossover(8, 2, 1, 0), ValueError, r"d_head must be positive; got 0"),
        (lambda: layer_crossover(8, 2, 4, 4), ValueError, r"n_heads=2 is not a multiple of n_kv_heads=4"),
        (lambda: kv_cache_bytes("GPT-3", 2048), TypeError, r"config must be a ModelConfig.*got str"),
        (lambda: kv_cache_bytes(MODEL_CONFIGS[0], 0), ValueError, r"n_tokens must be positive; got 0"),
        (lambda: kv_cache_bytes(MODEL_CONFIGS[0], 8, dtype_bytes=-2), ValueError,
         r"dtype_bytes must be positive; got -2"),
        (lambda: compare_times([lambda: None]), TypeError, r"candidates must be a mapping.*got list"),
        (lambda: compare_times({}), ValueError, r"candidates is empty"),
        (lambda: compare_times({"a": 3}), TypeError, r"candidates\['a'\] must be callable; got int 3"),
        (lambda: compare_times({1: print}), TypeError, r"candidate names must be strings; got int 1"),
        (lambda: compare_times({"a": print}, repeats=0), ValueError, r"repeats must be positive; got 0"),
        (lambda: compare_times({"a": print}, threads=-1), ValueError,
         r"threads must be a positive integer or None.*got -1"),
        (lambda: peak_memory(np.ones(3)), TypeError, r"fn must be callable; got ndarray"),
    ],
)
def test_bad_input_raises_a_message_naming_it(call, exc, match):
    with pytest.raises(exc, match=match):
        call()


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


# --------------------------------------------------------------------------- the tables as HTML
def test_flop_and_memory_tables_keep_their_text_and_display_as_html_tables():
    counts = flop_counts(4, 4, 2, 2).table()
    lines = counts.splitlines()
    assert counts.caption == lines[0] and counts.notes == (lines[-1],)  # title and note, as in the text
    assert [r[0] for r in counts.rows] == [s.name for s in flop_counts(4, 4, 2, 2).stages] + ["total"]
    assert counts.rows[-1][2:] == ("80", "68", "12", "16", "16", "176")
    html = counts._repr_html_()
    assert html.count('<th scope="row"') == 9 and html.count('class="num"') == 6 + 9 * 6
    mem = memory_bytes(4, 4, 2, 2, np.float32).table()
    assert mem.caption == mem.splitlines()[0] and mem.notes == ("peak: 192 bytes (192 B) at stage 'output'",)
    assert mem.align == ("left", "left", "right", "right") and mem.rows[3] == (
        "output", "Q(4,2) K(4,2) V(4,2) A(4,4) O(4,2)", "48", "192")
    assert "peak: 192 bytes (192 B) at stage &#x27;output&#x27;" in mem._repr_html_()


def test_models_table_cites_works_by_name_in_html_and_says_where_each_number_is():
    t = attention_scale_table().table()
    assert "brown2020language" in t  # the text keeps the BibTeX keys (as printed before)
    html = t._repr_html_()
    for c in MODEL_CONFIGS:
        assert c.citation not in html, c.citation  # no BibTeX key reaches a reader of the HTML
        assert f"{c.name}: {c.source}".replace("'", "&#x27;") in html
    sources = [row[-1] for row in t.rows]
    assert sources == ["Radford et al. 2019", "Devlin et al. 2019", "Brown et al. 2020",
                       "Touvron et al. 2023b", "Dosovitskiy et al. 2021", "Lin et al. 2023"]
    assert t.align[0] == "left" and t.align[-1] == "left" and set(t.align[1:-1]) == {"right"}
