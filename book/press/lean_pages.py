"""Local Sphinx extension: each page loads only the icons, math and scripts it needs, after its first paint.

Measured on the built book (issue 13, item 4): every page fetched the theme's ``fontawesome.js``
(1.5 MB, all 2,000 Font Awesome icons, to draw about fifteen), the Font Awesome web font (160 KB) for the
admonition icons, Sphinx's search index (90 KB) although only the search page searches, and MathJax
(1.2 MB) before its first paint; a dozen small scripts were synchronous in ``<head>``. This extension:

* **Icons.** Drops ``fontawesome.js`` from every page. The theme's stylesheet already draws each icon as
  a glyph of the Font Awesome font (``.fa-bars:before{content:"\\f0c9"}``); that stylesheet is trimmed
  to the icons the built pages and the book's scripts name (scanned at the end of the build, so icons
  the theme's JavaScript inserts count too) and its three ``@font-face`` rules are replaced by one font
  subset to those glyphs (fontTools, from the theme's own ``fa-solid-900.ttf``), inlined as a
  ``data:`` URI: a few kilobytes instead of 1.7 MB, and no request. Font Awesome Free's licence
  comments stay in the stylesheet and the subset font keeps its name table (licence and copyright).
* **Scripts.** Every script Sphinx and the extensions add to ``<head>`` becomes ``defer`` (they only
  act once the document is parsed) except ``documentation_options.js``, which inline scripts use at
  once. The search page is left as Sphinx writes it. The theme's copies of the search scripts and the
  search index leave every other page unless ``search_as_you_type`` is on, and the theme's high-priority
  preloads of its own deferred scripts go (they competed with the stylesheets).
* **Scripts after the first paint.** Then the deferred scripts leave ``<head>``: one inline loader at the
  end of ``<body>`` adds them, in order, after the first paint (none draws text; on a slow connection
  they took the bandwidth the HTML and stylesheets needed). ``togglebutton.js`` and
  ``sphinx-book-theme.js`` stay deferred: they change the layout when they start.
* **Tab stops.** The theme's load-time pass that makes scrolling code blocks tab stops is taken out of
  its script; ``book/_static/scroll-stops.js`` does the same job in short tasks (see there).
* **Stylesheets.** ``lean_styles``: purged to the rules the pages can match, unread custom properties
  dropped, one bundle per page; then ``critical_styles`` splits each page's bundle into the rules its
  first paint needs (render-blocking), its print rules and the rules only its scripts need (loaded by the
  script loader before the scripts). The Python code cells lose Pygments' spans around names and
  punctuation, which the styles colour like the block itself (a fifth of a chapter's HTML), and
  neighbouring spans that look the same in every theme mode become one.
* **Colour scheme.** The theme's inline script in ``<head>`` resolves ``data-theme`` to light or dark
  itself (a first visit left it "auto", which no rule styles, until the theme's script ran after the
  first paint and every code block and inline literal grew).
* **Jumps to headings.** ``book/_static/lean/fragments.js`` goes inline into every page: the book's
  sections are laid out only near the screen (attnbook.css), and it makes a jump land on its heading.
* **Figures.** Their images load lazily, with their size as attributes (nothing moves when one arrives).
* **MathJax.** The ``<script>`` of ``mathjax_path`` is replaced by ``_static/lean/math.js`` (from
  ``book/_static/lean/``), which adds MathJax after the first paint and typesets the formulas on
  screen first, then the rest in short batches; ``MathJax.startup.promise`` still resolves once all
  are typeset. The MathJax options (``mathjax3_config``) are unchanged. This is the fallback: where
  Node.js is installed, ``mathml_pages`` writes every formula as MathML and removes the loader.
* **No 404.** ``favicon.ico`` is written at the root of the build (browsers ask for it on pages without
  an icon link, such as the root redirect page), and the root ``index.html`` redirect becomes a small
  complete page (language, title, a link for browsers that do not follow the refresh; no icon link,
  whose request the immediate refresh would abort).
"""

from __future__ import annotations

import base64
import html as html_lib
import io
import json
import re
from pathlib import Path
from typing import Any

from sphinx.application import Sphinx
from sphinx.builders.html._assets import _JavaScript
from sphinx.errors import ConfigError
from sphinx.util import logging

from press.critical_styles import split_critical
from press.lean_styles import (
    bundle_stylesheets,
    lean_custom_properties,
    lean_stylesheets,
    tag_attributes,
)

logger = logging.getLogger(__name__)

MATH_LOADER = "_static/lean/math.js"
KEEP_SYNC = ("documentation_options.js",)  # inline scripts in <head> read DOCUMENTATION_OPTIONS at once
THEME_CSS = "styles/pydata-sphinx-theme.css"  # under _static/
ICONS_MARK = "/*! lean_pages: Font Awesome"  # heads the theme stylesheet once its icons are trimmed
SKIP_DIRS = {"_static", "_sources", "_images"}

_FA_SCRIPT = re.compile(r'\n?[ \t]*<script[^>]*src="[^"]*_static/scripts/fontawesome\.js[^"]*"[^>]*>'
                        r"</script>")
# The theme preloads its two deferred scripts (97 kB) at high priority, beside the stylesheets the first
# paint waits for; their <script defer> tags at the end of <body> load them anyway, after those.
_SCRIPT_PRELOAD = re.compile(r'\n?[ \t]*<link rel="preload" as="script" href="[^"]*_static/scripts/'
                             r'(?:bootstrap|pydata-sphinx-theme)\.js[^"]*" />')
_SEARCH_SCRIPTS = re.compile(
    r'\n?[ \t]*<script src="[^"]*(?:_static/searchtools\.js|_static/language_data\.js|searchindex\.js)"'
    r"></script>"
)
# One rule of Font Awesome's stylesheet: ".fa-bars:before,.fa-navicon:before{content:"\f0c9"}".
_FA_RULE = re.compile(r'((?:\.fa-[a-z0-9-]+:before,?)+)\{content:"((?:[^"\\]|\\.)*)"\}')
_FA_FACE = re.compile(r"@font-face\{[^}]*url\(([^)]*/fa-([a-z]+)-(\d+))\.woff2\)[^}]*\}")
_CLASS_ATTR = re.compile(r'class="([^"]*\bfa-[^"]*)"')
_FA_TOKEN = re.compile(r"\bfa-[a-z0-9-]+")
_JS_CLASS_STRING = re.compile(r"""["'`]([^"'`\n]*\bfa-[a-z][^"'`\n]*)["'`]""")
_CSS_ESCAPE = re.compile(r"\\([0-9a-fA-F]{1,6}) ?|\\(.)")
_ICON_CONTENT = re.compile(r'(?:content:|--pst-icon-[a-z-]+:)"((?:[^"\\]|\\.)*)"')
_REFRESH = re.compile(r'<meta http-equiv="Refresh" content="0; url=([^"]+)"\s*/?>', re.IGNORECASE)


def _decode_css_string(text: str) -> str:
    """The characters of a CSS string literal's body (``\\f0c9`` is U+F0C9, ``\\@`` is ``@``)."""
    return _CSS_ESCAPE.sub(lambda m: chr(int(m.group(1), 16)) if m.group(1) else m.group(2), text)


def _is_icon(char: str) -> bool:
    return 0xE000 <= ord(char) <= 0xF8FF  # Font Awesome's glyphs sit in the private use area


# --------------------------------------------------------------------------------------------- scripts
def _page_scripts(app: Sphinx, pagename: str, templatename: str, context: dict, doctree: Any) -> None:
    """Defer the page's scripts and swap MathJax's ``<script>`` for the after-paint loader."""
    scripts = context.get("script_files")
    if not scripts or pagename == "search":
        return
    mathjax = f"_static/{app.config.mathjax_path}" if getattr(app.config, "mathjax_path", "") else None
    for index, script in enumerate(scripts):
        filename = str(getattr(script, "filename", "") or "")
        if not filename or "://" in filename:
            continue
        attributes = dict(script.attributes)
        if filename == mathjax:
            chosen = app.config.lean_mathjax_path
            component = f"_static/{chosen}" if chosen else filename
            attributes.pop("async", None)
            attributes.update({"defer": "defer", "data-mathjax": context["pathto"](component, 1)})
            scripts[index] = _JavaScript(MATH_LOADER, priority=script.priority, **attributes)
        elif not ({"async", "defer"} & attributes.keys() or attributes.get("type") == "module"
                  or filename.endswith(KEEP_SYNC)):
            attributes["defer"] = "defer"
            scripts[index] = _JavaScript(filename, priority=script.priority, **attributes)


# ----------------------------------------------------------------------------------------------- icons
def _used_icon_classes(pages: list[Path], scripts: list[Path]) -> set[str]:
    """Every ``fa-*`` token in the pages' class attributes and in the class strings of the scripts."""
    used: set[str] = set()
    for page in pages:
        for attr in _CLASS_ATTR.findall(page.read_text(encoding="utf-8")):
            used.update(_FA_TOKEN.findall(attr))
    for script in scripts:
        for text in _JS_CLASS_STRING.findall(script.read_text(encoding="utf-8", errors="replace")):
            used.update(_FA_TOKEN.findall(text))
    return used


def _subset_woff(ttf: Path, chars: set[str]) -> bytes:
    """``ttf`` reduced to the glyphs of ``chars``, as WOFF (zlib; fontTools writes WOFF2 only with brotli)."""
    from fontTools import subset

    options = subset.Options()
    options.flavor = "woff"
    options.layout_features = []
    options.notdef_outline = True
    font = subset.load_font(str(ttf), options)
    subsetter = subset.Subsetter(options)
    subsetter.populate(unicodes=sorted(ord(c) for c in chars))
    subsetter.subset(font)
    out = io.BytesIO()
    subset.save_font(font, out, options)
    return out.getvalue()


def lean_icons(static: Path, pages: list[Path]) -> tuple[int, int] | None:
    """Trim the theme's Font Awesome rules to the icons in use and inline a subset font.

    Returns ``(icons kept, bytes of the subset fonts)``, or None when the theme's stylesheet is missing
    or was already trimmed by this build (then ``fontawesome.js`` must stay).
    """
    css_path = static / THEME_CSS
    if not css_path.is_file():
        return None
    css = css_path.read_text(encoding="utf-8")
    if ICONS_MARK in css[:1000]:
        return None
    scripts = [p for p in static.rglob("*.js")
               if p.name != "fontawesome.js" and not {"mathjax", "plotly", "vendor"} & set(p.parts)]
    used = _used_icon_classes(pages, scripts)

    kept: set[str] = set()
    glyphs: set[str] = set()

    def keep_rule(match: re.Match[str]) -> str:
        names = [s[1:-7] for s in match.group(1).split(",") if s]  # ".fa-bars:before" -> "fa-bars"
        wanted = [n for n in names if n in used]
        if not wanted:
            return ""
        kept.update(wanted)
        glyphs.update(c for c in _decode_css_string(match.group(2)) if _is_icon(c))
        return ",".join(f".{n}:before" for n in wanted) + '{content:"' + match.group(2) + '"}'

    css = _FA_RULE.sub(keep_rule, css)
    # Icons drawn by pseudo-elements (admonition titles, external links, download links ...).
    for sheet in [css_path, *static.rglob("*.css")]:
        if {"mathjax", "plotly"} & set(sheet.parts):
            continue
        text = css if sheet == css_path else sheet.read_text(encoding="utf-8", errors="replace")
        for value in _ICON_CONTENT.findall(text):
            glyphs.update(c for c in _decode_css_string(value) if _is_icon(c))

    total = 0

    def face(match: re.Match[str]) -> str:
        nonlocal total
        url, style = match.group(1), match.group(2)
        ttf = (css_path.parent / f"{url}.ttf").resolve()
        if not ttf.is_file():
            return match.group(0)
        from fontTools.ttLib import TTFont

        cmap = TTFont(str(ttf), lazy=True).getBestCmap()
        mine = {c for c in glyphs if ord(c) in cmap}
        if style != "solid":  # regular and brands: only the glyphs the solid font lacks (github, ...)
            solid = css_path.parent / f"{url.rsplit('/', 1)[0]}/fa-solid-900.ttf"
            solid_cmap = TTFont(str(solid.resolve()), lazy=True).getBestCmap() if solid.is_file() else {}
            mine = {c for c in mine if ord(c) not in solid_cmap}
        if not mine:
            return ""
        woff = _subset_woff(ttf, mine)
        total += len(woff)
        src = "url(data:font/woff;base64," + base64.b64encode(woff).decode("ascii") + ') format("woff")'
        return re.sub(r"src:[^;}]*", "src:" + src, match.group(0))

    css = _FA_FACE.sub(face, css)
    header = (f"{ICONS_MARK} rules trimmed to the {len(kept)} icons this book uses and its fonts "
              "subset to their glyphs (book/press/lean_pages.py). Font Awesome Free by Fonticons, Inc.: "
              "icons CC BY 4.0, fonts SIL OFL 1.1, code MIT (https://fontawesome.com/license/free). */\n")
    css_path.write_text(header + css, encoding="utf-8")
    return len(kept), total


# ------------------------------------------------------------------------------------------------ code
# Pygments wraps every name and punctuation mark of a code cell in its own <span>: on a chapter page a
# fifth of the HTML. The pydata styles give names (n), punctuation (p) and whitespace (w) the colour of
# the code block itself, in light and dark; unwrapped, they inherit it (the rule below, appended to the
# theme's stylesheet, lets the <pre> of a code cell take that colour instead of the page's text colour).
PLAIN_TOKENS = ("n", "p", "w")
CODE_BLOCK_CSS = ".highlight-ipython3 .highlight pre,.highlight-python .highlight pre{color:inherit}"
_CODE_BLOCK = re.compile(r'(<div class="highlight-(?:ipython3|python) notranslate"><div class="highlight">'
                         r"<pre>)(.*?)(</pre>)", re.S)
_PLAIN_SPAN = re.compile(r'<span class="(?:' + "|".join(PLAIN_TOKENS) + r')">([^<]*)</span>')
_PYGMENTS_RULE = re.compile(r'html\[data-theme="(\w+)"\] \.highlight(?: \.(\w+))? \{[^}]*?'
                            r"color: (#[0-9A-Fa-f]+)")


def plain_tokens_match(pygments_css: str) -> bool:
    """True when every plain token class has the code block's own colour in every theme mode."""
    base: dict[str, str] = {}
    token: dict[tuple[str, str], str] = {}
    for mode, cls, colour in _PYGMENTS_RULE.findall(pygments_css):
        if cls:
            token[(mode, cls)] = colour.lower()
        else:
            base[mode] = colour.lower()
    return bool(base) and all(token.get((m, c), b) == b for m, b in base.items() for c in PLAIN_TOKENS)


def unwrap_plain_tokens(html: str) -> str:
    """``html`` with the plain-token spans of its Python code cells replaced by their text."""
    return _CODE_BLOCK.sub(lambda m: m.group(1) + _PLAIN_SPAN.sub(r"\1", m.group(2)) + m.group(3), html)


# Tokens of one look side by side (an f-string is a prefix, string parts and braces, five spans or more;
# keywords and operators next to each other) need one span: the pydata styles give, e.g., strings,
# their prefixes, interpolation braces and operators the same colour in light and dark. Spans whose
# classes have the same declarations in every theme mode and stand next to each other, or apart by
# spaces only, become one span of the first class (chapter 4: 3,789 spans -> 3,271, 12 kB).
_TOKEN_SPAN = re.compile(r'<span class="(\w+)">([^<]*)</span>')
_PYGMENTS_BODY = re.compile(r'html\[data-theme="(\w+)"\] \.highlight \.(\w+) \{([^}]*)\}')


def token_looks(pygments_css: str) -> dict[str, tuple[tuple[str, str], ...]]:
    """Each token class of ``pygments_css`` -> its declarations in every theme mode (sorted, normalised)."""
    looks: dict[str, dict[str, str]] = {}
    for mode, cls, body in _PYGMENTS_BODY.findall(pygments_css):
        declarations = ";".join(sorted(d.strip().lower() for d in body.split(";") if d.strip()))
        looks.setdefault(cls, {})[mode] = declarations
    return {cls: tuple(sorted(modes.items())) for cls, modes in looks.items()}


def merge_token_runs(html: str, looks: dict[str, tuple[tuple[str, str], ...]]) -> str:
    """``html`` with runs of same-looking token spans in its Python code cells merged into one span."""

    def merge(code: str) -> str:
        out: list[str] = []
        run: list[str] | None = None  # [class of the run's first span, the run's text so far]
        pos = 0
        for match in _TOKEN_SPAN.finditer(code):
            between = code[pos:match.start()]
            cls, text = match.group(1), match.group(2)
            look = looks.get(cls)
            same = look is not None and run is not None and looks.get(run[0]) == look
            if same and between.strip(" ") == "":
                assert run is not None
                run[1] += between + text
            else:
                if run is not None:
                    out.append(f'<span class="{run[0]}">{run[1]}</span>')
                out.append(between)
                run = [cls, text]
            pos = match.end()
        if run is not None:
            out.append(f'<span class="{run[0]}">{run[1]}</span>')
        out.append(code[pos:])
        return "".join(out)

    return _CODE_BLOCK.sub(lambda m: m.group(1) + merge(m.group(2)) + m.group(3), html)


# ------------------------------------------------------------------------------------------- fragments
# attnbook.css lays out a chapter's sections only near the screen; book/_static/lean/fragments.js makes a
# jump to a heading land on it. Inline (a few hundred bytes): as a file it would be one more request
# before the first paint.
FRAGMENTS_SCRIPT = "lean/fragments.js"  # under _static/
FRAGMENTS_MARK = "/* lean_pages: fragments.js */"


def inline_fragments(page: str, script: str) -> str:
    """``page`` with ``script`` (its opening comment dropped) inline at the end of its ``<body>``."""
    if FRAGMENTS_MARK in page or "</body>" not in page:
        return page
    code = re.sub(r"\A\s*/\*.*?\*/\s*", "", script, count=1, flags=re.S)
    at = page.rindex("</body>")
    return page[:at] + f"<script>{FRAGMENTS_MARK}\n{code}</script>\n" + page[at:]


# --------------------------------------------------------------------------------------------- favicon
def write_favicon_ico(path: Path) -> None:
    """A ``favicon.ico`` (16, 32 and 48 px) drawn like ``favicon.svg``: "QK" on a blue rounded square."""
    from matplotlib import font_manager
    from PIL import Image, ImageDraw, ImageFont

    size = 96
    image = Image.new("RGBA", (size, size), (0, 0, 0, 0))
    draw = ImageDraw.Draw(image)
    draw.rounded_rectangle((0, 0, size - 1, size - 1), radius=18, fill=(0x1F, 0x5F, 0x99, 255))
    font_file = font_manager.findfont(font_manager.FontProperties(family="DejaVu Serif", weight="bold"))
    font = ImageFont.truetype(font_file, 46)
    draw.text((size / 2, size / 2 + 2), "QK", font=font, fill=(255, 255, 255, 255), anchor="mm")
    image.save(path, format="ICO", sizes=[(16, 16), (32, 32), (48, 48)])


def _root_redirect(outdir: Path, app: Sphinx) -> None:
    """Make the root ``index.html`` (Jupyter Book's one-line meta refresh) a small complete page."""
    index = outdir / "index.html"
    if index.is_file():
        match = _REFRESH.search(index.read_text(encoding="utf-8"))
        if not match or "<html" in index.read_text(encoding="utf-8"):
            return
        target = match.group(1)
    else:
        target = f"{app.config.root_doc}.html"
    title = app.config.html_title or app.config.project
    # No icon link: the page refreshes at once, which aborts the icon's request (a failed request in the
    # browser's log); a browser that wants an icon here asks for /favicon.ico, which exists.
    index.write_text(
        f'<!DOCTYPE html>\n<html lang="{app.config.language or "en"}">\n<head>\n<meta charset="utf-8">\n'
        f"<title>{title}</title>\n"
        f'<meta http-equiv="Refresh" content="0; url={target}" />\n</head>\n'
        f'<body><p><a href="{target}">{title}</a></p></body>\n</html>\n',
        encoding="utf-8",
    )


# ------------------------------------------------------------------------------------------ tab stops
# pydata-sphinx-theme gives each code block and output that scrolls sideways a tab stop in one pass at
# the load event, reading each box's width and writing its tabindex in turn, so that every write made the
# next read lay the page out again: on chapter 4 (15,000 elements) the longest task of the page, 0.7 s on
# Lighthouse's phone. book/_static/scroll-stops.js does the same job for the same boxes in short tasks;
# the theme's pass is taken out of its script here. The theme's other listeners (resize, new nodes)
# belong to that pass and go with it.
THEME_JS = "scripts/pydata-sphinx-theme.js"  # under _static/
TAB_STOPS_MARK = "/* lean_pages: tab stops by scroll-stops.js */"
_THEME_TAB_STOPS_CALL = re.compile(
    r'"complete"===document\.readyState\?(\w+)\(\):window\.addEventListener\("load",\1\)')


def drop_theme_tab_stops(script: str) -> str | None:
    """``script`` (the theme's) without its load-time tab-stop pass; None if it has no such pass.

    The pass is recognised by the call at the end of the script and by the function it calls, which
    must query the theme's list of scrolling boxes (``.pst-scrollable-table-container``).
    """
    if TAB_STOPS_MARK in script:
        return script
    for call in _THEME_TAB_STOPS_CALL.finditer(script):
        body = re.search(r"function " + re.escape(call.group(1)) + r"\(\)\{(.{0,400})", script, re.S)
        if body and ".pst-scrollable-table-container" in body.group(1) and "tabIndex" in body.group(1):
            return TAB_STOPS_MARK + script[: call.start()] + "void 0" + script[call.end():]
    return None


# ------------------------------------------------------------------------------- scripts after paint
# A deferred script still downloads beside the page's HTML and stylesheets and runs before the page is
# shown to be ready; on a slow connection the page's first paint waits for the bandwidth they take
# (chapter 4: 16 scripts, 170 kB). None of them draws text: they add copy buttons, toggles, the theme's
# menus, the explorers' controls. So they load after the first paint, in their order (async=false keeps
# the order), with their attributes; each acts on a document that is already parsed, as a deferred
# script does (each checks document.readyState, or uses only delegated events).
_DEFERRED_SCRIPT = re.compile(r'[ \t]*<script (?=[^>]*\bdefer\b)(?=[^>]*\bsrc=)([^>]*)></script>\n?')
AFTER_PAINT_MARK = "/* lean_pages: scripts after the first paint */"
# Scripts that change the page's layout when they start stay deferred (before the first paint): the
# toggle button folds solutions and dropdowns; the book theme's script arranges the page's margins.
KEEP_DEFERRED = ("togglebutton.js", "sphinx-book-theme.js")


def scripts_after_first_paint(page: str) -> str:
    """``page`` with its deferred scripts loaded by one inline script after the first paint."""
    if AFTER_PAINT_MARK in page:
        return page
    scripts = []

    def collect(match: re.Match[str]) -> str:
        if any(f"/{name}" in match.group(1) for name in KEEP_DEFERRED):
            return match.group(0)
        found = tag_attributes(match.group(1))
        attributes = {name: html_lib.unescape(value) for name, value in found.items() if name != "defer"}
        scripts.append(attributes)
        return ""

    lean = _DEFERRED_SCRIPT.sub(collect, page)
    if not scripts or "</body>" not in lean:
        return page
    listed = json.dumps(scripts, separators=(",", ":")).replace("</", "<\\/")
    loader = (
        f"<script>{AFTER_PAINT_MARK}\n"
        "// window.leanPagesScripts resolves once each has run (or failed to load).\n"
        "// First the rules only scripts need (critical_styles: the page links its first-paint rules).\n"
        "window.leanPagesScripts = new Promise(function (done) {\n"
        f"  var scripts = {listed};\n"
        "  function styles(then) {\n"
        '    var critical = document.querySelector("link[data-lean-late]");\n'
        "    if (!critical) return then();\n"
        '    var link = document.createElement("link");\n'
        '    link.rel = "stylesheet";\n'
        '    link.href = critical.getAttribute("data-lean-late");\n'
        "    link.onload = link.onerror = then;\n"
        "    critical.before(link);  // its rules before the critical ones, as they stood in the bundle\n"
        "  }\n"
        "  function load() {\n"
        "    var left = scripts.length;\n"
        "    scripts.forEach(function (attributes) {\n"
        '      var s = document.createElement("script");\n'
        "      for (var name in attributes) s.setAttribute(name, attributes[name]);\n"
        "      s.async = false;\n"
        "      s.onload = s.onerror = function () { if (--left === 0) done(true); };\n"
        "      document.head.appendChild(s);\n"
        "    });\n"
        "  }\n"
        "  requestAnimationFrame(function () { setTimeout(function () { styles(load); }, 0); });\n"
        "});\n</script>\n"
    )
    at = lean.rindex("</body>")
    return lean[:at] + loader + lean[at:]


# ------------------------------------------------------------------------------------------ colour scheme
# The theme's inline script in <head> sets <html data-mode> (the reader's choice: light, dark or auto) and
# data-theme from localStorage, or "auto" on a first visit; the theme's script (pydata-sphinx-theme.js)
# then resolves data-theme to light or dark, auto following the system. Every theme colour, the code
# blocks' line height (Pygments' 125%) and the border of inline code key on html[data-theme=light|dark]:
# there are no rules for "auto". That script runs after the first paint here, so a first visit painted
# without them, and when it ran each code block grew 0.7 px a line and each inline literal 2 px (its
# border, var(--pst-color-border), had been invalid): the API reference's paragraphs moved, CLS 0.197
# under Lighthouse's phone. The inline script now resolves the scheme itself, before the first paint, as
# the theme's script will (an unknown mode counts as auto there too): nothing changes when that runs.
_THEME_SCHEME_SCRIPT = re.compile(r'(<script data-cfasync="false">\s*'
                                  r"document\.documentElement\.dataset\.mode = [^\n]*\n"
                                  r"\s*document\.documentElement\.dataset\.theme = [^\n]*\n)"
                                  r"([ \t]*</script>)")
SCHEME_MARK = "/* lean_pages: colour scheme */"
# No one-letter names: critical_styles reads an inline script's words as classes it may add (".m" is
# Pygments' number class).
RESOLVE_SCHEME = (
    f"    {SCHEME_MARK}\n"
    "    (function (root) {\n"
    "      var mode = root.dataset.mode;\n"
    '      root.dataset.theme = mode === "light" || mode === "dark" ? mode\n'
    '        : window.matchMedia("(prefers-color-scheme: dark)").matches ? "dark" : "light";\n'
    "    })(document.documentElement);\n"
)


def scheme_before_first_paint(page: str) -> str:
    """``page`` with the theme's inline script in ``<head>`` resolving ``data-theme`` to light or dark at
    once; unchanged when it has no such script (the root redirect page)."""
    if SCHEME_MARK in page:
        return page
    return _THEME_SCHEME_SCRIPT.sub(lambda m: m.group(1) + RESOLVE_SCHEME + m.group(2), page, count=1)


# ------------------------------------------------------------------------------------------- images
# The figures of a chapter (PNG at twice their size, 20-60 kB each) are fetched when they come near the
# viewport, not beside the page's text: Chrome gave the first five of chapter 4 (190 kB, all far below
# the first screen) medium priority next to the HTML and stylesheets. Sphinx writes each figure's size
# in its style; as width and height attributes too, it gives the box its aspect ratio before the image
# arrives (figures.css scales the height with the column), so nothing moves when one does.
_CONTENT_IMG = re.compile(r'<img (?![^>]*\bloading=)(?=[^>]*\bsrc="[^"]*_images/)([^>]*)>')
_STYLE_SIZE = re.compile(r'style="width: (\d+)px; height: (\d+)px;"')


def lazy_images(page: str) -> str:
    """``page`` with its figures' images (``_images/``) loaded lazily, decoded off the main thread,
    with their size as attributes."""

    def lazy(match: re.Match[str]) -> str:
        attributes = match.group(1)
        size = _STYLE_SIZE.search(attributes)
        if size and not re.search(r"\b(width|height)=", attributes):
            attributes = f'width="{size.group(1)}" height="{size.group(2)}" ' + attributes
        return f'<img loading="lazy" decoding="async" {attributes}>'

    return _CONTENT_IMG.sub(lazy, page)


# -------------------------------------------------------------------------------------------- finished
_NAV_TOGGLE = re.compile(r'(<a class="[^"]*reference internal" href="[^"]*">([^<]+)</a><details[^>]*>)'
                         r'<summary>')


def named_toggles(page: str) -> str:
    """``page`` with each sidebar toggle that opens a chapter's sections named for a screen reader.

    The theme draws the toggle as a chevron inside a bare ``<summary>``, which a screen reader announces
    as nothing ("summary elements must have discernible text", axe-core); it gets an ``aria-label``
    naming the entry it opens ("Sections of API reference").
    """
    return _NAV_TOGGLE.sub(lambda m: f'{m.group(1)}<summary aria-label="Sections of {m.group(2)}">', page)


def html_pages(outdir: Path) -> list[Path]:
    """The built pages under ``outdir`` (not the copies of sources, images and static files)."""
    return [p for p in sorted(outdir.rglob("*.html")) if not SKIP_DIRS & set(p.relative_to(outdir).parts)]


def _finished(app: Sphinx, exception: Exception | None) -> None:
    if exception is not None or app.builder.format != "html" or app.builder.name not in ("html", "dirhtml"):
        return
    outdir = Path(app.outdir)
    static = outdir / "_static"
    pages = html_pages(outdir)
    icons = lean_icons(static, pages)
    theme_css = static / THEME_CSS
    icons_done = theme_css.is_file() and ICONS_MARK in theme_css.read_text(encoding="utf-8")[:1000]
    theme_options = app.config.html_theme_options or {}
    drop_search = not theme_options.get("search_as_you_type", False)
    pygments = static / "pygments.css"
    unwrap = icons_done and pygments.is_file() and plain_tokens_match(pygments.read_text(encoding="utf-8"))
    looks = token_looks(pygments.read_text(encoding="utf-8")) if pygments.is_file() else {}
    fragments = static / FRAGMENTS_SCRIPT
    fragments_js = fragments.read_text(encoding="utf-8") if fragments.is_file() else None
    if unwrap and CODE_BLOCK_CSS not in theme_css.read_text(encoding="utf-8"):
        with theme_css.open("a", encoding="utf-8") as sheet:
            sheet.write("\n" + CODE_BLOCK_CSS + "\n")
    unresolved = []  # pages with the theme's colour-scheme script that scheme_before_first_paint missed
    for page in pages:
        text = page.read_text(encoding="utf-8")
        new = unwrap_plain_tokens(text) if unwrap else text
        new = scheme_before_first_paint(new)
        if "dataset.theme" in new and SCHEME_MARK not in new:
            unresolved.append(page.relative_to(outdir).as_posix())
        new = merge_token_runs(new, looks)
        if fragments_js is not None and page.relative_to(outdir).as_posix() != "search.html":
            new = inline_fragments(new, fragments_js)
        if icons_done:
            new = _FA_SCRIPT.sub("", new)
        new = _SCRIPT_PRELOAD.sub("", new)
        if drop_search and page.relative_to(outdir).as_posix() != "search.html":
            new = _SEARCH_SCRIPTS.sub("", new)
        if page.relative_to(outdir).as_posix() != "search.html":
            new = scripts_after_first_paint(new)
        new = lazy_images(new)
        new = named_toggles(new)
        if new != text:
            page.write_text(new, encoding="utf-8")
    if icons is not None:
        logger.info("[lean_pages] %d icons kept, subset fonts %d bytes", *icons)
    if unresolved:
        logger.warning("[lean_pages] %d pages set their colour scheme with an inline script that lean_pages "
                       "does not recognise (%s): they paint without the theme's colours until its script "
                       "runs; check the theme's layout.html against _THEME_SCHEME_SCRIPT",
                       len(unresolved), unresolved[0])
    # The book's own stylesheets (html_static_path entries of the project; extensions add absolute ones).
    project_dirs = [Path(app.confdir, e) for e in app.config.html_static_path if not Path(e).is_absolute()]
    own = {p.relative_to(d).as_posix() for d in project_dirs if d.is_dir() for p in d.rglob("*.css")}
    sizes = {sheet: sheet.stat().st_size for sheet in static.rglob("*.css")}  # before the purge
    logger.info("[lean_pages] stylesheets purged: %d -> %d bytes", *lean_stylesheets(static, pages, own))
    logger.info("[lean_pages] unread custom properties dropped: %d -> %d bytes",
                *lean_custom_properties(static, pages, own))
    logger.info("[lean_pages] %d stylesheet bundles for %d pages; the largest %d -> %d bytes",
                *bundle_stylesheets(outdir, pages, sizes))
    logger.info("[lean_pages] %d pages link their first-paint rules, the rest after it; the largest bundle "
                "%d bytes: critical sheet %d bytes, late %d, print %d",
                *split_critical(outdir, pages, AFTER_PAINT_MARK))
    theme_js = static / THEME_JS
    if theme_js.is_file():
        script = theme_js.read_text(encoding="utf-8")
        lean = drop_theme_tab_stops(script)
        if lean is None:
            logger.warning("[lean_pages] %s has no load-time tab-stop pass that lean_pages recognises: "
                           "check book/_static/scroll-stops.js against the theme's version", theme_js)
        elif lean != script:
            theme_js.write_text(lean, encoding="utf-8")
    favicon = outdir / "favicon.ico"
    if not favicon.is_file():
        write_favicon_ico(favicon)
    _root_redirect(outdir, app)


def _check_config(app: Sphinx, config: Any) -> None:
    """MathJax's startup component loads nothing unless the configuration names the components."""
    path = config.lean_mathjax_path
    if path.endswith("startup.js") and not (config.mathjax3_config or {}).get("loader", {}).get("load"):
        raise ConfigError(
            f"lean_mathjax_path is {path!r}, which loads only what mathjax3_config.loader.load names, "
            "but that list is empty; e.g. loader: {load: [input/tex, output/chtml, a11y/assistive-mml]}"
        )


def setup(app: Sphinx) -> dict[str, Any]:
    # The MathJax component math.js loads, relative to _static (sphinx-mathjax-offline fixes mathjax_path
    # to its tex-chtml.js); empty: mathjax_path.
    app.add_config_value("lean_mathjax_path", "", "html", types=[str])
    app.connect("config-inited", _check_config)
    app.connect("html-page-context", _page_scripts, priority=900)  # after sphinx.ext.mathjax (500)
    app.connect("build-finished", _finished, priority=900)  # after the theme rewrites pygments.css
    return {"parallel_read_safe": True, "parallel_write_safe": True}
