"""attnlib.interactive.live: headless widgets, redraws equal to attnlib, errors shown not raised."""

from __future__ import annotations

import base64

import matplotlib

matplotlib.use("Agg")

import ipywidgets as widgets
import numpy as np
import pytest

from attnlib.core import SCALE_RULES, scaled_dot_product_attention
from attnlib.examples import cat_sat_on_mat, three_directions
from attnlib.interactive import live as live_module
from attnlib.interactive.live import (
    LIVE_NOTE,
    SCALES,
    WIDGET_VIEW_MIMETYPE,
    LiveExplorer,
    explore,
    format_matrix,
    live_scaling_explorer,
    parse_matrix,
    scaling_draws,
)
from attnlib.stats import entropy, max_weight
from attnlib.trace import trace_attention


@pytest.fixture
def real_png() -> None:
    """Ask for the real PNG rendering (the other tests skip it: it is 2/3 of a redraw's time)."""


@pytest.fixture(autouse=True)
def fast_png(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Replace the rasterisation to PNG by a marker, unless the test asks for ``real_png``.

    The figure is still drawn by attnlib.plots; only ``savefig`` is left out.
    """
    if "real_png" in request.fixturenames:
        return
    monkeypatch.setattr(
        live_module, "_png_output",
        lambda fig: {"output_type": "display_data", "data": {"text/plain": f"<{id(fig)}>"}, "metadata": {}},
    )


@pytest.fixture
def ex():
    return cat_sat_on_mat()


@pytest.fixture
def live(ex) -> LiveExplorer:
    return explore(ex.Q, ex.K, ex.V, ex.tokens)


def heatmap_array(explorer: LiveExplorer) -> np.ndarray:
    """The matrix the heatmap (first axes) draws."""
    mesh = explorer.axes["weights"].collections[0]
    return np.ma.getdata(mesh.get_array()).reshape(explorer.last_trace.weights.shape)


def bar_heights(explorer: LiveExplorer, axes: str) -> list[float]:
    return [float(p.get_height()) for p in explorer.axes[axes].containers[0]]


def png_of(explorer: LiveExplorer) -> bytes:
    (output,) = explorer.plot.outputs
    return base64.b64decode(output["data"]["image/png"])


# --------------------------------------------------------------------------- explore
def test_explore_builds_headless_and_draws_the_trace(real_png: None, ex) -> None:
    live = explore(ex.Q, ex.K, ex.V, ex.tokens)
    assert isinstance(live.widget, widgets.VBox)
    assert set(live.controls) == {"Q", "K", "V", "token", "scale"}
    assert live.error is None and live.n_redraws == 1
    expected = trace_attention(ex.Q, ex.K, ex.V, tokens=ex.tokens)
    np.testing.assert_array_equal(live.last_trace.weights, expected.weights)
    np.testing.assert_allclose(heatmap_array(live), expected.weights)
    assert bar_heights(live, "row") == pytest.approx(list(expected.weights[0]))
    assert live.text == expected.explain(0)
    assert png_of(live).startswith(b"\x89PNG"), "the Output widget holds the figure as a PNG"
    assert "Query 0 &#x27;The&#x27;" in live.text_view.value


def test_token_picker_redraws_row_and_explanation(real_png: None, ex) -> None:
    live = explore(ex.Q, ex.K, ex.V, ex.tokens)
    before_bars, before_text, before_png = bar_heights(live, "row"), live.text, png_of(live)
    live.controls["token"].label = "cat"
    assert live.state["i"] == 1 and live.n_redraws == 2
    assert live.text == live.last_trace.explain("cat") != before_text
    assert live.text.startswith("Query 1 'cat'")
    assert bar_heights(live, "row") == pytest.approx(list(live.last_trace.weights[1]))
    assert bar_heights(live, "row") != pytest.approx(before_bars)
    assert png_of(live) != before_png


def test_token_picker_handles_repeated_tokens() -> None:
    Q = np.eye(3)
    live = explore(Q, Q, Q, ["the", "cat", "the"])
    live.controls["token"].value = 2  # the second 'the': values are indices, labels the tokens
    assert live.error is None and live.text.startswith("Query 2 'the'")


def test_scale_toggle_gives_attnlibs_weights(live: LiveExplorer, ex) -> None:
    before = heatmap_array(live).copy()
    for mode, scale in [("none", 1.0), ("inverse", 0.25), ("inverse_sqrt", None)]:
        live.controls["scale"].value = mode
        _, W = scaled_dot_product_attention(ex.Q, ex.K, ex.V, scale=scale, return_weights=True)
        np.testing.assert_array_equal(live.last_trace.weights, W, err_msg=f"scale toggle {mode!r}")
        np.testing.assert_allclose(heatmap_array(live), W, err_msg=f"heatmap after scale toggle {mode!r}")
        assert bar_heights(live, "row") == pytest.approx(list(W[0]))
        assert live.state["scale"] == (0.5 if scale is None else scale)  # the rule's number, 1/√4
        assert live.last_trace.scale == (0.5 if scale is None else scale)  # 1/√4
        if mode == "none":
            assert not np.allclose(heatmap_array(live), before), "the toggle must change the figure"
            assert "multiply by the given scale 1.0" in live.text
    np.testing.assert_allclose(heatmap_array(live), before)
    assert "divide by √d_k = √4 = 2.0" in live.text


def test_editing_a_matrix_recomputes(live: LiveExplorer, ex) -> None:
    Q = np.array(ex.Q, copy=True)
    Q[0] = [3.0, 0.0, 0.0, 0.0]
    live.controls["Q"].value = format_matrix(Q)
    expected = trace_attention(Q, ex.K, ex.V, tokens=ex.tokens)
    np.testing.assert_array_equal(live.last_trace.weights, expected.weights)
    np.testing.assert_array_equal(live.state["Q"], Q)
    assert live.text == expected.explain(0)
    assert "q = Q[The] = [3.0, 0.0, 0.0, 0.0]" in live.text


INVALID = [
    ("Q", "1 2 3 x", "Q, row 1, entry 4: 'x' is not a number"),
    ("K", "1 2 3 4\n1 2 3", "K, row 2 has 3 numbers but row 1 has 4"),
    ("V", "", "V is empty"),
    ("Q", "1 2 3 4", "Q has 1 rows but there are 5 tokens"),
    ("K", "1 2\n1 2\n1 2\n1 2\n1 2", "K has d_k=2 but Q has d_k=4"),  # attnlib's own shape message
    ("V", "1 nan 0 0\n" * 5, "V, row 1, entry 2: 'nan' is not a finite number"),
]


def test_invalid_input_shows_message_and_keeps_state(live: LiveExplorer) -> None:
    first = live.last_trace
    for name, text, message in INVALID:
        trace, state, fig, shown = live.last_trace, live.state, live.figure, live.text
        outputs = live.plot.outputs
        live.controls[name].value = text  # must not raise
        assert live.error is not None and message in live.error, (name, text, live.error)
        assert 'role="alert"' in live.error_view.value and "Traceback" not in live.error_view.value
        assert live.last_trace is trace and live.state is state and live.figure is fig, (name, text)
        assert live.text == shown and live.plot.outputs == outputs
        live.controls[name].value = format_matrix(getattr(trace, name))  # valid again: redraws, clears it
        assert live.error is None and live.error_view.value == ""
    assert live.n_redraws == 1 + len(INVALID)
    np.testing.assert_array_equal(live.last_trace.weights, first.weights)


def test_explore_refuses_bad_initial_inputs() -> None:
    with pytest.raises(ValueError, match="tokens has 2 labels but Q has n_q=3"):
        explore(np.eye(3), np.eye(3), np.eye(3), ["a", "b"])


def test_works_for_another_example() -> None:
    e = three_directions()
    live = explore(e.Q, e.K, e.V, e.tokens)
    live.controls["token"].label = "C"
    np.testing.assert_array_equal(live.last_trace.weights, trace_attention(e.Q, e.K, e.V).weights)


# --------------------------------------------------------------------------- matrices as text
def test_format_and_parse_round_trip_exactly() -> None:
    M = np.array([[0.1, -2.5, 1e-7], [3.0, 0.30000000000000004, -0.0]])
    np.testing.assert_array_equal(parse_matrix(format_matrix(M), "M"), M)
    np.testing.assert_array_equal(parse_matrix("[[1, 2],\n [3; 4]]\n\n", "M"), [[1.0, 2.0], [3.0, 4.0]])


def test_parse_and_scale_errors() -> None:
    with pytest.raises(ValueError, match=r"Q, row 2, entry 1: 'a' is not a number"):
        parse_matrix("1\na", "Q")
    with pytest.raises(ValueError, match=r"format_matrix needs a 2-D matrix; got shape \(3,\)"):
        format_matrix([1.0, 2.0, 3.0])
    assert [v for _, v in SCALES] == list(SCALE_RULES)  # one vocabulary with the training code


# --------------------------------------------------------------------------- live_scaling_explorer
def expected_weights(d_k: int, scaled: bool, n_keys: int = 8, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    q = rng.standard_normal(1024)[:d_k]
    K = rng.standard_normal((n_keys, 1024))[:, :d_k]
    _, W = scaled_dot_product_attention(
        q[None, :], K, np.eye(n_keys), scale=None if scaled else 1.0, return_weights=True
    )
    return W[0]


def test_scaling_explorer_matches_attnlib_and_stats() -> None:
    live = live_scaling_explorer()
    assert set(live.controls) == {"d_k", "scaled"} and live.last_trace is None
    assert live.state["d_k"] == 64 and live.state["scaled"] is True
    for d_k, scaled in [(64, True), (512, True), (512, False), (3, False)]:
        live.controls["d_k"].value = d_k
        live.controls["scaled"].value = scaled
        w = expected_weights(d_k, scaled)
        np.testing.assert_array_equal(live.state["weights"], w)
        assert bar_heights(live, "weights") == pytest.approx(list(w))
        assert live.state["max_weight"] == float(max_weight(w))
        assert live.state["entropy"] == float(entropy(w))
        assert f"largest weight {max_weight(w):.4f}" in live.text
        assert f"entropy {entropy(w):.4f} nats" in live.text


def test_scaling_explorer_shows_saturation() -> None:
    live = live_scaling_explorer(n_keys=8, seed=0)
    live.controls["d_k"].value = 512
    scaled_heights, scaled_max = bar_heights(live, "weights"), live.state["max_weight"]
    live.controls["scaled"].value = False
    assert bar_heights(live, "weights") != pytest.approx(scaled_heights)
    assert live.state["max_weight"] > 0.9 > scaled_max
    assert "scores unscaled" in live.axes["weights"].get_title()


def test_scaling_draws_keep_earlier_coordinates() -> None:
    q, K = scaling_draws(4, 7)
    assert q.shape == (1024,) and K.shape == (4, 1024)
    live = live_scaling_explorer(n_keys=4, seed=7)
    np.testing.assert_array_equal(live.state["q"], q[:64])
    np.testing.assert_array_equal(live.state["K"], K[:, :64])


def test_scaling_explorer_refuses_bad_arguments() -> None:
    with pytest.raises(ValueError, match=r"n_keys must be at least 2 \(one key .*\); got 1"):
        live_scaling_explorer(n_keys=1)
    with pytest.raises(TypeError, match=r"n_keys must be an integer; got float 8\.0"):
        live_scaling_explorer(n_keys=8.0)
    with pytest.raises(TypeError, match=r"seed must be an integer; got float 0\.5"):
        live_scaling_explorer(seed=0.5)


# --------------------------------------------------------------------------- display
@pytest.mark.parametrize("make", ["explore", "scaling"])
def test_mimebundle_has_widget_view_and_static_note(make: str, ex) -> None:
    live = explore(ex.Q, ex.K, ex.V, ex.tokens) if make == "explore" else live_scaling_explorer()
    data, metadata = live._repr_mimebundle_()
    assert set(data) == {WIDGET_VIEW_MIMETYPE, "text/html", "text/plain"}
    assert data[WIDGET_VIEW_MIMETYPE]["model_id"] == live.widget.model_id
    note = data["text/html"]
    assert note == live.note_html()
    assert 'class="admonition note attnlib-live-note"' in note
    assert "Jupyter, Binder or Colab" in note and "Jupyter, Binder or Colab" in LIVE_NOTE
    assert "<script" not in note and "https://" not in note
    assert "Binder or Colab" in data["text/plain"]
    assert "attnlib.interactive.live" in metadata
    live.controls["scale" if make == "explore" else "scaled"].value = "none" if make == "explore" else False
    data2, _ = live._repr_mimebundle_()
    assert (data2["text/html"], data2["text/plain"]) == (note, data["text/plain"]), (
        "the note must not depend on the state: nbval compares it from run to run"
    )


class _Seven:
    """An ipywidgets 7 widget as LiveExplorer sees it: a model id, display callbacks, no _repr_mimebundle_."""

    def __init__(self, model_id: str) -> None:
        self.model_id = model_id
        self.displayed = 0

    def _handle_displayed(self, **kwargs: object) -> None:
        self.displayed += 1


class _Eight:
    """An ipywidgets 8 widget: it gives its own bundle, whose view LiveExplorer must pass on unchanged."""

    def __init__(self, view: dict) -> None:
        self.view = view

    def _repr_mimebundle_(self, **kwargs: object) -> dict:
        return {"text/plain": "VBox(...)", WIDGET_VIEW_MIMETYPE: self.view}


def test_mimebundle_under_ipywidgets_7_and_8(live: LiveExplorer) -> None:
    real = live.widget
    real_view = {"version_major": 2, "version_minor": 0, "model_id": real.model_id}  # widget-view schema 2
    if hasattr(real, "_repr_mimebundle_"):  # ipywidgets 8 (the project's venv); 7 has no such method
        assert real._repr_mimebundle_()[WIDGET_VIEW_MIMETYPE] == real_view
    note, text = live.note_html(), repr(live)

    seven = _Seven(real.model_id)
    live.widget = seven
    data, metadata = live._repr_mimebundle_()
    assert data == {WIDGET_VIEW_MIMETYPE: real_view, "text/html": note, "text/plain": text}, (
        "under ipywidgets 7 the view must be the one ipywidgets 8 gives for the same widget"
    )
    assert data[WIDGET_VIEW_MIMETYPE] == {"version_major": 2, "version_minor": 0, "model_id": real.model_id}
    assert seven.displayed == 1, "ipywidgets 7 fires on_displayed when a widget is shown; so must this"
    assert "attnlib.interactive.live" in metadata

    eight = _Eight({"version_major": 2, "version_minor": 1, "model_id": "abc123"})
    live.widget = eight
    data, _ = live._repr_mimebundle_()
    assert data[WIDGET_VIEW_MIMETYPE] == eight.view and data[WIDGET_VIEW_MIMETYPE] is not eight.view
    assert (data["text/html"], data["text/plain"]) == (note, text)

    for broken in (_Seven(""), _Eight({"version_major": 2, "version_minor": 0})):
        live.widget = broken
        with pytest.raises(TypeError, match="has no widget view to display"):
            live._repr_mimebundle_()
