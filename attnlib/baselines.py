"""What came before scaled dot-product attention, as small computations.

Three questions, each answered by counting or computing rather than asserting:

* :func:`rnn_states` and :func:`input_influence` – a toy recurrent encoder
  ``s_t = tanh(x_t W_x + s_{t-1} W_s + b)`` and how strongly its state at
  step ``t`` still depends on an early input (the exact Jacobian norm, by the
  chain rule). Steps count from 0, as positions do everywhere in the book.
* :func:`sequential_steps`, :func:`max_path_length` and :func:`path_table` –
  how many steps must run one after another, and how many hops separate the
  first token's input from the last token's output, in a nonlinear recurrence
  and in one attention layer.
* :func:`additive_scores` and :func:`score_costs` – the additive score of
  Bahdanau et al. (2015), ``tanh(q W_1 + k W_2) uᵀ``, and the exact operation
  counts of additive against dot-product scoring.

The recurrent encoder here is a toy: random weights, no training, no gates.
Gated recurrences (LSTM, GRU) were designed to keep information longer; they
mitigate the fading this module measures but keep the fixed-size state and
the step-by-step schedule.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass
from typing import Any

import numpy as np

from attnlib import _validation as _v

__all__ = [
    "ACTIVATIONS",
    "KINDS",
    "rnn_states",
    "input_influence",
    "sequential_steps",
    "max_path_length",
    "path_table",
    "additive_scores",
    "ScoreCost",
    "ScoreCosts",
    "score_costs",
]

#: Activations accepted by :func:`rnn_states` and :func:`input_influence`.
ACTIVATIONS: tuple[str, ...] = ("tanh", "linear")

#: Sequence models compared by :func:`sequential_steps` and :func:`max_path_length`.
KINDS: tuple[str, ...] = ("recurrent", "attention")


# --------------------------------------------------------------------------- validation
def _check_activation(activation: Any) -> str:
    if not isinstance(activation, str) or activation not in ACTIVATIONS:
        raise ValueError(f"activation must be one of {ACTIVATIONS}; got {activation!r}")
    return activation


def _check_kind(kind: Any) -> str:
    if not isinstance(kind, str) or kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}; got {kind!r}")
    return kind


def _matrix(x: Any, name: str, rows: str, cols: str) -> np.ndarray:
    arr = _v.as_float_array(x, name)
    if arr.ndim != 2:
        raise ValueError(f"{name} must be a 2-D array of shape ({rows}, {cols}); got shape {arr.shape}")
    _v.check_sequence_matrix(arr, name, rows, cols)
    return arr


def _rnn_inputs(
    X: Any, W_x: Any, W_s: Any, b: Any
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    X = _matrix(X, "X", "n", "d_in")
    W_x = _matrix(W_x, "W_x", "d_in", "d_s")
    W_s = _matrix(W_s, "W_s", "d_s", "d_s")
    if W_x.shape[0] != X.shape[1]:
        raise ValueError(
            f"W_x has {W_x.shape[0]} rows but X has d_in={X.shape[1]} columns "
            f"(X {X.shape}, W_x {W_x.shape})"
        )
    d_s = W_x.shape[1]
    if W_s.shape != (d_s, d_s):
        raise ValueError(
            f"W_s must be square of shape (d_s, d_s) = ({d_s}, {d_s}) to match W_x {W_x.shape}; "
            f"got {W_s.shape}"
        )
    if b is None:
        b = np.zeros(d_s)
    else:
        b = _v.as_float_array(b, "b")
        if b.shape != (d_s,):
            raise ValueError(f"b must have shape (d_s,) = ({d_s},); got {b.shape}")
    return X, W_x, W_s, b


# --------------------------------------------------------------------------- recurrent encoder
def _run(
    X: np.ndarray, W_x: np.ndarray, W_s: np.ndarray, b: np.ndarray, activation: str
) -> np.ndarray:
    n, d_s = X.shape[0], W_x.shape[1]
    inputs = X @ W_x + b  # (n, d_in) @ (d_in, d_s) -> (n, d_s): all steps at once
    states = np.empty((n, d_s), dtype=np.result_type(X, W_x, W_s, b))
    s = np.zeros(d_s, dtype=states.dtype)  # s_{-1} = 0
    for t in range(n):  # a nonlinear recurrence cannot be parallelised over t
        a = inputs[t] + s @ W_s  # (d_s,) @ (d_s, d_s) -> (d_s,)
        s = np.tanh(a) if activation == "tanh" else a
        states[t] = s
    return states


def rnn_states(
    X: Any, W_x: Any, W_s: Any, b: Any = None, activation: str = "tanh"
) -> np.ndarray:
    """The states of a plain (Elman) recurrent encoder, one row per step.

    ``s_t = f(x_t W_x + s_{t-1} W_s + b)`` for ``t = 0, …, n-1``, with
    ``s_{-1} = 0`` and ``f = tanh`` (or the identity for
    ``activation="linear"``). Vectors are rows, as everywhere in the book, so
    the weights multiply from the right.

    Parameters
    ----------
    X : (n, d_in) array_like
        The input sequence, one row per token.
    W_x : (d_in, d_s) array_like
        Input-to-state weights.
    W_s : (d_s, d_s) array_like
        State-to-state (recurrent) weights.
    b : (d_s,) array_like, optional
        Bias; zero by default.
    activation : {"tanh", "linear"}
        The non-linearity ``f``.

    Returns
    -------
    states : (n, d_s) ndarray
        Row ``t`` is ``s_t``, the state after token ``t`` (row 0 follows the
        first token). The last row, ``s_{n-1}``, is the fixed-size summary of
        the whole sequence that a sequence-to-sequence encoder hands to its
        decoder.

    Raises
    ------
    TypeError
        An array is not real-valued.
    ValueError
        An array has the wrong number of dimensions or shapes that do not fit
        (the message names both), holds NaN or infinities, or ``activation``
        is unknown.

    Examples
    --------
    >>> X = [[1.0], [0.0], [0.0]]
    >>> rnn_states(X, [[1.0]], [[0.5]], activation="linear").ravel().tolist()
    [1.0, 0.5, 0.25]
    """
    X, W_x, W_s, b = _rnn_inputs(X, W_x, W_s, b)
    return _run(X, W_x, W_s, b, _check_activation(activation))


def input_influence(
    X: Any,
    W_x: Any,
    W_s: Any,
    t_from: int = 0,
    b: Any = None,
    activation: str = "tanh",
) -> np.ndarray:
    """How strongly each state depends on one early input: ``‖∂s_t / ∂x_{t_from}‖₂``.

    For every step ``t`` the Jacobian of the state ``s_t`` with respect to the
    input ``x_r`` (``r = t_from``) is computed exactly by the chain rule. In the
    row-vector convention a change ``dx`` of ``x_r`` changes ``s_t`` by
    ``dx J_{t,r}`` with

    ``J_{t,r} = W_x D_r (W_s D_{r+1}) (W_s D_{r+2}) ... (W_s D_t)``,

    where ``D_u = diag(1 - s_u²)`` is the derivative of tanh at step ``u`` (the
    identity for ``activation="linear"``). The returned number is the spectral
    norm of ``J_{t,r}``: the largest factor by which a small change to
    ``x_r`` can change ``s_t``. It is 0 for ``t < r`` (a state cannot depend
    on a later input). Each further step multiplies by one more ``W_s D_u``;
    when these factors shrink vectors, the influence of ``x_r`` decays
    geometrically with the distance ``t - r``.

    Parameters
    ----------
    X, W_x, W_s, b, activation
        As in :func:`rnn_states`.
    t_from : int
        The position ``r`` (counted from 0) of the input whose influence is measured.

    Returns
    -------
    influence : (n,) ndarray
        ``influence[t] = ‖∂s_t / ∂x_r‖₂`` (``t`` counted from 0); zero before ``r``.

    Raises
    ------
    TypeError
        An array is not real-valued, or ``t_from`` is not an integer.
    ValueError
        As in :func:`rnn_states`, or ``t_from`` is outside ``0 .. n-1``.

    Examples
    --------
    A linear one-unit recurrence with ``W_s = 0.5`` halves the influence
    at every step:

    >>> input_influence([[1.0]] * 4, [[1.0]], [[0.5]], activation="linear").tolist()
    [1.0, 0.5, 0.25, 0.125]
    """
    X, W_x, W_s, b = _rnn_inputs(X, W_x, W_s, b)
    activation = _check_activation(activation)
    n = X.shape[0]
    if isinstance(t_from, (bool, np.bool_)) or not isinstance(t_from, numbers.Integral):
        raise TypeError(f"t_from must be an integer; got {type(t_from).__name__} {t_from!r}")
    if not 0 <= t_from < n:
        raise ValueError(f"t_from must lie in 0 .. n-1 = 0 .. {n - 1} for X of shape {X.shape}; got {t_from}")
    states = _run(X, W_x, W_s, b, activation)
    deriv = 1.0 - states**2 if activation == "tanh" else np.ones_like(states)  # (n, d_s): diag of D_t
    influence = np.zeros(n, dtype=states.dtype)
    J = W_x * deriv[t_from]  # (d_in, d_s): W_x D_r
    influence[t_from] = np.linalg.norm(J, ord=2)
    for t in range(t_from + 1, n):
        J = (J @ W_s) * deriv[t]  # (d_in, d_s) @ (d_s, d_s) -> (d_in, d_s), then D_t
        influence[t] = np.linalg.norm(J, ord=2)
    return influence


# --------------------------------------------------------------------------- paths and steps
def sequential_steps(n: int, kind: str) -> int:
    """How many steps must run one after another to encode ``n`` tokens.

    A step is one application of the layer: a state update of a recurrence,
    one pass of an attention layer. Each is itself a short chain of
    operations that is the same for every ``n``, so this is the count
    that Vaswani et al. (2017), Table 1, write as ``O(n)`` and ``O(1)``.

    * ``"recurrent"``: ``n``, for a nonlinear recurrence such as the tanh one
      of :func:`rnn_states`. ``s_t`` needs ``s_{t-1}``, so the ``n`` state
      updates form a chain; more processors do not shorten it. (A *linear*
      recurrence can be evaluated by a parallel prefix scan in about
      ``log2 n`` rounds; the nonlinearity between steps rules that out.)
    * ``"attention"``: ``1``. One self-attention layer computes every output
      from the same inputs in one pass: projections, scores ``Q Kᵀ``, softmax,
      weighted sum ``A V``. That chain does not grow with ``n``, and each of
      its operations handles all ``n`` rows at once.

    Parameters
    ----------
    n : int
        Number of tokens, positive.
    kind : {"recurrent", "attention"}

    Returns
    -------
    int

    Raises
    ------
    TypeError
        ``n`` is not an integer.
    ValueError
        ``n`` is not positive, or ``kind`` is unknown.

    Examples
    --------
    >>> sequential_steps(512, "recurrent"), sequential_steps(512, "attention")
    (512, 1)
    """
    n = _v.check_positive_int(n, "n")
    return n if _check_kind(kind) == "recurrent" else 1


def max_path_length(n: int, kind: str) -> int:
    """The number of hops from the first token's input to the last token's output.

    Both counts start at the input ``x_0`` of token 0 and end at the output of
    token ``n - 1``; a hop is one application of the layer's step that mixes
    tokens (the measure of Vaswani et al. 2017, Table 1, for one layer):

    * ``"recurrent"``: ``n``. ``x_0`` enters ``s_0`` (one hop) and must pass the
      chain ``s_0 → s_1 → … → s_{n-1}`` (``n - 1`` more); every hop multiplies
      by one more Jacobian factor (see :func:`input_influence`).
    * ``"attention"``: ``1``. The output ``o_{n-1}`` reads token 0's value
      ``x_0 W_V`` directly, with weight ``A_{n-1,0}``, whatever ``n`` is.

    At ``n = 1`` both paths are one hop.

    Parameters are as in :func:`sequential_steps`.

    Raises
    ------
    TypeError
        ``n`` is not an integer.
    ValueError
        ``n < 1``, or ``kind`` is not ``"recurrent"`` or ``"attention"``.

    Examples
    --------
    >>> max_path_length(512, "recurrent"), max_path_length(512, "attention")
    (512, 1)
    """
    n = _v.check_positive_int(n, "n")
    return n if _check_kind(kind) == "recurrent" else 1


def path_table(ns: Any) -> str:
    """A plain-text table of :func:`sequential_steps` and :func:`max_path_length` for several ``n``.

    Parameters
    ----------
    ns : sequence of int
        Sequence lengths, each positive; at least one.

    Returns
    -------
    str

    Raises
    ------
    TypeError, ValueError
        As in :func:`sequential_steps`, naming the offending length; ``ns``
        empty.

    Examples
    --------
    >>> print(path_table([2, 10]))  # doctest: +NORMALIZE_WHITESPACE
         n  steps (recurrent)  steps (attention)  path (recurrent)  path (attention)
         2                  2                  1                 2                 1
        10                 10                  1                10                 1
    """
    values = list(ns) if not isinstance(ns, (str, bytes)) else None
    if not values:
        raise ValueError(f"ns must be a non-empty sequence of positive integers; got {ns!r}")
    heads = ("n", "steps (recurrent)", "steps (attention)", "path (recurrent)", "path (attention)")
    rows = [
        (
            _v.check_positive_int(n, "each n in ns"),
            sequential_steps(n, "recurrent"),
            sequential_steps(n, "attention"),
            max_path_length(n, "recurrent"),
            max_path_length(n, "attention"),
        )
        for n in values
    ]
    widths = [max(len(h), *(len(f"{r[i]:,}") for r in rows)) for i, h in enumerate(heads)]
    lines = ["  ".join(f"{h:>{w}}" for h, w in zip(heads, widths, strict=True))]
    lines += ["  ".join(f"{v:>{w},}" for v, w in zip(r, widths, strict=True)) for r in rows]
    return "\n".join(lines)


# --------------------------------------------------------------------------- additive scores
def additive_scores(Q: Any, K: Any, W_1: Any, W_2: Any, u: Any) -> np.ndarray:
    """Additive (Bahdanau) attention scores, ``S_ij = tanh(q_i W_1 + k_j W_2) · u``.

    The score of Bahdanau et al. (2015), ``v_aᵀ tanh(W_a s_{i-1} + U_a h_j)``
    with the decoder state ``s_{i-1}`` as query, the encoder state ``h_j``
    as key and ``v_a`` renamed ``u`` (``v`` is a value row in this book),
    written with row vectors: a one-hidden-layer network of width
    ``d_a`` reads the query and the key together and returns one number.
    Queries and keys may have different widths, because each gets its own
    projection.

    Parameters
    ----------
    Q : (n_q, d_q) array_like
        Queries (in Bahdanau et al., decoder states).
    K : (n_k, d_k) array_like
        Keys (encoder states).
    W_1 : (d_q, d_a) array_like
    W_2 : (d_k, d_a) array_like
    u : (d_a,) array_like

    Returns
    -------
    S : (n_q, n_k) ndarray
        Unnormalised scores; a softmax over each row gives the weights.

    Raises
    ------
    TypeError
        An array is not real-valued.
    ValueError
        Wrong dimensions, shapes that do not fit (the message names both), or
        NaN/infinities.

    Examples
    --------
    >>> additive_scores([[1.0]], [[0.0], [2.0]], [[1.0]], [[1.0]], [2.0]).round(4).tolist()
    [[1.5232, 1.9901]]
    """
    Q = _matrix(Q, "Q", "n_q", "d_q")
    K = _matrix(K, "K", "n_k", "d_k")
    W_1 = _matrix(W_1, "W_1", "d_q", "d_a")
    W_2 = _matrix(W_2, "W_2", "d_k", "d_a")
    u = _v.as_float_array(u, "u")
    if W_1.shape[0] != Q.shape[1]:
        raise ValueError(
            f"W_1 has {W_1.shape[0]} rows but Q has d_q={Q.shape[1]} (Q {Q.shape}, W_1 {W_1.shape})"
        )
    if W_2.shape[0] != K.shape[1]:
        raise ValueError(
            f"W_2 has {W_2.shape[0]} rows but K has d_k={K.shape[1]} (K {K.shape}, W_2 {W_2.shape})"
        )
    if W_2.shape[1] != W_1.shape[1]:
        raise ValueError(
            f"W_2 has d_a={W_2.shape[1]} columns but W_1 has d_a={W_1.shape[1]} "
            f"(W_1 {W_1.shape}, W_2 {W_2.shape})"
        )
    if u.shape != (W_1.shape[1],):
        raise ValueError(
            f"u must have shape (d_a,) = ({W_1.shape[1]},) to match W_1 {W_1.shape}; got {u.shape}"
        )
    PQ = Q @ W_1  # (n_q, d_q) @ (d_q, d_a) -> (n_q, d_a), once per query
    PK = K @ W_2  # (n_k, d_k) @ (d_k, d_a) -> (n_k, d_a), once per key
    hidden = np.tanh(PQ[:, None, :] + PK[None, :, :])  # (n_q, n_k, d_a): one per pair
    return hidden @ u  # (n_q, n_k, d_a) @ (d_a,) -> (n_q, n_k)


@dataclass(frozen=True)
class ScoreCost:
    """Operation counts of one way of scoring all query–key pairs.

    Attributes
    ----------
    name : str
        ``"additive"`` or ``"dot-product"``.
    multiplies, adds, tanhs : int
        Scalar operations (subtractions would count as adds; there are none).
    largest_intermediate : int
        Elements of the largest array formed on the way when all pairs are
        scored in one vectorised step, as :func:`additive_scores` does:
        ``n_q·n_k·d_a`` for the additive score's hidden layer, ``n_q·n_k`` (the
        scores) for the dot product. A loop over pairs need not store the
        hidden layer, but computes it all the same.
    """

    name: str
    multiplies: int
    adds: int
    tanhs: int
    largest_intermediate: int

    @property
    def flops(self) -> int:
        """``multiplies + adds``; tanhs are counted on their own, like exps in :mod:`attnlib.counts`."""
        return self.multiplies + self.adds


@dataclass(frozen=True)
class ScoreCosts:
    """Additive against dot-product scoring for one set of shapes; see :func:`score_costs`."""

    n_q: int
    n_k: int
    d_k: int
    d_a: int
    additive: ScoreCost
    dot_product: ScoreCost

    def table(self) -> str:
        """A plain-text table: one row per method."""
        rows = [self.additive, self.dot_product]
        heads = ("mul", "add", "tanh", "FLOPs", "largest array")
        cells = [
            [f"{x:,}" for x in (r.multiplies, r.adds, r.tanhs, r.flops, r.largest_intermediate)]
            for r in rows
        ]
        widths = [max(len(h), *(len(c[i]) for c in cells)) for i, h in enumerate(heads)]
        w_name = max(len(r.name) for r in rows)
        out = [
            f"scoring n_q={self.n_q} queries against n_k={self.n_k} keys, d_k={self.d_k}, d_a={self.d_a}",
            f"{'':<{w_name}}  " + "  ".join(f"{h:>{w}}" for h, w in zip(heads, widths, strict=True)),
        ]
        out += [
            f"{r.name:<{w_name}}  " + "  ".join(f"{c:>{w}}" for c, w in zip(cs, widths, strict=True))
            for r, cs in zip(rows, cells, strict=True)
        ]
        return "\n".join(out)


def score_costs(n_q: int, n_k: int, d_k: int, d_a: int) -> ScoreCosts:
    """Exact operation counts of additive and of dot-product scoring.

    The convention is that of :func:`attnlib.counts.flop_counts`: a dot
    product of length ``L`` is ``L`` multiplies and ``L − 1`` adds.

    **Additive**, ``S_ij = tanh(q_i W_1 + k_j W_2) · u`` with queries and keys
    of width ``d_k`` and a hidden width ``d_a``, computed the economical way:
    project every query and every key once, then combine pairs.

    ============ ==================================== ================================================
    part         computes                              operations
    ============ ==================================== ================================================
    project Q    ``Q W_1``, ``(n_q, d_a)``             ``n_q·d_a·d_k`` multiplies, ``n_q·d_a·(d_k−1)`` adds
    project K    ``K W_2``, ``(n_k, d_a)``             ``n_k·d_a·d_k`` multiplies, ``n_k·d_a·(d_k−1)`` adds
    combine      ``q_i W_1 + k_j W_2`` for every pair  ``n_q·n_k·d_a`` adds
    tanh         of the ``(n_q, n_k, d_a)`` array      ``n_q·n_k·d_a`` tanhs
    read out     ``· u`` for every pair                ``n_q·n_k·d_a`` multiplies, ``n_q·n_k·(d_a−1)`` adds
    ============ ==================================== ================================================

    **Dot-product**, ``S = Q Kᵀ`` as one matrix product: ``n_q·n_k·d_k``
    multiplies and ``n_q·n_k·(d_k−1)`` adds. The scale ``1/√d_k`` is left out
    (it is counted in :func:`attnlib.counts.flop_counts`); so are the
    projections ``X W_Q`` and ``X W_K`` that produce ``Q`` and ``K`` in a
    transformer, which are per token, not per pair.

    Per pair of tokens, then, the additive score costs about ``3·d_a`` FLOPs
    and ``d_a`` tanhs and forms ``d_a`` intermediate numbers; the dot product
    costs about ``2·d_k`` FLOPs, forms none, and runs as a single matrix
    product, the operation hardware and BLAS libraries are built for.

    Parameters
    ----------
    n_q, n_k : int
        Number of queries and of keys, positive.
    d_k : int
        Width of queries and keys, positive.
    d_a : int
        Hidden width of the additive score, positive.

    Returns
    -------
    ScoreCosts
        ``.additive`` and ``.dot_product`` (:class:`ScoreCost`), and ``.table()``.

    Raises
    ------
    TypeError
        A size is not an integer.
    ValueError
        A size is zero or negative.

    Examples
    --------
    >>> c = score_costs(n_q=2, n_k=3, d_k=4, d_a=5)
    >>> c.additive.multiplies, c.additive.adds, c.additive.tanhs
    (130, 129, 30)
    >>> c.dot_product.multiplies, c.dot_product.adds
    (24, 18)
    """
    n_q = _v.check_positive_int(n_q, "n_q")
    n_k = _v.check_positive_int(n_k, "n_k")
    d_k = _v.check_positive_int(d_k, "d_k")
    d_a = _v.check_positive_int(d_a, "d_a")
    pairs = n_q * n_k
    additive = ScoreCost(
        name="additive",
        multiplies=(n_q + n_k) * d_a * d_k + pairs * d_a,
        adds=(n_q + n_k) * d_a * (d_k - 1) + pairs * d_a + pairs * (d_a - 1),
        tanhs=pairs * d_a,
        largest_intermediate=pairs * d_a,
    )
    dot = ScoreCost(
        name="dot-product",
        multiplies=pairs * d_k,
        adds=pairs * (d_k - 1),
        tanhs=0,
        largest_intermediate=pairs,
    )
    return ScoreCosts(n_q=n_q, n_k=n_k, d_k=d_k, d_a=d_a, additive=additive, dot_product=dot)
