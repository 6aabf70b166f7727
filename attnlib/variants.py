"""What the efficient attention variants cost: sliding window, fixed sparse, linear and tiled attention.

:func:`attention_variant_costs` counts, for one sequence length, the scores each variant forms, its
operations and the memory it holds beside the full ``n × n`` score matrix (counts from
:mod:`attnlib.counts`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from attnlib import _validation as _v

__all__ = [
    "VariantCost",
    "attention_variant_costs",
]


# --------------------------------------------------------------------------- efficient variants
@dataclass(frozen=True)
class VariantCost:
    """What one attention variant costs for a sequence of ``n`` tokens of width ``d``.

    Attributes
    ----------
    name : str
        ``"full"``, ``"sliding_window"``, ``"sparse_fixed"``, ``"linear"`` or ``"tiled"``.
    scores : int
        Query–key scores computed (``0`` when no score is ever formed).
    multiply_adds : int
        Multiply-adds of the products with ``Q``, ``K`` and ``V`` (the
        matrix-product conventions of :func:`attnlib.counts.flop_counts`: ``Q Kᵀ`` and ``A V``
        are one multiply per term); softmax exps and divides are not counted.
    memory_scores : int
        Numbers held at once for the scores (or, for linear attention, the
        state that replaces them), per head and batch element, as each variant
        is counted here: sliding-window and sparse attention with their
        allowed scores materialised, tiled attention one tile at a time. A
        tiled kernel can compute a window or sparse pattern too, and would
        then also hold one tile.
    exact : bool
        Whether the output equals full softmax attention over all ``n × n``
        pairs (up to rounding).
    note : str
        The pattern counted and what the variant gives up.
    """

    name: str
    scores: int
    multiply_adds: int
    memory_scores: int
    exact: bool
    note: str


def _sliding_window_scores(n: int, window: int) -> int:
    """``Σ_{i<n} min(i + 1, window)``: query ``i`` sees keys ``i − window + 1 .. i`` that exist."""
    if n <= window:
        return n * (n + 1) // 2
    return window * (window + 1) // 2 + (n - window) * window


def _sparse_fixed_scores(n: int, block: int) -> int:
    """Allowed pairs of the causal fixed pattern: ``Σ_{i<n} (i mod b + 1) + ⌊i / b⌋``."""
    q, r = divmod(n, block)
    own_block = q * block * (block + 1) // 2 + r * (r + 1) // 2  # Σ (i mod b + 1)
    summaries = block * q * (q - 1) // 2 + r * q  # Σ ⌊i / b⌋
    return own_block + summaries


def attention_variant_costs(
    n: int, d: int, *, window: int, block: int | None = None, features: int | None = None
) -> tuple[VariantCost, ...]:
    """Scores, multiply-adds and score memory of full attention and four cheaper variants.

    One head, one sequence, ``Q``, ``K``, ``V`` of shape ``(n, d)``. Exact
    counts of the patterns below (closed forms, checked in the tests against
    masks built entry by entry):

    ================ ============================================================
    variant          pattern and count
    ================ ============================================================
    full             every query with every key: ``n²`` scores,
                     ``2·n²·d`` multiply-adds (``Q Kᵀ`` and ``A V``), ``n²``
                     scores in memory. Bidirectional (no causal mask).
    sliding_window   causal local attention: query ``i`` sees keys
                     ``max(0, i − window + 1) .. i`` (itself and the
                     ``window − 1`` before it): ``Σ_i min(i + 1, window)``
                     scores, ``2·d`` multiply-adds per score, every computed
                     score held.
    sparse_fixed     the causal "fixed" pattern of Child et al. (2019) with
                     block size ``b = block`` and one summary column per
                     block (``c = 1``; Child et al. use ``c`` = 8 to 32
                     for blocks of 128 or 256): query ``i`` sees key ``j ≤ i`` if ``j`` lies in its
                     own block (``⌊j/b⌋ = ⌊i/b⌋``) or ``j`` is the last
                     column of a block (``j mod b = b − 1``). That is
                     ``(i mod b) + 1 + ⌊i/b⌋`` keys for query ``i``; ``2·d``
                     multiply-adds per score, every computed score held.
    linear           Katharopoulos et al. (2020), non-causal, feature map
                     ``φ`` with ``F = features`` dimensions:
                     ``out_i = φ(q_i)ᵀ U / φ(q_i)ᵀ z`` with ``U = Σ_j φ(k_j) v_jᵀ``
                     (``F × d``; not the score matrix ``S``) and
                     ``z = Σ_j φ(k_j)`` (``F``). No score is formed;
                     ``n·F·d`` multiply-adds for ``U``, ``n·F·d`` for
                     ``φ(Q) U`` and ``n·F`` for ``φ(Q) z``, so
                     ``2·n·F·d + n·F``; memory ``F·d + F`` (``U`` and ``z``).
                     Computing ``φ`` itself is not counted (``elu(x) + 1``,
                     the paper's map with ``F = d``, needs no multiply-add).
    tiled            FlashAttention (Dao et al. 2022): the full ``n²`` scores
                     and ``2·n²·d`` multiply-adds, but only one tile of
                     ``min(block, n)²`` scores alive at a time (see
                     :mod:`attnlib.tiled`). The rescaling of the running
                     output and the per-row maximum and sum (``2n`` numbers)
                     are not counted.
    ================ ============================================================

    ``exact`` is True for full and tiled attention only. Sliding-window and
    sparse attention compute an exact softmax over a *restricted* set of
    keys — a different model, which must be trained that way — and linear
    attention replaces ``exp(q·k/√d_k)`` by ``φ(q)·φ(k)``, so it is not the
    softmax at all.

    Parameters
    ----------
    n : int
        Sequence length (``n_q = n_k = n``).
    d : int
        Width of queries, keys and values (``d_k = d_v = d``).
    window : int
        Keys each query sees in sliding-window attention, itself included;
        may exceed ``n`` (then it is causal attention).
    block : int, optional
        Block size of the sparse pattern and tile side of tiled attention;
        default ``round(√n)`` (at least 1).
    features : int, optional
        Feature dimension ``F`` of linear attention; default ``d``.

    Returns
    -------
    tuple of VariantCost
        In the order full, sliding_window, sparse_fixed, linear, tiled.

    Raises
    ------
    TypeError
        A size is not an integer.
    ValueError
        A size is not positive.

    Examples
    --------
    >>> costs = attention_variant_costs(16, 4, window=3, block=4)
    >>> [(c.name, c.scores, c.memory_scores, c.exact) for c in costs]  # doctest: +NORMALIZE_WHITESPACE
    [('full', 256, 256, True), ('sliding_window', 45, 45, False), ('sparse_fixed', 64, 64, False),
     ('linear', 0, 20, False), ('tiled', 256, 16, True)]
    >>> costs[0].multiply_adds, costs[3].multiply_adds
    (2048, 576)
    """
    n = _v.check_positive_int(n, "n")
    d = _v.check_positive_int(d, "d")
    window = _v.check_positive_int(window, "window")
    block = max(1, round(math.sqrt(n))) if block is None else _v.check_positive_int(block, "block")
    F = d if features is None else _v.check_positive_int(features, "features")
    full = n * n
    sliding = _sliding_window_scores(n, window)
    sparse = _sparse_fixed_scores(n, block)
    tile = min(block, n) ** 2
    return (
        VariantCost("full", full, 2 * full * d, full, True,
                    "every query with every key; the n × n score matrix is materialised"),
        VariantCost("sliding_window", sliding, 2 * sliding * d, sliding, False,
                    f"causal local attention: each query sees itself and the {window - 1} keys before it; "
                    "exact softmax over that window, but a different model from full attention"),
        VariantCost("sparse_fixed", sparse, 2 * sparse * d, sparse, False,
                    f"Child et al. (2019) causal fixed pattern, block {block}: own block up to the query, "
                    "plus the last column of every earlier block; exact softmax over those keys only"),
        VariantCost("linear", 0, 2 * n * F * d + n * F, F * d + F, False,
                    f"Katharopoulos et al. (2020) with {F} features: φ(q)·φ(k) replaces exp(q·k/√d_k), "
                    "so it is a different function from softmax attention; no n × n matrix, "
                    "state U (F × d) and z (F)"),
        VariantCost("tiled", full, 2 * full * d, tile, True,
                    f"FlashAttention: all n² scores, computed {min(block, n)} × {min(block, n)} tile by tile "
                    "with an online softmax; same output, one tile alive at a time"),
    )
