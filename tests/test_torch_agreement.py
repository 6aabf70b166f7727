"""attnlib/data/torch_agreement.json: the attnlib-vs-PyTorch figures the book quotes without torch.

The JSON is written by bench/torch_agreement.py. Always: it is well-formed, covers at least 200
cases, and its maxima lie below the tolerances that tests/test_torch_crosscheck.py asserts. With
torch installed: the script's computation, rerun here, gives maxima of the same order of magnitude
(not bitwise equal: another CPU or BLAS rounds differently), and its cases are the cross-check's.
"""

from __future__ import annotations

import importlib.util
import json
import math
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
JSON_PATH = ROOT / "attnlib" / "data" / "torch_agreement.json"
SCRIPT = ROOT / "bench" / "torch_agreement.py"
TOLERANCE = {"float32": 1e-5, "float64": 1e-12}  # as asserted by tests/test_torch_crosscheck.py
DTYPES = ("float32", "float64")


def _load_module(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None, f"cannot load {path}"
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def data() -> dict:
    assert JSON_PATH.exists(), f"{JSON_PATH} is missing; run: python bench/torch_agreement.py"
    return json.loads(JSON_PATH.read_text(encoding="utf-8"))


def test_json_is_well_formed(data):
    expected = {"description", "torch_version", "numpy_version", "n_cases", "max_abs_diff", "tolerance",
                "fully_masked_row"}
    assert set(data) == expected, f"keys {sorted(data)}, expected {sorted(expected)}"
    assert isinstance(data["torch_version"], str) and data["torch_version"][0].isdigit()
    for key in ("n_cases", "max_abs_diff", "tolerance"):
        assert set(data[key]) == set(DTYPES), f"{key} should have one entry per dtype: {data[key]}"
    assert all(isinstance(data["n_cases"][k], int) and data["n_cases"][k] > 0 for k in DTYPES)
    assert sum(data["n_cases"].values()) >= 200, f"only {data['n_cases']} cases"
    for k in DTYPES:
        value = data["max_abs_diff"][k]
        assert isinstance(value, float) and math.isfinite(value) and value >= 0.0, f"{k}: {value!r}"
    assert data["tolerance"] == TOLERANCE
    assert set(data["fully_masked_row"]) == {"attnlib", "torch"}
    assert data["fully_masked_row"]["attnlib"] == "zeros"


def test_json_maxima_are_below_the_cross_check_tolerances(data):
    for k in DTYPES:
        assert data["max_abs_diff"][k] < TOLERANCE[k], f"{k}: {data['max_abs_diff'][k]} >= {TOLERANCE[k]}"


def test_json_is_written_deterministically(data):
    # No date, sorted keys, 3 significant digits: the script's own serialisation of the same data.
    text = JSON_PATH.read_text(encoding="utf-8")
    assert text == json.dumps(data, indent=2, sort_keys=True) + "\n"
    for k in DTYPES:
        value = data["max_abs_diff"][k]
        assert value == float(f"{value:.3g}")


def _same_order_of_magnitude(a: float, b: float, floor: float) -> bool:
    a, b = max(a, floor), max(b, floor)
    return abs(math.log10(a) - math.log10(b)) <= 1.0


def test_rerun_with_torch_agrees_with_the_json(data):
    torch = pytest.importorskip("torch", reason="torch not installed; the JSON was checked without it")
    script = _load_module(SCRIPT, "torch_agreement_script")
    fresh = script.compute()
    assert fresh["n_cases"] == data["n_cases"]
    assert fresh["torch_version"] == torch.__version__
    for k in DTYPES:
        floor = float(np.finfo(k).eps)  # a maximum of 0 and one of a few ulps are the same story
        assert fresh["max_abs_diff"][k] < TOLERANCE[k]
        assert _same_order_of_magnitude(fresh["max_abs_diff"][k], data["max_abs_diff"][k], floor), (
            f"{k}: rerun gives {fresh['max_abs_diff'][k]:.3g}, the JSON says {data['max_abs_diff'][k]:.3g}; "
            "if torch or attnlib changed, rerun python bench/torch_agreement.py"
        )
    assert fresh["fully_masked_row"]["attnlib"] == "zeros"
    if data["torch_version"] == torch.__version__:
        assert fresh["fully_masked_row"] == data["fully_masked_row"]


def test_script_cases_are_the_cross_checks():
    pytest.importorskip("torch", reason="the cross-check module needs torch to import")
    script = _load_module(SCRIPT, "torch_agreement_script_cases")
    crosscheck = _load_module(ROOT / "tests" / "test_torch_crosscheck.py", "crosscheck_cases")
    assert script.make_case is crosscheck.make_case and script.N_CASES == crosscheck.N_CASES == 240, (
        "the benchmark and the cross-check draw their cases from bench/torch_cases.py"
    )


def test_the_package_ships_the_file_the_chapter_reads(data):
    """attnlib.data.torch_agreement() reads the package's copy (what a notebook outside the repo gets)."""
    from attnlib.data import torch_agreement

    assert torch_agreement() == data
