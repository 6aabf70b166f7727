"""Every built page stays light: at most 1.5 MB transferred, not counting plotly.js and MathJax.

"Transferred" is what a static host sends: text assets (HTML, JavaScript, CSS) gzip-compressed,
as GitHub Pages, Read the Docs and nginx's defaults do, and images as they are. The two large
shared libraries, plotly.min.js (pages with explorers) and MathJax (pages with math), are
excluded, as the book's requirement states; everything else a page loads is counted, including
the theme's own scripts and styles. The page's own weight (its HTML and images, uncompressed) is
checked separately, so a chapter cannot hide a heavy figure behind compression.
"""

from __future__ import annotations

import gzip
from functools import cache
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import urldefrag, urlsplit

LIMIT = 1_500_000  # bytes
EXCLUDED = ("_static/plotly/", "_static/mathjax/")
TEXT_SUFFIXES = {".html", ".js", ".css", ".svg", ".json", ".map"}


class _Assets(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.urls: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag in ("script", "img") and a.get("src"):
            self.urls.append(a["src"] or "")
        if tag == "link" and (a.get("rel") or "") in ("stylesheet",) and a.get("href"):
            self.urls.append(a["href"] or "")


@cache
def _transfer_size(path: Path) -> int:
    data = path.read_bytes()
    return len(gzip.compress(data, 6)) if path.suffix in TEXT_SUFFIXES else len(data)


def _local_assets(html_dir: Path, page: Path) -> list[Path]:
    parser = _Assets()
    parser.feed(page.read_text(encoding="utf-8"))
    found = []
    for url in parser.urls:
        parts = urlsplit(urldefrag(url)[0])
        if parts.scheme or parts.netloc or not parts.path:
            continue  # other hosts are the browser tests' business (they forbid them)
        target = (page.parent / parts.path).resolve()
        rel = target.relative_to(html_dir.resolve()).as_posix()
        if target.is_file() and not rel.startswith(EXCLUDED):
            found.append(target)
    return found


def test_page_weight(html_dir: Path, page_rel: str) -> None:
    page = html_dir / page_rel
    assets = _local_assets(html_dir, page)
    transferred = _transfer_size(page) + sum(_transfer_size(a) for a in set(assets))
    own = page.stat().st_size + sum(a.stat().st_size for a in set(assets) if "_images" in a.parts)
    assert transferred <= LIMIT, (
        f"{page_rel}: {transferred / 1e6:.2f} MB transferred (gzip for text) > {LIMIT / 1e6} MB; "
        f"largest: {sorted(((_transfer_size(a), a.name) for a in assets), reverse=True)[:3]}"
    )
    assert own <= LIMIT, f"{page_rel}: its HTML and images weigh {own / 1e6:.2f} MB > {LIMIT / 1e6} MB"


def test_weight_check_counts_the_theme(html_dir: Path) -> None:
    # Guard against a parser that finds nothing: a chapter page loads the theme's scripts and styles.
    assets = _local_assets(html_dir, html_dir / "book" / "intro.html")
    names = {a.name for a in assets}
    assert "pydata-sphinx-theme.css" in names or any(n.endswith(".css") for n in names), names
    assert any(n.endswith(".js") for n in names), names

