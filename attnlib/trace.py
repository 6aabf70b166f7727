"""Every intermediate of one attention call, with token labels, explained step by step.

:func:`trace_attention` runs :func:`attnlib.core.scaled_dot_product_attention`
on one sequence and keeps what happens on the way, as a frozen
:class:`AttentionTrace`: the raw scores ``Q Kᵀ``, the scale, the scaled
(and masked) scores, the weights and the output. Its weights and output are
the ones ``core`` returns, bit for bit; the intermediates are recomputed for
display only.

``AttentionTrace.explain(i)`` writes out query ``i``'s arithmetic as a reader
would do it by hand; ``AttentionTrace.table(stage)`` prints one stage as a
labelled matrix.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from attnlib import _validation as _v
from attnlib._table import Table
from attnlib.core import scale_for, scaled_dot_product_attention

__all__ = ["AttentionTrace", "trace_attention"]

_STAGES = ("Q", "K", "V", "scores", "scaled_scores", "weights", "output")
# The caption of each stage's table (the HTML view of AttentionTrace.table; the text has none).
_CAPTIONS = {
    "Q": "Q, the queries: one row per query token",
    "K": "K, the keys: one row per key token",
    "V": "V, the values: one row per key token",
    "scores": "scores Q Kᵀ: one row per query, one column per key",
    "scaled_scores": "scaled scores, the scores times the scale: one row per query, one column per key",
    "weights": "weights, the softmax of each row of scaled scores: one row per query, one column per key",
    "output": "output, the weights times V: one row per query token",
}

# explain() shows exp(s) of the scaled scores themselves unless the largest
# would print as more than this (then it shows exp(s - max), as the code does).
_MAX_READABLE_EXP = 1e6


def _fixed(x: float, decimals: int) -> str:
    """``x`` with exactly ``decimals`` decimals; ``-inf`` as ``-inf``; no ``-0.0000``."""
    if np.isneginf(x):
        return "-inf"
    s = f"{float(x):.{decimals}f}"
    if s.startswith("-") and float(s) == 0.0:
        s = s[1:]
    return s


def _compact(x: float, decimals: int) -> str:
    """An input number as a reader would write it: ``1.0``, ``0.5``, ``-0.25``, ``0.1235``."""
    s = _fixed(x, max(decimals, 1))
    if "." in s:
        s = s.rstrip("0")
        if s.endswith("."):
            s += "0"
    return s


def _paren(x: float, decimals: int) -> str:
    return f"({_compact(x, decimals)})"


def _vector(row: np.ndarray, fmt: Any, decimals: int) -> str:
    return "[" + ", ".join(fmt(float(x), decimals) for x in row) + "]"


@dataclass(frozen=True, eq=False, repr=False)
class AttentionTrace:
    """Every intermediate of ``softmax(Q Kᵀ · scale + mask) V`` for one sequence.

    Build one with :func:`trace_attention`. All arrays are read-only copies,
    and the dataclass is frozen: a trace is a value, not a state that a later
    cell could change.

    Attributes
    ----------
    tokens : tuple of str, length n_q
        Query labels.
    key_tokens : tuple of str, length n_k
        Key labels (the same as ``tokens`` for self-attention).
    Q : ndarray, shape (n_q, d_k)
    K : ndarray, shape (n_k, d_k)
    V : ndarray, shape (n_k, d_v)
    scores : ndarray, shape (n_q, n_k)
        Raw dot products ``Q @ K.T``.
    scale : float
        The factor applied to the scores (``1 / √d_k`` unless given).
    scaled_scores : ndarray, shape (n_q, n_k)
        ``scores * scale`` plus the additive float mask, if any; pairs that
        may not attend are ``-inf``.
    weights : ndarray, shape (n_q, n_k)
        Softmax of each row of ``scaled_scores``, exactly as returned by
        :func:`attnlib.core.scaled_dot_product_attention`.
    output : ndarray, shape (n_q, d_v)
        ``weights @ V``, exactly as returned by ``core``.
    mask : ndarray of bool, shape (n_q, n_k), or None
        True where query ``i`` may attend to key ``j``; None without a mask.

    Notes
    -----
    ``scaled_scores`` is computed as ``(Q @ K.T) * scale`` for display,
    while ``core`` scales ``Q`` before the product for speed; the two can
    differ in the last bit. ``weights`` and ``output`` always come from
    ``core``.
    """

    tokens: tuple[str, ...]
    key_tokens: tuple[str, ...]
    Q: np.ndarray  # (n_q, d_k)
    K: np.ndarray  # (n_k, d_k)
    V: np.ndarray  # (n_k, d_v)
    scores: np.ndarray  # (n_q, n_k)
    scale: float
    scaled_scores: np.ndarray  # (n_q, n_k)
    weights: np.ndarray  # (n_q, n_k)
    output: np.ndarray  # (n_q, d_v)
    mask: np.ndarray | None  # (n_q, n_k) or None

    def __post_init__(self) -> None:
        for name in ("Q", "K", "V", "scores", "scaled_scores", "weights", "output", "mask"):
            object.__setattr__(self, name, _v.readonly_copy(getattr(self, name)))
        object.__setattr__(self, "tokens", tuple(str(t) for t in self.tokens))
        object.__setattr__(self, "key_tokens", tuple(str(t) for t in self.key_tokens))
        object.__setattr__(self, "scale", float(self.scale))

    # -- sizes -------------------------------------------------------------
    @property
    def n_q(self) -> int:
        return int(self.Q.shape[0])

    @property
    def n_k(self) -> int:
        return int(self.K.shape[0])

    @property
    def d_k(self) -> int:
        return int(self.Q.shape[1])

    @property
    def d_v(self) -> int:
        return int(self.V.shape[1])

    def __repr__(self) -> str:
        masked = "" if self.mask is None else f", masked={int((~self.mask).sum())}"
        return (
            f"AttentionTrace(n_q={self.n_q}, n_k={self.n_k}, d_k={self.d_k}, d_v={self.d_v}, "
            f"scale={self.scale:.6g}{masked}, tokens={self.tokens!r})"
        )

    # -- helpers -----------------------------------------------------------
    def _index(self, i: int | str) -> int:
        valid = (
            f"valid indices are 0..{self.n_q - 1} (or -{self.n_q}..-1) "
            f"and labels {', '.join(repr(t) for t in self.tokens)}"
        )
        if isinstance(i, str):
            hits = [j for j, t in enumerate(self.tokens) if t == i]
            if not hits:
                raise KeyError(f"no query token {i!r}; {valid}")
            if len(hits) > 1:
                raise ValueError(
                    f"token {i!r} occurs at positions {hits}; pass the index instead"
                )
            return hits[0]
        if isinstance(i, (bool, np.bool_)) or not isinstance(i, numbers.Integral):
            raise TypeError(f"i must be an int index or a token label; got {type(i).__name__} {i!r}")
        if not -self.n_q <= i < self.n_q:
            raise IndexError(f"query index {i} is out of range for {self.n_q} queries; {valid}")
        return int(i) % self.n_q

    def _allowed(self, row: int) -> np.ndarray:
        if self.mask is None:
            return np.ones(self.n_k, dtype=bool)
        return self.mask[row]


    def _is_default_scale(self) -> bool:
        return self.scale == scale_for(self.d_k)

    # -- public ------------------------------------------------------------
    def explain_steps(self, i: int | str, decimals: int = 4) -> dict[str, list[str]]:
        """Query ``i``'s attention written out as one would compute it by hand, step by step.

        The steps :meth:`explain` prints, as data: the explorers show each on its own.

        Parameters
        ----------
        i : int or str
            Query index (negative counts from the end) or query token label.
        decimals : int
            Decimals of computed numbers. Inputs (Q, K, V entries and the raw
            dot products) print compactly: ``1.0``, ``0.5``, ``0.1235``.

        Returns
        -------
        dict
            Step number to the step's lines, its heading first: ``"0"`` (one line naming the query),
            then ``"1"`` the query vector, ``"2"`` each dot product term by term, ``"3"`` the scaling,
            ``"4"`` the exponentials, ``"5"`` their sum, ``"6"`` the weights and ``"7"`` the weighted
            sum of value rows; a query whose keys are all masked has ``"4-6"`` in place of 4 to 6.
            Masked keys stay in the lists, marked as masked, with weight 0. The printed weights and
            output are ``weights[i]`` and ``output[i]`` rounded to ``decimals``.

        Raises
        ------
        KeyError
            ``i`` is a label that is not a query token (the message lists them).
        IndexError
            ``i`` is an index out of range (the message lists the valid ones).
        ValueError
            ``i`` is a label that occurs more than once, or ``decimals < 0``.
        TypeError
            ``i`` is neither an int nor a str, or ``decimals`` is not an int.

        Examples
        --------
        >>> from attnlib.examples import cat_sat_on_mat
        >>> ex = cat_sat_on_mat()
        >>> tr = trace_attention(ex.Q, ex.K, ex.V, tokens=ex.tokens)
        >>> steps = tr.explain_steps("cat")
        >>> print(steps["2"][1])
          q·k[The] = (0.0)(0.0) + (2.0)(1.0) + (0.0)(0.0) + (1.0)(1.0) = 3.0
        >>> print(steps["3"][1])
          s[The] = 3.0 / √4 = 1.5000
        >>> print(steps["6"][1])
          w[The] = 4.4817 / 11.1327 = 0.4026
        """
        d = _v.check_decimals(decimals)
        r = self._index(i)
        tok, keys = self.tokens[r], self.key_tokens
        allowed = self._allowed(r)
        fx = lambda x: _fixed(float(x), d)  # noqa: E731 - computed numbers
        cp = lambda x: _compact(float(x), d)  # noqa: E731 - inputs, as a reader writes them
        kw = max(len(k) for k in keys)
        at = lambda j, fmt: fmt.format(keys[j]).ljust(len(fmt.format("")) + kw)  # noqa: E731 - aligned labels

        steps: dict[str, list[str]] = {
            "0": [f"Query {r} {tok!r}: attention over {self.n_k} keys, d_k = {self.d_k}, d_v = {self.d_v}"],
            "1": ["1. The query vector", f"  q = Q[{tok}] = {_vector(self.Q[r], _compact, d)}"],
        }

        def step(number: str, heading: str) -> list[str]:
            steps[number] = [f"{number}. {heading}"]
            return steps[number]

        lines = step("2", "Dot product with each key, term by term: the raw scores")
        for j in range(self.n_k):
            terms = " + ".join(f"({cp(a)})({cp(b)})" for a, b in zip(self.Q[r], self.K[j], strict=True))
            lines.append(f"  {at(j, 'q·k[{}]')} = {terms} = {cp(self.scores[r, j])}")

        # 3. scaling (and the additive mask, if any)
        if self._is_default_scale():
            root = f"√{self.d_k}"
            lines = step("3", f"Scale: divide by √d_k = {root} = {cp(math.sqrt(self.d_k))}")
            scaled = lambda j: f"{cp(self.scores[r, j])} / {root}"  # noqa: E731
        else:
            lines = step("3", f"Scale: multiply by the given scale {cp(self.scale)} (instead of 1/√d_k)")
            scaled = lambda j: f"{cp(self.scores[r, j])} × {cp(self.scale)}"  # noqa: E731
        scaled_only = self.scores[r] * self.scores.dtype.type(self.scale)
        with np.errstate(invalid="ignore"):
            bias = self.scaled_scores[r] - scaled_only  # (n_k,) the additive mask, -inf, or 0
        for j in range(self.n_k):
            if not allowed[j]:
                lines.append(f"  {at(j, 's[{}]')} = masked: {tok!r} may not attend to {keys[j]!r} (-inf)")
                continue
            plus = f" + ({cp(bias[j])}) from the mask" if bias[j] != 0 else ""
            lines.append(f"  {at(j, 's[{}]')} = {scaled(j)}{plus} = {fx(self.scaled_scores[r, j])}")

        if not allowed.any():
            step("4-6", "Every key is masked for this query: there is nothing to attend to.").append(
                "  attnlib gives all weights 0 and a zero output (as PyTorch does since 2.5; NaN before).")
            step("7", "Output").extend([
                f"  out[{tok}] = (no value row is added: every weight is 0)",
                f"  {' ' * len(f'out[{tok}]')} = {_vector(self.output[r], _fixed, d)}",
            ])
            return steps

        # 4. exponentials: of s itself when readable, else of s - max (as the code does)
        s = self.scaled_scores[r].astype(np.float64)
        peak = float(s[allowed].max())
        shifted = not (10.0 ** (1 - d) <= math.exp(min(peak, 700.0)) <= _MAX_READABLE_EXP)
        lines = step("4", "Exponentials")
        if shifted:
            lines.append(
                f"  The scaled scores are too large or too small to exponentiate legibly (max {fx(peak)}),"
            )
            lines.append(
                "  so, as in the code, the maximum is subtracted first: exp(s - max). This divides every"
            )
            lines.append("  exponential and their sum by the same exp(max), so the weights do not change.")
            shift = peak
            top = fx(peak) if peak >= 0 else f"({fx(peak)})"
        else:
            shift = 0.0
        with np.errstate(under="ignore"):
            e = np.where(allowed, np.exp(np.where(allowed, s - shift, 0.0)), 0.0)  # (n_k,)
        for j in range(self.n_k):
            if not allowed[j]:
                lines.append(f"  {at(j, 'exp(s[{}])')} = exp(-inf) = 0   (masked)")
            elif shifted:
                lines.append(f"  {at(j, 'exp(s[{}] - max)')} = exp({fx(s[j])} - {top}) = {fx(e[j])}")
            else:
                lines.append(f"  {at(j, 'exp(s[{}])')} = exp({fx(s[j])}) = {fx(e[j])}")
        # Every step is computed from unrounded numbers. Where redoing a step from the rounded
        # numbers printed before it gives another last digit, say so once, at that step.
        noted = False

        def note_slip(slipped: bool) -> None:
            nonlocal noted
            if slipped and not noted:
                noted = True
                lines.append("  (from unrounded values: by hand the last digit may differ)")

        printed_shift = float(fx(peak)) if shifted else 0.0
        note_slip(any(
            fx(math.exp(float(fx(s[j])) - printed_shift)) != fx(e[j]) for j in range(self.n_k) if allowed[j]
        ))

        # 5. sum
        total = float(e.sum())
        lines = step("5", "Their sum")
        added = " + ".join(fx(e[j]) for j in range(self.n_k) if allowed[j])
        lines.append(f"  sum = {added} = {fx(total)}")
        note_slip(fx(sum(float(fx(e[j])) for j in range(self.n_k) if allowed[j])) != fx(total))

        # 6. weights, printed from self.weights (core's numbers)
        w = self.weights[r]
        lines = step("6", "Weights: each exponential divided by the sum")
        slip = False
        for j in range(self.n_k):
            if not allowed[j]:
                lines.append(f"  {at(j, 'w[{}]')} = 0   (masked)")
                continue
            lines.append(f"  {at(j, 'w[{}]')} = {fx(e[j])} / {fx(total)} = {fx(w[j])}")
            slip |= _fixed(float(fx(e[j])) / float(fx(total)), d) != fx(w[j])

        # 7. weighted sum of the value rows
        lines = step("7", "Output: the weights times the value rows, added up")
        products = [
            (f"{fx(w[j])}×{_vector(self.V[j], _compact, d)}", keys[j])
            for j in range(self.n_k)
            if allowed[j]
        ]
        width = max(len(t) for t, _ in products)
        head = f"  out[{tok}] = "
        pad = " " * (len(head) - 2)
        for n, (term, key) in enumerate(products):
            lead = head if n == 0 else pad + "+ "
            lines.append(f"{lead}{term:<{width}}   (v[{key}])")
        masked_keys = [keys[j] for j in range(self.n_k) if not allowed[j]]
        if masked_keys:
            lines.append(f"{pad}  (masked, weight 0: {', '.join(masked_keys)})")
        lines.append(f"{pad}= {_vector(self.output[r], _fixed, d)}")
        by_hand = sum(float(fx(w[j])) * self.V[j].astype(np.float64) for j in range(self.n_k) if allowed[j])
        slip |= _vector(by_hand, _fixed, d) != _vector(self.output[r], _fixed, d)
        note_slip(slip)
        return steps

    def explain(self, i: int | str, decimals: int = 4) -> str:
        """Query ``i``'s attention written out as one would compute it by hand: :meth:`explain_steps`,
        one paragraph per step.

        Parameters
        ----------
        i : int or str
            As :meth:`explain_steps`.
        decimals : int
            As :meth:`explain_steps`.

        Returns
        -------
        str
            Seven numbered steps: (1) the query vector, (2) each dot product
            term by term, (3) the scaling, (4) the exponentials, (5) their
            sum, (6) the weights and (7) the weighted sum of value rows.

        Raises
        ------
        KeyError, IndexError, ValueError, TypeError
            As :meth:`explain_steps`.

        Examples
        --------
        >>> from attnlib.examples import cat_sat_on_mat
        >>> ex = cat_sat_on_mat()
        >>> tr = trace_attention(ex.Q, ex.K, ex.V, tokens=ex.tokens)
        >>> lines = tr.explain("cat").splitlines()
        >>> print(lines[6])
          q·k[The] = (0.0)(0.0) + (2.0)(1.0) + (0.0)(0.0) + (1.0)(1.0) = 3.0
        >>> print(lines[30])
          w[The] = 4.4817 / 11.1327 = 0.4026
        """
        return "\n\n".join("\n".join(lines) for lines in self.explain_steps(i, decimals).values())

    def table(self, stage: str, decimals: int = 4, *, rows: Sequence[int | str] | None = None) -> Table:
        """One stage of the computation as a labelled fixed-width matrix.

        Parameters
        ----------
        stage : {"Q", "K", "V", "scores", "scaled_scores", "weights", "output"}
        decimals : int
            Decimals of every entry.
        rows : sequence of int or str, optional
            The rows to show, in the order given: query token labels or query indices
            (negative counts from the end); for ``K`` and ``V``, key token labels or key indices.
            By default every row.

        Returns
        -------
        Table
            A ``str``: a header line, then one line per token: the row label
            followed by the entries. Columns are the key tokens for ``scores``,
            ``scaled_scores`` and ``weights``, and ``d0 d1 ...`` for ``Q``,
            ``K``, ``V`` and ``output``. Rows are the query tokens, except for
            ``K`` and ``V`` (key tokens). Masked scaled scores print as ``-inf``.
            In Jupyter and in the book it displays as an HTML table whose
            caption names the stage (:class:`attnlib._table.Table`).

        Raises
        ------
        TypeError
            ``decimals`` is not an integer, or ``rows`` is not a sequence of
            int and str (a single label must be wrapped: ``rows=["cat"]``).
        ValueError
            ``stage`` is not one of the stages (the message lists them),
            ``decimals < 0``, or ``rows`` is empty, repeats a row, or names a
            label or index that is not a row (or a label that occurs twice).

        Examples
        --------
        >>> from attnlib.examples import three_directions
        >>> ex = three_directions()
        >>> tr = trace_attention(ex.Q, ex.K, ex.V, tokens=ex.tokens)
        >>> print(tr.table("scores", decimals=2))
              A     B     C
        A  0.80  0.30  0.10
        B  0.50  0.50  0.50
        C  0.20  0.70  0.90
        >>> print(tr.table("scores", decimals=2, rows=["C", 0]))
              A     B     C
        C  0.20  0.70  0.90
        A  0.80  0.30  0.10
        """
        d = _v.check_decimals(decimals)
        if stage not in _STAGES:
            raise ValueError(f"unknown stage {stage!r}; valid stages are {', '.join(_STAGES)}")
        matrix = getattr(self, stage)
        labels = self.key_tokens if stage in ("K", "V") else self.tokens
        picked = _row_selection(rows, labels, "key" if stage in ("K", "V") else "query")
        matrix, row_labels = matrix[list(picked)], tuple(labels[i] for i in picked)
        if stage in ("scores", "scaled_scores", "weights"):
            cols = self.key_tokens
        else:
            cols = tuple(f"d{c}" for c in range(matrix.shape[1]))
        cells = [[_fixed(float(x), d) for x in row] for row in matrix]
        widths = [max(len(cols[c]), *(len(cell[c]) for cell in cells)) for c in range(len(cols))]
        label_w = max(len(t) for t in row_labels)
        out = [" " * label_w + "".join(f"  {h:>{w}}" for h, w in zip(cols, widths, strict=True))]
        for label, cell in zip(row_labels, cells, strict=True):
            entries = "".join(f"  {x:>{w}}" for x, w in zip(cell, widths, strict=True))
            out.append(f"{label:<{label_w}}{entries}")
        corner = "key" if stage in ("K", "V") else "query"
        return Table("\n".join(out), columns=(corner, *cols),
                     rows=[(label, *cell) for label, cell in zip(row_labels, cells, strict=True)],
                     caption=_CAPTIONS[stage], align=("left",) + ("right",) * len(cols))


def _row_selection(rows: Any, labels: tuple[str, ...], kind: str) -> tuple[int, ...]:
    """The indices of ``labels`` that ``rows`` (labels or indices) picks, in its order; all if None."""
    n = len(labels)
    if rows is None:
        return tuple(range(n))
    valid = f"valid rows are the {kind} labels {', '.join(repr(t) for t in labels)} or indices 0..{n - 1}"
    if isinstance(rows, (str, bytes)) or not isinstance(rows, (Sequence, np.ndarray)):
        raise TypeError(
            f"rows must be a sequence of {kind} labels or indices, e.g. rows=[0, 1] or "
            f"rows=[{labels[0]!r}]; got {type(rows).__name__} {rows!r}"
        )
    if len(rows) == 0:
        raise ValueError(f"rows is empty; pass None for every row, or name some; {valid}")
    picked: list[int] = []
    for r in rows:
        if isinstance(r, str):
            hits = [j for j, t in enumerate(labels) if t == r]
            if not hits:
                raise ValueError(f"rows names {r!r}, which is not a {kind} token; {valid}")
            if len(hits) > 1:
                raise ValueError(f"rows names {r!r}, which occurs at rows {hits}; pass the index instead")
            j = hits[0]
        elif isinstance(r, (bool, np.bool_)) or not isinstance(r, numbers.Integral):
            raise TypeError(f"rows must hold int indices or str labels; got {type(r).__name__} {r!r}")
        elif not -n <= int(r) < n:
            raise ValueError(f"rows has index {r}, out of range for {n} {kind} rows; {valid}")
        else:
            j = int(r) % n
        if j in picked:
            raise ValueError(f"rows picks {kind} row {j} ({labels[j]!r}) twice; name each row once")
        picked.append(j)
    return tuple(picked)


def _labels(tokens: Any, n_q: int, n_k: int) -> tuple[tuple[str, ...], tuple[str, ...]]:
    if tokens is None:
        queries = tuple(f"t{i}" for i in range(n_q))
        return queries, queries if n_k == n_q else tuple(f"k{j}" for j in range(n_k))
    if isinstance(tokens, (str, bytes)) or not isinstance(tokens, (Sequence, np.ndarray)):
        raise TypeError(
            f"tokens must be a sequence of {n_q} labels (one per query), e.g. a list or tuple of str; "
            f"got {type(tokens).__name__} {tokens!r}"
        )
    if len(tokens) != n_q:
        raise ValueError(f"tokens has {len(tokens)} labels but Q has n_q={n_q} queries (one label per query)")
    queries = tuple(str(t) for t in tokens)
    return queries, queries if n_k == n_q else tuple(f"k{j}" for j in range(n_k))


def trace_attention(
    Q: Any,
    K: Any,
    V: Any,
    tokens: Sequence[str] | None = None,
    scale: float | None = None,
    attn_mask: Any = None,
) -> AttentionTrace:
    """Run attention on one sequence and keep every intermediate.

    Parameters
    ----------
    Q : (n_q, d_k) array_like
        Queries of one sequence (no batch dimension).
    K : (n_k, d_k) array_like
        Keys; must share ``d_k`` with ``Q``.
    V : (n_k, d_v) array_like
        Values, one row per key.
    tokens : sequence of str, length n_q, optional
        Query labels. When ``n_k == n_q`` (self-attention) they label the keys
        too; otherwise keys are labelled ``k0, k1, ...``. Default
        ``t0, t1, ...``.
    scale : float, optional
        Factor applied to ``Q Kᵀ``; ``None`` means ``1 / √d_k``.
    attn_mask : (n_q, n_k) array_like, optional
        Broadcastable to ``(n_q, n_k)``. Boolean: True means "may attend".
        Float: added to the scaled scores, ``-inf`` forbids a pair.

    Returns
    -------
    AttentionTrace
        Its ``weights`` and ``output`` are exactly (bitwise) those of
        ``scaled_dot_product_attention(Q, K, V, attn_mask, scale=scale,
        return_weights=True)``; ``mask`` is the boolean "may attend" matrix
        (for a float mask: the entries that are not ``-inf``), or None.

    Raises
    ------
    TypeError
        Non-real inputs, a mask neither boolean nor float, a non-numeric
        ``scale``, or ``tokens`` that is not a sequence (a single string is
        refused).
    ValueError
        ``Q``, ``K`` or ``V`` not 2-D (batched inputs: trace one sequence at
        a time), shapes that do not fit, NaN or infinite inputs, a bad
        ``scale``, or ``tokens`` of the wrong length. Messages name the
        arguments and their shapes.

    Examples
    --------
    >>> from attnlib.examples import cat_sat_on_mat
    >>> ex = cat_sat_on_mat()
    >>> tr = trace_attention(ex.Q, ex.K, ex.V, tokens=ex.tokens)
    >>> tr
    AttentionTrace(n_q=5, n_k=5, d_k=4, d_v=4, scale=0.5, tokens=('The', 'cat', 'sat', 'on', 'mat'))
    >>> tr.weights[0].round(4)
    array([0.1095, 0.2976, 0.1805, 0.1805, 0.2318])
    >>> float(tr.scores[1, 0]), float(tr.scaled_scores[1, 0])
    (3.0, 1.5)
    """
    arrays = {name: _v.as_float_array(x, name) for name, x in (("Q", Q), ("K", K), ("V", V))}
    axes = {"Q": "(n_q, d_k)", "K": "(n_k, d_k)", "V": "(n_k, d_v)"}
    for name, arr in arrays.items():
        if arr.ndim != 2:
            hint = (
                f"; for a batch, trace one sequence at a time, e.g. {name}[b]"
                if arr.ndim > 2
                else ""
            )
            raise ValueError(
                f"trace_attention traces one sequence: {name} must be 2-D {axes[name]}; "
                f"got shape {arr.shape}{hint}"
            )
    Q, K, V = arrays["Q"], arrays["K"], arrays["V"]
    output, weights = scaled_dot_product_attention(
        Q, K, V, attn_mask, scale=scale, return_weights=True
    )  # (n_q, d_v), (n_q, n_k); core validates shapes, mask and scale
    n_q, d_k = Q.shape
    n_k = K.shape[0]
    query_tokens, key_tokens = _labels(tokens, n_q, n_k)
    scale = scale_for(d_k) if scale is None else float(scale)

    dtype = weights.dtype
    scores = Q.astype(dtype, copy=False) @ K.astype(dtype, copy=False).T  # (n_q, n_k)
    scaled_scores = scores * dtype.type(scale)  # (n_q, n_k)
    mask = None
    if attn_mask is not None:
        m = np.asarray(attn_mask)
        if m.dtype.kind == "b":
            mask = np.broadcast_to(m, (n_q, n_k))
            scaled_scores = np.where(mask, scaled_scores, -np.inf)
        else:
            scaled_scores = scaled_scores + np.broadcast_to(m.astype(dtype, copy=False), (n_q, n_k))
            mask = ~np.isneginf(scaled_scores)
    return AttentionTrace(
        tokens=query_tokens,
        key_tokens=key_tokens,
        Q=Q,
        K=K,
        V=V,
        scores=scores,
        scale=scale,
        scaled_scores=scaled_scores,
        weights=weights,
        output=output,
        mask=mask,
    )
