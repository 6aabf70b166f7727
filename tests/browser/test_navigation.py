"""The sidebar toggles a reader sees open the chapter list and the page contents at every width.

Below 992 px the chapter list (primary sidebar) is a drawer opened by the "Toggle primary sidebar"
button of the article header; below 1200 px the page contents (secondary sidebar) is one too. The
themes bind their handlers to the first toggle of each kind in the page, a hidden one, so
``book/_static/nav-toggles.js`` forwards clicks from the others. Each test clicks the button a reader
can see, as a reader would (a real mouse click at its position), and looks at what opened.
"""

from __future__ import annotations

import posixpath
import re
from pathlib import Path
from typing import Any

import pytest
from bs4 import BeautifulSoup

from press.print_pdf import READY_JS, SCRIPTS_JS

PAGE = "book/02_qkv.html"
TIMEOUT_MS = 15_000


def _open(browser: Any, base_url: str, width: int) -> tuple[Any, Any]:
    context = browser.new_context(viewport={"width": width, "height": 800})
    context.set_default_timeout(TIMEOUT_MS)
    page = context.new_page()
    page.goto(f"{base_url}/{PAGE}", wait_until="load")
    page.evaluate(SCRIPTS_JS)  # the page's scripts load after its first paint
    return context, page


def _visible_toggle(page: Any, kind: str) -> Any:
    toggles = page.locator(f".{kind}-toggle").filter(visible=True)
    assert toggles.count() == 1, f"{toggles.count()} visible .{kind}-toggle buttons"
    return toggles.first


@pytest.mark.parametrize("width", [390, 800])
def test_the_chapter_list_opens_on_a_narrow_screen(width: int, browser: Any, base_url: str) -> None:
    context, page = _open(browser, base_url, width)
    try:
        dialog = page.locator("#pst-primary-sidebar-modal")
        assert not dialog.evaluate("d => d.open")
        button = _visible_toggle(page, "primary")
        button.click()
        page.wait_for_function("document.querySelector('#pst-primary-sidebar-modal').open")
        link = dialog.locator("a[href*='03_worked_examples']").first
        assert link.is_visible(), "the drawer is open but the chapter list is not in it"
        box = link.bounding_box()
        assert box and 0 <= box["x"] and box["x"] + box["width"] <= width, box
        page.keyboard.press("Escape")
        page.wait_for_function("!document.querySelector('#pst-primary-sidebar-modal').open")
        assert page.evaluate("document.activeElement.classList.contains('primary-toggle')")
        # and a chapter in the list opens
        button.click()
        page.wait_for_function("document.querySelector('#pst-primary-sidebar-modal').open")
        link.click()
        page.wait_for_url("**/03_worked_examples.html")
    finally:
        context.close()


@pytest.mark.parametrize("width", [390, 800, 1100])
def test_the_page_contents_open_below_1200_px(width: int, browser: Any, base_url: str) -> None:
    context, page = _open(browser, base_url, width)
    try:
        _visible_toggle(page, "secondary").click()
        page.wait_for_function("document.querySelector('#pst-secondary-sidebar-modal').open")
        entry = page.locator("#pst-secondary-sidebar-modal a.nav-link").filter(visible=True)
        assert entry.count() >= 3, "the page contents drawer opened without its entries"
        page.keyboard.press("Escape")
        page.wait_for_function("!document.querySelector('#pst-secondary-sidebar-modal').open")
    finally:
        context.close()


def test_on_a_wide_screen_the_toggle_hides_and_shows_the_chapter_list(browser: Any, base_url: str) -> None:
    context, page = _open(browser, base_url, 1366)
    try:
        sidebar = page.locator("#pst-primary-sidebar")
        assert sidebar.is_visible()
        button = _visible_toggle(page, "primary")
        button.click()
        page.wait_for_function("document.querySelector('#pst-primary-sidebar').classList"
                               ".contains('pst-sidebar-hidden')")
        button.click()
        page.wait_for_function("!document.querySelector('#pst-primary-sidebar').classList"
                               ".contains('pst-sidebar-hidden')")
        assert not page.evaluate("document.querySelector('#pst-primary-sidebar-modal').open")
    finally:
        context.close()


def test_formulas_are_not_tab_stops(toc_pages: list[str], browser: Any, base_url: str) -> None:
    """A keyboard user tabs to links and controls, not to each of hundreds of formulas; screen readers
    still read each formula (MathML, written at build time by book/press/mathml_pages.py)."""
    context = browser.new_context()
    context.set_default_timeout(90_000)
    counted = 0
    try:
        page = context.new_page()
        for rel in toc_pages:
            page.goto(f"{base_url}/{rel}", wait_until="load")
            page.evaluate(SCRIPTS_JS)  # the page's scripts load after its first paint
            if not page.locator(".math").count():
                continue
            page.evaluate(READY_JS)
            total, tabbable, spoken = page.evaluate("""() => {
                const all = [...document.querySelectorAll('.math')];
                // a formula that scrolls sideways in its own box is a tab stop on purpose (scroll-stops.js)
                return [all.length, all.filter(e => e.tabIndex >= 0 && e.scrollWidth <= e.clientWidth).length,
                        all.filter(e => e.querySelector('math')
                                        && !e.querySelector('math [tabindex]')).length];
            }""")
            assert total > 0 and tabbable == 0 and spoken == total, (rel, total, tabbable, spoken)
            counted += total
    finally:
        context.close()
    assert counted > 1000, counted  # the chapters hold well over a thousand formulas


# A jump to a heading: the section lands under the sticky header (the page's scroll-padding), or as far as
# the page can scroll (the first heading of a page, the last ones). Sections lay out only near the screen
# (content-visibility in attnbook.css); book/_static/lean/fragments.js scrolls again until the target
# holds still. Without it, jumps within chapters 1, 2, 6, 7 and 5 stopped 1,600-5,800 px from their heading.
LANDING_JS = """async (id) => {
    const el = document.getElementById(id), root = document.scrollingElement;
    let last = null;
    for (let i = 0; i < 60; i++) {  // until the target has held still for three frames
        await new Promise(r => requestAnimationFrame(r));
        const top = el.getBoundingClientRect().top;
        if (last !== null && Math.abs(top - last) < 0.5 && i > 4) break;
        last = top;
    }
    return {top: el.getBoundingClientRect().top,
            margin: (parseFloat(getComputedStyle(el).scrollMarginTop) || 0)
                    + (parseFloat(getComputedStyle(root).scrollPaddingTop) || 0),
            atTop: root.scrollTop === 0,
            atBottom: root.scrollTop + root.clientHeight >= root.scrollHeight - 1};
}"""


def _landed(got: dict[str, Any]) -> bool:
    if abs(got["top"] - got["margin"]) <= 2:
        return True
    return (got["atBottom"] and got["top"] > got["margin"]) or (got["atTop"] and got["top"] < got["margin"])


@pytest.mark.parametrize("width", [390, 1366])
def test_a_jump_to_any_heading_lands_on_it(width: int, toc_pages: list[str], browser: Any,
                                           base_url: str) -> None:
    context = browser.new_context(viewport={"width": width, "height": 844})
    context.set_default_timeout(TIMEOUT_MS)
    missed, jumps = [], 0
    try:
        page = context.new_page()
        for rel in toc_pages:
            page.goto(f"{base_url}/{rel}", wait_until="load")
            page.evaluate(SCRIPTS_JS)
            ids = page.eval_on_selector_all(".bd-article section[id]", "els => els.map(e => e.id)")
            # long jumps over sections not drawn yet: from the top to the end, back to the second, to the
            # last but one... (jumping from each heading to the next would draw every section on the way)
            down, up = range(len(ids) - 1, 0, -1), range(1, len(ids))
            order = [ids[i] for pair in zip(down, up, strict=True) for i in pair]
            for target in order[:len(ids)]:
                page.evaluate("id => { location.hash = id; }", target)
                got = page.evaluate(LANDING_JS, target)
                jumps += 1
                if not _landed(got):
                    missed.append((rel, target, round(got["top"]), got["margin"]))
            if len(ids) > 2:  # and a reader arriving from another page with the heading in the address
                target = ids[len(ids) // 2]
                page.goto(f"{base_url}/{rel}#{target}", wait_until="load")
                got = page.evaluate(LANDING_JS, target)
                jumps += 1
                if not _landed(got):
                    missed.append((rel, "load#" + target, round(got["top"]), got["margin"]))
    finally:
        context.close()
    assert jumps > 100, jumps
    assert not missed, missed


CHAPTER = re.compile(r"book/\d\d_[^/]+\.html")  # a core chapter: book/04_scaling.html
DEEPER = re.compile(r"book/\d\d[a-z]_[^/]+\.html")  # its going-deeper page: book/04a_scaling_deeper.html


def _links(html_dir: Path, page: str) -> dict[str, str | None]:
    """Where a page's "previous" and "next" buttons go, as paths relative to the build."""
    soup = BeautifulSoup((html_dir / page).read_text(encoding="utf-8"), "html.parser")
    found: dict[str, str | None] = {}
    for key, cls in (("prev", "left-prev"), ("next", "right-next")):
        a = soup.select_one(f".prev-next-area a.{cls}")
        href = None if a is None else posixpath.join(posixpath.dirname(page), a["href"])
        found[key] = None if href is None else posixpath.normpath(href)
    return found


def test_previous_and_next_keep_a_chapter_reader_on_the_core_path(toc_pages: list[str],
                                                                   html_dir: Path) -> None:
    """Chapter to chapter without a detour; a going-deeper page leads back to its chapter, on to the next."""
    path = [p for p in toc_pages if not DEEPER.fullmatch(p)]
    deeper = [p for p in toc_pages if DEEPER.fullmatch(p)]
    assert deeper and sum(bool(CHAPTER.fullmatch(p)) for p in path) >= 7
    for i, page in enumerate(path):
        if not CHAPTER.fullmatch(page):
            continue
        links = _links(html_dir, page)
        assert links["prev"] == path[i - 1], f"{page}: previous is {links['prev']}, not {path[i - 1]}"
        assert links["next"] == path[i + 1], f"{page}: next is {links['next']}, not {path[i + 1]}"
    for page in deeper:
        chapter = "book/" + re.sub(r"^(\d\d)[a-z]_.*", r"\1", page.split("/")[-1])
        prev = _links(html_dir, page)["prev"] or ""
        assert prev.startswith(chapter + "_") or DEEPER.fullmatch(prev), f"{page}: previous is {prev}"
