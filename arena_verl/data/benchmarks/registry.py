"""The presets by name (:data:`PRESETS`) and the driver that converts local files with one of them
(:func:`prepare`): read, build, drop repeats, limit, number, write."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from arena_verl.data.benchmarks.gpqa import GPQA_COLUMNS, build_gpqa
from arena_verl.data.benchmarks.livecodebench import LCB_COLUMNS, build_livecodebench, shadowed_functions
from arena_verl.data.benchmarks.math_presets import MATH_COLUMNS, build_math_benchmark, build_train_mix
from arena_verl.data.benchmarks.preset import PRESET_OPTIONS, Options, Preset, Report
from arena_verl.data.qa import DataError, contradiction_error, names, read_rows
from arena_verl.data.verl_layout import label, write_parquet

__all__ = ["DEFAULT_OPTIONS", "PRESETS", "prepare"]

DEFAULT_OPTIONS = Options()  # frozen: safe to share as a default argument


def _math_preset(name: str, source: str, data_source: str) -> Preset:
    return Preset(name, source, MATH_COLUMNS, data_source, "math", "test", build_math_benchmark)


PRESETS: dict[str, Preset] = {
    preset.name: preset
    for preset in (
        _math_preset("aime2024", "BytedTsinghua-SIA/AIME-2024", "aime2024"),
        _math_preset("aime2025", "MathArena/aime_2025", "aime2025"),
        _math_preset("aime2026", "MathArena/aime_2026", "aime2026"),
        _math_preset("beyondaime", "ByteDance-Seed/BeyondAIME", "beyondaime"),
        Preset(
            "gpqa_diamond",
            "Idavidrein/gpqa (config gpqa_diamond)",
            ", ".join(GPQA_COLUMNS),
            "gpqa_diamond",
            "multiple_choice",
            "test",
            build_gpqa,
        ),  # fmt: skip
        # verl 0.9.1's default_compute_score sends codecontests/apps/codeforces/taco to the sandbox scorer.
        Preset(
            "livecodebench_v6",
            "livecodebench/code_generation_lite (release_v6)",
            LCB_COLUMNS,
            "codecontests",
            "code",
            "test",
            build_livecodebench,
            reads=("since", "public_tests_only"),
        ),  # fmt: skip
        Preset(
            "train_mix",
            "a local math file (e.g. BytedTsinghua-SIA/DAPO-Math-17k)",
            MATH_COLUMNS,
            "math",
            "math",
            "train",
            build_train_mix,
            reads=("reprompt",),
        ),  # fmt: skip
    )
}


def prepare(
    preset_name: str,
    inputs: Sequence[str | Path],
    output: str | Path,
    options: Options = DEFAULT_OPTIONS,
    limit: int | None = None,
    keep_duplicates: bool = False,
) -> Report:
    """Convert local ``inputs`` (rows taken in order, file after file) with preset ``preset_name`` and write the
    verl parquet file ``output`` (atomically). Raises DataError (naming the file, row and column) for unusable input,
    an InputError for bad options (``limit`` < 1, an empty or padded ``--split``/``--data-source``) or an output that
    cannot be written. Only LiveCodeBench rows before ``--since`` and repeated rows are left out, both counted in
    the Report. Refused too: an option of another preset (``--since`` for any but LiveCodeBench, see
    :data:`PRESET_OPTIONS`) and one prompt with two different ground truths (naming both rows)."""
    if preset_name not in PRESETS:
        raise DataError(f"unknown preset {preset_name!r} (presets: {', '.join(PRESETS)})")
    preset = PRESETS[preset_name]
    if Path(output).suffix != ".parquet":
        raise DataError(f"{output}: the output must be a .parquet file")
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
        raise DataError(f"--limit must be a whole number >= 1, got {limit}")
    if options.split is not None:
        label(options.split, "--split")
    if options.data_source is not None:
        label(options.data_source, "--data-source")
    _refuse_unread_options(preset, options)
    if not inputs:
        raise DataError("no input files")
    rows = [row for path in inputs for row in read_rows(path)]
    if not rows:
        raise DataError(f"{names(inputs)}: no rows")
    records = preset.build(preset, rows, options)
    _refuse_contradictions(records)
    report = Report(0, options.data_source or preset.data_source, options.split or preset.split)
    if len(records) < len(rows):
        report.notes.append(f"{len(rows) - len(records)} rows before --since {options.since}")
    if not keep_duplicates:
        unique = _drop_repeats(records)
        report.dropped_duplicates = len(records) - len(unique)
        records = unique
    records = records[:limit]
    if not records:
        raise DataError(f"{names(inputs)}: no rows left to write")
    for index, record in enumerate(records):
        record["extra_info"]["index"] = index
    if clashes := shadowed_functions(records):
        report.notes.append(
            f"verl's sandbox wrapper calls its own {', '.join(clashes)} instead of the solution's method"
        )
    write_parquet(records, output, what="--output")
    report.rows = len(records)
    report.data_source = records[0]["data_source"]
    return report


def _refuse_unread_options(preset: Preset, options: Options) -> None:
    """An option ``preset`` does not read would be ignored without a word: a DataError naming it and the preset."""
    for name, flag in PRESET_OPTIONS.items():
        if getattr(options, name) not in (None, False) and name not in preset.reads:
            readers = ", ".join(p.name for p in PRESETS.values() if name in p.reads)
            raise DataError(f"{flag} applies to {readers} only, not to preset {preset.name}")


def _refuse_contradictions(records: list[dict]) -> None:
    """One prompt with two different ground truths (a question asked twice, answered differently) is a DataError
    naming both rows: a verifier could not know which answer is the question's."""
    first: dict[str, dict] = {}
    clashes = []
    for record in records:
        earlier = first.setdefault(json.dumps(record["prompt"]), record)
        truth, earlier_truth = record["reward_model"]["ground_truth"], earlier["reward_model"]["ground_truth"]
        if truth != earlier_truth:
            clashes.append((_where(earlier), str(earlier_truth), _where(record), str(truth)))
    if clashes:
        raise contradiction_error(clashes)


def _where(record: dict) -> str:
    info = record["extra_info"]
    return f"{info.get('source_file', 'the input')}: row {info.get('source_row', '?')}"


def _drop_repeats(records: list[dict]) -> list[dict]:
    seen, unique = set(), []
    for record in records:
        key = (json.dumps(record["prompt"]), record["reward_model"]["ground_truth"])
        if key not in seen:
            seen.add(key)
            unique.append(record)
    return unique
