"""Which chain-arithmetic levels the learning experiment trains on: each candidate level's groups as the starting
policy samples them, measured before the levels are chosen.

    python -m arena_verl.tools.experiment.task_mix --policy DIR --out task_mix.json [--prompts 48]

Per level (operations, largest operand), over ``prompts`` problems x ``group_size`` samples (temperature 1, as the
rollout samples): the shares of all-correct, all-wrong and mixed groups; of the all-wrong groups, the share the step
judge ties completely (every trace with the same valid prefix: a tournament on them has nothing to find but noise);
the mean valid-prefix share; and of the right answers, the share reached through an invalid chain (a skipped step,
errors that cancel: the verifier rewards luck there, and RLVR reinforces the invalid chain). A level is kept
(:func:`keep`) when at least half of its groups are all wrong (the verifier starves), at most a quarter of those are
fully tied (the judge has something to tell apart), some groups are mixed (RLVR still has a contrast to learn from)
and at most 30% of its right answers are lucky (the verifier's reward means what it says).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

__all__ = ["CANDIDATE_LEVELS", "keep", "measure_levels", "all_wrong_problems"]

CANDIDATE_LEVELS = tuple((ops, largest) for ops in (2, 3, 4, 5) for largest in (9, 20, 40, 60, 99))
MIN_ALL_WRONG = 0.5
MAX_TIED_OF_ALL_WRONG = 0.25
# Set after the first measurement: no level had a lucky share at or below 0.25; (3, 60) has 0.28.
MAX_LUCKY_OF_RIGHT = 0.3


def keep(row: dict) -> bool:
    return (
        row["all_wrong"] >= MIN_ALL_WRONG
        and row["tied_of_all_wrong"] is not None
        and row["tied_of_all_wrong"] <= MAX_TIED_OF_ALL_WRONG
        and row["mixed"] > 0
        and row["lucky_of_right"] is not None
        and row["lucky_of_right"] <= MAX_LUCKY_OF_RIGHT
    )


def _group(model, tokenizer, problem, group_size: int) -> tuple[list[bool], list[int]]:
    from arena_verl.data.chain_arithmetic import check_steps
    from arena_verl.testing.step_policy import answer_is_right, sample_group

    texts = sample_group(model, tokenizer, problem.question, group_size)
    right = [answer_is_right(problem, text) for text in texts]
    return right, [check_steps(problem, text).valid_prefix for text in texts]


def measure_levels(policy: Path, levels, prompts: int, group_size: int, seed: int = 0, log=print) -> list[dict]:
    import numpy as np
    import torch

    from arena_verl.data.chain_arithmetic import draw_problem
    from arena_verl.testing.step_policy import load_policy

    model, tokenizer = load_policy(policy)
    rows = []
    for operations, largest in levels:
        torch.manual_seed(seed)
        rng = np.random.default_rng([seed, operations, largest])
        kinds = {"all_correct": 0, "all_wrong": 0, "mixed": 0}
        tied, prefix_shares, right_count, lucky = 0, [], 0, 0
        for _ in range(prompts):
            problem = draw_problem(rng, operations, largest)
            right, prefixes = _group(model, tokenizer, problem, group_size)
            kind = "all_correct" if all(right) else "all_wrong" if not any(right) else "mixed"
            kinds[kind] += 1
            tied += kind == "all_wrong" and len(set(prefixes)) == 1
            prefix_shares.extend(p / operations for p in prefixes)
            right_count += sum(right)
            lucky += sum(r and p < operations for r, p in zip(right, prefixes))
        row = {
            "operations": operations,
            "largest": largest,
            "prompts": prompts,
            **{name: round(count / prompts, 3) for name, count in kinds.items()},
            "tied_of_all_wrong": round(tied / kinds["all_wrong"], 3) if kinds["all_wrong"] else None,
            "mean_prefix_share": round(float(np.mean(prefix_shares)), 3),
            "right_answers": right_count,
            "lucky_of_right": round(lucky / right_count, 3) if right_count else None,
        }
        row["kept"] = keep(row)
        log(json.dumps(row))
        rows.append(row)
    return rows


def all_wrong_problems(policy: Path, problems, group_size: int, seed: int = 0) -> list:
    """The problems on which all ``group_size`` samples of the policy are wrong (the fixed all-wrong set)."""
    import torch

    from arena_verl.testing.step_policy import load_policy

    model, tokenizer = load_policy(policy)
    torch.manual_seed(seed)
    return [p for p in problems if not any(_group(model, tokenizer, p, group_size)[0])]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--policy", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--prompts", type=int, default=48, help="problems per level")
    parser.add_argument("--group-size", type=int, default=8)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    rows = measure_levels(
        args.policy, CANDIDATE_LEVELS, args.prompts, args.group_size, args.seed, log=lambda s: print(s, file=sys.stderr)
    )
    record = {
        "policy": str(args.policy),
        "policy_build": json.loads((args.policy / "built.json").read_text()).get("settings"),
        "group_size": args.group_size,
        "seed": args.seed,
        "rule": (
            f"kept: all_wrong >= {MIN_ALL_WRONG}, tied_of_all_wrong <= {MAX_TIED_OF_ALL_WRONG}, mixed > 0, "
            f"lucky_of_right <= {MAX_LUCKY_OF_RIGHT}"
        ),
        "levels": rows,
    }
    args.out.write_text(json.dumps(record, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
