"""The keys of a composed config, and the ones verl 0.9.1 would silently ignore."""

from omegaconf import OmegaConf

# Sections whose keys are not declared in verl's yaml: ours, and Ray's runtime_env (handed to ray.init as it is).
OPEN_SECTIONS = ("reward.arena.", "ray_kwargs.ray_init.runtime_env.env_vars.")
# Top-level sections verl 0.9.1 still accepts but main_ppo ignores (reward settings live under reward.*).
LEGACY_SECTIONS = ("reward_model.", "custom_reward_function.")


def leaves(config) -> dict:
    def walk(node, prefix):
        if isinstance(node, dict):
            for key, value in node.items():
                yield from walk(value, f"{prefix}{key}.")
        else:
            yield prefix[:-1], node

    return dict(walk(OmegaConf.to_container(config, resolve=False), ""))


def suspicious_keys(config, verl_defaults: dict) -> list[str]:
    """Keys verl does not have (outside reward.arena), and legacy keys set away from verl's defaults."""
    ours = leaves(config)
    unknown = [k for k in ours if k not in verl_defaults and not k.startswith(OPEN_SECTIONS)]
    legacy = [k for k in ours if k.startswith(LEGACY_SECTIONS) and ours[k] != verl_defaults.get(k)]
    return sorted(unknown + legacy)
