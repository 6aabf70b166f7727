"""The book's matplotlib figures and its bibliography, as a reader meets them in the built pages.

* Every figure of a chapter is a numbered ``<figure>``: its caption starts "Figure 3.2", the numbers
  run 1, 2, 3, ... down each chapter, the image keeps its alt text, and a ``{numref}`` in the prose
  reads exactly as the figure it links to is numbered. No caption is left as a loose "Figure: ..."
  paragraph.
* Every figure is sharp on a high-density screen: a PNG holds at least twice the pixels it is shown
  at (or the figure is an SVG).
* In dark mode the figures are dimmed, not left as bright white cards, and their text stays readable;
  in light mode they are shown as drawn. Measured on the rendered pixels of a screenshot.
* The References page labels each work as the text cites it ("Vaswani et al., 2017", not
  "[VSP+17]"), and every citation link lands on an entry of that page.
"""

from __future__ import annotations

import io
import re
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from bs4 import BeautifulSoup
from sections import DRAW_SECTIONS_JS

from press.notebook_edition import is_deeper_page
from press.print_pdf import SCRIPTS_JS, bounded

# Every chapter and going-deeper page (03a_..., nested under its chapter): each has figures.
BOOK = Path(__file__).resolve().parents[2] / "book"
CHAPTERS = [f"book/{p.stem}.html" for p in sorted(BOOK.glob("[0-9]*.ipynb"))]
# The pages with numbered figures: most chapters (06 reads code and tables), some going-deeper pages.
FIGURED = [c for c in CHAPTERS if '"figure"' in (BOOK / f"{Path(c).stem}.ipynb").read_text(encoding="utf-8")]
FIGURE_IMAGES = 'div.cell_output img[src$=".png"], div.cell_output img[src$=".svg"]'
# A figure is an image, or a schematic drawn as inline SVG (attnlib.pipeline), its text alternative in
# its <title> and <desc>.
FIGURES = f"{FIGURE_IMAGES}, div.cell_output svg.attn-pipeline"
DARK_MAX_LUMINANCE = 0.5  # the brightest pixel of a figure in dark mode (white is 1, #dbdbdb 0.71)
MIN_TEXT_CONTRAST = 7.0  # black text against the figure's background, WCAG AAA for body text


@cache
def _soup(path: Path) -> BeautifulSoup:
    return BeautifulSoup(path.read_text(encoding="utf-8"), "html.parser")


def _figures(html_dir: Path, page: str) -> list[tuple[Any, Any]]:
    """(img or svg, its enclosing <figure> or None) for every figure of a page, in document order."""
    return [(img, img.find_parent("figure")) for img in _soup(html_dir / page).select(FIGURES)]


def _alt(img: Any) -> str:
    if img.name == "svg":
        return " ".join(t.get_text() for t in img.find_all(["title", "desc"], recursive=False))
    return img.get("alt", "")


def test_most_chapters_have_numbered_figures() -> None:
    assert len([c for c in FIGURED if not is_deeper_page(c)]) >= 5, FIGURED


def _number(figure: Any) -> str:
    span = figure.select_one("figcaption .caption-number") if figure is not None else None
    return span.get_text().strip() if span is not None else ""


# --------------------------------------------------------------------------- numbered figures
@pytest.mark.parametrize("page", FIGURED)
def test_every_figure_is_numbered_and_captioned(html_dir: Path, page: str) -> None:
    chapter = int(Path(page).name[:2])
    figures = _figures(html_dir, page)
    assert figures, f"{page}: no figure image found ({FIGURE_IMAGES})"
    # A going-deeper page continues its chapter's numbers (Figure 3.5 follows the chapter's 3.4).
    first = 1 + sum(len(_figures(html_dir, other)) for other in CHAPTERS
                    if Path(other).name[:2] == Path(page).name[:2] and other < page)
    for k, (img, figure) in enumerate(figures, start=first):
        where = f"{page}, figure image {k} ({img.get('src')})"
        assert figure is not None, f"{where} is not inside a <figure>"
        assert (figure.get("id") or "").startswith("fig-"), f"{where}: the <figure> has no fig-... id to cite"
        assert _number(figure) == f"Figure {chapter}.{k}", f"{where}: caption number {_number(figure)!r}"
        text = figure.select_one("figcaption .caption-text")
        assert text is not None and len(text.get_text().strip()) > 20, f"{where}: no caption text"
        assert len(_alt(img)) > 20, f"{where}: the image lost its alt text"
    loose = [p.get_text()[:60] for p in _soup(html_dir / page).select("p")
             if re.match(r"\s*Figure:", p.get_text())]
    assert not loose, f"{page}: captions left as paragraphs: {loose}"


def test_figure_references_read_as_the_figures_are_numbered(html_dir: Path) -> None:
    numbers = {f"{page}#{figure['id']}": _number(figure)
               for page in CHAPTERS for _, figure in _figures(html_dir, page) if figure is not None}
    refs = []
    for page in CHAPTERS:
        for a in _soup(html_dir / page).select('a.reference.internal[href*="#fig-"]'):
            href = a["href"]
            target = f"{page}{href}" if href.startswith("#") else str(Path(page).parent / href)
            refs.append((page, a.get_text().strip(), target))
    assert refs, "no {numref} to a figure anywhere in the chapters"
    for page, text, target in refs:
        assert target in numbers, f"{page}: a reference to {target}, which is no figure"
        assert text == numbers[target], f"{page}: a reference reads {text!r}, its figure {numbers[target]!r}"


# --------------------------------------------------------------------------- pixels
_LOADED = bounded("""async (sel) => {
  const imgs = [...document.querySelectorAll(sel)];
  for (const img of imgs) { img.loading = "eager"; await img.decode(); }
  return imgs.map((img) => ({src: img.getAttribute("src"), natural: img.naturalWidth,
                             shown: img.getBoundingClientRect().width}));
}""", "loading the figures' images", 60)


@pytest.mark.parametrize("page", FIGURED)
def test_figures_have_twice_the_pixels_they_are_shown_at(browser, base_url: str, page: str) -> None:
    context = browser.new_context(viewport={"width": 1366, "height": 900})
    try:
        tab = context.new_page()
        tab.goto(f"{base_url}/{page}")
        tab.evaluate(SCRIPTS_JS)  # the page's scripts load after its first paint
        tab.evaluate(DRAW_SECTIONS_JS)  # every section drawn (sections.py)
        images = tab.evaluate(_LOADED, FIGURE_IMAGES)
    finally:
        context.close()
    assert images, f"{page}: no figure image"
    soft = [i for i in images if not i["src"].endswith(".svg") and i["natural"] < 2 * i["shown"] - 1]
    assert not soft, f"{page}: PNGs with fewer than 2 pixels per displayed pixel: {soft}"


def _luminance(rgb: np.ndarray) -> np.ndarray:
    """WCAG relative luminance of sRGB values 0..255 (last axis: R, G, B)."""
    c = rgb[..., :3].astype(np.float64) / 255
    lin = np.where(c <= 0.03928, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)
    return lin @ np.array([0.2126, 0.7152, 0.0722])


def _extremes(png: bytes) -> tuple[float, float]:
    """Luminance of the brightest and the darkest pixel of a screenshot (the 99.9th and 0.1st
    percentiles, so a stray antialiased pixel does not decide)."""
    from PIL import Image

    lum = _luminance(np.asarray(Image.open(io.BytesIO(png)).convert("RGB")))
    return float(np.percentile(lum, 99.9)), float(np.percentile(lum, 0.1))


@pytest.mark.parametrize("scheme", ["dark", "light"])
@pytest.mark.parametrize("page", ["book/01_why_attention.html", "book/04_scaling.html"])
def test_figures_are_dimmed_in_dark_mode_and_stay_readable(browser, base_url: str, page: str,
                                                         scheme: str) -> None:
    context = browser.new_context(viewport={"width": 1366, "height": 900}, color_scheme=scheme)
    try:
        tab = context.new_page()
        tab.goto(f"{base_url}/{page}")
        tab.evaluate(SCRIPTS_JS)  # the page's scripts load after its first paint
        tab.evaluate(DRAW_SECTIONS_JS)  # every section drawn (sections.py)
        tab.wait_for_function(f"document.documentElement.dataset.theme === '{scheme}'")
        tab.evaluate(_LOADED, FIGURE_IMAGES)
        images = tab.locator(FIGURE_IMAGES)
        filters = images.evaluate_all("(imgs) => imgs.map((i) => getComputedStyle(i).filter)")
        shots = [images.nth(k).screenshot() for k in range(min(2, images.count()))]
    finally:
        context.close()
    for png in shots:
        brightest, darkest = _extremes(png)
        contrast = (brightest + 0.05) / (darkest + 0.05)
        assert contrast >= MIN_TEXT_CONTRAST, f"{page} ({scheme}): text contrast {contrast:.1f}:1"
        if scheme == "dark":
            assert brightest <= DARK_MAX_LUMINANCE, (
                f"{page}: a figure's background has luminance {brightest:.2f} in dark mode "
                f"(> {DARK_MAX_LUMINANCE}): a glaring card"
            )
        else:
            assert brightest > 0.98, f"{page}: in light mode a figure is altered (brightest {brightest:.2f})"
    if scheme == "light":
        assert set(filters) == {"none"}, f"{page}: light mode filters figures: {set(filters)}"
    else:
        assert all(f.startswith("brightness") for f in filters), f"{page}: {set(filters)}"


@pytest.mark.parametrize("scheme", ["dark", "light"])
def test_the_pipeline_schematic_takes_the_pages_ink(browser, base_url: str, scheme: str) -> None:
    """The schematic is drawn in currentColor on no background of its own: on the page's background, in
    the page's text colour, whatever the scheme (never the theme's light box of HTML outputs)."""
    context = browser.new_context(viewport={"width": 390, "height": 900}, color_scheme=scheme)
    try:
        tab = context.new_page()
        tab.goto(f"{base_url}/book/02_qkv.html")
        tab.evaluate(SCRIPTS_JS)
        tab.wait_for_function(f"document.documentElement.dataset.theme === '{scheme}'")
        found = tab.evaluate("""() => {
            const svg = document.querySelector('svg.attn-pipeline');
            const box = svg.getBoundingClientRect();
            const text = getComputedStyle(svg.querySelector('text'));
            let e = svg, bg = 'rgba(0, 0, 0, 0)';
            while (e && bg === 'rgba(0, 0, 0, 0)') {
                bg = getComputedStyle(e).backgroundColor;
                e = e.parentElement;
            }
            return {ink: text.fill, page: bg, width: box.width, viewport: innerWidth};
        }""")
    finally:
        context.close()

    def rgb(css: str) -> np.ndarray:
        return np.array([float(v) for v in re.findall(r"[\d.]+", css)[:3]])

    ink, page = _luminance(rgb(found["ink"])), _luminance(rgb(found["page"]))
    contrast = (max(ink, page) + 0.05) / (min(ink, page) + 0.05)
    assert contrast >= MIN_TEXT_CONTRAST, f"{scheme}: the schematic's text at {contrast:.1f}:1 ({found})"
    assert (page < 0.2) == (scheme == "dark"), f"{scheme}: the schematic sits on {found['page']}"
    assert found["width"] <= found["viewport"], f"{scheme}: wider than a phone's screen ({found})"


# --------------------------------------------------------------------------- bibliography
def test_bibliography_labels_are_the_citations_the_text_shows(html_dir: Path) -> None:
    bib = _soup(html_dir / "book" / "bibliography.html")
    labels = {}
    for entry in bib.select("div.citation"):
        label = entry.select_one("span.label")
        assert label is not None, f"a bibliography entry without a label: {entry.get_text()[:80]}"
        labels[entry["id"]] = label.get_text().strip().removeprefix("[").removesuffix("]")
    assert labels, "no bibliography entries"
    assert len(set(labels.values())) == len(labels), "two entries share a label"
    checked = 0
    for page in CHAPTERS:
        for citation in _soup(html_dir / page).select("span.bibtex-citation"):
            shown = " ".join(citation.get_text().split())
            for a in citation.select('a[href^="bibliography.html#"]'):
                target = a["href"].split("#", 1)[1]
                assert target in labels, f"{page}: the citation {shown!r} lands on no entry (#{target})"
                label, text = labels[target], " ".join(a.get_text().split())
                author, _, year = label.rpartition(", ")
                parenthetical = text == label
                textual = text == year and f"{author} [{year}" in shown
                assert parenthetical or textual, (
                    f"{page}: the text cites {shown!r} (link {text!r}); its entry is labelled [{label}]"
                )
                checked += 1
    assert checked > 50, f"only {checked} citation links found"
