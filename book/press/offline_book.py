"""Local Sphinx extension: keep every page of the book free of third-party requests, and light.

Two jobs:

* Jupyter Book 1 always loads sphinx-thebe, which writes an inline script
  declaring ``const THEBE_JS_URL`` (pointing at a CDN) into every page; the
  book does not use Thebe, and the script is added twice, which the browser
  reports as a redeclaration error. Those scripts are dropped from each page's
  context before it is rendered.
* Explorers (``attnlib.interactive``) are written into the page as HTML with
  their figure as JSON. On a page that has one, this extension adds attnlib's
  ``explorer.js`` (copied from the installed package) as a deferred script whose
  ``data-plotly`` names the book's own plotly.js: the vendored cartesian partial
  bundle ``book/_static/vendor/plotly/`` (bar and heatmap traces and the rest of
  the cartesian family, 0.5 MB gzip instead of 1.5 MB). explorer.js loads it
  only when a figure comes near the viewport, so plotly.js never blocks or
  delays the first paint. Pages without an explorer load neither.
* An explorer carries its spec (the Plotly figure, ~10–25 kB) and, in an inert ``<template>``, the
  panels of every state it does not show first (chapter 4's 60 states: 130 kB of tables). Both move
  out of the page into ``_static/explorers/<hash>.js``, named by the figure's ``data-src``;
  explorer.js loads it with the plot, or at once when a control is used. A ``<script>`` element loads
  it from a page opened as a file too (``fetch`` would not). The page keeps the panel it shows, so it
  reads the same without JavaScript. Chapter 4's page: 513 -> 340 kB.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from pathlib import Path
from typing import Any

from sphinx.application import Sphinx
from sphinx.util import logging

logger = logging.getLogger(__name__)

PLOTLY_VERSION = "4.1.1"  # the plotly.js of the pinned Python plotly (checked at build time)
PLOTLY_BUNDLE = f"vendor/plotly/plotly-cartesian-{PLOTLY_VERSION}.min.js"  # in book/_static
EXPLORER_JS = "attnlib-explorer.js"  # under the build's _static/, copied from attnlib.interactive
EXPLORER_MARK = 'class="attnlib-explorer"'
EXPLORER_DATA_DIR = "explorers"  # under the build's _static/: one script per explorer, named by its hash
MIME_PLUGIN = "MystNbPlotlyMime"
# attnlib writes both inline: the spec with "</" escaped, the template's text HTML-escaped, so neither
# can contain its own closing tag.
_FIGURE = re.compile(r'(<figure class="attnlib-explorer" [^>]*data-explorer="([^"]+)")([^>]*>)(.*?</figure>)',
                     re.S)
_SPEC = re.compile(r'<script type="application/json" class="attnlib-spec">(.*?)</script>', re.S)
_MORE = re.compile(r'<template class="attnlib-more">(.*?)</template>', re.S)
WIDGET_STATE_MIMETYPE = "application/vnd.jupyter.widget-state+json"


def _is_thebe(script: Any) -> bool:
    body = getattr(script, "attributes", {}).get("body", "") or ""
    filename = str(getattr(script, "filename", "") or script)
    return "THEBE_JS_URL" in body or filename.endswith("sphinx-thebe.js")


def _is_widget_state(script: Any) -> bool:
    # Saved widget state: inert without a kernel (the static book shows notes instead of widgets).
    return getattr(script, "attributes", {}).get("type", "") == WIDGET_STATE_MIMETYPE


def _explorer_source() -> Path:
    from attnlib.interactive import _render

    return _render.EXPLORER_JS


def explorer_data_script(div_id: str, spec: str, more: str) -> str:
    """The script that hands explorer ``div_id`` its spec (JSON text) and other panels (HTML)."""
    key, panels = json.dumps(div_id), json.dumps(more)
    return (f"(window.attnlibExplorerData=window.attnlibExplorerData||{{}})[{key}]="
            f'{{"spec":{spec},"more":{panels}}};\n')


def move_explorer_data(body: str, static: Path, prefix: str) -> tuple[str, int]:
    """``body`` with each explorer's spec and template moved into ``static/explorers/<hash>.js``.

    ``prefix`` is the page's path to ``_static/``. Returns the new body and the bytes moved. A figure
    without an inline spec (already moved, or written by an older attnlib) is left as it is.
    """
    moved = 0

    def move(match: re.Match[str]) -> str:
        nonlocal moved
        opening, div_id, rest, inner = match.groups()
        spec = _SPEC.search(inner)
        if spec is None or "data-src=" in opening + rest:
            return match.group(0)
        more = _MORE.search(inner)
        script = explorer_data_script(div_id, spec.group(1), more.group(1) if more else "")
        name = hashlib.sha256(script.encode()).hexdigest()[:20] + ".js"
        target = static / EXPLORER_DATA_DIR / name
        if not target.is_file():
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(script, encoding="utf-8")
        inner = _MORE.sub("", _SPEC.sub("", inner))
        new = f'{opening} data-src="{prefix}{EXPLORER_DATA_DIR}/{name}"{rest}{inner}'
        moved += len(match.group(0)) - len(new)
        return new

    return _FIGURE.sub(move, body), moved


def _page_context(app: Sphinx, pagename: str, templatename: str, context: dict, doctree: Any) -> None:
    scripts = context.get("script_files")
    if scripts:
        # In place: Sphinx restores this list before the next page, and per-page
        # scripts added below must land in the same list.
        scripts[:] = [s for s in scripts if not (_is_thebe(s) or _is_widget_state(s))]
    if EXPLORER_MARK in (context.get("body") or ""):
        target = Path(app.outdir) / "_static" / EXPLORER_JS
        if not target.is_file():  # copied before the page is written, so Sphinx adds ?v=checksum
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(_explorer_source(), target)
        # Relative to this page, as Sphinx writes its own _static links.
        depth = pagename.count("/")
        plotly_url = "../" * depth + "_static/" + PLOTLY_BUNDLE
        # Called during html-page-context, add_js_file adds the script to this page only.
        app.add_js_file(EXPLORER_JS, priority=200, defer="defer", **{"data-plotly": plotly_url})
        context["body"], moved = move_explorer_data(context["body"], Path(app.outdir) / "_static",
                                                    "../" * depth + "_static/")
        logger.verbose("[offline_book] %s: %d bytes of explorer data moved to _static/%s/",
                       pagename, moved, EXPLORER_DATA_DIR)


def _check_plotly_bundle(app: Sphinx) -> None:
    """Error under -W if the vendored plotly.js is missing or not the version the Python plotly writes for."""
    from plotly.offline import get_plotlyjs_version

    bundle = Path(app.confdir) / "book" / "_static" / PLOTLY_BUNDLE
    if not bundle.is_file():
        logger.warning("the vendored plotly.js bundle %s is missing (see its README.md)", bundle)
    elif get_plotlyjs_version() != PLOTLY_VERSION:
        logger.warning(
            "the vendored plotly.js is %s but the installed Python plotly writes figures for plotly.js %s: "
            "update book/_static/vendor/plotly/ (see its README.md)",
            PLOTLY_VERSION,
            get_plotlyjs_version(),
        )


def _check_mime_plugin(app: Sphinx) -> None:
    """Warn (an error under -W) if attnlib's myst-nb plugin is not registered."""
    try:
        from myst_nb.core.render import load_mime_renders
    except ImportError:
        return
    if not any(getattr(p, "__name__", "") == MIME_PLUGIN for p in load_mime_renders()):
        logger.warning(
            "attnlib's myst-nb plugin %s is not registered (entry point group myst_nb.mime_renderers): "
            "reinstall the package with `pip install -e .` so interactive figures render without "
            "'unknown mime type' warnings",
            MIME_PLUGIN,
        )


def setup(app: Sphinx) -> dict[str, Any]:
    # After myst-nb's own html-page-context handler (priority 500), which adds the widget state.
    app.connect("html-page-context", _page_context, priority=900)
    app.connect("builder-inited", _check_mime_plugin)
    app.connect("builder-inited", _check_plotly_bundle)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
