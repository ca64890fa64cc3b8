"""The reward manager's own rules, without Ray: referee loss, sample keys, math routing of data sources."""

import asyncio
import functools
from types import SimpleNamespace

import pytest
import ray

from arena_verl.core.names import FALLBACK_REFEREE_LOST
from arena_verl.core.referee import Submission, Verdict
from arena_verl.judge import Trace
from arena_verl.settings import ArenaSettings, arena_settings
from arena_verl.verify.math_verifier import VerifyResult
from arena_verl.verl_edge import referee_client
from arena_verl.verl_edge.extra_info import sample_key
from arena_verl.verl_edge.judge_placement import with_verl_router
from arena_verl.verl_edge.reward_manager import ArenaRewardManager
from arena_verl.verl_edge.scorers import Scorers


class DeadHandle:
    def __init__(self, error):
        self.error = error
        self.calls = 0
        self.submit = self

    def remote(self, submission):
        self.calls += 1

        async def fail():
            raise self.error

        return fail()


def verdict_with(handle, monkeypatch, patience=0.5):
    monkeypatch.setattr(referee_client, "referee_handle", lambda settings, uid: handle)
    monkeypatch.setattr(referee_client, "UNAVAILABLE_PATIENCE_S", patience)
    client = referee_client.RefereeClient(arena_settings(group_size=8))
    submission = Submission("u", "k", "p", Trace("t"), verifier_reward=1.0)
    return asyncio.run(client.verdict(submission))


@pytest.mark.parametrize("error", [ray.exceptions.ActorDiedError(), RuntimeError("boom"), asyncio.TimeoutError()])
def test_a_lost_referee_gives_the_verifier_reward_at_once(monkeypatch, error):
    handle = DeadHandle(error)
    assert verdict_with(handle, monkeypatch) == Verdict(reward=1.0, fallback=FALLBACK_REFEREE_LOST)
    assert handle.calls == 1


def test_an_unavailable_referee_is_retried_until_patience_runs_out(monkeypatch):
    handle = DeadHandle(ray.exceptions.ActorUnavailableError("restarting", None))
    assert verdict_with(handle, monkeypatch, patience=1.0).fallback == FALLBACK_REFEREE_LOST
    assert handle.calls >= 2


def test_sample_keys_and_math_sources():
    assert sample_key(3) == "session-3"
    assert sample_key(None) != sample_key(None)  # one per call
    # The manager routes by the one data-source rule (arena_verl.core.sources) with its own settings' lists.
    manager = SimpleNamespace(settings=ArenaSettings())
    source = functools.partial(ArenaRewardManager._source, manager)
    assert source("openai/gsm8k").verifier == "math" and source("math_dapo").verifier == "math"
    assert source("gpqa_diamond").verifier == "multiple_choice"
    assert source("codecontests").verifier == "verl" and source("codecontests").template == "code"
    assert source("trivia").verifier == "verl" and source("trivia", "math").verifier == "math"  # the row's ability
    everything = SimpleNamespace(settings=arena_settings(math_data_sources=("*",)))
    assert ArenaRewardManager._source(everything, "trivia").verifier == "math"
    assert ArenaRewardManager._source(everything, "codecontests").verifier == "math"  # "*": all


def test_verl_served_judge_uses_the_router_address():
    from omegaconf import OmegaConf

    from arena_verl.settings import settings_from_config

    config = OmegaConf.create(
        {
            "actor_rollout_ref": {"rollout": {"n": 8}},
            "reward": {
                # verl serves the judge in a pool of its own, awake (arena_verl.verl_edge.judge_placement)
                "reward_model": {
                    "enable": True,
                    "enable_resource_pool": True,
                    "model_path": "/models/judge",
                    "rollout": {"free_cache_engine": False},
                },
                "arena": {"judge": {"backend": "openai", "base_url": "verl"}},
            },
        }
    )
    settings = with_verl_router(settings_from_config(config), config, "127.0.0.1:8000")
    assert (
        settings.judge.options.base_url == "http://127.0.0.1:8000/v1"
        and settings.judge.options.model_path == "/models/judge"
    )
    with pytest.raises(ValueError, match="reward.reward_model.enable=true"):
        with_verl_router(settings_from_config(config), config, None)
    config.reward.reward_model.rollout.free_cache_engine = True  # verl's default: the judge would sleep for good
    with pytest.raises(ValueError, match="free_cache_engine"):
        with_verl_router(settings_from_config(config), config, "127.0.0.1:8000")


def test_verl_reward_fn_is_the_verifier():
    from arena_verl.verl_reward_fn import compute_score

    assert compute_score("anything", "so \\boxed{1/2}", "0.5") == {"score": 1.0, "acc": 1.0}
    assert compute_score("anything", "no answer", "0.5")["score"] == 0.0


def test_multiple_choice_sources_are_scored_by_letter_not_by_verls_default():
    """verl 0.9.1's default_compute_score has no GPQA scorer (it raises, which would score every sample 0)."""
    from verl.utils.reward_score import default_compute_score

    manager = ArenaRewardManager.__new__(ArenaRewardManager)
    manager.settings = arena_settings(group_size=8)
    manager.scorers = Scorers(None, default_compute_score)

    def verify(text, truth, source="gpqa_diamond"):
        async def run():
            manager.loop = asyncio.get_running_loop()
            return await manager._verify(manager._source(source), text, truth, {})

        return asyncio.run(run())

    assert verify("... so the answer is \\boxed{C}", "C") == VerifyResult(1.0, "correct")
    assert verify("\\boxed{B}", "C").status == "wrong"
    assert verify("\\boxed{B} or \\boxed{C}", "C").status == "no_answer"  # a hedge never wins
    assert verify("\\boxed{C}", "not a letter").status == "error"  # a broken data file: counted, no crash
    assert verify("\\boxed{C}", "C", source="my_gpqa_subset").score == 1.0
    assert verify("\\boxed{C}", "C", source="other_mc").status == "error"  # not listed: verl's default raises


@pytest.mark.parametrize(
    ("result", "solved"),
    [(1.0, True), (True, True), (0.3, False), (-1.0, False), ({"score": -1.0, "acc": False}, False),
     ({"score": 1.0, "acc": True}, True), ({"score": 0.5, "acc": True}, True), (0.9999, False)],
)  # fmt: skip
def test_acc_of_a_reward_function_is_its_own_acc_or_a_full_score(result, solved):
    """A code scorer's fraction of passed tests (0.3) is not a solved problem (pass@k and DAPO's acc filter)."""
    manager = ArenaRewardManager.__new__(ArenaRewardManager)
    manager.settings = arena_settings(group_size=8)
    manager.scorers = Scorers(None, lambda **kwargs: result)

    async def run():
        manager.loop = asyncio.get_running_loop()
        return await manager._verify(manager._source("codecontests"), "print(1)", "{}", {})

    assert (asyncio.run(run()).status == "correct") is solved


def test_the_arenas_own_reward_fn_keeps_the_managers_routing():
    """With verl serving the judge, verl calls the manager only beside a custom reward function, so the recipes set
    arena_verl.verl_reward_fn (math only). That must not turn GPQA and code into math: the manager keeps its own
    routing, and code goes to verl's scorer with the job's sandbox URL."""
    from omegaconf import OmegaConf

    from arena_verl.verl_reward_fn import compute_score as own_fn

    def manager_for(path, function=own_fn):
        config = OmegaConf.create({
            "actor_rollout_ref": {"rollout": {"n": 8}},
            "reward": {"custom_reward_function": {"path": path, "name": "compute_score"},
                       "sandbox_fusion": {"url": "http://sandbox:8080/run_code", "max_concurrent": 4},
                       "arena": {"mode": "rlvr"}},
        })  # fmt: skip
        return ArenaRewardManager(config, tokenizer=None, compute_score=function)

    ours = manager_for("pkg://arena_verl.verl_reward_fn")
    assert ours.scorers.user is None
    assert ours.scorers.default.keywords["sandbox_fusion_url"] == "http://sandbox:8080/run_code"

    async def verify(manager, source, text, truth):
        manager.loop = asyncio.get_running_loop()
        return await manager._verify(manager._source(source), text, truth, {})

    assert asyncio.run(verify(ours, "gpqa_diamond", "\\boxed{A} or \\boxed{B}", "A")).status == "no_answer"

    def users_fn(**kwargs):
        return 0.25

    users = manager_for("/home/me/my_reward.py", users_fn)  # a user's own function replaces the routing (documented)
    assert users.scorers.user is users_fn
    assert asyncio.run(verify(users, "gpqa_diamond", "\\boxed{A}", "A")).score == 0.25
