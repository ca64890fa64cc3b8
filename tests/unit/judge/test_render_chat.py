"""The prompt a probability verdict is read at: the generation prompt, then what the model wrote after it."""

import pytest

from arena_verl.judge.backends.transformers_backend import render_chat

# DeepSeek-R1's kind of template: a past assistant turn keeps only what follows </think>, and the generation prompt
# opens the reasoning.
R1_LIKE = (
    "{% for m in messages %}{% if m['role'] == 'user' %}<|user|>{{ m['content'] }}"
    "{% else %}<|assistant|>{{ m['content'].split('</think>')[-1] }}<eos>{% endif %}{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|><think>\n{% endif %}"
)


@pytest.fixture(scope="module")
def tokenizer():
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    raw = Tokenizer(models.BPE(unk_token=None))
    raw.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    trainer = trainers.BpeTrainer(
        vocab_size=300, special_tokens=["<eos>"], initial_alphabet=pre_tokenizers.ByteLevel.alphabet()
    )
    raw.train_from_iterator(["Which is better? [[A]] or [[B]]"] * 20, trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=raw, eos_token="<eos>")
    fast.chat_template = R1_LIKE
    return fast


def test_the_reasoning_is_read_after_the_generation_prompt_it_was_written_after(tokenizer):
    messages = [{"role": "user", "content": "Which is better?"}]
    reply = "A checks its steps; B guesses.\n</think>\n\n[["
    prompt = render_chat(tokenizer, messages, reply)
    assert prompt == "<|user|>Which is better?<|assistant|><think>\n" + reply  # the reasoning kept, in place


def test_special_token_strings_the_judge_wrote_stay_text(tokenizer):
    messages = [{"role": "user", "content": "Which is better?"}]
    prompt = render_chat(tokenizer, messages, "A ends here<eos> and B\n</think>\n\n[[")
    assert "<eos>" not in prompt.split("<think>", 1)[1]
    assert tokenizer.eos_token_id not in tokenizer(prompt.split("<think>", 1)[1])["input_ids"]


def test_without_a_continuation_it_is_the_generation_prompt(tokenizer):
    messages = [{"role": "user", "content": "Q"}]
    assert render_chat(tokenizer, messages) == "<|user|>Q<|assistant|><think>\n"
