"""Tests of attnlib.transformer's model, gradient, task, generation and export.

Training, scores and ablations of trained models are in test_transformer_training.py.


1. the forward pass against a naive loop over layers, heads and positions; shapes of the trace; ablation;
2. the backward pass against central finite differences (every tensor) and torch autograd;
3. the copying task's layout;
4. greedy generation with the KV cache against recomputing the prefix;
5. the float32 export read back;
6. a catalogue of bad inputs, each with its message.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from cases import case

from attnlib.transformer import (
    TENSOR_NAMES,
    TransformerConfig,
    TransformerParams,
    ablation_losses,
    copying_accuracy,
    copying_batch,
    cross_entropy,
    decode_letters,
    encode_letters,
    export_weights,
    forward,
    generate,
    head_scores,
    import_weights,
    init_params,
    loss_and_grads,
    train_copying,
)
from attnlib.transformer.task import CopyingBatch

TINY = TransformerConfig(vocab=7, n_ctx=8, d_model=6, n_layers=2, n_heads=2)


def tiny(seed: int = 1, scale: float = 1.0) -> TransformerParams:
    p = init_params(TINY, np.random.default_rng(seed))
    if scale != 1.0:  # larger weights: sharper attention, so the checks see more than near-uniform softmax
        p = TransformerParams(TINY, **{k: v * scale for k, v in p.tensors().items()})
    return p


def tiny_batch(seed: int = 2) -> CopyingBatch:
    return copying_batch(3, 8, np.random.default_rng(seed), vocab=7, half_lengths=(2, 3))


def naive_logits(p: TransformerParams, tokens: list[int], ablate: frozenset = frozenset()) -> np.ndarray:
    """The formula with explicit loops: every head, every query position, exp and divide."""
    cfg = p.config
    n, d = len(tokens), cfg.d_head
    x = np.array([p.W_E[t] + p.W_pos[i] for i, t in enumerate(tokens)])  # (n, d_model)
    for layer in range(cfg.n_layers):
        concat = np.zeros((n, cfg.d_model))
        for h in range(cfg.n_heads):
            cols = slice(h * d, (h + 1) * d)
            Q, K, V = (x @ W[layer][:, cols] for W in (p.W_Q, p.W_K, p.W_V))
            for i in range(n):
                s = np.array([Q[i] @ K[j] / math.sqrt(d) for j in range(i + 1)])
                w = np.exp(s - s.max())
                w /= w.sum()
                if (layer, h) not in ablate:
                    concat[i, cols] = w @ V[: i + 1]
        x = x + concat @ p.W_O[layer]
    return x @ p.W_U


def test_forward_matches_the_naive_loops_and_the_trace_has_every_head() -> None:
    p = tiny(scale=3.0)
    tokens = [0, 3, 1, 4, 6, 2]
    logits, trace = forward(p, tokens)
    np.testing.assert_allclose(logits, naive_logits(p, tokens), rtol=1e-12, atol=1e-12)
    assert trace.weights.shape == (2, 2, 6, 6)
    np.testing.assert_allclose(trace.weights.sum(-1), 1.0, rtol=1e-12)
    assert np.all(np.triu(trace.weights, k=1) == 0.0)  # causal: nothing on later positions
    assert trace.residual.shape == (3, 6, 6) and trace.head_outputs.shape == (2, 2, 6, 3)
    np.testing.assert_allclose(trace.residual[-1] @ p.W_U, logits, rtol=1e-12)


def test_a_batch_is_its_sequences_side_by_side() -> None:
    p = tiny()
    b = tiny_batch()
    logits, trace = forward(p, b.tokens)
    assert trace.weights.shape == (3, 2, 2, 8, 8)
    for i in range(3):
        one, t1 = forward(p, b.tokens[i])
        np.testing.assert_allclose(logits[i], one, rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(trace.weights[i], t1.weights, rtol=1e-12, atol=1e-14)


def test_ablating_a_head_removes_exactly_its_contribution() -> None:
    p = tiny(scale=3.0)
    tokens = [0, 3, 1, 4, 6, 2]
    for pair in [(0, 1), (1, 0)]:
        logits, trace = forward(p, tokens, ablate=[pair])
        np.testing.assert_allclose(logits, naive_logits(p, tokens, frozenset({pair})), rtol=1e-12, atol=1e-12)
        assert np.all(trace.head_outputs[pair[0], pair[1]] == 0.0) and trace.ablated == {pair}
    assert not np.allclose(forward(p, tokens, ablate=[(0, 1)])[0], forward(p, tokens)[0])


def test_init_is_deterministic_and_small() -> None:
    a, b, c = tiny(5), tiny(5), tiny(6)
    assert all(np.array_equal(a.tensors()[k], b.tensors()[k]) for k in TENSOR_NAMES)
    assert not np.array_equal(a.W_E, c.W_E)
    big = init_params(TransformerConfig(vocab=26, n_ctx=24, d_model=64, n_layers=2, n_heads=4),
                      np.random.default_rng(0))
    assert 0.8 < np.linalg.norm(big.W_E, axis=1).mean() < 1.2  # rows of norm about 1
    assert abs(big.W_O.std() - 1 / math.sqrt(64 * 4)) < 0.005


def test_cross_entropy_is_log_vocab_for_uniform_predictions_and_counts_only_the_mask() -> None:
    p = tiny()
    p.W_U[:] = 0.0
    b = tiny_batch()
    assert math.isclose(cross_entropy(p, b.tokens, b.targets, b.loss_mask), math.log(7), rel_tol=1e-12)
    q = tiny()
    logits, _ = forward(q, b.tokens)
    z = logits - logits.max(-1, keepdims=True)
    nll = -(z - np.log(np.exp(z).sum(-1, keepdims=True)))  # (batch, n, vocab)
    want = np.take_along_axis(nll, b.targets[..., None], -1)[..., 0][b.loss_mask].mean()
    assert math.isclose(cross_entropy(q, b.tokens, b.targets, b.loss_mask), want, rel_tol=1e-12)


@pytest.mark.parametrize("name", TENSOR_NAMES)
def test_gradient_matches_central_differences_for_every_tensor(name: str) -> None:
    p = tiny(scale=2.0)
    b = tiny_batch()
    args = (b.tokens, b.targets, b.loss_mask)
    _, g = loss_and_grads(p, *args)
    W, G = getattr(p, name), getattr(g, name)
    h = 1e-5
    num = np.zeros_like(W)
    for idx in np.ndindex(W.shape):
        old = W[idx]
        W[idx] = old + h
        up = cross_entropy(p, *args)
        W[idx] = old - h
        down = cross_entropy(p, *args)
        W[idx] = old
        num[idx] = (up - down) / (2 * h)
    assert np.abs(G).max() > 1e-3  # a gradient that is there to check
    assert np.abs(num - G).max() / np.abs(G).max() <= 1e-6
    if name == "W_pos":  # positions beyond n get nothing
        b2 = copying_batch(2, 6, np.random.default_rng(0), vocab=7, half_lengths=(2, 3))
        assert np.all(loss_and_grads(p, b2.tokens, b2.targets, b2.loss_mask)[1].W_pos[6:] == 0.0)


def torch_loss(p: TransformerParams, b: CopyingBatch):
    torch = pytest.importorskip("torch")
    cfg = p.config
    W = {k: torch.tensor(v, dtype=torch.float64, requires_grad=True) for k, v in p.tensors().items()}
    tok = torch.tensor(b.tokens)
    n = tok.shape[-1]
    x = W["W_E"][tok] + W["W_pos"][:n]
    for layer in range(cfg.n_layers):
        def heads(M, layer=layer, x=x):
            return (x @ M[layer]).reshape(*x.shape[:-1], cfg.n_heads, cfg.d_head).transpose(-2, -3)
        out = torch.nn.functional.scaled_dot_product_attention(
            heads(W["W_Q"]), heads(W["W_K"]), heads(W["W_V"]), is_causal=True)
        x = x + out.transpose(-2, -3).reshape(*x.shape[:-1], cfg.d_model) @ W["W_O"][layer]
    logits = x @ W["W_U"]
    mask = torch.tensor(b.loss_mask)
    loss = torch.nn.functional.cross_entropy(logits[mask], torch.tensor(b.targets)[mask])
    loss.backward()
    return float(loss.detach()), {k: v.grad.numpy() for k, v in W.items()}


def test_gradient_agrees_with_torch_autograd() -> None:
    p = tiny(seed=4, scale=2.0)
    b = tiny_batch(5)
    want_loss, want = torch_loss(p, b)
    loss, g = loss_and_grads(p, b.tokens, b.targets, b.loss_mask)
    assert abs(loss - want_loss) <= 1e-12 * abs(want_loss)
    for name in TENSOR_NAMES:
        scale = np.abs(want[name]).max()
        np.testing.assert_allclose(getattr(g, name), want[name], rtol=0, atol=1e-10 * scale)


def test_copying_batch_layout() -> None:
    b = copying_batch(200, 24, np.random.default_rng(0), half_lengths=(4, 10))
    assert b.tokens.shape == (200, 24) and b.tokens.dtype == np.int64
    assert set(np.unique(b.half)) == set(range(4, 11))
    assert b.start.min() == 0 and np.all(b.start + 2 * b.half <= 24) and len(np.unique(b.start)) > 10
    for t, T, s, m in zip(b.tokens, b.half, b.start, b.loss_mask, strict=True):
        seg = t[s : s + T]
        assert len(set(seg.tolist())) == T  # distinct letters
        assert np.array_equal(t[s + T : s + 2 * T], seg)
        assert not set(np.delete(t, range(s, s + 2 * T)).tolist()) & set(seg.tolist())  # filler elsewhere
        assert np.flatnonzero(m).tolist() == list(range(s + T, s + 2 * T - 1))
    np.testing.assert_array_equal(b.targets[:, :-1], b.tokens[:, 1:])
    again = copying_batch(200, 24, np.random.default_rng(0), half_lengths=(4, 10))
    assert np.array_equal(again.tokens, b.tokens)
    assert decode_letters(encode_letters("induction")) == "induction"


def test_head_scores_find_a_hand_built_previous_token_head() -> None:
    """Position embeddings that make query i match key i − 1 give a previous-token score near 1."""
    cfg = TransformerConfig(vocab=26, n_ctx=24, d_model=24, n_layers=1, n_heads=1)
    p = init_params(cfg, np.random.default_rng(0))
    p.W_E[:] = 0.0
    p.W_pos[:] = np.eye(24)
    p.W_Q[0] = 40.0 * np.eye(24)
    p.W_K[0] = np.roll(np.eye(24), 1, axis=1)  # key of position j lands on coordinate j + 1
    b = copying_batch(16, 24, np.random.default_rng(1), half_lengths=(4, 10))
    s = head_scores(p, b)
    assert s.previous_token[0, 0] > 0.99 and s.induction[0, 0] < 0.2


def test_ablation_of_every_head_is_the_loss_without_it() -> None:
    p = tiny(scale=2.0)
    b = tiny_batch()
    got = ablation_losses(p, b)
    assert got.shape == (2, 2)
    for layer in range(2):
        for h in range(2):
            q = p.copy()
            q.W_O[layer, h * 3 : (h + 1) * 3] = 0.0  # the head's rows of W_O: it writes nothing
            assert math.isclose(got[layer, h], copying_accuracy(q, b)[0], rel_tol=1e-12)
    assert len({round(float(v), 9) for v in got.ravel()}) == 4


@pytest.mark.parametrize("prompt", [[3], [1, 2, 5, 1, 2]])
def test_generation_with_the_cache_equals_recomputing_the_prefix(prompt: list[int]) -> None:
    p = tiny(seed=7, scale=3.0)
    n_new = TINY.n_ctx - len(prompt) + 1
    cached, full = generate(p, prompt, n_new), generate(p, prompt, n_new, use_cache=False)
    assert np.abs(cached.logits - full.logits).max() <= 1e-12
    assert np.array_equal(cached.tokens, full.tokens) and len(cached.tokens) == len(prompt) + n_new
    last, _ = forward(p, cached.tokens[:-1])
    np.testing.assert_allclose(cached.logits[-1], last[-1], rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(cached.tokens[len(prompt):], cached.logits.argmax(-1))


def test_export_round_trips_through_json_at_float32() -> None:
    p = init_params(TransformerConfig(vocab=26, n_ctx=24, d_model=24, n_layers=2, n_heads=2),
                    np.random.default_rng(0))
    text = json.dumps(export_weights(p))
    assert len(text) <= 60_000
    q = import_weights(json.loads(text))
    for name in TENSOR_NAMES:
        assert np.array_equal(getattr(q, name), getattr(p, name).astype(np.float32).astype(np.float64))
    b = copying_batch(8, 24, np.random.default_rng(1), half_lengths=(4, 10))
    diff = np.abs(forward(q, b.tokens)[0] - forward(p, b.tokens)[0]).max()
    assert 0 < diff <= 1e-5  # float32 rounding of ~7 significant digits, on logits of size ~1


def bad_export(**changes):
    d = export_weights(tiny())
    for key, value in changes.items():
        if key.startswith("W_"):
            d["tensors"][key] = value
        else:
            d[key] = value
    return d


BAD_INPUTS = [
    # --- config
    case("config_float_size", lambda: TransformerConfig(26, 24, 24.0, 2, 2), TypeError,
         "d_model must be an integer; got float 24.0"),
    case("config_zero_layers", lambda: TransformerConfig(26, 24, 24, 0, 2), ValueError,
         "n_layers must be positive; got 0"),
    case("config_heads_do_not_divide", lambda: TransformerConfig(26, 24, 24, 2, 5), ValueError,
         "n_heads=5 does not divide d_model=24"),
    case("config_bool", lambda: TransformerConfig(True, 24, 24, 2, 2), TypeError,
         "vocab must be an integer; got bool True"),
    # --- params
    case("params_config_type", lambda: TransformerParams("cfg", *tiny().tensors().values()), TypeError,
         "config must be a TransformerConfig; got str"),
    case("params_wrong_shape",
         lambda: TransformerParams(TINY, **(tiny().tensors() | {"W_U": np.zeros((6, 6))})),
         ValueError, "W_U must have shape (6, 7) for this config; got (6, 6)"),
    case("params_nan",
         lambda: TransformerParams(TINY, **(tiny().tensors() | {"W_E": np.full((7, 6), np.nan)})),
         ValueError, "W_E must be finite; it holds 42 NaN"),
    case("init_rng_seed_sequence", lambda: init_params(TINY, np.random.SeedSequence(0)), TypeError,
         "rng must be a numpy.random.Generator (e.g. np.random.default_rng(0)); got SeedSequence"),
    case("init_config_dict", lambda: init_params({"vocab": 7}, np.random.default_rng(0)), TypeError,
         "config must be a TransformerConfig; got dict"),
    # --- forward
    case("forward_params_type", lambda: forward(tiny().tensors(), [1, 2]), TypeError,
         "params must be TransformerParams (see init_params); got dict"),
    case("forward_token_too_large", lambda: forward(tiny(), [1, 7, 2]), ValueError,
         "tokens must lie in 0..vocab-1=6; got 7 at index (1,)"),
    case("forward_token_negative", lambda: forward(tiny(), [[1, 2], [0, -1]]), ValueError,
         "tokens must lie in 0..vocab-1=6; got -1 at index (1, 1)"),
    case("forward_too_long", lambda: forward(tiny(), list(range(7)) + [0, 1]), ValueError,
         "tokens has n=9 positions but the model's n_ctx=8"),
    case("forward_float_tokens", lambda: forward(tiny(), [1.0, 2.0]), TypeError,
         "tokens must be integer token ids; got dtype float64"),
    case("forward_scalar", lambda: forward(tiny(), 3), ValueError, "tokens must have shape (..., n)"),
    case("forward_empty", lambda: forward(tiny(), np.zeros(0, dtype=int)), ValueError, "tokens is empty"),
    case("ablate_out_of_range", lambda: forward(tiny(), [1, 2], ablate=[(2, 0)]), ValueError,
         "ablate names (layer, head) = (2, 0) but the model has n_layers=2, n_heads=2"),
    case("ablate_not_pairs", lambda: forward(tiny(), [1, 2], ablate=[1]), TypeError,
         "ablate must hold (layer, head) pairs of integers; got 1"),
    case("ablate_not_iterable", lambda: forward(tiny(), [1, 2], ablate=3), TypeError,
         "ablate must be an iterable of (layer, head) pairs; got int"),
    # --- loss
    case("targets_shape", lambda: cross_entropy(tiny(), [1, 2, 3], [2, 3], [True, True, True]), ValueError,
         "targets must have the shape of tokens (3,); got (2,)"),
    case("targets_range", lambda: cross_entropy(tiny(), [1, 2], [2, 9], [True, True]), ValueError,
         "targets must lie in 0..vocab-1=6; got 9"),
    case("mask_int", lambda: loss_and_grads(tiny(), [1, 2], [2, 3], [1, 1]), TypeError,
         "loss_mask must be boolean (True = counted); got dtype int64"),
    case("mask_shape", lambda: loss_and_grads(tiny(), [1, 2], [2, 3], [True]), ValueError,
         "loss_mask must have the shape of tokens (2,); got (1,)"),
    case("mask_empty", lambda: loss_and_grads(tiny(), [1, 2], [2, 3], [False, False]), ValueError,
         "loss_mask selects no position"),
    # --- task
    case("batch_half_too_long", lambda: copying_batch(2, 10, np.random.default_rng(0), half_lengths=(2, 6)),
         ValueError, "half_lengths high=6 needs n >= 12 positions; got n=10"),
    case("batch_half_low", lambda: copying_batch(2, 10, np.random.default_rng(0), half_lengths=(1, 3)),
         ValueError, "half_lengths must satisfy 2 <= low <= high; got (1, 3)"),
    case("batch_vocab_small",
         lambda: copying_batch(2, 10, np.random.default_rng(0), vocab=4, half_lengths=(2, 4)),
         ValueError, "half_lengths high=4 needs vocab > 4"),
    case("batch_half_not_pair", lambda: copying_batch(2, 10, np.random.default_rng(0), half_lengths=3),
         TypeError,
         "half_lengths must be a pair (low, high); got 3"),
    case("batch_seed_not_rng", lambda: copying_batch(2, 10, 0), TypeError,
         "rng must be a numpy.random.Generator"),
    case("encode_upper", lambda: encode_letters("Ab"), ValueError,
         "text must hold lowercase letters a..z only; got 'A'"),
    case("decode_2d", lambda: decode_letters([[1]]), ValueError,
         "tokens must be one sequence (n,); got shape (1, 1)"),
    case("scores_batch_type", lambda: head_scores(tiny(), np.zeros((2, 8), dtype=int)), TypeError,
         "batch must be a CopyingBatch (see copying_batch); got ndarray"),
    case("scores_batch_too_long",
         lambda: head_scores(tiny(), copying_batch(2, 10, np.random.default_rng(0), vocab=7,
                                                    half_lengths=(2, 3))),
         ValueError, "batch has n=10 positions but the model's n_ctx=8"),
    # --- training
    case("train_lr_negative", lambda: train_copying(TINY, lr=-1.0, half_lengths=(2, 3)), ValueError,
         "lr must be positive; got -1.0"),
    case("train_steps_float", lambda: train_copying(TINY, steps=10.5, half_lengths=(2, 3)), TypeError,
         "steps must be an integer; got float 10.5"),
    case("train_seed_negative", lambda: train_copying(TINY, seed=-1, half_lengths=(2, 3)), ValueError,
         "seed must be non-negative; got -1"),
    case("train_checkpoint_late", lambda: train_copying(TINY, steps=5, checkpoints=[9], half_lengths=(2, 3)),
         ValueError, "checkpoints must lie in 0..steps=5; got [9]"),
    case("train_half_lengths_default_too_long", lambda: train_copying(TINY, steps=5), ValueError,
         "half_lengths high=10 needs n >= 20 positions; got n=8"),
    # --- generation
    case("generate_too_long", lambda: generate(tiny(), [1, 2, 3], 7), ValueError,
         "a prompt of 3 tokens and n_new=7 need 9 positions but n_ctx=8"),
    case("generate_batch_prompt", lambda: generate(tiny(), [[1, 2]], 2), ValueError,
         "prompt must be one sequence (n,); got shape (1, 2)"),
    case("generate_n_new_zero", lambda: generate(tiny(), [1], 0), ValueError,
         "n_new must be positive; got 0"),
    case("generate_cache_flag", lambda: generate(tiny(), [1], 2, use_cache=1), TypeError,
         "use_cache must be True or False; got int 1"),
    case("generate_prompt_range", lambda: generate(tiny(), [1, 8], 2), ValueError,
         "prompt must lie in 0..vocab-1=6; got 8 at index (1,)"),
    # --- export
    case("import_not_dict", lambda: import_weights("{}"), TypeError,
         "data must be a dict from export_weights; got str"),
    case("import_format", lambda: import_weights(bad_export(format="v0")), ValueError,
         "data has format 'v0'; expected 'attnlib.transformer/1'"),
    case("import_missing_tensor", lambda: import_weights({**bad_export(), "tensors": {}}), ValueError,
         "data['tensors'] must hold exactly"),
    case("import_shape", lambda: import_weights(bad_export(W_U={"shape": [7, 6], "data": ""})), ValueError,
         "tensor W_U has shape [7, 6] but the config needs [6, 7]"),
    case("import_short_data", lambda: import_weights(bad_export(W_U={"shape": [6, 7], "data": "AAAA"})),
         ValueError,
         "tensor W_U holds 3 bytes; shape [6, 7] needs 168"),
]


@pytest.mark.parametrize(("call", "exc", "match"), BAD_INPUTS)
def test_bad_input_raises_a_message_naming_it(call, exc, match) -> None:
    with pytest.raises(exc, match=match):
        call()


def test_bad_input_catalogue_is_distinct() -> None:
    ids = [p.id for p in BAD_INPUTS]
    assert len(ids) == len(set(ids)) >= 40
    assert len({p.values[2] for p in BAD_INPUTS}) == len(BAD_INPUTS)
