"""The self-check quiz of every chapter, answered in headless Chromium with the keyboard only.

Expected answers and explanations come from the quiz files (book/quizzes/*.yml, read by
book/press/quiz.py), never from the page. On each chapter page, starting with the focus on the quiz's
first control and moving only by Tab, Shift+Tab, the arrow keys, Space, Enter and typing:

* every question is answered right, then with every wrong option (multiple choice: each wrong option
  added to the right ones, and a right one left out) or every known wrong number, any other number,
  a number with a decimal comma and text that is not a number (numeric), then "Show answer";
* after each check the verdict is the expected one, the explanations shown are exactly those of the
  chosen options (or of the typed number, classified by ``Question.matches``, the rule quiz.js must
  share), each with its own text, and the question's live region (``role="status"``,
  ``aria-live="polite"``) announced the verdict followed by those explanations and nothing else;
* changing the answer clears the feedback; the same wrong answer checked twice says "Still";
* Tab leads from each question's last button to the next question's first control, and every focused
  control shows a visible focus ring;
* no console error, no uncaught exception, no request to another host.

Then, on the same page with every answer shown: the quiz's text and buttons keep a contrast of 4.5:1
in dark and in light mode (the theme follows the system's colour scheme); in both modes, Tab from the
quiz's first control visits every control of every question in order (a radio group is one stop), each
with a focus ring of at least 2 px whose colour has a contrast of 3:1 or more with what surrounds it;
axe-core finds no violation of any impact in the answered quiz, in either mode; at a width of 390 px
nothing in the quiz is wider than the screen and every button, field and option label is at least
44 px high (a finger-sized target); printed (print media, as ``make pdf`` prints), the questions and
their options show and no verdict, explanation or button does. One test per chapter, so that each page
is loaded (and its math typeset) once.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from axe_playwright_python.sync_playwright import Axe
from explorer_helpers import assert_clean, plain
from test_pages import TIMEOUT_MS, PageLog
from wcag import CONTRAST_HELPERS

from press import quiz
from press.print_pdf import READY_JS, SCRIPTS_JS

REPO_ROOT = Path(__file__).resolve().parents[2]

CHAPTERS = sorted(p.stem for p in (REPO_ROOT / "book").glob("[0-9][0-9]_*.ipynb"))

# Records what each question's live region would make a screen reader say: its visible text after
# every change (a polite, atomic region is read as a whole).
ANNOUNCEMENTS_JS = """
window.__announced = {};
document.addEventListener('DOMContentLoaded', () => {
  document.querySelectorAll('form.attnlib-quiz-question [aria-live]').forEach((region) => {
    const id = region.closest('form').id;
    new MutationObserver(() => {
      const text = region.innerText.trim();
      if (text) window.__announced[id] = text;
    }).observe(region, { subtree: true, childList: true, characterData: true, attributes: true });
  });
});
"""

STATE_JS = """
(id) => {
  const form = document.getElementById(id);
  const region = form.querySelector('.attnlib-quiz-feedback');
  const key = (e) => e.hasAttribute('data-option') ? 'option:' + e.getAttribute('data-option')
    : e.hasAttribute('data-answer') ? 'answer'
    : e.hasAttribute('data-wrong') ? 'wrong:' + e.getAttribute('data-wrong') : 'other';
  const visible = [...region.querySelectorAll('.attnlib-quiz-explanation')]
    .filter((e) => !e.hidden && e.getClientRects().length > 0);
  const active = document.activeElement;
  const style = getComputedStyle(active);
  return {
    verdict: region.querySelector('.attnlib-quiz-verdict').textContent,
    shown: visible.map(key),
    texts: visible.map((e) => e.innerText),
    role: region.getAttribute('role'), live: region.getAttribute('aria-live'),
    announced: window.__announced[id] || '',
    marked: [...form.querySelectorAll('.attnlib-quiz-answer')]
      .map((o) => Number(o.getAttribute('data-option'))),
    focus: { id: active.id, cls: active.className, inForm: form.contains(active),
             outline: style.outlineStyle, outlineWidth: parseFloat(style.outlineWidth) },
  };
}
"""


def _words(text: str) -> str:
    return " ".join(plain(text).replace("*", "").split())


def _plain_part(explanation: str) -> str:
    """The longest stretch of an explanation without math or code: what its element must contain."""
    parts = [_words(c) for k, c in quiz._segments(explanation) if k == "text"]
    return max(parts, key=len).strip(" ,.;:()")


def _label(question: quiz.Question, key: str) -> str:
    if key.startswith("option:"):
        i = int(key.split(":")[1])
        return f"{quiz.LETTERS[i]} is {'right' if question.options[i].correct else 'not right'}."
    if key == "answer":
        return "Right."
    if key.startswith("wrong:"):
        return f"{quiz._number_text(question.wrong[int(key.split(':')[1])].value)} is not right."
    return "Not right."


def _explanation(question: quiz.Question, key: str) -> str:
    if key.startswith("option:"):
        return question.options[int(key.split(":")[1])].explanation
    if key == "answer":
        return question.explanation
    if key.startswith("wrong:"):
        return question.wrong[int(key.split(":")[1])].explanation
    return question.otherwise


class QuestionDriver:
    """Answers one question with the keyboard and checks what the page says after each step."""

    def __init__(self, page: Any, question: quiz.Question, form_id: str) -> None:
        self.page, self.q, self.id = page, question, form_id
        self.checked = 0

    def key(self, name: str, times: int = 1) -> None:
        for _ in range(times):
            self.page.keyboard.press(name)

    def state(self) -> dict:
        return self.page.evaluate(STATE_JS, self.id)

    def expect(self, verdict: str, shown: list[str], what: str) -> None:
        s = self.state()
        where = f"{self.id} ({what})"
        assert s["role"] == "status" and s["live"] == "polite", where
        assert s["verdict"] == verdict, f"{where}: verdict {s['verdict']!r}, expected {verdict!r}"
        assert s["shown"] == shown, f"{where}: explanations shown {s['shown']}, expected {shown}"
        for key, text in zip(shown, s["texts"], strict=True):
            assert _words(text).startswith(_label(self.q, key)), f"{where}: {key} begins {text[:60]!r}"
            assert _plain_part(_explanation(self.q, key)) in _words(text), f"{where}: {key} says {text!r}"
        announced = _words(s["announced"])
        assert announced.startswith(_words(verdict)), f"{where}: announced {announced[:120]!r}"
        for key in shown:
            assert _plain_part(_explanation(self.q, key)) in announced, f"{where}: {key} not announced"
        others = {f"option:{i}" for i in range(len(self.q.options))} if self.q.options else {
            "answer", "other", *(f"wrong:{i}" for i in range(len(self.q.wrong)))}
        for key in others - set(shown):
            # a whole label, not the tail of another ("2 is not right." inside "32 is not right.")
            unchosen = re.search(r"(?<![\w.])" + re.escape(_label(self.q, key)), announced)
            assert unchosen is None, f"{where}: {key} announced but not chosen"
        self.checked += 1

    def expect_cleared(self, what: str) -> None:
        s = self.state()
        assert s["verdict"] == "" and s["shown"] == [], f"{self.id}: feedback not cleared after {what}: {s}"

    def expect_focus(self, what: str, *, cls: str | None = None, element_id: str | None = None) -> None:
        focus = self.state()["focus"]
        assert focus["inForm"], f"{self.id}: focus left the question at {what}: {focus}"
        if cls is not None:
            assert cls in focus["cls"].split(), f"{self.id}: {what}: focus on {focus}"
        if element_id is not None:
            assert focus["id"] == element_id, f"{self.id}: {what}: focus on {focus}"
        assert focus["outline"] not in ("none", "") and focus["outlineWidth"] >= 2, \
            f"{self.id}: {what}: no visible focus ring on {focus}"

    # -- the three kinds
    def single(self) -> None:
        right = self.q.correct_letters
        r = quiz.LETTERS.index(right[0])
        self.expect_focus("arrival", element_id=f"{self.id}-a")
        self.key("Space")  # checks A
        self.key("ArrowDown", r)  # arrow keys move the choice within the radio group
        self.key("Tab")
        self.expect_focus("Tab to Check", cls="attnlib-quiz-check")
        self.key("Enter")
        self.expect("Correct.", [f"option:{r}"], "right option")
        self.key("Enter")
        self.expect("Still correct.", [f"option:{r}"], "checked twice")
        current = r
        for w in range(len(self.q.options)):
            if w == r:
                continue
            self.key("Shift+Tab")  # back to the radio group, on the chosen option
            self.expect_focus("Shift+Tab to the options",
                              element_id=f"{self.id}-{quiz.LETTERS[current].lower()}")
            self.key("ArrowDown" if w > current else "ArrowUp", abs(w - current))
            current = w
            self.expect_cleared("choosing another option")
            self.key("Tab")
            self.key("Space")  # a button also activates with Space
            self.expect("Not correct. Try another option, or show the answer.", [f"option:{w}"],
                        f"wrong option {quiz.LETTERS[w]}")
        self.key("Enter")
        self.expect("Still not correct. Try another option, or show the answer.", [f"option:{current}"],
                    "wrong, checked twice")
        self.reveal(f"The answer is {right[0]}.", [f"option:{i}" for i in range(len(self.q.options))])

    def multiple(self) -> None:
        n = len(self.q.options)
        right = [i for i, o in enumerate(self.q.options) if o.correct]
        self.expect_focus("arrival", element_id=f"{self.id}-a")
        for i in range(n):  # every checkbox is a stop of its own
            if i in right:
                self.key("Space")
            self.key("Tab")
        self.expect_focus("Tab to Check", cls="attnlib-quiz-check")
        self.key("Enter")
        self.expect("Correct. You chose every right option and no other.", [f"option:{i}" for i in right],
                    "right options")

        def toggle(i: int) -> None:
            self.key("Shift+Tab", n - i)
            self.expect_focus(f"Shift+Tab to option {quiz.LETTERS[i]}",
                              element_id=f"{self.id}-{quiz.LETTERS[i].lower()}")
            self.key("Space")
            self.key("Tab", n - i)

        for w in (i for i in range(n) if i not in right):
            toggle(w)
            self.expect_cleared("ticking another option")
            self.key("Enter")
            self.expect("Not correct. One of your choices is not right.",
                        [f"option:{i}" for i in sorted([*right, w])], f"with wrong option {quiz.LETTERS[w]}")
            toggle(w)
        toggle(right[0])
        self.key("Enter")
        if len(right) > 1:
            self.expect("Not correct. One right option is missing.", [f"option:{i}" for i in right[1:]],
                        "a right option left out")
        else:
            self.expect("Choose at least one option first.", [], "nothing chosen")
        toggle(right[0])
        names = [quiz.LETTERS[i] for i in right]
        verdict = (f"The answer is {names[0]}." if len(names) == 1
                   else f"The right options are {quiz._letters(names)}.")
        self.reveal(verdict, [f"option:{i}" for i in range(n)])

    def numeric(self) -> None:
        field = f"{self.id}-value"
        self.expect_focus("arrival", element_id=field)
        self.key("Enter")  # Enter in the field submits the question's form
        self.expect("Type a number first.", [], "empty field")

        def answer(text: str, verdict: str, shown: list[str], what: str) -> None:
            self.key("Control+a")
            self.page.keyboard.type(text[0])
            self.expect_cleared("typing")
            self.page.keyboard.type(text[1:])
            self.key("Enter")
            self.expect(verdict, shown, what)

        def classified(value: float) -> list[str]:
            kind = self.q.matches(value)
            return ["answer"] if kind == "answer" else [kind] if kind.startswith("wrong:") else ["other"]

        right = quiz._number_text(self.q.answer)
        answer(right, "Correct.", ["answer"], "the answer")
        for i, w in enumerate(self.q.wrong):
            text = quiz._number_text(w.value)
            assert classified(w.value) == [f"wrong:{i}"]
            answer(text, "Not correct.", [f"wrong:{i}"], f"wrong value {text}")
        other = self.q.answer + 1000 * self.q.tolerance + 1000
        assert classified(other) == ["other"]
        answer(f"{other:g}", "Not correct.", ["other"], "another number")
        if "." in right:
            answer(right.replace(".", ","), "Correct.", ["answer"], "a decimal comma")
        answer("abc", "\u201cabc\u201d is not a number. Type digits with a decimal point, such as 0.25.", [],
               "not a number")
        self.key("Tab")
        self.expect_focus("Tab to Check", cls="attnlib-quiz-check")
        self.reveal(f"The answer is {right} (anything within {self.q.tolerance!r} of it counts as right).",
                    ["answer"])

    def reveal(self, verdict: str, shown: list[str]) -> None:
        self.key("Tab")
        self.expect_focus("Tab to Show answer", cls="attnlib-quiz-reveal")
        self.key("Enter")
        self.expect(verdict, shown, "show answer")
        if self.q.options:
            right = [i for i, o in enumerate(self.q.options) if o.correct]
            assert self.state()["marked"] == right, f"{self.id}: the right options are not marked"


def _open(
    browser: Any, base_url: str, html_dir: Path, path: str, **context_args: Any
) -> tuple[Any, Any, PageLog]:
    assert (html_dir / path).is_file(), f"{path} is missing from the build"
    log = PageLog(urlsplit(base_url).netloc)
    context = browser.new_context(**context_args)
    context.set_default_timeout(TIMEOUT_MS)
    context.add_init_script(ANNOUNCEMENTS_JS)
    page = context.new_page()
    log.attach(context, page)
    page.goto(f"{base_url}/{path}", wait_until="load")
    page.evaluate(SCRIPTS_JS)  # the page's scripts load after its first paint
    page.evaluate(READY_JS)  # formulas shown, fonts loaded
    return context, page, log


def _quiz_of(chapter: str) -> quiz.Quiz:
    return quiz.load_quiz(REPO_ROOT / "book" / "quizzes" / f"{chapter}.yml")


def _form_ids(page: Any) -> list[str]:
    return page.evaluate("() => [...document.querySelectorAll('form.attnlib-quiz-question')].map(f => f.id)")


def _answer_by_keyboard(page: Any, q: quiz.Quiz, chapter: str) -> None:
    ids = _form_ids(page)
    expected = [f"{q.slug}-{question.id}" for question in q.questions]
    assert ids == expected, f"book/{chapter}.html: quiz questions {ids}, the quiz file has {expected} " \
        "(is the {quiz} directive in the chapter, and the build current?)"
    first = "input" if q.questions[0].kind != "numeric" else "input[type=text]"
    page.focus(f"#{ids[0]} {first}")  # the one step without keys: the reader has arrived at the quiz
    checks = 0
    for n, (question, form_id) in enumerate(zip(q.questions, ids, strict=True)):
        driver = QuestionDriver(page, question, form_id)
        getattr(driver, question.kind)()
        checks += driver.checked
        if n + 1 < len(ids):  # Tab from "Show answer" reaches the next question's first control
            page.keyboard.press("Tab")
            nxt = q.questions[n + 1]
            first_id = f"{ids[n + 1]}-value" if nxt.kind == "numeric" else f"{ids[n + 1]}-a"
            assert page.evaluate("() => document.activeElement.id") == first_id, form_id
    assert checks >= 4 * len(ids)


_CONTRAST_JS = "() => {" + CONTRAST_HELPERS + """
  const sel = '.attnlib-quiz-intro, .attnlib-quiz-question legend, .attnlib-quiz-hint,'
    + ' .attnlib-quiz-option label, .attnlib-quiz-number-input label, .attnlib-quiz-number-input input,'
    + ' .attnlib-quiz-actions button,'
    + ' .attnlib-quiz-verdict, .attnlib-quiz-explanation p';
  return [...document.querySelectorAll(sel)].filter((el) => el.getClientRects().length).map((el) => ({
    text: (el.className || el.tagName) + ': ' + el.textContent.slice(0, 40),
    ratio: ratio(lum(getComputedStyle(el).color), lum(behind(el))),
  }));
}
"""


def _check_contrast(page: Any, chapter: str) -> None:
    """In both colour schemes (the theme follows the system's), every quiz text is readable."""
    for scheme in ("dark", "light"):
        page.emulate_media(color_scheme=scheme)
        page.wait_for_function("(s) => document.documentElement.dataset.theme === s", arg=scheme)
        found = page.evaluate(_CONTRAST_JS)
        kinds = {f["text"].split(":")[0] for f in found}
        assert {"attnlib-quiz-verdict", "attnlib-quiz-check", "attnlib-quiz-reveal",
                "attnlib-quiz-hint"} <= kinds, kinds
        poor = [f for f in found if f["ratio"] < 4.5]
        assert not poor, f"book/{chapter}.html in {scheme} mode: contrast below 4.5:1 for {poor}"


_RING_JS = "() => {" + CONTRAST_HELPERS + """
  const el = document.activeElement;
  const style = getComputedStyle(el);
  const [ring, around] = [lum(style.outlineColor), lum(behind(el.parentElement))];
  return { id: el.id || (el.closest('form') || {}).id + ' ' + el.className,
           inQuiz: !!el.closest('.attnlib-quiz'), outline: style.outlineStyle,
           width: parseFloat(style.outlineWidth),
           ratio: ratio(ring, around) };
}
"""


def _tab_stops(q: quiz.Quiz) -> int:
    """Tab stops of a quiz: a radio group is one, each checkbox one, a number field one, two buttons."""
    stops = {"single": lambda x: 1, "multiple": lambda x: len(x.options), "numeric": lambda x: 1}
    return sum(stops[x.kind](x) + 2 for x in q.questions)


def _check_focus_rings(page: Any, q: quiz.Quiz, chapter: str) -> None:
    """In both modes, Tab visits every control of the quiz, each with a ring that stands out (3:1)."""
    ids = _form_ids(page)
    # The first Tab stop: a radio group's is its chosen option (every question has been answered).
    kind = q.questions[0].kind
    first = {"single": "input:checked", "multiple": "input", "numeric": "input[type=text]"}[kind]
    for scheme in ("dark", "light"):
        page.emulate_media(color_scheme=scheme)
        page.wait_for_function("(s) => document.documentElement.dataset.theme === s", arg=scheme)
        page.focus(f"#{ids[0]} {first}")
        seen = []
        for step in range(_tab_stops(q)):
            if step:
                page.keyboard.press("Tab")
            ring = page.evaluate(_RING_JS)
            where = f"book/{chapter}.html in {scheme} mode, Tab stop {step + 1}: {ring}"
            assert ring["inQuiz"], f"{where}: focus left the quiz before its last control"
            assert ring["outline"] not in ("none", "") and ring["width"] >= 2, f"{where}: no focus ring"
            assert ring["ratio"] >= 3, f"{where}: the focus ring has a contrast below 3:1"
            seen.append(ring["id"])
        assert seen[-1].endswith("attnlib-quiz-reveal") and ids[-1] in seen[-1], \
            f"book/{chapter}.html: the last Tab stop of the quiz is not its last Show answer button: {seen}"


def _check_axe(page: Any, q: quiz.Quiz, chapter: str) -> None:
    """axe-core on the answered quiz (every explanation shown), in both modes: no violation at all."""
    axe = Axe()
    for scheme in ("dark", "light"):
        page.emulate_media(color_scheme=scheme)
        page.wait_for_function("(s) => document.documentElement.dataset.theme === s", arg=scheme)
        # No preload: axe would fetch the theme's stylesheets again to read @import rules (only for a
        # page-wide rule, screen orientation lock), resolving one against the wrong base: a 404 in the log.
        found = axe.run(page, context=f"#{q.slug}",
                        options={"resultTypes": ["violations"], "preload": False}).response
        problems = [f"{v['id']} ({v['impact']}): {[n['target'] for n in v['nodes'][:5]]} "
                    f"{' '.join(v['nodes'][0].get('failureSummary', '').split())[:200]}"
                    for v in found["violations"]]
        assert not problems, f"book/{chapter}.html, quiz in {scheme} mode: axe-core reports {problems}"


_OVERFLOW_JS = """
() => {
  const width = document.documentElement.clientWidth;
  const quiz = document.querySelector('.attnlib-quiz');
  const box = quiz.getBoundingClientRect();
  return {
    width, quizLeft: box.left, quizRight: box.right,
    scrolling: [...document.querySelectorAll('form.attnlib-quiz-question')]
      .filter((f) => f.scrollWidth > f.clientWidth + 1).map((f) => f.id),
    small: [...quiz.querySelectorAll('button, input[type=text], .attnlib-quiz-option label')]
      .map((b) => ({ id: b.id || b.closest('form').id + ' ' + (b.className || b.htmlFor),
                     h: b.getBoundingClientRect().height }))
      .filter((b) => b.h < 44),
  };
}
"""


def _check_phone_width(page: Any, chapter: str) -> None:
    """At 390 px nothing in the quiz is wider than the screen, and every button, field and option label
    (which ticks its option) is at least 44 px high: a target for a finger."""
    page.set_viewport_size({"width": 390, "height": 844})
    found = page.evaluate(_OVERFLOW_JS)
    assert found["quizLeft"] >= 0 and found["quizRight"] <= found["width"] + 1, found
    assert not found["scrolling"], \
        f"book/{chapter}.html: questions wider than a 390 px screen: {found['scrolling']}"
    assert not found["small"], f"book/{chapter}.html: controls lower than 44 px: {found['small']}"


_PRINT_JS = """
() => {
  const shown = (sel) => [...document.querySelectorAll(sel)]
    .filter((e) => e.getClientRects().length > 0).length;
  return { questions: document.querySelectorAll('form.attnlib-quiz-question').length,
           legends: shown('.attnlib-quiz-question legend'), options: shown('.attnlib-quiz-option'),
           fields: shown('.attnlib-quiz-number-input input'),
           note: shown('.attnlib-quiz-print-note'), intro: shown('.attnlib-quiz-intro'),
           feedback: shown('.attnlib-quiz-feedback'), explanations: shown('.attnlib-quiz-explanation'),
           buttons: shown('.attnlib-quiz-actions button'),
           text: document.querySelector('.attnlib-quiz').innerText };
}
"""


def _check_print(page: Any, q: quiz.Quiz, chapter: str) -> None:
    """Printed (as make pdf prints), the questions show and no verdict, explanation or button does."""
    screen = page.evaluate(_PRINT_JS)
    assert screen["explanations"] > 0 and screen["buttons"] == 2 * screen["questions"], screen
    page.emulate_media(media="print")
    printed = page.evaluate(_PRINT_JS)
    page.emulate_media(media="screen")
    where = f"book/{chapter}.html printed"
    n = len(q.questions)
    assert printed["questions"] == printed["legends"] == n and printed["note"] == 1, (where, printed)
    assert printed["options"] == sum(len(x.options) for x in q.questions), where
    assert printed["fields"] == sum(x.kind == "numeric" for x in q.questions), where
    assert printed["feedback"] == printed["explanations"] == printed["buttons"] == printed["intro"] == 0, \
        (where, printed)
    text = _words(printed["text"])
    for question in q.questions:  # no explanation's words on paper
        keys = (["answer", "other", *(f"wrong:{i}" for i in range(len(question.wrong)))]
                if question.kind == "numeric" else [f"option:{i}" for i in range(len(question.options))])
        for key in keys:
            assert _plain_part(_explanation(question, key)) not in text, (where, question.id, key)
    assert f"Question {n} of {n}." in text, where


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_quiz_of_chapter(browser: Any, base_url: str, html_dir: Path, chapter: str) -> None:
    """The keyboard run, then, on the answered page: contrast, focus rings and axe-core in both modes,
    390 px, print."""
    q = _quiz_of(chapter)
    context, page, log = _open(browser, base_url, html_dir, f"book/{chapter}.html",
                               viewport={"width": 1280, "height": 900})
    try:
        _answer_by_keyboard(page, q, chapter)  # ends with every answer shown: every style is on the page
        _check_contrast(page, chapter)
        _check_focus_rings(page, q, chapter)
        _check_axe(page, q, chapter)
        _check_phone_width(page, chapter)
        _check_print(page, q, chapter)
        assert_clean(log)
    finally:
        context.close()
