"""The checks of chapter 6, from formula to code."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from attnlib.core import causal_mask, padding_mask
from attnlib.exercises._registry import (
    _MASK,
    Exercise,
    _register,
)
from attnlib.misconceptions import (
    Candidates,
    _causal_variants,
)

_BATCH_LENGTHS = (5, 3)  # impl-ex-mask: two sentences padded to 5


def _pad_causal(
    n: int = 5, *, heads: bool, lengths: tuple[int, ...] = _BATCH_LENGTHS
) -> dict[str, np.ndarray]:
    """The combined padding-and-causal mask of a batch of ``lengths`` and its classic misreadings."""
    P = padding_mask(list(lengths), n)  # (B, 1, n_k)
    if heads:
        P = P[:, None]  # (B, 1, 1, n_k)
    C = causal_mask(n)  # (n, n)
    out = {"reference": P & C, "mask-causal-only": np.broadcast_to(C, (P.shape[0],) + (1,) * heads + (n, n)),
           "mask-padding-only": P, "mask-or": P | C,
           # hiding the padded queries' rows as well: empty rows, zero weights in attnlib (chapter 5)
           "also-right": P & C & np.swapaxes(P, -1, -2)}
    for key, m in _causal_variants(n):
        out[key] = P & m
    if heads:
        out["mask-batch-as-heads"] = padding_mask(list(lengths), n) & C  # (B, n, n) vs (B, H, n, n)
    return out


def _mask_exercise(label: str, chapter: str, prompt: str, answer_form: str, make: Callable[[], dict],
                   shape: tuple[int, ...], extra: Callable[[], Candidates] | None = None) -> Exercise:
    """A mask exercise: ``make()`` returns the reference, the misreadings by misconception key and, under
    ``"also-right"``, a mask that is right as well (it hides the padded queries' rows too)."""

    def also_right() -> list[np.ndarray]:
        m = make()
        return [m["also-right"]] if "also-right" in m else []

    def wrong_answers() -> Candidates:
        right = [np.broadcast_to(a, shape) for a in also_right()]
        return [(k, v) for k, v in [*make().items(), *(extra() if extra else [])]
                if k not in ("reference", "also-right")
                and not any(np.array_equal(np.broadcast_to(v, shape), r) for r in right)]

    return Exercise(
        label=label, chapter=chapter, prompt=prompt, answer_form=answer_form, tolerance=_MASK, kind="mask",
        reference=lambda: make()["reference"], wrong_answers=wrong_answers,
        mask_shape=shape, form="mask", also_right=also_right,
    )


_register(_mask_exercise(
    "impl-ex-mask", "06_implementation",
    "One mask, causal and hiding the padding of two sequences of lengths 5 and 3, for scores of shape "
    "(B, H, n_q, n_k) = (2, 2, 5, 5).",
    "Your mask: any shape that broadcasts to (2, 2, 5, 5); boolean (True = may attend), 0/1 or additive "
    "0/-inf.",
    lambda: _pad_causal(heads=True), (2, 2, 5, 5),
))
