"""book/press/lean_styles.py (the stylesheets: purge, unread custom properties, one bundle) and lean_pages.py
(the theme's tab-stop pass, scripts after the first paint, lazy figures).

Each test builds a small ``_static`` tree and pages in ``tmp_path`` and runs the extension's functions on
them, as its build-finished step does on the real book.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from press import lean_pages as lp
from press import lean_styles as ls

ROOT = Path(__file__).resolve().parents[1]


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def _page(body: str, head: str = "", scripts: str = "") -> str:
    return f"<!DOCTYPE html><html><head>{head}{scripts}</head><body>{body}</body></html>"


# ------------------------------------------------------------------------------------------- purge
@pytest.fixture()
def site(tmp_path: Path) -> tuple[Path, Path]:
    """A build with one page whose prose says "row" and "table", and one script that adds "collapsing"."""
    static = tmp_path / "_static"
    _write(static / "theme.js", 'el.classList.add("collapsing");')
    _write(static / "unused.js", 'el.classList.add("orphan");')  # no page loads it
    _write(tmp_path / "page.html", _page(
        '<div class="note" id="main">a row of the table, shown</div><p>container col active</p>',
        scripts='<script src="_static/theme.js"></script><script>document.body.classList.add("inline-added")'
                "</script>"))
    return tmp_path, static


def test_purge_keeps_classes_of_attributes_and_scripts_and_drops_prose_words(site: tuple[Path, Path]) -> None:
    outdir, static = site
    tokens = ls.content_tokens(lp.html_pages(outdir), static)
    css = (".note{a:1}#main{b:2}.collapsing{c:3}.inline-added{d:4}.row{e:5}.table>td{f:6}.active{g:7}"
           ".orphan{h:8}.bs-tooltip-top{i:9}p{j:10}.note,.col{k:11}")
    purged = ls.purge_css(css, tokens)
    for kept in (".note{a:1}", "#main{b:2}", ".collapsing{c:3}", ".inline-added{d:4}", ".bs-tooltip-top{i:9}",
                 "p{j:10}", ".note{k:11}"):
        assert kept in purged, (kept, purged)
    for dropped in (".row", ".table", ".active", ".orphan", ".col"):
        assert not re.search(rf"{re.escape(dropped)}(?![\w-])", purged), (dropped, purged)


def test_loaded_scripts_follow_pages_and_loaders(tmp_path: Path) -> None:
    static = tmp_path / "_static"
    loader = _write(static / "loader.js", 'load("_static/late.js")')
    late = _write(static / "late.js", "x")
    _write(static / "fontawesome.js", "y")
    _write(static / "mathjax" / "tex.js", "z")
    page = _write(tmp_path / "p.html", _page("", scripts='<script src="_static/loader.js"></script>'
                                                        '<script src="_static/mathjax/tex.js"></script>'))
    assert ls.loaded_scripts([page], static) == [loader, late]


# ------------------------------------------------------------------------------ custom properties
def test_unread_custom_properties_go_with_their_chains() -> None:
    css = (":root{--used:1px;--unused:2px;--chain-a:var(--chain-b);--chain-b:red;--read-a:var(--read-b);"
           "--read-b:blue;--cycle-a:var(--cycle-b);--cycle-b:var(--cycle-a)}"
           ".x{width:var(--used);color:var(--read-a)}")
    out = ls.prune_custom_properties({Path("a.css"): css}, set())[Path("a.css")]
    assert out == (":root{--used:1px;--read-a:var(--read-b);--read-b:blue}"
                   ".x{width:var(--used);color:var(--read-a)}")


def test_custom_properties_in_media_and_dark_blocks() -> None:
    css = ('html[data-theme=light]{--fg:#000;--gone:#111}html[data-theme=dark]{--fg:#fff;--gone:#eee}'
           "@media (prefers-color-scheme:dark){html:not([data-theme]){--fg:#fff;--gone:#eee}}"
           "@media (max-width:10px){:root{--only-here:1}}"
           "@supports (display:grid){.y{--g:1;gap:var(--g)}}"
           "@property --registered{syntax:'<length>';inherits:false;initial-value:0px}"
           ":root{--registered:1px}"
           "@keyframes k{to{width:var(--in-keyframes)}}:root{--in-keyframes:3px}"
           "body{color:var(--fg)}")
    out = ls.prune_custom_properties({Path("a.css"): css}, set())[Path("a.css")]
    assert "html[data-theme=light]{--fg:#000}html[data-theme=dark]{--fg:#fff}" in out
    assert "@media (prefers-color-scheme:dark){html:not([data-theme]){--fg:#fff}}" in out
    assert "--gone" not in out and "--only-here" not in out and "max-width:10px" not in out, out
    assert "@supports (display:grid){.y{--g:1;gap:var(--g)}}" in out
    assert ":root{--registered:1px}" in out and ":root{--in-keyframes:3px}" in out


def test_custom_properties_read_elsewhere_stay(tmp_path: Path) -> None:
    static = tmp_path / "_static"
    theme = _write(static / "theme.css",
                   ":root{--by-script:1;--by-page:2;--by-own:3;--by-prefix-x:4;--none:5}")
    _write(static / "own.css", ".o{margin:var(--by-own)}")
    _write(static / "t.js", 'style.setProperty("--by-script", 1); get("--by-prefix-" + name)')
    page = _write(tmp_path / "p.html", _page('<div style="width:var(--by-page)"></div>',
                                              scripts='<script src="_static/t.js"></script>'))
    before, after = ls.lean_custom_properties(static, [page], {"own.css"})
    assert theme.read_text(encoding="utf-8") == ":root{--by-script:1;--by-page:2;--by-own:3;--by-prefix-x:4}"
    assert after == before - len(";--none:5")


def test_purge_note_survives_pruning(tmp_path: Path) -> None:
    static = tmp_path / "_static"
    theme = _write(static / "theme.css", ls.PURGED_NOTE + ":root{--a:1;--b:2}.x{width:var(--a)}")
    ls.lean_custom_properties(static, [], set())
    assert theme.read_text(encoding="utf-8") == ls.PURGED_NOTE + ":root{--a:1}.x{width:var(--a)}"


# ------------------------------------------------------------------------------------------ bundles
@pytest.fixture()
def book(tmp_path: Path) -> Path:
    """A build whose pages link a theme sheet (``@import``, a font), an extension's and the book's."""
    static = tmp_path / "_static"
    _write(static / "basic.css", "/* sphinx */\n.basic { background: url(img/bg.png?v=1#x) }\n")
    _write(static / "styles" / "theme.css", '@charset "UTF-8";\n@import "../basic.css";\n'
           '/*! Theme (MIT) */\n.theme{font:url("../fonts/a.woff2")}\n.t2{b:url(data:image/png;base64,AAA)}\n'
           '.icon:before{content:"\\f0c9"}\n.t3{mask:url(#m)}\n')
    _write(static / "ext.css", ".ext { color : red ; }\n.ext::after{content:\"é\"}\n")
    _write(static / "book.css", "/* the book's own */\n.book{x:1}\n")
    _write(static / "quiz.css", ".quiz{y:2}\n")
    links = ('  <link href="{r}_static/styles/theme.css?digest=1" rel="stylesheet" />\n'
             '    <link rel="stylesheet" type="text/css" href="{r}_static/ext.css?v=2" />\n'
             '    <link rel="icon" href="{r}_static/favicon.svg"/>\n{quiz}'
             '    <link rel="stylesheet" type="text/css" href="{r}_static/book.css" />\n')
    quiz = '    <link rel="stylesheet" type="text/css" href="{r}_static/quiz.css" />\n'
    _write(tmp_path / "search.html", _page("s", head=links.format(r="", quiz="")))
    _write(tmp_path / "book" / "a.html", _page("a", head=links.format(r="../", quiz="")))
    _write(tmp_path / "book" / "q.html", _page("q", head=links.format(r="../", quiz=quiz.format(r="../"))))
    return tmp_path


def _bundle_href(page: Path) -> str:
    match = re.search(r'href="([^"]+style-[^"]+)"', page.read_text(encoding="utf-8"))
    assert match, f"{page.name} links no bundle"
    return match.group(1)


def test_every_page_links_one_bundle_in_place_of_its_sheets(book: Path) -> None:
    pages = lp.html_pages(book)
    count, changed, before, after = ls.bundle_stylesheets(book, pages)
    assert (count, changed) == (2, 3)
    a, q, search = (book / "book" / "a.html", book / "book" / "q.html", book / "search.html")
    for page in (a, q, search):
        links = re.findall(r"<link\b[^>]*>", page.read_text(encoding="utf-8"))
        sheets = [link for link in links if "stylesheet" in link]
        assert len(sheets) == 1, (page, links)
        assert re.fullmatch(r'<link rel="stylesheet" href="(\.\./)?_static/lean/style-[0-9a-f]{12}\.css" />',
                            sheets[0]), sheets[0]
        assert links.index(sheets[0]) == 0 and 'rel="icon"' in links[1], "in place of the first sheet"
    href, search_href = (_bundle_href(page) for page in (a, search))
    assert href == "../" + search_href, "pages with the same list share one bundle"
    assert href not in q.read_text(encoding="utf-8"), "the quiz page's list differs: its own bundle"
    sizes = [p.stat().st_size for p in (book / "_static" / "lean").glob("style-*.css")]
    assert after == max(sizes), "the largest bundle: the quiz page's"
    assert before == sum(p.stat().st_size for p in (book / "_static").rglob("*.css")
                         if p.name in ("theme.css", "basic.css", "ext.css", "book.css", "quiz.css"))
    for name in ("basic.css", "ext.css", "book.css", "styles/theme.css"):
        assert (book / "_static" / name).is_file(), "the sheets stay on disk"


def test_bundle_keeps_order_rebases_urls_and_inlines_imports(book: Path) -> None:
    ls.bundle_stylesheets(book, lp.html_pages(book))
    page = book / "book" / "q.html"
    css = (page.parent / _bundle_href(page)).read_text(encoding="utf-8")
    assert css.startswith('@charset "UTF-8";\n'), "non-ASCII content: the charset comes first, once"
    assert css.count("@charset") == 1 and "@import" not in css
    order = [css.index(s) for s in (".basic", ".theme", ".ext{", ".quiz", ".book")]
    assert order == sorted(order), css
    assert 'url("../img/bg.png?v=1#x")' in css, "basic.css is in _static, the bundle in _static/lean"
    assert 'url("../fonts/a.woff2")' in css, "styles/../fonts is _static/fonts"
    assert "url(data:image/png;base64,AAA)" in css and "url(#m)" in css, "data: and fragment URLs unchanged"
    assert "/*! Theme (MIT) */" in css and "/* sphinx */" not in css and "the book's own" not in css
    assert '.icon:before{content:"\\f0c9"}' in css and ".ext{color : red}" in css


def test_bundle_wraps_media_and_refuses_what_it_cannot_inline(tmp_path: Path) -> None:
    static = tmp_path / "_static"
    a = _write(static / "a.css", "@import url('b.css') screen;\n.a{x:1}")
    _write(static / "b.css", ".b{y:2}")
    assert ".a" in ls.bundle_css([(a, "")], static / "lean")
    assert "@media screen{.b{y:2}}.a{x:1}" in ls.bundle_css([(a, "")], static / "lean")
    assert "@media print{" in ls.bundle_css([(a, "print")], static / "lean")
    remote = _write(static / "r.css", '@import "https://example.org/x.css";\n.r{z:3}')
    with pytest.raises(ls.BundleError, match=r"r\.css: @import 'https://example\.org/x\.css' is not a file"):
        ls.bundle_css([(remote, "")], static / "lean")
    loop = _write(static / "loop.css", '@import "loop.css";')
    with pytest.raises(ls.BundleError, match="imports itself"):
        ls.bundle_css([(loop, "")], static / "lean")


def test_links_that_must_stay_split_the_bundle(tmp_path: Path) -> None:
    static = tmp_path / "_static"
    for name in ("a", "b", "c", "d"):
        _write(static / f"{name}.css", f".{name}{{x:1}}")
    head = ('<link rel="stylesheet" href="_static/a.css" />\n<link rel="stylesheet" href="_static/b.css" />\n'
            '<link rel="stylesheet" href="https://cdn.example.org/x.css" />\n'
            '<link rel="stylesheet" href="_static/c.css" />\n<style>.inline{}</style>\n'
            '<link rel="stylesheet" href="_static/d.css" media="print" />\n')
    page = _write(tmp_path / "p.html", _page("", head=head))
    ls.bundle_stylesheets(tmp_path, [page])
    links = re.findall(r'<link rel="stylesheet" href="([^"]+)"', page.read_text(encoding="utf-8"))
    assert len(links) == 4 and links[1] == "https://cdn.example.org/x.css", links
    bundles = [(tmp_path / link).read_text(encoding="utf-8") for link in links if "lean/style-" in link]
    assert [".a{x:1}" in b and ".b{x:1}" in b for b in bundles] == [True, False, False]
    assert ".c{x:1}" in bundles[1] and bundles[2].endswith("@media print{.d{x:1}}\n")


def test_minify_keeps_strings_escapes_and_licences() -> None:
    css = ('/*! licence */\n/* note */\na , b  >  c:hover {\n  content: "  ;}  " ;\n'
           "  w: calc(1px + 2px) ;\n}\nx/* a comment separates */y{}")
    assert ls.minify_css(css) == '/*! licence */a,b > c:hover{content: "  ;}  ";w: calc(1px + 2px)}x y{}'
    assert ls.minify_css(".i:before{content:\\f0c9 }\n.a\\ b { }") == ".i:before{content:\\f0c9 }.a\\ b{}"


# ---------------------------------------------------------- the theme's tab-stop pass, scripts, images
THEME_TAIL = ('function I(){const e=()=>{document.querySelectorAll(["pre",".pst-scrollable-table-container"]'
              '.join(", ")).forEach(e=>{e.tabIndex=e.scrollWidth>e.clientWidth?0:-1})};e()}'
              'function J(){}documentReady(J),'
              '"complete"===document.readyState?I():window.addEventListener("load",I)'
              "})();")


def test_the_themes_tab_stop_pass_is_taken_out_and_nothing_else() -> None:
    lean = lp.drop_theme_tab_stops(THEME_TAIL)
    assert lean is not None and lean.startswith(lp.TAB_STOPS_MARK)
    assert 'addEventListener("load",I)' not in lean and "documentReady(J),void 0})();" in lean
    assert "function I(){" in lean  # the function stays (nothing else calls it)
    assert lp.drop_theme_tab_stops(lean) == lean  # once
    # a load call of another function, or no such call: not recognised (the build warns)
    other = THEME_TAIL.replace('"load",I)', '"load",J)').replace("?I():", "?J():")
    assert lp.drop_theme_tab_stops(other) is None
    assert lp.drop_theme_tab_stops("(()=>{})();") is None


PAGE = """<html><head>
    <script src="../_static/documentation_options.js?v=1"></script>
    <script defer="defer" src="../_static/doctools.js?v=2"></script>
    <script data-plotly="../_static/vendor/p&amp;q.js" defer="defer"
      src="../_static/attnlib-explorer.js?v=3"></script>
    <script defer="defer" src="../_static/togglebutton.js?v=4"></script>
    <script>let toggleHintShow = 'Click to show';</script>
</head><body><p>text</p>
<img alt="A figure." src="../_images/abc.png" style="width: 758px; height: 341px;" />
<img alt="logo" class="logo__image" src="../_static/logo.svg" />
  <script defer src="../_static/scripts/bootstrap.js?digest=5"></script>
</body></html>"""


def _loaded_scripts(page: str) -> list[dict[str, str]]:
    listed = re.search(r"var scripts = (\[.*?\]);", page).group(1)
    return json.loads(listed.replace("<\\/", "</"))


def test_deferred_scripts_load_after_the_first_paint_in_their_order() -> None:
    lean = lp.scripts_after_first_paint(PAGE)
    assert _loaded_scripts(lean) == [
        {"src": "../_static/doctools.js?v=2"},
        {"data-plotly": "../_static/vendor/p&q.js", "src": "../_static/attnlib-explorer.js?v=3"},
        {"src": "../_static/scripts/bootstrap.js?digest=5"},
    ]
    assert 'src="../_static/doctools.js' not in lean and "bootstrap.js?digest=5\"></script>" not in lean
    # kept: the synchronous script, the inline ones, and the toggle button (it folds content: before paint)
    assert '<script src="../_static/documentation_options.js?v=1"></script>' in lean
    assert '<script defer="defer" src="../_static/togglebutton.js?v=4"></script>' in lean
    assert "let toggleHintShow" in lean
    assert "requestAnimationFrame" in lean and "s.async = false" in lean and "window.leanPagesScripts" in lean
    assert lean.index(lp.AFTER_PAINT_MARK) < lean.index("</body>")
    assert lp.scripts_after_first_paint(lean) == lean
    assert lp.scripts_after_first_paint("<html><body>no scripts</body></html>").count("<script") == 0


def test_figures_load_lazily_with_their_size() -> None:
    lean = lp.lazy_images(PAGE)
    assert ('<img loading="lazy" decoding="async" width="758" height="341" alt="A figure." '
            'src="../_images/abc.png" style="width: 758px; height: 341px;" />') in lean
    assert '<img alt="logo" class="logo__image" src="../_static/logo.svg" />' in lean  # not a figure
    assert lp.lazy_images(lean) == lean


PYGMENTS = """html[data-theme="light"] .highlight .o { color: #00622F } /* Operator */
html[data-theme="light"] .highlight .s2 { color: #00622F } /* String */
html[data-theme="light"] .highlight .si { color: #00622F } /* String.Interpol */
html[data-theme="light"] .highlight .mi { color: #7F4707 } /* Number */
html[data-theme="light"] .highlight .c1 { color: #00622F; font-style: italic } /* Comment */
html[data-theme="dark"] .highlight .o { color: #ABE338 } /* Operator */
html[data-theme="dark"] .highlight .s2 { color: #ABE338 } /* String */
html[data-theme="dark"] .highlight .si { color: #FFD900 } /* differs from s2 in dark mode only */
html[data-theme="dark"] .highlight .mi { color: #FFD900 } /* Number */
html[data-theme="dark"] .highlight .c1 { color: #ABE338; font-style: italic } /* Comment */
"""
CELL = '<div class="highlight-ipython3 notranslate"><div class="highlight"><pre>{}</pre></div></div>'


def test_token_runs_merge_only_where_every_mode_looks_the_same() -> None:
    looks = lp.token_looks(PYGMENTS)
    assert looks["o"] == looks["s2"] != looks["si"]  # si differs in dark mode
    assert looks["c1"] != looks["o"]  # same colours, but italic
    code = ('x <span class="o">=</span> <span class="s2">&quot;a</span><span class="s2">b&quot;</span>'
            '<span class="o">+</span><span class="si">{</span>\n'
            '<span class="o">-</span>  <span class="o">*</span><span class="c1"># c</span>'
            '<span class="mi">1</span><span class="zz">q</span><span class="zz">r</span>')
    merged = lp.merge_token_runs(CELL.format(code), looks)
    assert merged == CELL.format(
        'x <span class="o">= &quot;ab&quot;+</span><span class="si">{</span>\n'
        '<span class="o">-  *</span><span class="c1"># c</span>'
        '<span class="mi">1</span><span class="zz">q</span><span class="zz">r</span>')
    # the text a reader copies is unchanged; a block that is not a Python cell is left alone
    assert re.sub("<[^>]+>", "", merged) == re.sub("<[^>]+>", "", CELL.format(code))
    other = ('<div class="highlight-text notranslate"><div class="highlight"><pre>' + code
             + "</pre></div></div>")
    assert lp.merge_token_runs(other, looks) == other
    assert lp.merge_token_runs(merged, looks) == merged


def test_fragment_script_is_inlined_once_without_its_comment() -> None:
    static = Path(__file__).parents[1] / "book" / "_static"
    script = (static / lp.FRAGMENTS_SCRIPT).read_text(encoding="utf-8")
    page = lp.inline_fragments(PAGE, script)
    body = page[page.index(lp.FRAGMENTS_MARK):page.index("</body>")]
    assert "hashchange" in body and "scrollIntoView" in body and "content-visibility" not in body
    assert page.count("<script") == PAGE.count("<script") + 1
    assert lp.inline_fragments(page, script) == page


def test_a_sidebar_toggle_is_named_for_the_entry_it_opens() -> None:
    theme = ('<li class="toctree-l1 has-children"><a class="reference internal" href="api/index.html">'
             'API reference</a><details open="open"><summary>'
             '<span class="toctree-toggle" role="presentation"><i class="fa-solid fa-chevron-down"></i>'
             '</span></summary><ul>')
    named = lp.named_toggles(theme)
    assert '<summary aria-label="Sections of API reference"><span class="toctree-toggle"' in named
    assert lp.named_toggles(named) == named
    current = theme.replace('class="reference internal" href="api/index.html"',
                            'class="current reference internal" href="#"')
    assert '<summary aria-label="Sections of API reference">' in lp.named_toggles(current)
    plain = "<details><summary>Show the solution</summary></details>"
    assert lp.named_toggles(plain) == plain


THEME_HEAD = """<html lang="en" data-theme="auto"><head>
  <script data-cfasync="false">
    document.documentElement.dataset.mode = localStorage.getItem("mode") || "auto";
    document.documentElement.dataset.theme = localStorage.getItem("theme") || "auto";
  </script>
</head><body></body></html>"""


def test_the_colour_scheme_is_resolved_before_the_first_paint() -> None:
    lean = lp.scheme_before_first_paint(THEME_HEAD)
    script = lean[lean.index("<script"):lean.index("</script>")]
    # after the theme's two lines, in the same synchronous script of <head>
    assert script.index('dataset.theme = localStorage') < script.index(lp.SCHEME_MARK)
    assert 'matchMedia("(prefers-color-scheme: dark)")' in script and "root.dataset.theme =" in script
    assert lp.scheme_before_first_paint(lean) == lean  # once
    # no single-letter names: critical_styles reads an inline script's words as classes (".m" is Pygments')
    code = script[script.index(lp.SCHEME_MARK) + len(lp.SCHEME_MARK):]
    assert not re.findall(r"\b[A-Za-z]\b", code), code
    # a page without the theme's script (the root redirect) is left alone
    plain = "<html><head><title>x</title></head><body></body></html>"
    assert lp.scheme_before_first_paint(plain) == plain
