"""Exercise checks: tell a learner whether an answer is right and, if not, what went wrong.

``check(label, answer)`` compares a learner's answer to one of the book's exercises with a
reference that is **computed at check time** from the exercise's inputs (the book's examples,
:func:`~attnlib.trace.trace_attention`, :func:`~attnlib.core.causal_mask`, the counting functions of
:mod:`attnlib.counts`, ...). Nothing here stores an answer: the registry holds the inputs,
a sentence saying what to submit, and functions.

On a wrong answer it recomputes the classic wrong answers from the same inputs (scaled by
``d_k`` instead of ``√d_k``, no scaling, softmax over the wrong axis, ``K`` not transposed,
no max subtraction, weights that do not sum to 1, the weights instead of ``weights · V``,
a causal mask flipped or shifted by one, ``√n`` instead of ``√d_k``, and some that belong to
one exercise) and names the one the answer matches. Otherwise it points at the largest
difference. Malformed answers (``...``, ``None``, text, a dict, NaN, a wrong shape) get a
message, never a traceback; only a bad label raises (``ValueError`` listing the closest
labels, ``TypeError`` for a non-string), because it is a mistake in the calling code, not in
the answer.

The result is a :class:`Feedback`, which Jupyter shows as Markdown and prints as plain
text; its text is deterministic (numbers rounded to 4 decimals), so stored notebook outputs
compare equal on any machine.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from attnlib import baselines as _baselines
from attnlib import counts as _counts
from attnlib import examples as _examples
from attnlib import kvcache as _kvcache
from attnlib import models as _models
from attnlib import stats as _stats
from attnlib import variants as _variants
from attnlib.core import causal_mask, padding_mask, scaled_dot_product_attention, softmax
from attnlib.multihead import MultiHeadAttention
from attnlib.naive import naive_softmax
from attnlib.trace import trace_attention

__all__ = [
    "Misconception",
    "MISCONCEPTIONS",
    "Exercise",
    "EXERCISES",
    "Feedback",
    "check",
    "exercise",
    "attention_misconceptions",
]

Candidates = list[tuple[str, np.ndarray]]


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
    """

    key: str
    name: str
    explanation: str
    hint: str


_M = Misconception
#: Every misconception ``check`` can name, by key. The first twelve are the classic ones of attention.
#:
#: :meta hide-value:
MISCONCEPTIONS: dict[str, Misconception] = {m.key: m for m in (
    _M("scale-d_k", "scaled by d_k instead of √d_k",
       "Your numbers are what dividing the scores by d_k = {d_k} gives. The factor is 1/√d_k: it gives "
       "q·k/√d_k a variance of about 1, while dividing by d_k shrinks the scores further and flattens "
       "every row.",
       "Divide the raw scores by √d_k = {sqrt_d_k}."),
    _M("no-scale", "no scaling",
       "Your numbers are what the raw scores q·k give without the factor 1/√d_k. Their variance grows "
       "with d_k, and large scores push the softmax towards one-hot rows.",
       "Divide every score by √d_k = {sqrt_d_k} before the softmax."),
    _M("scale-sqrt-n", "√n instead of √d_k",
       "Your numbers are what dividing by √n = √{n} gives, n being the number of keys. The factor comes "
       "from the length of each dot product, the width d_k of queries and keys, not from how many "
       "tokens there are.",
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
       "Row i of the scores belongs to query i: S = Q Kᵀ. Your matrix is its transpose, K Qᵀ, with one "
       "row per key.",
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
       "Use causal_mask(n) (np.tri(n, dtype=bool)) or transpose your mask."),
    _M("mask-inverted", "mask inverted: True where a pair is forbidden",
       "Every entry of your mask is the opposite of the expected one: you marked the pairs that are "
       "forbidden. In attnlib (and in PyTorch's boolean attn_mask) True means the query may attend to "
       "the key; some libraries use the opposite convention, and an additive mask puts -inf where a "
       "pair is forbidden.",
       "Negate your mask (~mask), or build it so that True marks the pairs that may attend."),
    _M("mask-diagonal-excluded", "causal mask shifted by one: the diagonal excluded",
       "Each token may attend to itself, so key i is allowed for query i. Your mask allows only j < i, "
       "which leaves the first token nothing to attend to.",
       "Allow j ≤ i: np.tri(n, dtype=bool), not np.tri(n, k=-1)."),
    _M("mask-one-ahead", "causal mask shifted by one: one future key allowed",
       "Your mask allows j ≤ i + 1: every token also sees the next one, which a model that predicts the "
       "next token must not.",
       "Allow j ≤ i: np.tri(n, dtype=bool), not np.tri(n, k=1)."),
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
       "Count L − 1 additions per dot product of length L and per row sum of L terms."),
    _M("flops-projections", "projections counted per pair",
       "Your per-pair count includes the projections Q W_q and K W_k, which are done once per token, not "
       "once per pair.",
       "Subtract the projections before dividing by the number of pairs."),
    _M("flops-max-n-compares", "n comparisons for a maximum of n numbers",
       "The maximum of L numbers takes L − 1 comparisons.",
       "Count n_k − 1 comparisons per row."),
    _M("flops-exp-counted", "exponentials counted as FLOPs",
       "In this book's convention exponentials are counted in their own column, not as FLOPs.",
       "FLOPs = multiplies + adds + comparisons + divides."),
    _M("flops-swapped", "n_q and n_k swapped",
       "Your counts are those of 5 queries and 3 keys. Here 3 queries each score 5 keys.",
       "Rows of S are queries: n_q = 3, n_k = 5."),
    _M("d_a-equal-widths", "equal widths, not equal costs",
       "d_a = d_k makes the widths equal, but an additive score costs about 3 FLOPs per hidden unit and "
       "a dot product about 2 per dimension.",
       "Set the per-pair counts equal and solve for d_a."),
    _M("d_a-inverted", "ratio inverted",
       "Your d_a makes the additive score cost more per pair, not the same: the ratio is inverted.",
       "3·d_a ≈ 2·d_k, so d_a ≈ 2·d_k / 3."),
    _M("shapes-w-transposed", "projection matrices transposed",
       "With row vectors, Q = X W_Q maps a (n, d_model) input to (n, d_k), so W_Q is (d_model, d_k).",
       "Write each projection as (d_model, output width)."),
    _M("shapes-output-d_k", "output as wide as a key",
       "The output is a weighted sum of value rows, so it is as wide as a value: d_v, not d_k.",
       "O = A V has shape (n_q, d_v)."),
    _M("shapes-qt-k", "S = Qᵀ K",
       "S pairs every query with every key, so it has one row per query and one column per key: Q Kᵀ.",
       "S and A are (n_q, n_k)."),
    _M("shapes-one-output-per-key", "one output per key",
       "Each query gets one output row, whatever the number of keys.",
       "O has n_q rows."),
    _M("params-d_k-everywhere", "W_V as wide as W_Q",
       "W_V maps to the value width d_v, which differs from d_k here.",
       "Count d_model · d_k twice and d_model · d_v once."),
    _M("sigma-d_k", "divided by σ_q σ_k d_k instead of σ_q σ_k √d_k",
       "The variance of q·k is σ_q² σ_k² d_k, so its standard deviation is σ_q σ_k √d_k; α is one over "
       "the standard deviation. Your α divides by d_k itself, which leaves the variance 1/d_k, not 1.",
       "Take the square root of d_k."),
    _M("sigma-ignored", "σ_q and σ_k ignored",
       "1/√d_k makes the variance 1 only for unit-variance components; here the scaled score still has "
       "variance σ_q² σ_k².",
       "Divide also by σ_q σ_k."),
    _M("sigma-variances", "variances instead of standard deviations",
       "Var(α q·k) = α² d_k σ_q² σ_k²: α must cancel a square root of that.",
       "α = 1 / (σ_q σ_k √d_k)."),
    _M("sigma-multiplied", "multiplied by σ_q σ_k",
       "Larger components make the scores larger, so the factor must shrink them, not grow them.",
       "Redo the variance of α q·k with your α and compare it with 1."),
    _M("entropy-bits", "entropy in bits",
       "attnlib.entropy and this book use the natural logarithm (nats); your entropy uses log base 2.",
       "Use −Σ p ln p (np.log)."),
    _M("jacobian-spectral", "spectral norm of the Jacobian",
       "The exercise compares the Frobenius norm ‖J‖_F; yours is the spectral norm (the largest "
       "singular value).",
       "Use jacobian_norm(p) (ord='fro', the default)."),
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
    _M("rowsum-weights", "sums of the weights instead of the outputs",
       "Each row of A sums to 1; the question asks for the sums of the rows of O = A V.",
       "Sum the output rows: output.sum(axis=1)."),
    _M("abc-trace-scale", "the scale of the trace",
       "1/√d_k = 1/√2 is the scale that produced the trace, which the sentence does not match.",
       "Try the other scales and compare all five numbers, rounded to two decimals."),
    _M("abc-divisor", "the divisor instead of the scale",
       "The scale multiplies the scores; you gave the number they are divided by.",
       "Give α as a factor, e.g. 0.5 for a division by 2."),
    _M("abc-stated", "the sentence's weights",
       "These are the numbers the sentence states; the question asks for the weights Q, K and V give.",
       "Compute them with trace_attention."),
    _M("overflow-off-by-one", "the last x that does not overflow",
       "At your x, e^x is still a finite float16 number; the question asks for the first whole x at "
       "which exp overflows.",
       "Compare e^x with 65504, the largest float16 number, at your x and at the next whole number."),
    _M("overflow-float32", "the float32 threshold",
       "Your x is where exp overflows float32 (largest number about 3.4e38); these logits are float16 "
       "(largest 65504).",
       "Use ln 65504."),
    _M("overflow-float64", "the float64 threshold",
       "Your x is where exp overflows float64 (largest number about 1.8e308); these logits are float16 "
       "(largest 65504).",
       "Use ln 65504."),
    _M("unit-normalised-queries", "queries normalised too",
       "Only the keys are rescaled to length 1; the query keeps its length, which multiplies every score "
       "of its row.",
       "Divide the keys by their lengths, not the query."),
    _M("unit-keys-as-given", "keys left as given",
       "These are the weights with the keys as given (the three scores of query B tie); the question "
       "rescales every key to length 1 first.",
       "K / np.linalg.norm(K, axis=1, keepdims=True)."),
    _M("xavier-sd-scaling", "variance divided by √d_k",
       "The factor 1/√d_k multiplies the score, so the variance is divided by its square, d_k.",
       "Var(q·k / √d_k) = Var(q·k) / d_k."),
    _M("xavier-no-sum", "an entry of q as one weight",
       "An entry of q = x W_Q sums d_model products of an input and a weight, so its variance is "
       "d_model times a weight's.",
       "Var(q_t) = d_model · 2 / (fan_in + fan_out)."),
    _M("bytes-float32", "4 bytes per number",
       "A 16-bit format takes 2 bytes per number; your numbers are those of float32.",
       "Use 2 bytes per number."),
    _M("bytes-units", "not in bytes",
       "Your numbers are in binary or decimal units (MiB, GiB, MB, GB); give bytes.",
       "Multiply by 2**20 for MiB, 2**30 for GiB."),
    _M("scores-kv-heads", "8 heads of scores",
       "Grouped-query attention shares keys and values between query heads, but every one of the 64 "
       "query heads still scores every key.",
       "Count 64 heads of scores per layer."),
    _M("kv-keys-only", "keys only",
       "The cache holds a key and a value per token, per layer and per key–value head.",
       "Count d_k + d_v numbers per token, layer and head."),
    _M("kv-query-heads", "64 key–value heads with grouped-query attention",
       "LLaMA-2 70B shares each key–value head between 8 query heads: it has 8 key–value heads, not 64.",
       "Use n_kv_heads = 8 for the first number."),
    _M("kv-one-layer", "one layer",
       "Each of the 80 layers has its own cache.",
       "Multiply by the number of layers."),
    _M("blocks-missing-arrays", "not every array counted",
       "A step holds the b × b tile of scores and b rows each of Q, K and V; b = 256 fits only if one "
       "of them is left out.",
       "Count 4 · (b² + 3·b·d) bytes."),
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
    _M("mask-padding-queries", "padding applied to the queries",
       "The padding mask hides padded keys (columns); yours hides padded queries (rows).",
       "Broadcast the padding over the queries: shape (batch, 1, n_k)."),
    _M("mask-batch-as-heads", "batch axis lined up with the heads",
       "Your mask has the shape (B, n, n) = (2, 5, 5). Broadcast against (B, H, n, n), its first axis "
       "lines up with the heads, not with the batch, so each head gets the other sentence's mask.",
       "Insert a head axis: padding_mask(...)[:, None] has shape (B, 1, 1, n)."),
    _M("window-off-by-one", "window one too wide",
       "With w = 2 a token sees itself and the one before it; yours sees two before it.",
       "causal_mask(n) & ~np.tri(n, n, -2, dtype=bool)."),
    _M("window-diagonal", "window of 1",
       "Your mask lets each token see only itself; w = 2 adds the token before it.",
       "causal_mask(n) & ~np.tri(n, n, -2, dtype=bool)."),
    _M("window-symmetric", "band not causal",
       "Your band also allows the next token (|i − j| ≤ 1); a sliding window here is causal.",
       "Keep j ≤ i."),
    _M("window-flipped", "band flipped",
       "Your band allows the token after, not the one before.",
       "Transpose: the band lies on and below the diagonal."),
    _M("pairs-2n", "2n pairs",
       "The first token has no token before it, so it contributes one pair, not two.",
       "Count the allowed entries of the mask."),
    _M("heads-per-head-params", "parameters per head",
       "The four matrices W_Q, W_K, W_V and W_O hold every head's weights together.",
       "Count the entries of the four matrices once."),
    _M("key-unchanged", "k_on unchanged",
       "Your k_on equals the original [0, 0, 1, 1].",
       "Change one of its entries."),
    _M("key-several", "more than one entry changed",
       "The exercise allows a change of one entry of k_on.",
       "Change a single entry."),
    _M("key-invisible", "an entry 'The' cannot see",
       "q_The = [1, 0, 1, 0] is 0 in d1 and d3, so the entries of k_on in those dimensions do not enter "
       "the score of 'The' with 'on'.",
       "Change d0 or d2."),
    _M("agree-unchanged", "the outputs of V in its own order",
       "Your outputs are those of the original V. The weights do not change, since V does not enter "
       "them, but each weight now multiplies the row of V[::-1] at its key's position, which belongs to "
       "the other token.",
       "Keep the weights and multiply them by V[::-1]."),
    _M("agree-weights-reversed", "the weights' rows reversed instead of the values",
       "Your outputs are the weights with their rows in reverse order times the original V (the same as "
       "the outputs in reverse token order): each query got the other query's weights. Reversing V does "
       "not change which query has which weights; it changes which value row each weight multiplies.",
       "Keep A as it is and multiply it by V[::-1]."),
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
    _M("online-no-max", "ℓ summed without subtracting the maximum (overflow)",
       "Your running sums are infinite: they add e^(s_j) itself, and the exponential of a logit this "
       "large overflows float64 (whose largest number is about 1.8e308). The online softmax only "
       "exponentiates s_j − m and m − m', which are at most 0.",
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
    _M("mask-other-lengths", "the padding of other lengths",
       "Your mask hides padding, but not that of this batch: each row of the padding mask follows the "
       "length of its own sentence, in the batch's order.",
       "Build the padding mask from this batch's lengths, in order, then combine it with the causal mask."),
    _M("key-tie", "a tie, not a lead",
       "'on' now ties with the best key; the exercise asks for more weight than on any other token.",
       "Raise the entry a little more."),
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
    right = 1.0 / math.sqrt(d_k) if scale is None else float(scale)
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
              ("scale-kept", 1.0 / math.sqrt(d_k))]
    for key, alpha in scales:
        if not math.isclose(alpha, right, rel_tol=1e-12):
            add(key, scale=alpha)
    if Q.shape[1] == K.shape[0]:
        add("k-not-transposed", transpose_k=False)
    if what == "scaled":
        return out
    add("wrong-axis", axis=0)
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


# --------------------------------------------------------------------------- registry
@dataclass(frozen=True)
class Exercise:
    """One checkable answer of an exercise: what to submit and how it is judged.

    Attributes
    ----------
    label : str
        The exercise's label in the book, with ``:part`` when it has several answers.
    chapter : str
        The notebook it belongs to, e.g. ``"04_worked_examples"``.
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
        for key, arr in self.wrong_answers():
            if key not in keys and _distinguishable(self, np.asarray(arr), ref):
                keys.append(key)
        if self.rows_sum_to_one:
            if "not-normalised" not in keys:
                keys.append("not-normalised")
            if "wrong-axis" not in keys and ref.ndim == 2 and not np.allclose(ref.sum(axis=0), 1):
                keys.append("wrong-axis")  # a column-normalised answer is caught by the column check
        return tuple(keys)


def _distance(wrong: np.ndarray, ref: np.ndarray) -> float:
    """Largest absolute difference; inf for other shapes or NaN where the other has a number."""
    if wrong.shape != ref.shape:
        return math.inf
    with np.errstate(invalid="ignore"):
        diff = np.abs(wrong.astype(np.float64) - ref.astype(np.float64))
    both_nan = np.isnan(wrong.astype(np.float64)) & np.isnan(ref.astype(np.float64))
    diff = np.where(both_nan, 0.0, diff)
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
        out = [(key, pick(arr)) for key, arr in cands]
        return (extra() if extra else []) + out  # the exercise's own mistakes are the more specific

    def context() -> dict[str, Any]:
        Q, K, V, _, _ = parts()
        return _ctx_attention(Q, K, V)

    full_rows = inputs()[0].shape[0]
    return Exercise(
        label=label, chapter=chapter, prompt=prompt, answer_form=answer_form, tolerance=_DEC3,
        kind="real", reference=reference, wrong_answers=wrong_answers, row=row,
        n_rows=full_rows if row is not None else None,
        rows_sum_to_one=(what == "weights" and transform is None), context=context,
    )


def _scalar_exercise(
    label: str, chapter: str, prompt: str, answer_form: str, reference: Callable[[], Any],
    wrong_answers: Callable[[], Candidates], *, kind: str = "real", atol: float = 5e-4,
    tolerance: str | None = None, names: tuple[str, ...] | None = None,
) -> Exercise:
    """An exercise with a number or a short list of numbers as answer."""
    if tolerance is None:
        tolerance = _EXACT if kind == "integer" else _DEC3 if atol == 5e-4 else _DEC2
    return Exercise(label=label, chapter=chapter, prompt=prompt, answer_form=answer_form,
                    tolerance=tolerance, kind=kind,
                    reference=lambda: np.asarray(reference()),
                    wrong_answers=lambda: [(k, np.asarray(v)) for k, v in wrong_answers()],
                    atol=atol, names=names)


# ---- chapter 1: why attention
def _margin_for(n: int, target: float = 0.9, rivals: int | None = None) -> float:
    """The scaled margin m at which softmax([m, 0, ..., 0])[0] reaches ``target``, by bisection."""
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
    "The scaled margin m for which the weight on token 0 reaches 0.9, for n = 10 and for n = 1000.",
    "2 numbers: m for n = 10, then m for n = 1000.",
    lambda: [_margin_for(n) for n in _MARGIN_NS],
    lambda: [("margin-n-keys", [_margin_for(n, rivals=n) for n in _MARGIN_NS]),
             ("margin-exp", [math.exp(_margin_for(n)) for n in _MARGIN_NS]),
             ("margin-log10", [_margin_for(n) / math.log(10) for n in _MARGIN_NS])],
    atol=5e-3, names=("m for n = 10", "m for n = 1000"),
))


def _per_pair(d_k: int, d_a: int, *, ladd: bool = False) -> tuple[int, int]:
    """Per-pair FLOPs of additive and dot-product scores, extracted from score_costs without projections.

    ``score_costs(n_q, n_k)`` is ``a·n_q·n_k + b·(n_q + n_k)``: ``a = (f(2, 2) − 2 f(1, 1)) / 2``.
    """
    f11 = _baselines.score_costs(1, 1, d_k, d_a)
    f22 = _baselines.score_costs(2, 2, d_k, d_a)
    additive = (f22.additive.flops - 2 * f11.additive.flops) // 2
    dot = f11.dot_product.flops
    return (additive + 1, dot + 1) if ladd else (additive, dot)


def _costs_answer(ladd: bool = False) -> list[int]:
    return [_per_pair(64, 42, ladd=ladd)[0], _per_pair(64, 43, ladd=ladd)[0], _per_pair(64, 42, ladd=ladd)[1]]


def _costs_with_projections() -> list[float]:
    n = 256
    return [_baselines.score_costs(n, n, 64, 42).additive.flops / n**2,
            _baselines.score_costs(n, n, 64, 43).additive.flops / n**2,
            _baselines.score_costs(n, n, 64, 42).dot_product.flops / n**2]


def _equal_cost_width(d_k: int = 64) -> float:
    """The (fractional) d_a at which an additive score costs the dot product's FLOPs per pair."""
    a1, dot = _per_pair(d_k, 1)
    a2, _ = _per_pair(d_k, 2)
    return (dot - a1) / (a2 - a1) + 1


_register(_scalar_exercise(
    "why-ex-costs:d_a", "01_why_attention",
    "The hidden width d_a at which additive scoring costs the same FLOPs per pair as the dot product "
    "with d_k = 64 (not necessarily a whole number).",
    "1 number: d_a.",
    _equal_cost_width,
    lambda: [("d_a-equal-widths", 64.0), ("d_a-inverted", 64 * 64 / _equal_cost_width())],
    atol=5e-3,
))
_register(_scalar_exercise(
    "why-ex-costs:per-pair", "01_why_attention",
    "FLOPs per pair of tokens, projections left out: additive scoring with d_a = 42 and with d_a = 43, "
    "and the dot product with d_k = 64.",
    "3 whole numbers: additive at d_a = 42, additive at d_a = 43, dot product.",
    _costs_answer,
    lambda: [("flops-sum-l-adds", _costs_answer(ladd=True)),
             ("flops-projections", _costs_with_projections())],
    kind="integer", names=("additive, d_a = 42", "additive, d_a = 43", "dot product"),
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
    kind="integer", names=_SHAPE_NAMES,
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
    kind="integer", names=_CROSS_NAMES,
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


def _cat_sits(W_K: str = "W_K", W_V: np.ndarray | None = None):
    cs = _examples.cat_sits()
    Q = cs.X @ cs.W_Q
    K = cs.X @ getattr(cs, W_K)
    V = cs.X @ (cs.W_V if W_V is None else W_V)
    return Q, K, V, cs.tokens


def _cat_sits_new_v():
    cs = _examples.cat_sits()
    return _cat_sits(W_V=np.array(cs.W_Q))  # the exercise's W_V: the same matrix as W_Q


_register(_attention_exercise(
    "qkv-ex-values:output", "02_qkv",
    "The output O of 'Cat sits' when W_V is replaced by W_Q's matrix (columns (1, 0, 0) and (0, 1, 0)).",
    "A 2 × 2 matrix: one output row per token ('Cat', 'sits').",
    _cat_sits_new_v, "output",
))
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



def _cat_sits_v_reversed():
    Q, K, V, tokens = _cat_sits()
    return Q, K, V[::-1], tokens  # the bug of the exercise: values in reverse token order


def _agree_extra() -> Candidates:
    Q, K, V, tokens = _cat_sits()
    tr = trace_attention(Q, K, V, tokens=tokens)
    return [("agree-unchanged", tr.output), ("agree-weights-reversed", tr.weights[::-1] @ V)]


_register(_attention_exercise(
    "qkv-ex-agree:output", "02_qkv",
    "The outputs of 'Cat sits' when the values are passed in reverse token order, V[::-1].",
    "A 2 × 2 matrix: the outputs of 'Cat' and 'sits' (one row each) with V[::-1] as the values.",
    _cat_sits_v_reversed, "output", extra=_agree_extra,
))

# ---- chapter 3: scaling
def _the_unscaled_row(scale: float | None = 1.0) -> np.ndarray:
    Q, K, V, tokens = _cat()
    return trace_attention(Q, K, V, tokens=tokens, scale=scale).weights[0]


_register(_attention_exercise(
    "sc-ex-cat:weights", "03_scaling",
    "The weights of the query 'The' in 'The cat sat on mat' without the division by √d_k.",
    "5 numbers: the weights of 'The' on The, cat, sat, on, mat (the whole 5 × 5 matrix is accepted too).",
    _cat, "weights", scale=1.0, row=0,
))


def _row_stats(p: np.ndarray, *, bits: bool = False, spectral: bool = False) -> list[float]:
    h = float(_stats.entropy(p))
    return [float(_stats.max_weight(p)), h / math.log(2) if bits else h,
            float(_stats.jacobian_norm(p, ord=2 if spectral else "fro"))]


_register(_scalar_exercise(
    "sc-ex-cat:stats", "03_scaling",
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
    "sc-ex-sigma", "03_scaling",
    "The factor α that gives α q·k variance 1 for d_k = 64, σ_q = 3, σ_k = 0.5.",
    "1 number: α.",
    _sigma_alpha,
    lambda: [("sigma-ignored", 1 / math.sqrt(_stats.dot_product_variance(_SIGMA["d_k"]))),
             ("sigma-d_k", _sigma_alpha() / math.sqrt(_SIGMA["d_k"])),
             ("sigma-variances", math.sqrt(_SIGMA["d_k"]) / _stats.dot_product_variance(**_SIGMA)),
             ("sigma-multiplied", _SIGMA["sigma_q"] * _SIGMA["sigma_k"] / math.sqrt(_SIGMA["d_k"]))],
))


# ---- chapter 4: worked examples
_MAT = 4
for _what, _form in (
    ("scores", "5 numbers: the raw scores q_mat · k for the keys The, cat, sat, on, mat"),
    ("scaled", "5 numbers: the scaled scores of 'mat' for the keys The, cat, sat, on, mat"),
    ("weights", "5 numbers: the weights of 'mat' on The, cat, sat, on, mat"),
    ("output", "4 numbers: the output row of 'mat'"),
):
    _register(_attention_exercise(
        f"worked-ex-mat:{_what}", "04_worked_examples",
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
    return [("change-not-new", new.output),
            ("change-contribution", new.weights[:, 1:2] * _v_doubled()[1])]


_register(_attention_exercise(
    "worked-ex-double-v", "04_worked_examples",
    "How much every output of 'The cat sat on mat' changes when v_cat is doubled to [0, 2, 0, 0].",
    "A 5 × 4 matrix: the change O' − O of every output (new minus old), one row per query.",
    _cat, "weights", transform=_double_v_change, extra=_double_v_extra,
))


def _key_on_reference() -> np.ndarray:
    """A one-entry change of k_on that makes 'The' prefer 'on', found by search with attnlib."""
    Q, K, V, tokens = _cat()
    for value in np.arange(0.0, 10.0, 0.5):
        for d in range(K.shape[1]):
            K2 = np.array(K)
            K2[3, d] = value
            w = trace_attention(Q, K2, V, tokens=tokens).weights[0]
            if np.argmax(w) == 3 and np.sort(w)[-2] < w[3]:
                return K2[3]
    raise AssertionError("no one-entry change found")  # pragma: no cover


def _key_on_judge(k_on: np.ndarray) -> tuple[bool, str | None, str]:
    Q, K, V, tokens = _cat()
    changed = np.flatnonzero(~np.isclose(k_on, K[3], rtol=0, atol=1e-12))
    if changed.size == 0:
        return False, "key-unchanged", ""
    if changed.size > 1:
        return False, "key-several", f"You changed {changed.size} entries (dimensions {changed.tolist()})."
    K2 = np.array(K)
    K2[3] = k_on
    w = trace_attention(Q, K2, V, tokens=tokens).weights[0]
    others = np.delete(w, 3)
    if w[3] > others.max() + 1e-9:
        return True, None, f"'The' now puts {_fmt_num(w[3])} on 'on', more than on any other token."
    if Q[0, changed[0]] == 0:
        return False, "key-invisible", f"You changed d{changed[0]}."
    if abs(w[3] - others.max()) <= 1e-9:
        return False, "key-tie", ""
    best = tokens[int(np.argmax(w))]
    return False, None, (f"'The' still puts more weight on '{best}' than on 'on'. Its score with 'on' must "
                         "beat its largest score; raise the entry further.")


_register(Exercise(
    label="worked-ex-key-on", chapter="04_worked_examples",
    prompt="A change of one entry of k_on = [0, 0, 1, 1] that makes 'The' put more weight on 'on' than on "
           "any other token.",
    answer_form="4 numbers: your new k_on (or the whole new 5 × 4 K).",
    tolerance="by recomputing the weights of 'The' with your key", kind="open",
    reference=_key_on_reference,
    wrong_answers=lambda: [("key-invisible", np.array([0.0, 5.0, 1.0, 1.0])),
                           ("key-several", np.array([1.5, 0.0, 2.0, 1.0]))],
    row=3, n_rows=5, judge=_key_on_judge,
))
_register(_attention_exercise(
    "worked-ex-unscaled", "04_worked_examples",
    "The 5 × 5 weights of 'The cat sat on mat' without the division by √d_k (scale = 1).",
    "A 5 × 5 matrix of weights, one row per query.",
    _cat, "weights", scale=1.0,
))


def _rowsum_extra() -> Candidates:
    Q, K, V, tokens = _cat()
    tr = trace_attention(Q, K, V, tokens=tokens)
    return [("rowsum-weights", tr.weights.sum(axis=1))]


_register(_attention_exercise(
    "worked-ex-rowsum", "04_worked_examples",
    "The sum of the entries of each output row O_i of 'The cat sat on mat'.",
    "5 numbers: the sums of the output rows of The, cat, sat, on, mat.",
    _cat, "output", transform=lambda O: O.sum(axis=-1), extra=_rowsum_extra,
))

_ABC_STATED_W = (0.37, 0.32, 0.31)  # the sentence of the exercise: its weights of A ...
_ABC_STATED_OUT = (0.52, 0.48)  # ... and its output
_ABC_SCALES = (1 / math.sqrt(2), 1 / 2, 1 / 4, 1 / 8)  # the scales the exercise offers


def _abc_sentence_scale() -> float:
    """The offered scale whose rounded weights and output of A are the sentence's numbers."""
    Q, K, V, tokens = _abc()
    for alpha in _ABC_SCALES:
        tr = trace_attention(Q, K, V, tokens=tokens, scale=alpha)
        if np.array_equal(tr.weights[0].round(2), _ABC_STATED_W) and \
                np.array_equal(tr.output[0].round(2), _ABC_STATED_OUT):
            return alpha
    raise AssertionError("no offered scale fits")  # pragma: no cover


_register(_scalar_exercise(
    "worked-ex-abc-check:scale", "04_worked_examples",
    "Which of the scales 1/√2, 1/2, 1/4 and 1/8, used in place of 1/√d_k, produces all five numbers of "
    "the sentence.",
    "1 number: the scale α, one of the four listed (a factor such as 0.5, not the divisor).",
    _abc_sentence_scale,
    lambda: [("abc-trace-scale", 1 / math.sqrt(_examples.three_directions().d_k)),
             ("scale-d_k", 1 / _examples.three_directions().d_k),
             ("abc-divisor", 1 / _abc_sentence_scale())],
))
_register(_attention_exercise(
    "worked-ex-abc-check:weights", "04_worked_examples",
    "Query A's weights in A/B/C, from Q, K and V.",
    "3 numbers: A's weights on A, B, C (the whole 3 × 3 matrix is accepted too).",
    _abc, "weights", row=0, extra=lambda: [("abc-stated", np.array(_ABC_STATED_W))],
))
_register(_attention_exercise(
    "worked-ex-abc-check:output", "04_worked_examples",
    "Query A's output in A/B/C, from Q, K and V.",
    "2 numbers: A's output row (the whole 3 × 2 output is accepted too).",
    _abc, "output", row=0,
))


# ---- chapter 5: implementation
def _first_nan(dtype: Any) -> int:
    """The smallest integer x for which naive_softmax([x, 0]) in ``dtype`` returns NaN."""
    x = 0
    while not np.isnan(naive_softmax(np.array([x, 0], dtype=dtype))).any():
        x += 1
    return x


_register(_scalar_exercise(
    "impl-ex-overflow", "05_implementation",
    "The smallest integer x for which naive_softmax of the float16 logits [x, 0] returns NaN.",
    "1 whole number: x.",
    lambda: _first_nan(np.float16),
    lambda: [("overflow-off-by-one", _first_nan(np.float16) - 1),
             ("overflow-float32", _first_nan(np.float32)), ("overflow-float64", _first_nan(np.float64))],
    kind="integer",
))

_BATCH_LENGTHS = (5, 3)  # impl-ex-mask: two sentences padded to 5
_DECODER_LENGTHS = (2, 5)  # beyond-ex-pad-causal: the short sentence first, padded on the right to 5


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
           "mask-padding-queries": np.swapaxes(P, -1, -2) & C}
    for key, m in _causal_variants(n):
        out[key] = P & m
    if heads:
        out["mask-batch-as-heads"] = padding_mask(list(lengths), n) & C  # (B, n, n) vs (B, H, n, n)
    return out


def _other_lengths() -> Candidates:
    """beyond-ex-pad-causal's batch misread: its lengths in the other order, or the batch of (5, 3)."""
    C = causal_mask(5)
    return [("mask-other-lengths", padding_mask(list(lengths), 5) & C)
            for lengths in (_DECODER_LENGTHS[::-1], _BATCH_LENGTHS)]


def _mask_exercise(label: str, chapter: str, prompt: str, answer_form: str, make: Callable[[], dict],
                   shape: tuple[int, ...], extra: Callable[[], Candidates] | None = None) -> Exercise:
    """A mask exercise: ``make()`` returns the reference and the misreadings by misconception key."""
    return Exercise(
        label=label, chapter=chapter, prompt=prompt, answer_form=answer_form, tolerance=_MASK, kind="mask",
        reference=lambda: make()["reference"],
        wrong_answers=lambda: [(k, v) for k, v in make().items() if k != "reference"]
        + (extra() if extra else []),
        mask_shape=shape,
    )


_register(_mask_exercise(
    "impl-ex-mask", "05_implementation",
    "One mask, causal and hiding the padding of two sequences of lengths 5 and 3, for scores of shape "
    "(B, H, n_q, n_k) = (2, 2, 5, 5).",
    "Your mask: any shape that broadcasts to (2, 2, 5, 5); boolean (True = may attend), 0/1 or additive "
    "0/-inf.",
    lambda: _pad_causal(heads=True), (2, 2, 5, 5),
))


def _xavier_variances(*, sd_scaling: bool = False, no_sum: bool = False, d_k_scaling: bool = False):
    """Predicted variances of a raw and a scaled score for MultiHeadAttention(64, 4, d_head=32)."""
    d_model, n_heads, d_head = 64, 4, 32
    var_w = 2 / (d_model + n_heads * d_head)  # Xavier: the variance xavier_uniform's docstring states
    var_q = var_w if no_sum else d_model * var_w  # an entry of q sums d_model products
    raw = _stats.dot_product_variance(d_head, sigma_q=math.sqrt(var_q), sigma_k=math.sqrt(var_q))
    divisor = math.sqrt(d_head) if sd_scaling else d_head**2 if d_k_scaling else d_head
    return [raw, raw / divisor]


_register(_scalar_exercise(
    "impl-ex-xavier", "05_implementation",
    "The predicted variance of a raw score q·k between two tokens, and of the scaled score, for "
    "MultiHeadAttention(64, 4, rng, d_head=32).",
    "2 numbers: Var(q·k), then Var(q·k / √d_head).",
    _xavier_variances,
    lambda: [("xavier-sd-scaling", _xavier_variances(sd_scaling=True)),
             ("scale-d_k", _xavier_variances(d_k_scaling=True)),
             ("xavier-no-sum", _xavier_variances(no_sum=True))],
    atol=5e-3, names=("Var(q·k)", "Var(q·k/√d_head)"),
))


# ---- chapter 6: complexity
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
    "cx-ex-count", "06_complexity",
    "The operations of cross-attention with n_q = 3, n_k = 5, d_k = 4, d_v = 2, in total.",
    "6 whole numbers: multiplications, additions (subtractions included), comparisons, exponentials, "
    "divisions, FLOPs.",
    lambda: _count_row(_counts.flop_counts(**_COUNT)), _count_wrong,
    kind="integer", names=_COUNT_NAMES,
))


def _llama() -> _models.ModelConfig:
    return next(c for c in _models.MODEL_CONFIGS if c.name == "LLaMA-2 70B")


def _llama_scores(dtype: Any = np.float16, heads: int | None = None) -> list[float]:
    cfg = _llama()
    if heads is not None:
        cfg = replace(cfg, n_heads=heads, n_kv_heads=heads)
    n, d = cfg.max_context, cfg.d_head
    row = _models.attention_scale_table([cfg], dtype_bytes=np.dtype(dtype).itemsize).rows[0]
    head = _counts.memory_bytes(n, n, d, d, dtype).score_bytes
    return [head, row.bytes_per_layer, row.bytes_per_forward]


def _llama_units() -> Candidates:
    b = _llama_scores()
    return [("bytes-units", [b[0] / 2**20, b[1] / 2**30, b[2] / 2**30]),
            ("bytes-units", [b[0] / 1e6, b[1] / 1e9, b[2] / 1e9])]


_register(_scalar_exercise(
    "cx-ex-llama-scores", "06_complexity",
    "The memory of LLaMA-2 70B's score matrices at full context in a 16-bit format: one head's, one "
    "layer's and a whole forward pass's.",
    "3 whole numbers of bytes: one head, one layer, one forward pass.",
    _llama_scores,
    lambda: [("bytes-float32", _llama_scores(np.float32)), ("scores-kv-heads", _llama_scores(heads=8)),
             *_llama_units()],
    kind="integer", names=("one head", "one layer", "one forward pass"),
))


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
    "cx-ex-kv-memory", "06_complexity",
    "The key–value cache of LLaMA-2 70B for one sequence of 4096 tokens in a 16-bit format: with its 8 "
    "key–value heads, and if each of the 64 query heads had its own.",
    "2 whole numbers of bytes: with 8 key–value heads, with 64.",
    _kv_bytes,
    lambda: [("kv-keys-only", _kv_bytes(keys_only=True)), ("kv-query-heads", _kv_bytes(query_heads=True)),
             ("kv-one-layer", _kv_bytes(layers=1)), ("bytes-float32", _kv_bytes(dtype_bytes=4)),
             ("bytes-units", [b / 2**30 for b in _kv_bytes()])],
    kind="integer", names=("8 key-value heads", "64 key-value heads"),
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
    "cx-ex-blocks", "06_complexity",
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



def _online_states(*, rescale: str = "right", subtract: bool = True, max_of: str = "running") -> np.ndarray:
    """The state (m, ℓ) of the online softmax after each key of the large logits, one key per block.

    ``rescale`` is ``"right"`` (ℓ times e^(m − m') when the maximum grows), ``"none"`` or
    ``"inverted"`` (times e^(m' − m)); ``subtract=False`` adds e^(s_j) itself (it overflows);
    ``max_of`` is ``"running"``, ``"first"`` (m never updated) or ``"final"`` (the row's maximum
    from the start). Returns an array of shape (n, 2).
    """
    x = np.array(_LARGE_LOGITS)  # (n,)
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
    "cx-ex-online", "06_complexity",
    "The running state of the online softmax on the logits [1000, 1002, 999, 1001], one key at a time: "
    "the running maximum m and the running sum ℓ of e^(s_j − m) after each key.",
    "4 pairs (m, ℓ), one per key in order: the running maximum and the running sum after that key.",
    _online_states,
    lambda: [("online-no-rescale", _online_states(rescale="none")),
             ("online-rescale-inverted", _online_states(rescale="inverted")),
             ("online-no-max", _online_states(subtract=False)),
             ("online-m-fixed", _online_states(max_of="first")),
             ("online-final-max", _online_states(max_of="final"))],
    names=("key 0", "key 1", "key 2", "key 3"),
))

# ---- chapter 7: beyond
_register(_mask_exercise(
    "beyond-ex-pad-causal", "07_beyond",
    "One boolean mask, for one head, that combines the padding mask of a batch of two sentences of "
    "lengths 2 and 5 (in that order, padded on the right to 5) with causal_mask(5).",
    "Your mask for the batch of lengths 2 and 5: any shape that broadcasts to (2, 5, 5); boolean "
    "(True = may attend), 0/1 or additive 0/-inf.",
    lambda: _pad_causal(heads=False, lengths=_DECODER_LENGTHS), (2, 5, 5), extra=_other_lengths,
))


def _four_heads(scale_width: bool = False):
    ex = _examples.cat_sat_on_mat()
    n = len(ex.tokens)
    mha = MultiHeadAttention.from_weights(ex.Q, ex.K, ex.V, np.eye(4, n), n_heads=4)
    tr = mha(np.eye(n))  # X = I_5: the projections return Q, K, V
    if not scale_width:
        return mha, tr.weights[:, 0]  # (H, n_k): the row of "The" in each head
    Qh, Kh = tr.Q[:, 0:1], tr.K  # (H, 1, d_head), (H, n, d_head)
    scores = (Qh @ Kh.swapaxes(-1, -2))[:, 0] / math.sqrt(mha.n_heads * mha.d_head)
    return mha, softmax(scores, axis=-1)


def _four_heads_wrong() -> Candidates:
    _, w_full = _four_heads(scale_width=True)
    ex = _examples.cat_sat_on_mat()
    tr = MultiHeadAttention.from_weights(ex.Q, ex.K, ex.V, np.eye(4, 5), n_heads=4)(np.eye(5))
    scores = (tr.Q @ tr.K.swapaxes(-1, -2)) / math.sqrt(tr.Q.shape[-1])  # (H, n, n)
    wrong_axis = softmax(scores, axis=-2)[:, 0]
    return [("scale-full-width", w_full), ("wrong-axis", wrong_axis)]


_register(_scalar_exercise(
    "beyond-ex-four-heads:params", "07_beyond",
    "The number of parameters of the layer split into H = 4 heads of d_head = 1.",
    "1 whole number.",
    lambda: _four_heads()[0].n_params,
    lambda: [("heads-per-head-params", _four_heads()[0].n_params // 4)],
    kind="integer",
))
_four_heads_ex = _scalar_exercise(
    "beyond-ex-four-heads:weights", "07_beyond",
    "The weights of the query 'The' in each of the 4 heads of d_head = 1.",
    "A 4 × 5 matrix: one row per head (0 to 3), one column per key (The, cat, sat, on, mat).",
    lambda: _four_heads()[1], _four_heads_wrong,
)
_register(replace(_four_heads_ex, rows_sum_to_one=True,
                  context=lambda: {"d_k": 1, "sqrt_d_k": "1", "n": 5, "sqrt_n": _fmt_num(math.sqrt(5)),
                                   "d_v": 1}))


def _append6():
    Q, K, V, tokens = _cat()
    Q6, K6, V6 = (np.vstack([A, np.ones(A.shape[1])]) for A in (Q, K, V))
    return Q6, K6, V6, (*tokens, "new")


_register(_attention_exercise(
    "beyond-ex-append", "07_beyond",
    "The causal outputs of the six tokens after a sixth token with query, key and value [1, 1, 1, 1] is "
    "appended to 'The cat sat on mat'.",
    "A 6 × 4 matrix: the causal outputs of The, cat, sat, on, mat, new.",
    _append6, "output", causal=True,
))


def _band(n: int, below: int = 1, above: int = 0) -> np.ndarray:
    """Keys j with i − below ≤ j ≤ i + above, built from two triangles (causal_mask and np.tri)."""
    upper = np.tri(n, n, above, dtype=bool) if above else causal_mask(n)
    return upper & ~np.tri(n, n, -(below + 1), dtype=bool)


def _window_masks() -> dict[str, np.ndarray]:
    n = len(_examples.cat_sat_on_mat().tokens)
    return {"reference": _band(n), "window-off-by-one": _band(n, below=2), "window-diagonal": _band(n, 0),
            "window-symmetric": _band(n, 1, 1), "window-flipped": _band(n).T}


_register(_mask_exercise(
    "beyond-ex-window:mask", "07_beyond",
    "The sliding-window mask with w = 2 for 'The cat sat on mat': each token sees itself and the token "
    "before it.",
    "Your 5 × 5 mask: boolean (True = may attend), 0/1 or additive 0/-inf.",
    _window_masks, (5, 5),
))


def _window_pairs() -> int:
    ex = _examples.cat_sat_on_mat()
    return _variants.attention_variant_costs(len(ex.tokens), ex.d_k, window=2)[1].scores


_register(_scalar_exercise(
    "beyond-ex-window:pairs", "07_beyond",
    "The number of pairs the sliding window with w = 2 allows in the 5-token example.",
    "1 whole number.",
    _window_pairs,
    lambda: [("pairs-2n", 2 * len(_examples.cat_sat_on_mat().tokens)),
             ("window-symmetric", int(_window_masks()["window-symmetric"].sum()))],
    kind="integer",
))


def _window_weight_extra() -> Candidates:
    Q, K, V, tokens = _cat()
    return [(k, trace_attention(Q, K, V, tokens=tokens, attn_mask=m).weights)
            for k, m in _window_masks().items() if k != "reference"]


_register(_attention_exercise(
    "beyond-ex-window:weights", "07_beyond",
    "The weights of 'The cat sat on mat' under the sliding-window mask with w = 2.",
    "A 5 × 5 matrix of weights, one row per query.",
    _cat, "weights", mask=lambda n: _band(n), extra=_window_weight_extra,
))


# ---- generic checks for the running examples
_register(_attention_exercise(
    "attention-scores", "04_worked_examples",
    "The raw scores S = Q Kᵀ of 'The cat sat on mat'.",
    "A 5 × 5 matrix: one row per query, one column per key.",
    _cat, "scores",
))
_register(_attention_exercise(
    "attention-weights", "04_worked_examples",
    "The attention weights softmax(Q Kᵀ / √d_k) of 'The cat sat on mat'.",
    "A 5 × 5 matrix of weights: one row per query, one column per key.",
    _cat, "weights",
))
_register(_attention_exercise(
    "attention-output", "04_worked_examples",
    "The output softmax(Q Kᵀ / √d_k) V of 'The cat sat on mat'.",
    "A 5 × 4 matrix: one output row per query.",
    _cat, "output",
))
def _four_tokens():
    Q, K, V, tokens = _cat()
    return Q[:4], K[:4], V[:4], tokens[:4]


_register(_attention_exercise(
    "square-scores", "04_worked_examples",
    "The raw scores S = Q Kᵀ of the first four tokens of 'The cat sat on mat' (n = d_k = 4).",
    "A 4 × 4 matrix: one row per query (The, cat, sat, on), one column per key.",
    _four_tokens, "scores",
))
_register(_attention_exercise(
    "square-weights", "04_worked_examples",
    "The attention weights of the first four tokens of 'The cat sat on mat' (n = d_k = 4).",
    "A 4 × 4 matrix of weights: one row per query (The, cat, sat, on), one column per key.",
    _four_tokens, "weights",
))
_register(_attention_exercise(
    "cat-sits-weights", "02_qkv",
    "The attention weights of 'Cat sits' (Q, K, V computed from X and the projections).",
    "A 2 × 2 matrix of weights, one row per query ('Cat', 'sits').",
    lambda: _cat_sits(), "weights",
))
_register(_mask_exercise(
    "causal-mask", "07_beyond",
    "The causal mask for the 5 tokens of 'The cat sat on mat'.",
    "Your 5 × 5 mask: boolean (True = may attend), 0/1 or additive 0/-inf.",
    lambda: {"reference": causal_mask(5), **dict(_causal_variants(5))}, (5, 5),
))
_register(_attention_exercise(
    "causal-weights", "07_beyond",
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
    "softmax-stable", "05_implementation",
    "The softmax, in float64, of the logits [1000, 1002, 999, 1001].",
    "4 numbers: the weights of the four logits, in order.",
    lambda: softmax(np.array(_LARGE_LOGITS)), _large_logits_wrong,
))

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


# --------------------------------------------------------------------------- feedback
@dataclass(frozen=True)
class Feedback:
    """The verdict on one answer, shown as Markdown in Jupyter and as plain text elsewhere.

    ``bool(feedback)`` is True only for a right answer, so ``assert check(...)`` works in a
    grading script.

    Attributes
    ----------
    label : str
    status : {"correct", "incorrect", "invalid", "unanswered"}
        Right; a well-formed wrong answer; an answer of the wrong kind or shape; ``...``.
    message : str
        What is right or wrong, deterministic (numbers rounded to 4 decimals).
    misconception : str, optional
        The key in :data:`MISCONCEPTIONS` of the mistake the answer matches.
    hint : str

    Examples
    --------
    >>> fb = check("sc-ex-sigma", "0.5")
    >>> fb.status, fb.misconception, bool(fb)
    ('invalid', None, False)
    >>> print(fb)
    ✗ Cannot check this answer (sc-ex-sigma)
    Your answer is text ('0.5'), not numbers. Expected 1 number: α. Remove the quotes.
    """

    label: str
    status: str
    message: str
    misconception: str | None = None
    hint: str = ""

    @property
    def correct(self) -> bool:
        return self.status == "correct"

    def __bool__(self) -> bool:
        return self.correct

    def _headline(self) -> str:
        return {"correct": "✓ Correct", "incorrect": "✗ Not yet", "invalid": "✗ Cannot check this answer",
                "unanswered": "… Not answered yet"}[self.status]

    def _title(self) -> str:
        if self.misconception is not None:
            return f"{self._headline()}: {MISCONCEPTIONS[self.misconception].name}"
        return self._headline()

    def __str__(self) -> str:
        lines = [f"{self._title()} ({self.label})", self.message]
        if self.hint:
            lines.append(f"Hint: {self.hint}")
        return "\n".join(line for line in lines if line)

    def __repr__(self) -> str:
        return str(self)

    def _repr_markdown_(self) -> str:
        body = f"**{self._title()}** (`{self.label}`)  \n{_md(self.message)}"
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
    m = MISCONCEPTIONS[key]
    ctx = _context(ex, answer)
    weights_text = ex.rows_sum_to_one or key not in _OUTPUT_EXPLANATIONS or ex.kind == "mask"
    text = _fill(m.explanation if weights_text else _OUTPUT_EXPLANATIONS[key], ctx)
    if extra:
        text = f"{extra} {text}"
    return Feedback(ex.label, "incorrect", text, key, _fill(m.hint, ctx))


def _entry_name(ex: Exercise, idx: tuple[int, ...]) -> str:
    if ex.names is not None and idx and idx[0] < len(ex.names):
        return ex.names[idx[0]]
    return f"entry {_fmt_index(idx)}" if idx else "your value"


def _generic(ex: Exercise, arr: np.ndarray, ref: np.ndarray, note: str) -> Feedback:
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
    return Feedback(ex.label, "incorrect", text, None, "Recompute step by step; "
                    f"the answer is checked {ex.tolerance}.")


def _judge_numeric(ex: Exercise, arr: np.ndarray) -> Feedback:
    ref = np.asarray(ex.reference())
    given = arr  # for the row and column sums of a whole matrix when one row is checked
    arr, note = _shape_of_answer(arr, ref, ex)
    wrong = [(k, np.asarray(v)) for k, v in ex.wrong_answers()]
    if arr.shape == ref.shape and np.isfinite(arr.astype(np.float64)).all() and _close(ex, arr, ref, ex.atol):
        return Feedback(ex.label, "correct", (note + " " if note else "") + f"Checked {ex.tolerance}.")
    # a recomputed wrong answer, first in priority order, compared in the answer's own shape
    for key, cand in wrong:
        cand_arr, cand_note = arr, note
        if cand_arr.shape != cand.shape and cand_arr.size == cand.size and \
                np.squeeze(cand_arr).shape == np.squeeze(cand).shape:
            cand_arr = cand_arr.reshape(cand.shape)
        radius = _match_radius(ex, cand, ref)
        if _distinguishable(ex, cand, ref, factor=1.0) and _close(ex, cand_arr, cand, radius):
            return _named(ex, key, given if given.ndim > cand_arr.ndim else cand_arr, cand_note)
    if arr.shape != ref.shape:
        raise _FormError(
            f"Your answer has shape {_fmt_shape(arr.shape)}; expected shape {_fmt_shape(ref.shape)}: "
            f"{ex.answer_form[0].lower()}{ex.answer_form[1:]}"
        )
    a64 = arr.astype(np.float64)
    if ex.kind == "integer":
        finite = a64[np.isfinite(a64)]
        if not np.array_equal(finite, np.round(finite)):
            fractions = finite[finite != np.round(finite)][:3]
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
        if a64.ndim == 2 and a64.shape == ref.T.shape and _close(ex, arr, ref.T, ex.atol) and \
                not _close(ex, ref, ref.T, ex.atol):
            return _named(ex, "weights-transposed", given, note)
        if a64.ndim == 2 and not np.allclose(rows, 1, atol=2 * ex.atol) and \
                np.allclose(a64.sum(axis=0), 1, atol=2 * ex.atol):
            return _named(ex, "wrong-axis", given, note)
        if not np.allclose(rows, 1, atol=2 * ex.atol):
            return _named(ex, "not-normalised", a64, note)
    return _generic(ex, arr, ref, note)


def _judge_mask(ex: Exercise, arr: np.ndarray) -> Feedback:
    allowed = _read_mask(arr, ex)
    shape = ex.mask_shape
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
    for key, cand in ex.wrong_answers():
        if _distinguishable(ex, np.asarray(cand), ref) and np.array_equal(got, np.broadcast_to(cand, shape)):
            return _named(ex, key, None)
    if np.array_equal(got, ~ref):
        return _named(ex, "mask-inverted", None)
    # Not how many entries differ, nor where: either would hand over the mask one entry at a time.
    return Feedback(
        ex.label, "incorrect",
        f"Not the expected mask (compared after broadcasting to {_fmt_shape(shape)}), and none of the "
        "usual mistakes. Write down, for one query, which keys it may see and why, then check your rows.",
        None, "Build it from causal_mask and padding_mask (or np.tri) and combine with & and ~.",
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
        The exercise, e.g. ``"worked-ex-mat:weights"`` (see :data:`EXERCISES`;
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
    … Not answered yet (worked-ex-mat:scores)
    Replace ... with your answer: 5 numbers: the raw scores q_mat · k for the keys The, cat, sat,
    on, mat (the whole 5-row matrix is accepted too). It is checked to 3 decimals (within 0.0005).
    >>> check("worked-ex-mat:scores", [0, 0, 0, 0, 0]).correct
    False
    >>> from attnlib.examples import cat_sat_on_mat
    >>> ex = cat_sat_on_mat()
    >>> wrong = attention_misconceptions(ex.Q, ex.K, ex.V, what="weights")["scale-d_k"]
    >>> check("attention-weights", wrong).misconception  # scores divided by d_k = 4, not by 2
    'scale-d_k'
    """
    ex = exercise(label)
    if answer is ...:
        return Feedback(label, "unanswered",
                        f"Replace ... with your answer: {ex.answer_form} It is checked {ex.tolerance}.")
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
