"""The notebook edition as a Colab user meets it: Colab's packages, an empty folder, an install cell.

A virtual environment holds only what Colab preinstalls that matters to the book, at Colab's versions
(``tests/reproducibility/colab_env.py``: ipywidgets 7.7.1, Plotly 5.24.1, ipykernel 6.17.1, numpy
2.1.3, ...; no myst-nb, no jupyter-book, no attnlib). It is built once under ``_build/colab-venv`` and
reused while its pins stay the same. Each run

1. removes any attnlib from it, and snapshots the working tree into a git repository standing in for
   the public one (``ATTNLIB_SOURCE=git+file://localhost/...``, read by the first cell of every
   notebook; uncommitted changes are included, and in a clean clone it is HEAD);
2. copies ``book/notebooks/*.ipynb`` into an empty folder outside the checkout (``content/``, as
   Colab's working directory is called) and executes each top to bottom in that environment's kernel:
   the first notebook alone (its first cell installs ``attnlib[interactive]``), then the others two at
   a time (attnlib is there by then, so their install cells do nothing);
3. checks that no cell failed and no output shows an error or writes to stderr, that the install left
   Colab's packages as they were (pip upgraded and added nothing), that attnlib came from the snapshot,
   not from the checkout, and that every live explorer displayed as an ipywidgets 7 widget (a view whose
   model the kernel created), not as its text fallback.

On a 2-core machine a run takes about a minute with the environment cached, 2 to 3 minutes when it is
built (``_build/colab-venv.timings.json`` keeps the last run's time per notebook; the longest start
first).

When the environment cannot be built, the tests fail with pip's message (they are never skipped).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import colab_env
import nbformat
import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
EDITION = REPO_ROOT / "book" / "notebooks"
HELPER = REPO_ROOT / "tests" / "reproducibility" / "colab_env.py"
VENV = REPO_ROOT / "_build" / "colab-venv"
TIMINGS = REPO_ROOT / "_build" / "colab-venv.timings.json"  # seconds per notebook, last run

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
LIVE_MARK = "attnlib.interactive.live"  # the metadata LiveExplorer puts on its outputs
CELL_TIMEOUT = 600  # seconds for one cell; the install cell builds attnlib from git
PARALLEL = 2  # notebooks at once (the machine has 2 cores)
SCRIPT = re.compile(r"<script\b[^>]*>.*?</script>", re.S | re.I)
ERROR_TEXT = re.compile(r"Traceback \(most recent call last\)|\b[A-Za-z]*Error\b|\bERROR\b|_repr_mimebundle_")


@dataclass
class ColabRun:
    """What one run of the edition in the stand-in left behind."""

    venv: Path
    content: Path
    commit: str
    freeze_before: list[str]
    freeze_after: list[str] = field(default_factory=list)
    executed: dict[str, nbformat.NotebookNode] = field(default_factory=dict)
    results: dict[str, dict[str, Any]] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)


def _execute(notebook: Path, env: dict[str, str], work: Path) -> tuple[nbformat.NotebookNode, dict[str, Any]]:
    out, result = work / f"{notebook.stem}.executed.ipynb", work / f"{notebook.stem}.result.json"
    run = subprocess.run(
        [sys.executable, str(HELPER), "execute", str(notebook), str(out), str(result), str(CELL_TIMEOUT)],
        env=env, capture_output=True, text=True, timeout=CELL_TIMEOUT * 3,
    )
    if run.returncode != 0 or not result.exists():
        raise AssertionError(f"executing {notebook.name} crashed (exit {run.returncode}):\n"
                             + run.stderr[-4000:])
    return nbformat.read(out, as_version=4), json.loads(result.read_text())


def _source_url(repo: Path) -> str:
    """The pip URL of the snapshot, standing in for ``git+https://host/owner/repo.git@tag``.

    ``file://localhost/path`` rather than ``file:///path``: the pip of a fresh Python 3.11 venv (23.2)
    rejects a requirement URL with an empty host ("Invalid URL"); newer pips accept both.
    """
    return f"git+file://localhost{repo}"


@pytest.fixture(scope="module")
def colab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ColabRun]:
    notebooks = sorted(EDITION.glob("*.ipynb"))
    assert notebooks, f"no notebook edition in {EDITION} (make edition writes it)"
    root = tmp_path_factory.mktemp("colab")
    assert not root.resolve().is_relative_to(REPO_ROOT), "the notebooks must run outside the checkout"
    with colab_env.locked(VENV):  # held until this module's tests are done
        started = time.monotonic()
        try:
            venv, built = colab_env.ensure_venv(VENV)  # also removes a previous run's attnlib
            source_repo, commit = colab_env.snapshot(REPO_ROOT, root / "attnlib-source")
            freeze_before = colab_env.freeze(venv)
        except colab_env.ColabEnvError as err:
            pytest.fail(f"the Colab stand-in could not be prepared:\n{err}", pytrace=False)
        ready = time.monotonic()
        content = root / "content"  # empty but for the notebooks, as Colab's working directory
        content.mkdir()
        for nb in notebooks:
            shutil.copy(nb, content)
        work = root / "work"
        (work / "ipython").mkdir(parents=True)
        colab_env.write_kernel_spec(venv, work / "jupyter")
        env = colab_env.kernel_env(venv, work / "jupyter", work / "ipython", _source_url(source_repo))
        run = ColabRun(venv=venv, content=content, commit=commit, freeze_before=freeze_before)
        copies = [content / nb.name for nb in notebooks]

        def one(path: Path) -> None:
            run.executed[path.name], run.results[path.name] = _execute(path, env, work)

        one(copies[0])  # installs attnlib; the others then find it
        # Longest first (as the previous run measured them), so two long notebooks do not run last.
        last = json.loads(TIMINGS.read_text()) if TIMINGS.exists() else {}
        rest = sorted(copies[1:], key=lambda path: -float(last.get(path.name, 0.0)))
        with ThreadPoolExecutor(max_workers=PARALLEL) as pool:
            list(pool.map(one, rest))
        run.freeze_after = colab_env.freeze(venv)
        run.seconds = {"environment": ready - started, "run": time.monotonic() - ready,
                       **{name: r["seconds"] for name, r in run.results.items()}}
        TIMINGS.write_text(json.dumps({name: r["seconds"] for name, r in run.results.items()}, indent=1))
        print(f"\nColab stand-in: environment {'built' if built else 'cached'} in {ready - started:.0f} s; "
              f"notebooks {run.seconds['run']:.0f} s: "
              + ", ".join(f"{name} {r['seconds']:.0f} s" for name, r in run.results.items()))
        yield run


def _outputs(nb: nbformat.NotebookNode) -> list[tuple[int, dict[str, Any]]]:
    return [(i, out) for i, cell in enumerate(nb.cells) if cell.cell_type == "code" for out in cell.outputs]


def _is_live(out: dict[str, Any]) -> bool:
    text = out.get("data", {}).get("text/plain", "")
    return LIVE_MARK in out.get("metadata", {}) or str(text).startswith("<live explorer")


# --------------------------------------------------------------------------- the environment
def _norm(requirement: str) -> str:
    return requirement.lower().replace("_", "-")


def test_the_stand_in_has_colabs_packages_and_no_book_tooling(colab: ColabRun) -> None:
    installed = {_norm(line) for line in colab.freeze_before}
    missing = [pin for pin in colab_env.COLAB_PINS if _norm(pin) not in installed]
    assert not missing, f"not in the stand-in at Colab's version: {missing}; freeze: {colab.freeze_before}"
    names = {line.split("==")[0].split(" @ ")[0] for line in installed}
    for absent in ("attnlib", "myst-nb", "jupyter-book"):
        assert absent not in names, f"{absent} must not be installed before the notebooks run"


# --------------------------------------------------------------------------- running
def test_every_notebook_runs_top_to_bottom(colab: ColabRun) -> None:
    failed = {name: r["error"] for name, r in colab.results.items() if r["error"]}
    assert not failed, "\n\n".join(f"{name}:\n{error[-3000:]}" for name, error in failed.items())
    assert set(colab.results) == {p.name for p in EDITION.glob("*.ipynb")}


def test_no_output_shows_an_error(colab: ColabRun) -> None:
    found = []
    for name, nb in colab.executed.items():
        for i, out in _outputs(nb):
            if out.output_type == "error":
                found.append(f"{name} cell {i}: {out.ename}: {out.evalue}")
                continue
            texts = [out.get("text", "")] if out.output_type == "stream" else [
                SCRIPT.sub("", str(v)) if k == "text/html" else v  # a reader sees no script's source
                for k, v in out.get("data", {}).items() if k.startswith("text/")]
            for text in map(str, texts):
                match = ERROR_TEXT.search(text)
                if match:
                    shown = text[max(0, match.start() - 200):][:600]
                    found.append(f"{name} cell {i} ({out.output_type}): …{shown}")
    assert not found, "\n".join(found)


def test_no_cell_writes_to_stderr(colab: ColabRun) -> None:
    """A warning under Colab's versions (Plotly 5 on an option it does not know, ...) shows to readers."""
    found = []
    for name, nb in colab.executed.items():
        install_cell = next(i for i, cell in enumerate(nb.cells) if cell.cell_type == "code")
        for i, out in _outputs(nb):
            if i != install_cell and out.output_type == "stream" and out.name == "stderr":
                found.append(f"{name} cell {i}: {out.text.strip()[:300]}")
    assert not found, "\n".join(found)


# --------------------------------------------------------------------------- installing
def test_install_cell_installed_attnlib_from_the_source(colab: ColabRun) -> None:
    installed = [line for line in colab.freeze_after if line.lower().startswith("attnlib")]
    assert installed, "no attnlib in the stand-in after the run: the install cell did not install it"
    source = _source_url(colab.content.parent / "attnlib-source")
    assert installed == [f"attnlib @ {source}@{colab.commit}"], (
        f"attnlib must come from the snapshot commit {colab.commit}: {installed}"
    )
    site = colab.venv / "lib"
    for name, result in colab.results.items():
        probe = result["probe"]
        assert probe is not None, f"{name}: the probe after the last cell did not run"
        attnlib_file = Path(probe["attnlib_file"])
        assert attnlib_file.is_relative_to(site), f"{name}: attnlib imported from {attnlib_file}, not {site}"
        assert not attnlib_file.resolve().is_relative_to(REPO_ROOT / "attnlib"), f"{name}: from the checkout"
        assert Path(probe["executable"]).parent == colab.venv / "bin", probe["executable"]
        assert probe["myst_nb_installed"] is False, f"{name}: myst-nb is installed in the stand-in"


def test_install_changed_none_of_colabs_packages(colab: ColabRun) -> None:
    before = colab_env.without_attnlib(colab.freeze_before)
    after = colab_env.without_attnlib(colab.freeze_after)
    assert after == before, (
        "installing attnlib changed Colab's packages: "
        f"removed {sorted(set(before) - set(after))}, added {sorted(set(after) - set(before))}"
    )
    pins = dict(pin.split("==") for pin in colab_env.COLAB_PINS)
    for name, result in colab.results.items():
        probe = result["probe"]
        assert probe is not None, f"{name}: the probe after the last cell did not run"
        assert probe["installed"] == pins, f"{name}: installed versions {probe['installed']}"
        for module in ("ipywidgets", "numpy", "plotly", "ipykernel"):
            assert probe["imported"][module] == pins[module], (
                f"{name}: the kernel imported {module} {probe['imported'][module]}, Colab has {pins[module]}"
            )


# --------------------------------------------------------------------------- live explorers
def test_live_explorers_display_as_ipywidgets_7_widgets(colab: ColabRun) -> None:
    expected = {(name, i) for name in colab.executed for i, out in _outputs(nbformat.read(EDITION / name, 4))
                if _is_live(out)}
    seen = set()
    for name, nb in colab.executed.items():
        state = nb.metadata.get("widgets", {}).get(WIDGET_STATE, {}).get("state", {})
        for i, out in _outputs(nb):
            if not _is_live(out):
                continue
            seen.add((name, i))
            data = out.get("data", {})
            view = data.get(WIDGET_VIEW)
            assert view and view.get("model_id"), (
                f"{name} cell {i}: a live explorer shown without its widget view (the text fallback): {data}"
            )
            model = state.get(view["model_id"])
            assert model is not None, f"{name} cell {i}: widget model {view['model_id']} was never created"
            assert model["model_name"] == "VBoxModel", model["model_name"]
            assert model["model_module_version"] == "1.5.0", (  # @jupyter-widgets/controls of ipywidgets 7.5+
                f"{name} cell {i}: not an ipywidgets 7 widget ({model['model_module_version']})"
            )
            assert "attnlib-live-note" in data.get("text/html", ""), f"{name} cell {i}: no note for the book"
    assert seen, "no live explorer in the notebook edition was displayed"
    assert expected <= seen, f"live explorers of the edition not displayed: {sorted(expected - seen)}"
