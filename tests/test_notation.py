"""Each reserved letter of the notation page keeps its one meaning across the book.

``book/notation.md`` ends with a table of reserved letters, ``| letter | meaning |``, and
``book/about.md`` (the back-matter page for maintainers) has the same letters' ``| letter | may equal |``
column. This test reads both tables and scans the prose math of every page (``$...$`` and ``$$...$$``
in the markdown cells of ``book/*.ipynb``, in ``book/*.md``, and in figure captions, the ``caption`` of
a cell's metadata) for two things it can check mechanically:

1. Equations that define a reserved letter. In ``$E = \\exp(\\tilde S - \\max)$`` or
   ``$\\ldots, \\quad S = QK^\\top$`` the bare letter stands alone left of ``=``; its right-hand side
   (up to the next ``=``, comma, ``\\quad``, relation or the end of the math) must be one of the
   forms in the "may equal" column (compared without spaces and thin spaces), or a number. "a
   count" also allows expressions in other counts (``H = d_{\\text{model}}/16``), "written out" a
   matrix of numbers or an identity, "—" only a number.
2. Letters introduced in words: "let $P$ be ...", "writing $W$ for ...", "$E$ the last axis ...",
   "where $L$ is ...": the few words that follow must share a word with the letter's meaning
   column. And a letter named by the noun just before it ("a loss $\\ell$", "encodings $E$")
   must not be named by a word of another reserved letter's meaning unless its own has it too.

Decorated and indexed forms (``\\tilde S``, ``S_{ij}``, ``W_Q``, ``A'``) are parts or variants of
the same object and are not checked, unless the table lists them (``n_q``, ``H_{kv}``).

What it cannot check: a letter used with another meaning without being defined (``the loss $L$``
with no equation and none of the phrases above), definitions inside code cells or glued values, and
whether an allowed right-hand side is used in the right place. Letters that are not reserved are
local to a section and are not checked at all.

Last, a width ($d_k$, $d_v$, $d_{\\text{model}}$, $d_{\\text{head}}$) must not be called a length, the word
the book keeps for a vector's norm (``length_for_width``).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
BOOK_DIR = REPO_ROOT / "book"
NOTATION = BOOK_DIR / "notation.md"
ABOUT = BOOK_DIR / "about.md"  # the "may equal" column of the reserved letters, for maintainers

MATH = re.compile(r"\$\$(.+?)\$\$|\$([^$\n]+)\$", re.DOTALL)
CODE = re.compile(r"`[^`\n]*`")  # inline code may hold a dollar sign
# Commands that only space or size things: dropped before comparing forms.
SPACING = re.compile(r"\\[,;:! ]|\\(?:left|right|big|Big|bigl|bigr|Bigl|Bigr)\b|\s+")
# A definition ends at these (at brace depth 0).
STOPS = re.compile(r"=|,|;|<|>|&|\\\\|\\(?:qquad|quad|le|leq|ge|geq|ne|neq|approx|in|text|to|mid)\b")
DECORATIONS = re.compile(r"\\(?:tilde|hat|bar|mathrm|mathcal|mathbf|mathbb|operatorname|text)\s*\{?\s*$")
NUMBER_TOKENS = re.compile(
    r"\\(?:cdot|infty|sqrt|frac|tfrac|dfrac|times|pi|exp|ln|log|lceil|rceil|max|min)|\\mathrm\{e\}|\be\b"
)
COUNT_TOKENS = re.compile(r"d_\{\\text\{\w+\}\}|[dnH]_\{?\w+\}?|(?<![A-Za-z\\])[nHBLd](?![A-Za-z])")


# A later chapter's letter ends its meaning with where it first appears: "(chapter 4)", "(chapters 5–7)".
CHAPTER_MARK = re.compile(r"\s*\(chapters? \d+(?:[–-]\d+)?\)\s*$")


@dataclass(frozen=True)
class Reserved:
    symbol: str  # as written in the table, e.g. "S", "\\ell", "d_{\\text{model}}"
    meaning: str
    forms: tuple[str, ...]  # normalised right-hand sides from about.md's "may equal" column
    kinds: tuple[str, ...]  # "a count", "written out", "—"


@dataclass(frozen=True)
class Clash:
    page: str
    symbol: str
    text: str

    def __str__(self) -> str:
        return f"{self.page}: ${self.symbol}$ in {self.text!r}"


def normalise(tex: str) -> str:
    return SPACING.sub("", tex).rstrip(".")


def _table_rows(markdown: str, after: str) -> list[tuple[str, str]]:
    """The two-column rows ``| $letters$ | text |`` of the first table after the heading ``after``."""
    section = markdown.split(after, 1)[1]
    rows = []
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if rows and not line.startswith("|"):
            break  # the end of the table
        if len(cells) == 2 and cells[0].startswith("$"):
            rows.append((cells[0], cells[1]))
    return rows


def parse_reserved(markdown: str, rules: str) -> dict[str, Reserved]:
    """The reserved letters by symbol: their meanings from the notation page's table (under "## Reserved
    letters") and what each may equal from about.md's (under "## How the notation is checked")."""
    meanings = _table_rows(markdown, "## Reserved letters")
    allowed_rhs = dict(_table_rows(rules, "## How the notation is checked"))
    missing = [letters for letters, _ in meanings if letters not in allowed_rhs]
    extra = sorted(set(allowed_rhs) - {letters for letters, _ in meanings})
    if missing or extra:
        raise ValueError(
            f"the reserved letters of notation.md and about.md differ: {missing or ''} only in "
            f"notation.md, {extra or ''} only in about.md"
        )
    table: dict[str, Reserved] = {}
    for letters, meaning in meanings:
        defined = allowed_rhs[letters]
        meaning = re.sub(r"\{term\}`([^`<]*?)\s*(?:<[^>]*>)?`", r"\1", meaning)  # {term}`x <X>` -> x
        meaning = CHAPTER_MARK.sub("", meaning)  # "(chapter 4)" says where it first appears, not what it is
        forms = tuple(normalise(f) for f in re.findall(r"\$([^$]+)\$", defined))
        kinds = tuple(k.strip() for k in re.sub(r"\$[^$]+\$", "", defined).split(";") if k.strip())
        for symbol in re.findall(r"\$([^$]+)\$", letters):
            table[symbol] = Reserved(symbol, meaning, forms, kinds)
    return table


def rhs_end(text: str, start: int) -> int:
    """Where a right-hand side starting at ``start`` ends: a stop at brace/bracket depth 0."""
    depth = 0
    i = start
    while i < len(text):
        ch = text[i]
        if ch in "({[":
            depth += 1
        elif ch in ")}]":
            if depth == 0:
                return i
            depth -= 1
        elif depth == 0 and (stop := STOPS.match(text, i)):
            return i if stop.group() != "\\\\" or i > start else i + 2
        i += 1
    return i


def is_number(rhs: str) -> bool:
    rest = NUMBER_TOKENS.sub("", rhs)
    return bool(re.search(r"\d|\\infty", rhs)) and re.fullmatch(r"[-+*/^{}()\[\].!\d]*", rest) is not None


def allowed(entry: Reserved, rhs: str) -> bool:
    if rhs in entry.forms or is_number(rhs):
        return True
    if "a count" in entry.kinds:
        return is_number(COUNT_TOKENS.sub("1", rhs))
    if "written out" in entry.kinds:
        return rhs.startswith(("\\begin", "[", "(")) or re.fullmatch(r"I(_\{?\w+\}?)?", rhs) is not None
    return False


def symbol_at(symbol: str) -> re.Pattern[str]:
    """The bare symbol: not part of a longer name, not indexed, primed or decorated."""
    return re.compile(r"(?<![A-Za-z\\_^'])" + re.escape(symbol) + r"(?![A-Za-z_^'{])")


def definitions(math: str, symbol: str) -> list[list[str]]:
    """Right-hand sides of ``symbol = ...`` (or ``:=``) where the symbol stands alone on the left,
    each a list: the members of a chain ``symbol = a = b``."""
    found = []
    for m in symbol_at(symbol).finditer(math):
        before = math[: m.start()]
        if DECORATIONS.search(before) or not re.search(r"(^|[,;(&{]|\\\\|\\q?quad)\s*$", before):
            continue
        after = re.match(r"\s*:?=(?!=)\s*", math[m.end() :])
        if after is None:
            continue
        if re.match(r"\s*$", math[m.end() + after.end() :]):
            continue  # completed outside the math ("$d_k =$ {glue:text}`x`"): not checked
        chain = []  # S = QK^\top = X W_Q W_K^\top X^\top: every member of a chain
        start = m.end() + after.end()
        while True:
            end = rhs_end(math, start)
            chain.append(normalise(math[start:end]))
            if not math.startswith("=", end):
                break
            start = end + 1
        found.append(chain)
    return found


# "let $P$ be a ...", "writing $W$ for the ...", "with $E$ the ...", "$E$ the last axis": a letter
# named in words. Group 1 is the symbol, group 2 the words that say what it is.
IN_WORDS = re.compile(
    r"(?:\b[Ww]here\s+\$([^$]+)\$\s+(?:is|are)\s+"
    r"|\b(?:[Ll]et|[Ww]rit(?:e|ing)|[Ww]ith|[Cc]all)\s+\$([^$]+)\$\s+(?:be|for|denote)\s+"
    r"|(?:^|[,(]\s*)\$([^$]+)\$\s+(?:the|being|denotes|stands for)\s+)"
    r"((?:(?:\$[^$]*\$|[\w\-–'()]+)[\s,]+){1,6})"
)
# "a loss $\\ell$", "Position encodings $E$": a letter named by the noun just before it (after an
# article, or second word of a sentence), when that noun belongs to the meaning of another reserved
# letter and not to its own.
# ("after the last key $\\ell$ is ..." is a time, not a name.)
NAMED = re.compile(
    r"(?:(?<!after )(?<!before )(?<!until )\b(?:[Tt]he|[Aa]n?|[Ii]ts)\s+(?:\w+\s+)?|(?:^|[.:]\s+)[A-Z]\w*\s+)"
    r"([A-Za-z]+)\s+\$([^$]+)\$"
)
STOPWORDS = set("the a an of for one per its their in and by as matrix row rows first last".split())


def words_match(meaning: str, words: str) -> bool:
    """Do the words share a word (its first five letters) with the meaning?"""
    stems = {w[:5] for w in re.findall(r"[a-z]+", meaning.lower()) if w not in STOPWORDS and len(w) > 2}
    return any(w[:5] in stems for w in re.findall(r"[a-z]+", words.lower()) if w not in STOPWORDS)


def check_text(text: str, table: dict[str, Reserved], page: str = "<text>") -> list[Clash]:
    """Every clash with the reserved table in one piece of markdown."""
    text = CODE.sub("", text)
    clashes = []
    for m in MATH.finditer(text):
        math = re.sub(r"\\[,;:! ]", " ", m.group(1) or m.group(2))  # thin spaces are not commas
        for symbol, entry in table.items():
            for chain in definitions(math, symbol):
                if not any(allowed(entry, rhs) for rhs in chain):
                    clashes.append(Clash(page, symbol, f"{symbol} = " + " = ".join(chain)))
    for m in IN_WORDS.finditer(text):
        symbol = (m.group(1) or m.group(2) or m.group(3)).strip()
        if symbol in table and not words_match(table[symbol].meaning, m.group(4)):
            clashes.append(Clash(page, symbol, m.group(0).strip()))
    for m in NAMED.finditer(text):
        symbol, noun = m.group(2).strip(), m.group(1)
        if symbol not in table or words_match(table[symbol].meaning, noun):
            continue
        if any(words_match(other.meaning, noun) for other in table.values()):
            clashes.append(Clash(page, symbol, m.group(0).strip()))
    return clashes


def page_texts(path: Path) -> list[str]:
    """The prose of a page: a markdown file, or a notebook's markdown cells and figure captions."""
    if path.suffix == ".md":
        return [path.read_text(encoding="utf-8")]
    texts = []
    for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
        if cell["cell_type"] == "markdown":
            texts.append("".join(cell["source"]))
        caption = cell.get("metadata", {}).get("caption")
        if caption:
            texts.append(caption)
    return texts


PAGES = sorted(BOOK_DIR.glob("*.ipynb")) + sorted(BOOK_DIR.glob("*.md"))


@pytest.fixture(scope="module")
def table() -> dict[str, Reserved]:
    return parse_reserved(NOTATION.read_text(encoding="utf-8"), ABOUT.read_text(encoding="utf-8"))


def test_reserved_table_parses(table):
    for symbol in ["Q", "K", "V", "X", "S", "A", "O", "M", "W", "\\alpha", "n", "d_k", "d_v", "H", "B", "L"]:
        assert symbol in table, f"the reserved table of notation.md lacks ${symbol}$"
    assert "QK^\\top" in table["S"].forms
    assert "a count" in table["n"].kinds
    assert table["J"].meaning == "Jacobian of the softmax"  # its "(chapter 4)" mark is dropped
    assert table["H"].meaning == "heads, key–value heads, batch size, layers"


def test_the_two_tables_must_list_the_same_letters():
    """A letter added to the notation page and not to about.md (or the reverse) is an error, not a letter
    that may equal nothing."""
    notation = "## Reserved letters\n\n| letter | meaning |\n| --- | --- |\n| $Q$ | queries |\n| $Z$ | z |\n"
    rules = "## How the notation is checked\n\n| letter | may equal |\n| --- | --- |\n| $Q$ | $XW_Q$ |\n"
    with pytest.raises(ValueError, match=r"\$Z\$"):
        parse_reserved(notation, rules)
    after = "\nAfter the table.\n| $Z$ | a count |\n"  # a row after the table's end is not read
    both = parse_reserved(notation.replace("| $Z$ | z |\n", ""), rules + after)
    assert set(both) == {"Q"} and both["Q"].forms == ("XW_Q",)


@pytest.mark.parametrize("path", PAGES, ids=lambda p: p.name)
def test_reserved_letters_keep_their_meaning(path, table):
    clashes = [c for text in page_texts(path) for c in check_text(text, table, path.name)]
    assert not clashes, (
        "a reserved letter of notation.md (## Reserved letters) is defined as something else; rename "
        "the local symbol, or add the form to the table if it is the same object:\n"
        + "\n".join(str(c) for c in clashes)
    )


@pytest.mark.parametrize(
    "text",
    [
        "The softmax divides each row of $E = e^{x}$ by its sum.",  # E is the shifted exponentials
        "With $M = W_Q W_K^\\top$ the scores are $XMX^\\top$.",  # M is the mask
        "$$\nz = J g, \\qquad S = \\sum_j \\phi(k_j)^\\top v_j\n$$",  # S is the raw scores
        "Both default to $1/\\sqrt{E}$, $E$ the last axis of the queries.",  # in words
        "Let $P$ be the number of processors.",
        "The gradient of a loss $\\ell$ reaches the scores.",  # named by the noun before it
        "$H = d_k + W$ heads",  # a count defined by a matrix
        "$O = EV = A$",  # a chain passes only if one of its members is allowed
    ],
)
def test_checker_catches_a_clash(text, table):
    assert check_text(text, table), text


@pytest.mark.parametrize(
    "text",
    [
        "Compute $S = X\\, W_Q = QK^\\top$ and $\\tilde S = S / 2$, so $S_{ij} = q_i \\cdot k_j$.",
        "$\\ell = \\sum_j e^{s_j - m}$, start from $m = -\\infty$, $\\ell = 0$, $a = 0$.",
        "With $H = 2$ heads of $d_{\\text{head}} = 2$ and $H = d_{\\text{model}}/16$, $n = 5$.",
        "$$\nE = \\exp(\\tilde S - \\max), \\qquad O = (EV) / (E\\mathbf 1)\n$$",
        "Let $P$ be an $n \\times n$ permutation matrix, and $PE = E$ is about $E$ only.",
        "Keep the running sum $\\ell$, the matrix $A$ and the raw scores $S$; $V = $ the identity.",
        "The scale `$S = 1$` in code is not prose math; $z = \\sum_j \\phi(k_j)$ is local.",
    ],
)
def test_checker_passes_a_legitimate_use(text, table):
    assert not check_text(text, table), check_text(text, table)


# --------------------------------------------------------------------------- "width", not "length"
# The table calls d_k, d_v, d_model and d_head *widths*, and chapter 2 uses "length" for a vector's norm
# ("two lengths and an angle", "a longer key gains weight"). A vector's number of components called its
# "length" reads as its norm. These are the phrasings that did so: "of length $d_k$", "$d_k$ is the
# length of", and "same length" in a sentence about a dot product (which needs equal widths, not equal
# norms). A sequence's length (its number of tokens) is not checked. The quizzes are prose too.
QUIZZES = sorted((BOOK_DIR / "quizzes").glob("*.yml"))
LENGTH_BEFORE = re.compile(r"\blength\s+\$([^$]+)\$")
LENGTH_AFTER = re.compile(r"\$([^$]+)\$,?\s+(?:is\s+)?the\s+length\b")
SAME_LENGTH_DOT = re.compile(
    r"\bdot[ -]products?\b[^.;:]*?\bsame\s+length\b|\bsame\s+length\b[^.;:]*?\bdot[ -]products?\b", re.I
)


def widths(table: dict[str, Reserved]) -> set[str]:
    return {normalise(s) for s, entry in table.items() if "width" in entry.meaning}


def length_for_width(text: str, table: dict[str, Reserved]) -> list[str]:
    """The phrases of ``text`` that call a width (``d_k`` ...) a length."""
    text = re.sub(r"\s+", " ", CODE.sub("", text))
    named = widths(table)
    found = [m.group(0) for m in LENGTH_BEFORE.finditer(text) if normalise(m.group(1).split("=")[0]) in named]
    found += [m.group(0) for m in LENGTH_AFTER.finditer(text) if normalise(m.group(1)) in named]
    found += [m.group(0) for m in SAME_LENGTH_DOT.finditer(text)]
    return found


@pytest.mark.parametrize("path", PAGES + QUIZZES, ids=lambda p: p.name)
def test_a_width_is_not_called_a_length(path, table):
    texts = [path.read_text(encoding="utf-8")] if path.suffix == ".yml" else page_texts(path)
    found = [phrase for text in texts for phrase in length_for_width(text, table)]
    assert not found, (
        f"{path.name} calls a width a length; notation.md calls $d_k$, $d_v$, $d_{{\\text{{model}}}}$ and "
        "$d_{\\text{head}}$ widths and the book keeps 'length' for a vector's norm. Write 'width':\n"
        + "\n".join(found)
    )


@pytest.mark.parametrize(
    "text",
    [
        "hand-made queries and keys of length $d_k = 4$",
        "one query of length\n$d_k$ per token",
        "Here $d_k$ is the length of $q$ and $k$.",
        "Each score is a dot product of length $d_{\\text{head}}$ = 64.",
        "A dot product needs two vectors of the same\nlength.",
        "why $q_i$ and $k_j$ need the same length $d_k$",
    ],
)
def test_length_checker_catches_a_width(text, table):
    assert length_for_width(text, table), text


@pytest.mark.parametrize(
    "text",
    [
        "Dividing each score by its two lengths leaves the cosine.",
        "Query A at three times its length: a longer query sharpens its row.",
        "queries and keys of width $d_k = 4$; the lengths of $k_A$ and $k_C$",
        "A batch holds two sequences of lengths 5 and 3, padded to the same length.",
        "the path length $n$ of a recurrence; `feature_names` has length `d_k`",
        "Every key is rescaled to length 1 first, so that each score is a dot product of unit keys.",
    ],
)
def test_length_checker_passes_a_norm_or_a_sequence(text, table):
    assert not length_for_width(text, table), length_for_width(text, table)
