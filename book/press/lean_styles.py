"""The stylesheets of the built book, for a slow connection (used by ``lean_pages``' build-finished step).

Every render-blocking byte counts into a page's first paint (Lighthouse's mobile profile: 1.6 Mbit/s,
no compression on a plain static server); the theme and the extensions link 16 stylesheets, 188 KB.

* **Purge.** The theme's and the extensions' stylesheets (not the book's own, which scripts build
  classes for) lose the rules whose selectors name a class or id that no page gives an element
  (``class``/``id`` attributes and inline scripts; prose words such as "row" or "table" keep nothing) and
  that no script a page loads names. Conservative like PurgeCSS: attribute selectors and the arguments
  of ``:not()``/``:is()``/``:where()``/``:has()`` never remove a rule; ``@font-face`` and ``@keyframes``
  stay whole; ``@media``/``@supports`` blocks are purged inside.
* **Custom properties.** A ``--name`` definition nothing reads (a page, a loaded script, another sheet,
  the value of a definition that stays) is dropped; chains and cycles followed.
* **One stylesheet per page.** The ``<link rel="stylesheet">`` tags of a page's ``<head>`` become one
  bundle, ``_static/lean/style-<hash>.css``: the sheets in order, ``url()`` rewritten for the new place,
  local ``@import`` inlined, licence comments kept, minified. One bundle per distinct list of sheets.
"""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

from sphinx.util import logging

logger = logging.getLogger(__name__)

PURGED = "/* lean_pages: purged"
PURGED_NOTE = (f"{PURGED} of the rules no page or script of this book can match (book/press/lean_styles.py);"
               " the original is in the package named below. */\n")


# ------------------------------------------------------------------------------------------ stylesheets
# Classes that scripts build from pieces (Bootstrap's "bs-tooltip-" + placement): kept whatever the scan.
DYNAMIC_CLASS_PREFIXES = ("bs-",)
_TOKEN = re.compile(r"[A-Za-z_][\w-]*")
_CLASS_OR_ID_ATTR = re.compile(r"""\s(?:class|id)\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'=<>`]+))""", re.I)
_INLINE_SCRIPT = re.compile(r"<script\b[^>]*>(.*?)</script>", re.S | re.I)
_SEL_CLASS = re.compile(r"\.(-?[_a-zA-Z][\w-]*)")
_SEL_ID = re.compile(r"#(-?[_a-zA-Z][\w-]*)")
_SEL_FUNCTIONAL = re.compile(r":(?:not|is|where|has)\((?:[^()]|\([^()]*\))*\)")
_NESTING_AT_RULES = ("@media", "@supports", "@layer", "@container")


def _string_end(text: str, i: int) -> int:
    """The index just past the CSS string that opens at ``text[i]`` (a quote; escapes skipped)."""
    j = i + 1
    while j < len(text) and text[j] != text[i]:
        j += 2 if text[j] == "\\" else 1
    return j + 1


def _css_statements(css: str) -> list[tuple[str, str | None]]:
    """Top-level statements of ``css`` as ``(prelude, block)``; ``block`` is None for ``@import ...;``
    and for preserved ``/*! ... */`` licence comments (other comments are dropped)."""
    out: list[tuple[str, str | None]] = []
    i, n, depth, start, body = 0, len(css), 0, 0, 0
    prelude = ""
    while i < n:
        char = css[i]
        if css.startswith("/*", i):
            end = css.find("*/", i + 2)
            end = n if end < 0 else end + 2
            if depth == 0:
                if css.startswith("/*!", i):
                    out.append((css[i:end], None))
                start = end
            i = end
            continue
        if char in "\"'":
            i = _string_end(css, i)
            continue
        if char == "{":
            if depth == 0:
                prelude, body = css[start:i], i + 1
            depth += 1
        elif char == "}":
            depth -= 1
            if depth == 0:
                out.append((prelude.strip(), css[body:i]))
                start = i + 1
        elif char == ";" and depth == 0:
            out.append((css[start : i + 1].strip(), None))
            start = i + 1
        i += 1
    return out


def _split_selectors(prelude: str) -> list[str]:
    parts: list[str] = []
    current: list[str] = []
    depth = 0
    for char in prelude:
        if char in "([":
            depth += 1
        elif char in ")]":
            depth -= 1
        if char == "," and depth == 0:
            parts.append("".join(current).strip())
            current = []
        else:
            current.append(char)
    parts.append("".join(current).strip())
    return [p for p in parts if p]


def _selector_may_match(selector: str, tokens: set[str]) -> bool:
    """False only if the selector names a class or id that no page and no script contains."""
    bare = _SEL_FUNCTIONAL.sub("", re.sub(r"\[[^\]]*\]", "", selector))
    names = _SEL_CLASS.findall(bare) + _SEL_ID.findall(bare)
    return all(name in tokens or name.startswith(DYNAMIC_CLASS_PREFIXES) for name in names)


def purge_css(css: str, tokens: set[str]) -> str:
    """``css`` without the rules whose every selector names a class or id absent from ``tokens``.

    The content scan of PurgeCSS, kept conservative: attribute selectors and the arguments of
    ``:not()/:is()/:where()/:has()`` never remove a rule; ``@font-face``, ``@keyframes`` and other
    at-rules stay whole; ``@media``/``@supports`` blocks are purged inside.
    """
    out = []
    for prelude, block in _css_statements(css):
        if block is None:
            out.append(prelude)
        elif prelude.startswith("@"):
            if prelude.split(None, 1)[0].lower() in _NESTING_AT_RULES:
                inner = purge_css(block, tokens)
                if inner.strip():
                    out.append(f"{prelude}{{{inner}}}")
            else:
                out.append(f"{prelude}{{{block}}}")
        else:
            kept = [s for s in _split_selectors(prelude) if _selector_may_match(s, tokens)]
            if kept:
                out.append(f"{','.join(kept)}{{{block}}}")
    return "".join(out)


def content_tokens(pages: list[Path], static: Path) -> set[str]:
    """The class names and ids the built pages and their scripts can give an element.

    From a page, the words of its ``class`` and ``id`` attributes and every word of its inline
    ``<script>`` blocks; from the scripts under ``_static`` (not MathJax's), every word, since scripts
    add classes (Bootstrap's ``show``, the theme's toggles, plotly's own). Prose is not read: a word such
    as "row" or "table" in the text keeps no rule of Bootstrap's.
    """
    tokens: set[str] = set()
    for page in pages:
        text = page.read_text(encoding="utf-8", errors="replace")
        for match in _CLASS_OR_ID_ATTR.finditer(text):
            tokens.update(_TOKEN.findall(next(g for g in match.groups() if g is not None)))
        for script in _INLINE_SCRIPT.findall(text):
            tokens.update(_TOKEN.findall(script))
    for path in loaded_scripts(pages, static):
        tokens.update(_TOKEN.findall(path.read_text(encoding="utf-8", errors="replace")))
    return tokens


def loaded_scripts(pages: list[Path], static: Path) -> list[Path]:
    """The scripts under ``_static`` (not MathJax's) that a page can run.

    A script counts when a page names its file (``<script src>``, ``data-src``, ``data-plotly``) or a
    script that counts does (a loader). The theme's ``fontawesome.js``, which ``lean_icons`` takes off
    every page, then adds no words; MathJax draws its own elements with its own styles.
    """
    scripts = [p for p in sorted(static.rglob("*.js")) if "mathjax" not in p.parts]
    texts = [page.read_text(encoding="utf-8", errors="replace") for page in pages]
    loaded: list[Path] = []
    while True:
        found = [p for p in scripts if p not in loaded and any(p.name in text for text in texts)]
        if not found:
            return loaded
        loaded.extend(found)
        texts = [p.read_text(encoding="utf-8", errors="replace") for p in found]


def _purgeable(sheet: Path, static: Path, own: set[str]) -> bool:
    """True for the theme's and the extensions' stylesheets: not the book's own, vendored or generated."""
    rel = sheet.relative_to(static).as_posix()
    return rel not in own and not {"mathjax", "plotly", "vendor", "lean"} & set(sheet.parts)


def lean_stylesheets(static: Path, pages: list[Path], own: set[str]) -> tuple[int, int]:
    """Purge the theme's and the extensions' stylesheets (not the book's own, ``own``) in place.

    Returns the bytes before and after, over the stylesheets purged in this build.
    """
    tokens = content_tokens(pages, static)
    before = after = 0
    for sheet in sorted(static.rglob("*.css")):
        if not _purgeable(sheet, static, own):
            continue
        css = sheet.read_text(encoding="utf-8")
        if PURGED in css[:300]:
            continue
        new = purge_css(css, tokens)
        before, after = before + len(css), after + len(new) + len(PURGED_NOTE)
        sheet.write_text(PURGED_NOTE + new, encoding="utf-8")
    return before, after


# ------------------------------------------------------------------------------------ custom properties
_CUSTOM_PROPERTY = re.compile(r"--[A-Za-z_][\w-]*")


def _split_declarations(block: str) -> list[str]:
    """The declarations of a rule's block (``;`` inside strings, brackets or comments splits nothing)."""
    parts, depth, start, i, n = [], 0, 0, 0, len(block)
    while i < n:
        char = block[i]
        if block.startswith("/*", i):
            end = block.find("*/", i + 2)
            i = n if end < 0 else end + 2
            continue
        if char in "\"'":
            i = _string_end(block, i)
            continue
        if char in "([":
            depth += 1
        elif char in ")]":
            depth -= 1
        elif char == ";" and depth == 0:
            parts.append(block[start:i])
            start = i + 1
        i += 1
    parts.append(block[start:])
    return [p for p in parts if p.strip()]


def _definition(declaration: str) -> tuple[str, str] | None:
    """``("--name", value)`` when ``declaration`` defines a custom property, else None."""
    name, colon, value = _strip_comments(declaration).partition(":")
    name = name.strip()
    return (name, value) if colon and _CUSTOM_PROPERTY.fullmatch(name) else None


def _strip_comments(text: str) -> str:
    return re.sub(r"/\*.*?\*/", "", text, flags=re.S)


def _walk_properties(css: str, keep: set[str] | None, defined: list[tuple[str, str]],
                     mentioned: set[str]) -> str:
    """Collect (``keep`` None) or drop (``keep`` given) the custom property definitions of ``css``.

    Collecting appends every ``(name, value)`` definition in a style rule to ``defined`` and every other
    mention of a ``--name`` (at-rule preludes, ``@keyframes``, ``@property``, nested blocks) to
    ``mentioned``. Dropping returns ``css`` without the definitions whose name is not in ``keep`` and
    without the rules and ``@media``/``@supports`` blocks that are left empty.
    """
    out = []
    for prelude, block in _css_statements(css):
        if block is None:
            out.append(prelude)
            mentioned.update(_CUSTOM_PROPERTY.findall(prelude))
        elif prelude.startswith("@") and prelude.split(None, 1)[0].lower() in _NESTING_AT_RULES:
            mentioned.update(_CUSTOM_PROPERTY.findall(prelude))
            inner = _walk_properties(block, keep, defined, mentioned)
            if inner.strip() or keep is None:
                out.append(f"{prelude}{{{inner}}}")
        elif prelude.startswith("@") or "{" in block:  # @font-face, @keyframes, @property, nesting: whole
            mentioned.update(_CUSTOM_PROPERTY.findall(f"{prelude} {block}"))
            out.append(f"{prelude}{{{block}}}")
        else:
            mentioned.update(_CUSTOM_PROPERTY.findall(prelude))
            kept = []
            for declaration in _split_declarations(block):
                found = _definition(declaration)
                if found is None:
                    mentioned.update(_CUSTOM_PROPERTY.findall(declaration))
                elif keep is None:
                    defined.append(found)
                if found is None or keep is None or found[0] in keep:
                    kept.append(declaration)
            if kept or keep is None:
                out.append(f"{prelude}{{{';'.join(kept)}}}")
    return "".join(out)


def live_properties(defined: list[tuple[str, str]], mentioned: set[str]) -> set[str]:
    """The custom properties reachable from ``mentioned``: used, or named by the value of one used.

    A name in ``mentioned`` that ends with ``-`` (``"--bs-" + name`` in a script) keeps every property
    it begins.
    """
    values: dict[str, list[str]] = {}
    for name, value in defined:
        values.setdefault(name, []).append(value)
    prefixes = tuple(m for m in mentioned if m.endswith("-"))
    live: set[str] = set()
    todo = [n for n in values if n in mentioned or n.startswith(prefixes)]
    while todo:
        name = todo.pop()
        if name in live:
            continue
        live.add(name)
        for value in values[name]:
            todo.extend(m for m in _CUSTOM_PROPERTY.findall(value) if m in values and m not in live)
    return live


def prune_custom_properties(sheets: dict[Path, str], mentions: set[str]) -> dict[Path, str]:
    """``sheets`` without the custom property definitions nothing reads.

    ``mentions`` holds the ``--name`` tokens found outside ``sheets`` (the pages, the scripts and the
    stylesheets not pruned). A definition stays when its name is mentioned there, or anywhere in
    ``sheets`` other than as the name of a definition, or in the value of a definition that stays
    (``--a: var(--b)`` keeps ``--b`` only while ``--a`` stays). Definitions in ``@media``, ``@supports``
    and in the dark theme's block are treated like any other; ``@property`` and ``@keyframes`` rules stay
    whole and their names count as mentions.
    """
    defined: list[tuple[str, str]] = []
    mentioned = set(mentions)
    for css in sheets.values():
        _walk_properties(css, None, defined, mentioned)
    live = live_properties(defined, mentioned)
    return {path: _walk_properties(css, live, [], set()) for path, css in sheets.items()}


def lean_custom_properties(static: Path, pages: list[Path], own: set[str]) -> tuple[int, int]:
    """Drop unread custom property definitions from the purged stylesheets, in place.

    Everything else is read for mentions of ``--name``: the pages (inline ``style=``, scripts), the
    scripts under ``_static`` (not MathJax's) and the other stylesheets (the book's own, vendored,
    generated). Returns the bytes before and after over the purged stylesheets.
    """
    mentions: set[str] = set()
    sheets: dict[Path, str] = {}
    for sheet in sorted(static.rglob("*.css")):
        text = sheet.read_text(encoding="utf-8", errors="replace")
        if _purgeable(sheet, static, own):
            sheets[sheet] = text
        elif "mathjax" not in sheet.parts:
            mentions.update(_CUSTOM_PROPERTY.findall(text))
    for path in [*pages, *static.rglob("*.js")]:
        if "mathjax" not in path.parts:
            mentions.update(_CUSTOM_PROPERTY.findall(path.read_text(encoding="utf-8", errors="replace")))
    before = after = 0
    notes = {path: PURGED_NOTE if text.startswith(PURGED_NOTE) else "" for path, text in sheets.items()}
    bodies = {path: text[len(notes[path]):] for path, text in sheets.items()}
    for path, css in prune_custom_properties(bodies, mentions).items():
        before, after = before + len(sheets[path]), after + len(notes[path]) + len(css)
        if notes[path] + css != sheets[path]:
            path.write_text(notes[path] + css, encoding="utf-8")
    return before, after


# ------------------------------------------------------------------------------------------- bundles
BUNDLE_DIR = "lean"  # under _static
BUNDLE_PREFIX = "style-"
_HEAD = re.compile(r"<head\b.*?</head>", re.S | re.I)
_LINK_OR_STYLE = re.compile(r"[ \t]*<link\b[^>]*>\n?|<style\b", re.I)
_ATTRIBUTE = re.compile(r"""([^\s=/>]+)(?:\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>]+)))?""")
_URL = re.compile(r"""url\(\s*(?:"([^"]*)"|'([^']*)'|([^)"'\s]*))\s*\)""", re.I)
_IMPORT = re.compile(r"""@import\s+(?:url\(\s*)?(?:"([^"]*)"|'([^']*)'|([^)"'\s;]+))\s*\)?\s*([^;]*);""",
                     re.I)
_CHARSET = re.compile(r"""@charset\s+"[^"]*"\s*;""", re.I)
_CSS_ESCAPE_TOKEN = re.compile(r"\\(?:[0-9a-fA-F]{1,6}\s?|.|$)", re.S)
_REMOTE = re.compile(r"^(?:[A-Za-z][A-Za-z0-9+.-]*:|//|/|#)")


class BundleError(ValueError):
    """A stylesheet that cannot be inlined into a bundle (an ``@import`` of another host, ``layer()``)."""


def tag_attributes(tag: str) -> dict[str, str]:
    """The attributes of an HTML start tag (or of its attribute text), names lower-cased, as written."""
    body = re.sub(r"^<link\b|/?>\s*$", "", tag.strip(), flags=re.I)
    return {m.group(1).lower(): next((g for g in m.groups()[1:] if g is not None), "")
            for m in _ATTRIBUTE.finditer(body)}


def _local_target(href: str) -> str | None:
    """The path part of a relative ``href`` (no query or fragment), or None for another host or root."""
    if not href or _REMOTE.match(href):
        return None
    return re.split(r"[?#]", href, maxsplit=1)[0] or None


def _rebase_urls(css: str, source: Path, bundle_dir: Path) -> str:
    """``css`` of the file ``source`` with its relative ``url(...)`` made relative to ``bundle_dir``."""
    def rebase(match: re.Match[str]) -> str:
        url = next(g for g in match.groups() if g is not None)
        path = _local_target(url)
        if path is None:
            return match.group(0)
        rest = url[len(path):]
        target = os.path.relpath(os.path.normpath(source.parent / path), bundle_dir)
        return f'url("{Path(target).as_posix()}{rest}")'

    return _URL.sub(rebase, css)


def sheet_for_bundle(source: Path, bundle_dir: Path, _seen: tuple[Path, ...] = ()) -> str:
    """The text of the stylesheet ``source`` as it must read inside a bundle in ``bundle_dir``.

    Relative ``url(...)`` are rebased, ``@import`` of a local sheet is replaced by that sheet's text (in
    ``@media`` when the import names media: browsers ignore an ``@import`` after the first rule, which is
    where it would land in a concatenation), ``@charset`` goes (the bundle declares its own), and the
    purge note of this module goes; licence comments stay.

    Raises
    ------
    BundleError
        For an ``@import`` of another host, of a missing file, with ``layer``/``supports()``, or circular.
    """
    if source in _seen:
        raise BundleError(f"{source} imports itself through {' -> '.join(p.name for p in _seen)}")
    css = source.read_text(encoding="utf-8").replace(PURGED_NOTE, "")
    css = _CHARSET.sub("", css)
    out, last = [], 0
    for match in _IMPORT.finditer(css):
        url = next(g for g in match.groups()[:3] if g is not None)
        condition = match.group(4).strip()
        path = _local_target(url)
        if path is None or not (source.parent / path).is_file():
            raise BundleError(f"{source.name}: @import {url!r} is not a file of this build")
        if re.match(r"(?:layer|supports)\b", condition, re.I):
            raise BundleError(f"{source.name}: @import {url!r} {condition} cannot be inlined")
        inner = sheet_for_bundle((source.parent / path).resolve(), bundle_dir, (*_seen, source))
        out.append(_rebase_urls(css[last:match.start()], source, bundle_dir))
        out.append(f"@media {condition}{{{inner}}}" if condition else inner)
        last = match.end()
    out.append(_rebase_urls(css[last:], source, bundle_dir))
    return "".join(out)


def minify_css(css: str) -> str:
    """``css`` without comments (licence comments ``/*! ... */`` stay) and the whitespace it need not have.

    Whitespace runs become one space, and none is kept beside ``{ } ; ,``; strings and escapes (``\\f0c9 ``)
    are copied as they are, and a ``;`` before ``}`` goes. The rules and their order do not change.
    """
    out: list[str] = []
    i, n, space = 0, len(css), False
    while i < n:
        if css.startswith("/*", i):
            end = css.find("*/", i + 2)
            end = n if end < 0 else end + 2
            licence = css.startswith("/*!", i)
            if licence:
                out.append(css[i:end])
            space, i = not licence, end  # a dropped comment still separates what it stood between
            continue
        char = css[i]
        if char.isspace():
            space, i = True, i + 1
            continue
        if char in "\"'":
            j = i + 1
            while j < n and css[j] != char:
                j += 2 if css[j] == "\\" else 1
            token = css[i : j + 1]
        elif char == "\\":
            token = _CSS_ESCAPE_TOKEN.match(css, i).group(0)  # type: ignore[union-attr]
        else:
            token = char
        if space and out and out[-1][-1] not in "{};," and token not in "{};," and not out[-1].endswith("*/"):
            out.append(" ")
        if token == "}" and out and out[-1] == ";":
            out.pop()
        out.append(token)
        space, i = False, i + len(token)
    return "".join(out)


def bundle_css(sources: list[tuple[Path, str]], bundle_dir: Path) -> str:
    """One stylesheet with the rules of ``sources`` (``(path, media)``) in their order, minified."""
    parts = []
    for path, media in sources:
        text = minify_css(sheet_for_bundle(path, bundle_dir))
        parts.append(f"@media {media}{{{text}}}" if media else text)
    names = ", ".join(Path(os.path.relpath(path, bundle_dir.parent)).as_posix() for path, _ in sources)
    css = f"/* lean_pages (book/press/lean_styles.py): {names} */\n" + "\n".join(parts) + "\n"
    return ('@charset "UTF-8";\n' + css) if not css.isascii() else css


def _stylesheet_runs(head: str, page_dir: Path, static: Path) -> list[list[tuple[re.Match[str], Path, str]]]:
    """The page's local stylesheet links in runs that can become one link each.

    A run ends at a ``<style>`` element or at a stylesheet that stays a link of its own (another host,
    ``title``/alternate, ``disabled``, ``integrity``, outside ``_static``): merging across it would
    change the cascade.
    """
    runs: list[list[tuple[re.Match[str], Path, str]]] = [[]]
    for match in _LINK_OR_STYLE.finditer(head):
        if match.group(0).lower().startswith("<style"):
            runs.append([])
            continue
        attributes = tag_attributes(match.group(0))
        if "stylesheet" not in attributes.get("rel", "").lower().split():
            continue
        path = _local_target(attributes.get("href", ""))
        file = (page_dir / path).resolve() if path else None
        plain = not {"title", "disabled", "integrity", "crossorigin"} & attributes.keys()
        if (file is None or not plain or "alternate" in attributes["rel"].lower()
                or not file.is_file() or static.resolve() not in file.parents):
            runs.append([])
            continue
        media = attributes.get("media", "").strip()
        runs[-1].append((match, file, "" if media.lower() in ("", "all") else media))
    return [run for run in runs if run]


def bundle_stylesheets(outdir: Path, pages: list[Path], sizes: dict[Path, int] | None = None
                       ) -> tuple[int, int, int, int]:
    """Give every page one stylesheet: its ``<head>``'s local stylesheets concatenated, in order.

    Each distinct list of stylesheets becomes ``_static/lean/style-<hash>.css`` (the hash of its
    content, so a changed bundle gets a new name and no cache serves the old one), linked where the
    first of the list was. The sheets stay on disk. Returns ``(bundles, pages changed, bytes before,
    bytes after)`` for the largest bundle; bytes before are the linked files' ``sizes`` (their sizes on
    disk when not given).
    """
    static = outdir / "_static"
    bundle_dir = static / BUNDLE_DIR
    bundles: dict[tuple[tuple[Path, str], ...], str | None] = {}
    changed, largest = 0, (0, 0)
    for page in pages:
        html = page.read_text(encoding="utf-8")
        head = _HEAD.search(html)
        if head is None:
            continue
        new_head, last = [], 0
        for run in _stylesheet_runs(head.group(0), page.parent, static):
            key = tuple((path, media) for _, path, media in run)
            if key not in bundles:
                try:
                    css = bundle_css(list(key), bundle_dir)
                except BundleError as error:
                    logger.warning("[lean_pages] %s keeps its stylesheets: %s", page.name, error)
                    bundles[key] = None
                    continue
                name = f"{BUNDLE_PREFIX}{hashlib.sha256(css.encode('utf-8')).hexdigest()[:12]}.css"
                bundle_dir.mkdir(parents=True, exist_ok=True)
                (bundle_dir / name).write_text(css, encoding="utf-8")
                bundles[key] = name
                before = sum((sizes or {}).get(p) or p.stat().st_size for p in _with_imports(key))
                largest = max(largest, (before, len(css.encode("utf-8"))), key=lambda pair: pair[1])
            if bundles[key] is None:
                continue
            first = run[0][0]
            indent = re.match(r"[ \t]*", first.group(0)).group(0)  # type: ignore[union-attr]
            bundle = bundles[key]
            assert bundle is not None  # skipped above
            href = Path(os.path.relpath(bundle_dir / bundle, page.parent)).as_posix()
            new_head.append(head.group(0)[last:first.start()])
            new_head.append(f'{indent}<link rel="stylesheet" href="{href}" />\n')
            last = first.end()
            for match, _, _ in run[1:]:
                new_head.append(head.group(0)[last:match.start()])
                last = match.end()
        if new_head:
            new_head.append(head.group(0)[last:])
            page.write_text(html[:head.start()] + "".join(new_head) + html[head.end():], encoding="utf-8")
            changed += 1
    return sum(name is not None for name in bundles.values()), changed, *largest


def _with_imports(key: tuple[tuple[Path, str], ...]) -> list[Path]:
    """The files of a bundle's sheets and of the local sheets they ``@import``."""
    files: list[Path] = []
    todo = [path for path, _ in key]
    while todo:
        path = todo.pop(0)
        if path in files:
            continue
        files.append(path)
        for match in _IMPORT.finditer(path.read_text(encoding="utf-8")):
            target = _local_target(next(g for g in match.groups()[:3] if g is not None))
            if target and (path.parent / target).is_file():
                todo.append((path.parent / target).resolve())
    return files
