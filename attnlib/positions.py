"""Position encodings: telling attention where each token stands.

Attention by itself is permutation-equivariant: shuffle the tokens and the
outputs shuffle with them. Adding a position encoding to each token's row
breaks that symmetry. :func:`sinusoidal_positions` is the fixed encoding of
Vaswani et al. (2017, Sec. 3.5).
"""

from __future__ import annotations

import math
import numbers

import numpy as np

from attnlib import _validation as _v

__all__ = ["sinusoidal_positions"]


def sinusoidal_positions(n: int, d_model: int, base: float = 10000.0) -> np.ndarray:
    """The sinusoidal position encodings of Vaswani et al. (2017), one row per position.

    ``PE[p, 2i] = sin(p / base^(2i / d_model))`` and
    ``PE[p, 2i+1] = cos(p / base^(2i / d_model))`` for positions
    ``p = 0, ..., n − 1`` and ``i = 0, ..., d_model/2 − 1``: each pair of
    columns is a point turning round the unit circle at angular frequency
    ``ω_i = base^(−2i/d_model)``, from ``1`` (wavelength ``2π``) down to
    nearly ``1/base`` (wavelength nearly ``2π·base``).

    Parameters
    ----------
    n : int
        Number of positions.
    d_model : int
        Width of each encoding; must be even (sine and cosine come in pairs).
    base : float
        Sets the longest wavelength; 10000 in the paper. Must be greater than 1.

    Returns
    -------
    ndarray, shape (n, d_model)
        float64, every entry in ``[−1, 1]``.

    Raises
    ------
    TypeError
        ``n`` or ``d_model`` is not an integer, or ``base`` is not a real number.
    ValueError
        ``n`` or ``d_model`` is not positive, ``d_model`` is odd, or ``base``
        is not a finite number greater than 1.

    Notes
    -----
    Because ``sin a sin b + cos a cos b = cos(a − b)``, the dot product of two
    encodings depends only on their distance:
    ``PE[p] · PE[p + k] = Σ_i cos(k ω_i)``, the same for every ``p``. And
    ``PE[p + k]`` is ``PE[p]`` rotated pair by pair by the angles ``k ω_i``,
    a linear map that does not depend on ``p`` — the reason the authors gave
    for choosing it.

    Examples
    --------
    >>> import numpy as np
    >>> PE = sinusoidal_positions(4, 6)
    >>> PE.shape
    (4, 6)
    >>> PE[0]  # position 0: sin 0 = 0, cos 0 = 1
    array([0., 1., 0., 1., 0., 1.])
    >>> print(f"{PE[1, 0]:.4f} = sin(1)")
    0.8415 = sin(1)
    >>> bool(np.isclose(PE[0] @ PE[2], PE[1] @ PE[3]))  # depends only on the distance 2
    True
    """
    n = _v.check_positive_int(n, "n")
    d_model = _v.check_positive_int(d_model, "d_model")
    if d_model % 2:
        raise ValueError(f"d_model must be even (sine and cosine columns come in pairs); got {d_model}")
    if isinstance(base, (bool, np.bool_)) or not isinstance(base, numbers.Real):
        raise TypeError(f"base must be a real number; got {type(base).__name__} {base!r}")
    base = float(base)
    if not math.isfinite(base) or base <= 1.0:
        raise ValueError(f"base must be a finite number greater than 1 (10000 in the paper); got {base}")
    positions = np.arange(n, dtype=np.float64)[:, None]  # (n, 1)
    denominator = base ** (np.arange(0, d_model, 2, dtype=np.float64) / d_model)  # (d_model/2,) base^(2i/d)
    angles = positions / denominator  # (n, d_model/2)
    PE = np.empty((n, d_model))  # (n, d_model)
    PE[:, 0::2] = np.sin(angles)
    PE[:, 1::2] = np.cos(angles)
    return PE
