"""Critical stylesheets: the rules a page needs for its first paint, and later only what its scripts need.

Lighthouse's mobile profile (1.6 Mbit/s, a plain static server with no compression) counts every byte of
a render-blocking stylesheet into a page's first paint. ``lean_styles`` gives every page one bundle
(about 145 KB: the theme, Bootstrap, the extensions and the book's own sheets), of which a page's
elements, before any script runs, can match about half; the rest styles what scripts build later
(tooltips, dropdowns, copy buttons, explorers' panels), print, or other pages.

Each page that loads its scripts after the first paint (``lean_pages.scripts_after_first_paint``) then
links three sheets split from its bundle, each with the bundle's rules in their order:

* ``_static/lean/critical-<hash>.css``, render-blocking: the rules that can match the page as written,
  in either colour scheme, in any state (``:hover``...), or that name a class only an inline script or a
  script that runs before the first paint (``BEFORE_PAINT_SCRIPTS``) gives; ``@font-face``,
  ``@keyframes`` and licence comments whole. A page read without JavaScript needs nothing else on screen.
* ``_static/lean/print-<hash>.css``, linked with ``media="print"`` (which blocks no paint): its
  ``@media print`` blocks, after the critical sheet as they stood after the screen rules.
* ``_static/lean/late-<hash>.css``, named by the critical link's ``data-lean-late``: the rules for what
  the page's scripts build (their classes appear in a script the page loads, or carry a prefix scripts
  build names from, ``LATE_PREFIXES``). The page's script loader inserts it just before the critical
  sheet once the page has painted, and runs the scripts once it has loaded. Its selectors name classes,
  so adding it restyles only the elements that carry them (a second copy of the whole bundle after the
  critical sheet cost a chapter page 0.3-0.5 s of style recalculation on Lighthouse's slow phone).

Before the critical sheet, a late rule loses to a critical rule of the same specificity that followed it
in the bundle, as before; one that the bundle put after such a rule now loses to it too. The rules the
late sheet holds are mostly the theme's and Bootstrap's (early in the bundle) for elements scripts add,
which the book's own sheets (last in the bundle) override, so this order keeps their cascade; put the
other way (late after critical) a theme rule for tables in an explorer's later states overrode the
book's table borders. The browser tests look at the pages after their scripts have run (dark mode,
explorers, quizzes, colours). Matching is conservative: dynamic pseudo-classes and pseudo-elements count
as matching whatever the state; a selector soupsieve cannot read, or with a dynamic state inside
``:not()``, is critical. Rules no element of the page, its scripts or its print can match are dropped.
"""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

import soupsieve
from bs4 import BeautifulSoup, Tag

from press.lean_styles import (
    BUNDLE_DIR,
    BUNDLE_PREFIX,
    _css_statements,
    _split_selectors,
    loaded_scripts,
)

PREFIXES = ("critical-", "late-", "print-")  # the three sheets of a page: _static/lean/<prefix><hash>.css
LATE_ATTRIBUTE = "data-lean-late"  # on the critical link: the late sheet (lean_pages' loader reads it)
# Classes scripts build from pieces (Bootstrap's "bs-tooltip-" + placement, quiz.js' PREFIX + "answer").
LATE_PREFIXES = ("bs-", "attnlib-")
# Deferred scripts that stay before the first paint (lean_pages.KEEP_DEFERRED): the classes they give
# elements must be styled when they run, before the whole bundle arrives.
BEFORE_PAINT_SCRIPTS = ("togglebutton.js", "scripts/sphinx-book-theme.js")
# Pseudo-classes whose match depends only on the document as written: soupsieve evaluates them.
STRUCTURAL = {"not", "is", "where", "has", "root", "empty", "first-child", "last-child", "only-child",
              "first-of-type", "last-of-type", "only-of-type", "nth-child", "nth-last-child",
              "nth-of-type", "nth-last-of-type", "scope"}
# The colour scheme is set on <html> by an inline script (data-theme, data-mode: light, dark or auto).
SCHEME_ATTRIBUTES = ("data-theme", "data-mode")
SCHEMES = ("light", "dark", "auto")

_PRINT = re.compile(r"@media\s+print", re.I)
_PSEUDO = re.compile(r"(::?)(-?[A-Za-z][\w-]*)(\((?:[^()]|\([^()]*\))*\))?")
_NOT_ARGUMENT = re.compile(r":not\(((?:[^()]|\([^()]*\))*)\)")
_SEL_CLASS = re.compile(r"\.(-?[_a-zA-Z][\w-]*)")
_SEL_ID = re.compile(r"#(-?[_a-zA-Z][\w-]*)")
_SEL_FUNCTIONAL = re.compile(r":(?:not|is|where|has)\((?:[^()]|\([^()]*\))*\)")
_TOKEN = re.compile(r"[A-Za-z_][\w-]*")
_SEL_TAG = re.compile(r"[A-Za-z][\w-]*")  # a type selector at the start of a compound
_BUNDLE_LINK = re.compile(r'([ \t]*)<link rel="stylesheet" href="([^"]*' + BUNDLE_DIR + "/" + BUNDLE_PREFIX
                          + r'[0-9a-f]+\.css)" />\n?')


def _names(selector: str) -> set[str]:
    """The classes and ids ``selector`` requires (not those of attribute selectors or ``:not()``...)."""
    bare = _SEL_FUNCTIONAL.sub("", re.sub(r"\[[^\]]*\]", "", selector))
    return set(_SEL_CLASS.findall(bare) + _SEL_ID.findall(bare))


def _is_dynamic(match: re.Match[str]) -> bool:
    return match.group(1) == "::" or match.group(2).lower() not in STRUCTURAL


def static_form(selector: str) -> str | None:
    """``selector`` with every dynamic pseudo-class and pseudo-element read as "any state": replaced by
    ``:is(*)``. None when a dynamic state sits inside ``:not()`` (its static form would be wrong)."""
    for argument in _NOT_ARGUMENT.findall(selector):
        if any(_is_dynamic(m) for m in _PSEUDO.finditer(argument)):
            return None
    return _PSEUDO.sub(lambda m: ":is(*)" if _is_dynamic(m) else m.group(0), selector)


class Page:
    """One built page as the browser has it before any script runs, for selector matching."""

    def __init__(self, html: str, script_tokens: set[str],
                 later_tokens: frozenset[str] | set[str] = frozenset(), indexed: bool = True) -> None:
        self.soup = BeautifulSoup(html, "html.parser")
        self.tokens: set[str] = set()
        # The elements by class, id and tag name: a selector is tried only on the elements its last
        # compound names (a full scan of a 30,000-element page for each of 30,000 selectors took 80 % of
        # the build), unless ``indexed`` is False (the tests compare both).
        self.indexed = indexed
        self._by: dict[tuple[str, str], list[Tag]] = {}
        for tag in self.soup.find_all(True):
            classes = [str(c) for c in tag.get("class") or []]
            self.tokens.update(classes)
            keys = [("class", str(c)) for c in classes] + [("tag", tag.name.lower())]
            if tag.get("id"):
                self.tokens.add(str(tag["id"]))
                keys.append(("id", str(tag["id"])))
            for key in keys:
                self._by.setdefault(key, []).append(tag)
        self.script_tokens = script_tokens
        for script in self.soup.find_all("script"):
            if not script.get("src"):
                self.script_tokens = self.script_tokens | set(_TOKEN.findall(script.get_text()))
        self.later_tokens = self.tokens | self.script_tokens | later_tokens
        root = self.soup.find("html")
        self.root = root if isinstance(root, Tag) else None
        self._cache: dict[str, bool] = {}

    def may_match(self, selector: str) -> bool:
        """Whether ``selector`` can match this page at its first paint (see the module's docstring)."""
        if selector not in self._cache:
            self._cache[selector] = self._may_match(selector)
        return self._cache[selector]

    def may_match_later(self, selector: str) -> bool:
        """Whether ``selector`` can match once the page's scripts have run: every class and id it names
        is the page's or a loaded script's, or has a prefix scripts build names from."""
        return all(name in self.later_tokens or name.startswith(LATE_PREFIXES) for name in _names(selector))

    def _may_match(self, selector: str) -> bool:
        names = _names(selector)
        if not names <= self.tokens | self.script_tokens:
            return False  # names a class or id that neither the page nor an early script has
        if not names <= self.tokens:
            return True  # an early script's class: it can match before the whole bundle arrives
        form = static_form(selector)
        if form is None:
            return True
        try:
            compiled = soupsieve.compile(form)
        except (soupsieve.SelectorSyntaxError, NotImplementedError, ValueError):
            return True  # a selector soupsieve cannot read: kept
        candidates = self._candidates(form)
        if self.root is None or not any(a in selector for a in SCHEME_ATTRIBUTES):
            return self._matches(compiled, candidates)
        saved = {a: self.root.get(a) for a in SCHEME_ATTRIBUTES}
        try:
            for scheme in SCHEMES:
                for attribute in SCHEME_ATTRIBUTES:
                    self.root[attribute] = scheme
                if self._matches(compiled, candidates):
                    return True
            return False
        finally:
            for attribute, value in saved.items():
                if value is None:
                    del self.root[attribute]
                else:
                    self.root[attribute] = value


    def _matches(self, compiled: soupsieve.SoupSieve, candidates: list[Tag] | None) -> bool:
        if candidates is None:
            return compiled.select_one(self.soup) is not None
        return any(compiled.match(tag) for tag in candidates)

    def _candidates(self, form: str) -> list[Tag] | None:
        """The elements that can be the subject of ``form``, or None to scan the whole page (no index, an
        escape, ``:scope``, which means the document to ``select`` but the element itself to ``match``,
        or nothing to narrow by). The fewest of: the elements with the rarest class, id or tag name of the
        last compound; the descendants of the elements with the rarest key of a compound joined to the
        last by descendant and child combinators only (``.a .b > span``: the spans inside an ``.a``)."""
        if not self.indexed or "\\" in form or ":scope" in form:
            return None
        compounds = _compounds(form)
        if compounds is None:
            return None
        subject_keys = _keys(compounds[-1][1])
        if subject_keys is None:
            return None
        own = min((self._by.get(key, []) for key in subject_keys), key=len) if subject_keys else None
        ancestors: list[Tag] | None = None
        for j in range(len(compounds) - 1, 0, -1):
            if compounds[j][0] not in " >":
                break
            keys = _keys(compounds[j - 1][1])
            if keys:
                found = min((self._by.get(key, []) for key in keys), key=len)
                if ancestors is None or len(found) < len(ancestors):
                    ancestors = found
        if ancestors is None or (own is not None and len(own) <= len(ancestors)):
            return own
        inside: dict[int, Tag] = {}
        for ancestor in ancestors:
            for tag in ancestor.find_all(True):
                if subject_keys == [] or all(_has(tag, key) for key in subject_keys):
                    inside[id(tag)] = tag
            if own is not None and len(inside) > len(own):
                return own
        return list(inside.values())


def _has(tag: Tag, key: tuple[str, str]) -> bool:
    kind, name = key
    if kind == "tag":
        return tag.name.lower() == name
    if kind == "id":
        return tag.get("id") == name
    return name in (tag.get("class") or [])


def _keys(compound: str) -> list[tuple[str, str]] | None:
    """The classes, ids and tag name a compound requires (outside ``:not()``, ``:is()``... and attribute
    selectors); None for a namespaced one (``svg|a``), which the index cannot read."""
    bare = _SEL_FUNCTIONAL.sub("", re.sub(r"\[[^\]]*\]", "", compound))
    if "|" in bare:
        return None
    keys = [("class", c) for c in _SEL_CLASS.findall(bare)] + [("id", i) for i in _SEL_ID.findall(bare)]
    tag = _SEL_TAG.match(bare)
    if tag:
        keys.append(("tag", tag.group(0).lower()))
    return keys


def _compounds(selector: str) -> list[tuple[str, str]] | None:
    """``selector`` as ``(combinator, compound)`` pairs, outside brackets and quotes: the first combinator
    is "", then " ", ">", "+" or "~". None if a combinator has no compound after it."""
    parts: list[tuple[str, str]] = []
    depth, quote, combinator, current = 0, "", "", ""
    for c in selector.strip():
        if quote or depth:
            current += c
            if quote and c == quote:
                quote = ""
            elif not quote and c in "\"'":
                quote = c
            elif not quote and c in "([":
                depth += 1
            elif not quote and c in ")]":
                depth -= 1
        elif c.isspace() or c in ">+~":
            if current:
                parts.append((combinator, current))
                current, combinator = "", " "
            if c in ">+~":
                combinator = c
        else:
            current += c
            if c in "\"'":
                quote = c
            elif c in "([":
                depth += 1
    if not current:
        return None
    parts.append((combinator, current))
    return parts


def split_css(css: str, page: Page, printing: bool = False) -> tuple[str, str, str]:
    """``(critical, late, printed)``: the statements of ``css`` that ``page`` needs for its first paint,
    those only its scripts' elements can match, and its ``@media print`` blocks, each in their order; the
    rules nothing on the page can ever match are dropped."""
    critical: list[str] = []
    late: list[str] = []
    printed: list[str] = []
    for prelude, block in _css_statements(css):
        if block is None:
            if prelude.startswith("/*!") or prelude.lower().startswith("@charset"):
                critical.append(prelude)  # licence comments stay with the code they cover
            continue
        if prelude.startswith("@"):
            keyword = prelude.split(None, 1)[0].lower()
            if keyword in ("@media", "@supports", "@container", "@layer"):
                in_print = printing or _PRINT.fullmatch(prelude.strip()) is not None
                parts = split_css(block, page, in_print)
                for out, text in zip((critical, late, printed), parts, strict=True):
                    if text:
                        out.append(f"{prelude}{{{text}}}")
            else:
                (printed if printing else critical).append(f"{prelude}{{{block}}}")  # @font-face...
            continue
        selectors = _split_selectors(prelude)
        if printing:
            kept = [s for s in selectors if page.may_match_later(s)]
            if kept:
                printed.append(f"{','.join(kept)}{{{block}}}")
            continue
        first = [s for s in selectors if page.may_match(s)]
        later = [s for s in selectors if s not in first and page.may_match_later(s)]
        if first:
            critical.append(f"{','.join(first)}{{{block}}}")
        if later:
            late.append(f"{','.join(later)}{{{block}}}")
    return "".join(critical), "".join(late), "".join(printed)


def _write_sheet(directory: Path, prefix: str, css: str, note: str) -> str:
    """Write ``css`` as ``<prefix><hash>.css`` under ``directory`` (an ``@charset`` stays first); its name."""
    charset = re.match(r'@charset "[^"]*";', css)
    head = charset.group(0) + "\n" if charset else ""
    text = f"{head}/* lean_pages (book/press/critical_styles.py): {note} */\n{css[len(head.strip()):]}\n"
    name = f"{prefix}{hashlib.sha256(text.encode('utf-8')).hexdigest()[:12]}.css"
    (directory / name).write_text(text, encoding="utf-8")
    return name


def _early_script_tokens(static: Path) -> set[str]:
    tokens: set[str] = set()
    for name in BEFORE_PAINT_SCRIPTS:
        path = static / name
        if path.is_file():
            tokens.update(_TOKEN.findall(path.read_text(encoding="utf-8", errors="replace")))
    return tokens


def split_critical(outdir: Path, pages: list[Path], marker: str) -> tuple[int, int, int, int, int]:
    """Link every page that holds ``marker`` (its script loader) to its critical and late stylesheets.

    Returns ``(pages changed, bytes of the largest bundle, of the largest critical, late and print sheets)``.
    """
    static = outdir / "_static"
    bundle_dir = static / BUNDLE_DIR
    early = _script_tokens([static / name for name in BEFORE_PAINT_SCRIPTS])
    changed, sizes = 0, [0, 0, 0, 0]
    for path in pages:
        html = path.read_text(encoding="utf-8")
        link = _BUNDLE_LINK.search(html)
        if marker not in html or link is None:
            continue
        bundle = (path.parent / link.group(2)).resolve()
        css = bundle.read_text(encoding="utf-8")
        page = Page(html, early, _script_tokens(loaded_scripts([path], static)))
        critical, late, printed = split_css(css, page)
        what = (f"first-paint rules of {bundle.name}", f"rules of {bundle.name} only scripts need, for "
                f"{path.name}", f"print rules of {bundle.name}, for {path.name}")
        names = [_write_sheet(bundle_dir, prefix, text, note)
                 for prefix, text, note in zip(PREFIXES, (critical, late, printed), what, strict=True)]
        href, late_href, print_href = (Path(os.path.relpath(bundle_dir / n, path.parent)).as_posix()
                                       for n in names)
        indent = link.group(1)
        new = (f'{indent}<link rel="stylesheet" href="{href}" {LATE_ATTRIBUTE}="{late_href}" />\n'
               f'{indent}<link rel="stylesheet" href="{print_href}" media="print" />\n')
        path.write_text(html[:link.start()] + new + html[link.end():], encoding="utf-8")
        changed += 1
        found = (len(css.encode("utf-8")), *((bundle_dir / n).stat().st_size for n in names))
        sizes = [max(pair) for pair in zip(sizes, found, strict=True)]
    return changed, sizes[0], sizes[1], sizes[2], sizes[3]


_TOKENS_OF: dict[Path, set[str]] = {}


def _script_tokens(scripts: list[Path]) -> set[str]:
    """Every word of ``scripts`` (the classes they can give an element among them)."""
    tokens: set[str] = set()
    for path in scripts:
        if path not in _TOKENS_OF:
            text = path.read_text(encoding="utf-8", errors="replace") if path.is_file() else ""
            _TOKENS_OF[path] = set(_TOKEN.findall(text))
        tokens |= _TOKENS_OF[path]
    return tokens
