"""One data-source rule (arena_verl.core.sources) decides the verifier, the judge template, the evaluation kind and
the sandbox check: the consumers cannot disagree on a source."""

import pytest

from arena_verl.core.sources import KINDS, classify_source
from arena_verl.evaluation.scoring import benchmark_kind
from arena_verl.judge.prompting.templates import task_of
from arena_verl.settings import ArenaSettings

SOURCES = [
    ("aime2025", None, "math"),
    ("HuggingFaceH4/MATH-500", None, "math"),
    ("openai/gsm8k", None, "math"),
    ("gpqa_diamond", "math", "multiple_choice"),  # the source's name wins over a mislabelled ability
    ("anything", "multiple_choice", "multiple_choice"),
    ("livecodebench_v6", None, "code"),
    ("codecontests", None, "code"),
    ("codeforces", None, "code"),
    ("math_code_mix", None, "math"),  # the run's own math list is read before the code names
    ("livecodebench", "math", "code"),  # a name decides before the ability
    ("trivia", "code", "code"),
    ("trivia", "multiple_choice", "multiple_choice"),
    ("trivia", "chat", "unknown"),
    ("trivia", None, "unknown"),
    ("trivia", "math", "math"),
    ("", None, "unknown"),
]


@pytest.mark.parametrize(("source", "ability", "kind"), SOURCES)
def test_every_consumer_reads_a_source_the_same_way(source, ability, kind):
    settings = ArenaSettings()
    found = classify_source(
        source,
        ability,
        math_sources=settings.math_data_sources,
        multiple_choice_sources=settings.multiple_choice_data_sources,
    )
    assert found.kind == kind and found.kind in KINDS
    assert benchmark_kind(source, ability) == kind
    assert task_of(source, settings.math_data_sources, ability) == {"math": "math", "code": "code"}.get(kind, "generic")
    assert found.verifier == (kind if kind in ("math", "multiple_choice") else "verl")


def test_a_star_makes_every_source_math_but_multiple_choice():
    assert classify_source("trivia", math_sources=("*",)).kind == "math"
    assert classify_source("apps", math_sources=("*",)).kind == "math"  # as the reward manager has always read "*"
    assert classify_source("gpqa", math_sources=("*",)).kind == "multiple_choice"


def test_verl_runs_code_only_for_its_own_exact_source_names():
    assert classify_source("codecontests").runs_code_in_verl
    assert not classify_source("codecontests_v2").runs_code_in_verl  # verl matches exact names
    assert not classify_source("livecodebench").runs_code_in_verl  # code, but verl's default scorer does not run it


def test_the_settings_defaults_are_the_rule_s_defaults():
    from arena_verl.core import sources

    settings = ArenaSettings()
    assert settings.math_data_sources == sources.MATH_SOURCES
    assert settings.multiple_choice_data_sources == sources.MULTIPLE_CHOICE_SOURCES
