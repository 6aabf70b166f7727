"""What Binder would build from this repository, read without Docker.

Binder runs repo2docker on the repository. Without ``runtime.txt`` it builds the newest Python that
``requires-python`` allows (3.14 when this test was written), while CI tests 3.11. ``repo2docker
--no-build --debug`` prints the Dockerfile it would build, so this test runs it on a fresh clone of the
committed repository (what Binder sees, not the working tree) and checks the Python version and that
``requirements.txt`` is what gets installed.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]

pytest.importorskip("repo2docker", reason="pip install -r requirements-test.txt (jupyter-repo2docker)")


@pytest.fixture(scope="module")
def dockerfile(tmp_path_factory: pytest.TempPathFactory) -> str:
    if shutil.which("git") is None or not (REPO_ROOT / ".git").exists():
        pytest.skip("needs git and a git checkout to clone what Binder would see")
    clone = tmp_path_factory.mktemp("binder") / "repo"
    subprocess.run(["git", "clone", "-q", str(REPO_ROOT), str(clone)], check=True, timeout=120)
    run = subprocess.run(
        [sys.executable, "-m", "repo2docker", "--no-build", "--no-run", "--debug", str(clone)],
        capture_output=True, text=True, timeout=120, cwd=clone.parent,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    return run.stdout + run.stderr


def test_runtime_txt_pins_python_3_11() -> None:
    assert (REPO_ROOT / "runtime.txt").read_text(encoding="utf-8").strip() == "python-3.11"


def test_binder_builds_python_3_11(dockerfile: str) -> None:
    versions = set(re.findall(r"python=(3\.\d+)", dockerfile))
    assert versions == {"3.11"}, f"repo2docker would build Python {versions or 'unknown'}"


def test_binder_installs_requirements_txt(dockerfile: str) -> None:
    assert re.search(r"COPY .*requirements\.txt", dockerfile), "requirements.txt is not copied into the image"
    installs = re.search(r"pip install .*-r \"?requirements\.txt\"?", dockerfile)
    assert installs, "requirements.txt is not installed"
