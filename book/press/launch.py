"""Local Sphinx extension: Binder and Colab launch buttons, only when the book knows its repository.

The repository is configured in one place, ``_config.yml`` (``sphinx.config``):

* ``book_repository_url``: the public URL of this repository, e.g. ``https://github.com/org/book``;
* ``book_repository_branch``: the branch the buttons open (default ``main``).

The notebook edition (``book/press/notebook_edition.py``) reads the same two keys for its install cell.
A build can override them with the environment variables ``BOOK_REPOSITORY_URL`` and
``BOOK_REPOSITORY_BRANCH`` (a fork's CI, or the test that builds both ways).

When the URL is set, every chapter page gets a Binder button (JupyterLab on mybinder.org, which builds
the environment from ``runtime.txt`` and ``requirements.txt``) and a Colab button, both opening the
chapter's notebook edition, ``book/notebooks/<chapter>.ipynb``, which runs without the book's build
tools and shows no MyST syntax. When it is unset, no launch button is made: Jupyter Book would otherwise
fill in its own repository, and the buttons would silently open another project. sphinx-book-theme
reads the repository from its options when the builder starts, so they are set here when the
configuration is read. The ".ipynb" download item of each chapter gives its notebook edition too.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from sphinx.application import Sphinx
from sphinx.config import Config
from sphinx.errors import ConfigError

URL_VARIABLE = "BOOK_REPOSITORY_URL"
BRANCH_VARIABLE = "BOOK_REPOSITORY_BRANCH"
BINDERHUB_URL = "https://mybinder.org"
COLAB_URL = "https://colab.research.google.com"


def launch_options(url: str, branch: str) -> dict[str, Any]:
    """The theme options that make the launch buttons for ``url`` at ``branch``."""
    parts = urlsplit(url)
    if parts.scheme != "https" or not parts.netloc or len(parts.path.strip("/").split("/")) != 2:
        raise ConfigError(f"{URL_VARIABLE} must look like https://github.com/owner/repository; got {url!r}")
    if not branch or any(c.isspace() for c in branch):
        raise ConfigError(f"{BRANCH_VARIABLE} must be a branch name; got {branch!r}")
    return {
        "repository_url": url.rstrip("/").removesuffix(".git"),
        "repository_branch": branch,
        "path_to_docs": "",
        "launch_buttons": {
            "notebook_interface": "jupyterlab",
            "binderhub_url": BINDERHUB_URL,
            "colab_url": COLAB_URL,
        },
    }


EDITION_DIR = "book/notebooks"


def repository(config: Config) -> tuple[str, str]:
    """(url, branch) of the book's repository: the environment, else ``_config.yml``; url "" if unknown."""
    url = os.environ.get(URL_VARIABLE, "").strip() or str(config.book_repository_url or "").strip()
    branch = os.environ.get(BRANCH_VARIABLE, "").strip() or str(config.book_repository_branch or "").strip()
    return url, branch or "main"


def _configure(app: Sphinx, config: Config) -> None:
    url, branch = repository(config)
    options = dict(config.html_theme_options or {})
    if url:
        options.update(launch_options(url, branch))
    else:
        options["launch_buttons"] = {}  # no repository: no button, never one into another project
    config.html_theme_options = options


def _edition_path(url: str) -> str:
    """The launch URL of a chapter, moved from ``book/<chapter>.ipynb`` to its notebook edition."""
    return re.sub(r"(?<=[/=])book/([^/?#]+\.ipynb)", rf"{EDITION_DIR}/\1", url)


def _open_the_edition(app: Sphinx, pagename: str, templatename: str, context: dict[str, Any],
                      doctree: Any) -> None:
    """Point the theme's launch buttons at the notebook edition (they run after the theme's, at 501)."""
    for group in context.get("header_buttons", []):
        if group.get("label") == "launch-buttons":
            for button in group.get("buttons", []):
                button["url"] = _edition_path(button["url"])


def _serve_the_edition(app: Sphinx, exception: Exception | None) -> None:
    """Make each chapter's ".ipynb" download item give its notebook edition.

    The theme's download menu links to ``_sources/<page>.ipynb``, a copy of the MyST source: opened in
    Jupyter it shows role and directive syntax and needs myst-nb for ``glue``. The edition runs anywhere.
    """
    if exception is not None or app.builder.format != "html":
        return
    for source in (Path(app.srcdir) / EDITION_DIR).glob("*.ipynb"):
        target = Path(app.outdir) / "_sources" / "book" / source.name
        if target.exists():
            shutil.copyfile(source, target)


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_config_value("book_repository_url", "", "env", [str])
    app.add_config_value("book_repository_branch", "main", "env", [str])
    app.connect("config-inited", _configure)
    app.connect("html-page-context", _open_the_edition, priority=600)
    app.connect("build-finished", _serve_the_edition)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
