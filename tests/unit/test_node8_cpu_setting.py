"""configs/arena_setting/node8_cpu.yaml (the run of tests/integration/test_node8_on_cpu.py) is node8 with shapes
scaled down and a short list of keys only a GPU can honour, each said why, and docs/cluster.md lists the same keys.
Read as yaml (no Hydra); the integration test compares the composed configs."""

from __future__ import annotations

import re

import yaml

from helpers import paths

SETTINGS = paths.CONFIGS / "arena_setting"
GPU_ONLY = {
    "trainer.device",
    "trainer.n_gpus_per_node",
    "ray_kwargs.ray_init.num_gpus",
    "actor_rollout_ref.model.override_config.attn_implementation",
    "actor_rollout_ref.actor.strategy",
    "actor_rollout_ref.actor.use_torch_compile",
    "actor_rollout_ref.actor.fsdp_config.mixed_precision.param_dtype",
    "actor_rollout_ref.ref.fsdp_config.mixed_precision.param_dtype",
    "actor_rollout_ref.rollout.dtype",
    "actor_rollout_ref.rollout.enforce_eager",
    "actor_rollout_ref.rollout.enable_sleep_mode",
    "actor_rollout_ref.rollout.free_cache_engine",
}
SHAPES = {
    "ray_kwargs.ray_init.num_cpus",
    "data.train_batch_size",
    "data.max_prompt_length",
    "data.max_response_length",
    "data.dataloader_num_workers",
    "transfer_queue.backend.SimpleStorage.num_data_storage_units",
    "actor_rollout_ref.actor.ppo_mini_batch_size",
    "actor_rollout_ref.rollout.max_model_len",
    "actor_rollout_ref.rollout.max_num_seqs",
    "actor_rollout_ref.rollout.max_num_batched_tokens",
    "actor_rollout_ref.rollout.agent.num_workers",
    "reward.num_workers",
}


def leaves(node, prefix=""):
    for key, value in node.items():
        if isinstance(value, dict):
            yield from leaves(value, f"{prefix}{key}.")
        else:
            yield f"{prefix}{key}", value


def test_node8_cpu_is_node8_plus_shapes_and_gpu_only_keys():
    own = yaml.safe_load((SETTINGS / "node8_cpu.yaml").read_text())
    assert own.pop("defaults") == ["node8", "_self_"]  # every key of node8 ...
    keys = dict(leaves(own))
    assert set(keys) == GPU_ONLY | SHAPES, sorted(set(keys) ^ (GPU_ONLY | SHAPES))  # ... but these
    node8 = dict(leaves(yaml.safe_load((SETTINGS / "node8.yaml").read_text())))
    # node8's own keys the CPU run changes are shapes, or its GPU count; node8's judge and limits are all kept
    assert set(node8) & set(keys) <= SHAPES | {"trainer.n_gpus_per_node"}
    assert not any(key.startswith("reward.arena") for key in keys)
    assert keys["data.train_batch_size"] < node8["data.train_batch_size"]


def test_every_changed_key_says_why_and_the_gpu_only_ones_are_documented():
    lines = (SETTINGS / "node8_cpu.yaml").read_text().splitlines()
    for line in lines:
        if re.match(r"^\s+[a-z_]+: \S", line) or re.match(r"^[a-z_]+: \S", line):  # a leaf
            assert re.search(r"# (GPU:|shape\b)", line), line
    cluster = (paths.REPO / "docs" / "cluster.md").read_text()
    section = cluster.split("## node8's own keys, on CPU", 1)[1].split("\n## ", 1)[0]
    for key in GPU_ONLY:
        assert f"`{key}`" in section, key
    assert "tests/integration/test_node8_on_cpu.py" in section
