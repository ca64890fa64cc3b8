"""The fast trainer's actor update ties to verl's: ``PolicyUpdate.step`` and verl's own ``FSDPEngine`` update (built by
verl's ``TrainingWorker`` in one process: FSDP2, gloo, world size 1, no Ray), from the same toy Qwen2 weights and the
same batch (4 prompts x 3 samples, variable prompt and response lengths, one zero-advantage group; two mini-batches
per step, two micro-batches per mini-batch on verl's side), with the project's CISPO config (arena_live, CPU
setting, no warm-up, AdamW lr 1e-3, clip_grad 1), give the same loss, the same gradient norm before clipping and the
same parameters after 3 steps. What runs is ``tests/helpers/fast_update_tie.py``, in a process of its own (the CPU
platform is chosen before verl is imported; the process group is its own and ends with it).

Tolerances (float32; measured on the project's 2-core machine in brackets):

* loss, 1e-5 absolute [<= 8e-8]: a token-mean over ~100 response tokens of terms of size <= ~10 (|A| <= 1.2,
  |log p| ~ 6); summing in another order (packed vs padded forward, 3+3 vs 3 rows per micro-batch) moves it by
  ~1e-7. One token too many or too few in the normaliser, or a missing micro-batch, moves it by ~1e-3.
* gradient norm before clipping, 1e-5 relative [<= 3e-7].
* old log-probabilities, 1e-5 absolute [<= 1.5e-6]: |log p| ~ 6, where float32's spacing is 5e-7.
* parameters after every step, 1e-4 absolute per element [<= 8e-6], and the difference of the two updates (all
  parameters, flattened) within 5e-4 of the update's norm [<= 1.3e-5]. Adam moves each element by about lr = 1e-3
  per optimizer step whatever its gradient's size, and for the few elements whose gradient is near Adam's eps (1e-8)
  it turns float32 rounding of the gradient into a visible share of a step (3 elements of 335k differ by ~7e-6): the
  per-element bound is 10% of one step, one element at that bound adds 2e-4 to the relative figure, and an update
  that is off as a whole does not pass (Adam's beta1 off by 1% gives 2.5e-3 at step 1 and 1.4e-4 per element by step
  2). The largest change is >= 0.9e-3 per step, so unchanged weights cannot tie.

What could fail (and does, if the loss mode reaches only one side): cispo -> vanilla changes the loss by the same
amount on both sides at every step, by far more than the tolerance.
"""

import json
import os
import signal
import subprocess
import sys

import pytest

from helpers.paths import TESTS

HELPER = TESTS / "helpers" / "fast_update_tie.py"
HARD_TIMEOUT_S = 300  # ~45 s on an idle 2-core machine; the rest is room for a loaded one
STEPS = 3
LOSS_ATOL = 1e-5
GRAD_NORM_RTOL = 1e-5
LOG_PROB_ATOL = 1e-5
LOG_PROB_ATOL_AFTER_UPDATE = 1e-3  # measured up to 1.5e-4 (one mini-batch a step), 1.9e-6 (two)
PARAM_ATOL = 1e-4
UPDATE_RTOL = 5e-4
MIN_PARAM_CHANGE = 1e-3  # lr: each step moves the weights by about this much (Adam)


@pytest.fixture(scope="module")
def tie(tmp_path_factory):
    """The helper's figures for every run (cispo, vanilla, cispo with a zero-advantage mini-batch)."""
    workdir = tmp_path_factory.mktemp("fast_update_tie")
    out = workdir / "tie.json"
    process = subprocess.Popen(
        [sys.executable, str(HELPER), str(out), str(workdir), "--steps", str(STEPS)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,  # its own process group: a timeout ends everything it started
    )
    try:
        output, _ = process.communicate(timeout=HARD_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        output, _ = process.communicate()
        pytest.fail(f"the tie did not finish in {HARD_TIMEOUT_S} s:\n{output[-4000:]}")
    if process.returncode != 0:
        pytest.fail(f"the tie failed (rc {process.returncode}):\n{output[-6000:]}")
    results = json.loads(out.read_text())
    print(f"fast update tie: {results['wall_s']} s")
    return results["runs"]


def _check_tie(run: dict, moved_share: float = 0.9) -> None:
    """``moved_share``: of about lr per step that the largest parameter change must reach (a run that barely moved
    would tie trivially)."""
    assert len(run["steps"]) == STEPS
    for record in run["steps"]:
        step, fast, verl = record["step"], record["fast"], record["verl"]
        where = f"{run['run']} step {step}"
        assert verl["optimizer_steps"] == run.get("optimizer_steps", 2), where  # two: the second sees a ratio != 1
        # from step 2 the weights already differ (within PARAM_ATOL: Adam's first step moves an element of a near-zero
        # gradient by about lr whatever its rounding), and the log-probs with them
        log_prob_atol = LOG_PROB_ATOL if step == 1 else LOG_PROB_ATOL_AFTER_UPDATE
        assert record["old_log_prob_max_diff"] <= log_prob_atol, (where, record)
        assert fast["pg_loss"] == pytest.approx(verl["loss"], abs=LOSS_ATOL), (where, record)
        assert fast["pg_loss"] == pytest.approx(verl["pg_loss"], abs=LOSS_ATOL), (where, record)
        assert fast["grad_norm"] == pytest.approx(verl["grad_norm"], rel=GRAD_NORM_RTOL), (where, record)
        assert fast["lr"] == pytest.approx(verl["lr"], rel=1e-9), (where, record)
        assert record["param_max_change"] >= MIN_PARAM_CHANGE * step * moved_share, (where, record)
        assert record["param_max_diff"] <= PARAM_ATOL, (where, record)
        assert record["update_rel_diff"] <= UPDATE_RTOL, (where, record)


@pytest.mark.parametrize("run", ["cispo", "vanilla"])
def test_fast_update_ties_to_verl_fsdp_engine(tie, run):
    _check_tie(tie[run])


def test_loss_mode_moves_both_sides_alike(tie):
    """cispo -> vanilla: the same change of the loss on both sides, much larger than the tolerance (at step 1 the
    ratio is 1 in the first mini-batch, where CISPO's loss is -A log p and vanilla's -A)."""
    for cispo, vanilla in zip(tie["cispo"]["steps"], tie["vanilla"]["steps"]):
        fast_change = cispo["fast"]["pg_loss"] - vanilla["fast"]["pg_loss"]
        verl_change = cispo["verl"]["loss"] - vanilla["verl"]["loss"]
        assert abs(verl_change) > 100 * LOSS_ATOL, (cispo, vanilla)
        assert fast_change == pytest.approx(verl_change, abs=2 * LOSS_ATOL), (cispo, vanilla)
    # from step 2 on the policies differ too (CISPO keeps the gradient of a clipped token, vanilla PPO drops it)
    last_cispo, last_vanilla = tie["cispo"]["steps"][-1], tie["vanilla"]["steps"][-1]
    for side in ("fast", "verl"):
        assert last_cispo[side]["grad_norm"] != pytest.approx(last_vanilla[side]["grad_norm"], rel=100 * GRAD_NORM_RTOL)


def test_one_mini_batch_a_step_ties_to_verl(tie):
    """The experiment's shape: one update of the whole step, the old log-probs taken from the training forward."""
    _check_tie({**tie["cispo-one-mini-batch"], "optimizer_steps": 1})


def test_zero_advantage_mini_batch_ties_to_verl(tie):
    """A mini-batch of only zero-advantage rows still takes an optimizer step on zero gradients, as verl's does."""
    _check_tie(tie["cispo-zero-mini-batch"], moved_share=0.5)  # one of its two updates has only weight decay
