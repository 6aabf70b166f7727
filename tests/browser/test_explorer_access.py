"""Every explorer of the book, for every reader: a phone, a keyboard, a screen reader, the dark theme.

The explorers are found in the build (``figure.attnlib-explorer``), so a new one is checked without
naming it here. Per page with explorers:

* 390×844 phone (touch, DPR 2) and 1366×900 desktop: the page does not scroll sideways; every
  control is inside the viewport and at least 44×44 px; no two texts of a plot overlap and none
  runs off its plot.
* Keyboard alone: every control is reached by Tab, shows a focus ring, and operating it (Enter or
  Space on a button, arrow keys on a range) switches the plot, shows the state's panel and announces
  the state's summary in the ``aria-live`` region. Every state has a data table.
* 1366×900, dark colour scheme: the card is dark and the plot's text readable on it (≥ 4.5:1).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from conftest import discover_pages
from test_pages import TIMEOUT_MS, PageLog
from wcag import CONTRAST_HELPERS

from press.print_pdf import SCRIPTS_JS, bounded

REPO_ROOT = Path(__file__).resolve().parents[2]


def _explorer_pages(html_dir: Path) -> list[str]:
    return [p for p in discover_pages(html_dir)
            if 'class="attnlib-explorer"' in (html_dir / p).read_text(encoding="utf-8")]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "explorer_page" in metafunc.fixturenames:
        import os

        html_dir = Path(os.environ.get("BOOK_HTML_DIR", REPO_ROOT / "_build" / "html")).resolve()
        pages = _explorer_pages(html_dir) or ["<no explorer pages in the build>"]
        metafunc.parametrize("explorer_page", pages)


DRAW_ALL = bounded("""async () => { await window.attnlibExplorers.drawAll();
  return [...document.querySelectorAll('figure.attnlib-explorer')].map(f => f.dataset.explorer); }""",
                   "drawing every explorer", 120)

# Per explorer at the current viewport: controls' boxes, plot texts' boxes, the plot's box.
GEOMETRY = """id => {
  const f = document.querySelector(`figure[data-explorer="${id}"]`);
  const box = e => { const r = e.getBoundingClientRect();
    return {x: r.left + scrollX, y: r.top + scrollY, w: r.width, h: r.height}; };
  const controls = [...f.querySelectorAll('button[data-control], input[data-control]')].map(e => ({
    label: e.textContent || e.getAttribute('aria-valuetext'), ...box(e)}));
  const svg = f.querySelector('.attnlib-plot .main-svg');
  const sel = '.xaxislayer-above text, .yaxislayer-above text, .infolayer text, .annotation-text, '
            + '.legendtext, .colorbar text, .bartext-outside';
  const texts = [...f.querySelectorAll(sel)].filter(t => t.textContent.trim()
      && getComputedStyle(t).visibility !== 'hidden' && getComputedStyle(t).display !== 'none'
      && t.getBoundingClientRect().width > 0).map(t => ({text: t.textContent.trim(), ...box(t)}));
  return {controls, texts, plot: svg ? box(svg) : null, figure: box(f)};
}"""


def _overlap(a: dict[str, float], b: dict[str, float]) -> float:
    w = min(a["x"] + a["w"], b["x"] + b["w"]) - max(a["x"], b["x"])
    h = min(a["y"] + a["h"], b["y"] + b["h"]) - max(a["y"], b["y"])
    return max(w, 0.0) * max(h, 0.0)


def _open(browser: Any, base_url: str, path: str, **context_args: Any) -> tuple[Any, Any, PageLog, list[str]]:
    log = PageLog(urlsplit(base_url).netloc)
    context = browser.new_context(**context_args)
    context.set_default_timeout(TIMEOUT_MS)
    page = context.new_page()
    log.attach(context, page)
    page.goto(f"{base_url}/{path}", wait_until="load")
    page.evaluate(SCRIPTS_JS)  # the page's scripts load after its first paint
    ids = page.evaluate(DRAW_ALL)
    assert ids, f"{path}: no explorer found"
    return context, page, log, ids


DEVICES = {
    "phone": {"viewport": {"width": 390, "height": 844}, "is_mobile": True, "has_touch": True,
              "device_scale_factor": 2},
    "desktop": {"viewport": {"width": 1366, "height": 900}},
}


@pytest.mark.parametrize("device", DEVICES)
def test_explorers_fit_the_screen(browser: Any, base_url: str, explorer_page: str, device: str) -> None:
    context, page, log, ids = _open(browser, base_url, explorer_page, **DEVICES[device])
    vw = DEVICES[device]["viewport"]["width"]
    try:
        width = page.evaluate("document.documentElement.scrollWidth")
        assert width <= vw, f"{explorer_page} scrolls sideways at {vw} px: the document is {width} px wide"
        problems = []
        for did in ids:
            g = page.evaluate(GEOMETRY, did)
            for c in g["controls"]:
                if c["w"] < 44 or c["h"] < 44:
                    problems.append(f"{did}: control {c['label']!r} is {c['w']:.0f}×{c['h']:.0f} px (< 44)")
                if c["x"] < 0 or c["x"] + c["w"] > vw + 0.5:
                    problems.append(f"{did}: control {c['label']!r} runs off the screen (x={c['x']:.0f})")
            texts, plot = g["texts"], g["plot"]
            for i, a in enumerate(texts):
                if plot and (a["x"] < plot["x"] - 1 or a["x"] + a["w"] > plot["x"] + plot["w"] + 1):
                    problems.append(f"{did}: text {a['text']!r} runs off the plot")
                for b in texts[i + 1:]:
                    if _overlap(a, b) > 4:
                        problems.append(f"{did}: texts {a['text']!r} and {b['text']!r} overlap")
        assert not problems, f"{explorer_page} at {vw} px:\n" + "\n".join(problems[:25])
        assert not log.page_errors and not log.console_errors, (log.page_errors, log.console_errors)
    finally:
        context.close()


# Tab from just before the figure until focus leaves it: the controls, in order.
TAB_ORDER = """id => {
  const f = document.querySelector(`figure[data-explorer="${id}"]`);
  const start = document.createElement('span');
  start.tabIndex = -1; start.id = 'attnlib-tab-start';
  f.before(start); start.focus();
}"""
ACTIVE = """() => { const e = document.activeElement; const f = e.closest('figure.attnlib-explorer');
  const s = getComputedStyle(e);
  return {inside: f ? f.dataset.explorer : null, control: e.dataset.control ?? null,
          option: e.dataset.option ?? null,
          outline: s.outlineStyle !== 'none' ? parseFloat(s.outlineWidth) : 0}; }"""
SETTLED = """id => { const ex = document.querySelector(`figure[data-explorer="${id}"]`).attnlibExplorer;
  return ex.drawn.join(',') === ex.state.join(',') && (ex.plotted || !ex.gd); }"""
PANEL = """id => { const f = document.querySelector(`figure[data-explorer="${id}"]`);
  const shown = [...f.querySelectorAll('.attnlib-state')].filter(p => !p.hidden);
  const ex = f.attnlibExplorer;
  return {keys: shown.map(p => p.dataset.state),
          summary: shown.length ? shown[0].querySelector('.attnlib-state-summary').textContent : '',
          live: f.querySelector('.attnlib-live').textContent, state: ex.state.join(','),
          drawn: ex.drawn.join(','), plotted: !!ex.plotted || !ex.gd,
          // the panels in the page and those not shown yet (the template explorer.js clones them from)
          tables: [...f.querySelectorAll('.attnlib-state'),
                   ...(ex.more ? ex.more.content.querySelectorAll('.attnlib-state') : [])]
            .map(p => p.querySelectorAll('table tr').length)}; }"""
LOADED = bounded(
    "id => document.querySelector(`figure[data-explorer=\"${id}\"]`).attnlibExplorer.data().then(() => true)",
    "loading an explorer's data", 60)


def test_explorers_work_by_keyboard_alone(browser: Any, base_url: str, explorer_page: str) -> None:
    context, page, log, ids = _open(browser, base_url, explorer_page, viewport={"width": 1366, "height": 900})
    try:
        for did in ids:
            figure = page.locator(f'figure[data-explorer="{did}"]')
            n_controls = figure.evaluate(
                "f => new Set([...f.querySelectorAll('[data-control]')].map(e => e.dataset.control)).size")
            assert page.evaluate(LOADED, did)
            panel = page.evaluate(PANEL, did)
            assert all(rows >= 2 for rows in panel["tables"]), (
                f"{did}: every state needs a data table (rows per state: {panel['tables']})")
            page.evaluate(TAB_ORDER, did)
            reached: dict[str, list[str]] = {}
            for _ in range(200):
                page.keyboard.press("Tab")
                active = page.evaluate(ACTIVE)
                if active["inside"] != did:
                    break
                if active["control"] is not None:
                    assert active["outline"] >= 2, f"{did}: control {active} has no visible focus ring"
                    reached.setdefault(active["control"], []).append(active["option"])
            assert len(reached) == n_controls, (
                f"{did}: Tab reaches controls {sorted(reached)} of {n_controls}")

            for c in range(n_controls):
                before = page.evaluate(PANEL, did)
                button = figure.locator(f'button[data-control="{c}"][aria-pressed="false"]')
                if button.count():
                    target = button.last.element_handle()  # a handle: the locator would follow aria-pressed
                    target.focus()
                    page.keyboard.press("Space" if c % 2 else "Enter")
                    assert target.get_attribute("aria-pressed") == "true"
                else:
                    slider = figure.locator(f'input[type="range"][data-control="{c}"]')
                    slider.focus()
                    at_end = slider.evaluate("e => e.value === e.max")
                    page.keyboard.press("ArrowLeft" if at_end else "ArrowRight")
                page.wait_for_function(SETTLED, arg=did)
                after = page.evaluate(PANEL, did)
                assert after["state"] != before["state"], f"{did}: control {c} changed nothing"
                assert after["keys"] == [after["state"]], f"{did}: shown panels {after['keys']}"
                assert after["live"] and after["live"] == after["summary"], (
                    f"{did}: the live region says {after['live']!r}, the panel {after['summary']!r}")
        assert not log.page_errors and not log.console_errors, (log.page_errors, log.console_errors)
        assert not log.external(), log.external()
    finally:
        context.close()


CONTRAST = "id => {" + CONTRAST_HELPERS + """
  const f = document.querySelector(`figure[data-explorer="${id}"]`);
  const card = f.querySelector('.attnlib-explorer-card') || f;
  const bg = lum(behind(card));
  const plotText = [...f.querySelectorAll(
      '.xaxislayer-above text, .yaxislayer-above text, .infolayer text, .bartext-outside, '
      + '.annotation-text')]
    .filter(t => t.textContent.trim());
  const plot = plotText.map(t => ratio(lum(getComputedStyle(t).fill), bg));
  const html = [...f.querySelectorAll('.attnlib-state:not([hidden]) .attnlib-state-summary, figcaption, '
      + '.attnlib-control-label, .attnlib-state:not([hidden]) th, .attnlib-state:not([hidden]) td')]
    .map(e => ({text: e.textContent.slice(0, 40),
                ratio: ratio(lum(getComputedStyle(e).color), lum(behind(e)))}));
  return {bg, plotMin: plot.length ? Math.min(...plot) : null, html: html.filter(h => h.ratio < 4.5)};
}"""


def test_explorers_follow_the_dark_theme(browser: Any, base_url: str, explorer_page: str) -> None:
    context, page, _, ids = _open(browser, base_url, explorer_page, viewport={"width": 1366, "height": 900},
                                  color_scheme="dark")
    try:
        assert page.evaluate("document.documentElement.dataset.theme") == "dark"
        for did in ids:
            c = page.evaluate(CONTRAST, did)
            assert c["bg"] < 0.05, f"{did}: the card stays light in the dark theme (luminance {c['bg']:.2f})"
            assert not c["html"], f"{did}: text below 4.5:1 on its background in the dark theme: {c['html']}"
            if c["plotMin"] is not None:
                assert c["plotMin"] >= 4.5, f"{did}: plot text at {c['plotMin']:.1f}:1 in the dark theme"
    finally:
        context.close()
