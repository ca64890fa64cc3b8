"""How sensitive the learning experiment's policy is to the size of an AdamW step, without any reward: every parameter
moved by ``+-size`` (a random sign per parameter, ``--steps`` times), which is what AdamW's first steps do to a
parameter whatever its gradient's size (the bias-corrected first step is ``lr * sign(g)``). The pass rate and the
valid-step prefix on the gate's own hard draw, before and after, with their per-problem change.

    python scripts/bench/weight_noise.py --policy DIR [--sizes 1e-5,3e-5,1e-4 --steps 2 --val-rows 128]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch

from arena_verl.data.chain_arithmetic import make_problems
from arena_verl.testing.step_policy import load_policy
from arena_verl.tools.experiment.fast.probe import probe_policy
from arena_verl.tools.experiment.measures import paired_change


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--policy", type=Path, required=True)
    parser.add_argument("--sizes", default="1e-5,3e-5,1e-4")
    parser.add_argument("--steps", type=int, default=2, help="sign steps of each size")
    parser.add_argument("--val-rows", type=int, default=128)
    parser.add_argument("--val-n", type=int, default=4)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    problems = make_problems(args.val_rows, "hard_pilot", seed=0)
    model, tokenizer = load_policy(args.policy)
    torch.manual_seed(args.seed)
    before = probe_policy(model, tokenizer, problems, args.val_n, 96, seed=args.seed)
    rows = [{"size": 0.0, "pass": before["pass"]["mean"], "prefix": before["prefix"]["mean"]}]
    for size in (float(s) for s in args.sizes.split(",")):
        model, tokenizer = load_policy(args.policy)
        generator = torch.Generator().manual_seed(args.seed + 1)
        with torch.no_grad():
            for _ in range(args.steps):
                for parameter in model.parameters():
                    signs = torch.randint(0, 2, parameter.shape, generator=generator) * 2 - 1
                    parameter.add_(size * signs.to(parameter.dtype))
        after = probe_policy(model, tokenizer, problems, args.val_n, 96, seed=args.seed)
        rows.append(
            {
                "size": size,
                "pass": after["pass"]["mean"],
                "prefix": after["prefix"]["mean"],
                "pass_change": paired_change(before["per_problem"], after["per_problem"], 0),
                "prefix_change": paired_change(before["per_problem"], after["per_problem"], 1),
            }
        )
        print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    print(json.dumps({"steps": args.steps, "val_rows": args.val_rows, "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
