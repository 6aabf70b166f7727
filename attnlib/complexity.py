"""What attention costs: exact operation and memory counts, model scale, measured time.

Four questions, one function each:

* :func:`flop_counts` – how many multiplies, adds, comparisons, exps and
  divides does ``softmax(Q Kᵀ / √d_k) V`` take, stage by stage?
* :func:`memory_bytes` – how many bytes are alive at each stage, and at the peak?
* :func:`attention_scale_table` – what do these numbers come to in published
  models (:data:`MODEL_CONFIGS`) at their maximum context?
* :func:`projection_flops`, :func:`layer_crossover` and :func:`kv_cache_bytes`
  – what the projections around attention cost, from which ``n`` on the
  ``n²`` terms outweigh them, and what a key–value cache holds;
* :func:`time_attention` and :func:`fit_power_law` – how does the measured time
  of :func:`attnlib.core.scaled_dot_product_attention` grow with ``n``, and
  with which exponent (with a confidence interval)?
* :func:`compare_times` and :func:`peak_memory` – the time (interleaved
  medians) and the peak traced memory of any calls, measured the same way.

Timings run BLAS on one thread by default (``threads=1``, through
threadpoolctl): on a shared two-core machine a multithreaded BLAS waits for
descheduled threads, which turns sub-millisecond products into tens of
milliseconds at random, so the times and the fitted exponent describe the
scheduler rather than the algorithm. One thread gives steady numbers.

Every count here describes the *textbook algorithm* (compute the scores,
scale them, softmax them row by row, multiply by ``V``), not the schedule
:mod:`attnlib.core` happens to run; see :func:`flop_counts` for the
differences.
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
from attnlib._table import Table
from attnlib.core import scaled_dot_product_attention

__all__ = [
    "StageCount",
    "FlopCounts",
    "flop_counts",
    "MemoryStage",
    "MemoryCounts",
    "memory_bytes",
    "ModelConfig",
    "MODEL_CONFIGS",
    "projection_flops",
    "LayerCrossover",
    "layer_crossover",
    "kv_cache_bytes",
    "ModelScale",
    "AttentionScaleTable",
    "attention_scale_table",
    "AttentionTiming",
    "time_attention",
    "PowerLawFit",
    "fit_power_law",
    "TimingComparison",
    "compare_times",
    "peak_memory",
    "VariantCost",
    "attention_variant_costs",
]


# --------------------------------------------------------------------------- private helpers
def _check_float_dtype(dtype: Any) -> np.dtype:
    try:
        dt = np.dtype(dtype)
    except TypeError:
        raise TypeError(f"dtype must be a NumPy floating dtype such as np.float32; got {dtype!r}") from None
    if dt.kind != "f":
        raise TypeError(f"dtype must be a floating dtype (float16/32/64); got {dt}")
    return dt


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


def _format_bytes(n_bytes: int) -> str:
    """``n_bytes`` in binary (IEC) units: B, KiB, MiB, GiB, TiB, three significant digits."""
    value = float(n_bytes)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if value < 1024 or unit == "TiB":
            return f"{int(value)} B" if unit == "B" else f"{value:.3g} {unit}"
        value /= 1024
    raise AssertionError("unreachable")  # pragma: no cover


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
        """Total FLOPs: one per multiply, add (or subtract), comparison and divide; exps excluded."""
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
        >>> print(flop_counts(4, 4, 2, 2).table())  # doctest: +NORMALIZE_WHITESPACE
        attention FLOPs for n_q=4, n_k=4, d_k=2, d_v=2 (textbook algorithm)
        stage     operation                     mul  add  cmp  exp  div  FLOPs
        QK        S = Q Kᵀ                       32   16    0    0    0     48
        scale     S · (1/√d_k)                   16    0    0    0    0     16
        max       m_i = max_j S_ij                0    0   12    0    0     12
        subtract  S_ij − m_i                      0   16    0    0    0     16
        exp       E_ij = exp(S_ij − m_i)          0    0    0   16    0      0
        sum       ℓ_i = Σ_j E_ij                  0   12    0    0    0     12
        divide    A_ij = E_ij / ℓ_i               0    0    0    0   16     16
        AV        O = A V                        32   24    0    0    0     56
        total                                    80   68   12   16   16    176
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
        """The stage called ``name``; ``KeyError`` naming the stages if there is none."""
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
            f"peak: {self.peak_bytes:,} bytes ({_format_bytes(self.peak_bytes)}) at stage {self.peak_stage!r}"
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
    dt = _check_float_dtype(dtype)
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


# --------------------------------------------------------------------------- published models
@dataclass(frozen=True)
class ModelConfig:
    """The attention shape of a published model.

    Attributes
    ----------
    name : str
    n_layers : int
        Transformer blocks, each with one self-attention.
    n_heads : int
        Query heads per layer (each makes its own ``n × n`` score matrix).
    d_model : int
        Width of the residual stream.
    d_head : int
        Width of one head's queries and keys (``d_k``).
    max_context : int
        Longest sequence, in tokens, the model was (pre-)trained on (``n``).
        For ViT-L/16 this is the pre-training resolution's 197 tokens; the
        model is fine-tuned at higher resolutions, with more patches.
    n_kv_heads : int
        Key/value heads; fewer than ``n_heads`` under grouped-query attention,
        which shrinks ``K`` and ``V`` but not the number of scores.
    citations : tuple of str
        BibTeX keys of the sources; the first is the model's paper.
    source : str
        Where each number is stated.
    """

    name: str
    n_layers: int
    n_heads: int
    d_model: int
    d_head: int
    max_context: int
    n_kv_heads: int
    citations: tuple[str, ...]
    source: str

    def __post_init__(self) -> None:
        for attr in ("n_layers", "n_heads", "d_model", "d_head", "max_context", "n_kv_heads"):
            _v.check_positive_int(getattr(self, attr), attr)
        if self.n_heads % self.n_kv_heads:
            raise ValueError(
                f"{self.name}: n_heads={self.n_heads} is not a multiple of n_kv_heads={self.n_kv_heads}"
            )
        if not self.citations:
            raise ValueError(f"{self.name}: citations must name at least one source")

    @property
    def citation(self) -> str:
        """The primary citation key (the model's paper)."""
        return self.citations[0]


#: Published configurations, each number as stated in the cited source.
MODEL_CONFIGS: tuple[ModelConfig, ...] = (
    # Radford et al. 2019, Table 2 (smallest model: 12 layers, d_model 768) and Sec. 2.3 (context
    # 1024 tokens); the 12 heads of 64 dims are GPT-1's (Radford et al. 2018, Sec. 4.1), which GPT-2
    # "largely follows".
    ModelConfig("GPT-2 small", 12, 12, 768, 64, 1024, 12,
                ("radford2019language", "radford2018improving"),
                "Radford et al. 2019, Table 2 and Sec. 2.3; heads from Radford et al. 2018, Sec. 4.1"),
    # Devlin et al. 2019, Sec. 3: BERT_BASE (L=12, H=768, A=12 in BERT's notation: 12 layers, hidden
    # size 768, 12 heads; H is not the number of heads here); pre-training inputs of at most
    # 512 tokens in total (Appendix A.2, "Pre-training Procedure").
    ModelConfig("BERT-base", 12, 12, 768, 64, 512, 12, ("devlin2019bert",),
                "Devlin et al. 2019, Sec. 3 (12 layers, hidden size 768, 12 heads) and Appendix A.2 "
                "(512 tokens)"),
    # Brown et al. 2020, Table 2.1, row GPT-3 175B: n_layers 96, d_model 12288, n_heads 96,
    # d_head 128; context window n_ctx = 2048 tokens for all models (Sec. 2.1).
    ModelConfig("GPT-3 175B", 96, 96, 12288, 128, 2048, 96, ("brown2020language",),
                "Brown et al. 2020, Table 2.1 and Sec. 2.1 (n_ctx = 2048)"),
    # Touvron et al. 2023b (Llama 2), Table 1: 70B has a 4k context and uses grouped-query attention
    # (also Sec. 2.2 and Appendix A.2.1). Layers, heads and width are those of LLaMA 65B (Touvron et
    # al. 2023a, Table 2: dimension 8192, 64 heads, 80 layers), whose architecture Llama 2 keeps;
    # the 8 key/value heads (groups of 8 query heads) are those of the released 70B checkpoint's
    # configuration (n_kv_heads = 8), which also confirms 80 layers, 64 heads and width 8192.
    ModelConfig("LLaMA-2 70B", 80, 64, 8192, 128, 4096, 8,
                ("touvron2023llama2", "touvron2023llama", "ainslie2023gqa"),
                "Touvron et al. 2023b, Table 1 (4k, GQA); sizes as Touvron et al. 2023a, Table 2; "
                "8 KV heads from the released checkpoint's configuration"),
    # Dosovitskiy et al. 2021, Table 1, ViT-Large: 24 layers, hidden size 1024, 16 heads. At the
    # 224 × 224 pre-training resolution with 16 × 16 patches: 14 · 14 = 196 patches + 1 class token.
    ModelConfig("ViT-L/16", 24, 16, 1024, 64, 197, 16, ("dosovitskiy2021image",),
                "Dosovitskiy et al. 2021, Table 1 and Sec. 3.1; 224² image, 16² patches, + [class]"),
    # Lin et al. 2023 (ESM-2), the table of ESM-2 model sizes in the supplementary material, 650M
    # model: 33 layers, embedding 1280, 20 heads (as in the released esm2_t33_650M_UR50D checkpoint);
    # trained on crops of at most 1024 tokens (supplementary Materials and Methods).
    ModelConfig("ESM-2 650M", 33, 20, 1280, 64, 1024, 20, ("lin2023esm2",),
                "Lin et al. 2023, supplementary ESM-2 size table; Materials and Methods (1024-token crops)"),
)


@dataclass(frozen=True)
class ModelScale:
    """One model's attention at its training context.

    Attributes
    ----------
    config : ModelConfig
    n : int
        Sequence length used (the model's ``max_context``).
    scores_per_layer : int
        ``n_heads · n²``: the entries of one layer's score tensor.
    scores_per_forward : int
        ``n_layers · n_heads · n²``: all layers of one forward pass.
    bytes_per_layer, bytes_per_forward : int
        The same, times ``dtype_bytes``: the memory if the tensors were
        materialised (batch size 1).
    """

    config: ModelConfig
    n: int
    scores_per_layer: int
    scores_per_forward: int
    bytes_per_layer: int
    bytes_per_forward: int


@dataclass(frozen=True)
class AttentionScaleTable:
    """Attention score counts and memory of published models; see :func:`attention_scale_table`.

    Attributes
    ----------
    rows : tuple of ModelScale
    dtype_bytes : int
        Bytes per score used for the memory columns.
    """

    rows: tuple[ModelScale, ...]
    dtype_bytes: int

    def row(self, name: str) -> ModelScale:
        """The row of the model called ``name``; ``KeyError`` listing the names if absent."""
        for r in self.rows:
            if r.config.name == name:
                return r
        raise KeyError(f"no model {name!r}; the table has {[r.config.name for r in self.rows]}")

    def table(self) -> Table:
        """A plain-text table, one model per row.

        Columns: layers, query heads (and KV heads when fewer), ``d_head``,
        context ``n``, scores per layer (``n_heads·n²``), scores per forward
        pass (``× n_layers``), and the bytes of each at ``dtype_bytes`` per
        score, in binary units (1 GiB = 2³⁰ bytes).

        Returns
        -------
        Table
            A ``str`` whose ``source`` column is each row's BibTeX key. In
            Jupyter and in the book it displays as an HTML table whose
            ``source`` column names the work as a reader cites it ("Brown et
            al. 2020", the start of :attr:`ModelConfig.source`) and whose
            notes say where each number is stated (:class:`attnlib._table.Table`).

        Examples
        --------
        >>> print(attention_scale_table().table().splitlines()[0])
        attention scores at training context, batch 1, 2 bytes per score (binary units: 1 GiB = 2^30 B)
        """
        header = ("model", "layers", "heads", "d_head", "n", "scores/layer", "scores/forward",
                  "bytes/layer", "bytes/forward", "source")
        body = []
        for r in self.rows:
            c = r.config
            heads = f"{c.n_heads}" if c.n_kv_heads == c.n_heads else f"{c.n_heads} ({c.n_kv_heads} KV)"
            body.append((c.name, f"{c.n_layers}", heads, f"{c.d_head}", f"{r.n:,}",
                         f"{r.scores_per_layer:,}", f"{r.scores_per_forward:,}",
                         _format_bytes(r.bytes_per_layer), _format_bytes(r.bytes_per_forward), c.citation))
        widths = [max(len(h), *(len(row[i]) for row in body)) for i, h in enumerate(header)]
        left = {0, 9}

        def line(cells: Sequence[str]) -> str:
            pairs = enumerate(zip(cells, widths, strict=True))
            return "  ".join(f"{c:<{w}}" if i in left else f"{c:>{w}}" for i, (c, w) in pairs).rstrip()

        title = (f"attention scores at training context, batch 1, {self.dtype_bytes} bytes per score "
                 "(binary units: 1 GiB = 2^30 B)")
        shown = [(*row[:-1], _short_source(r.config)) for row, r in zip(body, self.rows, strict=True)]
        return Table("\n".join([title, line(header), *(line(row) for row in body)]),
                     columns=header, rows=shown, caption=title,
                     notes=[f"{r.config.name}: {r.config.source}" for r in self.rows],
                     align=["left" if i in left else "right" for i in range(len(header))])


def _short_source(config: ModelConfig) -> str:
    """The work a row cites, as the text cites it: ``"Brown et al. 2020"``, ``source`` up to a comma."""
    return config.source.split(",", 1)[0].strip()


def attention_scale_table(
    configs: Sequence[ModelConfig] = MODEL_CONFIGS, dtype_bytes: int = 2
) -> AttentionScaleTable:
    """Score counts and score-tensor memory of published models at their training context.

    For a model with ``L`` layers, ``H`` query heads and context ``n``, one
    layer's self-attention makes ``H · n²`` scores (one ``n × n`` matrix per
    head) and a forward pass ``L · H · n²``. The memory columns are those
    counts times ``dtype_bytes``: what the score tensors would occupy if they
    were materialised, at batch size 1 (a forward pass keeps all layers only
    when training stores them for the backward pass). Grouped-query attention
    (fewer KV heads) shares keys and values, not scores, so it changes nothing
    here.

    Parameters
    ----------
    configs : sequence of ModelConfig
        Defaults to :data:`MODEL_CONFIGS`.
    dtype_bytes : int
        Bytes per score: 2 for float16/bfloat16 (the default), 4 for float32.

    Returns
    -------
    AttentionScaleTable
        ``.rows`` (one :class:`ModelScale` per config), ``.row(name)`` and ``.table()``.

    Raises
    ------
    TypeError
        ``configs`` holds something other than :class:`ModelConfig`, or
        ``dtype_bytes`` is not an integer.
    ValueError
        ``configs`` is empty or ``dtype_bytes`` is not positive.

    Examples
    --------
    >>> t = attention_scale_table()
    >>> gpt3 = t.row("GPT-3 175B")
    >>> gpt3.scores_per_forward == 96 * 96 * 2048**2
    True
    >>> print(f"{gpt3.scores_per_forward:,} scores, {gpt3.bytes_per_forward / 2**30:.0f} GiB in float16")
    38,654,705,664 scores, 72 GiB in float16
    """
    dtype_bytes = _v.check_positive_int(dtype_bytes, "dtype_bytes")
    configs = tuple(configs)
    if not configs:
        raise ValueError("configs is empty; pass at least one ModelConfig (default: MODEL_CONFIGS)")
    rows = []
    for i, c in enumerate(configs):
        if not isinstance(c, ModelConfig):
            raise TypeError(f"configs[{i}] must be a ModelConfig; got {type(c).__name__}")
        n = c.max_context
        per_layer = c.n_heads * n * n
        per_forward = c.n_layers * per_layer
        rows.append(
            ModelScale(c, n, per_layer, per_forward, per_layer * dtype_bytes, per_forward * dtype_bytes)
        )
    return AttentionScaleTable(tuple(rows), dtype_bytes)


# --------------------------------------------------------------------------- projections, crossover, KV cache
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


def kv_cache_bytes(config: ModelConfig, n_tokens: int, dtype_bytes: int = 2) -> int:
    """Bytes of the key–value cache of one sequence of ``n_tokens`` tokens.

    ``2 · n_layers · n_kv_heads · d_head · n_tokens · dtype_bytes``: a key and
    a value (the 2) of ``d_head`` numbers per token, per key–value head, per
    layer. This is :attr:`attnlib.kvcache.DecodeCost.cache_elements` (for
    ``d_k = d_v = d_head``) times ``n_layers · n_kv_heads · dtype_bytes``.
    Grouped-query attention (``n_kv_heads < n_heads``) shrinks it by
    ``n_heads / n_kv_heads``.

    Parameters
    ----------
    config : ModelConfig
        The model, e.g. an entry of :data:`MODEL_CONFIGS`.
    n_tokens : int
        Tokens held in the cache (prompt and generated).
    dtype_bytes : int
        Bytes per number: 2 for float16/bfloat16 (the default), 4 for float32.

    Returns
    -------
    int

    Raises
    ------
    TypeError
        ``config`` is not a :class:`ModelConfig`, or ``n_tokens`` or
        ``dtype_bytes`` is not an integer.
    ValueError
        ``n_tokens`` or ``dtype_bytes`` is not positive.

    Examples
    --------
    >>> llama = next(c for c in MODEL_CONFIGS if c.name == "LLaMA-2 70B")
    >>> kv_cache_bytes(llama, 4096) / 2**30  # 2 · 80 · 8 · 128 · 4096 · 2 bytes
    1.25
    """
    if not isinstance(config, ModelConfig):
        raise TypeError(f"config must be a ModelConfig (e.g. MODEL_CONFIGS[0]); got {type(config).__name__}")
    n_tokens = _v.check_positive_int(n_tokens, "n_tokens")
    dtype_bytes = _v.check_positive_int(dtype_bytes, "dtype_bytes")
    return 2 * config.n_layers * config.n_kv_heads * config.d_head * n_tokens * dtype_bytes


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
    dt = _check_float_dtype(dtype)
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
        matrix-product conventions of :func:`flop_counts`: ``Q Kᵀ`` and ``A V``
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
