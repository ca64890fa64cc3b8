"""The vllm judge's engine start bound is a setting, reward.arena.judge.start_timeout_s (it was a 30-minute constant),
with a default the docs justify; an engine not ready in time fails with an error that names the key to raise."""

from __future__ import annotations

import asyncio

import pytest
import ray

from arena_verl.core.judge_protocol import Trace
from arena_verl.judge.backends.model_judge import ModelJudge
from arena_verl.judge.backends.vllm_backend import ENGINE_START_TIMEOUT_S, JudgeStartError, VLLMJudge
from arena_verl.settings import JudgeSettings, judge_settings, settings_from_config
from helpers import paths


class NeverReady:
    """A VLLMEngineActor handle whose engine never finishes loading."""

    class _Ready:
        def remote(self):
            return asyncio.ensure_future(asyncio.sleep(60))

    ready = _Ready()


class OneEngineJudge(VLLMJudge):
    """VLLMJudge's pool over one fake engine: no tokenizer, no Ray (the start bound comes from the settings)."""

    def __init__(self, settings: JudgeSettings):
        ModelJudge.__init__(self, settings)
        self._engines = [NeverReady()]
        self._init_pool()


def test_the_start_bound_is_the_setting_and_its_error_names_the_key(monkeypatch):
    monkeypatch.setattr(ray, "kill", lambda engine: None)
    settings = judge_settings(backend="vllm", model_path="m", start_timeout_s=0.05, timeout_s=1.0, retries=0)
    judge = OneEngineJudge(settings)
    with pytest.raises(JudgeStartError) as caught:
        asyncio.run(judge.compare("p", Trace("a"), Trace("b")))
    message = str(caught.value)
    assert "was not ready after 0 s" in message and "reward.arena.judge.start_timeout_s" in message


def test_the_key_is_read_checked_and_defaults_to_an_hour():
    assert JudgeSettings(backend="vllm").options.start_timeout_s == 3600.0 == ENGINE_START_TIMEOUT_S
    vllm = {"backend": "vllm", "model_path": "m"}
    judge = settings_from_config(
        {"reward": {"arena": {"group_size": 2, "judge": {**vllm, "start_timeout_s": 7200}}}}
    ).judge
    assert judge.options.start_timeout_s == 7200.0
    with pytest.raises(ValueError, match=r"reward\.arena\.judge\.start_timeout_s must be in \(0, 86400\]"):
        settings_from_config({"reward": {"arena": {"group_size": 2, "judge": {**vllm, "start_timeout_s": 0}}}})


def test_the_default_is_the_judge_jobs_own_start_bound_and_documented():
    """3600 s, as scripts/slurm/judge_serve.sbatch waits for `vllm serve` (JUDGE_START_TIMEOUT_S), and the config
    reference says why."""
    lib = (paths.SCRIPTS / "slurm" / "lib.sh").read_text()
    assert "start_s=${JUDGE_START_TIMEOUT_S:-3600}" in lib
    row = next(line for line in (paths.REPO / "docs" / "config.md").read_text().splitlines()
               if line.startswith("| `start_timeout_s` |"))  # fmt: skip
    default = row.split("|")[2].strip()  # the generated table writes a float key's default as `3600.0`
    assert default in ("`3600`", "`3600.0`") and "JUDGE_START_TIMEOUT_S" in row and "raise it" in row
