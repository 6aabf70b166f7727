"""First paint: nothing large stands between a reader on a slow phone connection and the first words.

Two checks, for every page of the toc:

* **Critical path, counted** (deterministic). What the browser must fetch before it may paint: the
  stylesheets and the synchronous scripts in ``<head>``, and what it preloads beside them. Their bytes as
  a plain static server sends them (uncompressed, the worst case), at most ``CRITICAL_BYTES``; at most one
  synchronous script (Sphinx's ``documentation_options.js``, 0.5 KB, which inline scripts read at
  once); and neither MathJax, plotly.js nor Font Awesome among the scripts of ``<head>``
  (``book/press/lean_pages.py`` adds MathJax only after the first paint, the explorers load plotly.js
  only near the viewport). The book's first build failed
  all three (plotly.js 4.8 MB synchronous, 0.6 MB of stylesheets, 12 synchronous scripts).
* **First contentful paint, measured** under the mobile profile of Lighthouse: 150 ms round trip,
  1.6 Mbit/s down, 750 kbit/s up (CDP ``Network.emulateNetworkConditions``), the CPU slowed 4 times
  (``Emulation.setCPUThrottlingRate``), a 412 px phone screen, the local plain (uncompressed) server.
  The target is 2 s; the assertion allows ``FCP_MARGIN_MS`` more, because a busy 2-core CI machine
  slows the CPU part (parsing, style, layout) beyond the 4 times asked for. The network part, the
  bytes above at 1.6 Mbit/s, is most of the time and does not vary. The values are printed (``-s``).
"""

from __future__ import annotations

from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from conftest import REPO_ROOT, read_toc
from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

from press.print_pdf import bounded

PAGES = read_toc(REPO_ROOT / "_toc.yml")
CRITICAL_BYTES = 250_000  # stylesheets + synchronous scripts of <head>, uncompressed
KEEP_SYNC = ("documentation_options.js",)
NOT_IN_HEAD = ("mathjax", "plotly", "fontawesome")
FCP_TARGET_MS = 2_000
FCP_MARGIN_MS = 2_500
NETWORK = {"offline": False, "latency": 150, "downloadThroughput": 1.6e6 / 8, "uploadThroughput": 750e3 / 8}
PHONE = {"viewport": {"width": 412, "height": 823}, "device_scale_factor": 1.75, "is_mobile": True,
         "has_touch": True}


class _Head(HTMLParser):
    """The stylesheets and scripts of a page's ``<head>``: ``(kind, url, attributes)``."""

    def __init__(self) -> None:
        super().__init__()
        self.in_head = True
        self.items: list[tuple[str, str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "body":
            self.in_head = False
        elif self.in_head and tag == "script" and a.get("src"):
            self.items.append(("script", a["src"] or "", a))
        elif self.in_head and tag == "link" and a.get("rel") == "stylesheet" and a.get("href"):
            self.items.append(("stylesheet", a["href"] or "", a))
        elif self.in_head and tag == "link" and a.get("rel") == "preload" and a.get("href"):
            self.items.append(("preload", a["href"] or "", a))  # fetched at high priority with the CSS


def critical_path(html_dir: Path, rel: str) -> dict[str, Any]:
    """Render-blocking resources of ``rel``: stylesheets (not ``media=print``) and scripts without
    ``defer``/``async``/``type=module``, with their sizes on disk; plus every script of ``<head>``."""
    page = html_dir / rel
    head = _Head()
    head.feed(page.read_text(encoding="utf-8"))
    blocking: dict[str, int] = {}
    scripts = []
    for kind, url, attrs in head.items:
        path = (page.parent / urlsplit(url).path).resolve()
        if kind == "script":
            scripts.append(url)
            if "defer" in attrs or "async" in attrs or attrs.get("type") == "module":
                continue
        elif attrs.get("media") in ("print", "not all"):
            continue
        assert path.is_file(), f"{rel}: {url} is not in the build"
        blocking[url] = path.stat().st_size
    return {"blocking": blocking, "scripts": scripts}


@pytest.mark.parametrize("rel", PAGES)
def test_critical_path(rel: str, html_dir: Path) -> None:
    found = critical_path(html_dir, rel)
    blocking, scripts = found["blocking"], found["scripts"]
    sync = [u for u in blocking if u.split("?")[0].endswith(".js")]
    assert all(u.split("?")[0].endswith(KEEP_SYNC) for u in sync), f"{rel}: synchronous scripts {sync}"
    heavy = [u for u in scripts if any(n in u for n in NOT_IN_HEAD)]
    assert not heavy, f"{rel}: scripts in <head> that should load after the first paint: {heavy}"
    total = sum(blocking.values())
    largest = sorted(((size, url.split("?")[0].rsplit("/", 1)[-1]) for url, size in blocking.items()),
                     reverse=True)[:3]
    assert total <= CRITICAL_BYTES, (
        f"{rel}: {total / 1e3:.0f} kB of stylesheets and synchronous scripts before the first paint "
        f"(> {CRITICAL_BYTES / 1e3:.0f} kB); largest: {largest}"
    )


# The page's first contentful paint (ms after navigation start), from the buffered paint entries, with
# the document it was read in (the page's own, not the blank document a tab starts with).
FCP_JS = bounded("""() => new Promise(resolve => {
  const done = (e) => resolve({fcp: e.startTime, url: location.href});
  const seen = performance.getEntriesByName('first-contentful-paint')[0];
  if (seen) return done(seen);
  new PerformanceObserver(list => {
    const e = list.getEntriesByName('first-contentful-paint')[0];
    if (e) done(e);
  }).observe({type: 'paint', buffered: true});
})""", "the first contentful paint", 60)


def test_first_contentful_paint_on_a_slow_phone(browser: Any, base_url: str, html_dir: Path) -> None:
    """Every toc page paints its first words within 2 s (+ margin) on Lighthouse's mobile profile."""
    times: dict[str, float] = {}
    retried: list[str] = []
    for rel in PAGES:
        assert (html_dir / rel).is_file(), f"{rel} is missing from the build"
        # One retry, in a fresh tab: in a full run on 2 shared cores a throttled tab has twice sat for
        # minutes without reaching DOMContentLoaded (60 s, later 180 s exceeded; 04_scaling, whose
        # first paint alone is under 2 s). A page that cannot load fails both attempts.
        for attempt in (1, 2):
            try:
                times[rel] = _first_paint(browser, base_url, rel)
                break
            except PlaywrightTimeoutError:
                if attempt == 2:
                    raise
                retried.append(rel)
    print("\nfirst contentful paint (ms):", {k: round(v) for k, v in times.items()}, "retried:", retried)
    slow = {k: round(v) for k, v in times.items() if v > FCP_TARGET_MS + FCP_MARGIN_MS}
    assert not slow, f"first contentful paint over {FCP_TARGET_MS} ms + {FCP_MARGIN_MS} ms margin: {slow}"


def _first_paint(browser: Any, base_url: str, rel: str) -> float:
    """The first contentful paint of ``rel`` in ms, in a new phone tab on the mobile profile."""
    context = browser.new_context(**PHONE)
    context.set_default_timeout(60_000)
    try:
        page = context.new_page()
        cdp = context.new_cdp_session(page)
        cdp.send("Network.enable")
        cdp.send("Network.setCacheDisabled", {"cacheDisabled": True})
        cdp.send("Network.emulateNetworkConditions", NETWORK)
        cdp.send("Emulation.setCPUThrottlingRate", {"rate": 4})
        # Not wait_until="commit": at commit the page's script context may not exist yet, and an
        # evaluate then waits in the tab's blank first document, which never paints (CI, once). The
        # paint entry is buffered, so reading it after DOMContentLoaded loses nothing. A generous
        # limit: the tab runs at a quarter of a core that other tests share; alone the slowest page is
        # parsed in 3 s. What is measured is the paint time the page itself records.
        page.goto(f"{base_url}/{rel}", wait_until="domcontentloaded", timeout=120_000)
        found = page.evaluate(FCP_JS)
        assert found["url"] == f"{base_url}/{rel}", (rel, found)
        return float(found["fcp"])
    finally:
        context.close()
