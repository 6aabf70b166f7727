"""Local Sphinx extension: self-check quizzes that work in the static book, with no kernel and no network.

A chapter ends with a quiz written in a small YAML file under ``book/quizzes/`` and placed by a
directive whose argument is the file's path relative to the chapter::

    ```{quiz} quizzes/04_scaling.yml
    ```

Each question is multiple choice with one right option (``kind: single``), multiple choice with one
or several right options (``kind: multiple``) or a number checked against a tolerance
(``kind: numeric``). Every option, every known wrong number and every other number has its own
explanation, so a wrong answer is told *why* it is wrong: most options stand for one of the classic
mistakes (scaling by $d_k$, a softmax over the wrong axis, a shifted causal mask, ...).

The file is read and checked when the book is built: a malformed quiz stops the build with a
:class:`QuizError` naming the file and the question. The directive then writes the quiz as plain
HTML forms (native radio buttons, checkboxes, a text field and buttons, so the keyboard and screen
readers work as everywhere else); ``_static/quiz.js`` checks the answers in the browser and writes
the verdict and the explanations into an ``aria-live`` region per question, and ``_static/quiz.css``
styles it with the theme's colours (light and dark) and, in print, shows the questions without any
feedback. Both files are added only to pages that hold a quiz.

:func:`quiz_markdown` writes the same quiz as plain Jupyter Markdown for the notebook edition: the
questions as a numbered list, and each answer with its explanations inside ``<details>``.

Text fields use a small inline syntax that reads the same in both: ``$...$`` for math, backticks for
code, ``*emphasis*`` and ``**strong**``, and ``\\$`` for a literal dollar sign. Anything else is
text: ``<`` and ``&`` are escaped, never interpreted as HTML.
"""

from __future__ import annotations

import html
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

import yaml

KINDS = ("single", "multiple", "numeric")
MIN_QUESTIONS, MAX_QUESTIONS = 3, 6
MIN_OPTIONS, MAX_OPTIONS = 2, 6
LETTERS = "ABCDEF"
ID_PATTERN = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
CSS_FILE, JS_FILE = "quiz.css", "quiz.js"
STATIC_DIR = Path(__file__).resolve().parent.parent / "_static"  # book/_static: quiz.js, quiz.css
ROOT_CLASS = "attnlib-quiz"

QUIZ_KEYS = {"questions"}
QUESTION_KEYS = {
    "single": ({"id", "kind", "targets", "text", "options"}, set()),
    "multiple": ({"id", "kind", "targets", "text", "options"}, set()),
    "numeric": ({"id", "kind", "targets", "text", "answer", "tolerance", "explanation", "otherwise"},
                {"wrong"}),
}
OPTION_KEYS = {"text", "correct", "explanation"}
WRONG_KEYS = ({"value", "explanation"}, {"tolerance"})


class QuizError(ValueError):
    """A quiz file that cannot be read or breaks a rule; the message names the file and the question."""


# --------------------------------------------------------------------------- the quiz as data
@dataclass(frozen=True)
class Option:
    """One option of a multiple-choice question."""

    text: str
    correct: bool
    explanation: str


@dataclass(frozen=True)
class WrongValue:
    """A wrong number that a known mistake produces, with the explanation of that mistake."""

    value: float
    tolerance: float
    explanation: str


@dataclass(frozen=True)
class Question:
    """One question. ``options`` for ``single``/``multiple``; ``answer`` and the rest for ``numeric``."""

    id: str
    kind: str
    targets: str
    text: str
    options: tuple[Option, ...] = ()
    answer: float | None = None
    tolerance: float | None = None
    explanation: str = ""
    wrong: tuple[WrongValue, ...] = ()
    otherwise: str = ""

    @property
    def correct_letters(self) -> list[str]:
        return [LETTERS[i] for i, o in enumerate(self.options) if o.correct]

    def matches(self, value: float) -> str:
        """What a typed number is: ``"answer"``, ``"wrong:<i>"`` for a known mistake, or ``"other"``.

        The same rule as ``quiz.js`` (the browser test checks that both agree on every quiz).
        """
        if self.kind != "numeric":
            raise TypeError(f"question {self.id!r} is {self.kind}, not numeric")
        assert self.answer is not None and self.tolerance is not None  # a numeric question has both
        if abs(value - self.answer) <= self.tolerance:
            return "answer"
        for i, w in enumerate(self.wrong):
            if abs(value - w.value) <= w.tolerance:
                return f"wrong:{i}"
        return "other"


@dataclass(frozen=True)
class Quiz:
    """A quiz file, read and checked: its path (as given) and its questions."""

    path: Path
    questions: tuple[Question, ...]

    @property
    def slug(self) -> str:
        """The prefix of every HTML id of the quiz: ``quiz-03-scaling`` for ``04_scaling.yml``."""
        return "quiz-" + re.sub(r"[^a-z0-9]+", "-", self.path.stem.lower()).strip("-")


# --------------------------------------------------------------------------- reading and checking
def _number_word(n: int) -> str:
    return ["no", "one", "two", "three", "four", "five", "six"][n] if n <= 6 else str(n)


class _Checker:
    """Raises :class:`QuizError` with the file and, inside a question, its number and id."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.where = ""

    def fail(self, message: str) -> NoReturn:
        where = f", {self.where}" if self.where else ""
        raise QuizError(f"{self.path}{where}: {message}")

    def mapping(self, value: Any, what: str, required: set[str],
                optional: frozenset[str] | set[str] = frozenset()) -> dict:
        if not isinstance(value, dict):
            self.fail(f"{what} must be a mapping with the keys {sorted(required)}, "
                      f"not {type(value).__name__}")
        missing = sorted(required - value.keys())
        if missing:
            self.fail(f"{what} lacks {', '.join(map(repr, missing))}")
        unknown = sorted(map(str, value.keys() - required - optional))
        if unknown:
            self.fail(f"{what} has unknown keys {', '.join(map(repr, unknown))} "
                      f"(allowed: {', '.join(sorted(required | optional))})")
        return value

    def text(self, value: Any, what: str) -> str:
        if not isinstance(value, str) or not value.strip():
            self.fail(f"{what} must be a non-empty string, not {value!r}")
        control = sorted({c for c in value if ord(c) < 32 and c != "\n"})
        if control:
            # "\tanh" in a double-quoted YAML string is a tab and "anh": the usual way this happens.
            self.fail(f"{what} contains the control character(s) {', '.join(map(repr, control))}: a "
                      "backslash in a double-quoted YAML string? Write TeX in single quotes or a block "
                      "scalar (>-)")
        try:
            _segments(value)
        except ValueError as err:
            self.fail(f"{what}: {err}")
        return " ".join(value.split())

    def number(self, value: Any, what: str, positive: bool = False) -> float:
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
            self.fail(f"{what} must be a finite number, not {value!r}")
        if positive and value <= 0:
            self.fail(f"{what} must be positive, not {value!r}")
        return float(value)


def parse_quiz(data: Any, path: Path | str = "<quiz>") -> Quiz:
    """Check the parsed YAML ``data`` of a quiz and return it as a :class:`Quiz`.

    Raises
    ------
    QuizError
        When a rule is broken: 3 to 6 questions with unique ids; a kind among ``single``,
        ``multiple``, ``numeric``; 2 to 6 options, each with text and an explanation, no two alike,
        exactly one right option for ``single`` and at least one right and one wrong for ``multiple``;
        for ``numeric`` a finite answer, a positive tolerance, an explanation, an explanation for any
        other number, and known wrong values that lie outside the answer's tolerance and each other's.
        Inline markup must be balanced (``$`` and backticks).
    """
    path = Path(path)
    check = _Checker(path)
    quiz = check.mapping(data, "the file", QUIZ_KEYS)
    raw_questions = quiz["questions"]
    if not isinstance(raw_questions, list):
        check.fail(f"'questions' must be a list, not {type(raw_questions).__name__}")
    if not MIN_QUESTIONS <= len(raw_questions) <= MAX_QUESTIONS:
        check.fail(f"a quiz has {MIN_QUESTIONS} to {MAX_QUESTIONS} questions, this one {len(raw_questions)}")
    questions: list[Question] = []
    seen: set[str] = set()
    for number, raw in enumerate(raw_questions, start=1):
        qid = raw.get("id") if isinstance(raw, dict) else None
        check.where = f"question {number}" + (f" ({qid!r})" if isinstance(qid, str) else "")
        if not isinstance(raw, dict):
            check.fail(f"a question must be a mapping, not {type(raw).__name__}")
        kind = raw.get("kind")
        if kind not in KINDS:
            check.fail(f"'kind' must be one of {', '.join(KINDS)}, not {kind!r}")
        required, optional = QUESTION_KEYS[kind]
        check.mapping(raw, "the question", required, optional)
        if not isinstance(qid, str) or not ID_PATTERN.match(qid):
            check.fail(f"'id' must be lower-case words joined by hyphens (e.g. 'wrong-axis'), not {qid!r}")
        if qid in seen:
            check.fail(f"the id {qid!r} is used by an earlier question")
        seen.add(qid)
        common = dict(id=qid, kind=kind, targets=check.text(raw["targets"], "'targets'"),
                      text=check.text(raw["text"], "'text'"))
        if kind == "numeric":
            questions.append(_numeric(check, raw, common))
        else:
            questions.append(_choice(check, raw, common))
    return Quiz(path=path, questions=tuple(questions))


def _choice(check: _Checker, raw: dict, common: dict) -> Question:
    raw_options = raw["options"]
    if not isinstance(raw_options, list) or not MIN_OPTIONS <= len(raw_options) <= MAX_OPTIONS:
        check.fail(f"'options' must be a list of {MIN_OPTIONS} to {MAX_OPTIONS} options, not {raw_options!r}")
    options = []
    for i, item in enumerate(raw_options):
        what = f"option {LETTERS[i]}"
        check.mapping(item, what, OPTION_KEYS)
        if not isinstance(item["correct"], bool):
            check.fail(f"{what}: 'correct' must be true or false, not {item['correct']!r}")
        options.append(Option(text=check.text(item["text"], f"{what}: 'text'"), correct=item["correct"],
                              explanation=check.text(item["explanation"], f"{what}: 'explanation'")))
    texts = [o.text for o in options]
    for i, text in enumerate(texts):
        if text in texts[:i]:
            check.fail(f"options {LETTERS[texts.index(text)]} and {LETTERS[i]} have the same text")
    n_right = sum(o.correct for o in options)
    if common["kind"] == "single" and n_right != 1:
        check.fail(f"a 'single' question has exactly one right option, this one has {_number_word(n_right)}")
    if common["kind"] == "multiple" and not 1 <= n_right < len(options):
        check.fail("a 'multiple' question has at least one right and at least one wrong option, "
                   f"this one has {_number_word(n_right)} right of {len(options)}")
    return Question(**common, options=tuple(options))


def _numeric(check: _Checker, raw: dict, common: dict) -> Question:
    answer = check.number(raw["answer"], "'answer'")
    tolerance = check.number(raw["tolerance"], "'tolerance'", positive=True)
    wrong_raw = raw.get("wrong", [])
    if not isinstance(wrong_raw, list):
        check.fail(f"'wrong' must be a list of {{value, explanation}} mappings, not {wrong_raw!r}")
    wrong: list[WrongValue] = []
    for i, item in enumerate(wrong_raw, start=1):
        what = f"wrong value {i}"
        check.mapping(item, what, *WRONG_KEYS)
        value = check.number(item["value"], f"{what}: 'value'")
        tol = check.number(item.get("tolerance", tolerance), f"{what}: 'tolerance'", positive=True)
        if abs(value - answer) <= tolerance + tol:
            check.fail(f"{what} ({value:g}) is within the tolerance of the answer "
                       f"({answer:g} ± {tolerance:g}): a reader who typed it could not be told which it is")
        for j, other in enumerate(wrong, start=1):
            if abs(value - other.value) <= tol + other.tolerance:
                check.fail(f"wrong values {j} ({other.value:g}) and {i} ({value:g}) overlap")
        wrong.append(WrongValue(value=value, tolerance=tol,
                                explanation=check.text(item["explanation"], f"{what}: 'explanation'")))
    return Question(**common, answer=answer, tolerance=tolerance,
                    explanation=check.text(raw["explanation"], "'explanation'"), wrong=tuple(wrong),
                    otherwise=check.text(raw["otherwise"], "'otherwise'"))


def load_quiz(path: Path | str) -> Quiz:
    """Read a quiz file and check it (:func:`parse_quiz`); a missing file or bad YAML is a QuizError."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as err:
        raise QuizError(f"{path}: cannot read the quiz file ({err.strerror or err})") from err
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as err:
        raise QuizError(f"{path}: not valid YAML: {err}") from err
    return parse_quiz(data, path)


# --------------------------------------------------------------------------- inline markup
_TOKEN = re.compile(r"(?P<escaped>\\\$)|`(?P<code>[^`]+)`|\$(?P<math>[^$]+)\$")


def _segments(text: str) -> list[tuple[str, str]]:
    """``text`` as (kind, content) pairs, kind one of ``text``, ``code``, ``math``, ``dollar`` (``\\$``).

    Raises ValueError for an unbalanced ``$`` or backtick, and for display math (``$$``).
    """
    if "$$" in text.replace("\\$", ""):
        raise ValueError("display math ($$...$$) is not allowed in a quiz; use inline $...$")
    out: list[tuple[str, str]] = []
    pos = 0
    for m in _TOKEN.finditer(text):
        out.append(("text", text[pos:m.start()]))
        if m.group("escaped"):
            out.append(("dollar", "$"))
        elif m.group("code") is not None:
            out.append(("code", m.group("code")))
        else:
            out.append(("math", m.group("math")))
        pos = m.end()
    out.append(("text", text[pos:]))
    for kind, content in out:
        if kind == "text" and ("`" in content or "$" in content):
            mark = "`" if "`" in content else "$"
            raise ValueError(f"unbalanced {mark} in {text!r} (write \\$ for a dollar sign)")
    return [(k, c) for k, c in out if c]


_STRONG = re.compile(r"\*\*(?=\S)(.+?)(?<=\S)\*\*")
_EM = re.compile(r"\*(?=\S)(.+?)(?<=\S)\*")


def inline_html(text: str) -> str:
    """The inline syntax as HTML: math as Sphinx writes it for MathJax, code as a literal, text escaped."""
    parts = []
    for kind, content in _segments(text):
        if kind == "math":
            tex = html.escape(content, quote=False)
            parts.append(f'<span class="math notranslate nohighlight">\\({tex}\\)</span>')
        elif kind == "code":
            parts.append(f'<code class="docutils literal notranslate"><span class="pre">'
                         f"{html.escape(content, quote=False)}</span></code>")
        elif kind == "dollar":
            parts.append("$")
        else:
            escaped = html.escape(content, quote=False)
            escaped = _STRONG.sub(r"<strong>\1</strong>", escaped)
            parts.append(_EM.sub(r"<em>\1</em>", escaped))
    return "".join(parts)


def inline_markdown(text: str) -> str:
    """The inline syntax as Jupyter Markdown: math and code as they are, ``<``, ``>``, ``&`` as entities."""
    parts = []
    for kind, content in _segments(text):
        if kind == "math":
            parts.append(f"${content}$")
        elif kind == "code":
            parts.append(f"`{content}`")
        elif kind == "dollar":
            parts.append("\\$")
        else:
            parts.append(html.escape(content, quote=False))
    return "".join(parts)


def _number_text(value: float) -> str:
    """A number as the quiz file gives it: ``64`` not ``64.0``, ``0.4508`` as typed."""
    return str(int(value)) if value == int(value) and abs(value) < 1e15 else repr(value)


def _letters(letters: list[str]) -> str:
    return letters[0] if len(letters) == 1 else ", ".join(letters[:-1]) + " and " + letters[-1]


# --------------------------------------------------------------------------- HTML
def _attrs(**attrs: Any) -> str:
    out = []
    for name, value in attrs.items():
        name = name.rstrip("_").replace("_", "-")
        if value is True:
            out.append(f" {name}")
        elif value is not None and value is not False:  # 0 is a value: not "in (None, False)"
            out.append(f' {name}="{html.escape(str(value), quote=True)}"')
    return "".join(out)


def _explanation_html(text: str, label: str, **attrs: Any) -> str:
    return (f'<div class="attnlib-quiz-explanation"{_attrs(**attrs)} hidden>'
            f'<p><strong class="attnlib-quiz-label">{html.escape(label)}</strong> '
            f"{inline_html(text)}</p></div>")


def question_html(question: Question, number: int, total: int, prefix: str) -> str:
    """One question as a ``<form>``: its inputs, a Check and a Show-answer button, a live feedback region."""
    qid = f"{prefix}-{question.id}"
    hint = {"single": "Choose one.", "multiple": "Choose every right option.",
            "numeric": "Type a number."}[question.kind]
    head = (f'<form class="attnlib-quiz-question"{_attrs(id=qid, data_kind=question.kind)} novalidate>'
            f'<fieldset><legend><span class="attnlib-quiz-number">Question {number} of {total}.</span> '
            f'{inline_html(question.text)} <span class="attnlib-quiz-hint">{hint}</span></legend>')
    body: list[str] = []
    explanations: list[str] = []
    if question.kind == "numeric":
        field = _attrs(type="text", id=f"{qid}-value", name=f"{qid}-value", inputmode="decimal",
                       autocomplete="off", spellcheck="false", data_answer=repr(question.answer),
                       data_tolerance=repr(question.tolerance),
                       data_answer_text=_number_text(float(question.answer or 0.0)))
        body.append(f'<div class="attnlib-quiz-number-input"><label{_attrs(for_=f"{qid}-value")}>'
                    f"Your answer</label><input{field}></div>")
        explanations.append(_explanation_html(question.explanation, "Right.", data_answer=True))
        for i, w in enumerate(question.wrong):
            explanations.append(_explanation_html(
                w.explanation, f"{_number_text(w.value)} is not right.",
                data_wrong=i, data_value=repr(w.value), data_tolerance=repr(w.tolerance)))
        explanations.append(_explanation_html(question.otherwise, "Not right.", data_otherwise=True))
    else:
        input_type = "radio" if question.kind == "single" else "checkbox"
        body.append('<div class="attnlib-quiz-options">')
        for i, option in enumerate(question.options):
            letter = LETTERS[i]
            oid = f"{qid}-{letter.lower()}"
            body.append(
                f'<div class="attnlib-quiz-option"'
                f"{_attrs(data_option=i, data_correct='true' if option.correct else 'false')}>"
                f"<input{_attrs(type=input_type, id=oid, name=f'{qid}-choice', value=i)}>"
                f'<label{_attrs(for_=oid)}><span class="attnlib-quiz-letter">{letter}.</span> '
                f"{inline_html(option.text)}</label></div>"
            )
            verdict = "right" if option.correct else "not right"
            explanations.append(_explanation_html(option.explanation, f"{letter} is {verdict}.",
                                                  data_option=i))
        body.append("</div>")
    # The accessible names start with the visible words and say which question they act on.
    actions = ('<div class="attnlib-quiz-actions">'
               f'<button type="submit" class="attnlib-quiz-check" aria-label="Check question {number}">'
               "Check</button>"
               '<button type="button" class="attnlib-quiz-reveal" '
               f'aria-label="Show answer to question {number}">Show answer</button></div>')
    feedback = ('<div class="attnlib-quiz-feedback" role="status" aria-live="polite" aria-atomic="true">'
                '<p class="attnlib-quiz-verdict"></p>' + "".join(explanations) + "</div>")
    return head + "".join(body) + "</fieldset>" + actions + feedback + "</form>"


def quiz_html(quiz: Quiz, prefix: str | None = None) -> str:
    """The whole quiz as HTML for the built page (see the module docstring for how it behaves)."""
    prefix = prefix or quiz.slug
    total = len(quiz.questions)
    intro = (f'<p class="attnlib-quiz-intro">{_number_word(total).capitalize()} questions to check your '
             "understanding. Each answer is checked in this page, and every option explains itself; "
             "nothing is sent anywhere or recorded.</p>"
             '<p class="attnlib-quiz-print-note">Answer on paper; the online book checks each answer '
             "and explains every option.</p>"
             '<noscript><p class="attnlib-quiz-noscript">Checking answers needs JavaScript. The notebook '
             "edition of this chapter lists every answer with its explanation.</p></noscript>")
    questions = "".join(question_html(q, i, total, prefix) for i, q in enumerate(quiz.questions, start=1))
    return f'<div class="{ROOT_CLASS}"{_attrs(id=prefix, data_quiz=quiz.path.name)}>{intro}{questions}</div>'


# --------------------------------------------------------------------------- Markdown (notebook edition)
def _indent(text: str, spaces: int = 3) -> str:
    pad = " " * spaces
    return "\n".join(pad + line if line else "" for line in text.split("\n"))


def question_markdown(question: Question, answers: bool = True) -> str:
    """One question as a list item's body (not yet indented): text, options, answer in ``<details>``."""
    hint = {"single": "Choose one.", "multiple": "Choose every right option.",
            "numeric": "Give a number."}[question.kind]
    lines = [f"{inline_markdown(question.text)} *{hint}*", ""]
    details: list[str] = []
    if question.kind == "numeric":
        lines.append("Your answer: ______")
        details.append(f"**Answer: {_number_text(float(question.answer or 0.0))}** (anything within "
                       f"{_number_text(float(question.tolerance or 0.0))} of it counts as right). "
                       f"{inline_markdown(question.explanation)}")
        details.append("")
        for w in question.wrong:
            details.append(f"- *If you got {_number_text(w.value)}:* {inline_markdown(w.explanation)}")
        details.append(f"- *Any other number:* {inline_markdown(question.otherwise)}")
    else:
        for i, option in enumerate(question.options):
            lines.append(f"- **{LETTERS[i]}.** {inline_markdown(option.text)}")
        right = question.correct_letters
        details.append(f"**Answer: {_letters(right)}.**")
        details.append("")
        for i, option in enumerate(question.options):
            verdict = "right" if option.correct else "not right"
            details.append(f"- **{LETTERS[i]}** is {verdict}. {inline_markdown(option.explanation)}")
    if not answers:
        return "\n".join(lines).rstrip("\n")
    block = ["", "<details>", "<summary>Answer and explanations</summary>", "", *details, "", "</details>"]
    return "\n".join(lines + block)


def quiz_markdown(path: Path | str, *, answers: bool = True) -> str:
    """A quiz file as plain Jupyter Markdown, for the notebook edition (raises QuizError if malformed).

    The questions form a numbered list; under each, its options as a bullet list, then a
    ``<details>`` block with the answer and the explanation of every option (of the answer, each known
    wrong number and any other number, for a numeric question), folded until the reader opens it.
    With ``answers=False`` (a handout without answers) the ``<details>`` blocks are left out.
    Math (``$...$``) and code stay as they are; ``<``, ``>`` and ``&`` in the text become entities.
    """
    quiz = load_quiz(path)
    items = []
    for number, question in enumerate(quiz.questions, start=1):
        body = _indent(question_markdown(question, answers))
        items.append(f"{number}. " + body.lstrip(" "))
    return "\n\n".join(items) + "\n"


# --------------------------------------------------------------------------- Sphinx
def _directive_class() -> type:
    """The directive (and its error), built when Sphinx loads the extension: importing this module for
    :func:`quiz_markdown` or the tests needs no Sphinx."""
    from docutils import nodes
    from sphinx.errors import SphinxError
    from sphinx.util.docutils import SphinxDirective

    class QuizBuildError(SphinxError):
        category = "Quiz error"

    class QuizDirective(SphinxDirective):
        """``{quiz} path/to/quiz.yml``: the quiz of that file, relative to the current document."""

        required_arguments = 1
        optional_arguments = 0
        final_argument_whitespace = False
        has_content = False

        def run(self) -> list[Any]:
            rel, absolute = self.env.relfn2path(self.arguments[0], self.env.docname)
            self.env.note_dependency(rel)
            try:
                quiz = load_quiz(absolute)
            except QuizError as err:  # name the file as the book's sources do, relative to the root
                source = self.env.doc2path(self.env.docname, base=False)
                message = str(err).replace(str(absolute), str(rel), 1)
                raise QuizBuildError(f"{message}\n(in the {{quiz}} directive of {source})") from err
            counter = self.env.temp_data.setdefault("attnlib_quiz_count", 0) + 1
            self.env.temp_data["attnlib_quiz_count"] = counter
            prefix = quiz.slug if counter == 1 else f"{quiz.slug}-{counter}"
            return [nodes.raw("", quiz_html(quiz, prefix), format="html")]

    return QuizDirective


def _mark_math(app: Any, doctree: Any) -> None:
    """Math inside a quiz is raw HTML, invisible to Sphinx's math domain: tell it the page has math,
    so that MathJax is loaded on a page whose only math is in its quiz."""
    from docutils import nodes

    quizzes = [n.astext() for n in doctree.findall(nodes.raw) if f'<div class="{ROOT_CLASS}"' in n.astext()]
    if any('class="math' in text for text in quizzes):
        app.env.get_domain("math").data["has_equations"][app.env.docname] = True


def _add_static_dir(app: Any, config: Any) -> None:
    """Serve book/_static (quiz.js, quiz.css) even if the configuration does not list it."""
    confdir = Path(app.confdir)
    listed = {(confdir / p).resolve() for p in config.html_static_path}
    if STATIC_DIR.resolve() not in listed:
        config.html_static_path = [*config.html_static_path, str(STATIC_DIR)]


def _page_assets(app: Any, pagename: str, templatename: str, context: dict, doctree: Any) -> None:
    """quiz.js and quiz.css on the pages that hold a quiz, and on no other page."""
    if f'class="{ROOT_CLASS}"' in (context.get("body") or ""):
        # Called during html-page-context, these add the files to this page only.
        app.add_css_file(CSS_FILE)
        app.add_js_file(JS_FILE, loading_method="defer")


def setup(app: Any) -> dict[str, Any]:
    app.add_directive("quiz", _directive_class())
    app.connect("config-inited", _add_static_dir)
    app.connect("doctree-read", _mark_math)
    app.connect("html-page-context", _page_assets)
    return {"parallel_read_safe": True, "parallel_write_safe": True}


__all__ = ["Option", "Question", "Quiz", "QuizError", "WrongValue", "inline_html", "inline_markdown",
           "load_quiz", "parse_quiz", "question_html", "quiz_html", "quiz_markdown"]
