"""Chained arithmetic written out step by step: the learning experiment's task (``arena-verl experiment``).

A problem is a chain of additions and subtractions of whole numbers, ``Compute 23+45-17+8 step by step.``; its
solution is one line per operation, each computing on the previous line's result, then the answer::

    23+45=68
    68-17=51
    51+8=59
    Answer: 59

Why this task: each step is checkable on its own (the left operand must be the running value, the right operand and
the operator the problem's next ones, the result their sum or difference), so a program can read the reasoning the
way a judge would and say how far it stayed right (:func:`check_steps`), while the verifier still scores only the
final answer (the arena's math verifier reads the ``Answer:`` line). Difficulty is set by the number of operations
and the operands' digits; the held-out split has more operations than any training problem (generalisation to longer
chains, as the paper's out-of-domain sets measure transfer). Every running value stays >= 0.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from arena_verl.core.errors import InputError

__all__ = [
    "ChainProblem",
    "StepCheck",
    "SPLITS",
    "check_steps",
    "draw_problem",
    "make_problems",
    "parse_problem",
    "solution_text",
    "write_problems",
    "write_split",
]

# The training mix and the held-out split: (operations, largest operand) levels, drawn uniformly. Training spans
# easy (one operation on small numbers: groups that are all correct) to hard (four operations on two-digit numbers:
# groups that are all wrong); held out: five and six operations, which no training problem has.
# The learning experiment's hard mix (``hard_*``): the level where, with the starting policy at N=8, at least half
# the groups are all wrong, few of those are tied completely by the step judge, some are mixed, and few right answers
# come through an invalid chain (measured, 96 problems a level: docs/benchmarks/learning/task_mix.json, written by
# arena_verl.tools.experiment.task_mix). The first choice, (4, 9), (4, 20), (5, 9), rewarded luck: 46-85% of its
# right answers had a skipped or wrong step (docs/benchmarks/learning/mix1). Its splits: training, the test split the
# grid reports, the gate's own draw, and the pool the fixed all-wrong set is chosen from.
HARD_LEVELS = ((3, 60),)
SPLITS = {
    "train": ((1, 9), (1, 40), (2, 9), (2, 40), (3, 20), (3, 60), (4, 40), (4, 99)),
    "test": ((1, 9), (1, 40), (2, 9), (2, 40), (3, 20), (3, 60), (4, 40), (4, 99)),
    "heldout": ((5, 20), (5, 60), (6, 20), (6, 60)),
    "hard_train": HARD_LEVELS,
    "hard_test": HARD_LEVELS,
    "hard_pilot": HARD_LEVELS,
    "hard_pool": HARD_LEVELS,
}
DATA_SOURCES = {
    "train": "chain_math",
    "test": "chain_math",
    "heldout": "chain_math_heldout",
    "hard_train": "chain_hard",
    "hard_test": "chain_hard",
    "hard_pilot": "chain_hard_pilot",
    "hard_pool": "chain_all_wrong",
}
# Seeds are offset per split so that files made with one seed share no problem stream.
_SPLIT_SEED = {
    "train": 0,
    "test": 1_000_003,
    "heldout": 2_000_003,
    "hard_train": 3_000_017,
    "hard_test": 4_000_037,
    "hard_pilot": 5_000_011,
    "hard_pool": 6_000_043,
}
_PROBLEM = re.compile(r"Compute (?P<expr>\d+(?:[+-]\d+)+) step by step\.")
_STEP = re.compile(r"^\s*(?P<left>-?\d+)\s*(?P<op>[+-])\s*(?P<right>\d+)\s*=\s*(?P<result>-?\d+)\s*$")
_TOKEN = re.compile(r"[+-]|\d+")
MAX_ROWS = 100_000


@dataclass(frozen=True)
class ChainProblem:
    numbers: tuple[int, ...]  # the operands, in order
    ops: tuple[str, ...]  # "+" or "-", one fewer than numbers

    @property
    def expression(self) -> str:
        return str(self.numbers[0]) + "".join(op + str(n) for op, n in zip(self.ops, self.numbers[1:]))

    @property
    def question(self) -> str:
        return f"Compute {self.expression} step by step."

    def running_values(self) -> list[int]:
        """The value after each operation; the last is the answer."""
        values, value = [], self.numbers[0]
        for op, n in zip(self.ops, self.numbers[1:]):
            value = value + n if op == "+" else value - n
            values.append(value)
        return values

    @property
    def answer(self) -> int:
        return self.running_values()[-1]


@dataclass(frozen=True)
class StepCheck:
    """What :func:`check_steps` read in a trace."""

    operations: int  # steps the problem needs
    valid_prefix: int  # steps right from the first one on, before the first wrong or missing one
    steps_written: int  # lines that have the form of a step (right or wrong)

    @property
    def share(self) -> float:
        """``valid_prefix / operations``, in [0, 1]: writing more lines cannot raise it."""
        return self.valid_prefix / self.operations


def make_problems(rows: int, split: str, seed: int = 0) -> list[ChainProblem]:
    """``rows`` problems of ``split`` (a key of :data:`SPLITS`), deterministic in ``seed``."""
    if split not in SPLITS:
        raise InputError(f"split must be one of {', '.join(SPLITS)}, got {split!r}")
    if isinstance(rows, bool) or not isinstance(rows, int) or not 1 <= rows <= MAX_ROWS:
        raise InputError(f"rows must be between 1 and {MAX_ROWS}, got {rows}")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise InputError(f"seed must be a whole number >= 0, got {seed}")
    rng = np.random.default_rng(seed + _SPLIT_SEED[split])
    levels = SPLITS[split]
    return [draw_problem(rng, *levels[int(rng.integers(len(levels)))]) for _ in range(rows)]


def draw_problem(rng: np.random.Generator, operations: int, largest: int) -> ChainProblem:
    value = int(rng.integers(1, largest + 1))
    numbers, ops = [value], []
    for _ in range(operations):
        n = int(rng.integers(1, largest + 1))
        op = "-" if n <= value and rng.random() < 0.5 else "+"  # running values stay >= 0
        value = value + n if op == "+" else value - n
        numbers.append(n)
        ops.append(op)
    return ChainProblem(tuple(numbers), tuple(ops))


def solution_text(problem: ChainProblem) -> str:
    """The worked solution: one line per operation, then ``Answer: N``."""
    lines, left = [], problem.numbers[0]
    for op, n, value in zip(problem.ops, problem.numbers[1:], problem.running_values()):
        lines.append(f"{left}{op}{n}={value}")
        left = value
    return "\n".join(lines) + f"\nAnswer: {problem.answer}"


def parse_problem(text: str) -> ChainProblem | None:
    """The problem stated in ``text`` (a prompt, a chat rendering of it), or None when there is none. The last
    statement wins (a chat template may repeat instructions before it)."""
    found = list(_PROBLEM.finditer(text or ""))
    if not found:
        return None
    tokens = _TOKEN.findall(found[-1].group("expr"))
    numbers = tuple(int(t) for t in tokens[0::2])
    ops = tuple(tokens[1::2])
    return ChainProblem(numbers, ops)


def check_steps(problem: ChainProblem, trace: str) -> StepCheck:
    """Read ``trace``'s step lines against ``problem``. A step is right when its left operand is the running value
    (the first number for the first step), its operator and right operand are the problem's next ones and its result
    is their value; the valid prefix stops at the first line that is not a right step (text between steps counts as
    a wrong step: a trace is read as written). The ``Answer:`` line and anything after it are not steps."""
    expected_left = problem.numbers[0]
    values = problem.running_values()
    valid, written, broken = 0, 0, False
    for line in (trace or "").splitlines():
        if not line.strip():
            continue
        if line.strip().lower().startswith("answer"):
            break
        match = _STEP.match(line)
        if match:
            written += 1
        if broken or valid >= problem_len(problem):
            broken = True
            continue
        right = (
            match is not None
            and int(match.group("left")) == expected_left
            and match.group("op") == problem.ops[valid]
            and int(match.group("right")) == problem.numbers[valid + 1]
            and int(match.group("result")) == values[valid]
        )
        if right:
            expected_left = values[valid]
            valid += 1
        else:
            broken = True
    return StepCheck(operations=problem_len(problem), valid_prefix=valid, steps_written=written)


def problem_len(problem: ChainProblem) -> int:
    return len(problem.ops)


def write_split(path: str | Path, rows: int, split: str, seed: int = 0) -> int:
    """``rows`` problems of ``split`` as a verl parquet file (see :func:`write_problems`). Returns the row count."""
    return write_problems(path, make_problems(rows, split, seed), split)


def write_problems(path: str | Path, problems: list[ChainProblem], split: str, data_source: str | None = None) -> int:
    """``problems`` as a verl parquet file (``data_source``: :data:`DATA_SOURCES` of ``split`` unless given, matched
    by the arena's math verifier; ``extra_info.operations`` the problem's length, for per-level figures, and
    ``extra_info.question`` the problem)."""
    from arena_verl.data.verl_layout import verl_row, write_parquet

    records = []
    for index, problem in enumerate(problems):
        row = verl_row(data_source or DATA_SOURCES[split], problem.question, str(problem.answer), split, index)
        row["extra_info"]["operations"] = problem_len(problem)
        row["extra_info"]["question"] = problem.question  # what a step-checking scorer reads (valid_chain)
        records.append(row)
    write_parquet(records, path, what=f"{split} split")
    return len(records)
