"""A small table type: prints as the library's fixed-width text, displays as an HTML table.

attnlib's ``.table()`` and ``.describe()`` methods used to return plain strings, laid out in columns
of spaces. Printed in a terminal that is fine, but in a notebook or on a web page a text table
cannot reflow: on a phone it is a block of characters that scrolls sideways, with no header a screen
reader can announce. :class:`Table` keeps the text (it *is* that string, so ``print``, ``str``,
``==``, ``in`` and ``splitlines`` behave exactly as before) and adds the table's structure, which
Jupyter and the book render as a real ``<table>`` through ``_repr_html_``: a caption, a header row,
one header cell per row, numbers right-aligned, inside a wrapper that scrolls in its own box when
the table is wider than the page.

The HTML is a pure function of the table's contents (no ids, no randomness), so a notebook's stored
output can be compared with a fresh run (nbval). It carries only layout styles inline (alignment,
the scroll box); colours and borders come from the page (``book/_static/tables.css`` in the book,
the notebook's own table style in Jupyter), so it follows a light or dark theme.
"""

from __future__ import annotations

import html
import re
from collections.abc import Sequence
from typing import Any

__all__ = ["Table"]

# A cell that reads as a number (right-aligned): 12, -0.5000, 1,024, 2.5e-08, -inf, nan, 3.5 GiB, 96 B.
_NUMBER = re.compile(
    r"^[-+−]?(?:\d[\d,]*(?:\.\d+)?|\.\d+)(?:e[-+]?\d+)?(?: ?(?:[KMGT]i?)?B)?$|^[-+−]?inf$|^nan$",
    re.IGNORECASE,
)
_ALIGNS = ("left", "right")
_WRAP_AT = 32  # characters: a text column with a longer cell is one the page may wrap


def _is_number(cell: str) -> bool:
    return bool(_NUMBER.match(cell.strip()))


class Table(str):
    """Text of a table (a ``str``) that also knows its columns and rows.

    ``str(table)`` and ``print(table)`` give the fixed-width text; in Jupyter, and in the book, the
    table is shown as HTML (``_repr_html_``); IPython's plain-text view is the same text as
    ``print`` (``_repr_pretty_``), not a quoted string.

    Parameters
    ----------
    text : str
        The fixed-width text, exactly as printed.
    columns : sequence of str
        The header row: one label per column. The first column holds the row labels.
    rows : sequence of sequence of str
        The body: one sequence of cell texts per row, each as long as ``columns``.
    caption : str
        What the table shows; the HTML ``<caption>``. Empty: no caption.
    notes : sequence of str
        Lines shown under the table (units, definitions, a total stated in words).
    align : sequence of {"left", "right"}, optional
        Alignment of each column. By default a column is right-aligned when every body cell in it
        reads as a number (``12``, ``-0.5000``, ``1,024``, ``-inf``, ``3.5 GiB``), else left-aligned.

    Raises
    ------
    TypeError
        ``text``, ``caption``, a column label, a note or a cell is not a ``str``.
    ValueError
        ``columns`` is empty, a row does not have one cell per column, or ``align`` has the wrong
        length or a value other than ``"left"`` or ``"right"``.

    Notes
    -----
    Equality, hashing and every string method are those of the text: two tables with the same text
    are equal even if their captions differ. The structure is for display only.

    Examples
    --------
    >>> t = Table(" x  y\\na  1", columns=("", "y"), rows=(("a", "1"),), caption="one row")
    >>> print(t)
     x  y
    a  1
    >>> t == " x  y\\na  1", t.align
    (True, ('left', 'right'))
    >>> html = t._repr_html_()
    >>> print(html.splitlines()[1])
    <caption>one row</caption>
    >>> print(html.splitlines()[4])
    <tr><th scope="row" style="text-align: left;">a</th><td class="num" style="text-align: right;">1</td></tr>
    """

    columns: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    caption: str
    notes: tuple[str, ...]
    align: tuple[str, ...]

    def __new__(
        cls,
        text: str,
        *,
        columns: Sequence[str],
        rows: Sequence[Sequence[str]],
        caption: str = "",
        notes: Sequence[str] = (),
        align: Sequence[str] | None = None,
    ) -> Table:
        if not isinstance(text, str):
            raise TypeError(f"text must be a str (the table as printed); got {type(text).__name__}")
        if not isinstance(caption, str):
            raise TypeError(f"caption must be a str; got {type(caption).__name__} {caption!r}")
        cols = tuple(columns)
        if not cols:
            raise ValueError("columns must name at least one column; got none")
        body = tuple(tuple(row) for row in rows)
        for i, row in enumerate(body):
            if len(row) != len(cols):
                raise ValueError(
                    f"row {i} has {len(row)} cells but there are {len(cols)} columns {list(cols)}; "
                    "give one cell per column"
                )
        notes_t = tuple(notes)
        for what, items in (("column label", cols), ("note", notes_t), *(("cell", r) for r in body)):
            for item in items:
                if not isinstance(item, str):
                    raise TypeError(f"every {what} must be a str; got {type(item).__name__} {item!r}")
        if align is None:
            aligns = tuple(
                "right" if body and all(_is_number(row[c]) for row in body) else "left"
                for c in range(len(cols))
            )
        else:
            aligns = tuple(align)
            if len(aligns) != len(cols) or any(a not in _ALIGNS for a in aligns):
                raise ValueError(
                    f"align must give 'left' or 'right' for each of the {len(cols)} columns; got {aligns!r}"
                )
        self = super().__new__(cls, text)
        self.columns, self.rows, self.caption, self.notes, self.align = cols, body, caption, notes_t, aligns
        return self

    def __getnewargs_ex__(self) -> tuple[tuple[Any, ...], dict[str, Any]]:
        # copy and pickle rebuild the table through __new__ (str's own protocol would drop the structure)
        return (str(self),), {"columns": self.columns, "rows": self.rows, "caption": self.caption,
                              "notes": self.notes, "align": self.align}

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        """IPython's text/plain: the printed text, not a quoted string."""
        p.text(str(self))

    def _cell(self, tag: str, text: str, c: int, scope: str = "") -> str:
        attrs = f' scope="{scope}"' if scope else ""
        if self.align[c] == "right":
            attrs += ' class="num"'
        elif tag == "td" and c in self._wrapping:
            attrs += ' class="wrap"'
        attrs += f' style="text-align: {self.align[c]};"'
        return f"<{tag}{attrs}>{html.escape(text)}</{tag}>"

    @property
    def _wrapping(self) -> frozenset[int]:
        """Text columns with a cell longer than ``_WRAP_AT`` characters: the page may wrap those."""
        return frozenset(c for c in range(len(self.columns))
                         if self.align[c] == "left" and any(len(row[c]) > _WRAP_AT for row in self.rows))

    def _repr_html_(self) -> str:
        """The table as HTML: caption, header row, one ``<th scope="row">`` per row, notes under it.

        Cells of a text column with a long entry carry ``class="wrap"`` (the book's stylesheet lets
        those wrap and keeps every other cell on one line); number cells carry ``class="num"``.
        """
        out = ['<div class="attnlib-table" style="overflow-x: auto; max-width: 100%;"><table>']
        if self.caption:
            out.append(f"<caption>{html.escape(self.caption)}</caption>")
        head = "".join(self._cell("th", label, c, "col") for c, label in enumerate(self.columns))
        out.append(f"<thead><tr>{head}</tr></thead>")
        out.append("<tbody>")
        for row in self.rows:
            cells = [self._cell("th", row[0], 0, "row")]
            cells += [self._cell("td", cell, c) for c, cell in enumerate(row[1:], start=1)]
            out.append(f"<tr>{''.join(cells)}</tr>")
        out.append("</tbody>")
        out.append("</table>" + "".join(
            f'<p class="attnlib-table-note">{html.escape(note)}</p>' for note in self.notes) + "</div>")
        return "\n".join(out)


def format_bytes(n_bytes: int) -> str:
    """``n_bytes`` in binary (IEC) units: B, KiB, MiB, GiB, TiB, three significant digits."""
    value = float(n_bytes)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if value < 1024 or unit == "TiB":
            return f"{int(value)} B" if unit == "B" else f"{value:.3g} {unit}"
        value /= 1024
    raise AssertionError("unreachable")  # pragma: no cover
