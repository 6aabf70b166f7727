"""The book's three fixed examples, as data.

Each function returns a fresh frozen :class:`Example` (arrays are read-only
copies, so a chapter cannot change the example another chapter uses).

The matrices were written for this book, with small entries so that every
dot product can be done by hand. Only the inputs are stored here: every
quantity derived from them (scores, weights, outputs) is computed by
attnlib, never typed in.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = ["Example", "cat_sat_on_mat", "three_directions", "cat_sits"]


def _frozen(rows: list[list[float]]) -> np.ndarray:
    arr = np.array(rows, dtype=np.float64)
    arr.flags.writeable = False
    return arr


@dataclass(frozen=True)
class Example:
    """A named example: token labels, Q, K, V and, when they exist, X and the projections.

    Attributes
    ----------
    name : str
    tokens : tuple of str, length n
    Q : ndarray, shape (n, d_k)
    K : ndarray, shape (n, d_k)
    V : ndarray, shape (n, d_v)
    X : ndarray, shape (n, d_model), or None
    W_Q, W_K, W_V : ndarray, shape (d_model, d_k) / (d_model, d_v), or None
    source : str
        What the example is and how its inputs are given.
    """

    name: str
    tokens: tuple[str, ...]
    Q: np.ndarray = field(repr=False)
    K: np.ndarray = field(repr=False)
    V: np.ndarray = field(repr=False)
    source: str = ""
    X: np.ndarray | None = field(default=None, repr=False)
    W_Q: np.ndarray | None = field(default=None, repr=False)
    W_K: np.ndarray | None = field(default=None, repr=False)
    W_V: np.ndarray | None = field(default=None, repr=False)

    @property
    def d_k(self) -> int:
        return int(self.Q.shape[-1])

    @property
    def n(self) -> int:
        return len(self.tokens)


def cat_sat_on_mat() -> Example:
    """"The cat sat on mat": 5 tokens with hand-made Q, K, V of shape (5, 4).

    The book's running example. Its dimensions are meant to be readable:
    ``Q[The] = [1, 0, 1, 0]`` asks for dimensions 0 and 2, which
    ``K[cat] = [1, 0, 1, 0]`` advertises; the first four values are one-hot,
    so an output row reads directly as "how much of each token's content was
    retrieved", and ``V[mat]`` spreads 0.5 over all four.

    Examples
    --------
    >>> ex = cat_sat_on_mat()
    >>> ex.tokens
    ('The', 'cat', 'sat', 'on', 'mat')
    >>> ex.Q.shape, ex.K.shape, ex.V.shape
    ((5, 4), (5, 4), (5, 4))
    """
    return Example(
        name="The cat sat on mat",
        tokens=("The", "cat", "sat", "on", "mat"),
        Q=_frozen([
            [1.0, 0.0, 1.0, 0.0],  # The
            [0.0, 2.0, 0.0, 1.0],  # cat
            [1.0, 1.0, 1.0, 0.0],  # sat
            [0.0, 0.0, 1.0, 1.0],  # on
            [1.0, 0.0, 0.0, 1.0],  # mat
        ]),
        K=_frozen([
            [0.0, 1.0, 0.0, 1.0],
            [1.0, 0.0, 1.0, 0.0],
            [1.0, 1.0, 0.0, 0.0],
            [0.0, 0.0, 1.0, 1.0],
            [1.0, 0.0, 0.5, 0.5],
        ]),
        V=_frozen([
            [1.0, 0.0, 0.0, 0.0],
            [0.0, 1.0, 0.0, 0.0],
            [0.0, 0.0, 1.0, 0.0],
            [0.0, 0.0, 0.0, 1.0],
            [0.5, 0.5, 0.5, 0.5],
        ]),
        source="the book's 5-token running example (Q, K, V given directly)",
    )


def three_directions() -> Example:
    """A/B/C: 3 tokens in 2-D, small enough to draw and to compute by hand.

    The queries point east (A), north-east (B) and north (C); the keys point
    roughly the same ways, with other lengths (``K[B]`` leans further north
    than ``Q[B]``); the values are the two unit vectors and their midpoint.

    Examples
    --------
    >>> ex = three_directions()
    >>> ex.Q.tolist()
    [[1.0, 0.0], [0.5, 0.5], [0.0, 1.0]]
    """
    return Example(
        name="A/B/C",
        tokens=("A", "B", "C"),
        Q=_frozen([[1.0, 0.0], [0.5, 0.5], [0.0, 1.0]]),
        K=_frozen([[0.8, 0.2], [0.3, 0.7], [0.1, 0.9]]),
        V=_frozen([[1.0, 0.0], [0.0, 1.0], [0.5, 0.5]]),
        source="the book's 3-token example in 2-D, small enough to draw",
    )


def cat_sits() -> Example:
    """"Cat sits": 2 tokens with embeddings X (2×3) and projections W_Q, W_K, W_V (3×2).

    Unlike the other two examples, Q, K and V are not given: they are
    computed here as ``X @ W``, so the example shows where queries, keys and
    values come from.

    Examples
    --------
    >>> ex = cat_sits()
    >>> ex.X.shape, ex.W_Q.shape
    ((2, 3), (3, 2))
    >>> ex.K.tolist()
    [[2.0, 1.0], [1.0, 1.0]]
    """
    X = _frozen([[1.0, 0.0, 1.0], [0.0, 1.0, 1.0]])
    W_Q = _frozen([[1.0, 0.0], [0.0, 1.0], [0.0, 0.0]])
    W_K = _frozen([[1.0, 1.0], [0.0, 1.0], [1.0, 0.0]])
    W_V = _frozen([[0.0, 1.0], [1.0, 0.0], [1.0, 1.0]])

    def project(W: np.ndarray) -> np.ndarray:
        out = X @ W  # (n, d_model) @ (d_model, d) -> (n, d)
        out.flags.writeable = False
        return out

    return Example(
        name="Cat sits",
        tokens=("Cat", "sits"),
        Q=project(W_Q),
        K=project(W_K),
        V=project(W_V),
        X=X,
        W_Q=W_Q,
        W_K=W_K,
        W_V=W_V,
        source="the book's 2-token example, built from X and three projections",
    )
