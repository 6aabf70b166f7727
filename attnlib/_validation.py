"""Input validation shared by every public function of attnlib.

Every check raises ``TypeError`` (wrong kind of object) or ``ValueError``
(right kind, wrong shape or value) with a message that names the argument
and the shapes or values involved, so that a reader never has to decode a
NumPy broadcasting traceback or chase a silent NaN.
"""

from __future__ import annotations

import math
import numbers
from typing import Any

import numpy as np

__all__: list[str] = []  # private module


def _describe_dtype(arr: np.ndarray) -> str:
    return f"dtype {arr.dtype}"


def as_float_array(x: Any, name: str, *, min_ndim: int = 0, allow_neg_inf: bool = False) -> np.ndarray:
    """Convert ``x`` to a floating array, refusing what attention cannot use.

    Python lists and integer arrays become float64; float16/32/64 arrays keep
    their dtype. Booleans, complex numbers, strings and objects are refused
    with ``TypeError``; NaN and infinities with ``ValueError`` (``-inf`` is
    accepted when ``allow_neg_inf``, as in an additive mask).
    """
    try:
        arr = np.asarray(x)
    except ValueError as exc:  # ragged nested lists
        raise ValueError(f"{name} could not be read as an array: {exc}") from None
    if arr.dtype == object:
        raise TypeError(
            f"{name} must be a numeric array; got an object array "
            "(ragged nested lists or mixed types?)"
        )
    if arr.dtype.kind == "b":
        raise TypeError(f"{name} must hold real numbers, not booleans ({_describe_dtype(arr)})")
    if arr.dtype.kind == "c":
        raise TypeError(f"{name} must hold real numbers, not complex ones ({_describe_dtype(arr)})")
    if arr.dtype.kind not in "iuf":
        raise TypeError(f"{name} must hold real numbers; got {_describe_dtype(arr)}")
    if arr.dtype.kind in "iu":
        arr = arr.astype(np.float64)
    if arr.ndim < min_ndim:
        raise ValueError(
            f"{name} must have at least {min_ndim} dimensions; got shape {arr.shape}"
        )
    check_finite(arr, name, allow_neg_inf=allow_neg_inf)
    return arr


def check_finite(arr: np.ndarray, name: str, *, allow_neg_inf: bool = False) -> None:
    """Raise ``ValueError`` if ``arr`` holds NaN or infinities (see ``allow_neg_inf``)."""
    if arr.size == 0 or np.isfinite(arr).all():
        return
    n_nan = int(np.isnan(arr).sum())
    n_pos = int(np.isposinf(arr).sum())
    n_neg = int(np.isneginf(arr).sum())
    if allow_neg_inf and n_nan == 0 and n_pos == 0:
        return
    parts = []
    if n_nan:
        parts.append(f"{n_nan} NaN")
    if n_pos:
        parts.append(f"{n_pos} +inf")
    if n_neg and not allow_neg_inf:
        parts.append(f"{n_neg} -inf")
    first = tuple(int(i) for i in np.argwhere(~np.isfinite(arr) & ~(allow_neg_inf & np.isneginf(arr)))[0])
    raise ValueError(
        f"{name} must be finite; it holds {', '.join(parts)} "
        f"(first at index {first} of shape {arr.shape})"
    )


def check_sequence_matrix(arr: np.ndarray, name: str, rows: str, cols: str) -> None:
    """Check that ``arr`` is ``(..., rows, cols)`` with both axes non-empty."""
    if arr.ndim < 2:
        raise ValueError(
            f"{name} must have shape (..., {rows}, {cols}) with at least 2 dimensions; "
            f"got shape {arr.shape}"
        )
    if arr.shape[-2] == 0:
        raise ValueError(f"{name} has {rows}=0 (an empty sequence); shape {arr.shape}")
    if arr.shape[-1] == 0:
        raise ValueError(f"{name} has {cols}=0 (vectors of length zero); shape {arr.shape}")


def check_qkv(Q: Any, K: Any, V: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, tuple[int, ...]]:
    """Check ``Q (..., n_q, d_k)``, ``K (..., n_k, d_k)``, ``V (..., n_k, d_v)`` together.

    Returns the three arrays (floating, finite) and their broadcast batch shape. Every attention
    function of the library validates its inputs here, so they all refuse the same things with
    the same messages.
    """
    Q = as_float_array(Q, "Q")
    K = as_float_array(K, "K")
    V = as_float_array(V, "V")
    check_sequence_matrix(Q, "Q", "n_q", "d_k")
    check_sequence_matrix(K, "K", "n_k", "d_k")
    check_sequence_matrix(V, "V", "n_k", "d_v")
    if K.shape[-1] != Q.shape[-1]:
        raise ValueError(
            f"K has d_k={K.shape[-1]} but Q has d_k={Q.shape[-1]} "
            f"(last axes must match; Q {Q.shape}, K {K.shape})"
        )
    if V.shape[-2] != K.shape[-2]:
        raise ValueError(
            f"V has n_k={V.shape[-2]} rows but K has n_k={K.shape[-2]} "
            f"(one value per key; K {K.shape}, V {V.shape})"
        )
    batch = broadcast_leading({"Q": Q.shape, "K": K.shape, "V": V.shape})
    return Q, K, V, batch


def repeat_kv_heads(Q: Any, K: Any, V: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Grouped-query attention as PyTorch's ``enable_gqa=True``: K and V with fewer heads than Q.

    ``Q`` is ``(..., n_heads, n_q, d_k)``, ``K`` and ``V`` are ``(..., n_kv_heads, n_k, ·)`` with
    ``n_heads`` a multiple of ``n_kv_heads``; each key/value head is repeated for its group of
    ``n_heads // n_kv_heads`` consecutive query heads (``torch.repeat_interleave`` on axis -3).
    """
    Q = as_float_array(Q, "Q")
    K = as_float_array(K, "K")
    V = as_float_array(V, "V")
    for name, arr in (("Q", Q), ("K", K), ("V", V)):
        if arr.ndim < 3:
            raise ValueError(
                f"enable_gqa=True needs a head axis: {name} must be (..., n_heads, n, d); "
                f"got shape {arr.shape}"
            )
    n_heads, n_kv = Q.shape[-3], K.shape[-3]
    if V.shape[-3] != n_kv:
        raise ValueError(
            f"V has {V.shape[-3]} heads but K has {n_kv} (with enable_gqa=True they share their heads; "
            f"K {K.shape}, V {V.shape})"
        )
    if n_kv == 0 or n_heads % n_kv:
        raise ValueError(
            f"with enable_gqa=True the {n_heads} query heads must be a multiple of the {n_kv} key/value "
            f"heads (axis -3; Q {Q.shape}, K {K.shape})"
        )
    group = n_heads // n_kv
    if group > 1:
        K = np.repeat(K, group, axis=-3)  # (..., n_heads, n_k, d_k)
        V = np.repeat(V, group, axis=-3)  # (..., n_heads, n_k, d_v)
    return Q, K, V


def check_real(value: Any, name: str, *, minimum: str | None = None) -> float:
    """Return ``value`` as a finite float; ``minimum`` ``"positive"`` or ``"non-negative"`` bounds it."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number; got {type(value).__name__} {value!r}")
    out = float(value)
    if not math.isfinite(out):
        raise ValueError(f"{name} must be finite; got {out}")
    if (minimum == "positive" and out <= 0) or (minimum == "non-negative" and out < 0):
        raise ValueError(f"{name} must be {minimum}; got {out}")
    return out


def check_confidence(confidence: Any) -> float:
    """Return a confidence level, a real number strictly between 0 and 1."""
    c = check_real(confidence, "confidence")
    if not 0.0 < c < 1.0:
        raise ValueError(f"confidence must lie strictly between 0 and 1; got {c}")
    return c


def check_int(value: Any, name: str) -> int:
    """Return ``value`` as an int (NumPy integers accepted, booleans refused)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer; got {type(value).__name__} {value!r}")
    return int(value)


def check_choice(value: Any, name: str, choices: tuple[str, ...]) -> str:
    """Return ``value`` if it is one of the strings ``choices``."""
    if not isinstance(value, str) or value not in choices:
        raise ValueError(f"{name} must be one of {choices}; got {value!r}")
    return value


def check_rng(rng: Any) -> np.random.Generator:
    """Return ``rng`` if it is a ``numpy.random.Generator``; randomness enters only this way."""
    if not isinstance(rng, np.random.Generator):
        raise TypeError(
            "rng must be a numpy.random.Generator (e.g. np.random.default_rng(0)); "
            f"got {type(rng).__name__}"
        )
    return rng


def check_scale(scale: Any) -> float | None:
    """Return ``scale`` as a float after checking it is a finite positive number."""
    if scale is None:
        return None
    if isinstance(scale, (bool, np.bool_)) or not isinstance(scale, numbers.Real):
        raise TypeError(f"scale must be a real number or None; got {type(scale).__name__} {scale!r}")
    value = float(scale)
    if not np.isfinite(value):
        raise ValueError(f"scale must be finite; got {value}")
    if value <= 0:
        raise ValueError(f"scale must be positive; got {value}")
    return value


def check_bool_flag(value: Any, name: str) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be True or False; got {type(value).__name__} {value!r}")
    return bool(value)


def check_positive_int(value: Any, name: str) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer; got {type(value).__name__} {value!r}")
    if value <= 0:
        raise ValueError(f"{name} must be positive; got {value}")
    return int(value)


def check_decimals(decimals: Any) -> int:
    """Return ``decimals`` (digits after the point in rendered numbers) as a non-negative int."""
    if isinstance(decimals, (bool, np.bool_)) or not isinstance(decimals, numbers.Integral):
        raise TypeError(f"decimals must be an integer; got {type(decimals).__name__} {decimals!r}")
    if decimals < 0:
        raise ValueError(f"decimals must be >= 0; got {decimals}")
    return int(decimals)


def as_mask(mask: Any, name: str, target_shape: tuple[int, ...]) -> np.ndarray:
    """Check a mask: boolean ("may attend") or additive float, broadcastable to ``target_shape``.

    Float masks may hold ``-inf`` (never attend) but not NaN or ``+inf``;
    integer masks are refused because ``0``/``1`` is ambiguous between the two
    meanings.
    """
    arr = np.asarray(mask)
    if arr.dtype.kind == "b":
        pass
    elif arr.dtype.kind == "f":
        check_finite(arr, name, allow_neg_inf=True)
    elif arr.dtype.kind in "iu":
        raise TypeError(
            f"{name} must be boolean (True = may attend) or float (added to the scores); "
            f"got integer {_describe_dtype(arr)}. Use mask.astype(bool) if 1 means 'may attend'."
        )
    else:
        raise TypeError(
            f"{name} must be boolean (True = may attend) or float (added to the scores); "
            f"got {_describe_dtype(arr)}"
        )
    try:
        shape = np.broadcast_shapes(arr.shape, target_shape)
    except ValueError:
        shape = None
    if shape != tuple(target_shape):
        raise ValueError(
            f"{name} of shape {arr.shape} does not broadcast to the scores' shape {tuple(target_shape)}"
        )
    return arr


def broadcast_leading(shapes: dict[str, tuple[int, ...]]) -> tuple[int, ...]:
    """Broadcast the leading (batch) dimensions of several ``(..., n, d)`` arrays."""
    try:
        return np.broadcast_shapes(*(s[:-2] for s in shapes.values()))
    except ValueError:
        described = ", ".join(f"{k} {v}" for k, v in shapes.items())
        raise ValueError(
            f"the leading (batch) dimensions do not broadcast: {described}"
        ) from None


def scores_overflow_error(dtype: np.dtype, Q: np.ndarray, K: np.ndarray) -> ValueError:
    """The error for scores ``Q Kᵀ · scale`` that overflowed (to +inf or -inf) in ``dtype``: one message
    for every path that computes them (core, tiled, KV cache, backward)."""
    return ValueError(
        f"the scores Q Kᵀ · scale overflow {dtype} (largest |Q| = {np.abs(Q).max():.3g}, "
        f"|K| = {np.abs(K).max():.3g}); rescale the inputs or use a wider dtype"
    )


def readonly_copy(arr: np.ndarray | None) -> np.ndarray | None:
    """A copy of ``arr`` that cannot be written to (traces are values), or None."""
    if arr is None:
        return None
    out = np.array(arr, copy=True)
    out.flags.writeable = False
    return out


def check_float_dtype(dtype: Any) -> np.dtype:
    """``dtype`` as a NumPy floating dtype; ``TypeError`` naming it otherwise."""
    try:
        dt = np.dtype(dtype)
    except TypeError:
        raise TypeError(f"dtype must be a floating NumPy dtype such as np.float32; got {dtype!r}") from None
    if dt.kind != "f":
        raise TypeError(f"dtype must be a floating NumPy dtype (float16/32/64); got {dt}")
    return dt
