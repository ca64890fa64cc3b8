"""reward.arena settings: defaults, group size from the rollout, and clear errors naming the key."""

import pytest
from omegaconf import OmegaConf

from arena_verl.settings import settings_from_config


def config(arena=None, n=8):
    cfg = {"actor_rollout_ref": {"rollout": {"n": n}}, "reward": {}}
    if arena is not None:
        cfg["reward"]["arena"] = arena
    return OmegaConf.create(cfg)


def test_defaults_and_group_size_from_rollout_n():
    s = settings_from_config(config())
    assert (s.mode, s.strategy, s.group_size, s.judge.backend) == ("arena", "live", 8, "simulated")
    assert settings_from_config(config({"group_size": 4})).group_size == 4


def test_values_are_read_and_typed():
    s = settings_from_config(
        config({"mode": "tournament_all", "strategy": "info_gain", "budget": 20, "reward_scale": 1, "two_sided": True,
                "validation_splits": ["eval"], "judge": {"backend": "simulated", "sim_position_bias": 0.5}})
    )  # fmt: skip
    assert s.mode == "tournament_all" and s.budget == 20 and s.reward_scale == 1.0 and s.two_sided is True
    assert s.validation_splits == ("eval",) and s.judge.sim_position_bias == 0.5


@pytest.mark.parametrize(
    "arena, message",
    [
        ({"mode": "best_of_n"}, r"reward\.arena\.mode must be one of"),
        ({"strategy": "swiss"}, r"reward\.arena\.strategy must be one of"),
        ({"moed": "arena"}, r"reward\.arena\.moed is not a known key"),
        ({"judge": {"backend": "gpt"}}, r"reward\.arena\.judge\.backend must be one of"),
        ({"judge": {"temprature": 1}}, r"reward\.arena\.judge\.temprature is not a known key"),
        ({"l2": 0}, r"reward\.arena\.l2 must be > 0"),
        ({"reward_scale": -1}, r"reward\.arena\.reward_scale must be >= 0"),
        ({"group_deadline_s": "soon"}, r"reward\.arena\.group_deadline_s must be of type float"),
        ({"speculative": "yes"}, r"reward\.arena\.speculative must be of type bool"),
        ({"budget": 10, "strategy": "live"}, r"reward\.arena\.budget applies to the budgeted"),
        ({"budget": 3, "strategy": "info_gain"}, r"cannot connect a group of 8"),
        ({"num_referees": 0}, r"reward\.arena\.num_referees must be >= 1"),
        ({"validation_splits": "test"}, r"reward\.arena\.validation_splits must be a list of strings"),
        ("arena", r"reward\.arena must be a mapping"),
        ({"judge": {"backend": "transformers"}}, r"reward\.arena\.judge\.model_path is required"),
        ({"judge": {"backend": "openai", "model_path": "m"}}, r"reward\.arena\.judge\.base_url is required"),
        ({"judge": {"backend": "openai", "base_url": "http://x"}}, r"reward\.arena\.judge\.model_path is required"),
        ({"judge": {"retries": -1}}, r"reward\.arena\.judge\.retries must be >= 0"),
        ({"judge": {"gpu_memory_utilization": 1.5}}, r"gpu_memory_utilization in \(0, 1\]"),
    ],
)
def test_bad_values_name_the_key(arena, message):
    with pytest.raises(ValueError, match=message):
        settings_from_config(config(arena))


def test_missing_rollout_n_is_an_error():
    with pytest.raises(ValueError, match="actor_rollout_ref.rollout.n"):
        settings_from_config(OmegaConf.create({"reward": {"arena": {}}}))


def test_nulls_and_numbers():
    s = settings_from_config(
        config({"budget": None, "mode": None, "num_referees": 2.0, "judge": {"max_model_len": None}})
    )
    assert s.budget is None and s.mode == "arena" and s.num_referees == 2 and s.judge.max_model_len is None
    with pytest.raises(ValueError, match=r"reward\.arena\.num_referees must be of type int"):
        settings_from_config(config({"num_referees": 2.5}))
    with pytest.raises(ValueError, match=r"reward\.arena\.l2 must be of type float"):
        settings_from_config(config({"l2": True}))
