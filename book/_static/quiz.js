/* Self-check quizzes: checks the answers of the forms that book/press/quiz.py writes, in the page.

   No library, no network, no storage. Each question is a <form class="attnlib-quiz-question"> with
   native inputs, a "Check" (submit) and a "Show answer" button, and one feedback region
   (role="status", aria-live="polite") holding a verdict paragraph and, hidden, one explanation per
   option (per known wrong number, the answer and "any other number" for a numeric question). Checking
   writes the verdict and shows the explanations of what was chosen; the screen reader announces the
   region. Changing the answer clears the feedback. The rule for numbers is the one of
   Question.matches in quiz.py: within the answer's tolerance is right, then the known wrong values
   in order, then anything else. */
(function () {
  "use strict";

  var PREFIX = "attnlib-quiz-";
  var MARKS = [PREFIX + "chosen-right", PREFIX + "chosen-wrong", PREFIX + "answer"];

  /* "0.25", ".25", "-1e-3", "0,25" (decimal comma), "−0.5" (minus sign); null if not a number. */
  function parseNumber(text) {
    var t = text.trim().replace(/\u2212/g, "-").replace(/[\s\u00a0\u202f]/g, "");
    if (/^[-+]?\d*,\d+$/.test(t)) t = t.replace(",", ".");
    if (!/^[-+]?(\d+\.?\d*|\.\d+)(e[-+]?\d+)?$/i.test(t)) return null;
    var value = Number(t);
    return isFinite(value) ? value : null;
  }

  function listLetters(letters) {
    if (letters.length === 1) return letters[0];
    return letters.slice(0, -1).join(", ") + " and " + letters[letters.length - 1];
  }

  function count(n, one, many) {
    var words = ["no", "one", "two", "three", "four", "five", "six"];
    return (n < words.length ? words[n] : String(n)) + " " + (n === 1 ? one : many);
  }

  function setUp(form) {
    var kind = form.getAttribute("data-kind");
    var feedback = form.querySelector("." + PREFIX + "feedback");
    var verdict = feedback.querySelector("." + PREFIX + "verdict");
    var explanations = Array.prototype.slice.call(feedback.querySelectorAll("." + PREFIX + "explanation"));
    var options = Array.prototype.slice.call(form.querySelectorAll("." + PREFIX + "option"));
    var field = form.querySelector("input[type=text]");
    var reveal = form.querySelector("." + PREFIX + "reveal");
    var last = "";

    function explanation(selector) {
      return feedback.querySelector("." + PREFIX + "explanation" + selector);
    }

    function clear() {
      verdict.textContent = "";
      explanations.forEach(function (e) { e.hidden = true; });
      options.forEach(function (o) { MARKS.forEach(function (m) { o.classList.remove(m); }); });
      form.removeAttribute("data-state");
      last = "";
    }

    /* Writes the verdict and shows exactly the explanations in `shown`; `state` styles the region. */
    function say(text, shown, state) {
      var key = state + "|" + text + "|" + shown.map(function (e) { return explanations.indexOf(e); }).join(",");
      if (key === last && (state === "right" || state === "wrong")) {
        /* The same answer checked again: say so, or the live region would not change and stay silent. */
        text = (state === "right" ? "Still correct." : "Still not correct.") + text.replace(/^[^.]*\./, "");
      }
      explanations.forEach(function (e) { e.hidden = shown.indexOf(e) < 0; });
      verdict.textContent = text;
      form.setAttribute("data-state", state);
      last = key;
    }

    function chosen() {
      return options.filter(function (o) { return o.querySelector("input").checked; });
    }

    function isRight(o) {
      return o.getAttribute("data-correct") === "true";
    }

    function letter(o) {
      return String.fromCharCode(65 + Number(o.getAttribute("data-option")));
    }

    function checkNumber() {
      var raw = field.value.trim();
      if (raw === "") {
        say("Type a number first.", [], "empty");
        return;
      }
      var value = parseNumber(raw);
      if (value === null) {
        say("\u201c" + raw + "\u201d is not a number. Type digits with a decimal point, such as 0.25.", [], "invalid");
        return;
      }
      var answer = Number(field.getAttribute("data-answer"));
      var tolerance = Number(field.getAttribute("data-tolerance"));
      if (Math.abs(value - answer) <= tolerance) {
        say("Correct.", [explanation("[data-answer]")], "right");
        return;
      }
      var wrong = explanations.filter(function (e) {
        return e.hasAttribute("data-wrong") &&
          Math.abs(value - Number(e.getAttribute("data-value"))) <= Number(e.getAttribute("data-tolerance"));
      });
      say("Not correct.", [wrong.length ? wrong[0] : explanation("[data-otherwise]")], "wrong");
    }

    function checkChoice() {
      var picked = chosen();
      options.forEach(function (o) { MARKS.forEach(function (m) { o.classList.remove(m); }); });
      if (!picked.length) {
        say(kind === "single" ? "Choose an option first." : "Choose at least one option first.", [], "empty");
        return;
      }
      picked.forEach(function (o) { o.classList.add(PREFIX + (isRight(o) ? "chosen-right" : "chosen-wrong")); });
      var shown = picked.map(function (o) { return explanation("[data-option=\"" + o.getAttribute("data-option") + "\"]"); });
      var wrongPicked = picked.filter(function (o) { return !isRight(o); }).length;
      var missed = options.filter(function (o) { return isRight(o) && picked.indexOf(o) < 0; }).length;
      if (!wrongPicked && !missed) {
        say(kind === "single" ? "Correct." : "Correct. You chose every right option and no other.", shown, "right");
      } else if (kind === "single") {
        say("Not correct. Try another option, or show the answer.", shown, "wrong");
      } else {
        var parts = [];
        if (wrongPicked) parts.push(count(wrongPicked, "of your choices is", "of your choices are") + " not right");
        if (missed) parts.push(count(missed, "right option is", "right options are") + " missing");
        var detail = parts.join(", and ");
        say("Not correct. " + detail.charAt(0).toUpperCase() + detail.slice(1) + ".", shown, "wrong");
      }
    }

    function showAnswer() {
      if (kind === "numeric") {
        say("The answer is " + field.getAttribute("data-answer-text") + " (anything within " +
            field.getAttribute("data-tolerance") + " of it counts as right).",
            [explanation("[data-answer]")], "revealed");
        return;
      }
      var right = options.filter(isRight);
      options.forEach(function (o) { MARKS.forEach(function (m) { o.classList.remove(m); }); });
      right.forEach(function (o) { o.classList.add(PREFIX + "answer"); });
      var letters = right.map(letter);
      say((letters.length === 1 ? "The answer is " : "The right options are ") + listLetters(letters) + ".",
          explanations.slice(), "revealed");
    }

    form.addEventListener("submit", function (event) {
      event.preventDefault();
      if (kind === "numeric") checkNumber(); else checkChoice();
    });
    reveal.addEventListener("click", showAnswer);
    form.addEventListener("change", function (event) {
      if (event.target !== field) clear();
    });
    if (field) field.addEventListener("input", clear);
  }

  /* MathJax's menu makes every typeset formula a Tab stop (tabindex="0"). Inside the quiz they would
     sit between an option and the next, and between the buttons and the next question; a screen
     reader still reads each formula as part of its label, from MathJax's assistive MathML. So formulas
     in a quiz leave the Tab order, whenever MathJax adds or re-renders them. */
  function untab(root) {
    Array.prototype.forEach.call(root.querySelectorAll("mjx-container[tabindex]"), function (m) {
      if (m.getAttribute("tabindex") !== "-1") m.setAttribute("tabindex", "-1");
    });
  }

  function init() {
    Array.prototype.forEach.call(document.querySelectorAll("form." + PREFIX + "question"), setUp);
    Array.prototype.forEach.call(document.querySelectorAll("div.attnlib-quiz"), function (root) {
      untab(root);
      new MutationObserver(function () { untab(root); })
        .observe(root, { subtree: true, childList: true, attributes: true, attributeFilter: ["tabindex"] });
    });
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();
