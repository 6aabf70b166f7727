"""book/press/mathml_pages.py: the book's TeX as MathML that MathML Core draws, and its math font.

Conversions run the book's own MathJax (sphinx-mathjax-offline's copy) under Node.js, as the build does;
a machine without Node.js fails here, as its build would fall back to MathJax in the browser.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from press import mathml_pages as mp

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def mathjax_dir() -> Path:
    """The MathJax the build serves: sphinx-mathjax-offline's copy (its package name has hyphens)."""
    import importlib.util

    spec = importlib.util.find_spec("sphinx-mathjax-offline")
    assert spec is not None and spec.origin is not None, "sphinx-mathjax-offline is not installed"
    folder = Path(spec.origin).parent / "static" / "mathjax"
    assert (folder / "node-main.js").is_file(), folder
    return folder


@pytest.fixture(scope="module")
def node() -> str:
    found = mp.node_executable()
    if found is None:
        pytest.fail("Node.js is not installed: the build writes the book's formulas as MathML with it",
                    pytrace=False)
    return found


def convert(tex: str, mathjax_dir: Path, node: str, display: bool = False) -> str:
    return mp.convert([(tex, display)], mathjax_dir, node)[0]


@pytest.mark.parametrize(("char", "style", "expected"), [
    ("R", "DOUBLE-STRUCK", "\u211d"),    # ℝ, encoded before the mathematical block
    ("E", "DOUBLE-STRUCK", "\U0001d53c"),  # 𝔼
    ("x", "BOLD", "\U0001d431"),
    ("L", "SCRIPT", "\u2112"),           # ℒ
    ("J", "SCRIPT", "\U0001d4a5"),
    ("h", "ITALIC", "\u210e"),           # ℎ, the Planck constant's letter
    ("k", "ITALIC", "\U0001d458"),
    ("\u03b1", "BOLD", "\U0001d6c2"),    # bold alpha
    ("3", "DOUBLE-STRUCK", "\U0001d7db"),
    ("+", "BOLD", "+"),                  # no styled form: unchanged
])
def test_styled_letters(char: str, style: str, expected: str) -> None:
    assert mp.styled(char, style) == expected


def test_mathvariants_become_unicode_letters_mathml_core_draws(mathjax_dir: Path, node: str) -> None:
    mml = convert(r"\mathbb{R}^{n} \ni \mathbf{x}, \mathcal{L}, \mathrm{d}x", mathjax_dir, node)
    assert "\u211d" in mml and "\U0001d431" in mml and "\u2112" in mml
    assert 'mathvariant="double-struck"' not in mml and 'mathvariant="bold"' not in mml
    assert '<mi mathvariant="normal">d</mi>' in mml  # upright single letter: MathML Core's one variant
    assert "data-mjx" not in mml and "xmlns" not in mml and "\n" not in mml


def test_tex_spacing_of_ordinary_symbols_and_fences(mathjax_dir: Path, node: str) -> None:
    slash = convert(r"\partial \ell/\partial z", mathjax_dir, node)
    assert '<mo lspace="0" rspace="0">/</mo>' in slash
    bars = convert(r"|J_{ij}| \le 1", mathjax_dir, node)
    assert bars.count('lspace="0" rspace="0"') == 1  # the closing bar; the opening one is a prefix
    assert "<mo>\u2264</mo>" in bars  # a relation keeps its spaces
    fence = convert(r"\left( a \right)", mathjax_dir, node)
    assert fence.count('<mo lspace="0" rspace="0">') == 2


def test_aligned_equations_keep_their_alignment_as_css(mathjax_dir: Path, node: str) -> None:
    mml = convert(r"\begin{aligned} a &= b \\ c + d &= e \end{aligned}", mathjax_dir, node, display=True)
    assert mml.startswith('<math display="block"><mtable')
    cells = mml.count("<mtd")
    assert cells == 4
    assert mml.count('style="text-align:right;padding-left:0;padding-right:0;"') == 2
    assert mml.count('style="text-align:left;padding-left:0;padding-right:0;"') == 2


@pytest.mark.parametrize(("tex", "message"), [
    (r"\frac{a}{b", "Missing close brace"),
    (r"\notamacro x", "notamacro"),  # MathJax would show it in red in a page
    (r"a & b", "Misplaced &"),
])
def test_tex_mathjax_cannot_parse_stops_the_build_naming_it(tex: str, message: str, mathjax_dir: Path,
                                                             node: str) -> None:
    from sphinx.errors import ExtensionError

    with pytest.raises(ExtensionError, match="formulas MathJax cannot parse") as info:
        mp.convert([("x", False), (tex, False)], mathjax_dir, node)
    assert message in str(info.value) and repr(tex) in str(info.value)


def test_the_math_font_keeps_the_math_table_and_the_book_s_characters(mathjax_dir: Path, node: str) -> None:
    import io

    from fontTools.ttLib import TTFont

    font = mp._math_font()
    assert font is not None, "ziamath's STIX Two Math is missing (requirements.txt)"
    mathml = mp.convert([(r"\sqrt{d_k} \sum_j e^{z_j}", True), (r"\mathbb{R}", False)], mathjax_dir, node)
    chars = mp.font_characters(mathml)
    assert {"\u221a", "\u2211", "\u211d", "\U0001d451", "\U0001d458"} <= chars  # √ ∑ ℝ and italic d, k
    woff = mp.subset_font(font, chars)
    subset = TTFont(io.BytesIO(woff))
    assert "MATH" in subset  # stretchy radicals and big operators
    cmap = subset.getBestCmap()
    assert all(ord(c) in cmap for c in chars if not c.isspace() and c not in "\u2061\u2062")
    assert woff[:4] == b"wOF2" and len(woff) < 60_000 < font.stat().st_size


def test_pages_get_mathml_and_lose_mathjax(tmp_path: Path, mathjax_dir: Path, node: str) -> None:
    static = tmp_path / "_static"
    shutil.copytree(mathjax_dir, static / "mathjax")
    (tmp_path / "book").mkdir()
    page = tmp_path / "book" / "ch.html"
    page.write_text(
        '<html><head><script>window.MathJax = {"loader": {}}</script>\n'
        '<script data-mathjax="../_static/mathjax/startup.js" defer="defer" src="../_static/lean/math.js">'
        "</script>\n</head><body><p>Inline <span class=\"math notranslate nohighlight\">\\(a &lt; b\\)</span>"
        ' and display</p><div class="math notranslate nohighlight">\n\\[\\sqrt{d_k}\\]\n</div></body></html>',
        encoding="utf-8")
    plain = tmp_path / "book" / "index.html"  # no formula, but MathJax (its toctree children have some)
    head = page.read_text(encoding="utf-8").split("<body>")[0]
    plain.write_text(head + "<body><p>Words.</p></body></html>", encoding="utf-8")
    count = mp.rewrite_pages(tmp_path, node, mp._math_font())
    html = page.read_text(encoding="utf-8")
    assert count == 2
    assert plain.read_text(encoding="utf-8") == "<html><head>\n</head><body><p>Words.</p></body></html>"
    inline = "<math><mi>a</mi><mo>&lt;</mo><mi>b</mi></math>"
    assert f'<span class="math notranslate">{inline}</span>' in html
    assert '<div class="math notranslate nohighlight"><math display="block"><msqrt>' in html
    assert "data-mathjax" not in html and "window.MathJax" not in html and "\\(" not in html
    assert '<link rel="stylesheet" type="text/css" href="../_static/lean/mathml.css" />' in html
    assert '<link rel="preload" href="../_static/lean/stix-two-math.woff2" as="font"' in html
    assert (static / "lean" / "stix-two-math.woff2").stat().st_size > 1000
    assert "STIX Two Math" in (static / "lean" / "mathml.css").read_text(encoding="utf-8")
