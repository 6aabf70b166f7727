"""Tests of attnlib.plots: what each figure draws, its errors, and the book style."""

from __future__ import annotations

import base64
import io

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import pytest
from matplotlib.colors import same_color, to_rgba
from matplotlib.text import Annotation

from attnlib.core import causal_mask, scaled_dot_product_attention
from attnlib.examples import cat_sat_on_mat, three_directions
from attnlib.plots import CMAP, PALETTE, bars, heatmap, hidpi_png, use_book_style, vectors_2d

MINUS = "\u2212"


@pytest.fixture(autouse=True)
def _isolated_figures():
    """Each test gets matplotlib's defaults back and leaves no figure open."""
    with matplotlib.rc_context():
        yield
    plt.close("all")


@pytest.fixture
def cat_weights() -> tuple[np.ndarray, tuple[str, ...]]:
    ex = cat_sat_on_mat()
    _, w = scaled_dot_product_attention(ex.Q, ex.K, ex.V, return_weights=True)
    return w, ex.tokens


def _texts(ax) -> list[str]:
    return [t.get_text() for t in ax.texts]


# --------------------------------------------------------------------------- heatmap


def test_heatmap_annotates_every_cell_with_its_rounded_value(cat_weights):
    w, tokens = cat_weights
    ax = heatmap(w, x_labels=tokens, y_labels=tokens)
    assert len(ax.texts) == w.size == 25
    assert _texts(ax) == [f"{round(float(v), 2):.2f}" for v in w.ravel()]  # row-major
    # each text sits on its cell: column j at x=j, row i at y=i
    assert [t.get_position() for t in ax.texts[:2]] == [(0, 0), (1, 0)]
    ax3 = heatmap(w, x_labels=tokens, y_labels=tokens, decimals=3)
    assert _texts(ax3)[0] == f"{w[0, 0]:.3f}"


def test_heatmap_tick_labels_are_the_tokens(cat_weights):
    w, tokens = cat_weights
    ax = heatmap(w, x_labels=tokens, y_labels=[t.upper() for t in tokens], title="weights")
    assert [t.get_text() for t in ax.get_xticklabels()] == list(tokens)
    assert [t.get_text() for t in ax.get_yticklabels()] == [t.upper() for t in tokens]
    assert ax.get_xlabel() == "key" and ax.get_ylabel() == "query"
    assert ax.get_title() == "weights"
    assert ax.get_ylim() == (4.5, -0.5)  # first query on top, as the matrix is printed


def test_heatmap_text_contrasts_with_its_cell(cat_weights):
    w, tokens = cat_weights
    ax = heatmap(w, x_labels=tokens, y_labels=tokens)
    darkest, lightest = ax.texts[int(w.argmin())], ax.texts[int(w.argmax())]
    assert same_color(darkest.get_color(), "white")
    assert same_color(lightest.get_color(), "black")
    assert not same_color(darkest.get_color(), lightest.get_color())


def test_heatmap_colour_scale_and_colorbar(cat_weights):
    w, tokens = cat_weights
    ax = heatmap(w, x_labels=tokens, y_labels=tokens)
    mesh = ax.collections[0]
    assert mesh.get_cmap().name == CMAP
    assert (mesh.norm.vmin, mesh.norm.vmax) == (0.0, pytest.approx(w.max()))
    assert len(ax.figure.axes) == 2  # the axes and its colour bar
    ax2 = heatmap(
        w, x_labels=tokens, y_labels=tokens, colorbar=False, annotate=False, vmax=1.0, cmap="cividis"
    )
    assert len(ax2.figure.axes) == 1 and len(ax2.texts) == 0
    assert ax2.collections[0].get_cmap().name == "cividis" and ax2.collections[0].norm.vmax == 1.0


def test_heatmap_shows_neg_inf_as_hatched_minus_infinity():
    ex = cat_sat_on_mat()
    scores = np.where(causal_mask(5), ex.Q @ ex.K.T / 2.0, -np.inf)  # (5, 5)
    ax = heatmap(scores, x_labels=ex.tokens, y_labels=ex.tokens, vmin=None)
    masked = ~causal_mask(5)
    texts = np.array(_texts(ax)).reshape(5, 5)
    assert (texts[masked] == MINUS + "∞").all()
    assert texts[~masked].tolist() == [f"{v:.2f}" for v in scores[~masked]]
    assert len(ax.patches) == int(masked.sum()) == 10
    assert all(p.get_hatch() == "///" for p in ax.patches)
    corners = sorted((p.get_x(), p.get_y()) for p in ax.patches)
    assert corners == sorted((j - 0.5, i - 0.5) for i, j in zip(*np.nonzero(masked), strict=True))
    finite = scores[~masked]
    assert ax.collections[0].norm.vmin == finite.min() and ax.collections[0].norm.vmax == finite.max()


def test_heatmap_masked_array_entries_and_negative_values():
    data = np.ma.masked_array([[-0.5, 0.25], [-0.001, 1.0]], mask=[[False, False], [False, True]])
    ax = heatmap(data, x_labels=["a", "b"], y_labels=["c", "d"], vmin=None, colorbar=False)
    assert _texts(ax) == [MINUS + "0.50", "0.25", "0.00", "masked"]  # no "-0.00"
    assert len(ax.patches) == 1


def test_heatmap_draws_on_the_axes_it_is_given(cat_weights):
    w, tokens = cat_weights
    _, (left, right) = plt.subplots(1, 2)
    out = heatmap(w, x_labels=tokens, y_labels=tokens, ax=right, colorbar=False)
    assert out is right and len(right.texts) == 25 and len(left.texts) == 0


def test_heatmap_label_count_mismatch_names_both_shapes(cat_weights):
    w, tokens = cat_weights
    expected = r"x_labels has 4 entries, shape \(4,\), but weights has shape \(5, 5\)"
    with pytest.raises(ValueError, match=expected):
        heatmap(w, x_labels=tokens[:4], y_labels=tokens)
    with pytest.raises(ValueError, match=r"y_labels has 6 entries.*shape \(5, 5\).*n_q=5"):
        heatmap(w, x_labels=tokens, y_labels=[*tokens, "x"])
    with pytest.raises(ValueError, match=r"y_labels has 5 entries.*shape \(3, 5\)"):
        heatmap(w[:3], x_labels=tokens, y_labels=tokens)


def test_heatmap_refuses_bad_input(cat_weights):
    w, tokens = cat_weights
    bad = w.copy()
    bad[1, 2] = np.nan
    with pytest.raises(ValueError, match=r"weights must be finite; it holds 1 NaN \(first at index \(1, 2\)"):
        heatmap(bad, x_labels=tokens, y_labels=tokens)
    bad[1, 2] = np.inf
    with pytest.raises(ValueError, match=r"1 \+inf"):
        heatmap(bad, x_labels=tokens, y_labels=tokens)
    with pytest.raises(ValueError, match=r"2-D \(n_q, n_k\) matrix; got shape \(1, 5, 5\).*batch"):
        heatmap(w[None], x_labels=tokens, y_labels=tokens)
    with pytest.raises(ValueError, match=r"got shape \(5,\)"):
        heatmap(w[0], x_labels=tokens, y_labels=tokens)
    with pytest.raises(TypeError, match="x_labels must be a sequence of labels, not a single string"):
        heatmap(w[:1, :3], x_labels="abc", y_labels=["q"])
    with pytest.raises(TypeError, match="decimals must be an integer"):
        heatmap(w, x_labels=tokens, y_labels=tokens, decimals=1.5)
    with pytest.raises(ValueError, match=r"vmax must be greater than vmin; got vmin=0.0, vmax=0.0"):
        heatmap(w, x_labels=tokens, y_labels=tokens, vmax=0.0)
    with pytest.raises(TypeError, match="ax must be a matplotlib Axes"):
        heatmap(w, x_labels=tokens, y_labels=tokens, ax="left")


# --------------------------------------------------------------------------- vectors_2d


def _arrows(ax) -> list[Annotation]:
    return [t for t in ax.texts if isinstance(t, Annotation) and t.get_text() == "" and t.arrow_patch]


def test_vectors_2d_draws_one_arrow_per_vector_to_its_tip():
    ex = three_directions()
    ax = vectors_2d(ex.Q, ex.K, tokens=ex.tokens)
    arrows = _arrows(ax)
    assert len(arrows) == 2 * ex.n == 6
    assert [a.xy for a in arrows] == [tuple(v) for v in ex.Q.tolist() + ex.K.tolist()]
    assert all(a.xyann == (0.0, 0.0) for a in arrows)  # every arrow starts at the origin
    styles = [a.arrow_patch.get_linestyle() for a in arrows]
    assert styles[:3] == ["-"] * 3 and styles[3:] == ["--"] * 3
    for i in range(3):  # q_i and k_i share a colour, tokens differ
        q, k = arrows[i].arrow_patch.get_edgecolor(), arrows[3 + i].arrow_patch.get_edgecolor()
        assert same_color(q, k) and same_color(q, list(PALETTE.values())[i])
    assert not same_color(arrows[0].arrow_patch.get_edgecolor(), arrows[1].arrow_patch.get_edgecolor())


def test_vectors_2d_labels_legend_and_limits():
    ex = three_directions()
    ax = vectors_2d(ex.Q, ex.K, tokens=ex.tokens, title="A/B/C")
    labels = [t.get_text() for t in ax.texts if t.get_text()]
    assert labels == ["$q_{A}$", "$q_{B}$", "$q_{C}$", "$k_{A}$", "$k_{B}$", "$k_{C}$"]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["query (solid)", "key (dashed)"]
    assert ax.get_aspect() == 1.0 and ax.get_title() == "A/B/C"
    assert ax.spines["left"].get_position() == "zero" and ax.spines["bottom"].get_position() == "zero"
    (x0, x1), (y0, y1) = ax.get_xlim(), ax.get_ylim()
    assert x0 < 0 < x1 and y0 < 0 < y1  # the origin is inside, with a margin
    tips = np.vstack([ex.Q, ex.K])
    assert (tips[:, 0] < x1).all() and (tips[:, 0] > x0).all()
    assert (tips[:, 1] < y1).all() and (tips[:, 1] > y0).all()


def test_vectors_2d_queries_only_negative_and_zero_vectors():
    Q = np.array([[-2.0, 1.0], [0.0, 0.0], [0.5, -3.0]])
    ax = vectors_2d(Q, tokens=["neg", "zero", "down"])
    assert [a.xy for a in _arrows(ax)] == [tuple(v) for v in Q.tolist()]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["query (solid)"]
    assert "$q_{\\mathrm{neg}}$" in _texts(ax)
    (x0, x1), (y0, y1) = ax.get_xlim(), ax.get_ylim()
    assert x0 < -2.0 and x1 > 0.5 and y0 < -3.0 and y1 > 1.0


def test_vectors_2d_refuses_bad_shapes():
    with pytest.raises(ValueError, match=r"Q must have shape \(n, 2\).*got shape \(3, 3\)"):
        vectors_2d(np.ones((3, 3)), tokens=["a", "b", "c"])
    with pytest.raises(ValueError, match=r"K must have shape \(n, 2\).*got shape \(2,\)"):
        vectors_2d(np.ones((2, 2)), [1.0, 2.0], tokens=["a", "b"])
    with pytest.raises(ValueError, match=r"K has 3 vectors but Q has 2.*Q \(2, 2\), K \(3, 2\)"):
        vectors_2d(np.ones((2, 2)), np.ones((3, 2)), tokens=["a", "b"])
    with pytest.raises(ValueError, match=r"tokens has 1 entries.*Q has shape \(2, 2\)"):
        vectors_2d(np.ones((2, 2)), tokens=["a"])
    with pytest.raises(ValueError, match="Q must be finite"):
        vectors_2d([[np.nan, 0.0]], tokens=["a"])


# --------------------------------------------------------------------------- bars


def test_bars_heights_and_annotations_equal_the_values():
    values = [0.25, 0.5, -1.125]
    ax = bars(values, labels=["a", "b", "c"], ylabel="weight", title="t")
    (container,) = ax.containers
    assert [p.get_height() for p in container] == values
    assert [t.get_text() for t in ax.get_xticklabels()] == ["a", "b", "c"]
    assert _texts(ax) == ["0.25", "0.50", MINUS + "1.12"]  # Python rounds 1.125 half to even
    assert ax.get_ylabel() == "weight" and ax.get_title() == "t"
    assert _texts(bars(values, labels=["a", "b", "c"], annotate=False)) == []


def test_bars_grouped_draws_one_bar_per_series_and_label():
    values = np.array([[0.1, 0.2, 0.3, 0.4], [0.4, 0.3, 0.2, 0.1]])  # (n_series=2, n_labels=4)
    ax = bars(values, labels=list("ABCD"), series_labels=["before", "after"])
    assert len(ax.containers) == 2 and len(ax.patches) == 8
    for s, container in enumerate(ax.containers):
        assert [p.get_height() for p in container] == values[s].tolist()
        assert same_color(container.patches[0].get_facecolor(), list(PALETTE.values())[s])
    centres = [p.get_x() + p.get_width() / 2 for p in ax.patches]
    assert centres[0] < 0 < centres[4]  # the two series sit either side of the tick
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["before", "after"]


def test_bars_highlight_uses_the_accent_colour():
    ax = bars([0.2, 0.5, 0.3], labels=["A", "B", "C"], highlight="B")
    faces = [p.get_facecolor() for p in ax.patches]
    assert same_color(faces[1], PALETTE["vermillion"])
    assert same_color(faces[0], PALETTE["blue"]) and same_color(faces[2], PALETTE["blue"])
    ax = bars([0.2, 0.5, 0.3], labels=["A", "B", "C"], highlight=-1)
    assert [same_color(p.get_facecolor(), PALETTE["vermillion"]) for p in ax.patches] == [False, False, True]
    ax = bars([[1.0, 2.0], [3.0, 4.0]], labels=["x", "y"], highlight=0)
    outlined = [p.get_linewidth() > 1.0 for p in ax.patches]
    assert outlined == [True, False, True, False]  # the group keeps its series colours, gains an outline
    assert ax.get_xticklabels()[0].get_fontweight() == "bold"


def test_bars_refuses_mismatches():
    with pytest.raises(ValueError, match=r"labels has 3 entries, shape \(3,\), but values has shape \(2,\)"):
        bars([1.0, 2.0], labels=["a", "b", "c"])
    with pytest.raises(ValueError, match=r"labels has 3 entries.*values has shape \(2, 2\).*one per group"):
        bars(np.ones((2, 2)), labels=["a", "b", "c"])
    with pytest.raises(ValueError, match=r"series_labels has 1 entries.*shape \(2, 2\).*n_series=2"):
        bars(np.ones((2, 2)), labels=["a", "b"], series_labels=["only"])
    with pytest.raises(ValueError, match=r"got shape \(1, 2, 2\)"):
        bars(np.ones((1, 2, 2)), labels=["a", "b"])
    with pytest.raises(ValueError, match="highlight 'z' is not one of the labels"):
        bars([1.0, 2.0], labels=["a", "b"], highlight="z")
    with pytest.raises(ValueError, match=r"highlight index 2 is out of range for 2 bars"):
        bars([1.0, 2.0], labels=["a", "b"], highlight=2)
    with pytest.raises(TypeError, match="highlight must be a bar index"):
        bars([1.0, 2.0], labels=["a", "b"], highlight=1.0)
    with pytest.raises(ValueError, match="values must be finite"):
        bars([1.0, np.nan], labels=["a", "b"])


# --------------------------------------------------------------------------- style


def test_palette_is_okabe_ito_and_cmap_is_perceptually_uniform():
    assert PALETTE == {
        "blue": "#0072B2", "orange": "#E69F00", "green": "#009E73", "vermillion": "#D55E00",
        "purple": "#CC79A7", "sky": "#56B4E9", "yellow": "#F0E442", "black": "#000000",
    }
    assert CMAP in {"viridis", "cividis"}


def test_use_book_style_sets_cycle_salt_and_is_idempotent():
    backend = matplotlib.get_backend()
    use_book_style()
    rc = matplotlib.rcParams
    assert rc["axes.prop_cycle"].by_key()["color"] == list(PALETTE.values())
    assert rc["svg.hashsalt"] == "attnlib"
    assert rc["axes.spines.top"] is False and rc["axes.spines.right"] is False
    assert (rc["figure.dpi"], rc["savefig.dpi"]) == (100.0, 150.0)
    snapshot = dict(rc)
    use_book_style()
    assert dict(matplotlib.rcParams) == snapshot
    assert matplotlib.get_backend() == backend  # the style never switches backend
    _, ax = plt.subplots()
    (line,) = ax.plot([0, 1])
    assert same_color(line.get_color(), PALETTE["blue"])


def _all_three_figures() -> plt.Figure:
    ex = three_directions()
    _, w = scaled_dot_product_attention(ex.Q, ex.K, ex.V, return_weights=True)
    fig, axes = plt.subplots(1, 3, figsize=(12, 4), layout="constrained")
    heatmap(w, x_labels=ex.tokens, y_labels=ex.tokens, ax=axes[0])
    vectors_2d(ex.Q, ex.K, tokens=ex.tokens, ax=axes[1])
    bars(w[0], labels=ex.tokens, ax=axes[2], highlight=0)
    return fig


def test_svg_is_byte_for_byte_reproducible_and_png_saves():
    use_book_style()
    outputs = []
    for _ in range(2):
        fig = _all_three_figures()
        buffer = io.BytesIO()
        fig.savefig(buffer, format="svg", metadata={"Date": None})
        outputs.append(buffer.getvalue())
        plt.close(fig)
    assert outputs[0] == outputs[1]
    assert b"<svg" in outputs[0]
    png = io.BytesIO()
    _all_three_figures().savefig(png, format="png")
    assert png.getvalue().startswith(b"\x89PNG\r\n\x1a\n") and len(png.getvalue()) > 10_000


def test_use_book_style_keeps_the_inline_backend_on_png(monkeypatch):
    """The style never switches the backend nor picks a non-PNG format (nbval compares no PNG)."""
    backend_inline = pytest.importorskip("matplotlib_inline.backend_inline")
    pylabtools = pytest.importorskip("IPython.core.pylabtools")

    def refuse(*args, **kwargs):
        raise AssertionError("use_book_style changed the inline figure format through IPython's chooser")

    monkeypatch.setattr(backend_inline, "set_matplotlib_formats", refuse)
    monkeypatch.setattr(pylabtools, "select_figure_formats", refuse)
    backend = matplotlib.rcParams["backend"]
    use_book_style()
    assert matplotlib.rcParams["backend"] == backend
    assert not any(key.startswith(("backend", "savefig.format")) for key in _changed_by_style())


class _Shell:
    """Stands in for IPython's shell: only its display formatters are used."""

    def __init__(self) -> None:
        from IPython.core.formatters import DisplayFormatter

        self.display_formatter = DisplayFormatter()


def _figure_formats(shell: _Shell) -> dict[str, object]:
    found = {}
    for mime, formatter in shell.display_formatter.formatters.items():
        try:
            found[mime] = formatter.lookup_by_type(plt.Figure)
        except KeyError:
            pass
    return found


def test_in_ipython_figures_are_shown_as_hidpi_png_only(monkeypatch):
    pytest.importorskip("IPython")
    import attnlib.style as plots  # the style, and its IPython hook, live in attnlib.style

    shell = _Shell()
    shell.display_formatter.formatters["image/svg+xml"].for_type(plt.Figure, lambda fig: "<svg/>")
    monkeypatch.setattr(plots, "_inline_shell", lambda: shell)
    use_book_style()
    assert _figure_formats(shell) == {"image/png": hidpi_png}  # the one format: no SVG copy
    fig, ax = plt.subplots(figsize=(3.0, 2.0))
    ax.plot([0, 1])
    data, metadata = shell.display_formatter.format(fig)
    assert set(data) == {"text/plain", "image/png"}
    assert metadata["image/png"]["width"] > 150
    shell2 = _Shell()
    monkeypatch.setattr(plots, "_inline_shell", lambda: shell2)
    use_book_style(hidpi=False)
    assert "image/png" not in _figure_formats(shell2), "hidpi=False leaves IPython's formats alone"
    with pytest.raises(TypeError, match="hidpi"):
        use_book_style(hidpi="yes")


def test_outside_ipython_the_style_touches_no_display_format():
    import attnlib.style as plots

    assert plots._inline_shell() is None  # pytest runs no IPython shell
    assert plots._show_figures_as_hidpi_png() is False


def _png(data: str):
    from PIL import Image

    return Image.open(io.BytesIO(base64.b64decode(data)))


def test_hidpi_png_has_twice_the_pixels_and_its_1x_size_in_metadata(cat_weights):
    w, tokens = cat_weights
    use_book_style()
    ax = heatmap(w, x_labels=tokens, y_labels=tokens)
    data, size = hidpi_png(ax.figure)
    plain = io.BytesIO()
    ax.figure.savefig(plain, format="png", dpi=ax.figure.dpi, bbox_inches="tight")
    one_x = _png(base64.b64encode(plain.getvalue()).decode())
    image = _png(data)
    assert image.size == (2 * size["width"] + image.size[0] % 2, 2 * size["height"] + image.size[1] % 2)
    assert abs(size["width"] - one_x.size[0]) <= 1 and abs(size["height"] - one_x.size[1]) <= 1
    assert image.mode == "P"  # a palette of at most 256 colours
    # lighter than the plain 1x PNG, though it holds four times the pixels
    assert len(base64.b64decode(data)) < len(plain.getvalue())
    assert hidpi_png(ax.figure, scale=3)[1] == size


def test_hidpi_png_keeps_the_colours_it_is_given(cat_weights):
    w, tokens = cat_weights
    ax = heatmap(w, x_labels=tokens, y_labels=tokens, annotate=False, colorbar=False)
    rgb = np.asarray(_png(hidpi_png(ax.figure)[0]).convert("RGB"), dtype=float)
    plain = io.BytesIO()
    ax.figure.savefig(plain, format="png", dpi=2 * ax.figure.dpi, bbox_inches="tight")
    ref = np.asarray(_png(base64.b64encode(plain.getvalue()).decode()).convert("RGB"), dtype=float)
    assert rgb.shape == ref.shape
    assert np.abs(rgb - ref).mean() < 1.0 and np.percentile(np.abs(rgb - ref), 99) <= 12


def test_hidpi_png_keeps_a_transparent_background_and_skips_empty_figures():
    fig, ax = plt.subplots(figsize=(2.0, 2.0))
    ax.plot([0, 1])
    fig.patch.set_alpha(0.0)
    ax.patch.set_alpha(0.0)
    image = _png(hidpi_png(fig)[0]).convert("RGBA")
    assert image.getpixel((0, 0))[3] == 0
    assert hidpi_png(plt.figure()) is None


@pytest.mark.parametrize(
    ("args", "error", "match"),
    [(("fig",), TypeError, "fig must be a matplotlib Figure; got str"),
     ((None, 2.0), TypeError, "scale must be an integer; got float 2.0"),
     ((None, True), TypeError, "scale must be an integer"),
     ((None, 5), ValueError, "scale must be between 1 and 4; got 5")],
)
def test_hidpi_png_errors(args, error, match):
    fig = plt.figure()
    fig, *rest = args if args[0] is not None else (fig, *args[1:])
    with pytest.raises(error, match=match):
        hidpi_png(fig, **({"scale": rest[0]} if rest else {}))


def _changed_by_style() -> list[str]:
    with matplotlib.rc_context():
        matplotlib.rcdefaults()
        before = dict(matplotlib.rcParams)
        use_book_style()
        return [k for k, v in matplotlib.rcParams.items() if before[k] != v]


def test_figures_default_to_new_axes_with_sensible_size(cat_weights):
    w, tokens = cat_weights
    before = plt.get_fignums()
    ax = heatmap(w, x_labels=tokens, y_labels=tokens)
    assert len(plt.get_fignums()) == len(before) + 1
    width, height = ax.figure.get_size_inches()
    assert 3.0 <= width <= 12.0 and 2.5 <= height <= 10.0
    assert to_rgba(ax.figure.get_facecolor()) == to_rgba("white")


def test_bars_highlight_on_shared_axes():
    # A shared x axis hides the upper panel's tick labels; highlighting must still work there.
    fig, (top, bottom) = plt.subplots(2, 1, sharex=True)
    bars([0.2, 0.5, 0.3], labels=["a", "b", "c"], ax=top, highlight=1)
    ax = bars([0.2, 0.5, 0.3], labels=["a", "b", "c"], ax=bottom, highlight="b")
    assert ax.get_xticklabels()[1].get_fontweight() == "bold"
    plt.close(fig)
