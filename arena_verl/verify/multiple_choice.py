"""Multiple-choice answers (GPQA-Diamond): the letter a reply commits to, and its score against the correct letter.

The prompt asks for the letter within ``\\boxed{}``. Only the reply's last ``tail_chars`` characters are read (the
final answer is at the end; this keeps a huge reply cheap). In that tail:

- the final answer is the last ``\\boxed{...}`` (or ``\\fbox{...}``): ``\\boxed{B}``, ``\\boxed{\\text{B}}``,
  ``\\boxed{(B)}``, ``\\boxed{B)}``, ``\\boxed{b}``, ``$\\boxed{B}$``, also with the option's text after the letter
  (``\\boxed{B) 42 eV}``, ``\\boxed{(B) 42 eV}``, ``\\boxed{B. 42 eV}``);
- without a box, the last non-empty line may state it: ``Answer: B``, ``**Final answer:** (C)``,
  ``The correct answer is (B).``, or the line is the letter alone (``B``, ``(B)``, ``**B**``). Outside a box a
  lowercase letter counts only in parentheses (``the answer is a prime`` is prose, ``answer: (a)`` is a letter);
- anything else is no answer.

A hedge is no answer: a box naming several letters (``\\boxed{A or B}``, ``\\boxed{AB}``, ``\\boxed{A, C}``,
``\\boxed{ABCD}``), boxes on the final answer's line that disagree (``\\boxed{A} or \\boxed{B}``), an "or" after the
letter (``\\boxed{A} or C``, ``Answer: A or B``), and option text that names another allowed letter
(``\\boxed{A) not B}``). A letter outside ``letters`` (``\\boxed{E}`` of a four-option question) is no answer.
Earlier boxes on other lines are superseded by the last one (a reply may revise its answer). Only one letter is
ever graded, so writing several can never raise a score.

The ground truth is a single allowed letter, case-insensitive and whitespace-trimmed; anything else raises
``ValueError`` (a broken data file is an error, not a column of zeros).
"""

from __future__ import annotations

import logging
import re
from typing import Any

from arena_verl.verify.extraction import boxed_spans
from arena_verl.verify.math_verifier import VerifyResult

logger = logging.getLogger(__name__)

__all__ = ["extract_choice", "score", "verify_choice", "DEFAULT_LETTERS"]

DEFAULT_LETTERS = "ABCD"
_TAIL_CHARS = 4000
_MAX_BOX_CHARS = 300  # a box longer than this is not a letter with its option text
# LaTeX text wrappers around a letter: \text{B}, \textbf{(B)}, \mathrm{B} (innermost first, repeated).
_WRAPPER = re.compile(r"\\(?:text|textbf|textit|textrm|texttt|mathrm|mathbf|mathit|mbox|operatorname)\s*\{([^{}]*)\}")
_DECORATION = re.compile(r"[$*`]|\\[,;:! ]")  # math dollars, markdown emphasis, LaTeX spacing
# The whole content is one letter: B, (B), B), [B], B.
_LETTER_ONLY = re.compile(r"^[(\[]?\s*([A-Za-z])\s*[)\]]?\s*\.?$")
# A letter, a separator, the option's text: (B) 42 eV, B) 42 eV, B. 42 eV, B: 42 eV.
_LETTER_WITH_TEXT = re.compile(r"^(?:\(\s*([A-Za-z])\s*\)|([A-Za-z])\s*[).:])\s*(?P<text>\S.*)$", re.DOTALL)
# The last "answer is|:" on the line (greedy), then a letter: upper case, or any case in parentheses.
_ANSWER_LINE = re.compile(
    r".*\b(?i:answer)\b(?:\s+(?i:is)\b)?\s*:?\s*"
    r"(?:\(\s*(?P<paren>[A-Za-z])\s*\)|(?P<bare>[A-Z])(?![A-Za-z0-9]))(?P<rest>.*)$"
)


def extract_choice(text: str | bytes | None, letters: str = DEFAULT_LETTERS) -> str | None:
    """The upper-case letter the reply commits to, or None (no answer, a hedge, a letter outside ``letters``)."""
    allowed = _check_letters(letters)
    if isinstance(text, (bytes, bytearray)):
        text = bytes(text).decode("utf-8", errors="replace")
    if not isinstance(text, str):
        return None
    tail = text[-_TAIL_CHARS:]
    boxes = boxed_spans(tail)
    letter = _boxed_choice(tail, boxes, allowed) if boxes else _line_choice(_last_line(tail), allowed)
    return letter if letter is not None and letter in allowed else None


def score(text: str | bytes | None, ground_truth: str, letters: str = DEFAULT_LETTERS) -> float:
    """1.0 when the reply's letter is ``ground_truth``, else 0.0; an invalid ``ground_truth`` raises ``ValueError``."""
    allowed = _check_letters(letters)
    truth = ground_truth.strip().upper() if isinstance(ground_truth, str) else None
    if truth is None or len(truth) != 1 or truth not in allowed:
        raise ValueError(f"multiple-choice ground truth must be one letter of {allowed!r}, got {ground_truth!r}")
    return 1.0 if extract_choice(text, allowed) == truth else 0.0


def _check_letters(letters: str) -> str:
    if not isinstance(letters, str) or not letters or not letters.isalpha() or not letters.isupper():
        raise ValueError(f"letters must be upper-case letters, got {letters!r}")
    if len(set(letters)) != len(letters):
        raise ValueError(f"letters must be distinct, got {letters!r}")
    return letters


def _boxed_choice(tail: str, boxes: list[tuple[int, int, str]], allowed: str) -> str | None:
    last_start, last_end, _ = boxes[-1]
    line_start = tail.rfind("\n", 0, last_start) + 1
    line_end = tail.find("\n", last_end)
    after = tail[last_end : line_end if line_end >= 0 else len(tail)]
    if _another_choice_follows(after, allowed):
        return None  # "\boxed{A} or C"
    choices = {_box_letter(content, allowed) for start, _, content in boxes if start >= line_start}
    return choices.pop() if len(choices) == 1 else None  # disagreeing boxes on the final line: a hedge


def _box_letter(content: str, allowed: str) -> str | None:
    if len(content) > _MAX_BOX_CHARS:
        return None
    content = _plain(content)
    only = _LETTER_ONLY.match(content)
    if only:
        return only.group(1).upper()
    with_text = _LETTER_WITH_TEXT.match(content)
    if with_text is None:
        return None
    letter = (with_text.group(1) or with_text.group(2)).upper()
    return None if _names_a_choice(with_text.group("text"), allowed) else letter


def _line_choice(line: str, allowed: str) -> str | None:
    line = _plain(line)
    only = _LETTER_ONLY.match(line)
    if only and (only.group(1).isupper() or line.startswith(("(", "["))):
        return only.group(1).upper()
    match = _ANSWER_LINE.match(line)
    if match is None or _another_choice_follows(match.group("rest"), allowed):
        return None
    return (match.group("paren") or match.group("bare")).upper()


def _plain(text: str) -> str:
    text = _DECORATION.sub("", text)
    for _ in range(4):  # nested wrappers: \textbf{\text{B}}
        unwrapped = _WRAPPER.sub(r"\1", text)
        if unwrapped == text:
            break
        text = unwrapped
    return text.strip()


def _names_a_choice(text: str, allowed: str) -> bool:
    """A stand-alone allowed letter (``not B``) or any letter in parentheses (``(c)``) in an option's text."""
    return _choice_token(allowed).search(_plain(text)) is not None


def _another_choice_follows(text: str, allowed: str) -> bool:
    """After the answer: "or", "and", "," or "/" and then a letter (``or C``, ``, (b)``)."""
    return re.search(r"(?:\b(?i:or|and)\b|[,/&])\s*" + _choice_token(allowed).pattern, _plain(text)) is not None


def _choice_token(allowed: str) -> re.Pattern:
    return re.compile(rf"(?:\(\s*[{allowed}{allowed.lower()}]\s*\)|(?<![A-Za-z0-9])[{allowed}](?![A-Za-z0-9]))")


def _last_line(text: str) -> str:
    for line in reversed(text.splitlines()):
        if line.strip():
            return line
    return ""


def verify_choice(text: str, ground_truth: Any, data_source: str = "") -> VerifyResult:
    """The reply's letter against a one-letter ground truth (GPQA), as a verifier result; verl has no such scorer
    and would score 0. A broken ground truth is counted as an error, never a crash."""
    try:
        value = score(text, ground_truth)
    except ValueError as exc:
        logger.warning("multiple-choice sample of %s not scored: %s", data_source, exc)
        return VerifyResult(0.0, "error")
    if value > 0:
        return VerifyResult(1.0, "correct")
    return VerifyResult(0.0, "wrong" if extract_choice(text) else "no_answer")
