"""The book's exercises: for each checkable answer, its inputs, what to submit, a reference computed
at call time and the wrong answers of the classic mistakes.

:data:`EXERCISES` maps each label (``"worked-ex-mat:weights"``) to an :class:`Exercise`;
:func:`exercise` looks one up. Nothing here stores an answer: an entry holds the inputs (the book's
examples, :func:`~attnlib.trace.trace_attention`, :func:`~attnlib.core.causal_mask`, the counting
functions of :mod:`attnlib.counts`, ...), a sentence saying what to submit, and functions that compute
the right answer and the wrong ones (:mod:`attnlib.misconceptions`). :func:`attnlib.feedback.check`
judges a learner's answer against an entry.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from attnlib import counts as _counts
from attnlib import examples as _examples
from attnlib import kvcache as _kvcache
from attnlib import models as _models
from attnlib import stats as _stats
from attnlib.core import causal_mask, padding_mask, scale_for, scaled_dot_product_attention, softmax
from attnlib.misconceptions import (
    Candidates,
    _attention_candidates,
    _causal_variants,
)
from attnlib.multihead import MultiHeadAttention
from attnlib.naive import naive_softmax
from attnlib.trace import trace_attention

__all__ = ["Exercise", "EXERCISES", "NOT_APPLICABLE", "exercise", "form_mistakes", "shared_coverage"]


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
_REGISTRY: list[Exercise] = []


def _register(ex: Exercise) -> None:
    _REGISTRY.append(ex)


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
    wrong_answers: Callable[[], Candidates], *, kind: str = "real", atol: float = 5e-4,
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


# ---- chapter 1: why attention
def _margin_for(n: int, target: float = 0.9, rivals: int | None = None) -> float:
    """The margin m at which softmax([m, 0, ..., 0])[0] reaches ``target``, by bisection."""
    rivals = n - 1 if rivals is None else rivals
    lo, hi = 0.0, 50.0
    for _ in range(80):
        mid = (lo + hi) / 2
        w = softmax(np.r_[mid, np.zeros(rivals)])[0]
        lo, hi = (mid, hi) if w < target else (lo, mid)
    return (lo + hi) / 2


_MARGIN_NS = (10, 1000)
_register(_scalar_exercise(
    "why-ex-margin", "01_why_attention",
    "The margin m (token 0's score minus each tied score) for which the weight on token 0 reaches 0.9, "
    "for n = 10 and for n = 1000.",
    "2 numbers: m for n = 10, then m for n = 1000.",
    lambda: [_margin_for(n) for n in _MARGIN_NS],
    lambda: [("margin-n-keys", [_margin_for(n, rivals=n) for n in _MARGIN_NS]),
             ("margin-exp", [math.exp(_margin_for(n)) for n in _MARGIN_NS]),
             ("margin-log10", [_margin_for(n) / math.log(10) for n in _MARGIN_NS])],
    atol=5e-3, names=("m for n = 10", "m for n = 1000"),
))


# ---- chapter 2: queries, keys and values
_SHAPE_NAMES = ("W_Q", "W_K", "W_V", "Q", "K", "V", "S", "A", "O")
_CROSS_NAMES = ("K", "V", "S", "A", "O")


def _qkv_shapes(n_k: int | None = None) -> dict[str, tuple[int, ...]]:
    """Shapes of one layer with d_model 16, d_k 4, d_v 6 and 5 queries, computed by running it."""
    rng = np.random.default_rng(1)
    X = rng.normal(size=(5, 16))  # (n, d_model)
    Y = X if n_k is None else rng.normal(size=(n_k, 16))  # (n_k, d_model)
    W_Q, W_K, W_V = (rng.normal(size=(16, d)) for d in (4, 4, 6))
    Q, K, V = X @ W_Q, Y @ W_K, Y @ W_V
    O, A = scaled_dot_product_attention(Q, K, V, return_weights=True)
    S = Q @ K.T
    arrays = {"W_Q": W_Q, "W_K": W_K, "W_V": W_V, "Q": Q, "K": K, "V": V, "S": S, "A": A, "O": O}
    return {k: a.shape for k, a in arrays.items()}


def _shapes_wrong(cross: bool) -> Candidates:
    s = _qkv_shapes(7 if cross else None)
    names = _CROSS_NAMES if cross else _SHAPE_NAMES

    def variant(**changes: tuple[int, ...]) -> np.ndarray:
        return np.array([changes.get(k, s[k]) for k in names])

    out: Candidates = []
    if not cross:
        out.append(("shapes-w-transposed", variant(**{k: s[k][::-1] for k in ("W_Q", "W_K", "W_V")})))
    out.append(("shapes-output-d_k", variant(O=(s["O"][0], s["K"][1]))))
    out.append(("shapes-qt-k", variant(S=(s["K"][1], s["K"][1]), A=(s["K"][1], s["K"][1]))))
    if cross:
        out.append(("scores-transposed", variant(S=s["S"][::-1], A=s["A"][::-1])))
        out.append(("shapes-one-output-per-key", variant(O=(s["K"][0], s["O"][1]))))
    return out


_register(_scalar_exercise(
    "qkv-ex-shapes:self", "02_qkv",
    "The shapes of W_Q, W_K, W_V, Q, K, V, S, A and O for d_model = 16, d_k = 4, d_v = 6, n = 5.",
    "9 shapes as (rows, columns) pairs, in the order W_Q, W_K, W_V, Q, K, V, S, A, O.",
    lambda: [_qkv_shapes()[k] for k in _SHAPE_NAMES], lambda: _shapes_wrong(False),
    kind="integer", names=_SHAPE_NAMES, form="shapes",
))
_register(_scalar_exercise(
    "qkv-ex-shapes:params", "02_qkv",
    "How many numbers the three projection matrices hold together.",
    "1 whole number.",
    lambda: sum(math.prod(_qkv_shapes()[k]) for k in ("W_Q", "W_K", "W_V")),
    lambda: [("params-d_k-everywhere", 3 * math.prod(_qkv_shapes()["W_Q"]))],
    kind="integer",
))
_register(_scalar_exercise(
    "qkv-ex-shapes:cross", "02_qkv",
    "The shapes of K, V, S, A and O when the 5 tokens supply the queries and 7 other tokens the keys "
    "and values.",
    "5 shapes as (rows, columns) pairs, in the order K, V, S, A, O.",
    lambda: [_qkv_shapes(7)[k] for k in _CROSS_NAMES], lambda: _shapes_wrong(True),
    kind="integer", names=_CROSS_NAMES, form="shapes",
))


def _abc() -> tuple[np.ndarray, np.ndarray, np.ndarray, tuple[str, ...]]:
    ex = _examples.three_directions()
    return ex.Q, ex.K, ex.V, ex.tokens


def _abc_unit_keys() -> tuple[np.ndarray, np.ndarray, np.ndarray, tuple[str, ...]]:
    Q, K, V, tokens = _abc()
    return Q, K / np.linalg.norm(K, axis=1, keepdims=True), V, tokens


def _unit_extra() -> Candidates:
    Q, K, V, _ = _abc()
    Ku = K / np.linalg.norm(K, axis=1, keepdims=True)
    Qu = Q / np.linalg.norm(Q, axis=1, keepdims=True)
    both = scaled_dot_product_attention(Qu, Ku, V, return_weights=True)[1][1]
    unscaled = scaled_dot_product_attention(Q, Ku, V, scale=1.0, return_weights=True)[1][1]
    out = [("unit-keys-as-given", scaled_dot_product_attention(Q, K, V, return_weights=True)[1][1])]
    # Here |q_B| = √d_k, so normalising the query gives the unscaled weights: name only "no scaling".
    if not np.allclose(both, unscaled, atol=1e-3):
        out.append(("unit-normalised-queries", both))
    return out


_register(_attention_exercise(
    "qkv-ex-prefer:unit-weights", "02_qkv",
    "Query B's weights in A/B/C after every key is rescaled to length 1.",
    "3 numbers: query B's weights on keys A, B, C (the whole 3 × 3 weight matrix is accepted too).",
    _abc_unit_keys, "weights", row=1, extra=_unit_extra,
))


def _cat_sits(W_K: str = "W_K"):
    cs = _examples.cat_sits()
    Q = cs.X @ cs.W_Q
    K = cs.X @ getattr(cs, W_K)
    V = cs.X @ cs.W_V
    return Q, K, V, cs.tokens


_register(_attention_exercise(
    "qkv-ex-symmetric:weights", "02_qkv",
    "The attention weights of 'Cat sits' with the key projection tied to the query projection, W_K = W_Q.",
    "A 2 × 2 matrix of weights, one row per query ('Cat', 'sits').",
    lambda: _cat_sits(W_K="W_Q"), "weights",
))
_register(_attention_exercise(
    "qkv-ex-symmetric:scores", "02_qkv",
    "The raw scores S = Q Kᵀ of 'Cat sits' with W_K = W_Q.",
    "A 2 × 2 matrix of raw scores (before the division by √d_k).",
    lambda: _cat_sits(W_K="W_Q"), "scores",
))


# ---- chapter 4: scaling
def _the_unscaled_row(scale: float | None = 1.0) -> np.ndarray:
    Q, K, V, tokens = _cat()
    return trace_attention(Q, K, V, tokens=tokens, scale=scale).weights[0]


_register(_attention_exercise(
    "sc-ex-cat:weights", "04_scaling",
    "The weights of the query 'The' in 'The cat sat on mat' without the division by √d_k.",
    "5 numbers: the weights of 'The' on The, cat, sat, on, mat (the whole 5 × 5 matrix is accepted too).",
    _cat, "weights", scale=1.0, row=0,
))


def _row_stats(p: np.ndarray, *, bits: bool = False, spectral: bool = False) -> list[float]:
    h = float(_stats.entropy(p))
    return [float(_stats.max_weight(p)), h / math.log(2) if bits else h,
            float(_stats.jacobian_norm(p, ord=2 if spectral else "fro"))]


_register(_scalar_exercise(
    "sc-ex-cat:stats", "04_scaling",
    "For the unscaled row of 'The': its largest weight, its entropy and the Frobenius norm of the softmax "
    "Jacobian.",
    "3 numbers: largest weight, entropy (natural log), ‖J‖_F.",
    lambda: _row_stats(_the_unscaled_row()),
    lambda: [("entropy-bits", _row_stats(_the_unscaled_row(), bits=True)),
             ("jacobian-spectral", _row_stats(_the_unscaled_row(), spectral=True)),
             ("stats-of-scaled-row", _row_stats(_the_unscaled_row(None)))],
    names=("largest weight", "entropy", "‖J‖_F"),
))

_SIGMA = {"d_k": 64, "sigma_q": 3.0, "sigma_k": 0.5}


def _sigma_alpha() -> float:
    return 1 / math.sqrt(_stats.dot_product_variance(**_SIGMA))


_register(_scalar_exercise(
    "sc-ex-sigma", "04_scaling",
    "The factor α that gives α q·k variance 1 for d_k = 64, σ_q = 3, σ_k = 0.5.",
    "1 number: α.",
    _sigma_alpha,
    lambda: [("sigma-ignored", 1 / math.sqrt(_stats.dot_product_variance(_SIGMA["d_k"]))),
             ("sigma-d_k", _sigma_alpha() / math.sqrt(_SIGMA["d_k"])),
             ("sigma-variances", math.sqrt(_SIGMA["d_k"]) / _stats.dot_product_variance(**_SIGMA)),
             ("sigma-multiplied", _SIGMA["sigma_q"] * _SIGMA["sigma_k"] / math.sqrt(_SIGMA["d_k"])),
             ("abc-divisor", 1 / _sigma_alpha())],
    form="variance",
))


# ---- chapter 3: worked examples
_MAT = 4
for _what, _form in (
    ("scores", "5 numbers: the raw scores q_mat · k for the keys The, cat, sat, on, mat"),
    ("scaled", "5 numbers: the scaled scores of 'mat' for the keys The, cat, sat, on, mat"),
    ("weights", "5 numbers: the weights of 'mat' on The, cat, sat, on, mat"),
    ("output", "4 numbers: the output row of 'mat'"),
):
    _register(_attention_exercise(
        f"worked-ex-mat:{_what}", "03_worked_examples",
        f"The {_what} of the row of 'mat' in 'The cat sat on mat', by hand.",
        f"{_form} (the whole 5-row matrix is accepted too).",
        _cat, _what, row=_MAT,
    ))


def _v_doubled() -> np.ndarray:
    _, _, V, _ = _cat()
    V2 = np.array(V)
    V2[1] = 2 * V[1]  # v_cat: [0, 1, 0, 0] -> [0, 2, 0, 0]
    return V2


def _double_v_change(weights: np.ndarray) -> np.ndarray:
    _, _, V, _ = _cat()
    return weights[:, 1:2] * (_v_doubled()[1] - V[1])  # (n, 1) * (d_v,) -> (n, d_v)


def _double_v_extra() -> Candidates:
    Q, K, _, tokens = _cat()
    new = trace_attention(Q, K, _v_doubled(), tokens=tokens)
    old = trace_attention(Q, K, _cat()[2], tokens=tokens)
    return [("change-not-new", new.output),
            ("change-contribution", new.weights[:, 1:2] * _v_doubled()[1]),
            ("change-sign", old.output - new.output)]


_register(_attention_exercise(
    "worked-ex-double-v", "03_worked_examples",
    "How much every output of 'The cat sat on mat' changes when v_cat is doubled to [0, 2, 0, 0].",
    "A 5 × 4 matrix: the change O' − O of every output (new minus old), one row per query.",
    _cat, "weights", transform=_double_v_change, extra=_double_v_extra,
))


# ---- chapter 6: implementation
_BATCH_LENGTHS = (5, 3)  # impl-ex-mask: two sentences padded to 5


def _pad_causal(
    n: int = 5, *, heads: bool, lengths: tuple[int, ...] = _BATCH_LENGTHS
) -> dict[str, np.ndarray]:
    """The combined padding-and-causal mask of a batch of ``lengths`` and its classic misreadings."""
    P = padding_mask(list(lengths), n)  # (B, 1, n_k)
    if heads:
        P = P[:, None]  # (B, 1, 1, n_k)
    C = causal_mask(n)  # (n, n)
    out = {"reference": P & C, "mask-causal-only": np.broadcast_to(C, (P.shape[0],) + (1,) * heads + (n, n)),
           "mask-padding-only": P, "mask-or": P | C,
           # hiding the padded queries' rows as well: empty rows, zero weights in attnlib (chapter 5)
           "also-right": P & C & np.swapaxes(P, -1, -2)}
    for key, m in _causal_variants(n):
        out[key] = P & m
    if heads:
        out["mask-batch-as-heads"] = padding_mask(list(lengths), n) & C  # (B, n, n) vs (B, H, n, n)
    return out


def _mask_exercise(label: str, chapter: str, prompt: str, answer_form: str, make: Callable[[], dict],
                   shape: tuple[int, ...], extra: Callable[[], Candidates] | None = None) -> Exercise:
    """A mask exercise: ``make()`` returns the reference, the misreadings by misconception key and, under
    ``"also-right"``, a mask that is right as well (it hides the padded queries' rows too)."""

    def also_right() -> list[np.ndarray]:
        m = make()
        return [m["also-right"]] if "also-right" in m else []

    def wrong_answers() -> Candidates:
        right = [np.broadcast_to(a, shape) for a in also_right()]
        return [(k, v) for k, v in [*make().items(), *(extra() if extra else [])]
                if k not in ("reference", "also-right")
                and not any(np.array_equal(np.broadcast_to(v, shape), r) for r in right)]

    return Exercise(
        label=label, chapter=chapter, prompt=prompt, answer_form=answer_form, tolerance=_MASK, kind="mask",
        reference=lambda: make()["reference"], wrong_answers=wrong_answers,
        mask_shape=shape, form="mask", also_right=also_right,
    )


_register(_mask_exercise(
    "impl-ex-mask", "06_implementation",
    "One mask, causal and hiding the padding of two sequences of lengths 5 and 3, for scores of shape "
    "(B, H, n_q, n_k) = (2, 2, 5, 5).",
    "Your mask: any shape that broadcasts to (2, 2, 5, 5); boolean (True = may attend), 0/1 or additive "
    "0/-inf.",
    lambda: _pad_causal(heads=True), (2, 2, 5, 5),
))


# ---- chapter 7: complexity
_COUNT = {"n_q": 3, "n_k": 5, "d_k": 4, "d_v": 2}
_COUNT_NAMES = ("multiplications", "additions", "comparisons", "exponentials", "divisions", "FLOPs")


def _count_row(c: _counts.FlopCounts) -> list[int]:
    return [c.multiplies, c.adds, c.compares, c.exps, c.divides, c.flops]


def _count_wrong() -> Candidates:
    c = _counts.flop_counts(**_COUNT)
    n_q, n_k, d_v = _COUNT["n_q"], _COUNT["n_k"], _COUNT["d_v"]
    ladd = _count_row(c)
    extra_adds = n_q * n_k + n_q + n_q * d_v  # one more add per dot product of QK, row sum, AV
    ladd[1] += extra_adds
    ladd[5] += extra_adds
    cmp_n = _count_row(c)
    cmp_n[2] += n_q
    cmp_n[5] += n_q
    exp_flops = _count_row(c)
    exp_flops[5] += c.exps
    swapped = _count_row(_counts.flop_counts(n_k, n_q, _COUNT["d_k"], _COUNT["d_v"]))
    return [("flops-sum-l-adds", np.array(ladd)), ("flops-max-n-compares", np.array(cmp_n)),
            ("flops-exp-counted", np.array(exp_flops)), ("flops-swapped", np.array(swapped))]


_register(_scalar_exercise(
    "cx-ex-count", "07_complexity",
    "The operations of cross-attention with n_q = 3, n_k = 5, d_k = 4, d_v = 2, in total.",
    "6 whole numbers: multiplications, additions (subtractions included), comparisons, exponentials, "
    "divisions, FLOPs.",
    lambda: _count_row(_counts.flop_counts(**_COUNT)), _count_wrong,
    kind="integer", names=_COUNT_NAMES, form="counts",
))


def _llama() -> _models.ModelConfig:
    return next(c for c in _models.MODEL_CONFIGS if c.name == "LLaMA-2 70B")


def _kv_bytes(*, keys_only: bool = False, layers: int | None = None, dtype_bytes: int = 2,
              query_heads: bool = False) -> list[float]:
    cfg = _llama()
    if layers is not None:
        cfg = replace(cfg, n_layers=layers)
    first = cfg.n_heads if query_heads else cfg.n_kv_heads
    out = [_kvcache.kv_cache_bytes(replace(cfg, n_kv_heads=h), cfg.max_context, dtype_bytes)
           for h in (first, cfg.n_heads)]
    return [b / 2 for b in out] if keys_only else out


_register(_scalar_exercise(
    "cx-ex-kv-memory", "07_complexity",
    "The key–value cache of LLaMA-2 70B for one sequence of 4096 tokens in a 16-bit format: with its 8 "
    "key–value heads, and if each of the 64 query heads had its own.",
    "2 whole numbers of bytes: with 8 key–value heads, with 64.",
    _kv_bytes,
    lambda: [("kv-keys-only", _kv_bytes(keys_only=True)), ("kv-query-heads", _kv_bytes(query_heads=True)),
             ("kv-one-layer", _kv_bytes(layers=1)), ("bytes-float32", _kv_bytes(dtype_bytes=4)),
             ("bytes-units", [b / 2**30 for b in _kv_bytes()])],
    kind="integer", names=("8 key-value heads", "64 key-value heads"), form="bytes",
    context=lambda: {"itemsize": 2},
))

_CACHE_BYTES, _BLOCK_D = 256 * 2**10, 64


def _block_bytes(b: int, dtype: Any = np.float32, *, what: str = "all") -> int:
    """Bytes of one step of tiled attention: the b × b tile and b rows of Q, K, V (from memory_bytes)."""
    m = _counts.memory_bytes(b, b, _BLOCK_D, _BLOCK_D, dtype)
    inputs, with_scores = m.stage("inputs").bytes, m.stage("scores").bytes
    return {"all": with_scores, "inputs": inputs, "tile": with_scores - inputs}[what]


def _largest_block(*, powers: bool = True, **kw: Any) -> int:
    sizes = (2**k for k in range(20)) if powers else iter(range(1, 2**20))
    best = 0
    for b in sizes:
        if _block_bytes(b, **kw) > _CACHE_BYTES:
            return best
        best = b
    return best  # pragma: no cover


_register(_scalar_exercise(
    "cx-ex-blocks", "07_complexity",
    "The largest block size b, a power of two, for which a b × b float32 tile of scores and b rows each "
    "of Q, K and V (d = 64) fit in 256 KiB.",
    "1 whole number: b.",
    _largest_block,
    lambda: [("blocks-missing-arrays", _largest_block(what="inputs")),
             ("blocks-missing-arrays", _largest_block(what="tile")),
             ("blocks-float64", _largest_block(dtype=np.float64)),
             ("blocks-not-power-of-two", _largest_block(powers=False))],
    kind="integer",
))


_ONLINE_LOGITS = (2.0, 0.0, 3.0, 5.0)  # cx-ex-online: the maximum grows twice, by 1 then by 2


def _online_states(*, rescale: str = "right", subtract: bool = True, max_of: str = "running") -> np.ndarray:
    """The state (m, ℓ) of the online softmax after each key of ``_ONLINE_LOGITS``, one key per block.

    ``rescale`` is ``"right"`` (ℓ times e^(m − m') when the maximum grows), ``"none"`` or
    ``"inverted"`` (times e^(m' − m)); ``subtract=False`` adds e^(s_j) itself;
    ``max_of`` is ``"running"``, ``"first"`` (m never updated) or ``"final"`` (the row's maximum
    from the start). Returns an array of shape (n, 2).
    """
    x = np.array(_ONLINE_LOGITS)  # (n,)
    m, ell, rows = -np.inf, 0.0, []
    for j, s in enumerate(x):
        m_new = {"running": max(m, s), "first": x[0], "final": x.max()}[max_of]
        with np.errstate(over="ignore"):  # e^(s_j) overflows to inf without the subtraction
            if not subtract:
                ell = ell + np.exp(s)
            elif j == 0:
                ell = np.exp(s - m_new)
            else:
                corr = {"right": np.exp(m - m_new), "none": 1.0, "inverted": np.exp(m_new - m)}[rescale]
                ell = corr * ell + np.exp(s - m_new)
        m = m_new
        rows.append((m, ell))
    return np.array(rows)  # (n, 2): (m, ℓ) after each key


_register(_scalar_exercise(
    "cx-ex-online", "07_complexity",
    "The running state of the online softmax on the logits [2, 0, 3, 5], one key at a time: "
    "the running maximum m and the running sum ℓ of e^(s_j − m) after each key.",
    "4 pairs (m, ℓ), one per key in order: the running maximum and the running sum after that key.",
    _online_states,
    lambda: [("online-no-rescale", _online_states(rescale="none")),
             ("online-rescale-inverted", _online_states(rescale="inverted")),
             ("online-no-max", _online_states(subtract=False)),
             ("online-m-fixed", _online_states(max_of="first")),
             ("online-final-max", _online_states(max_of="final"))],
    names=("after the 1st key", "after the 2nd key", "after the 3rd key", "after the 4th key"),
))

# ---- chapter 5: beyond
def _four_heads(scale_width: bool = False):
    ex = _examples.cat_sat_on_mat()
    n = len(ex.tokens)
    mha = MultiHeadAttention.from_weights(ex.Q, ex.K, ex.V, np.eye(4, n), n_heads=4)
    tr = mha(np.eye(n))  # X = I_5: the projections return Q, K, V
    if not scale_width:
        return mha, tr.weights[:, 0]  # (H, n_k): the row of "The" in each head
    Qh, Kh = tr.Q[:, 0:1], tr.K  # (H, 1, d_head), (H, n, d_head)
    scores = (Qh @ Kh.swapaxes(-1, -2))[:, 0] * scale_for(mha.n_heads * mha.d_head)
    return mha, softmax(scores, axis=-1)


def _four_heads_wrong() -> Candidates:
    _, w_full = _four_heads(scale_width=True)
    ex = _examples.cat_sat_on_mat()
    tr = MultiHeadAttention.from_weights(ex.Q, ex.K, ex.V, np.eye(4, 5), n_heads=4)(np.eye(5))
    scores = (tr.Q @ tr.K.swapaxes(-1, -2)) / math.sqrt(tr.Q.shape[-1])  # (H, n, n)
    wrong_axis = softmax(scores, axis=-2)[:, 0]
    return [("scale-full-width", w_full), ("wrong-axis", wrong_axis)]


_register(_scalar_exercise(
    "masks-ex-four-heads:params", "05_masks_heads",
    "The number of parameters of the layer split into H = 4 heads of d_head = 1.",
    "1 whole number.",
    lambda: _four_heads()[0].n_params,
    lambda: [("heads-per-head-params", _four_heads()[0].n_params // 4),
             ("params-no-w_o", _four_heads()[0].n_params * 3 // 4)],
    kind="integer",
))
_four_heads_ex = _scalar_exercise(
    "masks-ex-four-heads:weights", "05_masks_heads",
    "The weights of the query 'The' in each of the 4 heads of d_head = 1.",
    "A 4 × 5 matrix: one row per head (0 to 3), one column per key (The, cat, sat, on, mat).",
    lambda: _four_heads()[1], _four_heads_wrong,
)
_register(replace(_four_heads_ex, rows_sum_to_one=True,
                  context=lambda: {"d_k": 1, "sqrt_d_k": "1", "n": 5, "sqrt_n": _fmt_num(math.sqrt(5)),
                                   "d_v": 1}))


# ---- generic checks for the running examples
_register(_attention_exercise(
    "attention-scores", "03_worked_examples",
    "The raw scores S = Q Kᵀ of 'The cat sat on mat'.",
    "A 5 × 5 matrix: one row per query, one column per key.",
    _cat, "scores",
))
_register(_attention_exercise(
    "attention-weights", "03_worked_examples",
    "The attention weights softmax(Q Kᵀ / √d_k) of 'The cat sat on mat'.",
    "A 5 × 5 matrix of weights: one row per query, one column per key.",
    _cat, "weights",
))
_register(_attention_exercise(
    "attention-output", "03_worked_examples",
    "The output softmax(Q Kᵀ / √d_k) V of 'The cat sat on mat'.",
    "A 5 × 4 matrix: one output row per query.",
    _cat, "output",
))
_register(_attention_exercise(
    "square-scores", "03_worked_examples",
    "The raw scores S = Q Kᵀ of the first four tokens of 'The cat sat on mat' (n = d_k = 4).",
    "A 4 × 4 matrix: one row per query (The, cat, sat, on), one column per key.",
    lambda: tuple(x[:4] for x in _cat()), "scores",
))
_register(_mask_exercise(
    "causal-mask", "05_masks_heads",
    "The causal mask for the 5 tokens of 'The cat sat on mat'.",
    "Your 5 × 5 mask: boolean (True = may attend), 0/1 or additive 0/-inf.",
    lambda: {"reference": causal_mask(5), **dict(_causal_variants(5))}, (5, 5),
))
_register(_attention_exercise(
    "causal-weights", "05_masks_heads",
    "The causal attention weights of 'The cat sat on mat'.",
    "A 5 × 5 matrix of weights, one row per query.",
    _cat, "weights", causal=True,
))

_LARGE_LOGITS = (1000.0, 1002.0, 999.0, 1001.0)


def _large_logits_wrong() -> Candidates:
    x = np.array(_LARGE_LOGITS)
    e = np.exp(x - x.max())
    return [("no-max-subtraction", naive_softmax(x)), ("not-normalised", e)]


_register(_scalar_exercise(
    "softmax-stable", "06_implementation",
    "The softmax, in float64, of the logits [1000, 1002, 999, 1001].",
    "4 numbers: the weights of the four logits, in order.",
    lambda: softmax(np.array(_LARGE_LOGITS)), _large_logits_wrong,
))

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


#: Every checkable answer, by label.
#:
#: :meta hide-value:
EXERCISES: dict[str, Exercise] = {ex.label: ex for ex in _REGISTRY}


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
