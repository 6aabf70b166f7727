"""The one helper for the catalogues of bad inputs (``BAD_INPUTS`` in the test modules).

``case(id, call, exc, *parts)`` is a ``pytest.param`` of the call, the exception type it must raise and a
``match`` pattern made of the literal ``parts`` of the message, in this order, anything in between. Each
module runs its catalogue with ``pytest.raises(exc, match=match)``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest


def message(*parts: str) -> str:
    """A ``match`` pattern: the literal parts, in this order, anything in between."""
    return ".*".join(re.escape(p) for p in parts)


def case(id: str, call: Callable[[], Any], exc: type[Exception], *parts: str) -> Any:
    """One bad input: the call, the exception type, and the message parts in order."""
    return pytest.param(call, exc, message(*parts), id=id)
