"""RLVR without verl: the learning experiment's policy, task mix and batch, trained by a plain PyTorch GRPO loop, to
tell what the policy can learn from what verl's CPU path does to it (the gate's diagnosis).

Each step draws ``--prompts`` problems of the hard training mix, samples ``--n`` traces each with Hugging Face
``generate`` (temperature 1, as the rollout samples), scores them as the verifier does (the ``Answer:`` line against
the problem's value), and takes one AdamW step (weight decay 0.01, gradient clip 1.0: verl's actor defaults) on
GRPO's group-normalised advantage times the sampled tokens' log-probability, averaged over tokens (verl's
``token-mean``; on-policy, so CISPO's clipped ratio is 1 and this is its gradient). Before and after training it
validates on the gate's own hard draw (``hard_pilot``, ``--val-rows`` x 4 samples): the pass rate and the valid-step
prefix, and their per-problem change with its standard error.

``--reward valid`` rewards only a right answer reached through a fully valid chain (the verifier without its luck);
``--supervised`` is the control with a clean signal: the same steps, optimizer and batch on the problems' worked
solutions (cross-entropy), which says whether updates of this size and number can move the policy at all.

    python scripts/bench/reference_rl.py --policy DIR [--lr 1e-4 --steps 30 --prompts 8 --n 8]
        [--reward answer|valid] [--positive-only] [--supervised]
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import numpy as np
import torch

from arena_verl.data.chain_arithmetic import check_steps, make_problems
from arena_verl.testing.step_policy import answer_is_right, encode_examples, load_policy, sample_ids
from arena_verl.tools.experiment.grid import code_revision
from arena_verl.tools.experiment.measures import clustered_mean, paired_change


def _sample(model, tokenizer, problem, n: int, max_new_tokens: int, temperature: float = 1.0):
    """``n`` completions: (prompt ids, list of completion id lists, texts). ``temperature`` 0: greedy."""
    prompt, generated = sample_ids(model, tokenizer, problem.question, n, max_new_tokens, temperature)
    completions = []
    for row in generated.tolist():
        if tokenizer.eos_token_id in row:
            row = row[: row.index(tokenizer.eos_token_id) + 1]  # the eos is a sampled token: it is trained too
        completions.append([t for t in row if t != tokenizer.pad_token_id])
    texts = tokenizer.batch_decode(completions, skip_special_tokens=True)
    return prompt, completions, texts


def validate(model, tokenizer, problems, n: int, max_new_tokens: int, temperature: float = 1.0) -> dict:
    """Pass rate and valid-step prefix over ``n`` samples a problem (clustered by problem), each problem's mean
    pass and prefix (``per_problem``), and pass@n: the share of problems with at least one right sample."""
    model.eval()
    passes, prefixes = {}, {}
    for problem in problems:
        _, _, texts = _sample(model, tokenizer, problem, n, max_new_tokens, temperature)
        passes[problem.question] = [float(answer_is_right(problem, t)) for t in texts]
        prefixes[problem.question] = [check_steps(problem, t).share for t in texts]
    per_problem = {q: [float(np.mean(passes[q])), float(np.mean(prefixes[q]))] for q in passes}
    return {
        "pass": clustered_mean(passes),
        "prefix": clustered_mean(prefixes),
        "pass_at_n": float(np.mean([mean_pass > 0 for mean_pass, _ in per_problem.values()])),
        "per_problem": per_problem,
    }


def grpo_advantages(groups, positive_only: bool = False):
    """``groups`` = [(prompt ids, completions, rewards, ...)] -> [(prompt, completion)], [advantage]: GRPO's
    group-normalised advantage. ``positive_only``: negative advantages set to 0 (only the rewarded traces are pushed
    up), to tell how much of the update's effect comes from pushing the wrong traces down."""
    sequences, advantages = [], []
    for prompt, completions, rewards, *_ in groups:
        r = np.asarray(rewards, dtype=np.float64)
        adv = (r - r.mean()) / (r.std(ddof=1) + 1e-6)  # verl's GRPO: torch.std is unbiased
        if positive_only:
            adv = np.maximum(adv, 0.0)
        for completion, a in zip(completions, adv):
            if completion:  # every response token counts in the mean, as verl's token-mean counts them
                sequences.append((prompt, completion))
                advantages.append(float(a))
    return sequences, advantages


def policy_gradient_step(model, tokenizer, optimizer, sequences, advantages, clip: float = 1.0) -> dict:
    """One AdamW step on ``-advantage x log-probability`` of each (prompt, completion), averaged over every
    completion token of the batch (verl's token-mean). With every advantage 1 it is supervised cross-entropy."""
    model.train()
    if not any(advantages):
        return {"trained_sequences": 0, "grad_norm": 0.0, "loss": 0.0}
    length = max(len(p) + len(c) for p, c in sequences)
    ids = torch.full((len(sequences), length), tokenizer.pad_token_id, dtype=torch.long)
    mask = torch.zeros((len(sequences), length), dtype=torch.float32)
    for row, (prompt, completion) in enumerate(sequences):
        ids[row, : len(prompt) + len(completion)] = torch.tensor(prompt + completion)
        mask[row, len(prompt) : len(prompt) + len(completion)] = 1.0
    logits = model(input_ids=ids, attention_mask=(torch.arange(length)[None, :] < torch.tensor(
        [[len(p) + len(c)] for p, c in sequences])).long()).logits  # fmt: skip
    logp = torch.log_softmax(logits[:, :-1].float(), dim=-1).gather(-1, ids[:, 1:, None]).squeeze(-1)
    token_mask = mask[:, 1:]
    adv = torch.tensor(advantages)[:, None]
    # token-mean over every response token of the batch (zero-advantage sequences add no gradient but count)
    loss = -(adv * logp * token_mask).sum() / token_mask.sum()
    optimizer.zero_grad()
    loss.backward()
    norm = torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
    optimizer.step()
    return {"trained_sequences": sum(a != 0.0 for a in advantages), "grad_norm": float(norm), "loss": float(loss)}


def reward_of(problem, text: str, reward: str) -> float:
    """``answer``: the verifier's reward (the ``Answer:`` line is right). ``valid``: right through a chain whose every
    step is right (a lucky answer, through a skipped or wrong step, gets 0): the verifier without its luck."""
    right = answer_is_right(problem, text)
    return float(right and (reward == "answer" or check_steps(problem, text).share == 1.0))


def sampled_batch(model, tokenizer, batch, args):
    """``args.n`` samples of each problem, rewarded by ``args.reward``: the (prompt, completion) sequences, their GRPO
    advantages, and the batch's mean reward and valid-step prefix."""
    model.eval()
    groups = []
    for problem in batch:
        prompt, completions, texts = _sample(model, tokenizer, problem, args.n, args.max_new_tokens)
        groups.append((prompt, completions, [reward_of(problem, t, args.reward) for t in texts], texts))
    sequences, advantages = grpo_advantages(groups, positive_only=args.positive_only)
    rewards = [r for _, _, group_rewards, _ in groups for r in group_rewards]
    prefix = [check_steps(p, t).share for p, (_, _, _, texts) in zip(batch, groups) for t in texts]
    return sequences, advantages, {"reward": float(np.mean(rewards)), "prefix": float(np.mean(prefix))}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--policy", type=Path, required=True)
    parser.add_argument("--lr", type=float, default=1e-4)
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--prompts", type=int, default=8)
    parser.add_argument("--n", type=int, default=8)
    parser.add_argument("--val-rows", type=int, default=256)
    parser.add_argument("--val-n", type=int, default=4)
    parser.add_argument("--max-new-tokens", type=int, default=96)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--positive-only", action="store_true", help="negative advantages set to 0")
    parser.add_argument("--reward", choices=("answer", "valid"), default="answer", help="see reward_of")
    parser.add_argument(
        "--supervised",
        action="store_true",
        help="the control: each step trains on the batch's worked solutions (cross-entropy), no sampling",
    )
    parser.add_argument("--optimizer", choices=("adamw", "sgd"), default="adamw")
    parser.add_argument(
        "--warmup-steps",
        type=int,
        default=0,
        help="the learning rate rises linearly over these steps (verl's actor.optim.lr_warmup_steps); 0: constant",
    )
    parser.add_argument("--out", type=Path, default=None, help="write the figures here (JSON)")
    args = parser.parse_args(argv)
    if args.warmup_steps < 0:
        parser.error("--warmup-steps must be 0 or more")
    torch.manual_seed(args.seed)
    model, tokenizer = load_policy(args.policy)
    if args.optimizer == "adamw":
        optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    else:
        optimizer = torch.optim.SGD(model.parameters(), lr=args.lr)
    # verl's constant schedule with warm-up (get_constant_schedule_with_warmup): step / warmup_steps, then 1; its
    # first update has learning rate 0 and only fills AdamW's moments
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda step: step / args.warmup_steps if step < args.warmup_steps else 1.0
    )
    train = make_problems(args.steps * args.prompts, "hard_train", seed=args.seed)
    val = make_problems(args.val_rows, "hard_pilot", seed=0)
    started = time.monotonic()
    before = validate(model, tokenizer, val, args.val_n, args.max_new_tokens)
    steps = []
    for step in range(args.steps):
        batch = train[step * args.prompts : (step + 1) * args.prompts]
        if args.supervised:  # the worked solutions, each at advantage 1: cross-entropy
            sequences = encode_examples(tokenizer, batch)
            advantages, batch_figures = [1.0] * len(sequences), {}
        else:
            sequences, advantages, batch_figures = sampled_batch(model, tokenizer, batch, args)
        figures = policy_gradient_step(model, tokenizer, optimizer, sequences, advantages)
        schedule.step()
        steps.append({"step": step + 1, **batch_figures, **figures})
        print(json.dumps(steps[-1]), file=sys.stderr, flush=True)
    after = validate(model, tokenizer, val, args.val_n, args.max_new_tokens)
    record = {
        "settings": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
        "revision": code_revision(),
        "seconds": round(time.monotonic() - started, 1),
        "start": {k: before[k] for k in ("pass", "prefix")},
        "end": {k: after[k] for k in ("pass", "prefix")},
        "pass_change": paired_change(before["per_problem"], after["per_problem"], 0),
        "prefix_change": paired_change(before["per_problem"], after["per_problem"], 1),
        "steps": steps,
    }
    summary = {k: record[k] for k in ("start", "end", "pass_change", "prefix_change")}
    print(json.dumps(summary, indent=1, default=lambda v: round(v, 4) if isinstance(v, float) else v))
    if args.out:
        args.out.write_text(json.dumps(record, indent=1) + "\n")
    return 0 if all(math.isfinite(s["loss"]) for s in steps) else 1


if __name__ == "__main__":
    sys.exit(main())
