"""What attention computes and holds: exact operation and memory counts, and the projections around it.

* :func:`flop_counts` – how many multiplies, adds, comparisons, exps and divides
  ``softmax(Q Kᵀ / √d_k) V`` takes, stage by stage;
* :func:`memory_bytes` – how many bytes are alive at each stage, and at the peak;
* :func:`projection_flops` and :func:`layer_crossover` – what the projections around attention
  cost, and from which ``n`` the ``n²`` terms outweigh them.

Every count describes the *textbook algorithm* (compute the scores, scale them, softmax them row by
row, multiply by ``V``), not the schedule :mod:`attnlib.core` happens to run; see :func:`flop_counts`
for the differences. Published models: :mod:`attnlib.models`; measured time: :mod:`attnlib.timing`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from attnlib import _validation as _v
from attnlib._table import Table, format_bytes

__all__ = [
    "StageCount",
    "FlopCounts",
    "flop_counts",
    "MemoryStage",
    "MemoryCounts",
    "memory_bytes",
    "projection_flops",
    "LayerCrossover",
    "layer_crossover",
]


# --------------------------------------------------------------------------- FLOP counts
@dataclass(frozen=True)
class StageCount:
    """The operations of one stage of attention.

    Attributes
    ----------
    name : str
        Short key: ``"QK"``, ``"scale"``, ``"max"``, ``"subtract"``, ``"exp"``,
        ``"sum"``, ``"divide"`` or ``"AV"``.
    operation : str
        What the stage computes, in the book's notation.
    multiplies, adds, compares, exps, divides : int
        Scalar operations; ``adds`` counts additions and subtractions.
    """

    name: str
    operation: str
    multiplies: int = 0
    adds: int = 0
    compares: int = 0
    exps: int = 0
    divides: int = 0

    @property
    def flops(self) -> int:
        """``multiplies + adds + compares + divides`` (exps are not FLOPs here; see ``exps``)."""
        return self.multiplies + self.adds + self.compares + self.divides


@dataclass(frozen=True)
class FlopCounts:
    """Exact operation counts of one attention call, per stage and in total.

    Attributes
    ----------
    n_q, n_k, d_k, d_v : int
        The shapes counted: ``Q`` is ``(n_q, d_k)``, ``K`` is ``(n_k, d_k)``,
        ``V`` is ``(n_k, d_v)``.
    stages : tuple of StageCount
        In the order they run: ``QK, scale, max, subtract, exp, sum, divide, AV``.
    """

    n_q: int
    n_k: int
    d_k: int
    d_v: int
    stages: tuple[StageCount, ...]

    def stage(self, name: str) -> StageCount:
        """The stage called ``name`` (one of ``QK, scale, max, subtract, exp, sum, divide, AV``).

        Raises
        ------
        KeyError
            No stage has that name.

        Examples
        --------
        >>> flop_counts(4, 4, 2, 2).stage("max").compares
        12
        """
        for s in self.stages:
            if s.name == name:
                return s
        raise KeyError(f"no stage {name!r}; the stages are {[s.name for s in self.stages]}")

    @property
    def multiplies(self) -> int:
        return sum(s.multiplies for s in self.stages)

    @property
    def adds(self) -> int:
        return sum(s.adds for s in self.stages)

    @property
    def compares(self) -> int:
        return sum(s.compares for s in self.stages)

    @property
    def exps(self) -> int:
        return sum(s.exps for s in self.stages)

    @property
    def divides(self) -> int:
        return sum(s.divides for s in self.stages)

    @property
    def flops(self) -> int:
        """Total FLOPs, one per multiply, add (or subtract), comparison and divide; exps excluded."""
        return sum(s.flops for s in self.stages)

    @property
    def matmul_flops(self) -> int:
        """FLOPs of the two matrix products ``Q Kᵀ`` and ``A V`` alone (≈ ``2 n_q n_k (d_k + d_v)``)."""
        return self.stage("QK").flops + self.stage("AV").flops

    def table(self) -> Table:
        """A plain-text table: one row per stage, then the totals.

        Returns
        -------
        Table
            A ``str`` (the text below); in Jupyter and in the book an HTML table whose caption is
            the first line and whose note is the last (:class:`attnlib._table.Table`).

        Examples
        --------
        >>> print(flop_counts(4, 3, 2, 2).table())  # doctest: +NORMALIZE_WHITESPACE
        attention FLOPs for n_q=4, n_k=3, d_k=2, d_v=2 (textbook algorithm)
        stage     operation               mul  add  cmp  exp  div  FLOPs
        QK        S = Q Kᵀ                 24   12    0    0    0     36
        scale     S · (1/√d_k)             12    0    0    0    0     12
        max       m_i = max_j S_ij          0    0    8    0    0      8
        subtract  S_ij − m_i                0   12    0    0    0     12
        exp       E_ij = exp(S_ij − m_i)    0    0    0   12    0      0
        sum       ℓ_i = Σ_j E_ij            0    8    0    0    0      8
        divide    A_ij = E_ij / ℓ_i         0    0    0    0   12     12
        AV        O = A V                  24   16    0    0    0     40
        total                              60   48    8   12   12    128
        FLOPs = mul + add + cmp + div (subtractions count as adds); exps counted separately
        """
        rows = [(s.name, s.operation, s.multiplies, s.adds, s.compares, s.exps, s.divides, s.flops)
                for s in self.stages]
        rows.append(("total", "", self.multiplies, self.adds, self.compares, self.exps, self.divides,
                     self.flops))
        heads = ("mul", "add", "cmp", "exp", "div", "FLOPs")
        widths = [max(len(h), *(len(f"{r[2 + i]:,}") for r in rows)) for i, h in enumerate(heads)]
        w_name = max(len("stage"), *(len(r[0]) for r in rows))
        w_op = max(len("operation"), *(len(r[1]) for r in rows))

        def line(name: str, op: str, cells: Sequence[str]) -> str:
            return f"{name:<{w_name}}  {op:<{w_op}}  " + "  ".join(
                f"{c:>{w}}" for c, w in zip(cells, widths, strict=True)
            )

        out = [
            f"attention FLOPs for n_q={self.n_q}, n_k={self.n_k}, d_k={self.d_k}, d_v={self.d_v} "
            "(textbook algorithm)",
            line("stage", "operation", heads).rstrip(),
        ]
        out += [line(r[0], r[1], [f"{v:,}" for v in r[2:]]) for r in rows]
        out.append("FLOPs = mul + add + cmp + div (subtractions count as adds); exps counted separately")
        return Table("\n".join(out), columns=("stage", "operation", *heads),
                     rows=[(r[0], r[1], *(f"{v:,}" for v in r[2:])) for r in rows],
                     caption=out[0], notes=(out[-1],), align=("left", "left") + ("right",) * len(heads))


def flop_counts(n_q: int, n_k: int, d_k: int, d_v: int) -> FlopCounts:
    """Exact scalar-operation counts of ``softmax(Q Kᵀ / √d_k) V``, stage by stage.

    The convention is the *textbook algorithm*, each stage done on its own:

    ======== ======================== ==================================================
    stage    computes                 operations
    ======== ======================== ==================================================
    QK       ``S = Q Kᵀ``             ``n_q·n_k`` dot products of length ``d_k``:
                                      ``n_q·n_k·d_k`` multiplies, ``n_q·n_k·(d_k−1)`` adds
    scale    ``S · (1/√d_k)``         ``n_q·n_k`` multiplies (the factor is computed once)
    max      ``m_i = max_j S_ij``     ``n_q·(n_k−1)`` comparisons
    subtract ``S_ij − m_i``           ``n_q·n_k`` subtractions (counted as adds)
    exp      ``exp(S_ij − m_i)``      ``n_q·n_k`` exps
    sum      ``ℓ_i = Σ_j E_ij``       ``n_q·(n_k−1)`` adds
    divide   ``A_ij = E_ij / ℓ_i``    ``n_q·n_k`` divides
    AV       ``O = A V``              ``n_q·d_v`` dot products of length ``n_k``:
                                      ``n_q·d_v·n_k`` multiplies, ``n_q·d_v·(n_k−1)`` adds
    ======== ======================== ==================================================

    A sum of ``L`` numbers takes ``L − 1`` additions (the first term starts the
    accumulator), and a maximum of ``L`` numbers ``L − 1`` comparisons.

    **FLOP convention**: one FLOP per multiply, add, subtract, comparison and
    divide; exponentials are reported in their own column (``exps``) and *not*
    included in ``flops``, because an ``exp`` costs tens of FLOPs on a CPU and
    runs on a separate unit on a GPU, so no single weight would be right.
    The products dominate: ``flops ≈ 2·n_q·n_k·(d_k + d_v)``.

    Parameters
    ----------
    n_q, n_k : int
        Number of queries and of keys (= values), both positive.
    d_k, d_v : int
        Width of queries/keys and of values, both positive.

    Returns
    -------
    FlopCounts
        Per-stage counts, totals (``.multiplies``, ``.adds``, ``.compares``,
        ``.exps``, ``.divides``, ``.flops``) and ``.table()``.

    Raises
    ------
    TypeError
        A size is not an integer.
    ValueError
        A size is zero or negative.

    Notes
    -----
    :func:`attnlib.core.scaled_dot_product_attention` computes the same
    result on a different schedule, so its own counts differ in the
    lower-order terms: it scales ``Q`` before the product (``n_q·d_k``
    multiplies instead of ``n_q·n_k``), gets the row sums from the value
    product through a column of ones, and divides the ``n_q·d_v`` outputs
    rather than the ``n_q·n_k`` weights. The ``n_q·n_k·(d_k + d_v)`` terms of
    the two products, which dominate, are the same.

    Examples
    --------
    >>> c = flop_counts(n_q=4, n_k=4, d_k=2, d_v=2)
    >>> c.stage("QK").multiplies, c.stage("QK").adds
    (32, 16)
    >>> c.flops, c.exps
    (176, 16)
    >>> flop_counts(1024, 1024, 64, 64).matmul_flops / flop_counts(1024, 1024, 64, 64).flops > 0.97
    True
    """
    n_q = _v.check_positive_int(n_q, "n_q")
    n_k = _v.check_positive_int(n_k, "n_k")
    d_k = _v.check_positive_int(d_k, "d_k")
    d_v = _v.check_positive_int(d_v, "d_v")
    scores = n_q * n_k
    stages = (
        StageCount("QK", "S = Q Kᵀ", multiplies=scores * d_k, adds=scores * (d_k - 1)),
        StageCount("scale", "S · (1/√d_k)", multiplies=scores),
        StageCount("max", "m_i = max_j S_ij", compares=n_q * (n_k - 1)),
        StageCount("subtract", "S_ij − m_i", adds=scores),
        StageCount("exp", "E_ij = exp(S_ij − m_i)", exps=scores),
        StageCount("sum", "ℓ_i = Σ_j E_ij", adds=n_q * (n_k - 1)),
        StageCount("divide", "A_ij = E_ij / ℓ_i", divides=scores),
        StageCount("AV", "O = A V", multiplies=n_q * d_v * n_k, adds=n_q * d_v * (n_k - 1)),
    )
    return FlopCounts(n_q=n_q, n_k=n_k, d_k=d_k, d_v=d_v, stages=stages)


# --------------------------------------------------------------------------- memory
@dataclass(frozen=True)
class MemoryStage:
    """The arrays alive during one stage.

    Attributes
    ----------
    name : str
        ``"inputs"``, ``"scores"``, ``"softmax"``, ``"output"`` or ``"result"``.
    arrays : tuple of (str, tuple of int)
        Each live array's name and shape, e.g. ``("S", (n_q, n_k))``.
    itemsize : int
        Bytes per element.
    """

    name: str
    arrays: tuple[tuple[str, tuple[int, ...]], ...]
    itemsize: int

    @property
    def elements(self) -> int:
        """Total number of elements alive."""
        return sum(math.prod(shape) for _, shape in self.arrays)

    @property
    def bytes(self) -> int:
        """``elements · itemsize``."""
        return self.elements * self.itemsize


@dataclass(frozen=True)
class MemoryCounts:
    """Live memory of one attention call at each stage, and the peak.

    Attributes
    ----------
    n_q, n_k, d_k, d_v : int
        The shapes counted.
    dtype : str
        Name of the element type, e.g. ``"float32"``.
    itemsize : int
        Bytes per element.
    in_place : bool
        Whether the softmax overwrites the scores (see :func:`memory_bytes`).
    stages : tuple of MemoryStage
        ``inputs, scores, softmax, output, result``.
    """

    n_q: int
    n_k: int
    d_k: int
    d_v: int
    dtype: str
    itemsize: int
    in_place: bool
    stages: tuple[MemoryStage, ...]

    def stage(self, name: str) -> MemoryStage:
        """The stage called ``name``.

        Raises
        ------
        KeyError
            There is no such stage (the message names the stages).
        """
        for s in self.stages:
            if s.name == name:
                return s
        raise KeyError(f"no stage {name!r}; the stages are {[s.name for s in self.stages]}")

    @property
    def peak_bytes(self) -> int:
        """The largest live memory over the stages."""
        return max(s.bytes for s in self.stages)

    @property
    def peak_stage(self) -> str:
        """Name of the first stage at which the peak is reached."""
        return max(self.stages, key=lambda s: s.bytes).name

    @property
    def score_bytes(self) -> int:
        """Bytes of one ``(n_q, n_k)`` score (or weight) matrix."""
        return self.n_q * self.n_k * self.itemsize

    def table(self) -> Table:
        """A plain-text table: per stage the live arrays, elements and bytes; then the peak.

        Returns
        -------
        Table
            A ``str`` (the text below); in Jupyter and in the book an HTML table whose caption is
            the first line and whose note is the peak (:class:`attnlib._table.Table`).

        Examples
        --------
        >>> import numpy as np
        >>> print(memory_bytes(4, 4, 2, 2, np.float32).table())  # doctest: +NORMALIZE_WHITESPACE
        attention memory for n_q=4, n_k=4, d_k=2, d_v=2, float32 (4 bytes), softmax in place
        stage    live arrays                           elements  bytes
        inputs   Q(4,2) K(4,2) V(4,2)                        24     96
        scores   Q(4,2) K(4,2) V(4,2) S(4,4)                 40    160
        softmax  Q(4,2) K(4,2) V(4,2) A(4,4) m/ℓ(4,)         44    176
        output   Q(4,2) K(4,2) V(4,2) A(4,4) O(4,2)          48    192
        result   Q(4,2) K(4,2) V(4,2) O(4,2)                 32    128
        peak: 192 bytes (192 B) at stage 'output'
        """
        def shape_text(shape: tuple[int, ...]) -> str:
            return "(" + ",".join(str(s) for s in shape) + ("," if len(shape) == 1 else "") + ")"

        live = [" ".join(f"{a}{shape_text(sh)}" for a, sh in s.arrays) for s in self.stages]
        w_name = max(len("stage"), *(len(s.name) for s in self.stages))
        w_live = max(len("live arrays"), *(len(t) for t in live))
        w_el = max(len("elements"), *(len(f"{s.elements:,}") for s in self.stages))
        w_by = max(len("bytes"), *(len(f"{s.bytes:,}") for s in self.stages))
        mode = "softmax in place" if self.in_place else "weights in a new array"
        out = [
            f"attention memory for n_q={self.n_q}, n_k={self.n_k}, d_k={self.d_k}, d_v={self.d_v}, "
            f"{self.dtype} ({self.itemsize} bytes), {mode}",
            f"{'stage':<{w_name}}  {'live arrays':<{w_live}}  {'elements':>{w_el}}  {'bytes':>{w_by}}",
        ]
        for s, t in zip(self.stages, live, strict=True):
            out.append(f"{s.name:<{w_name}}  {t:<{w_live}}  {s.elements:>{w_el},}  {s.bytes:>{w_by},}")
        out.append(
            f"peak: {self.peak_bytes:,} bytes ({format_bytes(self.peak_bytes)}) at stage {self.peak_stage!r}"
        )
        return Table("\n".join(out), columns=("stage", "live arrays", "elements", "bytes"),
                     rows=[(s.name, t, f"{s.elements:,}", f"{s.bytes:,}")
                           for s, t in zip(self.stages, live, strict=True)],
                     caption=out[0], notes=(out[-1],), align=("left", "left", "right", "right"))


def memory_bytes(
    n_q: int, n_k: int, d_k: int, d_v: int, dtype: Any = np.float64, *, in_place: bool = True
) -> MemoryCounts:
    """Bytes alive at each stage of the textbook attention algorithm, and the peak.

    The stages and what is alive in each (all arrays of ``dtype``):

    ======= ===================================================================
    stage   live arrays
    ======= ===================================================================
    inputs  ``Q (n_q, d_k)``, ``K (n_k, d_k)``, ``V (n_k, d_v)``
    scores  inputs and the scores ``S (n_q, n_k)``
    softmax inputs, the weights ``A (n_q, n_k)`` and one row statistic
            ``(n_q,)`` (the row maxima ``m``, then overwritten by the row sums
            ``ℓ``); with ``in_place=True`` ``A`` overwrites ``S``, otherwise
            ``S`` is alive too until the softmax ends
    output  inputs, ``A`` and the output ``O (n_q, d_v)``
    result  inputs and ``O`` (the weights are freed)
    ======= ===================================================================

    The inputs are counted because they are alive throughout; subtract
    ``stage("inputs").bytes`` for the extra memory attention itself needs.
    The ``n_q·n_k`` terms are the point: the peak grows as ``n²`` while
    everything else grows as ``n·d``.

    Parameters
    ----------
    n_q, n_k, d_k, d_v : int
        Positive sizes; ``Q`` is ``(n_q, d_k)``, ``K`` is ``(n_k, d_k)`` and
        ``V`` is ``(n_k, d_v)``.
    dtype : NumPy floating dtype
        Element type, e.g. ``np.float32`` (4 bytes) or ``np.float16`` (2 bytes).
    in_place : bool
        Whether the softmax overwrites the scores (as a careful implementation
        does); ``False`` models one that keeps ``S`` and ``A`` side by side.

    Returns
    -------
    MemoryCounts
        Per-stage arrays, elements and bytes; ``.peak_bytes``; ``.table()``.

    Raises
    ------
    TypeError
        A size is not an integer, ``dtype`` is not a floating dtype, or
        ``in_place`` is not a bool.
    ValueError
        A size is zero or negative.

    Examples
    --------
    >>> import numpy as np
    >>> m = memory_bytes(1024, 1024, 64, 64, np.float32)
    >>> m.stage("scores").bytes - m.stage("inputs").bytes  # one 1024 × 1024 float32 matrix
    4194304
    >>> m.peak_stage, m.peak_bytes
    ('output', 5242880)
    >>> memory_bytes(1024, 1024, 64, 64, np.float32, in_place=False).peak_stage
    'softmax'
    """
    n_q = _v.check_positive_int(n_q, "n_q")
    n_k = _v.check_positive_int(n_k, "n_k")
    d_k = _v.check_positive_int(d_k, "d_k")
    d_v = _v.check_positive_int(d_v, "d_v")
    dt = _v.check_float_dtype(dtype)
    in_place = _v.check_bool_flag(in_place, "in_place")
    inputs = (("Q", (n_q, d_k)), ("K", (n_k, d_k)), ("V", (n_k, d_v)))
    S, A, stat, O = ("S", (n_q, n_k)), ("A", (n_q, n_k)), ("m/ℓ", (n_q,)), ("O", (n_q, d_v))
    softmax_live = (*inputs, A, stat) if in_place else (*inputs, S, A, stat)
    stages = tuple(
        MemoryStage(name, arrays, dt.itemsize)
        for name, arrays in (
            ("inputs", inputs),
            ("scores", (*inputs, S)),
            ("softmax", softmax_live),
            ("output", (*inputs, A, O)),
            ("result", (*inputs, O)),
        )
    )
    return MemoryCounts(n_q, n_k, d_k, d_v, dt.name, dt.itemsize, in_place, stages)


# --------------------------------------------------------------------------- projections and crossover
def _check_heads(n_heads: Any, n_kv_heads: Any) -> tuple[int, int]:
    n_heads = _v.check_positive_int(n_heads, "n_heads")
    n_kv_heads = _v.check_positive_int(n_kv_heads, "n_kv_heads")
    if n_heads % n_kv_heads:
        raise ValueError(
            f"n_heads={n_heads} is not a multiple of n_kv_heads={n_kv_heads} "
            "(each key-value head serves a whole group of query heads)"
        )
    return n_heads, n_kv_heads


def projection_flops(n: int, d_model: int, n_heads: int, n_kv_heads: int, d_head: int) -> int:
    """FLOPs of the four projections of one attention layer for ``n`` tokens.

    The layer's input ``X`` is ``(n, d_model)``. The projections are four
    matrix products, counted as :func:`flop_counts` counts its products (a dot
    product of length ``L`` is ``L`` multiplies and ``L − 1`` adds):

    ====== ====================================================== ==========================================
    name   product                                                FLOPs
    ====== ====================================================== ==========================================
    Q      ``X W_Q``: ``(n, d_model) @ (d_model, H·d_head)``      ``n·H·d_head·(2·d_model − 1)``
    K      ``X W_K``: ``(n, d_model) @ (d_model, H_kv·d_head)``   ``n·H_kv·d_head·(2·d_model − 1)``
    V      ``X W_V``: ``(n, d_model) @ (d_model, H_kv·d_head)``   ``n·H_kv·d_head·(2·d_model − 1)``
    O      ``O W_O``: ``(n, H·d_head) @ (H·d_head, d_model)``     ``n·d_model·(2·H·d_head − 1)``
    ====== ====================================================== ==========================================

    with ``H = n_heads`` query heads and ``H_kv = n_kv_heads`` key–value heads
    (fewer under grouped-query attention). Biases are not counted. The total
    is linear in ``n``, against the ``n²`` of attention itself.

    Parameters
    ----------
    n : int
        Number of tokens.
    d_model : int
        Width of the layer's input and output.
    n_heads, n_kv_heads : int
        Query heads and key–value heads; ``n_heads`` a multiple of ``n_kv_heads``.
    d_head : int
        Width of one head (``d_k = d_v``).

    Returns
    -------
    int
        Multiplies plus adds of the four products.

    Raises
    ------
    TypeError
        An argument is not an integer.
    ValueError
        An argument is not positive, or ``n_heads`` is not a multiple of
        ``n_kv_heads``.

    Examples
    --------
    One head with ``d_model = d_head = d``: four ``(n, d) @ (d, d)`` products.

    >>> n, d = 128, 64
    >>> projection_flops(n, d, 1, 1, d) == 4 * n * d * (2 * d - 1)
    True
    >>> projection_flops(1, 8192, 64, 8, 128)  # LLaMA-2 70B, one token: (64 + 2·8)·128·16383 + 8192·16383
    301971456
    """
    n = _v.check_positive_int(n, "n")
    d_model = _v.check_positive_int(d_model, "d_model")
    n_heads, n_kv_heads = _check_heads(n_heads, n_kv_heads)
    d_head = _v.check_positive_int(d_head, "d_head")
    qkv = n * (n_heads + 2 * n_kv_heads) * d_head * (2 * d_model - 1)  # X W_Q, X W_K, X W_V
    out = n * d_model * (2 * n_heads * d_head - 1)  # O W_O
    return qkv + out


@dataclass(frozen=True)
class LayerCrossover:
    """Where a layer's attention products start to outweigh its projections; see :func:`layer_crossover`.

    Attributes
    ----------
    d_model, n_heads, n_kv_heads, d_head : int
        The layer's shape.
    leading : float
        ``d_model · (1 + n_kv_heads / n_heads)``: where the leading terms,
        ``2·n²·H·d_head`` multiply-adds of attention against
        ``n·d_model·d_head·(2H + 2H_kv)`` of the projections, are equal.
    exact : int
        The smallest ``n`` at which ``n_heads`` heads of attention, counted by
        :func:`flop_counts` (softmax included), take at least as many FLOPs as
        :func:`projection_flops`.
    """

    d_model: int
    n_heads: int
    n_kv_heads: int
    d_head: int
    leading: float
    exact: int


def layer_crossover(d_model: int, n_heads: int, n_kv_heads: int, d_head: int) -> LayerCrossover:
    """The sequence length from which attention's ``n²`` work exceeds the projections' work.

    Attention over ``n`` tokens costs ``n_heads · flop_counts(n, n, d_head,
    d_head).flops = H·((4·d_head + 4)·n² − (d_head + 2)·n)`` FLOPs, the
    projections :func:`projection_flops` ``= n·P`` with ``P`` independent of
    ``n``. Dividing both by ``n`` leaves two linear functions of ``n``, so
    attention costs at least as much exactly from
    ``n = ⌈(P + H·(d_head + 2)) / (H·(4·d_head + 4))⌉`` on (``exact``). Keeping
    only the leading terms gives ``n* = d_model·(1 + H_kv/H)`` (``leading``):
    ``2·d_model`` without grouped-query attention, ``2·d`` for a single head of
    width ``d``. The exact crossing comes a little earlier, because the
    softmax adds ``4·H·n²`` FLOPs to the products.

    Parameters
    ----------
    d_model : int
        Width of the layer's input and output.
    n_heads, n_kv_heads : int
        Query heads and key–value heads; ``n_heads`` a multiple of ``n_kv_heads``.
    d_head : int
        Width of one head (``d_k = d_v``).

    Returns
    -------
    LayerCrossover
        ``.leading`` (the formula) and ``.exact`` (the first ``n`` by exact counts).

    Raises
    ------
    TypeError
        An argument is not an integer.
    ValueError
        An argument is not positive, or ``n_heads`` is not a multiple of
        ``n_kv_heads``.

    Examples
    --------
    >>> c = layer_crossover(d_model=64, n_heads=1, n_kv_heads=1, d_head=64)  # one head, d = 64
    >>> c.leading, c.exact
    (128.0, 126)
    >>> layer_crossover(8192, 64, 8, 128).leading  # LLaMA-2 70B: 8192 · (1 + 8/64)
    9216.0
    """
    d_model = _v.check_positive_int(d_model, "d_model")
    n_heads, n_kv_heads = _check_heads(n_heads, n_kv_heads)
    d_head = _v.check_positive_int(d_head, "d_head")
    per_token = projection_flops(1, d_model, n_heads, n_kv_heads, d_head)  # P
    num = per_token + n_heads * (d_head + 2)
    den = n_heads * (4 * d_head + 4)
    exact = -(-num // den)  # ceiling division, in integers
    leading = d_model * (n_heads + n_kv_heads) / n_heads
    return LayerCrossover(d_model, n_heads, n_kv_heads, d_head, leading, exact)
