"""A served judge that dies one call into step 2 of a real run (issue 36's reproduction, long tier: one trainer start
of about 3 minutes here): `SETTING=cpu JUDGE_PLACEMENT=serve bash recipes/arena_paced.sh` with the default judge
settings and `reward.arena.judge.backoff_s=5`, against the tests' loopback server (NOT a model) in a process of its
own that exits when a request comes after its 13th answer (step 1's 12 calls, then one of step 2).

Checked from the run's own metrics and log: step 2 counts every call attempted after the death as a failure (the
calls then wait 5 s to retry and are cut at paced's completion grace: before, those were "dropped" stragglers and the
death was invisible), no group is routed (one had a single verdict of six, the other none), the group with one
verdict falls back as thin (its 4 samples in `arena/fallback_thin`), and the step's warning line says so.

    .venv/bin/python -m pytest -q -m long tests/integration/test_dead_judge_run.py
"""

import pytest

from helpers.chaos import JudgeProcess
from helpers.cpu_runs import BATCH, JUDGE_KEY, N, build_assets, recipe_run

CALLS_PER_GROUP = 6  # paced at live's budget, N=4
DIES_AFTER = BATCH * CALLS_PER_GROUP + 1  # 13: step 1's calls and the first of step 2

pytestmark = pytest.mark.long


@pytest.fixture(scope="module")
def dead_judge_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("dead_judge")
    assets = build_assets(root)
    judge = JudgeProcess(root / "judge", api_key=JUDGE_KEY)
    try:
        judge.set_control(die_after_calls=DIES_AFTER)
        url = judge.start()
        run_dir = root / "paced"
        summary, _ = recipe_run(
            "arena_paced", run_dir, "reward.arena.judge.backoff_s=5",
            TOTAL_STEPS="3", TEST_FREQ="10", SAVE_FREQ="10", MODEL_PATH=str(assets["model"]),
            TRAIN_FILES=str(assets["train"]), VAL_FILES=str(assets["val"]), JUDGE_PLACEMENT="serve",
            JUDGE_URL=url, JUDGE_API_KEY=JUDGE_KEY, JUDGE_TOKENIZER=str(assets["model"]),
        )  # fmt: skip
        yield {"summary": summary, "judge": judge, "log": (run_dir / "train.log").read_text(errors="replace")}
    finally:
        judge.kill()


def test_the_step_in_which_the_judge_died_counts_its_calls_as_failures_and_trains_no_thin_group(dead_judge_run):
    steps = {int(s["training/global_step"]): s for s in dead_judge_run["summary"]["steps"]}
    (death,) = dead_judge_run["judge"].deaths()
    assert death["answers"] == DIES_AFTER
    first, second = steps[1], steps[2]
    assert first["arena/groups_routed"] == BATCH and first["arena/judge_failures"] == 0
    # Step 2: one answer, then every call failed (the one that found the server exiting, and those refused after it).
    assert second["arena/judge_calls"] == BATCH * CALLS_PER_GROUP
    assert second["arena/judge_failures"] >= 8 and second["arena/judge_calls_dropped"] == 0
    assert second["arena/judge_calls"] - second["arena/judge_failures"] == 1
    assert second["arena/groups_routed"] == 0 and second["arena/samples_routed"] == 0
    assert second["arena/fallback_thin"] == N and second["arena/fallback_judge_error"] == N
    assert second["arena/thin_verdict_share"] == pytest.approx(1 / CALLS_PER_GROUP)
    (warning,) = [line for line in dead_judge_run["log"].splitlines() if "arena step 2: " in line]
    assert "thin 4 (their groups got 17% of their planned judge verdicts)" in warning
    assert f"{second['arena/judge_failures']:g} of 12 judge calls gave no verdict" in warning
    print("step 2:", {k: second[k] for k in sorted(second) if k.startswith("arena/") and ("fail" in k or "fallback" in k
          or "routed" in k or "dropped" in k or "thin" in k or k == "arena/judge_calls")})  # fmt: skip
