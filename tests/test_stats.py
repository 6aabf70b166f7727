"""Tests of attnlib.stats: dot-product variance, entropy and saturation, the softmax Jacobian.

As for every computing module of attnlib: comparison with naive loop implementations written
below with Python floats and ``math``; hypothesis properties; Monte Carlo
checks with fixed seeds (the dot-product variance against its formula, the
confidence interval's coverage); and a catalogue of bad inputs, each checked
for its exception type and message.
"""

from __future__ import annotations

import math

import hypothesis.extra.numpy as hnp
import numpy as np
import pytest
from cases import case
from hypothesis import given, settings
from hypothesis import strategies as st

from attnlib.core import softmax
from attnlib.stats import (
    SaturationStats,
    VarianceEstimate,
    dot_product_samples,
    dot_product_variance,
    entropy,
    jacobian_norm,
    max_weight,
    saturation_stats,
    softmax_jacobian,
    variance_with_ci,
)


# --------------------------------------------------------------------------- naive reference
def naive_entropy_1d(p: list[float]) -> float:
    return -sum(x * math.log(x) for x in p if x > 0)


def naive_along(f, arr, axis: int = -1) -> np.ndarray:
    """Apply ``f`` (list of floats -> float) to every 1-D slice of ``arr`` along ``axis``."""
    moved = np.moveaxis(np.asarray(arr, dtype=np.float64), axis, -1)
    out = np.zeros(moved.shape[:-1])
    for idx in np.ndindex(moved.shape[:-1]):
        out[idx] = f(moved[idx].tolist())
    return out


def naive_jacobian_1d(p: list[float]) -> list[list[float]]:
    n = len(p)
    return [[p[i] * ((1.0 if i == j else 0.0) - p[j]) for j in range(n)] for i in range(n)]


def naive_softmax_1d(z: list[float]) -> list[float]:
    peak = max(z)
    e = [math.exp(v - peak) for v in z]
    return [v / sum(e) for v in e]


def fd_softmax_jacobian(z: np.ndarray, h: float = 1e-5) -> np.ndarray:
    """Central finite-difference Jacobian of attnlib.core.softmax at logits ``z`` of shape (n,)."""
    n = z.size
    J = np.zeros((n, n))
    for j in range(n):
        e = np.zeros(n)
        e[j] = h
        J[:, j] = (softmax(z + e) - softmax(z - e)) / (2 * h)
    return J


def random_weights(rng: np.random.Generator, shape: tuple[int, ...], axis: int = -1) -> np.ndarray:
    return softmax(3 * rng.standard_normal(shape), axis=axis)


# --------------------------------------------------------------------------- dot-product variance
def test_dot_product_samples_are_dot_products_of_the_drawn_vectors():
    s = dot_product_samples(5, 7, np.random.default_rng(3), sigma_q=2.0, mean_k=1.0)
    rng = np.random.default_rng(3)
    q = rng.normal(0.0, 2.0, size=(7, 5))
    k = rng.normal(1.0, 1.0, size=(7, 5))
    expected = [sum(a * b for a, b in zip(qi, ki, strict=True)) for qi, ki in zip(q, k, strict=True)]
    assert s.shape == (7,)
    np.testing.assert_allclose(s, expected, rtol=1e-12, atol=1e-12)


def test_dot_product_samples_are_reproducible_and_chunked(monkeypatch):
    import attnlib.stats as stats

    a = dot_product_samples(8, 100, np.random.default_rng(0))
    b = dot_product_samples(8, 100, np.random.default_rng(0))
    np.testing.assert_array_equal(a, b)
    monkeypatch.setattr(stats, "_CHUNK_ENTRIES", 24)  # 3 rows per block: 34 blocks
    c = dot_product_samples(8, 100, np.random.default_rng(0))
    assert c.shape == (100,) and np.isfinite(c).all()
    assert 0.5 < c.var() / 8 < 2.0


@pytest.mark.parametrize("d_k", [1, 16, 512])
def test_monte_carlo_variance_is_d_k_within_its_interval(d_k):
    samples = dot_product_samples(d_k, 20_000, np.random.default_rng(d_k))
    est = variance_with_ci(samples)
    assert est.contains(float(d_k)), est
    assert est.low < est.estimate < est.high


@pytest.mark.parametrize(
    ("d_k", "sigma_q", "sigma_k", "mean_q", "mean_k"),
    [(4, 0.5, 2.0, 1.0, -0.5), (32, 1.0, 1.0, 0.3, 0.7), (1, 1.5, 0.5, -2.0, 0.0)],
)
def test_monte_carlo_variance_with_means_matches_the_formula(d_k, sigma_q, sigma_k, mean_q, mean_k):
    formula = d_k * (sigma_q**2 * sigma_k**2 + sigma_q**2 * mean_k**2 + sigma_k**2 * mean_q**2)
    assert dot_product_variance(d_k, sigma_q, sigma_k, mean_q, mean_k) == pytest.approx(formula, rel=1e-15)
    samples = dot_product_samples(d_k, 20_000, np.random.default_rng(7), sigma_q, sigma_k, mean_q, mean_k)
    est = variance_with_ci(samples)
    assert est.contains(formula), (formula, est)
    assert samples.mean() == pytest.approx(d_k * mean_q * mean_k, abs=5 * math.sqrt(formula / 20_000))


def test_variance_with_ci_matches_naive_sums():
    x = np.random.default_rng(5).standard_normal(50).tolist()
    n = len(x)
    mean = sum(x) / n
    s2 = sum((v - mean) ** 2 for v in x) / (n - 1)
    m4 = sum((v - mean) ** 4 for v in x) / n
    se = math.sqrt((m4 - s2**2 * (n - 3) / (n - 1)) / n)
    z = 1.959963984540054  # Φ⁻¹(0.975)
    est = variance_with_ci(x)
    assert isinstance(est, VarianceEstimate)
    assert est.n == n and est.confidence == 0.95
    assert est.estimate == pytest.approx(s2, rel=1e-12)
    assert est.low == pytest.approx(max(0.0, s2 - z * se), rel=1e-12)
    assert est.high == pytest.approx(s2 + z * se, rel=1e-12)


def test_variance_with_ci_interval_narrows_with_confidence_and_is_clipped_at_zero():
    x = dot_product_samples(4, 2000, np.random.default_rng(0))
    widths = [variance_with_ci(x, c).high - variance_with_ci(x, c).low for c in (0.5, 0.9, 0.99)]
    assert widths[0] < widths[1] < widths[2]
    assert variance_with_ci([0.0] * 9 + [10.0]).low == 0.0  # s² − z·se < 0: clipped
    const = variance_with_ci([2.0, 2.0, 2.0])
    assert (const.estimate, const.low, const.high) == (0.0, 0.0, 0.0)


@pytest.mark.parametrize(("d_k", "mean_q", "mean_k"), [(1, 0.0, 0.0), (16, 0.0, 0.0), (4, 1.0, -0.5)])
def test_variance_interval_covers_the_truth_about_95_percent_of_the_time(d_k, mean_q, mean_k):
    """200 seeded experiments of 2000 samples; d_k = 1 is the heavy-tailed case (excess kurtosis 6)."""
    rng = np.random.default_rng(2024 + d_k)
    truth = dot_product_variance(d_k, mean_q=mean_q, mean_k=mean_k)
    hits = [
        variance_with_ci(dot_product_samples(d_k, 2000, rng, mean_q=mean_q, mean_k=mean_k)).contains(truth)
        for _ in range(200)
    ]
    assert 0.90 <= np.mean(hits) <= 0.99


def test_variance_estimate_is_frozen():
    est = variance_with_ci([1.0, 2.0, 3.0])
    with pytest.raises(AttributeError):
        est.estimate = 0.0  # type: ignore[misc]


# --------------------------------------------------------------------------- entropy and max weight
@pytest.mark.parametrize("shape", [(5,), (3, 4), (2, 3, 6)])
@pytest.mark.parametrize("axis", [-1, 0])
def test_entropy_and_max_weight_match_naive_loops(shape, axis):
    w = random_weights(np.random.default_rng(len(shape)), shape, axis=axis)
    np.testing.assert_allclose(entropy(w, axis=axis), naive_along(naive_entropy_1d, w, axis), rtol=1e-12)
    np.testing.assert_array_equal(max_weight(w, axis=axis), naive_along(max, w, axis))


def test_entropy_extremes_and_zero_log_zero():
    assert entropy([1.0, 0.0, 0.0]) == 0.0
    assert entropy(np.full(8, 1 / 8)) == pytest.approx(math.log(8), rel=1e-15)
    assert entropy([0.5, 0.5, 0.0]) == pytest.approx(math.log(2), rel=1e-15)
    assert max_weight([0.2, 0.8]) == 0.8


def test_entropy_keeps_float32_and_accepts_softmax_output():
    w = softmax(np.array([[1.0, 2.0, 3.0]], dtype=np.float32))
    assert entropy(w).dtype == np.float32
    assert max_weight(w).dtype == np.float32


@settings(max_examples=50)
@given(hnp.arrays(np.float64, hnp.array_shapes(min_dims=1, max_dims=3, max_side=6),
                  elements=st.floats(-30, 30)))
def test_property_entropy_between_zero_and_log_n(z):
    w = softmax(z)
    h = entropy(w)
    assert np.all(h >= -1e-12) and np.all(h <= math.log(z.shape[-1]) + 1e-12)
    assert np.all(max_weight(w) >= 1 / z.shape[-1] - 1e-12)


# --------------------------------------------------------------------------- saturation
def test_saturation_stats_match_a_naive_loop_over_trials():
    d_k, n_tokens, n_trials = 8, 5, 30
    for scaled in (True, False):
        got = saturation_stats(d_k, n_tokens, n_trials, np.random.default_rng(11), scaled=scaled)
        rng = np.random.default_rng(11)
        q = rng.standard_normal((n_trials, 1, d_k))
        K = rng.standard_normal((n_trials, n_tokens, d_k))
        tops, ents = [], []
        for t in range(n_trials):
            scores = [sum(q[t, 0, i] * K[t, j, i] for i in range(d_k)) for j in range(n_tokens)]
            if scaled:
                scores = [s / math.sqrt(d_k) for s in scores]
            p = naive_softmax_1d(scores)
            tops.append(max(p))
            ents.append(naive_entropy_1d(p))
        assert isinstance(got, SaturationStats)
        assert (got.d_k, got.n_tokens, got.n_trials, got.scaled) == (d_k, n_tokens, n_trials, scaled)
        assert got.max_weight_mean == pytest.approx(np.mean(tops), rel=1e-12)
        assert got.max_weight_std == pytest.approx(np.std(tops), rel=1e-9)
        assert got.entropy_mean == pytest.approx(np.mean(ents), rel=1e-12)
        assert got.entropy_std == pytest.approx(np.std(ents), rel=1e-9)
        assert got.frac_saturated == np.mean(np.array(tops) > 0.99)


def test_unscaled_scores_saturate_as_d_k_grows_and_scaled_ones_do_not():
    raw = [saturation_stats(d, 16, 200, np.random.default_rng(0), scaled=False) for d in (1, 64, 256)]
    scaled = [saturation_stats(d, 16, 200, np.random.default_rng(0)) for d in (1, 64, 256)]
    assert raw[0].max_weight_mean < raw[1].max_weight_mean < raw[2].max_weight_mean
    assert raw[0].entropy_mean > raw[1].entropy_mean > raw[2].entropy_mean
    assert raw[2].frac_saturated > 0.5
    for s in scaled:  # with √d_k the scores have unit variance whatever d_k is
        assert s.frac_saturated < 0.05
        assert s.max_weight_mean < 0.3 and s.entropy_mean > 2.2  # log 16 = 2.77
    # for large d_k the scaled scores given q are ≈ N(0, 1), so the statistics settle
    assert scaled[1].max_weight_mean == pytest.approx(scaled[2].max_weight_mean, abs=0.03)


# --------------------------------------------------------------------------- softmax Jacobian
@pytest.mark.parametrize("shape", [(1,), (4,), (3, 5), (2, 3, 4)])
def test_softmax_jacobian_matches_naive_loops(shape):
    p = random_weights(np.random.default_rng(1), shape)
    J = softmax_jacobian(p)
    assert J.shape == shape + (shape[-1],)
    for idx in np.ndindex(shape[:-1]):
        np.testing.assert_allclose(J[idx], naive_jacobian_1d(p[idx].tolist()), rtol=1e-15, atol=1e-17)


@pytest.mark.parametrize("seed", range(5))
def test_softmax_jacobian_equals_finite_differences_of_softmax(seed):
    z = 2 * np.random.default_rng(seed).standard_normal(3 + seed)
    J = softmax_jacobian(softmax(z))
    J_fd = fd_softmax_jacobian(z)
    assert np.linalg.norm(J - J_fd) / np.linalg.norm(J) <= 1e-6


@settings(max_examples=50)
@given(hnp.arrays(np.float64, hnp.array_shapes(min_dims=1, max_dims=3, max_side=6),
                  elements=st.floats(-20, 20)))
def test_property_jacobian_symmetric_psd_with_zero_row_and_column_sums(z):
    J = softmax_jacobian(softmax(z))
    np.testing.assert_array_equal(J, J.swapaxes(-1, -2))
    np.testing.assert_allclose(J.sum(axis=-1), 0.0, atol=1e-15)
    np.testing.assert_allclose(J.sum(axis=-2), 0.0, atol=1e-15)
    assert np.all(np.linalg.eigvalsh(J) >= -1e-15)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_softmax_jacobian_diagonal_keeps_its_precision_in_a_saturated_row(dtype):
    """p_w (1 − p_w) with p_w within rounding of 1: the diagonal is p_w Σ_{j≠w} p_j, not p_w − p_w²."""
    z = np.array([30.0, 0.0, -1.0, -2.0])
    p = softmax(z.astype(dtype))
    J = softmax_jacobian(p)
    assert J.dtype == dtype
    e = [math.exp(v - 30.0) for v in z[1:]]  # the losers' weights, in exact-enough float arithmetic
    p_w = 1 / (1 + sum(e))
    rtol = 1e-13 if dtype == np.float64 else 1e-5
    assert float(J[0, 0]) == pytest.approx(p_w * sum(v * p_w for v in e), rel=rtol)
    for i, v in enumerate(e, start=1):  # a loser's diagonal: p_i (1 − p_i) ≈ p_i
        assert float(J[i, i]) == pytest.approx(v * p_w * (1 - v * p_w), rel=rtol)
    # the row of the winner still sums to 0 relative to its entries
    assert abs(float(J[0].sum(dtype=np.float64))) <= 1e-6 * float(np.abs(J[0]).sum())


def test_jacobian_norm_matches_numpy_and_naive():
    p = random_weights(np.random.default_rng(2), (3, 4))
    fro = [math.sqrt(sum(v * v for row in naive_jacobian_1d(r.tolist()) for v in row)) for r in p]
    np.testing.assert_allclose(jacobian_norm(p), fro, rtol=1e-13)
    for ord_ in ("nuc", 1, 2, math.inf):
        np.testing.assert_allclose(
            jacobian_norm(p, ord=ord_), np.linalg.norm(softmax_jacobian(p), ord=ord_, axis=(-2, -1))
        )
    # symmetric PSD: the spectral norm is the largest eigenvalue
    np.testing.assert_allclose(jacobian_norm(p, ord=2), np.linalg.eigvalsh(softmax_jacobian(p))[:, -1])


def test_jacobian_norm_vanishes_as_the_logits_grow():
    z = np.array([1.0, 0.8, 0.5, 0.2])
    norms = [float(jacobian_norm(softmax(c * z))) for c in (1, 5, 20, 100)]
    assert norms[0] > norms[1] > norms[2] > norms[3]
    assert norms[2] < 0.1 * norms[0]
    assert norms[3] < 1e-7
    assert jacobian_norm(softmax(np.zeros(4))) == pytest.approx(math.sqrt(3) / 4, rel=1e-15)
    # uniform over n: 3/16 on the diagonal, -1/16 off it


# --------------------------------------------------------------------------- bad inputs

rng0 = np.random.default_rng(0)
BAD_INPUTS = [
    case("samples_d_k_0", lambda: dot_product_samples(0, 10, rng0), ValueError,
         "d_k must be positive; got 0"),
    case("samples_n_float", lambda: dot_product_samples(4, 2.5, rng0), TypeError,
         "n must be an integer; got float 2.5"),
    case("samples_seed_not_rng", lambda: dot_product_samples(4, 10, 0), TypeError,
         "rng must be a numpy.random.Generator ", "; got int"),
    case("samples_legacy_random_state", lambda: dot_product_samples(4, 10, np.random.RandomState(0)),
         TypeError, "got RandomState"),
    case("samples_sigma_zero", lambda: dot_product_samples(4, 10, rng0, sigma_q=0.0), ValueError,
         "sigma_q must be positive; got 0.0"),
    case("samples_sigma_k_negative", lambda: dot_product_samples(4, 10, rng0, sigma_k=-1), ValueError,
         "sigma_k must be positive; got -1.0"),
    case("samples_mean_nan", lambda: dot_product_samples(4, 10, rng0, mean_k=float("nan")), ValueError,
         "mean_k must be finite; got nan"),
    case("samples_mean_str", lambda: dot_product_samples(4, 10, rng0, mean_q="1"), TypeError,
         "mean_q must be a real number; got str '1'"),
    case("variance_d_k_bool", lambda: dot_product_variance(True), TypeError,
         "d_k must be an integer; got bool"),
    case("ci_2d", lambda: variance_with_ci(np.ones((2, 3))), ValueError,
         "samples must be a 1-D array of numbers; got shape (2, 3)"),
    case("ci_one_sample", lambda: variance_with_ci([1.0]), ValueError,
         "samples must hold at least 2 values for a variance; got 1"),
    case("ci_nan", lambda: variance_with_ci([1.0, float("nan")]), ValueError,
         "samples must be finite; it holds 1 NaN"),
    case("ci_confidence_1", lambda: variance_with_ci([1.0, 2.0], 1.0), ValueError,
         "confidence must lie strictly between 0 and 1; got 1.0"),
    case("ci_confidence_percent", lambda: variance_with_ci([1.0, 2.0], 95), ValueError,
         "confidence must lie strictly between 0 and 1; got 95.0"),
    case("ci_strings", lambda: variance_with_ci(["a", "b"]), TypeError, "samples must hold real numbers"),
    case("entropy_negative", lambda: entropy([1.2, -0.2]), ValueError,
         "weights must be non-negative; it holds 1 negative entries (first -0.2 at index (1,)"),
    case("entropy_not_normalised", lambda: entropy([[0.5, 0.5], [0.3, 0.3]]), ValueError,
         "weights must sum to 1 along axis -1 ", "1 of 2 slices do not, e.g. sum 0.6 at index (1,)"),
    case("entropy_wrong_axis", lambda: entropy(softmax(np.ones((2, 3))), axis=0), ValueError,
         "weights must sum to 1 along axis 0"),
    case("entropy_axis_out_of_range", lambda: entropy([0.5, 0.5], axis=1), ValueError,
         "axis 1 is out of range for weights of shape (2,)"),
    case("entropy_axis_float", lambda: entropy([0.5, 0.5], axis=0.0), TypeError,
         "axis must be an integer; got float"),
    case("entropy_scalar", lambda: entropy(1.0), ValueError, "weights must have at least 1 dimension"),
    case("entropy_empty", lambda: entropy(np.ones((2, 0))), ValueError,
         "weights has length 0 along axis -1 (shape (2, 0))"),
    case("max_weight_inf", lambda: max_weight([np.inf, 0.0]), ValueError,
         "weights must be finite; it holds 1 +inf"),
    case("max_weight_bool", lambda: max_weight([True, False]), TypeError,
         "weights must hold real numbers, not booleans"),
    case("saturation_tokens_0", lambda: saturation_stats(4, 0, 10, rng0), ValueError,
         "n_tokens must be positive; got 0"),
    case("saturation_trials_float", lambda: saturation_stats(4, 3, 1e3, rng0), TypeError,
         "n_trials must be an integer; got float"),
    case("saturation_scaled_int", lambda: saturation_stats(4, 3, 10, rng0, scaled=1), TypeError,
         "scaled must be True or False; got int 1"),
    case("saturation_no_rng", lambda: saturation_stats(4, 3, 10, None), TypeError,
         "rng must be a numpy.random.Generator"),
    case("jacobian_not_probabilities", lambda: softmax_jacobian([1.0, 2.0]), ValueError,
         "p must sum to 1 along axis -1"),
    case("jacobian_all_masked_row", lambda: softmax_jacobian(softmax([[1.0, 2.0]], mask=[[False, False]])),
         ValueError, "p must sum to 1 along axis -1 ", "sum 0 at index (0,)"),
    case("jacobian_scalar", lambda: softmax_jacobian(1.0), ValueError, "p must have at least 1 dimension"),
    case("norm_bad_ord", lambda: jacobian_norm([0.5, 0.5], ord="max"), ValueError,
         "ord must be one of ('fro', 'nuc', 1, 2, inf); got 'max'"),
    case("norm_ord_bool", lambda: jacobian_norm([0.5, 0.5], ord=True), ValueError, "got True"),
]


@pytest.mark.parametrize(("call", "exc", "match"), BAD_INPUTS)
def test_bad_input_raises_a_message_naming_it(call, exc, match):
    with pytest.raises(exc, match=match):
        call()


def test_bad_input_catalogue_is_large_and_distinct():
    ids = [p.id for p in BAD_INPUTS]
    assert len(ids) == len(set(ids)) >= 20
    assert len({p.values[2] for p in BAD_INPUTS}) == len(BAD_INPUTS)
