"""A judge on a local transformers model (CPU or one GPU): small judges, and tests with a tiny local model.

Generation runs in a worker thread so the referee's event loop stays responsive; one model serves one generation
at a time (a transformers model is not safe to call from several threads at once). ``verdict: probability`` reads
the labels from one forward pass over the prompt and the start of the assistant turn (``[[``): the softmax of the
last position's logits, gathered at the label tokens."""

from __future__ import annotations

import asyncio
import threading

from arena_verl.core.judge_protocol import Reply
from arena_verl.judge.backends.model_judge import ModelJudge
from arena_verl.judge.prompting.hygiene import special_token_strings
from arena_verl.judge.prompting.templates import check_judge_templates
from arena_verl.judge.verdicts.label_probs import LabelTargets, LabelVocabulary
from arena_verl.settings_judge import JudgeSettings

__all__ = ["TransformersJudge", "prompt_token_ids", "render_chat"]


def render_chat(tokenizer, messages: list[dict], continuation: str | None = None) -> str:
    """The prompt text: the tokenizer's chat template when it has one, else the messages' contents. With
    ``continuation`` the assistant turn already holds it (the model writes what comes next): the generation prompt
    followed by the continuation, exactly what the model saw and wrote when the continuation is its own reasoning
    (``think_first``). Re-rendering it as a finished assistant message instead would let templates that drop the
    reasoning of past turns (DeepSeek-R1's) cut it out, or refuse it. Special-token strings the continuation spells
    out are broken up, so that they stay text."""
    if getattr(tokenizer, "chat_template", None):
        prompt = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
    else:
        prompt = "\n\n".join(m["content"] for m in messages) + "\n\n"
    if continuation is None:
        return prompt
    for special in special_token_strings(tokenizer):
        if len(special) > 1 and special in continuation:
            continuation = continuation.replace(special, special[0] + "\u200b" + special[1:])
    return prompt + continuation


def prompt_token_ids(tokenizer, messages: list[dict], continuation: str | None = None) -> list[int]:
    """The prompt's token ids with its special tokens exactly once. A chat template's rendering already holds the
    ones it wants (a BOS for Llama, Mistral, DeepSeek), so the text is tokenised without adding them again (that
    gave two BOS); a prompt without a template gets the tokenizer's usual ones, as a plain text prompt would."""
    text = render_chat(tokenizer, messages, continuation)
    return list(tokenizer.encode(text, add_special_tokens=not getattr(tokenizer, "chat_template", None)))


class TransformersJudge(ModelJudge):
    name = "transformers"

    def __init__(self, settings: JudgeSettings):
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        check_judge_templates(settings)  # before the model is loaded
        self.tokenizer = AutoTokenizer.from_pretrained(settings.options.model_path)
        dtype = "auto" if settings.options.dtype == "auto" else getattr(torch, settings.options.dtype)
        self.model = AutoModelForCausalLM.from_pretrained(settings.options.model_path, dtype=dtype).to(
            settings.options.device
        )
        self.model.eval()
        self._model_lock = threading.Lock()
        # Every id that ends a generation (Llama-3 instruct models stop at <|eot_id|> as well as at eos).
        configured = getattr(self.model.generation_config, "eos_token_id", None)
        configured = configured if isinstance(configured, (list, tuple)) else [configured]
        self._stop_ids = {int(i) for i in (*configured, self.tokenizer.eos_token_id) if i is not None}
        super().__init__(
            settings,
            count_tokens=lambda text: len(self.tokenizer.encode(text)),
            special_tokens=special_token_strings(self.tokenizer),
        )
        self.vocabulary = LabelVocabulary(self.tokenizer) if settings.verdict == "probability" else None

    async def _generate(self, messages: list[dict], temperature: float, group: str | None = None) -> Reply:
        ids = prompt_token_ids(self.tokenizer, messages)
        return await asyncio.get_running_loop().run_in_executor(None, self._generate_sync, ids, temperature)

    def _inputs(self, ids: list[int]) -> dict:
        import torch

        input_ids = torch.tensor([ids], dtype=torch.long, device=self.model.device)
        return {"input_ids": input_ids, "attention_mask": torch.ones_like(input_ids)}

    def _generate_sync(self, ids: list[int], temperature: float) -> Reply:
        import torch

        inputs = self._inputs(ids)
        sampling = {"do_sample": True, "temperature": temperature, "top_p": self.settings.top_p}
        pad_id = self.tokenizer.pad_token_id
        with self._model_lock, torch.inference_mode():
            output = self.model.generate(
                **inputs,
                max_new_tokens=self.settings.max_new_tokens,
                pad_token_id=self.tokenizer.eos_token_id if pad_id is None else pad_id,
                **(sampling if temperature > 0 else {"do_sample": False}),
            )
        new_tokens = output[0, inputs["input_ids"].shape[1] :]
        ended = len(new_tokens) < self.settings.max_new_tokens or int(new_tokens[-1]) in self._stop_ids
        return Reply(self.tokenizer.decode(new_tokens, skip_special_tokens=True), truncated=not ended)

    async def _next_token_probs(
        self, messages: list[dict], continuation: str, targets: LabelTargets, group: str | None = None
    ) -> dict:
        prompt = prompt_token_ids(self.tokenizer, messages, continuation)
        ids = self.vocabulary.token_ids(targets)
        probabilities = await asyncio.get_running_loop().run_in_executor(None, self._label_probs_sync, prompt, ids)
        return self.vocabulary.by_text(zip(ids, probabilities))

    def _label_probs_sync(self, prompt: list[int], ids: tuple[int, ...]) -> list[float]:
        """The next-token probabilities of ``ids`` after the ``prompt`` ids: one forward pass, softmax in float32."""
        import torch

        inputs = self._inputs(prompt)
        with self._model_lock, torch.inference_mode():
            try:  # the last position's logits only (a long prompt's would take vocab x length floats)
                output = self.model(**inputs, logits_to_keep=1)
            except TypeError:  # a model class without logits_to_keep
                output = self.model(**inputs)
        logits = output.logits[0, -1].float()
        probabilities = torch.softmax(logits, dim=-1)
        return probabilities[list(ids)].tolist() if ids else []
