"""Strict verdict parsing: only the last ``[[A]]``, ``[[B]]`` or ``[[TIE]]`` (pointwise: ``[[0]]``, ``[[0.5]]``,
``[[1]]``) after the judge's reasoning counts, and the line it stands on must not hold a different one. Anything
else is a parse failure (None), never a guess."""

from __future__ import annotations

import re

__all__ = ["parse_verdict", "parse_score", "strip_reasoning", "VERDICT_OUTCOME"]

_PAIRWISE = re.compile(r"\[\[\s*(A|B|TIE)\s*\]\]", re.IGNORECASE)
_POINTWISE = re.compile(r"\[\[\s*(1(?:\.0)?|0\.5|0(?:\.0)?)\s*\]\]")
_THINK_BLOCK = re.compile(r"<think>.*?</think>", re.IGNORECASE | re.DOTALL)
_THINK_OPEN = re.compile(r"<think>", re.IGNORECASE)
_MAX_CHARS = 200_000

VERDICT_OUTCOME = {"A": 1.0, "B": 0.0, "TIE": 0.5}


def strip_reasoning(raw: str) -> str | None:
    """The judge's answer without its ``<think>...</think>`` reasoning; None if the reasoning never closed (the
    judge ran out of tokens before answering). A reply that starts inside a think block (templates that open
    ``<think>`` in the prompt) is cut at its last ``</think>``."""
    text = raw[-_MAX_CHARS:]
    if "</think>" in text.lower() and not _THINK_OPEN.search(text.split("</think>")[0]):
        text = text[text.lower().rindex("</think>") + len("</think>") :]
    text = _THINK_BLOCK.sub("", text)
    if _THINK_OPEN.search(text):
        return None
    return text


def parse_verdict(raw_judge_output: str) -> str | None:
    """``"A"``, ``"B"`` or ``"TIE"`` from the judge's last verdict token after its reasoning; None if there is none."""
    return _parse(raw_judge_output, _PAIRWISE, str.upper)


def parse_score(raw_judge_output: str) -> float | None:
    """0.0, 0.5 or 1.0 from the judge's last score token after its reasoning; None if there is none."""
    return _parse(raw_judge_output, _POINTWISE, float)


def _parse(raw: str, pattern: re.Pattern, convert):
    if not isinstance(raw, str):
        return None
    answer = strip_reasoning(raw)
    return None if answer is None else _last_line_token(answer, pattern, convert)


def _last_line_token(answer: str, pattern: re.Pattern, convert):
    """The token on the last line that has one; a line with two different tokens (an echoed instruction such as
    "[[A]] if A is better, [[B]] if ...") is ambiguous and parses as None."""
    for line in reversed(answer.splitlines()):
        found = {convert(token) for token in pattern.findall(line)}
        if len(found) == 1:
            return found.pop()
        if found:
            return None
    return None
