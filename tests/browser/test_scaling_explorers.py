"""The interactive figures of chapter 4 ("Why divide by √d_k"), operated in headless Chromium.

The chapter must show ``scaling_explorer()`` and ``variance_explorer()`` with their default div
ids. If either figure is missing from the built page these tests FAIL (never skip): a missing
explorer is a broken chapter. Every control is operated with the keyboard alone (``choose``: focus,
Home, arrow keys). Expected values come from attnlib, never from the page:
* both figures render with plotly.js from the book, each with its native range inputs;
* on the scaling explorer, d_k = 512 and then τ = 0 (raw scores) makes the plotted max weight
  rise, to the weights attnlib computes, and the shown state (its summary, announced in the live
  region, and its table) says the same numbers; moving d_k again keeps the scores raw (the two
  controls work together);
* on the variance explorer, moving the slider changes both histograms to np.histogram of attnlib's
  samples for the new d_k, and the state shows the variances and counts attnlib computes;
* while doing so, no console error, no uncaught exception and no request to another host.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from explorer_helpers import assert_books_plotly, assert_clean, choose, plain, shown_state
from test_pages import PageLog

from attnlib import stats
from attnlib.core import scaled_dot_product_attention
from attnlib.interactive._render import _rounded as as_plotted  # the figure's rounding
from attnlib.interactive.live import scaling_draws
from attnlib.interactive.scaling_explorers import (
    FACTORS,
    SCALING_D_KS,
    VARIANCE_D_KS,
    histogram_edges,
    variance_samples,
)

PAGE = "book/04_scaling.html"
SCALING = "scaling-explorer"
VARIANCE = "variance-explorer"

MISSING_HINT = (
    "the chapter must show scaling_explorer() and variance_explorer() with their default div ids "
    "(attnlib.interactive.scaling_explorers); insert them and rebuild the book."
)

_STATE_JS = """
id => { const gd = document.getElementById(id);
  return { visible: gd.data.map(t => t.visible !== false),
           x: gd.data.map(t => Array.from(t.x)), y: gd.data.map(t => Array.from(t.y)),
           text: gd.data.map(t => t.text ? Array.from(t.text) : null) }; }
"""


def _g3(x: float) -> str:
    """3 significant digits, no exponent: how the explorer writes a variance (1,040, not 1.04e+03)."""
    rounded = float(f"{x:.3g}")
    return f"{rounded:,.0f}" if abs(rounded) >= 1000 else f"{x:.3g}"


def _weights(d_k: int, scale: float | None) -> np.ndarray:
    q, K = scaling_draws(8, 0)  # the defaults of scaling_explorer: n_keys=8, seed=0
    _, W = scaled_dot_product_attention(q[None, :d_k], K[:, :d_k], np.eye(8), scale=scale,
                                        return_weights=True)
    return W[0]


@pytest.fixture
def chapter(open_page: Any) -> tuple[Any, PageLog]:
    return open_page(PAGE, [SCALING, VARIANCE], missing_hint=MISSING_HINT)


def _assert_weights_shown(page: Any, k: int, d_k: int, w: np.ndarray, raw: bool) -> None:
    """The plot shows ``w`` at ``d_ks[k]`` only, and the state panel and live region say its numbers."""
    state = page.evaluate(_STATE_JS, SCALING)
    assert state["visible"] == [i == k for i in range(len(SCALING_D_KS))]
    np.testing.assert_array_equal(state["y"][k], as_plotted(w))
    assert state["text"][k] == [f"{v:.2f}" for v in w]
    shown = shown_state(page, SCALING)
    assert shown["count"] == 1 and shown["key"] == f"{k},{0 if raw else len(FACTORS) - 1}"
    summary = plain(shown["summary"])
    start = "scale 1 (raw scores):" if raw else f"scale 1/√{d_k} = "
    assert summary.startswith(f"d_k = {d_k}, {start}")
    assert f"the largest weight is {float(stats.max_weight(w)):.3f}, on key k{int(np.argmax(w))}" in summary
    assert f"the entropy is {float(stats.entropy(w)):.3f} nats" in summary
    assert plain(shown["live"]) == summary, "the live region announces the shown state"
    (table,) = shown["tables"]
    assert table[0] == ["key", "score q · k", "scaled score", "weight"]
    assert [row[3] for row in table[1:]] == [f"{v:.4f}" for v in w]


def test_figures_render_with_the_books_plotly(chapter: tuple[Any, PageLog]) -> None:
    page, log = chapter
    assert_books_plotly(page)
    for fig, steps in ((SCALING, [SCALING_D_KS, FACTORS]), (VARIANCE, [VARIANCE_D_KS])):
        sliders = page.locator(f'figure[data-explorer="{fig}"] input[type="range"]')
        assert sliders.count() == len(steps)
        for c, options in enumerate(steps):
            assert sliders.nth(c).get_attribute("max") == str(len(options) - 1)
        assert page.locator(f"#{fig} .slider-group, #{fig} .updatemenu-button").count() == 0
        assert page.locator(f"#{fig} .bars .point").count() > 0
    assert_clean(log)


def test_switching_scaling_off_at_512_raises_the_max_weight(chapter: tuple[Any, PageLog]) -> None:
    page, log = chapter
    page.locator(f"#{SCALING}").scroll_into_view_if_needed()
    k512, k4 = SCALING_D_KS.index(512), SCALING_D_KS.index(4)

    choose(page, SCALING, 0, k512)
    scaled = _weights(512, None)  # the page starts fully scaled, τ = 1
    _assert_weights_shown(page, k512, 512, scaled, raw=False)

    choose(page, SCALING, 1, FACTORS.index(0.0))  # τ = 0: raw scores
    raw = _weights(512, 1.0)
    _assert_weights_shown(page, k512, 512, raw, raw=True)
    plotted = page.evaluate(_STATE_JS, SCALING)["y"][k512]
    assert max(plotted) > max(scaled), "switching the scaling off must raise the max weight"
    assert max(plotted) > 0.99

    choose(page, SCALING, 0, k4)  # another d_k: the scores stay raw
    _assert_weights_shown(page, k4, 4, _weights(4, 1.0), raw=True)
    assert page.locator(f'figure[data-explorer="{SCALING}"] input[data-control="0"]').get_attribute(
        "aria-valuetext") == "4"
    assert_clean(log)


def test_variance_slider_changes_the_histograms(chapter: tuple[Any, PageLog]) -> None:
    page, log = chapter
    page.locator(f"#{VARIANCE}").scroll_into_view_if_needed()
    samples = variance_samples(VARIANCE_D_KS, 20_000, 0)  # the defaults of variance_explorer
    before = page.evaluate(_STATE_JS, VARIANCE)
    first = VARIANCE_D_KS[0]
    assert before["y"][1] == np.histogram(samples[first] / math.sqrt(first),
                                          bins=histogram_edges(first, scaled=True))[0].tolist()
    assert shown_state(page, VARIANCE)["key"] == "0"

    k = VARIANCE_D_KS.index(256)
    choose(page, VARIANCE, 0, k)
    after = page.evaluate(_STATE_JS, VARIANCE)
    assert after["y"] != before["y"] and after["x"][0] != before["x"][0]
    raw = samples[256]
    counts = []
    for panel, values in ((0, raw), (1, raw / 16.0)):
        counts.append(np.histogram(values, bins=histogram_edges(256, scaled=panel == 1))[0].tolist())
        assert after["y"][panel] == counts[-1]
    shown = shown_state(page, VARIANCE)
    assert shown["key"] == str(k)
    summary = plain(shown["summary"])
    for values, theory in ((raw, "theory d_k = 256"), (raw / 16.0, "theory 1")):
        est = stats.variance_with_ci(values)
        ci = f"{_g3(est.estimate)} (95% CI {_g3(est.low)} to {_g3(est.high)})"
        assert f"sample variance {ci}, {theory}" in summary
    assert plain(shown["live"]) == summary
    variances, per_bin = shown["tables"]
    assert [row[1] for row in variances[1:]] == [f"{stats.variance_with_ci(v).estimate:.4g}"
                                                 for v in (raw, raw / 16.0)]
    assert [int(row[2]) for row in per_bin[1:]] == counts[0] == counts[1]
    assert_clean(log)
