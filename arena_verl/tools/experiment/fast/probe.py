"""A policy's pass rate and valid-step prefix on chain-arithmetic problems, sampled by the fast trainer's sampler
(the benches that measure a policy outside a run: ``scripts/bench/sharpening_headroom.py``,
``scripts/bench/weight_noise.py``). The measures are the experiment's own: a right answer is the task's answer check,
the prefix :func:`check_steps`, means clustered by problem (:mod:`arena_verl.tools.experiment.measures`)."""

from __future__ import annotations

import numpy as np
import torch

from arena_verl.data.chain_arithmetic import check_steps
from arena_verl.testing.step_policy import answer_is_right, prompt_ids
from arena_verl.tools.experiment.fast.sampler import sample
from arena_verl.tools.experiment.measures import clustered_mean

__all__ = ["probe_policy"]


def probe_policy(
    model, tokenizer, problems, n: int, max_new_tokens: int = 96, temperature: float = 1.0, seed: int = 0
) -> dict:
    """Pass rate and valid prefix over ``n`` samples a problem (clustered by problem), each problem's mean pass and
    prefix (``per_problem``, for :func:`paired_change`), and pass@n (problems with at least one right sample)."""
    prompts = [prompt_ids(tokenizer, p.question) for p in problems for _ in range(n)]
    generator = torch.Generator().manual_seed(seed)
    completions = sample(
        model, prompts, max_new_tokens, tokenizer.eos_token_id, tokenizer.pad_token_id, temperature, generator
    )
    texts = tokenizer.batch_decode(completions, skip_special_tokens=True)
    passes: dict[str, list[float]] = {}
    prefixes: dict[str, list[float]] = {}
    for index, text in enumerate(texts):
        problem = problems[index // n]
        passes.setdefault(problem.question, []).append(float(answer_is_right(problem, text)))
        prefixes.setdefault(problem.question, []).append(check_steps(problem, text).share)
    per_problem = {q: [float(np.mean(passes[q])), float(np.mean(prefixes[q]))] for q in passes}
    return {
        "pass": clustered_mean(passes),
        "prefix": clustered_mean(prefixes),
        "pass_at_n": float(np.mean([mean_pass > 0 for mean_pass, _ in per_problem.values()])),
        "per_problem": per_problem,
    }
