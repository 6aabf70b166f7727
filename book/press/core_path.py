"""Local Sphinx extension: a chapter's "previous" and "next" links stay on the core path.

A going-deeper page (``book/04a_scaling_deeper``) sits in the table of contents under its chapter, so
Sphinx makes it the chapter's "next" page: a reader on the core path would have to step through it to
reach the next chapter. On a core chapter page (``book/04_scaling``) this extension moves "next" past
going-deeper pages to the next chapter, and "previous" back past them to the chapter before. A
going-deeper page keeps Sphinx's links: back to its chapter, on to the next one. The chapter's own
"Going deeper" section and the sidebar still lead to the going-deeper page.
"""

from __future__ import annotations

import re
from typing import Any

from sphinx.application import Sphinx

CORE = re.compile(r"book/\d\d_[^/]+")  # book/04_scaling
DEEPER = re.compile(r"book/\d\d[a-z]_[^/]+")  # book/04a_scaling_deeper


def core_neighbour(relations: dict[str, list[str | None]], docname: str, step: int) -> str | None:
    """The page before (``step=1``) or after (``step=2``) ``docname``, going-deeper pages stepped over.

    ``relations[doc]`` is Sphinx's ``[parent, previous, next]``, so ``step`` indexes it. Any page
    other than a going-deeper page (a chapter, the glossary, the notation page) ends the walk.

    >>> rel = {"book/01_a": [None, "n", "book/01a_x"], "book/01a_x": [None, "book/01_a", "book/02_b"],
    ...        "book/02_b": [None, "book/01a_x", None]}
    >>> core_neighbour(rel, "book/01_a", 2), core_neighbour(rel, "book/02_b", 1)
    ('book/02_b', 'book/01_a')
    """
    if step not in (1, 2):
        raise ValueError(f"step must be 1 (previous) or 2 (next); got {step!r}")
    seen = {docname}
    page = relations.get(docname, [None, None, None])[step]
    while page is not None and DEEPER.fullmatch(page) and page not in seen:
        seen.add(page)
        page = relations.get(page, [None, None, None])[step]
    return page


def _relink(app: Sphinx, pagename: str, templatename: str, context: dict[str, Any], doctree: Any) -> None:
    if not CORE.fullmatch(pagename) or doctree is None:
        return
    builder: Any = app.builder  # an HTML builder (html-page-context): it has render_partial
    relations = app.env.collect_relations()
    for key, step in (("prev", 1), ("next", 2)):
        page = core_neighbour(relations, pagename, step)
        if page is None or page == relations[pagename][step]:
            continue
        context[key] = {"link": builder.get_relative_uri(pagename, page),
                        "title": builder.render_partial(app.env.titles[page])["title"]}


def setup(app: Sphinx) -> dict[str, Any]:
    app.connect("html-page-context", _relink)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
