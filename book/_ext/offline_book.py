"""Local Sphinx extension: keep every page of the book free of third-party requests.

Two jobs:

* Jupyter Book 1 always loads sphinx-thebe, which writes an inline script
  declaring ``const THEBE_JS_URL`` (pointing at a CDN) into every page; the
  book does not use Thebe, and the script is added twice, which the browser
  reports as a redeclaration error. Those scripts are dropped from each page's
  context before it is rendered.
* Interactive figures (``attnlib.interactive``) are written into the page
  without plotly.js. On a page whose body has a ``plotly-graph-div``, this
  extension adds ``_static/plotly/plotly.min.js`` (copied once from the
  installed plotly package) as a plain blocking ``<script>`` in ``<head>``, so
  ``window.Plotly`` exists before the figures' inline ``Plotly.newPlot`` calls
  run. Pages without a figure do not load it.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from sphinx.application import Sphinx
from sphinx.util import logging

logger = logging.getLogger(__name__)

PLOTLY_JS = "plotly/plotly.min.js"  # under the build's _static/
PLOTLY_MARK = 'class="plotly-graph-div"'
MIME_PLUGIN = "MystNbPlotlyMime"
WIDGET_STATE_MIMETYPE = "application/vnd.jupyter.widget-state+json"


def _is_thebe(script: Any) -> bool:
    body = getattr(script, "attributes", {}).get("body", "") or ""
    filename = str(getattr(script, "filename", "") or script)
    return "THEBE_JS_URL" in body or filename.endswith("sphinx-thebe.js")


def _is_widget_state(script: Any) -> bool:
    # Saved widget state: inert without a kernel (the static book shows notes instead of widgets).
    return getattr(script, "attributes", {}).get("type", "") == WIDGET_STATE_MIMETYPE


def _plotly_source() -> Path:
    import plotly

    return Path(plotly.__file__).parent / "package_data" / "plotly.min.js"


def _page_context(app: Sphinx, pagename: str, templatename: str, context: dict, doctree: Any) -> None:
    scripts = context.get("script_files")
    if scripts:
        # In place: Sphinx restores this list before the next page, and per-page
        # scripts added below must land in the same list.
        scripts[:] = [s for s in scripts if not (_is_thebe(s) or _is_widget_state(s))]
    if PLOTLY_MARK in (context.get("body") or ""):
        target = Path(app.outdir) / "_static" / PLOTLY_JS
        if not target.is_file():  # copied before the page is written, so Sphinx adds ?v=checksum
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(_plotly_source(), target)
        # Called during html-page-context, add_js_file adds the script to this page only.
        app.add_js_file(PLOTLY_JS, priority=200)


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
    return {"parallel_read_safe": True, "parallel_write_safe": True}
