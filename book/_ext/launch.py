"""Local Sphinx extension: Binder and Colab launch buttons, only when the book knows its repository.

The repository is configured in one place, the environment of the build:

* ``BOOK_REPOSITORY_URL``: the public URL of this repository, e.g. ``https://github.com/org/book``;
* ``BOOK_REPOSITORY_BRANCH``: the branch the buttons open (default ``main``).

When the URL is set, every chapter page gets a Binder button (JupyterLab on mybinder.org, which builds
the environment from ``runtime.txt`` and ``requirements.txt``) and a Colab button. When it is unset, no
launch button is made: Jupyter Book would otherwise fill in its own repository, and the buttons would
silently open another project. sphinx-book-theme reads the repository from its options when the
builder starts, so they are set here when the configuration is read.
"""

from __future__ import annotations

import os
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


def _configure(app: Sphinx, config: Config) -> None:
    url = os.environ.get(URL_VARIABLE, "").strip()
    options = dict(config.html_theme_options or {})
    if url:
        options.update(launch_options(url, os.environ.get(BRANCH_VARIABLE, "main").strip()))
    else:
        options["launch_buttons"] = {}  # no repository: no button, never one into another project
    config.html_theme_options = options


def setup(app: Sphinx) -> dict[str, Any]:
    app.connect("config-inited", _configure)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
