"""book/press/critical_styles.py: each page's bundle split into its first-paint, late and print rules.

The built book is checked in the browser (tests/browser: first paint, page weight, dark mode, explorers
after their scripts ran); these tests pin the split itself on small pages in ``tmp_path``.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from press import critical_styles as cs
from press import lean_pages as lp

ROOT = Path(__file__).resolve().parents[1]

PAGE = """<!DOCTYPE html><html data-theme="auto"><head><script>var hint = "inline-made";</script></head>
<body><div class="x"><p id="y">text</p><ul><li>one</li><li>two</li></ul></div></body></html>"""
CSS = ("/*! licence */.x{a:1}.x:hover{a:2}.x>p::before{a:3}.w{a:4}.z{a:5}.x,.z{a:6}"
       "html[data-theme=dark] .x{a:7}html[data-theme=dark] .w{a:8}.early{a:9}.inline-made{a:10}"
       ".attnlib-quiz-chosen-right{a:11}li:first-child{a:12}li:nth-child(5){a:13}.x:not(:focus){a:14}"
       "@font-face{font-family:F}@keyframes k{0%{a:0}}@media (min-width:9px){.x{b:1}.w{b:2}.z{b:3}}"
       "@media print{.x{c:1}.w{c:2}}")


@pytest.mark.parametrize(("selector", "static"), [
    (".a:hover", ".a:is(*)"),
    ("a::before", "a:is(*)"),
    (".b > :focus-visible", ".b > :is(*)"),
    ("li:first-child:not(.c)", "li:first-child:not(.c)"),
    (":root", ":root"),
    (".d:not(:hover)", None),  # "not hovered" has no static reading: the rule is kept
])
def test_static_form_reads_states_as_any_state(selector: str, static: str | None) -> None:
    assert cs.static_form(selector) == static


def test_split_keeps_first_paint_rules_in_order_and_the_rest_apart() -> None:
    page = cs.Page(PAGE, script_tokens={"early"}, later_tokens={"z"})
    critical, late, printed = cs.split_css(CSS, page)
    assert critical == (
        "/*! licence */.x{a:1}.x:hover{a:2}.x>p::before{a:3}.x{a:6}html[data-theme=dark] .x{a:7}.early{a:9}"
        ".inline-made{a:10}li:first-child{a:12}.x:not(:focus){a:14}@font-face{font-family:F}"
        "@keyframes k{0%{a:0}}@media (min-width:9px){.x{b:1}}"
    ), "the page's own elements in any state and scheme, classes of early and inline scripts, whole at-rules"
    assert late == (".z{a:5}.z{a:6}.attnlib-quiz-chosen-right{a:11}li:nth-child(5){a:13}"
                    "@media (min-width:9px){.z{b:3}}"), (
        "classes a later script names or builds from a prefix, elements it may add; a selector list is split"
    )
    assert printed == "@media print{.x{c:1}}"
    for dropped in (".w{", "a:8"):
        assert dropped not in critical + late + printed, f"{dropped}: nothing on the page can match it"


def test_the_colour_scheme_set_by_script_is_read_both_ways() -> None:
    page = cs.Page(PAGE.replace('data-theme="auto"', ""), script_tokens=set())
    light, _, _ = cs.split_css('html[data-theme="light"] .x{a:1}html[data-mode=dark] p{a:2}', page)
    assert light == 'html[data-theme="light"] .x{a:1}html[data-mode=dark] p{a:2}'
    assert page.root is not None and "data-theme" not in page.root.attrs, "the page is left as written"


TRICKY = """<!DOCTYPE html><html data-theme="light"><body>
<div class="a b" id="top"><p class="c">1</p><p>2</p><span class="c d">3</span></div>
<ul class="list"><li class="c">x</li><li>y</li><li class="e">z</li></ul>
<svg class="icon"><a class="c"><text>t</text></a></svg><table class="t">
<tr><td>1</td><td class="c">2</td></tr>
</table><input type="text" class="field" value="v"></body></html>"""


@pytest.mark.parametrize("selector", [
    ".a .c", ".a > .c", "div.a > span.c.d", ".a .c + span", ".a p ~ .d", "#top > p", "#top.a", "#nowhere",
    ".b .e", ".list > li:first-child", ".list > li:nth-child(2n+1).e", "li:last-child:not(.e)",
    "ul li ~ li.e", ".list:has(> .e)", ":is(.a, .list) > .c", "p:is(.c, .zz)", ":where(div) span",
    ".a :first-child", "td ~ td.c", ".t td:not(.c)", "input[type=text].field", 'input[value~="v"]',
    '[class~="c"]', "html[data-theme=dark] .c", "html[data-theme=dark] .a>p", ".icon a.c", "svg text",
    "svg|a", ".a\\:b", ":root .list", ":scope .c", "div p.c:only-of-type", "p:empty", "body > :last-child",
    ".a .c:hover", ".a > .c::before", ".c .d", "span.c.e", "li.c + li + .e", ".list li", "div p", "body .c",
    ".t tr > td", "html .icon text", ".a > *", ".list > :not(.c)", ".a p + p", ".list .c ~ li",
    "#top > .zz", ".a .list li", "ul.list > li.c > span",
])
def test_matching_only_the_candidate_elements_finds_what_a_full_scan_finds(selector: str) -> None:
    """The page indexes its elements by class, id and tag name and tries a selector only on those its last
    compound names: on every kind of selector the answer is the full scan's."""
    indexed, scanned = cs.Page(TRICKY, set()), cs.Page(TRICKY, set(), indexed=False)
    assert indexed.may_match(selector) == scanned.may_match(selector), selector


def test_the_index_narrows_by_the_last_compound() -> None:
    page = cs.Page(TRICKY, set())
    assert [t.name for t in page._candidates(".a > span.c.d") or []] == ["span"], "the rarest key: .d"
    assert page._candidates(":root") is None and page._candidates("svg|a") is None
    assert page._candidates(":is(*) :is(*)") is None, "nothing to narrow by: the whole page"
    assert [t.name for t in page._candidates(".a :is(*)") or []] == ["p", "p", "span"], "inside an .a"
    assert [t.name for t in page._candidates(".list li") or []] == ["li"] * 3
    assert len(page._candidates(".a p + td") or []) == 2, "a sibling combinator: the last compound's own"
    assert page._candidates("#nowhere") == [], "no element has it: no match, no scan"


def test_a_selector_soupsieve_cannot_read_is_kept() -> None:
    page = cs.Page(PAGE, script_tokens=set())
    assert page.may_match(".x:-moz-focusring") and page.may_match(".x:unknown-state(1)")


def test_split_critical_links_the_three_sheets(tmp_path: Path) -> None:
    static = tmp_path / "_static"
    (static / "lean").mkdir(parents=True)
    (static / "later.js").write_text('el.classList.add("z");', encoding="utf-8")
    (static / "lean" / "style-0123456789ab.css").write_text(CSS, encoding="utf-8")
    head = '  <link rel="stylesheet" href="../_static/lean/style-0123456789ab.css" />\n'
    loader = f"<script>{lp.AFTER_PAINT_MARK}\nvar s = \"../_static/later.js\";</script>"
    chapter = tmp_path / "book" / "a.html"
    chapter.parent.mkdir()
    chapter.write_text(PAGE.replace("<head>", "<head>\n" + head).replace("</body>", loader + "</body>"),
                       encoding="utf-8")
    search = tmp_path / "search.html"  # no script loader: keeps its bundle
    search.write_text(PAGE.replace("<head>", "<head>\n" + head.replace("../", "")), encoding="utf-8")
    found = cs.split_critical(tmp_path, [chapter, search], lp.AFTER_PAINT_MARK)
    changed, bundle, critical, late, printed = found
    assert changed == 1 and bundle == len(CSS) and 0 < printed < late < critical < bundle
    html = chapter.read_text(encoding="utf-8")
    link = r'<link rel="stylesheet" href="([^"]+)"( data-lean-late="([^"]+)")?( media="print")? />'
    links = re.findall(link, html)
    assert [(href.rsplit("/", 1)[1].split("-")[0], bool(media)) for href, _, _, media in links] == [
        ("critical", False), ("print", True)], links
    sheets = {name: (chapter.parent / href).resolve().read_text(encoding="utf-8")
              for name, href in (("critical", links[0][0]), ("late", links[0][2]), ("print", links[1][0]))}
    assert sheets["critical"].startswith("/* lean_pages (book/press/critical_styles.py): first-paint rules")
    assert ".x{a:1}" in sheets["critical"] and ".z{a:5}" in sheets["late"]
    assert "@media print" in sheets["print"]
    assert "style-0123456789ab.css" in search.read_text(encoding="utf-8"), "a page without the loader"


def test_the_loader_inserts_the_late_sheet_before_the_critical_one_then_runs_the_scripts() -> None:
    page = "<html><body><script defer src=\"_static/a.js\"></script></body></html>"
    loader = lp.scripts_after_first_paint(page)
    assert 'document.querySelector("link[data-lean-late]")' in loader and "critical.before(link)" in loader
    assert loader.index("link.onload = link.onerror = then") < loader.index("styles(load)")
