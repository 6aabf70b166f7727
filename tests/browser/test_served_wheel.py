"""The built book serves attnlib: a reader with only the website installs it and runs a chapter.

``book/press/attnlib_wheel.py`` writes the wheel and the sdist into ``<html>/attnlib/`` and links every
page's footer (and the introduction's "How to run it") to the wheel. These tests read the built site:

* the wheel there holds exactly this checkout's attnlib, with its licences and data;
* the introduction and every chapter link to it, and the link resolves to that file;
* a clean environment (the Colab stand-in of ``tests/test_colab.py``, attnlib removed) runs chapter 1 of
  the notebook edition whose install cell names an unreachable repository first and the site's wheel
  second, served over HTTP: the install cell falls back to the wheel, installs it, and every cell runs.
"""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path
from urllib.parse import unquote, urljoin, urlparse

import colab_env
import nbformat
import pytest
from bs4 import BeautifulSoup

from press import attnlib_wheel, notebook_edition

REPO_ROOT = Path(__file__).resolve().parents[2]

WHEEL = attnlib_wheel.wheel_name(REPO_ROOT)
VENV = REPO_ROOT / "_build" / "colab-venv"
CHAPTER = "01_why_attention.ipynb"
CELL_TIMEOUT = 600


def _chapter_pages() -> list[str]:
    chapters = sorted((REPO_ROOT / "book").glob("0[1-9]_*.ipynb"))
    return ["book/intro.html"] + [f"book/{p.stem}.html" for p in chapters]


def _sources() -> dict[str, bytes]:
    """attnlib's files in the checkout, as the wheel names them."""
    root = REPO_ROOT / "attnlib"
    return {f"attnlib/{p.relative_to(root).as_posix()}": p.read_bytes() for p in root.rglob("*")
            if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"}


def test_the_site_serves_this_checkout_s_wheel_and_sdist(html_dir: Path) -> None:
    wheel = html_dir / attnlib_wheel.DIST_DIR / WHEEL
    assert wheel.is_file(), f"the built book serves no {wheel.relative_to(html_dir)}"
    sdist = html_dir / attnlib_wheel.DIST_DIR / f"attnlib-{attnlib_wheel.version(REPO_ROOT)}.tar.gz"
    assert sdist.is_file(), f"the built book serves no {sdist.relative_to(html_dir)}"
    with zipfile.ZipFile(wheel) as z:
        packaged = {n: z.read(n) for n in z.namelist() if n.startswith("attnlib/")}
        names = z.namelist()
    sources = _sources()
    assert sorted(packaged) == sorted(sources), (
        f"missing from the wheel: {sorted(set(sources) - set(packaged))}; "
        f"not in the checkout: {sorted(set(packaged) - set(sources))}"
    )
    stale = [n for n in sources if packaged[n] != sources[n]]
    assert not stale, f"the served wheel is not this checkout's attnlib: {stale}"
    dist_info = f"attnlib-{attnlib_wheel.version(REPO_ROOT)}.dist-info"
    for licence in ("LICENSE", "LICENSE-text.md"):
        assert f"{dist_info}/licenses/{licence}" in names, f"{licence} is not in the wheel"


@pytest.mark.parametrize("page", _chapter_pages())
def test_the_page_links_to_the_served_wheel(html_dir: Path, page: str) -> None:
    soup = BeautifulSoup((html_dir / page).read_text(encoding="utf-8"), "html.parser")
    links = [a for a in soup.select("a[href]") if a["href"].endswith(".whl")]
    footer = [a for a in links if a.find_parent(class_="attnlib-wheel")]
    assert footer, f"{page}: no link to attnlib's wheel in the footer"
    if page == "book/intro.html":
        in_text = [a for a in links if "attnlib-wheel-link" in (a.get("class") or [])]
        assert in_text, "intro: no link to the wheel in the text"
    for a in links:
        target = unquote(urlparse(urljoin(f"http://book/{page}", a["href"])).path).lstrip("/")
        assert (html_dir / target).is_file(), f"{page}: {a['href']} resolves to {target}, not in the site"
        assert target.endswith(f"/{WHEEL}"), f"{page}: links to {target}, not to {WHEEL}"


def test_a_clean_environment_installs_the_served_wheel_and_runs_a_chapter(
    base_url: str, tmp_path: Path
) -> None:
    site_wheel = f"{base_url}/{attnlib_wheel.DIST_DIR}/{WHEEL}"
    unreachable = f"git+file://{tmp_path / 'no-such-repository'}.git@v0"
    nb = nbformat.read(REPO_ROOT / notebook_edition.OUT_DIR / CHAPTER, as_version=4)
    nb.cells[0] = notebook_edition.install_cell([unreachable, site_wheel], WHEEL, site_wheel)
    content = tmp_path / "content"
    content.mkdir()
    notebook = content / CHAPTER
    nbformat.write(nb, notebook)
    with colab_env.locked(VENV):
        try:
            venv, _ = colab_env.ensure_venv(VENV)  # also removes a previous run's attnlib
        except colab_env.ColabEnvError as err:
            pytest.fail(f"the clean environment could not be built: {err}", pytrace=False)
        try:
            colab_env.write_kernel_spec(venv, tmp_path / "jupyter")
            env = colab_env.kernel_env(venv, tmp_path / "jupyter", tmp_path / "ipython", "")
            out, result = tmp_path / "executed.ipynb", tmp_path / "result.json"
            run = subprocess.run(
                [sys.executable, str(colab_env.__file__), "execute", str(notebook), str(out), str(result),
                 str(CELL_TIMEOUT)],
                env=env, capture_output=True, text=True, timeout=CELL_TIMEOUT * 3,
            )
            assert run.returncode == 0, run.stderr[-3000:]
            report = json.loads(result.read_text())
            installed = [line for line in colab_env.freeze(venv) if line.lower().startswith("attnlib")]
        finally:
            colab_env.uninstall_attnlib(venv)
    assert report["error"] is None, f"{CHAPTER} stopped: {report['error'][:3000]}"
    assert [line.split("#sha256=")[0] for line in installed] == [f"attnlib @ {site_wheel}"], (
        f"attnlib came from {installed}, not the site's wheel")
    probe = report["probe"]
    assert Path(probe["attnlib_file"]).is_relative_to(venv / "lib"), probe["attnlib_file"]
    executed = nbformat.read(out, as_version=4)
    stored = nbformat.read(REPO_ROOT / notebook_edition.OUT_DIR / CHAPTER, as_version=4)
    ran = [c for c in executed.cells[1:] if c.cell_type == "code"]
    assert len(ran) == len([c for c in stored.cells[1:] if c.cell_type == "code"])
    assert all(c.execution_count for c in ran), "a cell of the chapter did not run"
