"""The in-context copying task: random letters whose second half repeats the first.

Each sequence holds a segment ``s_0 … s_{T−1}`` of distinct letters immediately repeated,
``s_0 … s_{T−1} s_0 … s_{T−1}``, with random filler before and after it up to the batch's length. Each
sequence draws its own ``T`` and its own start, so neither can be read off a position: a model has to
find the earlier occurrence of the current token and copy the token after it. The loss counts the
repeat's positions but its last, whose next token the repeat determines.
"""

from __future__ import annotations

import string
from dataclasses import dataclass
from typing import Any

import numpy as np

from attnlib import _validation as _v

__all__ = ["LETTERS", "CopyingBatch", "copying_batch", "decode_letters", "encode_letters"]

#: The alphabet of the task (token ``i`` is the letter ``LETTERS[i]``).
LETTERS: str = string.ascii_lowercase


@dataclass(frozen=True, eq=False)
class CopyingBatch:
    """A batch of the copying task.

    Attributes
    ----------
    tokens : ndarray of int64, shape (batch, n)
        The sequences.
    targets : ndarray of int64, shape (batch, n)
        ``targets[b, i] = tokens[b, i + 1]`` (the last column repeats the last token; it is never counted).
    loss_mask : ndarray of bool, shape (batch, n)
        True at the positions ``T ≤ i ≤ 2T − 2`` of each sequence: those whose next token is a repeat.
    half : ndarray of int64, shape (batch,)
        Each sequence's half-length ``T``.
    start : ndarray of int64, shape (batch,)
        Where each sequence's segment begins: its repeat occupies ``start + T .. start + 2T − 1``.
    """

    tokens: np.ndarray
    targets: np.ndarray
    loss_mask: np.ndarray
    half: np.ndarray
    start: np.ndarray

    @property
    def second_half(self) -> np.ndarray:
        """Boolean ``(batch, n)``: the positions of the repeat, ``start + T ≤ i < start + 2T``."""
        offset = np.arange(self.tokens.shape[-1]) - self.start[:, None]  # (batch, n)
        T = self.half[:, None]  # (batch, 1)
        return (offset >= T) & (offset < 2 * T)  # (batch, n)


def copying_batch(
    batch: int,
    n: int,
    rng: np.random.Generator,
    *,
    vocab: int = 26,
    half_lengths: tuple[int, int] | None = None,
) -> CopyingBatch:
    """Draw ``batch`` sequences of the copying task.

    Each sequence holds a segment of ``T`` distinct tokens followed by its repeat, ``T`` uniform on
    ``half_lengths = (low, high)`` (both included), at a start uniform on ``0 .. n − 2T``; the filler
    before and after it is uniform over the tokens the segment does not use, so the token after an
    earlier occurrence is never ambiguous. Neither where the repeat starts nor its offset ``T`` can be
    read off a position.

    Parameters
    ----------
    batch : int
        Number of sequences.
    n : int
        Length of every sequence (at least ``2 · high``).
    rng : numpy.random.Generator
        The only source of randomness.
    vocab : int
        Number of distinct tokens, more than ``high``.
    half_lengths : (int, int), optional
        Smallest and largest half-length, ``2 <= low <= high``; default ``(2, n // 2)``.

    Returns
    -------
    CopyingBatch

    Raises
    ------
    TypeError
        Non-integer sizes, ``rng`` not a Generator, ``half_lengths`` not a pair of integers.
    ValueError
        Non-positive sizes, ``low < 2``, ``low > high``, ``2 · high > n`` or ``high >= vocab``.

    Examples
    --------
    >>> b = copying_batch(2, 10, np.random.default_rng(2), vocab=6, half_lengths=(3, 4))
    >>> b.half.tolist(), b.start.tolist(), decode_letters(b.tokens[1])  # "cfd" repeated from position 4
    ([4, 3], [0, 4], 'aaeecfdcfd')
    >>> b.loss_mask[1].astype(int).tolist()  # the repeat's positions but its last
    [0, 0, 0, 0, 0, 0, 0, 1, 1, 0]
    """
    batch = _v.check_positive_int(batch, "batch")
    n = _v.check_positive_int(n, "n")
    rng = _v.check_rng(rng)
    vocab = _v.check_positive_int(vocab, "vocab")
    low, high = _check_half_lengths(half_lengths, n, vocab)
    half = rng.integers(low, high + 1, size=batch)  # (batch,)
    start = (rng.random(batch) * (n - 2 * half + 1)).astype(np.int64)  # (batch,): uniform on 0..n-2T
    order = np.argsort(rng.random((batch, vocab)), axis=-1)  # (batch, vocab): a random permutation each
    pick = rng.integers(0, vocab - high, size=(batch, n))  # (batch, n)
    filler = np.take_along_axis(order[:, high:], pick, -1)  # (batch, n): tokens the segment does not use
    i = np.arange(n)  # (n,)
    T, s = half[:, None], start[:, None]  # (batch, 1)
    offset = i - s  # (batch, n): position within the segment and its repeat
    in_segment = (offset >= 0) & (offset < 2 * T)  # (batch, n)
    src = np.clip(np.where(offset < T, offset, offset - T), 0, high - 1)  # (batch, n)
    tokens = np.where(in_segment, np.take_along_axis(order, src, -1), filler).astype(np.int64)  # (batch, n)
    targets = np.concatenate([tokens[:, 1:], tokens[:, -1:]], axis=-1)  # (batch, n)
    loss_mask = (offset >= T) & (offset <= 2 * T - 2)  # (batch, n)
    return CopyingBatch(tokens=tokens, targets=targets, loss_mask=loss_mask, half=half.astype(np.int64),
                        start=start)


def _check_half_lengths(half_lengths: Any, n: int, vocab: int) -> tuple[int, int]:
    if half_lengths is None:
        half_lengths = (2, n // 2)
    if not isinstance(half_lengths, tuple | list) or len(half_lengths) != 2:
        raise TypeError(f"half_lengths must be a pair (low, high); got {half_lengths!r}")
    low = _v.check_int(half_lengths[0], "half_lengths[0]")
    high = _v.check_int(half_lengths[1], "half_lengths[1]")
    if low < 2 or low > high:
        raise ValueError(f"half_lengths must satisfy 2 <= low <= high; got ({low}, {high})")
    if 2 * high > n:
        raise ValueError(f"half_lengths high={high} needs n >= {2 * high} positions; got n={n}")
    if high >= vocab:
        raise ValueError(
            f"half_lengths high={high} needs vocab > {high} (the segment's distinct tokens and a filler); "
            f"got vocab={vocab}"
        )
    return low, high


def encode_letters(text: str) -> np.ndarray:
    """Token ids of a string of lowercase letters (``'a'`` is 0).

    Parameters
    ----------
    text : str
        Letters of :data:`LETTERS`.

    Returns
    -------
    ndarray of int64, shape (len(text),)

    Raises
    ------
    TypeError
        ``text`` is not a string.
    ValueError
        ``text`` holds a character that is not a lowercase letter.

    Examples
    --------
    >>> encode_letters("cab").tolist()
    [2, 0, 1]
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a string; got {type(text).__name__}")
    bad = [c for c in text if c not in LETTERS]
    if bad:
        raise ValueError(f"text must hold lowercase letters a..z only; got {bad[0]!r} in {text!r}")
    return np.array([LETTERS.index(c) for c in text], dtype=np.int64)


def decode_letters(tokens: Any) -> str:
    """The string of letters of a 1-D sequence of token ids: the inverse of :func:`encode_letters`.

    Parameters
    ----------
    tokens : (n,) array_like of int
        Ids in ``0 .. 25``.

    Returns
    -------
    str

    Raises
    ------
    TypeError
        Non-integer ids.
    ValueError
        Not 1-D, or an id outside ``0 .. 25``.

    Examples
    --------
    >>> decode_letters([2, 0, 1])
    'cab'
    """
    arr = np.asarray(tokens)
    if arr.dtype.kind not in "iu":
        raise TypeError(f"tokens must be integer token ids; got dtype {arr.dtype}")
    if arr.ndim != 1:
        raise ValueError(f"tokens must be one sequence (n,); got shape {arr.shape}")
    if ((arr < 0) | (arr >= len(LETTERS))).any():
        raise ValueError(f"tokens must lie in 0..{len(LETTERS) - 1} to be letters; got {arr.tolist()}")
    return "".join(LETTERS[int(t)] for t in arr)
