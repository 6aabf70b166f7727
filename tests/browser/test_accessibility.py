"""An automated accessibility check of every page of the book: axe-core, as Lighthouse runs it.

Each page that conftest's discovery finds (every page of the toc, the proof index and the root
redirect, which is followed) is opened in headless Chromium twice, as a desktop (1366×900) and as a
phone (390×844, mobile and touch emulation, device pixel ratio 2). In each, once the page has settled
(math typeset, every interactive explorer scrolled into view and drawn), axe-core (the copy bundled
with ``axe-playwright-python``; the same engine as Lighthouse's accessibility audit) checks the whole
document in the light colour scheme, and on the desktop again after switching the system's scheme to
dark (the theme follows it, as a reader's browser would). A violation of impact *serious* or
*critical* fails the test, which names each rule, its impact, the elements (CSS selectors, and the
explorer's id for an element inside an explorer) and axe's summary of what to fix. Violations of
impact *moderate* or *minor* do not fail the test; they are reported as a warning each, so they stay
visible.

Nothing is excluded: an explorer's violations count like any other. The check cannot see everything
(axe reports what a machine can decide, e.g. contrast, names, roles, landmarks, keyboard access to
scrolling boxes); tests/browser/test_quiz.py and the explorer tests operate the controls by keyboard.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

from axe_playwright_python.sync_playwright import Axe
from sections import DRAW_SECTIONS_JS
from test_pages import TIMEOUT_MS, _open

from press.print_pdf import FRAMES_JS, READY_JS, bounded

BLOCKING = ("critical", "serious")  # the impacts that fail the test
VIEWPORTS = {
    "1366x900": {"viewport": {"width": 1366, "height": 900}},
    "390x844": {"viewport": {"width": 390, "height": 844}, "is_mobile": True, "has_touch": True,
                "device_scale_factor": 2},
}
SCHEMES = ("light", "dark")
# The schemes checked at each size: both on the desktop (the sidebars show only there); on the phone the
# light one (what is phone-only, scroll boxes and reflow, does not change with the scheme). axe takes
# most of this test's time on pages of 30,000 elements.
SCHEMES_AT = {"1366x900": SCHEMES, "390x844": ("light",)}
AXE_OPTIONS = {"resultTypes": ["violations"]}  # passes and inapplicable rules are not needed
SHOWN_NODES = 8  # elements listed per rule in a failure message
# Waits, not budgets (test_page_weight.py and test_first_paint.py time the pages): on a 2-core machine
# shared with other jobs, chapter 4 once took 55 s to typeset its math and draw its explorers.
SETTLE_MS = 120_000

# Typesets math if the page has any; then brings every explorer into view, one after the other, so that
# a figure drawn only when it nears the viewport is drawn (or has failed) when axe looks at it.
EXPLORERS_JS = bounded("""
async () => {
  // Drawn: explorer.js's promise for the figure (set once it neared the viewport; it settles when the plot
  // is drawn or has failed, at once for an explorer without a plot), or a plot drawn at load.
  const drawn = (f) => (f.attnlibExplorer && f.attnlibExplorer.ready) || f.classList.contains('attnlib-drawn')
    || f.classList.contains('attnlib-failed') || f.querySelector('.js-plotly-plot .main-svg') !== null;
  const figures = [...document.querySelectorAll('figure.attnlib-explorer')];
  for (const figure of figures) {
    figure.scrollIntoView({ block: 'center' });
    const start = performance.now();
    while (!drawn(figure) && performance.now() - start < 60000) {
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    if (figure.attnlibExplorer && figure.attnlibExplorer.ready) await figure.attnlibExplorer.ready;
  }
  window.scrollTo(0, 0);
  return figures.filter((f) => !drawn(f)).map((f) => f.id || f.className);
}
""", "drawing the explorers", 180)

# Which explorer, if any, holds the element each axe target names (reported, never excluded).
OWNERS_JS = """
(targets) => targets.map((target) => {
  if (!Array.isArray(target) || target.length !== 1) return '';
  let element = null;
  try { element = document.querySelector(target[0]); } catch (err) { return ''; }
  const figure = element && element.closest('figure.attnlib-explorer');
  return figure ? (figure.id || 'an explorer') : '';
})
"""

# The theme fades colours when the scheme changes (CSS transitions): axe must see the end colours.
TRANSITIONS_JS = bounded(
    "() => Promise.all(document.getAnimations().map((a) => a.finished.catch(() => null)))",
    "the theme's colour transitions", 30)


def _settle(page: Any) -> None:
    """Math typeset and explorers drawn; fails, naming them, if an explorer is never drawn."""
    page.evaluate(READY_JS)  # formulas shown and fonts loaded (font loads change formula widths)
    page.evaluate(DRAW_SECTIONS_JS)  # axe reads the colours of every section: each drawn (sections.py)
    page.evaluate(READY_JS)  # scroll-stops.js measures a section's boxes once it is drawn
    undrawn = page.evaluate(EXPLORERS_JS)
    assert not undrawn, f"{page.url}: explorers not drawn within 60 s of coming into view: {undrawn}"
    page.evaluate(FRAMES_JS)


def _use_scheme(page: Any, scheme: str) -> None:
    """Switch the system colour scheme and wait until the theme (mode "auto") has followed it."""
    page.emulate_media(color_scheme=scheme)
    page.wait_for_function("(s) => document.documentElement.dataset.theme === s", arg=scheme)
    page.evaluate(FRAMES_JS)
    page.evaluate(TRANSITIONS_JS)


def _describe(page: Any, violation: dict) -> str:
    nodes = violation["nodes"]
    owners = page.evaluate(OWNERS_JS, [n["target"] for n in nodes[:SHOWN_NODES]])
    lines = [f"  {violation['id']} ({violation['impact']}, {len(nodes)} element(s)): {violation['help']}"]
    for node, owner in zip(nodes[:SHOWN_NODES], owners, strict=True):
        where = " > ".join(map(str, node["target"])) + (f"  [inside explorer #{owner}]" if owner else "")
        summary = " ".join(node.get("failureSummary", "").split())
        lines.append(f"    - {where}: {summary[:220]}")
    if len(nodes) > SHOWN_NODES:
        lines.append(f"    - ... and {len(nodes) - SHOWN_NODES} more")
    return "\n".join(lines)


def test_page_has_no_serious_accessibility_violation(
    page_rel: str, browser: Any, base_url: str, html_dir: Path
) -> None:
    """axe-core on one page: desktop and phone, light and dark: no serious or critical violation."""
    html = (html_dir / page_rel).read_text(encoding="utf-8")
    axe = Axe()
    blocking: list[str] = []
    minor: list[str] = []
    for size, context_args in VIEWPORTS.items():
        context = browser.new_context(color_scheme=SCHEMES[0], **context_args)
        context.set_default_timeout(max(TIMEOUT_MS, SETTLE_MS))
        try:
            page = context.new_page()
            _open(page, base_url, page_rel, html)
            _settle(page)
            for scheme in SCHEMES_AT[size]:
                _use_scheme(page, scheme)
                violations = axe.run(page, options=AXE_OPTIONS).response["violations"]
                for violation in violations:
                    text = f"{page_rel} at {size}, {scheme}:\n" + _describe(page, violation)
                    (blocking if violation["impact"] in BLOCKING else minor).append(text)
        finally:
            context.close()
    for text in minor:
        warnings.warn(f"axe (moderate/minor, not failing): {text}", UserWarning, stacklevel=1)
    assert not blocking, (
        f"{len(blocking)} serious or critical accessibility violation(s) found by axe-core:\n"
        + "\n".join(blocking)
    )
