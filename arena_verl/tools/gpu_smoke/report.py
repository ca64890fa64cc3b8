"""What each check needs before it can run (the prerequisites), its record in the state file, the exit code and
the final lines (``ready``, ``skip``, ``record``, ``report``).
"""

from __future__ import annotations

import contextlib
import math
import time
from pathlib import Path
from typing import Any

from arena_verl.tools.gpu_smoke._util import now, read_json, tail, write_json
from arena_verl.tools.gpu_smoke.checks import training_figures

__all__ = [
    "CHECKS", "GPU_CHECKS", "EXIT_CODES", "prerequisites", "training_adaptations", "load_state", "add_record",
    "make_record", "final_exit_code", "report",
]  # fmt: skip

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


# --------------------------------------------------------------------------------------------------------- recording
def load_state(path: str) -> dict:
    return read_json(Path(path))


def _line(record: dict) -> str:
    status = record["status"].upper()
    seconds = f"({record['seconds']:.0f} s) " if record.get("seconds") is not None and status != "SKIP" else ""
    text = record.get("summary") if status == "PASS" else record.get("reason")
    return f"{status:<5} {record['name']:<13} {seconds}{text or ''}".rstrip()


def add_record(state_path: str, record: dict) -> dict:
    state = load_state(state_path)
    state["checks"] = [c for c in state.get("checks", []) if c.get("name") != record["name"]] + [record]
    write_json(Path(state_path), state)
    print(_line(record), flush=True)
    return record


def make_record(name: str, rc: int, seconds: float, bound: float | None, result_path: str | None, log: str | None,
                training: tuple[str, float, int] | None = None, deadline: float | None = None) -> dict:  # fmt: skip
    """A check's record from its exit code and whatever result it wrote (a killed check wrote none)."""
    result: dict[str, Any] = {}
    if result_path and Path(result_path).is_file():
        with contextlib.suppress(ValueError, OSError):
            result = read_json(Path(result_path))
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
        record["reason"] = record["reason"] or f"exit {rc}: {(tail(log, 1) or [''])[0]}"
    elif record["status"] is None:
        record["status"] = "pass"
    if training is not None and record["status"] == "pass":
        done, wanted = record["steps_completed"], training[2]
        if done < wanted:
            record["status"], record["reason"] = "fail", f"the trainer exited 0 after {done} of {wanted} steps"
        else:
            record["summary"] = _training_summary(record)
    if record["status"] == "fail" and log:
        record.setdefault("log_tail", tail(log))
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
        state = load_state(state_path)
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
        total_s=round(now() - state.get("started", now()), 1),
        exit_code=code,
        exit_meaning=EXIT_CODES.get(code, EXIT_CODES[130] if code >= 128 else ""),
        summary=summary,
        not_checked=not_checked,
        gpu_checked=any(c["name"] in GPU_CHECKS and c["status"] == "pass" for c in checks),
        finished=time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    )
    write_json(Path(state_path), state)
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
