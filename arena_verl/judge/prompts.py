"""Judge prompts: templates, and traces made safe to show a judge.

A template is a text file with the placeholders ``{problem}``, ``{first}``, ``{second}`` (pairwise) or ``{trace}``
(pointwise), ``{tag}`` (the random delimiter of this call) and ``{reference_block}``; any other brace is left as it
is, so LaTeX in a template needs no escaping. The built-in templates live in ``templates/``; a user's template is
a path in ``reward.arena.judge.pairwise_template`` / ``pointwise_template``.

Trace hygiene, applied to every trace (and to the problem and the reference) before it is shown:
- bytes are decoded as UTF-8 with replacement, lone surrogates become U+FFFD, every Unicode line break (``\\r``,
  ``\\r\\n``, ``\\v``, ``\\f``, U+0085, U+2028, U+2029, ...) becomes ``\\n``, other control characters and the invisible
  Unicode tag characters (U+E0000-U+E007F) are dropped;
- long traces keep their head and tail within a token budget, with a visible ``[... N characters omitted ...]``;
  without a tokenizer a token is counted as one UTF-8 byte, which never under-counts a byte-level BPE;
- what a trace could use to talk to the judge is neutralised: verdict-like tokens (every ``[[`` / ``]]`` gets a
  space), ``<think>`` and trace-like tags and chat-template special tokens (``<|im_start|>``, ``<｜User｜>``,
  ``[INST]``, ``<start_of_turn>``, ``</s>``, the judge tokenizer's own special tokens when the caller passes them)
  have their brackets turned into parentheses, and the templates' section headers (``## Attempt B``) are escaped.
  Detection runs on a normalised copy (NFKC per character, invisible characters such as zero-width spaces, word
  joiners, soft hyphens and combining marks removed, whitespace runs collapsed), so look-alikes (``［［A］］``,
  ``[\\u200b[A]]``) are caught; the edits are made in the original text, so the mathematics the judge reads is not
  altered (``x²`` stays ``x²``);
- every step is linear in the input, which is first cut to ``16 * max_tokens`` characters, so no trace can stall
  the referee's event loop;
- traces are wrapped in ``<trace-XXXXXXXXXXXXXXXX>`` tags with a random suffix a trace cannot guess: fresh per call
  by default, one per group when the referee asks (so that a group's calls share a cacheable prompt prefix); tags
  and bare occurrences of the delimiter inside a trace are neutralised as well.
"""

from __future__ import annotations

import functools
import re
import secrets
import threading
import unicodedata
from bisect import bisect_right
from collections import OrderedDict
from collections.abc import Callable, Iterable
from pathlib import Path

from arena_verl.core.sources import classify_source

__all__ = [
    "build_pairwise_messages",
    "build_pointwise_messages",
    "sanitize_trace",
    "truncate_middle",
    "approx_tokens",
    "special_token_strings",
    "load_template",
    "TEMPLATES",
    "task_of",
    "check_judge_templates",
    "new_delimiter",
]

TEMPLATE_DIR = Path(__file__).resolve().parent / "templates"
TEMPLATES = {
    "math": "pairwise_math.txt",
    "code": "pairwise_code.txt",
    "generic": "pairwise_generic.txt",
    "pointwise": "pointwise_proof.txt",
}
_PLACEHOLDER = re.compile(r"\{(problem|first|second|trace|tag|reference_block)\}")

EMPTY = "(empty response)"
_MARKER = "\n[... {} characters omitted ...]\n"

# --- cleaning (every pattern is a single character class or a literal: linear) ---
_LINE_BREAK = re.compile(r"\r\n?|[\x0b\x0c\x1c-\x1e\x85\u2028\u2029]")  # what str.splitlines() splits on
_DROPPED = re.compile(r"[\x00-\x08\x0e-\x1b\x1f\x7f-\x84\x86-\x9f\U000e0000-\U000e007f]")
_SURROGATE = re.compile("[\ud800-\udfff]")
_CONTINUATION_BYTES = bytes(range(0x80, 0xC0))

# --- detection on the normalised copy ---
_WHITESPACE_RUN = re.compile(r"\s{2,}")
_BRACKET_RUN = re.compile(r"\[{2,}|\]{2,}")
_ANGLES = re.compile(r"[<>]")
_SQUARES = re.compile(r"[\[\]]")
_HEADER = re.compile(
    r"^[^\S\n]*(#+)[^\S\n]*(?:attempt|response|problem|task|reference|system|user|assistant)",
    re.IGNORECASE | re.MULTILINE,
)
_CORE = re.compile(r"<[^<>]*>|\[[^\[\]]*\]")
_NUMBERED = re.compile(r"(?:unused|reserved|reserved_special_token|extra_id|special|control|placeholder)_?\d+")


def _names(text: str) -> frozenset[str]:
    return frozenset(text.split())


_BARS = frozenset("|│∣ǀ❘")  # after NFKC, full-width ｜ is | and half-width ￨ is │
# Tag names of chat templates, reasoning blocks and tool calls (compared case-insensitively, without whitespace and
# without a leading or trailing slash). Anything of the form <|...|> (and DeepSeek's <｜...｜>) is covered generically.
_ANGLE_NAMES = _names(
    """s bos eos eot eom pad unk mask sep cls sop eop sys im_start im_end im_sep endoftext startoftext
    start_of_turn end_of_turn start_of_image end_of_image image video audio think thinking thought reasoning
    tool_call tool_calls tool_response tools arg_key arg_value fim_prefix fim_middle fim_suffix fim_pad file_sep
    repo_name reponame filename gh_stars issue_start issue_comment issue_closed jupyter_start jupyter_text
    jupyter_code jupyter_output jupyter_script empty_output commit_before commit_msg commit_after"""
)
_ANGLE_NAMES_CASED = frozenset({"PRE", "SUF", "MID", "EOT"})  # CodeLlama infilling; <pre> is HTML
_SQUARE_NAMES = _names(
    """inst sys system_prompt available_tools tool_calls tool_results tool_content think img img_break img_end
    prefix middle suffix args call_id gmask smask mask pad cls sep unk bos eos"""
)
# Special tokens with no bracketed core: MiniMax role markers, Falcon's section tokens.
_DEFAULT_LITERALS = frozenset({"]~!b[", "]~b]", "[e~["}) | frozenset(
    f">>{name}<<"
    for name in _names("TITLE ABSTRACT INTRODUCTION SUMMARY COMMENT ANSWER QUESTION DOMAIN PREFIX SUFFIX MIDDLE")
)
_MIN_TAG_LIMIT = 128  # longest tag content (whitespace runs count as one character) that is examined

# --- the normalised copy ---
_FORM: dict[str, str] = {}  # character -> its detection form (NFKC, invisible characters removed)
_ONE_TO_ONE: dict[int, str] = {}  # characters whose form is one other character, for str.translate
_VARIABLE: set[str] = set()  # characters whose form is empty (invisible) or longer than one character
_FORM_CACHE_MAX = 200_000
_DEFAULT_IGNORABLE = (
    (0x00AD, 0x00AD), (0x034F, 0x034F), (0x061C, 0x061C), (0x115F, 0x1160), (0x17B4, 0x17B5), (0x180B, 0x180F),
    (0x200B, 0x200F), (0x202A, 0x202E), (0x2060, 0x206F), (0x3164, 0x3164), (0xFE00, 0xFE0F), (0xFEFF, 0xFEFF),
    (0xFFA0, 0xFFA0), (0xFFF0, 0xFFF8), (0x1BCA0, 0x1BCA3), (0x1D173, 0x1D17A), (0xE0000, 0xE0FFF),
)  # fmt: skip


def task_of(data_source: str, math_sources: tuple[str, ...], ability: str | None = None) -> str:
    """Which pairwise template a sample's ``data_source`` gets: ``math``, ``code`` or ``generic``
    (:func:`arena_verl.core.sources.classify_source`'s rule)."""
    return classify_source(data_source, ability, math_sources=math_sources).template


def check_judge_templates(judge) -> None:
    """A model-backed judge's templates (``reward.arena.judge.*_template``) can be read and have their placeholders;
    else a ``ValueError`` naming the key. Called at start-up, right after the settings are read."""
    if judge.backend == "simulated":
        return
    if judge.pairwise_template is not None:
        _check_template("judge.pairwise_template", judge.pairwise_template, ("{first}", "{second}"))
    _check_template("judge.pointwise_template", judge.pointwise_template, ("{trace}",))


def _check_template(key: str, name: str, needed: tuple[str, ...]) -> None:
    try:
        text = load_template(name)
    except ValueError as exc:
        raise ValueError(f"reward.arena.{key}: {exc}") from None
    missing = [p for p in needed if p not in text]
    if missing:
        kind = key.split(".")[-1][: -len("_template")]
        raise ValueError(f"reward.arena.{key}={name!r} lacks {missing}: it is not a {kind} template")


@functools.lru_cache(maxsize=32)
def load_template(name_or_path: str) -> str:
    """A built-in template by name (``math``, ``code``, ``generic``, ``pointwise``) or a template file's path."""
    path = TEMPLATE_DIR / TEMPLATES[name_or_path] if name_or_path in TEMPLATES else Path(name_or_path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ValueError(f"judge template {name_or_path!r} cannot be read: {exc}") from None
    found = set(_PLACEHOLDER.findall(text))
    needed = {"tag", "problem"} | ({"trace"} if "trace" in found else {"first", "second"})
    if not needed <= found:
        raise ValueError(f"judge template {name_or_path!r} lacks the placeholders {sorted(needed - found)}")
    return text


def approx_tokens(text: str) -> int:
    """The token count assumed without a tokenizer: UTF-8 bytes. A byte-level BPE never makes more tokens than
    bytes (merges only shrink the count) and SentencePiece with byte fallback neither, so a trace cut to this budget
    fits the real one whatever its script (emoji, CJK extensions, random punctuation)."""
    return len(text.encode("utf-8", "surrogatepass"))


def truncate_middle(text: str, max_tokens: int, count_tokens: Callable[[str], int] | None = None) -> str:
    """Keep the head and the tail of ``text`` within ``max_tokens`` (see :func:`approx_tokens` without a
    tokenizer), with a visible marker where the middle was cut."""
    return _fit(text, "", 0, max(1, int(max_tokens)), count_tokens or approx_tokens, _identity)


def _identity(text: str) -> str:
    return text


def _fit(head: str, tail: str, omitted: int, max_tokens: int, count: Callable[[str], int], fix) -> str:
    """``fix(head + marker + tail)`` within ``max_tokens``: ``head`` and ``tail`` surround a middle of ``omitted``
    characters already cut (none: ``tail`` is empty). More is cut from the middle while the result is too long; each
    candidate is ``fix``-ed (neutralised) before it is counted, so the seam cannot form anything new and the budget
    holds for what the judge sees. Candidates shrink geometrically: linear in all."""
    out = head + _MARKER.format(omitted) + tail if omitted else head + tail
    total = count(out)  # before neutralising: a text far over the budget is cut before the costlier pass
    if total <= max_tokens:
        out = fix(out)
        total = count(out)
        if total <= max_tokens:
            return out
    if not omitted:
        half = len(head) // 2
        head, tail = head[:half], head[half:]
    keep = min(len(head), len(tail))
    while keep > 0:
        keep = max(0, min(int(keep * max_tokens / max(total, 1) * 0.98), keep - 1 - keep // 50))
        cut = omitted + len(head) - keep + len(tail) - keep
        out = fix(head[:keep] + _MARKER.format(cut) + tail[len(tail) - keep :])
        total = count(out)
        if total <= max_tokens:
            break
    return out


def special_token_strings(tokenizer) -> frozenset[str]:
    """The special tokens of a Hugging Face tokenizer (its named special tokens and every added token marked special),
    for ``special_tokens=`` of :func:`sanitize_trace` and the message builders."""
    found = set(getattr(tokenizer, "all_special_tokens", None) or ())
    for token in (getattr(tokenizer, "added_tokens_decoder", None) or {}).values():
        if getattr(token, "special", False):
            found.add(getattr(token, "content", token))
    return frozenset(t for t in found if isinstance(t, str) and t.strip())


def sanitize_trace(
    text: str | bytes,
    max_tokens: int = 4096,
    count_tokens: Callable[[str], int] | None = None,
    *,
    special_tokens: Iterable[str] | None = None,
    delimiter: str | None = None,
) -> str:
    """Make a trace safe to show a judge (see the module docstring).

    ``count_tokens`` is the judge tokenizer's count (default: UTF-8 bytes, an upper bound). ``special_tokens`` are the
    judge tokenizer's special-token strings (:func:`special_token_strings`), neutralised on top of the common chat
    template families. ``delimiter`` is the tag around the traces of this call: tags and bare occurrences of it in
    the trace are neutralised too.
    """
    specials = frozenset(special_tokens) if special_tokens else frozenset()
    if delimiter is not None:
        _check_delimiter(delimiter)
    if isinstance(text, (bytearray, memoryview)):
        text = bytes(text)
    elif text is None:
        text = ""
    elif not isinstance(text, (str, bytes)):
        text = str(text)
    key = (text, int(max_tokens), count_tokens, specials, delimiter)
    cacheable = len(text) <= _CACHE_MAX_CHARS
    if cacheable:
        try:
            with _CACHE_LOCK:
                _CACHE.move_to_end(key)
                return _CACHE[key]
        except (KeyError, TypeError):  # TypeError: an unhashable count_tokens
            pass
    out = _sanitize(text, max(1, int(max_tokens)), count_tokens or approx_tokens, _rules(specials, delimiter))
    if cacheable:
        try:
            with _CACHE_LOCK:
                _CACHE[key] = out
                while len(_CACHE) > _CACHE_SIZE:
                    _CACHE.popitem(last=False)
        except TypeError:
            pass
    return out


# A trace is shown in many calls (every comparison it takes part in): remember the last results.
_CACHE: OrderedDict = OrderedDict()
_CACHE_LOCK = threading.Lock()
_CACHE_SIZE = 64
_CACHE_MAX_CHARS = 1 << 18


def _sanitize(text: str | bytes, max_tokens: int, count: Callable[[str], int], rules: _Rules) -> str:
    cap = 16 * max_tokens + 256  # characters any regex sees; the token budget is enforced after cleaning
    head, tail, omitted = _bounded(text, cap)
    out = _fit(_clean(head), _clean(tail), omitted, max_tokens, count, rules.neutralize)
    return EMPTY if _blank(out) else out


def _bounded(text: str | bytes, cap: int) -> tuple[str, str, int]:
    """At most ``cap`` characters of ``text``: (head, tail, characters omitted between them)."""
    half = cap // 2
    if isinstance(text, bytes):
        if len(text) <= 4 * cap:
            text = text.decode("utf-8", errors="replace")
        else:  # decode only what can be kept: a character is at most 4 bytes
            head = text[: 4 * half].decode("utf-8", errors="replace")
            tail = text[-4 * half :].decode("utf-8", errors="replace")
            middle = len(text[4 * half : -4 * half].translate(None, _CONTINUATION_BYTES))  # about its characters
            return head[:half], tail[-half:], middle + len(head) - half + len(tail) - half
    if len(text) <= cap:
        return text, "", 0
    return text[:half], text[-half:], len(text) - 2 * half


def _clean(text: str) -> str:
    text = _LINE_BREAK.sub("\n", text)
    text = _DROPPED.sub("", text)
    return text if text.isascii() else _SURROGATE.sub("\ufffd", text)


def _check_delimiter(delimiter: str) -> None:
    if not delimiter or len(delimiter) > 128 or re.search(r"[\s<>\[\]{}]", delimiter):
        raise ValueError(f"judge delimiter {delimiter!r}: 1-128 characters, no whitespace or brackets")


# --- the normalised copy and its map back to the original ---


def _invisible(ch: str) -> bool:
    if unicodedata.category(ch) in ("Cf", "Mn", "Me"):
        return True
    cp = ord(ch)
    return any(lo <= cp <= hi for lo, hi in _DEFAULT_IGNORABLE)


def _detect_form(ch: str) -> str:
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
        _detect_form(ch)
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
            form = _detect_form(text[index])
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


def _blank(text: str) -> bool:
    """Nothing visible: only whitespace and invisible characters."""
    if text.isascii():
        return not text.strip()
    return all(ch.isspace() or not _detect_form(ch).strip() for ch in set(text))


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


class _Copy:
    """The detection copy of a text: normalised, then whitespace runs collapsed; ``locate`` maps back."""

    def __init__(self, text: str):
        normal, self._normal = _normalize(text)
        self.text, self._collapsed = _collapse(normal)

    def locate(self, p: int) -> tuple[int, int]:
        if self._collapsed is not None:
            p = self._collapsed.locate(p)[0]
        return (p, 0) if self._normal is None else self._normal.locate(p)


class _Edits:
    """Edits found on the detection copy, applied to the original text in one pass."""

    def __init__(self, copy: _Copy):
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
                form = _detect_form(text[index])
                cuts = [0, *sorted(self.split[index]), len(form)]
                pieces.append(" ".join(form[a:b] for a, b in zip(cuts, cuts[1:])))
            else:
                pieces.append(text[index])
            last = index + 1
        pieces.append(text[last:])
        return "".join(pieces)


# --- what is neutralised ---


class _Rules:
    """The neutralisation rules for one set of extra special tokens and one delimiter."""

    def __init__(self, specials: frozenset[str], delimiter: str | None):
        self.angle_names: set[str] = set()
        self.square_names: set[str] = set()
        literals = set(_DEFAULT_LITERALS)
        longest = 0
        for token in specials:
            form = "".join(_detect_form(c) if not c.isascii() else c for c in token)
            cores = _CORE.findall(form)
            for core in cores:
                (self.angle_names if core[0] == "<" else self.square_names).add(_canonical(core[1:-1]).strip("/"))
                longest = max(longest, len(core))
            if not cores and len(form) >= 2 and not re.search(r"\s", form) and re.search(r"[<>\[\]|{}~]", form):
                literals.add(form)
        if delimiter is not None:
            form = "".join(_detect_form(c) if not c.isascii() else c for c in delimiter)
            self.angle_names.add(_canonical(form))
            longest = max(longest, len(form) + 2)
            if len(form) >= 8:
                literals.add(form)
        self.limit = max(_MIN_TAG_LIMIT, longest + 8)
        self.literals = re.compile(f"(?={_trie(literals)})", re.IGNORECASE)

    def angle_special(self, content: str) -> bool:
        canonical = _canonical(content)
        if len(canonical) >= 2 and canonical[0] in _BARS and canonical[-1] in _BARS:  # <|...|>, <｜...｜>
            return True
        name = canonical.strip("/")
        words = content.replace("/", " ").split()  # <think reason="...">: the tag's name is its first word
        first = words[0].casefold() if words else ""
        return (
            name in _ANGLE_NAMES
            or name in self.angle_names
            or first in _ANGLE_NAMES
            or first in self.angle_names
            or name.startswith(("trace", "seed:"))
            or _NUMBERED.fullmatch(name) is not None
            or "".join(content.split()).strip("/") in _ANGLE_NAMES_CASED
        )

    def square_special(self, content: str) -> bool:
        name = _canonical(content).strip("/")
        return name in _SQUARE_NAMES or name in self.square_names or _NUMBERED.fullmatch(name) is not None

    def neutralize(self, text: str) -> str:
        copy = _Copy(text)
        norm = copy.text
        edits = _Edits(copy)
        for m in _BRACKET_RUN.finditer(norm):  # [[ and ]] (also runs: [[[ -> [ [ [)
            edits.split_run(*m.span())
        _tags(norm, _ANGLES, "<", self.angle_special, self.limit, edits)
        _tags(norm, _SQUARES, "[", self.square_special, self.limit, edits)
        for m in _HEADER.finditer(norm):
            edits.insert_before(m.start(1), "\\")
        for m in self.literals.finditer(norm):
            edits.split_before(m.start() + 1)
        return edits.apply(text)


@functools.lru_cache(maxsize=16)
def _rules(specials: frozenset[str], delimiter: str | None) -> _Rules:
    return _Rules(specials, delimiter)


def _canonical(content: str) -> str:
    return "".join(content.split()).casefold()


def _tags(norm: str, brackets: re.Pattern, opener: str, is_special, limit: int, edits: _Edits) -> None:
    """Neutralise bracketed special tokens, innermost first, in one pass: a closing bracket pairs with the latest
    open one; a special pair becomes ``( )`` (so an enclosing pair may now be a candidate: ``<|x<|y|>|>``), anything
    else between an open bracket and a close ends every pending candidate. Linear: each bracket is pushed and popped
    once, and a candidate's content is at most ``limit`` characters."""
    pending: list[int] = []
    closer = ">" if opener == "<" else "]"
    for m in brackets.finditer(norm):
        p = m.start()
        if norm[p] == opener:
            pending.append(p)
            continue
        if not pending:
            continue
        o = pending.pop()
        if p - o - 1 <= limit:
            content = norm[o + 1 : p]
            if opener in content:  # brackets inside are ones neutralised before
                content = content.replace(opener, "(").replace(closer, ")")
            if is_special(content):
                edits.replace_at(o, "(")
                edits.replace_at(p, ")")
                continue
        pending.clear()


def _trie(words: Iterable[str]) -> str:
    """A regex matching where any of ``words`` starts (the shortest word of a shared prefix is enough): a trie, so
    each position costs at most the longest word, whatever the number of words."""
    root: dict = {}
    for word in words:
        node = root
        for ch in word.lower():
            node = node.setdefault(ch, {})
        node[""] = {}

    def emit(node: dict) -> str:
        if "" in node:
            return ""
        alternatives = [re.escape(ch) + emit(child) for ch, child in sorted(node.items())]
        return alternatives[0] if len(alternatives) == 1 else "(?:" + "|".join(alternatives) + ")"

    return emit(root) if root else "(?!)"


def new_delimiter() -> str:
    """A random tag name for the markers around traces. It is drawn by the referee after the policy wrote the traces
    and never shown to the policy, so no trace can close or forge it."""
    return f"trace-{secrets.token_hex(8)}"


def _fill(template: str, values: dict[str, str]) -> str:
    return _PLACEHOLDER.sub(lambda m: values[m.group(1)], template)


def build_pairwise_messages(
    problem: str,
    first_trace: str | bytes,
    second_trace: str | bytes,
    *,
    reference: str | None = None,
    template: str | None = None,
    max_trace_tokens: int = 4096,
    count_tokens: Callable[[str], int] | None = None,
    delimiter: str | None = None,
    special_tokens: Iterable[str] | None = None,
) -> list[dict]:
    """Chat messages asking a judge which of two traces is better; ``first_trace`` is shown as A.

    ``template`` is a built-in name or a file path (default ``math``). ``reference`` is shown only when given.
    ``delimiter`` is the random tag around the traces: fresh per call by default; the referee passes one per group
    (see :func:`new_delimiter`) so that the calls of a group share a cacheable prefix. ``count_tokens`` and
    ``special_tokens`` describe the judge's tokenizer when it is known (see :func:`sanitize_trace`).
    """
    texts = {"problem": problem, "first": first_trace, "second": second_trace}
    return _messages(template or "math", texts, reference, max_trace_tokens, count_tokens, delimiter, special_tokens)


def build_pointwise_messages(
    problem: str,
    trace: str | bytes,
    *,
    reference: str | None = None,
    template: str | None = None,
    max_trace_tokens: int = 4096,
    count_tokens: Callable[[str], int] | None = None,
    delimiter: str | None = None,
    special_tokens: Iterable[str] | None = None,
) -> list[dict]:
    """Chat messages asking a judge to grade one trace 0, 0.5 or 1."""
    texts = {"problem": problem, "trace": trace}
    return _messages(
        template or "pointwise", texts, reference, max_trace_tokens, count_tokens, delimiter, special_tokens
    )


def _messages(template, texts, reference, max_trace_tokens, count_tokens, delimiter, special_tokens) -> list[dict]:
    tag = delimiter or new_delimiter()
    specials = frozenset(special_tokens) if special_tokens else None
    clean = functools.partial(sanitize_trace, count_tokens=count_tokens, special_tokens=specials, delimiter=tag)
    values = dict.fromkeys(("problem", "first", "second", "trace"), "")
    values.update({name: clean(text, max_trace_tokens) for name, text in texts.items()})
    values["tag"] = tag
    if reference is not None:
        values["reference_block"] = f"## Reference answer (from the problem's author)\n{clean(str(reference), 512)}\n\n"
    else:
        values["reference_block"] = ""
    return [{"role": "user", "content": _fill(load_template(template), values)}]
