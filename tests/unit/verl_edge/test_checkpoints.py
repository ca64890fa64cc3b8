"""A run folder's checkpoints made safe to resume from (arena_verl/tools/checkpoints.py, run by the recipes before
every start): what verl 0.9.1 makes of the folder a kill leaves, before and after the repair; and the recipes'
epoch limit, which no longer ends a long run before its steps."""

from __future__ import annotations

import os
import subprocess

import pytest
from verl.utils.checkpoint.checkpoint_manager import find_latest_ckpt_path

from arena_verl.tools import recipe
from arena_verl.verl_edge.checkpoints import TRACKER, complete_steps, repair
from helpers import paths


def save(folder, step, finished=True):
    """A step folder as verl writes it: the actor's shards, then data.pt (a kill may come between)."""
    step_folder = folder / f"global_step_{step}"
    (step_folder / "actor").mkdir(parents=True)
    (step_folder / "actor" / "model_world_size_1_rank_0.pt").write_bytes(b"weights")
    if finished:
        (step_folder / "data.pt").write_bytes(b"loader state")


@pytest.fixture
def run(tmp_path):
    folder = tmp_path / "checkpoints"
    folder.mkdir()
    for step in (1, 2, 3):
        save(folder, step)
    return folder


def test_an_empty_tracker_no_longer_stops_the_resume(run):
    (run / TRACKER).write_text("")  # killed while verl rewrote it
    with pytest.raises(ValueError):
        find_latest_ckpt_path(str(run))  # today: resume raises, the run cannot start
    assert repair(run) == [f"{TRACKER} was empty or unreadable: it now names step 3, the newest complete checkpoint"]
    assert find_latest_ckpt_path(str(run)) == str(run / "global_step_3")


def test_a_tracker_naming_an_unfinished_step_resumes_from_the_last_finished_one(run):
    save(run, 4, finished=False)  # killed while saving step 4, after the tracker was written
    (run / TRACKER).write_text("4")
    (run / "global_step_4" / "actor" / "model_world_size_1_rank_0.pt").unlink()
    done = repair(run)
    assert any("removed global_step_4" in line for line in done)
    assert find_latest_ckpt_path(str(run)) == str(run / "global_step_3")


def test_a_tracker_naming_a_missing_folder_no_longer_trains_from_step_0(run):
    (run / TRACKER).write_text("9")
    assert find_latest_ckpt_path(str(run)) is None  # today: verl prints a line and trains from step 0
    repair(run)
    assert find_latest_ckpt_path(str(run)) == str(run / "global_step_3")


def test_earlier_attempts_checkpoints_are_kept_as_keep_says(run):
    (run / TRACKER).write_text("3")
    save(run, 4)
    (run / TRACKER).write_text("4")
    done = repair(run, keep=2)
    assert complete_steps(run) == [3, 4] and done == [
        "removed the checkpoints of steps 1, 2: 2 kept (an earlier attempt's are never deleted)"
    ]
    assert repair(run, keep=2) == [] and repair(run, keep=-1) == []  # nothing more to do; -1 keeps all


def test_no_complete_checkpoint_left_means_from_scratch_said_aloud(tmp_path):
    folder = tmp_path / "checkpoints"
    save(folder, 1, finished=False)
    (folder / TRACKER).write_text("1")
    done = repair(folder)
    assert not (folder / TRACKER).exists() and not (folder / "global_step_1").exists()
    assert "the run starts from step 0" in done[-1]
    assert repair(tmp_path / "nothing here") == []


def test_the_command_says_what_it_repaired(run, capsys):
    (run / TRACKER).write_text("x")
    assert recipe.main(["checkpoints", str(run), "--keep", "3"]) == 0
    assert "now names step 3" in capsys.readouterr().err


def test_a_long_run_is_not_ended_by_verls_epoch_limit():
    """verl stops at trainer.total_epochs (default 30) whatever trainer.total_training_steps says: a 500-step run over
    a small file would end silently at its 30th epoch. The recipes give it as many epochs as steps."""
    env = {**os.environ, "SETTING": "cpu", "TOTAL_STEPS": "500", "RUN_DIR": "/tmp/arena-dry-run-epochs"}
    out = subprocess.run(
        ["bash", str(paths.REPO / "recipes" / "rlvr.sh"), "--dry-run"], env=env, capture_output=True, text=True
    ).stdout
    assert "trainer.total_training_steps=500" in out.splitlines() and "trainer.total_epochs=500" in out.splitlines()
    mine = subprocess.run(
        ["bash", str(paths.REPO / "recipes" / "rlvr.sh"), "--dry-run", "trainer.total_epochs=7"],
        env=env,
        capture_output=True,
        text=True,
    ).stdout
    assert "trainer.total_epochs=7" in mine.splitlines()  # the user's own value still wins
