"""The explorers of chapters 6 and 7, operated in headless Chromium on the built pages.

Chapter 6 shows ``stability_explorer()`` and chapter 7 ``online_softmax_explorer(s, v8)`` (the row of
its online-softmax cell) with their default div ids; a missing one FAILS. Every control is operated with
the keyboard alone (``choose``). Expected values come from attnlib, never from the page:
* each renders with plotly.js from the book, with its native buttons and range input;
* stability: float32 and c = 100 leaves the textbook bars empty (NaN) and the stable bars at the
  softmax of (3, 1, 0); the shown state, announced in the live region, says attnlib's summary;
* online softmax: after each key read, the bars are the weights attnlib's recurrence gives; after the
  last key the rescaled bars equal the softmax, the never-rescaled ones do not;
* no console error, no uncaught exception and no request to another host.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from explorer_helpers import assert_books_plotly, assert_clean, choose, plain, shown_state
from test_pages import PageLog

from attnlib.core import softmax
from attnlib.interactive._render import _rounded as as_plotted  # the figure's rounding
from attnlib.interactive.code_explorers import STABILITY_SHIFTS, online_softmax_explorer, stability_explorer
from attnlib.tiled import online_softmax_steps

STABILITY, ONLINE = "stability-explorer", "online-explorer"
HINT = ("chapter 6 must show stability_explorer() and chapter 7 online_softmax_explorer(s, v8) "
        "(attnlib.interactive.code_explorers) with their default div ids; insert them and rebuild the book.")
_STATE_JS = """
id => { const gd = document.getElementById(id);
  return { visible: gd.data.map(t => t.visible !== false),
           y: gd.data.map(t => Array.from(t.y, v => v === undefined ? null : v)) }; }
"""


def _row() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(40)  # chapter 7's row of eight scores and its values
    return rng.standard_normal(8), rng.standard_normal((8, 2))


@pytest.fixture
def chapter6(open_page: Any) -> tuple[Any, PageLog]:
    return open_page("book/06_implementation.html", [STABILITY], missing_hint=HINT)


@pytest.fixture
def chapter7(open_page: Any) -> tuple[Any, PageLog]:
    return open_page("book/07_complexity.html", [ONLINE], missing_hint=HINT)


def _assert_state(page: Any, div_id: str, key: tuple[int, int], summary: str, announced: bool = True) -> None:
    shown = shown_state(page, div_id)
    assert shown["count"] == 1 and shown["key"] == f"{key[0]},{key[1]}"
    assert plain(shown["summary"]) == summary
    assert plain(shown["live"]) == (summary if announced else ""), "the live region announces changes"


def test_the_stability_explorer_shows_the_overflow(chapter6: tuple[Any, PageLog]) -> None:
    page, log = chapter6
    assert_books_plotly(page)
    figure = page.locator(f'figure[data-explorer="{STABILITY}"]')
    assert figure.locator("button.attnlib-option").all_inner_texts() == ["float16", "float32", "float64"]
    slider = figure.locator('input[type="range"]')
    assert slider.get_attribute("max") == str(len(STABILITY_SHIFTS) - 1)
    expected = stability_explorer()
    right = [float(f"{w:.2g}") for w in softmax(np.array([3.0, 1.0, 0.0]))]  # plotted as said, 2 digits

    start = page.evaluate(_STATE_JS, STABILITY)
    assert start["visible"] == [False, False, True, True, False, False], "float32 at the start"
    np.testing.assert_array_equal(start["y"][2], right)  # c = 0: both agree

    i = STABILITY_SHIFTS.index(100)
    choose(page, STABILITY, 1, i)
    state = page.evaluate(_STATE_JS, STABILITY)
    assert state["y"][2] == [None, None, None], "float32 overflows at c = 100: the textbook bars are NaN"
    np.testing.assert_array_equal(state["y"][3], right)
    _assert_state(page, STABILITY, (1, i), expected.states[(1, i)].summary)

    choose(page, STABILITY, 0, 2)  # float64 at the same c: no overflow
    state = page.evaluate(_STATE_JS, STABILITY)
    assert state["visible"] == [False, False, False, False, True, True]
    np.testing.assert_array_equal(state["y"][4], right)
    _assert_state(page, STABILITY, (2, i), expected.states[(2, i)].summary)
    assert_clean(log)


def test_the_online_explorer_reads_the_keys_one_at_a_time(chapter7: tuple[Any, PageLog]) -> None:
    page, log = chapter7
    assert_books_plotly(page)
    s, v = _row()
    expected = online_softmax_explorer(s, v)
    for r, rescale in enumerate((True, False)):
        if r:
            choose(page, ONLINE, 0, r)
        for t, step in enumerate(online_softmax_steps(s, v, rescale=rescale)):
            start = (r, t) == (0, 0)
            if not start:
                choose(page, ONLINE, 1, t)
            state = page.evaluate(_STATE_JS, ONLINE)
            assert state["visible"] == [True, r == 0, r == 1]
            bars = np.array(state["y"][1 + r], dtype=float)
            np.testing.assert_array_equal(bars[:t + 1], as_plotted(step.weights))
            assert (bars[t + 1:] == 0).all(), "unread keys are at 0"
            _assert_state(page, ONLINE, (r, t), expected.states[(r, t)].summary, announced=not start)
        final = np.array(page.evaluate(_STATE_JS, ONLINE)["y"][1 + r], dtype=float)
        assert np.allclose(final, softmax(s), atol=1e-3) == rescale
    assert_clean(log)
