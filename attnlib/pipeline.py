"""The whole computation in one picture: X -> Q, K, V -> scores -> ÷√d_k -> softmax -> weights -> output.

:func:`pipeline_figure` draws the six steps of scaled dot-product attention as a schematic, each box
with the shape of its array for a sequence of ``n`` tokens, and returns a :class:`PipelineFigure`. In a
notebook or a built page it shows as an inline SVG that takes the page's colours (text and lines in
``currentColor``, so it reads in a light and a dark scheme alike) and carries its own text alternative
(``<title>`` and ``<desc>``, named by ``aria-labelledby``); as plain text (a terminal, a text-only
renderer) it is that text alternative. ``highlight`` names one step to mark, so a later chapter can
show the figure again at the step it discusses.

The steps, in order (:data:`STEPS`)::

    embeddings  X                  (n, d_model)
    projections Q = X W_Q, K = X W_K, V = X W_V   (n, d_k), (n, d_k), (n, d_v)
    scores      S = Q Kᵀ           (n, n)
    scale       S / √d_k           (n, n)
    softmax     A = softmax by row (n, n), each row sums to 1
    output      O = A V            (n, d_v)

Examples
--------
>>> fig = pipeline_figure(5, 4, 3, 2)
>>> print(fig.alt_text().splitlines()[0])
Scaled dot-product attention for 5 tokens, in six steps.
>>> "5 × 5" in fig.svg() and fig.svg().startswith("<svg")
True
"""

from __future__ import annotations

import html
import itertools
from dataclasses import dataclass

from attnlib._validation import check_positive_int

# READY (the chapter-2 helper waits for this line)

__all__ = ["STEPS", "PipelineFigure", "pipeline_figure"]

#: The steps of the computation, in order; ``highlight`` takes one of these names.
STEPS = ("embeddings", "projections", "scores", "scale", "softmax", "output")

_ACCENT = "var(--pst-color-primary, #0072b2)"  # the theme's accent; Okabe–Ito blue without the theme
_ids = itertools.count()

# Geometry of the drawing (user units of the viewBox): one column of boxes, narrow enough for a phone.
_W, _BOX_H, _GAP, _TOP = 340, 46, 26, 8
_ROW = _BOX_H + _GAP


@dataclass(frozen=True)
class PipelineFigure:
    """The schematic for ``n`` tokens and the widths ``d_model``, ``d_k``, ``d_v``; ``highlight`` is a
    step of :data:`STEPS` or None."""

    n: int
    d_model: int
    d_k: int
    d_v: int
    highlight: str | None = None

    def shapes(self) -> dict[str, str]:
        """Each step's arrays and their shapes, as the figure writes them (rows × columns)."""
        n, dm, dk, dv = self.n, self.d_model, self.d_k, self.d_v
        return {
            "embeddings": f"X: {n} × {dm}",
            "projections": f"Q: {n} × {dk}, K: {n} × {dk}, V: {n} × {dv}",
            "scores": f"S: {n} × {n}",
            "scale": f"S / √d_k: {n} × {n}",
            "softmax": f"A: {n} × {n}",
            "output": f"O: {n} × {dv}",
        }

    def alt_text(self) -> str:
        """The figure in words: what a screen reader reads, and the plain-text form."""
        s = self.shapes()
        lines = [
            f"Scaled dot-product attention for {self.n} tokens, in six steps.",
            f"1. The embeddings X, one row per token ({s['embeddings'][3:]}).",
            f"2. Three products with learned weights: Q = X W_Q and K = X W_K ({self.n} × {self.d_k} each), "
            f"V = X W_V ({self.n} × {self.d_v}).",
            f"3. The scores S = Q Kᵀ, one for every query and key ({self.n} × {self.n}).",
            f"4. The scores divided by √d_k, √{self.d_k} here ({self.n} × {self.n}).",
            f"5. A softmax along each row gives the weights A; each row sums to 1 ({self.n} × {self.n}).",
            f"6. The output O = A V, a weighted mix of the values for each token ({self.n} × {self.d_v}).",
        ]
        if self.highlight is not None:
            lines.append(f"Marked: step {STEPS.index(self.highlight) + 1}, {self.highlight}.")
        return "\n".join(lines)

    def svg(self) -> str:
        """The figure as an inline SVG element (no XML declaration), with a unique id for its labels."""
        uid = f"attn-pipeline-{next(_ids)}"
        n, dk, dv = self.n, self.d_k, self.d_v
        third = (_W - 16) / 3
        rows: list[str] = []
        # Step 1: X.
        rows.append(_box("embeddings", 8, _TOP, _W - 16, _BOX_H, "X (the tokens, one row each)",
                         f"{n} × {self.d_model}", self.highlight, _dims("n", "d_model")))
        # Step 2: Q, K, V side by side, each an arrow down from X.
        y2 = _TOP + _ROW
        for i, (name, sub, width) in enumerate((("Q (queries)", "Q", dk), ("K (keys)", "K", dk),
                                                   ("V (values)", "V", dv))):
            symbols = _dims("n", "d_v" if sub == "V" else "d_k")
            x = 8 + i * third
            rows.append(_arrow(x + third / 2, _TOP + _BOX_H, y2, label=f"× W{_sub(sub)}"))
            rows.append(_box("projections", x + 3, y2, third - 6, _BOX_H, name, f"{n} × {width}",
                             self.highlight, symbols))
        # Steps 3-5 take Q and K; V waits at the side for step 6.
        y3 = y2 + _ROW
        inner = 2 * third - 6
        rows.append(_arrow(8 + third / 2, y2 + _BOX_H, y3, bend_to=8 + inner / 2))
        rows.append(_arrow(8 + 1.5 * third, y2 + _BOX_H, y3, bend_to=8 + inner / 2, head=False))
        for k, (step, title) in enumerate((("scores", f"S = Q K{_sup('⊤')} (scores)"),
                                           ("scale", f"S ÷ √d{_sub('k')}   (√{dk})"),
                                           ("softmax", "A = softmax by row (weights)"))):
            y = y3 + k * _ROW
            if k:
                rows.append(_arrow(8 + inner / 2, y - _GAP, y))
            symbols = _dims("n", "n") + (", rows sum to 1" if step == "softmax" else "")
            rows.append(_box(step, 8, y, inner, _BOX_H, title, f"{n} × {n}", self.highlight, symbols))
        # Step 6: A and V meet.
        y6 = y3 + 3 * _ROW
        v_x = 8 + 2.5 * third
        rows.append(_arrow(8 + inner / 2, y6 - _GAP, y6))
        rows.append(_line(v_x, y2 + _BOX_H, v_x, y6 + _BOX_H / 2))
        rows.append(_arrow_h(v_x, 8 + (_W - 16) / 2 + 60, y6 + _BOX_H / 2))
        rows.append(_box("output", 8, y6, (_W - 16) / 2 + 60, _BOX_H, "O = A V (output)",
                         f"{n} × {dv}", self.highlight, _dims("n", "d_v")))
        height = y6 + _BOX_H + 8
        title, *desc = self.alt_text().split("\n")
        return (
            f'<svg xmlns="http://www.w3.org/2000/svg" class="attn-pipeline" viewBox="0 0 {_W} {height}" '
            f'width="100%" style="max-width:{_W * 1.45:.0f}px;color:inherit;font-family:inherit" '
            f'role="img" aria-labelledby="{uid}-title {uid}-desc">'
            f'<title id="{uid}-title">{html.escape(title)}</title>'
            f'<desc id="{uid}-desc">{html.escape(" ".join(desc))}</desc>'
            '<defs><marker id="' + uid + '-head" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" '
            'markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="currentColor"/>'
            "</marker></defs>"
            + "".join(rows).replace("MARKER", f"url(#{uid}-head)")
            + "</svg>"
        )

    def _repr_html_(self) -> str:
        return self.svg()

    def __str__(self) -> str:
        return self.alt_text()

    def _repr_pretty_(self, p, cycle: bool) -> None:  # IPython's plain-text form
        p.text(self.alt_text())


def pipeline_figure(n: int, d_model: int, d_k: int, d_v: int, highlight: str | None = None) -> PipelineFigure:
    """The schematic of scaled dot-product attention with the shapes of ``n`` tokens' arrays.

    ``n`` tokens with embeddings ``d_model`` wide, queries and keys ``d_k`` wide, values ``d_v`` wide;
    ``highlight`` marks one step of :data:`STEPS` (or None).

    Raises
    ------
    TypeError
        A size that is not an integer.
    ValueError
        A size that is not positive, or ``highlight`` not a step of :data:`STEPS`.
    """
    n = check_positive_int(n, "n")
    d_model = check_positive_int(d_model, "d_model")
    d_k = check_positive_int(d_k, "d_k")
    d_v = check_positive_int(d_v, "d_v")
    if highlight is not None and highlight not in STEPS:
        raise ValueError(f"highlight must be None or one of {', '.join(STEPS)}; got {highlight!r}")
    return PipelineFigure(n, d_model, d_k, d_v, highlight)


# --------------------------------------------------------------------------- drawing
def _sub(text: str) -> str:
    return f'<tspan baseline-shift="sub" font-size="70%">{html.escape(text)}</tspan>'


def _sup(text: str) -> str:
    return f'<tspan baseline-shift="super" font-size="70%">{html.escape(text)}</tspan>'


def _dims(*names: str) -> str:
    """``n × d_k`` as SVG text: each width a d with its subscript."""
    return " × ".join(f"d{_sub(name[2:])}" if name.startswith("d_") else name for name in names)


def _box(step: str, x: float, y: float, w: float, h: float, title: str, shape: str,
         highlight: str | None, symbols: str = "") -> str:
    marked = step == highlight
    stroke = _ACCENT if marked else "currentColor"
    fill = f'fill="{_ACCENT}" fill-opacity="0.12"' if marked else 'fill="none"'
    return (
        f'<g class="attn-pipeline-step{" is-marked" if marked else ""}" data-step="{step}">'
        f'<rect x="{x:.1f}" y="{y:.1f}" width="{w:.1f}" height="{h}" rx="6" {fill} stroke="{stroke}" '
        f'stroke-width="{2.5 if marked else 1.2}"/>'
        f'<text x="{x + w / 2:.1f}" y="{y + 19:.1f}" text-anchor="middle" font-size="13" '
        f'fill="currentColor">{title}</text>'
        f'<text x="{x + w / 2:.1f}" y="{y + 37:.1f}" text-anchor="middle" font-size="12" '
        f'fill="currentColor"><tspan font-weight="bold">{html.escape(shape)}</tspan>'
        + (f'<tspan dx="6" opacity="0.8">({symbols})</tspan>' if symbols else "")
        + "</text></g>"
    )


def _arrow(x: float, y0: float, y1: float, label: str | None = None, bend_to: float | None = None,
           head: bool = True) -> str:
    end = ' marker-end="MARKER"' if head else ""
    if bend_to is None:
        path = f"M{x:.1f},{y0:.1f} L{x:.1f},{y1 - 1:.1f}"
    else:
        mid = (y0 + y1) / 2
        path = f"M{x:.1f},{y0:.1f} L{x:.1f},{mid:.1f} L{bend_to:.1f},{mid:.1f} L{bend_to:.1f},{y1 - 1:.1f}"
    out = f'<path d="{path}" fill="none" stroke="currentColor" stroke-width="1.2"{end}/>'
    if label:
        out += (f'<text x="{x + 6:.1f}" y="{(y0 + y1) / 2 + 4:.1f}" font-size="11" '
                f'fill="currentColor">{label}</text>')
    return out


def _arrow_h(x0: float, x1: float, y: float) -> str:
    return (f'<path d="M{x0:.1f},{y:.1f} L{x1 + 1:.1f},{y:.1f}" fill="none" stroke="currentColor" '
            f'stroke-width="1.2" marker-end="MARKER"/>')


def _line(x0: float, y0: float, x1: float, y1: float) -> str:
    return (f'<path d="M{x0:.1f},{y0:.1f} L{x1:.1f},{y1:.1f}" fill="none" stroke="currentColor" '
            f'stroke-width="1.2"/>')
