"""The checks of chapter 7, what attention costs."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from attnlib import counts as _counts
from attnlib import kvcache as _kvcache
from attnlib import models as _models
from attnlib.exercises._registry import (
    _register,
    _scalar_exercise,
)
from attnlib.misconceptions import (
    Candidates,
)

_COUNT = {"n_q": 3, "n_k": 5, "d_k": 4, "d_v": 2}
_COUNT_NAMES = ("multiplications", "additions", "comparisons", "exponentials", "divisions", "FLOPs")


def _count_row(c: _counts.FlopCounts) -> list[int]:
    return [c.multiplies, c.adds, c.compares, c.exps, c.divides, c.flops]


def _count_wrong() -> Candidates:
    c = _counts.flop_counts(**_COUNT)
    n_q, n_k, d_v = _COUNT["n_q"], _COUNT["n_k"], _COUNT["d_v"]
    ladd = _count_row(c)
    extra_adds = n_q * n_k + n_q + n_q * d_v  # one more add per dot product of QK, row sum, AV
    ladd[1] += extra_adds
    ladd[5] += extra_adds
    cmp_n = _count_row(c)
    cmp_n[2] += n_q
    cmp_n[5] += n_q
    exp_flops = _count_row(c)
    exp_flops[5] += c.exps
    swapped = _count_row(_counts.flop_counts(n_k, n_q, _COUNT["d_k"], _COUNT["d_v"]))
    return [("flops-sum-l-adds", np.array(ladd)), ("flops-max-n-compares", np.array(cmp_n)),
            ("flops-exp-counted", np.array(exp_flops)), ("flops-swapped", np.array(swapped))]


_register(_scalar_exercise(
    "cx-ex-count", "07_complexity",
    "The operations of cross-attention with n_q = 3, n_k = 5, d_k = 4, d_v = 2, in total.",
    "6 whole numbers: multiplications, additions (subtractions included), comparisons, exponentials, "
    "divisions, FLOPs.",
    lambda: _count_row(_counts.flop_counts(**_COUNT)), _count_wrong,
    kind="integer", names=_COUNT_NAMES, form="counts",
))


def _llama() -> _models.ModelConfig:
    return next(c for c in _models.MODEL_CONFIGS if c.name == "LLaMA-2 70B")


def _kv_bytes(*, keys_only: bool = False, layers: int | None = None, dtype_bytes: int = 2,
              query_heads: bool = False) -> list[int] | list[float]:
    cfg = _llama()
    if layers is not None:
        cfg = replace(cfg, n_layers=layers)
    first = cfg.n_heads if query_heads else cfg.n_kv_heads
    out = [_kvcache.kv_cache_bytes(replace(cfg, n_kv_heads=h), cfg.max_context, dtype_bytes)
           for h in (first, cfg.n_heads)]
    return [b / 2 for b in out] if keys_only else out


_register(_scalar_exercise(
    "cx-ex-kv-memory", "07_complexity",
    "The key–value cache of LLaMA-2 70B for one sequence of 4096 tokens in a 16-bit format: with its 8 "
    "key–value heads, and if each of the 64 query heads had its own.",
    "2 whole numbers of bytes: with 8 key–value heads, with 64.",
    _kv_bytes,
    lambda: [("kv-keys-only", _kv_bytes(keys_only=True)), ("kv-query-heads", _kv_bytes(query_heads=True)),
             ("kv-one-layer", _kv_bytes(layers=1)), ("bytes-float32", _kv_bytes(dtype_bytes=4)),
             ("bytes-units", [b / 2**30 for b in _kv_bytes()])],
    kind="integer", names=("8 key-value heads", "64 key-value heads"), form="bytes",
    context=lambda: {"itemsize": 2},
))

_CACHE_BYTES, _BLOCK_D = 256 * 2**10, 64


def _block_bytes(b: int, dtype: Any = np.float32, *, what: str = "all") -> int:
    """Bytes of one step of tiled attention: the b × b tile and b rows of Q, K, V (from memory_bytes)."""
    m = _counts.memory_bytes(b, b, _BLOCK_D, _BLOCK_D, dtype)
    inputs, with_scores = m.stage("inputs").bytes, m.stage("scores").bytes
    return {"all": with_scores, "inputs": inputs, "tile": with_scores - inputs}[what]


def _largest_block(*, powers: bool = True, **kw: Any) -> int:
    sizes = (2**k for k in range(20)) if powers else iter(range(1, 2**20))
    best = 0
    for b in sizes:
        if _block_bytes(b, **kw) > _CACHE_BYTES:
            return best
        best = b
    return best  # pragma: no cover


_register(_scalar_exercise(
    "cx-ex-blocks", "07_complexity",
    "The largest block size b, a power of two, for which a b × b float32 tile of scores and b rows each "
    "of Q, K and V (d = 64) fit in 256 KiB.",
    "1 whole number: b.",
    _largest_block,
    lambda: [("blocks-missing-arrays", _largest_block(what="inputs")),
             ("blocks-missing-arrays", _largest_block(what="tile")),
             ("blocks-float64", _largest_block(dtype=np.float64)),
             ("blocks-not-power-of-two", _largest_block(powers=False))],
    kind="integer",
))


_ONLINE_LOGITS = (2.0, 0.0, 3.0, 5.0)  # cx-ex-online: the maximum grows twice, by 1 then by 2


def _online_states(*, rescale: str = "right", subtract: bool = True, max_of: str = "running") -> np.ndarray:
    """The state (m, ℓ) of the online softmax after each key of ``_ONLINE_LOGITS``, one key per block.

    ``rescale`` is ``"right"`` (ℓ times e^(m − m') when the maximum grows), ``"none"`` or
    ``"inverted"`` (times e^(m' − m)); ``subtract=False`` adds e^(s_j) itself;
    ``max_of`` is ``"running"``, ``"first"`` (m never updated) or ``"final"`` (the row's maximum
    from the start). Returns an array of shape (n, 2).
    """
    x = np.array(_ONLINE_LOGITS)  # (n,)
    m, ell, rows = -np.inf, 0.0, []
    for j, s in enumerate(x):
        m_new = {"running": max(m, s), "first": x[0], "final": x.max()}[max_of]
        with np.errstate(over="ignore"):  # e^(s_j) overflows to inf without the subtraction
            if not subtract:
                ell = ell + np.exp(s)
            elif j == 0:
                ell = np.exp(s - m_new)
            else:
                corr = {"right": np.exp(m - m_new), "none": 1.0, "inverted": np.exp(m_new - m)}[rescale]
                ell = corr * ell + np.exp(s - m_new)
        m = m_new
        rows.append((m, ell))
    return np.array(rows)  # (n, 2): (m, ℓ) after each key


_register(_scalar_exercise(
    "cx-ex-online", "07_complexity",
    "The running state of the online softmax on the logits [2, 0, 3, 5], one key at a time: "
    "the running maximum m and the running sum ℓ of e^(s_j − m) after each key.",
    "4 pairs (m, ℓ), one per key in order: the running maximum and the running sum after that key.",
    _online_states,
    lambda: [("online-no-rescale", _online_states(rescale="none")),
             ("online-rescale-inverted", _online_states(rescale="inverted")),
             ("online-no-max", _online_states(subtract=False)),
             ("online-m-fixed", _online_states(max_of="first")),
             ("online-final-max", _online_states(max_of="final"))],
    names=("after the 1st key", "after the 2nd key", "after the 3rd key", "after the 4th key"),
))
