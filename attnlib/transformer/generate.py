"""Greedy generation, one token at a time, with a key–value cache per layer and head.

Each new token's embedding goes through the layers once: in every head its key and value are appended
to that head's :class:`attnlib.kvcache.KVCache` and its query attends to everything cached, which is
what causal attention over the whole prefix computes for the last position.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from attnlib import _validation as _v
from attnlib.core import scale_for
from attnlib.kvcache import KVCache
from attnlib.transformer.model import TransformerParams, _check_params, _check_tokens, _forward

__all__ = ["Generation", "generate"]


@dataclass(frozen=True, eq=False)
class Generation:
    """The result of :func:`generate`.

    Attributes
    ----------
    tokens : ndarray of int64, shape (len(prompt) + n_new,)
        The prompt followed by the generated tokens.
    logits : ndarray, shape (n_new, vocab)
        The logits each generated token was chosen from (its argmax).
    """

    tokens: np.ndarray
    logits: np.ndarray


def _step(p: TransformerParams, caches: list[list[KVCache]], token: int, position: int) -> np.ndarray:
    """Feed one token through the layers, appending to the caches; the logits of its position."""
    cfg = p.config
    d_head, scale = cfg.d_head, scale_for(cfg.d_head)
    x = p.W_E[token] + p.W_pos[position]  # (d_model,)
    for layer in range(cfg.n_layers):
        q, k, v = (x @ W[layer] for W in (p.W_Q, p.W_K, p.W_V))  # 3 × (d_model,)
        heads = []
        for h, cache in enumerate(caches[layer]):
            cols = slice(h * d_head, (h + 1) * d_head)
            cache.append(k[cols], v[cols])
            heads.append(cache.attend(q[cols], scale=scale))  # (d_head,)
        x = x + np.concatenate(heads) @ p.W_O[layer]  # (d_model,)
    return x @ p.W_U  # (vocab,)


def generate(params: TransformerParams, prompt: Any, n_new: int, *, use_cache: bool = True) -> Generation:
    """Extend ``prompt`` by ``n_new`` tokens, each the argmax of the model's logits.

    Parameters
    ----------
    params : TransformerParams
    prompt : (n,) array_like of int
        At least one token; ``len(prompt) + n_new − 1 <= n_ctx`` (the last token is never fed back).
    n_new : int
        Tokens to generate.
    use_cache : bool
        With a :class:`~attnlib.kvcache.KVCache` per layer and head (the default), each token is fed
        through the model once; without, every step recomputes :func:`~attnlib.transformer.model.forward`
        over the whole prefix. The two agree to rounding.

    Returns
    -------
    Generation

    Raises
    ------
    TypeError
        ``params`` not :class:`~attnlib.transformer.model.TransformerParams`, non-integer tokens or
        ``n_new``, a non-boolean ``use_cache``.
    ValueError
        A prompt that is not 1-D or holds ids out of range, a non-positive ``n_new``, or a sequence
        that would outgrow ``n_ctx``.

    Examples
    --------
    >>> from attnlib.transformer.model import TransformerConfig, init_params
    >>> cfg = TransformerConfig(vocab=6, n_ctx=8, d_model=8, n_layers=2, n_heads=2)
    >>> p = init_params(cfg, np.random.default_rng(0))
    >>> a, b = generate(p, [1, 2, 3], 4), generate(p, [1, 2, 3], 4, use_cache=False)
    >>> a.tokens.shape, bool(np.abs(a.logits - b.logits).max() < 1e-12)
    ((7,), True)
    """
    p = _check_params(params)
    cfg = p.config
    tokens = _check_tokens(prompt, cfg, "prompt")
    if tokens.ndim != 1:
        raise ValueError(f"prompt must be one sequence (n,); got shape {tokens.shape}")
    n_new = _v.check_positive_int(n_new, "n_new")
    use_cache = _v.check_bool_flag(use_cache, "use_cache")
    n0 = tokens.shape[0]
    if n0 + n_new - 1 > cfg.n_ctx:
        raise ValueError(
            f"a prompt of {n0} tokens and n_new={n_new} need {n0 + n_new - 1} positions but n_ctx={cfg.n_ctx}"
        )
    out = list(tokens.tolist())
    logits = np.empty((n_new, cfg.vocab))
    caches = [[KVCache(cfg.d_head, cfg.d_head, capacity=cfg.n_ctx) for _ in range(cfg.n_heads)]
              for _ in range(cfg.n_layers)]
    for pos, token in enumerate(out[:-1]):
        if use_cache:
            _step(p, caches, token, pos)  # the prompt fills the caches
    for s in range(n_new):
        if use_cache:
            logits[s] = _step(p, caches, out[-1], len(out) - 1)
        else:
            logits[s] = _forward(p, np.array(out, dtype=np.int64))[0][-1]
        out.append(int(logits[s].argmax()))
    return Generation(tokens=np.array(out, dtype=np.int64), logits=logits)
