"""Trained weights as a compact JSON-serialisable dict, for a forward pass in the page's JavaScript.

Each tensor is stored as base64 of its little-endian float32 bytes in C order, with its shape, so a
page reads it with ``new Float32Array(Uint8Array.from(atob(data), c => c.charCodeAt(0)).buffer)``.
"""

from __future__ import annotations

import base64
from typing import Any

import numpy as np

from attnlib.transformer.model import TENSOR_NAMES, TransformerConfig, TransformerParams, _check_params

__all__ = ["EXPORT_FORMAT", "export_weights", "import_weights"]

#: The ``format`` field of an export; a reader refuses any other.
EXPORT_FORMAT = "attnlib.transformer/1"
_CONFIG_FIELDS = ("vocab", "n_ctx", "d_model", "n_layers", "n_heads")


def export_weights(params: TransformerParams) -> dict[str, Any]:
    """The weights as a dict of strings, ints and lists (``json.dumps`` takes it as is).

    Parameters
    ----------
    params : TransformerParams

    Returns
    -------
    dict
        ``{"format": EXPORT_FORMAT, "config": {vocab, n_ctx, d_model, n_layers, n_heads},
        "dtype": "float32", "tensors": {name: {"shape": [...], "data": base64}}}`` with the tensors of
        :data:`~attnlib.transformer.model.TENSOR_NAMES`, rounded to float32.

    Raises
    ------
    TypeError
        ``params`` not :class:`~attnlib.transformer.model.TransformerParams`.

    Examples
    --------
    >>> import json
    >>> from attnlib.transformer.model import TransformerConfig, init_params
    >>> cfg = TransformerConfig(vocab=6, n_ctx=8, d_model=8, n_layers=2, n_heads=2)
    >>> d = export_weights(init_params(cfg, np.random.default_rng(0)))
    >>> d["tensors"]["W_Q"]["shape"], len(json.dumps(d)) < 4 * cfg.n_params * 4 / 3 + 1000
    ([2, 8, 8], True)
    """
    p = _check_params(params)
    tensors = {
        name: {
            "shape": list(arr.shape),
            "data": base64.b64encode(arr.astype("<f4").tobytes(order="C")).decode("ascii"),
        }
        for name, arr in p.tensors().items()
    }
    config = {f: getattr(p.config, f) for f in _CONFIG_FIELDS}
    return {"format": EXPORT_FORMAT, "config": config, "dtype": "float32", "tensors": tensors}


def import_weights(data: Any) -> TransformerParams:
    """Read back a dict of :func:`export_weights` (float32 values, held as float64).

    Parameters
    ----------
    data : dict
        As returned by :func:`export_weights` (or read from its JSON).

    Returns
    -------
    TransformerParams

    Raises
    ------
    TypeError
        ``data`` is not a dict, or a field has the wrong type.
    ValueError
        Another ``format``, a missing tensor, a shape that is not the config's, data of the wrong length.

    Examples
    --------
    >>> from attnlib.transformer.model import TransformerConfig, init_params
    >>> cfg = TransformerConfig(vocab=6, n_ctx=8, d_model=8, n_layers=2, n_heads=2)
    >>> p = init_params(cfg, np.random.default_rng(0))
    >>> q = import_weights(export_weights(p))
    >>> bool(np.array_equal(q.W_U, p.W_U.astype(np.float32)))
    True
    """
    if not isinstance(data, dict):
        raise TypeError(f"data must be a dict from export_weights; got {type(data).__name__}")
    if data.get("format") != EXPORT_FORMAT:
        raise ValueError(f"data has format {data.get('format')!r}; expected {EXPORT_FORMAT!r}")
    cfg_in = data.get("config")
    if not isinstance(cfg_in, dict) or set(cfg_in) != set(_CONFIG_FIELDS):
        raise ValueError(f"data['config'] must hold exactly {_CONFIG_FIELDS}; got {cfg_in!r}")
    config = TransformerConfig(**{f: cfg_in[f] for f in _CONFIG_FIELDS})
    stored = data.get("tensors")
    if not isinstance(stored, dict) or set(stored) != set(TENSOR_NAMES):
        got = sorted(stored) if isinstance(stored, dict) else stored
        raise ValueError(f"data['tensors'] must hold exactly {TENSOR_NAMES}; got {got!r}")
    arrays = {}
    for name, shape in config.shapes().items():
        entry = stored[name]
        if not isinstance(entry, dict) or not isinstance(entry.get("data"), str):
            raise TypeError(f"data['tensors'][{name!r}] must be a dict with a base64 string 'data'")
        if tuple(entry.get("shape", ())) != shape:
            raise ValueError(
                f"tensor {name} has shape {entry.get('shape')} but the config needs {list(shape)}"
            )
        raw = base64.b64decode(entry["data"], validate=True)
        need = 4 * int(np.prod(shape))
        if len(raw) != need:
            raise ValueError(f"tensor {name} holds {len(raw)} bytes; shape {list(shape)} needs {need}")
        arrays[name] = np.frombuffer(raw, dtype="<f4").reshape(shape).astype(np.float64)
    return TransformerParams(config, **arrays)
