"""Tests of attnlib.counts: FLOP and memory counts, projections and the crossover.

1. The FLOP counts are checked against a naive pure-Python attention that
   increments a counter at every multiply, add, comparison, exp and divide,
   and computes the right answer while doing so.
2. The memory counts are checked against the ``nbytes`` of real arrays.
3. The projection counts are checked against a brute-force count of the four
   products, the crossover against flop_counts.
4. The tables keep their text and display as HTML tables.
5. A catalogue of bad inputs, each checked for its type and message.
"""

import math
from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from attnlib.core import scaled_dot_product_attention
from attnlib.counts import (
    FlopCounts,
    LayerCrossover,
    MemoryCounts,
    flop_counts,
    layer_crossover,
    memory_bytes,
    projection_flops,
)
from attnlib.models import (
    MODEL_CONFIGS,
)


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


# --------------------------------------------------------------------------- bad inputs
@pytest.mark.parametrize(
    ("call", "exc", "match"),
    [
        (lambda: flop_counts(0, 4, 2, 2), ValueError, r"n_q must be positive; got 0"),
        (lambda: flop_counts(4, 4, 2.0, 2), TypeError, r"d_k must be an integer; got float 2.0"),
        (lambda: flop_counts(4, -1, 2, 2), ValueError, r"n_k must be positive; got -1"),
        (lambda: flop_counts(4, 4, 2, True), TypeError, r"d_v must be an integer; got bool"),
        (lambda: memory_bytes(4, 4, 2, 2, np.int32), TypeError, r"floating NumPy dtype.*int32"),
        (lambda: memory_bytes(4, 4, 2, 2, "nonsense"), TypeError, r"floating NumPy dtype such as"),
        (lambda: memory_bytes(4, 4, 2, 2, in_place=1), TypeError, r"in_place must be True or False"),
        (lambda: projection_flops(0, 8, 2, 1, 4), ValueError, r"n must be positive; got 0"),
        (lambda: projection_flops(4, 8, 3, 2, 4), ValueError, r"n_heads=3 is not a multiple of n_kv_heads=2"),
        (lambda: projection_flops(4, 8.0, 2, 1, 4), TypeError, r"d_model must be an integer; got float 8.0"),
        (lambda: layer_crossover(8, 2, 1, 0), ValueError, r"d_head must be positive; got 0"),
        (lambda: layer_crossover(8, 2, 4, 4), ValueError, r"n_heads=2 is not a multiple of n_kv_heads=4"),
    ],
)
def test_bad_input_raises_a_message_naming_it(call, exc, match):
    with pytest.raises(exc, match=match):
        call()
