"""The detection copy of a text, on which trace hygiene looks for what a trace could use to talk to the judge.

The copy is the text normalised per character (NFKC, invisible characters such as zero-width spaces, word joiners,
soft hyphens and combining marks removed), then with each whitespace run collapsed to one character, so that
look-alikes (``［［A］］``, ``[\\u200b[A]]``) read as what they imitate. Positions found on the copy map back to the
original (:meth:`DetectionCopy.locate`), and :class:`Edits` applies what was found to the original text, so the
mathematics the judge reads is not altered (``x²`` stays ``x²``). Every step is linear in the text.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from bisect import bisect_right

__all__ = ["DetectionCopy", "Edits", "detect_form", "is_blank"]

_WHITESPACE_RUN = re.compile(r"\s{2,}")
_FORM: dict[str, str] = {}  # character -> its detection form (NFKC, invisible characters removed)
_ONE_TO_ONE: dict[int, str] = {}  # characters whose form is one other character, for str.translate
_VARIABLE: set[str] = set()  # characters whose form is empty (invisible) or longer than one character
_FORM_CACHE_MAX = 200_000
_DEFAULT_IGNORABLE = (
    (0x00AD, 0x00AD), (0x034F, 0x034F), (0x061C, 0x061C), (0x115F, 0x1160), (0x17B4, 0x17B5), (0x180B, 0x180F),
    (0x200B, 0x200F), (0x202A, 0x202E), (0x2060, 0x206F), (0x3164, 0x3164), (0xFE00, 0xFE0F), (0xFEFF, 0xFEFF),
    (0xFFA0, 0xFFA0), (0xFFF0, 0xFFF8), (0x1BCA0, 0x1BCA3), (0x1D173, 0x1D17A), (0xE0000, 0xE0FFF),
)  # fmt: skip


def _invisible(ch: str) -> bool:
    if unicodedata.category(ch) in ("Cf", "Mn", "Me"):
        return True
    cp = ord(ch)
    return any(lo <= cp <= hi for lo, hi in _DEFAULT_IGNORABLE)


def detect_form(ch: str) -> str:
    """The character as detection sees it: NFKC with invisible characters removed (may be empty or several)."""
    form = _FORM.get(ch)
    if form is None:
        form = "".join(c for c in unicodedata.normalize("NFKC", ch) if not _invisible(c))
        _FORM[ch] = form
        if len(form) != 1:
            _VARIABLE.add(ch)
        elif form != ch:
            _ONE_TO_ONE[ord(ch)] = form
    return form


class _Segments:
    """A map from positions of a derived text to positions of its source: linear segments (one character for one)
    and point segments (several derived characters from one source character, or one from several)."""

    __slots__ = ("starts", "sources", "linear")

    def __init__(self):
        self.starts: list[int] = []
        self.sources: list[int] = []
        self.linear: list[bool] = []

    def add(self, start: int, source: int, linear: bool) -> None:
        self.starts.append(start)
        self.sources.append(source)
        self.linear.append(linear)

    def locate(self, p: int) -> tuple[int, int]:
        """(source position, offset of ``p`` within the derived characters of that source character)."""
        i = bisect_right(self.starts, p) - 1
        if self.linear[i]:
            return self.sources[i] + p - self.starts[i], 0
        return self.sources[i], p - self.starts[i]


def _normalize(text: str) -> tuple[str, _Segments | None]:
    """NFKC per character with invisible characters removed; None for the map when positions did not move (ASCII,
    and any text whose characters each normalise to one character: full-width forms, CJK, emoji, most maths)."""
    if text.isascii():
        return text, None
    if len(_FORM) > _FORM_CACHE_MAX:  # an adversary cycling through code points: start over
        _FORM.clear()
        _ONE_TO_ONE.clear()
        _VARIABLE.clear()
    for ch in set(text).difference(_FORM):
        detect_form(ch)
    present = _VARIABLE.intersection(text)
    if not present:
        return text.translate(_ONE_TO_ONE), None
    pieces: list[str] = []
    segments = _Segments()
    pos = out = 0
    for run in _variable_runs(frozenset(present)).finditer(text):
        start, end = run.span()
        if start > pos:  # one character for one: translated in bulk
            segments.add(out, pos, True)
            pieces.append(text[pos:start].translate(_ONE_TO_ONE))
            out += start - pos
        for index in range(start, end):  # invisible (no form) or expanding (a form of several characters)
            form = detect_form(text[index])
            if form:
                segments.add(out, index, False)
                pieces.append(form)
                out += len(form)
        pos = end
    if pos < len(text):
        segments.add(out, pos, True)
        pieces.append(text[pos:].translate(_ONE_TO_ONE))
    if not segments.starts:  # only invisible characters
        segments.add(0, len(text), False)
    return "".join(pieces), segments


@functools.lru_cache(maxsize=64)
def _variable_runs(chars: frozenset[str]) -> re.Pattern:
    return re.compile("[" + "".join(re.escape(ch) for ch in sorted(chars)) + "]+")


def is_blank(text: str) -> bool:
    """Nothing visible: only whitespace and invisible characters."""
    if text.isascii():
        return not text.strip()
    return all(ch.isspace() or not detect_form(ch).strip() for ch in set(text))


def _collapse(text: str) -> tuple[str, _Segments | None]:
    """Each whitespace run becomes one space (one newline if it holds one)."""
    pieces: list[str] = []
    segments = _Segments()
    pos = out = 0
    for run in _WHITESPACE_RUN.finditer(text):
        start, end = run.span()
        if start > pos:
            segments.add(out, pos, True)
            pieces.append(text[pos:start])
            out += start - pos
        segments.add(out, start, False)
        pieces.append("\n" if "\n" in run.group() else " ")
        out += 1
        pos = end
    if not segments.starts:
        return text, None
    if pos < len(text):
        segments.add(out, pos, True)
        pieces.append(text[pos:])
    return "".join(pieces), segments


class DetectionCopy:
    """The detection copy of a text: normalised, then whitespace runs collapsed; ``locate`` maps back."""

    def __init__(self, text: str):
        normal, self._normal = _normalize(text)
        self.text, self._collapsed = _collapse(normal)

    def locate(self, p: int) -> tuple[int, int]:
        if self._collapsed is not None:
            p = self._collapsed.locate(p)[0]
        return (p, 0) if self._normal is None else self._normal.locate(p)


class Edits:
    """Edits found on the detection copy, applied to the original text in one pass."""

    def __init__(self, copy: DetectionCopy):
        self.copy = copy
        self.insert: dict[int, str] = {}  # text to insert before an original character
        self.replace: dict[int, str] = {}  # replacement of an original character
        self.split: dict[int, set[int]] = {}  # offsets where a space goes into an expanding character's form

    def insert_before(self, p: int, text: str) -> None:
        self._insert(self.copy.locate(p)[0], text)

    def _insert(self, index: int, text: str) -> None:
        present = self.insert.get(index)
        if present is None:
            self.insert[index] = text
        elif text not in present:
            self.insert[index] = present + text

    def split_before(self, p: int) -> None:
        """A space between the characters at ``p - 1`` and ``p`` of the detection copy."""
        before = self.copy.locate(p - 1)[0]
        index, offset = self.copy.locate(p)
        if before != index:
            self._insert(index, " ")
        else:  # both come from one character whose form has several (ligatures): spell the form out
            self.split.setdefault(index, set()).add(offset)

    def split_run(self, start: int, end: int) -> None:
        """A space between every two characters of ``start:end`` of the detection copy."""
        first, last = self.copy.locate(start)[0], self.copy.locate(end - 1)[0]
        if last - first == end - 1 - start:  # the run is contiguous in the original too (the usual case)
            for index in range(first + 1, last + 1):
                self._insert(index, " ")
        else:
            for p in range(start + 1, end):
                self.split_before(p)

    def replace_at(self, p: int, text: str) -> None:
        self.replace[self.copy.locate(p)[0]] = text

    def apply(self, text: str) -> str:
        if not (self.insert or self.replace or self.split):
            return text
        pieces: list[str] = []
        last = 0
        for index in sorted(self.insert.keys() | self.replace.keys() | self.split.keys()):
            pieces.append(text[last:index])
            pieces.append(self.insert.get(index, ""))
            if index in self.replace:
                pieces.append(self.replace[index])
            elif index in self.split:
                form = detect_form(text[index])
                cuts = [0, *sorted(self.split[index]), len(form)]
                pieces.append(" ".join(form[a:b] for a, b in zip(cuts, cuts[1:])))
            else:
                pieces.append(text[index])
            last = index + 1
        pieces.append(text[last:])
        return "".join(pieces)
