"""Toy assets for the CPU demo and the tests: a tokenizer trained here (no download) and verl batches built from
text. Nothing here is a model: the demo's rollouts are synthetic text and its judge is the SIMULATED judge."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np


def build_toy_tokenizer(path: Path) -> Path:
    """A byte-level BPE tokenizer trained on a few lines, saved like a hub tokenizer (``save_pretrained``)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tokenizer = Tokenizer(models.BPE(unk_token=None))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=400,
        special_tokens=["<pad>", "<eos>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    corpus = ["The answer is \\boxed{4}.", "Let x = 2 + 2. So x = 4.", "We compute the sum step by step."] * 50
    tokenizer.train_from_iterator(corpus, trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tokenizer, pad_token="<pad>", eos_token="<eos>")
    fast.chat_template = "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}"
    fast.save_pretrained(str(path))
    return path


@dataclass
class Sample:
    uid: str
    response: str
    ground_truth: str = "4"
    sim_quality: float | None = None
    data_source: str = "math_dapo"
    problem: str = "What is 2 + 2?"
    extra: dict = field(default_factory=dict)
    session_id: int | None = None


def make_batch(tokenizer, samples: list[Sample], prompt_length: int = 32, response_length: int = 64):
    """A rollout batch as verl's reward loop receives it: left-padded prompts, right-padded responses."""
    import torch
    from verl import DataProto

    pad = tokenizer.pad_token_id
    prompts, responses, masks = [], [], []
    for s in samples:
        p = tokenizer.encode(s.problem)[-prompt_length:]
        r = tokenizer.encode(s.response)[: response_length - 1] + [tokenizer.eos_token_id]
        prompts.append([pad] * (prompt_length - len(p)) + p)
        responses.append(r + [pad] * (response_length - len(r)))
        masks.append([0] * (prompt_length - len(p)) + [1] * (len(p) + len(r)) + [0] * (response_length - len(r)))
    prompts_t, responses_t = torch.tensor(prompts), torch.tensor(responses)
    attention_mask = torch.tensor(masks)
    input_ids = torch.cat([prompts_t, responses_t], dim=1)
    position_ids = torch.clamp(torch.cumsum(attention_mask, dim=1) - 1, min=0)

    def objects(values):
        out = np.empty(len(values), dtype=object)
        out[:] = values
        return out

    non_tensor = {
        "uid": objects([s.uid for s in samples]),
        "data_source": objects([s.data_source for s in samples]),
        "reward_model": objects([{"ground_truth": s.ground_truth, "style": "rule"} for s in samples]),
        "extra_info": objects(
            [{**({"sim_quality": s.sim_quality} if s.sim_quality is not None else {}), **s.extra} for s in samples]
        ),
        "raw_prompt": objects([[{"role": "user", "content": s.problem}] for s in samples]),
    }
    if any(s.session_id is not None for s in samples):
        non_tensor["session_id"] = objects([s.session_id for s in samples])
    return DataProto.from_dict(
        tensors={
            "prompts": prompts_t,
            "responses": responses_t,
            "attention_mask": attention_mask,
            "input_ids": input_ids,
            "position_ids": position_ids,
        },
        non_tensors=non_tensor,
    )


def build_toy_model(path: Path, seed: int = 0) -> Path:
    """A tiny Qwen2 causal LM with RANDOM weights beside the toy tokenizer (head_dim 64, which vLLM's CPU backend
    needs). It generates real tokens through real engines; its verdicts are noise, so it tests plumbing only."""
    import torch
    from transformers import AutoTokenizer, Qwen2Config, Qwen2ForCausalLM

    build_toy_tokenizer(path)
    tokenizer = AutoTokenizer.from_pretrained(str(path))
    config = Qwen2Config(
        vocab_size=len(tokenizer),
        hidden_size=128,
        intermediate_size=256,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=1,
        head_dim=64,
        max_position_embeddings=8192,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=tokenizer.eos_token_id,
        tie_word_embeddings=True,
    )
    torch.manual_seed(seed)
    Qwen2ForCausalLM(config).to(torch.float32).save_pretrained(str(path))
    return path


def main(argv: list[str] | None = None) -> None:
    """``python -m arena_verl.toy model DIR``: write the toy model (RANDOM weights) and its tokenizer into DIR."""
    import argparse

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("what", choices=["model", "tokenizer"])
    parser.add_argument("path")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    path = Path(args.path)
    path.mkdir(parents=True, exist_ok=True)
    print(build_toy_model(path, args.seed) if args.what == "model" else build_toy_tokenizer(path))


if __name__ == "__main__":
    main()
