"""nbgrader in a cached virtual environment of its own, and a look into the gradebook it writes.

``tests/test_nbgrader.py`` gives the notebook edition (``book/notebooks/``) to nbgrader as an instructor
would. nbgrader pins its own Jupyter stack (nbconvert, jupyter_server, SQLAlchemy, alembic ...), so it
gets an environment of its own rather than the project's ``.venv``:

* :func:`ensure_venv` builds it once under ``_build/nbgrader-venv`` with :data:`NBGRADER_PIN` from the
  package index pip is configured with (this machine's mirror), and reuses it while the marker file
  inside it records the same pin and base interpreter; a changed pin rebuilds it. Use it inside
  ``with locked(venv):`` (``colab_env.locked``: two runs at once must not build it together);
* :func:`nbgrader_env` is the process environment to run its ``nbgrader`` in (its ``bin`` first on
  ``PATH``: nbgrader runs ``alembic`` from there when it opens the gradebook);
* ``python nbgrader_env.py gradebook COURSE_DIR COURSE_ID ASSIGNMENT``, run by the environment's Python,
  prints as JSON what nbgrader's own API (``nbgrader.api.Gradebook``) reads from the course's gradebook:
  the assignment's notebooks with their grade and solution cells, and every submission's grades.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from colab_env import locked  # a lock file beside the environment, as for the Colab stand-in

__all__ = ["NBGRADER_PIN", "NbgraderEnvError", "ensure_venv", "gradebook", "locked", "marker_text",
           "nbgrader_env"]

#: The nbgrader the test checks the edition against (0.9.6: nbformat 4.5 cell ids, schema 3 metadata).
NBGRADER_PIN = "nbgrader==0.9.6"

_MARKER = ".nbgrader-pin"


class NbgraderEnvError(RuntimeError):
    """The nbgrader environment could not be built (the message has the step and pip's output)."""


def _python(venv: Path) -> Path:
    return Path(venv) / "bin" / "python"


def marker_text() -> str:
    """What the marker file of an environment built now holds: the pin and the base interpreter."""
    base = f"{getattr(sys, '_base_executable', sys.executable)} {sys.version}"
    return f"{NBGRADER_PIN}\n{base}\n"


def _installed(venv: Path) -> bool:
    name, _, version = NBGRADER_PIN.partition("==")
    return any(Path(venv).glob(f"lib/python*/site-packages/{name}-{version}.dist-info"))


def _run(cmd: list[str], what: str, *, timeout: float) -> None:
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired) as err:
        raise NbgraderEnvError(f"{what} failed: {err}") from err
    if done.returncode != 0:
        raise NbgraderEnvError(f"{what} failed (exit {done.returncode}): {' '.join(cmd)}\n"
                               f"--- stdout ---\n{done.stdout[-3000:]}\n"
                               f"--- stderr ---\n{done.stderr[-3000:]}")


def ensure_venv(venv: Path) -> tuple[Path, bool]:
    """The environment at ``venv`` with :data:`NBGRADER_PIN` installed, built if missing or stale.

    Returns
    -------
    venv : Path
    built : bool
        True when this call (re)built it, False when the cached one was reused.

    Raises
    ------
    NbgraderEnvError
        Creating the environment or installing the pin failed, or the pin is not there afterwards.
    """
    venv = Path(venv)
    marker = venv / _MARKER
    current = marker.exists() and marker.read_text() == marker_text()
    if current and _python(venv).exists() and _installed(venv):
        return venv, False
    marker.unlink(missing_ok=True)  # a build that stops half-way leaves no marker, so the next one rebuilds
    _run([sys.executable, "-m", "venv", "--clear", str(venv)], f"creating the virtual environment {venv}",
         timeout=300)
    _run([str(_python(venv)), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-input",
          NBGRADER_PIN], f"installing {NBGRADER_PIN} from the package index into {venv}", timeout=1800)
    if not _installed(venv):
        raise NbgraderEnvError(f"pip finished, but {NBGRADER_PIN} is not what {venv} holds")
    marker.write_text(marker_text())
    return venv, True


def nbgrader_env(venv: Path) -> dict[str, str]:
    """This process's environment for running the ``nbgrader`` of ``venv``.

    Its ``bin`` comes first on ``PATH`` (nbgrader calls ``alembic`` by name), and no ``PYTHONPATH``,
    ``PYTHONHOME`` or ``VIRTUAL_ENV`` of the project's environment leaks in.
    """
    env = {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV"}}
    env["PATH"] = f"{Path(venv) / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    return env


def gradebook(course_dir: Path, course_id: str, assignment: str) -> dict:
    """What nbgrader's gradebook of ``course_dir`` holds about ``assignment`` (run in the environment).

    Returns
    -------
    dict
        ``{"notebooks": {notebook: {"grade_cells": [[name, cell_type, max_score], ...],
        "solution_cells": [name, ...]}}, "submissions": {student: {notebook: {"max_score", "score",
        "needs_manual_grade", "grades": [[name, auto_score, needs_manual_grade], ...]}}}}``
    """
    from nbgrader.api import Gradebook

    db_url = f"sqlite:///{Path(course_dir) / 'gradebook.db'}"
    with Gradebook(db_url, course_id) as gb:
        found = gb.find_assignment(assignment)
        notebooks = {nb.name: {"grade_cells": [[g.name, g.cell_type, g.max_score] for g in nb.grade_cells],
                               "solution_cells": [s.name for s in nb.solution_cells]}
                     for nb in found.notebooks}
        submissions = {
            sub.student_id: {
                nb.name: {"max_score": nb.max_score, "score": nb.score,
                          "needs_manual_grade": nb.needs_manual_grade,
                          "grades": [[g.name, g.auto_score, g.needs_manual_grade] for g in nb.grades]}
                for nb in sub.notebooks}
            for sub in gb.assignment_submissions(assignment)
        }
    return {"notebooks": notebooks, "submissions": submissions}


if __name__ == "__main__":
    if len(sys.argv) != 5 or sys.argv[1] != "gradebook":
        sys.exit("usage: nbgrader_env.py gradebook COURSE_DIR COURSE_ID ASSIGNMENT")
    print(json.dumps(gradebook(Path(sys.argv[2]), sys.argv[3], sys.argv[4])))
