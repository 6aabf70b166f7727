"""The book's exercises: for each checkable answer, its inputs, what to submit, a reference computed
at call time and the wrong answers of the classic mistakes.

:data:`EXERCISES` maps each label (``"worked-ex-mat:weights"``) to an :class:`Exercise`;
:func:`exercise` looks one up. Nothing here stores an answer: an entry holds the inputs (the book's
examples, :func:`~attnlib.trace.trace_attention`, :func:`~attnlib.core.causal_mask`, the counting
functions of :mod:`attnlib.counts`, ...), a sentence saying what to submit, and functions that compute
the right answer and the wrong ones (:mod:`attnlib.misconceptions`). :func:`attnlib.feedback.check`
judges a learner's answer against an entry.

One module per chapter registers that chapter's checks (``why_attention``, ``qkv``, ``worked``,
``scaling``, ``masks_heads``, ``implementation``, ``complexity``) and ``running_examples`` the generic
checks of the book's running examples; ``_registry`` holds :class:`Exercise` and the builders.
"""

# Each chapter's module registers its checks when imported (the order of these imports is isort's).
from attnlib.exercises import (  # noqa: F401  (imported for what they register)
    _registry,
    complexity,
    implementation,
    masks_heads,
    qkv,
    running_examples,
    scaling,
    why_attention,
    worked,
)
from attnlib.exercises._registry import Exercise, exercise, form_mistakes, shared_coverage

_registry.sort_by_chapter()

#: Every checkable answer, by label, chapter by chapter in reading order.
#:
#: :meta hide-value:
EXERCISES = _registry.EXERCISES

#: Mistakes of an answer form that one of its exercises cannot show, with the reason (label, key) -> why.
NOT_APPLICABLE = _registry.NOT_APPLICABLE

__all__ = ["EXERCISES", "NOT_APPLICABLE", "Exercise", "exercise", "form_mistakes", "shared_coverage"]
