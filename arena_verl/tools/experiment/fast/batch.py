"""The fast trainer's data: a verl parquet file's rows as the rollout renders their prompts, and a step's samples as
the ``DataProto`` verl's reward loop receives (left-padded prompts, right-padded responses, the row's
``data_source``/``reward_model``/``extra_info``/``raw_prompt``, the group's ``uid``, the sample's ``session_id`` and
the step's ``global_steps``, as the V1 trainer sends them)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from arena_verl.core.errors import InputError

__all__ = ["PromptRow", "Samples", "read_rows", "reward_batch"]

_OWN_COLUMNS = ("prompt", "data_source", "reward_model", "extra_info")


@dataclass(frozen=True)
class PromptRow:
    messages: list
    data_source: str
    reward_model: dict
    extra_info: dict
    prompt_ids: list[int] = field(repr=False)
    columns: dict = field(default_factory=dict)  # the row's other columns (``ability``, ...), as verl passes them


def read_rows(paths, tokenizer, max_prompt_length: int) -> list[PromptRow]:
    """Every row of the verl parquet files ``paths`` (one or a list); a prompt longer than ``max_prompt_length``
    tokens is refused, as verl's dataset filters it (``data.filter_overlong_prompts``) rather than cut silently."""
    import pandas as pd

    rows = []
    for path in [paths] if isinstance(paths, (str, Path)) else list(paths):
        frame = pd.read_parquet(path)
        for record in frame.to_dict("records"):
            messages = [dict(m) for m in record["prompt"]]
            ids = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
            ids = tokenizer.encode(ids, add_special_tokens=False)
            if len(ids) > max_prompt_length:
                raise InputError(f"{path}: a prompt of {len(ids)} tokens is over data.max_prompt_length")
            rows.append(
                PromptRow(
                    messages=messages,
                    data_source=str(record["data_source"]),
                    reward_model=dict(record.get("reward_model") or {}),
                    extra_info=dict(record.get("extra_info") or {}),
                    prompt_ids=ids,
                    columns={k: v for k, v in record.items() if k not in _OWN_COLUMNS},
                )
            )
    if not rows:
        raise InputError(f"no rows in {paths}")
    return rows


@dataclass
class Samples:
    """``n`` completions of each of a step's rows, in group order (a group's samples next to each other)."""

    rows: list[PromptRow]
    completions: list[list[int]]
    n: int
    uids: list[str]

    @classmethod
    def of(cls, rows: list[PromptRow], completions: list[list[int]], n: int) -> Samples:
        return cls(rows, completions, n, [uuid.uuid4().hex for _ in rows])

    def row(self, index: int) -> PromptRow:
        return self.rows[index // self.n]


def _objects(values) -> np.ndarray:
    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out


def reward_batch(samples: Samples, pad_token_id: int, step: int | None, validate: bool):
    """The samples as one ``DataProto`` (every tensor verl's reward loop and update read)."""
    from verl import DataProto

    from arena_verl.verl_edge.validation_signal import VALIDATE_KEY

    count = len(samples.completions)
    prompts = [samples.row(i).prompt_ids for i in range(count)]
    p_width = max(len(p) for p in prompts)
    r_width = max(1, max(len(c) for c in samples.completions))
    prompt_t = torch.full((count, p_width), pad_token_id, dtype=torch.long)
    response_t = torch.full((count, r_width), pad_token_id, dtype=torch.long)
    mask = torch.zeros((count, p_width + r_width), dtype=torch.long)
    for i, (prompt, completion) in enumerate(zip(prompts, samples.completions)):
        prompt_t[i, p_width - len(prompt) :] = torch.tensor(prompt)
        mask[i, p_width - len(prompt) : p_width] = 1
        if completion:
            response_t[i, : len(completion)] = torch.tensor(completion)
            mask[i, p_width : p_width + len(completion)] = 1
    input_ids = torch.cat([prompt_t, response_t], dim=1)
    non_tensors = {
        "uid": _objects([samples.uids[i // samples.n] for i in range(count)]),
        "data_source": _objects([samples.row(i).data_source for i in range(count)]),
        "reward_model": _objects([samples.row(i).reward_model for i in range(count)]),
        "extra_info": _objects([samples.row(i).extra_info for i in range(count)]),
        "raw_prompt": _objects([samples.row(i).messages for i in range(count)]),
        "session_id": _objects([i % samples.n for i in range(count)]),
        VALIDATE_KEY: _objects([validate] * count),
    }
    for name in sorted({k for row in samples.rows for k in row.columns}):
        non_tensors[name] = _objects([samples.row(i).columns.get(name) for i in range(count)])
    if step is not None:
        non_tensors["global_steps"] = _objects([step] * count)
    return DataProto.from_dict(
        tensors={
            "prompts": prompt_t,
            "responses": response_t,
            "attention_mask": mask,
            "input_ids": input_ids,
            "position_ids": (mask.cumsum(-1) - 1).clamp(min=0),
            "response_mask": mask[:, p_width:].clone(),
        },
        non_tensors=non_tensors,
    )
