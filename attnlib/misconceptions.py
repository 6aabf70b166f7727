"""The classic mistakes of attention, each named and recomputed from a problem's own inputs.

:data:`MISCONCEPTIONS` names each mistake (scaling by ``d_k`` instead of ``√d_k``, no scaling, a
softmax over the wrong axis, ``K`` not transposed, no max subtraction, weights that do not sum to 1,
the weights instead of ``weights · V``, a causal mask flipped or shifted by one, ...) with the sentence
a learner reads when an answer matches it. :func:`attention_misconceptions` recomputes the wrong
answers of an attention problem from its ``Q``, ``K`` and ``V``: the exercises of
:mod:`attnlib.exercises` list them as their wrong answers, and :func:`attnlib.feedback.check` names the
one a learner's answer matches.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from attnlib.core import causal_mask, scale_for, softmax
from attnlib.naive import naive_softmax

__all__ = ["Misconception", "MISCONCEPTIONS", "attention_misconceptions"]

Candidates = list[tuple[str, np.ndarray]]  # (misconception key, the array that mistake produces)
#: As a recipe writes them: each answer a number, a list or an array (made an array by the Exercise).
RawCandidates = Sequence[tuple[str, npt.ArrayLike]]


# --------------------------------------------------------------------------- misconceptions
@dataclass(frozen=True)
class Misconception:
    """A named wrong idea, what it produces and how to get past it.

    Attributes
    ----------
    key : str
        Short identifier, e.g. ``"scale-d_k"``.
    name : str
        One line naming the mistake, e.g. "scaled by d_k instead of √d_k".
    explanation : str
        What the answer shows the learner did and why it is wrong. May hold the
        fields ``{d_k}``, ``{sqrt_d_k}``, ``{n}``, ``{sqrt_n}``, ``{d_v}``, ``{row_sums}``
        and ``{col_sums}``, filled from the exercise's inputs and the answer.
    hint : str
        What to do instead.
    forms : tuple of str
        The answer forms (``Exercise.form`` in :mod:`attnlib.exercises`) the mistake can be made in: every
        exercise of such a form names it (or says in :data:`attnlib.exercises.NOT_APPLICABLE` why it
        cannot be made there). Empty for a mistake of one exercise's own setup, and for the mistakes
        of attention stages, which one generator (:func:`attention_misconceptions`) gives every
        attention exercise.
    """

    key: str
    name: str
    explanation: str
    hint: str
    forms: tuple[str, ...] = ()


_M = Misconception
#: Every misconception ``check`` can name, by key. The first twelve are the classic ones of attention.
#:
#: :meta hide-value:
MISCONCEPTIONS: dict[str, Misconception] = {m.key: m for m in (
    _M("scale-d_k", "scaled by d_k instead of √d_k",
       "Your numbers are what dividing the scores by d_k = {d_k} gives. The factor is 1/√d_k, the "
       "square root: dividing by d_k itself shrinks the scores further, so the weights of each row come "
       "out closer to equal.",
       "Divide the raw scores by √d_k = {sqrt_d_k}."),
    _M("no-scale", "no scaling",
       "Your numbers are what the raw scores q·k give without the factor 1/√d_k. Unscaled, the "
       "differences between scores are √d_k times too large, so each row's weights come out more "
       "uneven than they should.",
       "Divide every score by √d_k = {sqrt_d_k} before the softmax."),
    _M("scale-sqrt-n", "√n instead of √d_k",
       "Your numbers are what dividing by √n = √{n} gives, n being the number of keys. The factor uses "
       "d_k, the width of the queries and keys, not the number of tokens.",
       "Divide by √d_k = {sqrt_d_k}."),
    _M("scale-kept", "scaled although this exercise leaves the factor out",
       "Your numbers are what dividing the scores by √d_k = {sqrt_d_k} gives, the usual attention. This "
       "exercise asks for the scores without that factor (scale = 1).",
       "Use the raw scores q·k, e.g. trace_attention(..., scale=1.0)."),
    _M("wrong-axis", "softmax over the wrong axis (columns sum to 1)",
       "Each query's weights are a softmax over the keys, along its row, so every row sums to 1. In your "
       "answer the columns sum to 1{col_sums}: the softmax ran over the queries (axis 0).",
       "Normalise along the keys: softmax(..., axis=-1)."),
    _M("weights-transposed", "weights transposed (one row per key)",
       "Row i of the weights belongs to query i and holds its weights on every key, so each row sums "
       "to 1. Your matrix is the transpose: one row per key, and its columns sum to 1.",
       "Transpose your matrix, or compute softmax(Q @ K.T / √d_k, axis=-1) directly."),
    _M("k-not-transposed", "K not transposed (Q K instead of Q Kᵀ)",
       "The score s_ij = q_i · k_j pairs a row of Q with a row of K, so S = Q Kᵀ. Your numbers come from "
       "Q K, which exists here only because the matrices are square, and pairs rows of Q with columns "
       "of K.",
       "Use Q @ K.T."),
    _M("scores-transposed", "queries and keys swapped (K Qᵀ)",
       "Row i of the scores belongs to query i: S = Q Kᵀ. Your numbers come from its transpose, K Qᵀ, "
       "with one row per key.",
       "Use Q @ K.T (or transpose your matrix)."),
    _M("no-max-subtraction", "no max subtraction (overflow)",
       "Your answer holds NaN where a stable softmax gives numbers: exp of a large score overflows to "
       "inf, and inf/inf is NaN. Subtracting the row maximum first changes no weight (a softmax ignores "
       "a constant added to its row) and keeps every exponent at or below 0.",
       "Compute exp(x - x.max(axis=-1, keepdims=True)) before dividing by the sum, or use attnlib.softmax."),
    _M("not-normalised", "weights that do not sum to 1",
       "The weights of a query must sum to 1, but yours sum to {row_sums}: the exponentials were not "
       "divided by their row's sum, or by the wrong sum.",
       "Divide each row of exp(...) by its own sum: e / e.sum(axis=-1, keepdims=True)."),
    _M("weights-not-output", "returned the weights instead of weights · V",
       "Your numbers are the attention weights, one per key. The output of a query is the weighted sum "
       "of the value rows, O = A V, with one number per value dimension (d_v = {d_v}).",
       "Multiply the weights by the values: weights @ V."),
    _M("mask-flipped", "causal mask flipped (upper instead of lower triangle)",
       "A causal mask lets query i see the keys j ≤ i: the lower triangle with the diagonal. Yours "
       "allows j ≥ i, the future instead of the past.",
       "Transpose your mask: row i allows the keys j ≤ i."),
    _M("mask-inverted", "mask inverted: True where a pair is forbidden",
       "Every entry of your mask is the opposite of the expected one: you marked the pairs that are "
       "forbidden. In attnlib (and in PyTorch's boolean attn_mask) True means the query may attend to "
       "the key; some libraries use the opposite convention, and an additive mask puts -inf where a "
       "pair is forbidden.",
       "Negate your mask (~mask), or build it so that True marks the pairs that may attend."),
    _M("mask-diagonal-excluded", "mask shifted by one: the diagonal excluded",
       "Each token may attend to itself, so key i is allowed for query i. Your mask leaves out the "
       "diagonal (j = i); in a causal mask that leaves the first token nothing to attend to.",
       "Keep the diagonal: query i may see key i.", ("mask",)),
    _M("mask-one-ahead", "mask shifted by one: one future key allowed",
       "Your mask also allows j = i + 1: every token sees the next one, which a model that predicts the "
       "next token must not.",
       "Allow no key after the query: j ≤ i.", ("mask",)),
    _M("mask-transposed", "mask transposed: rows are keys",
       "Row i of a mask belongs to query i and says which keys it may see; your mask is the transpose, "
       "with one row per key.",
       "Transpose your mask (mask.swapaxes(-1, -2)), or build it with queries along the rows.", ("mask",)),
    _M("no-mask", "mask left out",
       "Your numbers are those of attention without the mask: every query sees every key.",
       "Pass the mask (attn_mask=..., or is_causal=True) so the forbidden pairs get weight 0."),
    _M("mask-after-softmax", "masked after the softmax without renormalising",
       "Your weights are the unmasked softmax with the forbidden entries set to 0 afterwards, so the rows "
       "no longer sum to 1 ({row_sums}).",
       "Mask the scores before the softmax (set forbidden scores to -inf), or renormalise each row."),
    _M("mask-zero-scores", "masked scores set to 0 instead of −∞",
       "Your weights come from setting the forbidden scores to 0. A score of 0 still gets weight "
       "exp(0 − max) > 0 in the softmax, so the masked keys keep some weight.",
       "Set forbidden scores to -inf (np.where(mask, scores, -np.inf)): exp(-inf) = 0."),
    _M("scaled-scores", "scaled scores where the raw scores were asked for",
       "Your numbers are the scores divided by √d_k = {sqrt_d_k}. This answer asks for the raw dot "
       "products q·k.",
       "Leave out the division."),
    _M("scale-full-width", "scaled by the model width instead of the head width",
       "Each head scores with its own queries and keys of width d_head, so it divides by √d_head. Your "
       "weights come from dividing by √(H·d_head), the width of the whole layer.",
       "Divide each head's scores by √d_head."),
    # ---- misconceptions of a single exercise
    _M("margin-n-keys", "n competitors instead of n − 1",
       "Token 0 competes with the other n − 1 keys, not with n of them.",
       "Solve e^m / (e^m + n − 1) = 0.9."),
    _M("margin-exp", "gave e^m instead of m",
       "Your numbers are e^m, the ratio of two weights; the margin m is its logarithm.",
       "Take the natural logarithm."),
    _M("margin-log10", "log base 10 instead of the natural log",
       "The softmax uses e^x, so the margin is a natural logarithm.",
       "Use np.log, not np.log10."),
    _M("flops-sum-l-adds", "L additions for a sum of L numbers",
       "A sum of L numbers takes L − 1 additions: the first term starts the accumulator.",
       "Count L − 1 additions per dot product of length L and per row sum of L terms.", ("counts",)),
    _M("flops-max-n-compares", "n comparisons for a maximum of n numbers",
       "The maximum of L numbers takes L − 1 comparisons.",
       "Count n_k − 1 comparisons per row.", ("counts",)),
    _M("flops-exp-counted", "exponentials (or tanh) counted as FLOPs",
       "In this book's convention exponentials and tanh are counted in their own column, not as FLOPs.",
       "FLOPs = multiplies + adds + comparisons + divides.", ("counts",)),
    _M("flops-swapped", "n_q and n_k swapped",
       "Your counts are those of 5 queries and 3 keys. Here 3 queries each score 5 keys.",
       "Rows of S are queries: n_q = 3, n_k = 5.", ("counts",)),
    _M("shapes-w-transposed", "projection matrices transposed",
       "With row vectors, Q = X W_Q maps a (n, d_model) input to (n, d_k), so W_Q is (d_model, d_k).",
       "Write each projection as (d_model, output width).", ("shapes",)),
    _M("shapes-output-d_k", "output as wide as a key",
       "The output is a weighted sum of value rows, so it is as wide as a value: d_v, not d_k.",
       "O = A V has shape (n_q, d_v).", ("shapes",)),
    _M("shapes-qt-k", "S = Qᵀ K",
       "S pairs every query with every key, so it has one row per query and one column per key: Q Kᵀ.",
       "S and A are (n_q, n_k).", ("shapes",)),
    _M("shapes-one-output-per-key", "one output per key",
       "Each query gets one output row, whatever the number of keys.",
       "O has n_q rows.", ("shapes",)),
    _M("params-d_k-everywhere", "W_V as wide as W_Q",
       "W_V maps to the value width d_v, which differs from d_k here.",
       "Count d_model · d_k twice and d_model · d_v once."),
    _M("sigma-d_k", "divided by σ_q σ_k d_k instead of σ_q σ_k √d_k",
       "The variance of q·k is σ_q² σ_k² d_k, so its standard deviation is σ_q σ_k √d_k; α is one over "
       "the standard deviation. Your α divides by d_k itself, which leaves the variance 1/d_k, not 1.",
       "Take the square root of d_k."),
    _M("sigma-ignored", "components taken to have variance 1",
       "Your numbers hold for components of q and k of variance 1, where Var(q·k) = d_k and 1/√d_k makes "
       "the scaled score's variance 1. Here the components have other variances.",
       "Work out the variance of one component of q and of k first, then of one product q_t k_t.",
       ("variance",)),
    _M("sigma-variances", "variances instead of standard deviations",
       "Your α divides by variances where standard deviations belong: a factor α multiplies a variance by "
       "α², so to bring a variance to 1 it must undo a standard deviation.",
       "Redo the last step with square roots: what must α² times the variance of q·k be?"),
    _M("sigma-multiplied", "multiplied by σ_q σ_k",
       "Larger components make the scores larger, so the factor must shrink them, not grow them.",
       "Redo the variance of α q·k with your α and compare it with 1."),
    _M("entropy-bits", "entropy in bits",
       "attnlib.entropy and this book use the natural logarithm (nats); your entropy uses log base 2.",
       "Use −Σ p ln p (np.log)."),
    _M("stats-of-scaled-row", "statistics of the scaled row",
       "Your numbers belong to the scaled row, the one the chapter already shows; the exercise asks for "
       "the row without the division by √d_k.",
       "Compute the weights with scale=1.0 first."),
    _M("change-not-new", "the new outputs instead of the change",
       "Your numbers are the new outputs O'; the question asks by how much each output moves, O' − O.",
       "Subtract the old outputs."),
    _M("change-contribution", "the new contribution instead of the change",
       "Your numbers are A_i,cat · v_cat', the whole new contribution of 'cat'. The old contribution "
       "A_i,cat · v_cat was there before.",
       "Subtract the old contribution: A_i,cat · (v_cat' − v_cat)."),
    _M("abc-divisor", "the divisor instead of the factor",
       "The factor multiplies the scores; you gave the number they are divided by.",
       "Give α as a factor, e.g. 0.5 for a division by 2."),
    _M("change-sign", "old minus new",
       "Your numbers are the change with its sign flipped: O − O' instead of O' − O.",
       "Subtract the old outputs from the new ones."),
    _M("bytes-elements", "numbers, not bytes",
       "Your numbers count the entries; each entry of a 16-bit format takes 2 bytes.",
       "Multiply the number of entries by the bytes per entry.", ("bytes",)),
    _M("params-no-w_o", "W_O left out",
       "A multi-head layer has four matrices: W_Q, W_K, W_V and the output projection W_O that mixes the "
       "concatenated heads.",
       "Count the entries of all four matrices."),
    _M("order-swapped", "the right numbers in the wrong order",
       "Your numbers are right, but in another order than the answer asks for.",
       "Check the order the exercise gives for the answer."),
    _M("unit-normalised-queries", "queries normalised too",
       "Only the keys are rescaled to length 1; the query keeps its length, which multiplies every score "
       "of its row.",
       "Divide the keys by their lengths, not the query."),
    _M("unit-keys-as-given", "keys left as given",
       "These are the weights with the keys as given (the three scores of query B tie); the question "
       "rescales every key to length 1 first.",
       "K / np.linalg.norm(K, axis=1, keepdims=True)."),
    _M("bytes-float32", "4 bytes per number",
       "A 16-bit format takes 2 bytes per number; your numbers are those of float32.",
       "Use 2 bytes per number.", ("bytes",)),
    _M("bytes-float64", "8 bytes per number",
       "A 16-bit format takes 2 bytes per number; your numbers are those of float64.",
       "Use 2 bytes per number.", ("bytes",)),
    _M("bytes-16bit", "2 bytes per number",
       "This format takes more than 2 bytes per number; your numbers are those of a 16-bit format.",
       "Use the format's size: 4 bytes for float32, 8 for float64.", ("bytes",)),
    _M("bytes-units", "not in bytes",
       "Your numbers are in binary or decimal units (MiB, GiB, MB, GB); give bytes.",
       "Multiply by 2**20 for MiB, 2**30 for GiB.", ("bytes",)),
    _M("kv-keys-only", "keys only",
       "The cache holds a key and a value per token, per layer and per key–value head.",
       "Count d_k + d_v numbers per token, layer and head."),
    _M("kv-query-heads", "64 key–value heads with grouped-query attention",
       "LLaMA-2 70B shares each key–value head between 8 query heads: it has 8 key–value heads, not 64.",
       "Use n_kv_heads = 8 for the first number."),
    _M("kv-one-layer", "one layer",
       "Each of the 80 layers has its own cache and its own score matrices.",
       "Multiply by the number of layers.", ("bytes",)),
    _M("blocks-missing-arrays", "not every array counted",
       "Your b fits only if one of the arrays a step holds is left out.",
       "List every array one step of tiled attention holds, with its shape, before counting bytes."),
    _M("blocks-float64", "8 bytes per number",
       "The exercise counts float32 numbers, 4 bytes each.",
       "Count 4 · (b² + 3·b·d) bytes."),
    _M("blocks-not-power-of-two", "not a power of two",
       "Your b is the largest whole number that fits; the exercise asks for a power of two.",
       "Round down to a power of two."),
    _M("mask-causal-only", "causal mask only",
       "Your mask hides the future but not the padding: the padded keys of the short sentence remain "
       "visible.",
       "Combine with the padding mask: padding & causal."),
    _M("mask-padding-only", "padding mask only",
       "Your mask hides the padding but not the future.",
       "Combine with the causal mask: padding & causal."),
    _M("mask-or", "| instead of &",
       "A pair is allowed only if both masks allow it: logical and, not or.",
       "Use P & causal_mask(n)."),
    _M("mask-batch-as-heads", "batch axis lined up with the heads",
       "Your mask has the shape (B, n, n) = (2, 5, 5). Broadcast against (B, H, n, n), its first axis "
       "lines up with the heads, not with the batch, so each head gets the other sentence's mask.",
       "Insert a head axis: padding_mask(...)[:, None] has shape (B, 1, 1, n)."),
    _M("heads-per-head-params", "parameters per head",
       "The four matrices W_Q, W_K, W_V and W_O hold every head's weights together.",
       "Count the entries of the four matrices once."),
    _M("online-no-rescale", "ℓ not rescaled when the maximum grew",
       "Your running sums add e^(s_j − m') to the old ℓ as it was. The old terms were taken relative to "
       "the old maximum m; when the maximum grows to m' they must be taken relative to m' too, so the "
       "old ℓ is multiplied by the correction e^(m − m') first.",
       "When the maximum grows from m to m', set ℓ = e^(m − m') · ℓ + e^(s_j − m')."),
    _M("online-rescale-inverted", "correction inverted: e^(m' − m) instead of e^(m − m')",
       "When the maximum grows, your old ℓ is multiplied by a number larger than 1. The old terms are "
       "now taken relative to a larger maximum, so they shrink: the correction is e^(old − new), at "
       "most 1.",
       "Multiply the old ℓ by e^(m − m'), m the old maximum and m' the new one."),
    _M("online-no-max", "ℓ summed without subtracting the maximum",
       "Your running sums add e^(s_j) itself. The online softmax keeps every term relative to the "
       "running maximum, e^(s_j − m), so that no exponent is above 0 and large logits cannot overflow.",
       "Add e^(s_j − m') with the running maximum m', never e^(s_j)."),
    _M("online-m-fixed", "maximum not updated (the first logit kept)",
       "Your m stays at the first logit, so a larger logit later gives a term e^(s_j − m) above 1: the "
       "running maximum must cover every key seen so far, which is what keeps every exponent at or "
       "below 0.",
       "After each key set m' = max(m, s_j), and rescale ℓ when m' > m."),
    _M("online-final-max", "the row's maximum used from the first key",
       "Your pairs use the maximum of the whole row from the start. The online softmax sees one key at "
       "a time: after key j its maximum is that of the keys 0 to j only. Knowing the final maximum in "
       "advance takes a first pass over the row, which is what the online softmax avoids.",
       "After key j, m is the maximum of s_0, ..., s_j."),
)}


# --------------------------------------------------------------------------- wrong computations
def _attend(
    Q: np.ndarray,
    K: np.ndarray,
    V: np.ndarray,
    *,
    scale: float,
    allowed: np.ndarray | None = None,
    axis: int = -1,
    transpose_k: bool = True,
    stable: bool = True,
    mask_mode: str = "inf",
) -> dict[str, np.ndarray]:
    """Attention computed step by step, with switches for each classic mistake.

    ``transpose_k=False`` multiplies ``Q @ K``; ``axis=0`` normalises over the queries;
    ``stable=False`` uses :func:`attnlib.naive.naive_softmax`; ``mask_mode`` is ``"inf"``
    (correct), ``"zero"`` (forbidden scores set to 0) or ``"after"`` (unmasked softmax,
    then forbidden weights set to 0). Returns the scores, scaled scores, weights and output.
    """
    scores = Q @ (K.T if transpose_k else K)  # (n_q, n_k)
    scaled = scores * scale
    logits = scaled
    if allowed is not None and mask_mode == "zero":
        logits = np.where(allowed, scaled, 0.0)
    elif allowed is not None and mask_mode == "inf":
        logits = np.where(allowed, scaled, -np.inf)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        if stable:
            weights = softmax(logits, axis=axis)
        else:
            weights = naive_softmax(logits, axis=axis)
        if allowed is not None and mask_mode == "after":
            weights = np.where(allowed, weights, 0.0)
        output = weights @ V  # (n_q, d_v)
    return {"scores": scores, "scaled": scaled, "weights": weights, "output": output}


def _causal_variants(n: int) -> list[tuple[str, np.ndarray]]:
    """The causal mask's classic misreadings: flipped, diagonal excluded, one key ahead."""
    tri = np.tri(n, dtype=bool)
    return [
        ("mask-flipped", tri.T),
        ("mask-diagonal-excluded", np.tri(n, k=-1, dtype=bool)),
        ("mask-one-ahead", np.tri(n, k=1, dtype=bool)),
    ]


def _attention_candidates(
    Q: Any, K: Any, V: Any, *, what: str, scale: float | None, causal: bool, mask: Any = None
) -> Candidates:
    """Every classic wrong answer for ``what`` (with duplicates of one key allowed), in priority order."""
    Q, K, V = (np.asarray(x, dtype=np.float64) for x in (Q, K, V))
    n_k, d_k = K.shape
    right = scale_for(d_k) if scale is None else float(scale)
    allowed = causal_mask(Q.shape[0], n_k) if causal else (None if mask is None else np.asarray(mask))
    out: Candidates = []

    def add(key: str, **kw: Any) -> None:
        kw.setdefault("scale", right)
        kw.setdefault("allowed", allowed)
        out.append((key, _attend(Q, K, V, **kw)[what]))

    if what == "scores":
        out.append(("scores-transposed", (K @ Q.T)))
        if Q.shape[1] == K.shape[0]:
            out.append(("k-not-transposed", Q @ K))
        out.append(("scaled-scores", (Q @ K.T) * right))
        return out
    scales = [("scale-d_k", 1.0 / d_k), ("no-scale", 1.0), ("scale-sqrt-n", 1.0 / math.sqrt(n_k)),
              ("scale-kept", scale_for(d_k))]
    for key, alpha in scales:
        if not math.isclose(alpha, right, rel_tol=1e-12):
            add(key, scale=alpha)
    if Q.shape[1] == K.shape[0]:
        add("k-not-transposed", transpose_k=False)
    if what == "scaled":
        return out
    add("wrong-axis", axis=0)
    if Q.shape == K.shape:  # K Qᵀ has the shape of Q Kᵀ: its rows softmaxed
        out.append(("scores-transposed", _attend(K, Q, V, scale=right, allowed=allowed)[what]))
    add("no-max-subtraction", stable=False)
    if allowed is not None:
        add("no-mask", allowed=None)
        if causal:
            for key, m in _causal_variants(Q.shape[0]):
                add(key, allowed=m)
                if key == "mask-diagonal-excluded" and what in ("weights", "output"):
                    # a hand-written softmax turns the empty first row into 0/0 = NaN
                    arr = _attend(Q, K, V, scale=right, allowed=m)[what].copy()
                    arr[~m.any(axis=1)] = np.nan
                    out.append((key, arr))
        add("mask-after-softmax", mask_mode="after")
        add("mask-zero-scores", mask_mode="zero")
    with np.errstate(over="ignore", invalid="ignore"):
        e = np.exp(_attend(Q, K, V, scale=right, allowed=allowed)["scaled"])  # exp without the division
    if allowed is not None:
        e = np.where(allowed, e, 0.0)
    if what == "weights":
        out.append(("not-normalised", e))
        if Q.shape[0] == n_k:  # a column read as a row: the weights the keys would get, one row per key
            out.append(("weights-transposed", _attend(Q, K, V, scale=right, allowed=allowed)["weights"].T))
    else:
        out.append(("not-normalised", e @ V))
        ref_w = _attend(Q, K, V, scale=right, allowed=allowed)["weights"]
        out.append(("weights-not-output", ref_w))
    return out


def attention_misconceptions(
    Q: Any, K: Any, V: Any, *, what: str = "weights", scale: float | None = None, causal: bool = False
) -> dict[str, np.ndarray]:
    """The classic wrong answers of attention, each recomputed from ``Q``, ``K`` and ``V``.

    Parameters
    ----------
    Q : (n_q, d_k) array_like
    K : (n_k, d_k) array_like
    V : (n_k, d_v) array_like
    what : {"scores", "scaled", "weights", "output"}
        Which quantity the wrong answers are of.
    scale : float, optional
        The right factor; ``None`` means ``1/√d_k``. Wrong factors equal to it are left out.
    causal : bool
        Whether the right answer uses the causal mask; adds the mask mistakes.

    Returns
    -------
    dict of str to ndarray
        Keys of :data:`MISCONCEPTIONS` (``"scale-d_k"``, ``"no-scale"``, ``"scale-sqrt-n"``,
        ``"wrong-axis"``, ``"k-not-transposed"`` when ``Q K`` exists, ``"no-max-subtraction"``,
        ``"not-normalised"``, ``"weights-not-output"``, the mask mistakes, ...), each with the
        array that mistake produces. The ``weights-not-output`` entry has the weights' shape.

    Raises
    ------
    ValueError
        ``what`` is not one of the four names, or the arrays are not 2-D and compatible.

    Examples
    --------
    >>> from attnlib.examples import cat_sat_on_mat
    >>> ex = cat_sat_on_mat()
    >>> wrong = attention_misconceptions(ex.Q, ex.K, ex.V, what="weights")
    >>> wrong["scale-d_k"][0].round(4)  # the row of "The", divided by d_k = 4
    array([0.1499, 0.2471, 0.1925, 0.1925, 0.2181])
    >>> wrong["wrong-axis"].sum(axis=0).round(4)  # columns sum to 1
    array([1., 1., 1., 1., 1.])
    """
    if what not in ("scores", "scaled", "weights", "output"):
        raise ValueError(f"what must be 'scores', 'scaled', 'weights' or 'output'; got {what!r}")
    arrays = [np.asarray(x, dtype=np.float64) for x in (Q, K, V)]
    if any(a.ndim != 2 for a in arrays) or arrays[0].shape[1] != arrays[1].shape[1] \
            or arrays[1].shape[0] != arrays[2].shape[0]:
        raise ValueError(
            "Q, K, V must be 2-D with Q (n_q, d_k), K (n_k, d_k), V (n_k, d_v); got shapes "
            f"{arrays[0].shape}, {arrays[1].shape}, {arrays[2].shape}"
        )
    result: dict[str, np.ndarray] = {}
    for key, arr in _attention_candidates(*arrays, what=what, scale=scale, causal=causal):
        result.setdefault(key, arr)
    return result
