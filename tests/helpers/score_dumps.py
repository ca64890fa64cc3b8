"""Rollout dumps for ``arena-verl score`` tests (tests/unit/tools/test_offline_score.py and
tests/integration/test_tool_scripts.py): verl V1 dump files with known per-sample correctness, the groups that
should be judged, and the command run in-process."""

from __future__ import annotations

import json
from pathlib import Path

from arena_verl.tools.score import main

N = 4
# Per step, the correctness of each prompt's N samples: the non-diverse prompts are the all-equal ones.
PATTERNS = {
    3: [[1, 1, 1, 1], [0, 0, 0, 0], [1, 0, 1, 1], [0, 0, 0, 0], [1, 1, 1, 1], [0, 1, 0, 0]],
    4: [[1, 1, 1, 1], [0, 0, 0, 0], [0, 0, 1, 0], [0, 0, 0, 0], [1, 1, 1, 1], [1, 1, 1, 1]],
}


def uuid(step: int, prompt: int) -> str:
    return f"5f0a7c3b-{step:04d}-4b7a-9d1e-{prompt:012d}"


def write_dump(folder: Path, patterns: dict[int, list[list[int]]]) -> Path:
    """Rollout dump files in the layout of verl's V1 ``_write_generations`` (pinned against verl's own writer in
    test_evaluation): ``input``, ``output``, ``gts``, ``score``, ``step``, the reward extra info and ``uid``."""
    folder.mkdir(parents=True, exist_ok=True)
    for step, prompts in patterns.items():
        lines = []
        for prompt, correct in enumerate(prompts):
            truth = 7 * prompt + step
            for session, ok in enumerate(correct):
                answer = truth if ok else truth + 1 + session
                lines.append(
                    {
                        "input": f"system: Reason step by step.\nuser: What is {truth - 2} + 2?\nassistant:",
                        "output": f"Attempt {session}: {truth - 2} plus 2 ... so the answer is \\boxed{{{answer}}}.",
                        "gts": str(truth),
                        "score": float(ok),
                        "step": step,
                        "acc": float(ok),
                        "uid": f"{uuid(step, prompt)}_{session}_0",
                    }
                )
        (folder / f"{step}.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    return folder


def non_diverse_keys(patterns: dict[int, list[list[int]]]) -> set[tuple[int, str]]:
    return {
        (step, f"uid {uuid(step, prompt)}")
        for step, prompts in patterns.items()
        for prompt, correct in enumerate(prompts)
        if len(set(correct)) == 1
    }


def score(dump: Path, out: Path, *extra: str, judge: str = "simulated") -> int:
    """``arena-verl score`` in this process, with one verifier worker: its exit status."""
    return main([str(dump), "--judge", judge, "--out", str(out), "--workers", "1", *extra])


def keys_of(lines: list[dict]) -> list[tuple[int, str]]:
    return [(line["step"], line["group"]) for line in lines]
