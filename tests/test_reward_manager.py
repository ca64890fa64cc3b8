"""The reward manager's own rules, without Ray: referee loss, sample keys, math routing of data sources."""

import asyncio

import pytest
import ray

from arena_verl import reward_manager
from arena_verl.judge import Trace
from arena_verl.referee import FALLBACK_REFEREE_LOST, Submission, Verdict
from arena_verl.settings import ArenaSettings


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
    monkeypatch.setattr(reward_manager, "referee_handle", lambda settings, uid: handle)
    monkeypatch.setattr(reward_manager, "_UNAVAILABLE_PATIENCE_S", patience)
    manager = reward_manager.ArenaRewardManager.__new__(reward_manager.ArenaRewardManager)
    manager.settings = ArenaSettings(group_size=8)
    submission = Submission("u", "k", "p", Trace("t"), verifier_reward=1.0)
    return asyncio.run(manager._referee_verdict(submission))


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
    assert reward_manager._sample_key(3) == "session-3"
    assert reward_manager._sample_key(None) != reward_manager._sample_key(None)  # one per call
    patterns = ArenaSettings().math_data_sources
    assert reward_manager._is_math("openai/gsm8k", patterns) and reward_manager._is_math("math_dapo", patterns)
    assert not reward_manager._is_math("codecontests", patterns)
    assert reward_manager._is_math("codecontests", ("*",))
