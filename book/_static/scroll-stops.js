/* Keyboard access to boxes that scroll sideways: formulas, code blocks, cell outputs, tables.
 *
 * A box whose content is wider than itself scrolls inside the column (on a phone: most code cells, a
 * few formulas and tables). A box that scrolls must be reachable by keyboard, or a keyboard user cannot
 * see its right-hand part (WCAG 2.1.1; axe-core's rule scrollable-region-focusable, serious). Such a
 * box becomes a tab stop (tabindex 0); one that fits is not (tabindex -1, or none for a formula: a
 * keyboard user tabs to links and controls, not to hundreds of formulas).
 *
 * pydata-sphinx-theme does this for code blocks and outputs in one pass at the load event, reading each
 * box's width and writing its tabindex in turn: each write made the next read lay the page out again,
 * and on a chapter of 15,000 elements that pass was the page's longest task (0.7 s on Lighthouse's
 * phone). book/press/lean_pages.py removes that pass from the theme's script, and this one does the job
 * for the theme's boxes and the book's formulas: it reads the widths of a batch of boxes, then writes
 * their tab stops, in tasks of a few milliseconds, starting after the first paint. It runs again after
 * fonts load, after a resize, and for boxes added later (an explorer's panels, a widget's output).
 *
 * A box in a section that is not drawn yet (attnbook.css: content-visibility: auto) waits until the
 * section is drawn: reading its width would make the browser lay the whole section out first, and on
 * chapter 4 those forced layouts were 1.2 s of main-thread work on Lighthouse's phone. The browser tells
 * when a section is drawn (contentvisibilityautostatechange); its boxes are measured then, before a
 * reader scrolling or tabbing into it can reach them.
 * tests/browser/test_accessibility.py runs axe-core at 390 px; test_navigation.py counts the stops.
 */
(function () {
  "use strict";
  // The theme's boxes (its own list) and the formulas: div.math for display formulas as MathML
  // (book/press/mathml_pages.py), mjx-container for a build that kept MathJax.
  var THEME = "pre, .nboutput > .output_area, .cell_output > .output, .jp-RenderedHTMLCommon, "
    + ".pst-scrollable-table-container";
  var MATH = 'mjx-container[display="true"], .bd-article div.math, .bd-article span.math';
  var SELECTOR = THEME + ", " + MATH;
  var BUDGET_MS = 8;  // a task stays under 50 ms on a phone 4-6 times slower than a laptop
  var queue = [];
  var queued = new Set();
  var running = false;
  var started = false;  // the first pass over the page has been queued

  function enqueue(elements) {
    elements.forEach(function (el) {
      if (!queued.has(el)) {
        queued.add(el);
        queue.push(el);
      }
    });
    if (!running && queue.length) {
      running = true;
      setTimeout(work, 0);
    }
  }

  // One task: read the widths of boxes until the budget is spent, then write their tab stops.
  // Sections the browser has drawn at least once: their boxes have a layout to read, even if the
  // section is skipped again by the time its turn comes (a jump past it, sections above it resized).
  var shown = new WeakSet();

  // False for a box inside a section the browser has never drawn (style only: no layout is forced).
  function drawn(el) {
    if (!el.checkVisibility || el.checkVisibility({ contentVisibilityAuto: true })) return true;
    for (var s = el.closest("section"); s; s = s.parentElement && s.parentElement.closest("section")) {
      if (shown.has(s)) return true;
    }
    return false;
  }

  function work() {
    var start = performance.now(), batch = [];
    while (queue.length && (batch.length < 8 || performance.now() - start < BUDGET_MS)) {
      var el = queue.shift();
      queued.delete(el);
      if (!el.isConnected || !drawn(el)) continue;  // measured when its section is drawn
      var wide = el.scrollWidth > el.clientWidth;
      batch.push([el, wide || (!el.matches(MATH) && el.scrollHeight > el.clientHeight)]);
    }
    batch.forEach(function (item) {
      var el = item[0], scrolls = item[1];
      if (el.matches(MATH)) {
        if (scrolls) el.setAttribute("tabindex", "0");
        else if (el.hasAttribute("tabindex")) el.removeAttribute("tabindex");
      } else if (el.tabIndex !== (scrolls ? 0 : -1)) {
        el.tabIndex = scrolls ? 0 : -1;
      }
    });
    if (queue.length) setTimeout(work, 0);
    else running = false;
  }

  function all() {
    started = true;
    enqueue(document.querySelectorAll(SELECTOR));
  }

  function added(records) {
    var found = [];
    records.forEach(function (record) {
      record.addedNodes.forEach(function (node) {
        if (node.nodeType !== 1 || node.namespaceURI !== "http://www.w3.org/1999/xhtml") return;
        if (node.matches(SELECTOR)) found.push(node);
        node.querySelectorAll(SELECTOR).forEach(function (el) { found.push(el); });
      });
    });
    if (found.length) enqueue(found);
  }

  function init() {
    var root = document.getElementById("main-content") || document.body;
    /* Only new elements: our own tabindex changes are attributes and do not come back here. */
    new MutationObserver(added).observe(root, { subtree: true, childList: true });
    /* A section is drawn: measure its boxes (the event does not bubble; capture sees it). */
    document.addEventListener("contentvisibilityautostatechange", function (event) {
      if (event.skipped) return;
      shown.add(event.target);
      enqueue(event.target.querySelectorAll(SELECTOR));
    }, true);
    var resized = null;
    window.addEventListener("resize", function () {
      clearTimeout(resized);
      resized = setTimeout(all, 200);
    });
    /* Web fonts change the formulas' widths when they arrive, with no change to the DOM. */
    if (document.fonts) document.fonts.ready.then(all);
    requestAnimationFrame(function () { setTimeout(all, 0); });  // after the first paint
  }

  window.attnlibScrollStops = {
    // Resolves once every box drawn now has its tab stop (tests wait for it before they count or run
    // axe; a test that draws every section first gets every box).
    settled: function () {
      all();
      return new Promise(function (resolve) {
        (function check() {
          if (started && !running && !queue.length) resolve(true);
          else setTimeout(check, 20);
        })();
      });
    },
  };

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();
