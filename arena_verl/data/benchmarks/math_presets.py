"""The math presets: the AIME sets and BeyondAIME (problem + the boxed instruction; the answer as written) and the
training mix (verl-layout rows such as DAPO-Math-17k pass through). Questions and answers are read by
:mod:`arena_verl.data.qa`, the reader ``python -m arena_verl.data convert`` uses."""

from __future__ import annotations

import dataclasses
import re

from arena_verl.data.benchmarks.preset import Options, Preset, with_provenance
from arena_verl.data.qa import (
    DataError,
    Row,
    answer_value,
    as_list,
    columns_of,
    is_missing,
    question_answers,
    text_value,
)
from arena_verl.data.verl_layout import MATH_SUFFIX, verl_row

__all__ = ["MATH_COLUMNS", "build_math_benchmark", "build_train_mix"]

MATH_COLUMNS = "problem/question/prompt and answer/solution/ground_truth, or verl's prompt + reward_model"

# The instruction DAPO's files wrap every problem in ("... of the form Answer: $Answer ...", "Remember to put your
# answer on its own line after ..."); removed so that every AIME year is asked the same way (MATH_SUFFIX).
_DAPO_PREFIX = re.compile(r"\ASolve the following math problem step by step\..*?\n\n", re.DOTALL)
_DAPO_SUFFIX = re.compile(r"\n\nRemember to put your answer on its own line after .*\Z", re.DOTALL)


def _in_verl_layout(columns: list[str]) -> bool:
    return "prompt" in columns and "reward_model" in columns


def _verl_messages(row: Row) -> list[dict]:
    messages = as_list(row.values.get("prompt"))
    if not messages or not all(
        isinstance(m, dict) and isinstance(m.get("content"), str) and isinstance(m.get("role"), str) for m in messages
    ):
        raise DataError(f"{row.where}: 'prompt' must be a non-empty list of chat messages with text role and content")
    if not any(m.get("role") == "user" and m["content"].strip() for m in messages):
        raise DataError(f"{row.where}: 'prompt' has no user message")
    return [{"role": str(m["role"]), "content": str(m["content"])} for m in messages]


def _verl_problem(row: Row) -> str:
    """The problem inside a verl-layout row: its last user message, without DAPO's answer-format instruction."""
    user = [m["content"] for m in _verl_messages(row) if m["role"] == "user"][-1]
    problem = _DAPO_SUFFIX.sub("", _DAPO_PREFIX.sub("", user.strip())).strip()
    if not problem:
        raise DataError(f"{row.where}: the user message holds no problem")
    return problem


def _verl_ground_truth(row: Row) -> str:
    """``reward_model.ground_truth``, under the reader's answer rules."""
    reward_model = row.values.get("reward_model")
    if not isinstance(reward_model, dict) or is_missing(reward_model.get("ground_truth")):
        raise DataError(f"{row.where}: 'reward_model' has no ground_truth")
    return answer_value(reward_model["ground_truth"], f"{row.where}: 'reward_model.ground_truth'")


def _math_questions(rows: list[Row], columns: list[str], options: Options) -> list[tuple[Row, str, str]]:
    """(row, problem, answer) from verl-layout rows or from question/answer columns."""
    if _in_verl_layout(columns) and options.question_key is None and options.answer_key is None:
        return [(row, _verl_problem(row), _verl_ground_truth(row)) for row in rows]
    pairs = question_answers(rows, options.question_key, options.answer_key)
    return [(pair.row, pair.question, pair.answer) for pair in pairs]


def build_math_benchmark(preset: Preset, rows: list[Row], options: Options) -> list[dict]:
    """Problem + MATH_SUFFIX; the ground truth is the answer as text."""
    data_source, split = options.data_source or preset.data_source, options.split or preset.split
    records = []
    for row, problem, answer in _math_questions(rows, columns_of(rows), options):
        record = verl_row(data_source, f"{problem}\n\n{MATH_SUFFIX}", answer, split, 0, preset.ability)
        records.append(with_provenance(record, preset, row))
    return records


def build_train_mix(preset: Preset, rows: list[Row], options: Options) -> list[dict]:
    """verl-layout rows (DAPO-Math-17k) pass through with split=train; plain question/answer rows are built as the
    benchmarks are. ``options.data_source`` overrides the file's own."""
    columns, split = columns_of(rows), options.split or preset.split
    if not _in_verl_layout(columns) or options.reprompt or options.question_key or options.answer_key:
        plain = dataclasses.replace(options, data_source=options.data_source or preset.data_source)
        return build_math_benchmark(preset, rows, plain)
    records = []
    for row in rows:
        data_source = options.data_source or row.values.get("data_source")
        if is_missing(data_source):
            raise DataError(f"{row.where}: no data_source (pass --data-source)")
        data_source = text_value(data_source, f"{row.where}: 'data_source'")
        ability = row.values.get("ability")
        ability = preset.ability if is_missing(ability) else text_value(ability, f"{row.where}: 'ability'")
        record = verl_row(data_source, "", _verl_ground_truth(row), split, 0, ability)
        record["prompt"] = _verl_messages(row)
        extra = row.values.get("extra_info")
        if isinstance(extra, dict) and not is_missing(extra.get("index")):
            record["extra_info"]["source_id"] = str(extra["index"])  # DAPO's uuid; ours is the output row number
        records.append(with_provenance(record, preset, row))
    return records
