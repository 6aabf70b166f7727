/* MathJax after the first paint, in small steps (book/press/lean_pages.py, issue 13).
 *
 * Sphinx loads MathJax with a deferred <script> in <head>: the browser fetches 1.2 MB of it with the page
 * and runs it before DOMContentLoaded, and MathJax then typesets every formula of the page in one long
 * task (chapter 4 has some 350). lean_pages replaces that <script> with this one, whose data-mathjax names
 * MathJax. This script
 *
 * - adds MathJax only after the page has painted once, so it never delays the first paint;
 * - typesets the formulas on screen first, then the rest of the page in small batches, each its own task,
 *   so no task blocks the reader's input for long. MathJax.startup.promise resolves once every formula is
 *   typeset (each with its assistive MathML), as it does when MathJax typesets the page in one go;
 * - keeps the book's MathJax options (window.MathJax, written by Sphinx from _config.yml: which
 *   components to load, see lean_mathjax_path) and only adds startup.pageReady and startup.typeset.
 *
 * Formulas are Sphinx's and myst-nb's .math elements (LaTeX outputs of cells too); there is no TeX
 * elsewhere in the book's pages, so no pass over the whole page is made.
 */
(function () {
  "use strict";
  var me = document.currentScript;
  var src = me && me.getAttribute("data-mathjax");
  if (!src) {
    return;
  }
  // Batches aim at tasks this short: under Lighthouse's 4x slower mobile CPU still below the 50 ms of a
  // long task. Every batch also pays a layout of the page (MathJax measures the text around each formula),
  // so a batch never has fewer than MIN_BATCH formulas.
  var BUDGET_MS = 12;
  var MIN_BATCH = 4;
  var config = (window.MathJax = window.MathJax || {});
  config.startup = config.startup || {};

  function onScreenFirst(elements) {
    var height = window.innerHeight || document.documentElement.clientHeight;
    var keyed = elements.map(function (el, index) {
      var top = el.getBoundingClientRect().top;
      var onScreen = top > -height && top < 2 * height;
      return { el: el, key: onScreen ? index - elements.length : index };
    });
    keyed.sort(function (a, b) {
      return a.key - b.key;
    });
    return keyed.map(function (k) {
      return k.el;
    });
  }

  function nextTask() {
    return new Promise(function (resolve) {
      setTimeout(resolve, 0);
    });
  }

  config.startup.pageReady = function () {
    var MathJax = window.MathJax;
    var queue = onScreenFirst(Array.prototype.slice.call(document.querySelectorAll(".math")));
    var size = 4;
    function step() {
      if (!queue.length) {
        // Every formula Sphinx and myst-nb write is a .math element (also LaTeX outputs of cells);
        // a last pass over the whole page would walk every node of it to find nothing.
        return Promise.resolve();
      }
      var batch = queue.splice(0, size);
      var start = performance.now();
      return MathJax.typesetPromise(batch).then(function () {
        var took = performance.now() - start;
        size = Math.max(MIN_BATCH, Math.min(64, Math.round((size * BUDGET_MS) / Math.max(took, 1))));
        return nextTask().then(step);
      });
    }
    return MathJax.startup.defaultPageReady().then(step);
  };
  config.startup.typeset = false; // pageReady above typesets, in batches

  var added = false;
  function add() {
    if (added) {
      return;
    }
    added = true;
    var script = document.createElement("script");
    script.src = src;
    script.async = true;
    document.head.appendChild(script);
  }
  function afterFirstPaint() {
    // The frame requested here is painted before the timeout runs; a hidden tab gets no frames, so the
    // fallback timer adds MathJax anyway.
    requestAnimationFrame(function () {
      setTimeout(add, 0);
    });
    setTimeout(add, 1000);
  }
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", afterFirstPaint);
  } else {
    afterFirstPaint();
  }
})();
