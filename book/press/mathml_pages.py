"""Local Sphinx extension: the book's formulas written as MathML at build time, so no page runs MathJax.

Measured with Lighthouse's mobile profile (issue 13): on every page with a formula, MathJax's own
modules were the longest tasks of the page (core, the TeX parser, the CHTML output and its font data:
each 100-260 ms under the 4x slower CPU), it fetched 0.8 MB, and every formula it typeset after the
first paint moved the text around it (layout shift). Browsers render MathML themselves (Chromium since
109, Firefox, Safari), and screen readers read it as they read MathJax's assistive MathML.

At the end of an HTML build, this extension

* collects the TeX of every formula Sphinx and MyST-NB wrote (``<span class="math">\\(…\\)</span>`` and
  ``<div class="math">\\[…\\]</div>``) on every page;
* converts them all in one run of MathJax's own TeX input, the copy the build serves
  (``_static/mathjax``), under Node.js (``book/press/tex2mml.js``): the same TeX parser the pages ran,
  so every macro means what it meant. A formula MathJax cannot parse stops the build with its message;
* makes the MathML one that MathML Core renders: the letter styles MathJax writes as ``mathvariant``
  (``\\mathbb``, ``\\mathbf``, ``\\mathcal``) become the Unicode mathematical letters (MathML Core draws
  only ``mathvariant="normal"``), MathJax's private attributes go, and the markup is written compactly;
* replaces each formula's TeX with its MathML (the ``math`` class stays), drops the MathJax loader from
  those pages (and from any page without a formula that Sphinx gave one), and adds
  ``_static/lean/mathml.css`` with a math font: STIX Two Math (SIL Open Font Licence, the copy the
  ``ziamath`` package ships), subset with fontTools to the characters the book
  uses, stretchy variants and the MATH table kept (about 45 kB as WOFF2).

Without Node.js the pages keep MathJax (lean_pages loads it after the first paint) and the build says so.
"""

from __future__ import annotations

import html
import io
import itertools
import json
import re
import shutil
import subprocess
import unicodedata
from pathlib import Path
from typing import Any

from sphinx.application import Sphinx
from sphinx.errors import ExtensionError
from sphinx.util import logging

from press.lean_pages import html_pages

logger = logging.getLogger(__name__)

HERE = Path(__file__).resolve().parent
CONVERTER = HERE / "tex2mml.js"
CSS = "lean/mathml.css"  # under _static
FONT = "lean/stix-two-math.woff2"
FONT_FAMILY = "STIX Two Math"

# What Sphinx (sphinx.ext.mathjax) and MyST-NB write for inline and display math. MathJax's delimiters
# are the only content; an equation number (none in this book) would sit before the TeX in the div.
_INLINE = re.compile(r'<span class="math notranslate nohighlight">\\\((.*?)\\\)</span>', re.S)
_DISPLAY = re.compile(r'(<div class="math notranslate nohighlight"[^>]*>)\s*\\\[(.*?)\\\]\s*</div>', re.S)
_LOADER = re.compile(r'\n?[ \t]*<script[^>]*data-mathjax="[^"]*"[^>]*></script>')
_MATHJAX_CONFIG = re.compile(r'\n?[ \t]*<script>window\.MathJax = .*?</script>', re.S)
_ANY_FORMULA = re.compile(r'class="math[ "]')

# MathJax's mathvariant values and the words of their Unicode names ("MATHEMATICAL DOUBLE-STRUCK CAPITAL R").
_STYLES = {
    "bold": "BOLD", "italic": "ITALIC", "bold-italic": "BOLD ITALIC", "double-struck": "DOUBLE-STRUCK",
    "script": "SCRIPT", "bold-script": "BOLD SCRIPT", "fraktur": "FRAKTUR", "bold-fraktur": "BOLD FRAKTUR",
    "sans-serif": "SANS-SERIF", "bold-sans-serif": "SANS-SERIF BOLD", "monospace": "MONOSPACE",
}
# Letters whose styled form was encoded before the mathematical alphanumerics block (the block has holes).
_OLDER = {("ITALIC", "h"): "\u210e", ("SCRIPT", "B"): "\u212c", ("SCRIPT", "E"): "\u2130",
          ("SCRIPT", "F"): "\u2131", ("SCRIPT", "H"): "\u210b", ("SCRIPT", "I"): "\u2110",
          ("SCRIPT", "L"): "\u2112", ("SCRIPT", "M"): "\u2133", ("SCRIPT", "R"): "\u211b",
          ("SCRIPT", "e"): "\u212f", ("SCRIPT", "g"): "\u210a", ("SCRIPT", "o"): "\u2134",
          ("DOUBLE-STRUCK", "C"): "\u2102", ("DOUBLE-STRUCK", "H"): "\u210d",
          ("DOUBLE-STRUCK", "N"): "\u2115", ("DOUBLE-STRUCK", "P"): "\u2119",
          ("DOUBLE-STRUCK", "Q"): "\u211a", ("DOUBLE-STRUCK", "R"): "\u211d",
          ("DOUBLE-STRUCK", "Z"): "\u2124", ("FRAKTUR", "C"): "\u212d", ("FRAKTUR", "H"): "\u210c",
          ("FRAKTUR", "I"): "\u2111", ("FRAKTUR", "R"): "\u211c", ("FRAKTUR", "Z"): "\u2128"}


def styled(char: str, style: str) -> str:
    """``char`` in the mathematical ``style`` (a Unicode style word such as ``"DOUBLE-STRUCK"``), or
    ``char`` itself when Unicode has no such letter (digits and Greek only in some styles)."""
    if (style, char) in _OLDER:
        return _OLDER[(style, char)]
    name = unicodedata.name(char, "")
    match = re.fullmatch(r"(LATIN|GREEK) (CAPITAL|SMALL) LETTER (\w+)", name)
    if match:
        candidate = f"MATHEMATICAL {style} {match.group(2)} {match.group(3)}"
    elif name.startswith("DIGIT "):
        candidate = f"MATHEMATICAL {style} {name}"
    else:
        return char
    try:
        return unicodedata.lookup(candidate)
    except KeyError:
        return char


_VARIANT = re.compile(r'<(mi|mn|mo|mtext)([^>]*?) mathvariant="([a-z-]+)"([^>]*)>([^<]*)</\1>')


def _apply_variant(match: re.Match[str]) -> str:
    tag, before, variant, after, text = match.groups()
    if variant == "normal":
        return match.group(0)  # MathML Core: an upright single-letter <mi>
    style = _STYLES.get(variant)
    if style is None:
        return f"<{tag}{before}{after}>{text}</{tag}>"
    letters = "".join(styled(c, style) for c in html.unescape(text))
    # A styled letter is no longer a single Latin letter, so it is drawn as written (not made italic).
    return f"<{tag}{before}{after}>{html.escape(letters, quote=False)}</{tag}>"


_ORD_MO = re.compile(r'(<mrow data-mjx-texclass="ORD">)<mo((?: [a-z-]+="[^"]*")*)>(?=[^<]*</mo></mrow>)')


_MTABLE = re.compile(r"<mtable([^>]*)>(.*?)</mtable>", re.S)
_ROW = re.compile(r"<(mtr|mlabeledtr)([^>]*)>(.*?)</\1>", re.S)
_CELL = re.compile(r"<mtd([^>]*)>")


def _aligned_table(match: re.Match[str]) -> str:
    """An ``aligned``/``split`` table as MathML Core lays it out: MathML Core has no ``columnalign`` or
    ``columnspacing`` on ``mtable`` (MathJax writes them: right, left, right, ... with no space, so the
    ``=`` signs line up), so each cell gets them as CSS."""
    attrs, body = match.groups()
    if "<mtable" in body:  # nested tables: left as they are
        return match.group(0)
    aligns = re.search(r'columnalign="([^"]*)"', attrs)
    spacing = re.search(r'columnspacing="([^"]*)"', attrs)
    if aligns is None:
        return match.group(0)
    columns = aligns.group(1).split()
    pad = "padding-left:0;padding-right:0;" if spacing and spacing.group(1).split()[0] in ("0em", "0") else ""

    def row(r: re.Match[str]) -> str:
        column = itertools.count()

        def cell(c: re.Match[str]) -> str:
            k = next(column)
            align = columns[min(k, len(columns) - 1)]
            return f'<mtd{c.group(1)} style="text-align:{align};{pad}">'

        return f"<{r.group(1)}{r.group(2)}>{_CELL.sub(cell, r.group(3))}</{r.group(1)}>"

    return f"<mtable{attrs}>{_ROW.sub(row, body)}</mtable>"


_ENTITY = re.compile(r"&#x([0-9A-Fa-f]+);")


def _character(match: re.Match[str]) -> str:
    char = chr(int(match.group(1), 16))
    return match.group(0) if char in "<>&\"'" or not char.isprintable() else char


def core_mathml(mml: str) -> str:
    """MathJax's MathML as MathML Core draws it, written compactly (see the module docstring)."""
    mml = re.sub(r">\s+<", "><", mml.strip())
    # TeX puts no space around an ordinary symbol (the / of a/b, the closing | of |x|) nor inside a fence;
    # MathJax marks them with its TeX class, and MathML's operator dictionary would space them.
    mml = _ORD_MO.sub(r'\1<mo lspace="0" rspace="0"\2>', mml)
    mml = re.sub(r'<mo data-mjx-texclass="(?:OPEN|CLOSE|ORD)"', '<mo lspace="0" rspace="0"', mml)
    mml = re.sub(r' data-mjx-[a-z-]+="[^"]*"', "", mml)
    mml = re.sub(r' xmlns="http://www.w3.org/1998/Math/MathML"', "", mml)
    mml = _MTABLE.sub(_aligned_table, mml)
    mml = _ENTITY.sub(_character, mml)  # &#x2264; as the character itself (UTF-8 pages): fewer bytes
    return _VARIANT.sub(_apply_variant, mml)


def node_executable() -> str | None:
    return shutil.which("node")


def convert(items: list[tuple[str, bool]], mathjax_dir: Path, node: str) -> list[str]:
    """The MathML of each ``(tex, display)`` item, from MathJax's TeX input under Node.js."""
    run = subprocess.run([node, str(CONVERTER), str(mathjax_dir)], input=json.dumps(items),
                         capture_output=True, text=True, encoding="utf-8", timeout=600)
    if run.returncode != 0:
        raise ExtensionError(f"mathml_pages: {CONVERTER.name} failed: {run.stderr[-2000:]}")
    answers = json.loads(run.stdout)
    if len(answers) != len(items):
        raise ExtensionError(f"mathml_pages: {len(items)} formulas sent, {len(answers)} answers")
    errors = []
    for (tex, _), answer in zip(items, answers, strict=True):
        if isinstance(answer, dict):
            errors.append(f"{tex!r}: {answer['error']}")
        elif "<merror" in answer or 'mathcolor="red"' in answer:  # MathJax marks unknown macros so
            errors.append(f"{tex!r}: MathJax cannot read it: {answer}")
    if errors:
        raise ExtensionError("mathml_pages: formulas MathJax cannot parse:\n" + "\n".join(errors[:20]))
    return [core_mathml(answer) for answer in answers]


def _math_font() -> Path | None:
    import importlib.util

    spec = importlib.util.find_spec("ziamath")  # its font only: the package itself is not imported
    if spec is None or spec.origin is None:
        return None
    font = Path(spec.origin).parent / "fonts" / "STIXTwoMath-Regular.ttf"
    return font if font.is_file() else None


def font_characters(mathml: list[str]) -> set[str]:
    """Every character the formulas show, with the italic form MathML Core gives a one-letter <mi>."""
    chars: set[str] = set()
    for mml in mathml:
        for tag, text in re.findall(r"<(mi|mn|mo|mtext|ms)\b[^>]*>([^<]*)</\1>", mml):
            text = html.unescape(text)
            chars.update(text)
            if tag == "mi" and len(text) == 1:  # drawn italic unless mathvariant="normal"
                chars.add(styled(text, "ITALIC"))
        if "<msqrt" in mml or "<mroot" in mml:  # the browser draws the radical sign from the font
            chars.add("\u221a")
    return {c for c in chars if not c.isspace()} | {" ", "\u2061", "\u2062"}


def subset_font(ttf: Path, chars: set[str]) -> bytes:
    """``ttf`` reduced to ``chars``, keeping the MATH table and the glyph variants it names (WOFF2)."""
    from fontTools import subset
    from fontTools.ttLib import TTFont

    options = subset.Options()
    options.layout_features = ["*"]
    options.flavor = "woff2"  # Brotli-compressed: half the bytes of WOFF
    options.name_IDs = ["*"]  # licence and copyright strings stay with the font
    options.name_languages = ["*"]
    font = TTFont(str(ttf))
    subsetter = subset.Subsetter(options)
    subsetter.populate(unicodes=sorted(ord(c) for c in chars))
    subsetter.subset(font)
    out = io.BytesIO()
    font.flavor = "woff2"
    font.save(out)
    return out.getvalue()


STYLESHEET = """/* Formulas as MathML (book/press/mathml_pages.py): the math font, display math. */
@font-face {
  font-family: "%(family)s";
  src: url("stix-two-math.woff2") format("woff2");
  font-display: swap;
}
math {
  font-family: "%(family)s", math;
  font-size: 1.15em;  /* STIX Two's x-height beside the sans-serif body text, as MathJax scales */
}
div.math {
  display: block;  /* the theme's row-reverse flex box (for MathJax) pushes a wide formula off its left */
  overflow-x: auto;  /* a formula wider than the column scrolls in its box (a tab stop then) */
  overflow-y: hidden;
  padding: 0.2em 0;
  margin: 0.6em 0;
}
div.math > math[display="block"] {
  width: max-content;  /* centred when it fits; when wider than the column, from its left edge on, */
  margin: 0 auto;      /* so the whole formula can be scrolled to (centring would cut its left part) */
}
span.math > math {
  padding-right: 1px;  /* room for a fractional width: a formula that fits is no scroll box (tables.css) */
}
"""


def _finished(app: Sphinx, exception: Exception | None) -> None:
    if exception is not None or app.builder.format != "html" or app.builder.name not in ("html", "dirhtml"):
        return
    outdir = Path(app.outdir)
    static = outdir / "_static"
    mathjax_dir = static / "mathjax"
    node = node_executable()
    font = _math_font()
    if node is None or font is None or not (mathjax_dir / "node-main.js").is_file():
        missing = "Node.js" if node is None else ("ziamath's STIX Two Math" if font is None
                                                  else "_static/mathjax/node-main.js")
        logger.warning("[mathml_pages] %s not found: the pages typeset their formulas with MathJax "
                       "in the browser", missing, type="mathml_pages", subtype="fallback")
        return
    count = rewrite_pages(outdir, node, font)
    if count:
        logger.info("[mathml_pages] %d formulas as MathML; math font %d bytes", count,
                    (static / FONT).stat().st_size)


def rewrite_pages(outdir: Path, node: str, font: Path) -> int:
    """Every page of the build at ``outdir`` with its formulas as MathML; the number of distinct formulas."""
    static = outdir / "_static"
    texts: dict[Path, str] = {page: page.read_text(encoding="utf-8") for page in html_pages(outdir)}
    items: list[tuple[str, bool]] = []
    index: dict[tuple[str, bool], int] = {}
    for text in texts.values():
        for tex, is_display in [(m.group(1), False) for m in _INLINE.finditer(text)] + [
                (m.group(2), True) for m in _DISPLAY.finditer(text)]:
            key = (html.unescape(tex).strip(), is_display)
            if key not in index:
                index[key] = len(items)
                items.append(key)
    if not items:
        return 0
    mathml = convert(items, static / "mathjax", node)

    def inline(m: re.Match[str]) -> str:
        mml = mathml[index[(html.unescape(m.group(1)).strip(), False)]]
        # "nohighlight" (a class for highlight.js, which the book does not load) goes: 12 bytes on each
        # of a chapter's 300-600 inline formulas.
        return f'<span class="math notranslate">{mml}</span>'

    def display(m: re.Match[str]) -> str:
        mml = mathml[index[(html.unescape(m.group(2)).strip(), True)]]
        return f"{m.group(1)}{mml}</div>"

    (static / "lean").mkdir(parents=True, exist_ok=True)
    (static / FONT).write_bytes(subset_font(font, font_characters(mathml)))
    (static / CSS).write_text(STYLESHEET % {"family": FONT_FAMILY}, encoding="utf-8")
    for page, text in texts.items():
        new = _DISPLAY.sub(display, _INLINE.sub(inline, text))
        if new == text:
            if _LOADER.search(text) and not _ANY_FORMULA.search(text):
                # No formula of its own, but Sphinx loads MathJax on a page whose toctree children have
                # some (the API reference's index): 720 kB of scripts for nothing, and a layout shift.
                page.write_text(_MATHJAX_CONFIG.sub("", _LOADER.sub("", text)), encoding="utf-8")
            continue
        new = _LOADER.sub("", new)
        new = _MATHJAX_CONFIG.sub("", new)
        depth = len(page.relative_to(outdir).parts) - 1
        up = "../" * depth + "_static/"
        # The font is asked for with the stylesheets, not once layout finds a formula: formulas drawn in a
        # fallback font first and in STIX Two Math later would move the text around them.
        links = (f'<link rel="preload" href="{up}{FONT}" as="font" type="font/woff2" '
                 f'crossorigin="anonymous" />\n<link rel="stylesheet" type="text/css" href="{up}{CSS}" />\n')
        new = new.replace("</head>", links + "</head>", 1)
        page.write_text(new, encoding="utf-8")
    return len(items)


def setup(app: Sphinx) -> dict[str, Any]:
    app.connect("build-finished", _finished, priority=850)  # before lean_pages purges the stylesheets
    return {"parallel_read_safe": True, "parallel_write_safe": True}
