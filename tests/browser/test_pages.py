"""Every page of the built book, opened in headless Chromium.

What a passing run guarantees, for each HTML page of the book found under ``_build/html`` (one test
per page, named after it; the toc's pages must all be among them, so discovery cannot pass vacuously):

* no console message of type ``error`` and no uncaught exception (``pageerror``);
* no request to any host but the local server: every request is recorded and anything not served
  by the book is aborted and reported by URL, so the pages work offline and leak nothing to a CDN;
* no local request that fails or answers with HTTP >= 400 (missing static files, fonts, images);
* math is rendered: on pages whose HTML has ``class="math"`` elements, each holds the MathML the
  build wrote (book/press/mathml_pages.py) and nothing else, drawn with a width, no ``merror`` and no
  undefined macro in red; the page loads no MathJax and its math font (STIX Two Math) is loaded; no
  raw TeX (``\\frac``, ``\\sqrt``, ...) is left visible in the prose outside math and code;
* the page has a non-empty ``<h1>`` in its article, and every internal link on it (sidebar, toc,
  cross-references) leads to a page that exists and, if it names an anchor, to an id on that page.

A separate test follows the "next" button of the first page in the browser.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urljoin, urlsplit

from playwright.sync_api import Error as PlaywrightError
from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

from press.print_pdf import SCRIPTS_JS, bounded

# Generous: chapter 4 weighs ~9 MB and a loaded 2-core machine took over 15 s to reach network idle on it
# once. These waits are not budgets; the load budget is tests/browser/test_page_weight.py's.
TIMEOUT_MS = 45_000
NETWORK_IDLE_MS = 10_000
# Raw TeX that would be visible if math were not parsed or not typeset.
RAW_TEX = re.compile(
    r"\\(?:frac|sqrt|operatorname|softmax|top|cdot|sum|exp|tilde|mathbb|mathrm|left|right)\b"
)
MATH_CLASS = re.compile(r"""class=["'](?:[^"']*\s)?math(?:\s[^"']*)?["']""")
REFRESH = re.compile(r"""http-equiv=["']refresh["'][^>]*content=["'][^"']*url=([^"']+)["']""", re.IGNORECASE)
ID_ATTR = re.compile(r"""\b(?:id|name)=["']([^"']+)["']""")


def test_discovery_covers_the_toc(toc_pages: list[str], discovered_pages: list[str]) -> None:
    assert len(toc_pages) >= 2, f"_toc.yml lists too few files to be parsed right: {toc_pages}"
    missing = sorted(set(toc_pages) - set(discovered_pages))
    assert not missing, f"toc pages missing from the discovered pages {discovered_pages}: {missing}"


class PageLog:
    """Everything a page did that the tests look at, recorded from Playwright events."""

    def __init__(self, origin: str) -> None:
        self.origin = origin
        self.requests: list[str] = []
        self.blocked: list[str] = []
        self.console_errors: list[str] = []
        self.console_warnings: list[str] = []
        self.page_errors: list[str] = []
        self.failed: list[str] = []

    def is_local(self, url: str) -> bool:
        scheme = urlsplit(url).scheme
        if scheme in ("data", "blob", "about"):
            return True  # no network involved
        return scheme == "http" and urlsplit(url).netloc == self.origin

    def external(self) -> list[str]:
        return sorted(set(self.blocked) | {u for u in self.requests if not self.is_local(u)})

    def attach(self, context: Any, page: Any) -> None:
        def route(route: Any) -> None:
            url = route.request.url
            if self.is_local(url):
                route.continue_()
            else:
                self.blocked.append(url)
                route.abort()

        def console(msg: Any) -> None:
            where = msg.location or {}
            text = f"{msg.text} [{where.get('url', '?')}:{where.get('lineNumber', '?')}]"
            if msg.type == "error":
                self.console_errors.append(text)
            elif msg.type == "warning":
                self.console_warnings.append(text)

        def request_failed(request: Any) -> None:
            if self.is_local(request.url):
                self.failed.append(f"{request.url}: {request.failure}")

        def response(resp: Any) -> None:
            if resp.status >= 400:
                self.failed.append(f"{resp.url}: HTTP {resp.status}")

        context.route("**/*", route)
        context.on("request", lambda request: self.requests.append(request.url))
        page.on("console", console)
        page.on("pageerror", lambda error: self.page_errors.append(str(error)))
        page.on("requestfailed", request_failed)
        page.on("response", response)
        page.on("websocket", lambda ws: self.blocked.append(ws.url))


def _bullets(items: list[str]) -> str:
    return "".join(f"\n  - {item}" for item in items)


_MATH_STATUS_JS = """
() => Array.from(document.querySelectorAll('.math')).map(el => {
  const clone = el.cloneNode(true);
  clone.querySelectorAll('math, .eqno').forEach(c => c.remove());
  const math = el.querySelector('math');
  return {
    typeset: math !== null,
    width: math ? math.getBoundingClientRect().width : 0,
    shown: el.getClientRects().length > 0,  // not inside a closed solution or a hidden panel
    leftover: clone.textContent.trim(),
    snippet: el.outerHTML.slice(0, 160),
  };
})
"""

_UNDEFINED_MACROS_JS = """
() => Array.from(document.querySelectorAll('math merror, math mtext[mathcolor="red"]'))
  .map(el => el.textContent)
"""

# The math font the formulas are drawn with (book/press/mathml_pages.py), once the page's fonts are in.
_MATH_FONT_JS = """
() => document.fonts.ready.then(() => [...document.fonts].filter(f => f.family.replace(/"/g, '')
  === 'STIX Two Math').map(f => f.status))
"""

_PROSE_TEXT_JS = """
() => {
  const root = document.querySelector('article') || document.body;
  const clone = root.cloneNode(true);
  clone.querySelectorAll('script, style, noscript, template, textarea, pre, code, .math, math')
       .forEach(el => el.remove());
  return clone.textContent;
}
"""

_LINKS_JS = """
() => Array.from(document.querySelectorAll('a[href]'))
  .map(a => a.href)
  .filter(h => h.startsWith('http'))
"""


def _settle(page: Any) -> None:
    """Wait for the network to go quiet, but not fail on it: twice in CI a page never reported idle
    within 45 s (no request pending in a rerun; cause not found). What matters is checked after it:
    MathJax's promise, the typeset math, failed requests, links."""
    try:
        page.wait_for_load_state("networkidle", timeout=NETWORK_IDLE_MS)
    except PlaywrightTimeoutError:
        pass


def _open(page: Any, base_url: str, rel: str, html: str) -> None:
    """Load a page; if it is a meta-refresh redirect (the root index.html), follow it."""
    url = f"{base_url}/{rel}"
    page.goto(url, wait_until="load")
    redirect = REFRESH.search(html)
    if redirect:
        target = urljoin(url, redirect.group(1).strip())
        page.wait_for_url(target)
        page.wait_for_load_state("load")
    page.evaluate(SCRIPTS_JS)  # the page's scripts load after its first paint
    _settle(page)


def _check_math(page: Any) -> list[str]:
    problems: list[str] = []
    if page.locator("script[data-mathjax]").count():
        return ["the page loads MathJax: the build wrote no MathML (mathml_pages needs Node.js and ziamath)"]
    _settle(page)
    status = page.evaluate(_MATH_STATUS_JS)
    if not status:
        problems.append('the HTML has class="math" elements but the page shows none')
    for item in status:
        if not item["typeset"]:
            problems.append(f"math element without MathML: {item['snippet']}")
        elif item["leftover"]:
            problems.append(f"text left beside the MathML: {item['leftover'][:120]!r}")
        elif item["shown"] and item["width"] <= 0:
            problems.append(f"a formula drawn with no width: {item['snippet']}")
    if status and not any(item["width"] > 0 for item in status):
        problems.append("no formula of the page is drawn with a width")
    for text in page.evaluate(_UNDEFINED_MACROS_JS):
        problems.append(f"a TeX error or undefined macro in the MathML: {text}")
    fonts = page.evaluate(bounded(_MATH_FONT_JS, "loading the page's fonts", 60))
    if "loaded" not in fonts:
        problems.append(f"the math font STIX Two Math is not loaded: {fonts or 'no such font face'}")
    return problems


def _check_links(context: Any, page: Any, log: PageLog) -> list[str]:
    """Every internal link leads to an existing page and, if it has a fragment, to an id there."""
    problems: list[str] = []
    hrefs = sorted({h for h in page.evaluate(_LINKS_JS) if log.is_local(h)})
    if not hrefs:
        return ["no internal link on the page"]
    ids_of: dict[str, set[str] | None] = {}
    for href in hrefs:
        parts = urlsplit(href)
        target = parts._replace(fragment="").geturl()
        if target not in ids_of:
            resp = context.request.get(target)
            ids_of[target] = set(ID_ATTR.findall(resp.text())) if resp.ok else None
            if not resp.ok:
                problems.append(f"link to {target}: HTTP {resp.status}")
        ids = ids_of[target]
        fragment = unquote(parts.fragment)
        if ids is not None and fragment and fragment not in ids:
            problems.append(f"link to {href}: no id {fragment!r} on that page")
    return problems


def test_page(page_rel: str, html_dir: Path, base_url: str, browser: Any) -> None:
    rel = page_rel
    html = (html_dir / rel).read_text(encoding="utf-8")
    log = PageLog(urlsplit(base_url).netloc)
    problems: list[str] = []
    context = browser.new_context()
    context.set_default_timeout(TIMEOUT_MS)
    try:
        page = context.new_page()
        log.attach(context, page)
        _open(page, base_url, rel, html)
        if REFRESH.search(html):  # the checks below are about the page redirected to
            html = (html_dir / urlsplit(page.url).path.lstrip("/")).read_text(encoding="utf-8")
        if MATH_CLASS.search(html):
            problems += _check_math(page)
        prose = page.evaluate(_PROSE_TEXT_JS)
        for match in RAW_TEX.finditer(prose):
            snippet = " ".join(prose[max(0, match.start() - 40) : match.end() + 40].split())
            problems.append(f"raw TeX in the prose (math not parsed?): ...{snippet}...")
        if not page.locator("article h1").first.inner_text(timeout=1_000).strip():
            problems.append("the article's <h1> title is empty")
        problems += _check_links(context, page, log)
        _settle(page)
    except PlaywrightError as error:  # a timeout or a page that breaks: report it with the rest
        problems.append(f"browser step failed: {str(error).splitlines()[0]}")
    finally:
        context.close()

    if log.console_warnings:
        print(f"console warnings on {rel}:{_bullets(log.console_warnings)}")
    sections = [
        ("requests to other hosts than the local server (blocked)", log.external()),
        ("uncaught exceptions", log.page_errors),
        ("console errors", log.console_errors),
        ("failed local requests", sorted(set(log.failed))),
        ("other problems", problems),
    ]
    report = "".join(f"\n{title}:{_bullets(items)}" for title, items in sections if items)
    assert not report, f"{rel} ({len(log.requests)} requests):{report}"


def test_next_button_navigates(toc_pages: list[str], base_url: str, browser: Any) -> None:
    """The root page's "next" button, clicked in the browser, opens the toc's second page."""
    first, second = toc_pages[:2]
    context = browser.new_context()
    context.set_default_timeout(TIMEOUT_MS)
    try:
        page = context.new_page()
        page.goto(f"{base_url}/{first}", wait_until="load")
        page.evaluate(SCRIPTS_JS)  # the page's scripts load after its first paint
        page.locator("a.right-next").first.click()
        page.wait_for_url(f"{base_url}/{second}")
        assert page.locator("article h1").first.inner_text().strip()
    finally:
        context.close()
