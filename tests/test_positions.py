"""Tests of attnlib.positions: the sinusoidal encodings against the formula, their properties, bad inputs."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from attnlib.positions import sinusoidal_positions


def naive_positions(n: int, d_model: int, base: float = 10000.0) -> np.ndarray:
    """Vaswani et al. (2017), Sec. 3.5, entry by entry with ``math``."""
    PE = np.zeros((n, d_model))
    for p in range(n):
        for i in range(d_model // 2):
            angle = p / base ** (2 * i / d_model)
            PE[p, 2 * i] = math.sin(angle)
            PE[p, 2 * i + 1] = math.cos(angle)
    return PE


@pytest.mark.parametrize(("n", "d_model", "base"), [(1, 2, 10000.0), (10, 4, 10000.0), (50, 16, 10000.0),
                                                   (7, 6, 100.0), (20, 8, 2.5)])
def test_matches_the_formula_entry_by_entry(n, d_model, base):
    PE = sinusoidal_positions(n, d_model, base)
    assert PE.shape == (n, d_model) and PE.dtype == np.float64
    np.testing.assert_allclose(PE, naive_positions(n, d_model, base), rtol=1e-12, atol=1e-12)


def test_known_values():
    PE = sinusoidal_positions(3, 4)
    assert np.array_equal(PE[0], [0.0, 1.0, 0.0, 1.0])
    assert PE[1, 0] == pytest.approx(math.sin(1.0), abs=1e-15)
    assert PE[2, 1] == pytest.approx(math.cos(2.0), abs=1e-15)
    assert PE[1, 2] == pytest.approx(math.sin(1 / 100), abs=1e-15)  # 10000^(2/4) = 100
    assert PE[1, 3] == pytest.approx(math.cos(1 / 100), abs=1e-15)


def test_entries_lie_in_the_unit_interval_and_each_pair_on_the_unit_circle():
    PE = sinusoidal_positions(500, 32)
    assert np.abs(PE).max() <= 1.0
    np.testing.assert_allclose(PE[:, 0::2] ** 2 + PE[:, 1::2] ** 2, 1.0, rtol=1e-14)
    np.testing.assert_allclose((PE**2).sum(axis=1), 16.0, rtol=1e-13)  # |PE[p]|² = d_model / 2


def test_rows_are_distinct():
    PE = sinusoidal_positions(200, 16)
    gaps = np.linalg.norm(PE[:, None, :] - PE[None, :, :], axis=-1)  # (n, n)
    assert gaps[~np.eye(200, dtype=bool)].min() > 1e-3


@given(st.integers(2, 40), st.sampled_from([2, 4, 8, 16, 64]), st.integers(0, 30))
def test_property_dot_product_depends_only_on_the_offset(n, d_model, k):
    PE = sinusoidal_positions(n + k, d_model)
    dots = np.einsum("pd,pd->p", PE[:n], PE[k:k + n])  # (n,) PE[p] · PE[p + k]
    omega = 10000.0 ** (-np.arange(0, d_model, 2) / d_model)
    np.testing.assert_allclose(dots, np.cos(k * omega).sum(), rtol=1e-10, atol=1e-10)


def test_offset_is_a_rotation_independent_of_position():
    d_model, k = 8, 5
    PE = sinusoidal_positions(40, d_model)
    omega = 10000.0 ** (-np.arange(0, d_model, 2) / d_model)
    R = np.zeros((d_model, d_model))
    for i, w in enumerate(omega):  # row vector (sin a, cos a) → (sin(a + kw), cos(a + kw))
        c, s = math.cos(k * w), math.sin(k * w)
        R[2 * i:2 * i + 2, 2 * i:2 * i + 2] = [[c, -s], [s, c]]
    np.testing.assert_allclose(PE[:-k] @ R, PE[k:], atol=1e-12)


def _msg(*parts: str) -> str:
    return ".*".join(re.escape(p) for p in parts)


@pytest.mark.parametrize(
    ("kwargs", "exc", "match"),
    [
        pytest.param({"n": 4, "d_model": 5}, ValueError, _msg("d_model must be even", "got 5"), id="odd"),
        pytest.param({"n": 0, "d_model": 4}, ValueError, _msg("n must be positive; got 0"), id="n_0"),
        pytest.param({"n": 4, "d_model": 0}, ValueError, _msg("d_model must be positive; got 0"), id="d_0"),
        pytest.param({"n": 4.0, "d_model": 4}, TypeError,
                     _msg("n must be an integer", "float"), id="n_float"),
        pytest.param({"n": 4, "d_model": "4"}, TypeError,
                     _msg("d_model must be an integer", "str"), id="d_str"),
        pytest.param({"n": 4, "d_model": 4, "base": 1.0}, ValueError,
                     _msg("base must be a finite number greater than 1", "got 1.0"), id="base_1"),
        pytest.param({"n": 4, "d_model": 4, "base": math.inf}, ValueError,
                     _msg("base must be a finite number", "got inf"), id="base_inf"),
        pytest.param({"n": 4, "d_model": 4, "base": "1e4"}, TypeError,
                     _msg("base must be a real number", "str"), id="base_str"),
    ],
)
def test_bad_input_raises_a_message_naming_it(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        sinusoidal_positions(**kwargs)
