"""The exact gradient of the transformer's cross-entropy, one forward line at a time, read bottom up.

For the loss ``L = mean over the chosen positions of −log softmax(logits_i)[target_i]``:

* ``logits = x_L W_U``: ``dlogits = (softmax(logits) − onehot(target)) / count`` at the chosen positions
  (zero elsewhere), ``dW_U = x_Lᵀ dlogits``, ``dx_L = dlogits W_Uᵀ``.
* ``x_{l+1} = x_l + concat(heads) W_O``: ``dW_O = concatᵀ dx``, ``dconcat = dx W_Oᵀ``; the residual
  passes ``dx`` through unchanged.
* each head: :func:`attnlib.grad.attention_backward` with ``is_causal=True`` gives ``dQ_h, dK_h, dV_h``
  (a masked weight is 0 and passes nothing back), then ``dW_Q = xᵀ [dQ_0 | …]`` and
  ``dx += [dQ_0 | …] W_Qᵀ`` (likewise for K and V).
* ``x_0 = W_E[tokens] + W_pos[:n]``: ``dW_E`` sums ``dx_0`` over the positions holding each token,
  ``dW_pos[:n]`` sums it over the batch.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from attnlib.core import scale_for
from attnlib.grad import attention_backward
from attnlib.multihead import merge_heads, split_heads
from attnlib.transformer.model import (
    TransformerParams,
    _check_params,
    _check_tokens,
    _layers,
)

__all__ = ["cross_entropy", "loss_and_grads"]


def _loss_grad(logits: np.ndarray, targets: np.ndarray, mask: np.ndarray) -> tuple[float, np.ndarray]:
    """The mean cross-entropy over the masked positions, and its gradient with respect to the logits."""
    count = int(mask.sum())
    z = logits - logits.max(axis=-1, keepdims=True)  # (..., n, vocab)
    log_p = z - np.log(np.exp(z).sum(axis=-1, keepdims=True))  # (..., n, vocab)
    picked = np.take_along_axis(log_p, targets[..., None], axis=-1)[..., 0]  # (..., n)
    loss = -float(picked[mask].sum()) / count
    dlogits = np.exp(log_p)  # (..., n, vocab): the softmax
    at = targets[..., None]  # (..., n, 1)
    np.put_along_axis(dlogits, at, np.take_along_axis(dlogits, at, -1) - 1.0, -1)  # softmax − onehot
    dlogits *= mask[..., None] / count
    return loss, dlogits


def _check_targets(targets: Any, loss_mask: Any, tokens: np.ndarray, params: TransformerParams) -> tuple[
    np.ndarray, np.ndarray
]:
    t = _check_tokens(targets, params.config, "targets")
    if t.shape != tokens.shape:
        raise ValueError(f"targets must have the shape of tokens {tokens.shape}; got {t.shape}")
    m = np.asarray(loss_mask)
    if m.dtype.kind != "b":
        raise TypeError(f"loss_mask must be boolean (True = counted); got dtype {m.dtype}")
    if m.shape != tokens.shape:
        raise ValueError(f"loss_mask must have the shape of tokens {tokens.shape}; got {m.shape}")
    if not m.any():
        raise ValueError("loss_mask selects no position; the loss would be 0/0")
    return t, m


def cross_entropy(params: TransformerParams, tokens: Any, targets: Any, loss_mask: Any) -> float:
    """Mean cross-entropy of the model's predictions at the positions ``loss_mask`` selects.

    Parameters
    ----------
    params : TransformerParams
    tokens : (..., n) array_like of int
        The input.
    targets : (..., n) array_like of int
        The token each position should predict (its value where ``loss_mask`` is False is ignored,
        but must be a valid id).
    loss_mask : (..., n) array_like of bool
        The positions counted; at least one.

    Returns
    -------
    float
        ``mean_i −log softmax(logits_i)[targets_i]`` over the selected positions, in nats.

    Raises
    ------
    TypeError
        ``params`` not :class:`~attnlib.transformer.model.TransformerParams`, non-integer tokens or
        targets, a non-boolean mask.
    ValueError
        Ids out of range, too many positions, shapes that differ from ``tokens``', an empty mask.

    Examples
    --------
    >>> from attnlib.transformer.model import TransformerConfig, init_params
    >>> cfg = TransformerConfig(vocab=4, n_ctx=4, d_model=4, n_layers=1, n_heads=1)
    >>> p = init_params(cfg, np.random.default_rng(0))
    >>> p.W_U[:] = 0.0  # uniform predictions: the loss is log(vocab)
    >>> bool(np.isclose(cross_entropy(p, [0, 1, 2], [1, 2, 3], [True, True, False]), np.log(4)))
    True
    """
    p = _check_params(params)
    tok = _check_tokens(tokens, p.config)
    t, m = _check_targets(targets, loss_mask, tok, p)
    logits = _layers(p, tok)[0]
    return _loss_grad(logits, t, m)[0]


def _loss_and_grads(
    p: TransformerParams, tokens: np.ndarray, targets: np.ndarray, mask: np.ndarray
) -> tuple[float, TransformerParams, np.ndarray]:
    """:func:`loss_and_grads` without the checks; also returns the logits."""
    cfg = p.config
    n = tokens.shape[-1]
    scale = scale_for(cfg.d_head)
    logits, layers, last = _layers(p, tokens)
    loss, dlogits = _loss_grad(logits, targets, mask)  # (..., n, vocab)
    flat = dlogits.reshape(-1, cfg.vocab)  # (rows, vocab)
    g = {"W_U": last.reshape(-1, cfg.d_model).T @ flat}  # (d_model, vocab)
    dx = flat @ p.W_U.T  # (rows, d_model)
    for name in ("W_Q", "W_K", "W_V", "W_O"):
        g[name] = np.zeros_like(p.W_Q)
    lead = tokens.shape[:-1]
    for layer in reversed(range(cfg.n_layers)):
        t = layers[layer]
        x = t.x.reshape(-1, cfg.d_model)  # (rows, d_model)
        concat = merge_heads(t.out).reshape(-1, cfg.d_model)  # (rows, d_model)
        g["W_O"][layer] = concat.T @ dx  # (d_model, d_model)
        dconcat = (dx @ p.W_O[layer].T).reshape(*lead, n, cfg.d_model)  # (..., n, d_model)
        dout = split_heads(dconcat, cfg.n_heads)  # (..., H, n, d_head)
        dQ, dK, dV = attention_backward(t.Q, t.K, t.V, dout, scale=scale, is_causal=True)
        for name, dh in (("W_Q", dQ), ("W_K", dK), ("W_V", dV)):
            dproj = merge_heads(dh).reshape(-1, cfg.d_model)  # (rows, d_model)
            g[name][layer] = x.T @ dproj  # (d_model, d_model)
            dx = dx + dproj @ getattr(p, name)[layer].T  # (rows, d_model)
    onehot = tokens.reshape(-1, 1) == np.arange(cfg.vocab)  # (rows, vocab)
    dW_E = onehot.T.astype(np.float64) @ dx  # (vocab, d_model): dx_0 summed over each token's positions
    dW_pos = np.zeros_like(p.W_pos)
    dW_pos[:n] = dx.reshape(-1, n, cfg.d_model).sum(axis=0)  # (n, d_model)
    return loss, TransformerParams(cfg, W_E=dW_E, W_pos=dW_pos, **g), logits


def loss_and_grads(
    params: TransformerParams, tokens: Any, targets: Any, loss_mask: Any
) -> tuple[float, TransformerParams]:
    """The loss of :func:`cross_entropy` and its exact gradient with respect to every weight.

    Parameters
    ----------
    params : TransformerParams
    tokens, targets : (..., n) array_like of int
    loss_mask : (..., n) array_like of bool
        As for :func:`cross_entropy`.

    Returns
    -------
    loss : float
    grads : TransformerParams
        ``∂loss/∂W`` for every tensor, in the same container (rows of ``W_pos`` beyond ``n`` are 0).

    Raises
    ------
    TypeError, ValueError
        As :func:`cross_entropy`.

    Examples
    --------
    >>> from attnlib.transformer.model import TransformerConfig, init_params
    >>> cfg = TransformerConfig(vocab=5, n_ctx=6, d_model=8, n_layers=2, n_heads=2)
    >>> p = init_params(cfg, np.random.default_rng(0))
    >>> tok, tgt, m = [0, 3, 1, 4], [3, 1, 4, 2], [False, True, True, True]
    >>> loss, g = loss_and_grads(p, tok, tgt, m)
    >>> q = p.copy()
    >>> q.W_K[1, 2, 5] += 1e-6
    >>> r = p.copy()
    >>> r.W_K[1, 2, 5] -= 1e-6
    >>> slope = (cross_entropy(q, tok, tgt, m) - cross_entropy(r, tok, tgt, m)) / 2e-6
    >>> bool(np.isclose(slope, g.W_K[1, 2, 5], rtol=1e-6))
    True
    """
    p = _check_params(params)
    tok = _check_tokens(tokens, p.config)
    t, m = _check_targets(targets, loss_mask, tok, p)
    loss, grads, _ = _loss_and_grads(p, tok, t, m)
    return loss, grads
