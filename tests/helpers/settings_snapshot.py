"""The settings snapshot taken before the settings redesign (tests/data/settings_snapshot.json) and what reads it."""

from __future__ import annotations

import json

from helpers import paths
from helpers.config_keys import leaves

SNAPSHOT = json.loads((paths.REPO / "tests" / "data" / "settings_snapshot.json").read_text(encoding="utf-8"))
# Keys added since the snapshot, at their defaults.
ADDED = {
    "reward.arena.plugins": [],
    "reward.arena.swiss_rounds": None,
    "reward.arena.judge.ensemble.members": [],
    "reward.arena.judge.ensemble.combine": "mean",
    "reward.arena.judge.ensemble.per_comparison": None,
    "reward.arena.judge.ensemble.quorum": 1,
    "reward.arena.judge.ensemble.primary_name": "judge",
    "reward.arena.breaker_open_after_s": None,
    "reward.arena.breaker_probe_s": 10.0,
    "reward.arena.groups_remembered": 20_000,
    "reward.arena.steps_remembered": 512,
}
# Keys the old settings listed whatever the backend; now a backend's own keys are read for that backend only.
BACKEND_OWN = {
    "model_path", "device", "dtype", "base_url", "base_url_file", "api_key_env", "tokenizer", "num_engines",
    "tensor_parallel_size", "gpu_memory_utilization", "max_model_len", "enable_prefix_caching", "start_timeout_s",
    "callable", "callable_kwargs", "sim_sharpness", "sim_position_bias", "sim_tie_rate", "sim_parse_failure_rate",
    "sim_latency_s", "sim_latency_sigma",
}  # fmt: skip


def arena_leaves(config) -> dict:
    return {k: v for k, v in leaves(config).items() if k.startswith("reward.arena.")}


def tree(flat: dict) -> dict:
    root: dict = {}
    for key, value in flat.items():
        node = root
        *parents, last = key.split(".")
        for part in parents:
            node = node.setdefault(part, {})
        node[last] = value
    return root
