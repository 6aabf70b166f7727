"""How closely attnlib agrees with PyTorch's SDPA, written to attnlib/data/torch_agreement.json.

The book must build without torch, yet quote how far attnlib's
``scaled_dot_product_attention`` is from ``torch.nn.functional.scaled_dot_product_attention``.
This script, run where torch is installed, computes the figures and stores them as data; the
chapter ``book/06_implementation.ipynb`` reads the JSON and ``tests/test_torch_agreement.py``
checks it (and, with torch, recomputes it).

The cases are those of ``tests/test_torch_crosscheck.py`` (``bench/torch_cases.py``, seeds 0..239):
float32 and float64, 0, 1 or 2 leading batch dimensions with broadcasting, n_q != n_k,
d_v != d_k, boolean and additive float masks, ``is_causal`` on square and non-square problems and
custom scales. The file also records what both libraries return for a query row with nothing to
attend to. It stores no date or machine name, so rerunning it on the same versions rewrites the
same file.

Usage: python bench/torch_agreement.py [--out PATH]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import numpy as np
from torch_cases import N_CASES, make_case  # bench/torch_cases.py, shared with the cross-check test
from torch_cases import torch_sdpa as _torch_sdpa

from attnlib.core import scaled_dot_product_attention

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "attnlib" / "data" / "torch_agreement.json"
TOLERANCE = {"float32": 1e-5, "float64": 1e-12}  # atol = rtol asserted by tests/test_torch_crosscheck.py


def _fully_masked_rows(torch: Any) -> dict[str, str]:
    """What attnlib and torch return for query rows whose keys are all masked ("zeros" or "nan")."""
    rng = np.random.default_rng(99)
    Q, K, V = rng.standard_normal((4, 3)), rng.standard_normal((5, 3)), rng.standard_normal((5, 6))
    keep = np.ones((4, 5), dtype=bool)
    keep[1] = False  # query 1 may attend to nothing
    result = {}
    for name, out in (
        ("attnlib", scaled_dot_product_attention(Q, K, V, keep)),
        ("torch", _torch_sdpa(torch, Q, K, V, keep)),
    ):
        row = out[1]
        result[name] = "zeros" if (row == 0.0).all() else "nan" if np.isnan(row).all() else "other"
    return result


def compute(n_cases: int = N_CASES) -> dict[str, Any]:
    """Run the cases and return the agreement figures (requires torch)."""
    import torch  # only this function needs it

    counts = {"float32": 0, "float64": 0}
    max_diff = {"float32": 0.0, "float64": 0.0}
    for seed in range(n_cases):
        Q, K, V, kwargs = make_case(seed)
        ours = scaled_dot_product_attention(Q, K, V, **kwargs)
        theirs = _torch_sdpa(torch, Q, K, V, **kwargs)
        if ours.shape != theirs.shape or ours.dtype != theirs.dtype:
            raise AssertionError(
                f"case {seed}: attnlib {ours.shape} {ours.dtype}, torch {theirs.shape} {theirs.dtype}"
            )
        name = Q.dtype.name
        diff = float(np.max(np.abs(ours.astype(np.float64) - theirs.astype(np.float64))))
        counts[name] += 1
        max_diff[name] = max(max_diff[name], diff)
    return {
        "description": (
            "max |attnlib - torch.nn.functional.scaled_dot_product_attention| over the random cases of "
            "tests/test_torch_crosscheck.py (seeds 0..n-1), written by bench/torch_agreement.py"
        ),
        "torch_version": torch.__version__,
        "numpy_version": np.__version__,
        "n_cases": counts,
        "max_abs_diff": {k: float(f"{v:.3g}") for k, v in max_diff.items()},  # 3 significant digits
        "tolerance": dict(TOLERANCE),
        "fully_masked_row": _fully_masked_rows(torch),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT, help=f"where to write the JSON (default {OUT})")
    args = parser.parse_args(argv)
    data = compute()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    per_dtype = ", ".join(
        f"{data['n_cases'][k]} {k} cases: {data['max_abs_diff'][k]:.3g}" for k in data["n_cases"]
    )
    print(f"attnlib vs torch {data['torch_version']} SDPA, max |difference| over {per_dtype}")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
