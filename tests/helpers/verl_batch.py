"""verl config and Ray environment for the integration tests (batches come from arena_verl.testing.toy)."""

from __future__ import annotations

from pathlib import Path

from helpers.ray_local import RAY_ENV, set_ray_env  # noqa: F401  (set_ray_env: re-exported for the tests)

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
    return dict(RAY_ENV)
