/* Links to a place on the page land on it, although most of the page is laid out only when near the
 * screen (book/press/lean_pages.py inlines this script into every page, before its script loader).
 *
 * attnbook.css gives each section of a chapter (h2 level) `content-visibility: auto`: the browser styles
 * and lays out only the sections near the screen, which took a chapter's work after the first paint from
 * 0.35 s to 0.05 s on Lighthouse's phone. A section off screen counts with a guessed height until it is
 * first drawn, so a jump to a heading (a link in the page's contents, the browser's back button, a link
 * from another page) can stop short or overshoot while the sections it passes are drawn. Measured on
 * chapters 2, 4 and 6 at 390 and 1366 px, a jump within the page landed up to 5,800 px away from its heading.
 *
 * So after every jump to a fragment this script scrolls the target into view again, frame after frame,
 * until its position holds (at most 20 frames). The target keeps its scroll-margin (under the sticky
 * header), as on a page without content-visibility. tests/browser/test_navigation.py checks every heading.
 */
(function () {
  "use strict";
  var FRAMES = 20;

  function settle() {
    var id = decodeURIComponent(location.hash.slice(1));
    var target = id && document.getElementById(id);
    if (!target) return;
    var last = null, frames = 0;
    (function step() {
      var top = target.getBoundingClientRect().top;
      if (last !== null && Math.abs(top - last) < 1 && frames > 2) return;
      target.scrollIntoView();
      last = target.getBoundingClientRect().top;
      if (++frames < FRAMES) requestAnimationFrame(step);
    })();
  }

  window.addEventListener("hashchange", settle);
  // A second click on the link to where the page already is fires no hashchange.
  document.addEventListener("click", function (event) {
    var link = event.target.closest && event.target.closest("a[href*='#']");
    if (link && link.hash && link.hash === location.hash && link.pathname === location.pathname) {
      requestAnimationFrame(settle);
    }
  });
  if (location.hash) settle();
})();
