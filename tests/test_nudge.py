"""The one-ulp kernel of ``make nbval-nudged`` (tests/reproducibility/nudge.py) really nudges.

If the nudges silently did nothing, the nudged nbval run would pass whatever the notebooks print.
"""

from __future__ import annotations

from pathlib import Path

import nbformat
import nudge
import numpy as np
import pytest
from nbclient import NotebookClient


def test_generator_draws_are_one_ulp_above_the_plain_ones() -> None:
    for method, args in [
        ("standard_normal", (50,)),
        ("normal", (1.0, 2.0, 50)),
        ("random", (50,)),
        ("uniform", (-1, 1, 50)),
    ]:
        plain = getattr(np.random.default_rng(7), method)(*args)
        nudged = getattr(nudge._nudged_default_rng(7), method)(*args)
        np.testing.assert_array_equal(nudged, np.nextafter(plain, np.inf), err_msg=method)
    assert isinstance(nudge._nudged_default_rng(7), np.random.Generator)
    ints = [np.random.default_rng(3).integers(0, 100, 20), nudge._nudged_default_rng(3).integers(0, 100, 20)]
    np.testing.assert_array_equal(*ints)  # integer draws are left alone


def test_exp_moves_by_one_ulp_except_where_every_machine_agrees() -> None:
    x = np.array([-np.inf, 0.0, 1e-300, 0.5, -3.0, 700.0, 800.0])
    with np.errstate(over="ignore"):
        plain = np.exp(x)
        nudged = nudge._nudged_exp(x)
        inplace = x.copy()
        nudge._nudged_exp(inplace, out=inplace)
    moved = np.array([False, False, False, True, True, True, False])  # 0, 1, 1 and inf stay exact
    np.testing.assert_array_equal(nudged[moved], np.nextafter(plain[moved], np.inf))
    np.testing.assert_array_equal(nudged[~moved], plain[~moved])
    np.testing.assert_array_equal(inplace, nudged)
    assert nudge._nudged_exp(1.0) == np.nextafter(np.e, np.inf) and nudge._nudged_exp(0.0) == 1.0
    assert nudge._nudged_exp(np.float32(1.0)) == np.nextafter(np.exp(np.float32(1.0)), np.float32(np.inf))
    half = np.array([0.5, 2.0], dtype=np.float16)
    np.testing.assert_array_equal(nudge._nudged_exp(half), np.nextafter(np.exp(half), np.float16(np.inf)))


@pytest.mark.parametrize("name", nudge.NUDGED_UFUNCS)
def test_each_transcendental_moves_except_at_exact_values(name: str) -> None:
    x = np.array([0.3, 0.7, 2.5])
    plain = getattr(np, name)(x)
    np.testing.assert_array_equal(nudge._nudged_ufunc(name)(x), np.nextafter(plain, np.inf))
    exact = np.array([0.0, 1.0, -np.inf, np.inf])
    with np.errstate(divide="ignore", invalid="ignore"):
        plain = getattr(np, name)(exact)
        got = nudge._nudged_ufunc(name)(exact)
    keep = (plain == 0) | (np.abs(plain) == 1) | ~np.isfinite(plain)
    np.testing.assert_array_equal(got[keep], plain[keep])


def test_a_kernel_started_with_the_profile_is_nudged(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    nudge.write_startup(tmp_path / "ipython")
    code = "import numpy as np\nprint(repr(float(np.random.default_rng(0).standard_normal())), np.exp(0.5))"
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(code)])
    monkeypatch.setenv("IPYTHONDIR", str(tmp_path / "ipython"))  # the kernel inherits the environment
    NotebookClient(nb, timeout=60, kernel_name="python3").execute()
    printed = nb.cells[0].outputs[0]["text"].split()
    draw = np.random.default_rng(0).standard_normal()
    assert float(printed[0]) == np.nextafter(draw, np.inf) != draw
    assert printed[1] == str(np.nextafter(np.exp(0.5), np.inf))
