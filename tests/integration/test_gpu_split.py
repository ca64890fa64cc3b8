"""Disjoint GPUs for the trainer and a served judge on the same node: `node8` with a loopback JUDGE_URL (the judge on
the training node, "on the other 2" GPUs) used to leave Ray's trainer workers free to take the judge's GPUs too
(neither CUDA_VISIBLE_DEVICES nor ray_init.num_gpus was set), and vLLM's free-memory check then failed at rollout
start. The recipe's dry run shows the restriction in its command; the Slurm launcher starts Ray on the head with the
trainer's GPUs only. Dry runs only (no Ray, no trainer): about 30 s.

    .venv/bin/python -m pytest -q tests/integration/test_gpu_split.py
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys

import pytest

from arena_verl.tools import recipe
from helpers import paths

REPO = paths.REPO
NO_VERL_PYTHON = "/usr/bin/python3"  # the command alone (fast); the venv's Python composes it too


def dry_run(tmp_path, *args, python=NO_VERL_PYTHON, **env):
    dropped = ("JUDGE_", "RAY_", "SETTING", "CUDA_VISIBLE_DEVICES", "NNODES", "GPUS_PER_NODE")
    base = {k: v for k, v in os.environ.items() if not k.startswith(dropped)}
    base.update(MODELS_DIR=str(tmp_path / "models"), DATA_DIR=str(tmp_path / "data"), PYTHON=python,
                RUN_DIR=str(tmp_path / "run"), PATH=f"{tmp_path / 'bin'}:{os.environ['PATH']}", **env)  # fmt: skip
    (tmp_path / "bin").mkdir(exist_ok=True)  # an empty first PATH entry: no nvidia-smi here (8 GPUs assumed)
    return subprocess.run(["bash", str(REPO / "recipes" / "arena_live.sh"), "--dry-run", *args], capture_output=True,
                          text=True, timeout=300, env=base, cwd=tmp_path)  # fmt: skip


def command_line(stdout: str) -> str:
    lines = stdout.splitlines()
    return lines[lines.index("# command") + 1]


def environment(stdout: str) -> dict[str, str]:
    block = stdout.split("# environment\n", 1)[1].split("# ", 1)[0]
    return dict(line.split("=", 1) for line in block.splitlines() if "=" in line)


@pytest.mark.parametrize("url", ["http://127.0.0.1:8000/v1", "http://localhost:8000/v1", "http://[::1]:8000/v1"])
def test_a_loopback_judge_under_node8_leaves_the_judge_its_two_gpus(tmp_path, url):
    result = dry_run(tmp_path, JUDGE_URL=url)
    assert result.returncode == 0, result.stderr
    line = command_line(result.stdout)
    words = shlex.split(line)
    assert words[0] == "CUDA_VISIBLE_DEVICES=0,1,2,3,4,5"  # the command as run: the trainer's 6 GPUs ...
    assert "++ray_kwargs.ray_init.num_gpus=6" in words  # ... and verl's own Ray told how many
    assert environment(result.stdout)["CUDA_VISIBLE_DEVICES"] == "0,1,2,3,4,5"
    assert "on 6,7 (JUDGE_GPUS; start vllm serve with CUDA_VISIBLE_DEVICES=6,7)" in result.stdout


def test_a_replica_list_with_one_loopback_replica_gets_the_split_too(tmp_path):
    result = dry_run(tmp_path, JUDGE_URL="http://judge-node:8000/v1,http://127.0.0.1:8001/v1")
    assert result.returncode == 0, result.stderr
    assert shlex.split(command_line(result.stdout))[0] == "CUDA_VISIBLE_DEVICES=0,1,2,3,4,5"
    elsewhere = dry_run(tmp_path, JUDGE_URL="http://judge-node:8000/v1,http://judge-node:8001/v1")
    assert not shlex.split(command_line(elsewhere.stdout))[0].startswith("CUDA_VISIBLE_DEVICES=")


def test_the_split_follows_the_visible_gpus_the_share_and_judge_gpus(tmp_path):
    result = dry_run(tmp_path, JUDGE_URL="http://127.0.0.1:8000/v1", CUDA_VISIBLE_DEVICES="2,3,4,5",
                     GPUS_PER_NODE="2", JUDGE_GPUS="4")  # fmt: skip
    assert result.returncode == 0, result.stderr
    words = shlex.split(command_line(result.stdout))
    assert words[0] == "CUDA_VISIBLE_DEVICES=2,3" and "++ray_kwargs.ray_init.num_gpus=2" in words
    override = dry_run(tmp_path, "trainer.n_gpus_per_node=4", JUDGE_URL="http://127.0.0.1:8000/v1")
    assert shlex.split(command_line(override.stdout))[0] == "CUDA_VISIBLE_DEVICES=0,1,2,3"


@pytest.mark.parametrize(
    ("env", "message"),
    [({"GPUS_PER_NODE": "8"}, "all go to the trainer (GPUS_PER_NODE=8)"),
     ({"JUDGE_GPUS": "9"}, "JUDGE_GPUS=9: '9' is not one of this node's GPUs"),
     ({"JUDGE_GPUS": "0,1,2"}, "the trainer needs GPUS_PER_NODE=6 GPUs beside the served judge's"),
     ({"NNODES": "2"}, "which the referee on another of the run's nodes cannot reach")],
)  # fmt: skip
def test_a_split_that_cannot_be_made_is_refused_before_anything_starts(tmp_path, env, message):
    result = dry_run(tmp_path, JUDGE_URL="http://127.0.0.1:8000/v1", **env)
    assert result.returncode == 2 and message in result.stderr, result.stderr
    assert "# command" not in result.stdout


def test_a_judge_elsewhere_or_shared_gets_no_restriction(tmp_path):
    for env in ({"JUDGE_URL": "http://judge-node:8000/v1"}, {"JUDGE_URL": "http://127.0.0.1:8000/v1",
                                                            "JUDGE_GPUS": "shared"}):  # fmt: skip
        result = dry_run(tmp_path, **env)
        assert result.returncode == 0, result.stderr
        assert not command_line(result.stdout).startswith("CUDA_VISIBLE_DEVICES=")
        assert "num_gpus" not in command_line(result.stdout)


def test_the_restricted_command_composes_with_six_ray_gpus(tmp_path):
    result = dry_run(tmp_path, JUDGE_URL="http://127.0.0.1:8000/v1", python=sys.executable)
    assert result.returncode == 0, result.stderr
    assert "ray_kwargs.ray_init.num_gpus=6" in result.stdout  # the composed value, as `recipe show` prints it
    words = shlex.split(command_line(result.stdout))
    name = next(w.split("=", 1)[1] for w in words if w.startswith("--config-name="))
    config = recipe.compose_experiment(name, words[words.index(f"--config-name={name}") + 1 :])
    assert config.ray_kwargs.ray_init.num_gpus == 6 and config.trainer.n_gpus_per_node == 6


def test_the_slurm_launcher_starts_ray_on_the_heads_trainer_gpus_only(tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "scontrol").write_text('#!/usr/bin/env bash\nprintf "%s\\n" $FAKE_HOSTNAMES\n')
    (bin_dir / "scontrol").chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "FAKE_HOSTNAMES": "gpu01", "DRY_RUN": "1",
           "SLURM_JOB_NODELIST": "gpu01", "SLURM_NNODES": "1", "SLURM_GPUS_PER_NODE": "8", "SLURM_CPUS_PER_TASK": "8",
           "SLURM_SUBMIT_DIR": str(REPO), "RUN_DIR": str(tmp_path / "run"), "CONTAINER_IMAGE": "/images/x.sqsh",
           "JUDGE_PLACEMENT": "serve", "JUDGE_URL": "http://127.0.0.1:8000/v1"}  # fmt: skip
    for name in ("NNODES", "GPUS_PER_NODE", "JUDGE_GPUS", "SETTING", "ARENA_VERL_DIR", "RAY_NUM_GPUS"):
        env.pop(name, None)
    result = subprocess.run(["bash", str(REPO / "scripts" / "slurm" / "ray_cluster.sbatch")], capture_output=True,
                            text=True, timeout=60, env=env, cwd=REPO)  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    printed = [shlex.split(line)[1:] for line in result.stdout.splitlines() if line.startswith("+ ")]
    (head,) = [words for words in printed if "--head" in words]
    assert head[head.index("env") : head.index("env") + 2] == ["env", "CUDA_VISIBLE_DEVICES=0,1,2,3,4,5"]
    assert "--num-gpus=6" in head
    (driver,) = [words for words in printed if "recipes/arena_live.sh" in words]
    assert {"TRAINER_GPUS=0,1,2,3,4,5", "JUDGE_GPUS=6,7"} <= set(driver)
    assert not any(word.startswith(("NNODES=", "GPUS_PER_NODE=")) for word in driver)  # not the whole node
    (last_wait,) = [w for w in printed if "scripts/slurm/wait_for_ray.py" in w and any("--gpus" in x for x in w)]
    assert "--gpus=6" in last_wait
    two_nodes = {**env, "FAKE_HOSTNAMES": "gpu01 gpu02", "SLURM_JOB_NODELIST": "gpu0[1-2]", "SLURM_NNODES": "2"}
    refused = subprocess.run(["bash", str(REPO / "scripts" / "slurm" / "ray_cluster.sbatch")], capture_output=True,
                             text=True, timeout=60, env=two_nodes, cwd=REPO)  # fmt: skip
    assert refused.returncode == 2 and "cannot reach" in refused.stderr


def test_the_doc_names_the_variable():
    text = (REPO / "docs" / "cluster.md").read_text()
    assert "JUDGE_GPUS" in text and "CUDA_VISIBLE_DEVICES" in text
