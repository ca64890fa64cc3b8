"""reward.arena settings: defaults, group size from the rollout, and clear errors naming the key."""

import pytest
from omegaconf import OmegaConf

from arena_verl.backend_registry.builtin import VllmOptions
from arena_verl.settings import judge_settings, settings_from_config
from helpers import paths


def config(arena=None, n=8):
    cfg = {"actor_rollout_ref": {"rollout": {"n": n}}, "reward": {}}
    if arena is not None:
        cfg["reward"]["arena"] = arena
    return OmegaConf.create(cfg)


def test_defaults_and_group_size_from_rollout_n():
    s = settings_from_config(config())
    assert (s.referee.mode, s.tournament.strategy, s.referee.group_size, s.judge.backend) == (
        "arena",
        "live",
        8,
        "simulated",
    )
    assert settings_from_config(config({"group_size": 4})).referee.group_size == 4


def test_values_are_read_and_typed():
    s = settings_from_config(
        config({"mode": "tournament_all", "strategy": "info_gain", "budget": 20, "reward_scale": 0.75,
                "two_sided": True, "validation_splits": ["eval"],
                "judge": {"backend": "simulated", "sim_position_bias": 0.5}})
    )  # fmt: skip
    assert (
        s.referee.mode == "tournament_all"
        and s.tournament.budget == 20
        and s.referee.reward_scale == 0.75
        and s.tournament.two_sided is True
    )
    assert s.validation_splits == ("eval",) and s.judge.options.sim_position_bias == 0.5


@pytest.mark.parametrize(
    "arena, message",
    [
        ({"mode": "best_of_n"}, r"reward\.arena\.mode must be one of"),
        ({"strategy": "elo_ladder"}, r"reward\.arena\.strategy must be one of"),
        ({"moed": "arena"}, r"reward\.arena\.moed is not a known key"),
        ({"judge": {"backend": "gpt"}}, r"reward\.arena\.judge\.backend must be one of"),
        ({"judge": {"temprature": 1}}, r"reward\.arena\.judge\.temprature is not a known key"),
        ({"l2": 0}, r"reward\.arena\.l2 must be in \[1e-06, 1000\]"),
        ({"l2": 1e-13}, r"reward\.arena\.l2 must be in"),
        ({"l2": float("inf")}, r"reward\.arena\.l2 must be a finite number"),
        ({"reward_scale": -1}, r"reward\.arena\.reward_scale must be in \(0, 1\)"),
        ({"reward_scale": 1.0}, r"allow_reward_scale_above_one"),
        ({"reward_scale": float("inf"), "allow_reward_scale_above_one": True}, r"reward_scale must be a finite"),
        ({"verifier_timeout_s": 1e10}, r"reward\.arena\.verifier_timeout_s must be in \(0, 86400\]"),
        ({"group_deadline_s": float("inf")}, r"reward\.arena\.group_deadline_s must be a finite number"),
        ({"tournament_timeout_s": 0}, r"reward\.arena\.tournament_timeout_s must be in \(0, 86400\]"),
        ({"budget": 13, "strategy": "info_gain", "two_sided": True}, r"must be >= 14 \(N - 1, x2 with two_sided\)"),
        ({"mirror_augment": True, "order_effect": True}, r"mirror_augment and reward\.arena\.order_effect exclude"),
        ({"judge": {"temperature": -0.1}}, r"judge\.temperature must be in \[0, 100\]"),
        ({"judge": {"retry_temperature": -1}}, r"judge\.retry_temperature must be in"),
        ({"judge": {"top_p": 1.5}}, r"judge\.top_p must be in \(0, 1\]"),
        ({"judge": {"top_p": 0}}, r"judge\.top_p must be in \(0, 1\]"),
        ({"judge": {"timeout_s": float("nan")}}, r"judge\.timeout_s must be a finite number"),
        ({"group_deadline_s": "soon"}, r"reward\.arena\.group_deadline_s must be of type float"),
        ({"speculative": "yes"}, r"reward\.arena\.speculative must be of type bool"),
        ({"budget": 10, "strategy": "live"}, r"reward\.arena\.budget applies to the budgeted"),
        ({"budget": 3, "strategy": "info_gain"}, r"cannot connect a group of 8"),
        ({"num_referees": 0}, r"reward\.arena\.num_referees must be >= 1"),
        ({"answer_extraction": "loose"}, r"reward\.arena\.answer_extraction must be one of"),
        ({"validation_splits": "test"}, r"reward\.arena\.validation_splits must be a list of strings"),
        ("arena", r"reward\.arena must be a mapping"),
        ({"judge": {"backend": "transformers"}}, r"reward\.arena\.judge\.model_path is required"),
        ({"judge": {"backend": "openai", "model_path": "m"}}, r"reward\.arena\.judge\.base_url is required"),
        ({"judge": {"backend": "openai", "base_url": "http://x"}}, r"reward\.arena\.judge\.model_path is required"),
        ({"judge": {"retries": -1}}, r"reward\.arena\.judge\.retries must be in \[0, 100\]"),
        ({"judge": {"gpu_memory_utilization": 1.5}}, r"gpu_memory_utilization must be in \(0, 1\]"),
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
        config({"budget": None, "mode": None, "num_referees": 2.0,
                "judge": {"backend": "vllm", "model_path": "/m", "max_model_len": None, "num_engines": 2.0}})
    )  # fmt: skip
    assert s.tournament.budget is None and s.referee.mode == "arena" and s.num_referees == 2
    assert s.judge.options == VllmOptions(model_path="/m", max_model_len=None, num_engines=2)
    with pytest.raises(ValueError, match=r"reward\.arena\.num_referees must be of type int"):
        settings_from_config(config({"num_referees": 2.5}))
    with pytest.raises(ValueError, match=r"reward\.arena\.l2 must be of type float"):
        settings_from_config(config({"l2": True}))


def test_the_mode_picks_its_strategy_unless_one_is_given():
    assert settings_from_config(config({"mode": "tournament_all"})).tournament.strategy == "round_robin"  # ArenaRL
    assert (
        settings_from_config(config({"mode": "tournament_all", "strategy": None})).tournament.strategy == "round_robin"
    )
    assert settings_from_config(config({"mode": "tournament_all", "strategy": "live"})).tournament.strategy == "live"
    assert settings_from_config(config({"mode": "arena"})).tournament.strategy == "live"


def test_the_config_file_leaves_the_strategy_to_the_mode():

    manager = paths.CONFIGS / "arena_manager" / "default.yaml"
    arena = OmegaConf.load(manager).reward.arena
    arena.mode = "tournament_all"
    assert settings_from_config(config(OmegaConf.to_container(arena))).tournament.strategy == "round_robin"


def test_reward_scale_above_one_with_the_opt_in():
    s = settings_from_config(config({"reward_scale": 2.0, "allow_reward_scale_above_one": True}))
    assert s.referee.reward_scale == 2.0


def test_answer_extraction():
    assert settings_from_config(config()).answer_extraction == "boxed"
    assert settings_from_config(config({"answer_extraction": "lenient"})).answer_extraction == "lenient"


def test_the_call_budget_covers_every_step_of_a_probability_verdict():
    from arena_verl.core.names import PROBABILITY_READS_PER_VERDICT

    generate = judge_settings(timeout_s=10.0, retries=1, backoff_s=1.0, parse_retries=1)
    per_step = 2 * 10.0 + 4 * 1.0  # two tries of 10 s, backoff 2 x 1 s doubled
    assert generate.call_budget_s == 2 * per_step  # a re-ask
    probability = judge_settings(timeout_s=10.0, retries=1, backoff_s=1.0, parse_retries=1, verdict="probability")
    assert probability.call_budget_s == PROBABILITY_READS_PER_VERDICT * per_step  # no re-ask: the reads
    thinking = judge_settings(
        timeout_s=10.0, retries=1, backoff_s=1.0, parse_retries=1, verdict="probability", think_first=True
    )
    assert thinking.call_budget_s == 2 * (PROBABILITY_READS_PER_VERDICT + 1) * per_step  # reasoning, reads, re-asked
