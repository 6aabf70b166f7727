"""The notebook edition: every chapter as a plain Jupyter notebook that runs and reads well anywhere.

The chapters under ``book/`` are MyST notebooks: their prose holds ``{glue:text}`` roles that the HTML
build fills with computed numbers, ``{ref}``/``{doc}``/``{cite}`` roles, and directives for exercises,
solutions and proofs. Opened in Jupyter, Colab or on GitHub they show that syntax raw, and their code
needs ``myst_nb`` (``glue``) and a checkout of this repository. This module writes, from ``book/`` and
its stored outputs, one notebook per chapter into ``book/notebooks/`` in which

* every ``{glue:text}`` role is replaced by the value it shows in the HTML (read from the stored glue
  outputs and formatted by myst-nb's own function), and no code cell calls ``glue``;
* cross-references and citations are plain text (``"Exercise 3.2"``, ``“Section title” (chapter 4)``,
  ``[Vaswani et al., 2017]``), with the works a chapter cites listed at its end;
* exercises, theorems and proofs are Markdown headings and paragraphs, numbered as in the HTML;
  each solution (its text, code and outputs) is one ``<details>`` block after its exercise;
* the cells the HTML removes (the claim checks) are left out, and stored widget views are dropped
  (their widget state is not stored, so Jupyter could only show an error in their place);
* a first cell installs ``attnlib[interactive]`` only where attnlib, Plotly or ipywidgets is missing
  (Colab, a fresh Jupyter), from the repository configured in ``_config.yml`` at the tag of this
  version, or from ``ATTNLIB_SOURCE`` when that is set.

The edition is committed, because Colab opens notebooks from the repository; ``tests`` check that it
is what this module writes from the current chapters.

Usage: ``python book/_ext/notebook_edition.py [--check]`` (``make edition``).
"""

from __future__ import annotations

import argparse
import ast
import base64
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import nbformat
import yaml
from IPython.core.inputtransformer2 import TransformerManager
from myst_nb.core.variables import format_plain_text
from nbformat import NotebookNode

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
    """Where the book's repository lives, from ``_config.yml`` (``sphinx.config.book_repository_*``)."""

    url: str = ""
    branch: str = "main"

    @classmethod
    def from_config(cls, root: Path = ROOT) -> Repository:
        config = yaml.safe_load((root / "_config.yml").read_text(encoding="utf-8"))
        sphinx_config = (config.get("sphinx") or {}).get("config") or {}
        return cls(str(sphinx_config.get("book_repository_url") or "").strip(),
                   str(sphinx_config.get("book_repository_branch") or "main").strip())


def install_source(repository: Repository, version: str) -> str:
    """The pip requirement URL of attnlib at the tag of ``version``, or "" with no repository."""
    if not repository.url:
        return ""
    return f"git+{repository.url.rstrip('/').removesuffix('.git')}.git@v{version}"


def install_cell(source: str) -> NotebookNode:
    """The first cell: installs what is missing, only where it is missing."""
    if source:
        get_source = f'    source = os.environ.get("ATTNLIB_SOURCE", "{source}")\n'
    else:
        get_source = (
            '    source = os.environ.get("ATTNLIB_SOURCE", "")\n'
            "    if not source:\n"
            "        raise RuntimeError(\n"
            '            "attnlib (with plotly and ipywidgets) is not installed, and this copy of the "\n'
            '            "book names no public repository to install it from. Install it from a copy "\n'
            "            \"of the repository (pip install '/path/to/repository[interactive]'), or name \"\n"
            '            "the source in a cell above this one and run this cell again, e.g. "\n'
            '            "%env ATTNLIB_SOURCE=git+https://github.com/OWNER/REPOSITORY.git@TAG"\n'
            "        )\n"
        )
    code = (
        "# Run this cell first. Where attnlib, Plotly or ipywidgets is missing (Colab, a fresh Jupyter), it\n"
        "# installs attnlib with both; where they are installed (Binder, a checkout of the book) it does\n"
        "# nothing. It never upgrades what is already there (Colab's ipywidgets 7 stays).\n"
        "import importlib.util\n"
        "import os\n"
        "\n"
        'if any(importlib.util.find_spec(m) is None for m in ("attnlib", "plotly", "ipywidgets")):\n'
        f"{get_source}"
        '    %pip install --quiet "attnlib[interactive] @ {source}"\n'
        "    importlib.invalidate_caches()\n"
        '    if importlib.util.find_spec("attnlib") is None:  # %pip reports a failure but does not raise\n'
        '        raise RuntimeError(f"Installing attnlib from {source} failed: see pip\'s message above.")'
    )
    cell = nbformat.v4.new_code_cell(code)
    cell.metadata["tags"] = [INSTALL_TAG]
    return cell


# --------------------------------------------------------------------------- the book's labels
@dataclass
class Chapter:
    """One chapter notebook and what other chapters may refer to in it."""

    path: Path
    number: int | None
    title: str
    notebook: NotebookNode
    glue: dict[str, str] = field(default_factory=dict)


@dataclass
class Labels:
    """Every label of the book, resolved to the text a plain notebook shows for a reference to it."""

    text: dict[str, str] = field(default_factory=dict)  # label -> e.g. "Exercise 3.2"
    chapter_of: dict[str, int | None] = field(default_factory=dict)
    docs: dict[str, str] = field(default_factory=dict)  # doc name -> "“Title” (chapter N)"


FENCE = re.compile(r"^(?P<indent>\s*)(?P<fence>`{3,}|:{3,})\{(?P<name>[\w:-]+)\}[ \t]*(?P<arg>.*)$")
TARGET = re.compile(r"^\(([\w.:-]+)\)=\s*$")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")


def _toc_documents(root: Path) -> list[tuple[str, bool]]:
    """(document path without extension, numbered) in table-of-contents order."""
    toc = yaml.safe_load((root / "_toc.yml").read_text(encoding="utf-8"))
    docs = [(toc["root"], False)]
    for part in toc.get("parts", []):
        docs += [(entry["file"], bool(part.get("numbered"))) for entry in part.get("chapters", [])]
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
    for chapter in chapters:
        doc = chapter.path.stem
        number = chapter.number
        where = f"“{chapter.title}” (chapter {number})" if number else f"“{chapter.title}”"
        labels.docs[doc] = where
        counts: dict[str, int] = {}
        pending: list[str] = []
        for cell in chapter.notebook.cells:
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
        return str(self._entry(key).fields.get("year", "n.d."))

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
        self.counts: dict[str, int] = {}

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
                    if FENCE.match(lines[k]) and FENCE.match(lines[k]).group("fence")[0] == fence[0]:
                        depth += 1 if len(FENCE.match(lines[k]).group("fence")) >= len(fence) else 0
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


def _output_markdown(outputs: list[NotebookNode], stem: str,
                     attachments: dict[str, dict[str, str]]) -> list[str]:
    """A solution's outputs as Markdown: text in fences, images as cell attachments."""
    parts = []
    for output in outputs:
        if output.output_type == "stream":
            parts.append(f"```text\n{output.text.rstrip()}\n```")
            continue
        data = output.get("data", {})
        if "image/png" in data:
            name = f"{stem}-{len(attachments) + 1}.png"
            attachments[name] = {"image/png": data["image/png"]}
            base64.b64decode(data["image/png"], validate=False)  # a corrupt image fails here, not later
            alt = "The figure the solution code above draws"
            parts.append(f"![{alt}](attachment:{name})")
        elif "text/plain" in data:
            parts.append(f"```text\n{data['text/plain'].rstrip()}\n```")
    return parts


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


def render_chapter(chapter: Chapter, labels: Labels, bibliography: Bibliography,
                   source: str, book_title: str) -> NotebookNode:
    """The notebook edition of one chapter."""
    r = Renderer(chapter, labels, bibliography)
    cells: list[NotebookNode] = [install_cell(source)]
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
                solution = {"label": label, "parts": [], "attachments": {},
                            "title": f"Solution to {labels.text[label]}"}
                text = text[start.end():]
            end = re.search(r"```\{solution-end\}\s*\n```", text)
            body_text = text[:end.start()] if end else text
            if solution is not None:
                rendered = r.markdown(body_text)
                if rendered:
                    solution["parts"].append(rendered)
                if end:
                    cells.append(_solution_cell(solution))
                    solution = None
                    rest = r.markdown(text[end.end():])
                    if rest:
                        cells.append(nbformat.v4.new_markdown_cell(rest))
                continue
            rendered = r.markdown(text)
            if rendered:
                cells.append(nbformat.v4.new_markdown_cell(rendered))
            continue
        if cell.cell_type != "code":
            continue
        code = without_glue(cell.source)
        outputs = clean_outputs(cell.get("outputs", []))
        if solution is not None:
            if code and not _only_comments(code):
                solution["parts"].append(f"```python\n{code}\n```")
                stem = f"{solution['label']}"
                solution["parts"] += _output_markdown(outputs, stem, solution["attachments"])
            continue
        if not code or (_only_comments(code) and not outputs):
            continue
        new = nbformat.v4.new_code_cell(code)
        new.outputs = outputs
        if tags:
            new.metadata["tags"] = list(tags)
        if "hide-cell" in tags or "hide-input" in tags:
            new.metadata["jupyter"] = {"source_hidden": True}
        cells.append(new)
    if solution is not None:
        raise ValueError(f"{chapter.path.name}: the solution to {solution['label']} never ends")
    cells = _without_dead_cells(cells)
    # The title, numbered as on the web page, then a note on what this notebook is.
    first = next(i for i, c in enumerate(cells) if c.cell_type == "markdown")
    title, _, rest = cells[first].source.partition("\n")
    if not title.startswith("# "):
        raise ValueError(f"{chapter.path.name}: the first Markdown cell must open with the chapter title")
    note = (f"*Chapter {chapter.number} of “{book_title}”, as a notebook. The numbers in the text were "
            "computed by its code cells when the book was built. Run the cells in order, the first one "
            "first.*")
    heading = nbformat.v4.new_markdown_cell(f"# {chapter.number}. {title[2:].strip()}\n\n{note}")
    body = [nbformat.v4.new_markdown_cell(rest.strip("\n"))] if rest.strip() else []
    cells[first:first + 1] = [heading, *body]
    if r.cited:
        lines = "\n".join(f"- {bibliography.reference(k)}" for k in r.cited)
        cells.append(nbformat.v4.new_markdown_cell(f"## References\n\n{lines}"))
    nb = nbformat.v4.new_notebook(cells=cells, metadata={
        "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
        "language_info": {"name": "python"},
        "attnbook": {"edition": "notebook", "source": f"book/{chapter.path.name}"},
    })
    for i, c in enumerate(nb.cells):  # stable ids, so regenerating writes the same bytes
        c["id"] = f"{chapter.path.stem[:2]}-{i:03d}"
    return nb


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
    if solution["attachments"]:
        cell["attachments"] = solution["attachments"]
    return cell


# --------------------------------------------------------------------------- the edition
def load_pages(root: Path = ROOT) -> list[Chapter]:
    """Every page of the table of contents; a Markdown page is read as one Markdown cell."""
    pages = []
    number = 0
    for doc, numbered in _toc_documents(root):
        number += numbered
        path = root / f"{doc}.ipynb"
        if path.exists():
            nb = nbformat.read(path, as_version=4)
        else:
            path = root / f"{doc}.md"
            text = path.read_text(encoding="utf-8")
            nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(text)])
        pages.append(Chapter(path, number if numbered else None, _first_heading(nb), nb, _glue_values(nb)))
    return pages


def build(root: Path = ROOT) -> dict[str, NotebookNode]:
    """Every chapter's notebook edition, by file name (not written)."""
    import attnlib

    pages = load_pages(root)
    labels = collect_labels(pages)
    chapters = [page for page in pages if page.path.suffix == ".ipynb"]
    bibliography = Bibliography.load(root / "book" / "references.bib")
    config = yaml.safe_load((root / "_config.yml").read_text(encoding="utf-8"))
    source = install_source(Repository.from_config(root), attnlib.__version__)
    return {c.path.name: render_chapter(c, labels, bibliography, source, config["title"]) for c in chapters}


def serialise(nb: NotebookNode) -> str:
    return nbformat.writes(nb) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true",
                        help="write nothing; fail if the committed edition differs from the chapters")
    args = parser.parse_args(argv)
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
