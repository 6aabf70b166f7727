"""The interactive figures of chapter 3 ("Why divide by √d_k"), operated in headless Chromium.

The chapter must show ``scaling_explorer()`` and ``variance_explorer()`` with their default div
ids. If either figure is missing from the built page these tests FAIL (never skip): a missing
explorer is a broken chapter. Expected values come from attnlib, never from the page:
* both figures render with plotly.js from the book;
* on the scaling explorer, clicking d_k = 512 on the d_k slider and then t = 0 (raw scores) on the
  scale slider makes the plotted max weight rise, to the weights attnlib computes; moving d_k again
  keeps the scores raw (the two sliders work together);
* on the variance explorer, moving the slider changes both histograms to np.histogram of attnlib's
  samples for the new d_k, and the variances written in the figure;
* while doing so, no console error, no uncaught exception and no request to another host.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from explorer_helpers import assert_books_plotly, assert_clean, plain
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

PAGE = "book/03_scaling.html"
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
           notes: gd.layout.annotations.filter(a => a.visible !== false).map(a => a.text),
           shown: Array.from(gd.querySelectorAll('.annotation-text'))
                       .filter(e => e.closest('.annotation').style.display !== 'none')
                       .map(e => e.textContent) }; }
"""


def _weights(d_k: int, scale: float | None) -> np.ndarray:
    q, K = scaling_draws(8, 0)  # the defaults of scaling_explorer: n_keys=8, seed=0
    _, W = scaled_dot_product_attention(q[None, :d_k], K[:, :d_k], np.eye(8), scale=scale,
                                        return_weights=True)
    return W[0]


@pytest.fixture
def chapter(open_page: Any) -> tuple[Any, PageLog]:
    return open_page(PAGE, [SCALING, VARIANCE], missing_hint=MISSING_HINT)


def _slider_label(page: Any, div_id: str, slider: int, step: int) -> Any:
    return page.locator(f"#{div_id} .slider-group").nth(slider).locator(".slider-label-group").nth(step)


def test_figures_render_with_the_books_plotly(chapter: tuple[Any, PageLog]) -> None:
    page, log = chapter
    assert_books_plotly(page)
    assert page.locator(f"#{SCALING} .slider-group").count() == 2
    assert page.locator(f"#{SCALING} .slider-group").nth(0).locator(
        ".slider-label-group").count() == len(SCALING_D_KS)
    assert page.locator(f"#{SCALING} .slider-group").nth(1).locator(
        ".slider-label-group").count() == len(FACTORS)
    assert page.locator(f"#{VARIANCE} .slider-group .slider-label-group").count() == len(VARIANCE_D_KS)
    assert page.locator(f"#{VARIANCE} .bars .point").count() > 0
    assert_clean(log)


def test_switching_scaling_off_at_512_raises_the_max_weight(chapter: tuple[Any, PageLog]) -> None:
    page, log = chapter
    page.locator(f"#{SCALING}").scroll_into_view_if_needed()
    k512, k4 = SCALING_D_KS.index(512), SCALING_D_KS.index(4)

    # the slider's labels sit under its touch area, which takes the click: force it through
    _slider_label(page, SCALING, 0, k512).click(force=True)
    page.wait_for_function("([id, k]) => document.getElementById(id).data[k].visible === true",
                           arg=[SCALING, k512])
    state = page.evaluate(_STATE_JS, SCALING)
    assert state["visible"] == [k == k512 for k in range(len(SCALING_D_KS))]
    scaled = _weights(512, None)  # the page starts fully scaled, t = 1
    np.testing.assert_array_equal(state["y"][k512], as_plotted(scaled))
    assert any(f"max weight {float(stats.max_weight(scaled)):.3f}" in plain(t) for t in state["shown"])

    _slider_label(page, SCALING, 1, FACTORS.index(0.0)).click(force=True)  # t = 0: raw scores
    page.wait_for_function(
        "([id, k, m]) => Math.max(...document.getElementById(id).data[k].y) > m",
        arg=[SCALING, k512, float(scaled.max())],
    )
    state = page.evaluate(_STATE_JS, SCALING)
    raw = _weights(512, 1.0)
    np.testing.assert_array_equal(state["y"][k512], as_plotted(raw))
    assert max(state["y"][k512]) > max(scaled), "switching the scaling off must raise the max weight"
    assert max(state["y"][k512]) > 0.99
    shown = " ".join(plain(t) for t in state["shown"])
    assert "d_k = 512" in shown and "raw scores" in shown
    assert f"max weight {float(stats.max_weight(raw)):.3f}" in shown
    assert f"entropy {float(stats.entropy(raw)):.3f} nats" in shown

    _slider_label(page, SCALING, 0, k4).click(force=True)  # another d_k: the scores stay raw
    page.wait_for_function("([id, k]) => document.getElementById(id).data[k].visible === true",
                           arg=[SCALING, k4])
    state = page.evaluate(_STATE_JS, SCALING)
    assert state["visible"] == [k == k4 for k in range(len(SCALING_D_KS))]
    np.testing.assert_array_equal(state["y"][k4], as_plotted(_weights(4, 1.0)))
    assert any("d_k = 4" in plain(t) and "raw scores" in plain(t) for t in state["shown"])
    assert_clean(log)


def test_variance_slider_changes_the_histograms(chapter: tuple[Any, PageLog]) -> None:
    page, log = chapter
    page.locator(f"#{VARIANCE}").scroll_into_view_if_needed()
    samples = variance_samples(VARIANCE_D_KS, 20_000, 0)  # the defaults of variance_explorer
    before = page.evaluate(_STATE_JS, VARIANCE)
    first = VARIANCE_D_KS[0]
    assert before["y"][1] == np.histogram(samples[first] / math.sqrt(first),
                                          bins=histogram_edges(first, scaled=True))[0].tolist()

    k = VARIANCE_D_KS.index(256)
    _slider_label(page, VARIANCE, 0, k).click(force=True)
    page.wait_for_function(
        "([id, x0]) => document.getElementById(id).data[0].x[0] !== x0",  # the raw bins widen
        arg=[VARIANCE, before["x"][0][0]],
    )
    after = page.evaluate(_STATE_JS, VARIANCE)
    assert after["y"] != before["y"] and after["x"][0] != before["x"][0]
    raw = samples[256]
    for panel, values in ((0, raw), (1, raw / 16.0)):
        counts, _ = np.histogram(values, bins=histogram_edges(256, scaled=panel == 1))
        assert after["y"][panel] == counts.tolist()
    shown = " ".join(plain(t) for t in after["shown"])
    assert "theory: Var = d_k = 256" in shown and "theory: Var = 1" in shown
    assert f"sample variance {stats.variance_with_ci(raw).estimate:.3g} " in shown
    assert_clean(log)
