"""Judge prompts: templates, and traces made safe to show a judge.

A template is a text file with the placeholders ``{problem}``, ``{first}``, ``{second}`` (pairwise) or ``{trace}``
(pointwise), ``{tag}`` (the random delimiter of this call) and ``{reference_block}``; any other brace is left as it
is, so LaTeX in a template needs no escaping. The built-in templates live in ``templates/``; a user's template is
a path in ``reward.arena.judge.pairwise_template`` / ``pointwise_template``.

Trace hygiene, applied to every trace before it is shown:
- bytes are decoded as UTF-8 with replacement, control characters other than newline and tab are dropped;
- long traces keep their head and tail within a token budget, with a visible ``[... N characters omitted ...]``;
- verdict-like tokens (``[[A]]``, ``[[TIE]]``, ``[[1]]``), ``<think>`` tags and the templates' section headers are
  neutralised, so a trace can neither cast a verdict nor fake the prompt's structure;
- traces are wrapped in ``<trace-XXXXXXXXXXXXXXXX>`` tags with a random suffix a trace cannot guess: fresh per call
  by default, one per group when the referee asks (so that a group's calls share a cacheable prompt prefix).
"""

from __future__ import annotations

import functools
import re
import secrets
from collections.abc import Callable
from pathlib import Path

__all__ = [
    "build_pairwise_messages",
    "build_pointwise_messages",
    "sanitize_trace",
    "truncate_middle",
    "load_template",
    "TEMPLATES",
    "task_of",
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
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_DOUBLE_BRACKETS = re.compile(r"\[\s*\[|\]\s*\]")
_THINK_TAG = re.compile(r"<\s*/?\s*think\s*>", re.IGNORECASE)
_TRACE_TAG = re.compile(r"<\s*/?\s*trace[-_]?[0-9a-f]*\s*>", re.IGNORECASE)
_SECTION = re.compile(r"^(\s*)(#+)(\s*(?:attempt|response|problem|task|reference)\b)", re.IGNORECASE | re.MULTILINE)
_CODE_SOURCES = ("code", "apps", "taco", "livecodebench", "humaneval", "mbpp", "leetcode")


def task_of(data_source: str, math_sources: tuple[str, ...]) -> str:
    """Which pairwise template a sample's ``data_source`` gets: ``math``, ``code`` or ``generic``."""
    lowered = data_source.lower()
    if "*" in math_sources or any(s.lower() in lowered for s in math_sources):
        return "math"
    if any(s in lowered for s in _CODE_SOURCES):
        return "code"
    return "generic"


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


def truncate_middle(text: str, max_tokens: int, count_tokens: Callable[[str], int] | None = None) -> str:
    """Keep the head and the tail of ``text`` within ``max_tokens`` (about 4 characters a token without a
    tokenizer), with a visible marker where the middle was cut."""
    count = count_tokens or _approx_tokens
    if count(text) <= max_tokens:
        return text
    keep = min(len(text), 4 * max_tokens)
    while True:
        half = keep // 2
        head, tail = text[:half], text[len(text) - half :]
        candidate = f"{head}\n[... {len(text) - 2 * half} characters omitted ...]\n{tail}"
        if count(candidate) <= max_tokens or keep <= 32:
            return candidate
        keep = int(keep * 0.8)


def _approx_tokens(text: str) -> int:
    return (len(text) + 3) // 4


def sanitize_trace(text: str | bytes, max_tokens: int = 4096, count_tokens: Callable[[str], int] | None = None) -> str:
    """Make a trace safe to show a judge (see the module docstring)."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", errors="replace")
    text = str(text)
    if len(text) > 16 * max_tokens:  # cheap first cut so the regexes below stay linear in the budget
        text = truncate_middle(text, 4 * max_tokens)
    text = _CONTROL.sub("", text)
    text = _DOUBLE_BRACKETS.sub(lambda m: m.group(0)[0] + " " + m.group(0)[-1], text)
    text = _THINK_TAG.sub(lambda m: m.group(0).replace("<", "(").replace(">", ")"), text)
    text = _TRACE_TAG.sub(lambda m: m.group(0).replace("<", "(").replace(">", ")"), text)
    text = _SECTION.sub(lambda m: f"{m.group(1)}\\{m.group(2)}{m.group(3)}", text)
    text = truncate_middle(text, max_tokens, count_tokens)
    return text if text.strip() else "(empty response)"


def new_delimiter() -> str:
    """A random tag name for the markers around traces. It is drawn by the referee after the policy wrote the traces
    and never shown to the policy, so no trace can close or forge it."""
    return f"trace-{secrets.token_hex(8)}"


def _fill(template: str, values: dict[str, str]) -> str:
    return _PLACEHOLDER.sub(lambda m: values[m.group(1)], template)


def _reference_block(reference: str | None) -> str:
    if reference is None:
        return ""
    return f"## Reference answer (from the problem's author)\n{sanitize_trace(str(reference), 512)}\n\n"


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
) -> list[dict]:
    """Chat messages asking a judge which of two traces is better; ``first_trace`` is shown as A.

    ``template`` is a built-in name or a file path (default ``math``). ``reference`` is shown only when given.
    ``delimiter`` is the random tag around the traces: fresh per call by default; the referee passes one per group
    (see :func:`new_delimiter`) so that the calls of a group share a cacheable prefix.
    """
    texts = {"problem": problem, "first": first_trace, "second": second_trace}
    return _messages(template or "math", texts, reference, max_trace_tokens, count_tokens, delimiter)


def build_pointwise_messages(
    problem: str,
    trace: str | bytes,
    *,
    reference: str | None = None,
    template: str | None = None,
    max_trace_tokens: int = 4096,
    count_tokens: Callable[[str], int] | None = None,
    delimiter: str | None = None,
) -> list[dict]:
    """Chat messages asking a judge to grade one trace 0, 0.5 or 1."""
    texts = {"problem": problem, "trace": trace}
    return _messages(template or "pointwise", texts, reference, max_trace_tokens, count_tokens, delimiter)


def _messages(template, texts, reference, max_trace_tokens, count_tokens, delimiter) -> list[dict]:
    values = dict.fromkeys(("problem", "first", "second", "trace"), "")
    values.update({name: sanitize_trace(text, max_trace_tokens, count_tokens) for name, text in texts.items()})
    values["tag"] = delimiter or new_delimiter()
    values["reference_block"] = _reference_block(reference)
    return [{"role": "user", "content": _fill(load_template(template), values)}]
