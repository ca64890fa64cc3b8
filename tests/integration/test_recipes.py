"""The cluster recipes (recipes/<experiment>.sh): --dry-run works on a checkout without models or data, prints a
command that composes against verl 0.9.1's tree with known keys only, places the judge as asked, and a real run
refuses to start on missing paths. Also: shellcheck on every shell script, the per-step run log, the judge-load
estimate."""

import json
import os
import shlex
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from arena_verl.settings import arena_settings
from arena_verl.tools import recipe, runlog
from helpers import paths
from helpers.config_keys import suspicious_keys
from helpers.settings_snapshot import ADDED, SNAPSHOT, arena_leaves

REPO = paths.REPO
EXPERIMENTS = sorted(p.stem for p in (REPO / "configs").glob("*.yaml") if p.stem != "arena_ppo")
NO_VERL_PYTHON = "/usr/bin/python3"  # a Python without verl: the recipe prints the command only (fast)


def run_recipe(name, tmp_path, *args, python=NO_VERL_PYTHON, timeout=120, **env):
    base = {k: v for k, v in os.environ.items() if not k.startswith(("JUDGE_", "RAY_ADDRESS", "SETTING"))}
    base.update(MODELS_DIR=str(tmp_path / "models"), DATA_DIR=str(tmp_path / "data"), PYTHON=python,
                RUN_DIR=str(tmp_path / "run"))  # fmt: skip
    base.update(env)
    return subprocess.run(
        ["bash", str(REPO / "recipes" / f"{name}.sh"), *args],
        capture_output=True, text=True, timeout=timeout, env=base, cwd=tmp_path,
    )  # fmt: skip


def command_of(stdout: str) -> list[str]:
    lines = stdout.splitlines()
    return shlex.split(lines[lines.index("# command") + 1])


def overrides_of(command: list[str]) -> tuple[str, list[str]]:
    name = next(a.split("=", 1)[1] for a in command if a.startswith("--config-name="))
    return name, command[command.index(f"--config-name={name}") + 1 :]


@pytest.fixture(scope="module")
def verl_keys():
    from hydra import compose, initialize_config_module

    from helpers.config_keys import leaves

    with initialize_config_module("verl.trainer.config", version_base=None):
        return leaves(compose("ppo_trainer"))


def test_every_experiment_config_has_a_recipe():
    assert {p.stem for p in (REPO / "recipes").glob("*.sh")} >= set(EXPERIMENTS) | {"smoke_1gpu", "cpu_smoke"}


@pytest.mark.parametrize("name", EXPERIMENTS)
def test_dry_run_on_an_empty_checkout_exits_0_and_shows_the_composed_config(name, tmp_path, verl_keys):
    """With the project's Python (verl installed): the composed key values and the judge's load are printed, the
    missing model and data are warnings, and the printed command composes with known keys only."""
    result = run_recipe(name, tmp_path, "--dry-run", python=sys.executable)
    assert result.returncode == 0, result.stderr
    assert f"--config-name={name}" in result.stdout
    assert "actor_rollout_ref.rollout.n=8" in result.stdout
    assert "actor_rollout_ref.actor.policy_loss.loss_mode=cispo" in result.stdout
    assert f"algorithm.filter_groups.enable={name == 'rlvr_dapo'}" in result.stdout
    assert "warning: data.train_files" in result.stderr and "warning: actor_rollout_ref.model.path" in result.stderr
    assert not (tmp_path / "run").exists()  # nothing was started or written
    config_name, overrides = overrides_of(command_of(result.stdout))
    config = recipe.compose_experiment(config_name, overrides)
    assert suspicious_keys(config, verl_keys) == []
    # The settings redesign changed no key: the reward.arena leaves of before it (tests/unit/test_settings_snapshot)
    before = json.loads(
        json.dumps(SNAPSHOT[f"recipe {name} SETTING=node8"]["leaves"]).replace("/tmp/snap", str(tmp_path))
    )
    assert arena_leaves(config) == {**before, **ADDED}
    assert config.trainer.resume_mode == "auto"
    assert config.trainer.default_local_dir == str(tmp_path / "run" / "checkpoints")
    if name.startswith("rlvr"):
        assert "judge: none" in result.stdout


@pytest.mark.parametrize(
    ("placement", "expected"),
    [
        ("serve", {"reward.arena.judge.backend": "openai", "reward.arena.judge.base_url": "http://judge-node:8000/v1"}),
        ("ray", {"reward.arena.judge.backend": "vllm", "reward.arena.judge.tensor_parallel_size": 2}),
        ("verl", {"reward.arena.judge.backend": "openai", "reward.arena.judge.base_url": "verl",
                  "reward.reward_model.enable": True, "reward.reward_model.enable_resource_pool": True,
                  "reward.reward_model.rollout.free_cache_engine": False,
                  "reward.custom_reward_function.path": "pkg://arena_verl.verl_reward_fn"}),
    ],
)  # fmt: skip
def test_judge_placement(placement, expected, tmp_path):
    from omegaconf import OmegaConf

    result = run_recipe("arena_live", tmp_path, "--dry-run", JUDGE_PLACEMENT=placement,
                        JUDGE_URL="http://judge-node:8000/v1")  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "cannot import verl" in result.stderr  # this Python has no verl: the command alone
    config = recipe.compose_experiment(*overrides_of(command_of(result.stdout)))
    assert {k: OmegaConf.select(config, k) for k in expected} == expected


def test_verifier_only_experiments_ignore_the_judge_placement(tmp_path):
    result = run_recipe("rlvr_dapo", tmp_path, "--dry-run", JUDGE_PLACEMENT="verl")
    assert result.returncode == 0, result.stderr
    assert "reward.arena.judge" not in result.stdout and "reward_model.enable" not in result.stdout


def test_judge_address_is_read_from_the_judge_jobs_file(tmp_path):
    url_file = tmp_path / "judge_url"
    pending = run_recipe("arena_live", tmp_path, "--dry-run", JUDGE_URL_FILE=str(url_file))
    assert pending.returncode == 0 and "is not there yet" in pending.stderr
    url_file.write_text("http://10.0.0.7:8000/v1\n")
    ready = run_recipe("arena_live", tmp_path, "--dry-run", JUDGE_URL_FILE=str(url_file))
    assert "reward.arena.judge.base_url='http://10.0.0.7:8000/v1'" in command_of(ready.stdout)


def test_judge_replicas_from_judge_url_or_the_url_file_reach_the_judge_as_a_list(tmp_path):
    from arena_verl.settings import settings_from_config

    listed = run_recipe("arena_live", tmp_path, "--dry-run", JUDGE_URL="http://a:8000/v1,http://b:8000/v1")
    assert listed.returncode == 0, listed.stderr
    assert "reward.arena.judge.base_url='http://a:8000/v1,http://b:8000/v1'" in command_of(listed.stdout)
    url_file = tmp_path / "judge_url"
    url_file.write_text("# the judge job's replicas\nhttp://10.0.0.7:8000/v1\n\n  http://10.0.0.8:8000/v1  \n")
    ready = run_recipe("arena_live", tmp_path, "--dry-run", JUDGE_URL_FILE=str(url_file))
    config = recipe.compose_experiment(*overrides_of(command_of(ready.stdout)))
    judge = settings_from_config(config).judge
    assert judge.options.base_url == "http://10.0.0.7:8000/v1,http://10.0.0.8:8000/v1"


@pytest.mark.parametrize(
    ("urls", "message"),
    [("http://a:8000/v1,,http://b:8000/v1", "an empty entry"), ("http://a:8000/v1,", "an empty entry"),
     ("http://a:8000/v1,http://a:8000/v1", "names the replica http://a:8000/v1 twice"),
     ("http://a:8000,http://a:8000/v1/", "names the replica http://a:8000/v1/ twice"),
     ("http://a:8000/v1, http://b:8000/v1", "must be an http(s) address"),
     ("http://a:8000/v1,ftp://b/v1", "must be an http(s) address"),
     ("http://a:8000/v1,http://user@b:8000/v1", "must be an http(s) address")],
)  # fmt: skip
def test_a_bad_replica_list_is_refused_before_anything_starts(tmp_path, urls, message):
    direct = run_recipe("arena_live", tmp_path, "--dry-run", JUDGE_URL=urls)
    assert direct.returncode == 2 and message in direct.stderr, direct.stderr
    url_file = tmp_path / "judge_url"
    url_file.write_text(urls.replace(",", "\n") + "\n")
    if "empty entry" not in message and " " not in urls:  # a file's blank lines and blanks around a line are dropped
        from_file = run_recipe("arena_live", tmp_path, "--dry-run", JUDGE_URL_FILE=str(url_file))
        assert from_file.returncode == 2 and message in from_file.stderr, from_file.stderr


def test_paths_with_spaces_and_several_files_survive_to_the_config(tmp_path):
    data = tmp_path / "my data"
    result = run_recipe("rlvr", tmp_path, "--dry-run", TRAIN_FILES=f"{data}/a.parquet,{data}/b.parquet",
                        NNODES="2", GPUS_PER_NODE="4", TOTAL_STEPS="7")  # fmt: skip
    config = recipe.compose_experiment(*overrides_of(command_of(result.stdout)))
    assert list(config.data.train_files) == [f"{data}/a.parquet", f"{data}/b.parquet"]
    assert (config.trainer.nnodes, config.trainer.n_gpus_per_node, config.trainer.total_training_steps) == (2, 4, 7)


def test_validation_sampling_reaches_the_config(tmp_path):
    result = run_recipe("rlvr", tmp_path, "--dry-run", VAL_TEMPERATURE="1.0", VAL_TOP_P="1.0")
    config = recipe.compose_experiment(*overrides_of(command_of(result.stdout)))
    assert (
        config.actor_rollout_ref.rollout.val_kwargs.temperature,
        config.actor_rollout_ref.rollout.val_kwargs.top_p,
    ) == (1.0, 1.0)
    default = recipe.compose_experiment(*overrides_of(command_of(run_recipe("rlvr", tmp_path, "--dry-run").stdout)))
    assert default.actor_rollout_ref.rollout.val_kwargs.top_p == 0.95


@pytest.mark.parametrize(
    "env",
    [{"SETTING": "laptop"}, {"JUDGE_PLACEMENT": "cloud"}, {"NNODES": "0"}, {"GPUS_PER_NODE": "abc"}, {"VAL_N": "-1"},
     {"TOTAL_STEPS": "0"}, {"SAVE_FREQ": "0"}, {"TEST_FREQ": "2.5"}, {"VAL_TEMPERATURE": "hot"}, {"JUDGE_TP": "0"},
     {"VAL_TOP_P": "0"}, {"VAL_TOP_P": "1.5"}, {"RUN_DIR": "C:\\runs"}],
)  # fmt: skip
def test_absurd_values_are_refused_before_anything_starts(env, tmp_path):
    result = run_recipe("arena_live", tmp_path, "--dry-run", **env)
    assert result.returncode == 2 and "error:" in result.stderr, result.stderr
    assert "# command" not in result.stdout


def test_never_and_positive_frequencies_are_accepted(tmp_path):
    assert run_recipe("arena_live", tmp_path, "--dry-run", SAVE_FREQ="-1", TEST_FREQ="5").returncode == 0


def test_bad_settings_are_refused(tmp_path):
    # A real serve run without an address refuses before anything starts.
    refused = run_recipe("arena_live", tmp_path)
    assert refused.returncode == 2 and "JUDGE_URL" in refused.stderr


def test_a_real_run_without_exec_refuses_too(tmp_path):
    """recipes/smoke_1gpu.sh runs the shared body in a shell without `set -e`: a failed check must still stop it."""
    fake = tmp_path / "python"
    fake.write_text(f"#!/bin/bash\nif [ \"$2\" = verl.trainer.main_ppo ]; then echo TRAINER STARTED; exit 0; fi\n"
                    f'exec {sys.executable} "$@"\n')  # fmt: skip
    fake.chmod(0o755)
    body = REPO / "recipes" / "lib" / "experiment.sh"
    env = {**os.environ, "PYTHON": str(fake), "RECIPE_NO_EXEC": "1", "MODELS_DIR": str(tmp_path),
           "DATA_DIR": str(tmp_path), "RUN_DIR": str(tmp_path / "run")}  # fmt: skip
    result = subprocess.run(["bash", "-c", f"source {body}; experiment_main rlvr"], capture_output=True, text=True,
                            env=env, timeout=120)  # fmt: skip
    assert result.returncode == 2 and "error: data.train_files" in result.stderr
    assert "TRAINER STARTED" not in result.stdout


def test_a_run_whose_gpu_groups_do_not_fit_the_clusters_nodes_is_refused():
    """The judge's engines (or verl's reward-model pool) would wait forever for GPUs the trainer took; each group
    must fit on one node (tests/integration/test_placement.py has the fit itself and a fake multi-GPU Ray cluster)."""
    from arena_verl.verl_edge.placement import demands_from_config, placement_problems

    paper = recipe.compose_experiment("arena_live", ["arena_setting=paper", "reward.arena.judge.model_path=/m"])
    demands = demands_from_config(paper)
    assert [(d.gpus, d.bundles) for d in demands] == [(8, 4), (8, 1)]  # 4 trainer nodes of 8, one TP=8 engine
    assert placement_problems(demands, [8.0] * 5) == []
    assert placement_problems(demands, [8.0] * 4)  # the judge engine has no node left
    (problem,) = placement_problems(demands, [8.0] * 4 + [4.0, 4.0])  # 8 free GPUs, but on two nodes
    assert "judge engine (1 x 8 GPUs)" in problem and "do not fit together" in problem
    served = recipe.compose_experiment(
        "arena_live", ["arena_setting=node8", "reward.arena.judge.base_url=verl", "reward.reward_model.enable=True",
                       "reward.reward_model.enable_resource_pool=True", "reward.reward_model.nnodes=1",
                       "reward.reward_model.n_gpus_per_node=2"])  # fmt: skip
    assert [(d.gpus, d.bundles) for d in demands_from_config(served)] == [(6, 1), (2, 1)]


def test_a_real_run_refuses_to_start_on_missing_paths(tmp_path):
    result = run_recipe("rlvr", tmp_path, python=sys.executable)
    assert result.returncode == 2
    assert "error: data.train_files" in result.stderr
    assert not (tmp_path / "run" / "train.log").exists()  # the trainer never started


def test_shellcheck_passes_on_every_shell_script():
    files = subprocess.run(["git", "ls-files", "*.sh", "*.sbatch", ".ci/run"], cwd=REPO, capture_output=True,
                           text=True, check=True).stdout.split()  # fmt: skip
    files += [str(p.relative_to(REPO)) for p in (REPO / "recipes").rglob("*.sh")]  # not yet committed ones too
    shellcheck = Path(sys.executable).parent / "shellcheck"
    result = subprocess.run([str(shellcheck), "-x", *sorted(set(files))], cwd=REPO, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout


def test_judge_calls_per_group_follow_the_schedule():
    n8 = dict(group_size=8)
    assert recipe.judge_calls_per_group(arena_settings(mode="arena", strategy="live", **n8)) == 18  # 1 + 2 + 3 * 5
    assert recipe.judge_calls_per_group(arena_settings(mode="arena", strategy="round_robin", **n8)) == 28
    assert recipe.judge_calls_per_group(arena_settings(mode="tournament_all", two_sided=True, **n8)) == 56
    assert recipe.judge_calls_per_group(arena_settings(mode="arena", strategy="info_gain", budget=12, **n8)) == 12
    assert recipe.judge_calls_per_group(arena_settings(mode="adaptive_pointwise", **n8)) == 8
    assert recipe.judge_calls_per_group(arena_settings(mode="rlvr", **n8)) == 0


def test_runlog_tables_step_time_and_generations(tmp_path, capsys):
    def write(run, steps):
        run.mkdir()
        records = [{"step": s, "data": {"training/global_step": s, **d}} for s, d in enumerate(steps, 1)]
        (run / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records) + '{"step": 3, "da')

    write(
        tmp_path / "dapo",
        [{"timing_s/step": 10.0, "arena/generations": 96}, {"timing_s/step": 14.0, "arena/generations": 160}],
    )
    write(tmp_path / "live", [{"timing_s/step": 8.0, "arena/generations": 64, "arena/judge_calls": 36}])
    # A resumed run: the second attempt (its own file) logs step 2 again and step 3; its records win.
    attempts = tmp_path / "resumed" / "metrics"
    attempts.mkdir(parents=True)
    for attempt, (name, steps) in enumerate((("20260101-000000-1.jsonl", [1, 2]), ("20260102-000000-2.jsonl", [2, 3]))):
        records = [{"step": s, "data": {"training/global_step": s, "timing_s/step": 10.0 * s + attempt}} for s in steps]
        (attempts / name).write_text("".join(json.dumps(r) + "\n" for r in records))
    rows = runlog.step_rows(tmp_path / "resumed")
    assert [(r["step"], r["step_s"]) for r in rows] == [(1, 10.0), (2, 21.0), (3, 31.0)]
    out = tmp_path / "report.json"
    assert runlog.main([str(tmp_path / "dapo"), str(tmp_path / "live" / "metrics.jsonl"), "--json", str(out)]) == 0
    report = json.loads(out.read_text())
    dapo = report[str(tmp_path / "dapo")]["means"]
    assert (dapo["steps"], dapo["step_s"], dapo["generations"]) == (2, 12.0, 128.0)
    assert dapo["generations_per_hour"] == pytest.approx(3600 * 128 / 12)
    assert report[str(tmp_path / "live" / "metrics.jsonl")]["means"]["judge_calls"] == 36
    assert "generations_per_hour" in capsys.readouterr().out
    assert runlog.main([str(tmp_path / "missing")]) == 2


def test_code_problems_without_a_sandbox_are_refused(tmp_path):
    """verl would run generated code on the reward workers (prime_code) when no sandbox URL is set."""
    import pandas as pd

    data = tmp_path / "lcb.parquet"
    pd.DataFrame({"data_source": ["codecontests"], "prompt": [[{"role": "user", "content": "x"}]]}).to_parquet(data)
    overrides = [f"data.train_files=['{data}']", f"data.val_files=['{data}']", "reward.arena.mode=rlvr"]
    config = recipe.compose_experiment("rlvr", overrides)
    assert any("sandbox_fusion.url" in p for p in recipe.path_problems(config))
    sandboxed = recipe.compose_experiment(
        "rlvr", [*overrides, "reward.sandbox_fusion.url=http://sandbox:8080/run_code"]
    )
    assert not any("sandbox" in p for p in recipe.path_problems(sandboxed))


# --- verl's run-time rules, checked before anything starts (arena_verl/verl_rules.py) ----------------------------


@pytest.mark.parametrize(("nodes", "gpus"), [("1", "6"), ("1", "8"), ("2", "6"), ("2", "8")])
def test_node8_composes_for_the_trainer_shares_it_supports(nodes, gpus, tmp_path):
    result = run_recipe("arena_live", tmp_path, "--dry-run", python=sys.executable, NNODES=nodes, GPUS_PER_NODE=gpus)
    assert result.returncode == 0, result.stderr
    assert "error:" not in result.stderr
    config = recipe.compose_experiment(*overrides_of(command_of(result.stdout)))
    samples = config.actor_rollout_ref.actor.ppo_mini_batch_size * config.actor_rollout_ref.rollout.n
    assert samples % (int(nodes) * int(gpus)) == 0  # verl's assert at the first actor update


def test_a_trainer_share_that_breaks_the_mini_batch_rule_is_refused_with_the_rule_and_a_fix(tmp_path):
    result = run_recipe("arena_live", tmp_path, "--dry-run", python=sys.executable, NNODES="1", GPUS_PER_NODE="5")
    assert result.returncode == 2
    (line,) = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert "ppo_mini_batch_size 24 x actor_rollout_ref.rollout.n 8 = 192 samples" in line
    assert "data-parallel size 5" in line and "multiple of 5" in line


def rules(*overrides: str, experiment: str = "arena_live") -> list[str]:
    from arena_verl.verl_edge.rules import run_time_problems

    return run_time_problems(recipe.compose_experiment(experiment, ["arena_setting=node8", *overrides]))


def test_run_time_rules_name_the_keys():
    assert rules() == []
    # The review's case: node8's old batch (128 prompts, mini-batch 32) on its 6-GPU share.
    (mini,) = rules("data.train_batch_size=128", "actor_rollout_ref.actor.ppo_mini_batch_size=32")
    assert "actor_rollout_ref.actor.ppo_mini_batch_size 32 x actor_rollout_ref.rollout.n 8 = 256 samples" in mini
    assert "do not divide by the data-parallel size 6" in mini
    # The critic's mini-batches are split the same way (a GAE run has one).
    (critic,) = rules("algorithm.adv_estimator=gae", "critic.ppo_mini_batch_size=7")
    assert critic.startswith("critic.ppo_mini_batch_size 7 x actor_rollout_ref.rollout.n 8 = 56 samples")
    # A batch that is not a multiple of the mini-batch: verl's V1 trainer pads it with dummy samples every step
    # (the legacy trainer does not pad).
    (padding,) = rules("data.train_batch_size=100")
    assert "pads every batch to 960 (160 dummy samples a step)" in padding
    assert rules("data.train_batch_size=100", "trainer.use_v1=False") == []
    # Ulysses sequence parallelism shrinks the data-parallel size.
    assert rules("actor_rollout_ref.actor.fsdp_config.ulysses_sequence_parallel_size=2") == []
    (ulysses,) = rules("actor_rollout_ref.actor.fsdp_config.ulysses_sequence_parallel_size=4")
    assert "ulysses_sequence_parallel_size 4" in ulysses
    # The rollout's replicas must tile the trainer's GPUs and its nodes (verl asserts a multi-node replica is whole
    # nodes; a smaller one would straddle two).
    (replicas,) = rules("actor_rollout_ref.rollout.tensor_model_parallel_size=4")
    assert "6 GPUs, which do not split into vLLM replicas of 4 GPUs" in replicas
    (straddles,) = rules("trainer.nnodes=2", "actor_rollout_ref.rollout.tensor_model_parallel_size=4")
    assert "replicas of 4 GPUs" in straddles and "do not tile the trainer's nodes of 6 GPUs" in straddles
    (partial_nodes,) = rules("trainer.nnodes=4", "actor_rollout_ref.rollout.tensor_model_parallel_size=8")
    assert "do not tile the trainer's nodes of 6 GPUs" in partial_nodes
    assert rules("trainer.nnodes=2", "actor_rollout_ref.rollout.tensor_model_parallel_size=3") == []
    # verl's reward-model pool: its engines must fit its nodes.
    pool = ["reward.reward_model.enable=True", "reward.reward_model.enable_resource_pool=True",
            "reward.reward_model.nnodes=1", "reward.reward_model.n_gpus_per_node=2"]  # fmt: skip
    assert rules(*pool, "reward.reward_model.rollout.tensor_model_parallel_size=2") == []
    (judge_tp,) = rules(*pool, "reward.reward_model.rollout.tensor_model_parallel_size=4")
    assert "verl's reward-model pool" in judge_tp and "replicas of 4 GPUs" in judge_tp
    assert rules("reward.num_workers=0") == ["reward.num_workers must be >= 1, got 0"]
    # A referee that forgets answered groups within a step would make a late sample wait out the group deadline.
    batch = recipe.compose_experiment("arena_live", ["arena_setting=node8"]).data.train_batch_size
    assert rules(f"reward.arena.groups_remembered={batch}") == []
    (forgets,) = rules(f"reward.arena.groups_remembered={batch - 1}")
    assert forgets.startswith(f"reward.arena.groups_remembered {batch - 1} is fewer than a step's {batch} groups")


def test_reward_workers_are_not_asked_for_more_concurrent_calls_than_ray_allows():
    """Every arena call waits for its group; a RewardLoopWorker takes at most 1000 calls at once (Ray's default for
    async actors), so the busiest worker must stay below that."""
    paper = ["arena_setting=paper", "reward.arena.judge.model_path=/m"]
    assert rules(*paper[1:], experiment="arena_live") == []  # node8: 768 samples over 8 workers
    config = recipe.compose_experiment("arena_live", [*paper, "data.train_batch_size=1024"])
    from arena_verl.verl_edge.rules import run_time_problems

    (problem,) = run_time_problems(config)
    assert "reward.num_workers 8 is too few for 8192 training samples" in problem
    needed = int(problem.rsplit(">= ", 1)[1])
    enough = recipe.compose_experiment(
        "arena_live", [*paper, "data.train_batch_size=1024", f"reward.num_workers={needed}"]
    )
    assert run_time_problems(enough) == []
    # rlvr's calls return at once (the referee only counts): no limit from the group wait.
    assert run_time_problems(config, waits_for_groups=False) == []


# --- SETTING=cpu: the experiment recipes on a machine without a GPU ---------------------------------------------


def test_cpu_setting_dry_run_shows_the_cpu_platform_and_the_simulated_judge(tmp_path):
    result = run_recipe("arena_paced", tmp_path, "--dry-run", python=sys.executable, SETTING="cpu")
    assert result.returncode == 0, result.stderr
    assert "VERL_PLATFORM=cpu" in result.stdout and "RAY_ADDRESS=local" in result.stdout
    command = command_of(result.stdout)
    assert "arena_setting=cpu" in command
    # The defaults are built by a real run in RUN_DIR/assets; the dry run only warns that they are not there yet.
    assert f"warning: actor_rollout_ref.model.path: {tmp_path / 'run' / 'assets' / 'toy_model'}" in result.stderr
    config = recipe.compose_experiment(*overrides_of(command))
    assert (config.trainer.device, config.trainer.n_gpus_per_node, config.ray_kwargs.ray_init.num_gpus) == ("cpu", 1, 1)
    assert config.reward.arena.judge.backend == "simulated" and config.reward.arena.strategy == "paced"
    assert config.actor_rollout_ref.rollout.val_kwargs.n == 2
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("name", EXPERIMENTS)
def test_every_experiment_composes_on_the_cpu_setting_within_verls_rules(name):
    from arena_verl.verl_edge.rules import run_time_problems

    config = recipe.compose_experiment(name, ["arena_setting=cpu"])
    assert run_time_problems(config) == []
    assert config.trainer.device == "cpu" and config.actor_rollout_ref.rollout.enable_sleep_mode is False


def test_cpu_setting_places_a_local_model_judge_and_honours_the_users_values(tmp_path):
    judge = tmp_path / "judge model"
    judge.mkdir()
    result = run_recipe("arena_live", tmp_path, "--dry-run", "trainer.val_before_train=False", python=sys.executable,
                        SETTING="cpu", JUDGE="vllm", JUDGE_MODEL=str(judge), TOTAL_STEPS="5", SAVE_FREQ="-1",
                        TEST_FREQ="2")  # fmt: skip
    assert result.returncode == 0, result.stderr
    config = recipe.compose_experiment(*overrides_of(command_of(result.stdout)))
    assert (config.reward.arena.judge.backend, config.reward.arena.judge.model_path) == ("vllm", str(judge))
    assert config.ray_kwargs.ray_init.num_gpus == 2  # the judge's engine asks Ray for a (fake) GPU of its own
    assert (config.trainer.total_training_steps, config.trainer.save_freq, config.trainer.test_freq) == (5, -1, 2)
    assert config.trainer.val_before_train is False  # overrides after the script name come last
    refused = run_recipe("arena_live", tmp_path, "--dry-run", SETTING="cpu", JUDGE="transformers")
    assert refused.returncode == 2 and "JUDGE=transformers needs JUDGE_MODEL" in refused.stderr


def test_the_cpu_smoke_recipe_is_the_cpu_setting_on_arena_ppo(tmp_path):
    """cpu_smoke.sh keeps its own variables; its CPU overrides come from configs/arena_setting/cpu.yaml, and every
    path it hands Hydra is quoted (a comma, '=' or brackets in a path stay part of it)."""
    out = tmp_path / "out,a=b[1]"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JUDGE", "SETTING", "RAY_ADDRESS"))}
    env.update(OUT_DIR=str(out), STEPS="3")
    result = subprocess.run(["bash", str(REPO / "recipes" / "cpu_smoke.sh"), "--dry-run"], capture_output=True,
                            text=True, timeout=120, env=env, cwd=tmp_path)  # fmt: skip
    assert result.returncode == 0, result.stderr
    command = shlex.split(result.stdout.splitlines()[-1])
    config = recipe.compose_experiment("arena_ppo", command[command.index("--config-name=arena_ppo") + 1 :])
    assert config.data.train_files == str(out / "data" / "train.parquet")
    assert config.actor_rollout_ref.model.path == str(out / "toy_model")
    assert config.trainer.device == "cpu" and config.trainer.total_training_steps == 3
    assert config.reward.arena.judge.sim_sharpness == 2.0 and config.reward.arena.group_deadline_s == 300


# --- input hygiene and the judge's readiness -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("env", "message"),
    [({"TRAIN_FILES": "/data/a.parquet\n/data/b.parquet"}, "TRAIN_FILES contains a newline"),
     ({"VAL_FILES": "/data/a.parquet,/data/\tb.parquet"}, "VAL_FILES contains a newline or another control"),
     ({"KEEP_CHECKPOINTS": "0"}, "KEEP_CHECKPOINTS must be >= 1 or -1"),
     ({"JUDGE_WAIT_S": "soon"}, "JUDGE_WAIT_S must be an integer"),
     ({"DATA_DIR": "/da\nta"}, "DATA_DIR contains a newline"),
     ({"RUN_DIR": "/runs/a,b"}, "RUN_DIR must not contain a comma"),
     ({"JUDGE_URL": "-h"}, "JUDGE_URL must be an http(s) address"),
     ({"JUDGE_URL": "http://judge:8000/v1'"}, "JUDGE_URL must be an http(s) address"),
     ({"JUDGE_API_KEY": "ab\ncd"}, "JUDGE_API_KEY contains a newline")],
)  # fmt: skip
def test_values_that_would_silently_change_the_run_are_refused(env, message, tmp_path):
    result = run_recipe("arena_live", tmp_path, "--dry-run", **env)
    assert result.returncode == 2 and message in result.stderr, result.stderr


def test_a_run_dir_that_looks_like_an_option_is_a_path(tmp_path):
    result = run_recipe("rlvr", tmp_path, "--dry-run", RUN_DIR="--x")
    assert result.returncode == 0, result.stderr
    assert f"RUN_DIR={tmp_path / '--x'}" in result.stdout


def test_checkpoints_kept_and_fsdp_environment(tmp_path):
    result = run_recipe("arena_live", tmp_path, "--dry-run", JUDGE_URL="http://judge:8000/v1")
    assert "CUDA_DEVICE_MAX_CONNECTIONS" not in result.stdout  # verl sets it for Megatron; FSDP must not have it
    config = recipe.compose_experiment(*overrides_of(command_of(result.stdout)))
    assert config.trainer.max_actor_ckpt_to_keep == 3
    every = run_recipe("arena_live", tmp_path, "--dry-run", JUDGE_URL="http://judge:8000/v1", KEEP_CHECKPOINTS="-1")
    assert recipe.compose_experiment(*overrides_of(command_of(every.stdout))).trainer.max_actor_ckpt_to_keep is None


def test_a_served_judge_that_refuses_the_key_stops_the_run_at_once(tmp_path):
    """`vllm serve --api-key` answers 401 to a probe without the key: the recipe used to wait JUDGE_WAIT_S for it."""
    from helpers.loopback_judge import LoopbackJudge

    with LoopbackJudge(api_key="right") as judge:
        common = dict(python=sys.executable, JUDGE_PLACEMENT="serve", JUDGE_URL=judge.url, JUDGE_WAIT_S="600")
        wrong = run_recipe("arena_live", tmp_path, timeout=60, JUDGE_API_KEY="wrong", **common)
        assert wrong.returncode == 2 and "refuses the key" in wrong.stderr, wrong.stderr
        named = run_recipe("arena_live", tmp_path, timeout=60, JUDGE_API_KEY="right", JUDGE_SERVED_NAME="other",
                           **common)  # fmt: skip
        assert named.returncode == 2 and "does not serve 'other'" in named.stderr, named.stderr
        # The right key and name: past the probe, the pre-flight refuses the missing data (nothing trains here).
        right = run_recipe("arena_live", tmp_path, timeout=120, JUDGE_API_KEY="right", **common)
        assert right.returncode == 2 and "error: data.train_files" in right.stderr, right.stderr
        assert judge.refused == 1 and judge.calls == 1  # the probe's one chat request: no run trained


def test_a_verl_served_judge_that_would_sleep_for_good_is_refused(tmp_path):
    overrides = ["arena_setting=node8", "reward.arena.judge.backend=openai", "reward.arena.judge.base_url=verl",
                 "reward.reward_model.enable=True", "reward.reward_model.enable_resource_pool=True",
                 f"reward.reward_model.model_path={tmp_path}", "reward.reward_model.n_gpus_per_node=2",
                 "reward.reward_model.rollout.tensor_model_parallel_size=2"]  # fmt: skip
    assert recipe.main(["show", "--config-name", "arena_live", *overrides]) == 2  # verl's default: free_cache_engine
    awake = "reward.reward_model.rollout.free_cache_engine=False"
    assert recipe.main(["show", "--config-name", "arena_live", *overrides, awake]) == 0


def test_the_recipe_starts_with_the_replicas_that_answer_and_warns_once_for_each_that_does_not(tmp_path):
    """Two replicas listed, one up: after JUDGE_WAIT_S the run starts with the one that answered, one warning names
    the other; none up stops the run."""
    from helpers.loopback_judge import LoopbackJudge

    with socket.socket() as closed:  # a port nothing listens on once the socket is closed
        closed.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{closed.getsockname()[1]}/v1"
    with LoopbackJudge(api_key="k") as judge:
        common = dict(python=sys.executable, JUDGE_PLACEMENT="serve", JUDGE_API_KEY="k", JUDGE_WAIT_S="10")
        result = run_recipe("arena_live", tmp_path, timeout=120, JUDGE_URL=f"{dead},{judge.url}", **common)
    # Past the wait, the pre-flight shows the composed config (then refuses the missing data: nothing trains here).
    assert f"reward.arena.judge.base_url={judge.url}\n" in result.stdout, result.stdout[-2000:] + result.stderr
    assert result.stderr.count(f"the judge replica {dead} did not answer within 10s") == 1, result.stderr
    assert result.returncode == 2 and "error: data.train_files" in result.stderr
    none = run_recipe("arena_live", tmp_path, timeout=120, JUDGE_URL=dead, **common)
    assert none.returncode == 2 and f"the judge at '{dead}' did not answer within 10s" in none.stderr, none.stderr


def test_a_judge_address_written_while_the_recipe_waits_is_the_one_it_uses(tmp_path):
    """The judge job publishes its URL file after the training job started: the recipe waits, probes, and puts the
    address into its command (also when the body runs from `bash -c`, as recipes/smoke_1gpu.sh runs it)."""
    from helpers.loopback_judge import LoopbackJudge

    url_file = tmp_path / "judge_url"
    body = REPO / "recipes" / "lib" / "experiment.sh"
    with LoopbackJudge(api_key="k") as judge:
        publish = threading.Timer(2.0, lambda: url_file.write_text(judge.url + "\n"))
        publish.start()
        env = {k: v for k, v in os.environ.items() if not k.startswith(("JUDGE_", "RAY_ADDRESS", "SETTING"))}
        env.update(PYTHON=sys.executable, MODELS_DIR=str(tmp_path), DATA_DIR=str(tmp_path), RUN_DIR=str(tmp_path / "r"))
        env.update(JUDGE_PLACEMENT="serve", JUDGE_URL_FILE=str(url_file), JUDGE_API_KEY="k", RECIPE_NO_EXEC="1")
        try:
            result = subprocess.run(["bash", "-c", f"source {body}; experiment_main arena_live"], capture_output=True,
                                    text=True, env=env, timeout=120)  # fmt: skip
        finally:
            publish.cancel()
    # Past the wait, the pre-flight shows the composed config (then refuses the missing data: nothing trains here).
    assert f"reward.arena.judge.base_url={judge.url}" in result.stdout, result.stdout[-2000:] + result.stderr
    assert result.returncode == 2 and "error: data.train_files" in result.stderr


def test_a_cpu_platform_left_in_the_shell_does_not_reach_a_gpu_run(tmp_path):
    result = run_recipe("arena_live", tmp_path, "--dry-run", JUDGE_URL="http://judge:8000/v1", VERL_PLATFORM="cpu",
                        VERL_USE_EXTERNAL_MODULES="arena_verl.cpu")  # fmt: skip
    assert result.returncode == 0 and "VERL_PLATFORM=cpu is set but SETTING=node8" in result.stderr
    environment = result.stdout.split("# command")[0]
    assert "VERL_PLATFORM" not in environment and "VERL_USE_EXTERNAL_MODULES" not in environment


def test_a_judge_url_file_is_trimmed_and_checked_and_dollars_in_paths_stay_literal(tmp_path):
    url_file = tmp_path / "judge_url"
    url_file.write_text("http://10.0.0.7:8000/v1 \r\n")
    train = tmp_path / "data" / "a${oc.env:HOME}.parquet"
    ready = run_recipe("arena_live", tmp_path, "--dry-run", JUDGE_URL_FILE=str(url_file), TRAIN_FILES=str(train))
    assert ready.returncode == 0, ready.stderr
    config = recipe.compose_experiment(*overrides_of(command_of(ready.stdout)))
    assert config.reward.arena.judge.base_url == "http://10.0.0.7:8000/v1"
    assert list(config.data.train_files) == [str(train)]  # not interpolated by Hydra
    url_file.write_text("--help\n")
    refused = run_recipe("arena_live", tmp_path, "--dry-run", JUDGE_URL_FILE=str(url_file))
    assert refused.returncode == 2 and "must be an http(s) address" in refused.stderr


def test_a_judge_template_that_cannot_be_used_is_refused_before_anything_starts(tmp_path, capsys):
    """As at the trainer's start (the reward manager checks the templates too): exit 2, not a path warning."""
    from arena_verl.tools import recipe

    template = tmp_path / "pairwise.txt"
    template.write_text("compare them")  # none of the placeholders
    judge = [
        "reward.arena.mode=arena",
        "reward.arena.judge.backend=transformers",
        f"reward.arena.judge.model_path={tmp_path}",
        f"reward.arena.judge.pairwise_template={template}",
    ]
    assert recipe.main(["show", "--config-name", "rlvr_dapo", *judge]) == 2
    err = capsys.readouterr().err
    assert "reward.arena.judge.pairwise_template" in err and "lacks the placeholders" in err
    assert err.startswith("error:")
