"""The developer tools agree with make: pre-commit runs the Makefile's pinned tools on the right files."""

from __future__ import annotations

import re
import shlex
import subprocess
from pathlib import Path

import yaml

REPO_ROOT = Path(__file__).resolve().parents[1]


def _hooks() -> dict[str, dict]:
    config = yaml.safe_load((REPO_ROOT / ".pre-commit-config.yaml").read_text(encoding="utf-8"))
    return {hook["id"]: hook for repo in config["repos"] for hook in repo["hooks"]}


def _tracked() -> list[str]:
    run = subprocess.run(["git", "ls-files"], cwd=REPO_ROOT, capture_output=True, text=True, check=True)
    return run.stdout.split()


def test_each_hook_runs_a_tool_of_the_project_s_venv_on_files_that_exist() -> None:
    hooks = _hooks()
    assert set(hooks) == {"ruff", "mypy", "notebook-edition"}
    tracked = _tracked()
    for hook_id, hook in hooks.items():
        tool = shlex.split(hook["entry"])[0]
        assert tool.startswith(".venv/bin/"), f"{hook_id}: {tool} is not the pinned tool make uses"
        assert hook["language"] == "system"
        matched = [f for f in tracked if re.search(hook["files"], f)]
        assert matched, f"{hook_id}: its files pattern {hook['files']!r} matches no tracked file"


def test_the_hooks_check_what_make_checks() -> None:
    makefile = (REPO_ROOT / "Makefile").read_text(encoding="utf-8")
    lint = re.search(r"^lint:.*\n\t\$\(BIN\)/ruff check (.+)$", makefile, re.M)
    assert lint, "make lint runs no ruff check"
    hook = _hooks()["ruff"]
    for folder in lint.group(1).split():
        assert re.search(hook["files"], f"{folder}/x.py"), f"make lint checks {folder}, the hook does not"
    assert re.search(r"^typecheck:.*\n\t\$\(BIN\)/mypy$", makefile, re.M), "make typecheck runs no mypy"


def test_the_readme_layout_lists_every_module_and_nothing_gone() -> None:
    readme = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    layout = readme.split("## Layout", 1)[1].split("```", 2)[1]
    listed = set(re.findall(r"^\s*([\w.-]+\.(?:py|js))\s", layout, re.M))
    modules = {p.name for folder in ("attnlib", "book/press") for p in (REPO_ROOT / folder).rglob("*")
               if p.suffix in {".py", ".js"} and p.name != "__init__.py" and "__pycache__" not in p.parts}
    assert modules - listed == set(), f"modules missing from the README's layout: {sorted(modules - listed)}"
    assert listed - modules == set(), f"the README lists files that are gone: {sorted(listed - modules)}"
