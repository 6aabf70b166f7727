"""Every section of a page drawn, for the tests that look at pixels, colours or text off screen.

attnbook.css gives the sections of a chapter ``content-visibility: auto``: a section far from the screen
is neither styled nor painted until the reader scrolls near it, when it is drawn exactly as it would be
without the rule (its colours, icons and figures). Tests that screenshot an element, read the colours
axe-core computes for the whole page, or read ``innerText`` (which leaves out what is not drawn) would
see sections that were never drawn: they call :data:`DRAW_SECTIONS_JS` first. test_navigation.py and
test_first_paint.py look at the page as it ships.
"""

DRAW_SECTIONS_JS = """() => {
  if (document.getElementById('attnlib-test-draw-all')) return;
  const style = document.createElement('style');
  style.id = 'attnlib-test-draw-all';
  style.textContent = '.bd-article section { content-visibility: visible !important; }';
  document.head.append(style);
}"""
