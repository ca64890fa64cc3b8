"""A model judge sends its prompt's special tokens exactly once: a chat template that emits a BOS (Llama, Mistral,
DeepSeek) is tokenised without the tokenizer adding another (text handed to vLLM or transformers got two)."""

import pytest

from arena_verl.judge.backends.transformers_backend import prompt_token_ids, render_chat

MESSAGES = [{"role": "user", "content": "Which trace is better?"}]


@pytest.fixture(scope="module")
def bos_tokenizer(tmp_path_factory):
    """A byte-level tokenizer that adds a BOS when it encodes (like Llama's) and a template that writes one too."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    tokenizer = Tokenizer(models.BPE(unk_token=None))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    alphabet = pre_tokenizers.ByteLevel.alphabet()
    trainer = trainers.BpeTrainer(vocab_size=300, special_tokens=["<s>", "</s>"], initial_alphabet=alphabet)
    tokenizer.train_from_iterator(["Which trace is better? [user] [assistant]"] * 20, trainer)
    bos = tokenizer.token_to_id("<s>")
    tokenizer.post_processor = processors.TemplateProcessing(single="<s> $A", special_tokens=[("<s>", bos)])
    fast = PreTrainedTokenizerFast(tokenizer_object=tokenizer, bos_token="<s>", eos_token="</s>")
    fast.chat_template = (
        "{{ bos_token }}{% for m in messages %}[{{ m['role'] }}] {{ m['content'] }}\n{% endfor %}"
        "{% if add_generation_prompt %}[assistant] {% endif %}"
    )
    return fast


def test_a_template_that_writes_a_bos_gives_one(bos_tokenizer):
    bos = bos_tokenizer.bos_token_id
    assert bos_tokenizer(render_chat(bos_tokenizer, MESSAGES))["input_ids"].count(bos) == 2  # the old path
    ids = prompt_token_ids(bos_tokenizer, MESSAGES)
    assert ids.count(bos) == 1 and ids[0] == bos
    assert bos_tokenizer.decode(ids) == render_chat(bos_tokenizer, MESSAGES)  # what the template produced, exactly
    with_reasoning = prompt_token_ids(bos_tokenizer, MESSAGES, "I compare them. [[")
    assert with_reasoning.count(bos) == 1 and with_reasoning[: len(ids)] == ids


def test_without_a_template_the_tokenizer_adds_its_own(bos_tokenizer):
    plain = bos_tokenizer.__class__(tokenizer_object=bos_tokenizer.backend_tokenizer, bos_token="<s>")
    plain.chat_template = None
    ids = prompt_token_ids(plain, MESSAGES)
    assert ids.count(plain.bos_token_id) == 1 and ids[0] == plain.bos_token_id


class RecordingEngine:
    """Stands in for vLLM's AsyncLLM: records what it was asked to generate from."""

    def __init__(self):
        self.prompts = []

    async def generate(self, prompt, params, request_id):
        from types import SimpleNamespace

        self.prompts.append(prompt)
        yield SimpleNamespace(outputs=[SimpleNamespace(text="[[A]]", finish_reason="stop", logprobs=None)])


def test_the_vllm_engine_gets_token_ids_with_one_bos(bos_tokenizer):
    import asyncio

    from arena_verl.judge.backends.vllm_backend import VLLMEngineActor
    from arena_verl.settings import JudgeSettings

    engine = RecordingEngine()
    actor = VLLMEngineActor(JudgeSettings(), engine=engine, tokenizer=bos_tokenizer, sampling_params=dict)
    text, truncated, usage = asyncio.run(actor.generate(MESSAGES, 0.0))
    assert (text, truncated, usage) == ("[[A]]", False, (None, None))  # the fake output reports no tokens
    (prompt,) = engine.prompts
    assert prompt == {"prompt_token_ids": prompt_token_ids(bos_tokenizer, MESSAGES)}
    assert prompt["prompt_token_ids"].count(bos_tokenizer.bos_token_id) == 1
