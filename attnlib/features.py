"""Hand-built word features: queries and keys a reader can read dimension by dimension.

A trained model's queries and keys have no named axes. To show *how* a query
finds a word without pretending to show *what* a model learned, this module
builds them by hand for one sentence, "The animal didn't cross the street
because it was too tired": every dimension has a name, and a key says how
much a word *has* that property while a query says how much the word
*looks for* it. The dot product of a query and a key then adds up, feature
by feature, "wanted × offered". Nothing here is a weight: the weights are
computed from these features by :func:`attnlib.core.scaled_dot_product_attention`.

The numbers are a design, chosen so that the pattern is easy to see (the
pronoun "it" looks for an animate noun, and finds "animal"); they are not
measured from any model.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from attnlib._table import Table

__all__ = ["HandFeatures", "animal_street"]

_TABLE_CAPTIONS = {
    "Q": "Q, what each word looks for: one row per word, one column per feature",
    "K": "K, what each word offers: one row per word, one column per feature",
    "V": "V, what each word hands over: one row per word, one column per feature",
}


def _frozen(arr: np.ndarray) -> np.ndarray:
    out = np.array(arr, dtype=np.float64, copy=True)
    out.flags.writeable = False
    return out


@dataclass(frozen=True)
class HandFeatures:
    """A sentence with hand-built query, key and value features, one name per dimension.

    Attributes
    ----------
    name : str
    tokens : tuple of str, length n
    feature_names : tuple of str, length d_k
        The name of each dimension of the queries and keys.
    feature_notes : tuple of str, length d_k
        What dimension ``t`` means: for a key, what the word offers; for a
        query, what the word looks for.
    Q : ndarray, shape (n, d_k)
        ``Q[i, t]``: how strongly word ``i`` looks for feature ``t``.
    K : ndarray, shape (n, d_k)
        ``K[j, t]``: how much word ``j`` has feature ``t``.
    V : ndarray, shape (n, d_k)
        The values: each word hands over its own key features, so an output
        row says which properties its query gathered.
    design : str
        Why the numbers are what they are.
    """

    name: str
    tokens: tuple[str, ...]
    feature_names: tuple[str, ...]
    feature_notes: tuple[str, ...]
    Q: np.ndarray = field(repr=False)
    K: np.ndarray = field(repr=False)
    V: np.ndarray = field(repr=False)
    design: str = field(default="", repr=False)

    def __post_init__(self) -> None:
        n, d = len(self.tokens), len(self.feature_names)
        if len(self.feature_notes) != d:
            raise ValueError(
                f"feature_notes has {len(self.feature_notes)} entries but feature_names has {d} "
                "(one per dimension)"
            )
        for arr_name in ("Q", "K", "V"):
            arr = getattr(self, arr_name)
            if arr.shape != (n, d):
                raise ValueError(
                    f"{arr_name} has shape {arr.shape} but there are {n} tokens and {d} named features; "
                    f"expected ({n}, {d})"
                )
            object.__setattr__(self, arr_name, _frozen(arr))

    @property
    def n(self) -> int:
        return len(self.tokens)

    @property
    def d_k(self) -> int:
        return len(self.feature_names)

    def describe(self) -> Table:
        """One line per dimension: its index, name and meaning.

        A :class:`attnlib._table.Table`: a ``str`` when printed, an HTML table in Jupyter and the book.
        """
        width = max(len(f) for f in self.feature_names)
        rows = [(f"{t}", name, note)
                for t, (name, note) in enumerate(zip(self.feature_names, self.feature_notes, strict=True))]
        return Table(
            "\n".join(f"{t}  {name:<{width}}  {note}" for t, name, note in rows),
            columns=("dimension", "feature", "meaning"), rows=rows,
            caption=f"the {self.d_k} named dimensions of the queries and keys",
            align=("right", "left", "left"),
        )

    def table(self, which: str, decimals: int = 2, *, words: Sequence[str] | None = None) -> Table:
        """``Q``, ``K`` or ``V`` as a table: one row per token, one column per named feature.

        ``words`` keeps only those tokens' rows, in the order given (by default every token).

        Returns a :class:`attnlib._table.Table`: the fixed-width text when printed, an HTML table
        (caption, header row) in Jupyter and the book.

        Raises
        ------
        ValueError
            ``which`` is not ``"Q"``, ``"K"`` or ``"V"``, or ``words`` names a token that is not in
            the sentence.

        Examples
        --------
        >>> print(animal_street().table("K").splitlines()[0])
                 noun  animate  pronoun  state  verb  pos_cos  pos_sin
        """
        if which not in ("Q", "K", "V"):
            raise ValueError(f"which must be 'Q', 'K' or 'V'; got {which!r}")
        tokens = tuple(self.tokens) if words is None else tuple(words)
        missing = [w for w in tokens if w not in self.tokens]
        if missing:
            raise ValueError(f"words {missing!r} are not tokens of the sentence {self.tokens!r}")
        matrix = getattr(self, which)[[self.tokens.index(w) for w in tokens]]  # (len(tokens), d_k)
        cells = [[f"{float(x):.{decimals}f}".replace("-0.00", "0.00") for x in row] for row in matrix]
        cols = self.feature_names
        widths = [max(len(cols[c]), *(len(row[c]) for row in cells)) for c in range(len(cols))]
        label_w = max(len(t) for t in tokens)
        out = [" " * label_w + "".join(f"  {h:>{w}}" for h, w in zip(cols, widths, strict=True))]
        for tok, row in zip(tokens, cells, strict=True):
            out.append(f"{tok:<{label_w}}" + "".join(f"  {x:>{w}}" for x, w in zip(row, widths, strict=True)))
        return Table("\n".join(out), columns=("word", *cols),
                     rows=[(tok, *row) for tok, row in zip(tokens, cells, strict=True)],
                     caption=_TABLE_CAPTIONS[which], align=("left",) + ("right",) * len(cols))


# The content features: (name, meaning). Keys are 0 or 1; queries are "how strongly".
_CONTENT = (
    ("noun", "a noun: a thing the sentence can refer back to (animal, street)"),
    ("animate", "a living thing, something that can be tired (animal)"),
    ("pronoun", "a pronoun that stands for a noun (it)"),
    ("state", "an adjective describing a state (tired)"),
    ("verb", "a main verb, an action (cross)"),
)
_POSITION = (
    ("pos_cos", "position p on a half circle, θ = π/(n-1): key cos(θp); "
                "query r·cos(θp), r = interest in nearby words"),
    ("pos_sin", "key sin(θp); query r·sin(θp); with pos_cos this adds r·cos(θ(i-j)) to the score of i and j"),
)

_TOKENS = ("The", "animal", "didn't", "cross", "the", "street", "because", "it", "was", "too", "tired")

# What each word offers (keys), 0 or 1 per content feature.
_OFFERS: dict[str, dict[str, float]] = {
    "animal": {"noun": 1.0, "animate": 1.0},
    "cross": {"verb": 1.0},
    "street": {"noun": 1.0},
    "it": {"pronoun": 1.0},
    "tired": {"state": 1.0},
}

# What each word looks for (queries): content features, and "near" = interest in nearby words.
_LOOKS_FOR: dict[str, dict[str, float]] = {
    "The": {"noun": 3.0, "near": 3.0},        # an article looks for its noun, the next one
    "animal": {"near": 3.0},                  # itself and its neighbours
    "didn't": {"verb": 4.0, "near": 1.0},     # the verb it negates
    "cross": {"noun": 3.0, "near": 1.0},      # who crosses and what is crossed
    "the": {"noun": 3.0, "near": 3.0},
    "street": {"near": 3.0},
    "because": {"near": 3.0},
    "it": {"animate": 6.0, "noun": 2.0, "state": 1.5},  # an animate noun that can be tired
    "was": {"pronoun": 3.0, "state": 3.0, "near": 1.0},  # its subject and what it says of it
    "too": {"state": 4.0, "near": 1.0},       # the adjective it intensifies
    "tired": {"animate": 5.0, "pronoun": 4.0},  # the animate thing that is tired
}


def animal_street() -> HandFeatures:
    """"The animal didn't cross the street because it was too tired", with hand-built features.

    Eleven tokens; seven named dimensions (``feature_names``): five content
    features and two position features.

    * **Keys** (what a word offers) are 0 or 1 per content feature: "animal"
      is a noun and animate, "street" a noun, "cross" a verb, "it" a pronoun,
      "tired" a state. The articles, "didn't", "because", "was" and "too"
      offer no content feature: they can only be found by position.
    * **Queries** (what a word looks for) say how strongly, from 0 to 6.
      "it" looks for an animate noun that can be tired (animate 6, noun 2,
      state 1.5); "tired" looks for the animate thing it describes, and the
      pronoun standing for it (animate 5, pronoun 4); "The" and "the" look
      for a noun nearby; "didn't" for the verb, "too" for the adjective;
      "animal", "street" and "because" only look around themselves.
    * **Position**: the key of the word at position ``p`` is
      ``(cos θp, sin θp)`` with ``θ = π/(n-1)``, and the query is ``near ×``
      the same pair, so these two dimensions add
      ``near × cos(θ·(i-j))`` to a score: ``near`` for the word itself,
      less with every step of distance, ``-near`` at the far end.
    * **Values** are the keys: each word hands over its own features, so the
      output of "it" shows how much "animate" it picked up.

    These are hand-made features that illustrate the mechanism. A trained
    model learns its projections from data; its dimensions have no names,
    and nothing guarantees that any of them means "animate".

    Examples
    --------
    >>> f = animal_street()
    >>> f.n, f.d_k, f.feature_names[:3]
    (11, 7, ('noun', 'animate', 'pronoun'))
    >>> f.Q[f.tokens.index("it")].tolist()[:5]
    [2.0, 6.0, 0.0, 1.5, 0.0]
    """
    names = tuple(name for name, _ in _CONTENT + _POSITION)
    notes = tuple(note for _, note in _CONTENT + _POSITION)
    col = {name: t for t, name in enumerate(names)}
    n = len(_TOKENS)
    theta = math.pi / (n - 1)
    K = np.zeros((n, len(names)))  # (n, d_k)
    Q = np.zeros((n, len(names)))  # (n, d_k)
    for p, tok in enumerate(_TOKENS):
        for feat, value in _OFFERS.get(tok, {}).items():
            K[p, col[feat]] = value
        K[p, col["pos_cos"]], K[p, col["pos_sin"]] = math.cos(theta * p), math.sin(theta * p)
        wants = _LOOKS_FOR[tok]
        for feat, value in wants.items():
            if feat != "near":
                Q[p, col[feat]] = value
        near = wants.get("near", 0.0)
        Q[p, col["pos_cos"]], Q[p, col["pos_sin"]] = near * math.cos(theta * p), near * math.sin(theta * p)
    return HandFeatures(
        name="The animal didn't cross the street because it was too tired",
        tokens=_TOKENS,
        feature_names=names,
        feature_notes=notes,
        Q=Q,
        K=K,
        V=K.copy(),
        design=(
            "Hand-made to illustrate the mechanism, not learned: keys mark the properties a word has "
            "(0 or 1), queries the properties it looks for (how strongly), and two position "
            "dimensions let a word look at its neighbours."
        ),
    )
