"""The naive reference implementations: right on safe inputs, fragile where they should be."""

from __future__ import annotations

import numpy as np
import pytest

from attnlib.core import scaled_dot_product_attention, softmax
from attnlib.naive import loop_attention, naive_softmax


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_naive_softmax_equals_core_on_safe_inputs(dtype):
    x = np.random.default_rng(0).standard_normal((4, 3, 7)).astype(dtype)
    tol = {np.float16: 2e-3, np.float32: 1e-6, np.float64: 1e-14}[dtype]
    for axis in (-1, 0, 1):
        ours = naive_softmax(x, axis=axis)
        assert ours.dtype == x.dtype
        np.testing.assert_allclose(ours, softmax(x, axis=axis), rtol=tol, atol=tol)


def test_naive_softmax_accepts_lists_and_integers():
    np.testing.assert_allclose(naive_softmax([0, 0]), [0.5, 0.5])
    assert naive_softmax([1, 2]).dtype == np.float64


@pytest.mark.parametrize(("dtype", "logit"), [(np.float64, 1000.0), (np.float32, 100.0), (np.float16, 12.0)])
def test_naive_softmax_overflows_to_nan_where_core_does_not(dtype, logit):
    x = np.array([logit, 0.0, -1.0], dtype=dtype)
    with np.errstate(all="raise"):  # must not raise whatever the caller's settings
        naive = naive_softmax(x)  # no warning either: pytest turns RuntimeWarning into errors
    assert np.isnan(naive[0]), naive  # exp(logit) = inf, and inf / inf = nan
    assert not np.isfinite(naive.astype(np.float64).sum())
    stable = softmax(x)
    assert np.isfinite(stable).all()
    assert abs(float(stable.astype(np.float64).sum()) - 1.0) < 1e-2
    assert stable[0] > 0.99 and stable[1] >= stable[2] >= 0


def test_naive_softmax_of_a_fully_masked_row_is_nan_and_core_gives_zeros():
    x = np.full(4, -np.inf)
    assert np.isnan(naive_softmax(x)).all()
    assert (softmax(x) == 0.0).all()


def test_naive_softmax_refuses_what_is_not_an_array_of_reals():
    with pytest.raises(TypeError, match="real numbers"):
        naive_softmax(np.array(["a", "b"]))
    with pytest.raises(ValueError, match="scalar"):
        naive_softmax(3.0)


@pytest.mark.parametrize("seed", range(20))
def test_loop_attention_equals_core(seed):
    rng = np.random.default_rng(seed)
    n_q, n_k, d_k, d_v = (int(v) for v in rng.integers(1, 7, size=4))
    Q, K = rng.standard_normal((n_q, d_k)), rng.standard_normal((n_k, d_k))
    V = rng.standard_normal((n_k, d_v))
    scale = None if seed % 2 else float(rng.uniform(0.1, 3.0))
    ours = loop_attention(Q, K, V, scale=scale)
    assert ours.shape == (n_q, d_v)
    expected = scaled_dot_product_attention(Q, K, V, scale=scale)
    np.testing.assert_allclose(ours, expected, rtol=1e-12, atol=1e-12)


def test_loop_attention_large_scores_do_not_overflow():
    Q = np.array([[100.0, 0.0]])
    K = np.array([[100.0, 0.0], [0.0, 1.0]])
    V = np.array([[1.0], [2.0]])
    np.testing.assert_allclose(loop_attention(Q, K, V), [[1.0]])


def test_loop_attention_errors_name_the_arrays():
    Q, K, V = np.ones((2, 3)), np.ones((4, 3)), np.ones((4, 5))
    with pytest.raises(ValueError, match=r"2-D arrays only; Q has shape \(1, 2, 3\)"):
        loop_attention(Q[None], K, V)
    with pytest.raises(ValueError, match="K has d_k=2 but Q has d_k=3"):
        loop_attention(Q, K[:, :2], V)
    with pytest.raises(ValueError, match="V has n_k=3 rows but K has n_k=4"):
        loop_attention(Q, K, V[:3])
    with pytest.raises(ValueError, match="scale must be positive"):
        loop_attention(Q, K, V, scale=0.0)
    with pytest.raises(ValueError, match="Q must be finite"):
        loop_attention(np.full((2, 3), np.nan), K, V)
    with pytest.raises(TypeError, match="real numbers"):
        loop_attention(Q.astype(bool), K, V)
