"""Launch buttons (book/press/launch.py): Binder and Colab on every chapter when the repository is known,
none at all when it is not (Jupyter Book would otherwise point them at its own repository).

The book of ``make build`` is built as configured (``book_repository_url: ""`` in ``_config.yml``);
the second case builds a copy of the
front pages and the chapters with it set, with execution off (the stored outputs are enough to check
links).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from press import launch

REPO_ROOT = Path(__file__).resolve().parents[2]

CHAPTERS = sorted(p.stem for p in (REPO_ROOT / "book").glob("[0-9]*.ipynb"))
LAUNCH = re.compile(r'href="(https://(?:mybinder\.org|colab\.research\.google\.com)[^"]*)"')
REPO = "https://github.com/example/attention-book"


def test_no_launch_button_and_no_foreign_repository_without_a_url(
    html_dir: Path, toc_pages: list[str]
) -> None:
    for rel in toc_pages:
        text = (html_dir / rel).read_text(encoding="utf-8")
        assert not LAUNCH.findall(text), f"{rel}: launch links without a repository: {LAUNCH.findall(text)}"
        assert "executablebooks/jupyter-book" not in text, f"{rel} links to Jupyter Book's own repository"


@pytest.fixture(scope="module")
def built_with_url(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("launch")
    shutil.copytree(REPO_ROOT / "book", root / "book", ignore=shutil.ignore_patterns("_build", ".*"))
    # Only the pages whose launch buttons are checked: the front pages and every chapter page. Links to the
    # pages left out (glossary, bibliography, API) only warn, so the build runs without -W; the book's own
    # build (make build) is the one that turns every warning into an error.
    pages = ["book/notation", *(f"book/{chapter}" for chapter in CHAPTERS)]
    toc = {"format": "jb-book", "root": "book/intro", "chapters": [{"file": page} for page in pages]}
    (root / "_toc.yml").write_text(yaml.safe_dump(toc, sort_keys=False), encoding="utf-8")
    config = (REPO_ROOT / "_config.yml").read_text(encoding="utf-8")
    assert "execute_notebooks: force" in config
    (root / "_config.yml").write_text(config.replace("execute_notebooks: force", 'execute_notebooks: "off"'))
    env = {**os.environ, launch.URL_VARIABLE: REPO, launch.BRANCH_VARIABLE: "stable"}
    jb = Path(sys.executable).with_name("jupyter-book")
    run = subprocess.run([str(jb), "build", ".", "--keep-going"], cwd=root, env=env,
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    return root / "_build" / "html"


def test_every_chapter_launches_in_binder_and_colab(built_with_url: Path) -> None:
    for chapter in CHAPTERS:
        links = set(LAUNCH.findall((built_with_url / "book" / f"{chapter}.html").read_text(encoding="utf-8")))
        assert links == {
            f"https://mybinder.org/v2/gh/example/attention-book/stable?urlpath=lab/tree/book/notebooks/{chapter}.ipynb",
            f"https://colab.research.google.com/github/example/attention-book/blob/stable/book/notebooks/{chapter}.ipynb",
        }, (chapter, links)
        # Both open the chapter's notebook edition, which is committed (Colab reads it from the repository).
        assert (REPO_ROOT / "book" / "notebooks" / f"{chapter}.ipynb").is_file(), chapter
    for page in ("intro", "notation"):  # pages without code get no launch button
        assert not LAUNCH.findall((built_with_url / "book" / f"{page}.html").read_text(encoding="utf-8"))


@pytest.mark.parametrize(
    ("url", "branch", "match"),
    [
        ("http://github.com/a/b", "main", "must look like"),
        ("https://github.com/only-owner", "main", "must look like"),
        ("github.com/a/b", "main", "must look like"),
        ("https://github.com/a/b", "two words", "must be a branch name"),
        ("https://github.com/a/b", "", "must be a branch name"),
    ],
)
def test_a_bad_repository_setting_stops_the_build(url: str, branch: str, match: str) -> None:
    with pytest.raises(launch.ConfigError, match=match):
        launch.launch_options(url, branch)


def test_launch_options_normalise_the_url() -> None:
    options = launch.launch_options("https://github.com/a/b.git/", "main")
    assert options["repository_url"] == "https://github.com/a/b"
    assert options["launch_buttons"]["binderhub_url"] == "https://mybinder.org"


@pytest.mark.parametrize(
    ("environ", "configured", "expected"),
    [
        ({}, ("", "main"), ("", "main")),
        ({}, ("https://github.com/a/b", "dev"), ("https://github.com/a/b", "dev")),
        ({"BOOK_REPOSITORY_URL": "https://github.com/c/d"}, ("https://github.com/a/b", "dev"),
         ("https://github.com/c/d", "dev")),
        ({"BOOK_REPOSITORY_BRANCH": "stable"}, ("https://github.com/a/b", ""),
         ("https://github.com/a/b", "stable")),
    ],
)
def test_the_repository_comes_from_the_config_unless_the_environment_overrides_it(
    monkeypatch: pytest.MonkeyPatch, environ: dict, configured: tuple, expected: tuple
) -> None:
    from types import SimpleNamespace

    monkeypatch.delenv(launch.URL_VARIABLE, raising=False)
    monkeypatch.delenv(launch.BRANCH_VARIABLE, raising=False)
    for name, value in environ.items():
        monkeypatch.setenv(name, value)
    config = SimpleNamespace(book_repository_url=configured[0], book_repository_branch=configured[1])
    assert launch.repository(config) == expected


@pytest.mark.parametrize(
    ("before", "after"),
    [
        ("https://mybinder.org/v2/gh/o/book/main?urlpath=lab/tree/book/02_qkv.ipynb",
         "https://mybinder.org/v2/gh/o/book/main?urlpath=lab/tree/book/notebooks/02_qkv.ipynb"),
        ("https://colab.research.google.com/github/o/r/blob/main/book/04_scaling.ipynb",
         "https://colab.research.google.com/github/o/r/blob/main/book/notebooks/04_scaling.ipynb"),
    ],
)
def test_launch_urls_move_to_the_notebook_edition(before: str, after: str) -> None:
    assert launch._edition_path(before) == after


def test_the_download_item_gives_the_notebook_edition(html_dir: Path) -> None:
    """The page's ".ipynb" download is the edition (no MyST, no glue), not the MyST source."""
    for chapter in CHAPTERS:
        page = (html_dir / "book" / f"{chapter}.html").read_text(encoding="utf-8")
        assert f'href="../_sources/book/{chapter}.ipynb"' in page, chapter
        served = (html_dir / "_sources" / "book" / f"{chapter}.ipynb").read_bytes()
        assert served == (REPO_ROOT / "book" / "notebooks" / f"{chapter}.ipynb").read_bytes(), chapter
        assert b"{glue:text}" not in served and b"myst_nb" not in served, chapter
