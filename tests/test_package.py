"""attnlib as a package anyone can install: the wheel and sdist ``python -m build`` makes, checked.

The same function builds them here and in the book's build (``book/press/attnlib_wheel.py``, which
serves the wheel under ``<html>/attnlib/``); ``tests/browser/test_served_wheel.py`` installs the served
one into a clean environment and runs a chapter.
"""

from __future__ import annotations

import email
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

import attnlib
from press import attnlib_wheel

REPO_ROOT = Path(__file__).resolve().parents[1]


def _tree() -> set[str]:
    """Where a build in the checkout would leave files: build/, dist/, *.egg-info and attnlib's tree
    (other tests running beside this one may add other entries, such as .hypothesis)."""
    top = {p.name for p in REPO_ROOT.iterdir() if p.name in {"build", "dist"} or p.name.endswith(".egg-info")}
    return top | {str(p) for p in (REPO_ROOT / "attnlib").rglob("*") if "__pycache__" not in p.parts}


BEFORE = _tree()


@pytest.fixture(scope="module")
def dists(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return attnlib_wheel.build_distributions(tmp_path_factory.mktemp("dist"), REPO_ROOT)


@pytest.fixture(scope="module")
def metadata(dists: tuple[Path, Path]) -> email.message.Message:
    wheel, _ = dists
    with zipfile.ZipFile(wheel) as z:
        return email.message_from_bytes(z.read(f"attnlib-{attnlib.__version__}.dist-info/METADATA"))


def test_twine_accepts_the_wheel_and_the_sdist(dists: tuple[Path, Path]) -> None:
    run = subprocess.run([sys.executable, "-m", "twine", "check", "--strict", *map(str, dists)],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr


def test_the_version_is_written_once(metadata: email.message.Message) -> None:
    assert metadata["Name"] == "attnlib"
    assert metadata["Version"] == attnlib.__version__ == attnlib_wheel.version(REPO_ROOT)
    pyproject = (REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert 'dynamic = ["version"]' in pyproject and "\nversion = " not in pyproject.split("[tool.")[0]


def test_the_metadata_is_ready_to_publish(metadata: email.message.Message) -> None:
    assert metadata["License-Expression"] == "MIT"
    assert sorted(metadata.get_all("License-File") or []) == ["LICENSE", "LICENSE-text.md"]
    assert metadata["Requires-Python"] == ">=3.11"
    classifiers = metadata.get_all("Classifier") or []
    assert "Typing :: Typed" in classifiers and "Programming Language :: Python :: 3.11" in classifiers
    requires = metadata.get_all("Requires-Dist") or []
    assert any(r.startswith("numpy") for r in requires)
    assert any(r.startswith("plotly") and 'extra == "interactive"' in r for r in requires)
    assert metadata.get_payload().strip(), "no long description"


def test_the_wheel_holds_the_library_only(dists: tuple[Path, Path]) -> None:
    wheel, _ = dists
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
    tops = {n.split("/")[0] for n in names}
    assert tops == {"attnlib", f"attnlib-{attnlib.__version__}.dist-info"}, tops
    for needed in ("attnlib/py.typed", "attnlib/interactive/explorer.js", "attnlib/core.py",
                   "attnlib/reference.py"):
        assert needed in names, f"{needed} is not in the wheel"
    data = sorted(p.name for p in (REPO_ROOT / "attnlib" / "data").glob("*.json"))
    assert data and all(f"attnlib/data/{name}" in names for name in data)
    assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc")]
    modules = sorted(f"attnlib/{p.relative_to(REPO_ROOT / 'attnlib').as_posix()}"
                     for p in (REPO_ROOT / "attnlib").rglob("*.py") if "__pycache__" not in p.parts)
    missing = [m for m in modules if m not in names]
    assert not missing, f"modules of the checkout missing from the wheel: {missing}"


def test_the_sdist_holds_the_sources_and_licences(dists: tuple[Path, Path]) -> None:
    _, sdist = dists
    with tarfile.open(sdist) as t:
        names = {n.split("/", 1)[1] for n in t.getnames() if "/" in n}
    for needed in ("pyproject.toml", "LICENSE", "LICENSE-text.md", "README.md", "attnlib/__init__.py"):
        assert needed in names, f"{needed} is not in the sdist"
    assert not [n for n in names if n.startswith(("book/", "tests/", "bench/"))]


def test_building_leaves_the_checkout_clean(dists: tuple[Path, Path]) -> None:
    assert _tree() - BEFORE == set(), "building the distributions wrote into the checkout"
