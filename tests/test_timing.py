"""Tests of attnlib.timing: power-law fits, timing helpers and peak memory.

1. The power-law fit recovers known exponents, and its t quantiles match
   printed tables; the timing helpers limit BLAS threads and interleave.
2. peak_memory measures known allocations.
3. A catalogue of bad inputs, each checked for its type and message.
"""

import math
import tracemalloc

import numpy as np
import pytest
from threadpoolctl import threadpool_info

from attnlib.timing import (
    AttentionTiming,
    PowerLawFit,
    TimingComparison,
    compare_times,
    fit_power_law,
    peak_memory,
    time_attention,
)


# --------------------------------------------------------------------------- fits and timing
@pytest.mark.parametrize(
    ("df", "t_975"),  # two-sided 95% Student quantiles from printed tables
    [(1, 12.7062), (2, 4.3027), (3, 3.1824), (4, 2.7764), (5, 2.5706), (10, 2.2281), (30, 2.0423)],
)
def test_t_quantiles_match_printed_tables(df, t_975):
    from attnlib.timing import _t_quantile

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
    import attnlib.timing as cx

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
        (lambda: time_attention([8], 4, rng0, dtype=np.int64), TypeError, r"floating NumPy dtype.*int64"),
        (lambda: time_attention([8], 4, rng0, threads=0), ValueError,
         r"threads must be a positive integer or None \(leave BLAS as is\); got 0"),
        (lambda: time_attention([8], 4, rng0, threads=1.0), TypeError,
         r"threads must be a positive integer or None; got float 1.0"),
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
