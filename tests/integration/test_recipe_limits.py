"""The recipes' --dry-run reports limits that contradict each other with the user's overrides (Hydra overrides after
the script name), every one at once, before anything starts; the shipped settings pass. Dry runs only (the venv's
Python composes the config; nothing is started): about 1 minute.

    .venv/bin/python -m pytest -q tests/integration/test_recipe_limits.py
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from helpers import paths

REPO = paths.REPO


def dry_run(tmp_path, *overrides, **env):
    base = {k: v for k, v in os.environ.items() if not k.startswith(("JUDGE_", "RAY_ADDRESS", "SETTING"))}
    base.update(MODELS_DIR=str(tmp_path / "models"), DATA_DIR=str(tmp_path / "data"), PYTHON=sys.executable,
                RUN_DIR=str(tmp_path / "run"), JUDGE_URL="http://judge-node:8000/v1", **env)  # fmt: skip
    return subprocess.run(["bash", str(REPO / "recipes" / "arena_live.sh"), "--dry-run", *overrides],
                          capture_output=True, text=True, timeout=300, env=base, cwd=tmp_path)  # fmt: skip


def test_the_dry_run_names_every_contradiction_of_the_users_overrides(tmp_path):
    result = dry_run(tmp_path, "reward.arena.tournament_timeout_s=600", "reward.arena.judge.timeout_s=1200",
                     "reward.arena.completion_grace=2")  # fmt: skip
    assert result.returncode == 2, result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 2, result.stderr
    assert "tournament_timeout_s=600" in errors[0] and "judge.timeout_s=1200" in errors[0]
    assert "completion_grace=2" in errors[1] and "tournament_timeout_s=600" in errors[1]
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("setting", ["node8", "paper", "cpu"])
def test_the_shipped_settings_pass(tmp_path, setting):
    result = dry_run(tmp_path, SETTING=setting)
    assert result.returncode == 0, result.stderr
    assert "contradictory" not in result.stderr and "shorter than one judge call" not in result.stderr
