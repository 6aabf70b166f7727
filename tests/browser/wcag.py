"""WCAG 2 contrast in the page, for the browser tests that measure what the browser renders.

``CONTRAST_HELPERS`` is JavaScript that declares, inside the function it is placed in:

- ``lum(colour)``: the relative luminance of a computed ``rgb()``/``rgba()`` colour;
- ``ratio(a, b)``: the contrast ratio of two luminances, 1 to 21;
- ``behind(element)``: the computed colour of the first opaque background at or above ``element``
  (white, the page's, when there is none).

Use it as the first statement of a function body: ``"(sel) => {" + CONTRAST_HELPERS + "...}"``.
"""

CONTRAST_HELPERS = """
  const lum = (colour) => {
    const [r, g, b] = colour.match(/[\\d.]+/g).slice(0, 3).map(Number).map((v) => {
      v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; });
    return 0.2126 * r + 0.7152 * g + 0.0722 * b;
  };
  const ratio = (a, b) => (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
  const behind = (el) => {
    for (let e = el; e; e = e.parentElement) {
      const c = getComputedStyle(e).backgroundColor;
      if (c && !c.startsWith('rgba(0, 0, 0, 0)') && c !== 'transparent') return c;
    }
    return 'rgb(255, 255, 255)';
  };
"""
