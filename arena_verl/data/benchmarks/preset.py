"""What a benchmark preset is: its description (:class:`Preset`), the options the command line can change
(:class:`Options`), what a conversion reports (:class:`Report`), and the provenance every record carries."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from arena_verl.data.qa import Row, is_missing

__all__ = ["ID_ALIASES", "PRESET_OPTIONS", "Options", "Preset", "Report", "source_id", "with_provenance"]

ID_ALIASES = ("id", "problem_idx", "ID", "Record ID", "question_id", "unique_id")
# Options only some presets read (field: flag); one given to a preset that does not read it is refused.
PRESET_OPTIONS = {"since": "--since", "public_tests_only": "--public-tests-only", "reprompt": "--reprompt"}


@dataclass(frozen=True)
class Options:
    """What the command line can change; every preset reads the fields that concern it."""

    split: str | None = None  # default: the preset's (test for evaluation sets, train for the mix)
    seed: int = 0  # GPQA: seeds the shuffle of the four options
    question_key: str | None = None  # default: the first of QUESTION_ALIASES found
    answer_key: str | None = None  # default: the first of ANSWER_ALIASES found
    data_source: str | None = None  # default: the preset's
    since: str | None = None  # LiveCodeBench: keep problems with contest_date >= since (ISO date)
    public_tests_only: bool = False  # LiveCodeBench: ignore private_test_cases
    reprompt: bool = False  # train_mix in verl's layout: rebuild the prompt as problem + MATH_SUFFIX


@dataclass(frozen=True)
class Preset:
    """A benchmark: where its file comes from, which columns it needs, and how a row becomes verl records."""

    name: str
    source: str  # the hub id of the public set (provenance only: nothing is downloaded)
    columns: str  # the expected columns, for ``prepare.py list`` and error messages
    data_source: str
    ability: str
    split: str
    build: Callable[[Preset, list[Row], Options], list[dict]] = field(repr=False)
    reads: tuple[str, ...] = ()  # the PRESET_OPTIONS it reads


@dataclass
class Report:
    """What ``prepare`` wrote and what it left out."""

    rows: int
    data_source: str
    split: str
    dropped_duplicates: int = 0
    notes: list[str] = field(default_factory=list)


def source_id(row: Row) -> dict:
    """``{"source_id": <text>}`` from the first id column the row has, else ``{}``."""
    for alias in ID_ALIASES:
        if not is_missing(row.values.get(alias)):
            return {"source_id": str(row.values[alias])}
    return {}


def with_provenance(record: dict, preset: Preset, row: Row, **extra) -> dict:
    """``record`` with ``extra_info`` naming the benchmark, its source, the input row (its file's name and its
    number in it) and ``extra``."""
    record["extra_info"].update(
        benchmark=preset.name,
        source=preset.source,
        source_file=row.path.name,
        source_row=row.number,
        **source_id(row),
        **extra,
    )
    return record
