"""The registry of the book's exercises: an :class:`Exercise` per checkable answer, and the builders
the chapter modules beside this one register theirs with."""

from __future__ import annotations

import difflib
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from attnlib import examples as _examples
from attnlib.core import causal_mask
from attnlib.misconceptions import (
    Candidates,
    RawCandidates,
    _attention_candidates,
)
from attnlib.trace import trace_attention

__all__ = ["EXERCISES", "NOT_APPLICABLE", "Exercise", "exercise", "form_mistakes", "shared_coverage"]


# --------------------------------------------------------------------------- registry
@dataclass(frozen=True)
class Exercise:
    """One checkable answer of an exercise: what to submit and how it is judged.

    Attributes
    ----------
    label : str
        The exercise's label in the book, with ``:part`` when it has several answers.
    chapter : str
        The notebook it belongs to, e.g. ``"03_worked_examples"``.
    prompt : str
        What the learner computes, in one or two sentences.
    answer_form : str
        What to pass as ``answer`` (how many numbers, in which order, which shape).
    tolerance : str
        How close an answer must be, in words ("to 3 decimals").
    kind : {"real", "integer", "mask", "open"}
        Real numbers compared within ``atol``; whole numbers compared exactly; a boolean
        "may attend" mask (bool, 0/1 or additive 0/−inf); or an open question with several
        right answers, judged by ``judge``.
    reference : callable
        ``reference()`` computes a right answer from the exercise's inputs, at call time (for the
        checks, the tests and instructors; a learner who calls it skips the exercise).
    wrong_answers : callable
        ``wrong_answers()`` returns ``[(misconception key, array), ...]``, the classic wrong
        answers recomputed from the same inputs.
    atol : float
        Absolute tolerance of a ``"real"`` answer.
    row : int, optional
        The answer is row ``row`` of a matrix with ``n_rows`` rows; the whole matrix is
        accepted too, and its row ``row`` is checked.
    n_rows : int, optional
    mask_shape : tuple of int, optional
        For masks: the shape the mask must broadcast to (it is compared after broadcasting).
    rows_sum_to_one : bool
        The answer holds attention weights: each row (or the single row) must sum to 1.
    names : tuple of str, optional
        Names of the entries along the first axis, used in messages.
    context : callable
        Returns the fields that misconception messages use (``d_k``, ``n``, ...).
    judge : callable, optional
        For ``"open"`` exercises: ``judge(answer) -> (correct, misconception key or None, text)``.
    form : str
        What kind of answer this is (``"attention-weights"``, ``"counts"``, ``"bytes"``, ``"mask"``,
        ...). The mistakes of one form are shared: every exercise of a form is given the form's
        generic wrong answers (:func:`form_mistakes`), and a test holds that a mistake one exercise of a
        form names, every other exercise of that form names too where it applies.
    also_right : callable
        For masks: ``also_right()`` lists masks that are right too (hiding the padded queries' rows as
        well as the padded keys: attnlib gives such an empty row zero weights).
    stages : callable, optional
        For an answer that is one stage of an attention call: ``stages()`` returns the stage
        (``what``), the full ``scores``, ``scaled``, ``weights``, ``output``, ``V`` and ``tokens``, so
        that a wrong answer can be told which stage it first goes wrong at.
    """

    label: str
    chapter: str
    prompt: str
    answer_form: str
    tolerance: str
    kind: str
    reference: Callable[[], np.ndarray] = field(repr=False)
    wrong_answers: Callable[[], Candidates] = field(repr=False)
    atol: float = 5e-4
    row: int | None = None
    n_rows: int | None = None
    mask_shape: tuple[int, ...] | None = None
    rows_sum_to_one: bool = False
    names: tuple[str, ...] | None = None
    context: Callable[[], dict[str, Any]] = field(default=dict, repr=False)
    judge: Callable[[np.ndarray], tuple[bool, str | None, str]] | None = field(default=None, repr=False)
    form: str = ""
    stages: Callable[[], dict[str, Any]] | None = field(default=None, repr=False)
    also_right: Callable[[], list[np.ndarray]] = field(default=list, repr=False)

    def all_wrong_answers(self) -> Candidates:
        """The exercise's own wrong answers, then its form's generic ones (:func:`form_mistakes`)."""
        own = [(k, np.asarray(v)) for k, v in self.wrong_answers()]
        return own + form_mistakes(self, own)

    def detects(self) -> tuple[str, ...]:
        """The keys of the misconceptions this exercise can tell apart from a right answer.

        A recomputed wrong answer counts only if it differs from the reference by more than
        four times the tolerance (for masks and whole numbers: at all), so a right answer is
        never taken for it. Weights add the row and column checks.

        Examples
        --------
        >>> "scale-d_k" in exercise("attention-weights").detects()
        True
        """
        ref = np.asarray(self.reference())
        keys: list[str] = []
        for key, arr in self.all_wrong_answers():
            if key not in keys and _distinguishable(self, np.asarray(arr), ref):
                keys.append(key)
        if self.rows_sum_to_one:
            if "not-normalised" not in keys:
                keys.append("not-normalised")
            if "wrong-axis" not in keys and ref.ndim == 2 and not np.allclose(ref.sum(axis=0), 1):
                keys.append("wrong-axis")  # a column-normalised answer is caught by the column check
        return tuple(keys)


def _mask_form_mistakes(ref: np.ndarray) -> Candidates:
    """The misreadings any mask can suffer, built from the right mask: rows and columns swapped, the
    diagonal left out, one key ahead allowed (keys the mask hides from everyone stay hidden)."""
    ref = np.asarray(ref, dtype=bool)
    n_q, n_k = ref.shape[-2:]
    eye = np.eye(n_q, n_k, dtype=bool)
    ahead = np.eye(n_q, n_k, k=1, dtype=bool) & ref.any(axis=-2, keepdims=True)
    out: Candidates = []
    if n_q == n_k:
        out.append(("mask-transposed", np.swapaxes(ref, -1, -2)))
    out += [("mask-diagonal-excluded", ref & ~eye), ("mask-one-ahead", ref | ahead)]
    return out


def _bytes_form_mistakes(ref: np.ndarray, itemsize: int) -> Candidates:
    """The slips of any answer in bytes: another number format, or units other than bytes."""
    ref = np.asarray(ref, dtype=np.float64)
    out: Candidates = []
    for size, key in ((4, "bytes-float32"), (8, "bytes-float64"), (2, "bytes-16bit")):
        if size != itemsize:
            out.append((key, ref * size / itemsize))
    out.append(("bytes-elements", ref / itemsize))
    for unit in (2**20, 2**30, 10**6, 10**9):
        out.append(("bytes-units", ref / unit))
    for units in ((2**20, 2**30, 2**40), (10**6, 10**9, 10**12)):  # binary, then decimal
        readable = [x / next((u for u in units[::-1] if x >= u), units[0]) for x in ref.ravel()]
        out.append(("bytes-units", np.reshape(readable, ref.shape)))
    return out


def form_mistakes(ex: Exercise, own: Candidates) -> Candidates:
    """The generic wrong answers of ``ex``'s answer form that its own list does not already hold.

    Every mask is offered its transpose, its diagonal left out and one key ahead allowed; every answer
    in bytes the other number formats and other units. A generic answer equal to one of the exercise's
    own (which has the more specific message) is left out.

    Examples
    --------
    >>> [k for k, _ in form_mistakes(exercise("causal-mask"), [])]
    ['mask-transposed', 'mask-diagonal-excluded', 'mask-one-ahead']
    """
    ref = np.asarray(ex.reference())
    generic: Candidates = []
    if ex.names is not None and ex.kind in ("real", "integer") and ref.ndim >= 1 and len(ref) >= 2:
        generic.append(("order-swapped", ref[::-1]))  # the entries in the reverse order
        if ref.ndim == 2 and ref.shape[1] == 2:
            generic.append(("order-swapped", ref[:, ::-1]))  # pairs given the other way round
    if ex.form == "mask":
        generic += _mask_form_mistakes(np.broadcast_to(ref, ex.mask_shape) if ex.mask_shape else ref)
    elif ex.form == "bytes":
        generic += _bytes_form_mistakes(ref, int(ex.context().get("itemsize", 2)))
    if not generic:
        return []
    seen = [np.asarray(a) for _, a in own] + [ref]

    def same(a: np.ndarray, b: np.ndarray) -> bool:
        if ex.kind == "mask":
            shape = ex.mask_shape
            return np.array_equal(_broadcast_mask(a, shape), _broadcast_mask(b, shape))
        return a.shape == b.shape and bool(np.allclose(a, b, rtol=1e-9, atol=0))

    out: Candidates = []
    for key, arr in generic:
        if not any(same(arr, s) for s in seen):
            out.append((key, arr))
            seen.append(arr)
    return out


def _distance(wrong: np.ndarray, ref: np.ndarray) -> float:
    """Largest absolute difference; inf for other shapes or NaN where the other has a number."""
    if wrong.shape != ref.shape:
        return math.inf
    with np.errstate(invalid="ignore"):
        diff = np.abs(wrong.astype(np.float64) - ref.astype(np.float64))
    both_nan = np.isnan(wrong.astype(np.float64)) & np.isnan(ref.astype(np.float64))
    diff = np.where(both_nan | (wrong.astype(np.float64) == ref.astype(np.float64)), 0.0, diff)  # same inf
    return math.inf if np.isnan(diff).any() else float(diff.max())


def _distinguishable(ex: Exercise, wrong: np.ndarray, ref: np.ndarray, factor: float = 2.5) -> bool:
    """Whether a wrong answer is more than ``factor`` tolerances from the reference.

    With the default 2.5, an answer that makes the mistake and is rounded to the stated
    decimals (off by up to one tolerance) is still named; see :func:`_match_radius`.
    """
    if ex.kind == "mask":
        return not np.array_equal(_broadcast_mask(wrong, ex.mask_shape), _broadcast_mask(ref, ex.mask_shape))
    if ex.kind == "open":
        return True
    return _distance(wrong, ref) > (0 if ex.kind == "integer" else factor * ex.atol)


def _match_radius(ex: Exercise, cand: np.ndarray, ref: np.ndarray) -> float:
    """How close an answer must be to a recomputed wrong answer to be named after it.

    Two tolerances, but never more than 0.4 of the wrong answer's distance from the right one,
    so an answer is never named after a mistake it is not closer to than to the right answer.
    """
    return min(2 * ex.atol, 0.4 * _distance(cand, ref))


def _broadcast_mask(m: np.ndarray, shape: tuple[int, ...] | None) -> np.ndarray:
    return np.broadcast_to(m, shape) if shape is not None else m


_DEC3 = "to 3 decimals (within 0.0005)"
_DEC2 = "to 2 decimals (within 0.005)"
_EXACT = "exactly (whole numbers)"
_MASK = "exactly; a mask may be boolean (True = may attend), 0/1, or additive (0 and -inf)"
#: Every checkable answer, by label (filled by the chapter modules, then :func:`sort_by_chapter`).
#:
#: :meta hide-value:
EXERCISES: dict[str, Exercise] = {}


def _register(ex: Exercise) -> None:
    if ex.label in EXERCISES:
        raise ValueError(f"two exercises have the label {ex.label!r}")
    EXERCISES[ex.label] = ex


def sort_by_chapter() -> None:
    """Order :data:`EXERCISES` by chapter (reading order), keeping each chapter's registration order."""
    ordered = sorted(EXERCISES.values(), key=lambda ex: ex.chapter)
    EXERCISES.clear()
    EXERCISES.update((ex.label, ex) for ex in ordered)


def _fmt_num(x: float) -> str:
    """A number for a message: whole numbers as integers, others with at most 4 decimals."""
    x = float(x)
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    if x == round(x) and abs(x) < 1e15:
        return f"{round(x):,}" if abs(x) >= 1e4 else str(round(x))
    if abs(x) >= 1e4:
        return f"{x:.4g}"
    return f"{round(x, 4):.4f}".rstrip("0").rstrip(".")


def _ctx_attention(Q: np.ndarray, K: np.ndarray, V: np.ndarray) -> dict[str, Any]:
    d_k, n = int(K.shape[1]), int(K.shape[0])
    return {"d_k": d_k, "sqrt_d_k": _fmt_num(math.sqrt(d_k)), "n": n,
            "sqrt_n": _fmt_num(math.sqrt(n)), "d_v": int(V.shape[1])}


def _cat() -> tuple[np.ndarray, np.ndarray, np.ndarray, tuple[str, ...]]:
    ex = _examples.cat_sat_on_mat()
    return ex.Q, ex.K, ex.V, ex.tokens


def _first_four(
    Q: np.ndarray, K: np.ndarray, V: np.ndarray, tokens: tuple[str, ...]
) -> tuple[np.ndarray, np.ndarray, np.ndarray, tuple[str, ...]]:
    return Q[:4], K[:4], V[:4], tokens[:4]


def _attention_exercise(
    label: str,
    chapter: str,
    prompt: str,
    answer_form: str,
    inputs: Callable[[], tuple[np.ndarray, np.ndarray, np.ndarray, Any]],
    what: str,
    *,
    scale: float | None = None,
    causal: bool = False,
    mask: Callable[[int], np.ndarray] | None = None,
    row: int | None = None,
    transform: Callable[[np.ndarray], np.ndarray] | None = None,
    extra: Callable[[], Candidates] | None = None,
) -> Exercise:
    """An exercise whose answer is (a row of) the scores, scaled scores, weights or output of one call."""

    def parts() -> tuple[np.ndarray, np.ndarray, np.ndarray, Any, Any]:
        Q, K, V, tokens = inputs()
        m = causal_mask(Q.shape[0], K.shape[0]) if causal else (mask(Q.shape[0]) if mask else None)
        return Q, K, V, tokens, m

    def pick(arr: np.ndarray) -> np.ndarray:
        arr = np.asarray(arr)
        if transform is not None:
            arr = transform(arr)
        return arr if row is None else arr[row]

    def reference() -> np.ndarray:
        Q, K, V, tokens, m = parts()
        tr = trace_attention(Q, K, V, tokens=tokens, scale=scale, attn_mask=m)
        full = {"scores": tr.scores, "scaled": tr.scaled_scores, "weights": tr.weights,
                "output": tr.output}[what]
        return pick(full)

    def wrong_answers() -> Candidates:
        Q, K, V, _, m = parts()
        cands = _attention_candidates(Q, K, V, what=what, scale=scale, causal=causal,
                                      mask=None if causal else m)
        # a transformed answer (a change, a sum) is not a weight matrix: its messages would not fit it
        out = [(key, pick(arr)) for key, arr in cands if not (transform and key == "weights-transposed")]
        return (extra() if extra else []) + out  # the exercise's own mistakes are the more specific

    def context() -> dict[str, Any]:
        Q, K, V, _, _ = parts()
        return _ctx_attention(Q, K, V)

    def stages() -> dict[str, Any]:
        Q, K, V, tokens, m = parts()
        tr = trace_attention(Q, K, V, tokens=tokens, scale=scale, attn_mask=m)
        return {"what": what, "scores": tr.scores, "scaled": tr.scaled_scores, "weights": tr.weights,
                "output": tr.output, "V": V, "tokens": tokens}

    full_rows = inputs()[0].shape[0]
    return Exercise(
        label=label, chapter=chapter, prompt=prompt, answer_form=answer_form, tolerance=_DEC3,
        kind="real", reference=reference, wrong_answers=wrong_answers, row=row,
        n_rows=full_rows if row is not None else None,
        rows_sum_to_one=(what == "weights" and transform is None), context=context,
        form=f"attention-{what}" if transform is None else "", stages=None if transform else stages,
    )


def _scalar_exercise(
    label: str, chapter: str, prompt: str, answer_form: str, reference: Callable[[], Any],
    wrong_answers: Callable[[], RawCandidates], *, kind: str = "real", atol: float = 5e-4,
    tolerance: str | None = None, names: tuple[str, ...] | None = None, form: str = "",
    context: Callable[[], dict[str, Any]] = dict,
) -> Exercise:
    """An exercise with a number or a short list of numbers as answer."""
    if tolerance is None:
        tolerance = _EXACT if kind == "integer" else _DEC3 if atol == 5e-4 else _DEC2
    return Exercise(label=label, chapter=chapter, prompt=prompt, answer_form=answer_form,
                    tolerance=tolerance, kind=kind,
                    reference=lambda: np.asarray(reference()),
                    wrong_answers=lambda: [(k, np.asarray(v)) for k, v in wrong_answers()],
                    atol=atol, names=names, form=form, context=context)


#: Mistakes of an answer form that one of its exercises cannot show, with the reason (label, key) -> why.
NOT_APPLICABLE: dict[tuple[str, str], str] = {
    ("qkv-ex-shapes:self", "shapes-one-output-per-key"): "n_q = n_k = 5: one output per key is one per query",
    ("qkv-ex-shapes:cross", "shapes-w-transposed"): "this part asks for no projection's shape",
    ("cx-ex-kv-memory", "bytes-16bit"): "the format is 16-bit already",
}


def shared_coverage(ex: Exercise) -> dict[str, str | None]:
    """For each mistake shared by ``ex``'s form: the key ``check`` names it with in ``ex``, or None.

    A shared mistake is named under its own key, or under a more specific key of the exercise whose
    wrong answer is the same (a transposed causal mask is "causal mask flipped"). Mistakes listed in
    :data:`NOT_APPLICABLE` for ``ex`` are left out.
    """
    from attnlib.misconceptions import MISCONCEPTIONS  # the registry's data, loaded with it

    shared = [k for k, m in MISCONCEPTIONS.items() if ex.form and ex.form in m.forms
              and (ex.label, k) not in NOT_APPLICABLE]
    own = {k: np.asarray(a) for k, a in ex.wrong_answers()}
    generic = dict(form_mistakes(ex, []))
    detected = ex.detects()
    ref = np.asarray(ex.reference())
    out: dict[str, str | None] = {}
    for key in shared:
        if key in detected:
            out[key] = key
            continue
        arr = generic.get(key)
        named = None
        if arr is not None:
            for k, a in own.items():
                if k in detected and a.shape == arr.shape and np.array_equal(
                        _broadcast_mask(a, ex.mask_shape) if ex.kind == "mask" else a,
                        _broadcast_mask(arr, ex.mask_shape) if ex.kind == "mask" else arr):
                    named = k
                    break
            if named is None and not _distinguishable(ex, arr, ref):
                named = "(the right answer)"
        out[key] = named
    return out


def exercise(label: str) -> Exercise:
    """The registry entry of ``label``: what to submit, how it is checked, which mistakes it names.

    Parameters
    ----------
    label : str
        A key of :data:`EXERCISES`, e.g. ``"worked-ex-mat:weights"``.

    Returns
    -------
    Exercise

    Raises
    ------
    TypeError
        ``label`` is not a string.
    ValueError
        No exercise has that label; the message lists the closest labels.

    Examples
    --------
    >>> print(exercise("worked-ex-mat:weights").answer_form)
    5 numbers: the weights of 'mat' on The, cat, sat, on, mat (the whole 5-row matrix is accepted too).
    """
    if not isinstance(label, str):
        raise TypeError(f"label must be a string such as 'worked-ex-mat:weights'; got {type(label).__name__}")
    if label in EXERCISES:
        return EXERCISES[label]
    close = difflib.get_close_matches(label, list(EXERCISES), n=5, cutoff=0.5)
    same_stem = [k for k in EXERCISES if k.split(":")[0] == label.split(":")[0]]
    hint = close or same_stem
    raise ValueError(
        f"no exercise with label {label!r}"
        + (f"; did you mean {', '.join(repr(h) for h in hint)}?" if hint else "")
        + " (all labels: attnlib.exercises.EXERCISES)"
    )
