"""The recipes' `--check-cluster` against a running Ray cluster with fake GPU resources (it never ran in CI: the CPU
setting always starts a Ray of its own, RAY_ADDRESS=local). A local cluster of `ray.cluster_utils.Cluster` nodes
declaring (fake) GPUs, on loopback; `arena-verl recipe show --check-cluster` with RAY_ADDRESS set to it, and the
recipe's real branch, which adds the check itself when RAY_ADDRESS names a cluster: a fake PYTHON stands in for the
trainer (it only says it started), so nothing trains and nothing runs on the fake GPUs. About 1-2 minutes.

    .venv/bin/python -m pytest -q tests/integration/test_check_cluster.py
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from arena_verl.testing.toy import build_toy_tokenizer
from helpers import paths
from helpers.ray_local import set_ray_env

REPO = paths.REPO
SERVED = ("reward.arena.judge.base_url=http://judge:8000/v1", "reward.arena.judge.model_path=judge")  # no GPU here
FAKE_PYTHON = """#!/usr/bin/env bash
if [ "${1:-}" = -m ] && [ "${2:-}" = verl.trainer.main_ppo ]; then echo "TRAINER STARTED"; exit 0; fi
exec "$REAL_PYTHON" "$@"
"""


@contextlib.contextmanager
def fake_gpu_ray(gpus_per_node: list[int]):
    """A Ray cluster of one node per entry, each declaring that many (fake) GPUs; yields its address once every
    node's GPUs are in the cluster's free-resource view (the view lags node registration by a heartbeat)."""
    import ray
    from ray.cluster_utils import Cluster

    from arena_verl.verl_edge.placement import free_gpus_per_node

    set_ray_env()
    head, *others = gpus_per_node
    cluster = Cluster(initialize_head=True, connect=False,
                      head_node_args={"num_cpus": 1, "num_gpus": head, "include_dashboard": False})  # fmt: skip
    try:
        for gpus in others:
            cluster.add_node(num_cpus=1, num_gpus=gpus)
        cluster.wait_for_nodes()
        ray.init(address=cluster.address, logging_level="ERROR", log_to_driver=False)
        try:
            expected = sorted((float(g) for g in gpus_per_node), reverse=True)
            deadline = time.monotonic() + 60
            while free_gpus_per_node() != expected:
                assert time.monotonic() < deadline, f"the cluster never showed {expected} free GPUs"
                time.sleep(0.2)
        finally:
            ray.shutdown()  # the driver leaves; the cluster stays for the subprocesses
        yield cluster.address
    finally:
        cluster.shutdown()


@pytest.fixture(scope="module")
def run_files(tmp_path_factory):
    """What a node8 run with the `ray` judge placement reads, all there: data files, a policy folder, a judge folder
    with a tokenizer (the pre-flight loads it). Nothing else is loaded from them."""
    root = tmp_path_factory.mktemp("check_cluster")
    for name in ("train.parquet", "val.parquet"):
        (root / name).write_text("not read here")
    (root / "policy").mkdir()
    judge = build_toy_tokenizer(root / "judge")
    fake = root / "python"
    fake.write_text(FAKE_PYTHON)
    fake.chmod(0o755)
    return {"root": root, "judge": Path(judge), "python": fake}


def environment(address: str, **extra: str) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JUDGE_", "RAY_ADDRESS", "SETTING", "VERL_"))}
    env.update(RAY_ADDRESS=address, RAY_AUTH_MODE="disabled", **extra)
    return env


def show(address: str, *overrides: str) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "arena_verl.recipe", "show", "--config-name", "arena_live", "--check-cluster",
               "arena_setting=node8", *overrides]  # fmt: skip
    return subprocess.run(command, capture_output=True, text=True, timeout=300, env=environment(address), cwd=REPO)


def ray_judge(files: dict, tp: int) -> list[str]:
    return ["reward.arena.judge.backend=vllm", f"reward.arena.judge.model_path={files['judge']}",
            f"reward.arena.judge.tensor_parallel_size={tp}"]  # fmt: skip


def recipe_run(address: str, files: dict, **env: str) -> tuple[subprocess.CompletedProcess, Path]:
    """The recipe's real branch (arena_live, node8, the ray judge); returns its result and the run's train.log."""
    root = files["root"]
    run_dir = root / f"run-{len(list(root.glob('run-*')))}"
    settings = dict(PYTHON=str(files["python"]), REAL_PYTHON=sys.executable, SETTING="node8", RUN_DIR=str(run_dir),
                    MODEL_PATH=str(root / "policy"), TRAIN_FILES=str(root / "train.parquet"),
                    VAL_FILES=str(root / "val.parquet"), JUDGE_PLACEMENT="ray", JUDGE_MODEL=str(files["judge"]),
                    **env)  # fmt: skip
    result = subprocess.run(["bash", str(REPO / "recipes" / "arena_live.sh")], capture_output=True, text=True,
                            timeout=300, env=environment(address, **settings), cwd=root)  # fmt: skip
    return result, run_dir / "train.log"


def cut(result: subprocess.CompletedProcess) -> str:
    return (result.stdout[-3000:] + result.stderr[-3000:]).strip()


def test_one_node_of_8_fits_node8s_trainer_and_a_tp2_judge_but_not_a_tp4_one(run_files):
    with fake_gpu_ray([8]) as address:
        # Through the recipe's real branch: RAY_ADDRESS names a cluster, so its pre-flight (`show --check-cluster`)
        # checks it; the second test calls `show` itself.
        started, log = recipe_run(address, run_files, JUDGE_TP="2")
        assert started.returncode == 0, cut(started)
        assert "TRAINER STARTED" in log.read_text()  # past the pre-flight, the (stand-in) trainer ran
        stopped, log = recipe_run(address, run_files, JUDGE_TP="4")
        assert stopped.returncode == 2, cut(stopped)
        (line,) = [line for line in stopped.stderr.splitlines() if "do not fit together" in line]
        assert line.startswith("error:") and "trainer (1 x 6 GPUs) and judge engine (1 x 4 GPUs)" in line
        assert not log.exists()  # stopped before the trainer


def test_two_nodes_of_4_cannot_hold_node8s_6_gpu_trainer_group(run_files):
    """8 GPUs in all, but the trainer's 6 must be on one node (one STRICT_PACK placement group)."""
    with fake_gpu_ray([4, 4]) as address:
        refused = show(address, *SERVED)
        assert refused.returncode == 2, cut(refused)
        assert "GPUS_PER_NODE=6 needs 6 GPUs on one node; the nodes have 4, 4 free GPUs" in refused.stderr
        shared = show(address, "trainer.n_gpus_per_node=4", "trainer.nnodes=2", *SERVED)
        assert shared.returncode == 0, cut(shared)
