"""What a learning run is judged by, read from the generations verl dumped (``trainer.validation_data_dir`` and
``trainer.rollout_data_dir``): the pass rate and the valid-step prefix (the step judge's own measure, the share of a
trace's steps that are right from the first one on), per validation split, with standard errors clustered by
problem; per training step, the prefix on the step's batch.

A validation line belongs to the split whose parquet file states its problem (the dump has no data source); a problem
two splits share counts in both.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from arena_verl.data.chain_arithmetic import check_steps, parse_problem
from arena_verl.testing.step_policy import answer_is_right

__all__ = ["prefix_share", "split_questions", "validation_figures", "rollout_prefix", "clustered_mean", "paired_change"]


def prefix_share(prompt: str, output: str) -> float | None:
    """The valid-prefix share of ``output`` for the chain-arithmetic problem ``prompt`` states (None: none)."""
    problem = parse_problem(prompt)
    return None if problem is None else check_steps(problem, output).share


def split_questions(files: dict[str, Path]) -> dict[str, set[str]]:
    """split name -> the questions its parquet file holds (the user message of each row)."""
    import pandas as pd

    return {
        name: {str(row[0]["content"]) for row in pd.read_parquet(path, columns=["prompt"])["prompt"]}
        for name, path in files.items()
    }


def clustered_mean(groups: dict[str, list[float]]) -> dict:
    """Mean over every value, with the standard error of the mean of per-problem means (samples of one problem are
    not independent)."""
    means = [sum(v) / len(v) for v in groups.values() if v]
    n = len(means)
    if n == 0:
        return {"mean": None, "se": None, "problems": 0, "samples": 0}
    mean = sum(means) / n
    se = math.sqrt(sum((m - mean) ** 2 for m in means) / (n - 1) / n) if n > 1 else None
    return {"mean": mean, "se": se, "problems": n, "samples": sum(len(v) for v in groups.values())}


def _lines(path: Path):
    with open(path) as handle:
        for line in handle:
            line = line.strip()
            if line:
                try:
                    yield json.loads(line)
                except ValueError:
                    continue  # a line cut by a stopped run: not counted


def _number(value) -> float:
    """A dumped score as a number (verl writes what it holds: a float, or its text); unreadable: 0."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        return 0.0
    return number if math.isfinite(number) else 0.0


def validation_figures(dump: Path, questions: dict[str, set[str]]) -> dict[str, dict]:
    """One validation dump (``<step>.jsonl``): per split, ``{"pass": clustered_mean, "prefix": clustered_mean}`` (pass:
    the answer line is the problem's value);
    also ``"per_problem"``: question -> (pass, prefix) means, for paired comparisons of two validations."""
    passes: dict[str, dict[str, list[float]]] = {name: {} for name in questions}
    prefixes: dict[str, dict[str, list[float]]] = {name: {} for name in questions}
    for entry in _lines(dump):
        problem = parse_problem(str(entry.get("input", "")))
        if problem is None:
            continue
        output = str(entry.get("output", ""))
        question, share = problem.question, check_steps(problem, output).share
        # the task's own check (the verifier's Answer: line), not the dumped score: an arm trained on another reward
        # (the valid-chain reference) dumps that reward, and every arm is measured alike
        passed = 1.0 if answer_is_right(problem, output) else 0.0
        for name, held in questions.items():
            if question in held:
                passes[name].setdefault(question, []).append(passed)
                prefixes[name].setdefault(question, []).append(share)
    return {
        name: {
            "pass": clustered_mean(passes[name]),
            "prefix": clustered_mean(prefixes[name]),
            "per_problem": {
                q: [sum(passes[name][q]) / len(passes[name][q]), sum(prefixes[name][q]) / len(prefixes[name][q])]
                for q in passes[name]
            },
        }
        for name in questions
    }


def paired_change(before: dict, after: dict, index: int) -> dict:
    """The change of a figure (``index`` 0: pass, 1: prefix) between two validations of the same problems, with the
    standard error of the per-problem differences."""
    common = sorted(set(before) & set(after))
    diffs = [after[q][index] - before[q][index] for q in common]
    n = len(diffs)
    if n < 2:
        return {"change": None, "se": None, "problems": n}
    mean = sum(diffs) / n
    se = math.sqrt(sum((d - mean) ** 2 for d in diffs) / (n - 1) / n)
    return {"change": mean, "se": se, "problems": n, "z": mean / se if se > 0 else None}


def rollout_prefix(dump: Path) -> float | None:
    """The mean valid-prefix share of one training step's batch (``rollout/<step>.jsonl``)."""
    shares = [
        s
        for entry in _lines(dump)
        if (s := prefix_share(str(entry.get("input", "")), str(entry.get("output", "")))) is not None
    ]
    return sum(shares) / len(shares) if shares else None
