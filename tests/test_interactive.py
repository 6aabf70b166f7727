"""attnlib.interactive: deterministic static HTML, every state equal to the trace, hover arithmetic."""

from __future__ import annotations

import math
import re

import numpy as np
import plotly.graph_objects as go
import pytest

from attnlib.examples import cat_sat_on_mat
from attnlib.interactive import (
    PLOTLY_MIMETYPE,
    STEPS,
    StaticFigure,
    hover_heatmap,
    pipeline_stepper,
)
from attnlib.interactive._render import MystNbPlotlyMime
from attnlib.trace import trace_attention


@pytest.fixture(scope="module")
def tr():
    ex = cat_sat_on_mat()
    return trace_attention(ex.Q, ex.K, ex.V, tokens=ex.tokens)


@pytest.fixture(scope="module", params=["stepper", "heatmap"])
def explorer(request, tr) -> StaticFigure:
    return pipeline_stepper(tr) if request.param == "stepper" else hover_heatmap(tr)


def test_html_is_deterministic_and_offline(explorer: StaticFigure, tr) -> None:
    again = pipeline_stepper(tr) if explorer.div_id == "pipeline-stepper" else hover_heatmap(tr)
    html = explorer.to_html()
    assert html == again.to_html(), "two calls must give the same HTML (nbval compares it)"
    assert explorer.to_plotly_json() == again.to_plotly_json()
    assert f'id="{explorer.div_id}"' in html and f'data-explorer="{explorer.div_id}"' in html
    assert 'class="attnlib-spec"' in html and '"displaylogo":false' in html
    assert "<script src" not in html.lower() and "cdn" not in html.lower() and "https://" not in html
    assert "mathjax" not in html.lower()
    assert re.search(r'aria-describedby="[^"]+-alt"', html) and "<figcaption>" in html
    assert 'aria-live="polite"' in html and html.count('class="attnlib-state"') == len(explorer.states)


def test_no_text_in_the_svg_that_could_overlap_on_a_phone(explorer: StaticFigure) -> None:
    """Titles and arithmetic live in the states (HTML that wraps), not in the SVG; no fixed width."""
    layout = explorer.fig.layout
    assert layout.width is None, "a fixed width scrolls sideways on a phone"
    assert not layout.annotations and not layout.title.text
    assert layout.height <= 460


def test_mimebundle_has_html_and_plotly_json(explorer: StaticFigure) -> None:
    data, metadata = explorer._repr_mimebundle_()
    assert set(data) == {"text/html", PLOTLY_MIMETYPE, "text/plain"}
    assert data["text/html"] == explorer._repr_html_()
    assert data[PLOTLY_MIMETYPE]["config"]["displaylogo"] is False
    assert "attnlib.interactive" in metadata


def test_stepper_has_every_state_and_each_equals_the_trace(tr) -> None:
    sf = pipeline_stepper(tr)
    fig = sf.fig
    buttons = fig.layout.updatemenus[0].buttons
    steps = fig.layout.sliders[0].steps
    assert [b.label for b in buttons] == list(tr.tokens)
    assert len(steps) == len(STEPS) == 4
    assert sorted(sf.states) == [(i, s) for i in range(tr.n_q) for s in range(4)]
    for i, button in enumerate(buttons):
        assert button.args[0]["visible"] == [k == i for k in range(tr.n_q)]
    for s, ((stage, _, _), step) in enumerate(zip(STEPS, steps, strict=True)):
        traces, _ = step.args
        matrix = getattr(tr, stage)
        for i in range(tr.n_q):
            np.testing.assert_array_equal(np.array(traces["y"][i], dtype=float), matrix[i])
            expected_x = [f"d{c}" for c in range(tr.d_v)] if stage == "output" else list(tr.key_tokens)
            assert list(traces["x"][i]) == expected_x
            state = sf.states[(i, s)]
            lines = "\n".join(state.lines)
            for line in tr.explain_steps(i)["7" if stage == "output" else "2" if stage == "scores" else
                                           "3" if stage == "scaled_scores" else "6"][1:]:
                assert line.strip() in lines, f"{stage}, query {tr.tokens[i]}: {line!r} missing"
            assert state.summary.startswith(f"Query “{tr.tokens[i]}”, step {s + 1} of 4, ")
            table = state.tables[0]
            if stage == "output":
                assert table.columns == ("coordinate", "output")
                np.testing.assert_allclose([float(r[1]) for r in table.rows], tr.output[i], atol=5e-5, rtol=0)
            else:  # one column per step so far, the last one this step's row
                assert len(table.columns) == s + 2 and [r[0] for r in table.rows] == list(tr.key_tokens)
                np.testing.assert_allclose([float(r[-1]) for r in table.rows], matrix[i], atol=5e-5, rtol=0)
    # the initial figure is query 0 at step 0
    np.testing.assert_array_equal(np.array(fig.data[0].y, dtype=float), tr.scores[0])
    assert [t.visible for t in fig.data] == [True] + [False] * (tr.n_q - 1)
    cat = tr.tokens.index("cat")
    assert sf.states[(cat, 2)].summary == (
        "Query “cat”, step 3 of 4, weights, which add up to 1: "
        + ", ".join(f"“{k}” {w:.4f}" for k, w in zip(tr.key_tokens, tr.weights[cat], strict=True))
        + f"; the largest, {tr.weights[cat].max():.4f}, is on “The”."
    )


def test_heatmap_data_and_hover_for_cat_the(tr) -> None:
    trace = hover_heatmap(tr).fig.data[0]
    np.testing.assert_array_equal(np.array(trace.z, dtype=float), tr.weights)
    dot, scaled, exp, weight = trace.customdata[1][0]  # query "cat", key "The"
    terms = " + ".join(f"({a:.1f})({b:.1f})" for a, b in zip(tr.Q[1], tr.K[0], strict=True))
    assert dot == f"{terms} = {tr.scores[1, 0]:.1f}"
    assert dot == "(0.0)(0.0) + (2.0)(1.0) + (0.0)(0.0) + (1.0)(1.0) = 3.0"
    assert scaled.endswith(f"= {tr.scaled_scores[1, 0]:.4f}") and "1.5" in scaled
    assert exp.endswith(f"= {math.exp(tr.scaled_scores[1, 0]):.4f}")
    assert weight.endswith(f"= {tr.weights[1, 0]:.4f}") and weight.endswith("0.4026")
    assert "%{customdata[0]}" in trace.hovertemplate and "%{customdata[3]}" in trace.hovertemplate


def test_heatmap_gives_the_keyboard_the_hover_arithmetic(tr) -> None:
    """A button per query outlines its row; its state writes out every cell as the hover label does."""
    sf = hover_heatmap(tr)
    custom = sf.fig.data[0].customdata
    buttons = sf.fig.layout.updatemenus[0].buttons
    assert [b.label for b in buttons] == list(tr.tokens) and sorted(sf.states) == [(i,) for i in range(5)]
    for i, button in enumerate(buttons):
        assert button.method == "relayout"
        assert button.args[0] == {"shapes[0].y0": i - 0.5, "shapes[0].y1": i + 0.5}
        state = sf.states[(i,)]
        for j, key in enumerate(tr.key_tokens):
            dot, scaled, exp, weight = custom[i][j]
            block = [f"{tr.tokens[i]} → {key}", f"  q·k = {dot}", f"  scaled: {scaled}", f"  exp: {exp}",
                     f"  weight = {weight}"]
            assert "\n".join(block) in "\n".join(state.lines)
        (table,) = state.tables
        assert table.columns == ("key", "q·k", "scaled", "exp", "weight")
        np.testing.assert_allclose([float(r[1]) for r in table.rows], tr.scores[i], atol=5e-5, rtol=0)
        np.testing.assert_allclose([float(r[2]) for r in table.rows], tr.scaled_scores[i], atol=5e-5, rtol=0)
        np.testing.assert_allclose([float(r[4]) for r in table.rows], tr.weights[i], atol=5e-5, rtol=0)
    cat = tr.tokens.index("cat")
    assert sf.states[(cat,)].summary.endswith(f"the largest, {tr.weights[cat].max():.4f}, is on “The”.")
    assert "“The” 0.4026" in sf.states[(cat,)].summary


def test_masked_cells_are_empty_not_numbers() -> None:
    ex = cat_sat_on_mat()
    mask = np.tril(np.ones((5, 5), dtype=bool))
    tr = trace_attention(ex.Q, ex.K, ex.V, tokens=ex.tokens, attn_mask=mask)
    heat = hover_heatmap(tr).fig.data[0]
    assert heat.z[0][1] is None and heat.text[0][1] == "masked"
    assert "masked" in heat.customdata[0][1][1]
    row = hover_heatmap(tr).states[(0,)]  # "The" may attend to itself only
    assert row.tables[0].rows[1][2:] == ("masked", "masked", "masked")
    assert "“cat” masked" in row.summary and "the largest, 1.0000, is on “The”" in row.summary
    step = pipeline_stepper(tr).fig.layout.sliders[0].steps[1]  # scaled scores
    assert step.args[0]["y"][0][1:] == [None] * 4


def test_heatmap_starts_on_the_chosen_query(tr) -> None:
    sat = tr.tokens.index("sat")
    sf = hover_heatmap(tr, query="sat")
    assert sf.fig.layout.updatemenus[0].active == sat
    assert (sf.fig.layout.shapes[0].y0, sf.fig.layout.shapes[0].y1) == (sat - 0.5, sat + 0.5)
    html = sf.to_html()
    assert 'aria-pressed="true">sat<' in html
    assert html.index(f'data-state="{sat}"') < html.index("attnlib-more")  # the panel shown first
    assert hover_heatmap(tr).fig.layout.updatemenus[0].active == 0
    with pytest.raises(KeyError, match="no query token 'dog'"):
        hover_heatmap(tr, query="dog")


def test_errors_name_the_argument(tr) -> None:
    with pytest.raises(TypeError, match="trace must be an AttentionTrace"):
        pipeline_stepper(tr.weights)
    with pytest.raises(TypeError, match="trace must be an AttentionTrace"):
        hover_heatmap(None)
    with pytest.raises(ValueError, match="div_id must start with a letter"):
        hover_heatmap(tr, div_id="1 bad id")
    with pytest.raises(TypeError, match="fig must be a plotly"):
        StaticFigure({"data": []}, div_id="x", caption="c", alt="a")
    with pytest.raises(TypeError, match="caption must be a non-empty str"):
        StaticFigure(go.Figure(), div_id="x", caption=" ", alt="a")


class _Mime:
    def __init__(self, mime_type: str, output_metadata: dict) -> None:
        self.mime_type = mime_type
        self.output_metadata = output_metadata


def test_mystnb_plugin_drops_only_our_plotly_mimetype() -> None:
    ours = {"attnlib.interactive": {"div_id": "x"}}
    assert MystNbPlotlyMime.handle_mime(None, _Mime(PLOTLY_MIMETYPE, ours), False) == []
    assert MystNbPlotlyMime.handle_mime(None, _Mime(PLOTLY_MIMETYPE, {}), False) is None  # myst-nb warns
    assert MystNbPlotlyMime.handle_mime(None, _Mime("text/html", ours), False) is None


# Machine independence: a figure's stored JSON must not change when its numbers move by a few ulps,
# as they do on another CPU, BLAS kernel or summation order.


def _figure(z: np.ndarray) -> StaticFigure:
    fig = go.Figure(go.Heatmap(z=z, x=np.arange(z.shape[1]), text=[["a"] * z.shape[1]] * z.shape[0]))
    return StaticFigure(fig, div_id="ulp", caption="A heatmap.", alt="A heatmap of random numbers.")


def test_figure_floats_are_rounded_to_six_significant_digits() -> None:
    z = np.array([[1 / 3, 2e-5 / 3], [123456.789, -0.0]])
    data = _figure(z).to_plotly_json()["data"][0]
    assert data["z"] == [[0.333333, 6.66667e-06], [123457.0, -0.0]]
    assert data["x"] == [0, 1], "integer arrays stay integers"


def test_typed_arrays_are_stored_as_plain_lists() -> None:
    html = _figure(np.eye(2) / 7).to_html()
    assert "bdata" not in html and "0.142857" in html


@pytest.mark.parametrize("seed", range(5))
def test_figure_json_is_the_same_when_every_number_moves_by_one_ulp(seed: int) -> None:
    z = np.random.default_rng(seed).standard_normal((40, 40))
    for direction in (np.inf, -np.inf):
        moved = np.nextafter(z, direction)
        assert not np.array_equal(moved, z)
        assert _figure(moved).to_plotly_json() == _figure(z).to_plotly_json()
        assert _figure(moved).to_html() == _figure(z).to_html()


def test_rounding_is_what_makes_the_json_machine_independent() -> None:
    """Guard the guard: without rounding, a one-ulp move changes the stored JSON."""
    z = np.random.default_rng(0).standard_normal((4, 4))
    raw = [go.Figure(go.Heatmap(z=a)).to_plotly_json() for a in (z, np.nextafter(z, np.inf))]
    assert np.asarray(raw[0]["data"][0]["z"]).tolist() != np.asarray(raw[1]["data"][0]["z"]).tolist()


def test_in_colab_the_figure_loads_plotly_js_itself(explorer: StaticFigure, monkeypatch) -> None:
    """Colab shows each output in its own frame, without the page's plotly.js or Plotly's mimetype."""
    import sys
    import types

    assert "cdn.plot.ly" not in explorer.to_html()  # the book: no CDN
    monkeypatch.setitem(sys.modules, "google.colab", types.ModuleType("google.colab"))
    colab = explorer.to_html()
    scripts = re.findall(r'<script[^>]*src="([^"]+)"', colab)
    assert len(scripts) == 1 and scripts[0].startswith("https://cdn.plot.ly/plotly-"), scripts
    assert ".newPlot(" in colab
