"""The glossary (``book/glossary.md``) and its links: every term it defines links there where the book first
uses it, and again where the core path first uses it.

The pages are read in the order of ``_toc.yml`` up to the glossary itself (the start page, the notation
page, the chapters). The core path is the same order without the going-deeper pages, which a reader may
skip: a term linked first on a going-deeper page and used plainly in a later chapter would reach that
reader undefined. Their prose is what a reader reads as words: headings, code, math, link texts,
directive and option lines and the contents of roles other than ``{term}`` are left out. The first time a
term (or its plural) appears in that prose, it must be the text of a ``{term}`` role that targets it; an
appearance inside the link of a longer term ("attention" in "scaled dot-product attention") does not count
as a use of the shorter one.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from pathlib import Path

import pytest

from press.notebook_edition import is_deeper_page

ROOT = Path(__file__).resolve().parents[1]
GLOSSARY = ROOT / "book" / "glossary.md"

TERM_ROLE = re.compile(r"\{term\}`(?P<text>[^`<]*?)\s*(?:<(?P<target>[^>`]+)>)?`")
# What a reader does not read as running words: fenced code, display and inline math, code spans, other
# roles, link targets and texts, HTML tags.
_NOT_PROSE = re.compile(
    r"```.*?```|\$\$.*?\$\$|\$[^$\n]+\$|``.*?``|`[^`\n]*`|\{(?!term\})[\w:-]+\}`[^`]*`"
    r"|\[[^\]]*\]\([^)]*\)|<[^>\n]+>",
    re.S,
)


def glossary_terms() -> list[str]:
    """The terms of the ``{glossary}`` block, in their order on the page."""
    text = GLOSSARY.read_text(encoding="utf-8")
    block = re.search(r"```\{glossary\}\n(.*?)\n```", text, re.S)
    assert block, f"{GLOSSARY} has no glossary block"
    return [line for line in block.group(1).splitlines() if line and not line.startswith(" ")]


def reading_order() -> list[Path]:
    """The source of each page before the glossary, in the order of ``_toc.yml``."""
    toc = (ROOT / "_toc.yml").read_text(encoding="utf-8")
    entries = re.findall(r"^\s*(?:root|- file):\s*(\S+)\s*$", toc, flags=re.MULTILINE)
    pages = []
    for entry in entries:
        if entry == "book/glossary":
            return pages
        pages.append(next(p for p in (ROOT / f"{entry}.md", ROOT / f"{entry}.ipynb") if p.exists()))
    raise AssertionError("_toc.yml does not list book/glossary")


def core_path() -> list[Path]:
    """The reading order without the going-deeper pages (``04a_scaling_deeper.ipynb``)."""
    return [path for path in reading_order() if not is_deeper_page(path)]


def markdown_of(path: Path) -> list[str]:
    """A page's Markdown: the .md file, or each Markdown cell of a notebook."""
    if path.suffix == ".md":
        return [path.read_text(encoding="utf-8")]
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    return ["".join(c["source"]) for c in cells if c["cell_type"] == "markdown"]


def prose(markdown: str) -> str:
    """The running words of one page or cell, ``{term}`` roles kept; other markup becomes a space."""
    kept = []
    for line in _mask(markdown).splitlines():
        stripped = line.strip()
        if stripped.startswith(("#", ":", "(", "```", "%", "+++")) and not stripped.startswith("{term}"):
            continue  # headings, directive fences and options, targets, comments
        kept.append(line)
    return "\n".join(kept)


def _mask(markdown: str) -> str:
    protected: list[str] = []

    def keep(m: re.Match[str]) -> str:
        protected.append(m.group(0))
        return f"\x00{len(protected) - 1}\x00"

    text = TERM_ROLE.sub(keep, markdown)
    text = _NOT_PROSE.sub(" ", text)
    return re.sub(r"\x00(\d+)\x00", lambda m: protected[int(m.group(1))], text)


def forms(term: str) -> re.Pattern[str]:
    """The term and its plural as whole words, any case, a line break allowed between its words; "ALiBi-style"
    is a use of "ALiBi", "self-attention" not one of "attention"."""
    plural = term[:-1] + "ies" if re.search(r"[^aeiou]y$", term) else term + "s"
    words = "|".join(r"\s+".join(map(re.escape, t.split(" "))) for t in (term, plural))
    return re.compile(rf"(?<![\w-])(?:{words})(?!\w)", re.I)


def first_use(term: str, pages: list[Path] | None = None) -> tuple[str, str, bool]:
    """Where the term first appears in ``pages`` (the whole reading order by default): the page, the words
    around it, and whether that is its link."""
    paths = reading_order() if pages is None else pages
    return first_use_in(term, ((path.name, markdown_of(path)) for path in paths))


def first_use_in(term: str, pages: Iterable[tuple[str, list[str]]]) -> tuple[str, str, bool]:
    """``first_use`` over (page name, Markdown cells) pairs."""
    pattern = forms(term)
    for name, cells in pages:
        for cell in cells:
            text = prose(cell)
            position = 0
            for m in TERM_ROLE.finditer(text):
                plain = pattern.search(text, position, m.start())
                if plain:
                    return name, text[max(0, plain.start() - 60): plain.end() + 30], False
                target = (m.group("target") or m.group("text")).strip()
                if target.lower() == term.lower():
                    return name, m.group(0), True
                position = m.end()
            plain = pattern.search(text, position)
            if plain:
                return name, text[max(0, plain.start() - 60): plain.end() + 30], False
    return "", "", False


TERMS = glossary_terms()


def test_the_glossary_defines_terms_in_alphabetical_order() -> None:
    assert len(TERMS) >= 30, TERMS
    alphabetical = sorted(TERMS, key=lambda t: t.casefold().replace("μ", "mu"))
    assert TERMS == alphabetical, "keep the glossary alphabetical"


@pytest.mark.parametrize("term", TERMS)
def test_a_term_links_to_the_glossary_where_the_book_first_uses_it(term: str) -> None:
    page, context, linked = first_use(term)
    assert page, f"no page before the glossary uses {term!r}: define only terms the book uses"
    assert linked, f"{term!r} is first used in {page} without a {{term}} link: …{context.strip()}…"


@pytest.mark.parametrize("term", TERMS)
def test_a_term_links_to_the_glossary_where_the_core_path_first_uses_it(term: str) -> None:
    page, context, linked = first_use(term, core_path())
    assert linked or not page, (
        f"on the core path (going-deeper pages left out) {term!r} is first used in {page} without a "
        f"{{term}} link: …{context.strip()}…"
    )


def test_every_term_link_targets_a_glossary_term() -> None:
    known = {t.lower() for t in TERMS}
    for path in sorted((ROOT / "book").glob("*.ipynb")) + sorted((ROOT / "book").glob("*.md")):
        for cell in markdown_of(path):
            for m in TERM_ROLE.finditer(cell):
                target = (m.group("target") or m.group("text")).strip()
                assert target.lower() in known, f"{path.name}: {m.group(0)} names no glossary term"


def test_first_use_finds_a_plain_use_before_a_link() -> None:
    """The checker itself: a plain use before the link fails; a longer term's link is not a use."""
    assert TERM_ROLE.search("{term}`keys <key>`").group("target") == "key"
    text = prose("A key, then a {term}`key`.")
    assert forms("key").search(text).start() < text.index("{term}")
    masked = prose("The {term}`scaled dot-product attention` and `attention` in code, $attention$.")
    assert not forms("attention").search(TERM_ROLE.sub(" ", masked))
    assert prose("# Attention\n\nwords") == "\nwords"


def test_the_core_path_is_the_reading_order_without_the_going_deeper_pages() -> None:
    """The checker itself: a term linked only on a going-deeper page counts as linked for the whole book and
    as unlinked for the core path, where its first use is the plain one of the later chapter."""
    order, core = reading_order(), core_path()
    skipped = [path.name for path in order if path not in core]
    assert skipped and all(is_deeper_page(name) for name in skipped), skipped
    assert not any(is_deeper_page(path) for path in core)
    assert {"intro.md", "notation.md", "04_scaling.ipynb"} <= {path.name for path in core}
    pages = [("03_a.ipynb", ["Scores, then weights."]), ("03a_a_deeper.ipynb", ["A {term}`logit <Logit>`."]),
             ("05_b.ipynb", ["Every logit of a row."])]
    assert first_use_in("Logit", pages)[::2] == ("03a_a_deeper.ipynb", True)
    assert first_use_in("Logit", [p for p in pages if not is_deeper_page(p[0])])[::2] == ("05_b.ipynb", False)
