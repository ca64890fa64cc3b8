"""Strict verdict parsing: the judge is told to end its reply with the verdict on its own line, so only a
``[[A]]``, ``[[B]]`` or ``[[TIE]]`` (pointwise: ``[[0]]``, ``[[0.5]]``, ``[[1]]``) that ends the reply's last
non-empty line after its reasoning counts (a label before it, "Final verdict: [[A]]", and markdown or a full stop
after it are fine), and that line must not hold a different one. Anything else is a parse failure (None), never a
guess: a reply that goes on after its verdict, and an echoed instruction cut short by the token limit ("[[A]] if
Attempt A is better, "), do not count.

Every step is linear in the reply: think tags are found by one scan for two literals, and the verdict patterns have
no nested or overlapping quantifiers."""

from __future__ import annotations

import re

__all__ = ["parse_verdict", "parse_score", "strip_reasoning", "labels_named", "VERDICT_OUTCOME"]

_PAIRWISE = re.compile(r"\[\[\s*(A|B|TIE)\s*\]\]", re.IGNORECASE)
_POINTWISE = re.compile(r"\[\[\s*(1(?:\.0)?|0\.5|0(?:\.0)?)\s*\]\]")
_THINK_TAG = re.compile(r"<(/?)think>", re.IGNORECASE)
_LINE_BREAK = re.compile(r"[\n\r\x0b\x0c\x1c-\x1e\x85\u2028\u2029]")  # what str.splitlines() splits on
_DECORATION = re.compile(r"[\s*_`.!)\"']*")  # what may follow the verdict on its line
_MAX_CHARS = 200_000  # of the answer (after the reasoning) searched for the verdict

VERDICT_OUTCOME = {"A": 1.0, "B": 0.0, "TIE": 0.5}


def strip_reasoning(raw: str) -> str | None:
    """The judge's answer without its ``<think>...</think>`` reasoning; None if the reasoning never closed (the
    judge ran out of tokens before answering). A reply that starts inside a think block (templates that open
    ``<think>`` in the prompt: its first tag is a ``</think>``) is cut at its last ``</think>``."""
    tags = [(m.start(), m.end(), bool(m.group(1))) for m in _THINK_TAG.finditer(raw)]
    if not tags:
        return raw
    if tags[0][2]:  # began inside the reasoning
        last_close = max(end for _, end, closing in tags if closing)
        if any(not closing and start >= last_close for start, _, closing in tags):
            return None  # a new block opened after the last close and never closed
        return raw[last_close:]
    pieces: list[str] = []
    pos, inside = 0, False
    for start, end, closing in tags:  # a block runs from an opening tag to the next closing one
        if inside and closing:
            inside, pos = False, end
        elif not inside and not closing:
            pieces.append(raw[pos:start])
            inside = True
    if inside:
        return None
    pieces.append(raw[pos:])
    return "".join(pieces)


def labels_named(text: str, pointwise: bool = False) -> set:
    """The verdict tokens ``text`` names anywhere (a template's instructions): ``{"A", "B", "TIE"}`` or, pointwise,
    ``{0.0, 0.5, 1.0}``, as the parser would read them."""
    if pointwise:
        return {float(m) for m in _POINTWISE.findall(text)}
    return {m.upper() for m in _PAIRWISE.findall(text)}


def parse_verdict(raw_judge_output: str) -> str | None:
    """``"A"``, ``"B"`` or ``"TIE"`` from the judge's last verdict token after its reasoning; None if there is none."""
    return _parse(raw_judge_output, _PAIRWISE, str.upper)


def parse_score(raw_judge_output: str) -> float | None:
    """0.0, 0.5 or 1.0 from the judge's last score token after its reasoning; None if there is none."""
    return _parse(raw_judge_output, _POINTWISE, float)


def _parse(raw, pattern: re.Pattern, convert):
    if not isinstance(raw, str):
        return None
    answer = strip_reasoning(raw)
    if answer is None:
        return None
    answer = answer.rstrip()
    if len(answer) > _MAX_CHARS:  # the verdict ends the reply: keep the tail, from a line start
        answer = answer[-_MAX_CHARS:]
        first_break = _LINE_BREAK.search(answer)
        answer = answer[first_break.end() :] if first_break else ""
    return _last_line_token(answer, pattern, convert)


def _last_line_token(answer: str, pattern: re.Pattern, convert):
    """The token that ends the last non-empty line; None if that line has none, has something other than decoration
    after it, or holds two different tokens (an echoed instruction "[[A]] if A is better, [[B]] if ...")."""
    for line in reversed(answer.splitlines()):
        if not line.strip():
            continue
        matches = list(pattern.finditer(line))
        if not matches or len({convert(m.group(1)) for m in matches}) != 1:
            return None
        if not _DECORATION.fullmatch(line, matches[-1].end()):
            return None
        return convert(matches[-1].group(1))
    return None
