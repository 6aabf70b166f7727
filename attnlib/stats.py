"""Why attention divides by √d_k, in numbers: variances, saturation, the softmax Jacobian.

Three experiments the book runs, each a small function returning plain
values or a frozen dataclass:

* the variance of a dot product ``q · k`` grows like ``d_k``
  (:func:`dot_product_samples`, :func:`dot_product_variance`,
  :func:`variance_with_ci`);
* unscaled scores make the softmax saturate: one weight near 1, entropy near
  0 (:func:`entropy`, :func:`max_weight`, :func:`saturation_stats`);
* a saturated softmax passes almost no gradient, because its Jacobian
  ``diag(p) − p pᵀ`` tends to zero (:func:`softmax_jacobian`,
  :func:`jacobian_norm`).
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import Any

import numpy as np

from attnlib import _validation as _v
from attnlib.core import scale_for, softmax

__all__ = [
    "VarianceEstimate",
    "SaturationStats",
    "dot_product_samples",
    "dot_product_variance",
    "variance_with_ci",
    "entropy",
    "max_weight",
    "saturation_stats",
    "softmax_jacobian",
    "jacobian_norm",
]

# dot_product_samples draws its Gaussians in blocks of at most this many
# entries per array, so n = 10⁶ samples at d_k = 512 never holds 4 GB at once.
_CHUNK_ENTRIES = 1 << 20

# Matrix norms jacobian_norm accepts (those of numpy.linalg.norm for matrices).
_NORM_ORDS = ("fro", "nuc", 1, 2, math.inf)

# The fraction of rows counted as saturated by saturation_stats.
_SATURATION_THRESHOLD = 0.99


# --------------------------------------------------------------------------- private checks
def _check_axis(axis: Any, arr: np.ndarray, name: str) -> int:
    if isinstance(axis, (bool, np.bool_)) or not isinstance(axis, (int, np.integer)):
        raise TypeError(f"axis must be an integer; got {type(axis).__name__} {axis!r}")
    if arr.ndim == 0:
        raise ValueError(f"{name} must have at least 1 dimension; got a scalar")
    if not -arr.ndim <= axis < arr.ndim:
        raise ValueError(f"axis {axis} is out of range for {name} of shape {arr.shape}")
    if arr.shape[axis] == 0:
        raise ValueError(f"{name} has length 0 along axis {axis} (shape {arr.shape})")
    return int(axis)


def _sum_tolerance(dtype: np.dtype) -> float:
    """How far from 1 a row sum may be: √eps of the dtype, at least 1e-6."""
    return max(1e-6, float(np.sqrt(np.finfo(dtype).eps)))


def _as_weights(weights: Any, axis: Any, name: str = "weights") -> tuple[np.ndarray, int]:
    """Check that ``weights`` holds probability vectors along ``axis``."""
    w = _v.as_float_array(weights, name)
    axis = _check_axis(axis, w, name)
    if (w < 0).any():
        first = tuple(int(i) for i in np.argwhere(w < 0)[0])
        raise ValueError(
            f"{name} must be non-negative; it holds {int((w < 0).sum())} negative entries "
            f"(first {w[first]:.3g} at index {first} of shape {w.shape})"
        )
    sums = w.sum(axis=axis, dtype=np.float64)
    tol = _sum_tolerance(w.dtype)
    bad = np.abs(sums - 1.0) > tol
    if bad.any():
        where = tuple(int(i) for i in np.argwhere(bad)[0])
        raise ValueError(
            f"{name} must sum to 1 along axis {axis} (within {tol:.2g}); "
            f"{int(bad.sum())} of {sums.size} slices do not, e.g. sum {sums[where]:.6g} "
            f"at index {where} of the {sums.shape} row sums (shape {w.shape})"
        )
    return w, axis


# --------------------------------------------------------------------------- variance of q · k
def dot_product_samples(
    d_k: int,
    n: int,
    rng: np.random.Generator,
    sigma_q: float = 1.0,
    sigma_k: float = 1.0,
    mean_q: float = 0.0,
    mean_k: float = 0.0,
) -> np.ndarray:
    """Draw ``n`` dot products ``q · k`` of random Gaussian vectors of length ``d_k``.

    Every component is independent: ``q_i ~ N(mean_q, sigma_q²)`` and
    ``k_i ~ N(mean_k, sigma_k²)``. For each sample a fresh pair ``q, k`` is
    drawn and ``Σ_i q_i k_i`` is returned.

    Parameters
    ----------
    d_k : int
        Length of the vectors.
    n : int
        Number of samples.
    rng : numpy.random.Generator
        The only source of randomness.
    sigma_q, sigma_k : float
        Standard deviations of the components (positive).
    mean_q, mean_k : float
        Means of the components.

    Returns
    -------
    ndarray, shape (n,)
        float64 samples; their variance is :func:`dot_product_variance`.

    Raises
    ------
    TypeError
        ``d_k`` or ``n`` not integers, a non-real parameter, ``rng`` not a
        ``numpy.random.Generator``.
    ValueError
        ``d_k`` or ``n`` not positive, a non-positive sigma, a non-finite
        parameter.

    Examples
    --------
    >>> import numpy as np
    >>> s = dot_product_samples(64, 20_000, np.random.default_rng(0))
    >>> s.shape
    (20000,)
    >>> bool(55 < s.var() < 73)  # ≈ d_k = 64
    True
    """
    d_k = _v.check_positive_int(d_k, "d_k")
    n = _v.check_positive_int(n, "n")
    rng = _v.check_rng(rng)
    sigma_q = _v.check_real(sigma_q, "sigma_q", minimum="positive")
    sigma_k = _v.check_real(sigma_k, "sigma_k", minimum="positive")
    mean_q = _v.check_real(mean_q, "mean_q")
    mean_k = _v.check_real(mean_k, "mean_k")
    out = np.empty(n)
    rows = max(1, _CHUNK_ENTRIES // d_k)
    for start in range(0, n, rows):
        m = min(rows, n - start)
        q = rng.normal(mean_q, sigma_q, size=(m, d_k))  # (m, d_k)
        k = rng.normal(mean_k, sigma_k, size=(m, d_k))  # (m, d_k)
        out[start : start + m] = np.einsum("ij,ij->i", q, k)  # (m,)
    return out


def dot_product_variance(
    d_k: int, sigma_q: float = 1.0, sigma_k: float = 1.0, mean_q: float = 0.0, mean_k: float = 0.0
) -> float:
    """The exact variance of ``q · k`` for the vectors of :func:`dot_product_samples`.

    Each term ``q_i k_i`` has ``E[(q_i k_i)²] = (σ_q² + μ_q²)(σ_k² + μ_k²)``
    and mean ``μ_q μ_k``, so its variance is
    ``σ_q² σ_k² + σ_q² μ_k² + σ_k² μ_q²``; the ``d_k`` terms are independent, so

    ``Var(q · k) = d_k (σ_q² σ_k² + σ_q² μ_k² + σ_k² μ_q²)``,

    which is ``d_k`` for standard-normal components: the reason for the √d_k.

    Parameters
    ----------
    d_k : int
        Length of the vectors.
    sigma_q, sigma_k, mean_q, mean_k : float
        As in :func:`dot_product_samples`.

    Returns
    -------
    float

    Raises
    ------
    TypeError, ValueError
        As :func:`dot_product_samples` for the same arguments.

    Examples
    --------
    >>> dot_product_variance(512)
    512.0
    >>> dot_product_variance(4, sigma_q=2.0, mean_k=1.0)  # 4 · (4 + 4 + 0)
    32.0
    """
    d_k = _v.check_positive_int(d_k, "d_k")
    sq = _v.check_real(sigma_q, "sigma_q", minimum="positive")
    sk = _v.check_real(sigma_k, "sigma_k", minimum="positive")
    mq = _v.check_real(mean_q, "mean_q")
    mk = _v.check_real(mean_k, "mean_k")
    return d_k * (sq**2 * sk**2 + sq**2 * mk**2 + sk**2 * mq**2)


@dataclass(frozen=True)
class VarianceEstimate:
    """An unbiased sample variance with a confidence interval.

    Attributes
    ----------
    estimate : float
        Unbiased sample variance ``s² = Σ (x − x̄)² / (n − 1)``.
    low, high : float
        Ends of the confidence interval (``low`` is never below 0).
    n : int
        Number of samples.
    confidence : float
        Nominal coverage of ``[low, high]``, e.g. 0.95.
    """

    estimate: float
    low: float
    high: float
    n: int
    confidence: float = 0.95

    def contains(self, value: float) -> bool:
        """Whether ``low <= value <= high``."""
        return bool(self.low <= value <= self.high)


def variance_with_ci(samples: Any, confidence: float = 0.95) -> VarianceEstimate:
    """Unbiased sample variance with a large-sample confidence interval.

    The interval is ``s² ± z · se`` with ``z`` the normal quantile for
    ``confidence`` and the standard error from the sample fourth moment,

    ``se² = (m₄ − s⁴ (n − 3)/(n − 1)) / n``,  ``m₄ = Σ (x − x̄)⁴ / n``,

    the plug-in form of the exact ``Var(s²) = μ₄/n − σ⁴(n − 3)/(n(n − 1))``
    (asymptotically ``(m₄ − s⁴)/n``). The lower end is clipped at 0.

    Why not the textbook chi-square interval ``[(n−1)s²/χ²_hi, (n−1)s²/χ²_lo]``?
    Its quantiles could be computed without SciPy, but it is exact only for
    Gaussian samples, and ``q · k`` is not Gaussian: it is a sum of products,
    with excess kurtosis ``6/d_k`` for standard-normal components (6 at
    ``d_k = 1``). The chi-square interval ignores the kurtosis and would cover
    the true variance far less often than claimed; the fourth-moment interval
    estimates it from the data and is valid for any distribution with a finite
    fourth moment, at the price of being approximate for small ``n`` (use a
    few thousand samples).

    Parameters
    ----------
    samples : (n,) array_like
        At least 2 finite real numbers.
    confidence : float
        Nominal coverage, strictly between 0 and 1.

    Returns
    -------
    VarianceEstimate

    Raises
    ------
    TypeError
        Non-real samples or confidence.
    ValueError
        ``samples`` not 1-D, fewer than 2 samples, NaN or infinities,
        ``confidence`` outside (0, 1).

    Examples
    --------
    >>> import numpy as np
    >>> est = variance_with_ci(dot_product_samples(16, 50_000, np.random.default_rng(1)))
    >>> est.n, est.contains(16.0)
    (50000, True)
    >>> print(f"{est.estimate:.2f} [{est.low:.2f}, {est.high:.2f}]")
    15.84 [15.63, 16.06]
    """
    x = _v.as_float_array(samples, "samples").astype(np.float64, copy=False)
    if x.ndim != 1:
        raise ValueError(f"samples must be a 1-D array of numbers; got shape {x.shape}")
    if x.size < 2:
        raise ValueError(f"samples must hold at least 2 values for a variance; got {x.size}")
    confidence = _v.check_confidence(confidence)
    n = int(x.size)
    dev = x - x.mean()  # (n,)
    s2 = float(dev @ dev) / (n - 1)
    m4 = float(np.mean(dev**4))
    var_s2 = max(0.0, (m4 - s2**2 * (n - 3) / (n - 1)) / n)
    z = statistics.NormalDist().inv_cdf(0.5 + confidence / 2)
    half = z * math.sqrt(var_s2)
    return VarianceEstimate(estimate=s2, low=max(0.0, s2 - half), high=s2 + half, n=n, confidence=confidence)


# --------------------------------------------------------------------------- entropy and saturation
def entropy(weights: Any, axis: int = -1) -> np.ndarray:
    """Shannon entropy ``−Σ_j p_j log p_j`` of each weight vector, in nats.

    ``0 · log 0`` counts as 0. The entropy lies between 0 (all weight on one
    key) and ``log n`` (uniform weights over ``n`` keys).

    Parameters
    ----------
    weights : (..., n) array_like
        Probability vectors along ``axis``: non-negative, summing to 1 within
        ``max(1e-6, √eps)`` of their dtype.
    axis : int
        The axis that sums to 1.

    Returns
    -------
    ndarray, shape of ``weights`` without ``axis``
        Same floating dtype as ``weights`` (float64 for lists).

    Raises
    ------
    TypeError
        Non-real weights, a non-integer ``axis``.
    ValueError
        Negative weights, slices not summing to 1, NaN or infinities, an
        ``axis`` out of range or of length 0.

    Examples
    --------
    >>> import numpy as np
    >>> entropy([[0.25, 0.25, 0.25, 0.25], [1.0, 0.0, 0.0, 0.0]]).round(4)
    array([1.3863, 0.    ])
    >>> bool(np.isclose(entropy([0.5, 0.5]), np.log(2)))
    True
    """
    w, axis = _as_weights(weights, axis)
    log_w = np.zeros_like(w)
    np.log(w, out=log_w, where=w > 0)  # log 0 left at 0, so 0 · log 0 = 0
    return 0.0 - (w * log_w).sum(axis=axis)  # 0.0 - x, not -x: no printed -0.0


def max_weight(weights: Any, axis: int = -1) -> np.ndarray:
    """The largest weight of each weight vector (1 means fully saturated).

    Parameters
    ----------
    weights : (..., n) array_like
        Probability vectors along ``axis``, checked as in :func:`entropy`.
    axis : int
        The axis that sums to 1.

    Returns
    -------
    ndarray, shape of ``weights`` without ``axis``

    Raises
    ------
    TypeError, ValueError
        As :func:`entropy`.

    Examples
    --------
    >>> max_weight([[0.1, 0.7, 0.2], [0.5, 0.25, 0.25]])
    array([0.7, 0.5])
    >>> max_weight([[0.1, 0.7], [0.9, 0.3]], axis=0)
    array([0.9, 0.7])
    """
    w, axis = _as_weights(weights, axis)
    return w.max(axis=axis)


@dataclass(frozen=True)
class SaturationStats:
    """How saturated the softmax of random attention scores is.

    Attributes
    ----------
    d_k, n_tokens, n_trials : int
        The experiment's size.
    scaled : bool
        Whether the scores were divided by ``√d_k``.
    max_weight_mean, max_weight_std : float
        Mean and standard deviation (``ddof=0``) over trials of the largest weight.
    entropy_mean, entropy_std : float
        Mean and standard deviation (``ddof=0``) over trials of the entropy, in nats.
    frac_saturated : float
        Fraction of trials whose largest weight exceeds 0.99.
    """

    d_k: int
    n_tokens: int
    n_trials: int
    scaled: bool
    max_weight_mean: float
    max_weight_std: float
    entropy_mean: float
    entropy_std: float
    frac_saturated: float


def saturation_stats(
    d_k: int, n_tokens: int, n_trials: int, rng: np.random.Generator, scaled: bool = True
) -> SaturationStats:
    """Softmax saturation of random attention scores, with and without the √d_k.

    Each trial draws a standard-normal query ``q`` of length ``d_k`` and
    ``n_tokens`` standard-normal keys ``K``, computes the scores ``K q``
    (divided by ``√d_k`` when ``scaled``) and their softmax with
    :func:`attnlib.core.softmax`, and records the largest weight and the
    entropy. All queries are drawn first, then all keys, as one array each.

    Unscaled scores have standard deviation ``√d_k``, so for large ``d_k``
    one key takes nearly all the weight; scaled ones have standard deviation 1
    whatever ``d_k`` is.

    Parameters
    ----------
    d_k : int
        Length of queries and keys.
    n_tokens : int
        Number of keys per trial.
    n_trials : int
        Number of independent trials (rows of weights).
    rng : numpy.random.Generator
        The only source of randomness.
    scaled : bool
        Divide the scores by ``√d_k``.

    Returns
    -------
    SaturationStats

    Raises
    ------
    TypeError
        Non-integer sizes, ``rng`` not a Generator, ``scaled`` not a bool.
    ValueError
        Sizes that are not positive.

    Notes
    -----
    Memory is ``n_trials · n_tokens · d_k`` float64 numbers for the keys.

    Examples
    --------
    >>> import numpy as np
    >>> raw = saturation_stats(512, 16, 300, np.random.default_rng(0), scaled=False)
    >>> scaled = saturation_stats(512, 16, 300, np.random.default_rng(0))
    >>> print(f"{raw.max_weight_mean:.3f} {scaled.max_weight_mean:.3f}")
    0.955 0.248
    >>> bool(raw.frac_saturated > 0.5 > scaled.frac_saturated)
    True
    """
    d_k = _v.check_positive_int(d_k, "d_k")
    n_tokens = _v.check_positive_int(n_tokens, "n_tokens")
    n_trials = _v.check_positive_int(n_trials, "n_trials")
    rng = _v.check_rng(rng)
    scaled = _v.check_bool_flag(scaled, "scaled")
    q = rng.standard_normal((n_trials, 1, d_k))  # (n_trials, 1, d_k)
    K = rng.standard_normal((n_trials, n_tokens, d_k))  # (n_trials, n_tokens, d_k)
    scores = (q @ K.swapaxes(-1, -2))[:, 0, :]  # (n_trials, n_tokens)
    if scaled:
        scores *= scale_for(d_k)
    P = softmax(scores, axis=-1)  # (n_trials, n_tokens)
    top = max_weight(P)  # (n_trials,)
    ent = entropy(P)  # (n_trials,)
    return SaturationStats(
        d_k=d_k,
        n_tokens=n_tokens,
        n_trials=n_trials,
        scaled=scaled,
        max_weight_mean=float(top.mean()),
        max_weight_std=float(top.std()),
        entropy_mean=float(ent.mean()),
        entropy_std=float(ent.std()),
        frac_saturated=float(np.mean(top > _SATURATION_THRESHOLD)),
    )


# --------------------------------------------------------------------------- the softmax Jacobian
def softmax_jacobian(p: Any) -> np.ndarray:
    """Jacobian ``∂p/∂z = diag(p) − p pᵀ`` of ``p = softmax(z)``, batched.

    Entry ``(i, j)`` is ``p_i (δ_ij − p_j)``; the diagonal ``p_i (1 − p_i)`` is
    computed as ``p_i Σ_{j≠i} p_j``, which keeps its relative precision when
    ``p_i`` is within rounding of 1. The matrix is symmetric and
    positive semi-definite, and its rows and columns sum to 0 (adding a
    constant to every logit changes nothing). When one ``p_i`` tends to 1 the
    whole matrix tends to 0: a saturated softmax passes no gradient back.

    Parameters
    ----------
    p : (..., n) array_like
        Softmax outputs: probability vectors along the last axis (checked as
        in :func:`entropy`).

    Returns
    -------
    ndarray, shape (..., n, n)
        Same floating dtype as ``p`` (float64 for lists).

    Raises
    ------
    TypeError
        Non-real ``p``.
    ValueError
        ``p`` is a scalar, has an empty last axis, negative entries, NaN or
        infinities, or rows not summing to 1.

    Examples
    --------
    >>> softmax_jacobian([0.5, 0.5])
    array([[ 0.25, -0.25],
           [-0.25,  0.25]])
    >>> softmax_jacobian([[1.0, 0.0]])
    array([[[0., 0.],
            [0., 0.]]])

    A saturated row: ``p_0`` rounds to 1, yet its diagonal entry is not 0.

    >>> import numpy as np
    >>> from attnlib.core import softmax
    >>> p = softmax(np.array([40.0, 0.0]))
    >>> print(p[0] == 1.0, f"{softmax_jacobian(p)[0, 0]:.4e}")  # ≈ e^-40
    True 4.2484e-18
    """
    p, _ = _as_weights(p, -1, "p")
    n = p.shape[-1]
    J = -p[..., :, None] * p[..., None, :]  # (..., n, n)
    idx = np.arange(n)
    others = np.where(np.eye(n, dtype=bool), 0.0, p[..., None, :])  # (..., n, n): row i holds p_j, j ≠ i
    # p_i (1 − p_i) as p_i Σ_{j≠i} p_j: when p_i is close to 1, 1 − p_i cancels to a few ulps of 1
    # (or to 0), while the sum of the other weights keeps their full relative precision.
    J[..., idx, idx] = p * others.sum(axis=-1)  # (..., n)
    J += 0.0  # -0.0 (from p_i p_j = 0) becomes 0.0
    return J


def jacobian_norm(p: Any, ord: str | float = "fro") -> np.ndarray:
    """A matrix norm of :func:`softmax_jacobian` for each probability vector.

    Parameters
    ----------
    p : (..., n) array_like
        Softmax outputs along the last axis.
    ord : {"fro", "nuc", 1, 2, inf}
        The matrix norm, as in :func:`numpy.linalg.norm`; ``2`` is the largest
        eigenvalue, since the Jacobian is symmetric positive semi-definite.

    Returns
    -------
    ndarray, shape (...)
        A NumPy float for a single vector.

    Raises
    ------
    TypeError, ValueError
        As :func:`softmax_jacobian`; ``ValueError`` also for an unknown ``ord``.

    Examples
    --------
    >>> import numpy as np
    >>> from attnlib.core import softmax
    >>> z = np.array([1.0, 0.8, 0.5, 0.2])
    >>> print(f"{jacobian_norm(softmax(z)):.4f} {jacobian_norm(softmax(20 * z)):.4f}")
    0.4333 0.0353
    """
    if isinstance(ord, (bool, np.bool_)) or ord not in _NORM_ORDS:
        raise ValueError(f"ord must be one of {_NORM_ORDS}; got {ord!r}")
    J = softmax_jacobian(p)  # (..., n, n)
    return np.linalg.norm(J, ord=ord, axis=(-2, -1))  # type: ignore[arg-type]  # (...); ord checked above
