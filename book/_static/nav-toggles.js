/* Sidebar toggles that work at every width.
 *
 * pydata-sphinx-theme 0.17 and sphinx-book-theme 1.3 bind their sidebar handlers to the FIRST element
 * of class .primary-toggle (.secondary-toggle) in the page, the header's icon, which sphinx-book-theme
 * hides; the button a reader sees (in the article header) has no handler, so below 992 px the chapter
 * list, and below 1200 px the page contents, cannot be opened. Every other toggle of a kind forwards its
 * click to the bound one, whose handler opens the drawer (a <dialog>; Escape closes it and focus comes
 * back to the button that was clicked) or, on a wide screen, hides and shows the sidebar.
 * tests/browser/test_navigation.py clicks the visible buttons at 390, 800 and 1100 px.
 */
(function () {
  "use strict";
  function forward(kind) {
    var toggles = document.querySelectorAll("." + kind + "-toggle");
    var bound = toggles[0];
    for (var i = 1; i < toggles.length; i++) {
      toggles[i].addEventListener("click", function (event) {
        event.preventDefault();
        event.stopPropagation();
        bound.click();
      });
    }
  }
  function init() {
    forward("primary");
    forward("secondary");
  }
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", init);
  } else {
    init();
  }
})();
