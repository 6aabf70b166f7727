"""Every page of the book stays light: at most 1.5 MB transferred, everything it loads included.

Each page of the toc (and the root redirect page) is loaded in Chromium at a phone's size and scrolled
to the bottom, so what loads only near the viewport (the explorers' plotly.js, MathJax's fonts, images)
loads too; every response is counted, plotly.js, MathJax and fonts included. "Transferred" is what a
static host sends: text (HTML, CSS, JavaScript, JSON, SVG) gzip-compressed, as GitHub Pages, Read the
Docs and nginx's gzip do, binaries (images, fonts) as they are. The page's own weight (its HTML and
images, uncompressed) is checked separately, so a chapter cannot hide a heavy figure behind compression.

The same loads check what ``book/press/lean_pages.py`` promises: no response is an error (a 404 for
``favicon.ico`` included), the theme's 1.5 MB ``fontawesome.js`` and Font Awesome's web font files are
never fetched, and every icon still shows, in light and dark mode, at phone and desktop width.
"""

from __future__ import annotations

import gzip
import io
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO_ROOT, read_toc
from playwright.sync_api import Error as PlaywrightError
from playwright.sync_api import TimeoutError as PlaywrightTimeoutError
from sections import DRAW_SECTIONS_JS

from press.print_pdf import FONTS_READY_JS, READY_JS, SCRIPTS_JS, bounded  # READY_JS: formulas typeset

LIMIT = 1_500_000  # bytes, transferred
TEXT_TYPES = ("text/", "javascript", "json", "svg", "xml")
PHONE = {"viewport": {"width": 412, "height": 823}, "device_scale_factor": 1.75, "is_mobile": True,
         "has_touch": True}
PAGES = ["index.html", *read_toc(REPO_ROOT / "_toc.yml")]
NEVER = ("/_static/scripts/fontawesome.js", "/_static/vendor/fontawesome/")
SCROLL_JS = bounded("""async () => {
  const step = Math.max(200, window.innerHeight * 0.8);
  for (let y = 0; y < document.documentElement.scrollHeight; y += step) {
    window.scrollTo(0, y);
    await new Promise(r => setTimeout(r, 60));
  }
  window.scrollTo(0, document.documentElement.scrollHeight);
}""", "scrolling through the page", 120)


def transfer_size(body: bytes, content_type: str) -> int:
    """Bytes a static host sends for ``body``: gzip (level 6, the common default) for text types."""
    if any(t in content_type for t in TEXT_TYPES):
        return len(gzip.compress(body, 6))
    return len(body)


def load_everything(browser: Any, base_url: str, rel: str) -> dict[str, Any]:
    """Load ``rel`` at a phone's size, scroll to the bottom, wait for MathJax and the network to settle.

    Returns the responses as ``{url: (status, transferred bytes, content type)}`` and the page's
    HTML and image bytes (uncompressed).
    """
    context = browser.new_context(**PHONE)
    context.set_default_timeout(60_000)
    responses: list[Any] = []
    try:
        page = context.new_page()
        page.on("response", lambda response: responses.append(response))
        page.goto(f"{base_url}/{rel}", wait_until="load")
        if rel == "index.html":
            page.wait_for_url(lambda url: not url.endswith("/index.html"))
            page.wait_for_load_state("load")
        page.evaluate(SCRIPTS_JS)  # the page's scripts load after its first paint
        page.evaluate(READY_JS)
        page.evaluate(SCROLL_JS)
        try:
            page.wait_for_load_state("networkidle", timeout=15_000)
        except PlaywrightTimeoutError:  # what loaded by then is counted; a slow idle is no failure
            pass
        page.evaluate(READY_JS)
        seen: dict[str, tuple[int, int, str]] = {}
        own = 0
        for response in responses:
            if not response.url.startswith(base_url):
                continue
            kind = response.headers.get("content-type", "")
            try:
                body = response.body()
            except PlaywrightError:  # a redirect has no body
                body = b""
            seen[response.url] = (response.status, transfer_size(body, kind), kind)
            if kind.startswith("text/html") or "/_images/" in response.url:
                own += len(body)
        return {"responses": seen, "own": own}
    finally:
        context.close()


@pytest.mark.parametrize("rel", PAGES)
def test_page_weight(rel: str, browser: Any, base_url: str, html_dir: Path) -> None:
    assert (html_dir / rel).is_file(), f"{rel} is missing from the build"
    found = load_everything(browser, base_url, rel)
    responses = found["responses"]
    errors = {url: status for url, (status, _, _) in responses.items() if status >= 400}
    assert not errors, f"{rel}: requests that failed: {errors}"
    fetched = [url for url in responses if any(n in url for n in NEVER)]
    assert not fetched, f"{rel} fetched Font Awesome's full bundle or web fonts: {fetched}"
    total = sum(size for _, size, _ in responses.values())
    largest = sorted(((size, url.rsplit('/', 1)[-1][:50]) for url, (_, size, _) in responses.items()),
                     reverse=True)[:4]
    assert total <= LIMIT, (
        f"{rel}: {total / 1e6:.2f} MB transferred (gzip for text, all resources) > {LIMIT / 1e6} MB; "
        f"largest: {largest}"
    )
    assert found["own"] <= LIMIT, f"{rel}: its HTML and images weigh {found['own'] / 1e6:.2f} MB"


def test_favicon_ico_is_served(base_url: str) -> None:
    """Browsers ask for /favicon.ico on pages without an icon link; it exists and is an icon."""
    from urllib.request import urlopen

    with urlopen(f"{base_url}/favicon.ico") as response:  # the local test server
        data = response.read()
    from PIL import Image

    image = Image.open(io.BytesIO(data))
    assert image.format == "ICO" and max(image.info.get("sizes", {image.size})) >= (32, 32), image.info


# ------------------------------------------------------------------------------------------------ icons
ICONS_JS = """() => [...document.querySelectorAll('[class*="fa-"]')]
  .filter(e => [...e.classList].some(c => /^fa-/.test(c)) && e.getClientRects().length
               && getComputedStyle(e).visibility !== 'hidden')
  .map(e => { const r = e.getBoundingClientRect();
              return {cls: e.className, x: r.left, y: r.top, w: r.width, h: r.height}; })
  .filter(i => i.x >= 0 && i.y >= 0 && i.x + i.w <= window.innerWidth && i.y + i.h <= window.innerHeight)"""
# Each icon's glyph (its ::before, or an admonition title's ::after) must come from the icon font: drawn
# with the font, it is not as wide as when the browser falls back to a monospace font (as it would for a
# glyph missing from the font: tofu has ink too, so the pixel check alone would not notice).
GLYPHS_JS = """() => {
  const ctx = document.createElement('canvas').getContext('2d');
  const width = (font, text) => { ctx.font = font; return ctx.measureText(text).width; };
  const out = [];
  const items = [...document.querySelectorAll('[class*="fa-"]')].map(e => [e, '::before'])
    .concat([...document.querySelectorAll('.admonition-title')].map(e => [e, '::after']));
  for (const [el, pseudo] of items) {
    const style = getComputedStyle(el, pseudo);
    const m = /^"(.+)"$/.exec(style.content);
    if (!m || !/[\ue000-\uf8ff]/.test(m[1])) continue;
    const family = style.fontFamily, weight = style.fontWeight;
    if (width(`${weight} 40px ${family}, monospace`, m[1]) === width('40px monospace', m[1]))
      out.push(`${el.className} ${pseudo} U+${m[1].codePointAt(0).toString(16)}`);
  }
  return [...new Set(out)];
}"""
FIRST_ICON_TITLE_JS = """() => [...document.querySelectorAll('.admonition-title')]
  .findIndex(t => /[\ue000-\uf8ff]/.test(getComputedStyle(t, '::after').content))"""
HIDE_ICONS = "[class*='fa-']::before, .admonition-title::after { visibility: hidden !important; }"


def _ink(page: Any, box: dict[str, float]) -> bytes:
    pad = 3
    clip = {"x": max(box["x"] - pad, 0), "y": max(box["y"] - pad, 0),
            "width": box["w"] + 2 * pad, "height": max(box["h"], 14) + 2 * pad}
    return page.screenshot(clip=clip, animations="disabled")


@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("width", [390, 1366])
def test_every_icon_shows(scheme: str, width: int, browser: Any, base_url: str) -> None:
    """Each icon on screen (header buttons, theme switch, page contents, prev/next) and each admonition
    title icon draws something: its pixels differ from the same spot with the icon glyphs hidden."""
    context = browser.new_context(viewport={"width": width, "height": 900}, color_scheme=scheme)
    try:
        page = context.new_page()
        blank: list[str] = []
        checked = 0
        for rel in ("book/01_why_attention.html", "book/06_implementation.html"):
            page.goto(f"{base_url}/{rel}", wait_until="load")
            page.evaluate(SCRIPTS_JS)  # the page's scripts load after its first paint
            page.evaluate(READY_JS)  # formulas typeset: nothing moves between the two screenshots
            page.evaluate(DRAW_SECTIONS_JS)  # every section drawn (sections.py)
            page.evaluate(FONTS_READY_JS)
            missing = page.evaluate(GLYPHS_JS)
            assert not missing, f"{rel}: icons whose glyph is not in the icon font: {missing}"
            assert page.evaluate("document.documentElement.dataset.theme") == scheme
            screens = [page.evaluate(ICONS_JS)]  # the header's and the page's buttons, at the top
            assert len(screens[0]) >= 5, f"{rel}: only {len(screens[0])} icons on screen: {screens[0]}"
            # Admonition titles draw their icon with ::after (the Font Awesome font, no class).
            index = page.evaluate(FIRST_ICON_TITLE_JS)
            title = page.locator(".admonition-title").nth(max(index, 0))
            if index >= 0:
                title.evaluate("t => t.scrollIntoView({block: 'center'})")  # clear of the sticky header
                box = title.bounding_box()
                screens.append([{"cls": "admonition-title::after", "x": box["x"], "y": box["y"], "w": 40,
                                 "h": box["height"]}])
            for number, icons in enumerate(screens):
                if number == 0:
                    page.evaluate("window.scrollTo(0, 0)")
                else:
                    title.evaluate("t => t.scrollIntoView({block: 'center'})")
                shown = [_ink(page, i) for i in icons]
                style = page.add_style_tag(content=HIDE_ICONS)
                hidden = [_ink(page, i) for i in icons]
                style.evaluate("s => s.remove()")
                for icon, a, b in zip(icons, shown, hidden, strict=True):
                    checked += 1
                    if icon["w"] <= 0 or a == b:
                        blank.append(f"{rel}: {icon['cls']} ({icon['w']:.0f}x{icon['h']:.0f} px)")
        assert not blank, f"icons that draw nothing ({scheme}, {width} px): {blank}"
        assert checked >= 10, checked
    finally:
        context.close()
