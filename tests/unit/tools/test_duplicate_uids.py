"""A uid whose copies differ in one step file is unverified in every tool (the one reader decides), and score says
so as analyze does; identical copies count once."""

import json

from arena_verl.evaluation.scoring import Scorer, ScoringOptions
from arena_verl.evaluation.verified import DUPLICATE_UID, read_verified


def write_step(folder, lines):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "1.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    return folder


def line(prompt, session, answer, truth="4"):
    return {
        "input": f"What is {prompt}?", "output": f"so \\boxed{{{answer}}}", "gts": truth,
        "score": float(answer == truth), "step": 1, "uid": f"5f0a7c3b-0001-4b7a-9d1e-{prompt:012d}_{session}_0",
    }  # fmt: skip


def test_differing_copies_leave_their_group_unverified_identical_ones_count_once(tmp_path):
    same = [line(1, 0, "4"), line(1, 1, "4"), line(1, 1, "4")]  # session 1 twice, identical
    differing = [line(2, 0, "4"), line(2, 1, "4"), line(2, 1, "5")]  # session 1 twice: right, then wrong
    dump = write_step(tmp_path / "rollout", same + differing)
    with Scorer(ScoringOptions()) as scorer:
        (verified,) = list(read_verified(dump, scorer))
    by_prompt = {group.prompt.key: group for group in verified.groups}
    assert len(verified.duplicates) == 2 and sum(d.conflicting for d in verified.duplicates) == 1
    first, second = (by_prompt[k] for k in sorted(by_prompt))
    assert first.correct == (True, True) and first.unverified_because is None  # the identical copy counted once
    assert second.correct is None and second.unverified_because == DUPLICATE_UID


def test_score_warns_about_repeated_uids(tmp_path, capsys):
    from arena_verl.tools.score import main as score

    dump = write_step(tmp_path / "rollout", [line(2, 0, "4"), line(2, 1, "4"), line(2, 1, "5"), line(3, 0, "4")])
    score([str(dump), "--judge", "simulated", "--out", str(tmp_path / "s.jsonl"), "--workers", "1"])
    assert "repeat a uid already in their step file" in capsys.readouterr().err
