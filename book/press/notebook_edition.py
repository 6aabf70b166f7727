"""The notebook edition: every chapter as a plain Jupyter notebook that runs and reads well anywhere.

The chapters under ``book/`` are MyST notebooks: their prose holds ``{glue:text}`` roles that the HTML
build fills with computed numbers, ``{ref}``/``{doc}``/``{cite}`` roles, and directives for exercises,
solutions and proofs. Opened in Jupyter, Colab or on GitHub they show that syntax raw, and their code
needs ``myst_nb`` (``glue``) and a checkout of this repository. This module writes, from ``book/`` and
its stored outputs, one notebook per chapter into ``book/notebooks/`` in which

* every ``{glue:text}`` role is replaced by the value it shows in the HTML (read from the stored glue
  outputs and formatted by myst-nb's own function), and no code cell calls ``glue``;
* cross-references and citations are plain text (``"Exercise 3.2"``, ``“Section title” (chapter 3)``,
  ``[Vaswani et al., 2017]``), with the works a chapter cites listed at its end;
* exercises, theorems and proofs are Markdown headings and paragraphs, numbered as in the HTML;
  a figure's caption (``mystnb.figure`` in its cell's metadata) is a paragraph under it, "**Figure
  3.2.** …", numbered as in the HTML, and ``{numref}`` to it reads "Figure 3.2";
  each solution (its text, code and outputs) is one ``<details>`` block after its exercise, without
  the chapters' ``### BEGIN/END SOLUTION`` lines, in a cell that nbgrader reads as an answer cell (the
  notebook an instructor gives nbgrader; see ``book/press/student.py``);
* the cells the HTML removes (the claim checks) are left out, and stored widget views are dropped
  (their widget state is not stored, so Jupyter could only show an error in their place);
* a first cell installs ``attnlib[interactive]`` only where attnlib, Plotly or ipywidgets is missing
  (Colab, a fresh Jupyter), from the repository configured in ``_config.yml`` at the tag of this
  version, or from ``ATTNLIB_SOURCE`` when that is set.

The edition is committed, because Colab opens notebooks from the repository; ``tests`` check that it
is what this module writes from the current chapters. ``build(edition="student")`` writes the student
edition from the same cells, less every solution (``make student``, ``book/press/student.py``): it
reads the solution markers of the chapters, which ``--mark`` adds where they are missing.

Usage: ``python -m press.notebook_edition [--check | --mark]`` (``make edition``).
"""

from __future__ import annotations

import argparse
import ast
import base64
import copy
import re
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import nbformat
import yaml
from IPython.core.inputtransformer2 import TransformerManager
from myst_nb.core.variables import format_plain_text
from nbformat import NotebookNode

from press import attnlib_wheel as wheel_ext

ROOT = Path(__file__).resolve().parents[2]
OUT_DIR = Path("book") / "notebooks"
GLUE_MIME = "application/papermill.record/text/plain"
WIDGET_MIME = "application/vnd.jupyter.widget-view+json"
PROOF_KINDS = {"theorem": "Theorem", "proposition": "Proposition", "lemma": "Lemma",
               "corollary": "Corollary", "definition": "Definition", "example": "Example"}
INSTALL_TAG = "install"
LIVE_MARK = "attnlib.interactive.live"  # output metadata key of a live explorer (attnlib.interactive.live)


# --------------------------------------------------------------------------- configuration
@dataclass(frozen=True)
class Repository:
    """Where the book's repository and site live, from ``_config.yml`` (``sphinx.config.book_*``)."""

    url: str = ""
    branch: str = "main"
    site_url: str = ""  # the published book: it serves attnlib's wheel (book/press/wheel.py)

    @classmethod
    def from_config(cls, root: Path = ROOT) -> Repository:
        config = yaml.safe_load((root / "_config.yml").read_text(encoding="utf-8"))
        sphinx_config = (config.get("sphinx") or {}).get("config") or {}
        return cls(str(sphinx_config.get("book_repository_url") or "").strip(),
                   str(sphinx_config.get("book_repository_branch") or "main").strip(),
                   str(sphinx_config.get("book_site_url") or "").strip())


def install_source(repository: Repository, version: str) -> str:
    """The pip requirement URL of attnlib at the tag of ``version``, or "" with no repository."""
    if not repository.url:
        return ""
    return f"git+{repository.url.rstrip('/').removesuffix('.git')}.git@v{version}"


def wheel_url(repository: Repository, wheel: str) -> str:
    """The URL of the wheel the published book serves (``<site>/attnlib/<wheel>``), or "" with no site."""
    if not repository.site_url:
        return ""
    return f"{repository.site_url.rstrip('/')}/{wheel_ext.DIST_DIR}/{wheel}"


def install_cell(sources: Sequence[str], wheel: str, wheel_link: str = "") -> NotebookNode:
    """The first cell: installs what is missing, only where it is missing.

    It tries, in order, ``$ATTNLIB_SOURCE``, then ``sources`` (the repository at the version's tag, the
    book's own wheel), then a wheel named ``attnlib-*.whl`` beside the notebook (uploaded to Colab, say),
    and stops at the first that installs; when none does, it says where to get ``wheel`` (``wheel_link``,
    or the foot of any page of the book) and how to upload it to Colab.
    """
    where = f"from {wheel_link}" if wheel_link else "from the link at the foot of any page of the book"
    names = ["the book's repository", "the book's own wheel"]  # what ``sources`` hold, in order
    tried = ", ".join(["$ATTNLIB_SOURCE", *(n for n, src in zip(names, sources, strict=False) if src)])
    listed = "".join(f'        "{source}",\n' for source in sources if source)
    code = (
        "# Run this cell first. Where attnlib, Plotly or ipywidgets is missing (Colab, a fresh Jupyter), it\n"
        "# installs attnlib with both; where they are installed (Binder, a checkout of the book) it does\n"
        "# nothing. It never upgrades what is already there (Colab's ipywidgets 7 stays).\n"
        "import importlib.util\n"
        "import os\n"
        "import pathlib\n"
        "\n"
        'needed = ("attnlib", "plotly", "ipywidgets")\n'
        "if any(importlib.util.find_spec(m) is None for m in needed):\n"
        f"    # Tried in order: {tried}, then a wheel beside this notebook\n"
        "    # (in Colab, uploaded with the Files panel).\n"
        "    sources = [\n"
        '        os.environ.get("ATTNLIB_SOURCE", ""),\n'
        f"{listed}"
        '        *(p.resolve().as_uri() for p in sorted(pathlib.Path().glob("attnlib-*.whl"))),\n'
        "    ]\n"
        "    for source in filter(None, sources):\n"
        '        %pip install --quiet "attnlib[interactive] @ {source}"\n'
        "        importlib.invalidate_caches()\n"
        "        if all(importlib.util.find_spec(m) for m in needed):  # %pip never raises\n"
        "            break\n"
        "    else:\n"
        "        raise RuntimeError(\n"
        '            "attnlib is not installed and could not be installed (pip\'s messages, if any, "\n'
        '            "are above). Download its wheel, "\n'
        f'            "{wheel}, {where}. "\n'
        '            "In Colab, upload it with the Files panel (the folder icon on the left); elsewhere, "\n'
        '            "put it beside this notebook. Then run this cell again."\n'
        "        )"
    )
    cell = nbformat.v4.new_code_cell(code)
    cell.metadata["tags"] = [INSTALL_TAG]
    return cell


def figure_options(cell: NotebookNode) -> dict[str, Any]:
    """The ``mystnb.figure`` options of a code cell (``caption``, ``name``), or {} when it has none."""
    options = cell.get("metadata", {}).get("mystnb", {}).get("figure") or {}
    return dict(options) if isinstance(options, dict) else {}


def is_numbered_figure(options: dict[str, Any]) -> bool:
    """Sphinx numbers a figure that has a caption and a name (a target) and no other."""
    return bool(str(options.get("caption", "")).strip() and str(options.get("name", "")).strip())


# --------------------------------------------------------------------------- the book's labels
@dataclass
class Chapter:
    """One chapter notebook and what other chapters may refer to in it."""

    path: Path
    number: int | None
    title: str
    notebook: NotebookNode
    glue: dict[str, str] = field(default_factory=dict)
    # A page nested under a chapter in the table of contents (a going-deeper page) has the chapter's
    # number, continues its figure, exercise and proof numbers, and is numbered as its next section.
    section: str | None = None

    @property
    def heading_number(self) -> str | None:
        return self.section or (str(self.number) if self.number else None)


@dataclass
class Labels:
    """Every label of the book, resolved to the text a plain notebook shows for a reference to it."""

    text: dict[str, str] = field(default_factory=dict)  # label -> e.g. "Exercise 3.2"
    chapter_of: dict[str, int | None] = field(default_factory=dict)
    docs: dict[str, str] = field(default_factory=dict)  # doc name -> "“Title” (chapter N)"
    # doc name -> the figures, exercises and proofs numbered before the page in its chapter (a nested
    # page continues its chapter's numbers)
    counts_before: dict[str, dict[str, int]] = field(default_factory=dict)


FENCE = re.compile(r"^(?P<indent>\s*)(?P<fence>`{3,}|:{3,})\{(?P<name>[\w:-]+)\}[ \t]*(?P<arg>.*)$")
TARGET = re.compile(r"^\(([\w.:-]+)\)=\s*$")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")


def is_deeper_page(name: str | Path) -> bool:
    """A going-deeper page (``04a_scaling_deeper.ipynb``, a letter after its chapter's number) holds
    material its chapter (``04_scaling.ipynb``) leaves out of the core path: nested under the chapter in
    the table of contents, without learning objectives, exercises or a quiz of its own."""
    return re.match(r"\d\d[a-z]_", Path(name).name) is not None


def _toc_documents(root: Path) -> list[tuple[str, bool, str | None]]:
    """(document path without extension, numbered, parent document or None) in table-of-contents order:
    a chapter's ``sections`` follow it."""
    toc = yaml.safe_load((root / "_toc.yml").read_text(encoding="utf-8"))
    docs: list[tuple[str, bool, str | None]] = [(toc["root"], False, None)]
    for part in toc.get("parts", []):
        numbered = bool(part.get("numbered"))
        for entry in part.get("chapters", []):
            docs.append((entry["file"], numbered, None))
            docs += [(sub["file"], numbered, entry["file"]) for sub in entry.get("sections", [])]
    return docs


def _plain_heading(text: str) -> str:
    """A heading's text as a reader sees it: no Markdown emphasis or code marks (math kept as it is),
    and straight double quotes curled to single ones, since the title itself goes inside “…”."""
    pieces = re.split(r"(\$[^$]*\$)", text)
    plain = "".join(p if p.startswith("$") else re.sub(r"[*_`]", "", p) for p in pieces)
    return re.sub(r'"([^"]*)"', "‘\\1’", plain).strip()


def _directive_blocks(text: str) -> Iterator[tuple[str, str, dict[str, str]]]:
    """(name, argument, options) of every directive in ``text``, in order (nested ones too)."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        m = FENCE.match(line)
        if not m:
            continue
        options = {}
        for follow in lines[i + 1:]:
            opt = re.match(r"^\s*:([\w-]+):\s*(.*)$", follow)
            if not opt:
                break
            options[opt.group(1)] = opt.group(2).strip()
        yield m.group("name"), m.group("arg").strip(), options


def collect_labels(chapters: list[Chapter]) -> Labels:
    """Number exercises and proofs per chapter as the HTML does, and title every label."""
    labels = Labels()
    chapter_counts: dict[int, dict[str, int]] = {}  # a nested page continues its chapter's numbers
    for chapter in chapters:
        doc = chapter.path.stem
        number = chapter.number
        where = f"“{chapter.title}” (chapter {number})" if number else f"“{chapter.title}”"
        if chapter.section:  # a going-deeper page: its own notebook
            where = f"“{chapter.title}” (section {chapter.section}, the notebook {chapter.path.name})"
        labels.docs[doc] = where
        counts: dict[str, int] = chapter_counts.setdefault(number, {}) if number else {}
        labels.counts_before[doc] = dict(counts)
        pending: list[str] = []
        for cell in chapter.notebook.cells:
            if cell.cell_type == "code" and is_numbered_figure(options := figure_options(cell)):
                counts["Figure"] = counts.get("Figure", 0) + 1
                labels.text[str(options["name"]).strip()] = f"Figure {number}.{counts['Figure']}"
                labels.chapter_of[str(options["name"]).strip()] = number
            if cell.cell_type != "markdown":
                continue
            for line in cell.source.splitlines():
                target = TARGET.match(line)
                heading = HEADING.match(line)
                if target:
                    pending.append(target.group(1))
                elif heading and pending:
                    for label in pending:
                        labels.text[label] = f"“{_plain_heading(heading.group(2))}”"
                        labels.chapter_of[label] = number
                    pending = []
                elif line.strip() and pending and not FENCE.match(line):
                    pending = []  # a target before a paragraph: only an explicit-text ref can use it
            for name, _arg, options in _directive_blocks(cell.source):
                kind = "Exercise" if name == "exercise" else PROOF_KINDS.get(name.removeprefix("prf:"))
                if kind is None or not name.startswith(("exercise", "prf:")):
                    continue
                counts[kind] = counts.get(kind, 0) + 1
                if "label" in options:
                    labels.text[options["label"]] = f"{kind} {number}.{counts[kind]}"
                    labels.chapter_of[options["label"]] = number
    return labels


# --------------------------------------------------------------------------- citations
@dataclass
class Bibliography:
    """Author–year labels and plain-text entries of ``references.bib``, as the HTML shows them."""

    entries: dict[str, Any]
    _authors: dict[str, str] = field(default_factory=dict, repr=False)  # pybtex's rendering is slow

    @classmethod
    def load(cls, path: Path) -> Bibliography:
        from pybtex.database import parse_file

        return cls(dict(parse_file(str(path), bib_format="bibtex").entries))

    @cached_property
    def _style(self) -> Any:
        from pybtex.plugin import find_plugin

        return find_plugin("pybtex.style.formatting", "unsrt")()

    @cached_property
    def _text(self) -> Any:  # pybtex's plain-text backend (render_as looks its plugin up on every call)
        from pybtex.backends.plaintext import Backend

        return Backend()

    def _entry(self, key: str) -> Any:
        if key not in self.entries:
            raise KeyError(f"citation key {key!r} is not in references.bib")
        return self.entries[key]

    def authors(self, key: str) -> str:
        """The author part of the label: "A", "A and B" or "A et al." (LaTeX accents decoded)."""
        if key not in self._authors:
            self._authors[key] = self._author_label(key)
        return self._authors[key]

    def _author_label(self, key: str) -> str:
        entry = self._entry(key)
        people = entry.persons.get("author") or entry.persons.get("editor") or []
        names = [" ".join(n.render(self._text) for n in p.rich_prelast_names + p.rich_last_names)
                 for p in people]
        if len(names) >= 3 or "others" in names:
            return f"{names[0]} et al."
        return " and ".join(names) or entry.fields.get("organization", key)

    def year(self, key: str) -> str:
        """The year as the HTML cites it: with the letter of its label when two works share author and
        year ("2023a", ``book/press/bibstyle.py``; labels made over every entry of references.bib)."""
        return str(self._entry(key).fields.get("year", "n.d.")) + self._letters.get(key, "")

    @cached_property
    def _letters(self) -> dict[str, str]:
        from press.bibstyle import (
            AuthorYearLabelStyle,
            AuthorYearStyle,
            author_year_label,
            register,
        )

        register()
        entries = list(AuthorYearStyle().sort(self.entries.values()))  # in the References page's order
        letters = {}
        for entry, label in zip(entries, AuthorYearLabelStyle().format_labels(entries), strict=True):
            plain = author_year_label(entry)
            if label != plain and label.startswith(plain):
                letters[entry.key] = label[len(plain):]
        return letters

    def cite(self, keys: list[str], textual: bool) -> str:
        """As sphinxcontrib-bibtex's author-year style shows it: keys sorted by author and year."""
        keys = sorted(keys, key=lambda k: (self.authors(k).lower(), self.year(k)))
        if textual:
            return ", ".join(f"{self.authors(k)} [{self.year(k)}]" for k in keys)
        return "[" + ", ".join(f"{self.authors(k)}, {self.year(k)}" for k in keys) + "]"

    def reference(self, key: str) -> str:
        """One line of the chapter's reference list, formatted by pybtex as the HTML bibliography is."""
        (formatted,) = self._style.format_entries([self._entry(key)])
        return formatted.text.render(self._text)


# --------------------------------------------------------------------------- markdown
ROLE = re.compile(r"\{(?P<role>[\w:-]+)\}`(?P<content>[^`]*)`")


class Renderer:
    """Turns one chapter's MyST Markdown into plain Jupyter Markdown."""

    def __init__(self, chapter: Chapter, labels: Labels, bibliography: Bibliography) -> None:
        self.chapter = chapter
        self.labels = labels
        self.bibliography = bibliography
        self.cited: list[str] = []
        # True while a solution is rendered: the student edition lists only works cited outside them.
        self.in_solution = False
        self.cited_outside_solutions: set[str] = set()
        self.counts: dict[str, int] = dict(labels.counts_before.get(chapter.path.stem, {}))

    # -- inline roles
    def _ref(self, content: str, chapter: bool = True) -> str:
        explicit = re.match(r"^(.*?)\s*<([^>]+)>$", content, re.S)
        if explicit:
            return explicit.group(1)
        label = content.strip()
        if label not in self.labels.text:
            raise KeyError(f"{self.chapter.path.name}: no title known for the reference {label!r}")
        text = self.labels.text[label]
        number = self.labels.chapter_of.get(label)
        if chapter and text.startswith("“") and number and number != self.chapter.number:
            text += f" (chapter {number})"
        return text

    def _doc(self, content: str) -> str:
        explicit = re.match(r"^(.*?)\s*<([^>]+)>$", content, re.S)
        if explicit:
            return explicit.group(1)
        name = content.strip().rstrip("/").split("/")[-1]
        if name not in self.labels.docs:
            raise KeyError(f"{self.chapter.path.name}: unknown document {content!r}")
        return self.labels.docs[name]

    def _cite(self, content: str, textual: bool) -> str:
        keys = [k.strip() for k in content.split(",") if k.strip()]
        for key in keys:
            if key not in self.cited:
                self.cited.append(key)
            if not self.in_solution:
                self.cited_outside_solutions.add(key)
        return self.bibliography.cite(keys, textual)

    def _glue(self, content: str) -> str:
        key, _, spec = content.partition(":")
        if key not in self.chapter.glue:
            raise KeyError(f"{self.chapter.path.name}: no stored glue output named {key!r}")
        return format_plain_text(self.chapter.glue[key], spec or "s")

    def roles(self, text: str) -> str:
        # "{ref}`section` in {doc}`chapter`": name the chapter once, with the doc role.
        text = re.sub(
            r"\{ref\}`([^`]*)`(\s+in\s+)\{doc\}`([^`]*)`",
            lambda m: self._ref(m.group(1), chapter=False) + m.group(2) + self._doc(m.group(3)),
            text,
        )

        def replace(m: re.Match[str]) -> str:
            role, content = m.group("role"), m.group("content")
            if role == "glue:text":
                return self._glue(content)
            if role in ("ref", "prf:ref", "numref"):
                return self._ref(content)
            if role == "doc":
                return self._doc(content)
            if role in ("cite", "cite:p", "cite:t"):
                return self._cite(content, textual=role == "cite:t")
            if role == "term":  # a glossary link: its words ("keys <Key>" reads "keys")
                return re.sub(r"\s*<[^<>]*>$", "", content)
            raise ValueError(f"{self.chapter.path.name}: no plain-text form for the role {{{role}}}")

        return ROLE.sub(replace, text)

    # -- blocks
    def _number(self, kind: str) -> str:
        self.counts[kind] = self.counts.get(kind, 0) + 1
        return f"{self.chapter.number}.{self.counts[kind]}"

    def directive(self, name: str, arg: str, options: dict[str, str], body: str) -> str:
        body = body.strip("\n")
        kind = name.removeprefix("prf:")
        if name == "exercise":
            title = f"Exercise {self._number('Exercise')}" + (f": {arg}" if arg else "")
            return f"### {title}\n\n{body}"
        if name.startswith("prf:") and kind in PROOF_KINDS:
            label = PROOF_KINDS[kind]
            title = f"**{label} {self._number(label)}**" + (f" ({arg})" if arg else "")
            return f"{title}. {body}" if body and not body.startswith(("$$", "\n")) else f"{title}.\n\n{body}"
        if name == "prf:proof":
            return f"*Proof.* {body} $\\blacksquare$"
        if name == "quiz":  # book/press/quiz.py: the questions, each answer folded in <details>
            from press.quiz import quiz_markdown  # beside this file

            return quiz_markdown(self.chapter.path.parent / arg).strip("\n")
        if name in ("admonition", "note", "tip", "important", "warning", "hint", "seealso", "attention"):
            title = arg or name.capitalize()
            if "dropdown" in options.get("class", "").split():
                return f"<details>\n<summary>{title}</summary>\n\n{body}\n\n</details>"
            return f"**{title}.**\n\n{body}"
        raise ValueError(f"{self.chapter.path.name}: no plain form for the directive {{{name}}}")

    def blocks(self, text: str) -> str:
        """Directives to Markdown (inner ones first), targets removed, other code fences untouched."""
        lines = text.split("\n")
        out: list[str] = []
        i = 0
        while i < len(lines):
            line = lines[i]
            m = FENCE.match(line)
            plain_fence = re.match(r"^\s*(`{3,}|~{3,})", line)
            if m:
                fence = m.group("fence")
                j = i + 1
                options: dict[str, str] = {}
                while j < len(lines) and (opt := re.match(r"^\s*:([\w-]+):\s*(.*)$", lines[j])):
                    options[opt.group(1)] = opt.group(2).strip()
                    j += 1
                depth, k = 0, j
                closer = re.compile(rf"^\s*{re.escape(fence[0])}{{{len(fence)},}}\s*$")
                while k < len(lines):
                    opener = FENCE.match(lines[k])
                    if opener and opener.group("fence")[0] == fence[0]:
                        depth += 1 if len(opener.group("fence")) >= len(fence) else 0
                    elif closer.match(lines[k]):
                        if depth == 0:
                            break
                        depth -= 1
                    k += 1
                if k == len(lines):
                    raise ValueError(f"{self.chapter.path.name}: unclosed directive {{{m.group('name')}}}")
                body = self.blocks("\n".join(lines[j:k]))
                out.append(self.directive(m.group("name"), m.group("arg").strip(), options, body))
                i = k + 1
            elif plain_fence:
                k = i + 1
                while k < len(lines) and not lines[k].strip().startswith(plain_fence.group(1)):
                    k += 1
                out.extend(lines[i:k + 1])
                i = k + 1
            elif TARGET.match(line):
                i += 1
            else:
                out.append(line)
                i += 1
        return "\n".join(out)

    def markdown(self, text: str) -> str:
        """Roles first (their values may sit inside directives), then blocks; tidy blank lines."""
        text = self.blocks(self.roles(text))
        return re.sub(r"\n{3,}", "\n\n", text).strip("\n")


# --------------------------------------------------------------------------- code
def without_glue(source: str) -> str:
    """``source`` with every top-level ``glue(...)`` statement and the glue import removed."""
    tree = ast.parse(source)
    drop: set[int] = set()
    for statement in tree.body:
        call = statement.value if isinstance(statement, ast.Expr) else None
        is_glue = isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id == "glue"
        is_import = isinstance(statement, ast.ImportFrom) and statement.module == "myst_nb"
        if is_glue or is_import:
            drop.update(range(statement.lineno, (statement.end_lineno or statement.lineno) + 1))
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "glue" \
                and node.lineno not in drop:
            raise ValueError(f"a glue call inside a block cannot be removed safely:\n{ast.unparse(node)}")
    kept = [line for n, line in enumerate(source.split("\n"), start=1) if n not in drop]
    text = "\n".join(kept)
    text = re.sub(r"\n{3,}", "\n\n", text).strip("\n")
    return text


def _only_comments(source: str) -> bool:
    return all(not line.strip() or line.lstrip().startswith("#") for line in source.splitlines())


def clean_outputs(outputs: list[NotebookNode]) -> list[NotebookNode]:
    """Stored outputs minus glue records and widget views (whose state is not stored).

    A live explorer's stored output is the note the web page shows ("download this page ..."); in a
    notebook it says to run the cell instead.
    """
    kept = []
    for output in outputs:
        data = output.get("data", {})
        live = output.get("metadata", {}).get(LIVE_MARK)
        if live is not None:
            output = nbformat.from_dict(dict(output))
            output["data"] = {"text/plain": f"Live explorer: {live.get('title', '')}. Run this cell "
                                            "(after the cells above it) to open its controls."}
            kept.append(output)
            continue
        if GLUE_MIME in data or output.get("metadata", {}).get("scrapbook"):
            continue
        if WIDGET_MIME in data:
            output = nbformat.from_dict(dict(output))
            output["data"] = {k: v for k, v in data.items() if k != WIDGET_MIME}
        kept.append(output)
    return kept


def _output_markdown(outputs: list[NotebookNode]) -> list[str]:
    """A solution's outputs as Markdown: text in fences, images inline as ``data:`` URIs.

    Not as cell attachments: nbgrader's ``generate_assignment`` replaces the text of a solution cell
    but keeps its attachments, so an attached figure would reach every learner's release. An inline
    image goes with the text (and GitHub, Colab and JupyterLab all show it).
    """
    parts = []
    for output in outputs:
        if output.output_type == "stream":
            parts.append(f"```text\n{output.text.rstrip()}\n```")
            continue
        data = output.get("data", {})
        if "image/png" in data:
            png = "".join(data["image/png"].split())
            base64.b64decode(png, validate=True)  # a corrupt image fails here, not later
            alt = "The figure the solution code above draws"
            parts.append(f"![{alt}](data:image/png;base64,{png})")
        elif "text/plain" in data:
            parts.append(f"```text\n{data['text/plain'].rstrip()}\n```")
    return parts


# --------------------------------------------------------------------------- solutions and their markers
# The chapters mark every solution the way nbgrader does (see book/press/student.py for the editions):
# each cell between ```{solution-start}``` and ```{solution-end}``` carries nbgrader cell metadata
# ("solution": true), and a code cell among them is wrapped in BEGIN/END SOLUTION lines. A solution
# inside a cell that also holds other text (the "Answer" dropdown of a "Check by hand" box) is a region
# between BEGIN/END SOLUTION lines in a cell marked as a solution, as nbgrader reads it.
BEGIN_SOLUTION = "### BEGIN SOLUTION"
END_SOLUTION = "### END SOLUTION"
SOLUTION_START = re.compile(r"^```\{solution-start\}\s*([\w:-]+)", re.M)
SOLUTION_END = re.compile(r"^```\{solution-end\}", re.M)
GRADE_ID = re.compile(r"^[A-Za-z0-9_-]+$")  # nbgrader's pattern for grade ids


def nbgrader_metadata(grade_id: str, cell_type: str, points: int = 0) -> dict[str, Any]:
    """nbgrader (schema 3) metadata of a solution cell.

    A code cell is an "autograded answer" (solution, not graded). nbgrader refuses a Markdown solution
    cell that is not also a grade cell ("Markdown solution cell is not marked as a grade cell"), so a
    Markdown one is a "manually graded answer" worth ``points``.
    """
    if not GRADE_ID.match(grade_id):
        raise ValueError(f"grade_id must be letters, digits, '_' or '-' (nbgrader's rule); got {grade_id!r}")
    if cell_type not in ("code", "markdown"):
        raise ValueError(f"cell_type must be 'code' or 'markdown'; got {cell_type!r}")
    meta: dict[str, Any] = {"grade": cell_type == "markdown", "grade_id": grade_id, "locked": False,
                            "schema_version": 3, "solution": True, "task": False}
    if cell_type == "markdown":
        meta["points"] = points
    return meta


def is_solution(cell: NotebookNode) -> bool:
    """True for a cell marked as (or holding) a solution in nbgrader's metadata."""
    return bool(cell.get("metadata", {}).get("nbgrader", {}).get("solution", False))


def _split_regions(source: str) -> tuple[list[str], list[list[str]]]:
    """(lines outside BEGIN/END SOLUTION regions, the lines of each region); markers dropped."""
    outside: list[str] = []
    regions: list[list[str]] = []
    region: list[str] | None = None
    for line in source.split("\n"):
        if line.strip() == BEGIN_SOLUTION:
            if region is not None:
                raise ValueError(f"a {BEGIN_SOLUTION} line inside another solution region:\n{source}")
            region = []
        elif line.strip() == END_SOLUTION:
            if region is None:
                raise ValueError(f"an {END_SOLUTION} line without its {BEGIN_SOLUTION}:\n{source}")
            regions.append(region)
            region = None
        elif region is not None:
            region.append(line)
        else:
            outside.append(line)
    if region is not None:
        raise ValueError(f"a {BEGIN_SOLUTION} line without its {END_SOLUTION}:\n{source}")
    return outside, regions


def without_markers(source: str) -> str:
    """``source`` with the BEGIN/END SOLUTION lines removed and everything else kept."""
    markers = (BEGIN_SOLUTION, END_SOLUTION)
    return "\n".join(line for line in source.split("\n") if line.strip() not in markers)


def solution_regions(source: str) -> list[str]:
    """The text of each BEGIN/END SOLUTION region of ``source``."""
    return ["\n".join(region) for region in _split_regions(source)[1]]


CODE_STUB = "# YOUR CODE HERE"


def student_source(cell: NotebookNode) -> str | None:
    """A cell's source in the student edition, or None when the whole cell is left out.

    As nbgrader reads the markers: a solution cell without regions is all solution, and so is one whose
    every line is in a region; in other solution cells only the regions are solution. A region inside
    other code becomes a ``# YOUR CODE HERE`` line (nbgrader's stub without its ``raise``, so the
    notebook still runs); one inside Markdown is left out.
    """
    outside, regions = _split_regions(cell.source)
    if not is_solution(cell):
        if regions:
            raise ValueError(f"a {BEGIN_SOLUTION} region in a cell not marked as a solution:\n{cell.source}")
        return cell.source
    if not regions or not "\n".join(outside).strip():
        return None
    kept: list[str] = []
    inside = False
    for line in cell.source.split("\n"):
        if line.strip() == BEGIN_SOLUTION:
            inside = True
            if cell.cell_type == "code":
                kept.append(line[:len(line) - len(line.lstrip())] + CODE_STUB)
        elif line.strip() == END_SOLUTION:
            inside = False
        elif not inside:
            kept.append(line)
    return "\n".join(kept)


def student_cell(cell: NotebookNode) -> NotebookNode | None:
    """A copy of ``cell`` as the student edition has it (see `student_source`), or None.

    A code cell whose solution was cut out loses its stored outputs (they are the solution's), and a
    kept cell loses its nbgrader metadata: the student edition is not an nbgrader source.
    """
    source = student_source(cell)
    if source is None:
        return None
    new = nbformat.from_dict(dict(cell))
    new.metadata = nbformat.from_dict({k: v for k, v in cell.metadata.items() if k != "nbgrader"})
    if source != cell.source:
        new.source = source
        if new.cell_type == "code":
            new.outputs = []
            new.execution_count = None
    return new


def _in_gated_solution(nb: NotebookNode) -> list[str | None]:
    """For each cell, the exercise label of the gated solution it belongs to, or None."""
    labels: list[str | None] = []
    current: str | None = None
    for cell in nb.cells:
        start = SOLUTION_START.search(cell.source) if cell.cell_type == "markdown" else None
        if start:
            current = start.group(1)
        labels.append(current)
        if cell.cell_type == "markdown" and SOLUTION_END.search(cell.source):
            current = None
    return labels


def marker_problems(nb: NotebookNode, name: str = "") -> list[str]:
    """What is missing or wrong in a chapter's solution markers (an empty list when they are right).

    Every cell of a gated solution is marked, and a code cell among them is wrapped whole; a marked
    cell outside them holds its solution in a region; grade ids are unique and valid for nbgrader.
    """
    problems = []
    seen: set[str] = set()
    for i, (cell, label) in enumerate(zip(nb.cells, _in_gated_solution(nb), strict=True)):
        where = f"{name} cell {i}"
        meta = cell.get("metadata", {}).get("nbgrader")
        try:
            regions = solution_regions(cell.source)
        except ValueError as exc:
            problems.append(f"{where}: {exc}")
            continue
        if meta is not None:
            grade_id = str(meta.get("grade_id", ""))
            if not GRADE_ID.match(grade_id) or grade_id in seen:
                problems.append(f"{where}: grade_id {grade_id!r} is missing, invalid or used twice")
            seen.add(grade_id)
            if cell.cell_type == "markdown" and meta.get("solution") and not meta.get("grade"):
                problems.append(f"{where}: nbgrader refuses a Markdown solution cell that is not graded")
        if label is not None:
            if not is_solution(cell):
                problems.append(f"{where} is part of the solution to {label} but not marked as a solution")
            lines = cell.source.strip("\n").split("\n")
            if cell.cell_type == "code" and (lines[0].strip() != BEGIN_SOLUTION
                                             or lines[-1].strip() != END_SOLUTION):
                problems.append(f"{where}: solution code must open with {BEGIN_SOLUTION!r} and end with "
                                f"{END_SOLUTION!r}")
        elif is_solution(cell) and not regions:
            problems.append(f"{where} is marked as a solution but is outside every solution and has no "
                            f"{BEGIN_SOLUTION!r} region")
        elif regions and not is_solution(cell):
            problems.append(f"{where} has a solution region but is not marked as a solution")
    return problems


def mark_solutions(nb: NotebookNode) -> NotebookNode:
    """Add the missing markers to every gated solution of ``nb`` (in place; idempotent).

    Cells of a gated solution get nbgrader metadata (grade ids ``<exercise label>-1``, ``-2``, ...)
    and solution code is wrapped in BEGIN/END SOLUTION lines. A region inside another cell cannot be
    found without its marker lines; that cell only gets its metadata (grade id ``<target>-answer``).
    """
    counts: dict[str, int] = {}
    taken = {c.metadata.get("nbgrader", {}).get("grade_id") for c in nb.cells}  # ids are unique in a notebook
    for i, (cell, label) in enumerate(zip(nb.cells, _in_gated_solution(nb), strict=True)):
        if label is None:
            if solution_regions(cell.source) and not is_solution(cell):
                target = re.search(r"^\(([\w-]+)\)=\s*$", cell.source, re.M)
                grade_id = f"{target.group(1) if target else f'cell-{i}'}-answer"
                cell.metadata["nbgrader"] = nbgrader_metadata(grade_id, cell.cell_type)
            continue
        counts[label] = counts.get(label, 0) + 1
        if cell.cell_type == "code":
            if cell.source.lstrip().startswith("%%"):
                raise ValueError(f"cell {i}: a cell magic must stay the first line; mark this cell by hand")
            lines = cell.source.strip("\n").split("\n")
            if lines[0].strip() != BEGIN_SOLUTION:
                cell.source = f"{BEGIN_SOLUTION}\n{cell.source.strip(chr(10))}\n{END_SOLUTION}"
        if not is_solution(cell):
            while f"{label}-{counts[label]}" in taken:  # a cell added to an already marked solution
                counts[label] += 1
            taken.add(f"{label}-{counts[label]}")
            cell.metadata["nbgrader"] = nbgrader_metadata(f"{label}-{counts[label]}", cell.cell_type)
    return nb


# --------------------------------------------------------------------------- one chapter
def _glue_values(nb: NotebookNode) -> dict[str, str]:
    values = {}
    for cell in nb.cells:
        for output in cell.get("outputs", []):
            name = output.get("metadata", {}).get("scrapbook", {}).get("name")
            if name and GLUE_MIME in output.get("data", {}):
                values[name] = output["data"][GLUE_MIME]
    return values


def _first_heading(nb: NotebookNode) -> str:
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            for line in cell.source.splitlines():
                if m := HEADING.match(line):
                    return _plain_heading(m.group(2))
    raise ValueError("a chapter has no heading")


EDITIONS = ("notebook", "student")


def render_chapter(chapter: Chapter, labels: Labels, bibliography: Bibliography,
                   install: NotebookNode, book_title: str, edition: str = "notebook") -> NotebookNode:
    """One chapter as a notebook: the notebook edition, or with ``edition="student"`` the student one.

    Both are made from the same list of cells, so the student edition is the notebook edition with its
    solution cells left out (and a region of solution code inside other code replaced by a stub).
    """
    if edition not in EDITIONS:
        raise ValueError(f"edition must be one of {EDITIONS}; got {edition!r}")
    problems = marker_problems(chapter.notebook, chapter.path.name)
    if problems:
        raise ValueError("the solutions' markers are incomplete (run `python -m press.notebook_edition "
                         "--mark`, then check the diff):\n" + "\n".join(problems))
    r = Renderer(chapter, labels, bibliography)
    cells: list[NotebookNode] = [copy.deepcopy(install)]  # each chapter its own: ids are set per chapter
    solution: dict[str, Any] | None = None
    for cell in chapter.notebook.cells:
        tags = cell.metadata.get("tags", [])
        if "remove-cell" in tags:
            continue
        if cell.cell_type == "markdown":
            text = cell.source
            start = re.search(r"```\{solution-start\}\s*([\w:-]+)[^\n]*\n(?:\s*:[\w-]+:.*\n)*```\n?", text)
            if start:
                if solution is not None:
                    raise ValueError(f"{chapter.path.name}: a solution starts inside another")
                label = start.group(1)
                solution = {"label": label, "parts": [],
                            "title": f"Solution to {labels.text[label]}"}
                text = text[start.end():]
            end = re.search(r"```\{solution-end\}\s*\n```", text)
            body_text = text[:end.start()] if end else text
            if solution is not None:
                r.in_solution = True
                rendered = r.markdown(without_markers(body_text))
                r.in_solution = False
                if rendered:
                    solution["parts"].append(rendered)
                if end:
                    cells.append(_solution_cell(solution))
                    solution = None
                    rest = r.markdown(text[end.end():])
                    if rest:
                        cells.append(nbformat.v4.new_markdown_cell(rest))
                continue
            cells += _markdown_cells(r, cell)
            continue
        if cell.cell_type != "code":
            continue
        if solution is not None:
            code = without_glue(without_markers(cell.source))
            outputs = clean_outputs(cell.get("outputs", []))
            if code and not _only_comments(code):
                solution["parts"].append(f"```python\n{code}\n```")
                solution["parts"] += _output_markdown(outputs)
                r.in_solution = True
                caption = figure_caption(r, cell)
                r.in_solution = False
                if caption:
                    solution["parts"].append(caption)
            continue
        # Solution code inside other code keeps its markers here (an nbgrader source; see student.py).
        code = without_glue(cell.source)
        outputs = clean_outputs(cell.get("outputs", []))
        if not code or (_only_comments(code) and not outputs):
            continue
        new = nbformat.v4.new_code_cell(code)
        new.execution_count = cell.get("execution_count")  # the chapter's one run, in order
        new.outputs = outputs
        if tags:
            new.metadata["tags"] = list(tags)
        if "hide-cell" in tags or "hide-input" in tags:
            new.metadata["jupyter"] = {"source_hidden": True}
        if is_solution(cell):
            new.metadata["nbgrader"] = dict(cell.metadata["nbgrader"])
        cells.append(new)
        caption = figure_caption(r, cell)
        if caption:
            cells.append(nbformat.v4.new_markdown_cell(caption))
    if solution is not None:
        raise ValueError(f"{chapter.path.name}: the solution to {solution['label']} never ends")
    cells = _without_dead_cells(cells)
    # The title, numbered as on the web page, then a note on what this notebook is.
    first = next(i for i, c in enumerate(cells) if c.cell_type == "markdown")
    title, _, rest = cells[first].source.partition("\n")
    if not title.startswith("# "):
        raise ValueError(f"{chapter.path.name}: the first Markdown cell must open with the chapter title")
    what = (f"Section {chapter.section}, a going-deeper page," if chapter.section
            else f"Chapter {chapter.number}")
    if edition == "student":
        note = (f"*{what} of “{book_title}”, as a notebook: the student edition, with the "
                "exercises and without their solutions. The numbers in the text were computed by its code "
                "cells when the book was built. Run the cells in order, the first one first.*")
    else:
        note = (f"*{what} of “{book_title}”, as a notebook. The numbers in the text were "
                "computed by its code cells when the book was built. Run the cells in order, the first one "
                "first.*")
    heading = nbformat.v4.new_markdown_cell(f"# {chapter.heading_number}. {title[2:].strip()}\n\n{note}")
    body = [nbformat.v4.new_markdown_cell(rest.strip("\n"))] if rest.strip() else []
    cells[first:first + 1] = [heading, *body]
    cited = [k for k in r.cited if edition != "student" or k in r.cited_outside_solutions]
    if cited:
        lines = "\n".join(f"- {bibliography.reference(k)}" for k in cited)
        cells.append(nbformat.v4.new_markdown_cell(f"## References\n\n{lines}"))
    nb = nbformat.v4.new_notebook(cells=cells, metadata={
        "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
        "language_info": {"name": "python"},
        "attnbook": {"edition": edition, "source": f"book/{chapter.path.name}"},
    })
    for i, c in enumerate(nb.cells):  # stable ids, so regenerating writes the same bytes
        c["id"] = f"{chapter.path.stem[:2]}-{i:03d}"
    if edition == "student":  # the same cells, ids kept, less every solution
        nb.cells = [kept for c in nb.cells if (kept := student_cell(c)) is not None]
    return nb


def figure_caption(r: Renderer, cell: NotebookNode) -> str:
    """The caption of a code cell's figure as the paragraph under it ("**Figure 3.2.** …"), or ""."""
    options = figure_options(cell)
    text = str(options.get("caption", "")).strip()
    if not text:
        return ""
    caption = r.markdown(text)
    name = str(options.get("name", "")).strip()
    return f"**{r.labels.text[name]}.** {caption}" if is_numbered_figure(options) else f"*{caption}*"


def _markdown_cells(r: Renderer, cell: NotebookNode) -> list[NotebookNode]:
    """A Markdown cell outside the gated solutions; a solution region inside it becomes its own cell.

    The region (the "Answer" dropdown of a "Check by hand" box) closes the block it sits in, so the
    cell after it reads the same; as a cell of its own it is an nbgrader answer cell.
    """
    outside, regions = _split_regions(cell.source)
    cells = []
    rendered = r.markdown("\n".join(outside))
    if rendered:
        cells.append(nbformat.v4.new_markdown_cell(rendered))
    for k, region in enumerate(regions, start=1):
        r.in_solution = True
        answer = nbformat.v4.new_markdown_cell(r.markdown("\n".join(region)))
        r.in_solution = False
        grade_id = cell.metadata["nbgrader"]["grade_id"] + (f"-{k}" if len(regions) > 1 else "")
        answer.metadata["nbgrader"] = nbgrader_metadata(grade_id, "markdown", points=1)
        cells.append(answer)
    return cells


def _names(tree: ast.AST, kind: type) -> set[str]:
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, kind)}


def _without_dead_cells(cells: list[NotebookNode]) -> list[NotebookNode]:
    """Drop code cells left with only assignments no later code reads (they fed removed glue calls).

    Later code includes the solutions' code (a learner may copy it into a cell). Walking backwards
    drops chains of such cells too.
    """
    used: set[str] = set()
    kept: list[NotebookNode] = []
    for cell in reversed(cells):
        if cell.cell_type == "markdown":
            for code in re.findall(r"```python\n(.*?)\n```", cell.source, re.S):
                used |= _names(ast.parse(code), ast.Load)
            kept.append(cell)
            continue
        if cell.metadata.get("tags") == [INSTALL_TAG]:
            kept.append(cell)
            continue
        tree = ast.parse(TransformerManager().transform_cell(cell.source))
        only_assignments = all(  # to plain names: an attribute or item assignment changes an object
            isinstance(st, (ast.Assign, ast.AnnAssign))
            and all(isinstance(n, (ast.Name, ast.Tuple, ast.List)) for n in ast.walk(st)
                    if isinstance(getattr(n, "ctx", None), ast.Store))
            for st in tree.body
        )
        if only_assignments and not cell.outputs and not (_names(tree, ast.Store) & used):
            continue
        used |= _names(tree, ast.Load)
        kept.append(cell)
    return kept[::-1]


def _solution_cell(solution: dict[str, Any]) -> NotebookNode:
    body = "\n\n".join(solution["parts"])
    cell = nbformat.v4.new_markdown_cell(
        f"<details>\n<summary>{solution['title']}</summary>\n\n{body}\n\n</details>"
    )
    cell.metadata["tags"] = ["solution"]
    cell.metadata["nbgrader"] = nbgrader_metadata(solution["label"], "markdown", points=1)
    return cell


# --------------------------------------------------------------------------- the edition
def load_pages(root: Path = ROOT) -> list[Chapter]:
    """Every page of the table of contents; a Markdown page is read as one Markdown cell."""
    pages: list[Chapter] = []
    number = 0
    for doc, numbered, parent in _toc_documents(root):
        number += numbered and parent is None
        path = root / f"{doc}.ipynb"
        if path.exists():
            nb = nbformat.read(path, as_version=4)
        else:
            path = root / f"{doc}.md"
            text = path.read_text(encoding="utf-8")
            nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(text)])
        section = None
        if parent is not None and numbered:
            # Sphinx numbers the nested page after the chapter's own sections and earlier nested pages.
            siblings = [p for p in pages if p.section and p.number == number]
            chapter = next(p for p in pages if p.path.with_suffix("").as_posix().endswith(parent))
            h2 = sum(bool(re.match(r"^##\s", line)) for cell in chapter.notebook.cells
                     if cell.cell_type == "markdown" for line in cell.source.splitlines())
            section = f"{number}.{h2 + len(siblings) + 1}"
        pages.append(Chapter(path, number if numbered else None, _first_heading(nb), nb, _glue_values(nb),
                             section))
    return pages


def build(root: Path = ROOT, edition: str = "notebook") -> dict[str, NotebookNode]:
    """Every chapter's notebook edition (or student edition), by file name (not written)."""
    import attnlib

    pages = load_pages(root)
    labels = collect_labels(pages)
    chapters = [page for page in pages if page.path.suffix == ".ipynb"]
    bibliography = Bibliography.load(root / "book" / "references.bib")
    config = yaml.safe_load((root / "_config.yml").read_text(encoding="utf-8"))
    repository = Repository.from_config(root)
    wheel = wheel_ext.wheel_name(root)
    link = wheel_url(repository, wheel)
    cell = install_cell([install_source(repository, attnlib.__version__), link], wheel, link)
    return {c.path.name: _numbered(render_chapter(c, labels, bibliography, cell, config["title"], edition))
            for c in chapters}


def _numbered(nb: NotebookNode) -> NotebookNode:
    """Execution counts 1, 2, 3, ... down the notebook, the install cell first: what a reader's run
    from the top gives (the chapter's own counts have gaps where claim and glue-only cells were
    dropped, and its run never held the install cell). Outputs are the chapter's, unchanged."""
    count = 0
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        if not cell.source.strip() or (cell.execution_count is None and not _is_install(cell)):
            continue  # a cell the chapter did not run (a student's emptied solution) stays unnumbered
        count += 1
        cell.execution_count = count
        for output in cell.get("outputs", []):
            if output.output_type == "execute_result":
                output.execution_count = count
    return nb


def _is_install(cell: NotebookNode) -> bool:
    return "install" in cell.metadata.get("tags", [])


def mark_chapters(root: Path = ROOT) -> list[str]:
    """Add the missing solution markers to every chapter (`mark_solutions`); the names of those changed."""
    changed = []
    for path in sorted((root / "book").glob("[0-9]*.ipynb")):
        text = path.read_text(encoding="utf-8")
        nb = mark_solutions(nbformat.read(path, as_version=4))
        if serialise(nb) != text:
            path.write_text(serialise(nb), encoding="utf-8")
            changed.append(path.name)
    return changed


def serialise(nb: NotebookNode) -> str:
    return nbformat.writes(nb) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true",
                        help="write nothing; fail if the committed edition differs from the chapters")
    parser.add_argument("--mark", action="store_true",
                        help="add the nbgrader markers the chapters' solutions lack (metadata and comment "
                             "lines only), then stop")
    args = parser.parse_args(argv)
    if args.mark:
        changed = mark_chapters(ROOT)
        print(f"Marked the solutions of {len(changed)} chapters: {', '.join(changed) or 'none needed it'}.")
        return 0
    out = ROOT / OUT_DIR
    edition = build(ROOT)
    stale = [name for name, nb in edition.items()
             if not (out / name).exists() or (out / name).read_text(encoding="utf-8") != serialise(nb)]
    extra = sorted(p.name for p in out.glob("*.ipynb") if p.name not in edition) if out.exists() else []
    if args.check:
        if stale or extra:
            print(f"The notebook edition is out of date ({', '.join(stale + extra)}): run `make edition`.")
            return 1
        print(f"The notebook edition in {OUT_DIR} is up to date ({len(edition)} notebooks).")
        return 0
    out.mkdir(parents=True, exist_ok=True)
    for name in extra:
        (out / name).unlink()
    for name, nb in edition.items():
        (out / name).write_text(serialise(nb), encoding="utf-8")
    print(f"Wrote {len(edition)} notebooks to {OUT_DIR} ({len(stale)} changed).")
    return 0


if __name__ == "__main__":
    sys.exit(main())
