"""attnlib.interactive.scaling_explorers: every state equals attnlib's numbers; small, deterministic HTML."""

from __future__ import annotations

import itertools
import json
import math
import re

import numpy as np
import pytest

from attnlib import stats
from attnlib.core import scale_for, scaled_dot_product_attention
from attnlib.interactive._render import StaticFigure
from attnlib.interactive.live import scaling_draws
from attnlib.interactive.scaling_explorers import (
    FACTORS,
    HIST_BINS,
    HIST_SPAN,
    SCALING_D_KS,
    VARIANCE_D_KS,
    histogram_edges,
    scaling_explorer,
    variance_explorer,
)

N_SAMPLES = 20_000  # the default of variance_explorer
SIZE_BUDGET = 200_000  # bytes of HTML per explorer (plotly.js is served once by the book)


@pytest.fixture(scope="module")
def scaling() -> StaticFigure:
    return scaling_explorer()


@pytest.fixture(scope="module")
def variance() -> StaticFigure:
    return variance_explorer()


def _g3(x: float) -> str:
    """3 significant digits, no exponent: how the explorer writes a variance (1,040, not 1.04e+03)."""
    rounded = float(f"{x:.3g}")
    return f"{rounded:,.0f}" if abs(rounded) >= 1000 else f"{x:.3g}"


def _weights(d_k: int, scale: float | None, n_keys: int = 8, seed: int = 0) -> np.ndarray:
    q, K = scaling_draws(n_keys, seed)
    _, W = scaled_dot_product_attention(q[None, :d_k], K[:, :d_k], np.eye(n_keys), scale=scale,
                                        return_weights=True)
    return W[0]


def test_defaults() -> None:
    assert SCALING_D_KS == (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)
    assert FACTORS == (0.0, 0.25, 0.5, 0.75, 1.0)
    assert scale_for(512, 1.0 / 2) == 1 / math.sqrt(512) and scale_for(512, 0.0 / 2) == 1.0
    assert scale_for(512, 0.5 / 2) == 512 ** -0.25


@pytest.mark.parametrize("make", [scaling_explorer, variance_explorer])
def test_deterministic_small_and_offline(make, scaling: StaticFigure, variance: StaticFigure) -> None:
    sf = scaling if make is scaling_explorer else variance
    html = sf.to_html()
    assert html == make().to_html(), "two calls must give the same HTML (nbval compares it)"
    assert sf.to_plotly_json() == make().to_plotly_json()
    assert len(html.encode()) < SIZE_BUDGET, f"{sf.div_id}: {len(html.encode())} bytes"
    assert f'id="{sf.div_id}"' in html and "<figcaption>" in html
    assert f'aria-describedby="{sf.div_id}-alt"' in html
    assert "<script src" not in html.lower() and "https://" not in html
    assert sf.div_id == ("scaling-explorer" if make is scaling_explorer else "variance-explorer")


def _spec(sf: StaticFigure) -> dict:
    """The JSON the page's explorer.js reads: the controls' updates, the data and layout it draws."""
    m = re.search(r'<script type="application/json" class="attnlib-spec">(.*?)</script>', sf.to_html(), re.S)
    assert m, "the explorer's spec is missing from its HTML"
    return json.loads(m.group(1).replace("<\\/", "</"))


@pytest.mark.parametrize("make", [scaling_explorer, variance_explorer])
def test_html_controls_and_a_plot_that_fits_a_phone(
    make, scaling: StaticFigure, variance: StaticFigure
) -> None:
    """Native range inputs with short labels; no Plotly slider, no text box and no fixed width on the page."""
    sf = scaling if make is scaling_explorer else variance
    page = sf.to_html()
    labels = ["d_k", "τ"] if make is scaling_explorer else ["d_k"]
    sliders = re.findall(r'<label class="attnlib-control-label" for="[^"]+">([^<]+)</label>'
                         r'<input type="range" id="[^"]+" data-control="(\d)" min="0" max="(\d+)"', page)
    steps = [len(s.steps) for s in sf.fig.layout.sliders]
    assert sliders == [(label, str(c), str(n - 1))
                       for c, (label, n) in enumerate(zip(labels, steps, strict=True))]
    assert "<button" not in page  # sliders only
    layout = _spec(sf)["layout"]
    assert "sliders" not in layout and "updatemenus" not in layout, "Plotly's controls stay out of the page"
    assert "annotations" not in layout and "title" not in layout, "the state's words live in the HTML"
    assert "width" not in layout and layout["height"] <= 520
    assert layout["margin"]["l"] <= 60 and layout["margin"]["r"] <= 12
    # ... while JupyterLab's figure keeps Plotly's sliders, labelled as the native ones
    assert [s.currentvalue.prefix for s in sf.fig.layout.sliders] == [f"{label} = " for label in labels]


def test_scaling_state_counts(scaling: StaticFigure) -> None:
    fig = scaling.fig
    d_k_slider, factor_slider = fig.layout.sliders
    assert [s.label for s in d_k_slider.steps] == [str(d) for d in SCALING_D_KS]
    assert [s.label for s in factor_slider.steps] == ["0 raw", "0.25", "0.5", "0.75", "1 (÷√d_k)"]
    assert len(fig.data) == len(SCALING_D_KS)
    assert len(scaling.states) == len(d_k_slider.steps) * len(factor_slider.steps) == 55
    assert set(scaling.states) == {(k, j) for k in range(len(SCALING_D_KS)) for j in range(len(FACTORS))}
    # the initial figure matches the sliders' active steps: d_k = 64, fully scaled
    assert SCALING_D_KS[d_k_slider.active] == 64 and FACTORS[factor_slider.active] == 1.0
    assert [t.visible for t in fig.data] == [d == 64 for d in SCALING_D_KS]
    np.testing.assert_array_equal(np.array(fig.data[6].y), _weights(64, None))
    for k, step in enumerate(d_k_slider.steps):
        assert step.method == "restyle"
        assert step.args[0] == {"visible": [i == k for i in range(len(SCALING_D_KS))]}
    # the page shows the initial state's panel, and only that one
    page = scaling.to_html().split('<template class="attnlib-more">')[0]
    shown = re.findall(r'<div class="attnlib-state" data-state="([\d,]+)">', page)
    assert shown == [f"{SCALING_D_KS.index(64)},{len(FACTORS) - 1}"]


def test_every_scaling_state_equals_attnlib(scaling: StaticFigure) -> None:
    steps = scaling.fig.layout.sliders[1].steps
    for t, step in zip(FACTORS, steps, strict=True):
        (traces,) = step.args
        for k, d_k in enumerate(SCALING_D_KS):
            scale = None if t == 1.0 else d_k ** (-t / 2)
            w = _weights(d_k, scale)
            np.testing.assert_allclose(traces["y"][k], w, rtol=0, atol=1e-15)
            assert traces["text"][k] == [f"{v:.2f}" for v in w]
            colours = traces["marker.color"][k]
            assert colours.count("#D55E00") == 1 and colours.index("#D55E00") == int(np.argmax(w))
            state = scaling.states[(k, FACTORS.index(t))]
            peak = f"k{int(np.argmax(w))}"
            assert state.summary.startswith(f"d_k = {d_k}, scale ")
            assert ("raw scores" in state.summary) == (t == 0.0)
            assert (f"scale 1/√{d_k} = " in state.summary) == (t == 1.0)
            assert f"the largest weight is {float(stats.max_weight(w)):.3f}, on key {peak}," in state.summary
            assert f"the entropy is {float(stats.entropy(w)):.3f} nats" in state.summary
            assert state.lines[2] == "weights = softmax(scaled scores): " + ", ".join(
                f"k{j} {v:.3f}" for j, v in enumerate(w))
            (table,) = state.tables
            assert [row[0] for row in table.rows] == [f"k{j}" for j in range(8)]
            assert [row[3] for row in table.rows] == [f"{v:.4f}" for v in w]
            q, K = scaling_draws(8, 0)
            assert [row[1] for row in table.rows] == [f"{s:.4g}" for s in K[:, :d_k] @ q[:d_k]]


def test_combinations_of_the_two_sliders(scaling: StaticFigure) -> None:
    """Any d_k step followed by any factor step (or the reverse) shows that (d_k, t) state."""
    d_k_steps, factor_steps = (s.steps for s in scaling.fig.layout.sliders)
    for k, d_k in enumerate(SCALING_D_KS):
        for j, t in enumerate(FACTORS):
            visible = d_k_steps[k].args[0]["visible"]
            shown = [i for i, v in enumerate(visible) if v]
            assert shown == [k]
            y = factor_steps[j].args[0]["y"][shown[0]]
            np.testing.assert_allclose(y, _weights(d_k, scale_for(d_k, t / 2)), rtol=0, atol=1e-15)
            summary = scaling.states[(k, j)].summary
            assert summary.startswith(f"d_k = {d_k}, ") and f"largest weight is {max(y):.3f}" in summary


def test_max_weight_rises_without_scaling_at_512(scaling: StaticFigure) -> None:
    k = SCALING_D_KS.index(512)
    steps = scaling.fig.layout.sliders[1].steps
    scaled, raw = max(steps[-1].args[0]["y"][k]), max(steps[0].args[0]["y"][k])
    assert raw > scaled
    assert raw > 0.99 and scaled < 0.6  # saturated vs spread out, for seed 0
    assert float(stats.entropy(steps[0].args[0]["y"][k])) < float(stats.entropy(steps[-1].args[0]["y"][k]))
    # the max weight of the raw scores rises with d_k overall
    raws = [max(y) for y in steps[0].args[0]["y"]]
    assert raws[-1] > raws[0]


def test_variance_states_equal_numpy_histograms(variance: StaticFigure) -> None:
    fig = variance.fig
    steps = fig.layout.sliders[0].steps
    assert [s.label for s in steps] == [str(d) for d in VARIANCE_D_KS]
    assert len(fig.data) == 2 and fig.data[0].xaxis == "x" and fig.data[1].xaxis == "x2"
    rng = np.random.default_rng(0)
    for d_k, step in zip(VARIANCE_D_KS, steps, strict=True):
        raw = stats.dot_product_samples(d_k, N_SAMPLES, rng)
        traces, layout = step.args
        state = variance.states[(VARIANCE_D_KS.index(d_k),)]
        variances, per_bin = state.tables
        for panel, values, half in ((0, raw, HIST_SPAN * math.sqrt(d_k)),
                                    (1, raw / math.sqrt(d_k), HIST_SPAN)):
            edges = np.linspace(-half, half, HIST_BINS + 1)
            np.testing.assert_array_equal(histogram_edges(d_k, scaled=panel == 1), edges)
            counts, _ = np.histogram(values, bins=edges)
            assert traces["y"][panel] == counts.tolist()
            np.testing.assert_allclose(traces["x"][panel], (edges[:-1] + edges[1:]) / 2, rtol=1e-15)
            assert traces["width"][panel] == pytest.approx(edges[1] - edges[0])
            est = stats.variance_with_ci(values)
            ci = f"{_g3(est.estimate)} (95% CI {_g3(est.low)} to {_g3(est.high)})"
            assert f"sample variance {ci}, theory {f'd_k = {d_k}' if panel == 0 else '1'}" in state.summary
            assert variances.rows[panel][1:] == (f"{est.estimate:.4g}", f"{est.low:.4g}", f"{est.high:.4g}",
                                                 str(d_k) if panel == 0 else "1")
            assert [row[panel] for row in per_bin.rows] == [
                f"{a:.4g} to {b:.4g}" for a, b in itertools.pairwise(edges)]
            assert [row[2] for row in per_bin.rows] == [str(c) for c in counts]
        assert state.summary.startswith(f"d_k = {d_k}: q · k has sample variance ")
        assert set(layout) == {"yaxis.range", "yaxis2.range"}
        assert layout["yaxis.range"] == layout["yaxis2.range"]
        assert layout["yaxis.range"][1] >= max(max(traces["y"][0]), max(traces["y"][1]))
    # the initial figure is the first step
    assert list(fig.data[0].y) == steps[0].args[0]["y"][0]
    assert list(fig.data[1].y) == steps[0].args[0]["y"][1]


def test_sample_variances_track_theory(variance: StaticFigure) -> None:
    rng = np.random.default_rng(0)
    for d_k in VARIANCE_D_KS:
        raw = stats.dot_product_samples(d_k, N_SAMPLES, rng)
        assert stats.variance_with_ci(raw, confidence=0.999).contains(float(d_k))
        assert stats.variance_with_ci(raw / math.sqrt(d_k), confidence=0.999).contains(1.0)


def test_other_arguments() -> None:
    sf = scaling_explorer(n_keys=3, seed=5, d_ks=(2, 8), factors=(0, 1), div_id="s2")
    assert sf.div_id == "s2" and len(sf.fig.data) == 2 and len(sf.fig.data[0].x) == 3
    np.testing.assert_allclose(sf.fig.layout.sliders[1].steps[0].args[0]["y"][1],
                               _weights(8, 1.0, n_keys=3, seed=5), rtol=0, atol=1e-15)
    sv = variance_explorer(n_samples=500, seed=3, d_ks=(2, 3), div_id="v2")
    assert sum(sv.fig.layout.sliders[0].steps[1].args[0]["y"][1]) <= 500


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"n_keys": 1}, ValueError, "n_keys must be at least 2"),
        ({"n_keys": 2.0}, TypeError, "n_keys must be an integer"),
        ({"seed": "0"}, TypeError, "seed must be an integer"),
        ({"d_ks": (1,)}, ValueError, "d_ks must hold at least 2 values"),
        ({"d_ks": (4, 2)}, ValueError, "d_ks must be strictly increasing"),
        ({"d_ks": (1, 2048)}, ValueError, "d_ks must not exceed 1024"),
        ({"d_ks": (0, 2)}, ValueError, "each d_k must be positive"),
        ({"d_ks": 64}, TypeError, "d_ks must be a sequence"),
        ({"factors": (0.0, 1.5)}, ValueError, r"each factor τ must lie in \[0, 1\]"),
        ({"factors": (0.0, float("nan"))}, ValueError, "each factor τ must lie"),
        ({"factors": (1.0, 0.0)}, ValueError, "factors must be strictly increasing"),
        ({"factors": (0.0, True)}, TypeError, "each factor must be a real number"),
        ({"factors": "01"}, TypeError, "factors must be a sequence"),
        ({"div_id": "1 bad"}, ValueError, "div_id must start with a letter"),
    ],
)
def test_scaling_bad_inputs(kwargs, error, match) -> None:
    with pytest.raises(error, match=match):
        scaling_explorer(**kwargs)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"n_samples": 1}, ValueError, "n_samples must be at least 2"),
        ({"n_samples": 0}, ValueError, "n_samples must be positive"),
        ({"n_samples": 1e4}, TypeError, "n_samples must be an integer"),
        ({"seed": None}, TypeError, "seed must be an integer"),
        ({"d_ks": [16, 16]}, ValueError, "d_ks must be strictly increasing"),
        ({"d_ks": (1, 4.0)}, TypeError, "each d_k must be an integer"),
        ({"div_id": ""}, ValueError, "div_id must start with a letter"),
    ],
)
def test_variance_bad_inputs(kwargs, error, match) -> None:
    with pytest.raises(error, match=match):
        variance_explorer(**kwargs)


def test_keyword_only() -> None:
    with pytest.raises(TypeError):
        scaling_explorer(8)  # type: ignore[misc]
    with pytest.raises(TypeError):
        variance_explorer(1000)  # type: ignore[misc]
