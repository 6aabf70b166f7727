"""Every page of the built book names its licences and its edition (book/press/edition.py).

The footer must say that the text is CC BY 4.0 and the code MIT (linking both), and give the attnlib
version, the git commit of the build and the build date, so a saved or printed page can be traced to
the text it is. Checked on the built HTML of every page of the toc, and on the footer function itself.
"""

from __future__ import annotations

import datetime as dt
import re
import subprocess
from importlib import metadata
from pathlib import Path

import pytest

from press import edition

REPO_ROOT = Path(__file__).resolve().parents[2]

FOOTER = re.compile(r'<p class="attnlib-edition">(.*?)</p>', re.DOTALL)
COMMIT = re.compile(r"commit <code>([0-9a-f]{7,40}\+?|unknown)</code>")
BUILT = re.compile(r"built (\d{4}-\d{2}-\d{2})\.")


def test_every_page_of_the_toc_shows_licences_and_edition(html_dir: Path, toc_pages: list[str]) -> None:
    version = metadata.version("attnlib")
    today = dt.datetime.now(dt.UTC).date()
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO_ROOT, capture_output=True, text=True)
    assert toc_pages, "no pages in the toc"
    for rel in toc_pages:
        footers = FOOTER.findall((html_dir / rel).read_text(encoding="utf-8"))
        assert len(footers) == 1, f"{rel}: {len(footers)} edition footers"
        (footer,) = footers
        for needed in (
            'href="https://creativecommons.org/licenses/by/4.0/">CC BY 4.0</a>',
            'href="https://opensource.org/license/mit">MIT</a>',
            f"attnlib {version},",
        ):
            assert needed in footer, f"{rel}: footer lacks {needed!r}: {footer}"
        commit = COMMIT.search(footer)
        assert commit, f"{rel}: no commit in {footer}"
        if head.returncode == 0:  # built from this checkout: the commit is HEAD's
            assert head.stdout.strip().startswith(commit.group(1).rstrip("+")), (commit.group(1), head.stdout)
        built = BUILT.search(footer)
        assert built, f"{rel}: no build date in {footer}"
        age = (today - dt.date.fromisoformat(built.group(1))).days
        assert age in (0, 1), f"{rel}: built {built.group(1)}, {age} days before the test"


def test_footer_text_and_escaping() -> None:
    html = edition.edition_footer("1.2<3", "abc1234+", dt.date(2026, 11, 25))
    assert "attnlib 1.2&lt;3" in html and "<code>abc1234+</code>" in html and "built 2026-11-25." in html
    assert "CC BY 4.0" in html and ">MIT</a>" in html


def test_commit_outside_a_checkout_is_unknown(tmp_path: Path) -> None:
    assert edition._commit(tmp_path) == "unknown"


@pytest.mark.parametrize("name", ["LICENSE", "LICENSE-text.md"])
def test_licence_files_exist(name: str) -> None:
    text = (REPO_ROOT / name).read_text(encoding="utf-8")
    assert ("MIT License" in text) if name == "LICENSE" else ("CC BY 4.0" in text and "legalcode" in text)
