"""The self-check quizzes (book/quizzes/*.yml, book/press/quiz.py): their rules, their numbers, their HTML.

* Every chapter has a quiz and every quiz file parses: 3 to 6 questions, each option with an
  explanation, exactly one right option for a ``single`` question.
* Every number a question shows is recomputed here with attnlib (or NumPy where the question is about
  NumPy itself): the verifier of each question returns, for every number in its text, options and
  explanations, the value it computes, and the test fails if a shown number is not covered, if a
  covered number is not shown (a stale verifier), or if the shown number is not the computed value
  rounded as shown. The verifier computes which options are right (an option whose truth depends on a
  number, "mostly", "largest", "at most", is judged by the value attnlib computes; only the questions in
  ``CONCEPTUAL`` have declared keys), and a
  numeric question's right answer and every known wrong answer (the classic misconceptions) are
  recomputed exactly and must be classified as such by ``Question.matches``, the rule quiz.js uses.
* Malformed files stop with a QuizError that names the file and the question; the Sphinx directive
  turns it into a failed build (a tiny Sphinx project is built in a temporary directory).
* The HTML escapes everything that is not markup, gives every input a label and every question one
  live region; the Markdown for the notebook edition lists the questions with the answers in
  ``<details>``.
"""

from __future__ import annotations

import math
import re
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest
import yaml

import attnlib
from attnlib import softmax
from press import quiz

REPO_ROOT = Path(__file__).resolve().parents[1]
BOOK = REPO_ROOT / "book"

QUIZ_DIR = BOOK / "quizzes"
CHAPTERS = sorted(p.stem for p in BOOK.glob("[0-9][0-9]_*.ipynb"))
QUIZ_FILES = sorted(QUIZ_DIR.glob("*.yml"))

# A number as a reader sees it: digits not glued to a word or a subscript (d_k, W_Q, float32, k_1).
NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d+)?")


# --------------------------------------------------------------------------- what a verifier returns
@dataclass
class Verified:
    """What a question's computation found.

    numbers: every number the question shows (as written) -> the value computed for it.
    correct: the letters of the right options, when the computation decides them.
    answer, wrong: a numeric question's exact answer and the exact value of each known wrong answer.
    """

    numbers: dict[str, float] = field(default_factory=dict)
    correct: set[str] | None = None
    answer: float | None = None
    wrong: list[float] | None = None


VERIFIERS: dict[tuple[str, str], Callable[[], Verified]] = {}


def verifies(stem: str, qid: str) -> Callable[[Callable[[], Verified]], Callable[[], Verified]]:
    def register(fn: Callable[[], Verified]) -> Callable[[], Verified]:
        VERIFIERS[(stem, qid)] = fn
        return fn

    return register


def given(*values: float) -> dict[str, float]:
    """Inputs a question states (sizes, indices): shown as written, so they map to themselves."""
    return {quiz._number_text(v): float(v) for v in values}


def letters(flags: list[bool]) -> set[str]:
    return {quiz.LETTERS[i] for i, f in enumerate(flags) if f}


def fails(fn: Callable[[], object]) -> bool:
    try:
        fn()
    except ValueError:
        return True
    return False


RNG_SEED = 0


# --------------------------------------------------------------------------- chapter 1
@verifies("01_why_attention", "it-output")
def _() -> Verified:
    words = attnlib.features.animal_street()
    out, w = attnlib.scaled_dot_product_attention(words.Q, words.K, words.V, return_weights=True)
    it, animal = words.tokens.index("it"), words.tokens.index("animal")
    assert w[it].argmax() == animal and w[it, animal] > 0.5, '"it" puts most of its weight on "animal"'
    candidates = [w[it] @ words.V, words.V[animal], words.V[it], words.V.mean(axis=0)]
    return Verified(numbers=given(words.n, 1),
                    correct=letters([np.allclose(c, out[it]) for c in candidates]))


@verifies("01_why_attention", "caption-summary")
def _() -> Verified:
    rng = np.random.default_rng(RNG_SEED)
    d_in, d_s, n = 8, 512, 196  # n patches in, a state of d_s numbers
    W_x = rng.normal(size=(d_in, d_s))
    W_s = rng.normal(size=(d_s, d_s)) / np.sqrt(d_s)
    states = attnlib.baselines.rnn_states(rng.normal(size=(n, d_in)), W_x, W_s)  # (n, d_s)
    basic, attending = states[-1].size, states.size  # the last state; every state
    options = [(basic, attending), (attending, attending), (basic, basic), (n, basic)]
    return Verified(
        numbers={**given(n, d_s), "100352": attending},
        correct=letters([o == (d_s, n * d_s) for o in options]),
    )


@verifies("01_why_attention", "near-and-far")
def _() -> Verified:
    n, query, far, near, lead = 1000, 900, 100, 890, 5
    s = np.zeros(n)  # the scores of the query of token `query`: every other key 0 ...
    s[[far, near]] = lead  # ... and the two names `lead` higher
    w = attnlib.softmax(s)
    others = np.delete(w, [far, near]).sum()
    equal = bool(np.isclose(w[far], w[near]))
    return Verified(
        numbers={**given(n, query, far, near, lead, 0, 2), "0.11": w[far], "0.50": 0.5, "0.77": others,
                 "998": n - 2, "10": query - near, "800": query - far},
        correct=letters([equal and round(w[far], 2) == 0.11, w[near] > w[far],
                         equal and np.isclose(w[far], 0.5)]),
    )


# --------------------------------------------------------------------------- chapter 2
@verifies("02_qkv", "no-miss")
def _() -> Verified:
    abc = attnlib.three_directions()
    q = np.zeros((1, abc.d_k))  # scores 0 with every key
    assert np.array_equal(q @ abc.K.T, np.zeros((1, abc.K.shape[0])))
    out, w = attnlib.scaled_dot_product_attention(q, abc.K, abc.V, return_weights=True)
    n_k = abc.K.shape[0]
    options = [abc.V.mean(axis=0), np.zeros(abc.V.shape[1]), abc.V[0]]
    return Verified(
        numbers={**given(0), "1": w[0, 0] * n_k, "3": 1 / w[0, 0]},  # "1/3 each"
        correct=letters([bool(np.allclose(out[0], o)) for o in options]
                        + [fails(lambda: attnlib.scaled_dot_product_attention(q, abc.K, abc.V))]),
    )


@verifies("02_qkv", "shared-dimensions")
def _() -> Verified:
    rng = np.random.default_rng(RNG_SEED)
    sdpa = attnlib.scaled_dot_product_attention
    Q, K, V = rng.normal(size=(2, 4)), rng.normal(size=(5, 4)), rng.normal(size=(5, 6))
    _, w = sdpa(Q, K, V, return_weights=True)  # d_v != d_k and n_q != n_k are fine
    assert w.shape == (2, 5)
    must_agree = [
        fails(lambda: sdpa(Q, rng.normal(size=(5, 3)), V)),  # widths of Q and K
        fails(lambda: sdpa(Q, K, rng.normal(size=(4, 6)))),  # rows of K and V
        fails(lambda: sdpa(Q, K, rng.normal(size=(5, 7)))),  # width of V (not that of K)
        fails(lambda: sdpa(rng.normal(size=(3, 4)), K, V)),  # number of queries
    ]
    return Verified(numbers=given(2, 5), correct=letters(must_agree))


def _dot_and_cos_agree(K: np.ndarray, Q: np.ndarray) -> bool:
    """Do the dot product and the cosine rank the keys alike for every query (row of Q)?"""
    dots = Q @ K.T  # (n_q, n_k)
    cos = dots / np.outer(np.linalg.norm(Q, axis=1), np.linalg.norm(K, axis=1))
    return bool(all(np.array_equal(np.argsort(d), np.argsort(c)) for d, c in zip(dots, cos, strict=True)))


@verifies("02_qkv", "equal-length-keys")
def _() -> Verified:
    rng = np.random.default_rng(RNG_SEED)
    Q = rng.normal(size=(200, 2))
    K_any = rng.normal(size=(4, 2)) * np.array([[0.5], [1.0], [2.0], [3.0]])
    K_equal = 3.0 * K_any / np.linalg.norm(K_any, axis=1, keepdims=True)  # all of length 3
    Q_unit = Q / np.linalg.norm(Q, axis=1, keepdims=True)
    q, K_orth = np.array([1.0, 2.0]), np.array([[3.0, 0.0], [0.0, 1.0]])  # keys at right angles
    dots = K_orth @ q
    cos = dots / (np.linalg.norm(K_orth, axis=1) * np.linalg.norm(q))
    assert dots.argmax() == 0 and cos.argmax() == 1
    return Verified(
        numbers={**given(0, 1, 2, 3), "3": dots[0], "2": dots[1]},
        correct=letters([_dot_and_cos_agree(K_equal, Q), _dot_and_cos_agree(K_any, Q_unit),
                         _dot_and_cos_agree(K_orth, Q)]),
    )


@verifies("02_qkv", "learned-row")
def _() -> Verified:
    from attnlib.learned import PRONOUN_FEATURES, pronoun_batch, train_layer

    layer = train_layer(pronoun_batch, d_k=5, steps=300, lr=5.0, seed=0)  # chapter 2's layer
    features = {name: np.eye(len(PRONOUN_FEATURES))[i] for i, name in enumerate(PRONOUN_FEATURES)}
    x_it = features["pronoun"]
    x_animal, x_street = features["noun"] + features["animate"], features["noun"]
    raw = {k: x_it @ layer.W_QK @ x for k, x in (("animal", x_animal), ("street", x_street))}
    noun, animate = layer.W_QK[PRONOUN_FEATURES.index("pronoun"), :2]
    options = [animate, noun + animate, noun, 0.0]
    return Verified(
        numbers={**given(0, 1), "6.9": noun, "15.8": animate, "22.7": noun + animate},
        correct=letters([round(o, 1) == round(raw["animal"] - raw["street"], 1) for o in options]),
    )


# --------------------------------------------------------------------------- chapter 4
@verifies("04_scaling", "variance")
def _() -> Verified:
    d_k = 64
    exact = attnlib.dot_product_variance(d_k)
    samples = attnlib.dot_product_samples(d_k, 20_000, np.random.default_rng(RNG_SEED))
    est = attnlib.variance_with_ci(samples)
    assert est.low <= exact <= est.high, est
    for wrong in (np.sqrt(d_k), 1, d_k**2):
        assert not est.low <= wrong <= est.high
    return Verified(
        numbers={**given(0, 1, 2), "64": exact, "8": np.sqrt(d_k), "4096": d_k**2},
        answer=exact, wrong=[np.sqrt(d_k), 1.0, float(d_k**2)],
    )


@verifies("04_scaling", "interval-miss")
def _() -> Verified:
    rng = np.random.default_rng(RNG_SEED)
    widths, d_k, reps = 20, 16, 400

    def coverage(n: int) -> float:  # how often a 95% interval at d_k contains d_k
        return float(np.mean([attnlib.variance_with_ci(attnlib.dot_product_samples(d_k, n, rng)).contains(d_k)
                              for _ in range(reps)]))

    small, large = coverage(2_000), coverage(8_000)
    assert abs(small - 0.95) < 0.03 and abs(large - 0.95) < 0.03, (small, large)
    p_any = 1 - 0.95**widths  # at least one miss among the widths
    return Verified(
        numbers={**given(1, widths, 95, d_k, widths - 1, 100, 5), "0.95": 0.95, "0.64": p_any},
        correct=letters([p_any > 0.5, small < 0.9, small == 1.0, large == 1.0]),
    )


@verifies("04_scaling", "saturated-gradient")
def _() -> Verified:
    row = np.array([1, 0.5, 0])
    p = softmax(10 * row)
    J = attnlib.softmax_jacobian(p)
    bound = 1 - p.max()
    assert np.abs(J).max() <= bound
    winner = int(p.argmax())
    plain, sharp = np.abs(attnlib.softmax_jacobian(softmax(row))).max(), np.abs(J).max()
    assert round(float(sharp), 4) == round(float(bound), 4), "the sharp row's largest entry is 1 - m"
    return Verified(
        # 0.0067 is both the bound 1 - m and the sharp row's largest entry: one number in the text
        numbers={**given(0, 0.5, 1, 10), "0.9933": p.max(), "0.0067": bound, "0.2500": plain},
        correct=letters([bool(np.abs(J).max() <= bound),
                         bool(J[winner, winner] > 0.5 and np.abs(np.delete(J[winner], winner)).max() < bound),
                         bool(np.isclose(plain, sharp, rtol=0.05))]),
    )


@verifies("04_scaling", "gradient-entry")
def _() -> Verified:
    p, g = np.array([0.7, 0.2, 0.1]), np.array([0.0, 1.0, 0.0])
    grad = attnlib.softmax_jacobian(p).T @ g  # ∂L/∂z by the chain rule, through the Jacobian
    g_bar = p @ g
    wrong = [p[1] * g[1], g[1] - g_bar, g[1]]  # no ḡ, no factor p_1, g passed through
    return Verified(
        numbers={**given(0, 1, 0.7, 0.2, 0.1), "0.16": grad[1], "0.8": g[1] - g_bar},
        answer=float(grad[1]), wrong=[float(w) for w in wrong],
    )


# --------------------------------------------------------------------------- chapter 3
@verifies("03_worked_examples", "cat-sits-weight")
def _() -> Verified:
    cs = attnlib.cat_sits()
    assert np.array_equal(cs.Q, np.eye(2)) and cs.K.tolist() == [[2, 1], [1, 1]] and cs.d_k == 2
    K = cs.K.copy()
    K[0] = [3, 1]  # the question's changed k_Cat
    _, w = attnlib.scaled_dot_product_attention(cs.Q, K, cs.V, return_weights=True)
    raw = cs.Q[0] @ K.T  # (2,)
    right = float(w[0, 0])
    wrong = [float(softmax(raw)[0]), float(softmax(raw / cs.d_k)[0]), float(np.exp(raw[0] / np.sqrt(2)))]
    assert np.isclose(right, 1 / (1 + np.exp(-2 / np.sqrt(2))))
    return Verified(
        numbers={**given(0, 1, 2, 3, 4), "0.8044": right, "0.8808": wrong[0], "0.7311": wrong[1],
                 "8.3421": wrong[2]},
        answer=right, wrong=wrong,
    )


@verifies("03_worked_examples", "same-vector-on-keys")
def _() -> Verified:
    ex = attnlib.cat_sat_on_mat()
    c = np.ones(ex.d_k)
    _, w = attnlib.scaled_dot_product_attention(ex.Q, ex.K, ex.V, return_weights=True)
    _, w2 = attnlib.scaled_dot_product_attention(ex.Q, ex.K + c, ex.V, return_weights=True)
    shift = ex.Q @ c  # (n_q,): how much every score of row i grows
    assert not np.allclose(ex.Q @ (ex.K + c).T, ex.Q @ ex.K.T), "every score changes"
    changed = set(np.flatnonzero(~np.isclose(w2, w).all(axis=1)).tolist())
    the = ex.tokens.index("The")
    return Verified(
        numbers={**given(1), "2": shift[the], "1": shift[the] / np.sqrt(ex.d_k)},
        correct=letters([not changed, changed == set(range(ex.n)),
                         changed == {int(shift.argmax())}]),
    )


@verifies("03_worked_examples", "wrong-axis")
def _() -> Verified:
    ex = attnlib.cat_sat_on_mat()
    S = ex.Q @ ex.K.T / np.sqrt(ex.d_k)
    by_column = softmax(S, axis=0)  # the mistake: normalised over the queries
    sums = by_column.sum(axis=1)
    assert np.allclose(by_column.sum(axis=0), 1)
    # the other mistakes keep the rows summing to 1
    _, w = attnlib.scaled_dot_product_attention(ex.Q, ex.K, ex.V, return_weights=True)
    options = [by_column, softmax(ex.Q @ ex.K.T), w]
    # an option is the cause if its weights show the learner's symptom: columns at 1, rows not
    symptom = [bool(np.allclose(o.sum(axis=0), 1) and not np.allclose(o.sum(axis=1), 1)) for o in options]
    return Verified(numbers={**given(1, 5), "0.90": sums.min(), "1.13": sums.max()}, correct=letters(symptom))


@verifies("03_worked_examples", "reading-weights")
def _() -> Verified:
    ex = attnlib.cat_sat_on_mat()
    _, w = attnlib.scaled_dot_product_attention(ex.Q, ex.K, ex.V, return_weights=True)
    on = ex.tokens.index("on")
    share = w[on, on]
    largest = w[on].argmax() == on and np.sort(w[on])[-2] < share
    # C and D read more into a weight than a mixing share: false whatever the numbers
    return Verified(numbers={"0.31": share, "0.69": 1 - share},
                    correct=letters([bool(largest), share > 0.5, False, False]))


# --------------------------------------------------------------------------- chapter 6
@verifies("06_implementation", "fast-vs-four-lines")
def _() -> Verified:
    rng = np.random.default_rng(RNG_SEED)
    Q, K, V = rng.normal(size=(3, 6, 8))
    scale = 1 / np.sqrt(8)
    fast = attnlib.scaled_dot_product_attention(Q, K, V)
    four_lines = attnlib.softmax(Q @ K.T * scale) @ V
    diff = np.abs(fast - four_lines).max()
    assert 0 < diff < 1e-13, "the two agree to rounding, not exactly"
    # The four lines in the function's order: Q scaled first, the row sums divided out after @ V. Done
    # with the function's own array shapes (a stack of one matrix, V with a column of ones), the same
    # BLAS calls on any machine: only then is bit-for-bit equality a property of the order alone.
    S = np.matmul((Q * scale)[None], K.T[None])
    E = np.exp(S - S.max(axis=-1, keepdims=True))
    R = np.matmul(E, np.concatenate([V, np.ones((6, 1))], axis=-1)[None])[0]
    reordered = bool((R[:, :-1] / R[:, -1:] == fast).all())
    fast32 = attnlib.scaled_dot_product_attention(*(a.astype(np.float32) for a in (Q, K, V)))
    is_float32 = fast.dtype == np.float32 or np.abs(fast32 - fast).max() < 100 * diff
    big = Q * 1000 @ K.T * scale  # scores far above float64's exp limit: the textbook softmax gives NaN
    with np.errstate(over="ignore", invalid="ignore"):
        assert np.isnan(np.exp(big) / np.exp(big).sum(axis=-1, keepdims=True)).any()
    only_fast_stable = bool(np.isnan(attnlib.softmax(big) @ V).any())
    bug = diff > 1e-3 * np.abs(fast).max()  # a bug would differ by the size of the values
    return Verified(correct=letters([reordered, bool(is_float32), only_fast_stable, bool(bug)]))


@verifies("06_implementation", "stable-row-sum")
def _() -> Verified:
    rng = np.random.default_rng(RNG_SEED)
    n_k = 7
    X = rng.integers(-60, 60, size=(200, n_k)).astype(float)  # whole numbers: adding 1000 is exact
    X[100:] *= 20  # rows whose smaller terms underflow to 0
    X[:, 0] += 1000.0  # e^1000 overflows float64: the naive softmax would return NaN

    def sums(x: np.ndarray) -> np.ndarray:  # the sum the stable softmax divides by, row by row
        return np.exp(x - x.max(axis=-1, keepdims=True)).sum(axis=-1)

    total = sums(X)
    assert np.allclose(attnlib.softmax(X) * total[:, None], np.exp(X - X.max(axis=-1, keepdims=True)))
    return Verified(numbers=given(0, 1, 1000), correct=letters([
        bool(((1 <= total) & (total <= n_k)).all()), bool(((0 <= total) & (total <= 1)).all()),
        bool((total == 1).all()), bool((sums(X + 1000) > total).any())]))


@verifies("06_implementation", "big-negative-mask")
def _() -> Verified:
    ex = attnlib.cat_sat_on_mat()
    big = np.zeros((5, 5))
    big[2] = -1e9  # every key of query "sat" forbidden with -10^9 instead of -inf
    out, w = attnlib.scaled_dot_product_attention(ex.Q, ex.K, ex.V, big, return_weights=True)
    _, w_none = attnlib.scaled_dot_product_attention(ex.Q, ex.K, ex.V, return_weights=True)
    empty = np.ones((5, 5), dtype=bool)
    empty[2] = False
    _, w_empty = attnlib.scaled_dot_product_attention(ex.Q, ex.K, ex.V, empty, return_weights=True)
    assert (w_empty[2] == 0).all(), "only -inf or False empties a row"
    return Verified(numbers=given(0, 1, 10, 9), correct=letters([
        bool(np.allclose(w[2], w_none[2], rtol=0, atol=1e-12)),
        bool((w[2] == 0).all() and (out[2] == 0).all()),
        bool(np.isnan(w[2]).any()), bool(np.allclose(w[2], 1 / 5))]))


@verifies("06_implementation", "causal-corner")
def _() -> Verified:
    n_q, n_k = 3, 5
    rng = np.random.default_rng(RNG_SEED)
    Q, K, V = rng.normal(size=(n_q, 4)), rng.normal(size=(n_k, 4)), rng.normal(size=(n_k, 4))
    _, w = attnlib.scaled_dot_product_attention(Q, K, V, is_causal=True, return_weights=True)
    allowed = int((w > 0).sum())  # the pairs is_causal=True lets through (top-left triangle)
    per_query = (w > 0).sum(axis=-1)
    assert allowed == attnlib.causal_mask(n_q, n_k).sum() and (w[:, n_q:] == 0).all()
    bottom_right = int(np.tri(n_q, n_k, k=n_k - n_q, dtype=bool).sum())  # the decoding corner
    return Verified(
        numbers={**given(0, 1, n_q, n_k), "2": per_query[1], "6": allowed, "12": bottom_right,
                 "15": n_q * n_k},
        answer=allowed, wrong=[bottom_right, n_q * n_k],
    )


# --------------------------------------------------------------------------- chapter 7
@verifies("07_complexity", "score-memory")
def _() -> Verified:
    n, d = 4096, 64
    mib = 2**20
    stages = attnlib.counts.memory_bytes(n, n, d, d, np.float32).stages
    arrays = dict(next(s for s in stages if s.name == "softmax").arrays)
    nbytes = math.prod(arrays["A"]) * 4  # float32
    q_bytes = math.prod(arrays["Q"]) * 4
    assert nbytes == 2**26
    big = dict(next(s for s in attnlib.counts.memory_bytes(2 * n, 2 * n, d, d, np.float32).stages
                    if s.name == "softmax").arrays)
    assert math.prod(big["A"]) == 4 * math.prod(arrays["A"]), "four times as much at twice the length"
    return Verified(
        numbers={**given(1, 2, 20, 26, 4096, 4), "64": nbytes / mib, "8192": 2 * n,
                 "128": nbytes * 2 / mib, "16": nbytes / 4 / mib, "8": 8},
        answer=nbytes / mib, wrong=[nbytes * 2 / mib, nbytes / 4 / mib, q_bytes / mib],
    )


@verifies("07_complexity", "doubling-n")
def _() -> Verified:
    flops = attnlib.counts.flop_counts
    small, big = flops(4096, 4096, 64, 64), flops(8192, 8192, 64, 64)
    ratio = big.flops / small.flops
    n, d = 4096, 64
    assert small.flops == (4 * d + 4) * n**2 - (d + 2) * n
    return Verified(
        numbers={**given(2, 4, 64, 4096, 8192, 8), "4.00": ratio},
        correct=letters([abs(ratio - r) == min(abs(ratio - x) for x in (4, 2, 8)) for r in (4, 2, 8)]),
    )


@verifies("07_complexity", "tiled-attention")
def _() -> Verified:
    rng = np.random.default_rng(RNG_SEED)
    Q, K, V = rng.normal(size=(3, 256, 16))
    tiled = attnlib.tiled_attention(Q, K, V, block_q=32, block_k=32)
    direct = attnlib.scaled_dot_product_attention(Q, K, V)
    same = bool(np.allclose(tiled, direct, rtol=0, atol=1e-12))
    rows = attnlib.variants.attention_variant_costs(256, 16, window=32, block=32, features=16)
    costs = {c.name: c for c in rows}
    less_memory = costs["tiled"].memory_scores < costs["full"].memory_scores
    fewer = costs["tiled"].multiply_adds < costs["full"].multiply_adds
    return Verified(numbers=given(2), correct=letters([less_memory, same, not costs["tiled"].exact, fewer]))


# --------------------------------------------------------------------------- chapter 5
@verifies("05_masks_heads", "causal-keys")
def _() -> Verified:
    allowed = set(np.flatnonzero(attnlib.causal_mask(5)[2]).tolist())
    options = [{0, 1, 2}, {2, 3, 4}, {0, 1}, {0, 1, 2, 3}]
    return Verified(numbers=given(0, 1, 2, 3, 4, 5), correct=letters([o == allowed for o in options]))


@verifies("05_masks_heads", "padding-without-mask")
def _() -> Verified:
    ex = attnlib.cat_sat_on_mat()
    Q, K, V = (np.vstack([a[:3], np.zeros((2, ex.d_k))]) for a in (ex.Q, ex.K, ex.V))  # (5, d_k)
    out, w = attnlib.scaled_dot_product_attention(Q, K, V, return_weights=True)  # no mask
    alone = attnlib.scaled_dot_product_attention(ex.Q[:3], ex.K[:3], ex.V[:3])
    masked = attnlib.scaled_dot_product_attention(Q, K, V, attn_mask=attnlib.padding_mask([3], 5)[0])
    assert np.allclose(masked[:3], alone), "the padding mask restores attention on the short sentence"
    real = np.exp(ex.Q[:3] @ ex.K[:3].T / np.sqrt(ex.d_k)).sum(axis=1)  # each real row's sum
    assert np.allclose(w[:3, 3:], 1 / (real + 2)[:, None]), "each zero key gets e^0 = 1 before the division"
    assert np.allclose(out[:3], alone * (real / (real + 2))[:, None]), "every output shrinks"
    same = bool(np.allclose(out[:3], alone))
    return Verified(numbers=given(0, 1, 5),
                    correct=letters([not same, same, bool((w[:3, 3:] == 0).all())]))


@verifies("05_masks_heads", "head-scale")
def _() -> Verified:
    d_model, H = 512, 8
    mha = attnlib.MultiHeadAttention(d_model, H, np.random.default_rng(RNG_SEED))
    d_head = mha.d_head
    X = np.random.default_rng(1).normal(size=(400, d_model))  # unit-variance inputs
    Qh = (X @ mha.W_Q).reshape(400, H, d_head)[:, 0]  # head 0, (n, d_head)
    Kh = (X @ mha.W_K).reshape(400, H, d_head)[:, 0]
    raw_var = np.var(Qh @ Kh.T)
    assert 0.8 * d_head < raw_var < 1.25 * d_head, raw_var  # about d_head at initialisation
    return Verified(
        numbers={**given(512, 1), "8": np.sqrt(d_head), "64": d_head, "22.63": np.sqrt(d_model)},
        correct=letters([True, False, False, False]) if H == 8 and d_head == 64 else None,
    )


@verifies("05_masks_heads", "permutation")
def _() -> Verified:
    rng = np.random.default_rng(RNG_SEED)
    mha = attnlib.MultiHeadAttention(8, 2, rng)
    X = rng.normal(size=(5, 8))
    perm = np.array([3, 1, 2, 0, 4])  # swap tokens 0 and 3
    out = mha(X).output
    out_p = mha(X[perm]).output
    swapped = bool(np.allclose(out_p, out[perm]))
    unchanged = bool(np.allclose(out_p, out))
    return Verified(numbers=given(0, 3), correct=letters([swapped, unchanged, not swapped]))


@verifies("07_complexity", "exact-variants")
def _() -> Verified:
    rows = attnlib.variants.attention_variant_costs(1024, 64, window=64, block=32, features=64)
    costs = {c.name: c for c in rows}
    names = ["tiled", "sliding_window", "linear", "sparse_fixed"]
    return Verified(numbers=given(2), correct=letters([costs[n].exact for n in names]))


# --------------------------------------------------------------------------- the checks
def _load(path: Path) -> quiz.Quiz:
    return quiz.load_quiz(path)


def _shown_numbers(question: quiz.Question) -> set[str]:
    texts = [question.text, question.explanation, question.otherwise]
    texts += [o.text for o in question.options] + [o.explanation for o in question.options]
    texts += [w.explanation for w in question.wrong]
    found = {m.group() for t in texts for m in NUMBER.finditer(t)}
    if question.kind == "numeric":
        found |= {quiz._number_text(question.answer)} | {quiz._number_text(w.value) for w in question.wrong}
    return found


def _rounds_to(shown: str, value: float) -> bool:
    decimals = len(shown.split(".")[1]) if "." in shown else 0
    return abs(float(value) - float(shown)) <= 0.5 * 10.0**-decimals + 1e-9


def test_every_chapter_has_a_quiz_and_every_quiz_a_chapter() -> None:
    assert len(CHAPTERS) == 7, CHAPTERS
    assert [p.stem for p in QUIZ_FILES] == CHAPTERS


@pytest.mark.parametrize("path", QUIZ_FILES, ids=lambda p: p.stem)
def test_quiz_file_follows_the_rules(path: Path) -> None:
    q = _load(path)
    assert quiz.MIN_QUESTIONS <= len(q.questions) <= quiz.MAX_QUESTIONS == 6 and quiz.MIN_QUESTIONS == 3
    for question in q.questions:
        assert question.targets.strip() and question.text.strip()
        if question.kind == "numeric":
            assert question.explanation and question.otherwise and question.tolerance > 0
            assert all(w.explanation for w in question.wrong)
        else:
            assert all(o.explanation.strip() for o in question.options), question.id
            n_right = sum(o.correct for o in question.options)
            assert n_right == 1 if question.kind == "single" else 1 <= n_right < len(question.options)


# Choice questions none of whose options is true or false by a number: their keys are declared.
CONCEPTUAL = {
}


def _number_problems(stem: str, question: quiz.Question) -> list[str]:
    """What is wrong with the numbers of one question (empty when everything is computed and right)."""
    key = (stem, question.id)
    if key not in VERIFIERS:
        return ["no verifier in tests/test_quiz.py"]
    verified = VERIFIERS[key]()
    shown = _shown_numbers(question)
    problems = []
    if shown - verified.numbers.keys():
        problems.append(f"numbers shown but not computed: {sorted(shown - verified.numbers.keys())}")
    if verified.numbers.keys() - shown:
        problems.append(f"the verifier computes numbers the question does not show: "
                        f"{sorted(verified.numbers.keys() - shown)}")
    off = {s: float(v) for s, v in verified.numbers.items() if not _rounds_to(s, v)}
    if off:
        problems.append(f"shown numbers that are not the computed values: {off}")
    if question.kind == "numeric":
        if verified.answer is None or verified.wrong is None or len(verified.wrong) != len(question.wrong):
            return [*problems, "the verifier must compute the answer and every known wrong value"]
        decimals = len(quiz._number_text(question.answer).partition(".")[2])
        # The exact answer, and the answer rounded as the question asks, are accepted ...
        for value in (verified.answer, round(verified.answer, decimals)):
            if question.matches(value) != "answer":
                problems.append(f"the computed answer {value!r} is not accepted")
        # ... and each classic mistake, computed exactly, gets its own explanation.
        for i, value in enumerate(verified.wrong):
            if question.matches(value) != f"wrong:{i}":
                problems.append(f"wrong value {i + 1}: {value!r} is classified {question.matches(value)!r}")
    elif verified.correct is None and key not in CONCEPTUAL:
        problems.append("a choice question's verifier must compute which options are right (or the "
                        "question is listed in CONCEPTUAL, with why no option depends on a number)")
    if verified.correct is not None and set(question.correct_letters) != verified.correct:
        problems.append(f"declared right {question.correct_letters}, computed {sorted(verified.correct)}")
    return problems


@pytest.mark.parametrize("path", QUIZ_FILES, ids=lambda p: p.stem)
def test_every_number_is_computed(path: Path) -> None:
    report = {q.id: p for q in _load(path).questions if (p := _number_problems(path.stem, q))}
    assert not report, f"{path.name}:" + "".join(
        f"\n  question {qid!r}: " + "; ".join(problems) for qid, problems in report.items())


def test_no_verifier_is_left_without_its_question() -> None:
    asked = {(p.stem, q.id) for p in QUIZ_FILES for q in _load(p).questions}
    assert not VERIFIERS.keys() - asked, sorted(VERIFIERS.keys() - asked)


def test_number_detection() -> None:
    assert NUMBER.findall("d_k = 64, float32, k_1, 0.4508 and $e^{10}$, s_{n-1}") == [
        "64", "0.4508", "10", "1"]
    assert _rounds_to("0.451", 0.45085) and not _rounds_to("0.451", 0.4504) and _rounds_to("4", 3.9999)


# --------------------------------------------------------------------------- validation
GOOD_OPTIONS = [{"text": "a", "correct": True, "explanation": "yes"},
                {"text": "b", "correct": False, "explanation": "no"}]


def _question(i: int, **changes: object) -> dict:
    q = {"id": f"q{i}", "kind": "single", "targets": "t", "text": "What?", "options": GOOD_OPTIONS}
    q.update(changes)
    return {k: v for k, v in q.items() if v is not None}


def _numeric(**changes: object) -> dict:
    q = {"id": "num", "kind": "numeric", "targets": "t", "text": "How much?", "answer": 0.5,
         "tolerance": 0.01, "explanation": "because", "otherwise": "think",
         "wrong": [{"value": 0.25, "explanation": "halved"}]}
    q.update(changes)
    return {k: v for k, v in q.items() if v is not None}


def _quiz(*questions: dict) -> dict:
    return {"questions": [*questions, *(_question(i) for i in range(10, 13 - len(questions)))]}


BAD = [
    ({"questions": []}, r"bad\.yml: a quiz has 3 to 6 questions, this one 0"),
    ({"questions": [_question(i) for i in range(7)]}, "3 to 6 questions, this one 7"),
    ({"quiz": []}, "lacks 'questions'"),
    (_quiz(_question(1, options=[{**GOOD_OPTIONS[0], "explanation": ""}, GOOD_OPTIONS[1]])),
     r"question 1 \('q1'\): option A: 'explanation' must be a non-empty string"),
    (_quiz(_question(1, options=[GOOD_OPTIONS[0], {"text": "b", "correct": False}])),
     r"question 1 \('q1'\): option B lacks 'explanation'"),
    (_quiz(_question(1), _question(2, options=[GOOD_OPTIONS[0], {**GOOD_OPTIONS[1], "correct": True}])),
     r"question 2 \('q2'\): a 'single' question has exactly one right option, this one has two"),
    (_quiz(_question(1, kind="multiple", options=[{**o, "correct": True} for o in GOOD_OPTIONS])),
     "at least one right and at least one wrong option"),
    (_quiz(_question(1, kind="essay")),
     r"question 1 \('q1'\): 'kind' must be one of single, multiple, numeric"),
    (_quiz(_question(1), _question(1)), r"question 2 \('q1'\): the id 'q1' is used by an earlier question"),
    (_quiz(_question(1, id="Bad Id")), "'id' must be lower-case words"),
    (_quiz(_question(1, text="a $x")), r"'text': unbalanced \$"),
    (_quiz(_question(1, text="a `x")), "'text': unbalanced `"),
    (_quiz(_question(1, text="$$x$$")), "display math"),
    (_quiz(_question(1, text="like $QK^\top$")), r"control character\(s\) '\\t'"),
    (_quiz(_question(1, options=[GOOD_OPTIONS[0], {**GOOD_OPTIONS[1], "correct": "no"}])),
     "'correct' must be true or false"),
    (_quiz(_question(1, options=[GOOD_OPTIONS[0], {**GOOD_OPTIONS[1], "text": "a"}])),
     "options A and B have the same text"),
    (_quiz(_question(1, colour="red")), "unknown keys 'colour'"),
    (_quiz(_numeric(answer="half")), r"question 1 \('num'\): 'answer' must be a finite number"),
    (_quiz(_numeric(tolerance=0)), "'tolerance' must be positive"),
    (_quiz(_numeric(otherwise=None)), "lacks 'otherwise'"),
    (_quiz(_numeric(wrong=[{"value": 0.505, "explanation": "close"}])),
     "wrong value 1 .* is within the tolerance of the answer"),
    (_quiz(_numeric(wrong=[{"value": 0.25, "explanation": "a"}, {"value": 0.251, "explanation": "b"}])),
     "wrong values 1 .* and 2 .* overlap"),
    (_quiz(_numeric(options=GOOD_OPTIONS)), "unknown keys 'options'"),
]


@pytest.mark.parametrize(("data", "match"), BAD, ids=[m[:40] for _, m in BAD])
def test_a_malformed_quiz_is_refused_with_file_and_question(tmp_path: Path, data: dict, match: str) -> None:
    path = tmp_path / "bad.yml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    with pytest.raises(quiz.QuizError, match=match) as info:
        quiz.load_quiz(path)
    assert str(info.value).startswith(str(path)), info.value


def test_the_valid_example_of_the_table_is_valid() -> None:
    """The bad cases above differ from this one by one change each, so each fails for its own reason."""
    parsed = quiz.parse_quiz(_quiz(_question(1)), "ok.yml")
    assert [q.id for q in parsed.questions] == ["q1", "q10", "q11"]
    assert quiz.parse_quiz(_quiz(_numeric()), "ok.yml").questions[0].matches(0.2501) == "wrong:0"


def test_unreadable_and_invalid_yaml(tmp_path: Path) -> None:
    with pytest.raises(quiz.QuizError, match="cannot read the quiz file"):
        quiz.load_quiz(tmp_path / "missing.yml")
    bad = tmp_path / "broken.yml"
    bad.write_text("questions: [\n  - id: x\n", encoding="utf-8")
    with pytest.raises(quiz.QuizError, match=r"broken\.yml: not valid YAML"):
        quiz.load_quiz(bad)


# --------------------------------------------------------------------------- HTML and Markdown
NASTY = '<script>alert("x")</script> & `<b>code</b>` and $a < b$ and *em* \\$5'


def _nasty_quiz() -> quiz.Quiz:
    options = [{"text": NASTY, "correct": True, "explanation": NASTY},
               {"text": "plain", "correct": False, "explanation": "<img src=x onerror=alert(1)>"}]
    return quiz.parse_quiz(
        {"questions": [_question(1, text=NASTY, options=options), _question(2), _numeric(explanation=NASTY)]},
        "nasty.yml")


def test_rendering_escapes_html() -> None:
    out = quiz.quiz_html(_nasty_quiz())
    assert "<script>" not in out and "<img" not in out and "<b>code" not in out
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in out or "&lt;script&gt;alert(\"x\")" in out
    assert ('<code class="docutils literal notranslate"><span class="pre">&lt;b&gt;code&lt;/b&gt;</span>'
            "</code>") in out
    assert '<span class="math notranslate nohighlight">\\(a &lt; b\\)</span>' in out
    assert "<em>em</em>" in out and " $5" in out and "\\$" not in out
    assert "&amp;" in out


def test_inline_markup() -> None:
    assert quiz.inline_html("**a** and *b*") == "<strong>a</strong> and <em>b</em>"
    assert quiz.inline_markdown("x < y, `a<b`, $c<d$, \\$3") == "x &lt; y, `a<b`, $c<d$, \\$3"


def test_html_structure_of_every_quiz() -> None:
    for path in QUIZ_FILES:
        q = _load(path)
        out = quiz.quiz_html(q)
        ids = re.findall(r'\bid="([^"]+)"', out)
        assert len(ids) == len(set(ids)), f"{path.name}: duplicate ids"
        for input_id in re.findall(r'<input[^>]*\bid="([^"]+)"', out):
            assert f'for="{input_id}"' in out, f"{path.name}: input {input_id} has no label"
        assert out.count('aria-live="polite"') == len(q.questions)
        assert out.count("<form ") == len(q.questions) == out.count("<legend>")
        assert out.count('class="attnlib-quiz-check"') == len(q.questions)
        assert re.search(r'class="attnlib-quiz-explanation"[^>]*hidden', out)
        n_choice = sum(x.kind != "numeric" for x in q.questions)
        # option 0 keeps its index (an attribute of value 0 must not be dropped as if it were false)
        assert out.count('data-option="0"') == 2 * n_choice and out.count('value="0"') == n_choice
        n_explanations = sum(len(x.options) or len(x.wrong) + 2 for x in q.questions)
        assert out.count('class="attnlib-quiz-explanation"') == n_explanations


def test_markdown_for_the_notebook_edition(tmp_path: Path) -> None:
    path = tmp_path / "nasty.yml"
    nasty = {"questions": [_question(1, text=NASTY), _question(2, kind="multiple"), _numeric()]}
    path.write_text(yaml.safe_dump(nasty), encoding="utf-8")
    md = quiz.quiz_markdown(path)
    assert md.startswith("1. &lt;script&gt;") and "\n\n2. " in md and "\n\n3. " in md
    assert "<script>" not in md and "$a < b$" in md and "`<b>code</b>`" in md
    assert md.count("<details>") == 3 == md.count("</details>")
    assert "   - **A.** a\n   - **B.** b" in md
    assert "**Answer: A.**" in md and "- **B** is not right. no" in md
    assert "**Answer: 0.5** (anything within 0.01 of it counts as right)" in md
    assert "- *If you got 0.25:* halved" in md and "- *Any other number:* think" in md
    bare = quiz.quiz_markdown(path, answers=False)
    assert "<details>" not in bare and "halved" not in bare and "Answer" not in bare
    assert "   - **A.** a\n   - **B.** b" in bare and "\n\n3. How much?" in bare
    for path in QUIZ_FILES:  # every real quiz renders, one list item per question
        q = _load(path)
        md = quiz.quiz_markdown(path)
        numbers = re.findall(r"^(\d+)\. ", md, flags=re.MULTILINE)
        assert numbers == [str(i) for i in range(1, len(q.questions) + 1)], path.name
        for question in q.questions:
            for option in question.options:
                assert quiz.inline_markdown(option.explanation) in md


# --------------------------------------------------------------------------- the Sphinx directive
CONF = """
extensions = ["myst_parser", "press.quiz"]
html_theme = "basic"
"""


def _sphinx_project(root: Path, quiz_text: str) -> Path:
    (root / "src" / "quizzes").mkdir(parents=True)
    (root / "src" / "conf.py").write_text(CONF, encoding="utf-8")
    (root / "src" / "index.md").write_text(
        "# Chapter\n\nText.\n\n## Self-check quiz\n\n```{quiz} quizzes/ch.yml\n```\n\n"
        "```{toctree}\nother\n```\n",
        encoding="utf-8")
    (root / "src" / "other.md").write_text("# Other\n\nNo quiz here.\n", encoding="utf-8")
    (root / "src" / "quizzes" / "ch.yml").write_text(quiz_text, encoding="utf-8")
    return root


def _build(root: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "sphinx", "-W", "-q", "-b", "html", str(root / "src"),
                           str(root / "out")], capture_output=True, text=True, timeout=120)


def test_directive_builds_a_quiz_page_with_its_assets(tmp_path: Path) -> None:
    root = _sphinx_project(tmp_path, (QUIZ_DIR / "04_scaling.yml").read_text(encoding="utf-8"))
    run = _build(root)
    assert run.returncode == 0, run.stdout + run.stderr
    page = (root / "out" / "index.html").read_text(encoding="utf-8")
    other = (root / "out" / "other.html").read_text(encoding="utf-8")
    n_questions = len(_load(QUIZ_DIR / "04_scaling.yml").questions)
    assert page.count('<form class="attnlib-quiz-question"') == n_questions
    assert 'id="quiz-ch-variance"' in page
    assert re.search(r'<script defer="defer" src="_static/quiz\.js', page), "quiz.js, deferred"
    assert re.search(r'<link[^>]+href="_static/quiz\.css', page)
    assert "quiz.js" not in other and "quiz.css" not in other, "only pages with a quiz load its files"
    for name in ("quiz.js", "quiz.css"):
        assert (root / "out" / "_static" / name).is_file(), name
    assert "mathjax" in page.lower(), "the quiz's math makes the page load MathJax"


def test_directive_stops_the_build_on_a_malformed_quiz(tmp_path: Path) -> None:
    broken = yaml.safe_dump(_quiz(_question(1), _question(2, options=[GOOD_OPTIONS[0],
                                                                      {"text": "b", "correct": False}])))
    run = _build(_sphinx_project(tmp_path, broken))
    assert run.returncode != 0
    message = run.stderr
    assert "Quiz error" in message, message
    assert "quizzes/ch.yml, question 2 ('q2'): option B lacks 'explanation'" in message, message
    assert "(in the {quiz} directive of index.md)" in message, message


# --------------------------------------------------------------------------- the core stands alone
def _deeper_names() -> tuple[set[str], set[str]]:
    """The going-deeper pages' names (``04a_scaling_deeper``) and the labels defined on them."""
    pages = [p for p in BOOK.glob("[0-9][0-9][a-z]_*.ipynb")]
    labels = {m for p in pages for m in re.findall(r"^\(([\w:-]+)\)=", _markdown_of(p), re.M)}
    return {p.stem for p in pages}, labels


def _markdown_of(path: Path) -> str:
    import nbformat

    return "\n".join(c.source for c in nbformat.read(path, as_version=4).cells if c.cell_type == "markdown")


def deeper_mentions(text: str, pages: set[str], labels: set[str]) -> list[str]:
    """What in ``text`` needs a going-deeper page: the words "going deeper" / "going-deeper", a {doc} to
    such a page, or a {ref}/{numref} to a label defined on one."""
    found = re.findall(r"going[- ]deeper", text, re.I)
    for role, target in re.findall(r"\{(doc|ref|numref)\}`(?:[^`<]*<)?([^`>]+)>?`", text):
        name = target.rsplit("/", 1)[-1]
        if (role == "doc" and name in pages) or (role != "doc" and name in labels):
            found.append(f"{{{role}}}`{target}`")
    return found


def test_the_going_deeper_rule_sees_the_words_and_the_links() -> None:
    pages, labels = {"04a_scaling_deeper"}, {"sc-retrieval"}
    assert deeper_mentions("On the chapter's going-deeper page, ...", pages, labels)
    assert deeper_mentions("see {doc}`04a_scaling_deeper`", pages, labels)
    assert deeper_mentions("as {ref}`the experiment <sc-retrieval>` shows", pages, labels)
    assert not deeper_mentions("as {ref}`the chapter <ch-scaling>` shows, deep networks", pages, labels)


@pytest.mark.parametrize("path", QUIZ_FILES, ids=lambda p: p.stem)
def test_no_question_needs_a_going_deeper_page(path: Path) -> None:
    """The core stands alone (issue 28): a quiz asks only what its chapter's core taught."""
    pages, labels = _deeper_names()
    assert pages and labels, "the going-deeper pages and their labels were found"
    for q in _load(path).questions:
        texts = [q.text, q.explanation, q.otherwise, q.targets or ""]
        texts += [o.text for o in q.options] + [o.explanation for o in q.options]
        texts += [w.explanation for w in q.wrong]
        found = [m for t in texts if t for m in deeper_mentions(t, pages, labels)]
        assert not found, f"{path.stem}/{q.id} needs a going-deeper page: {found}"
