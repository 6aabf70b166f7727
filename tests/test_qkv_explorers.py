"""attnlib.features and attnlib.interactive.qkv_explorers: every state equals attnlib's computation."""

from __future__ import annotations

import re

import numpy as np
import pytest

from attnlib.core import scaled_dot_product_attention
from attnlib.examples import cat_sat_on_mat, cat_sits
from attnlib.features import HandFeatures, animal_street
from attnlib.interactive.qkv_explorers import (
    PHASES,
    qkv_phases,
    qkv_stepper,
    tie_groups,
    word_explorer,
    word_notes,
)
from attnlib.trace import trace_attention

SENTENCE = ("The", "animal", "didn't", "cross", "the", "street", "because", "it", "was", "too", "tired")


@pytest.fixture(scope="module")
def words() -> HandFeatures:
    return animal_street()


@pytest.fixture(scope="module")
def tr_words(words: HandFeatures):
    return trace_attention(words.Q, words.K, words.V, tokens=words.tokens)


@pytest.fixture(scope="module")
def tr_cs():
    ex = cat_sits()
    return trace_attention(ex.Q, ex.K, ex.V, tokens=ex.tokens)


# -- the hand-built features ---------------------------------------------------------------------
def test_features_are_documented_one_name_per_dimension(words: HandFeatures) -> None:
    assert words.tokens == SENTENCE
    assert len(words.feature_names) == len(words.feature_notes) == words.d_k == words.Q.shape[1] == 7
    assert words.Q.shape == words.K.shape == words.V.shape == (11, 7)
    assert len(set(words.feature_names)) == words.d_k, "feature names must be distinct"
    assert all(note.strip() for note in words.feature_notes)
    assert len(words.describe().splitlines()) == words.d_k
    assert "not learned" in words.design and animal_street.__doc__ and "hand-made" in animal_street.__doc__
    header, *rows = words.table("Q").splitlines()
    assert header.split() == list(words.feature_names)
    assert [r.split()[0] for r in rows] == list(words.tokens)
    assert not words.Q.flags.writeable and not words.K.flags.writeable


def test_features_are_fresh_and_deterministic(words: HandFeatures) -> None:
    again = animal_street()
    assert again is not words
    np.testing.assert_array_equal(again.Q, words.Q)
    np.testing.assert_array_equal(again.K, words.K)


def test_position_dimensions_add_interest_times_cos_of_distance(words: HandFeatures) -> None:
    pos = slice(5, 7)
    theta = np.pi / (words.n - 1)
    dist = np.subtract.outer(np.arange(words.n), np.arange(words.n))  # (n, n) i - j
    interest = np.linalg.norm(words.Q[:, pos], axis=1)  # (n,)
    np.testing.assert_allclose(words.Q[:, pos] @ words.K[:, pos].T, interest[:, None] * np.cos(theta * dist),
                               atol=1e-12)


def test_it_attends_most_to_animal_and_tired_to_animal_then_it(words: HandFeatures) -> None:
    _, w = scaled_dot_product_attention(words.Q, words.K, words.V, return_weights=True)  # (n, n)
    t = words.tokens.index
    assert w[t("it")].argmax() == t("animal")
    assert w[t("it"), t("animal")] > 0.5
    assert list(np.argsort(w[t("tired")])[::-1][:2]) == [t("animal"), t("it")]
    assert w[t("the")].argmax() == t("street") and w[t("The")].argmax() == t("animal")
    assert (w > 0).all(), "softmax never gives zero weight"


def test_hand_features_refuse_mismatched_shapes() -> None:
    z12, z13 = np.zeros((1, 2)), np.zeros((1, 3))
    with pytest.raises(ValueError, match="feature_notes has 1 entries but feature_names has 2"):
        HandFeatures("x", ("a",), ("f", "g"), ("only one",), z12, z12, z12)
    with pytest.raises(ValueError, match=r"K has shape \(1, 3\) but there are 1 tokens and 2 named features"):
        HandFeatures("x", ("a",), ("f", "g"), ("n1", "n2"), z12, z13, z12)
    with pytest.raises(ValueError, match="which must be 'Q', 'K' or 'V'"):
        animal_street().table("S")


# -- the word explorer --------------------------------------------------------------------------
def test_word_explorer_is_deterministic(tr_words, words: HandFeatures) -> None:
    a = word_explorer(tr_words, feature_names=words.feature_names, div_id="w")
    b = word_explorer(tr_words, feature_names=words.feature_names, div_id="w")
    assert a.to_html() == b.to_html() and a.to_plotly_json() == b.to_plotly_json()
    html = a.to_html()
    assert 'id="w"' in html and "<figcaption>" in html and 'aria-describedby="w-alt"' in html
    assert "https://" not in html and "<script src" not in html.lower()


def test_word_explorer_states_equal_attnlib(tr_words, words: HandFeatures) -> None:
    sf = word_explorer(tr_words, feature_names=words.feature_names)
    fig = sf.fig
    buttons = fig.layout.updatemenus[0].buttons
    assert [b.label for b in buttons] == list(SENTENCE)
    assert len(fig.data) == len(buttons) == 11
    _, w = scaled_dot_product_attention(words.Q, words.K, words.V, return_weights=True)
    for i, (trace, button) in enumerate(zip(fig.data, buttons, strict=True)):
        np.testing.assert_array_equal(np.array(trace.y, dtype=float), w[i])  # bitwise: same core call
        assert list(trace.x) == list(range(11))
        assert button.args[0]["visible"] == [k == i for k in range(11)]
    assert list(fig.layout.xaxis.ticktext) == list(SENTENCE)
    it = SENTENCE.index("it")
    assert int(np.argmax(fig.data[it].y)) == SENTENCE.index("animal")
    assert [t.visible for t in fig.data] == [True] + [False] * 10
    # no text inside the SVG that could clip or overlap at 390 px: the states carry it
    assert not fig.layout.annotations and not fig.layout.title.text and fig.layout.width is None


def test_word_explorer_states_say_the_numbers(tr_words, words: HandFeatures) -> None:
    sf = word_explorer(tr_words, feature_names=words.feature_names)
    assert list(sf.states) == [(i,) for i in range(11)]
    notes = word_notes(tr_words, words.feature_names)
    it, animal, street = SENTENCE.index("it"), SENTENCE.index("animal"), SENTENCE.index("street")
    state = sf.states[(it,)]
    w = tr_words.weights[it]
    assert state.summary == (
        f"Query “it”: its largest weights are {w[animal]:.4f} on “animal” and {w[street]:.4f} on “street”; "
        f"the other 9 words share {1 - w[animal] - w[street]:.4f}."
    )
    assert list(state.lines) == notes[it]
    (table,) = state.tables
    assert table.columns == ("key", "weight", "score q·k", "scaled q·k / √7")
    assert [r[0] for r in table.rows] == list(SENTENCE)
    for c, expected in enumerate((w, tr_words.scores[it], tr_words.scaled_scores[it]), start=1):
        np.testing.assert_allclose([float(r[c]) for r in table.rows], expected, atol=5e-5, rtol=0)
    # each state is its own query's: no two summaries or tables alike
    assert len({s.summary for s in sf.states.values()}) == 11
    assert len({s.tables[0].rows for s in sf.states.values()}) == 11


def test_word_explorer_names_every_key_tied_with_a_named_one(tr_words, words: HandFeatures) -> None:
    """Keys whose scores are equal in exact arithmetic (here up to 4e-16 apart in weight) are all named."""
    sf = word_explorer(tr_words, feature_names=words.feature_names)
    tied_rows = 0
    for (i,), state in sf.states.items():
        w = tr_words.weights[i]
        named = re.findall(r"“([^”]+)”", state.summary)[1:]  # the first is the query
        assert len(named) == len(set(named)) >= 2
        idx = [SENTENCE.index(t) for t in named]
        assert set(np.argsort(-w)[:2]) <= set(idx), "the two largest weights are named"
        for j in range(len(w)):
            ties = [k for k in idx if np.isclose(w[j], w[k], rtol=1e-9, atol=0)]
            assert (j in idx) == bool(ties), f"{SENTENCE[i]}: {SENTENCE[j]} named or left out wrongly"
        if any(len(g) > 1 for g in tie_groups(w[idx])):
            tied_rows += 1
            assert "(a tie)" in state.summary
        else:
            assert "tie" not in state.summary
        rest = np.delete(w, idx)
        assert state.summary.endswith(f"the other {len(rest)} words share {rest.sum():.4f}.")
    assert tied_rows == 5  # "The", "animal", "cross", "street", "because"
    the, street, animal = 0, SENTENCE.index("street"), SENTENCE.index("animal")
    w = tr_words.weights[the]
    assert tr_words.scores[the, the] == tr_words.scores[the, street] == 3.0
    assert sf.states[(the,)].summary == (
        f"Query “The”: its largest weights are {w[animal]:.4f} on “animal” and {w[the]:.4f} on both "
        f"“The” and “street” (a tie); the other 8 words share {1 - w[animal] - 2 * w[the]:.4f}."
    )
    cross = SENTENCE.index("cross")
    w = tr_words.weights[cross]
    assert sf.states[(cross,)].summary.startswith(
        f"Query “cross”: its largest weight is {w[animal]:.4f} on both “animal” and “street” (a tie); ")
    assert sf.states[(cross,)].lines[1] == f"largest weight: animal, {w[animal]:.4f} (tied with street)"


def test_tie_groups_and_summaries_of_small_rows() -> None:
    assert tie_groups([0.25, 0.25 * (1 + 1e-12), 0.5]) == [[2], [0, 1]]
    assert tie_groups([0.25, 0.25 * (1 + 1e-6), 0.5]) == [[2], [1], [0]]
    K = np.eye(4)
    cases = {  # query row -> summary after "Query “t0”: "
        (0.0, 0.0, 0.0, 0.0): "its largest weight is 0.2500 on each of “t0”, “t1”, “t2” and “t3” (a tie).",
        (1.0, 1.0, 1.0, 0.0): "its largest weight is {0:.4f} on each of “t0”, “t1” and “t2” (a tie); "
                              "the other word gets {3:.4f}.",
        (2.0, 0.0, 0.0, 1.0): "its largest weights are {0:.4f} on “t0” and {3:.4f} on “t3”; "
                              "the other 2 words share {r:.4f}.",
    }
    for q, text in cases.items():
        tr = trace_attention(np.array([q] * 4), K, K)  # four queries alike: t0's row is the one read
        w = tr.weights[0]
        r = w[1] + w[2]
        assert word_explorer(tr).states[(0,)].summary == "Query “t0”: " + text.format(*w, r=r)
    masked = trace_attention(np.ones((2, 2)), np.eye(2), np.eye(2), attn_mask=np.tril(np.ones((2, 2), bool)))
    assert word_explorer(masked).states[(0,)].summary == "Query “t0”: all its weight, 1.0000, is on “t0”."


def test_word_notes_write_the_top_score_as_wanted_times_offered(tr_words, words: HandFeatures) -> None:
    notes = word_notes(tr_words, words.feature_names)
    it = notes[SENTENCE.index("it")]
    assert it[0] == "it looks for: noun 2.0, animate 6.0, state 1.5"
    assert it[1] == f"largest weight: animal, {tr_words.weights[7, 1]:.4f}"
    assert it[2] == "  q·k[animal] = 2.0×1.0 (noun) + 6.0×1.0 (animate) = 8.0"
    assert tr_words.scores[7, 1] == 8.0
    with pytest.raises(ValueError, match="feature_names has 2 names but the trace has d_k=7"):
        word_notes(tr_words, ["a", "b"])


def test_word_explorer_errors() -> None:
    with pytest.raises(TypeError, match="trace must be an AttentionTrace"):
        word_explorer(np.eye(3))
    ex = cat_sat_on_mat()
    with pytest.raises(ValueError, match="div_id must start with a letter"):
        word_explorer(trace_attention(ex.Q, ex.K, ex.V), div_id="1x")


# -- the "Cat sits" stepper ---------------------------------------------------------------------
def test_stepper_is_deterministic() -> None:
    a, b = qkv_stepper(cat_sits(), div_id="s"), qkv_stepper(cat_sits(), div_id="s")
    assert a.to_html() == b.to_html() and a.to_plotly_json() == b.to_plotly_json()
    assert 'data-explorer="s"' in a.to_html() and "Cat sits" in a.caption
    assert a.fig is None, "an explorer of HTML tables: Plotly's table traces are not in the book's bundle"
    page = re.sub(r"<script>.*?</script>", "", a.to_html(), flags=re.S)  # explorer.js comes inline
    assert "plotly" not in page.lower() and "<script>" in a.to_html()


def _rows(table) -> np.ndarray:
    """A DataTable's entries (row labels dropped) as a matrix."""
    return np.array([[float(v) for v in row[1:]] for row in table.rows])


def test_stepper_phases_equal_attnlib(tr_cs) -> None:
    ex = cat_sits()
    sf = qkv_stepper(ex)
    assert list(sf.states) == [(p,) for p in range(5)] and len(PHASES) == 5
    expected = [
        [ex.X, ex.W_Q, ex.W_K, ex.W_V],
        [ex.X @ ex.W_Q, ex.X @ ex.W_K, ex.X @ ex.W_V],
        [tr_cs.Q, tr_cs.K.T, tr_cs.scores],
        [tr_cs.scores, tr_cs.scaled_scores],
        [tr_cs.weights, tr_cs.V, tr_cs.output],
    ]
    for p, (mats, (_, title)) in enumerate(zip(expected, PHASES, strict=True)):
        state = sf.states[(p,)]
        assert state.summary.startswith(f"{title} (phase {p + 1} of 5). ")
        assert len(state.tables) == len(mats), f"phase {p + 1}"
        for table, M in zip(state.tables, mats, strict=True):
            np.testing.assert_allclose(_rows(table), M, atol=5e-5, rtol=0)
            assert table.caption.endswith(f"({M.shape[0]} × {M.shape[1]})")
    np.testing.assert_array_equal(tr_cs.Q, ex.Q)  # Q = X W_Q, as the example stores it
    assert [r[0] for r in sf.states[(0,)].tables[0].rows] == ["Cat", "sits"]
    # the arithmetic is explain()'s
    text = "\n".join(sf.states[(4,)].lines)
    for i in range(tr_cs.n_q):
        for line in tr_cs.explain_steps(i)["6"][1:] + tr_cs.explain_steps(i)["7"][1:]:
            assert line.strip() in text
    assert "k[Cat] = x[Cat] W_K = 1.0×[1.0, 1.0] + 0.0×[0.0, 1.0] + 1.0×[1.0, 0.0] = [2.0, 1.0]" in (
        "\n".join(sf.states[(1,)].lines)
    )
    # the summaries say the numbers
    assert "row Cat: “Cat” 2.0, “sits” 1.0; row sits: “Cat” 1.0, “sits” 1.0." in sf.states[(2,)].summary
    assert f"out[Cat] = [{tr_cs.output[0, 0]:.4f}, {tr_cs.output[0, 1]:.4f}]" in sf.states[(4,)].summary
    assert f"“Cat” {tr_cs.weights[0, 0]:.4f}" in sf.states[(4,)].summary


def test_qkv_phases_names_and_errors() -> None:
    phases = qkv_phases(cat_sits())
    assert [[m["name"] for m in ph["matrices"]] for ph in phases] == [
        ["X", "W_Q", "W_K", "W_V"], ["Q", "K", "V"], ["Q", "Kᵀ", "S"], ["S", "S / √2"],
        ["weights", "V", "output"],
    ]
    with pytest.raises(ValueError, match="has no X, W_Q, W_K, W_V"):
        qkv_stepper(cat_sat_on_mat())
    with pytest.raises(TypeError, match=r"example must be an attnlib\.examples\.Example"):
        qkv_phases({"X": np.eye(2)})
