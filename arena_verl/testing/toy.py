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
    from transformers import AutoTokenizer, Qwen2ForCausalLM

    build_toy_tokenizer(path)
    tokenizer = AutoTokenizer.from_pretrained(str(path))
    torch.manual_seed(seed)
    Qwen2ForCausalLM(_toy_config(tokenizer, tie_word_embeddings=True)).to(torch.float32).save_pretrained(str(path))
    return path


def _toy_config(tokenizer, tie_word_embeddings: bool):
    """The toy models' Qwen2 shape (2 layers, hidden 128, head_dim 64: vLLM-CPU refuses 16)."""
    from transformers import Qwen2Config

    return Qwen2Config(
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
        tie_word_embeddings=tie_word_embeddings,
    )


# The two answers of the coin-flip policy, each one token of its tokenizer.
COIN_FLIP_ANSWERS = ("1", "2")
_COIN_FLIP_LOGIT = 12.0  # the two answer tokens against 0 for every other token: ~0.1% of draws are anything else


def build_coin_flip_model(path: Path, seed: int = 0) -> Path:
    """A toy policy (Qwen2, built weights, no training) that answers 1 or 2 by a fair coin, whatever it is asked.

    Its every token is one of two added tokens, ``"Answer: 1\n"`` and ``"Answer: 2\n"``, drawn independently at
    temperature 1; the verifier reads the last line, so a response is right with probability 1/2 on a question whose
    answer is 1 or 2 (:func:`make_coin_flip_data`) and a group of N is mixed with probability 1 - 2^(1-N): the
    group-filtering baseline (DAPO) then has groups to keep, and the arena both diverse and non-diverse groups.
    How: every layer's output projections are zero, so the residual stream is the token embedding; every embedding
    row is the same vector, so the last hidden state is the same at every position; the untied output layer maps it
    to the two answer tokens only. Training moves these weights like any others (plumbing, not a model)."""
    import torch
    from transformers import AutoTokenizer, Qwen2ForCausalLM

    build_toy_tokenizer(path)
    tokenizer = AutoTokenizer.from_pretrained(str(path))
    tokenizer.add_tokens([f"Answer: {answer}\n" for answer in COIN_FLIP_ANSWERS])
    tokenizer.save_pretrained(str(path))
    answer_ids = tokenizer.convert_tokens_to_ids([f"Answer: {answer}\n" for answer in COIN_FLIP_ANSWERS])
    config = _toy_config(tokenizer, tie_word_embeddings=False)
    torch.manual_seed(seed)
    model = Qwen2ForCausalLM(config).to(torch.float32)
    with torch.no_grad():
        for layer in model.model.layers:
            layer.self_attn.o_proj.weight.zero_()
            layer.mlp.down_proj.weight.zero_()
        direction = torch.randn(config.hidden_size)
        direction /= direction.norm()
        model.model.embed_tokens.weight.copy_(direction.expand_as(model.model.embed_tokens.weight))
        # The final RMSNorm turns the unit vector into sqrt(hidden) * direction (its weight is 1).
        model.lm_head.weight.zero_()
        model.lm_head.weight[answer_ids] = direction * (_COIN_FLIP_LOGIT / config.hidden_size**0.5)
    model.save_pretrained(str(path))
    return path


def make_coin_flip_data(path: str | Path, rows: int, split: str, data_source: str = "coin_flip_math") -> int:
    """``rows`` questions whose answers alternate 1 and 2, in verl's parquet layout (for the coin-flip policy; the
    data source is matched by the arena's math verifier). Returns the row count."""
    from arena_verl.data.verl_layout import verl_row, write_parquet

    if rows < 1:
        raise ValueError(f"rows must be >= 1, got {rows}")
    records = []
    for index in range(rows):
        answer = COIN_FLIP_ANSWERS[index % 2]
        question = f"Question {index}: is the answer 1 or 2?"
        records.append(verl_row(data_source, question, answer, split, index))
    write_parquet(records, path)
    return rows


def main(argv: list[str] | None = None) -> None:
    """``python -m arena_verl.toy model DIR``: write the toy model (RANDOM weights) and its tokenizer into DIR;
    ``coin-flip-model DIR``: the coin-flip policy; ``coin-flip-data FILE --rows N --split S``: questions for it."""
    import argparse

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("what", choices=["model", "tokenizer", "coin-flip-model", "coin-flip-data"])
    parser.add_argument("path")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--rows", type=int, default=16, help="coin-flip-data: questions")
    parser.add_argument("--split", default="train", help="coin-flip-data: extra_info.split")
    args = parser.parse_args(argv)
    path = Path(args.path)
    if args.what == "coin-flip-data":
        print(f"{make_coin_flip_data(path, args.rows, args.split)} coin-flip questions -> {path}")
        return
    path.mkdir(parents=True, exist_ok=True)
    build = {"model": build_toy_model, "coin-flip-model": build_coin_flip_model}.get(args.what)
    print(build(path, args.seed) if build else build_toy_tokenizer(path))


if __name__ == "__main__":
    main()
