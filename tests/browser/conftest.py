"""Fixtures for the browser tests: the built book served locally, and one headless Chromium.

The HTML under ``_build/html`` (``BOOK_HTML_DIR`` overrides the location) is served by a
``ThreadingHTTPServer`` on 127.0.0.1 at a free port, for the whole session. Chromium is Debian's
``/usr/bin/chromium`` driven by Playwright; it is launched once per session and every test gets a
fresh browser context. A missing build or a missing browser is a failure, never a skip: a skipped
browser layer would let ``make test`` pass without having looked at a single page.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest
import yaml

from press.print_pdf import CHROMIUM, CHROMIUM_ARGS, serve

REPO_ROOT = Path(__file__).resolve().parents[2]
HTML_DIR = Path(os.environ.get("BOOK_HTML_DIR", REPO_ROOT / "_build" / "html")).resolve()
MISSING_BUILD = (
    f"The built book is missing: {HTML_DIR} has no index.html. Run `make book` first "
    "(`make browser` builds it before running these tests)."
)


# Generated pages that are not part of the book's reading path.
EXCLUDED_FILES = {"genindex.html", "search.html"}
EXCLUDED_DIRS = {"_static", "_sources", "_images", "reports"}
NOT_FOUND = "<no pages found in the build>"


def discover_pages(html_dir: Path) -> list[str]:
    """The book's pages in the build, as paths relative to ``html_dir`` (POSIX separators)."""
    if not html_dir.is_dir():
        return []
    pages = []
    for path in sorted(html_dir.rglob("*.html")):
        parts = path.relative_to(html_dir).parts
        rel = "/".join(parts)
        if rel in EXCLUDED_FILES or parts[0] in EXCLUDED_DIRS or any(p.startswith(".") for p in parts):
            continue
        pages.append(rel)
    return pages


def read_toc(toc_file: Path) -> list[str]:
    """The HTML file of every entry of ``_toc.yml`` (``root`` and every ``file``, at any depth)."""
    found: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                if key in ("root", "file") and isinstance(value, str):
                    found.append(re.sub(r"\.(md|ipynb|rst)$", "", value) + ".html")
                else:
                    walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(yaml.safe_load(toc_file.read_text(encoding="utf-8")))
    return found


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """One test per discovered page, named after it; a placeholder that fails if there are none."""
    if "page_rel" in metafunc.fixturenames:
        metafunc.parametrize("page_rel", discover_pages(HTML_DIR) or [NOT_FOUND], indirect=True)


# The files whose tests are independent of each other, one page each, with nothing built per module: make
# browser (`--dist loadscope`) sends each of their tests to whichever process is free. Every other file goes
# whole to one process, so what it builds once (the PDFs, a build with a repository URL, a page opened for
# several tests) is built once. Most of this layer's time is spent waiting on pages (typesetting, drawing,
# throttled loads), not computing, so it runs more processes than the machine has cores.
SPREAD = {"test_accessibility.py", "test_pages.py", "test_phone_layout.py", "test_page_weight.py",
          "test_navigation.py"}


def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """``--dist loadscope`` with a test file as the scope, but each test of ``SPREAD`` its own.

    (``--dist loadgroup`` with ``xdist_group`` marks would say the same, but under pytest 9 the groups never
    reach the node ids xdist's scheduler reads: each test ran wherever it fell, the PDFs printed thrice.)
    """
    if config.getoption("dist") != "loadscope":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class FileOrTest(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            path = nodeid.split("::", 1)[0]
            return nodeid if Path(path).name in SPREAD else path

    return FileOrTest(config, log)


@pytest.fixture
def page_rel(request: pytest.FixtureRequest, html_dir: Path) -> str:
    """The page under test, relative to ``html_dir``; fails (never skips) when there is none."""
    if request.param == NOT_FOUND:
        pytest.fail(f"no HTML pages found under {html_dir}. {MISSING_BUILD}", pytrace=False)
    return request.param


@pytest.fixture(scope="session")
def toc_pages() -> list[str]:
    """The HTML files the toc promises, in reading order."""
    return read_toc(REPO_ROOT / "_toc.yml")


@pytest.fixture(scope="session")
def discovered_pages(html_dir: Path) -> list[str]:
    return discover_pages(html_dir)


@pytest.fixture(scope="session")
def html_dir() -> Path:
    if not (HTML_DIR / "index.html").is_file():
        pytest.fail(MISSING_BUILD, pytrace=False)
    return HTML_DIR


@pytest.fixture(scope="session")
def base_url(html_dir: Path) -> Iterator[str]:
    """``http://127.0.0.1:PORT`` serving ``html_dir``; the port is chosen by the OS."""
    with serve(html_dir) as url:  # the server make pdf prints from
        yield url


@pytest.fixture(scope="session")
def browser() -> Iterator[object]:
    """One headless Chromium for the whole session."""
    if not CHROMIUM.is_file():
        pytest.fail(
            f"Chromium is not installed at {CHROMIUM}: run `apt-get install chromium` "
            "(never `playwright install`).",
            pytrace=False,
        )
    from playwright.sync_api import sync_playwright

    playwright = sync_playwright().start()
    try:
        chromium = playwright.chromium.launch(
            executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS
        )
        try:
            yield chromium
        finally:
            chromium.close()
    finally:
        playwright.stop()


@pytest.fixture
def open_page(browser: Any, base_url: str, html_dir: Path) -> Iterator[Callable[..., tuple[Any, Any]]]:
    """``open_page(path, figure_ids, missing_hint=None)``: ``(page, log)`` of ``path`` in a fresh
    context once its figures have rendered (``explorer_helpers.open_page``); closed after the test."""
    from explorer_helpers import open_page as open_chapter

    with ExitStack() as stack:

        def open_(path: str, figure_ids: Sequence[str], missing_hint: str | None = None) -> tuple[Any, Any]:
            return stack.enter_context(
                open_chapter(browser, base_url, html_dir, path, figure_ids, missing_hint)
            )

        yield open_

