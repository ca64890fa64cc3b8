"""Answer extraction: the final answer of a trace, found before math-verify sees anything.

In the trace's last ``tail_chars`` characters:

- the answer is the content of the last ``\\boxed{...}`` (or ``\\fbox{...}``);
- several different boxed answers are one set answer when the reference is a set of several values (gold
  ``(2, 2), (6, 2)``: ``\\boxed{(2, 2)}`` and ``\\boxed{(6, 2)}`` are compared as ``(2, 2), (6, 2)``); for a
  single-valued reference they are a hedge and score 0 (status ``hedged``); which it is, the verifier decides;
- an "answer is X" / "Answer: X" / "final answer is X" form on the last non-empty line counts when there is no box
  ("Final Answer: The largest $n$ is 34." gives ``34``), and when it states a value after every box ("\\boxed{200}
  ... \\boxed{255} ... Final Answer: The final answer is $10,455$." gives ``10,455``);
- ``lenient_chars > 0`` (``extraction="lenient"``): without a box, the trace's last ``lenient_chars`` characters are
  handed to math-verify's own LaTeX and expression extraction instead of the answer-line rule; boxes follow the
  rules above;
- anything else (no answer, an answer only in the middle of the trace, an empty trace) is no answer.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

__all__ = ["Extraction", "boxed_spans", "extract_answers", "extract_final_answer"]

_BOX_OPENERS = ("\\boxed{", "\\fbox{", "\\boxed {")
# The last "answer is|:|=" on the line (``.*`` is greedy): "Final Answer: The final answer is $5$" gives "$5$".
_ANSWER_LINE = re.compile(r".*\banswer\s*(?:is\b\s*:?|:|=)\s*(?P<answer>.+?)\s*$", re.IGNORECASE)
_I_HOPE = re.compile(r"\.?\s*I hope\b.*$", re.IGNORECASE)  # "... is $5$. I hope it is correct."
_PROSE_IS = re.compile(r"^.*\bis\b\s*:?\s*", re.IGNORECASE)  # "The largest $n$ is 34" gives "34"
# The math that opens an answer: $$...$$, $...$ (a closing $ is not an escaped \$), \(...\), \[...\].
_MATH_FIRST = re.compile(
    r"\$\$(?P<display>.+?)\$\$|\$(?P<inline>.+?)(?<!\\)\$|\\\((?P<paren>.+?)\\\)|\\\[(?P<bracket>.+?)\\\]", re.DOTALL
)
_MATH_JOINT = re.compile(r"\s*(?:,\s*(?:and|or)?|and|or)\s*(?=\$|\\\(|\\\[)")  # "$12$ and $13$"
_SENTENCE_END = re.compile(r"\.\s")
_MATHY = re.compile(r"[\d\\^=+*/<>()\[\]{}]")  # a digit, a LaTeX command or an operator
_QUOTES = re.compile(r'^(?:\\?["\u201c\u201d])+|(?:\\?["\u201c\u201d])+$')


@dataclass(frozen=True)
class Extraction:
    """What :func:`extract_answers` found in a trace."""

    answers: tuple[str, ...]  # one answer, or several distinct boxed answers (a set answer or a hedge)
    status: str  # "ok" or a failure status
    raw: bool = False  # lenient: answers[0] is the trace's tail, for math-verify's own extraction


def extract_final_answer(text: str | bytes, tail_chars: int = 4000) -> tuple[str | None, str]:
    """Return ``(answer, status)`` of the default (``boxed``) extraction; ``answer`` is None unless ``status == "ok"``.

    Several different boxed answers give ``(None, "hedged")`` here: whether they are one set answer depends on the
    reference, which :meth:`MathVerifier.score` knows.
    """
    found = extract_answers(text, tail_chars)
    if found.status != "ok":
        return None, found.status
    if len(found.answers) > 1:
        return None, "hedged"
    return found.answers[0], "ok"


def extract_answers(text: Any, tail_chars: int, lenient_chars: int = 0) -> Extraction:
    """The answer(s) of ``text`` (see the module docstring); ``lenient_chars > 0``: lenient extraction."""
    if isinstance(text, (bytes, bytearray)):
        text = bytes(text).decode("utf-8", errors="replace")
    if not isinstance(text, str):
        return Extraction((), "error")
    tail = text[-tail_chars:]
    if not tail.strip():
        return Extraction((), "empty")
    line_start, line = _last_line(tail)
    boxes = _boxed_contents(tail)
    if boxes:
        after_boxes = _answer_on_line(line[max(0, boxes[-1][1] - line_start) :])
        if after_boxes is not None and _MATHY.search(after_boxes):  # not "... the answer is correct."
            return Extraction((after_boxes,), "ok")  # an explicit final answer after every box
        distinct: dict[str, str] = {}
        for content, _ in boxes:
            content = content.strip().strip("$").strip()
            if content:
                distinct[" ".join(content.split())] = content
        return Extraction(tuple(distinct.values()), "ok") if distinct else Extraction((), "no_answer")
    if lenient_chars > 0:  # math-verify's own extraction (its "final answer is" / "answer:" anchors first)
        return Extraction((tail[-lenient_chars:],), "ok", raw=True)
    line_answer = _answer_on_line(line)
    return Extraction((line_answer,), "ok") if line_answer is not None else Extraction((), "no_answer")


def _last_line(text: str) -> tuple[int, str]:
    end = len(text)
    while end > 0:
        start = text.rfind("\n", 0, end) + 1
        if text[start:end].strip():
            return start, text[start:end]
        end = start - 1
    return 0, ""


def _answer_on_line(line: str) -> str | None:
    match = _ANSWER_LINE.match(line.replace("*", ""))
    if match is None:
        return None
    answer = _QUOTES.sub("", _I_HOPE.sub("", match.group("answer")).strip())
    maths = []  # "is $16,\\!386.20$. I apologize ...": the math that follows; "$12$ and $13$": both
    position = 0
    while (math := _MATH_FIRST.match(answer, position)) is not None:
        maths.append(math.group(math.lastgroup).strip())
        joint = _MATH_JOINT.match(answer, math.end())
        if joint is None:
            break
        position = joint.end()
    if maths:
        return ", ".join(m for m in maths if m) or None
    answer = _SENTENCE_END.split(answer, maxsplit=1)[0].strip()  # the sentence ("...", not a decimal point)
    if re.search(r"[A-Za-z]{2,}\s", answer):
        answer = _PROSE_IS.sub("", answer)  # prose before the value: "The largest $n$ is 34"
    answer = answer.strip().rstrip(".").strip().strip("$").strip()
    return answer or None


def _boxed_contents(text: str) -> list[tuple[str, int]]:
    """``(content, end)`` of every balanced ``\\boxed{...}``; an unclosed box is ignored."""
    return [(content, end) for _, end, content in boxed_spans(text)]


def boxed_spans(text: str) -> list[tuple[int, int, str]]:
    """``(start, end, content)`` of every balanced ``\\boxed{...}`` / ``\\fbox{...}``, in order; an unclosed box
    ends the scan (what follows it is inside it)."""
    found = []
    position = 0
    while True:
        starts = [(text.find(opener, position), opener) for opener in _BOX_OPENERS]
        starts = [(start, opener) for start, opener in starts if start >= 0]
        if not starts:
            return found
        start, opener = min(starts)
        depth, i = 1, start + len(opener)
        while i < len(text) and depth:
            depth += {"{": 1, "}": -1}.get(text[i], 0)
            i += 1
        if depth:
            return found
        found.append((start, i, text[start + len(opener) : i - 1]))
        position = i
