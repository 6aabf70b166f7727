"""Every chapter page of the built book shows its reading times (book/press/reading_time.py).

Read from the built HTML (no browser): under the title of each chapter page of the toc, one line for the
page; under each ``##`` heading but Exercises and the quiz that takes at least
``SECTION_LINE_MINUTES``, one line for the section; none inside a heading, none elsewhere. The page total
is rounded once, the sections each on their own, so the total lies between the sum of the sections'
minutes less one a section and that sum plus the short sections' at most and the introduction's
minutes. The counting rules themselves are tested in tests/test_reading_time.py.
"""

from __future__ import annotations

import re
from pathlib import Path

from bs4 import BeautifulSoup, Tag

from press import reading_time as rt
from press.notebook_edition import is_deeper_page

REPO_ROOT = Path(__file__).resolve().parents[2]

PAGE_LINE = re.compile(r"About (\d+) min of reading with the code and figures(, plus exercises)?")
SECTION_LINE = re.compile(r"About (\d+) min")
# The core path (chapters without their going-deeper pages) reads in at most three hours, and a first
# evening (chapters 1-3) in at most 90 minutes, code, outputs, figures and explorers included (issue 28).
CORE_PATH_MINUTES = 180
FIRST_EVENING_MINUTES = 90


def _chapters(toc_pages: list[str]) -> list[str]:
    pages = [p for p in toc_pages if re.fullmatch(rt.CHAPTER_PAGES + r"\.html", p)]
    assert len(pages) >= 8, f"the toc's chapter pages: {pages}"
    assert "book/04a_scaling_deeper.html" in pages, "a going-deeper page is a chapter page too"
    return pages


def _heading_text(heading: Tag) -> str:
    """A heading as written: without its section number and its "#" link."""
    for extra in heading.select(".section-number, .headerlink"):
        extra.extract()
    return heading.get_text(" ", strip=True)


def _line_after(heading: Tag) -> Tag | None:
    line = heading.find_next_sibling()
    return line if isinstance(line, Tag) and "reading-time" in (line.get("class") or []) else None


def _intro_words(page: Tag) -> int:
    """Words under the title before the first section, counted loosely (more than the extension's
    count: punctuation and the parts of a formula are words here), so an upper bound."""
    words = 0
    for child in page.find_all(recursive=False):
        if child.name == "section":
            break
        if "cell" not in (child.get("class") or []) and "reading-time" not in (child.get("class") or []):
            words += len(child.get_text(" ").split())
    return words


def test_every_chapter_page_shows_its_reading_times(html_dir: Path, toc_pages: list[str]) -> None:
    for rel in _chapters(toc_pages):
        soup = BeautifulSoup((html_dir / rel).read_text(encoding="utf-8"), "html.parser")
        h1 = soup.select_one("article section > h1")
        assert h1 is not None, f"{rel}: no title"
        page = h1.parent
        page_line = _line_after(h1)
        assert page_line is not None, f"{rel}: no reading time under the title"
        total = PAGE_LINE.fullmatch(page_line.get_text(strip=True))
        assert total, f"{rel}: {page_line.get_text(strip=True)!r}"

        minutes, titles, short = [], [], 0
        for section in page.find_all("section", recursive=False):
            h2 = section.find("h2", recursive=False)
            assert h2 is not None, f"{rel}: a section without an h2"
            title = _heading_text(h2)
            titles.append(title)
            line = _line_after(h2)
            if title in rt.UNTIMED_SECTIONS:
                assert line is None, f"{rel}: {title!r} has a reading time"
                continue
            if line is None:  # a section under SECTION_LINE_MINUTES: no line, at most that less one
                short += 1
                continue
            found = SECTION_LINE.fullmatch(line.get_text(strip=True))
            assert found, f"{rel}, {title!r}: {line.get_text(strip=True)!r}"
            assert int(found.group(1)) >= rt.SECTION_LINE_MINUTES, f"{rel}, {title!r}: a line, yet short"
            minutes.append(int(found.group(1)))

        assert minutes, f"{rel}: no section long enough for a line"
        lines = soup.select(".reading-time")
        assert len(lines) == len(minutes) + 1, f"{rel}: {len(lines)} lines for {len(minutes)} sections"
        assert not soup.select("h1 .reading-time, h2 .reading-time, h3 .reading-time, h4 .reading-time")
        assert bool(total.group(2)) == ("Exercises" in titles), f"{rel}: 'plus exercises' iff it has them"
        page_minutes = int(total.group(1))
        intro = rt.minutes(_intro_words(page))
        most = sum(minutes) + short * (rt.SECTION_LINE_MINUTES - 1) + intro
        assert sum(minutes) - len(minutes) <= page_minutes <= most, (
            f"{rel}: the page says {page_minutes} min, its sections {minutes}, its introduction <= {intro}")


def _said_minutes(text: str) -> int:
    """``"1 h 39 min"``, ``"2 h"`` or ``"43 min"`` as minutes (the inverse of ``reading_time.hours``)."""
    found = re.fullmatch(r"(?:(\d+) h)? ?(?:(\d+) min)?", text.strip())
    assert found and any(found.groups()), text
    return int(found.group(1) or 0) * 60 + int(found.group(2) or 0)


def test_the_introduction_lists_every_chapters_minutes_as_its_page_shows_them(
        html_dir: Path, toc_pages: list[str]) -> None:
    """The reading path on the introduction ({reading-path}): one row per chapter in toc order, its core
    minutes as the chapter's page line says them, its going-deeper pages' minutes as theirs do, and the
    totals their sums."""
    def shown(rel: str) -> int:
        soup = BeautifulSoup((html_dir / rel).read_text(encoding="utf-8"), "html.parser")
        line = soup.select_one("article section > h1 + .reading-time")
        assert line is not None, rel
        found = PAGE_LINE.fullmatch(line.get_text(strip=True))
        assert found, rel
        return int(found.group(1))

    intro = BeautifulSoup((html_dir / "book/intro.html").read_text(encoding="utf-8"), "html.parser")
    assert rt.PATH_MARK not in str(intro), "the placeholder was not replaced"
    table = intro.select_one("table.reading-path-table")
    assert table is not None and table.caption is not None
    pages = _chapters(toc_pages)
    chapters = [p for p in pages if not is_deeper_page(p)]
    start_row, *rows = table.tbody.find_all("tr")
    assert start_row.th.get_text() == "Start here: the introduction and Notation"
    start = int(re.match(r"(\d+) min", start_row.td.get_text()).group(1))
    assert start > 0, "the pages read before chapter 1 take no time"
    assert [r.th.a["href"] for r in rows] == [p.removeprefix("book/") for p in chapters]
    core, deep = start, 0
    for row, chapter in zip(rows, chapters, strict=True):
        minutes = int(re.match(r"(\d+) min", row.td.get_text()).group(1))
        assert minutes == shown(chapter), chapter
        core += minutes
        deeper = [p for p in pages if p.startswith(chapter[:7]) and p != chapter]
        cell = row.find_all("td")[1]
        assert [a["href"] for a in cell.find_all("a")] == [p.removeprefix("book/") for p in deeper]
        for page, m in zip(deeper, re.findall(r", (\d+) min", cell.get_text()), strict=True):
            assert int(m) == shown(page), page
            deep += int(m)
    foot = [[c.get_text() for c in tr.find_all(["th", "td"])] for tr in table.tfoot.find_all("tr")]
    assert foot[0][1:3] == [rt.hours(core), rt.hours(deep)]
    with_practice = [_said_minutes(r.find_all("td")[-2].get_text()) for r in rows]
    assert all(p > shown(c) for p, c in zip(with_practice, chapters, strict=True)), "exercises add time"
    assert foot[0][3] == rt.hours(start + sum(with_practice))
    # the last column: the core and each chapter's essential exercise, at the minutes its tag line states
    essential = [_said_minutes(r.find_all("td")[-1].get_text()) - shown(c)
                 for r, c in zip(rows, chapters, strict=True)]
    stated = []
    for chapter in chapters:
        soup = BeautifulSoup((html_dir / chapter).read_text(encoding="utf-8"), "html.parser")
        stated.append(sum(int(m) for m in rt.ESSENTIAL_TAG.findall(soup.get_text(" "))))
    assert essential == stated and all(stated), f"essential minutes {essential}, the tag lines say {stated}"
    assert foot[0][4] == rt.hours(core + sum(essential))
    first = start + sum(shown(c) for c in chapters[:rt.FIRST_EVENING])
    assert foot[1][0] == f"A first evening: start here and chapters 1–{rt.FIRST_EVENING}"
    assert foot[1][1] == rt.hours(first)
    assert first <= FIRST_EVENING_MINUTES, (
        f"chapters 1-{rt.FIRST_EVENING} read in {rt.hours(first)}, over a first evening's "
        f"{rt.hours(FIRST_EVENING_MINUTES)}")
    assert core <= CORE_PATH_MINUTES, (
        f"the core path reads in {rt.hours(core)}, over its budget of {rt.hours(CORE_PATH_MINUTES)}: tighten "
        "the prose, or move what serves verification or the curious to a going-deeper page")
