"""Judge prompt templates: the built-in ones, a user's template file, and which one a sample gets.

A template is a text file with the placeholders ``{problem}``, ``{first}``, ``{second}`` (pairwise) or ``{trace}``
(pointwise), never both kinds, ``{tag}`` (the random delimiter of this call) and ``{reference_block}``; any other
brace is left as it is, so LaTeX in a template needs no escaping. It asks for the verdict tokens the parser reads
(pairwise ``[[A]]``, ``[[B]]``, optionally ``[[TIE]]``; pointwise ``[[0]]``, ``[[1]]``, optionally ``[[0.5]]``): in
``verdict: probability`` mode the labels it names are the ones whose probabilities are read. The built-in templates
live in ``templates/`` (package data); a user's template is a path in ``reward.arena.judge.pairwise_template`` /
``pointwise_template``.
"""

from __future__ import annotations

import functools
import importlib
import re
from pathlib import Path

from arena_verl.backend_registry import backend_of
from arena_verl.core.sources import classify_source
from arena_verl.judge.verdicts.parsing import labels_named

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
    """A model-backed judge's templates (``reward.arena.judge.*_template``) can be read, are of their kind (the
    pairwise one shows ``{first}`` and ``{second}``, the pointwise one ``{trace}``) and ask for the verdict tokens
    the parser reads; else a ``ValueError`` naming the key. Called at start-up, right after the settings are read,
    and by every model-backed judge when it is built. The simulated and python judges use no template; for a python
    judge the function ``judge.callable`` names is imported instead (a missing module or function is the start-up
    error here, not a referee that falls back on every group)."""
    backend = backend_of(judge)
    if backend.preflight is not None:  # e.g. the python judge's function is imported
        module, _, attribute = backend.preflight.partition(":")
        getattr(importlib.import_module(module), attribute)(judge)
    if not backend.prompts:
        return
    if judge.pairwise_template is not None:
        _check_template("judge.pairwise_template", judge.pairwise_template, ("{first}", "{second}"), {"A", "B"})
    _check_template("judge.pointwise_template", judge.pointwise_template, ("{trace}",), {0.0, 1.0})


def _check_template(key: str, name: str, needed: tuple[str, ...], labels: set) -> None:
    kind = key.split(".")[-1][: -len("_template")]
    try:
        text = load_template(name)
    except ValueError as exc:
        raise ValueError(f"reward.arena.{key}: {exc}") from None
    missing = [p for p in needed if p not in text]
    if missing:
        raise ValueError(f"reward.arena.{key}={name!r} lacks {missing}: it is not a {kind} template")
    unnamed = labels - labels_named(text, pointwise=kind == "pointwise")
    if unnamed:
        tokens = ", ".join(f"[[{label:g}]]" if kind == "pointwise" else f"[[{label}]]" for label in sorted(unnamed))
        raise ValueError(
            f"reward.arena.{key}={name!r} never asks for {tokens}: the judge could not give a verdict the parser reads"
        )


@functools.lru_cache(maxsize=32)
def load_template(name_or_path: str) -> str:
    """A built-in template by name (``math``, ``code``, ``generic``, ``pointwise``) or a template file's path."""
    path = TEMPLATE_DIR / TEMPLATES[name_or_path] if name_or_path in TEMPLATES else Path(name_or_path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ValueError(f"judge template {name_or_path!r} cannot be read: {exc}") from None
    except UnicodeDecodeError as exc:
        raise ValueError(f"judge template {name_or_path!r} is not UTF-8 text (byte {exc.start})") from None
    found = set(_PLACEHOLDER.findall(text))
    if "trace" in found and found & {"first", "second"}:
        raise ValueError(
            f"judge template {name_or_path!r} holds both {{trace}} (pointwise) and {{first}}/{{second}} (pairwise): "
            "a template is one kind"
        )
    needed = {"tag", "problem"} | ({"trace"} if "trace" in found else {"first", "second"})
    if not needed <= found:
        raise ValueError(f"judge template {name_or_path!r} lacks the placeholders {sorted(needed - found)}")
    return text


def fill_template(template: str, values: dict[str, str]) -> str:
    """``template`` with each placeholder replaced by its value, in one pass (a value is never itself filled)."""
    return _PLACEHOLDER.sub(lambda m: values[m.group(1)], template)
