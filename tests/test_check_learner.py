"""``check`` answered the way a learner working alone answers: right, rounded, wrong in a known way, wrong
in a way a sibling exercise names, wrong in no known way.

* A table of answers written out by hand (the numbers a learner types), each with its verdict.
* For every check label: the right answer is right; the right answer rounded to fewer decimals than the
  check asks is "right so far", never a misconception; each mistake the exercise names is named, also
  when rounded, unless rounding makes it indistinguishable from the right answer.
* Mistakes shared by an answer form (counts, bytes, masks, shapes, variances) are named in every
  exercise of that form, or the registry says why the mistake cannot be made there.
* When nothing is named, the hint locates (stage, rows, entries) without giving a value.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import attnlib
from attnlib import check
from attnlib.diagnosis import given_decimals, required_decimals
from attnlib.exercises import EXERCISES, NOT_APPLICABLE, exercise, shared_coverage
from attnlib.misconceptions import MISCONCEPTIONS

CAT = attnlib.cat_sat_on_mat()
TR = attnlib.trace_attention(CAT.Q, CAT.K, CAT.V, tokens=CAT.tokens)


def _softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


# --------------------------------------------------------------------------- answers a learner types
# (label, answer, status, misconception or None, further misconceptions)
TABLE = [
    # the row of "mat" by hand: scores [1, 1, 1, 1, 1.5], scaled [0.5, 0.5, 0.5, 0.5, 0.75]
    ("worked-ex-mat:scores", [1, 1, 1, 1, 1.5], "correct", None, ()),
    ("worked-ex-mat:scaled", [0.5, 0.5, 0.5, 0.5, 0.75], "correct", None, ()),
    ("worked-ex-mat:scaled", [0.25, 0.25, 0.25, 0.25, 0.375], "incorrect", "scale-d_k", ()),
    ("worked-ex-mat:scaled", [1, 1, 1, 1, 1.5], "incorrect", "no-scale", ()),
    ("worked-ex-mat:weights", [0.19, 0.19, 0.19, 0.19, 0.24], "imprecise", None, ()),
    ("worked-ex-mat:weights", [0.1892, 0.1892, 0.1892, 0.1892, 0.2430], "correct", None, ()),
    ("worked-ex-mat:weights", [0.2, 0.2, 0.2, 0.2, 0.2], "imprecise", None, ()),  # right to 1 decimal
    ("worked-ex-mat:weights", [0.19, 0.19, 0.19, 0.19, 0.25], "incorrect", None, ()),
    ("worked-ex-mat:output", [0.31, 0.31, 0.31, 0.31], "imprecise", None, ()),  # was told "√n"
    ("worked-ex-mat:output", [0.3108, 0.3108, 0.3108, 0.3108], "correct", None, ()),
    ("worked-ex-mat:output", [0.3107, 0.3107, 0.3107, 0.3107], "correct", None, ()),  # rounded on the way
    # chapter 1: the margin for n = 10 and n = 1000 (ln 81, ln 8991)
    ("why-ex-margin", [4.39, 9.1], "correct", None, ()),
    ("why-ex-margin", [4.4, 9.1], "imprecise", None, ()),
    ("why-ex-margin", [4.5, 9.1], "incorrect", "margin-n-keys", ()),  # ln 90 = 4.50, ln 9000 = 9.10
    # chapter 7: the count of a sum takes L − 1 additions
    ("cx-ex-count", [105, 96, 12, 15, 15, 228], "correct", None, ()),
    ("cx-ex-count", [105, 120, 12, 15, 15, 252], "incorrect", "flops-sum-l-adds", ()),
    ("cx-ex-count", [105, 120, 15, 15, 15, 255], "incorrect", "flops-sum-l-adds", ("flops-max-n-compares",)),
    ("cx-ex-count", [105, 96, 12, 15, 15, 243], "incorrect", "flops-exp-counted", ()),
    # the stable softmax by hand (chapter 6): one entry given to fewer decimals is "right so far"
    ("softmax-stable", [0.087, 0.644, 0.032, 0.237], "correct", None, ()),
    # each entry read at its own decimals
    ("softmax-stable", [0.087, 0.64, 0.032, 0.237], "imprecise", None, ()),
    # the column of "mat" read as its row: the weights the other queries give it
    ("worked-ex-mat:weights", [0.232, 0.115, 0.195, 0.19, 0.243], "incorrect", "weights-transposed", ()),
    ("sc-ex-sigma", 0.125, "incorrect", "sigma-ignored", ()),
    ("sc-ex-sigma", 0.08, "imprecise", None, ()),
    ("sc-ex-sigma", 0.0833, "correct", None, ()),
    # bytes: the same slips in the score memory and in the cache
    ("cx-ex-kv-memory", [1.25, 10], "incorrect", "bytes-units", ()),
    ("cx-ex-kv-memory", [1342.18, 10737.42], "incorrect", "bytes-units", ()),  # MB
    ("cx-ex-kv-memory", [2 * 1342177280, 2 * 10737418240], "incorrect", "bytes-float32", ()),
    # masks
    ("causal-mask", np.tri(5, dtype=bool).T, "incorrect", "mask-flipped", ()),
    ("causal-mask", np.tri(5, k=-1, dtype=bool), "incorrect", "mask-diagonal-excluded", ()),
    # hiding the padded queries' rows too is right (empty rows get zero weights)
    ("impl-ex-mask", attnlib.padding_mask([5, 3], 5)[:, None] & np.tri(5, dtype=bool)
     & np.swapaxes(attnlib.padding_mask([5, 3], 5)[:, None], -1, -2), "correct", None, ()),
    # a learner's slips that are not a method mistake: told where, never "not normalised"
    ("worked-ex-mat:weights", [0.189, 0.189, 0.198, 0.189, 0.243], "incorrect", None, ()),  # one miscopied
    ("worked-ex-mat:weights", [0.1894, 0.1894, 0.1894, 0.1894, 0.2423], "incorrect", None, ()),  # e^x rounded
    # mistakes named across exercises
    ("attention-weights", np.round(_softmax(CAT.K @ CAT.Q.T / 2), 3), "incorrect", "scores-transposed", ()),
    ("worked-ex-double-v", -np.asarray(exercise("worked-ex-double-v").reference()), "incorrect",
     "change-sign", ()),
    ("why-ex-margin", [9.10, 4.39], "incorrect", "order-swapped", ()),
    ("cx-ex-kv-memory", [10 * 2**30, 1.25 * 2**30], "incorrect", "order-swapped", ()),
    ("sc-ex-sigma", 12, "incorrect", "abc-divisor", ()),
    # the online softmax of chapter 7
    ("cx-ex-online", [[2, 1], [2, 1.135], [3, 1.418], [5, 1.192]], "correct", None, ()),
    ("cx-ex-online", [[2, 1], [2, 1.14], [3, 1.42], [5, 1.19]], "imprecise", None, ()),
    ("cx-ex-online", [[2, 1], [2, 1.135], [3, 2.135], [5, 3.135]], "incorrect", "online-no-rescale", ()),
]


@pytest.mark.parametrize(("label", "answer", "status", "key", "also"), TABLE,
                         ids=[f"{row[0]}-{i}" for i, row in enumerate(TABLE)])
def test_learner_table(label, answer, status, key, also):
    fb = check(label, answer)
    assert (fb.status, fb.misconception, fb.also) == (status, key, also), str(fb)
    if status == "imprecise":
        decimals = given_decimals(np.asarray(answer, dtype=float))
        assert (f"Right to {decimals} decimal" in fb.message or "some give fewer" in fb.message) and not fb
        assert f"this check wants {required_decimals(exercise(label).atol)}" in fb.message
    if key is not None:
        for k in (key, *also):
            assert MISCONCEPTIONS[k].name in str(fb)


# --------------------------------------------------------------------------- every label
REAL = sorted(label for label, ex in EXERCISES.items() if ex.kind == "real")


def _reference(label: str) -> np.ndarray:
    return np.asarray(exercise(label).reference(), dtype=np.float64)


@pytest.mark.parametrize("label", sorted(EXERCISES))
def test_right_answer_is_right(label):
    ex = exercise(label)
    ref = ex.reference()
    if ex.kind == "open":
        ref = np.asarray(ref)
    assert check(label, ref).correct


@pytest.mark.parametrize("label", REAL)
def test_rounded_right_answer_is_right_so_far_never_a_mistake(label):
    ex = exercise(label)
    ref = _reference(label)
    wanted = required_decimals(ex.atol)
    for decimals in range(1, wanted):
        rounded = np.round(ref, decimals)
        fb = check(label, rounded)
        assert fb.misconception is None, (decimals, str(fb))
        if np.allclose(rounded, ref, atol=ex.atol, rtol=0):
            assert fb.correct, str(fb)
        else:
            assert fb.status == "imprecise", str(fb)
            assert f"Right to {given_decimals(rounded)} decimal" in fb.message


@settings(max_examples=60, deadline=None)
@given(label=st.sampled_from(REAL), decimals=st.integers(1, 2), seed=st.integers(0, 2**16))
def test_an_answer_rounded_at_any_point_is_never_taken_for_a_mistake(label, decimals, seed):
    """Any value that rounds to the reference at ``decimals`` (a hand computation whose intermediate steps
    were rounded) is right so far or right, never a named mistake."""
    ex = exercise(label)
    ref = _reference(label)
    if decimals >= required_decimals(ex.atol):
        return
    rng = np.random.default_rng(seed)
    jitter = rng.uniform(-0.5, 0.5, size=ref.shape) * 10.0**-decimals * 0.98
    answer = np.round(ref + jitter, decimals)
    answer = np.where(np.abs(answer - ref) <= 0.5 * 10.0**-decimals, answer, np.round(ref, decimals))
    fb = check(label, answer)
    assert fb.misconception is None and fb.status in ("imprecise", "correct"), str(fb)


@pytest.mark.parametrize("label", sorted(EXERCISES))
def test_each_named_mistake_is_named_also_when_rounded(label):
    ex = exercise(label)
    ref = np.asarray(ex.reference())
    own = dict((k, np.asarray(a)) for k, a in reversed(ex.all_wrong_answers()))
    for key in ex.detects():
        if key not in own:
            continue  # named by the row or column sums (not-normalised, wrong-axis)
        wrong = own[key]
        fb = check(label, wrong)
        assert fb.misconception is not None and not fb, (key, str(fb))
        if ex.kind != "real" or wrong.shape != ref.shape or not np.isfinite(wrong.astype(float)).all():
            continue
        for decimals in range(1, required_decimals(ex.atol)):
            rounded = np.round(wrong.astype(float), decimals)
            fb = check(label, rounded)
            if np.all(np.abs(rounded - ref) <= 0.5 * 10.0**-decimals + 1e-12):
                assert fb.status == "imprecise", (key, decimals, str(fb))  # invisible at this precision
            elif fb.misconception is not None:
                # named only after a mistake it is closer to than to the right answer
                assert np.max(np.abs(rounded - ref)) > 0.5 * 10.0**-decimals, (key, str(fb))


@pytest.mark.parametrize("label", sorted(label for label, ex in EXERCISES.items() if ex.form))
def test_mistakes_shared_by_the_answer_form_are_named(label):
    coverage = shared_coverage(exercise(label))
    assert all(coverage.values()), {k: v for k, v in coverage.items() if v is None}


def test_every_exception_names_a_shared_mistake_and_a_reason():
    for (label, key), why in NOT_APPLICABLE.items():
        ex = exercise(label)
        assert ex.form in MISCONCEPTIONS[key].forms and why.strip(), (label, key)
        assert key not in ex.detects(), (label, key, "listed as impossible but detected")


def test_a_form_mistake_of_one_chapter_is_named_in_another():
    """The reviewer's case: a mistake of an answer form, named in one chapter, is named in another too."""
    chapters: dict[str, set[str]] = {}
    for ex in EXERCISES.values():
        for key in ex.detects():
            if key in MISCONCEPTIONS and MISCONCEPTIONS[key].forms:
                chapters.setdefault(key, set()).add(ex.chapter)
    assert any(len(c) >= 2 for c in chapters.values()), chapters


# --------------------------------------------------------------------------- where it goes wrong
def test_weights_from_wrong_scores_are_told_the_scores_stage_and_the_keys():
    scores = TR.scores[4].copy()
    scores[1] += 1  # one dot product wrong
    fb = check("worked-ex-mat:weights", _softmax(scores / 2))
    assert fb.misconception is None and "'cat'" in fb.hint and "scores" in fb.hint
    assert "'The'" not in fb.hint and "'sat'" not in fb.hint


def test_weights_with_an_odd_factor_are_told_the_scaling_stage():
    fb = check("worked-ex-mat:weights", _softmax(TR.scores[4] / 3))
    assert fb.misconception is None and "scores are right" in fb.hint and "scaling" in fb.hint


def test_an_output_outside_the_values_is_told_the_weights_stage():
    fb = check("worked-ex-mat:output", [1.2, 0.3, 0.3, 0.3])
    assert fb.misconception is None and "weights" in fb.hint and "d0" in fb.hint


def test_an_output_from_right_weights_points_at_the_product_and_the_weights_check():
    out = TR.output[4].copy()
    out[2] += 0.05
    fb = check("worked-ex-mat:output", out)
    assert "d2" in fb.hint and "'worked-ex-mat:weights'" in fb.hint and "d0" not in fb.hint


def test_a_matrix_answer_is_told_which_rows_are_off():
    w = TR.weights.copy()
    w[2] = _softmax(TR.scores[2] / 3)
    fb = check("attention-weights", w)
    assert "'sat'" in fb.hint and "'cat'" not in fb.hint.split("others")[0]


def test_a_count_is_told_which_counts_are_off():
    fb = check("cx-ex-count", [105, 96, 13, 15, 15, 229])
    assert fb.misconception is None and "comparisons" in fb.hint and "FLOPs" in fb.hint
    assert "multiplications" not in fb.hint


def test_a_hint_never_holds_a_value_of_the_reference():
    rng = np.random.default_rng(0)
    for label in REAL:
        ref = _reference(label)
        answer = ref + rng.uniform(0.03, 0.3, size=ref.shape) * rng.choice([-1, 1], size=ref.shape)
        fb = check(label, answer)
        if fb.misconception is not None or fb.status != "incorrect":
            continue
        text = fb.hint + " " + fb.message
        said = {float(x) for x in re.findall(r"-?\d+\.\d+", text)} - {exercise(label).atol}
        assert not any(np.isclose(x, r, atol=1e-4) for x in said for r in ref.ravel()), (label, str(fb))


def test_a_rounded_wrong_answer_is_located_at_its_own_precision():
    """[0.03, 0.64, 0.01, 0.24] for softmax([1000, 1002, 999, 1001]) = [0.0871, 0.6439, 0.0321, 0.2369]: at 2
    decimals entries 1 and 3 are right, and the hint says so instead of "4 of 4 entries are off"."""
    fb = check("softmax-stable", [0.03, 0.64, 0.01, 0.24])
    assert fb.status == "incorrect" and fb.misconception is None
    assert "At the 2 decimals you give" in fb.hint and "entry 0 and entry 2" in fb.hint


def test_a_right_method_with_rounded_steps_is_told_so_not_a_wrong_step():
    """e^0.5 taken as 1.65 and e^0.75 as 2.11 in the row of "mat": the row sums to 1, the method is right."""
    fb = check("worked-ex-mat:weights", [0.1894, 0.1894, 0.1894, 0.1894, 0.2423])
    assert "method looks right" in fb.hint and "rounding" in fb.hint and "division" not in fb.hint


def test_a_miscopied_weight_is_located_and_its_sum_said_not_named_a_method_mistake():
    fb = check("worked-ex-mat:weights", [0.189, 0.189, 0.198, 0.189, 0.243])
    assert fb.misconception is None and "sum to [1.008]" in fb.message and "'sat'" in fb.hint
