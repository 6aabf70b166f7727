"""Tests of attnlib.exercises: every reference passes its own check, each classic wrong answer gets its
own message, equivalent forms and tolerance edges are accepted, bad answers get messages (never a
traceback), and nothing in the registry stores an answer.

The right answers below are computed the way a learner would, with attnlib's public functions (or
by hand, as the exercise's solution does), never through the checker's private helpers; the wrong
answers are written out here as the mistake itself (a softmax over axis 0, a division by d_k, ...).
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import replace
from pathlib import Path
from unittest import mock

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import attnlib
import attnlib.examples
from attnlib import exercises, feedback, misconceptions
from attnlib.exercises import EXERCISES, exercise
from attnlib.feedback import Feedback, check
from attnlib.misconceptions import MISCONCEPTIONS

CLASSIC = (
    "scale-d_k", "no-scale", "wrong-axis", "k-not-transposed", "no-max-subtraction", "not-normalised",
    "weights-not-output", "mask-flipped", "mask-diagonal-excluded", "mask-one-ahead", "scale-sqrt-n",
)


def softmax_rows(x: np.ndarray, axis: int = -1) -> np.ndarray:
    """The learner's own softmax: stable, over ``axis``."""
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def masked_softmax(x: np.ndarray, allowed: np.ndarray) -> np.ndarray:
    """A hand-written masked softmax: -inf where not allowed; an empty row gives 0/0 = NaN."""
    z = np.where(allowed, x, -np.inf)
    with np.errstate(invalid="ignore"):
        e = np.exp(z - z.max(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)


def online_states(x: np.ndarray) -> np.ndarray:
    """(m, ℓ) after each key as a learner checks them: m the maximum so far, ℓ = Σ e^(s_i − m) so far."""
    m = np.maximum.accumulate(x)
    ell = [np.exp(x[: j + 1] - m[j]).sum() for j in range(len(x))]
    return np.column_stack([m, ell])  # (n, 2)


# ---------------------------------------------------------------- right answers, as a learner computes them
def learner_answers() -> dict[str, object]:
    ex = attnlib.cat_sat_on_mat()
    tr = attnlib.trace_attention(ex.Q, ex.K, ex.V, tokens=ex.tokens)
    abc = attnlib.three_directions()
    cs = attnlib.cat_sits()
    Q, V = cs.X @ cs.W_Q, cs.X @ cs.W_V
    out: dict[str, object] = {}

    out["why-ex-margin"] = [np.log(9 * (n - 1)) for n in (10, 1000)]

    rng = np.random.default_rng(1)
    X5, Y7 = rng.normal(size=(5, 16)), rng.normal(size=(7, 16))
    W_Q, W_K, W_V = (rng.normal(size=(16, d)) for d in (4, 4, 6))
    Qs, Ks, Vs = X5 @ W_Q, X5 @ W_K, X5 @ W_V
    Os, As = attnlib.scaled_dot_product_attention(Qs, Ks, Vs, return_weights=True)
    out["qkv-ex-shapes:self"] = [W_Q.shape, W_K.shape, W_V.shape, Qs.shape, Ks.shape, Vs.shape,
                                 (Qs @ Ks.T).shape, As.shape, Os.shape]
    out["qkv-ex-shapes:params"] = W_Q.size + W_K.size + W_V.size
    Kc, Vc = Y7 @ W_K, Y7 @ W_V
    Oc, Ac = attnlib.scaled_dot_product_attention(Qs, Kc, Vc, return_weights=True)
    out["qkv-ex-shapes:cross"] = [Kc.shape, Vc.shape, (Qs @ Kc.T).shape, Ac.shape, Oc.shape]

    K_unit = abc.K / np.linalg.norm(abc.K, axis=1, keepdims=True)
    out["qkv-ex-prefer:unit-weights"] = attnlib.scaled_dot_product_attention(
        abc.Q, K_unit, abc.V, return_weights=True)[1][1]
    K_tied = cs.X @ cs.W_Q
    _, out["qkv-ex-symmetric:weights"] = attnlib.scaled_dot_product_attention(Q, K_tied, V,
                                                                              return_weights=True)
    out["qkv-ex-symmetric:scores"] = Q @ K_tied.T

    tr_raw = attnlib.trace_attention(ex.Q, ex.K, ex.V, tokens=ex.tokens, scale=1.0)
    p = tr_raw.weights[0]
    out["sc-ex-cat:weights"] = p
    out["sc-ex-cat:stats"] = [p.max(), attnlib.entropy(p)]
    out["sc-ex-sigma"] = 1 / (3.0 * 0.5 * np.sqrt(64))

    out["worked-ex-mat:scores"] = tr.scores[4]
    out["worked-ex-mat:scaled"] = tr.scaled_scores[4]
    out["worked-ex-mat:weights"] = tr.weights[4]
    out["worked-ex-mat:output"] = tr.output[4]
    V2 = ex.V.copy()
    V2[1] = 2 * ex.V[1]
    out["worked-ex-double-v"] = attnlib.trace_attention(ex.Q, ex.K, V2, tokens=ex.tokens).output - tr.output

    out["impl-ex-mask"] = attnlib.padding_mask([5, 3], 5)[:, None] & attnlib.causal_mask(5)

    c = attnlib.counts.flop_counts(n_q=3, n_k=5, d_k=4, d_v=2)
    out["cx-ex-count"] = [c.multiplies, c.adds, c.compares, c.exps, c.divides, c.flops]
    cfg = attnlib.models.attention_scale_table().row("LLaMA-2 70B").config
    out["cx-ex-kv-memory"] = [attnlib.kvcache.kv_cache_bytes(replace(cfg, n_kv_heads=h), 4096)
                              for h in (cfg.n_kv_heads, cfg.n_heads)]
    out["cx-ex-online"] = online_states(np.array([2.0, 0.0, 3.0, 5.0]))
    out["cx-ex-blocks"] = max(b for b in (2**k for k in range(4, 11))
                              if 4 * (b * b + 3 * b * 64) <= 256 * 2**10)

    mha4 = attnlib.MultiHeadAttention.from_weights(ex.Q, ex.K, ex.V, np.eye(4, 5), n_heads=4)
    win = np.tri(5, dtype=bool) & ~np.tri(5, k=-2, dtype=bool)  # query i sees keys i-1 and i
    out["masks-ex-window:mask"] = win
    out["masks-ex-window:weights"] = masked_softmax(ex.Q @ ex.K.T / 2, win)
    out["masks-ex-four-heads:weights"] = mha4(np.eye(5)).weights[:, 0]

    out["attention-scores"] = ex.Q @ ex.K.T
    out["attention-weights"] = softmax_rows(ex.Q @ ex.K.T / 2)
    out["attention-output"] = softmax_rows(ex.Q @ ex.K.T / 2) @ ex.V
    out["square-scores"] = ex.Q[:4] @ ex.K[:4].T
    out["causal-mask"] = np.tri(5, dtype=bool)
    out["causal-weights"] = masked_softmax(ex.Q @ ex.K.T / 2, np.tri(5, dtype=bool))
    out["softmax-stable"] = attnlib.softmax(np.array([1000.0, 1002.0, 999.0, 1001.0]))
    return out


ANSWERS = learner_answers()


def test_every_exercise_has_a_learner_answer():
    assert set(ANSWERS) == set(EXERCISES)


@pytest.mark.parametrize("label", sorted(EXERCISES))
def test_right_answer_passes(label):
    fb = check(label, ANSWERS[label])
    assert fb.status == "correct", str(fb)
    assert fb and fb.correct


@pytest.mark.parametrize("label", sorted(EXERCISES))
def test_reference_passes_its_own_check(label):
    assert check(label, exercise(label).reference()).correct


# ---------------------------------------------------------------- classic misconceptions, written out
def wrong_answers() -> list[tuple[str, str, object]]:
    """(label, expected misconception key, the wrong answer computed here by making the mistake)."""
    ex = attnlib.cat_sat_on_mat()
    S = ex.Q @ ex.K.T  # (5, 5) raw scores
    tri = np.tri(5, dtype=bool)
    P = attnlib.padding_mask([5, 3], 5)[:, None]  # (2, 1, 1, 5): impl-ex-mask's batch
    logits = np.array([1000.0, 1002.0, 999.0, 1001.0])
    with np.errstate(over="ignore", invalid="ignore"):
        naive = np.exp(logits) / np.exp(logits).sum()  # inf / inf
    online = np.array([2.0, 0.0, 3.0, 5.0])  # cx-ex-online's logits
    plain = np.cumsum(np.exp(online))  # e^(s_j), no maximum subtracted
    m = np.maximum.accumulate(online)  # the running maximum
    first, final = np.full(4, online[0]), np.full(4, online.max())
    no_rescale = np.cumsum(np.exp(online - m))  # each term relative to the maximum when it was added
    inverted = [1.0]
    for j in range(1, 4):  # old ℓ times e^(m' - m) instead of e^(m - m')
        inverted.append(np.exp(m[j] - m[j - 1]) * inverted[-1] + np.exp(online[j] - m[j]))
    heads_scores = np.stack([ex.Q[0, h] * ex.K[:, h] for h in range(4)])  # (H, n_k): "The" in each head
    return [
        ("attention-weights", "scale-d_k", softmax_rows(S / 4)),
        ("attention-weights", "no-scale", softmax_rows(S)),
        ("attention-weights", "scale-sqrt-n", softmax_rows(S / np.sqrt(5))),
        ("attention-weights", "wrong-axis", softmax_rows(S / 2, axis=0)),
        ("attention-weights", "not-normalised", np.exp(S / 2)),
        ("worked-ex-mat:weights", "scale-d_k", softmax_rows(S[4] / 4)),
        ("worked-ex-mat:weights", "wrong-axis", softmax_rows(S / 2, axis=0)),  # the whole matrix given
        ("worked-ex-mat:weights", "not-normalised", np.exp(S[4] / 2)),
        ("worked-ex-mat:scaled", "no-scale", S[4]),
        ("worked-ex-mat:scaled", "scale-sqrt-n", S[4] / np.sqrt(5)),
        ("worked-ex-mat:scores", "scaled-scores", S[4] / 2),
        ("worked-ex-mat:output", "weights-not-output", softmax_rows(S[4] / 2)),
        ("attention-output", "weights-not-output", softmax_rows(S / 2)),
        ("attention-output", "wrong-axis", softmax_rows(S / 2, axis=0) @ ex.V),
        ("attention-output", "scale-d_k", softmax_rows(S / 4) @ ex.V),
        ("attention-scores", "scores-transposed", ex.K @ ex.Q.T),
        ("square-scores", "k-not-transposed", ex.Q[:4] @ ex.K[:4]),
        ("softmax-stable", "no-max-subtraction", naive),
        ("softmax-stable", "not-normalised", np.exp(logits - logits.max())),
        ("cx-ex-online", "online-no-rescale", np.column_stack([m, no_rescale])),
        ("cx-ex-online", "online-rescale-inverted", np.column_stack([m, inverted])),
        ("cx-ex-online", "online-no-max", np.column_stack([m, plain])),
        ("cx-ex-online", "online-m-fixed", np.column_stack([first, np.cumsum(np.exp(online - first))])),
        ("cx-ex-online", "online-final-max", np.column_stack([final, np.cumsum(np.exp(online - final))])),
        ("causal-mask", "mask-flipped", np.triu(np.ones((5, 5), dtype=bool))),
        ("causal-mask", "mask-diagonal-excluded", np.tri(5, k=-1)),
        ("causal-mask", "mask-one-ahead", np.tri(5, k=1, dtype=bool)),
        ("causal-weights", "mask-flipped", masked_softmax(S / 2, tri.T)),
        ("causal-weights", "mask-diagonal-excluded", masked_softmax(S / 2, np.tri(5, k=-1, dtype=bool))),
        ("causal-weights", "mask-one-ahead", masked_softmax(S / 2, np.tri(5, k=1, dtype=bool))),
        ("causal-weights", "no-mask", softmax_rows(S / 2)),
        ("causal-weights", "mask-after-softmax", softmax_rows(S / 2) * tri),
        ("causal-weights", "mask-zero-scores", softmax_rows(np.where(tri, S / 2, 0.0))),
        ("causal-weights", "scale-d_k", masked_softmax(S / 4, tri)),
        ("sc-ex-cat:weights", "scale-kept", softmax_rows(S[0] / 2)),
        ("masks-ex-four-heads:weights", "scale-full-width", softmax_rows(heads_scores / 2)),  # √(H·d_head)
        ("why-ex-margin", "margin-n-keys", [np.log(9 * n) for n in (10, 1000)]),
        ("why-ex-margin", "margin-exp", [9 * (n - 1) for n in (10, 1000)]),
        ("why-ex-margin", "margin-log10", [np.log10(9 * (n - 1)) for n in (10, 1000)]),
        ("qkv-ex-shapes:self", "shapes-w-transposed",
         [(4, 16), (4, 16), (6, 16), (5, 4), (5, 4), (5, 6), (5, 5), (5, 5), (5, 6)]),
        ("qkv-ex-shapes:self", "shapes-output-d_k",
         [(16, 4), (16, 4), (16, 6), (5, 4), (5, 4), (5, 6), (5, 5), (5, 5), (5, 4)]),
        ("qkv-ex-shapes:self", "shapes-qt-k",
         [(16, 4), (16, 4), (16, 6), (5, 4), (5, 4), (5, 6), (4, 4), (4, 4), (5, 6)]),
        ("qkv-ex-shapes:params", "params-d_k-everywhere", 3 * 16 * 4),
        ("qkv-ex-shapes:cross", "scores-transposed", [(7, 4), (7, 6), (7, 5), (7, 5), (5, 6)]),
        ("qkv-ex-shapes:cross", "shapes-one-output-per-key", [(7, 4), (7, 6), (5, 7), (5, 7), (7, 6)]),
        ("qkv-ex-prefer:unit-weights", "unit-keys-as-given", [1 / 3, 1 / 3, 1 / 3]),
        ("sc-ex-sigma", "sigma-ignored", 1 / 8),
        ("sc-ex-sigma", "sigma-variances", 1 / (9 * 0.25 * 8)),
        ("sc-ex-sigma", "sigma-multiplied", 3 * 0.5 / 8),
        ("sc-ex-sigma", "sigma-d_k", 1 / (3 * 0.5 * 64)),
        ("impl-ex-mask", "mask-batch-as-heads", attnlib.padding_mask([5, 3], 5) & attnlib.causal_mask(5)),
        ("impl-ex-mask", "mask-flipped", attnlib.padding_mask([5, 3], 5)[:, None] & tri.T),
        ("impl-ex-mask", "mask-causal-only", attnlib.causal_mask(5)),
        ("impl-ex-mask", "mask-padding-only", P),
        ("impl-ex-mask", "mask-or", P | tri),
        ("impl-ex-mask", "mask-one-ahead", P & np.tri(5, k=1, dtype=bool)),
        ("cx-ex-count", "flops-sum-l-adds", [105, 96 + 15 + 3 + 6, 12, 15, 15, 228 + 24]),
        ("cx-ex-count", "flops-exp-counted", [105, 96, 12, 15, 15, 228 + 15]),
        ("cx-ex-count", "flops-max-n-compares", [105, 96, 15, 15, 15, 231]),
        # 5 queries of 3 keys: adds 15·3 + 15 + 5·2 + 10·2, comparisons 5·2
        ("cx-ex-count", "flops-swapped", [105, 45 + 15 + 10 + 20, 10, 15, 15, 220]),
        ("cx-ex-kv-memory", "kv-keys-only", [2**30 * 5 // 8, 5 * 2**30]),
        ("cx-ex-kv-memory", "kv-query-heads", [10 * 2**30, 10 * 2**30]),
        ("cx-ex-kv-memory", "bytes-units", [1.25, 10]),
        ("cx-ex-blocks", "blocks-missing-arrays", 256),
        ("cx-ex-blocks", "blocks-float64", 64),
        ("cx-ex-blocks", "blocks-not-power-of-two", 177),
        ("masks-ex-window:weights", "mask-after-softmax",
         softmax_rows(S / 2) * (tri & ~np.tri(5, k=-2, dtype=bool))),
        ("masks-ex-window:mask", "mask-one-ahead", np.tri(5, k=1, dtype=bool) & ~np.tri(5, k=-2, dtype=bool)),
        ("causal-mask", "mask-inverted", ~tri),
        ("attention-weights", "weights-transposed", np.asarray(exercise("attention-weights").reference()).T),
        ("impl-ex-mask", "mask-inverted", ~np.asarray(exercise("impl-ex-mask").reference())),
    ]


WRONG = wrong_answers()


@pytest.mark.parametrize(("label", "key", "answer"), WRONG, ids=[f"{lab}-{key}" for lab, key, _ in WRONG])
def test_misconception_gets_its_own_message(label, key, answer):
    fb = check(label, answer)
    assert fb.status == "incorrect", str(fb)
    assert fb.misconception == key, str(fb)
    assert MISCONCEPTIONS[key].name in str(fb)
    assert not fb


def test_every_classic_misconception_is_tested_and_detected_somewhere():
    tested = {key for _, key, _ in WRONG}
    assert set(CLASSIC) <= tested
    detected = {key for ex in EXERCISES.values() for key in ex.detects()}
    assert set(CLASSIC) <= detected


def test_classic_messages_are_distinct():
    texts = [MISCONCEPTIONS[k].explanation for k in CLASSIC]
    assert len(set(texts)) == len(texts)
    names = [MISCONCEPTIONS[k].name for k in CLASSIC]
    assert len(set(names)) == len(names)


# what chapter 4 teaches about the factor: feedback in chapters 1-3 must not explain with it
CHAPTER_4_RESULTS = re.compile(r"varian|saturat|temperature|jacobian|gradient", re.I)


def test_feedback_before_chapter_4_does_not_use_its_results():
    early = {(label, key) for label, ex in EXERCISES.items() if ex.chapter[:2] in ("01", "02", "03")
             for key, _ in ex.wrong_answers()}
    assert {key for _, key in early} >= {"scale-d_k", "no-scale", "scale-sqrt-n"}  # the shared ones
    said = [(label, key) for label, key in sorted(early)
            if CHAPTER_4_RESULTS.search(" ".join((MISCONCEPTIONS[key].name, MISCONCEPTIONS[key].explanation,
                                                   MISCONCEPTIONS[key].hint)))]
    assert not said, f"misconception texts shown in chapters 1-3 that state chapter 4's results: {said}"
    assert CHAPTER_4_RESULTS.search("q·k/√d_k has a variance of about 1")  # the rule sees such a text


@pytest.mark.parametrize("label", sorted(EXERCISES))
def test_detected_misconceptions_are_named(label):
    ex = exercise(label)
    keys = ex.detects()
    assert all(k in MISCONCEPTIONS for k in keys)
    # every recomputed wrong answer it lists is either accepted (too close to tell) or named
    for _, arr in ex.wrong_answers():
        fb = check(label, arr)
        assert fb.correct or fb.misconception is not None, str(fb)


def test_scale_messages_fill_in_the_example():
    ex = attnlib.cat_sat_on_mat()
    text = str(check("attention-weights", softmax_rows(ex.Q @ ex.K.T / 4)))
    assert "d_k = 4" in text and "√d_k = 2" in text
    text = str(check("attention-weights", softmax_rows(ex.Q @ ex.K.T / 2, axis=0)))
    assert "([1, 1, 1, 1, 1])" in text


# --------------------------------------------------------------------------- equivalent forms
def test_equivalent_forms_of_a_row():
    w = ANSWERS["worked-ex-mat:weights"]
    tr = attnlib.trace_attention(*(getattr(attnlib.cat_sat_on_mat(), a) for a in "QKV"))
    forms = [w, list(w), tuple(w), w.astype(np.float32), w[None, :], [list(w)], tr.weights,
             tr.weights.tolist(), np.round(w, 3)]
    for form in forms:
        fb = check("worked-ex-mat:weights", form)
        assert fb.correct, str(fb)
    assert "Checked row 4" in str(check("worked-ex-mat:weights", tr.weights))


def test_equivalent_forms_of_a_number():
    for form in (128, 128.0, np.int64(128), np.float16(128), np.array(128), [128], np.array([[128]])):
        assert check("cx-ex-blocks", form).correct, form
    for form in (1 / 12, np.float32(1 / 12), np.array(1 / 12), [1 / 12], (1 / 12,)):
        assert check("sc-ex-sigma", form).correct
    assert check("cx-ex-kv-memory", [1.25 * 2.0**30, 10 * 2**30]).correct


@pytest.mark.parametrize("form", [
    np.tri(5, dtype=bool), np.tri(5), np.tri(5, dtype=int), np.tri(5).tolist(),
    np.where(np.tri(5) > 0, 0.0, -np.inf), np.where(np.tri(5) > 0, 0.0, -1e9),
    np.tri(5, dtype=bool)[None], np.tri(5, dtype=np.float32),
], ids=["bool", "float01", "int01", "list01", "additive-inf", "additive-1e9", "leading-axis", "float32"])
def test_equivalent_forms_of_a_mask(form):
    assert check("causal-mask", form).correct


def test_mask_forms_that_broadcast():
    P, C = attnlib.padding_mask([5, 3], 5), attnlib.causal_mask(5)
    assert check("impl-ex-mask", P[:, None] & C).correct  # (2, 1, 5, 5)
    assert check("impl-ex-mask", np.broadcast_to(P[:, None] & C, (2, 2, 5, 5))).correct
    assert check("impl-ex-mask", np.where(P[:, None] & C, 0.0, -np.inf)).correct
    assert check("impl-ex-mask", (P[:, None] & C).astype(int)).correct


def test_shapes_as_lists_or_arrays():
    shapes = ANSWERS["qkv-ex-shapes:cross"]
    assert check("qkv-ex-shapes:cross", np.array(shapes)).correct
    assert check("qkv-ex-shapes:cross", [list(s) for s in shapes]).correct


# --------------------------------------------------------------------------- tolerance
def test_tolerance_edges_three_decimals():
    w = np.asarray(ANSWERS["attention-weights"])
    assert check("attention-weights", w + 0.00049).correct  # every entry just inside
    assert check("attention-weights", np.round(w, 3)).correct
    off = w.copy()
    off[2, 3] += 0.0007  # one entry just outside; rows still sum to 1 within 0.001
    fb = check("attention-weights", off)
    assert fb.status == "incorrect" and fb.misconception is None
    assert "1 of 25 entries is off" in fb.message and "[2, 3]" not in fb.message


def test_tolerance_edges_two_decimals():
    m = np.log(9 * np.array([9, 999]))
    assert check("why-ex-margin", np.round(m, 2)).correct
    assert check("why-ex-margin", m + 0.0049).correct
    assert not check("why-ex-margin", m + [0.0, 0.006]).correct


def test_whole_numbers_are_exact():
    assert not check("cx-ex-blocks", 127)
    assert check("cx-ex-blocks", 128.0)
    fb = check("cx-ex-blocks", 128.5)
    assert fb.status == "invalid" and "not whole numbers" in fb.message


def test_a_wrong_answer_is_never_told_the_right_one():
    """The generic message says where an answer is furthest off, never the expected value or whether
    the answer is too high or too low (a learner could read or bisect the answer from the messages)."""
    for label, ex in EXERCISES.items():
        if ex.kind not in ("real", "integer"):
            continue
        ref = np.asarray(ex.reference(), dtype=np.float64)
        wrong = ref * 1.37 + 0.11 + np.arange(ref.size).reshape(ref.shape) * 0.013
        if ex.kind == "integer":
            wrong = np.round(wrong) + 1
        for answer in (wrong, ref + 10 * max(ex.atol, 1)):  # well off; just off, one way
            fb = check(label, answer)
            assert fb.status == "incorrect", (label, str(fb))
            if fb.misconception is None:
                text = str(fb)
                assert "expected" not in text.replace("Not the expected answer", "") and \
                    "too high" not in text and "too low" not in text, (label, text)
                assert "largest difference" not in text and " at " not in fb.message, (label, text)
                # no number of the reference in the message (its counts and tolerance aside)
                said = {float(x) for x in re.findall(r"-?\d+\.\d+", fb.message)} - {ex.atol}
                assert not any(np.isclose(x, r, atol=ex.atol) for x in said for r in ref.ravel()), \
                    (label, text)


def test_a_wrong_mask_is_told_which_rows_are_off_never_which_entries():
    """The message never says how many entries differ or where; the hint names the rows (queries) that
    are off, never the keys: naming entries would hand over the mask one entry at a time."""
    ok = np.tri(5, dtype=bool)
    for flip in [(3, 1), (0, 0), (4, 4)]:
        wrong = ok.copy()
        wrong[flip] = ~wrong[flip]  # one entry off: not a named mistake
        fb = check("causal-mask", wrong)
        assert fb.misconception is None and fb.status == "incorrect", str(fb)
        assert not re.search(r"\d+ of \d+|query \d|key \d|row \d", fb.message), fb.message
        assert f"row {flip[0]}" in fb.hint and not re.search(r"key \d|column", fb.hint), fb.hint
    two_off = ok.copy()
    two_off[3, 1] = two_off[2, 0] = False
    assert check("causal-mask", wrong).message == check("causal-mask", two_off).message
    inverted = check("causal-mask", ~ok)  # True marking the forbidden pairs
    assert inverted.misconception == "mask-inverted" and "True means" in inverted.message


# ---------------------------------------------------------------- bad answers: messages, never tracebacks
class Opaque:
    pass


BAD = [
    ("none", None, "None"),
    ("string", "0.25, 0.3", "text"),
    ("bytes", b"abc", "text"),
    ("dict", {"The": 0.2}, "dict"),
    ("set", {0.1, 0.2}, "set"),
    ("empty", [], "empty"),
    ("ragged", [[1, 2], [3]], "could not be read"),
    ("list-of-none", [None] * 5, "could not be read"),
    ("list-of-str", ["a"] * 5, "not numbers"),
    ("bool", True, "True/False"),
    ("bool-array", [True] * 5, "True/False"),
    ("complex", [1j] * 5, "complex"),
    ("object", Opaque(), "Opaque"),
    ("function", len, "builtin_function_or_method"),
]


@pytest.mark.parametrize("label", ["worked-ex-mat:weights", "attention-output", "cx-ex-count",
                                   "cx-ex-blocks"])
@pytest.mark.parametrize(("name", "answer", "words"), BAD, ids=[b[0] for b in BAD])
def test_bad_answers_get_a_message(label, name, answer, words):
    fb = check(label, answer)
    assert isinstance(fb, Feedback)
    assert fb.status == "invalid"
    assert words in fb.message
    assert not fb
    assert "Traceback" not in str(fb)


@pytest.mark.parametrize("label", sorted(EXERCISES))
def test_unanswered_and_nan_and_shape(label):
    ex = exercise(label)
    fb = check(label, ...)
    assert fb.status == "unanswered" and ex.tolerance in fb.message
    assert ex.answer_form not in fb.message, "what to enter is the check cell's comment, not said twice"
    ref = np.asarray(ex.reference())
    if ex.kind == "mask":
        bad = np.full(ref.shape, np.nan)
        assert check(label, bad).status == "invalid"
        assert "does not broadcast" in check(label, np.ones((3, 7))).message
        return
    nan = np.asarray(ref, dtype=np.float64).copy()
    nan.flat[0] = np.nan
    assert check(label, nan).status in ("invalid", "incorrect")
    inf = np.asarray(ref, dtype=np.float64).copy()
    inf.flat[-1] = np.inf
    assert check(label, inf).status in ("invalid", "incorrect")
    wrong_shape = np.zeros(ref.size + 3)
    fb = check(label, wrong_shape)
    assert fb.status == "invalid"
    assert f"({ref.size + 3},)" in fb.message and feedback._fmt_shape(ref.shape) in fb.message


def test_nan_message_points_at_the_max():
    w = np.asarray(ANSWERS["attention-weights"]).copy()
    w[1, 2] = np.nan
    fb = check("attention-weights", w)
    assert fb.status == "invalid" and "NaN at entry [1, 2]" in fb.message and "row maximum" in fb.message


def test_tuple_of_output_and_weights_and_a_trace():
    ex = attnlib.cat_sat_on_mat()
    pair = attnlib.scaled_dot_product_attention(ex.Q, ex.K, ex.V, return_weights=True)
    assert "return_weights=True" in check("attention-output", pair).message
    tr = attnlib.trace_attention(ex.Q, ex.K, ex.V)
    assert "an AttentionTrace" in check("attention-output", tr).message


def test_bad_mask_values():
    fb = check("causal-mask", np.tri(5) * 2)
    assert fb.status == "invalid" and "0/1" in fb.message
    fb = check("causal-mask", np.where(np.tri(5) > 0, 1.0, -np.inf))
    assert fb.status == "invalid"


def test_unknown_label_raises_with_suggestions():
    with pytest.raises(ValueError, match="did you mean 'worked-ex-mat:weights'"):
        check("worked-ex-mat:weight", [0.2] * 5)
    with pytest.raises(ValueError, match="worked-ex-mat:scores"):
        exercise("worked-ex-mat")
    with pytest.raises(TypeError, match="label must be a string"):
        check(3, 1.0)


def test_attention_misconceptions_arguments():
    ex = attnlib.cat_sat_on_mat()
    with pytest.raises(ValueError, match="what must be"):
        misconceptions.attention_misconceptions(ex.Q, ex.K, ex.V, what="probabilities")
    with pytest.raises(ValueError, match=r"\(5, 4\), \(4, 4\), \(5, 4\)"):
        misconceptions.attention_misconceptions(ex.Q, ex.K[:4], ex.V)
    wrong = misconceptions.attention_misconceptions(ex.Q, ex.K, ex.V, what="output")
    assert wrong["weights-not-output"].shape == (5, 5)
    assert "k-not-transposed" not in wrong  # Q K does not exist for (5, 4) @ (5, 4)


# --------------------------------------------------------------------------- display
def test_feedback_display_is_deterministic_and_short():
    ex = attnlib.cat_sat_on_mat()
    feedbacks = [check("attention-weights", softmax_rows(ex.Q @ ex.K.T / 4 + 0.0123456789)),
                 check("attention-weights", np.asarray(ANSWERS["attention-weights"]) + 0.0123456789),
                 check("attention-weights", ANSWERS["attention-weights"]),
                 check("worked-ex-mat:weights", ...), check("worked-ex-mat:weights", "x"),
                 check("cx-ex-count", [1, 2, 3, 4, 5, 6]), check("causal-mask", np.ones((5, 5)))]
    for fb in feedbacks:
        text, md = str(fb), fb._repr_markdown_()
        assert text == repr(fb)
        assert not re.search(r"\d\.\d{5,}", text), text  # never more than 4 decimals
        assert fb.label not in text and fb.label not in md  # the label is plumbing: not in the reader's view
        assert "$" not in md.replace("\\$", "")
        assert str(check(fb.label, ...)) == str(check(fb.label, ...))


def test_unanswered_text_is_what_chapters_store():
    assert str(check("worked-ex-mat:weights", ...)) == (
        "… Not answered yet\n"
        "Replace ... with your answer and run this cell; it is checked to 3 decimals (within 0.0005)."
    )


def test_every_check_cell_says_what_to_enter_in_its_comment():
    """The unanswered message leaves out what to enter: each check cell's ``answer = ...  # ...`` comment
    says it, in the exercise's own words (its ``answer_form``); the book's pages show the cell without
    that message (tag ``remove-output``), the notebooks keep it."""
    import json

    root = Path(__file__).resolve().parents[1]
    cells = 0
    for path in sorted((root / "book").glob("0*.ipynb")):
        for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
            source = "".join(cell["source"])
            for label in re.findall(r'check\("([^"]+)", answer\)', source):
                cells += 1
                call = re.escape(f'check("{label}", answer)')
                said = re.search(r"answer = \.\.\.\s*# (.*)\n" + call, source)
                assert said, f"{path.name}: the check cell of {label} says nothing of what to enter"
                assert said.group(1).strip() == exercise(label).answer_form.strip(), (path.name, label)
                # its stored "Not answered yet" is for a learner in a notebook; a page has no kernel to run it
                assert "remove-output" in cell["metadata"].get("tags", []), (
                    f"{path.name}: the check cell of {label} shows its unanswered output on the page")
    assert cells >= 20, f"only {cells} check cells found"


def test_markdown_escapes_markup():
    fb = Feedback("x", "incorrect", "a*b_c $d$ {e} [f] <g> `h`", None, "q_i · k_j")
    md = fb._repr_markdown_()
    for raw in ("*b", "_c", "$d", "{e", "[f", "<g", "`h"):
        assert raw not in md.replace("\\" + raw[0], "")
    assert "Hint: q_i · k_j" in str(fb)


# --------------------------------------------------------------------------- nothing stored
def test_registry_holds_functions_and_words_not_answers():
    for label, ex in EXERCISES.items():
        assert callable(ex.reference) and callable(ex.wrong_answers), label
        for f in dataclasses.fields(ex):
            value = getattr(ex, f.name)
            assert not isinstance(value, np.ndarray), (label, f.name)
            if isinstance(value, (list, tuple)):
                assert all(isinstance(v, (str, int)) for v in value), (label, f.name)
    module_arrays = [name for name, v in vars(exercises).items() if isinstance(v, np.ndarray)]
    assert module_arrays == []


def test_reference_is_computed_at_call_time():
    ex = attnlib.cat_sat_on_mat()
    Q2 = ex.Q.copy()
    Q2[4] = [0.0, 3.0, 0.0, 0.0]
    changed = attnlib.examples.Example(name="changed", tokens=ex.tokens, Q=Q2, K=ex.K, V=ex.V)
    with mock.patch.object(attnlib.examples, "cat_sat_on_mat", return_value=changed):
        new = exercise("worked-ex-mat:weights").reference()
        assert check("worked-ex-mat:weights", attnlib.trace_attention(Q2, ex.K, ex.V).weights[4]).correct
    assert not np.allclose(new, ANSWERS["worked-ex-mat:weights"], atol=1e-3)


small = st.floats(-2, 2, allow_nan=False, width=64).map(lambda x: round(x, 2))


@given(Q=hnp.arrays(np.float64, (5, 4), elements=small), K=hnp.arrays(np.float64, (5, 4), elements=small),
       V=hnp.arrays(np.float64, (5, 4), elements=small))
def test_changing_the_inputs_changes_the_reference(Q, K, V):
    base = attnlib.cat_sat_on_mat()
    other = attnlib.examples.Example(name="random", tokens=base.tokens, Q=Q, K=K, V=V)
    with mock.patch.object(attnlib.examples, "cat_sat_on_mat", return_value=other):
        for label in ("attention-weights", "attention-output", "causal-weights", "worked-ex-mat:output"):
            ref = exercise(label).reference()
            mine = softmax_rows(np.where(np.tri(5) > 0, Q @ K.T / 2, -np.inf) if label == "causal-weights"
                                else Q @ K.T / 2)
            if label != "attention-weights" and label != "causal-weights":
                mine = mine @ V
            if label == "worked-ex-mat:output":
                mine = mine[4]
            np.testing.assert_allclose(ref, mine, atol=1e-12)
            assert check(label, mine).correct


@given(x=st.lists(st.integers(-50, 50), min_size=4, max_size=4))
def test_softmax_reference_follows_its_logits(x):
    logits = np.array(x, dtype=np.float64) + 1000.0
    with mock.patch.object(exercises.running_examples, "_LARGE_LOGITS", tuple(logits)), \
            mock.patch.object(exercises.complexity, "_ONLINE_LOGITS", tuple(logits)):
        ref = exercise("softmax-stable").reference()
        np.testing.assert_allclose(ref, softmax_rows(logits), atol=1e-12)
        np.testing.assert_allclose(exercise("cx-ex-online").reference(), online_states(logits), rtol=1e-12)


@pytest.mark.parametrize("label", ["attention-output"])
def test_an_output_computed_from_wrong_weights_is_not_told_about_its_own_sums(label):
    """The weights' messages ("the columns sum to 1", "yours sum to ...") would be false of an output."""
    named = 0
    for key, cand in exercise(label).wrong_answers():
        if key in ("wrong-axis", "not-normalised", "mask-after-softmax"):
            fb = check(label, cand)
            if fb.misconception == key:
                named += 1
                assert "columns sum to 1" not in fb.message and "sum to [" not in fb.message, fb.message
                assert "sum to (" not in fb.message and "{" not in fb.message, fb.message
    assert named >= 1, label


def test_no_message_has_an_unfilled_or_doubled_placeholder():
    for label, ex in EXERCISES.items():
        for key, cand in ex.wrong_answers():
            text = str(check(label, cand))
            assert not re.search(r"\{\w+\}|d_k = d_k|√d_k = √d_k|√n = √n", text), (label, key, text)
