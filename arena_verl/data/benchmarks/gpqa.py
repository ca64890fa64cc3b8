"""The GPQA-Diamond preset: the four answers shown as ``A) ... D)`` in a seeded order; the ground truth is the letter
of the correct one (scored by the multiple-choice verifier)."""

from __future__ import annotations

import hashlib
import random
from collections.abc import Sequence

from arena_verl.data.benchmarks.preset import Options, Preset, with_provenance
from arena_verl.data.qa import DataError, Row, columns_of, require_columns, row_text
from arena_verl.data.verl_layout import verl_row

__all__ = ["GPQA_COLUMNS", "GPQA_SUFFIX", "LETTERS", "build_gpqa", "gpqa_choices", "gpqa_prompt"]

GPQA_SUFFIX = "Please reason step by step, and put the letter of the correct choice (A, B, C or D) within \\boxed{}."
LETTERS = "ABCD"
GPQA_COLUMNS = ("Question", "Correct Answer", "Incorrect Answer 1", "Incorrect Answer 2", "Incorrect Answer 3")


def gpqa_choices(question: str, correct: str, incorrect: Sequence[str], seed: int) -> tuple[list[str], str]:
    """The four answers in the order shown (A-D) and the letter of the correct one.

    The order is a permutation drawn by ``random.Random`` seeded with SHA-256 of ``seed`` and the question text: the
    same question gets the same order on every machine and run, whatever its row number or the other rows."""
    digest = hashlib.sha256(f"{seed}\x00{question}".encode()).digest()
    order = random.Random(int.from_bytes(digest[:8], "big")).sample(range(4), 4)
    answers = [correct, *incorrect]
    choices = [answers[i] for i in order]
    return choices, LETTERS[order.index(0)]


def gpqa_prompt(question: str, choices: Sequence[str]) -> str:
    options = "\n".join(f"{letter}) {choice}" for letter, choice in zip(LETTERS, choices))
    return f"{question}\n\n{options}\n\n{GPQA_SUFFIX}"


def build_gpqa(preset: Preset, rows: list[Row], options: Options) -> list[dict]:
    """A multiple-choice prompt with shuffled options; the ground truth is the correct letter. The question and the
    four answers are text cells read by the reader's rules (missing, empty or a bare number is refused)."""
    require_columns(columns_of(rows), GPQA_COLUMNS, sorted({row.path for row in rows}))
    data_source, split = options.data_source or preset.data_source, options.split or preset.split
    records = []
    for row in rows:
        question, correct, *incorrect = (row_text(row, column) for column in GPQA_COLUMNS)
        normalised = [" ".join(answer.split()).casefold() for answer in incorrect]
        if " ".join(correct.split()).casefold() in normalised:
            raise DataError(f"{row.where}: the correct answer {correct[:60]!r} is also a distractor")
        choices, letter = gpqa_choices(question, correct, incorrect, options.seed)
        record = verl_row(data_source, gpqa_prompt(question, choices), letter, split, 0, preset.ability)
        records.append(with_provenance(record, preset, row, choices=choices, correct_choice=letter))
    return records
