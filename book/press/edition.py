"""Local Sphinx extension: every page says under which licences it is published and which edition it is.

The footer of each page names the licences (text CC BY 4.0, code MIT; the ``LICENSE`` files at the
repository root) and the edition: the attnlib version, the git commit the book was built from (with
``+`` when the working tree had changes) and the build date (UTC). A reader who prints or saves a page
can then tell which text it is and what they may do with it.

The footer goes into sphinx-book-theme's ``extra_footer`` option, set when the configuration is read,
so a footer given in ``_config.yml`` (``html: extra_footer``) is kept and this one is added after it.
"""

from __future__ import annotations

import datetime as dt
import html
import subprocess
from importlib import metadata
from pathlib import Path
from typing import Any

from sphinx.application import Sphinx
from sphinx.config import Config

TEXT_LICENCE = ("CC BY 4.0", "https://creativecommons.org/licenses/by/4.0/")
CODE_LICENCE = ("MIT", "https://opensource.org/license/mit")


def _commit(root: Path) -> str:
    """The short commit of ``root``'s checkout, ``+`` if tracked files changed; "unknown" outside git."""
    try:
        def git(*args: str) -> str:
            return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, timeout=10,
                                  check=True).stdout.strip()

        commit = git("rev-parse", "--short=10", "HEAD")
        dirty = git("status", "--porcelain", "--untracked-files=no")
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return commit + ("+" if dirty else "") if commit else "unknown"


def _version() -> str:
    try:
        return metadata.version("attnlib")
    except metadata.PackageNotFoundError:
        return "unknown"


def edition_footer(version: str, commit: str, built: dt.date) -> str:
    """The footer's HTML: licences with links, then the edition."""
    text, text_url = TEXT_LICENCE
    code, code_url = CODE_LICENCE
    return (
        '<p class="attnlib-edition">'
        f'Text licensed under <a href="{text_url}">{text}</a>; code (attnlib and the code cells) under '
        f'<a href="{code_url}">{code}</a>. '
        f"Edition: attnlib {html.escape(version)}, commit <code>{html.escape(commit)}</code>, "
        f"built {built.isoformat()}.</p>"
    )


def _add_footer(app: Sphinx, config: Config) -> None:
    root = Path(app.confdir)
    footer = edition_footer(_version(), _commit(root), dt.datetime.now(dt.UTC).date())
    options = dict(config.html_theme_options or {})
    options["extra_footer"] = (options.get("extra_footer") or "") + footer
    config.html_theme_options = options


def setup(app: Sphinx) -> dict[str, Any]:
    app.connect("config-inited", _add_footer)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
