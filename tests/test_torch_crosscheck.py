"""Cross-check of attnlib.core.scaled_dot_product_attention against PyTorch's SDPA.

Skipped (with a message saying how to enable it) when torch is not installed.
240 deterministic random cases cover 0, 1 or 2 leading batch dimensions (with
broadcasting between Q, K, V and the mask), n_q != n_k, d_v != d_k, boolean
and additive float masks, ``is_causal`` on square and non-square problems and
custom scales, in float32 and float64. The largest absolute difference seen
for each dtype is written to the terminal at the end of the module, for the
book to quote.
"""

from __future__ import annotations

import numpy as np
import pytest
from torch_cases import N_CASES, make_case
from torch_cases import torch_sdpa as _torch_sdpa

from attnlib.core import scaled_dot_product_attention, softmax

torch = pytest.importorskip(
    "torch",
    reason="torch not installed; pip install torch==2.13.0 to run the cross-check against PyTorch's SDPA",
)
F = torch.nn.functional

TOLERANCE = {"float32": {"rtol": 1e-5, "atol": 1e-5}, "float64": {"rtol": 1e-12, "atol": 1e-12}}


@pytest.fixture(scope="module")
def max_abs_diff(request):
    """Largest |attnlib - torch| per dtype over the module; reported when the module ends."""
    seen = {"float32": 0.0, "float64": 0.0}
    counts = {"float32": 0, "float64": 0}
    yield seen, counts
    per_dtype = ", ".join(f"{counts[k]} {k} cases: {seen[k]:.3g}" for k in seen)
    line = f"attnlib vs torch {torch.__version__} SDPA, max |difference| over {per_dtype}"
    reporter = request.config.pluginmanager.get_plugin("terminalreporter")
    capture = request.config.pluginmanager.get_plugin("capturemanager")
    if reporter is None or capture is None:
        print(line)
        return
    with capture.global_and_fixture_disabled():  # shown without -s as well
        reporter.write_line("")
        reporter.write_line(line)


def torch_sdpa(Q, K, V, attn_mask=None, *, is_causal=False, scale=None) -> np.ndarray:
    return _torch_sdpa(torch, Q, K, V, attn_mask, is_causal=is_causal, scale=scale)


def test_cases_cover_what_they_claim():
    cases = [make_case(seed) for seed in range(N_CASES)]
    assert {Q.dtype for Q, *_ in cases} == {np.dtype(np.float32), np.dtype(np.float64)}
    assert {Q.ndim for Q, *_ in cases} >= {2, 3, 4}
    assert any(Q.shape[:-2] != K.shape[:-2] for Q, K, _, _ in cases)  # broadcasting
    assert any(Q.shape[-2] != K.shape[-2] for Q, K, _, _ in cases)
    assert any(Q.shape[-1] != V.shape[-1] for Q, _, V, _ in cases)
    causal = [(Q.shape[-2], K.shape[-2]) for Q, K, _, kw in cases if kw.get("is_causal")]
    assert any(a == b for a, b in causal) and any(a < b for a, b in causal) and any(a > b for a, b in causal)
    masks = [kw["attn_mask"] for *_, kw in cases if "attn_mask" in kw]
    assert {m.dtype.kind for m in masks} == {"b", "f"}
    assert any(m.dtype.kind == "f" and np.isneginf(m).any() for m in masks)
    assert any(kw["scale"] is not None for *_, kw in cases)


@pytest.mark.parametrize("seed", range(N_CASES))
def test_matches_torch_sdpa(seed, max_abs_diff):
    Q, K, V, kwargs = make_case(seed)
    ours = scaled_dot_product_attention(Q, K, V, **kwargs)
    theirs = torch_sdpa(Q, K, V, **kwargs)
    assert ours.shape == theirs.shape
    assert ours.dtype == theirs.dtype == Q.dtype
    name = Q.dtype.name
    diff = float(np.max(np.abs(ours.astype(np.float64) - theirs.astype(np.float64))))
    seen, counts = max_abs_diff
    seen[name] = max(seen[name], diff)
    counts[name] += 1
    np.testing.assert_allclose(ours, theirs, **TOLERANCE[name])


def _torch_at_least(major: int, minor: int) -> bool:
    release = torch.__version__.split("+")[0].split(".")
    return (int(release[0]), int(release[1])) >= (major, minor)


@pytest.mark.parametrize("mask_kind", ["bool", "float"])
def test_fully_masked_rows_attnlib_gives_zeros_and_torch_agrees_since_2_5(mask_kind):
    # attnlib: a query with nothing to attend to gets zero weights and a zero output, never NaN.
    # PyTorch returned NaN there before 2.5; since 2.5 its SDPA uses a "safe softmax" that also
    # gives 0 (pytorch/pytorch PR #133882), so on a current torch the two agree on these rows too.
    rng = np.random.default_rng(99)
    Q, K, V = rng.standard_normal((2, 4, 3)), rng.standard_normal((2, 5, 3)), rng.standard_normal((2, 5, 6))
    keep = rng.random((2, 4, 5)) < 0.7
    keep[..., np.arange(4), rng.integers(0, 5, size=4)] = True
    keep[0, 1] = False  # one fully masked row
    keep[1, 3] = False  # and another
    mask = keep if mask_kind == "bool" else np.where(keep, 0.0, -np.inf)
    ours = scaled_dot_product_attention(Q, K, V, mask)
    theirs = torch_sdpa(Q, K, V, mask)
    empty = ~keep.any(axis=-1)  # (2, 4)
    assert empty.sum() == 2
    assert not np.isnan(ours).any()
    assert (ours[empty] == 0.0).all()
    np.testing.assert_allclose(ours[~empty], theirs[~empty], **TOLERANCE["float64"])
    if _torch_at_least(2, 5):
        assert (theirs[empty] == 0.0).all()
    else:  # pragma: no cover - old torch
        assert np.isnan(theirs[empty]).all()


@pytest.mark.parametrize("n_k", [65_536, 131_072])
def test_float16_long_rows_agree_with_torch(n_k: int) -> None:
    """float16 softmax and SDPA over rows whose weight sum exceeds float16's largest value (65,504)."""
    rng = np.random.default_rng(n_k)
    x = rng.standard_normal((2, n_k)).astype(np.float16)
    want = torch.softmax(torch.from_numpy(x), dim=-1).numpy()
    got = softmax(x)
    assert got.dtype == want.dtype == np.float16
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=2e-3, atol=2.0**-24)
    Q, K = (rng.standard_normal(s).astype(np.float16) for s in ((1, 2, 16), (1, n_k, 16)))
    V = rng.standard_normal((1, n_k, 8)).astype(np.float16)
    want = F.scaled_dot_product_attention(*(torch.from_numpy(a) for a in (Q, K, V))).numpy()
    got = scaled_dot_product_attention(Q, K, V)
    assert got.dtype == want.dtype == np.float16
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), atol=2e-3)


@pytest.mark.parametrize(("n_heads", "n_kv", "mask_kind"), [(8, 2, "none"), (6, 3, "bool"), (4, 1, "causal"),
                                                             (4, 4, "float")])
def test_enable_gqa_matches_torch(n_heads: int, n_kv: int, mask_kind: str) -> None:
    """Grouped-query attention (PyTorch >= 2.5, enable_gqa=True): K and V with fewer heads than Q."""
    rng = np.random.default_rng(n_heads * 100 + n_kv)
    Q = rng.normal(size=(2, n_heads, 5, 8))  # (batch, n_heads, n_q, d_k)
    K = rng.normal(size=(2, n_kv, 7, 8))  # (batch, n_kv_heads, n_k, d_k)
    V = rng.normal(size=(2, n_kv, 7, 3))  # (batch, n_kv_heads, n_k, d_v)
    mask = None
    if mask_kind == "bool":
        mask = rng.random((5, 7)) < 0.6
        mask[:, 0] = True
    elif mask_kind == "float":
        mask = rng.normal(size=(5, 7))
    kwargs = {"is_causal": mask_kind == "causal"}
    ours = scaled_dot_product_attention(Q, K, V, mask, enable_gqa=True, **kwargs)
    theirs = F.scaled_dot_product_attention(
        *(torch.from_numpy(a) for a in (Q, K, V)),
        attn_mask=None if mask is None else torch.from_numpy(mask), enable_gqa=True, **kwargs,
    ).numpy()
    np.testing.assert_allclose(ours, theirs, **TOLERANCE["float64"])
