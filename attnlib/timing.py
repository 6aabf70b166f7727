"""Measured time and memory of attention: medians, power-law fits with confidence intervals.

* :func:`time_attention` and :func:`fit_power_law` – how the measured time of
  :func:`attnlib.core.scaled_dot_product_attention` grows with ``n``, and with which exponent
  (a Student-t confidence interval);
* :func:`compare_times` and :func:`peak_memory` – the time (interleaved medians) and the peak traced
  memory of any calls, measured the same way.

Timings run BLAS on one thread by default (``threads=1``, through threadpoolctl): on a shared two-core
machine a multithreaded BLAS waits for descheduled threads, which turns sub-millisecond products into
tens of milliseconds at random, so the times and the fitted exponent describe the scheduler rather
than the algorithm. One thread gives steady numbers.
"""

from __future__ import annotations

import itertools
import math
import numbers
import statistics
import time
import tracemalloc
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import numpy as np

from attnlib import _validation as _v
from attnlib.core import scaled_dot_product_attention

__all__ = [
    "PowerLawFit",
    "fit_power_law",
    "AttentionTiming",
    "time_attention",
    "TimingComparison",
    "compare_times",
    "peak_memory",
]


def _check_threads(threads: Any) -> int | None:
    if threads is None:
        return None
    if isinstance(threads, (bool, np.bool_)) or not isinstance(threads, numbers.Integral):
        raise TypeError(
            f"threads must be a positive integer or None; got {type(threads).__name__} {threads!r}"
        )
    if threads <= 0:
        raise ValueError(f"threads must be a positive integer or None (leave BLAS as is); got {threads}")
    return int(threads)


@contextmanager
def _thread_limit(threads: int | None) -> Iterator[None]:
    """Limit BLAS/OpenMP pools to ``threads`` inside the block; ``None`` leaves them as they are."""
    if threads is None:
        yield
        return
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover - threadpoolctl is in requirements.txt
        raise ImportError(
            f"threads={threads} needs threadpoolctl (pip install threadpoolctl); "
            "pass threads=None to time with the BLAS threads as they are"
        ) from None
    with threadpool_limits(limits=threads):
        yield


# --------------------------------------------------------------------------- timing and fits
def _t_two_sided(t: float, df: int) -> float:
    """``P(|T| ≤ t)`` for Student's t with integer ``df``, in closed form.

    Abramowitz & Stegun 26.7.3–26.7.4: with ``θ = atan(t/√df)`` and
    ``c = cos θ``, for even ``df`` it is ``sin θ · (1 + c²/2 + (1·3)/(2·4) c⁴
    + … + (1·3⋯(df−3))/(2·4⋯(df−2)) c^(df−2))``; for odd ``df`` it is
    ``(2/π)(θ + sin θ · (c + (2/3) c³ + … + (2·4⋯(df−3))/(1·3⋯(df−2)) c^(df−2)))``
    (just ``2θ/π`` for ``df = 1``). Exact up to rounding.
    """
    theta = math.atan(t / math.sqrt(df))
    c2 = math.cos(theta) ** 2
    if df % 2 == 0:
        term = total = 1.0
        for k in range(1, (df - 2) // 2 + 1):
            term *= (2 * k - 1) / (2 * k) * c2
            total += term
        return math.sin(theta) * total
    if df == 1:
        return 2.0 * theta / math.pi
    term = total = math.cos(theta)
    for k in range(1, (df - 3) // 2 + 1):
        term *= (2 * k) / (2 * k + 1) * c2
        total += term
    return 2.0 / math.pi * (theta + math.sin(theta) * total)


def _t_quantile(confidence: float, df: int) -> float:
    """The ``t`` with ``P(|T| ≤ t) = confidence`` (e.g. 2.2281 for 0.95 and ``df = 10``).

    Solved by bisection on ``θ = atan(t/√df) ∈ (0, π/2)`` using the closed
    form of :func:`_t_two_sided`, which increases with ``θ``; 200 halvings
    reach the resolution of a float.
    """
    lo, hi = 0.0, math.pi / 2
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if _t_two_sided(math.sqrt(df) * math.tan(mid), df) < confidence:
            lo = mid
        else:
            hi = mid
    return math.sqrt(df) * math.tan(0.5 * (lo + hi))


@dataclass(frozen=True)
class PowerLawFit:
    """A fitted power law ``t ≈ prefactor · n^exponent`` with an interval on the exponent.

    Attributes
    ----------
    exponent : float
        Least-squares slope of ``log t`` on ``log n``.
    low, high : float
        Confidence interval of the exponent: ``exponent ∓ t_q · stderr``.
    stderr : float
        Standard error of the slope.
    prefactor : float
        ``exp(intercept)``: the fitted ``t`` at ``n = 1``, in the units of ``times``.
    df : int
        Residual degrees of freedom (points − 2).
    confidence : float
        Nominal coverage of ``[low, high]``.
    r_squared : float
        Fraction of the variance of ``log t`` explained by the fit.
    """

    exponent: float
    low: float
    high: float
    stderr: float
    prefactor: float
    df: int
    confidence: float
    r_squared: float

    def contains(self, value: float) -> bool:
        """Whether ``low <= value <= high``."""
        return bool(self.low <= value <= self.high)

    def predict(self, n: Any) -> np.ndarray:
        """``prefactor · n^exponent`` for each ``n``."""
        return self.prefactor * np.asarray(n, dtype=np.float64) ** self.exponent

    def __str__(self) -> str:
        pct = f"{100 * self.confidence:g}%"
        return (f"t ≈ {self.prefactor:.3g} · n^{self.exponent:.3f}  "
                f"({pct} CI for the exponent [{self.low:.3f}, {self.high:.3f}], R² = {self.r_squared:.4f})")


def fit_power_law(ns: Any, times: Any, confidence: float = 0.95) -> PowerLawFit:
    """Fit ``t = c · n^p`` by least squares on ``log t = log c + p log n``, with a CI for ``p``.

    The interval is ``p̂ ± t_{df} · se(p̂)`` with ``se(p̂)² = s² / Σ(log nᵢ −
    mean)²``, ``s²`` the residual variance on ``df = m − 2`` degrees of
    freedom, and ``t_{df}`` the two-sided Student quantile, computed exactly
    from its closed form for integer ``df`` (Abramowitz & Stegun 26.7.3–4)
    without SciPy. The interval assumes independent errors of equal variance
    on the log scale, i.e. timing noise proportional to the time; it says
    nothing about lower-order terms that bend the curve, which show up as
    residuals (and a lower ``r_squared``).

    Parameters
    ----------
    ns : (m,) array_like
        Sizes, positive, at least two distinct values; ``m ≥ 3``.
    times : (m,) array_like
        Positive finite times (any unit; the prefactor is in that unit).
    confidence : float
        Nominal coverage of the interval, strictly between 0 and 1.

    Returns
    -------
    PowerLawFit

    Raises
    ------
    TypeError
        Non-real inputs or ``confidence``.
    ValueError
        ``ns`` and ``times`` not 1-D or of different lengths, fewer than 3
        points, a non-positive or non-finite value, all ``ns`` equal, or
        ``confidence`` outside (0, 1).

    Examples
    --------
    >>> fit = fit_power_law([256, 512, 1024, 2048], [1.0, 4.0, 16.0, 64.0])
    >>> round(fit.exponent, 6), round(fit.prefactor * 256**2, 6)
    (2.0, 1.0)
    >>> import numpy as np
    >>> ns = np.array([100, 200, 400, 800, 1600])
    >>> noisy = 3e-9 * ns**2 * np.exp(np.random.default_rng(0).normal(0, 0.05, ns.size))
    >>> fit = fit_power_law(ns, noisy)
    >>> fit.contains(2.0), fit.df
    (True, 3)
    """
    confidence = _v.check_confidence(confidence)
    n_arr = _v.as_float_array(ns, "ns")
    t_arr = _v.as_float_array(times, "times")
    for arr, name in ((n_arr, "ns"), (t_arr, "times")):
        if arr.ndim != 1:
            raise ValueError(f"{name} must be 1-D; got shape {arr.shape}")
        if (arr <= 0).any():
            bad = arr[arr <= 0][0]
            raise ValueError(f"{name} must be positive (a power law is fitted on logs); got {bad}")
    if n_arr.shape != t_arr.shape:
        raise ValueError(f"ns and times must have the same length; got {n_arr.size} and {t_arr.size}")
    if n_arr.size < 3:
        raise ValueError(
            f"fit_power_law needs at least 3 points for an interval (2 fit a line exactly); got {n_arr.size}"
        )
    x, y = np.log(n_arr.astype(np.float64)), np.log(t_arr.astype(np.float64))
    sxx = float(((x - x.mean()) ** 2).sum())
    if sxx == 0.0:
        raise ValueError(f"ns must hold at least two distinct sizes; got all {n_arr[0]:g}")
    slope = float(((x - x.mean()) * (y - y.mean())).sum()) / sxx
    intercept = float(y.mean()) - slope * float(x.mean())
    resid = y - (intercept + slope * x)
    df = n_arr.size - 2
    s2 = float((resid**2).sum()) / df
    stderr = math.sqrt(s2 / sxx)
    half = _t_quantile(confidence, df) * stderr
    syy = float(((y - y.mean()) ** 2).sum())
    r2 = 1.0 - float((resid**2).sum()) / syy if syy > 0 else 1.0
    return PowerLawFit(slope, slope - half, slope + half, stderr, math.exp(intercept), df, confidence, r2)


@dataclass(frozen=True, eq=False)
class AttentionTiming:
    """Wall-clock times of :func:`attnlib.core.scaled_dot_product_attention` per size.

    Attributes
    ----------
    ns : tuple of int
        Sequence lengths ``n`` (``n_q = n_k = n``).
    d : int
        ``d_k = d_v``.
    dtype : str
        Element type of ``Q``, ``K``, ``V``.
    medians : (len(ns),) ndarray
        Median time per ``n``, in seconds.
    times : (len(ns), repeats) ndarray
        Every measured time, in seconds (read-only).
    """

    ns: tuple[int, ...]
    d: int
    dtype: str
    medians: np.ndarray = field(repr=False)
    times: np.ndarray = field(repr=False)

    def fit(self, confidence: float = 0.95) -> PowerLawFit:
        """:func:`fit_power_law` of the medians against ``ns``."""
        return fit_power_law(self.ns, self.medians, confidence)

    @property
    def quartiles(self) -> tuple[np.ndarray, np.ndarray]:
        """The lower and upper quartiles ``(q1, q3)`` of the times per ``n``, in seconds.

        Each is ``(len(ns),)``; ``q3 − q1`` is the interquartile range (IQR),
        the spread of the middle half of the calls at that size
        (:func:`numpy.quantile`, linear interpolation).
        """
        q1, q3 = np.quantile(self.times, [0.25, 0.75], axis=1)  # each (len(ns),)
        return q1, q3

    def inversions(self) -> tuple[tuple[int, int], ...]:
        """Neighbouring sizes whose median time did not rise with ``n``.

        The sizes are taken in increasing order; a pair ``(n_a, n_b)`` with
        ``n_a < n_b`` is listed when ``median(n_b) <= median(n_a)``: the larger
        problem took no longer than the smaller one. The count predicts a time
        that rises with ``n``, so a pair here means that something other than
        the computation (another process, a change of clock speed, a
        different BLAS kernel for one size) moved that run's medians.

        Returns
        -------
        tuple of (int, int)
            Empty when every median is above the one of the next smaller size.

        Examples
        --------
        >>> import numpy as np
        >>> t = np.array([[1.0, 1.0], [3.0, 3.0], [2.0, 2.0]])  # (len(ns), repeats), seconds
        >>> timing = AttentionTiming((10, 20, 30), 8, "float32", np.median(t, axis=1), t)
        >>> timing.inversions(), timing.rises_with_n
        (((20, 30),), False)
        """
        order = sorted(range(len(self.ns)), key=lambda i: self.ns[i])
        return tuple(
            (self.ns[a], self.ns[b])
            for a, b in itertools.pairwise(order)
            if self.ns[b] > self.ns[a] and self.medians[b] <= self.medians[a]
        )

    @property
    def rises_with_n(self) -> bool:
        """Whether the median time rises with ``n`` at every step (no :meth:`inversions`)."""
        return not self.inversions()


def time_attention(
    ns: Sequence[int],
    d: int,
    rng: np.random.Generator,
    repeats: int = 5,
    dtype: Any = np.float32,
    threads: int | None = 1,
) -> AttentionTiming:
    """Time ``scaled_dot_product_attention(Q, K, V)`` for ``Q, K, V`` of shape ``(n, d)``.

    For each ``n``, standard-normal ``Q``, ``K``, ``V`` are drawn from ``rng``
    and attention is called once to warm up (allocation, thread pools). Then
    ``repeats`` rounds each time one call per ``n`` with
    :func:`time.perf_counter`, the sizes interleaved so that a slow spell of
    a shared machine falls on every ``n`` alike rather than on one. The
    median per ``n`` stays within the range of the unaffected calls as long
    as fewer than half of the calls at that size are slowed; ``.quartiles``
    gives the spread and ``.inversions()`` the sizes whose medians did not
    rise with ``n``.
    Inputs for all sizes are held at once (``3·n·d`` elements each).

    The warm-up and the timed calls run with the BLAS thread pool limited to
    ``threads`` (through ``threadpoolctl.threadpool_limits``). One thread is
    the default because on a loaded machine with few cores (the book is built
    on two) a multithreaded BLAS makes each product wait for its slowest,
    possibly descheduled, thread: the times then measure the scheduler, vary
    tenfold between runs and bend the fitted exponent, while one thread gives
    a steady exponent, which is a property of the algorithm.

    Parameters
    ----------
    ns : sequence of int
        Sequence lengths, positive.
    d : int
        Width of queries, keys and values.
    rng : numpy.random.Generator
        Source of the inputs.
    repeats : int
        Timed calls per ``n``.
    dtype : NumPy floating dtype
        Element type of the inputs; float32 by default, as in practice.
    threads : int or None
        BLAS threads during the measurement; ``None`` leaves the pool as it is.

    Returns
    -------
    AttentionTiming
        ``.medians``, ``.quartiles`` and ``.times`` in seconds; ``.fit()``
        gives the exponent, ``.rises_with_n`` whether the medians rise with ``n``.

    Raises
    ------
    TypeError
        ``rng`` is not a Generator, a size or ``threads`` is not an integer,
        or ``dtype`` is not a floating dtype.
    ValueError
        ``ns`` is empty or holds a non-positive size, or ``d``, ``repeats``
        or ``threads`` is not positive.

    Examples
    --------
    >>> import numpy as np
    >>> timing = time_attention([16, 32], d=8, rng=np.random.default_rng(0), repeats=2)
    >>> timing.times.shape, bool((timing.medians > 0).all())
    ((2, 2), True)
    """
    rng = _v.check_rng(rng)
    d = _v.check_positive_int(d, "d")
    repeats = _v.check_positive_int(repeats, "repeats")
    dt = _v.check_float_dtype(dtype)
    threads = _check_threads(threads)
    if isinstance(ns, (numbers.Number, str)) or not isinstance(ns, Sequence | np.ndarray):
        raise TypeError(f"ns must be a sequence of integers; got {type(ns).__name__} {ns!r}")
    if len(ns) == 0:
        raise ValueError("ns is empty; give at least one sequence length")
    sizes = tuple(_v.check_positive_int(n, f"ns[{i}]") for i, n in enumerate(ns))
    inputs = [rng.standard_normal((3, n, d)).astype(dt) for n in sizes]  # each (3, n, d): Q, K, V
    times = np.empty((len(sizes), repeats))
    with _thread_limit(threads):
        for Q, K, V in inputs:  # warm-up
            scaled_dot_product_attention(Q, K, V)
        for r in range(repeats):  # sizes interleaved, so a slow spell of the machine hits every n alike
            for i, (Q, K, V) in enumerate(inputs):
                start = time.perf_counter()
                scaled_dot_product_attention(Q, K, V)
                times[i, r] = time.perf_counter() - start
    medians = np.array([statistics.median(row) for row in times.tolist()])
    medians.setflags(write=False)
    times.setflags(write=False)
    return AttentionTiming(sizes, d, dt.name, medians, times)


@dataclass(frozen=True)
class TimingComparison:
    """Wall-clock times of several callables measured side by side; see :func:`compare_times`.

    Attributes
    ----------
    names : tuple of str
        The candidates, in the order they were given (and run in each round).
    times : mapping of str to tuple of float
        Every timed call per candidate, in seconds, in round order (read-only).
    medians : mapping of str to float
        Median time per candidate, in seconds (read-only).
    repeats : int
        Timed rounds.
    threads : int or None
        The BLAS thread limit during the measurement (``None``: not limited).
    """

    names: tuple[str, ...]
    times: Mapping[str, tuple[float, ...]] = field(repr=False)
    medians: Mapping[str, float]
    repeats: int
    threads: int | None

    def _check_candidates(self, *names: str) -> None:
        for name in names:
            if name not in self.medians:
                raise KeyError(f"no candidate {name!r}; the candidates are {list(self.names)}")

    def ratio(self, a: str, b: str) -> float:
        """``medians[a] / medians[b]``: how many times as long ``a`` took as ``b``.

        Raises
        ------
        KeyError
            ``a`` or ``b`` is not a candidate.

        Examples
        --------
        >>> c = compare_times({"one": lambda: sum(range(10)), "two": lambda: sum(range(10))}, repeats=3)
        >>> c.ratio("one", "two") > 0
        True
        """
        self._check_candidates(a, b)
        return self.medians[a] / self.medians[b]

    def round_ratios(self, a: str, b: str) -> np.ndarray:
        """``times[a][r] / times[b][r]`` for every round ``r``: the ratio of two calls made side by side.

        The candidates are called one after the other in each round, so a
        slow spell of the machine tends to hit both calls of a round; the
        spread of these paired ratios says whether one candidate was
        consistently faster, which the ratio of the medians alone does not.

        Returns
        -------
        (repeats,) ndarray

        Raises
        ------
        KeyError
            ``a`` or ``b`` is not a candidate.

        Examples
        --------
        >>> c = compare_times({"one": lambda: None, "two": lambda: None}, repeats=4)
        >>> c.round_ratios("one", "two").shape
        (4,)
        """
        self._check_candidates(a, b)
        return np.array(self.times[a]) / np.array(self.times[b])  # (repeats,)


def compare_times(
    candidates: Mapping[str, Callable[[], object]],
    repeats: int = 5,
    threads: int | None = 1,
) -> TimingComparison:
    """Time several callables interleaved and return every time and the medians.

    Each candidate is called once to warm up (allocation, caches, thread
    pools), in the order given. Then ``repeats`` rounds each time one call of
    every candidate with :func:`time.perf_counter`, in the same order, so that
    a slow spell of a shared machine falls on all candidates alike rather than
    on one. The median per candidate stays within the range of the unaffected
    calls as long as fewer than half of its calls are slowed;
    ``.round_ratios(a, b)`` gives the paired ratio of every round. Return
    values are discarded.

    The warm-up and the timed calls run with the BLAS thread pool limited to
    ``threads`` (through ``threadpoolctl.threadpool_limits``); one thread by
    default, for the reason given in :func:`time_attention`: on a loaded
    machine with few cores, multithreaded BLAS timings measure the waits for
    descheduled threads, not the computation.

    Parameters
    ----------
    candidates : mapping of str to callable
        Name → a function of no arguments (wrap arguments with a ``lambda``
        or :func:`functools.partial`); at least one.
    repeats : int
        Timed rounds.
    threads : int or None
        BLAS threads during the measurement; ``None`` leaves the pool as it is.

    Returns
    -------
    TimingComparison
        ``.times`` and ``.medians`` by name, in seconds; ``.ratio(a, b)`` and
        ``.round_ratios(a, b)``.

    Raises
    ------
    TypeError
        ``candidates`` is not a mapping, a name is not a string or a value is
        not callable; ``repeats`` or ``threads`` is not an integer.
    ValueError
        ``candidates`` is empty, or ``repeats`` or ``threads`` is not positive.

    Examples
    --------
    >>> import numpy as np
    >>> x = np.ones((64, 64))
    >>> c = compare_times({"matmul": lambda: x @ x, "add": lambda: x + x}, repeats=3)
    >>> c.names, len(c.times["add"]), sorted(c.medians)
    (('matmul', 'add'), 3, ['add', 'matmul'])
    """
    if not isinstance(candidates, Mapping):
        raise TypeError(
            "candidates must be a mapping of names to callables, e.g. {'direct': lambda: f(x)}; "
            f"got {type(candidates).__name__}"
        )
    if not candidates:
        raise ValueError("candidates is empty; give at least one name → callable")
    for name, fn in candidates.items():
        if not isinstance(name, str):
            raise TypeError(f"candidate names must be strings; got {type(name).__name__} {name!r}")
        if not callable(fn):
            raise TypeError(f"candidates[{name!r}] must be callable; got {type(fn).__name__} {fn!r}")
    repeats = _v.check_positive_int(repeats, "repeats")
    threads = _check_threads(threads)
    fns = dict(candidates)
    times: dict[str, list[float]] = {name: [] for name in fns}
    with _thread_limit(threads):
        for fn in fns.values():  # warm-up
            fn()
        for _ in range(repeats):  # interleaved, so a slow spell of the machine hits every candidate alike
            for name, fn in fns.items():
                start = time.perf_counter()
                fn()
                times[name].append(time.perf_counter() - start)
    frozen = {name: tuple(ts) for name, ts in times.items()}
    medians = {name: statistics.median(ts) for name, ts in frozen.items()}
    return TimingComparison(
        tuple(fns), MappingProxyType(frozen), MappingProxyType(medians), repeats, threads
    )


def peak_memory(fn: Callable[..., object], /, *args: Any, **kwargs: Any) -> int:
    """Peak bytes allocated during ``fn(*args, **kwargs)``, above what was allocated before it.

    Uses :mod:`tracemalloc`, which sees the memory Python and NumPy allocate
    (array data included) but not what a BLAS library manages internally; an
    RSS difference would be far noisier. Tracing is started (unless it is
    already on), its peak reset, the current traced size read as the
    baseline, ``fn`` called, and the peak read; the result is the peak minus
    the baseline, so the arguments, which exist before the call, are not
    counted, but the returned value is. Tracing is stopped again if this
    function started it; if it was already on, its peak is reset. Tracing
    slows Python-level code, so do not time a call and measure its memory at
    once.

    Parameters
    ----------
    fn : callable
        The function to measure (positional only).
    *args, **kwargs
        Passed to ``fn``.

    Returns
    -------
    int
        Bytes; the return value of ``fn`` is discarded.

    Raises
    ------
    TypeError
        ``fn`` is not callable.

    Examples
    --------
    >>> import numpy as np
    >>> peak_memory(np.ones, 10**6) >= 8 * 10**6  # one million float64 numbers
    True
    >>> peak_memory(np.ones, (1000, 1000), dtype=np.float32) // 2**20  # MiB
    3
    """
    if not callable(fn):
        raise TypeError(f"fn must be callable; got {type(fn).__name__} {fn!r}")
    started = not tracemalloc.is_tracing()
    if started:
        tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        baseline = tracemalloc.get_traced_memory()[0]
        fn(*args, **kwargs)
        return tracemalloc.get_traced_memory()[1] - baseline
    finally:
        if started:
            tracemalloc.stop()
