"""Nothing moves while a page loads: its layout shifts add up to less than ``MAX_SHIFT`` (Lighthouse's CLS).

The pages paint before their scripts run (``book/press/lean_pages.py``) and their late stylesheet arrives
(``book/press/critical_styles.py``); what those change after the first paint must not move the text. The
API reference once moved its two opening paragraphs 3.4 px half a second in (CLS 0.197 under Lighthouse's
phone): the theme's script, run after the first paint, turned ``<html data-theme="auto">`` into "light",
and the rules keyed on it gave code blocks Pygments' line height and inline literals their border.

Each page is opened in a fresh context at a phone's screen (Lighthouse's mobile profile: 412 px, touch)
and at 1366 px, in the light and the dark colour scheme. A ``PerformanceObserver`` registered before the
page's first byte (``buffered``) records every ``layout-shift`` entry until the page's scripts have run,
its formulas are shown, its fonts loaded and its tab stops set (``READY_JS``), and two frames later.

The test gives the page no input, so every shift counts. Chromium's phone emulation reports the emulated
viewport as an input at the start of the load and marks the shifts of the next 0.5 s ``hadRecentInput``
(Chromium issue 1302667; Lighthouse counts such shifts too): skipping them hid the API reference's 0.196.
"""

from __future__ import annotations

from typing import Any

import pytest

from press.print_pdf import FRAMES_JS, READY_JS, SCRIPTS_JS

PAGES = ["book/api/index.html", "book/02_qkv.html"]  # code on the first screen; a chapter
PHONE = {"viewport": {"width": 412, "height": 823}, "device_scale_factor": 1.75, "is_mobile": True,
         "has_touch": True}
DESKTOP = {"viewport": {"width": 1366, "height": 768}}
MAX_SHIFT = 0.01  # Lighthouse: "good" CLS is below 0.1; the book aims for nothing visible
TIMEOUT_MS = 60_000

# Before the page's own scripts: every layout shift from the start of the load, with what moved.
RECORD_SHIFTS = """(() => {  // its own scope: no global names but window.attnlib*
window.attnlibShifts = [];
const round = (x) => Math.round(x * 10) / 10;
const describe = (s) => {
  const node = s.node;
  const name = !node ? '(removed)' : node.nodeType !== 1 ? node.nodeName
    : [node.tagName.toLowerCase(), ...node.classList].join('.');
  return `${name} y ${round(s.previousRect.y)} -> ${round(s.currentRect.y)}, `
    + `height ${round(s.previousRect.height)} -> ${round(s.currentRect.height)}`;
};
const record = (entries) => {
  for (const e of entries) {
    window.attnlibShifts.push({value: e.value, at: Math.round(e.startTime), input: e.hadRecentInput,
                               moved: (e.sources || []).map(describe)});
  }
};
window.attnlibShiftObserver = new PerformanceObserver((list) => record(list.getEntries()));
window.attnlibShiftObserver.observe({type: 'layout-shift', buffered: true});
window.attnlibTakeShifts = () => {
  record(window.attnlibShiftObserver.takeRecords());  // those not delivered yet
  return window.attnlibShifts;
};
})();
"""
SHIFTS_JS = "() => ({shifts: window.attnlibTakeShifts(), theme: document.documentElement.dataset.theme})"


@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("screen", ["phone", "desktop"])
@pytest.mark.parametrize("rel", PAGES)
def test_nothing_moves_while_the_page_loads(browser: Any, base_url: str, rel: str, screen: str,
                                            scheme: str) -> None:
    context = browser.new_context(**(PHONE if screen == "phone" else DESKTOP), color_scheme=scheme)
    context.set_default_timeout(TIMEOUT_MS)
    try:
        page = context.new_page()
        page.add_init_script(RECORD_SHIFTS)
        page.goto(f"{base_url}/{rel}", wait_until="load")
        page.evaluate(SCRIPTS_JS)  # the page's scripts load after its first paint
        page.evaluate(READY_JS)  # formulas shown, fonts loaded, tab stops set
        page.evaluate(FRAMES_JS)  # what the last of them changed is laid out and reported
        found = page.evaluate(SHIFTS_JS)
    finally:
        context.close()
    assert found["theme"] == scheme, f"{rel}: the page ended in the {found['theme']} scheme, not {scheme}"
    shifts = found["shifts"]
    total = sum(s["value"] for s in shifts)
    report = "\n".join(f"  {s['value']:.4f} at {s['at']} ms{' (marked after input)' if s['input'] else ''}: "
                       + "; ".join(s["moved"][:4]) for s in shifts)
    assert total < MAX_SHIFT, (f"{rel} at {screen} width, {scheme}: layout shifts add up to {total:.4f} "
                               f"(at most {MAX_SHIFT}):\n{report}")
