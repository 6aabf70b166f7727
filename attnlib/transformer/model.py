"""A decoder-only, attention-only transformer: its configuration, its weights and its forward pass.

Written as the formula reads (no layer norm, no MLP, no biases)::

    x_0 = W_E[tokens] + W_pos[:n]                                   # (..., n, d_model)
    x_{l+1} = x_l + [head_0 | ... | head_{H-1}](x_l) W_O[l]         # each head causal, on the residual stream
    logits = x_L W_U                                                # (..., n, vocab)

with ``head_h(x) = softmax(Q_h K_hᵀ / √d_head + causal) V_h`` and ``Q = x W_Q[l]`` cut into heads by
:func:`attnlib.multihead.split_heads`. :func:`forward` returns the logits and a :class:`ForwardTrace`
holding every head's attention weights and what the backward pass and the ablations need.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from attnlib import _validation as _v
from attnlib.core import scale_for, scaled_dot_product_attention
from attnlib.multihead import merge_heads, split_heads

__all__ = ["TransformerConfig", "TransformerParams", "TENSOR_NAMES", "init_params", "ForwardTrace", "forward"]

#: The weight tensors of a model, in the order of the formula.
TENSOR_NAMES: tuple[str, ...] = ("W_E", "W_pos", "W_Q", "W_K", "W_V", "W_O", "W_U")


@dataclass(frozen=True)
class TransformerConfig:
    """The sizes of an attention-only transformer.

    Parameters
    ----------
    vocab : int
        Number of token ids, ``0 .. vocab − 1``.
    n_ctx : int
        Longest sequence the position embedding covers.
    d_model : int
        Width of the residual stream.
    n_layers : int
        Attention layers.
    n_heads : int
        Heads per layer; must divide ``d_model`` (each head has ``d_head = d_model // n_heads``).

    Raises
    ------
    TypeError
        A size that is not an integer.
    ValueError
        A size that is not positive, or ``n_heads`` not dividing ``d_model``.

    Examples
    --------
    >>> cfg = TransformerConfig(vocab=10, n_ctx=8, d_model=16, n_layers=2, n_heads=4)
    >>> cfg.d_head, cfg.n_params  # 10·16 + 8·16 + 4·2·16·16 + 16·10 weights
    (4, 2496)
    """

    vocab: int
    n_ctx: int
    d_model: int
    n_layers: int
    n_heads: int

    def __post_init__(self) -> None:
        for name in ("vocab", "n_ctx", "d_model", "n_layers", "n_heads"):
            object.__setattr__(self, name, _v.check_positive_int(getattr(self, name), name))
        if self.d_model % self.n_heads:
            raise ValueError(
                f"n_heads={self.n_heads} does not divide d_model={self.d_model}; "
                f"each head needs d_model / n_heads columns"
            )

    @property
    def d_head(self) -> int:
        """Width of one head's queries, keys and values."""
        return self.d_model // self.n_heads

    def shapes(self) -> dict[str, tuple[int, ...]]:
        """The shape of every tensor of :data:`TENSOR_NAMES`."""
        L, d = self.n_layers, self.d_model
        return {
            "W_E": (self.vocab, d), "W_pos": (self.n_ctx, d), "W_Q": (L, d, d), "W_K": (L, d, d),
            "W_V": (L, d, d), "W_O": (L, d, d), "W_U": (d, self.vocab),
        }

    @property
    def n_params(self) -> int:
        """Number of weights."""
        return sum(math.prod(s) for s in self.shapes().values())


@dataclass(frozen=True, eq=False)
class TransformerParams:
    """The weights of a model (or gradients of the same shapes), float64.

    Attributes
    ----------
    config : TransformerConfig
    W_E : ndarray, shape (vocab, d_model)
        Token embedding.
    W_pos : ndarray, shape (n_ctx, d_model)
        Position embedding.
    W_Q, W_K, W_V : ndarray, shape (n_layers, d_model, d_model)
        Per layer, the projections of every head side by side (head ``h`` owns columns
        ``h·d_head : (h+1)·d_head``).
    W_O : ndarray, shape (n_layers, d_model, d_model)
        Per layer, the output projection of the concatenated heads (head ``h`` owns those rows).
    W_U : ndarray, shape (d_model, vocab)
        Unembedding.

    Raises
    ------
    TypeError
        ``config`` is not a :class:`TransformerConfig`, or a tensor is not real-valued.
    ValueError
        A tensor whose shape is not the config's, or that holds NaN or infinities.

    Examples
    --------
    >>> cfg = TransformerConfig(vocab=5, n_ctx=4, d_model=4, n_layers=1, n_heads=2)
    >>> p = TransformerParams(cfg, **{k: np.zeros(s) for k, s in cfg.shapes().items()})
    >>> list(p.tensors()), p.copy().W_O.shape
    (['W_E', 'W_pos', 'W_Q', 'W_K', 'W_V', 'W_O', 'W_U'], (1, 4, 4))
    """

    config: TransformerConfig
    W_E: np.ndarray
    W_pos: np.ndarray
    W_Q: np.ndarray
    W_K: np.ndarray
    W_V: np.ndarray
    W_O: np.ndarray
    W_U: np.ndarray

    def __post_init__(self) -> None:
        if not isinstance(self.config, TransformerConfig):
            raise TypeError(f"config must be a TransformerConfig; got {type(self.config).__name__}")
        for name, shape in self.config.shapes().items():
            arr = _v.as_float_array(getattr(self, name), name).astype(np.float64, copy=False)
            if arr.shape != shape:
                raise ValueError(f"{name} must have shape {shape} for this config; got {arr.shape}")
            object.__setattr__(self, name, arr)

    def tensors(self) -> dict[str, np.ndarray]:
        """The tensors by name, in the order of :data:`TENSOR_NAMES` (the arrays themselves, not copies)."""
        return {name: getattr(self, name) for name in TENSOR_NAMES}

    def copy(self) -> TransformerParams:
        """A deep copy (the arrays copied)."""
        return TransformerParams(self.config, **{k: v.copy() for k, v in self.tensors().items()})


def init_params(config: TransformerConfig, rng: np.random.Generator) -> TransformerParams:
    """Weights drawn from normal distributions scaled so the residual stream starts with norm about 1.

    Embeddings have entries ``N(0, 1/d_model)`` (rows of norm about 1); ``W_Q``, ``W_K``, ``W_V`` and
    ``W_U`` have ``N(0, 1/d_model)`` entries (they keep the norm of a row they multiply); ``W_O`` is
    ``N(0, 1/(d_model · 2 n_layers))``, so that the layers' additions leave the stream's norm near 1.

    Parameters
    ----------
    config : TransformerConfig
    rng : numpy.random.Generator
        The only source of randomness (the tensors are drawn in the order of :data:`TENSOR_NAMES`).

    Returns
    -------
    TransformerParams

    Raises
    ------
    TypeError
        ``config`` is not a :class:`TransformerConfig`, or ``rng`` not a Generator.

    Examples
    --------
    >>> cfg = TransformerConfig(vocab=10, n_ctx=8, d_model=16, n_layers=2, n_heads=4)
    >>> p = init_params(cfg, np.random.default_rng(0))
    >>> p.W_Q.shape, bool(np.array_equal(p.W_U, init_params(cfg, np.random.default_rng(0)).W_U))
    ((2, 16, 16), True)
    """
    if not isinstance(config, TransformerConfig):
        raise TypeError(f"config must be a TransformerConfig; got {type(config).__name__}")
    rng = _v.check_rng(rng)
    std = 1.0 / math.sqrt(config.d_model)
    stds = dict.fromkeys(TENSOR_NAMES, std)
    stds["W_O"] = std / math.sqrt(2 * config.n_layers)
    return TransformerParams(
        config, **{name: rng.normal(0.0, stds[name], shape) for name, shape in config.shapes().items()}
    )


@dataclass(frozen=True, eq=False)
class ForwardTrace:
    """What :func:`forward` computed on the way to the logits (arrays float64, batch axes ``...``).

    Attributes
    ----------
    tokens : ndarray of int, shape (..., n)
    weights : ndarray, shape (..., n_layers, n_heads, n, n)
        Every head's causal attention weights; ``weights[..., l, h, i, j]`` is what position ``i`` puts on
        position ``j`` in head ``h`` of layer ``l``.
    residual : ndarray, shape (n_layers + 1, ..., n, d_model)
        The residual stream: ``residual[0]`` the embeddings, ``residual[l + 1]`` after layer ``l``.
    head_outputs : ndarray, shape (n_layers, ..., n_heads, n, d_head)
        Each head's ``weights @ V`` (zero for an ablated head).
    Q, K, V : ndarray, shape (n_layers, ..., n_heads, n, d_head)
        Each head's queries, keys and values.
    ablated : frozenset of (int, int)
        The ``(layer, head)`` pairs whose output was zeroed.
    """

    tokens: np.ndarray
    weights: np.ndarray
    residual: np.ndarray
    head_outputs: np.ndarray
    Q: np.ndarray
    K: np.ndarray
    V: np.ndarray
    ablated: frozenset[tuple[int, int]] = frozenset()


def _check_params(params: Any) -> TransformerParams:
    """``params`` if it is a :class:`TransformerParams`; ``TypeError`` otherwise."""
    if not isinstance(params, TransformerParams):
        raise TypeError(f"params must be TransformerParams (see init_params); got {type(params).__name__}")
    return params


def _check_tokens(tokens: Any, config: TransformerConfig, name: str = "tokens") -> np.ndarray:
    """``tokens`` as an int64 array ``(..., n)`` of ids in ``0 .. vocab − 1`` with ``1 <= n <= n_ctx``."""
    arr = np.asarray(tokens)
    if arr.dtype.kind not in "iu":
        raise TypeError(f"{name} must be integer token ids; got dtype {arr.dtype}")
    if arr.ndim == 0:
        raise ValueError(f"{name} must have shape (..., n) (one sequence or a batch); got a scalar")
    n = arr.shape[-1]
    if n == 0 or arr.size == 0:
        raise ValueError(f"{name} is empty; shape {arr.shape}")
    if n > config.n_ctx:
        raise ValueError(
            f"{name} has n={n} positions but the model's n_ctx={config.n_ctx} (shape {arr.shape})"
        )
    bad = (arr < 0) | (arr >= config.vocab)
    if bad.any():
        first = tuple(int(i) for i in np.argwhere(bad)[0])
        raise ValueError(
            f"{name} must lie in 0..vocab-1={config.vocab - 1}; got {int(arr[first])} at index {first} "
            f"({int(bad.sum())} out of range)"
        )
    return arr.astype(np.int64, copy=False)


def _check_ablate(ablate: Any, config: TransformerConfig) -> frozenset[tuple[int, int]]:
    """``ablate``, an iterable of ``(layer, head)`` pairs, as a frozenset of checked pairs."""
    if ablate is None:
        return frozenset()
    if not isinstance(ablate, Iterable):
        raise TypeError(f"ablate must be an iterable of (layer, head) pairs; got {type(ablate).__name__}")
    pairs = set()
    for pair in ablate:
        if (not isinstance(pair, tuple) or len(pair) != 2
                or not all(isinstance(i, numbers.Integral) and not isinstance(i, bool) for i in pair)):
            raise TypeError(f"ablate must hold (layer, head) pairs of integers; got {pair!r}")
        layer, head = int(pair[0]), int(pair[1])
        if not (0 <= layer < config.n_layers and 0 <= head < config.n_heads):
            raise ValueError(
                f"ablate names (layer, head) = ({layer}, {head}) but the model has "
                f"n_layers={config.n_layers}, n_heads={config.n_heads}"
            )
        pairs.add((layer, head))
    return frozenset(pairs)


class _Layer(NamedTuple):
    """What one layer computed: its input ``x`` and every head's ``Q, K, V``, weights ``P`` and output."""

    x: np.ndarray  # (..., n, d_model)
    Q: np.ndarray  # (..., H, n, d_head)
    K: np.ndarray  # (..., H, n, d_head)
    V: np.ndarray  # (..., H, n, d_head)
    P: np.ndarray  # (..., H, n, n)
    out: np.ndarray  # (..., H, n, d_head)


def _layers(
    p: TransformerParams, tokens: np.ndarray, ablated: frozenset[tuple[int, int]] = frozenset()
) -> tuple[np.ndarray, list[_Layer], np.ndarray]:
    """The logits, what each layer computed, and the last residual stream (no checks, no copies)."""
    cfg = p.config
    n = tokens.shape[-1]
    scale = scale_for(cfg.d_head)
    x = p.W_E[tokens] + p.W_pos[:n]  # (..., n, d_model)
    layers = []
    for layer in range(cfg.n_layers):
        Q = split_heads(x @ p.W_Q[layer], cfg.n_heads)  # (..., H, n, d_head)
        K = split_heads(x @ p.W_K[layer], cfg.n_heads)  # (..., H, n, d_head)
        V = split_heads(x @ p.W_V[layer], cfg.n_heads)  # (..., H, n, d_head)
        out, P = scaled_dot_product_attention(Q, K, V, is_causal=True, scale=scale, return_weights=True)
        for head in {h for (at, h) in ablated if at == layer}:
            out[..., head, :, :] = 0.0  # an ablated head writes nothing
        layers.append(_Layer(x, Q, K, V, P, out))
        x = x + merge_heads(out) @ p.W_O[layer]  # (..., n, d_model)
    return x @ p.W_U, layers, x  # logits (..., n, vocab)


def _forward(
    p: TransformerParams, tokens: np.ndarray, ablated: frozenset[tuple[int, int]] = frozenset()
) -> tuple[np.ndarray, ForwardTrace]:
    """:func:`forward` without the checks of its arguments."""
    logits, layers, last = _layers(p, tokens, ablated)
    trace = ForwardTrace(
        tokens=tokens,
        weights=np.stack([t.P for t in layers], axis=-4),  # (..., layers, H, n, n)
        residual=np.stack([t.x for t in layers] + [last]),  # (layers + 1, ..., n, d_model)
        head_outputs=np.stack([t.out for t in layers]),  # (layers, ..., H, n, d_head)
        Q=np.stack([t.Q for t in layers]),  # (layers, ..., H, n, d_head)
        K=np.stack([t.K for t in layers]),
        V=np.stack([t.V for t in layers]),
        ablated=ablated,
    )
    return logits, trace


def forward(
    params: TransformerParams, tokens: Any, *, ablate: Iterable[tuple[int, int]] | None = None
) -> tuple[np.ndarray, ForwardTrace]:
    """The logits of every position, and the trace of how they were computed.

    Parameters
    ----------
    params : TransformerParams
    tokens : (n,) or (batch, n) array_like of int
        Token ids in ``0 .. vocab − 1``, ``1 <= n <= n_ctx`` (any leading batch axes are allowed).
    ablate : iterable of (layer, head), optional
        Heads whose output is replaced by zeros (they still compute their weights).

    Returns
    -------
    logits : ndarray, shape (..., n, vocab)
        Position ``i``'s scores for the token at ``i + 1``.
    trace : ForwardTrace
        Its ``weights`` are ``(n_layers, n_heads, n, n)`` for one sequence.

    Raises
    ------
    TypeError
        ``params`` not :class:`TransformerParams`, non-integer tokens, badly formed ``ablate``.
    ValueError
        Tokens out of range, more than ``n_ctx`` positions, no positions, a head in ``ablate``
        that does not exist.

    Examples
    --------
    >>> cfg = TransformerConfig(vocab=5, n_ctx=6, d_model=8, n_layers=2, n_heads=2)
    >>> p = init_params(cfg, np.random.default_rng(0))
    >>> logits, trace = forward(p, [0, 3, 1, 4])
    >>> logits.shape, trace.weights.shape
    ((4, 5), (2, 2, 4, 4))
    >>> float(trace.weights[0, 1, 0, 0]), float(trace.weights[0, 1, 0, 1])  # position 0 sees only itself
    (1.0, 0.0)
    """
    p = _check_params(params)
    return _forward(p, _check_tokens(tokens, p.config), _check_ablate(ablate, p.config))
