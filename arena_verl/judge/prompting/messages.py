"""The chat messages a model judge is sent: a template filled with the sanitised problem, traces and reference."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable

from arena_verl.judge.prompting.hygiene import new_delimiter, sanitize_trace
from arena_verl.judge.prompting.templates import fill_template, load_template

__all__ = ["build_pairwise_messages", "build_pointwise_messages"]

_REFERENCE_TOKENS = 512  # budget of the reference answer (a value, or a short solution)


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
    (see :func:`~.hygiene.new_delimiter`) so that the calls of a group share a cacheable prefix.
    ``count_tokens`` and ``special_tokens`` describe the judge's tokenizer when it is known (see
    :func:`~arena_verl.judge.prompting.hygiene.sanitize_trace`).
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
        reference_text = clean(str(reference), _REFERENCE_TOKENS)
        values["reference_block"] = f"## Reference answer (from the problem's author)\n{reference_text}\n\n"
    else:
        values["reference_block"] = ""
    return [{"role": "user", "content": fill_template(load_template(template), values)}]
