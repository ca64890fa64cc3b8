"""The bundled sample of real rollout traces (arena_verl/sample_traces): every line is a verl V1 rollout-dump line of
its step, the samples of a prompt form groups of GROUP_SIZE by uid, the dumped score is what the math verifier gives
(the run was in rlvr mode: no judge touched it), and the sample holds both kinds of group the arena tells apart."""

from __future__ import annotations

import re

import pytest

from arena_verl.data.dump_files import find_dump_files, read_jsonl
from arena_verl.data.dumps import prompt_groups
from arena_verl.sample_traces import ANSWER_EXTRACTION, GROUP_SIZE, MODEL, SAMPLE_DIR
from arena_verl.verify.math_verifier import MathVerifier

V1_DUMP_KEYS = {"input", "output", "gts", "score", "step", "uid"}  # verl's V1 _write_generations, rollout dumps
# The question of arena_verl.data.make_arithmetic, as the chat template shows it in the decoded input.
QUESTION = re.compile(r"What is (\d+) ([-+*]) (\d+)\?")
MAX_SAMPLE_BYTES = 1_000_000


@pytest.fixture(scope="module")
def dumps() -> dict[int, list[dict]]:
    """``{step: records}`` of the committed dump files, read with the project's own dump reader."""
    return {step: [record for _, record in read_jsonl(path)] for step, path in find_dump_files(SAMPLE_DIR).items()}


@pytest.fixture(scope="module")
def groups() -> list[list[dict]]:
    """Every prompt's samples, grouped by the project's dump reader (V1: the uid's prompt uuid)."""
    found = []
    for path in find_dump_files(SAMPLE_DIR).values():
        found.extend(prompt_groups(path, read_jsonl(path)).values())
    return found


def test_every_line_is_a_v1_rollout_dump_line_of_its_step(dumps):
    assert sorted(dumps) == list(range(1, len(dumps) + 1)) and len(dumps) >= 2  # steps 1..S, as the trainer numbers
    for step, records in dumps.items():
        for number, record in enumerate(records, start=1):
            where = f"{step}.jsonl line {number}"
            assert set(record) == V1_DUMP_KEYS, where
            assert record["step"] == step, where
            assert isinstance(record["input"], str) and QUESTION.search(record["input"]), where
            assert isinstance(record["output"], str), where
            assert record["score"] in (0.0, 1.0), where  # rlvr: the verifier's reward, nothing added
            prompt, session, output = record["uid"].rsplit("_", 2)
            assert prompt and session.isdigit() and output.isdigit(), where


def test_uids_group_the_samples_of_one_prompt_into_groups_of_n(dumps, groups):
    assert sum(len(group) for group in groups) == sum(len(records) for records in dumps.values())
    for group in groups:
        assert len(group) == GROUP_SIZE
        assert len({record["input"] for record in group}) == 1  # one prompt ...
        assert len({record["gts"] for record in group}) == 1  # ... with one ground truth
        assert sorted(int(record["uid"].rsplit("_", 2)[1]) for record in group) == list(range(GROUP_SIZE))
    prompts = [group[0]["input"] for group in groups]
    assert len(set(prompts)) == len(prompts)  # each problem was sampled in one step only


def test_ground_truths_are_the_answers_of_the_questions(groups):
    for group in groups:
        a, op, b = QUESTION.search(group[0]["input"]).groups()
        expected = {"+": int(a) + int(b), "-": int(a) - int(b), "*": int(a) * int(b)}[op]
        assert group[0]["gts"] == str(expected), group[0]["input"]


def test_dumped_scores_are_the_verifiers_rewards(dumps):
    records = [record for step_records in dumps.values() for record in step_records]
    verifier = MathVerifier(extraction=ANSWER_EXTRACTION)
    try:
        rescored = [verifier.score(record["output"], record["gts"]).score for record in records]
    finally:
        verifier.close()
    disagreements = [
        (record["uid"], record["score"], again) for record, again in zip(records, rescored) if record["score"] != again
    ]
    assert not disagreements


def test_the_sample_holds_non_diverse_and_diverse_groups(groups):
    solved = [sum(record["score"] for record in group) for group in groups]
    all_wrong = sum(count == 0 for count in solved)
    all_right = sum(count == GROUP_SIZE for count in solved)
    mixed = len(solved) - all_wrong - all_right
    # Non-diverse groups (every verifier reward equal) are the arena's; diverse ones keep the verifier's rewards.
    assert all_wrong > 0 and all_right > 0 and mixed > 0, solved


def test_the_sample_stays_small_and_says_where_it_came_from():
    files = sorted(SAMPLE_DIR.glob("*.jsonl"))
    assert files and sum(file.stat().st_size for file in files) < MAX_SAMPLE_BYTES
    readme = (SAMPLE_DIR.parent / "README.md").read_text(encoding="utf-8")
    model_name = MODEL.split()[0]
    assert model_name == "SmolLM2-135M-Instruct" and model_name in readme
    assert "Apache-2.0" in readme and "make_sample_traces.sh" in readme
