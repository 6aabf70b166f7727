"""What the explorer tests share: opening a chapter until its figures render, and the checks.

Imported the way ``test_pages`` is (``tests/browser`` is on ``sys.path`` for pytest). The
``open_page`` fixture of ``conftest.py`` wraps :func:`open_page` for the tests.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from test_pages import TIMEOUT_MS, PageLog

from press.print_pdf import SCRIPTS_JS, bounded

PLOTLY_BUNDLE = "/_static/vendor/plotly/plotly-cartesian-4.1.1.min.js"

# True once every figure id is a Plotly graph that has drawn its traces.
RENDERED_JS = """
ids => ids.every(id => { const gd = document.getElementById(id);
  return gd && gd._fullData && gd._fullData.length > 0 && gd.querySelector('svg.main-svg'); })
"""
# Every explorer drawn, as printing does (they draw lazily, when they near the viewport).
DRAW_ALL_JS = bounded("() => window.attnlibExplorers && window.attnlibExplorers.drawAll().then(() => true)",
                      "drawing every explorer", 120)
# The figure ids that are not on the page at all.
PRESENT_JS = "ids => ids.filter(id => !document.getElementById(id))"


@contextmanager
def open_page(
    browser: Any,
    base_url: str,
    html_dir: Path,
    path: str,
    figure_ids: Sequence[str],
    missing_hint: str | None = None,
) -> Iterator[tuple[Any, PageLog]]:
    """``path`` of the book in a fresh context, once the figures ``figure_ids`` have rendered.

    Yields ``(page, log)``; the context is closed afterwards. With ``missing_hint``, a figure id
    absent from the page fails at once with that hint instead of timing out.
    """
    assert (html_dir / path).is_file(), f"{path} is missing from the build"
    log = PageLog(urlsplit(base_url).netloc)
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.set_default_timeout(TIMEOUT_MS)
    try:
        page = context.new_page()
        log.attach(context, page)
        page.goto(f"{base_url}/{path}", wait_until="load")
        page.evaluate(SCRIPTS_JS)  # the page's scripts load after its first paint
        if missing_hint is not None:
            missing = page.evaluate(PRESENT_JS, list(figure_ids))
            if missing:
                pytest.fail(
                    f"{path} has no element with id {', '.join(missing)}: {missing_hint}",
                    pytrace=False,
                )
        # Explorers draw lazily, when they near the viewport: draw them all, as printing does.
        page.evaluate(DRAW_ALL_JS)
        page.wait_for_function(RENDERED_JS, arg=list(figure_ids))
        yield page, log
    finally:
        context.close()


def assert_clean(log: PageLog) -> None:
    """No request to another host, no uncaught exception, no console error."""
    assert not log.external(), f"requests to other hosts: {log.external()}"
    assert not log.page_errors, f"uncaught exceptions: {log.page_errors}"
    assert not log.console_errors, f"console errors: {log.console_errors}"


def assert_books_plotly(page: Any) -> None:
    """The page loads plotly.js once, the book's own cartesian bundle, and only through explorer.js."""
    scripts = page.evaluate("() => Array.from(document.scripts).map(s => s.src).filter(Boolean)")
    plotly = [s for s in scripts if "plotly" in s]
    assert len(plotly) == 1 and PLOTLY_BUNDLE in plotly[0], plotly
    head = page.evaluate("() => Array.from(document.head.querySelectorAll('script[src]:not([async])'))"
                         ".map(s => s.src).filter(s => s.includes('plotly'))")
    assert not head, f"plotly.js must not be a blocking script of the page: {head}"


def choose(page: Any, div_id: str, control: int, option: int) -> None:
    """Choose ``option`` of ``control`` in the explorer around ``div_id`` with the keyboard alone.

    A button group: Tab-free focus on the option's button, then Enter. A range input: focus, Home,
    then ArrowRight ``option`` times. Waits until the plot (if any) shows the chosen state.
    """
    figure = page.locator(f'figure[data-explorer="{div_id}"]')
    button = figure.locator(f'button[data-control="{control}"][data-option="{option}"]')
    if button.count():
        button.focus()
        page.keyboard.press("Enter")
    else:
        slider = figure.locator(f'input[type="range"][data-control="{control}"]')
        slider.focus()
        page.keyboard.press("Home")
        for _ in range(option):
            page.keyboard.press("ArrowRight")
    page.wait_for_function(
        """([id, c, k]) => {
             const ex = document.querySelector(`figure[data-explorer="${id}"]`).attnlibExplorer;
             return ex.state[c] === k && (!ex.gd || (ex.plotted && ex.drawn[c] === k)); }""",
        arg=[div_id, control, option],
    )
    page.evaluate(
        "id => document.querySelector(`figure[data-explorer=\"${id}\"]`).attnlibExplorer.chain", div_id
    )


def shown_state(page: Any, div_id: str) -> dict[str, Any]:
    """The shown state panel of an explorer: key, summary, lines, tables (lists of rows), live text."""
    return page.evaluate(
        """id => { const f = document.querySelector(`figure[data-explorer="${id}"]`);
             const shown = [...f.querySelectorAll('.attnlib-state')].filter(p => !p.hidden);
             const p = shown[0];
             const text = (sel) => { const e = p.querySelector(sel); return e ? e.textContent : ''; };
             return { count: shown.length, key: p.dataset.state, summary: text('.attnlib-state-summary'),
                      lines: text('.attnlib-state-lines'),
                      tables: [...p.querySelectorAll('table')].map(t => [...t.rows].map(
                        r => [...r.cells].map(c => c.textContent))),
                      live: f.querySelector('.attnlib-live').textContent }; }""",
        div_id,
    )


def plain(text: str) -> str:
    """``text`` with its non-breaking spaces made plain spaces."""
    return text.replace("\u00a0", " ")
