"""Hand-built verl batches: what the rollout would hand the reward loop, made from text."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

CONFIG_DIR = Path(__file__).resolve().parents[2] / "configs"


@dataclass
class Sample:
    uid: str
    response: str
    ground_truth: str = "4"
    sim_quality: float | None = None
    data_source: str = "math_dapo"
    problem: str = "What is 2 + 2?"
    extra: dict = field(default_factory=dict)
    session_id: int | None = None


def compose_config(tokenizer_path: Path, overrides: list[str] = ()):
    from hydra import compose, initialize_config_dir

    with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base=None):
        return compose(
            "arena_ppo",
            overrides=[
                f"actor_rollout_ref.model.path={tokenizer_path}",
                "actor_rollout_ref.rollout.n=8",
                "reward.num_workers=2",
                *overrides,
            ],
        )


def make_batch(tokenizer, samples: list[Sample], prompt_length: int = 32, response_length: int = 64):
    from verl import DataProto

    pad = tokenizer.pad_token_id
    prompts, responses, masks = [], [], []
    for s in samples:
        p = tokenizer.encode(s.problem)[-prompt_length:]
        r = tokenizer.encode(s.response)[: response_length - 1] + [tokenizer.eos_token_id]
        prompts.append([pad] * (prompt_length - len(p)) + p)
        responses.append(r + [pad] * (response_length - len(r)))
        masks.append([0] * (prompt_length - len(p)) + [1] * (len(p) + len(r)) + [0] * (response_length - len(r)))
    prompts_t, responses_t = torch.tensor(prompts), torch.tensor(responses)
    attention_mask = torch.tensor(masks)
    input_ids = torch.cat([prompts_t, responses_t], dim=1)
    position_ids = torch.clamp(torch.cumsum(attention_mask, dim=1) - 1, min=0)

    def objects(values):
        out = np.empty(len(values), dtype=object)
        out[:] = values
        return out

    non_tensor = {
        "uid": objects([s.uid for s in samples]),
        "data_source": objects([s.data_source for s in samples]),
        "reward_model": objects([{"ground_truth": s.ground_truth, "style": "rule"} for s in samples]),
        "extra_info": objects(
            [{**({"sim_quality": s.sim_quality} if s.sim_quality is not None else {}), **s.extra} for s in samples]
        ),
        "raw_prompt": objects([[{"role": "user", "content": s.problem}] for s in samples]),
    }
    if any(s.session_id is not None for s in samples):
        non_tensor["session_id"] = objects([s.session_id for s in samples])
    return DataProto.from_dict(
        tensors={
            "prompts": prompts_t,
            "responses": responses_t,
            "attention_mask": attention_mask,
            "input_ids": input_ids,
            "position_ids": position_ids,
        },
        non_tensors=non_tensor,
    )


def ray_env() -> dict:
    return {"RAY_AUTH_MODE": "disabled", "RAY_DEDUP_LOGS": "0", "TOKENIZERS_PARALLELISM": "false"}


def set_ray_env() -> None:
    for key, value in ray_env().items():
        os.environ.setdefault(key, value)
