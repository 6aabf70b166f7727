"""The pipeline figure (attnlib.pipeline): shapes from its arguments, a text alternative, page colours."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import pytest

from attnlib.pipeline import STEPS, pipeline_figure

SVG = "{http://www.w3.org/2000/svg}"


def _tree(svg: str) -> ET.Element:
    return ET.fromstring(svg)


def test_each_step_shows_the_shape_of_its_array() -> None:
    fig = pipeline_figure(7, 16, 4, 6)
    root = _tree(fig.svg())
    steps: dict[str, str] = {}
    for g in root.iter(f"{SVG}g"):
        text = " ".join("".join(t.itertext()) for t in g.iter(f"{SVG}text"))
        steps[g.get("data-step")] = steps.get(g.get("data-step"), "") + " " + text
    assert set(steps) == set(STEPS)
    assert "7 × 16" in steps["embeddings"]
    assert "7 × 4" in steps["projections"] and "7 × 6" in steps["projections"]
    for step in ("scores", "scale", "softmax"):
        assert "7 × 7" in steps[step], step
    assert "√4" in steps["scale"].replace(" ", "")
    assert "7 × 6" in steps["output"]
    # Q, K and V: three boxes of one step
    assert sum(g.get("data-step") == "projections" for g in root.iter(f"{SVG}g")) == 3


def test_the_text_alternative_is_named_by_the_svg_and_says_every_shape() -> None:
    fig = pipeline_figure(5, 4, 3, 2)
    root = _tree(fig.svg())
    assert root.get("role") == "img"
    ids = root.get("aria-labelledby").split()
    title = next(root.iter(f"{SVG}title"))
    desc = next(root.iter(f"{SVG}desc"))
    assert [title.get("id"), desc.get("id")] == ids
    text = title.text + " " + desc.text
    for shape in ("5 × 4", "5 × 3", "5 × 2", "5 × 5", "√3"):
        assert shape in text, shape
    assert str(fig) == fig.alt_text() and fig.alt_text().startswith(title.text)


def test_two_figures_on_one_page_do_not_share_ids() -> None:
    a, b = pipeline_figure(5, 4, 3, 3).svg(), pipeline_figure(5, 4, 3, 3).svg()
    ids_a = set(re.findall(r'id="([^"]+)"', a))
    assert ids_a and not ids_a & set(re.findall(r'id="([^"]+)"', b))


def test_lines_and_text_take_the_page_colour_in_both_schemes() -> None:
    svg = pipeline_figure(5, 4, 3, 3).svg()
    colours = set(re.findall(r'(?:fill|stroke)="([^"]+)"', svg))
    assert colours <= {"currentColor", "none"}, colours  # no colour fixed for one scheme
    marked = pipeline_figure(5, 4, 3, 3, highlight="scale").svg()
    root = _tree(marked)
    mark = [g for g in root.iter(f"{SVG}g") if "is-marked" in g.get("class")]
    assert [g.get("data-step") for g in mark] == ["scale"]
    assert "var(--pst-color-primary" in ET.tostring(mark[0], encoding="unicode")
    assert "Marked: step 4, scale." in pipeline_figure(5, 4, 3, 3, highlight="scale").alt_text()


def test_it_shows_as_html_in_a_notebook() -> None:
    fig = pipeline_figure(5, 4, 3, 3)
    assert fig._repr_html_().startswith("<svg") and fig._repr_html_().endswith("</svg>")


@pytest.mark.parametrize(("args", "error", "message"), [
    ((0, 4, 3, 3), ValueError, "n must be positive; got 0"),
    ((5, -1, 3, 3), ValueError, "d_model must be positive; got -1"),
    ((5, 4, 2.5, 3), TypeError, "d_k must be an integer; got float 2.5"),
    ((5, 4, 3, True), TypeError, "d_v must be an integer; got bool True"),
])
def test_bad_sizes_are_named(args: tuple, error: type, message: str) -> None:
    with pytest.raises(error, match=re.escape(message)):
        pipeline_figure(*args)


def test_an_unknown_step_is_named_with_the_choices() -> None:
    with pytest.raises(ValueError, match="highlight must be None or one of embeddings, projections, scores, "
                                         "scale, softmax, output; got 'mask'"):
        pipeline_figure(5, 4, 3, 3, highlight="mask")
