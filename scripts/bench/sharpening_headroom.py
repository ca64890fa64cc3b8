"""What RLVR could gain on the learning experiment's policy by sharpening alone: the pass rate and the valid-step
prefix on the gate's own hard draw when the starting policy samples at lower temperatures and greedily, next to
temperature 1 (what the rollout and the validation sample) and pass@N at temperature 1. RL that only sharpens the
policy's own distribution can at most move temperature 1 toward the best of these; what lies beyond needs new
arithmetic, not a sharper choice among what the policy already writes.

    python scripts/bench/sharpening_headroom.py --policy DIR [--temperatures 1,0.7,0.4,0 --val-rows 128 --n 8]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from arena_verl.data.chain_arithmetic import make_problems
from arena_verl.testing.step_policy import load_policy
from arena_verl.tools.experiment.fast.probe import probe_policy


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--policy", type=Path, required=True)
    parser.add_argument("--temperatures", default="1,0.7,0.4,0")
    parser.add_argument("--val-rows", type=int, default=128)
    parser.add_argument("--n", type=int, default=8, help="samples a problem at each temperature above 0")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    problems = make_problems(args.val_rows, "hard_pilot", seed=0)
    model, tokenizer = load_policy(args.policy)
    model.eval()
    rows = []
    for temperature in (float(t) for t in args.temperatures.split(",")):
        samples = args.n if temperature > 0 else 1
        figures = probe_policy(model, tokenizer, problems, samples, 96, temperature, seed=args.seed)
        row = {"temperature": temperature, "samples_per_problem": samples}
        row |= {k: figures[k] for k in ("pass", "prefix", "pass_at_n")}
        rows.append(row)
        brief = {"temperature": temperature, "pass": row["pass"]["mean"], "prefix": row["prefix"]["mean"]}
        print(json.dumps(brief | {"pass_at_n": row["pass_at_n"]}), file=sys.stderr, flush=True)
    print(json.dumps({"val_rows": args.val_rows, "n": args.n, "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
