"""attnlib.reference: the short formula computes what the fast path computes, and refuses what it refuses."""

from __future__ import annotations

import inspect

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from attnlib.core import padding_mask, scaled_dot_product_attention
from attnlib.reference import reference_attention


@st.composite
def attention_inputs(draw):
    """Q, K, V with a broadcast batch, and a mask of one kind (none, causal, boolean, float) and a scale."""
    batch = draw(st.sampled_from([(), (3,), (2, 3), (1, 3)]))
    n_q, n_k, d_k, d_v = (draw(st.integers(1, 7)) for _ in range(4))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    k_batch = (3,) if batch == (2, 3) and draw(st.booleans()) else batch  # K, V broadcast over Q's batch
    Q = rng.standard_normal(batch + (n_q, d_k)) * draw(st.sampled_from([0.1, 1.0, 4.0]))
    K = rng.standard_normal(k_batch + (n_k, d_k))
    V = rng.standard_normal(k_batch + (n_k, d_v))
    kind = draw(st.sampled_from(["none", "causal", "bool", "float"]))
    kwargs = {"scale": draw(st.sampled_from([None, 0.05, 1.0, 2.5]))}
    if kind == "causal":
        kwargs["is_causal"] = True
    elif kind == "bool":  # rows with nothing allowed included
        kwargs["attn_mask"] = rng.random((n_q, n_k)) < draw(st.sampled_from([0.2, 0.6, 1.0]))
    elif kind == "float":
        mask = rng.standard_normal((n_q, n_k))
        mask[rng.random((n_q, n_k)) < 0.3] = -np.inf
        kwargs["attn_mask"] = mask
    return Q, K, V, kwargs


@settings(max_examples=300, deadline=None)
@given(attention_inputs())
def test_the_reference_equals_the_fast_path(inputs):
    Q, K, V, kwargs = inputs
    fast = scaled_dot_product_attention(Q, K, V, **kwargs)
    ref = reference_attention(Q, K, V, **kwargs)
    assert ref.shape == fast.shape and ref.dtype == fast.dtype
    np.testing.assert_allclose(ref, fast, rtol=1e-12, atol=1e-13)


def test_a_padded_batch_in_float32_and_a_row_with_no_key():
    rng = np.random.default_rng(7)
    Q, K, V = rng.standard_normal((3, 2, 5, 4)).astype(np.float32)
    mask = padding_mask([5, 3], 5)  # (B, 1, n_k)
    fast = scaled_dot_product_attention(Q, K, V, mask)
    np.testing.assert_allclose(reference_attention(Q, K, V, mask), fast, rtol=1e-5, atol=1e-6)
    none = np.zeros((5, 5), dtype=bool)
    assert not reference_attention(Q, K, V, none).any(), "a query allowed no key gets a zero row, not NaN"


@pytest.mark.parametrize("bad", [
    ({"Q": np.ones((2, 3)), "K": np.ones((2, 4)), "V": np.ones((2, 1))}),  # d_k differs
    ({"Q": np.ones((2, 3)), "K": np.ones((2, 3)), "V": np.ones((3, 1))}),  # n_k differs
    ({"Q": [[np.nan]], "K": [[1.0]], "V": [[1.0]]}),
    ({"Q": [["a"]], "K": [[1.0]], "V": [[1.0]]}),
    ({"scale": -1.0}),
    ({"scale": "0.5"}),
    ({"is_causal": True, "attn_mask": np.ones((2, 2), dtype=bool)}),
    ({"is_causal": 1}),
    ({"attn_mask": np.ones((3, 3), dtype=bool)}),  # does not broadcast to (2, 2)
    ({"attn_mask": np.full((2, 2), np.nan)}),
])
def test_bad_input_gets_the_error_the_fast_path_gives(bad):
    args = {"Q": np.ones((2, 2)), "K": np.ones((2, 2)), "V": np.ones((2, 1))} | bad
    with pytest.raises((TypeError, ValueError)) as fast:
        scaled_dot_product_attention(**args)
    with pytest.raises(fast.type) as ref:
        reference_attention(**args)
    named = [name for name in ("Q", "K", "V", "scale", "attn_mask", "is_causal") if name in str(fast.value)]
    assert named and all(name in str(ref.value) for name in named), (str(fast.value), str(ref.value))


def test_the_reference_is_short():
    """The point of the module: the formula a reader can take in at a glance, beside the fast path."""
    source = inspect.getsource(reference_attention)
    body = source.split('"""')[2]  # after the docstring
    lines = [line for line in body.splitlines() if line.strip() and not line.strip().startswith("#")]
    assert len(lines) <= 16, len(lines)
    fast = inspect.getsource(scaled_dot_product_attention).split('"""')[2]
    assert len(lines) * 3 < len([line for line in fast.splitlines() if line.strip()])
