"""The random cases on which attnlib is compared with PyTorch's SDPA: one generator for the cross-check
test (``tests/test_torch_crosscheck.py``) and the benchmark that stores the agreement for the book
(``bench/torch_agreement.py``).

Seeds ``0 .. N_CASES - 1`` cycle through float32 and float64, 0, 1 or 2 leading batch dimensions (with
broadcasting between Q, K, V and the mask), and the mask kinds ``MASK_KINDS``; n_q != n_k, d_v != d_k and
custom scales come from the seed's generator.
"""

from __future__ import annotations

from typing import Any

import numpy as np

MASK_KINDS = ("none", "bool", "float", "causal")
N_CASES = 240  # seed -> (dtype, number of batch dims, mask kind) cycles every 24 seeds


def _leading(rng: np.random.Generator, batch: tuple[int, ...]) -> tuple[int, ...]:
    """The batch shape with some dims set to 1 and, sometimes, leading dims dropped (broadcasting)."""
    dims = tuple(1 if rng.random() < 0.3 else b for b in batch)
    drop = int(rng.integers(0, len(dims) + 1)) if rng.random() < 0.3 else 0
    return dims[drop:]


def make_case(seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
    """Deterministic random inputs for one cross-check case."""
    rng = np.random.default_rng(seed)
    dtype = (np.float32, np.float64)[seed % 2]
    n_batch_dims = (seed // 2) % 3
    kind = MASK_KINDS[(seed // 6) % 4]
    batch = tuple(int(b) for b in rng.integers(1, 4, size=n_batch_dims))
    n_q, n_k = (int(n) for n in rng.integers(1, 8, size=2))
    if kind == "causal" and (seed // 24) % 2 == 0:
        n_k = n_q  # half the causal cases are square, half (mostly) not
    d_k, d_v = (int(d) for d in rng.integers(1, 9, size=2))
    Q = rng.standard_normal(_leading(rng, batch) + (n_q, d_k)).astype(dtype)
    K = rng.standard_normal(_leading(rng, batch) + (n_k, d_k)).astype(dtype)
    V = rng.standard_normal(_leading(rng, batch) + (n_k, d_v)).astype(dtype)
    kwargs: dict[str, Any] = {"scale": None if rng.random() < 0.5 else float(rng.uniform(0.1, 2.0))}
    if kind == "causal":
        kwargs["is_causal"] = True
    elif kind in ("bool", "float"):
        # torch adds the mask in place to Q Kᵀ, so its batch dims must fit in those of Q and K
        # (attnlib also accepts a mask that broadcasts against V's batch dims)
        qk_batch = np.broadcast_shapes(Q.shape[:-2], K.shape[:-2])
        rows = n_q if rng.random() < 0.8 else 1  # sometimes one row broadcast over the queries
        shape = _leading(rng, qk_batch) + (rows, n_k)
        keep = rng.random(shape) < 0.6
        # at least one key per row, so torch and attnlib agree by definition (see the test below)
        keep[..., np.arange(rows), rng.integers(0, n_k, size=rows)] = True
        if kind == "bool":
            kwargs["attn_mask"] = keep
        else:
            additive = 2.0 * rng.standard_normal(shape)
            additive[~keep] = -np.inf
            kwargs["attn_mask"] = additive.astype(dtype)  # torch wants the query's dtype
    return Q, K, V, kwargs


def torch_sdpa(torch: Any, Q: np.ndarray, K: np.ndarray, V: np.ndarray, attn_mask: Any = None, *,
               is_causal: bool = False, scale: float | None = None) -> np.ndarray:
    """``torch.nn.functional.scaled_dot_product_attention`` on NumPy arrays (``torch``: the module)."""
    mask = None if attn_mask is None else torch.from_numpy(np.ascontiguousarray(attn_mask))
    out = torch.nn.functional.scaled_dot_product_attention(
        torch.from_numpy(Q), torch.from_numpy(K), torch.from_numpy(V),
        attn_mask=mask, is_causal=is_causal, scale=scale,
    )
    return out.numpy()
