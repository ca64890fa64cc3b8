"""Trace hygiene: a trace (or the problem, or the reference) made safe to show a judge.

Applied to every text before it is shown:
- bytes are decoded as UTF-8 with replacement, lone surrogates become U+FFFD, every Unicode line break (``\\r``,
  ``\\r\\n``, ``\\v``, ``\\f``, U+0085, U+2028, U+2029, ...) becomes ``\\n``, other control characters and the invisible
  Unicode tag characters (U+E0000-U+E007F) are dropped;
- long traces keep their head and tail within a token budget (:mod:`arena_verl.judge.prompting.budget`), with a visible
  ``[... N characters omitted ...]``;
- what a trace could use to talk to the judge is neutralised: verdict-like tokens (every ``[[`` / ``]]`` gets a
  space), ``<think>`` and trace-like tags and chat-template special tokens (``<|im_start|>``, ``<｜User｜>``,
  ``[INST]``, ``<start_of_turn>``, ``</s>``, the judge tokenizer's own special tokens when the caller passes them)
  have their brackets turned into parentheses, and the templates' section headers (``## Attempt B``) are escaped.
  Detection runs on a normalised copy (:mod:`arena_verl.judge.prompting.detection_copy`), so look-alikes (``［［A］］``,
  ``[\\u200b[A]]``) are caught; the edits are made in the original text;
- every step is linear in the input, which is first cut to ``16 * max_tokens`` characters, so no trace can stall
  the referee's event loop;
- traces are wrapped in ``<trace-XXXXXXXXXXXXXXXX>`` tags with a random suffix a trace cannot guess
  (:func:`new_delimiter`): fresh per call by default, one per group when the referee asks (so that a group's calls
  share a cacheable prompt prefix); tags and bare occurrences of the delimiter inside a trace are neutralised as well.
"""

from __future__ import annotations

import functools
import re
import secrets
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable

from arena_verl.judge.prompting.budget import approx_tokens, fit_within
from arena_verl.judge.prompting.detection_copy import DetectionCopy, Edits, detect_form, is_blank

__all__ = ["EMPTY", "check_delimiter", "new_delimiter", "sanitize_trace", "special_token_strings"]

EMPTY = "(empty response)"

# --- cleaning (every pattern is a single character class or a literal: linear) ---
_LINE_BREAK = re.compile(r"\r\n?|[\x0b\x0c\x1c-\x1e\x85\u2028\u2029]")  # what str.splitlines() splits on
_DROPPED = re.compile(r"[\x00-\x08\x0e-\x1b\x1f\x7f-\x84\x86-\x9f\U000e0000-\U000e007f]")
_SURROGATE = re.compile("[\ud800-\udfff]")
_CONTINUATION_BYTES = bytes(range(0x80, 0xC0))

# --- detection on the normalised copy ---
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
        check_delimiter(delimiter)
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
    out = fit_within(_clean(head), _clean(tail), omitted, max_tokens, count, rules.neutralize)
    return EMPTY if is_blank(out) else out


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


def check_delimiter(delimiter: str) -> None:
    """A ``ValueError`` unless ``delimiter`` can be a tag name no trace text can blend into."""
    if not delimiter or len(delimiter) > 128 or re.search(r"[\s<>\[\]{}]", delimiter):
        raise ValueError(f"judge delimiter {delimiter!r}: 1-128 characters, no whitespace or brackets")


# --- what is neutralised ---


class _Rules:
    """The neutralisation rules for one set of extra special tokens and one delimiter."""

    def __init__(self, specials: frozenset[str], delimiter: str | None):
        self.angle_names: set[str] = set()
        self.square_names: set[str] = set()
        literals = set(_DEFAULT_LITERALS)
        longest = 0
        for token in specials:
            form = "".join(detect_form(c) if not c.isascii() else c for c in token)
            cores = _CORE.findall(form)
            for core in cores:
                (self.angle_names if core[0] == "<" else self.square_names).add(_canonical(core[1:-1]).strip("/"))
                longest = max(longest, len(core))
            if not cores and len(form) >= 2 and not re.search(r"\s", form) and re.search(r"[<>\[\]|{}~]", form):
                literals.add(form)
        if delimiter is not None:
            form = "".join(detect_form(c) if not c.isascii() else c for c in delimiter)
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
        copy = DetectionCopy(text)
        norm = copy.text
        edits = Edits(copy)
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


def _tags(norm: str, brackets: re.Pattern, opener: str, is_special, limit: int, edits: Edits) -> None:
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
