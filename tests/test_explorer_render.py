"""attnlib.interactive._render: the HTML every explorer is written as (controls, states, spec).

The browser side (explorer.js, keyboard, live region, 390 px) is tested in
tests/browser/test_explorer_access.py on every explorer of the built book.
"""

from __future__ import annotations

import json
import re
import sys
import types

import plotly.graph_objects as go
import pytest

from attnlib.interactive._render import EXPLORER_JS, DataTable, ExplorerState, StaticFigure


def _figure(n_buttons: int = 3, n_steps: int = 2) -> go.Figure:
    fig = go.Figure([go.Bar(y=[1.0, 2.0], visible=i == 0) for i in range(n_buttons)])
    fig.update_layout(
        updatemenus=[{"type": "buttons", "active": 1, "buttons": [
            {"label": f"q{i}", "method": "update", "args": [{"visible": [j == i for j in range(n_buttons)]}]}
            for i in range(n_buttons)]}],
        sliders=[{"active": 0, "currentvalue": {"prefix": "step: "}, "steps": [
            {"label": f"s{k}", "method": "relayout", "args": [{"title.text": f"step {k}"}]}
            for k in range(n_steps)]}],
    )
    return fig


def _states(n_buttons: int = 3, n_steps: int = 2) -> dict[tuple[int, ...], ExplorerState]:
    table = DataTable("Weights", ["key", "weight"], [["a", "0.25"], ["b", "0.75"]])
    return {(i, k): ExplorerState(f"query q{i} at step {k}: weight 0.75 on b", lines=[f"line {i}{k}"],
                                  tables=[table])
            for i in range(n_buttons) for k in range(n_steps)}


def _sf(**kw) -> StaticFigure:
    args = {"div_id": "demo", "caption": "A demo.", "alt": "Bars.", "control_labels": ["Query", "Step"],
            "states": _states()}
    args.update(kw)
    return StaticFigure(_figure(), **args)


def test_plotly_controls_become_native_controls() -> None:
    html = _sf().to_html()
    buttons = re.findall(r'<button type="button" class="attnlib-option" data-control="0" data-option="(\d)" '
                         r'aria-pressed="(true|false)">(q\d)</button>', html)
    assert buttons == [("0", "false", "q0"), ("1", "true", "q1"), ("2", "false", "q2")]  # active 1 pressed
    slider = re.search(r'<input type="range" id="demo-c1" data-control="1" min="0" max="1" step="1" '
                       r'value="0" aria-valuetext="s0"', html)
    assert slider, html
    assert '<label class="attnlib-control-label" for="demo-c1">Step</label>' in html
    assert 'role="group" aria-labelledby="demo-c0"' in html and ">Query</span>" in html


def test_spec_holds_each_options_update_and_no_plotly_controls() -> None:
    html = _sf().to_html()
    spec = json.loads(re.search(r'<script type="application/json" class="attnlib-spec">(.*?)</script>',
                                html, re.S).group(1))
    assert "updatemenus" not in spec["layout"] and "sliders" not in spec["layout"]
    assert spec["controls"][0][2] == ["update", [{"visible": [False, False, True]}]]
    assert spec["controls"][1][1] == ["relayout", [{"title.text": "step 1"}]]
    assert len(spec["data"]) == 3 and spec["config"]["displaylogo"] is False
    # Plotly's mimetype keeps Plotly's own controls for JupyterLab
    assert len(_sf().to_plotly_json()["layout"]["updatemenus"][0]["buttons"]) == 3


def test_one_panel_per_state_and_only_the_active_one_in_the_page() -> None:
    html = _sf().to_html()
    parts = re.fullmatch(r'(.*)<template class="attnlib-more">(.*?)</template>(.*)', html, re.S)
    page, more = parts.group(1, 2)
    panel = r'<div class="attnlib-state" data-state="([\d,]+)">'
    assert re.findall(panel, page) == ["1,0"]  # button 1 active, slider at 0; the others are inert
    assert re.findall(panel, more) == ["0,0", "0,1", "1,1", "2,0", "2,1"]
    assert html.count('<th scope="row">b</th><td>0.75</td>') == 6
    assert '<p class="attnlib-live" role="status" aria-live="polite" aria-atomic="true"' in html
    assert "<summary>The numbers of this view</summary>" in html


def test_output_is_deterministic_offline_and_escaped() -> None:
    states = _states()
    states[(0, 0)] = ExplorerState("a </script><b> trick & more")
    html = _sf(states=states).to_html()
    assert html == _sf(states=states).to_html()
    assert "</script><b>" not in html.split('class="attnlib-spec">')[0]
    assert "a &lt;/script&gt;&lt;b&gt; trick &amp; more" in html
    assert "<script src" not in html and "https://" not in html and ".newPlot(" not in html


def test_spec_cannot_close_its_script_tag() -> None:
    fig = _figure()
    fig.update_layout(title_text="</script><script>alert(1)</script>")
    html = _sf(states=_states()).__class__(fig, div_id="x", caption="c", alt="a").to_html()
    spec = html.split('class="attnlib-spec">', 1)[1]
    assert spec.index("</script>") == len(spec.split("</script>")[0])  # the first </script> ends the spec
    assert json.loads(spec.split("</script>")[0])["layout"]["title"]["text"].startswith("</script>")


def test_html_only_explorer_shows_its_tables_open() -> None:
    t = DataTable("X", ["token", "x1"], [["Cat", "1.0"]])
    sf = StaticFigure(None, div_id="steps", caption="Phases.", alt="Tables.",
                      controls=[("Phase", ["1 inputs", "2 Q, K, V"])],
                      states={(0,): ExplorerState("phase 1", tables=[t]), (1,): ExplorerState("phase 2")})
    html = sf.to_html()
    assert 'class="attnlib-plot"' not in html and "<details" not in html
    assert '<th scope="row">Cat</th>' in html
    # no Plotly mimetype for JupyterLab to fall back on: the controller comes inline, so buttons work there
    assert f"<script>{EXPLORER_JS.read_text(encoding='utf-8')}</script>" in html
    assert f"<script>{EXPLORER_JS.read_text(encoding='utf-8')}</script>" not in _sf().to_html()
    data, _ = sf._repr_mimebundle_()
    assert set(data) == {"text/html", "text/plain"}


def test_in_colab_the_output_loads_plotly_and_the_controller_itself(monkeypatch) -> None:
    assert "cdn.plot.ly" not in _sf().to_html()
    monkeypatch.setitem(sys.modules, "google.colab", types.ModuleType("google.colab"))
    html = _sf().to_html()
    scripts = re.findall(r'<script[^>]*src="([^"]+)"', html)
    assert len(scripts) == 1 and re.fullmatch(r"https://cdn\.plot\.ly/plotly-[\d.]+\.min\.js", scripts[0])
    assert EXPLORER_JS.read_text(encoding="utf-8") in html


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"control_labels": ["Query"]}, ValueError, r"control_labels has 1 labels but the figure has 2"),
        ({"states": {(0, 0): ExplorerState("x")}}, ValueError, r"one entry per combination .*\(6 in all\)"),
        ({"states": {**_states(), (9, 9): ExplorerState("x")}}, ValueError, r"unexpected \[\(9, 9\)\]"),
        ({"states": {k: "text" for k in _states()}}, TypeError, r"states must map to ExplorerState; got str"),
        ({"div_id": "1bad"}, ValueError, r"div_id must start with a letter"),
        ({"caption": ""}, TypeError, r"caption must be a non-empty str"),
    ],
)
def test_bad_arguments_are_named(kwargs, error, message) -> None:
    with pytest.raises(error, match=message):
        _sf(**kwargs)


def test_unsupported_plotly_methods_are_refused() -> None:
    fig = go.Figure(go.Bar(y=[1]))
    fig.update_layout(sliders=[{"steps": [{"label": "a", "method": "animate", "args": [["f1"]]}]}])
    with pytest.raises(ValueError, match=r"control 0 option 0 of figure 'x' uses Plotly method 'animate'"):
        StaticFigure(fig, div_id="x", caption="c", alt="a")


@pytest.mark.parametrize(
    ("args", "error", "message"),
    [
        (("T", ["a", "b"], [["x"]]), ValueError, r"row 0 has 1 entries, but there are 2 columns"),
        (("T", ["a"], []), ValueError, r"table 'T' has no rows"),
        (("T", ["a"], [[0.5]]), TypeError, r"every entry must be a formatted str; got float 0.5"),
        (("", ["a"], [["x"]]), TypeError, r"caption must be a non-empty str"),
    ],
)
def test_bad_tables_are_named(args, error, message) -> None:
    with pytest.raises(error, match=message):
        DataTable(*args)


def test_states_need_words() -> None:
    with pytest.raises(TypeError, match="summary must be a non-empty str"):
        ExplorerState("  ")
    with pytest.raises(TypeError, match="tables must hold DataTable; got list"):
        ExplorerState("s", tables=[[["a"]]])


def test_without_states_each_state_names_its_options() -> None:
    html = StaticFigure(_figure(2, 2), div_id="d", caption="c", alt="a").to_html()
    assert '<p class="attnlib-state-summary">Show: q1; step: s0</p>' in html


def test_the_book_moves_the_spec_and_the_other_panels_into_a_script(tmp_path) -> None:
    """book/press/offline_book.py: the page keeps the shown panel; the rest loads with the plot."""
    from press import offline_book

    html = _sf().to_html()
    body = f"<p>before</p>{html}<p>after</p>"
    new, moved = offline_book.move_explorer_data(body, tmp_path, "../_static/")
    (script,) = (tmp_path / "explorers").iterdir()
    assert f'data-explorer="demo" data-src="../_static/explorers/{script.name}"' in new
    assert 'class="attnlib-spec"' not in new and "<template" not in new and moved == len(body) - len(new) > 0
    assert re.findall(r'data-state="([\d,]+)"', new) == ["1,0"] and new.endswith("</figure><p>after</p>")
    prefix = '(window.attnlibExplorerData=window.attnlibExplorerData||{})["demo"]='
    text = script.read_text(encoding="utf-8")
    assert text.startswith(prefix) and text.endswith(";\n")
    data = json.loads(text[len(prefix):-2])
    spec = re.search(r'<script type="application/json" class="attnlib-spec">(.*?)</script>', html, re.S)
    assert data["spec"] == json.loads(spec.group(1))
    assert data["more"] == re.search(r'<template class="attnlib-more">(.*?)</template>', html, re.S).group(1)
    assert offline_book.move_explorer_data(new, tmp_path, "../_static/") == (new, 0)  # moved once
