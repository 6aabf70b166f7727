"""Tests of attnlib.trace: the trace agrees with core bit for bit, and every printed number is right."""

from __future__ import annotations

import dataclasses
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from attnlib.core import causal_mask, scaled_dot_product_attention
from attnlib.examples import cat_sat_on_mat, cat_sits, three_directions
from attnlib.trace import AttentionTrace, trace_attention

EXAMPLES = {"cat_sat_on_mat": cat_sat_on_mat, "three_directions": three_directions, "cat_sits": cat_sits}
STAGES = ("Q", "K", "V", "scores", "scaled_scores", "weights", "output")


def cat_trace(**kwargs) -> AttentionTrace:
    ex = cat_sat_on_mat()
    return trace_attention(ex.Q, ex.K, ex.V, tokens=ex.tokens, **kwargs)


def naive_scores(Q: np.ndarray, K: np.ndarray) -> np.ndarray:
    out = np.zeros((Q.shape[0], K.shape[0]))
    for i in range(Q.shape[0]):
        for j in range(K.shape[0]):
            out[i, j] = sum(float(Q[i, t]) * float(K[j, t]) for t in range(Q.shape[1]))
    return out


def random_case(seed: int, n_q: int, n_k: int, d_k: int, d_v: int):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n_q, d_k)), rng.normal(size=(n_k, d_k)), rng.normal(size=(n_k, d_v)), rng


def section(text: str, number: str) -> list[str]:
    """The lines of one numbered step of explain() (without its heading)."""
    lines = text.splitlines()
    start = next(n for n, line in enumerate(lines) if line.startswith(f"{number}. "))
    out = []
    for line in lines[start + 1:]:
        if not line:
            break
        out.append(line)
    return out


def printed_weights(text: str) -> dict[str, str]:
    """{key: printed weight} from step 6."""
    found = {}
    for line in section(text, "6"):
        m = re.fullmatch(r"  w\[(.+?)\]\s*= (?:.* = )?(\S+)(?:   \(masked\))?", line)
        if m:
            found[m.group(1)] = m.group(2)
    return found


def printed_output(text: str) -> str:
    return next(line.strip() for line in reversed(text.splitlines()) if line.strip().startswith("= ["))


# -- agreement with core ------------------------------------------------------
@pytest.mark.parametrize("name", EXAMPLES)
def test_weights_and_output_equal_core_on_examples(name):
    ex = EXAMPLES[name]()
    tr = trace_attention(ex.Q, ex.K, ex.V, tokens=ex.tokens)
    out, w = scaled_dot_product_attention(ex.Q, ex.K, ex.V, return_weights=True)
    assert np.array_equal(tr.weights, w)
    assert np.array_equal(tr.output, out)
    assert tr.tokens == ex.tokens == tr.key_tokens


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("kind", ["none", "bool", "float", "scale", "cross"])
def test_weights_and_output_equal_core_on_random_inputs(seed, kind):
    n_k = 7 if kind == "cross" else 5
    Q, K, V, rng = random_case(seed, 5, n_k, 3, 2)
    mask, scale = None, None
    if kind == "bool":
        mask = rng.random((5, n_k)) < 0.6
        mask[0] = False  # one row with nothing to attend to
    elif kind == "float":
        mask = np.where(rng.random((5, n_k)) < 0.6, rng.normal(size=(5, n_k)), -np.inf)
    elif kind == "scale":
        scale = 0.37
    tr = trace_attention(Q, K, V, scale=scale, attn_mask=mask)
    out, w = scaled_dot_product_attention(Q, K, V, mask, scale=scale, return_weights=True)
    assert np.array_equal(tr.weights, w)
    assert np.array_equal(tr.output, out)
    assert tr.scale == (scale if scale is not None else 1 / np.sqrt(3))


def test_ground_truth_for_cat_sat_on_mat():
    tr = cat_trace()
    assert tr.scale == 0.5
    assert np.array_equal(tr.weights[0].round(4), [0.1095, 0.2976, 0.1805, 0.1805, 0.2318])
    assert np.array_equal(tr.output[0].round(4), [0.2254, 0.4135, 0.2964, 0.2964])
    assert (tr.scores[1, 0], tr.scaled_scores[1, 0], round(float(tr.weights[1, 0]), 4)) == (3.0, 1.5, 0.4026)


@pytest.mark.parametrize("seed", range(3))
def test_scores_equal_a_naive_double_loop(seed):
    Q, K, V, _ = random_case(seed, 4, 6, 5, 3)
    tr = trace_attention(Q, K, V)
    np.testing.assert_allclose(tr.scores, naive_scores(Q, K), rtol=1e-12, atol=1e-12)
    assert tr.scores.shape == (4, 6)


def test_scaled_scores_are_scores_times_scale_where_allowed_and_minus_inf_elsewhere():
    Q, K, V, rng = random_case(7, 5, 5, 4, 4)
    bool_mask = causal_mask(5)
    tr = trace_attention(Q, K, V, scale=0.8, attn_mask=bool_mask)
    assert np.array_equal(tr.scaled_scores[bool_mask], (tr.scores * 0.8)[bool_mask])
    assert np.isneginf(tr.scaled_scores[~bool_mask]).all()
    assert np.array_equal(tr.mask, bool_mask)

    bias = np.where(bool_mask, rng.normal(size=(5, 5)), -np.inf)
    tr = trace_attention(Q, K, V, attn_mask=bias)
    assert np.array_equal(tr.scaled_scores[bool_mask], (tr.scores * 0.5 + bias)[bool_mask])
    assert np.array_equal(tr.mask, bool_mask)  # a float mask is stored as "may attend"
    assert tr.mask.dtype == bool


def test_mask_is_none_without_mask_and_broadcast_when_given_per_key():
    assert cat_trace().mask is None
    tr = cat_trace(attn_mask=np.array([True, True, False, True, True]))
    assert tr.mask.shape == (5, 5)
    assert not tr.mask[:, 2].any() and tr.mask[:, [0, 1, 3, 4]].all()


def test_dtype_is_kept_and_still_equals_core():
    Q, K, V, _ = random_case(3, 4, 4, 2, 2)
    Q32, K32, V32 = (x.astype(np.float32) for x in (Q, K, V))
    tr = trace_attention(Q32, K32, V32)
    out, w = scaled_dot_product_attention(Q32, K32, V32, return_weights=True)
    assert tr.weights.dtype == tr.scores.dtype == np.float32
    assert np.array_equal(tr.output, out) and np.array_equal(tr.weights, w)


# -- labels -------------------------------------------------------------------
def test_default_labels_and_cross_attention_key_labels():
    Q, K, V, _ = random_case(0, 2, 3, 2, 2)
    tr = trace_attention(Q, K, V)
    assert tr.tokens == ("t0", "t1") and tr.key_tokens == ("k0", "k1", "k2")
    tr = trace_attention(Q, K, V, tokens=["a", "b"])
    assert tr.tokens == ("a", "b") and tr.key_tokens == ("k0", "k1", "k2")
    tr = trace_attention(Q, Q, Q)
    assert tr.key_tokens == tr.tokens == ("t0", "t1")


def test_repr_is_compact():
    assert repr(cat_trace()) == (
        "AttentionTrace(n_q=5, n_k=5, d_k=4, d_v=4, scale=0.5, tokens=('The', 'cat', 'sat', 'on', 'mat'))"
    )
    assert "masked=10" in repr(cat_trace(attn_mask=causal_mask(5)))


# -- explain ------------------------------------------------------------------
def test_explain_row_0_shows_every_step_with_the_right_numbers():
    text = cat_trace().explain(0)
    assert "  q = Q[The] = [1.0, 0.0, 1.0, 0.0]" in text
    assert "  q·k[cat] = (1.0)(1.0) + (0.0)(0.0) + (1.0)(1.0) + (0.0)(0.0) = 2.0" in text
    assert "  s[cat] = 2.0 / √4 = 1.0000" in text
    assert "  exp(s[cat]) = exp(1.0000) = 2.7183" in text
    assert "maximum" not in text  # the hand arithmetic only: the stable softmax is chapter 6's
    assert "  sum = 1.0000 + 2.7183 + 1.6487 + 1.6487 + 2.1170 = 9.1327" in text
    assert "  w[cat] = 2.7183 / 9.1327 = 0.2976" in text
    assert printed_weights(text) == {
        "The": "0.1095", "cat": "0.2976", "sat": "0.1805", "on": "0.1805", "mat": "0.2318"
    }
    assert "0.2318×[0.5, 0.5, 0.5, 0.5]" in text
    assert printed_output(text) == "= [0.2254, 0.4135, 0.2964, 0.2964]"


def test_explain_cat_expands_the_dot_product_with_the():
    text = cat_trace().explain(1)
    assert "  q·k[The] = (0.0)(0.0) + (2.0)(1.0) + (0.0)(0.0) + (1.0)(1.0) = 3.0" in text
    assert "  s[The] = 3.0 / √4 = 1.5000" in text
    assert "  w[The] = 4.4817 / 11.1327 = 0.4026" in text
    # the weighted sum of rounded weights gives 0.4603 here, so the last-digit remark must appear
    assert "the last digit may differ" in text


def test_explain_accepts_a_label_and_a_negative_index():
    tr = cat_trace()
    assert tr.explain("cat") == tr.explain(1)
    assert tr.explain(-1) == tr.explain("mat")
    assert tr.explain(np.int64(2)) == tr.explain("sat")


@pytest.mark.parametrize("seed", range(6))
def test_explain_prints_the_traces_weights_and_output_rounded(seed):
    Q, K, V, rng = random_case(seed, 4, 6, 3, 3)
    mask = rng.random((4, 6)) < 0.7
    mask[:, 0] = True
    tr = trace_attention(Q, K, V, attn_mask=mask)
    for i in range(4):
        text = tr.explain(i, decimals=3)
        weights = printed_weights(text)
        assert list(weights) == list(tr.key_tokens)
        for j, key in enumerate(tr.key_tokens):
            assert weights[key] == (f"{tr.weights[i, j]:.3f}" if mask[i, j] else "0")
        expected = "= [" + ", ".join(f"{x:.3f}".replace("-0.000", "0.000") for x in tr.output[i]) + "]"
        assert printed_output(text) == expected


def test_explain_shows_masked_keys_as_masked_not_dropped():
    text = cat_trace(attn_mask=causal_mask(5)).explain("sat")
    assert "  s[on]  = masked: 'sat' may not attend to 'on' (-inf)" in text
    assert "  exp(s[mat]) = exp(-inf) = 0   (masked)" in text
    assert "  w[on]  = 0   (masked)" in text
    assert "(masked, weight 0: on, mat)" in text
    assert "(v[on])" not in text and "(v[sat])" in text
    assert printed_weights(text) == {"The": "0.2327", "cat": "0.3837", "sat": "0.3837", "on": "0", "mat": "0"}
    assert printed_output(text) == "= [0.2327, 0.3837, 0.3837, 0.0000]"


def test_explain_a_row_with_nothing_allowed_says_so_and_shows_zero_output():
    mask = causal_mask(5)
    mask[3] = False
    tr = cat_trace(attn_mask=mask)
    text = tr.explain("on")
    assert "nothing to attend to" in text
    assert "w[" not in text and "exp(" not in text
    assert printed_output(text) == "= [0.0000, 0.0000, 0.0000, 0.0000]"
    assert np.array_equal(tr.output[3], np.zeros(4))


def test_explain_custom_scale_and_additive_float_mask():
    bias = np.zeros((5, 5))
    bias[4, 0] = -1.0
    bias[4, 2] = -np.inf
    tr = cat_trace(scale=0.3, attn_mask=bias)
    text = tr.explain("mat")
    assert "multiply by the given scale 0.3" in text
    assert "  s[The] = 1.0 × 0.3 + (-1.0) from the mask = -0.7000" in text
    assert "  s[cat] = 1.0 × 0.3 = 0.3000" in text
    assert "  s[sat] = masked" in text
    assert "  exp(s[The]) = exp(-0.7000) = 0.4966" in text


def test_explain_shows_readable_exponentials_as_they_are_with_no_note_on_overflow():
    text = cat_trace().explain("The")
    step4 = text.split("4. Exponentials\n")[1].split("\n\n")[0].splitlines()
    assert step4 == [
        "  exp(s[The]) = exp(0.0000) = 1.0000",
        "  exp(s[cat]) = exp(1.0000) = 2.7183",
        "  exp(s[sat]) = exp(0.5000) = 1.6487",
        "  exp(s[on])  = exp(0.5000) = 1.6487",
        "  exp(s[mat]) = exp(0.7500) = 2.1170",
    ]
    assert "max" not in text and "overflow" not in text


def test_explain_subtracts_the_max_when_exponentials_would_be_unreadable():
    ex = cat_sat_on_mat()
    tr = trace_attention(ex.Q * 20, ex.K, ex.V, scale=1.0)
    text = tr.explain(0)
    assert "exp(s - max)" in text
    assert "  exp(s[t1] - max) = exp(40.0000 - 40.0000) = 1.0000" in text
    assert "exp(40.0000) =" not in text
    assert printed_weights(text)["t1"] == f"{tr.weights[0, 1]:.4f}" == "1.0000"


# -- table --------------------------------------------------------------------
def parse_table(text: str) -> tuple[list[str], list[str], np.ndarray]:
    header, *rows = text.splitlines()
    labels = [row.split()[0] for row in rows]
    values = np.array([[float(x) for x in row.split()[1:]] for row in rows])
    return header.split(), labels, values


@pytest.mark.parametrize("stage", STAGES)
def test_table_parses_back_to_the_rounded_matrix(stage):
    tr = cat_trace()
    cols, rows, values = parse_table(tr.table(stage, decimals=3))
    matrix = getattr(tr, stage)
    assert np.array_equal(values, matrix.round(3))
    assert rows == list(tr.key_tokens if stage in ("K", "V") else tr.tokens)
    if stage in ("scores", "scaled_scores", "weights"):
        assert cols == list(tr.key_tokens)
    else:
        assert cols == [f"d{c}" for c in range(matrix.shape[1])]


def test_table_shows_minus_inf_for_masked_scores_and_aligns_columns():
    text = cat_trace(attn_mask=causal_mask(5)).table("scaled_scores")
    lines = text.splitlines()
    assert lines[1].split() == ["The", "0.0000", "-inf", "-inf", "-inf", "-inf"]
    assert len({len(line) for line in lines}) == 1  # fixed width


@pytest.mark.parametrize("stage", STAGES)
def test_table_rows_picks_rows_by_label_or_index_in_the_order_given(stage):
    tr = cat_trace()
    labels = tr.key_tokens if stage in ("K", "V") else tr.tokens
    t = tr.table(stage, decimals=3, rows=["sat", 0, -2])  # sat, The, on
    cols, rows, values = parse_table(t)
    assert rows == ["sat", "The", "on"] == [r[0] for r in t.rows]
    assert np.array_equal(values, getattr(tr, stage)[[2, 0, 3]].round(3))
    assert cols == parse_table(tr.table(stage))[0]  # the columns are unchanged
    assert tr.table(stage, rows=list(labels)) == tr.table(stage) == tr.table(stage, rows=None)
    assert tr.table(stage, rows=np.arange(5)[::-1]).splitlines()[1].split()[0] == "mat"


def test_table_rows_leaves_the_other_rows_out():
    t = cat_trace().table("weights", rows=["The", "cat", "sat", "on"])
    assert "mat" not in [line.split()[0] for line in t.splitlines()[1:]]
    assert len(t.splitlines()) == 5 and len(t.rows) == 4
    assert "0.2430" not in t  # the weight of "mat" on itself, in no other row


@pytest.mark.parametrize(
    ("rows", "error", "message"),
    [
        ("The", TypeError, "e.g. rows=[0, 1] or rows=['The']; got str 'The'"),
        (3, TypeError, "rows must be a sequence of query labels or indices"),
        ([1.0], TypeError, "rows must hold int indices or str labels; got float 1.0"),
        ([True], TypeError, "rows must hold int indices or str labels; got bool True"),
        ([], ValueError, "rows is empty; pass None for every row"),
        (["dog"], ValueError, "rows names 'dog', which is not a query token; valid rows are the query labels "
                              "'The', 'cat', 'sat', 'on', 'mat' or indices 0..4"),
        ([5], ValueError, "rows has index 5, out of range for 5 query rows"),
        ([-6], ValueError, "rows has index -6, out of range for 5 query rows"),
        (["cat", 1], ValueError, "rows picks query row 1 ('cat') twice"),
    ],
)
def test_table_rows_errors_name_the_argument(rows, error, message):
    with pytest.raises(error, match=re.escape(message)):
        cat_trace().table("weights", rows=rows)


def test_table_rows_refuses_an_ambiguous_label_and_names_key_rows_for_k_and_v():
    Q = np.eye(3)
    tr = trace_attention(Q, Q, Q, tokens=["a", "b", "a"])
    message = "rows names 'a', which occurs at rows [0, 2]; pass the index instead"
    with pytest.raises(ValueError, match=re.escape(message)):
        tr.table("weights", rows=["a"])
    assert parse_table(tr.table("weights", rows=[2]))[1] == ["a"]
    cross = trace_attention(np.eye(2), np.eye(2)[[0, 1, 0]], np.eye(2)[[0, 1, 0]], tokens=["x", "y"])
    assert parse_table(cross.table("V", rows=["k2"]))[1] == ["k2"]
    with pytest.raises(ValueError, match="rows names 'x', which is not a key token"):
        cross.table("K", rows=["x"])


# -- errors -------------------------------------------------------------------
def test_one_dimensional_input_is_refused():
    ex = cat_sat_on_mat()
    with pytest.raises(ValueError, match=re.escape("Q must be 2-D (n_q, d_k); got shape (4,)")):
        trace_attention(ex.Q[0], ex.K, ex.V)


def test_batched_input_is_refused_with_a_hint():
    ex = cat_sat_on_mat()
    message = "K must be 2-D (n_k, d_k); got shape (2, 5, 4); for a batch"
    with pytest.raises(ValueError, match=re.escape(message)):
        trace_attention(ex.Q, np.stack([ex.K, ex.K]), ex.V)


def test_core_shape_errors_pass_through():
    ex = cat_sat_on_mat()
    with pytest.raises(ValueError, match="K has d_k=3 but Q has d_k=4"):
        trace_attention(ex.Q, ex.K[:, :3], ex.V)
    with pytest.raises(ValueError, match=re.escape("attn_mask of shape (4, 5) does not broadcast")):
        trace_attention(ex.Q, ex.K, ex.V, attn_mask=np.ones((4, 5), dtype=bool))


def test_wrong_tokens_are_refused():
    ex = cat_sat_on_mat()
    with pytest.raises(ValueError, match="tokens has 3 labels but Q has n_q=5 queries"):
        trace_attention(ex.Q, ex.K, ex.V, tokens=["a", "b", "c"])
    with pytest.raises(TypeError, match="tokens must be a sequence of 5 labels"):
        trace_attention(ex.Q, ex.K, ex.V, tokens="abcde")


def test_unknown_stage_lists_the_valid_ones():
    with pytest.raises(ValueError, match="unknown stage 'attention'; valid stages are Q, K, V, scores"):
        cat_trace().table("attention")


def test_bad_index_or_label_lists_the_valid_ones():
    tr = cat_trace()
    message = "query index 5 is out of range for 5 queries; valid indices are 0..4"
    with pytest.raises(IndexError, match=re.escape(message)):
        tr.explain(5)
    with pytest.raises(KeyError, match=r"no query token 'dog'.*'The', 'cat', 'sat', 'on', 'mat'"):
        tr.explain("dog")
    with pytest.raises(TypeError, match="i must be an int index or a token label"):
        tr.explain(1.0)
    with pytest.raises(ValueError, match="decimals must be >= 0"):
        tr.explain(0, decimals=-1)


def test_repeated_label_asks_for_an_index():
    ex = three_directions()
    tr = trace_attention(ex.Q, ex.K, ex.V, tokens=["x", "y", "x"])
    with pytest.raises(ValueError, match=re.escape("token 'x' occurs at positions [0, 2]")):
        tr.explain("x")
    assert "Query 2 'x'" in tr.explain(2)


# -- immutability -------------------------------------------------------------
def test_arrays_are_read_only_copies_and_the_trace_is_frozen():
    Q, K, V, _ = random_case(1, 3, 3, 2, 2)
    mask = causal_mask(3)
    tr = trace_attention(Q, K, V, attn_mask=mask)
    for name in (*STAGES, "mask"):
        arr = getattr(tr, name)
        assert not arr.flags.writeable, name
        with pytest.raises(ValueError, match="read-only"):
            arr[0, 0] = 1
    Q[0, 0] += 1.0
    mask[2, 2] = False
    assert tr.Q[0, 0] != Q[0, 0] and tr.mask[2, 2]  # copies, not views of the inputs
    with pytest.raises(dataclasses.FrozenInstanceError):
        tr.scale = 1.0


# -- property -----------------------------------------------------------------
@settings(max_examples=25, derandomize=True, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n_q=st.integers(1, 4),
    n_k=st.integers(1, 4),
    d_k=st.integers(1, 4),
    scale=st.one_of(st.none(), st.floats(0.05, 5.0)),
)
def test_property_explain_agrees_with_core(seed, n_q, n_k, d_k, scale):
    Q, K, V, rng = random_case(seed, n_q, n_k, d_k, 2)
    mask = rng.random((n_q, n_k)) < 0.7
    tr = trace_attention(Q * 3, K, V, scale=scale, attn_mask=mask)
    out, w = scaled_dot_product_attention(Q * 3, K, V, mask, scale=scale, return_weights=True)
    assert np.array_equal(tr.output, out) and np.array_equal(tr.weights, w)
    i = int(rng.integers(n_q))
    text = tr.explain(i)
    expected = "= [" + ", ".join(f"{x:.4f}".replace("-0.0000", "0.0000") for x in out[i]) + "]"
    assert printed_output(text) == expected
    if mask[i].any():
        assert printed_weights(text) == {
            k: (f"{w[i, j]:.4f}" if mask[i, j] else "0") for j, k in enumerate(tr.key_tokens)
        }


def test_explain_lines_fit_a_book_page():
    # The rendered page shows about 80 characters of output per line before clipping.
    ex = cat_sat_on_mat()
    trace = trace_attention(ex.Q, ex.K, ex.V, tokens=ex.tokens)
    for i in range(trace.n_q):
        longest = max(trace.explain(i).splitlines(), key=len)
        assert len(longest) <= 80, f"explain({i}) has a line of {len(longest)} characters: {longest!r}"


# explain() prints rounded numbers; where redoing a step from them gives another last digit, it says so
# at that step (a reader checking exp(1.4142) = 4.1133 by hand gets 4.1132).

_SLIP_NOTE = "from unrounded values: by hand the last digit may differ"


def _steps(text: str) -> dict[str, str]:
    parts = re.split(r"\n\n(?=\d\. )", text)
    return {p.split(".")[0]: p for p in parts[1:]}


def test_explain_notes_a_rounding_slip_at_the_step_where_it_starts() -> None:
    ex = cat_sits()
    text = trace_attention(ex.Q, ex.K, ex.V, tokens=ex.tokens).explain(0)
    assert "exp(1.4142) = 4.1133" in text  # exp of the rounded 1.4142 is 4.1132: a slip in step 4
    assert text.count(_SLIP_NOTE) == 1
    assert _SLIP_NOTE in _steps(text)["4"]


def test_explain_adds_no_note_when_every_step_redoes_exactly() -> None:
    tr = trace_attention(np.zeros((2, 2)), np.zeros((2, 2)), np.eye(2), tokens=["a", "b"])
    text = tr.explain(0)
    assert "exp(0.0000) = 1.0000" in text and "= 0.5000" in text
    assert _SLIP_NOTE not in text


# --------------------------------------------------------------------------- tables as HTML (attnlib._table)
def _html_cells(html: str, tag: str) -> list[str]:
    """The text of every ``<tag ...>`` cell of ``html``, in order (attributes dropped)."""
    return re.findall(rf"<{tag}\b[^>]*>(.*?)</{tag}>", html)


def test_a_stage_table_is_its_old_text_and_an_html_table() -> None:
    ex = three_directions()
    t = trace_attention(ex.Q, ex.K, ex.V, tokens=ex.tokens).table("scores", decimals=2)
    text = "      A     B     C\nA  0.80  0.30  0.10\nB  0.50  0.50  0.50\nC  0.20  0.70  0.90"
    assert isinstance(t, str) and t == text and str(t) == text and f"{t}" == text
    assert t.splitlines()[1] == "A  0.80  0.30  0.10"  # every str method works as before
    html = t._repr_html_()
    assert html.count("<table>") == 1 and html.count("<caption>") == 1 and "scores" in t.caption
    assert _html_cells(html, "th")[:4] == ["query", "A", "B", "C"]  # the header row
    assert re.findall(r'<th scope="row"[^>]*>(\w)</th>', html) == ["A", "B", "C"]  # a header cell per row
    numbers = re.findall(r'<td class="num" style="text-align: right;">([^<]*)</td>', html)
    assert numbers == [x for line in text.splitlines()[1:] for x in line.split()[1:]]  # all 9, right-aligned
    assert html == t._repr_html_()  # deterministic: a stored output compares equal to a fresh run


def test_every_stage_has_a_caption_and_masked_entries_stay_right_aligned() -> None:
    tr = cat_trace(attn_mask=causal_mask(5))
    for stage in STAGES:
        t = tr.table(stage)
        rows = 5
        assert t.caption.split()[0].lower().startswith(stage.split("_")[0].lower()), (stage, t.caption)
        assert len(t.rows) == rows and t.align == ("left",) + ("right",) * (len(t.columns) - 1)
        assert t.columns[0] == ("key" if stage in ("K", "V") else "query")
    html = tr.table("scaled_scores")._repr_html_()
    assert html.count('<td class="num" style="text-align: right;">-inf</td>') == 10  # above the diagonal


def test_ipython_shows_the_text_as_plain_text_and_the_table_as_html() -> None:
    formatters = pytest.importorskip("IPython.core.formatters")
    t = cat_trace().table("weights")
    assert formatters.PlainTextFormatter()(t) == str(t)  # not a quoted string with \n escapes
    assert formatters.HTMLFormatter()(t) == t._repr_html_()


def test_table_html_escapes_token_labels() -> None:
    Q = np.eye(2)
    t = trace_attention(Q, Q, Q, tokens=["<s>", "a&b"]).table("weights")
    html = t._repr_html_()
    assert "&lt;s&gt;" in html and "a&amp;b" in html and "<s>" not in html
    assert str(t).splitlines()[1].startswith("<s>")  # the text keeps the labels as they are


def test_table_type_validates_its_structure() -> None:
    from attnlib._table import Table

    with pytest.raises(ValueError, match=r"row 1 has 1 cells but there are 2 columns \['a', 'b'\]"):
        Table("x", columns=("a", "b"), rows=(("1", "2"), ("3",)))
    with pytest.raises(ValueError, match="columns must name at least one column"):
        Table("x", columns=(), rows=())
    with pytest.raises(ValueError, match=r"align must give 'left' or 'right' for each of the 2 columns"):
        Table("x", columns=("a", "b"), rows=(), align=("left", "middle"))
    with pytest.raises(TypeError, match=r"every cell must be a str; got float 1\.5"):
        Table("x", columns=("a", "b"), rows=(("a", 1.5),))
    with pytest.raises(TypeError, match="text must be a str"):
        Table(b"x", columns=("a",), rows=())


def test_table_alignment_defaults_to_numbers_right_and_survives_copy_and_pickle() -> None:
    import copy
    import pickle

    from attnlib._table import Table

    t = Table("t", columns=("name", "n", "size", "note"),
              rows=(("a", "1,024", "3.5 GiB", "ok"), ("b", "-inf", "96 B", "12")), caption="c", notes=("n",))
    assert t.align == ("left", "right", "right", "left")
    for clone in (copy.deepcopy(t), pickle.loads(pickle.dumps(t))):
        assert type(clone) is Table and clone == t and clone._repr_html_() == t._repr_html_()
    long = Table("t", columns=("k", "meaning"), rows=(("0", "x" * 40),))
    assert '<td class="wrap" style="text-align: left;">' in long._repr_html_()  # long text may wrap


def test_explanation_steps_are_data_and_explain_prints_them():
    ex = cat_sat_on_mat()
    tr = trace_attention(ex.Q, ex.K, ex.V, tokens=ex.tokens, attn_mask=causal_mask(len(ex.tokens)))
    for i in range(tr.n_q):
        steps = tr.explain_steps(i)
        assert list(steps) == ["0", "1", "2", "3", "4", "5", "6", "7"]
        for number, lines in list(steps.items())[1:]:
            assert lines[0].startswith(f"{number}. ") and all(line.strip() for line in lines)
        assert tr.explain(i) == "\n\n".join("\n".join(lines) for lines in steps.values())
        # one line per key in the dot products, the scaled scores and the weights
        assert len(steps["2"]) == len(steps["3"]) == len(steps["6"]) == 1 + tr.n_k
    n = len(ex.tokens)
    nothing = trace_attention(ex.Q, ex.K, ex.V, attn_mask=np.zeros((n, n), dtype=bool))
    assert list(nothing.explain_steps(0)) == ["0", "1", "2", "3", "4-6", "7"]
