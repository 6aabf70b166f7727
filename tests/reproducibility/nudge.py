"""Run a kernel whose floating-point results differ from this machine's by one ulp.

Another CPU, BLAS kernel, thread count or summation order changes the last bits of computed values.
nbval on one machine cannot see which stored outputs depend on those bits, so ``make notebooks``
also runs every chapter in a kernel that imports this module first (an IPython startup file), where

* every float that a ``np.random.default_rng(...)`` generator draws is moved up by one ulp (the
  random inputs of every experiment change in their last bit, as a different rounding would leave
  them), and
* every floating result of ``np.exp``, ``np.log``, ``np.tanh``, ``np.sin`` and ``np.cos`` (the
  transcendental functions attnlib uses) is moved up by one ulp of its dtype, as another
  implementation may round: NumPy picks SIMD versions by CPU (AVX2, AVX-512, and on CPUs with
  AVX512-FP16 native float16 versions accurate to about one float16 ulp). Results 0, ±1 and ±inf
  are exact everywhere and stay so.

A stored output that changes under these nudges depends on the last bits of a float: print it at the
precision it has, summarise it over seeds, or decide it by a margin. The project never sets
``OPENBLAS_CORETYPE``; this is how it sees such dependence without another machine.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["NudgedGenerator", "install", "nudge", "write_startup"]

_default_rng = np.random.default_rng


def nudge(values: Any) -> Any:
    """``values`` with every finite non-zero float moved one ulp towards +inf (others unchanged)."""
    arr = np.asarray(values)
    if arr.dtype.kind != "f":
        return values
    moved = np.where(np.isfinite(arr) & (arr != 0), np.nextafter(arr, np.inf), arr).astype(arr.dtype)
    return moved if isinstance(values, np.ndarray) else moved[()]


class NudgedGenerator(np.random.Generator):
    """A Generator whose float draws are one ulp above those of ``np.random.default_rng``."""

    def _nudged(name: str):  # noqa: N805 (a decorator factory used in the class body)
        def method(self: NudgedGenerator, *args: Any, **kwargs: Any) -> Any:
            return nudge(getattr(np.random.Generator, name)(self, *args, **kwargs))

        method.__name__ = name
        return method

    standard_normal = _nudged("standard_normal")
    normal = _nudged("normal")
    random = _nudged("random")
    uniform = _nudged("uniform")
    exponential = _nudged("exponential")
    standard_t = _nudged("standard_t")
    del _nudged


def _nudged_default_rng(seed: Any = None) -> NudgedGenerator:
    if isinstance(seed, np.random.Generator):
        seed = seed.bit_generator
    bit_generator = seed if isinstance(seed, np.random.BitGenerator) else np.random.PCG64(seed)
    return NudgedGenerator(bit_generator)


NUDGED_UFUNCS = ("exp", "log", "tanh", "sin", "cos")
_ORIGINAL = {name: getattr(np, name) for name in NUDGED_UFUNCS}


def _nudged_ufunc(name: str):
    """``np.<name>`` with floating results one ulp up, except the exact 0, ±1 and ±inf."""
    ufunc = _ORIGINAL[name]

    def nudged(x: Any, /, *args: Any, **kwargs: Any) -> Any:
        result = ufunc(x, *args, **kwargs)  # with out=..., the out array itself
        if np.asarray(result).dtype not in (np.float16, np.float32, np.float64):
            return result
        exact = (result == 0) | (np.abs(result) == 1) | ~np.isfinite(result)
        if isinstance(result, np.ndarray):
            np.copyto(result, np.nextafter(result, np.inf), where=~exact)
            return result
        return result if exact else nudge(result)

    nudged.__name__ = name
    return nudged


_nudged_exp = _nudged_ufunc("exp")


def install() -> None:
    """Replace ``np.random.default_rng`` and the functions of NUDGED_UFUNCS with nudged versions."""
    np.random.default_rng = _nudged_default_rng
    for name in NUDGED_UFUNCS:
        setattr(np, name, _nudged_ufunc(name))


def write_startup(ipython_dir: str | Path) -> Path:
    """Write an IPython profile under ``ipython_dir`` whose kernels call :func:`install` at start.

    Run a kernel with ``IPYTHONDIR=ipython_dir`` (``make nbval-nudged`` does) and it is nudged.
    """
    startup = Path(ipython_dir) / "profile_default" / "startup"
    startup.mkdir(parents=True, exist_ok=True)
    path = startup / "00-nudge.py"
    path.write_text(  # this file, loaded by its path: the kernel's sys.path is left as it is
        "import importlib.util\n"
        f"spec = importlib.util.spec_from_file_location('nudge', {str(Path(__file__).resolve())!r})\n"
        "nudge = importlib.util.module_from_spec(spec)\n"
        "spec.loader.exec_module(nudge)\n"
        "nudge.install()\n")
    return path


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit("usage: python tests/reproducibility/nudge.py IPYTHON_DIR")
    print(f"wrote {write_startup(sys.argv[1])}")
