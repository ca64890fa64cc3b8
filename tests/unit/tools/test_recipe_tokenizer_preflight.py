"""The judge's tokenizer at the recipes' pre-flight (`arena-verl recipe show --strict`): a JUDGE_TOKENIZER (or judge
folder) without tokenizer files stops the run before the trainer starts (exit 2, one line naming JUDGE_TOKENIZER),
where it used to pass and then fail inside the referee (every sample falling back, referee_lost); a hub id is loaded
the same way, or refused with one clear line when the hub is offline and the id is not in the local cache."""

from __future__ import annotations

import pytest

from arena_verl.testing.toy import build_toy_tokenizer
from arena_verl.tools import recipe


@pytest.fixture
def run_paths(tmp_path):
    """Paths a node8 arena_live run reads, all there: data files, a policy folder (nothing is loaded from them)."""
    (tmp_path / "train.parquet").write_text("not read here")
    (tmp_path / "val.parquet").write_text("not read here")
    (tmp_path / "policy").mkdir()
    return [
        f"data.train_files=['{tmp_path / 'train.parquet'}']",
        f"data.val_files=['{tmp_path / 'val.parquet'}']",
        f"actor_rollout_ref.model.path={tmp_path / 'policy'}",
        "reward.arena.judge.backend=openai",
        "reward.arena.judge.base_url=http://judge:8000/v1",
        "reward.arena.judge.model_path=judge",
    ]


def show(*overrides):
    return recipe.main(["show", "--config-name", "arena_live", "--strict", "arena_setting=node8", *overrides])


def errors(capsys) -> list[str]:
    return [line for line in capsys.readouterr().err.splitlines() if line.startswith("error:")]


def test_a_tokenizer_folder_without_tokenizer_files_stops_the_run_with_one_line(run_paths, tmp_path, capsys):
    judge_folder = tmp_path / "judge"
    judge_folder.mkdir()
    (judge_folder / "config.json").write_text("{}")  # weights' config, but no tokenizer
    assert show(*run_paths, f"reward.arena.judge.tokenizer={judge_folder}") == 2
    (line,) = errors(capsys)
    assert "JUDGE_TOKENIZER" in line and str(judge_folder) in line and "has no tokenizer" in line


def test_a_folder_with_a_tokenizer_passes(run_paths, tmp_path, capsys):
    tokenizer = build_toy_tokenizer(tmp_path / "tok")
    assert show(*run_paths, f"reward.arena.judge.tokenizer={tokenizer}") == 0, capsys.readouterr().err
    assert errors(capsys) == []


def test_a_hub_id_not_in_the_cache_is_refused_offline_with_a_clear_line(run_paths, capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))  # an empty cache
    assert show(*run_paths, "reward.arena.judge.tokenizer=arena-verl-tests/no-such-tokenizer") == 2
    (line,) = errors(capsys)
    assert "JUDGE_TOKENIZER" in line and "arena-verl-tests/no-such-tokenizer" in line
    assert "not in the local cache" in line and "offline" in line


def test_a_model_judges_folder_without_a_tokenizer_is_a_problem_too(tmp_path):
    """The ray placement's vllm judge (and transformers) load their model folder's tokenizer in the referee."""
    from omegaconf import OmegaConf

    folder = tmp_path / "judge"
    folder.mkdir()

    def config(mode, model_path):
        judge = {"backend": "vllm", "model_path": str(model_path)}
        return OmegaConf.create({"reward": {"arena": {"mode": mode, "group_size": 8, "judge": judge}}})

    (problem,) = recipe.path_problems(config("arena", folder))
    assert "reward.arena.judge.model_path (JUDGE_MODEL, the vllm judge)" in problem and "has no tokenizer" in problem
    build_toy_tokenizer(folder)
    assert recipe.path_problems(config("arena", folder)) == []
    assert recipe.path_problems(config("rlvr", tmp_path)) == []  # rlvr never builds its judge
