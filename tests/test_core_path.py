"""The core path's previous/next links step over going-deeper pages (book/press/core_path.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from press.core_path import core_neighbour

BOOK = Path(__file__).resolve().parents[1] / "book"

# Sphinx's relations, [parent, previous, next], for a toc like the book's: 01 (with 01a and 01b
# under it), 02, 03 (with 03a), then the glossary.
RELATIONS: dict[str, list[str | None]] = {
    "book/notation": [None, "book/intro", "book/01_why"],
    "book/01_why": [None, "book/notation", "book/01a_more"],
    "book/01a_more": ["book/01_why", "book/01_why", "book/01b_most"],
    "book/01b_most": ["book/01_why", "book/01a_more", "book/02_qkv"],
    "book/02_qkv": [None, "book/01b_most", "book/03_cost"],
    "book/03_cost": [None, "book/02_qkv", "book/03a_more"],
    "book/03a_more": ["book/03_cost", "book/03_cost", "book/glossary"],
    "book/glossary": [None, "book/03a_more", None],
}


@pytest.mark.parametrize(("page", "step", "expected"), [
    ("book/01_why", 2, "book/02_qkv"),       # past two going-deeper pages
    ("book/02_qkv", 1, "book/01_why"),       # back past them
    ("book/02_qkv", 2, "book/03_cost"),      # a chapter next to a chapter: unchanged
    ("book/01_why", 1, "book/notation"),     # a page that is not going deeper ends the walk
    ("book/03_cost", 2, "book/glossary"),
    ("book/glossary", 1, "book/03_cost"),
    ("book/glossary", 2, None),              # the end of the book
])
def test_a_chapter_steps_over_going_deeper_pages(page: str, step: int, expected: str | None) -> None:
    assert core_neighbour(RELATIONS, page, step) == expected


def test_a_cycle_of_going_deeper_pages_ends() -> None:
    loop = {"book/01_a": [None, None, "book/01a_x"], "book/01a_x": [None, None, "book/01b_y"],
            "book/01b_y": [None, None, "book/01a_x"]}
    assert core_neighbour(loop, "book/01_a", 2) == "book/01a_x"


@pytest.mark.parametrize("step", [0, 3, "next"])
def test_step_names_previous_or_next(step: object) -> None:
    with pytest.raises(ValueError, match="step must be 1"):
        core_neighbour(RELATIONS, "book/01_why", step)  # type: ignore[arg-type]
