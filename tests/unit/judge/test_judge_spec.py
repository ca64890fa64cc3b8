"""The ``--judge`` grammar: every scheme, every error, and the canonical spec a score file records."""

from __future__ import annotations

import dataclasses

import pytest

from arena_verl.judge import SimulatedTraceJudge, make_judge
from arena_verl.judge.spec import SIM_OPTIONS, judge_settings_from_spec, judge_spec
from arena_verl.settings import JudgeSettings


@pytest.fixture
def model_folder(tmp_path):
    folder = tmp_path / "judge-model"
    folder.mkdir()
    return folder


def test_simulated_has_the_defaults():
    assert judge_settings_from_spec("simulated") == JudgeSettings(backend="simulated")


@pytest.mark.parametrize("option, field", sorted(SIM_OPTIONS.items()))
def test_each_simulated_option_sets_its_field(option, field):
    value = 3 if field == "seed" else 0.25
    settings = judge_settings_from_spec(f"simulated?{option}={value}")
    assert settings.key(field) == value
    assert settings.key(field) != JudgeSettings().key(field)


def test_simulated_options_combine_and_reach_the_judge():
    settings = judge_settings_from_spec("simulated?latency=0.2&position_bias=0.5&seed=7")
    judge = make_judge(settings)
    assert isinstance(judge, SimulatedTraceJudge)
    assert (judge.latency_s, judge.position_bias, judge.seed) == (0.2, 0.5, 7)


@pytest.mark.parametrize("backend", ["transformers", "vllm"])
def test_local_backends_take_an_existing_folder_as_an_absolute_path(backend, model_folder, monkeypatch):
    monkeypatch.chdir(model_folder.parent)
    settings = judge_settings_from_spec(f"{backend}:{model_folder.name}")
    assert settings.backend == backend
    assert settings.options.model_path == str(model_folder.resolve())


@pytest.mark.parametrize("url", ["http://localhost:8000/v1", "https://api.example.com", "http://10.0.0.2:30000"])
def test_openai_takes_a_url_and_the_served_model(url):
    settings = judge_settings_from_spec(f"openai:{url}#Qwen/Qwen3-8B")
    assert (settings.backend, settings.options.base_url, settings.options.model_path) == (
        "openai",
        url,
        "Qwen/Qwen3-8B",
    )
    # the key is read from the environment, as usual
    assert settings.options.api_key_env == JudgeSettings(backend="openai").options.api_key_env


def test_overrides_are_further_judge_settings():
    settings = judge_settings_from_spec("openai:http://h:1#m", max_concurrency=4, api_key_env="JUDGE_KEY")
    assert (settings.max_concurrency, settings.options.api_key_env) == (4, "JUDGE_KEY")


@pytest.mark.parametrize(
    "spec, message",
    [
        ("", "empty"),
        ("   ", "empty"),
        ("gpt4", "unknown judge 'gpt4'"),
        ("sglang:/models/x", "unknown judge 'sglang'"),
        ("Simulated", "unknown judge"),
        ("simulated:/models/x", "takes no path"),
        ("simulated?", "nothing after '?'"),
        ("simulated?temperature=1", "unknown simulated option 'temperature'"),
        ("simulated?latency", "has no value"),
        ("simulated?latency=", "has no value"),
        ("simulated?latency=fast", "is not a number"),
        ("simulated?latency=1&latency=2", "given twice"),
        ("simulated?latency=-1", "sim_latency_s must be in [0, 3600]"),
        ("simulated?tie_rate=2", "sim_tie_rate must be in [0, 1]"),
        ("simulated?sharpness=nan", "sim_sharpness must be a finite number"),
        ("simulated?seed=1.5", "seed must be of type int"),
        ("transformers", "transformers needs a model folder"),
        ("vllm", "vllm needs a model folder"),
        ("transformers:", "no model folder"),
        ("vllm:  ", "no model folder"),
        ("vllm:/no/such/model", "'/no/such/model' does not exist"),
        ("openai", "openai needs a URL and a model"),
        ("openai:http://localhost:8000/v1", "no '#MODEL'"),
        ("openai:http://localhost:8000/v1#", "empty model name"),
        ("openai:ftp://localhost/v1#m", "not an http(s) URL"),
        ("openai:localhost:8000#m", "not an http(s) URL"),
        ("openai:http://#m", "not an http(s) URL"),
        ("openai:verl#m", "not an http(s) URL"),
    ],
)
def test_bad_specs_are_clear_errors(spec, message):
    with pytest.raises(ValueError, match="judge ") as error:
        judge_settings_from_spec(spec)
    assert message in str(error.value)
    assert repr(spec.strip() if spec.strip() else spec) in str(error.value)  # the message quotes the spec


def test_a_file_is_not_a_model_folder(tmp_path):
    weights = tmp_path / "model.safetensors"
    weights.write_bytes(b"")
    with pytest.raises(ValueError, match="is not a folder"):
        judge_settings_from_spec(f"transformers:{weights}")


def test_an_unknown_override_is_named():
    with pytest.raises(ValueError, match=r"reward\.arena\.judge\.temprature is not a known key"):
        judge_settings_from_spec("simulated", temprature=0.5)


def test_an_override_is_validated_like_a_config_value():
    with pytest.raises(ValueError, match="max_concurrency must be >= 1"):
        judge_settings_from_spec("simulated", max_concurrency=0)


@pytest.mark.parametrize(
    "spec", ["simulated", "simulated?sharpness=2&position_bias=0.5&seed=3", "openai:https://h:8000/v1#org/model"]
)
def test_the_canonical_spec_reads_back_to_the_same_settings(spec):
    settings = judge_settings_from_spec(spec)
    assert judge_settings_from_spec(judge_spec(settings)) == settings


def test_the_canonical_spec_of_a_folder_is_absolute(model_folder, monkeypatch):
    monkeypatch.chdir(model_folder)
    spec = judge_spec(judge_settings_from_spec("vllm:."))
    assert spec == f"vllm:{model_folder.resolve()}"
    assert judge_settings_from_spec(spec).options.model_path == str(model_folder.resolve())


def test_latency_is_not_part_of_a_judges_identity_but_its_verdict_options_are():
    slow = judge_settings_from_spec("simulated?latency=0.5&latency_sigma=0.3")
    assert judge_spec(slow) == judge_spec(judge_settings_from_spec("simulated"))
    assert judge_settings_from_spec(judge_spec(slow)) == dataclasses.replace(
        slow, options=dataclasses.replace(slow.options, sim_latency_s=0, sim_latency_sigma=0)
    )
    biased = judge_settings_from_spec("simulated?position_bias=0.5")
    assert judge_spec(biased) != judge_spec(slow)
