"""Bibliography labels in the author–year form the text cites with.

The chapters cite with sphinxcontrib-bibtex's ``author_year`` reference style, so a reader clicks
"Vaswani *et al.*, 2017" in the text. The References page is formatted by a pybtex style, whose
*label* style names each entry; pybtex's default (``alpha``) labels it "[VSP+17]", which matches
nothing the reader clicked. This extension registers, as sphinxcontrib-bibtex's documentation
describes for custom styles (pybtex plugins registered at setup):

* the label style ``author_year``: "Vaswani et al., 2017", "Ba and Kiros, 2016", rendered by the
  very template sphinxcontrib-bibtex renders the in-text citation with (``author_or_editor_or_title``
  and ``year`` joined by ", "), so the two cannot drift apart. Two entries with the same label get
  "2017a", "2017b" (in the order the bibliography lists them), because a label must name one entry;
* the formatting style ``author_year``: pybtex's ``alpha`` (entries sorted by author, year, title;
  formatted as ``unsrt``) with that label style. ``book/bibliography.md`` selects it with
  ``:style: author_year``;
* the reference style ``author_year_letter`` (``bibtex_reference_style`` in ``_config.yml``):
  sphinxcontrib-bibtex's ``author_year`` with the year taken from the entry's label, so the two
  works of "Touvron et al., 2023" are cited as "2023a" and "2023b", as the References page lists
  them. Every other citation reads exactly as with ``author_year``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

from pybtex.plugin import register_plugin
from pybtex.richtext import Text
from pybtex.style.formatting.alpha import Style as AlphaStyle
from pybtex.style.labels import BaseLabelStyle
from pybtex.style.template import node
from sphinxcontrib.bibtex.plugin import register_plugin as register_bibtex_plugin
from sphinxcontrib.bibtex.style.referencing import PersonStyle
from sphinxcontrib.bibtex.style.referencing.author_year import AuthorYearReferenceStyle
from sphinxcontrib.bibtex.style.referencing.basic_author_year import (
    BasicAuthorYearParentheticalReferenceStyle,
    BasicAuthorYearTextualReferenceStyle,
)
from sphinxcontrib.bibtex.style.template import join, join2, post_text, pre_text, reference, year

STYLE_NAME = "author_year"
REFERENCE_STYLE_NAME = "author_year_letter"


def author_year_label(entry: Any, person: PersonStyle | None = None) -> str:
    """The label of ``entry`` as the in-text citation shows it, in plain text ("Vaswani et al., 2017").

    Parameters
    ----------
    entry : pybtex.database.Entry
        A bibliography entry.
    person : PersonStyle, optional
        How names are shortened; sphinxcontrib-bibtex's default (the one the ``author_year``
        reference style uses) when not given.

    Examples
    --------
    >>> from pybtex.database import Entry, Person
    >>> e = Entry("article", fields={"year": "2016", "title": "Layer normalization"},
    ...           persons={"author": [Person("Ba, Jimmy Lei"), Person("Kiros, Jamie Ryan")]})
    >>> author_year_label(e)
    'Ba and Kiros, 2016'
    >>> e.persons["author"].append(Person("Hinton, Geoffrey E."))
    >>> author_year_label(e)
    'Ba et al., 2016'
    """
    if person is not None:
        return _label(entry, person)
    # The default style's labels, remembered by the entry's content: pybtex looks its name style up among
    # the installed packages' entry points on every call (a build asks for each label a dozen times).
    key = (entry.type, tuple(sorted(entry.fields.items())),
           tuple((role, tuple(map(str, people))) for role, people in sorted(entry.persons.items())))
    if key not in _LABELS:
        _LABELS[key] = _label(entry, PersonStyle())
    return _LABELS[key]


_LABELS: dict[tuple[Any, ...], str] = {}


def _label(entry: Any, person: PersonStyle) -> str:
    template = join(sep=", ")[person.author_or_editor_or_title(full=False), year]
    text = template.format_data({"entry": entry, "style": SimpleNamespace(person=person)})
    return text.render_as("text")


class AuthorYearLabelStyle(BaseLabelStyle):
    """pybtex label style: author–year labels, made unique with a letter after the year."""

    def format_labels(self, sorted_entries: Iterable[Any]) -> Iterator[str]:
        entries = list(sorted_entries)
        labels = [author_year_label(e) for e in entries]
        repeated = {label for label, n in Counter(labels).items() if n > 1}
        seen: Counter[str] = Counter()
        for label in labels:
            if label in repeated:
                suffix = chr(ord("a") + seen[label])
                seen[label] += 1
                yield label + suffix
            else:
                yield label


class AuthorYearStyle(AlphaStyle):
    """pybtex formatting style: ``alpha`` (sorted by author, year, title) with author–year labels."""

    default_label_style = STYLE_NAME


# --------------------------------------------------------------------------- in-text citations
@node
def year_of_label(children: list[Any], data: dict[str, Any]) -> Text:
    """The entry's year with the letter its bibliography label adds ("2023a"), if any."""
    assert not children
    plain = author_year_label(data["entry"])
    label = data["formatted_entry"].label
    letter = label[len(plain):] if label.startswith(plain) else ""
    return Text(year.format_data(data), letter)


@dataclass
class _Parenthetical(BasicAuthorYearParentheticalReferenceStyle):
    def inner(self, role_name: str) -> Any:
        return join2(sep1=self.pre_text_sep, sep2=self.post_text_sep)[
            pre_text,
            reference[join(sep=self.author_year_sep)[
                self.person.author_or_editor_or_title(full="s" in role_name), year_of_label]],
            post_text,
        ]


@dataclass
class _Textual(BasicAuthorYearTextualReferenceStyle):
    def inner(self, role_name: str) -> Any:
        return join(sep=self.text_reference_sep)[
            self.person.author_or_editor_or_title(full="s" in role_name),
            join[
                self.bracket.left,
                join2(sep1=self.pre_text_sep, sep2=self.post_text_sep)[
                    pre_text, reference[year_of_label], post_text],
                self.bracket.right,
            ],
        ]


@dataclass
class AuthorYearLetterReferenceStyle(AuthorYearReferenceStyle):
    """sphinxcontrib-bibtex's ``author_year`` citations, the year read from the entry's label."""

    def __post_init__(self) -> None:
        super().__post_init__()  # the author_year styles, then the role -> style map from them
        self.styles[:2] = [
            _Parenthetical(bracket=self.bracket_parenthetical, person=self.person,
                           author_year_sep=self.author_year_sep, pre_text_sep=self.pre_text_sep,
                           post_text_sep=self.post_text_sep),
            _Textual(bracket=self.bracket_textual, person=self.person,
                     text_reference_sep=self.text_reference_sep, pre_text_sep=self.pre_text_sep,
                     post_text_sep=self.post_text_sep),
        ]
        self.role_style.update((role, style) for style in self.styles[:2] for role in style.role_names())


def register() -> None:
    """Register the label and formatting styles ``author_year`` and the reference style
    ``author_year_letter``; calling it again registers the same classes again."""
    register_plugin("pybtex.style.labels", STYLE_NAME, AuthorYearLabelStyle, force=True)
    register_plugin("pybtex.style.formatting", STYLE_NAME, AuthorYearStyle, force=True)
    register_bibtex_plugin("sphinxcontrib.bibtex.style.referencing", REFERENCE_STYLE_NAME,
                           AuthorYearLetterReferenceStyle, force=True)


def _listitem_roles(app: Any, pagename: str, templatename: str, context: dict, doctree: Any) -> None:
    """The references' entries as list items: docutils writes role="doc-biblioentry", a deprecated
    ARIA role that axe-core reports as critical (aria-required-children) on the list around them."""
    body = context.get("body")
    if body and 'role="doc-biblioentry"' in body:
        context["body"] = body.replace('role="doc-biblioentry"', 'role="listitem"')


def setup(app: Any) -> dict[str, Any]:
    """Sphinx: register the styles (`register`) and fix the entries' ARIA role."""
    register()
    app.connect("html-page-context", _listitem_roles)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
