"""Reading a wrong answer: the precision it was given at, and where it first goes wrong.

:func:`attnlib.feedback.check` asks two questions of an answer before it names a mistake or gives up:

* :func:`given_decimals` and :func:`right_to_decimals`: how many decimals the answer gives, and whether
  it is the reference rounded to those decimals. A hand computation rounded to 2 decimals is right as
  far as it goes; it is told so, not taken for a misconception.
* :func:`locate`: when no named mistake fits, which part of the answer is off, without saying by how
  much or in which direction: the rows (queries) that are off, the entries that are off by name, and
  for an attention answer the first stage that is wrong (scores → scaled scores → weights → output),
  read from the answer itself (weights are a softmax of the scores: their logarithms give the scores
  back up to a constant, so a weights answer tells whether its scores or its factor was wrong).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["entry_decimals", "given_decimals", "required_decimals", "right_to_decimals", "locate"]

_MAX_DECIMALS = 8  # an answer with more decimals than this is a computed one, at full precision


def entry_decimals(answer: Any) -> np.ndarray | None:
    """The decimals each entry of an answer gives (``14`` gives 0, ``0.44`` gives 2), in its shape.

    ``None`` when an entry needs more than 8 decimals: a computed answer, at full precision.

    >>> entry_decimals([14, 0.44]).tolist()
    [0, 2]
    """
    a = np.asarray(answer, dtype=np.float64)
    out = np.zeros(a.shape, dtype=int)
    for idx, x in np.ndenumerate(a):
        if not np.isfinite(x):
            continue
        for d in range(_MAX_DECIMALS + 1):
            if abs(x - round(x, d)) <= 1e-9 * max(1.0, abs(x)) * 10.0**-d:
                out[idx] = d
                break
        else:
            return None
    return out


def given_decimals(answer: Any) -> int | None:
    """The number of decimals an answer gives: the most that any of its entries needs.

    ``None`` for an answer at full precision (an entry needs more than 8 decimals), as a computed
    answer is. ``0.31`` gives 2, ``[0.3, 0.25]`` gives 2, ``[1, 2]`` gives 0.

    Examples
    --------
    >>> given_decimals([0.31, 0.3, 0.305]), given_decimals(1 / 3), given_decimals(2.0)
    (3, None, 0)
    """
    each = entry_decimals(answer)
    return None if each is None else int(each.max(initial=0))


def required_decimals(atol: float) -> int:
    """The decimals a tolerance asks for: the fewest at which rounding stays within ``atol``.

    >>> required_decimals(5e-4), required_decimals(5e-3), required_decimals(1e-3)
    (3, 2, 3)
    """
    d = 0
    while 0.5 * 10.0**-d > atol * (1 + 1e-9):
        d += 1
    return d


def _half_unit(decimals: int) -> float:
    return 0.5 * 10.0**-decimals * (1 + 1e-9) + 1e-12


def right_to_decimals(answer: np.ndarray, reference: np.ndarray, decimals: int | None = None) -> bool:
    """Whether every entry of ``answer`` is the reference rounded to the decimals it gives (within half
    a unit of its last decimal: ``14`` for 14.22, ``0.4`` for 0.444), or to ``decimals`` if given."""
    a, r = np.asarray(answer, dtype=np.float64), np.asarray(reference, dtype=np.float64)
    if a.shape != r.shape or not np.isfinite(a).all():
        return False
    each = entry_decimals(a) if decimals is None else np.full(a.shape, decimals)
    if each is None:
        return False
    return bool(np.all(np.abs(a - r) <= 0.5 * 10.0**-each.astype(float) * (1 + 1e-9) + 1e-12))


def precision_radius(decimals: int | None) -> float:
    """How far an answer given at ``decimals`` may be from a value it was rounded from."""
    return 0.0 if decimals is None else _half_unit(decimals)


# --------------------------------------------------------------------------- where it goes wrong
def _listing(names: Sequence[str], limit: int = 6) -> str:
    names = list(names)
    shown = names[:limit]
    text = ", ".join(shown[:-1]) + (" and " if len(shown) > 1 else "") + shown[-1] if shown else ""
    return text + (f" (and {len(names) - limit} more)" if len(names) > limit else "")


def _off(a: np.ndarray, r: np.ndarray, tol: float) -> np.ndarray:
    with np.errstate(invalid="ignore"):
        return ~(np.abs(a - r) <= tol * (1 + 1e-9))


def _quoted(tokens: Sequence[str] | None, idx: Any, word: str) -> list[str]:
    """``'token'`` for each index in ``idx`` (ints or an integer array), or ``word i`` without tokens."""
    positions = [int(i) for i in idx]
    if tokens is not None and all(i < len(tokens) for i in positions):
        return [f"'{tokens[i]}'" for i in positions]
    return [f"{word} {i}" for i in positions]


def _weights_row_stage(a: np.ndarray, stages: dict[str, Any], row: int, tol: float) -> str:
    """Which stage a wrong row of weights first goes wrong at, from the logarithms of its weights."""
    raw = np.asarray(stages["scores"])[row]
    scaled = np.asarray(stages["scaled"])[row]
    ref = np.asarray(stages["weights"])[row]
    keys = stages.get("tokens")
    live = ref > 0  # keys a mask leaves visible
    if np.any(a[~live] != 0):
        return ("Weights fall on keys the mask hides: the masking (before the softmax) is the first step "
                "to redo.")
    if np.any(a[live] <= 0):
        return ("A visible key has a weight of 0 or below, and e^x > 0 for every score: the softmax step "
                "(exponentials, then the division by their sum) is the first to redo.")
    logs = np.log(a[live])
    z, s = scaled[live], raw[live]
    if logs.size >= 2 and np.ptp(s) > 0:
        sc, lc = s - s.mean(), logs - logs.mean()
        factor = float(sc @ lc / (sc @ sc))
        if np.max(np.abs(lc - factor * sc)) <= 0.02 and factor > 0:
            right = float(np.ptp(z) / np.ptp(s))
            if math.isclose(factor, right, rel_tol=0.02):
                return ("Your method looks right: your weights are a softmax of this row's scores with "
                        "(nearly) the right factor. The difference comes from rounding on the way (of √d_k, "
                        "of e^x or of the sum): keep 4 decimals in every intermediate step.")
            if math.isclose(factor, right, rel_tol=0.1):
                return ("Your weights are a softmax of this row's raw scores with a factor a little off the "
                        "exercise's: if you used the right one, rounding √d_k or e^x on the way is the "
                        "likely cause; keep 4 decimals in every intermediate step.")
            return ("Your weights are a softmax of this row's raw scores times one factor, so the scores "
                    "are right; the factor is not the exercise's: the scaling is the first step to redo.")
    shift = logs - z
    log_tol = max(0.02, 4 * tol / max(ref[live].min(), 1e-3))  # a weight's tolerance, in log space
    bad = np.flatnonzero(live)[np.abs(shift - np.median(shift)) > log_tol]
    if bad.size:
        return (f"Your weights are not a softmax of this row's scores at any one factor: the scores with "
                f"{_listing(_quoted(keys, bad, 'key'))} are the first to recompute (q·k, then the scaling).")
    return "Recompute the softmax of the scaled scores step by step."


def _output_row_stage(
    a: np.ndarray, stages: dict[str, Any], row: int, tol: float, weights_label: str | None
) -> str:
    ref_w = np.asarray(stages["weights"])[row]
    V = np.asarray(stages["V"])
    visible = V[ref_w > 0] if np.any(ref_w > 0) else V
    lo, hi = visible.min(axis=0), visible.max(axis=0)
    outside = np.flatnonzero((a < lo - tol) | (a > hi + tol))
    if outside.size:
        cols = _listing([f"d{j}" for j in outside])
        return (f"Entry {cols} of your output lies outside the range of its column of V, and an output is a "
                "weighted average of the value rows (weights of at least 0 that sum to 1): the weights are "
                "the first stage to recompute.")
    off = np.flatnonzero(_off(a, np.asarray(stages["output"])[row], tol))
    where = _listing([f"d{j}" for j in off])
    check_w = (f"with check({weights_label!r}, ...)" if weights_label else
               "(each row sums to 1, a masked key gets 0)")
    return (f"Entries {where} are off. Check the row's weights first {check_w}; if they are right, the "
            "product A V is the step to redo: entry d_j sums weight × value over the keys, in column j of V.")


def locate(
    answer: np.ndarray,
    reference: np.ndarray,
    *,
    tol: float,
    names: Sequence[str] | None = None,
    stages: dict[str, Any] | None = None,
    row: int | None = None,
    sibling: str | None = None,
) -> str:
    """Say which part of a wrong answer is off, never by how much or in which direction.

    Parameters
    ----------
    answer, reference : ndarray
        The same shape.
    tol : float
        The tolerance an entry is judged with (0 for whole numbers).
    names : sequence of str, optional
        Names of the entries along the first axis ("additions", "key 2", ...).
    stages : dict, optional
        For an attention answer: ``what`` (``"scores"``, ``"scaled"``, ``"weights"`` or ``"output"``)
        and the full ``scores``, ``scaled``, ``weights``, ``output``, ``V`` and ``tokens`` of the call.
    row : int, optional
        The row of the stages an answer of one row is.
    sibling : str, optional
        The label that checks the stage before this one (for an output: the weights).

    Returns
    -------
    str
        One or two sentences for the hint.

    Examples
    --------
    >>> locate(np.array([60, 96, 12]), np.array([60, 96, 15]), tol=0, names=("mults", "adds", "cmps"))
    'Off: cmps; the other entries are right.'
    """
    a = np.asarray(answer, dtype=np.float64)
    r = np.asarray(reference, dtype=np.float64)
    off = _off(a, r, tol)
    if stages is not None:
        what = stages["what"]
        tokens = stages.get("tokens")
        first_row: int | None
        if a.ndim == 2 and row is None:
            bad_rows = [i for i in range(a.shape[0]) if off[i].any()]
            lead = ""
            if len(bad_rows) < a.shape[0]:
                lead = (f"The rows of {_listing(_quoted(tokens, bad_rows, 'query'))} are off; the others are "
                        "right. ")
            first = bad_rows[0]
            a_row, first_row = a[first], first
        else:
            lead, a_row, first_row = "", a, row
        if first_row is None:
            return lead.strip()
        if what == "weights":
            return lead + _weights_row_stage(a_row, stages, first_row, tol)
        if what == "output":
            return lead + _output_row_stage(a_row, stages, first_row, tol, sibling)
        off_row = np.flatnonzero(_off(a_row, np.asarray(stages[what])[first_row], tol))
        keys = _listing(_quoted(tokens, off_row, "key"))
        if what == "scaled":
            raw = np.asarray(stages["scores"])[first_row]
            if np.ptp(raw) > 0 and np.allclose(a_row, raw * (a_row @ raw) / (raw @ raw), atol=tol):
                return lead + ("Your numbers are the raw scores times one factor, so the scores are right; "
                               "the factor is the step to redo.")
            return lead + f"The scaled scores with {keys} are off: recompute q·k for those keys, then scale."
        return lead + f"The scores with {keys} are off: recompute q·k for those keys."
    if a.ndim >= 2 and names is None:
        groups = [tuple(int(i) for i in idx) for idx in np.argwhere(off.reshape(-1, a.shape[-1]).any(axis=1))]
        lead_shape = a.shape[:-1]
        positions = [[int(i) for i in np.unravel_index(g[0], lead_shape)] for g in groups]
        text = _listing(["row " + ("[" + ", ".join(str(i) for i in rw) + "]" if len(rw) > 1
                                   else str(rw[0])) for rw in positions])
        total = int(np.prod(lead_shape))
        return f"Off: {text}" + ("; the other rows are right." if len(groups) < total else ".")
    if names is not None:
        flat = off.reshape(off.shape[0], -1).any(axis=1) if off.ndim > 1 else off
        idx = np.flatnonzero(flat)
        label = [names[i] if i < len(names) else f"entry {i}" for i in map(int, idx)]
        if a.size == 1 or len(idx) == np.size(flat):
            return ""
        return f"Off: {_listing(label)}; the other entries are right."
    idx = np.flatnonzero(off.ravel())
    if a.size == 1 or idx.size == a.size:
        return ""
    return f"Off: {_listing([f'entry {i}' for i in idx])}; the other entries are right."
