"""Checking an answer: tell a learner whether it is right and, if not, what went wrong.

``check(label, answer)`` compares a learner's answer to one of the book's exercises with a
reference that is **computed at check time** from the exercise's inputs (the book's examples,
:func:`~attnlib.trace.trace_attention`, :func:`~attnlib.core.causal_mask`, the counting functions of
:mod:`attnlib.counts`, ...). Nothing here stores an answer: the registry holds the inputs,
a sentence saying what to submit, and functions.

An answer is read at its own precision first: one that is the reference rounded to the decimals it
gives, fewer than the check asks for, is told so ("right to 2 decimals; this check wants 3") and never
taken for a mistake. On a wrong answer it recomputes the classic wrong answers from the same inputs
(scaled by ``d_k`` instead of ``√d_k``, no scaling, softmax over the wrong axis, ``K`` not
transposed, no max subtraction, weights that do not sum to 1, the weights instead of ``weights · V``,
a causal mask flipped or shifted by one, ``√n`` instead of ``√d_k``, the mistakes every exercise of
the same answer form shares (:func:`attnlib.exercises.form_mistakes`), two of them together, and some
that belong to one exercise) and names the one the answer is closer to than to the right answer, at
the answer's precision. Otherwise it says where the answer first goes wrong (the stage, or the rows
and entries that are off; :func:`attnlib.diagnosis.locate`), never by how much.

Malformed answers (``...``, ``None``, text, a dict, NaN, a wrong shape) get a
message, never a traceback; only a bad label raises (``ValueError`` listing the closest
labels, ``TypeError`` for a non-string), because it is a mistake in the calling code, not in
the answer.

The result is a :class:`Feedback`, which Jupyter shows as Markdown and prints as plain
text; its text is deterministic (numbers rounded to 4 decimals), so stored notebook outputs
compare equal on any machine.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from attnlib.diagnosis import (
    entry_decimals,
    given_decimals,
    locate,
    precision_radius,
    required_decimals,
    right_to_decimals,
)
from attnlib.exercises import EXERCISES, Exercise, exercise
from attnlib.exercises._registry import _distance, _distinguishable, _fmt_num, _match_radius
from attnlib.misconceptions import MISCONCEPTIONS

__all__ = ["Feedback", "check"]


# --------------------------------------------------------------------------- feedback
@dataclass(frozen=True)
class Feedback:
    """The verdict on one answer, shown as Markdown in Jupyter and as plain text elsewhere.

    ``bool(feedback)`` is True only for a right answer, so ``assert check(...)`` works in a
    grading script.

    Attributes
    ----------
    label : str
    status : {"correct", "imprecise", "incorrect", "invalid", "unanswered"}
        Right; right to the decimals it gives but fewer than the check asks; a well-formed wrong
        answer; an answer of the wrong kind or shape; ``...``.
    message : str
        What is right or wrong, deterministic (numbers rounded to 4 decimals).
    misconception : str, optional
        The key in :data:`~attnlib.misconceptions.MISCONCEPTIONS` of the mistake the answer matches.
    hint : str
    also : tuple of str
        Further mistakes the answer shows together with ``misconception`` (two slips in one count).

    Examples
    --------
    >>> fb = check("sc-ex-sigma", "0.5")
    >>> fb.status, fb.misconception, bool(fb)
    ('invalid', None, False)
    >>> print(fb)
    ✗ Cannot check this answer
    Your answer is text ('0.5'), not numbers. Expected 1 number: α. Remove the quotes.
    """

    label: str
    status: str
    message: str
    misconception: str | None = None
    hint: str = ""
    also: tuple[str, ...] = ()

    @property
    def correct(self) -> bool:
        return self.status == "correct"

    def __bool__(self) -> bool:
        return self.correct

    def _headline(self) -> str:
        return {"correct": "✓ Correct", "imprecise": "≈ Right so far", "incorrect": "✗ Not yet",
                "invalid": "✗ Cannot check this answer", "unanswered": "… Not answered yet"}[self.status]

    def _title(self) -> str:
        if self.misconception is not None:
            names = [MISCONCEPTIONS[k].name for k in (self.misconception, *self.also)]
            return f"{self._headline()}: {'; and '.join(names)}"
        return self._headline()

    def __str__(self) -> str:
        lines = [self._title(), self.message]  # no label: plumbing to a reader
        if self.hint:
            lines.append(f"Hint: {self.hint}")
        return "\n".join(line for line in lines if line)

    def __repr__(self) -> str:
        return str(self)

    def _repr_markdown_(self) -> str:
        body = f"**{self._title()}**  \n{_md(self.message)}"
        if self.hint:
            body += f"  \n*Hint:* {_md(self.hint)}"
        return body


def _md(text: str) -> str:
    """Escape what Markdown (and MyST) would read as markup: emphasis, dollars, braces, backslashes."""
    for ch in ("\\", "*", "_", "$", "{", "}", "[", "]", "<", ">", "`", "|"):
        text = text.replace(ch, "\\" + ch)
    return text.replace("\n", "  \n")


def _fmt_index(idx: tuple[int, ...]) -> str:
    return "[" + ", ".join(str(i) for i in idx) + "]"


def _fmt_vector(v: np.ndarray) -> str:
    return "[" + ", ".join(_fmt_num(x) for x in np.ravel(v)) + "]"


def _fmt_shape(shape: tuple[int, ...]) -> str:
    return "(" + ", ".join(str(s) for s in shape) + ("," if len(shape) == 1 else "") + ")"


class _FormError(Exception):
    """An answer that cannot be compared: the message says why."""


def _a(noun: str) -> str:
    return ("an " if noun[:1].lower() in "aeiou" else "a ") + noun


def _describe(answer: Any) -> str:
    text = repr(answer)
    return text if len(text) <= 40 else text[:37] + "..."


def _as_array(answer: Any, ex: Exercise) -> np.ndarray:
    """Read ``answer`` as a numeric (or, for masks, boolean) array, or raise _FormError saying why."""
    form = f"Expected {ex.answer_form[0].lower()}{ex.answer_form[1:]}"
    if answer is None:
        raise _FormError(f"Your answer is None (did a function forget to return its result?). {form}")
    if isinstance(answer, (str, bytes)):
        raise _FormError(f"Your answer is text ({_describe(answer)}), not numbers. {form} Remove the quotes.")
    if isinstance(answer, dict):
        raise _FormError(f"Your answer is a dict; give a list or an array instead. {form}")
    if isinstance(answer, (set, frozenset)):
        raise _FormError(f"Your answer is a set, which has no order; give a list or an array. {form}")
    if hasattr(answer, "weights") and hasattr(answer, "output"):
        raise _FormError(
            f"Your answer is {_a(type(answer).__name__)}; pass one of its arrays (for example its .weights "
            f"or .output, or one row of them). {form}"
        )
    if hasattr(answer, "detach") and hasattr(answer, "numpy"):  # a torch tensor
        try:
            answer = answer.detach().cpu().numpy()
        except Exception:  # pragma: no cover - torch-specific failure
            raise _FormError(f"Your answer is a tensor that could not be read. {form}") from None
    try:
        with np.errstate(all="ignore"):
            arr = np.asarray(answer)
    except (ValueError, TypeError):
        arr = None
    if arr is None or arr.dtype == object:
        parts = answer if isinstance(answer, (list, tuple)) else None
        if parts is not None and len(parts) > 0 and all(hasattr(p, "shape") for p in parts):
            shapes = ", ".join(_fmt_shape(np.shape(p)) for p in parts)
            raise _FormError(
                f"Your answer is a {type(answer).__name__} of {len(parts)} arrays of shapes {shapes}, such "
                f"as (output, weights) from return_weights=True; pass only the one asked for. {form}"
            )
        if parts is not None:
            raise _FormError(
                "Your answer could not be read as one array: its rows have different lengths or it mixes "
                f"numbers with other things. {form}"
            )
        raise _FormError(f"Your answer is {_a(type(answer).__name__)}, not numbers. {form}")
    if arr.dtype.kind == "b" and ex.kind != "mask":
        raise _FormError(f"Your answer holds True/False values, not numbers. {form}")
    if arr.dtype.kind == "c":
        raise _FormError(f"Your answer holds complex numbers. {form}")
    if arr.dtype.kind not in "biuf":
        raise _FormError(f"Your answer holds {arr.dtype} values, not numbers. {form}")
    if arr.size == 0:
        raise _FormError(f"Your answer is empty (shape {_fmt_shape(arr.shape)}). {form}")
    return arr


def _read_mask(arr: np.ndarray, ex: Exercise) -> np.ndarray:
    """A mask as "may attend" booleans: bool, 0/1, or additive 0 and −∞ (or a large negative number)."""
    if arr.dtype.kind == "b":
        return arr
    a = arr.astype(np.float64)
    if np.isnan(a).any() or np.isposinf(a).any():
        raise _FormError("Your mask holds NaN or +inf. A mask is boolean (True = may attend), 0/1, or "
                         "additive (0 where allowed, -inf where not).")
    values = set(np.unique(a).tolist())
    if values <= {0.0, 1.0}:
        return a == 1.0
    if all(v == 0.0 or v <= -1e4 for v in values):
        return a == 0.0
    shown = ", ".join(_fmt_num(v) for v in sorted(values)[:5])
    raise _FormError(f"Your mask holds the values {shown}. A mask is boolean (True = may attend), 0/1 "
                     "(1 = may attend), or additive (0 where allowed, -inf where not).")


def _shape_of_answer(arr: np.ndarray, ref: np.ndarray, ex: Exercise) -> tuple[np.ndarray, str]:
    """Bring an equivalent form to the reference's shape: a row of a full matrix, singleton axes."""
    note = ""
    if ex.row is not None and arr.ndim == ref.ndim + 1 and arr.shape[0] == ex.n_rows:
        arr, note = arr[ex.row], f"Checked row {ex.row} of your matrix."
    if arr.shape != ref.shape and arr.size == ref.size and np.squeeze(arr).shape == np.squeeze(ref).shape:
        arr = arr.reshape(ref.shape)
    return arr, note


def _close(ex: Exercise, a: np.ndarray, b: np.ndarray, atol: float) -> bool:
    if a.shape != b.shape:
        return False
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    nan_a, nan_b = np.isnan(a64), np.isnan(b64)
    if not np.array_equal(nan_a, nan_b):
        return False
    ok = ~nan_a
    if ex.kind == "integer":
        if np.array_equal(b64[ok], np.round(b64[ok])):
            return bool(np.array_equal(a64[ok], b64[ok]))
        # a wrong answer that is not whole (sizes in GiB, counts per pair): as printed, to 0.1 %
        return bool(np.allclose(a64[ok], b64[ok], rtol=1e-3, atol=5e-3))
    with np.errstate(invalid="ignore"):
        diff = np.abs(a64[ok] - b64[ok])
    diff[a64[ok] == b64[ok]] = 0.0  # the same infinity in both (an overflow a wrong answer names)
    return bool(np.all(diff <= atol * (1 + 1e-9)))


def _context(ex: Exercise, answer: np.ndarray | None) -> dict[str, Any]:
    ctx = {"d_k": "d_k", "sqrt_d_k": "√d_k", "n": "n", "sqrt_n": "√n", "d_v": "d_v",
           "row_sums": "other values", "col_sums": ""}
    ctx.update(ex.context())
    if answer is not None and answer.ndim >= 1 and np.isfinite(answer.astype(np.float64)).all():
        ctx["row_sums"] = _fmt_vector(answer.sum(axis=-1))
        cols = answer.astype(np.float64).sum(axis=-2) if answer.ndim >= 2 else None
        if cols is not None and np.allclose(cols, 1, atol=0.01):
            ctx["col_sums"] = f" ({_fmt_vector(cols)})"
    return ctx


# The weights' messages, for an answer that is an output computed from such weights (its rows and
# columns are sums of values, not of weights).
_OUTPUT_EXPLANATIONS = {
    "wrong-axis": "Your numbers are what weights from a softmax over the queries (axis 0) give. Each "
                  "query's weights are a softmax over the keys, along its row of the scores, so that "
                  "each row of the weights sums to 1.",
    "not-normalised": "Your numbers come from weights that do not sum to 1: the exponentials were not "
                      "divided by their row's sum, or by the wrong sum.",
    "mask-after-softmax": "Your numbers come from the unmasked softmax with the forbidden weights set to 0 "
                          "afterwards, so the remaining weights of a row no longer sum to 1.",
}


def _fill(template: str, ctx: dict[str, Any]) -> str:
    """``template`` with the exercise's numbers, and without "d_k = d_k" where it has none."""
    text = template.format(**ctx)
    for same in ("d_k = d_k", "√d_k = √d_k", "√n = √n", "d_v = d_v"):
        text = text.replace(same, same.split(" = ")[0])
    return text


def _named(ex: Exercise, key: str, answer: np.ndarray | None, extra: str = "") -> Feedback:
    keys = key.split("+")
    ctx = _context(ex, answer)
    texts, hints = [], []
    for k in keys:
        m = MISCONCEPTIONS[k]
        weights_text = ex.rows_sum_to_one or k not in _OUTPUT_EXPLANATIONS or ex.kind == "mask"
        texts.append(_fill(m.explanation if weights_text else _OUTPUT_EXPLANATIONS[k], ctx))
        hints.append(_fill(m.hint, ctx))
    text = " Also: ".join(texts) if len(keys) == 1 else \
        "Your answer shows two slips at once. " + " And: ".join(texts)
    if ex.stages is not None and key in _SCALE_KEYS:
        # a row whose scaled scores take two values has one degree of freedom: any slip in it gives the
        # weights of some factor, so the name is a likely reading, not a certainty
        row = np.asarray(ex.stages()["scaled"])
        rows = [row[ex.row]] if ex.row is not None else list(row)
        if all(len(np.unique(np.round(r[np.isfinite(r)], 9))) <= 2 for r in rows):
            text += (" (In this row only two different scores occur, so another slip can give the same "
                     "numbers: if you did use 1/√d_k, recheck the scores instead.)")
    if extra:
        text = f"{extra} {text}"
    return Feedback(ex.label, "incorrect", text, keys[0], " ".join(hints), tuple(keys[1:]))


_SCALE_KEYS = ("scale-d_k", "no-scale", "scale-sqrt-n", "scale-kept")


def _pairs(
    ex: Exercise, wrong: list[tuple[str, np.ndarray]], ref: np.ndarray
) -> list[tuple[str, np.ndarray]]:
    """Two mistakes made together: for counts their changes add up; otherwise only where they touch
    different entries (then each entry shows the one mistake that touched it)."""
    out = []
    r = ref.astype(np.float64)
    for i, (k1, c1) in enumerate(wrong):
        for k2, c2 in wrong[i + 1:]:
            if k1 == k2 or c1.shape != ref.shape or c2.shape != ref.shape:
                continue
            d1, d2 = c1.astype(np.float64) - r, c2.astype(np.float64) - r
            if not (np.isfinite(d1).all() and np.isfinite(d2).all()) or not d1.any() or not d2.any():
                continue
            if ex.kind == "integer" or not np.any((d1 != 0) & (d2 != 0)):
                out.append((f"{k1}+{k2}", r + d1 + d2))
    return out


def _entry_name(ex: Exercise, idx: tuple[int, ...]) -> str:
    if ex.names is not None and idx and idx[0] < len(ex.names):
        return ex.names[idx[0]]
    return f"entry {_fmt_index(idx)}" if idx else "your value"


def _generic(ex: Exercise, arr: np.ndarray, ref: np.ndarray, note: str) -> Feedback:
    """No named mistake: how many entries are off, and a hint that locates them (at the answer's own
    precision when it is rounded)."""
    a64, r64 = arr.astype(np.float64), ref.astype(np.float64)
    diff = np.abs(a64 - r64)
    tol = 0 if ex.kind == "integer" else ex.atol
    n_off = int((diff > tol * (1 + 1e-9)).sum())
    lead = "Not the expected answer" if arr.size == 1 else \
        f"Not the expected answer: {n_off} of {arr.size} entries {'is' if n_off == 1 else 'are'} off"
    if ex.kind != "integer":
        lead += f" by more than {_fmt_num(ex.atol)}"
    # How many entries are off, never where, by how much or in which direction: any of these lets a
    # learner recover the answer from the messages (by bisection) instead of computing it.
    text = f"{lead}."
    if note:
        text = f"{note} {text}"
    decimals = given_decimals(a64) if ex.kind == "real" else None
    at_own = decimals is not None and 1 <= decimals < required_decimals(ex.atol)
    where = locate(a64, r64, tol=precision_radius(decimals) if at_own else tol, names=ex.names,
                   stages=ex.stages() if ex.stages else None, row=ex.row, sibling=_earlier_stage(ex))
    if where and at_own:
        where = f"At the {decimals} decimals you give: {where[0].lower()}{where[1:]}"
    return Feedback(ex.label, "incorrect", text, None, (where + " " if where else "Recompute step by step. ")
                    + f"The answer is checked {ex.tolerance}.")


_STAGES = ("scores", "scaled", "weights", "output")


def _earlier_stage(ex: Exercise) -> str | None:
    """The label that checks the stage before this exercise's (``...:weights`` for ``...:output``)."""
    if not ex.form.startswith("attention-"):
        return None
    what = ex.form.removeprefix("attention-")
    for before in reversed(_STAGES[:_STAGES.index(what)]):
        label = ex.label.replace(what, before)
        if label != ex.label and label in EXERCISES and EXERCISES[label].row == ex.row:
            return label
    return None


def _judge_numeric(ex: Exercise, arr: np.ndarray) -> Feedback:
    ref = np.asarray(ex.reference())
    given = arr  # for the row and column sums of a whole matrix when one row is checked
    arr, note = _shape_of_answer(arr, ref, ex)
    wrong = ex.all_wrong_answers()
    finite = np.isfinite(arr.astype(np.float64)).all()
    if arr.shape == ref.shape and finite and _close(ex, arr, ref, ex.atol):
        return Feedback(ex.label, "correct", (note + " " if note else "") + f"Checked {ex.tolerance}.")
    # Read at its own precision: the reference rounded to fewer decimals than the check asks is right so far,
    # each entry at the decimals it gives ([14, 0.44] for [14.22, 0.444]). Whole numbers alone are not read
    # as a precision: [0, 1, 0] is not "right to 0 decimals".
    decimals = given_decimals(arr) if ex.kind == "real" and finite else None
    each = entry_decimals(arr) if decimals is not None else None
    wanted = required_decimals(ex.atol)
    rounded = decimals is not None and decimals >= 1 and each is not None and int(each.min()) < wanted
    if rounded and decimals is not None and arr.shape == ref.shape and right_to_decimals(arr, ref):
        if decimals < wanted:  # (0.3 may be 0.30: an answer's precision is that of its longest entry)
            said = f"Right to {decimals} decimal{'' if decimals == 1 else 's'}"
        else:
            said = "Right to the decimals each entry gives, but some give fewer"
        return Feedback(ex.label, "imprecise", (note + " " if note else "") +
                        f"{said}; this check wants {wanted} in every entry (within {_fmt_num(ex.atol)}).",
                        None, f"Keep {wanted} decimals or more, in the intermediate steps too.")
    # a recomputed wrong answer, first in priority order, compared in the answer's own shape; named only
    # if the answer is closer to it than to the right answer, at the answer's own precision
    spread = precision_radius(decimals if rounded and decimals is not None and decimals < wanted else None)
    for key, cand in wrong + _pairs(ex, wrong, ref):
        cand_arr, cand_note = arr, note
        if cand_arr.shape != cand.shape and cand_arr.size == cand.size and \
                np.squeeze(cand_arr).shape == np.squeeze(cand).shape:
            cand_arr = cand_arr.reshape(cand.shape)
        radius = max(_match_radius(ex, cand, ref), spread)
        closer = cand_arr.shape != ref.shape or _distance(cand_arr, cand) < _distance(cand_arr, ref)
        if _distinguishable(ex, cand, ref, factor=1.0) and closer and _close(ex, cand_arr, cand, radius):
            return _named(ex, key, given if given.ndim > cand_arr.ndim else cand_arr, cand_note)
    if arr.shape != ref.shape:
        raise _FormError(
            f"Your answer has shape {_fmt_shape(arr.shape)}; expected shape {_fmt_shape(ref.shape)}: "
            f"{ex.answer_form[0].lower()}{ex.answer_form[1:]}"
        )
    a64 = arr.astype(np.float64)
    if ex.kind == "integer":
        entries = a64[np.isfinite(a64)]
        if not np.array_equal(entries, np.round(entries)):
            fractions = entries[entries != np.round(entries)][:3]
            raise _FormError(f"Your answer holds {_fmt_vector(fractions)}, which are not whole numbers. "
                             f"Expected {ex.answer_form[0].lower()}{ex.answer_form[1:]}")
    if not np.isfinite(a64).all():
        bad = tuple(int(i) for i in np.argwhere(~np.isfinite(a64))[0])
        kind = "NaN" if np.isnan(a64[bad]) else "an infinity"
        hint = (" NaN in a softmax usually means exp overflowed: subtract the row maximum first."
                if ex.rows_sum_to_one or "softmax" in ex.prompt else "")
        raise _FormError(f"Your answer holds {kind} at {_entry_name(ex, bad)}; every entry should be a "
                         f"finite number.{hint}")
    if ex.rows_sum_to_one:
        rows = a64.sum(axis=-1)
        # a row of entries each within the tolerance (or rounded) sums to 1 only within all their errors
        sum_tol = a64.shape[-1] * max(ex.atol, spread) * (1 + 1e-9)
        if a64.ndim == 2 and a64.shape == ref.T.shape and _close(ex, arr, ref.T, ex.atol) and \
                not _close(ex, ref, ref.T, ex.atol):
            return _named(ex, "weights-transposed", given, note)
        if a64.ndim == 2 and not np.allclose(rows, 1, atol=sum_tol) and \
                np.allclose(a64.sum(axis=0), 1, atol=sum_tol):
            return _named(ex, "wrong-axis", given, note)
        if not np.allclose(rows, 1, atol=sum_tol):
            # named only when dividing each row by its sum gives the right weights: then the division is
            # the one thing wrong; otherwise the sums are one more symptom, said alongside the location
            with np.errstate(divide="ignore", invalid="ignore"):
                rescaled = a64 / rows[..., None]
            close = _close(ex, rescaled, ref.astype(np.float64), 2 * max(ex.atol, spread))
            if np.isfinite(rescaled).all() and close:
                return _named(ex, "not-normalised", a64, note)
            sums = _fmt_vector(np.round(rows, 4))
            note = (note + " " if note else "") + f"Your weights sum to {sums}; a query's weights sum to 1."
    return _generic(ex, arr, ref, note)


def _judge_mask(ex: Exercise, arr: np.ndarray) -> Feedback:
    allowed = _read_mask(arr, ex)
    shape = ex.mask_shape
    if shape is None:
        raise TypeError(f"{ex.label} is a mask exercise without a mask_shape")
    while allowed.ndim > len(shape) and allowed.shape[0] == 1:  # leading axes of length 1
        allowed = allowed[0]
    try:
        got = np.broadcast_to(allowed, shape)
    except ValueError:
        raise _FormError(
            f"Your mask has shape {_fmt_shape(allowed.shape)}, which does not broadcast to "
            f"{_fmt_shape(shape)}. {ex.answer_form}"
        ) from None
    ref = np.broadcast_to(np.asarray(ex.reference()), shape)
    if np.array_equal(got, ref):
        return Feedback(ex.label, "correct", f"Your mask of shape {_fmt_shape(allowed.shape)} allows exactly "
                        "the right pairs.")
    if any(np.array_equal(got, np.broadcast_to(m, shape)) for m in ex.also_right()):
        return Feedback(ex.label, "correct",
                        f"Your mask of shape {_fmt_shape(allowed.shape)} is right. It also hides the rows of "
                        "the padded queries, which is not needed but does no harm: attnlib (and PyTorch 2.5 "
                        "and later) gives an empty row zero weights and a zero output.")
    for key, cand in ex.all_wrong_answers():
        if _distinguishable(ex, np.asarray(cand), ref) and np.array_equal(got, np.broadcast_to(cand, shape)):
            return _named(ex, key, None)
    if np.array_equal(got, ~ref):
        return _named(ex, "mask-inverted", None)
    # Which rows (queries) are off, never which entries: that would hand over the mask one entry at a time.
    where = locate(got.astype(np.float64), ref.astype(np.float64), tol=0)
    return Feedback(
        ex.label, "incorrect",
        f"Not the expected mask (compared after broadcasting to {_fmt_shape(shape)}), and none of the "
        "usual mistakes. Write down, for one query of an off row, which keys it may see and why.",
        None, (where + " " if where else "") +
        "Build it from causal_mask and padding_mask (or np.tri) and combine with & and ~.",
    )


def _judge_open(ex: Exercise, arr: np.ndarray) -> Feedback:
    ref = np.asarray(ex.reference())
    arr, note = _shape_of_answer(arr.astype(np.float64), ref, ex)
    if arr.shape != ref.shape:
        raise _FormError(f"Your answer has shape {_fmt_shape(arr.shape)}; expected shape "
                       f"{_fmt_shape(ref.shape)}: {ex.answer_form[0].lower()}{ex.answer_form[1:]}")
    if not np.isfinite(arr).all():
        raise _FormError("Your answer holds NaN or an infinity; every entry should be a finite number.")
    assert ex.judge is not None
    ok, key, text = ex.judge(arr)
    text = f"{note} {text}".strip()
    if ok:
        return Feedback(ex.label, "correct", text)
    if key is not None:
        return _named(ex, key, None, text)
    return Feedback(ex.label, "incorrect", text)


def check(label: str, answer: Any) -> Feedback:
    """Check an answer to one of the book's exercises.

    The reference is computed now from the exercise's inputs with attnlib; a wrong answer
    is compared with the classic wrong answers recomputed from the same inputs, and the
    feedback names the one it matches.

    Parameters
    ----------
    label : str
        The exercise, e.g. ``"worked-ex-mat:weights"`` (see :data:`~attnlib.exercises.EXERCISES`;
        ``exercise(label).answer_form`` says what to pass).
    answer : array_like, number or mask
        Any equivalent form: list, tuple, nested lists, NumPy array or scalar, int or float;
        for a row of a matrix the whole matrix is accepted too; masks as bool, 0/1 or
        additive 0/−inf. ``...`` means "not answered yet".

    Returns
    -------
    Feedback
        Shown as Markdown in Jupyter and as text by ``print``; true only for a right answer.
        Malformed answers (``None``, text, a dict, NaN, a wrong shape) give a Feedback with
        status ``"invalid"`` saying what is wrong, never an exception.

    Raises
    ------
    TypeError
        ``label`` is not a string.
    ValueError
        No exercise has that label; the message lists the closest labels.

    Examples
    --------
    >>> check("worked-ex-mat:scores", ...)  # doctest: +NORMALIZE_WHITESPACE
    … Not answered yet
    Replace ... with your answer and run this cell; it is checked to 3 decimals (within 0.0005).
    >>> check("worked-ex-mat:scores", [0, 0, 0, 0, 0]).correct
    False
    >>> from attnlib.examples import cat_sat_on_mat
    >>> from attnlib.misconceptions import attention_misconceptions
    >>> ex = cat_sat_on_mat()
    >>> wrong = attention_misconceptions(ex.Q, ex.K, ex.V, what="weights")["scale-d_k"]
    >>> check("attention-weights", wrong).misconception  # scores divided by d_k = 4, not by 2
    'scale-d_k'
    """
    ex = exercise(label)
    if answer is ...:
        return Feedback(label, "unanswered",
                        f"Replace ... with your answer and run this cell; it is checked {ex.tolerance}.")
    try:
        arr = _as_array(answer, ex)
        if ex.kind == "mask":
            return _judge_mask(ex, arr)
        if ex.kind == "open":
            return _judge_open(ex, arr)
        return _judge_numeric(ex, arr)
    except _FormError as exc:
        return Feedback(label, "invalid", str(exc))
    except Exception as exc:  # a safety net: a learner never sees a traceback from a check
        return Feedback(label, "invalid", f"This answer could not be checked ({type(exc).__name__}: {exc}). "
                        f"Expected {ex.answer_form[0].lower()}{ex.answer_form[1:]}")
