"""verl config and Ray environment for the integration tests (batches come from arena_verl.testing.toy)."""

from __future__ import annotations

import os
from pathlib import Path

CONFIG_DIR = Path(__file__).resolve().parents[2] / "configs"


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


def ray_env() -> dict:
    return {"RAY_AUTH_MODE": "disabled", "RAY_DEDUP_LOGS": "0", "TOKENIZERS_PARALLELISM": "false"}


def set_ray_env() -> None:
    for key, value in ray_env().items():
        os.environ.setdefault(key, value)
