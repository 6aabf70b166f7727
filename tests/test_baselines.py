"""Tests of attnlib.baselines: the toy recurrence, path lengths, additive scores and their costs.

1. ``rnn_states`` against a pure-Python loop over steps and units.
2. ``input_influence`` against finite differences of the states (central
   differences, the spectral norm of the numerical Jacobian) and against a
   closed form for a linear recurrence.
3. Step and path counts by their definitions, and the table built from them.
4. ``additive_scores`` against a loop over pairs and hidden units.
5. ``score_costs`` against a pure-Python additive and dot-product scorer that
   increments a counter at every multiply, add and tanh, and computes the
   right scores while doing so.
6. A catalogue of bad inputs, each checked for its type and message.
"""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from attnlib.baselines import (
    ScoreCosts,
    additive_scores,
    input_influence,
    max_path_length,
    path_table,
    rnn_states,
    score_costs,
    sequential_steps,
)


def _random_rnn(seed: int, n: int = 6, d_in: int = 3, d_s: int = 4, gain: float = 0.9):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d_in))
    W_x = rng.normal(size=(d_in, d_s)) / math.sqrt(d_in)
    W_s = gain * rng.normal(size=(d_s, d_s)) / math.sqrt(d_s)
    b = 0.1 * rng.normal(size=d_s)
    return X, W_x, W_s, b


# --------------------------------------------------------------------------- 1. states
def _naive_states(X, W_x, W_s, b, activation="tanh"):
    n, d_in = len(X), len(X[0])
    d_s = len(W_s)
    s = [0.0] * d_s  # s_{-1} = 0
    out = []
    for t in range(n):
        new = []
        for j in range(d_s):
            a = b[j]
            for i in range(d_in):
                a += X[t][i] * W_x[i][j]
            for i in range(d_s):
                a += s[i] * W_s[i][j]
            new.append(math.tanh(a) if activation == "tanh" else a)
        s = new
        out.append(s)
    return np.array(out)


@pytest.mark.parametrize("activation", ["tanh", "linear"])
@pytest.mark.parametrize("seed", range(4))
def test_rnn_states_match_a_loop(seed: int, activation: str) -> None:
    X, W_x, W_s, b = _random_rnn(seed)
    states = rnn_states(X, W_x, W_s, b, activation=activation)
    assert states.shape == (X.shape[0], W_x.shape[1])
    np.testing.assert_allclose(states, _naive_states(X, W_x, W_s, b, activation), rtol=1e-12, atol=1e-12)


def test_rnn_states_default_bias_is_zero_and_tanh_bounds_states() -> None:
    X, W_x, W_s, _ = _random_rnn(7, gain=5.0)
    states = rnn_states(X, W_x, W_s)
    np.testing.assert_array_equal(states, rnn_states(X, W_x, W_s, np.zeros(W_x.shape[1])))
    assert np.all(np.abs(states) < 1.0)


def test_rnn_states_accept_integer_lists() -> None:
    states = rnn_states([[1], [0], [0]], [[1]], [[2]], activation="linear")
    assert states.dtype == np.float64
    np.testing.assert_array_equal(states.ravel(), [1.0, 2.0, 4.0])


# --------------------------------------------------------------------------- 2. influence
def _fd_influence(X, W_x, W_s, b, r, activation, eps=1e-6):
    """Spectral norms of the central-difference Jacobians ds_t/dx_r, for every t."""
    n, d_in = X.shape
    d_s = W_x.shape[1]
    J = np.zeros((n, d_in, d_s))  # row-vector convention: ds_t = dx_r @ J[t]
    for i in range(d_in):
        Xp, Xm = X.copy(), X.copy()
        Xp[r, i] += eps
        Xm[r, i] -= eps
        diff = rnn_states(Xp, W_x, W_s, b, activation) - rnn_states(Xm, W_x, W_s, b, activation)
        J[:, i, :] = diff / (2 * eps)
    return np.array([np.linalg.norm(J[t], ord=2) for t in range(n)])


@pytest.mark.parametrize("activation", ["tanh", "linear"])
@pytest.mark.parametrize(("seed", "t_from"), [(0, 0), (1, 2), (2, 5), (3, 1)])
def test_influence_matches_finite_differences(seed: int, t_from: int, activation: str) -> None:
    X, W_x, W_s, b = _random_rnn(seed)
    exact = input_influence(X, W_x, W_s, t_from=t_from, b=b, activation=activation)
    numeric = _fd_influence(X, W_x, W_s, b, t_from, activation)
    assert exact.shape == (X.shape[0],)
    np.testing.assert_array_equal(exact[:t_from], 0.0)
    np.testing.assert_allclose(exact, numeric, rtol=1e-6, atol=1e-9)


def test_influence_of_a_linear_recurrence_is_a_matrix_power() -> None:
    X, W_x, W_s, _ = _random_rnn(11, n=8)
    got = input_influence(X, W_x, W_s, activation="linear")
    want = [np.linalg.norm(W_x @ np.linalg.matrix_power(W_s, t), ord=2) for t in range(8)]
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_influence_decays_geometrically_for_a_contracting_recurrence() -> None:
    d_s = 3
    W_s = 0.5 * np.eye(d_s)
    got = input_influence(np.ones((10, 2)), np.ones((2, d_s)), W_s, activation="linear")
    np.testing.assert_allclose(got[1:] / got[:-1], 0.5)


@given(st.integers(min_value=0, max_value=2**32 - 1))
def test_influence_never_exceeds_its_linear_bound(seed: int) -> None:
    # |tanh'| <= 1, so ‖J_{t,0}‖ <= ‖W_x‖ ‖W_s‖^t.
    X, W_x, W_s, b = _random_rnn(seed, n=5)
    got = input_influence(X, W_x, W_s, b=b)
    bound = np.linalg.norm(W_x, 2) * np.linalg.norm(W_s, 2) ** np.arange(5)
    assert np.all(got <= bound * (1 + 1e-12))


# --------------------------------------------------------------------------- 3. steps and paths
@pytest.mark.parametrize("n", [1, 2, 5, 1000])
def test_steps_and_paths(n: int) -> None:
    # Both paths run from the input x_0 to the last token's output: x_0 -> s_0 -> ... -> s_{n-1}
    # is n hops, x_0 -> o_{n-1} one; at n = 1 they are equal.
    assert sequential_steps(n, "recurrent") == n
    assert sequential_steps(n, "attention") == 1
    assert max_path_length(n, "recurrent") == n
    assert max_path_length(n, "attention") == 1


def test_path_table_rows() -> None:
    lines = path_table([3, 1024]).splitlines()
    assert len(lines) == 3
    assert lines[0].split()[0] == "n"
    assert lines[1].split() == ["3", "3", "1", "3", "1"]
    assert lines[2].split() == ["1,024", "1,024", "1", "1,024", "1"]


# --------------------------------------------------------------------------- 4. additive scores
def _naive_additive(Q, K, W_1, W_2, u):
    S = np.zeros((len(Q), len(K)))
    for i in range(len(Q)):
        for j in range(len(K)):
            total = 0.0
            for a in range(len(u)):
                pre = sum(Q[i][c] * W_1[c][a] for c in range(len(Q[0])))
                pre += sum(K[j][c] * W_2[c][a] for c in range(len(K[0])))
                total += u[a] * math.tanh(pre)
            S[i, j] = total
    return S


@pytest.mark.parametrize(
    ("n_q", "n_k", "d_q", "d_k", "d_a"), [(1, 1, 1, 1, 1), (3, 5, 4, 4, 6), (2, 4, 3, 5, 2)]
)
def test_additive_scores_match_a_loop(n_q: int, n_k: int, d_q: int, d_k: int, d_a: int) -> None:
    rng = np.random.default_rng(n_q * 100 + n_k * 10 + d_a)
    Q, K = rng.normal(size=(n_q, d_q)), rng.normal(size=(n_k, d_k))
    W_1, W_2, u = rng.normal(size=(d_q, d_a)), rng.normal(size=(d_k, d_a)), rng.normal(size=d_a)
    S = additive_scores(Q, K, W_1, W_2, u)
    assert S.shape == (n_q, n_k)
    np.testing.assert_allclose(S, _naive_additive(Q, K, W_1, W_2, u), rtol=1e-12, atol=1e-12)


def test_additive_scores_are_bounded_by_the_norm_of_u() -> None:
    rng = np.random.default_rng(3)
    u = rng.normal(size=4)
    S = additive_scores(50 * rng.normal(size=(6, 3)), rng.normal(size=(7, 3)),
                        rng.normal(size=(3, 4)), rng.normal(size=(3, 4)), u)
    assert np.all(np.abs(S) <= np.abs(u).sum())


# --------------------------------------------------------------------------- 5. costs, counted
def _counted_scores(Q, K, W_1, W_2, u):
    """Additive and dot-product scores in pure Python, counting every operation."""
    additive, dot = Counter(), Counter()

    def dot_product(x, y, counter):
        acc = x[0] * y[0]
        counter["mul"] += 1
        for a, b in zip(x[1:], y[1:], strict=True):
            acc += a * b
            counter["mul"] += 1
            counter["add"] += 1
        return acc

    cols = lambda W: [list(c) for c in zip(*W, strict=True)]  # noqa: E731
    PQ = [[dot_product(q, c, additive) for c in cols(W_1)] for q in Q]
    PK = [[dot_product(k, c, additive) for c in cols(W_2)] for k in K]
    S_add = []
    for pq in PQ:
        row = []
        for pk in PK:
            hidden = []
            for a, b in zip(pq, pk, strict=True):
                additive["add"] += 1
                additive["tanh"] += 1
                hidden.append(math.tanh(a + b))
            row.append(dot_product(hidden, list(u), additive))
        S_add.append(row)
    S_dot = [[dot_product(list(q), list(k), dot) for k in K] for q in Q]
    return np.array(S_add), np.array(S_dot), additive, dot


@pytest.mark.parametrize(
    ("n_q", "n_k", "d_k", "d_a"), [(1, 1, 1, 1), (2, 3, 4, 5), (3, 2, 1, 4), (4, 4, 3, 2)]
)
def test_score_costs_equal_a_brute_force_count(n_q: int, n_k: int, d_k: int, d_a: int) -> None:
    rng = np.random.default_rng(0)
    Q, K = rng.normal(size=(n_q, d_k)), rng.normal(size=(n_k, d_k))
    W_1, W_2, u = rng.normal(size=(d_k, d_a)), rng.normal(size=(d_k, d_a)), rng.normal(size=d_a)
    S_add, S_dot, c_add, c_dot = _counted_scores(Q.tolist(), K.tolist(), W_1.tolist(), W_2.tolist(), u)
    np.testing.assert_allclose(S_add, additive_scores(Q, K, W_1, W_2, u), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(S_dot, Q @ K.T, rtol=1e-12, atol=1e-12)
    costs = score_costs(n_q, n_k, d_k, d_a)
    assert isinstance(costs, ScoreCosts)
    assert (costs.additive.multiplies, costs.additive.adds, costs.additive.tanhs) == (
        c_add["mul"], c_add["add"], c_add["tanh"])
    assert (costs.dot_product.multiplies, costs.dot_product.adds, costs.dot_product.tanhs) == (
        c_dot["mul"], c_dot["add"], 0)
    assert costs.additive.largest_intermediate == n_q * n_k * d_a
    assert costs.dot_product.largest_intermediate == n_q * n_k


@given(st.integers(1, 64), st.integers(1, 64), st.integers(1, 128), st.integers(1, 128))
def test_score_costs_closed_forms(n_q: int, n_k: int, d_k: int, d_a: int) -> None:
    c = score_costs(n_q, n_k, d_k, d_a)
    assert c.dot_product.flops == n_q * n_k * (2 * d_k - 1)
    per_pair = c.additive.flops - (n_q + n_k) * d_a * (2 * d_k - 1)
    assert per_pair == n_q * n_k * (3 * d_a - 1)


def test_score_costs_table_lists_both_methods() -> None:
    text = score_costs(2, 3, 4, 5).table()
    lines = text.splitlines()
    assert "n_q=2" in lines[0] and "d_a=5" in lines[0]
    assert lines[2].split()[:4] == ["additive", "130", "129", "30"]
    assert lines[3].split()[:4] == ["dot-product", "24", "18", "0"]


# --------------------------------------------------------------------------- 6. bad inputs
GOOD = _random_rnn(0)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"X": np.ones(3)}, ValueError, r"X must be a 2-D array of shape \(n, d_in\); got shape \(3,\)"),
        ({"X": np.ones((6, 2))}, ValueError, r"W_x has 3 rows but X has d_in=2"),
        ({"W_s": np.ones((4, 3))}, ValueError, r"W_s must be square of shape \(d_s, d_s\) = \(4, 4\)"),
        ({"b": np.ones(3)}, ValueError, r"b must have shape \(d_s,\) = \(4,\); got \(3,\)"),
        ({"X": np.full((6, 3), np.nan)}, ValueError, r"X must be finite"),
        ({"W_x": np.ones((3, 4), dtype=bool)}, TypeError, r"W_x must hold real numbers, not booleans"),
        ({"X": np.ones((0, 3))}, ValueError, r"X has n=0"),
        ({"activation": "relu"}, ValueError, r"activation must be one of \('tanh', 'linear'\); got 'relu'"),
    ],
)
@pytest.mark.parametrize("fn", [rnn_states, input_influence])
def test_rnn_bad_inputs(fn, kwargs: dict, error: type, match: str) -> None:
    X, W_x, W_s, b = GOOD
    args = {"X": X, "W_x": W_x, "W_s": W_s, "b": b, **kwargs}
    with pytest.raises(error, match=match):
        fn(**args)


@pytest.mark.parametrize(
    ("t_from", "error", "match"),
    [
        (6, ValueError, r"t_from must lie in 0 \.\. n-1 = 0 \.\. 5 for X of shape \(6, 3\); got 6"),
        (-1, ValueError, r"t_from must lie in 0 \.\. n-1"),
        (1.0, TypeError, r"t_from must be an integer; got float"),
        (True, TypeError, r"t_from must be an integer; got bool"),
    ],
)
def test_influence_bad_t_from(t_from, error: type, match: str) -> None:
    X, W_x, W_s, b = GOOD
    with pytest.raises(error, match=match):
        input_influence(X, W_x, W_s, t_from=t_from, b=b)


@pytest.mark.parametrize("fn", [sequential_steps, max_path_length])
def test_steps_and_paths_bad_inputs(fn) -> None:
    with pytest.raises(ValueError, match=r"kind must be one of \('recurrent', 'attention'\); got 'cnn'"):
        fn(4, "cnn")
    with pytest.raises(ValueError, match=r"n must be positive; got 0"):
        fn(0, "recurrent")
    with pytest.raises(TypeError, match=r"n must be an integer; got float"):
        fn(2.5, "attention")


def test_path_table_bad_inputs() -> None:
    with pytest.raises(ValueError, match=r"ns must be a non-empty sequence of positive integers"):
        path_table([])
    with pytest.raises(ValueError, match=r"ns must be a non-empty sequence"):
        path_table("12")
    with pytest.raises(ValueError, match=r"each n in ns must be positive; got -3"):
        path_table([4, -3])


def _additive_args(**override):
    rng = np.random.default_rng(5)
    args = {"Q": rng.normal(size=(2, 3)), "K": rng.normal(size=(4, 5)),
            "W_1": rng.normal(size=(3, 6)), "W_2": rng.normal(size=(5, 6)), "u": rng.normal(size=6)}
    return {**args, **override}


@pytest.mark.parametrize(
    ("override", "error", "match"),
    [
        ({"Q": np.ones(3)}, ValueError, r"Q must be a 2-D array of shape \(n_q, d_q\)"),
        ({"W_1": np.ones((2, 6))}, ValueError,
         r"W_1 has 2 rows but Q has d_q=3 \(Q \(2, 3\), W_1 \(2, 6\)\)"),
        ({"W_2": np.ones((3, 6))}, ValueError, r"W_2 has 3 rows but K has d_k=5"),
        ({"W_2": np.ones((5, 7))}, ValueError, r"W_2 has d_a=7 columns but W_1 has d_a=6"),
        ({"u": np.ones(5)}, ValueError,
         r"u must have shape \(d_a,\) = \(6,\) to match W_1 \(3, 6\); got \(5,\)"),
        ({"u": np.ones((6, 1))}, ValueError, r"u must have shape \(d_a,\)"),
        ({"K": np.array([[np.inf] * 5])}, ValueError, r"K must be finite"),
        ({"Q": np.ones((2, 3), dtype=complex)}, TypeError, r"Q must hold real numbers, not complex"),
    ],
)
def test_additive_scores_bad_inputs(override: dict, error: type, match: str) -> None:
    with pytest.raises(error, match=match):
        additive_scores(**_additive_args(**override))


@pytest.mark.parametrize(
    ("args", "error", "match"),
    [
        ((0, 1, 1, 1), ValueError, r"n_q must be positive; got 0"),
        ((1, -2, 1, 1), ValueError, r"n_k must be positive; got -2"),
        ((1, 1, 1.5, 1), TypeError, r"d_k must be an integer; got float"),
        ((1, 1, 1, None), TypeError, r"d_a must be an integer; got NoneType"),
    ],
)
def test_score_costs_bad_inputs(args: tuple, error: type, match: str) -> None:
    with pytest.raises(error, match=match):
        score_costs(*args)
