"""Local Sphinx extension: keep every page of the book free of third-party requests.

Jupyter Book 1 always loads sphinx-thebe, which writes an inline script
declaring ``const THEBE_JS_URL`` (pointing at a CDN) into every page; the
book does not use Thebe, and the script is added twice, which the browser
reports as a redeclaration error. This extension drops those scripts from
each page's context before it is rendered.
"""

from __future__ import annotations

from typing import Any

from sphinx.application import Sphinx


def _is_thebe(script: Any) -> bool:
    body = getattr(script, "attributes", {}).get("body", "") or ""
    filename = str(getattr(script, "filename", "") or script)
    return "THEBE_JS_URL" in body or filename.endswith("sphinx-thebe.js")


def _drop_thebe(app: Sphinx, pagename: str, templatename: str, context: dict, doctree: Any) -> None:
    scripts = context.get("script_files")
    if scripts:
        context["script_files"] = [s for s in scripts if not _is_thebe(s)]


def setup(app: Sphinx) -> dict[str, Any]:
    app.connect("html-page-context", _drop_thebe)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
