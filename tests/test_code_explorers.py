"""attnlib.tiled.online_softmax_steps and attnlib.interactive.code_explorers (chapters 6 and 7)."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from cases import case
from hypothesis import given, settings
from hypothesis import strategies as st

from attnlib.core import softmax
from attnlib.interactive._render import PLOTLY_MIMETYPE
from attnlib.interactive.code_explorers import STABILITY_SHIFTS, online_softmax_explorer, stability_explorer
from attnlib.tiled import online_softmax_steps

_scores = st.lists(st.floats(-30, 30, allow_nan=False), min_size=1, max_size=12)


@settings(max_examples=60, deadline=None)
@given(_scores, st.integers(1, 13), st.integers(0, 2**32 - 1))
def test_the_last_step_is_the_softmax_for_any_block(scores, block, seed) -> None:
    s = np.array(scores)
    v = np.random.default_rng(seed).standard_normal((s.size, 3))
    steps = online_softmax_steps(s, v, block=block)
    assert [st_.keys_read for st_ in steps] == [min(s.size, b) for b in range(block, s.size + block, block)]
    last = steps[-1]
    np.testing.assert_allclose(last.weights, softmax(s), rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(last.output, softmax(s) @ v, rtol=1e-10, atol=1e-12)
    for step in steps:  # each state is the softmax of the keys read so far, relative to their maximum
        seen = s[:step.keys_read]
        assert step.m == seen.max()
        np.testing.assert_allclose(step.terms, np.exp(seen - seen.max()), rtol=1e-12)
        np.testing.assert_allclose(step.l, np.exp(seen - seen.max()).sum(), rtol=1e-12)


def test_the_correction_is_applied_only_when_the_maximum_grows() -> None:
    steps = online_softmax_steps([2.0, 0.0, 3.0, 5.0], np.eye(4))
    assert [s.correction for s in steps] == [0.0, 1.0, math.exp(-1), math.exp(-2)]
    assert [s.m for s in steps] == [2.0, 2.0, 3.0, 5.0]


def test_never_rescaling_is_the_mistake_the_exercise_names() -> None:
    s = np.array([2.0, 0.0, 3.0, 5.0])
    wrong = online_softmax_steps(s, np.eye(4), rescale=False)
    assert wrong[-1].l == pytest.approx(3 + math.exp(-2)), "each term relative to the maximum when it came"
    assert not np.allclose(wrong[-1].weights, softmax(s))
    assert wrong[-1].weights[0] > softmax(s)[0], "the early keys keep too much weight"
    # when the maximum never grows, rescaling changes nothing
    falling = np.array([5.0, 3.0, 0.0, 2.0])
    np.testing.assert_allclose(online_softmax_steps(falling, np.eye(4), rescale=False)[-1].weights,
                               softmax(falling), rtol=1e-12)


BAD_STEPS = [
    case("scores-2d", lambda: online_softmax_steps(np.zeros((2, 2)), np.zeros((2, 1))), ValueError,
         "scores must be one query's scores", "(2, 2)"),
    case("scores-empty", lambda: online_softmax_steps([], np.zeros((0, 1))), ValueError, "n >= 1", "(0,)"),
    case("values-rows", lambda: online_softmax_steps([1.0, 2.0], np.zeros((3, 1))), ValueError,
         "values must have shape (n, d_v) = (2, d_v)", "(3, 1)"),
    case("values-1d", lambda: online_softmax_steps([1.0, 2.0], [1.0, 2.0]), ValueError, "values", "(2,)"),
    case("scores-nan", lambda: online_softmax_steps([1.0, np.nan], np.zeros((2, 1))), ValueError, "scores"),
    case("scores-str", lambda: online_softmax_steps(["a", "b"], np.zeros((2, 1))), TypeError, "scores"),
    case("block-zero", lambda: online_softmax_steps([1.0], np.zeros((1, 1)), block=0), ValueError,
         "block must be positive", "0"),
    case("block-float", lambda: online_softmax_steps([1.0], np.zeros((1, 1)), block=1.5), TypeError,
         "block must be an integer"),
    case("rescale-int", lambda: online_softmax_steps([1.0], np.zeros((1, 1)), rescale=1), TypeError,
         "rescale must be True or False"),
    case("explorer-one-key", lambda: online_softmax_explorer([1.0], np.zeros((1, 1))), ValueError,
         "2 to 16 keys", "1"),
    case("explorer-wide", lambda: online_softmax_explorer([1.0, 2.0], np.zeros((2, 5))), ValueError,
         "at most 4 columns", "(2, 5)"),
    case("shifts-one", lambda: stability_explorer(shifts=[0]), ValueError, "at least 2 values"),
    case("shifts-order", lambda: stability_explorer(shifts=[0, 10, 5]), ValueError, "strictly increasing",
         "[0.0, 10.0, 5.0]"),
    case("shifts-negative", lambda: stability_explorer(shifts=[-1, 0]), ValueError, "each shift",
         "non-negative", "-1"),
    case("shifts-str", lambda: stability_explorer(shifts="0 10"), TypeError, "shifts must be a sequence"),
    case("shifts-inf", lambda: stability_explorer(shifts=[0, math.inf]), ValueError, "each shift", "finite"),
]


@pytest.mark.parametrize(("call", "exc", "match"), BAD_STEPS)
def test_bad_inputs_get_a_clear_error(call, exc, match) -> None:
    with pytest.raises(exc, match=match):
        call()


# --------------------------------------------------------------------------- the stability explorer
def test_every_stability_state_says_what_numpy_computes() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the explorer itself raises no NumPy warning
        sf = stability_explorer()
    base = np.array([3.0, 1.0, 0.0])
    right = ", ".join(f"{w:.2g}" for w in softmax(base))
    assert right == "0.84, 0.11, 0.042"
    wrong_at = []
    for k, dt in enumerate((np.float16, np.float32, np.float64)):
        limit = math.log(float(np.finfo(dt).max))
        for i, c in enumerate(STABILITY_SHIFTS):
            summary = sf.states[(k, i)].summary
            assert summary.startswith(f"{np.dtype(dt).name}, c = {c:g}:"), summary
            assert summary.endswith(f"give {right}.") or summary.endswith(f"still gives {right}."), summary
            x = (base + c).astype(dt)
            with np.errstate(over="ignore"):
                e = np.exp(x)
                total = e.sum()
            exp_overflows = c + 3 > limit
            sum_overflows = bool(np.isfinite(e).all() and not np.isfinite(total))
            assert bool(np.isfinite(e).all()) == (not exp_overflows)
            assert ("exp overflows" in summary) == exp_overflows, summary
            assert ("the sum of the exponentials overflows" in summary) == sum_overflows, summary
            textbook = [row[2] for row in sf.states[(k, i)].tables[0].rows]
            assert ("NaN" in textbook) == exp_overflows, (dt, c, textbook)
            if sum_overflows:
                assert textbook == ["0", "0", "0"], "a finite number over an infinite sum is 0"
            wrong_at.append(exp_overflows or sum_overflows)
    # every dtype goes wrong at one of the shifts and not at the first: the slider shows each edge
    n = len(STABILITY_SHIFTS)
    for k in range(3):
        said = wrong_at[k * n:(k + 1) * n]
        assert not said[0] and said[-1] and said == sorted(said)
    assert wrong_at[1], "float16 at c = 8: only the sum overflows, the case the explorer names"


def test_the_stability_figure_restyles_to_each_state() -> None:
    sf = stability_explorer()
    steps = sf.fig.layout.sliders[0].steps
    for i, step in enumerate(steps):
        ys = step.args[0]["y"]
        for k in range(3):
            naive, stable = ys[2 * k], ys[2 * k + 1]
            np.testing.assert_allclose(stable, softmax(np.array([3.0, 1.0, 0.0])), rtol=0.05)
            assert (None in naive) == ("NaN" in [r[2] for r in sf.states[(k, i)].tables[0].rows])
    buttons = sf.fig.layout.updatemenus[0].buttons
    assert [b.args[0]["visible"] for b in buttons] == [
        [j // 2 == k for j in range(6)] for k in range(3)]


# --------------------------------------------------------------------------- the online-softmax explorer
@pytest.fixture(scope="module")
def row():
    rng = np.random.default_rng(40)  # chapter 7's row
    return rng.standard_normal(8), rng.standard_normal((8, 2))


def test_each_online_state_is_the_recurrence_after_that_key(row) -> None:
    s, v = row
    sf = online_softmax_explorer(s, v)
    exact = softmax(s)
    for r, rescale in enumerate((True, False)):
        run = online_softmax_steps(s, v, rescale=rescale)
        for t, step in enumerate(run):
            state = sf.states[(r, t)]
            assert f"ℓ = {step.l:.3g}" in state.summary
            rows = state.tables[0].rows
            assert [x[3] for x in rows[:t + 1]] == [f"{w:.4f}" for w in step.weights]
            assert all(x[3] == "unread" for x in rows[t + 1:])
            assert [x[4] for x in rows] == [f"{w:.4f}" for w in exact]
            step_args = sf.fig.layout.sliders[0].steps[t].args[0]
            np.testing.assert_allclose(step_args["y"][1 + r][:t + 1], step.weights)
    assert "equals the softmax" in sf.states[(0, 7)].summary
    assert "is not the softmax's" in sf.states[(1, 7)].summary
    assert "keep too much weight" in sf.states[(1, 7)].summary


@pytest.mark.parametrize("kind", ["stability", "online"])
def test_html_is_deterministic_offline_and_described(kind, row) -> None:
    def build():
        return stability_explorer(div_id="t-st") if kind == "stability" else online_softmax_explorer(*row)
    sf, again = build(), build()
    html = sf.to_html()
    assert html == again.to_html(), "two calls must give the same HTML (nbval compares it)"
    assert "<script src" not in html.lower() and "https://" not in html
    assert "<figcaption>" in html and f'aria-describedby="{sf.div_id}-alt"' in html
    data, _ = sf._repr_mimebundle_()
    assert set(data) == {"text/html", PLOTLY_MIMETYPE, "text/plain"}
