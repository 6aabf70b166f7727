"""Tests of attnlib.examples: the book's three fixed examples as data."""

from __future__ import annotations

import dataclasses
import re

import numpy as np
import pytest

from attnlib.examples import Example, cat_sat_on_mat, cat_sits, three_directions

# name of the factory: (tokens, shape of Q, K, V, has X and projections)
EXPECTED = {
    "cat_sat_on_mat": (("The", "cat", "sat", "on", "mat"), ((5, 4), (5, 4), (5, 4)), False),
    "three_directions": (("A", "B", "C"), ((3, 2), (3, 2), (3, 2)), False),
    "cat_sits": (("Cat", "sits"), ((2, 2), (2, 2), (2, 2)), True),
}
FACTORIES = {"cat_sat_on_mat": cat_sat_on_mat, "three_directions": three_directions, "cat_sits": cat_sits}


@pytest.mark.parametrize("name", list(FACTORIES))
def test_shapes_tokens_and_dtype(name):
    ex = FACTORIES[name]()
    tokens, shapes, has_projections = EXPECTED[name]
    assert isinstance(ex, Example)
    assert ex.tokens == tokens
    assert ex.n == len(tokens)
    assert (ex.Q.shape, ex.K.shape, ex.V.shape) == shapes
    assert ex.d_k == shapes[0][1] == shapes[1][1]
    for arr in (ex.Q, ex.K, ex.V):
        assert arr.dtype == np.float64
        assert np.isfinite(arr).all()
    assert (ex.X is not None) == has_projections
    assert ex.name and ex.source  # provenance is recorded


def _arrays(ex: Example) -> dict[str, np.ndarray]:
    names = ("Q", "K", "V", "X", "W_Q", "W_K", "W_V")
    return {n: getattr(ex, n) for n in names if getattr(ex, n) is not None}


@pytest.mark.parametrize("name", list(FACTORIES))
def test_arrays_are_read_only(name):
    ex = FACTORIES[name]()
    arrays = _arrays(ex)
    assert {"Q", "K", "V"} <= set(arrays)
    for label, arr in arrays.items():
        assert not arr.flags.writeable, label
        with pytest.raises(ValueError, match="read-only"):
            arr[0, 0] = 99.0


@pytest.mark.parametrize("name", list(FACTORIES))
def test_example_is_frozen_and_fresh_per_call(name):
    first, second = FACTORIES[name](), FACTORIES[name]()
    with pytest.raises(dataclasses.FrozenInstanceError):
        first.Q = np.zeros((1, 1))
    for label, arr in _arrays(first).items():
        other = getattr(second, label)
        assert arr is not other and not np.shares_memory(arr, other), label
        np.testing.assert_array_equal(arr, other)


def test_cat_sits_is_built_from_x_and_the_projections():
    ex = cat_sits()
    assert ex.X.shape == (2, 3)
    assert ex.W_Q.shape == ex.W_K.shape == ex.W_V.shape == (3, 2)
    np.testing.assert_array_equal(ex.Q, ex.X @ ex.W_Q)
    np.testing.assert_array_equal(ex.K, ex.X @ ex.W_K)
    np.testing.assert_array_equal(ex.V, ex.X @ ex.W_V)
    # the values the chapter prints (X = [[1, 0, 1], [0, 1, 1]]):
    assert ex.Q.tolist() == [[1.0, 0.0], [0.0, 1.0]]
    assert ex.K.tolist() == [[2.0, 1.0], [1.0, 1.0]]
    assert ex.V.tolist() == [[1.0, 2.0], [2.0, 1.0]]


def test_cat_sat_on_mat_data_reads_as_documented():
    ex = cat_sat_on_mat()
    assert ex.Q[0].tolist() == [1.0, 0.0, 1.0, 0.0]  # "The" asks for dimensions 0 and 2
    assert ex.K[1].tolist() == [1.0, 0.0, 1.0, 0.0]  # which "cat" advertises
    np.testing.assert_array_equal(ex.V[:4], np.eye(4))  # one-hot values for the first four tokens
    assert ex.V[4].tolist() == [0.5] * 4  # "mat" spreads 0.5 over all four
    assert ex.X is ex.W_Q is ex.W_K is ex.W_V is None


def test_abc_data_reads_as_documented():
    ex = three_directions()
    assert ex.Q.tolist() == [[1.0, 0.0], [0.5, 0.5], [0.0, 1.0]]  # east, north-east, north
    assert ex.V.tolist() == [[1.0, 0.0], [0.0, 1.0], [0.5, 0.5]]  # unit vectors and their midpoint
    assert ex.X is None


# Provenance a reader can follow: the examples are the book's own. No source string or docstring
# may point at documents the reader cannot see, at internal paths, or call the examples "published".
_UNTRACEABLE = re.compile(
    r"reference doc|document|commission|published|seeds|\bdoc(?:ument)?\.?\s*\d", re.IGNORECASE
)


@pytest.mark.parametrize("name", list(FACTORIES))
def test_source_names_no_untraceable_document(name):
    ex = FACTORIES[name]()
    assert not _UNTRACEABLE.search(ex.source), ex.source
    assert "book" in ex.source  # the examples are the book's own
    assert not _UNTRACEABLE.search(FACTORIES[name].__doc__), FACTORIES[name].__doc__


def test_module_docstrings_name_no_untraceable_document():
    import attnlib.examples as module

    for doc in (module.__doc__, Example.__doc__):
        assert not _UNTRACEABLE.search(doc), doc


def test_untraceable_pattern_catches_the_old_wording():
    for old in ("see document 3", "the reference docs", "the book's commission",
                "a published worked example", "``shared/seeds``"):
        assert _UNTRACEABLE.search(old), old
    assert not _UNTRACEABLE.search("the book's 3-token example in 2-D, small enough to draw")


# --------------------------------------------------------------------------- chapter 2's feature tables
def test_feature_tables_print_as_before_and_display_as_html_tables():
    from attnlib.features import animal_street

    words = animal_street()
    described = words.describe()
    assert described.splitlines()[0].split()[:2] == ["0", "noun"] and len(described.splitlines()) == words.d_k
    html = described._repr_html_()
    assert re.findall(r'<th scope="col"[^>]*>([^<]*)</th>', html) == ["dimension", "feature", "meaning"]
    assert html.count('<th scope="row"') == words.d_k and "named dimensions" in described.caption
    K = words.table("K")
    assert K.splitlines()[0].split() == list(words.feature_names)  # the text's header line, as before
    html = K._repr_html_()
    assert re.findall(r'<th scope="row"[^>]*>([^<]*)</th>', html) == ["didn&#x27;t" if t == "didn't" else t
                                                                      for t in words.tokens]
    assert html.count('class="num"') == words.n * words.d_k + words.d_k  # every entry and its header
    assert "offers" in K.caption and "looks for" in words.table("Q").caption
    few = words.table("Q", words=["it", "animal"])  # a few rows, in the order asked
    assert [line.split()[0] for line in few.splitlines()[1:]] == ["it", "animal"]
    it_row = words.Q[words.tokens.index("it")]
    assert few.splitlines()[1].split()[1:] == [f"{x:.2f}".replace("-0.00", "0.00") for x in it_row]
    with pytest.raises(ValueError, match=r"words \['dog'\] are not tokens"):
        words.table("K", words=["dog"])
