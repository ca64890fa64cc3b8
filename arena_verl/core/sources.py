"""What a sample's ``data_source`` (and, where the data has one, its ``ability``) makes it: one rule, used by the
reward manager (which verifier), the judge (which pairwise template), the evaluation (which scorer) and the recipes'
pre-flight (does verl's default scorer run the generated code).

The rule, first match wins. The source's name decides first (names match as case-insensitive substrings):

1. ``multiple_choice``: a source in ``multiple_choice_sources`` (``reward.arena.multiple_choice_data_sources``,
   default ``gpqa``);
2. ``math``: a source in ``math_sources`` (``reward.arena.math_data_sources``; ``*`` makes every source not
   matched above math, code included: the user said so);
3. ``code``: a source in :data:`CODE_SOURCES`;
4. a name that matches none of these: the row's ``ability`` (``multiple_choice``, ``math`` or ``code``), when the data
   has one;
5. ``unknown``: verl's own scorer decides (training); the evaluation cannot score it.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "KINDS",
    "CODE_SOURCES",
    "MATH_SOURCES",
    "MULTIPLE_CHOICE_SOURCES",
    "VERL_SANDBOX_SOURCES",
    "SourceKind",
    "classify_source",
]

KINDS = ("math", "multiple_choice", "code", "unknown")
# Defaults of reward.arena.math_data_sources and multiple_choice_data_sources (the settings declare them from here).
MATH_SOURCES = ("math", "gsm8k", "aime", "amc", "olympiad", "numina", "deepscaler")
MULTIPLE_CHOICE_SOURCES = ("gpqa",)
CODE_SOURCES = ("code", "livecodebench", "apps", "taco", "humaneval", "mbpp", "leetcode")  # "code": codecontests, ...
# The data_source values verl 0.9.1's default_compute_score scores by running the generated code (sandbox_fusion
# with reward.sandbox_fusion.url, else prime_code in a local process): exact names, verl's own list.
VERL_SANDBOX_SOURCES = frozenset({"codecontests", "apps", "codeforces", "taco"})
_TEMPLATE = {"math": "math", "code": "code"}  # the judge's pairwise template by kind; every other kind: generic


@dataclass(frozen=True)
class SourceKind:
    kind: str  # one of KINDS
    data_source: str

    @property
    def template(self) -> str:
        """The judge's built-in pairwise template: ``math``, ``code`` or ``generic``."""
        return _TEMPLATE.get(self.kind, "generic")

    @property
    def verifier(self) -> str:
        """Who scores it in training: ``math`` (math-verify), ``multiple_choice``, or ``verl`` (verl's scorer)."""
        return self.kind if self.kind in ("math", "multiple_choice") else "verl"

    @property
    def runs_code_in_verl(self) -> bool:
        """verl's default scorer executes the generated code for this source (it needs a sandbox)."""
        return self.data_source in VERL_SANDBOX_SOURCES


def _matches(source: str, patterns) -> bool:
    return any(p.lower() in source for p in patterns)


def classify_source(
    data_source: str,
    ability: str | None = None,
    *,
    math_sources: tuple[str, ...] = MATH_SOURCES,
    multiple_choice_sources: tuple[str, ...] = MULTIPLE_CHOICE_SOURCES,
) -> SourceKind:
    """The :class:`SourceKind` of a sample (the rule in the module docstring)."""
    name = str(data_source or "")
    source, ability = name.lower(), str(ability or "").lower()
    if _matches(source, multiple_choice_sources):
        kind = "multiple_choice"
    elif "*" in math_sources or _matches(source, math_sources):
        kind = "math"
    elif _matches(source, CODE_SOURCES):
        kind = "code"
    elif ability in ("multiple_choice", "math", "code"):
        kind = ability
    else:
        kind = "unknown"
    return SourceKind(kind, name)
