"""Print the built HTML book to PDF: ``book.pdf`` (with solutions) and ``book-student.pdf`` (without).

``make pdf`` runs this file after ``make build``::

    python -m press.print_pdf [--html _build/html] [--out _build/pdf]

It is a plain script, not a Sphinx extension: it reads the HTML that the build wrote, so the PDF shows
exactly what the web book shows (the formulas, the Plotly figures, the executed outputs), which
the LaTeX route cannot (it drops every Plotly figure and needs hundreds of MB of TeX).

How it works:

1. The pages, in table-of-contents order, are read from the navigation of the built root page (the
   page ``index.html`` redirects to, then its sidebar's chapters), so the order is the book's own.
2. A local HTTP server serves the build; headless Chromium (Debian's ``/usr/bin/chromium``, driven by
   Playwright, launched as ``tests/browser/conftest.py`` launches it) opens each page with print media
   emulated and a viewport as wide as the printed text, so Plotly lays out its figures at print width.
   It waits for the formulas (MathJax's, in a build without Node.js), the fonts and every Plotly
   figure, then moves every solution (sphinx-exercise's ``div.solution``) into a "Solutions" section
   at the end of the chapter, in exercise order, each titled "Solution to Exercise N.k", and prints the
   page. It then removes that section from the DOM and prints the page again, so that the student
   edition holds no solution text at all. Two pages print at a time (the machine has two cores).
3. pypdf joins the pages behind a title page (book title, author, edition and licences, read from the
   built pages) and a contents page, numbers the pages, turns every link between book pages into a
   link inside the PDF (none points at the temporary local server), and adds an outline: one entry per
   page, one child per section.

The print rules of ``book/_static/attnbook.css`` hide the solutions whenever a page is printed (the
".pdf" item of the web book calls ``window.print()``, and the toggle extension opens every dropdown
before printing); this script sets :data:`WITH_SOLUTIONS_CLASS` on ``<html>`` to show them in the full
edition. They also keep figures and outputs whole on a page, wrap long code lines, and add to every
static explorer a line saying that it is interactive in the online book.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import html
import io
import json
import re
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from html.parser import HTMLParser
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urljoin, urlsplit

REPO_ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = Path("/usr/bin/chromium")
# Headless, sandbox off (containers), no background traffic: the browser tests launch it the same way.
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]
MISSING_CHROMIUM = (
    f"Chromium is not installed at {CHROMIUM}: run `apt-get install chromium` (never `playwright install`)."
)

#: Set on ``<html>`` before a page is printed for the full edition: attnbook.css's print rules then
#: show the solutions they otherwise hide.
WITH_SOLUTIONS_CLASS = "attnlib-print-solutions"
FULL_NAME = "book.pdf"
STUDENT_NAME = "book-student.pdf"

PAPER = "A4"
PAPER_WIDTH_MM = 210.0
MARGIN_MM = 16.0
PX_PER_MM = 96 / 25.4
PT_PER_MM = 72 / 25.4
#: The width of the printed text in CSS pixels: the viewport gets this width, so figures laid out on
#: screen are as wide as the printed column.
TEXT_WIDTH_PX = round((PAPER_WIDTH_MM - 2 * MARGIN_MM) * PX_PER_MM)
PDF_OPTIONS: dict[str, Any] = {
    "format": PAPER,
    "margin": {side: f"{MARGIN_MM:g}mm" for side in ("top", "right", "bottom", "left")},
    "print_background": True,
}
PAGE_TIMEOUT_MS = 90_000
PRINT_TIMEOUT_S = 300


def bounded(function: str, what: str, seconds: float) -> str:
    """``function`` (a JavaScript function of at most one argument, plain or async) made to reject with
    an error naming ``what`` when its result has not settled within ``seconds``.

    Playwright's ``evaluate`` waits for a returned promise without a time limit: a promise that never
    settles (a script that never loads, a frame that is never painted) would hang the caller for good.
    """
    ms = round(seconds * 1000)
    message = json.dumps(f"{what} did not finish within {seconds:g} s")
    return f"""(arg) => {{
  let timer;
  const late = new Promise((_, reject) => {{
    timer = setTimeout(() => reject(new Error({message})), {ms});
  }});
  const result = Promise.resolve().then(() => ({function})(arg));
  return Promise.race([result, late]).finally(() => clearTimeout(timer));
}}"""


# book/press/lean_pages.py loads a page's scripts after its first paint (window.leanPagesScripts resolves
# once each has run or failed): wait for them before using what they add (explorers, tab stops, toggles).
SCRIPTS_JS = bounded("() => Promise.resolve(window.leanPagesScripts).then(() => true)",
                     "loading the page's scripts", 60)

# Two animation frames: what changed before them has been painted.
FRAMES_JS = bounded(
    "() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(() => r(true))))",
    "two animation frames", 30)

FONTS_READY_JS = bounded("() => document.fonts.ready.then(() => true)", "loading the page's fonts", 60)

#: The book's stylesheet, whose print rules (hide solutions unless told, keep figures whole, wrap code,
#: mark the explorers) are added to every page again before it prints: the PDF follows the rules of this
#: checkout even when the build in ``--html`` predates a change to them.
BOOK_CSS = Path(__file__).resolve().parents[1] / "_static" / "attnbook.css"

# Added to every page before it is printed, after the theme's and attnbook.css's print rules.
PDF_CSS = """
/* The theme prints its own title and contents block and hides the article's numbered h1:
   the other way round here. */
#jb-print-docs-body { display: none !important; }
.bd-main .bd-content .bd-article h1:first-of-type { display: block !important; margin-top: 0; }
.bd-main .bd-content { margin-left: 0 !important; }
.attnlib-pdf-anchors { position: absolute; top: 0; left: 0; width: 1px; height: 1px; overflow: hidden; }
.attnlib-pdf-anchors a { position: absolute; top: 0; left: 0; display: block; width: 1px; height: 1px; }
section.attnlib-pdf-solutions { break-before: page; }
/* A solution may run over pages (the theme keeps admonitions whole, which leaves half-empty pages). */
section.attnlib-pdf-solutions div.solution { display: block !important; break-inside: auto !important; }
"""

# Resolves once the page is ready to print: formulas shown, web fonts loaded. The book's formulas are
# MathML written at build time (book/press/mathml_pages.py); a build made without Node.js keeps MathJax's
# loader (script[data-mathjax], book/_static/lean/math.js, after the first paint): then wait for MathJax
# to start and to typeset every formula. Then wait for book/_static/scroll-stops.js to give every box that
# scrolls sideways its tab stop (it works in short tasks after the first paint).
READY_JS = bounded("""
async () => {
  await window.leanPagesScripts;  // book/press/lean_pages.py: the page's scripts, after its first paint
  if (document.querySelector('.math') !== null && document.querySelector('script[data-mathjax]') !== null) {
    let mj = window.MathJax;
    for (let i = 0; i < 600 && !(mj && mj.startup && mj.startup.promise); i++) {
      await new Promise(r => setTimeout(r, 200));
      mj = window.MathJax;
    }
    if (!(mj && mj.startup && mj.startup.promise)) {
      throw new Error('the page has math but MathJax did not start within 120 s');
    }
    await mj.startup.promise;
  }
  await document.fonts.ready;
  // book/_static/scroll-stops.js: every box that scrolls sideways has become a tab stop
  if (window.attnlibScrollStops) await window.attnlibScrollStops.settled();
  return true;
}
""", "typesetting the page's formulas, loading its fonts and setting its tab stops", 300)
# Explorers draw their plots lazily (near the viewport): draw them all, then wait until each has.
PLOTLY_DRAWN_JS = """
() => {
  if (window.attnlibExplorers) window.attnlibExplorers.drawAll();
  return Array.from(document.querySelectorAll('.attnlib-plot'))
    .every(gd => gd._fullLayout && gd.querySelector('svg.main-svg'));
}
"""

# Moves the solutions into a "Solutions" section at the end of the chapter and lists what the outline
# and the tests need. ``targets``: ids that links on other pages point at.
PREPARE_JS = """
({targets}) => {
  const article = document.querySelector('article.bd-article');
  if (!article) throw new Error('no article.bd-article on ' + location.pathname);
  const main = article.querySelector(':scope > section') || article;
  const text = el => el ? el.textContent.replace(/\\s+/g, ' ').trim() : '';

  const items = Array.from(document.querySelectorAll('div.solution')).map(sol => {
    const link = sol.querySelector('.admonition-title a[href^="#"]');
    const id = link ? decodeURIComponent(link.getAttribute('href').slice(1)) : '';
    const exercise = id ? document.getElementById(id) : null;
    if (!exercise) throw new Error(`solution ${sol.id} names no exercise of ${location.pathname}`);
    const label = text(exercise.querySelector('.caption-number')) || text(link);
    return {sol, exercise, label};
  });
  items.sort((a, b) => a.exercise === b.exercise ? 0
    : (a.exercise.compareDocumentPosition(b.exercise) & Node.DOCUMENT_POSITION_FOLLOWING ? -1 : 1));
  if (items.length) {
    const section = document.createElement('section');
    section.id = 'attnlib-pdf-solutions';
    section.className = 'attnlib-pdf-solutions';
    const heading = document.createElement('h2');
    heading.textContent = 'Solutions';
    section.append(heading);
    for (const {sol, exercise, label} of items) {
      sol.classList.remove('dropdown', 'toggle', 'toggle-hidden');
      sol.querySelectorAll('button.toggle-button').forEach(b => b.remove());
      const title = sol.querySelector('.admonition-title');
      const back = document.createElement('a');  // back to the exercise
      back.setAttribute('href', '#' + exercise.id);
      back.textContent = label;
      title.replaceChildren('Solution to ', back);
      section.append(sol);
    }
    main.append(section);
  }

  const sections = Array.from(main.querySelectorAll(':scope > section')).map(s => {
    const h = s.querySelector(':scope > h2');
    if (!h) return null;
    const clone = h.cloneNode(true);
    clone.querySelectorAll('.headerlink').forEach(e => e.remove());
    return {id: s.id, title: text(clone)};
  }).filter(s => s && s.id && s.title);

  // Chromium writes a named destination only for an element that a link on the same page points at:
  // one invisible link per section and per target of other pages' links, so the joined PDF can link
  // to them. Removed from the joined PDF again (they are 1 px wide).
  const box = document.createElement('div');
  box.className = 'attnlib-pdf-anchors';
  for (const id of new Set([...sections.map(s => s.id), ...targets])) {
    if (!document.getElementById(id)) continue;
    const a = document.createElement('a');
    a.setAttribute('href', '#' + id);
    box.append(a);
  }
  document.body.prepend(box);

  return {sections, solutions: items.map(i => i.label)};
}
"""

# Sets WITH_SOLUTIONS_CLASS on <html> as soon as the element exists (an init script may run before).
SHOW_SOLUTIONS_JS = f"""
(() => {{
  const show = () => document.documentElement.classList.add('{WITH_SOLUTIONS_CLASS}');
  if (document.documentElement) {{ show(); return; }}
  new MutationObserver((_, observer) => {{
    if (document.documentElement) {{ show(); observer.disconnect(); }}
  }}).observe(document, {{childList: true}});
}})();
"""

# The student edition: no solution (nor an in-text answer, class attnlib-answer), no trace of the
# section that held them.
STRIP_SOLUTIONS_JS = f"""
() => {{
  document.querySelectorAll('section.attnlib-pdf-solutions, div.solution, .attnlib-answer')
    .forEach(e => e.remove());
  document.documentElement.classList.remove('{WITH_SOLUTIONS_CLASS}');
  return document.querySelectorAll('.solution, .attnlib-answer').length;
}}
"""


@dataclass(frozen=True)
class TocEntry:
    """A page of the book: its path under the HTML directory and its title in the navigation."""

    rel: str
    title: str


@dataclass
class PrintedPage:
    """One page printed twice: with its solutions collected at the end, and without them."""

    entry: TocEntry
    full: bytes
    student: bytes
    sections: list[tuple[str, str]] = field(default_factory=list)  # (id, title), Solutions included
    solutions: list[str] = field(default_factory=list)  # "Exercise 1.1", ... in exercise order


@dataclass(frozen=True)
class BookPdfs:
    """What :func:`build_pdfs` wrote."""

    full: Path
    student: Path
    full_pages: int
    student_pages: int
    seconds: float

    def summary(self) -> str:
        def line(path: Path, pages: int) -> str:
            return f"  {path}  ({pages} pages, {path.stat().st_size / 1e6:.1f} MB)"

        return "\n".join(
            [
                f"PDFs written in {self.seconds:.0f} s:",
                line(self.full, self.full_pages) + "  with solutions",
                line(self.student, self.student_pages) + "  without solutions",
            ]
        )


# ---------------------------------------------------------------------------------------------------
# Reading the built book
# ---------------------------------------------------------------------------------------------------

_REFRESH = re.compile(r"""http-equiv=["']refresh["'][^>]*content=["'][^"']*url=([^"']+)["']""", re.IGNORECASE)


class _NavParser(HTMLParser):
    """The first-level links of the sidebar navigation (``nav.bd-docs-nav``), in order."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.entries: list[tuple[str, str]] = []
        self._nav_depth = 0  # >0 inside the navigation
        self._li: list[bool] = []  # for each open <li>: is it a toc entry whose link is still to come?
        self._href: str | None = None
        self._text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        classes = (dict(attrs).get("class") or "").split()
        if tag == "nav":
            if self._nav_depth or ("bd-docs-nav" in classes and not self.entries):
                self._nav_depth += 1
        elif self._nav_depth and tag == "li":
            self._li.append(any(c.startswith("toctree-l") for c in classes))
        elif self._nav_depth and tag == "a" and self._li and self._li[-1] and self._href is None:
            self._href = dict(attrs).get("href") or ""
            self._text = []

    def handle_endtag(self, tag: str) -> None:
        if tag == "nav" and self._nav_depth:
            self._nav_depth -= 1
        elif self._nav_depth and tag == "li" and self._li:
            self._li.pop()
        elif self._nav_depth and tag == "a" and self._href is not None:
            self.entries.append((self._href, " ".join("".join(self._text).split())))
            self._href = None
            if self._li:
                self._li[-1] = False  # only the entry's own link, not its sub-entries

    def handle_data(self, data: str) -> None:
        if self._href is not None:
            self._text.append(data)


def root_page(html_dir: Path) -> str:
    """The book's first page, relative to ``html_dir``: where ``index.html`` redirects."""
    index = html_dir / "index.html"
    if not index.is_file():
        raise FileNotFoundError(f"{html_dir} has no index.html: build the book first (`make build`)")
    text = index.read_text(encoding="utf-8")
    match = _REFRESH.search(text)
    return match.group(1).strip() if match else "index.html"


def toc_entries(html_dir: Path) -> list[TocEntry]:
    """Every page of the book in table-of-contents order, read from the built navigation.

    The root page comes first, then the entries of its sidebar, a page's sections (the API reference's
    pages) after it, as ``_toc.yml`` lists them. Raises ``FileNotFoundError`` if the build is missing and
    ``ValueError`` if its navigation names no page or a page that is not there.
    """
    root = root_page(html_dir)
    parser = _NavParser()
    parser.feed((html_dir / root).read_text(encoding="utf-8"))
    if not parser.entries:
        raise ValueError(
            f"{html_dir / root} has no sidebar navigation (nav.bd-docs-nav) to read the toc from"
        )
    entries: list[TocEntry] = []
    for href, title in parser.entries:
        path = urlsplit(urljoin(root, href)).path or root
        rel = unquote(path)
        if rel in (e.rel for e in entries):
            continue
        if not (html_dir / rel).is_file():
            raise ValueError(f"the navigation of {root} names {href!r}, which is not in {html_dir}")
        entries.append(TocEntry(rel, title))
    if entries[0].rel != root:
        entries.insert(0, TocEntry(root, _first(_H1, (html_dir / root).read_text(encoding="utf-8")) or root))
    return entries


_TAGS = re.compile(r"<[^>]+>")
_H1 = re.compile(r"<h1[^>]*>(.*?)</h1>", re.DOTALL)
_BOOK_TITLE = re.compile(r'<p class="title logo__title">(.*?)</p>', re.DOTALL)
_AUTHOR = re.compile(r'<p class="component-author">(.*?)</p>', re.DOTALL)
_COPYRIGHT = re.compile(r'<p class="copyright">(.*?)</p>', re.DOTALL)
_EDITION = re.compile(r'<p class="attnlib-edition">(.*?)</p>', re.DOTALL)
_TITLE = re.compile(r"<title>(.*?)</title>", re.DOTALL)


def _first(pattern: re.Pattern[str], text: str) -> str:
    match = pattern.search(text)
    return match.group(1) if match else ""


def _plain(fragment: str) -> str:
    return " ".join(html.unescape(_TAGS.sub("", fragment)).split())


@dataclass(frozen=True)
class BookInfo:
    """What the title page says, read from the built root page."""

    title: str
    author: str
    copyright: str
    edition_html: str  # the footer's licences and edition line (book/press/edition.py), as HTML

    @property
    def edition_text(self) -> str:
        return _plain(self.edition_html)


def book_info(html_dir: Path) -> BookInfo:
    """The book's title, author, copyright and edition line, from the root page's HTML."""
    text = (html_dir / root_page(html_dir)).read_text(encoding="utf-8")
    title = _plain(_first(_BOOK_TITLE, text)) or _plain(_first(_TITLE, text)).split(" — ")[-1]
    author = re.sub(r"^By\s+", "", _plain(_first(_AUTHOR, text)))
    return BookInfo(
        title=title or "Untitled book",
        author=author,
        copyright=_plain(_first(_COPYRIGHT, text)),
        edition_html=_first(_EDITION, text).strip(),
    )


_HREF = re.compile(r"""href=["']([^"'#]*)#([^"']+)["']""")


def link_targets(html_dir: Path, entries: Sequence[TocEntry]) -> dict[str, set[str]]:
    """For each page, the ids that links on other pages of the book point at."""
    targets: dict[str, set[str]] = {e.rel: set() for e in entries}
    for entry in entries:
        for href, fragment in _HREF.findall((html_dir / entry.rel).read_text(encoding="utf-8")):
            if not href or "://" in href:
                continue
            rel = unquote(urlsplit(urljoin(entry.rel, href)).path)
            if rel in targets and rel != entry.rel:
                targets[rel].add(unquote(fragment))
    return targets


# ---------------------------------------------------------------------------------------------------
# Printing with Chromium
# ---------------------------------------------------------------------------------------------------


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


@contextmanager
def serve(html_dir: Path) -> Iterator[str]:
    """``http://127.0.0.1:PORT`` serving ``html_dir`` while the block runs (the port is the OS's choice).

    Served over HTTP rather than ``file://`` because browsers refuse web fonts (MathJax's) from files.
    """
    handler = functools.partial(_QuietHandler, directory=str(html_dir))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, name="print-pdf-http", daemon=True)
    thread.start()
    host, port = str(server.server_address[0]), int(server.server_address[1])
    try:
        yield f"http://{host}:{port}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


async def _new_context(browser: Any, base_url: str, with_solutions: bool) -> Any:
    """A browser context that prints like paper and never reaches beyond the local server."""
    context = await browser.new_context(viewport={"width": TEXT_WIDTH_PX, "height": 1000})
    context.set_default_timeout(PAGE_TIMEOUT_MS)
    origin = urlsplit(base_url).netloc

    async def route(route: Any) -> None:
        url = urlsplit(route.request.url)
        if url.scheme in ("data", "blob") or (url.scheme == "http" and url.netloc == origin):
            await route.continue_()
        else:
            await route.abort()

    await context.route("**/*", route)
    if with_solutions:
        # Before any script of the page runs, so the solutions are laid out and typeset as shown.
        await context.add_init_script(SHOW_SOLUTIONS_JS)
    return context


async def _pdf(page: Any, what: str) -> bytes:
    """The page printed; a print that has not finished within PRINT_TIMEOUT_S raises (Chromium's print
    has no time limit of its own)."""
    try:
        return await asyncio.wait_for(page.pdf(**PDF_OPTIONS), PRINT_TIMEOUT_S)
    except TimeoutError:
        raise RuntimeError(f"{what}: Chromium did not print it within {PRINT_TIMEOUT_S} s") from None


async def _print_page(context: Any, base_url: str, entry: TocEntry, targets: set[str]) -> PrintedPage:
    page = await context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    try:
        await page.emulate_media(media="print")
        await page.goto(f"{base_url}/{entry.rel}", wait_until="load")
        await page.evaluate(SCRIPTS_JS)
        await page.evaluate(READY_JS)
        await page.wait_for_function(PLOTLY_DRAWN_JS)
        await page.add_style_tag(content=BOOK_CSS.read_text(encoding="utf-8") + PDF_CSS)
        found = await page.evaluate(PREPARE_JS, {"targets": sorted(targets)})
        full = await _pdf(page, entry.rel)
        student = full
        if found["solutions"]:
            left = await page.evaluate(STRIP_SOLUTIONS_JS)
            if left:
                raise RuntimeError(f"{entry.rel}: {left} solution blocks left in the student edition")
            student = await _pdf(page, entry.rel)
    finally:
        await page.close()
    for error in errors:  # the theme's scripts are not ours to fix; say so, print on
        print(f"print_pdf: warning: {entry.rel}: a script of the page raised: {error}", file=sys.stderr)
    return PrintedPage(
        entry,
        full,
        student,
        sections=[(s["id"], s["title"]) for s in found["sections"]],
        solutions=list(found["solutions"]),
    )


async def _print_book(
    html_dir: Path, entries: Sequence[TocEntry], info: BookInfo, workers: int
) -> tuple[list[PrintedPage], dict[str, bytes], str]:
    """Every page printed (two at a time with ``workers=2``), then the two front matters."""
    from playwright.async_api import async_playwright

    targets = link_targets(html_dir, entries)
    with serve(html_dir) as base_url:
        async with async_playwright() as playwright:
            browser = await playwright.chromium.launch(
                executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS
            )
            try:
                context = await _new_context(browser, base_url, with_solutions=True)
                queue: asyncio.Queue[int] = asyncio.Queue()
                # The longest pages first, so that both workers finish at about the same time.
                sizes = [(html_dir / e.rel).stat().st_size for e in entries]
                for index in sorted(range(len(entries)), key=lambda i: -sizes[i]):
                    queue.put_nowait(index)
                printed: dict[int, PrintedPage] = {}

                async def worker() -> None:
                    while not queue.empty():
                        index = queue.get_nowait()
                        entry = entries[index]
                        printed[index] = await _print_page(context, base_url, entry, targets[entry.rel])

                await asyncio.gather(*(worker() for _ in range(max(1, workers))))
                pages = [printed[i] for i in range(len(entries))]
                front = {}
                for student in (False, True):
                    front[STUDENT_NAME if student else FULL_NAME] = await _front_matter(
                        context, base_url, info, pages, student
                    )
            finally:
                await browser.close()
    return pages, front, base_url


# ---------------------------------------------------------------------------------------------------
# Front matter: title page and contents
# ---------------------------------------------------------------------------------------------------

FRONT_CSS = """
body { font-family: "Lato", "DejaVu Sans", sans-serif; color: #222832; margin: 0; }
.title-page { height: 255mm; display: flex; flex-direction: column; justify-content: center;
  break-after: page; }
.title-page h1 { font-size: 30pt; margin: 0 0 8mm; line-height: 1.2; }
.title-page .author { font-size: 15pt; margin: 0 0 20mm; }
.title-page .kind { font-size: 12pt; font-weight: bold; margin: 0 0 4mm; }
.title-page .small { font-size: 9.5pt; line-height: 1.45; margin: 0 0 2mm; }
.title-page a { color: inherit; }
.contents h2 { font-size: 20pt; margin: 0 0 8mm; }
.contents ol { list-style: none; padding: 0; margin: 0; font-size: 12pt; }
.contents li { display: flex; align-items: baseline; margin: 0 0 3mm; }
.contents li.sub { margin-left: 8mm; font-size: 10.5pt; }
.contents li a { color: inherit; text-decoration: none; }
.contents li .fill { flex: 1; border-bottom: 1px dotted #999; margin: 0 2mm; }
"""

#: Pages before the first page of the book: the title page and the contents.
FRONT_PAGES = 2


def front_matter_html(
    info: BookInfo, base_url: str, contents: Sequence[tuple[str, str, int, bool]], student: bool
) -> str:
    """The title page and the contents as one HTML document.

    ``contents``: ``(title, href, page number, is a sub-entry)`` for each line of the contents.
    """
    kind = (
        "Student edition: the exercises without their solutions."
        if student
        else "With the solutions of the exercises, collected at the end of each chapter."
    )
    lines = []
    for title, href, number, sub in contents:
        cls = ' class="sub"' if sub else ""
        lines.append(
            f'<li{cls}><a href="{html.escape(base_url + "/" + href)}">{html.escape(title)}</a>'
            f'<span class="fill"></span><span class="page">{number}</span></li>'
        )
    author = f'<p class="author">{html.escape(info.author)}</p>' if info.author else ""
    edition = f'<p class="small">{info.edition_html}</p>' if info.edition_html else ""
    copyright = f'<p class="small">{html.escape(info.copyright)}</p>' if info.copyright else ""
    online = (
        '<p class="small">Printed from the HTML book. Its figures are interactive online; here each shows '
        "its first state. The live explorers need a running Python kernel (Jupyter, Binder or Colab).</p>"
    )
    return (
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
        f"<title>{html.escape(info.title)}</title><style>{FRONT_CSS}</style></head><body>"
        f'<section class="title-page"><h1>{html.escape(info.title)}</h1>{author}'
        f'<p class="kind">{kind}</p>{edition}{copyright}{online}</section>'
        f'<section class="contents"><h2>Contents</h2><ol>{"".join(lines)}</ol></section>'
        "</body></html>"
    )


async def _front_matter(
    context: Any, base_url: str, info: BookInfo, pages: Sequence[PrintedPage], student: bool
) -> bytes:
    from pypdf import PdfReader

    page = await context.new_page()
    try:
        await page.emulate_media(media="print")
        front_pages = FRONT_PAGES
        for _ in range(3):  # the page numbers depend on how many pages the front matter has
            contents = _contents(pages, student, front_pages)
            await page.set_content(front_matter_html(info, base_url, contents, student))
            await page.evaluate(FONTS_READY_JS)
            pdf = await _pdf(page, "the front matter")
            count = len(PdfReader(io.BytesIO(pdf)).pages)
            if count == front_pages:
                return pdf
            front_pages = count
        raise RuntimeError(f"the front matter does not settle on a page count ({front_pages})")
    finally:
        await page.close()


def _contents(
    pages: Sequence[PrintedPage], student: bool, front_pages: int
) -> list[tuple[str, str, int, bool]]:
    """The lines of the contents page, with the printed page number of each (the title page is 1)."""
    lines = []
    start = front_pages
    for printed in pages:
        pdf = printed.student if student else printed.full
        lines.append((printed.entry.title, printed.entry.rel, start + 1, False))
        if printed.solutions and not student:
            dests = _destinations(pdf)
            if "attnlib-pdf-solutions" in dests:
                where = start + dests["attnlib-pdf-solutions"][0] + 1
                lines.append(("Solutions", printed.entry.rel + "#attnlib-pdf-solutions", where, True))
        start += _page_count(pdf)
    return lines


# ---------------------------------------------------------------------------------------------------
# Joining with pypdf
# ---------------------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=64)
def _destinations(pdf: bytes) -> dict[str, tuple[int, float | None]]:
    """The named destinations Chromium wrote: id -> (page index, top in PDF points)."""
    from pypdf import PdfReader

    reader = PdfReader(io.BytesIO(pdf))
    found: dict[str, tuple[int, float | None]] = {}
    for name, dest in reader.named_destinations.items():
        top = dest.get("/Top")
        page = reader.get_destination_page_number(dest)
        if page is None:  # a destination on no page of this PDF: nothing to link to
            continue
        found[str(name).lstrip("/")] = (page, None if top is None else float(top))
    return found


@functools.lru_cache(maxsize=64)
def _page_count(pdf: bytes) -> int:
    from pypdf import PdfReader

    return len(PdfReader(io.BytesIO(pdf)).pages)


def join(
    pages: Sequence[PrintedPage], front: bytes, base_url: str, info: BookInfo, student: bool, out: Path
) -> int:
    """Write the front matter and the pages (one edition) to ``out``; returns the number of pages."""
    from pypdf import PdfReader, PdfWriter
    from pypdf.generic import ArrayObject, FloatObject, NameObject, NullObject

    writer = PdfWriter()
    docs: list[tuple[str | None, bytes]] = [(None, front)]
    docs += [(p.entry.rel, p.student if student else p.full) for p in pages]
    offsets: dict[str | None, int] = {}
    for rel, pdf in docs:
        offsets[rel] = len(writer.pages)
        writer.append(PdfReader(io.BytesIO(pdf)), import_outline=False)
    dests = {rel: _destinations(pdf) for rel, pdf in docs}

    def explicit(rel: str | None, fragment: str | None) -> ArrayObject | None:
        if rel not in offsets:
            return None
        index, top = dests[rel].get(fragment or "", (0, None))
        target = writer.pages[offsets[rel] + index].indirect_reference
        return ArrayObject(
            [
                target,
                NameObject("/XYZ"),
                NullObject(),
                NullObject() if top is None else FloatObject(top),
                NullObject(),
            ]
        )

    # Links: a same-page link by name, a link to another page by the local server's URL; both become
    # explicit destinations in the joined file. The anchors' helper links (1 px) go.
    for position, (rel, _) in enumerate(docs):
        end = offsets[docs[position + 1][0]] if position + 1 < len(docs) else len(writer.pages)
        for page in writer.pages[offsets[rel] : end]:
            if "/Annots" not in page:
                continue
            kept = ArrayObject()
            for ref in page["/Annots"]:  # type: ignore[attr-defined]  # an ArrayObject
                annot = ref.get_object()
                if annot.get("/Subtype") != "/Link":
                    kept.append(ref)
                    continue
                x0, y0, x1, y1 = (float(v) for v in annot["/Rect"])
                if abs(x1 - x0) < 2 and abs(y1 - y0) < 2:
                    continue
                action = annot.get("/A")
                target = None
                if "/Dest" in annot and not isinstance(annot["/Dest"], ArrayObject):
                    target = explicit(rel, str(annot["/Dest"]).lstrip("/"))
                elif action is not None and action.get("/S") == "/URI":
                    uri = str(action.get("/URI"))
                    if not uri.startswith(base_url + "/"):
                        kept.append(ref)  # a link out of the book (a paper, a licence): kept as it is
                        continue
                    parts = urlsplit(uri)
                    target = explicit(unquote(parts.path.lstrip("/")), unquote(parts.fragment) or None)
                else:
                    kept.append(ref)
                    continue
                if target is None:
                    continue  # a local file that is not a page of the book: no link into a dead server
                annot.pop("/A", None)
                annot[NameObject("/Dest")] = target
                kept.append(ref)
            page[NameObject("/Annots")] = kept
    names = writer._root_object.get("/Names")
    if names is not None and "/Dests" in names:
        del names.get_object()["/Dests"]  # every link now has an explicit destination

    _number_pages(writer, first=1)
    _outline(writer, pages, offsets, dests, student)
    edition = "student edition, without solutions" if student else "with solutions"
    writer.add_metadata(
        {
            "/Title": f"{info.title} ({edition})",
            "/Author": info.author,
            "/Subject": info.edition_text,
            "/Creator": "book/press/print_pdf.py (headless Chromium, pypdf)",
        }
    )
    writer.page_mode = "/UseOutlines"
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("wb") as handle:
        writer.write(handle)
    return len(writer.pages)


def _outline(
    writer: Any,
    pages: Sequence[PrintedPage],
    offsets: dict[str | None, int],
    dests: dict[str | None, dict[str, tuple[int, float | None]]],
    student: bool,
) -> None:
    """One bookmark per page of the book, one child per section of it (Solutions included)."""
    from pypdf.generic import Fit

    writer.add_outline_item(title="Contents", page_number=1)
    for printed in pages:
        rel = printed.entry.rel
        parent = writer.add_outline_item(title=printed.entry.title, page_number=offsets[rel], is_open=False)
        for section_id, title in printed.sections:
            if section_id not in dests[rel] or (student and section_id == "attnlib-pdf-solutions"):
                continue
            index, top = dests[rel][section_id]
            writer.add_outline_item(
                title=title, page_number=offsets[rel] + index, parent=parent, fit=Fit.xyz(top=top)
            )


def _number_pages(writer: Any, first: int) -> None:
    """Print the page number at the foot of every page from ``first`` on (the title page has none)."""
    from pypdf.generic import ArrayObject, DecodedStreamObject, DictionaryObject, NameObject

    font = writer._add_object(
        DictionaryObject(
            {
                NameObject("/Type"): NameObject("/Font"),
                NameObject("/Subtype"): NameObject("/Type1"),
                NameObject("/BaseFont"): NameObject("/Helvetica"),
                NameObject("/Encoding"): NameObject("/WinAnsiEncoding"),
            }
        )
    )
    size = 9
    before = DecodedStreamObject()
    before.set_data(b"q\n")
    save = writer._add_object(before)
    for index in range(first, len(writer.pages)):
        page = writer.pages[index]
        label = str(index + 1)
        width = float(page.mediabox.width)
        x = (width - 0.556 * size * len(label)) / 2  # Helvetica's digits are 0.556 em wide
        y = MARGIN_MM * PT_PER_MM / 2 - size / 2
        if "/Resources" not in page:
            page[NameObject("/Resources")] = DictionaryObject()
        resources = page["/Resources"].get_object()
        if "/Font" not in resources:
            resources[NameObject("/Font")] = DictionaryObject()
        resources["/Font"].get_object()[NameObject("/AttnPageNo")] = font
        after = DecodedStreamObject()
        number = f"BT 0.35 0.38 0.42 rg /AttnPageNo {size} Tf 1 0 0 1 {x:.2f} {y:.2f} Tm ({label}) Tj ET"
        after.set_data(f"\nQ\nq {number} Q\n".encode())
        # The page's own streams stay as they are (compressed), between q and Q; the number comes after.
        raw = page.raw_get("/Contents") if "/Contents" in page else None
        resolved = raw.get_object() if raw is not None else None
        own = list(resolved) if isinstance(resolved, ArrayObject) else [raw] if raw is not None else []
        page[NameObject("/Contents")] = ArrayObject([save, *own, writer._add_object(after)])


# ---------------------------------------------------------------------------------------------------
# Entry points
# ---------------------------------------------------------------------------------------------------


def build_pdfs(html_dir: Path | str, out_dir: Path | str, *, workers: int = 2) -> BookPdfs:
    """Print the built book in ``html_dir`` to ``out_dir/book.pdf`` and ``out_dir/book-student.pdf``.

    Parameters
    ----------
    html_dir : path
        The built HTML book (``_build/html``); it is read, never changed.
    out_dir : path
        Where the two PDFs go (created if missing).
    workers : int
        Pages printed at the same time; one per core.

    Returns
    -------
    BookPdfs
        The two paths, their page counts and the wall time.

    Raises
    ------
    FileNotFoundError
        No built book in ``html_dir``, or no Chromium at ``/usr/bin/chromium``.
    TypeError, ValueError
        ``workers`` is not a positive int.
    """
    if isinstance(workers, bool) or not isinstance(workers, int):
        raise TypeError(f"workers must be an int; got {type(workers).__name__}")
    if workers < 1:
        raise ValueError(f"workers must be at least 1; got {workers}")
    html_dir, out_dir = Path(html_dir).resolve(), Path(out_dir).resolve()
    if not CHROMIUM.is_file():
        raise FileNotFoundError(MISSING_CHROMIUM)
    start = time.perf_counter()
    entries = toc_entries(html_dir)
    info = book_info(html_dir)
    # Playwright's async API gets a thread of its own: the caller may already run an event loop
    # (a test session with Playwright's sync API does).
    with ThreadPoolExecutor(max_workers=1) as pool:
        pages, front, base_url = pool.submit(
            asyncio.run, _print_book(html_dir, entries, info, workers)
        ).result()
    full = out_dir / FULL_NAME
    student = out_dir / STUDENT_NAME
    full_pages = join(pages, front[FULL_NAME], base_url, info, student=False, out=full)
    student_pages = join(pages, front[STUDENT_NAME], base_url, info, student=True, out=student)
    return BookPdfs(full, student, full_pages, student_pages, time.perf_counter() - start)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--html", type=Path, default=REPO_ROOT / "_build" / "html", help="the built book")
    parser.add_argument("--out", type=Path, default=REPO_ROOT / "_build" / "pdf", help="where the PDFs go")
    parser.add_argument("--workers", type=int, default=2, help="pages printed at once (default 2)")
    args = parser.parse_args(argv)
    try:
        result = build_pdfs(args.html, args.out, workers=args.workers)
    except (FileNotFoundError, ValueError, TypeError) as exc:
        print(f"print_pdf: {exc}", file=sys.stderr)
        return 1
    print(result.summary())
    return 0


if __name__ == "__main__":
    sys.exit(main())
