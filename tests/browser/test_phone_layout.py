"""Every page fits a phone: nothing makes the page scroll sideways, wide content scrolls in its own box.

At 390×844 (a phone: mobile viewport, touch, device pixel ratio 2) every page of the toc is opened,
scrolled from top to bottom (so that whatever loads near the viewport, formulas or explorers, has
loaded) and measured once every formula is typeset and every explorer has drawn:

* the document never scrolls sideways: ``document.documentElement.scrollWidth`` is at most the
  viewport's width;
* every element of the article that reaches past the viewport (a code cell, an output, a table, a
  formula, an explorer) lies inside a box of its own that scrolls (``overflow-x: auto`` or
  ``scroll``), and nothing is cut off: an element reaching past the box that clips it
  (``overflow: hidden``, as the theme's formula boxes and SVG plots do) is content a reader cannot
  see at all.

At 1366×900 the same holds for the text column: no output is wider than the column without a
scroll box of its own. The explorers (``figure.attnlib-explorer``) are measured like everything else.

attnlib's tables (``.table()``, ``.describe()``) are HTML tables in the book: a caption, a header
row, a header cell per row, numbers right-aligned; on a phone a wide one scrolls in its output box,
which the theme makes a tab stop, and the row labels stay in view; in dark mode it uses the dark
theme's colours.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import nbformat
import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeoutError
from wcag import CONTRAST_HELPERS

from press.print_pdf import READY_JS, SCRIPTS_JS, bounded

REPO_ROOT = Path(__file__).resolve().parents[2]

PHONE = {"viewport": {"width": 390, "height": 844}, "is_mobile": True, "has_touch": True,
         "device_scale_factor": 2}
DESKTOP = {"viewport": {"width": 1366, "height": 900}}
TIMEOUT_MS = 45_000
# Waits, not budgets: the book typesets formulas in small batches after the first paint, which on a
# loaded 2-core machine took 40 s for chapter 4's ~580 formulas.
SETTLE_MS = 150_000

# Bring each lazily loaded thing into view (explorers draw, images load, formulas a MathJax build has not
# typeset yet are typeset near the viewport), then back to the top, where the measurements are taken. One
# stop per such element, not one per screen: the API reference is hundreds of screens long at 390 px.
SCROLL_THROUGH = bounded("""async () => {
  const lazy = document.querySelectorAll(
    'figure.attnlib-explorer, img[loading="lazy"], .math:not(:has(math, mjx-container))');
  for (const el of lazy) {
    el.scrollIntoView({block: 'center'});
    await new Promise(r => requestAnimationFrame(() => setTimeout(r, 30)));
  }
  window.scrollTo(0, 0);
}""", "scrolling to each lazily loaded element", 120)

# Ready to measure: every formula shown (MathML in each .math; an mjx-container in a build that kept MathJax)
# and every explorer drawn
# (the explorer script marks a drawn figure attnlib-drawn, a failed one attnlib-failed; a Plotly
# figure drawn by plotly.js itself has a .main-svg; an explorer without a plot has nothing to draw).
DRAWN = """f => f.classList.contains('attnlib-drawn') || f.classList.contains('attnlib-failed')
  || !!f.querySelector('.main-svg') || !f.querySelector('.attnlib-plot, .plotly-graph-div')"""
PENDING = f"""(withMath) => {{
  const drawn = {DRAWN};
  const math = withMath ? [...document.querySelectorAll('span.math, div.math')] : [];
  return [...math.filter(m => !m.querySelector('mjx-container, math'))
             .map(m => 'formula ' + m.textContent.slice(0, 40)),
          ...[...document.querySelectorAll('figure.attnlib-explorer')].filter(f => !drawn(f))
             .map(f => 'explorer ' + f.id)];
}}"""

# What overflows, measured in the page. ``column`` true: the outputs (and explorers) of the text
# column (.bd-article), measured against the column; false: everything in the article and its
# footer, against the viewport. An element past the limit is fine inside a scroll box (which is then
# measured as an element itself); it is cut off if it reaches past the box that clips it; it widens the
# page if nothing clips it. Inside an SVG plot only its text is measured (Plotly's groups include
# invisible drag and hover areas). Reported: the outermost offenders only.
OVERFLOWS = """(column) => {
  const vw = document.documentElement.clientWidth;
  const article = document.querySelector('.bd-article');
  const col = article.getBoundingClientRect();
  const [lo, hi] = column ? [col.left, col.right] : [0, vw];
  const scope = document.querySelector('.bd-article-container') || document.body;
  const elements = column ? article.querySelectorAll('.cell_output, .cell_output *')
                          : scope.querySelectorAll('*');
  const scrolls = el => ['auto', 'scroll'].includes(getComputedStyle(el).overflowX);
  const clipper = el => {
    for (let a = el.parentElement; a && a !== document.body; a = a.parentElement) {
      const cs = getComputedStyle(a);
      if (cs.display === 'inline' || cs.display === 'contents') continue;  // overflow does not apply
      if (cs.overflowX !== 'visible') return a;
    }
    return null;
  };
  const name = el => el.tagName.toLowerCase() + (el.id ? '#' + el.id : '') +
    (typeof el.className === 'string' && el.className.trim()
      ? '.' + el.className.trim().split(/\\s+/).slice(0, 3).join('.') : '');
  const where = el => {
    const fig = el.closest('figure.attnlib-explorer');
    const sec = el.closest('section[id]');
    return fig ? ' (explorer ' + (fig.id || '') + ')' : sec ? ' (section #' + sec.id + ')' : '';
  };
  const found = [], bad = new Set();
  for (const el of elements) {
    if (el.closest('mjx-assistive-mml')) continue;  // visually hidden MathML for screen readers
    const mjx = el.closest('mjx-container, math');
    if (mjx && mjx !== el) continue;  // a formula is measured whole, not glyph by glyph
    if (el.ownerSVGElement && (el.tagName !== 'text' || !el.textContent.trim()
                               || getComputedStyle(el).opacity === '0')) continue;
    if (el.parentElement && bad.has(el.parentElement)) { bad.add(el); continue; }
    const r = el.getBoundingClientRect();
    if (r.width === 0 || r.height === 0 || getComputedStyle(el).visibility === 'hidden') continue;
    const box = clipper(el);
    const past = r.left < lo - 1 || r.right > hi + 1;
    let problem = null;
    if (box && !scrolls(box)) {
      const b = box.getBoundingClientRect();
      if (r.left < b.left - 1 || r.right > b.right + 1) problem = 'cut off by ' + name(box);
    } else if (past && !box) {
      problem = 'widens the page';
    }
    if (!problem) continue;
    bad.add(el);
    found.push(`${name(el)}${where(el)} spans ${Math.round(r.left)}..${Math.round(r.right)} px ` +
      `(limit ${Math.round(lo)}..${Math.round(hi)}), ${problem}: ` +
      JSON.stringify((el.textContent || '').trim().replace(/\\s+/g, ' ').slice(0, 50)));
  }
  return {scrollWidth: document.documentElement.scrollWidth, viewport: vw, found};
}"""


def _settle(page: Any, rel: str, with_math: bool) -> None:
    page.evaluate(SCROLL_THROUGH)
    try:
        page.wait_for_function(f"(m) => ({PENDING})(m).length === 0", arg=with_math, timeout=SETTLE_MS)
    except PlaywrightTimeoutError:
        pending = page.evaluate(PENDING, with_math)[:5]
        pytest.fail(f"{rel}: not settled after {SETTLE_MS // 1000} s, pending: {pending}", pytrace=False)


def _measure_every_page(browser: Any, base_url: str, pages: list[str], options: dict, column: bool
                        ) -> tuple[list[str], int]:
    context = browser.new_context(**options)
    context.set_default_timeout(TIMEOUT_MS)
    problems, measured = [], 0
    try:
        page = context.new_page()
        for rel in pages:
            page.goto(f"{base_url}/{rel}", wait_until="load")
            page.evaluate(SCRIPTS_JS)  # the page's scripts load after its first paint
            _settle(page, rel, with_math=not column)
            result = page.evaluate(OVERFLOWS, column)
            measured += 1
            if result["scrollWidth"] > result["viewport"]:
                problems.append(f"{rel}: the page scrolls sideways, document {result['scrollWidth']} px wide "
                                f"in a {result['viewport']} px viewport")
            problems += [f"{rel}: {f}" for f in result["found"]]
    finally:
        context.close()
    return problems, measured


def test_no_page_scrolls_sideways_on_a_phone(toc_pages: list[str], browser: Any, base_url: str) -> None:
    problems, measured = _measure_every_page(browser, base_url, toc_pages, PHONE, column=False)
    assert measured == len(toc_pages) >= 10, (measured, toc_pages)
    assert not problems, "at 390 px:\n" + "\n".join(problems)


def test_no_output_is_wider_than_the_column_on_a_desktop(toc_pages: list[str], browser: Any, base_url: str
                                                         ) -> None:
    """Outputs only: a code cell's output, a table, an explorer (the prose is checked on the phone)."""
    problems, measured = _measure_every_page(browser, base_url, toc_pages, DESKTOP, column=True)
    assert measured == len(toc_pages)
    assert not problems, "at 1366 px:\n" + "\n".join(problems)


# --------------------------------------------------------------------------- attnlib's tables
TABLES = "() => {" + CONTRAST_HELPERS + """
  return [...document.querySelectorAll('.cell_output .attnlib-table')].map(w => {
  const t = w.querySelector('table'), out = w.closest('.output');
  const cells = [...t.querySelectorAll('tbody td')], nums = cells.filter(td => td.classList.contains('num'));
  const rowHead = t.querySelector('tbody th');
  return {
    caption: t.caption ? t.caption.textContent : null,
    colHeads: [...t.querySelectorAll('thead th')].map(th => th.getAttribute('scope')),
    rowHeads: [...t.querySelectorAll('tbody tr')]
      .map(tr => tr.firstElementChild.tagName + ':' + tr.firstElementChild.getAttribute('scope')),
    numbers: nums.length,
    numbersRight: nums.every(td => getComputedStyle(td).textAlign === 'right'),
    text: t.textContent,
    wide: t.getBoundingClientRect().width > out.clientWidth + 1,
    outScrolls: ['auto', 'scroll'].includes(getComputedStyle(out).overflowX)
      && out.scrollWidth > out.clientWidth,
    outTabIndex: out.tabIndex,
    rowHeadSticky: rowHead ? getComputedStyle(rowHead).position === 'sticky' : false,
    fg: lum(getComputedStyle(rowHead || t).color), bg: lum(behind(rowHead || t)),
  };
  });
}"""


def _stored_tables(chapter: str) -> int:
    """How many attnlib tables a chapter's stored outputs hold (each is shown as one HTML table)."""
    nb = nbformat.read(REPO_ROOT / "book" / f"{chapter}.ipynb", as_version=4)
    return sum(out.get("data", {}).get("text/html", "").count('class="attnlib-table"')
               for cell in nb.cells if cell.cell_type == "code" for out in cell.get("outputs", []))


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_the_models_table_is_an_html_table_that_scrolls_in_its_box(browser: Any, base_url: str,
                                                                    scheme: str) -> None:
    context = browser.new_context(**PHONE, color_scheme=scheme)
    context.set_default_timeout(TIMEOUT_MS)
    try:
        page = context.new_page()
        page.goto(f"{base_url}/book/07_complexity.html", wait_until="load")
        page.evaluate(SCRIPTS_JS)  # the page's scripts load after its first paint
        # As a reader reaches each table: scroll-stops.js gives a box its tab stop once its section is drawn.
        for table in page.locator(".cell_output .attnlib-table").all():
            table.scroll_into_view_if_needed()
            page.evaluate(READY_JS)
        tables = page.evaluate(TABLES)
    finally:
        context.close()
    stored = _stored_tables("07_complexity")
    assert stored >= 2 and len(tables) == stored, (
        f"chapter 7 shows {len(tables)} attnlib tables as HTML; its notebook stores {stored}")
    for t in tables:
        assert t["caption"], t["text"][:80]
        assert t["colHeads"] and set(t["colHeads"]) == {"col"}, t["colHeads"]
        assert set(t["rowHeads"]) == {"TH:row"}, t["rowHeads"]
        assert t["numbers"] > 0 and t["numbersRight"], t["text"][:80]
        ratio = (max(t["fg"], t["bg"]) + 0.05) / (min(t["fg"], t["bg"]) + 0.05)
        assert ratio >= 4.5, f"{scheme}: row labels at contrast {ratio:.2f}:1 in {t['caption']!r}"
    models = next(t for t in tables if t["caption"].startswith("attention scores at training context"))
    # the chapter cites the configurations' sources in its prose, once; the table holds only numbers
    assert "Brown et al." not in models["text"] and "brown2020language" not in models["text"], models["text"]
    assert models["wide"] and models["outScrolls"], "at 390 px the models table scrolls in its output box"
    assert models["outTabIndex"] == 0, "a scrolling output box must be a tab stop (keyboard scrolling)"
    assert models["rowHeadSticky"], "the model names should stay in view while the table scrolls"
    if scheme == "dark":
        assert models["bg"] < 0.1, "in dark mode the table should sit on the dark page, not on a light card"


# The boxes of one section: whether it is drawn, and each box's tab stop and whether it scrolls sideways.
SECTION_BOXES = """(id) => {
  const section = document.getElementById(id);
  const boxes = [...section.querySelectorAll('pre, .cell_output > .output')];
  // the section itself is visible; what the browser skips is its content
  return {drawn: boxes[0].checkVisibility({contentVisibilityAuto: true}),
          boxes: boxes.map(b => ({tab: b.getAttribute('tabindex'), wide: b.scrollWidth > b.clientWidth}))};
}"""


def test_a_box_far_down_the_page_becomes_a_tab_stop_when_its_section_is_drawn(browser: Any,
                                                                            base_url: str) -> None:
    """scroll-stops.js measures the boxes of a section the browser has not drawn yet (attnbook.css:
    content-visibility) only once it is drawn: measuring it earlier forced the browser to lay it out,
    1.2 s of main-thread work on chapter 4 under Lighthouse's phone. A reader scrolling to it finds
    every box that scrolls sideways a tab stop, and every other box none."""
    context = browser.new_context(**PHONE)
    context.set_default_timeout(TIMEOUT_MS)
    try:
        page = context.new_page()
        page.goto(f"{base_url}/book/06_implementation.html", wait_until="load")
        page.evaluate(SCRIPTS_JS)
        page.evaluate(READY_JS)
        ids = page.evaluate("""() => [...document.querySelectorAll('.bd-article > section > section')]
            .filter(s => getComputedStyle(s).contentVisibility === 'auto' && s.querySelector('pre'))
            .map(s => s.id)""")
        far = ids[-2]  # a section with code, well below the first screen
        before = page.evaluate(SECTION_BOXES, far)
        assert not before["drawn"], f"section {far} is drawn before the reader comes near it"
        assert all(b["tab"] is None for b in before["boxes"]), before["boxes"]
        # Scrolled to, the section is drawn and its boxes measured (the sections above it, drawn on the
        # way, may then move it off screen again: the tab stops stay).
        page.locator(f"#{far}").scroll_into_view_if_needed()
        page.wait_for_function("""(id) => [...document.getElementById(id)
            .querySelectorAll('pre, .cell_output > .output')]
            .every(b => (b.scrollWidth > b.clientWidth) === (b.tabIndex === 0))""", arg=far)
        boxes = page.evaluate(SECTION_BOXES, far)["boxes"]
    finally:
        context.close()
    assert any(b["wide"] for b in boxes), f"no box of {far} scrolls sideways at 390 px: pick another section"
    # A box that fits is no tab stop: no tabindex (a pre's or div's default) or -1.
    wrong = [b for b in boxes if (b["tab"] == "0") != b["wide"] or b["tab"] not in (None, "0", "-1")]
    assert not wrong, f"{far}: boxes with the wrong tab stop once drawn: {wrong}"

