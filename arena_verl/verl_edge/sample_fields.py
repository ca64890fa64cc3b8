"""Fields of one verl sample (a one-row ``DataProto`` item) as the ``arena`` manager reads them: typed, and ``None``
for a value of the wrong type rather than an exception (a bad row still gets a reward)."""

from __future__ import annotations

from typing import Any

__all__ = ["float_or_none", "ground_truth_of", "int_or_none", "problem_text", "text_or_none", "extra_info_of"]


def text_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def float_or_none(value: Any) -> float | None:
    try:
        return None if value is None else float(value)
    except (TypeError, ValueError):
        return None


def int_or_none(value: Any) -> int | None:
    try:
        return None if value is None else int(value)
    except (TypeError, ValueError):
        return None


def extra_info_of(non_tensor: dict) -> dict:
    extra_info = non_tensor.get("extra_info") or {}
    return extra_info if isinstance(extra_info, dict) else {}


def ground_truth_of(non_tensor: dict) -> Any:
    reward_model = non_tensor.get("reward_model") or {}
    return reward_model.get("ground_truth") if isinstance(reward_model, dict) else None


def problem_text(item, tokenizer) -> str:
    """The problem as the judge sees it: the last user message of ``raw_prompt``, else the decoded prompt."""
    raw_prompt = item.non_tensor_batch.get("raw_prompt")
    if raw_prompt is not None:
        messages = list(raw_prompt)
        user = [m.get("content", "") for m in messages if isinstance(m, dict) and m.get("role") == "user"]
        if user and isinstance(user[-1], str):
            return user[-1]
    prompt_ids = item.batch["prompts"]
    prompt_mask = item.batch["attention_mask"][: prompt_ids.shape[-1]].bool()
    return tokenizer.decode(prompt_ids[prompt_mask], skip_special_tokens=True)
