"""Tests of attnlib.transformer.train: two layers learn in-context copying, one layer cannot.

The chapter's claims, each asserted on the chapter's own runs (seed 0, the defaults of train_copying):
the 2-layer loss plateaus and then falls fast, a previous-token head forms in layer 0 and induction
heads in layer 1 as it falls, ablating the previous-token head breaks the circuit, and a 1-layer model
trained with the same budget stays near the loss of guessing among the segment's letters.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from attnlib.transformer import (
    TENSOR_NAMES,
    CopyingRun,
    TransformerConfig,
    ablation_losses,
    copying_accuracy,
    copying_config,
    decode_letters,
    encode_letters,
    export_weights,
    forward,
    generate,
    import_weights,
    init_params,
    train_copying,
)


@pytest.fixture(scope="module")
def two_layers() -> CopyingRun:
    return train_copying(copying_config(2), seed=0, checkpoints=range(0, 300, 25))


@pytest.fixture(scope="module")
def one_layer() -> CopyingRun:
    return train_copying(copying_config(1), seed=0)


def smoothed(run: CopyingRun) -> np.ndarray:
    return np.convolve(run.losses, np.ones(20) / 20, mode="valid")  # entry k: mean of steps k .. k + 19


def test_two_layers_learn_to_copy(two_layers: CopyingRun) -> None:
    final = two_layers.final
    assert final.step == 300 and final.accuracy > 0.9 and final.loss < 0.3
    assert two_layers.checkpoints[0].loss > 3.0  # ≈ log 26 at the start


def test_the_loss_plateaus_then_falls_fast(two_layers: CopyingRun) -> None:
    sm = smoothed(two_layers)
    assert sm[:60].min() > 2.8  # the first 80 steps: a plateau near log 26
    onset = int(np.argmax(sm < 2.5))
    done = int(np.argmax(sm < 0.5))
    assert 60 < onset < done and done - onset < 100  # then from 2.5 to 0.5 nats in under 100 steps
    assert onset + 19 < two_layers.drop_step() < done + 19  # half the start loss is crossed in between


def test_a_previous_token_head_and_induction_heads_form_as_the_loss_falls(two_layers: CopyingRun) -> None:
    start, final = two_layers.checkpoints[0].scores, two_layers.final.scores
    assert start.previous_token.max() < 0.2 and start.induction.max() < 0.2  # nobody specialised at init
    assert final.previous_token[0].max() > 0.6  # layer 0: a previous-token head
    assert final.induction[1].min() > 0.9  # layer 1: both heads are induction heads
    assert final.induction[0].max() < 0.2 and final.previous_token[1].max() < 0.2
    mid = next(c for c in two_layers.checkpoints if c.step == 100)
    assert mid.scores.induction.max() < 0.3 and mid.loss > 2.5  # still on the plateau: no circuit yet


def test_ablating_the_previous_token_head_breaks_the_circuit(two_layers: CopyingRun) -> None:
    final = two_layers.final
    got = ablation_losses(final.params, two_layers.held_out)
    prev = int(final.scores.previous_token[0].argmax())
    assert got[0, prev] > final.loss + 2.0  # without it the induction heads have nothing to match
    assert got[0, 1 - prev] < final.loss + 0.2  # the other layer-0 head hardly matters
    assert np.all(got[1] > final.loss + 0.1)  # each induction head carries part of the copying
    assert np.all(got[1] < got[0, prev])  # two induction heads back each other up


def test_one_layer_cannot_copy_with_the_same_budget(one_layer: CopyingRun, two_layers: CopyingRun) -> None:
    assert one_layer.steps == two_layers.steps and one_layer.batch == two_layers.batch
    assert one_layer.final.loss > 2.0 and one_layer.final.accuracy < 0.4
    assert one_layer.final.scores.induction.max() < 0.3
    assert smoothed(one_layer).min() > 2.0


def test_training_is_deterministic_in_the_seed() -> None:
    cfg = TransformerConfig(vocab=8, n_ctx=8, d_model=8, n_layers=2, n_heads=2)
    kw = {"steps": 15, "batch": 4, "half_lengths": (2, 4), "eval_batch": 8, "checkpoints": [0]}
    a, b, c = (train_copying(cfg, seed=s, **kw) for s in (3, 3, 4))
    assert np.array_equal(a.losses, b.losses) and not np.array_equal(a.losses, c.losses)
    assert all(np.array_equal(getattr(a.final.params, k), getattr(b.final.params, k)) for k in TENSOR_NAMES)
    init = init_params(cfg, np.random.default_rng(np.random.SeedSequence(3).spawn(3)[0]))
    assert np.array_equal(a.checkpoints[0].params.W_Q, init.W_Q)  # step 0 is the initial weights
    assert not np.array_equal(a.final.params.W_Q, init.W_Q)


def test_the_trained_model_continues_a_repeat_with_and_without_the_cache(two_layers: CopyingRun) -> None:
    p = two_layers.final.params
    prompt = encode_letters("xyzhelowrdhelowr")  # filler, a segment, and most of its repeat
    cached, full = generate(p, prompt, 6), generate(p, prompt, 6, use_cache=False)
    assert decode_letters(cached.tokens[len(prompt):]).startswith("d")  # the repeat's next letter
    assert np.abs(cached.logits - full.logits).max() <= 1e-12
    assert np.array_equal(cached.tokens, full.tokens)


def test_the_trained_export_is_small_and_close_to_the_float64_model(two_layers: CopyingRun) -> None:
    p, held = two_layers.final.params, two_layers.held_out
    text = json.dumps(export_weights(p))
    assert len(text) <= 60_000
    q = import_weights(json.loads(text))
    diff = np.abs(forward(q, held.tokens)[0] - forward(p, held.tokens)[0]).max()
    assert diff <= 1e-4  # logits within 1e-4 (float32 keeps ~7 digits of weights of size ~1)
    loss, acc = copying_accuracy(q, held)
    assert abs(acc - two_layers.final.accuracy) <= 0.002 and abs(loss - two_layers.final.loss) <= 1e-4
