/* Keyboard access to formulas that scroll sideways.
 *
 * A formula wider than the text column (on a phone, a few per chapter) scrolls sideways inside its own
 * box (display math: mathml_pages' stylesheet or the theme's CSS; inline math: book/_static/tables.css). A box that scrolls must be
 * reachable by keyboard, or a keyboard user cannot see its right-hand part (WCAG 2.1.1; axe-core's rule
 * scrollable-region-focusable, serious). MathJax's menu is not loaded (_config.yml), so no formula is a
 * tab stop of its own. As the theme does
 * for code blocks and outputs, a formula that overflows becomes a tab stop (tabindex 0), and
 * leaves the tab order again when it fits (a wider window). Checked in the next animation frame after
 * MathJax adds or changes formulas (it may typeset after the first paint, in batches), after fonts
 * load and after each resize. tests/browser/test_accessibility.py runs axe-core at 390 px.
 */
(function () {
  "use strict";
  // div.math: display formulas as MathML (book/_ext/mathml_pages.py); mjx-container: a build that kept MathJax.
  var SELECTOR = 'mjx-container[display="true"], .bd-article div.math, .bd-article span.math';
  var pending = false;

  function update() {
    pending = false;
    document.querySelectorAll(SELECTOR).forEach(function (m) {
      var want = m.scrollWidth > m.clientWidth ? "0" : "-1";
      if (m.getAttribute("tabindex") !== want) m.setAttribute("tabindex", want);
    });
  }

  function schedule() {
    if (!pending) {
      pending = true;
      requestAnimationFrame(update);
    }
  }

  function init() {
    var root = document.getElementById("main-content") || document.body;
    /* Only new elements: our own tabindex changes are attributes and do not come back here. */
    new MutationObserver(schedule).observe(root, { subtree: true, childList: true });
    window.addEventListener("resize", schedule);
    /* MathJax's fonts change the formulas' widths when they arrive, with no change to the DOM. */
    if (document.fonts) {
      document.fonts.addEventListener("loadingdone", schedule);
      document.fonts.ready.then(schedule);
    }
    schedule();
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();
