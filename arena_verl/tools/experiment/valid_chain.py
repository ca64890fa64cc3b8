"""The valid-chain reference reward of the learning experiment, as verl's custom reward function
(``reward.custom_reward_function.path=pkg://arena_verl.tools.experiment.valid_chain``, ``name=compute_score``): 1 for a
right answer reached through a chain whose every step is right, 0 otherwise (a lucky answer, through a skipped or
wrong step, gets nothing). It is the verifier without its luck: a reference of what a cleaner reward can teach this
policy, not a second verifier. The problem is read from the row's ``extra_info.question`` (written by
:func:`arena_verl.data.chain_arithmetic.write_problems`); a row without one, or that is not a chain problem, scores 0.
"""

from __future__ import annotations

from typing import Any

from arena_verl.data.chain_arithmetic import check_steps, parse_problem
from arena_verl.verify.extraction import extract_final_answer

__all__ = ["compute_score"]


def compute_score(data_source: str, solution_str: str, ground_truth: Any, extra_info: dict | None = None, **_) -> float:
    problem = parse_problem(str((extra_info or {}).get("question", "")))
    if problem is None or not isinstance(solution_str, str):
        return 0.0
    right = extract_final_answer(solution_str)[0] == str(problem.answer)
    return float(right and check_steps(problem, solution_str).share == 1.0)
