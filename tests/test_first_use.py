"""Each core chapter uses only what the chapters before it taught.

The book's key concepts are listed below, each with the chapter that teaches it and the patterns of its
uses. Read in the order of ``_toc.yml``, no core chapter before that one may use the concept in its
core prose: the Markdown before its ``## Exercises`` heading (exercises, solutions, quizzes and the
going-deeper pages, which a reader may skip, are left out; so are code, math, inline code, HTML and
MyST option lines, which a reader does not read as running words). A ``{term}`` link is a use: its
text is kept.

A forward pointer is not a use. A sentence points forward to a concept when it names the chapter that
teaches it: "chapter 7" (or a list or range of chapters that holds 7: "chapters 5 and 7", "chapters
5–7"), ``{doc}`` of that chapter or of its going-deeper page, or a ``{ref}``, ``{numref}`` or
``{prf:ref}`` to a label defined on one of them. Every use of the concept in that sentence is then
excused, and only in that sentence: "Chapter 7 counts what a key–value cache saves." passes, "As chapter
5 showed, a key–value cache ..." does not (chapter 5 does not teach it), nor does the next sentence
after a pointer. A pointer excuses naming a concept, not computing with it: a sentence that gives a
number (a glued value, a decimal, or a count of times or per cent, outside math and code) uses the
concept even when it points forward ("That is 2.5 times the FLOPs (defined in chapter 7)").
Sentences end at ``.``, ``!`` or ``?`` before a capital, at a blank line, and at each table row and
list item.

The table is a start, not a closed list: a concept the book teaches in one chapter and names in others
belongs in it. Its patterns are case-insensitive, a line break allowed where they have a space.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from press.notebook_edition import is_deeper_page

ROOT = Path(__file__).resolve().parents[1]
BOOK = ROOT / "book"

# concept, the chapter (file stem) that teaches it, the patterns of its uses (regexes; a space also
# matches a line break or several spaces)
CONCEPTS: list[tuple[str, str, list[str]]] = [
    ("cross-attention", "02_qkv", [r"cross-attention"]),
    ("temperature", "04_scaling", [r"\btemperatures?\b"]),
    ("saturation", "04_scaling", [r"\bsaturat(?:ion|ed|es|e)\b"]),
    ("Jacobian", "04_scaling", [r"\bJacobians?\b"]),
    ("Xavier initialisation", "04_scaling", [r"\bXavier\b", r"\bGlorot\b"]),
    ("μP", "04_scaling", [r"μP\b", r"\\mu ?P\b", r"maximal update"]),
    ("mask", "05_masks_heads", [r"\bmask(?:s|ed|ing)?\b"]),
    ("causal mask, causal attention", "05_masks_heads", [r"\bcausal\b"]),
    ("padding mask", "05_masks_heads", [r"\bpadding\b", r"\bpadded\b"]),
    ("multi-head attention, heads", "05_masks_heads", [r"\bmulti-head\b", r"(?<!your\x20)\bheads?\b"]),
    (
        "grouped-query, multi-query attention",
        "05_masks_heads",
        [r"grouped-query", r"multi-query", r"\bGQA\b", r"\bMQA\b"],
    ),
    (
        "position embedding or encoding",
        "05_masks_heads",
        [
            r"\bpositional? (?:embeddings?|encodings?)\b",
            r"\bposition features?\b",
            r"\bRoPE\b",
            r"\brotary\b",
        ],
    ),
    ("ALiBi", "05_masks_heads", [r"\bALiBi\b", r"linear biases"]),
    (
        "sliding-window, sparse and linear attention",
        "05_masks_heads",
        [r"sliding[- ]window", r"\bsparse attention\b", r"\blinear attention\b"],
    ),
    ("stable softmax", "06_implementation", [r"\bstable softmax\b", r"\bnumerically stable\b"]),
    ("SDPA", "06_implementation", [r"\bSDPA\b"]),
    ("FLOP", "07_complexity", [r"\bFLOPs?\b", r"floating-point operations?"]),
    ("key–value cache", "07_complexity", [r"\bKV[- ]cach", r"key[–-]value cach"]),
    ("online softmax", "07_complexity", [r"\bonline softmax\b"]),
    ("tiled attention, FlashAttention", "07_complexity", [r"\btiled\b", r"\btiles?\b", r"FlashAttention"]),
]


@dataclass(frozen=True)
class Concept:
    name: str
    taught_in: str  # file stem of the chapter that teaches it
    pattern: re.Pattern[str]


def concept(name: str, taught_in: str, patterns: list[str]) -> Concept:
    spaced = [p.replace(" ", r"\s+") for p in patterns]
    return Concept(name, taught_in, re.compile("|".join(f"(?:{p})" for p in spaced), re.I))


KEY_CONCEPTS = [concept(*row) for row in CONCEPTS]


@dataclass(frozen=True)
class Use:
    page: str
    concept: str
    taught_in: str
    sentence: str  # the words around the use
    whole: str = ""  # the whole sentence

    def __str__(self) -> str:
        return f"{self.page}: {self.concept} (taught in {self.taught_in}): …{self.sentence}…"


# --------------------------------------------------------------------------- the book's order and prose
def core_chapters(root: Path = ROOT) -> list[Path]:
    """The numbered core chapters in the order of ``_toc.yml`` (going-deeper pages left out)."""
    toc = (root / "_toc.yml").read_text(encoding="utf-8")
    files = re.findall(r"^\s*- file:\s*book/(\d\d[a-z]?_\w+)\s*$", toc, re.M)
    return [root / "book" / f"{stem}.ipynb" for stem in files if not is_deeper_page(f"{stem}.ipynb")]


def markdown_cells(path: Path) -> list[str]:
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    return ["".join(c["source"]) for c in cells if c["cell_type"] == "markdown"]


def core_markdown(cells: list[str]) -> str:
    """The Markdown of a chapter before its ``## Exercises`` heading."""
    kept = []
    for cell in cells:
        if m := re.search(r"^## Exercises\b", cell, re.M):
            kept.append(cell[: m.start()])
            break
        kept.append(cell)
    return "\n\n".join(kept)


PLAIN_FENCE = re.compile(r"^(`{3,}|~{3,})(?!\{)[^\n]*\n.*?^\1\s*$", re.M | re.S)  # a code block
NOT_READ = re.compile(
    r"\$\$.*?\$\$|\$[^$\n]+\$|``.*?``|(?<!\})`[^`\n]*`|<!--.*?-->|<[^>\n]+>"
    r"|^\s*(?:```|:::)[^\n]*$|^\s*:[\w-]+:[^\n]*$|^\s*\([\w:-]+\)=\s*$|^\s*%[^\n]*$",
    re.M | re.S,
)
ROLE = re.compile(r"\{(?P<role>[\w:-]+)\}`(?P<body>[^`]*)`")


def readable(markdown: str) -> str:
    """What a reader reads as words, with the roles kept whole (their targets decide the pointers)."""
    roles: list[str] = []

    def keep(m: re.Match[str]) -> str:
        roles.append(m.group(0))
        return f"\x00{len(roles) - 1}\x00"

    text = NOT_READ.sub(" ", ROLE.sub(keep, PLAIN_FENCE.sub(" ", markdown)))
    return re.sub(r"\x00(\d+)\x00", lambda m: roles[int(m.group(1))], text)


def sentences(text: str) -> list[str]:
    """Sentences: split at a blank line, at each table row and list item, and at ``.!?`` before a
    capital (or a role, math or a quotation)."""
    blocks = re.split(r"\n\s*\n|\n(?=\s*(?:\||[-*+] |\d+\. ))", text)
    found = []
    for block in blocks:
        found += [s for s in re.split(r"(?<=[.!?])\s+(?=[A-Z{(\"'“])", block) if s.strip()]
    return found


# --------------------------------------------------------------------------- forward pointers
CHAPTER_NAMES = re.compile(
    r"\b[Cc]hapters?\s+(\d+[a-z]?(?:(?:\s*,\s*|\s+and\s+|\s+or\s+|\s*[–-]\s*|\s+to\s+)\d+[a-z]?)*)"
)


def chapters_named(sentence: str) -> set[int]:
    """The chapter numbers a sentence names in words: "chapter 7", "chapters 5 and 7", "chapters 5–7"."""
    named: set[int] = set()
    for m in CHAPTER_NAMES.finditer(sentence):
        numbers = m.group(1)
        for a, b in re.findall(r"(\d+)[a-z]?\s*(?:[–-]|\bto\b)\s*(\d+)", numbers):
            named |= set(range(int(a), int(b) + 1))
        named |= {int(n) for n in re.findall(r"\d+", numbers)}
    return named


def labels_by_chapter(root: Path = ROOT) -> dict[str, int]:
    """Every label defined on a chapter or a going-deeper page, with that chapter's number."""
    labels = {}
    for path in sorted((root / "book").glob("[0-9][0-9]*_*.ipynb")):
        number = int(path.name[:2])
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        for cell in cells:
            source = "".join(cell["source"])
            if cell["cell_type"] == "markdown":
                found = re.findall(r"^\s*\(([\w:-]+)\)=\s*$", source, re.M)
                found += re.findall(r"^\s*:(?:label|name):\s*([\w:-]+)", source, re.M)
            else:
                found = re.findall(r"^#\|\s*(?:label|name):\s*([\w:-]+)", source, re.M)
            meta = cell.get("metadata", {})
            found += [meta[key] for key in ("label", "name") if isinstance(meta.get(key), str)]
            labels.update({label: number for label in found})
    return labels


def points_to(sentence: str, chapter: int, labels: dict[str, int]) -> bool:
    """Does the sentence point to ``chapter`` (by its number, its page or a label on its pages)?"""
    if chapter in chapters_named(sentence):
        return True
    for m in ROLE.finditer(sentence):
        role, body = m["role"], m["body"]
        target = t.group(1) if (t := re.search(r"<([^>]+)>\s*$", body)) else body.strip()
        if role == "doc" and re.match(r"(\d\d)[a-z]?_", target.split("/")[-1]):
            if int(target.split("/")[-1][:2]) == chapter:
                return True
        elif role in ("ref", "numref", "prf:ref", "eq") and labels.get(target) == chapter:
            return True
    return False


def computes(sentence: str) -> bool:
    """Does the sentence give a number about something: a glued value, a decimal, or "3 times", "3×",
    "3%" (math and code are already out; "GPT-2" and "chapter 7" are names, not numbers)?"""
    if re.search(r"\{glue(?::\w+)?\}`", sentence):
        return True
    words = ROLE.sub(lambda m: m["body"].split("<")[0] if m["role"] == "term" else " ", sentence)
    return re.search(r"\d\.\d|\b\d+\s*(?:times\b|×|%)", words) is not None


def early_uses(pages: list[tuple[str, str]], concepts: list[Concept], labels: dict[str, int]) -> list[Use]:
    """Uses of each concept, in (page stem, core Markdown) pairs in reading order, before the page that
    teaches it, forward pointers excused."""
    order = [stem for stem, _ in pages]
    found = []
    for stem, markdown in pages:
        text = readable(markdown)
        for c in concepts:
            if c.taught_in not in order:
                raise ValueError(f"{c.name}: no core chapter {c.taught_in!r}")
            if order.index(stem) >= order.index(c.taught_in):
                continue
            teacher = int(c.taught_in[:2])
            for sentence in sentences(text):
                # a role's target is not read, but {term}'s text is
                words = ROLE.sub(lambda m: m["body"].split("<")[0] if m["role"] == "term" else " ", sentence)
                pointer = points_to(sentence, teacher, labels) and not computes(sentence)
                flat = " ".join(words.split())
                if (m := c.pattern.search(flat)) and not pointer:
                    found.append(
                        Use(stem, c.name, c.taught_in, flat[max(0, m.start() - 70) : m.end() + 50], flat)
                    )
    return found


def book_pages(root: Path = ROOT) -> list[tuple[str, str]]:
    return [(path.stem, core_markdown(markdown_cells(path))) for path in core_chapters(root)]


# --------------------------------------------------------------------------- the book
def test_the_concepts_name_core_chapters_in_the_order_of_the_contents():
    stems = [path.stem for path in core_chapters()]
    assert stems == sorted(stems) and len(stems) == 7, stems
    assert {c.taught_in for c in KEY_CONCEPTS} <= set(stems)


def test_no_core_chapter_uses_a_concept_before_the_chapter_that_teaches_it():
    uses = early_uses(book_pages(), KEY_CONCEPTS, labels_by_chapter())
    by_sentence: dict[tuple[str, str], list[str]] = {}  # one line a sentence, however many concepts it uses
    shown: dict[tuple[str, str], str] = {}
    for use in uses:
        by_sentence.setdefault((use.page, use.whole), []).append(f"{use.concept} ({use.taught_in})")
        shown.setdefault((use.page, use.whole), use.sentence)
    assert not uses, (
        f"{len(by_sentence)} sentences use a key concept before the chapter that teaches it; teach it "
        "there, cut it, or point forward in the same sentence ('chapter 7 counts ...', or a {ref} to that "
        "chapter):\n"
        + "\n".join(f"{key[0]}: {'; '.join(names)}: …{shown[key]}…" for key, names in by_sentence.items())
    )


# --------------------------------------------------------------------------- the rule, on made-up text
LABELS = {"cx-kv-cache": 7, "cx-kv-deeper": 7, "masks-causal": 5, "qkv-cross": 2}
CACHE = [c for c in KEY_CONCEPTS if c.name == "key–value cache"]
EVERY = KEY_CONCEPTS


def _pages(early: str) -> list[tuple[str, str]]:
    """A made-up book: ``early`` is chapter 2's core; the other chapters are empty."""
    stems = [
        "01_why_attention",
        "02_qkv",
        "03_worked_examples",
        "04_scaling",
        "05_masks_heads",
        "06_implementation",
        "07_complexity",
    ]
    return [(stem, early if stem == "02_qkv" else "") for stem in stems]


@pytest.mark.parametrize(
    "text",
    [
        "A key–value cache stores the keys of the earlier tokens.",
        "The {term}`KV cache <Key–value cache>` saves work.",  # a term link is a use
        "Each score costs $2d_k$ {term}`FLOPs <FLOP>`.",
        "As chapter 5 showed, the key–value cache grows with $n$.",  # a pointer to the wrong chapter
        "Chapter 7 counts this. A key–value cache then saves it.",  # the pointer is in another sentence
        "Output $i$ may not see later tokens: a causal\nmask hides them.",  # across a line break
        "We split the layer into two heads.",
        "| row | a padding mask |\n| --- | --- |",
        "The weights, see {ref}`masks-causal`, use a KV cache.",  # a label of chapter 5 is no pointer to 7
        "Divide by $\\sqrt{d_k}$ (see {doc}`05_masks_heads`) to keep a KV-cache small.",
        "That is {glue:text}`ratio:.2f` times the FLOPs (defined in {doc}`07_complexity`).",  # computes
        "That is 2.5 times the FLOPs (defined in chapter 7).",
    ],
)
def test_an_early_use_is_caught(text):
    assert early_uses(_pages(text), EVERY, LABELS), text


@pytest.mark.parametrize(
    "text",
    [
        "Chapter 7 counts what a key–value cache saves.",
        "Chapters 5 to 7 add masks and the key–value cache.",
        "Chapters 5–7 add it, and the KV cache is there too.",
        "Chapters 2, 5 and 7 use it: the KV cache.",
        "The key–value cache ({ref}`the cache <cx-kv-cache>`) comes later.",
        "{numref}`cx-kv-deeper` measures the KV cache.",  # a label on chapter 7's going-deeper page
        "{doc}`07_complexity` counts the FLOPs and the KV cache.",
        "The code calls `kv_cache(K, V)`; the math says $\\text{FLOP}$.",  # code and math are not read
        "```python\nheads = 2  # a causal mask\n```\n\nNo concept here.",
        "Before the exercises.\n\n## Exercises\n\nUse a KV cache and two heads.",  # after the exercises
        "<!-- a comment about heads and causal masks -->The end.",
        "Chapter 7 counts the FLOPs of $n = 1024$ tokens.",  # digits in math are not a computation
        "Every dot product can be done in your head.",  # a head, not heads
        "Llama 2 and GPT-2 decode with a key–value cache (chapter 7).",  # names are not numbers
    ],
)
def test_a_pointer_code_or_an_exercise_is_not_an_early_use(text):
    pages = [(stem, core_markdown([md])) for stem, md in _pages(text)]
    assert not early_uses(pages, EVERY, LABELS), early_uses(pages, EVERY, LABELS)


def test_a_use_in_the_teaching_chapter_or_after_it_is_fine():
    pages = [
        ("02_qkv", ""),
        ("05_masks_heads", ""),
        ("07_complexity", "A KV cache."),
        ("08_later", "The KV cache again."),
    ]
    assert not early_uses(pages, CACHE, LABELS)
    with pytest.raises(ValueError, match="no core chapter"):
        early_uses([("02_qkv", "")], CACHE, LABELS)


def test_chapters_named_reads_lists_and_ranges():
    assert chapters_named("chapter 7 counts it") == {7}
    assert chapters_named("Chapters 5 and 7") == {5, 7}
    assert chapters_named("chapters 4–6 and the going-deeper page") == {4, 5, 6}
    assert chapters_named("chapter 7a's table; chapters 1, 2 or 3") == {7, 1, 2, 3}
    assert chapters_named("a chapter of 7 pages") == set()
