"""Data the chapters read, shipped inside the package so a notebook runs anywhere attnlib is installed.

A chapter opened in Colab or a fresh Jupyter has no checkout beside it, so it cannot read files by a
path relative to the repository. The files live here and are read through :mod:`importlib.resources`.

>>> agreement = torch_agreement()
>>> sorted(agreement["tolerance"])
['float32', 'float64']
"""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

__all__ = ["torch_agreement"]

TORCH_AGREEMENT = "torch_agreement.json"


def torch_agreement() -> dict[str, Any]:
    """How closely attnlib agrees with PyTorch's SDPA, as measured by ``bench/torch_agreement.py``.

    The book builds without PyTorch; this file holds the figures chapter 6 quotes (the largest
    difference per dtype over the cross-check's random cases, the tolerances asserted, and what each
    library returns for a fully masked row).
    """
    text = resources.files(__package__).joinpath(TORCH_AGREEMENT).read_text(encoding="utf-8")
    return json.loads(text)
