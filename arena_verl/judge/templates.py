"""Judge prompt templates: the built-in ones, a user's template file, and which one a sample gets.

A template is a text file with the placeholders ``{problem}``, ``{first}``, ``{second}`` (pairwise) or ``{trace}``
(pointwise), ``{tag}`` (the random delimiter of this call) and ``{reference_block}``; any other brace is left as it
is, so LaTeX in a template needs no escaping. The built-in templates live in ``templates/`` (package data); a user's
template is a path in ``reward.arena.judge.pairwise_template`` / ``pointwise_template``.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

from arena_verl.core.sources import classify_source

__all__ = ["TEMPLATES", "TEMPLATE_DIR", "check_judge_templates", "fill_template", "load_template", "task_of"]

TEMPLATE_DIR = Path(__file__).resolve().parent / "templates"
TEMPLATES = {
    "math": "pairwise_math.txt",
    "code": "pairwise_code.txt",
    "generic": "pairwise_generic.txt",
    "pointwise": "pointwise_proof.txt",
}
_PLACEHOLDER = re.compile(r"\{(problem|first|second|trace|tag|reference_block)\}")


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


def fill_template(template: str, values: dict[str, str]) -> str:
    """``template`` with each placeholder replaced by its value, in one pass (a value is never itself filled)."""
    return _PLACEHOLDER.sub(lambda m: values[m.group(1)], template)
