"""A stand-in for Colab's Python: a cached virtual environment, a git snapshot to install from, a kernel.

``tests/test_colab.py`` runs the notebook edition (``book/notebooks/``) as a Colab user meets it: in an
environment that holds only what Colab preinstalls that matters to the book, at Colab's versions
(:data:`COLAB_PINS`; ipywidgets 7, which Colab keeps on purpose, and no myst-nb or jupyter-book), in a
directory with nothing but the notebooks, where the first cell installs attnlib with ``%pip``. This
module makes the pieces:

* :func:`ensure_venv` builds the environment once under ``_build/colab-venv`` and reuses it while
  :data:`COLAB_PINS` and the base Python stay the same (it records a hash of both and the environment's
  ``pip freeze``, and rebuilds when either differs, for example after a run that changed a package);
* :func:`snapshot` copies the working tree (tracked files and untracked ones git does not ignore, so
  uncommitted changes are tested too) into a fresh git repository: the install cell's
  ``ATTNLIB_SOURCE=git+file://...`` stands in for the public ``git+https://...@tag``;
* :func:`write_kernel_spec` names the environment's Python as a Jupyter kernel;
* ``python colab_env.py execute NOTEBOOK OUTPUT KERNELS RESULT`` executes one notebook with nbclient (of
  the project's own venv) in that kernel, then runs :data:`PROBE` in the same kernel to report where
  attnlib was imported from and which versions were loaded; the test starts several of these at once.

Colab runs Python 3.13; this machine has 3.11, which every pin installs on. The rest of Colab's
packages are left to pip (the pins' own dependencies, at the mirror's newest versions).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

__all__ = [
    "COLAB_PINS",
    "KERNEL_NAME",
    "PROBE",
    "PROBE_MARK",
    "ColabEnvError",
    "ensure_venv",
    "freeze",
    "kernel_env",
    "locked",
    "pins_hash",
    "snapshot",
    "uninstall_attnlib",
    "write_kernel_spec",
]

#: What Colab preinstalls that the book touches, at Colab's versions (googlecolab/backend-info
#: ``pip-freeze.txt``, 2026-08-19; see shared/review/binder-colab-pdf.md, section 3). Each installs on
#: Python 3.11 from this machine's mirror.
COLAB_PINS: tuple[str, ...] = (
    "numpy==2.1.3",
    "matplotlib==3.10.0",
    "ipywidgets==7.7.1",
    "widgetsnbextension==3.6.10",
    "jupyterlab_widgets==3.0.16",
    "plotly==5.24.1",
    "ipykernel==6.17.1",
    "ipython==7.34.0",
    "jupyter_client==7.4.9",
    "threadpoolctl==3.6.0",
)

KERNEL_NAME = "colab-stand-in"
PROBE_MARK = "COLAB-STAND-IN-PROBE "

#: Run in each notebook's kernel after its last cell: where attnlib came from, and the versions of the
#: pinned packages both as installed (metadata) and as imported in this kernel (``__version__``).
PROBE = f"""\
import importlib.metadata as _md, importlib.util as _iu, json as _json, sys as _sys
import attnlib as _attnlib, ipykernel as _ipk, ipywidgets as _ipw, numpy as _np, plotly as _plotly
print({PROBE_MARK!r} + _json.dumps({{
    "attnlib_file": _attnlib.__file__,
    "executable": _sys.executable,
    "installed": {{_n: _md.version(_n) for _n in {[p.split("==")[0] for p in COLAB_PINS]!r}}},
    "imported": {{"ipywidgets": _ipw.__version__, "numpy": _np.__version__, "plotly": _plotly.__version__,
                  "ipykernel": _ipk.__version__}},
    "myst_nb_installed": _iu.find_spec("myst_nb") is not None,
}}))
"""

_STAMP = ".colab-pins.sha256"
_FREEZE = ".colab-freeze.txt"


class ColabEnvError(RuntimeError):
    """The Colab stand-in could not be built or prepared (the message says which step and why)."""


def _run(cmd: list[str], what: str, *, timeout: float = 900, **kwargs: object) -> str:
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, **kwargs)
    except (OSError, subprocess.TimeoutExpired) as err:
        raise ColabEnvError(f"{what} failed: {err}") from err
    if done.returncode != 0:
        raise ColabEnvError(
            f"{what} failed (exit {done.returncode}): {' '.join(cmd)}\n"
            f"--- stdout ---\n{done.stdout[-3000:]}\n--- stderr ---\n{done.stderr[-3000:]}"
        )
    return done.stdout


def pins_hash() -> str:
    """The cache key of the environment: :data:`COLAB_PINS` and the base interpreter it is built on."""
    base = f"{getattr(sys, '_base_executable', sys.executable)} {sys.version}"
    return hashlib.sha256("\n".join([*COLAB_PINS, base]).encode()).hexdigest()


def _python(venv: Path) -> Path:
    return venv / "bin" / "python"


def freeze(venv: Path) -> list[str]:
    """``pip freeze`` of ``venv``, sorted, one requirement a line."""
    out = _run([str(_python(venv)), "-m", "pip", "freeze", "--disable-pip-version-check"],
               f"pip freeze in {venv}", timeout=120)
    return sorted(line for line in out.splitlines() if line.strip())


def without_attnlib(lines: list[str]) -> list[str]:
    """``lines`` of :func:`freeze` without attnlib's (what the notebooks install)."""
    return [line for line in lines if not line.lower().startswith("attnlib")]


@contextlib.contextmanager
def locked(venv: Path) -> Iterator[None]:
    """Hold an exclusive lock on the environment ``venv`` (a file beside it) while using it.

    Two test runs at once must not build the same environment, nor remove the attnlib that the other
    one's notebooks are importing.
    """
    path = Path(venv).with_name(Path(venv).name + ".lock")
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def uninstall_attnlib(venv: Path) -> None:
    """Remove any attnlib a previous run installed, so the notebooks' install cell really installs."""
    _run([str(_python(venv)), "-m", "pip", "uninstall", "--yes", "--quiet", "attnlib"],
         f"pip uninstall attnlib in {venv}", timeout=120)


def _build(venv: Path) -> None:
    _run([sys.executable, "-m", "venv", "--clear", str(venv)], f"creating the virtual environment {venv}")
    _run([str(_python(venv)), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
          *COLAB_PINS],
         "installing Colab's packages (COLAB_PINS) from the package index into the stand-in environment",
         timeout=1800)
    # Build matplotlib's font cache now, not in the first notebook of every cold run.
    _run([str(_python(venv)), "-c", "import matplotlib.pyplot"], "importing matplotlib in the stand-in")


def ensure_venv(venv: Path) -> tuple[Path, bool]:
    """The Colab stand-in at ``venv``, built if missing or stale; attnlib not installed.

    Call it, and use the environment, inside ``with locked(venv):``.

    Returns
    -------
    venv : Path
    built : bool
        True when this call (re)built it, False when the cached one was reused.

    Raises
    ------
    ColabEnvError
        A step failed (the message has pip's output), or a pin did not install at its version.
    """
    venv = Path(venv)
    key = pins_hash()
    stamp, recorded = venv / _STAMP, venv / _FREEZE
    built = False
    reusable = (_python(venv).exists() and stamp.exists() and recorded.exists()
                and stamp.read_text().strip() == key)
    if reusable:
        uninstall_attnlib(venv)
        reusable = freeze(venv) == recorded.read_text().splitlines()  # nothing changed since the build
    if not reusable:
        stamp.unlink(missing_ok=True)
        _build(venv)
        built = True
    installed = freeze(venv)
    normalised = {line.lower().replace("_", "-") for line in installed}
    missing = [pin for pin in COLAB_PINS if pin.lower().replace("_", "-") not in normalised]
    if missing:
        raise ColabEnvError(f"the stand-in environment {venv} lacks {missing}; pip freeze: {installed}")
    if built:
        recorded.write_text("\n".join(installed) + "\n")
        stamp.write_text(key + "\n")
    return venv, built


def snapshot(repo_root: Path, dest: Path) -> tuple[Path, str]:
    """A git repository at ``dest`` holding ``repo_root``'s working tree in one commit.

    The files are the tracked ones that exist plus the untracked ones git does not ignore
    (``git ls-files -co --exclude-standard``), so uncommitted changes are installed too; in a clean
    clone (CI) it equals HEAD.

    Returns
    -------
    dest : Path
    commit : str
        The snapshot's commit hash (pip records it in ``pip freeze``).
    """
    repo_root, dest = Path(repo_root), Path(dest)
    if shutil.which("git") is None:
        raise ColabEnvError("git is not on PATH: the snapshot and the notebooks' git+file:// install need it")
    listing = _run(["git", "-C", str(repo_root), "ls-files", "-z", "-co", "--exclude-standard"],
                   f"listing the files of {repo_root} (it must be a git checkout)", timeout=60)
    dest.mkdir(parents=True)
    for rel in sorted(set(filter(None, listing.split("\0")))):
        src = repo_root / rel
        if not src.exists() and not src.is_symlink():  # deleted in the working tree, not yet in git
            continue
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, target, follow_symlinks=False)
    git = ["git", "-C", str(dest), "-c", "user.name=colab test", "-c", "user.email=colab-test@localhost",
           "-c", "commit.gpgsign=false", "-c", "init.defaultBranch=main"]
    _run([*git, "init", "-q"], "git init of the snapshot", timeout=60)
    _run([*git, "add", "-A"], "git add of the snapshot", timeout=120)
    _run([*git, "commit", "-q", "--no-verify", "-m", "working tree snapshot"], "git commit of the snapshot",
         timeout=120)
    commit = _run([*git, "rev-parse", "HEAD"], "git rev-parse of the snapshot", timeout=60).strip()
    return dest, commit


def write_kernel_spec(venv: Path, jupyter_dir: Path) -> Path:
    """A kernel spec named :data:`KERNEL_NAME` under ``jupyter_dir/kernels`` running ``venv``'s Python.

    The absolute path matters: jupyter_client replaces a bare ``python`` in a spec by its own
    interpreter, which would be the project's venv, not the stand-in. Put ``jupyter_dir`` on
    ``JUPYTER_PATH`` (see :func:`kernel_env`).
    """
    spec_dir = Path(jupyter_dir) / "kernels" / KERNEL_NAME
    spec_dir.mkdir(parents=True, exist_ok=True)
    spec = {
        "argv": [str(_python(venv)), "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "Python 3 (Colab stand-in)",
        "language": "python",
    }
    (spec_dir / "kernel.json").write_text(json.dumps(spec, indent=1))
    return spec_dir


def kernel_env(venv: Path, jupyter_dir: Path, ipython_dir: Path, source: str) -> dict[str, str]:
    """The environment of the executing process and so of its kernel.

    No ``PYTHONPATH`` or ``VIRTUAL_ENV`` (the checkout must not be importable), the stand-in's ``bin``
    first on ``PATH``, an empty IPython profile directory (no startup files of this machine), the kernel
    spec's directory on ``JUPYTER_PATH``, ``ATTNLIB_SOURCE`` for the install cell, and one BLAS thread
    per kernel (the notebooks run two at a time on two cores).
    """
    env = {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME"}}
    env.update({
        "PATH": f"{Path(venv) / 'bin'}{os.pathsep}{env.get('PATH', '')}",
        "JUPYTER_PATH": str(jupyter_dir),
        "IPYTHONDIR": str(ipython_dir),
        "ATTNLIB_SOURCE": source,
        "PYDEVD_DISABLE_FILE_VALIDATION": "1",  # debugpy's frozen-modules note on Python 3.11
        # Two kernels share two cores: one BLAS thread each. With OpenBLAS's default (a thread per core)
        # they oversubscribe the cores, and the timing-heavy chapters took 2-7 times as long.
        "OPENBLAS_NUM_THREADS": "1",
    })
    return env


# --------------------------------------------------------------------------- executing one notebook
def _execute(notebook: Path, output: Path, result: Path, timeout: int) -> None:
    """Run ``notebook`` in the stand-in kernel (cwd = its folder), then :data:`PROBE`; write both out."""
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError, CellTimeoutError, DeadKernelError

    nb = nbformat.read(notebook, as_version=4)
    for cell in nb.cells:  # only this run's outputs, even in cells after a failure
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    nb.metadata.pop("widgets", None)
    n_cells = len(nb.cells)
    nb.cells.append(nbformat.v4.new_code_cell(PROBE))
    client = NotebookClient(nb, kernel_name=KERNEL_NAME, timeout=timeout, startup_timeout=120,
                            resources={"metadata": {"path": str(notebook.parent)}})
    started, error = time.monotonic(), None
    try:
        client.execute()
    except (CellExecutionError, CellTimeoutError, DeadKernelError) as err:
        error = f"{type(err).__name__}: {err}"
    seconds = time.monotonic() - started
    probe_cell = nb.cells.pop()
    assert len(nb.cells) == n_cells
    probe = None
    for out in probe_cell.get("outputs", []):
        for line in str(out.get("text", "")).splitlines():
            if line.startswith(PROBE_MARK):
                probe = json.loads(line[len(PROBE_MARK):])
    nbformat.write(nb, output)
    result.write_text(json.dumps({"notebook": notebook.name, "error": error, "probe": probe,
                                  "seconds": round(seconds, 1)}))


if __name__ == "__main__":
    if len(sys.argv) != 6 or sys.argv[1] != "execute":
        sys.exit("usage: colab_env.py execute NOTEBOOK OUTPUT RESULT CELL_TIMEOUT_SECONDS")
    _execute(Path(sys.argv[2]), Path(sys.argv[3]), Path(sys.argv[4]), int(sys.argv[5]))
