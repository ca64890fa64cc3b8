"""Every process a scoring job starts ends with the job, however the job ends.

The processes of a run are recognised by an environment variable set for that run only (Ray's processes, verl's
RewardLoopWorker actors and the verifier's worker processes all inherit it). Before the fix, the verifier's
``multiprocessing.Pool`` kept reward workers alive: a pool worker killed while idle (a SIGTERM to the reward worker's
process group, as Ray and supervisors send it) left the pool's queue lock taken, the reward worker hung for good in
multiprocessing's exit handler, and the pool respawned a worker that outlived everything.
"""

import json
import os
import subprocess
import sys
import textwrap
import time
import uuid

import psutil
import pytest

from helpers import paths

TESTS = paths.TESTS
MARK = "ARENA_TEST_PROCESS_MARK"


def processes_of(mark: str) -> list[psutil.Process]:
    found = []
    for process in psutil.process_iter(["pid"]):
        try:
            mine = process.pid != os.getpid() and process.environ().get(MARK) == mark
            if mine and process.status() != psutil.STATUS_ZOMBIE:
                found.append(process)
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            pass
    return found


def left_after(mark: str, wait_s: float) -> list[str]:
    """Processes of the run still alive after waiting up to ``wait_s``; they are killed, so that a failing test
    leaves nothing behind either."""
    deadline = time.monotonic() + wait_s
    while (left := processes_of(mark)) and time.monotonic() < deadline:
        time.sleep(0.25)
    described = []
    for process in left:
        try:
            described.append(f"{process.pid} {' '.join(process.cmdline())[:100]}")
            process.kill()
        except psutil.NoSuchProcess:
            pass
    return described


def run_marked(code: str, timeout_s: float = 300) -> tuple[str, dict]:
    mark = uuid.uuid4().hex
    env = {
        **os.environ,
        MARK: mark,
        "PYTHONPATH": os.pathsep.join([str(TESTS), str(TESTS.parent), os.environ.get("PYTHONPATH", "")]),
        "RAY_AUTH_MODE": "disabled",
        "RAY_DEDUP_LOGS": "0",
        "TOKENIZERS_PARALLELISM": "false",
    }
    try:
        proc = subprocess.run(
            [sys.executable, "-c", textwrap.dedent(code)],
            env=env,
            cwd=TESTS.parent,
            capture_output=True,
            text=True,
            timeout=timeout_s,
        )
    except subprocess.TimeoutExpired:
        left_after(mark, 0)
        raise
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    assert proc.returncode == 0 and lines, f"rc={proc.returncode}\n{proc.stdout[-3000:]}\n{proc.stderr[-5000:]}"
    return mark, json.loads(lines[-1])


REWARD_STEP = """
    import json, os, signal, tempfile, time
    from pathlib import Path

    import psutil, ray
    from transformers import AutoTokenizer
    from arena_verl.testing.toy import Sample, build_toy_tokenizer, make_batch
    from helpers.ray_local import start_local_ray
    from helpers.verl_batch import compose_config


    def gone(pids, wait_s):
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline:
            alive = [p for p in pids if psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE]
            if not alive:
                return True
            time.sleep(0.25)
        return False


    tokenizer_path = build_toy_tokenizer(Path(tempfile.mkdtemp()))
    config = compose_config(tokenizer_path, ["reward.arena.mode=rlvr"])
    start_local_ray()
    from verl.experimental.reward_loop.reward_loop import RewardLoopManager

    manager = RewardLoopManager(config)  # reward.num_workers=2 (helpers.verl_batch)
    samples = [Sample(f"g{i // 4}", rf"so \\boxed{{{4 + i % 2}}}") for i in range(8)]  # data_source math_dapo
    out = manager.compute_rm_score(make_batch(AutoTokenizer.from_pretrained(str(tokenizer_path)), samples))
    scores = out.batch["rm_scores"].sum(-1).tolist()

    me = psutil.Process()
    reward_workers = [p for p in me.children(recursive=True) if p.cmdline()[0].startswith("ray::RewardLoopWorker")]
    verifiers = {w.pid: [c.pid for c in w.children(recursive=True)] for w in reward_workers}  # the verifier's
    # One reward worker gets a SIGTERM to its process group, as Ray and supervisors send it: it must exit by itself
    # (its verifier processes too) while Ray is still up. The other is left to ray.shutdown().
    first = reward_workers[0].pid
    if os.getpgid(first) != os.getpgid(0):
        os.killpg(os.getpgid(first), signal.SIGTERM)
    else:
        os.kill(first, signal.SIGTERM)
    terminated_exit = gone([first, *verifiers[first]], 15)
    ray.shutdown()
    print(json.dumps({"scores": scores, "verifiers": verifiers, "terminated_exit": terminated_exit}))
"""


def test_a_reward_step_through_verls_reward_loop_leaves_no_process():
    mark, result = run_marked(REWARD_STEP)
    left = left_after(mark, 15)
    assert result["scores"] == [1.0, 0.0] * 4  # the verifier scored them (ground truth 4)
    assert len(result["verifiers"]) == 2 and all(result["verifiers"].values()), result  # both used the verifier
    assert result["terminated_exit"], "a reward worker (or its verifier) outlived a SIGTERM to its process group"
    assert not left, f"processes of the run left after ray.shutdown(): {left}"


PARENT = """
    import json, os, sys, time
    from arena_verl.verify.math_verifier import MathVerifier

    verifier = MathVerifier(timeout_s=3, num_workers=2)
    scores = [verifier.score(rf"\\boxed{{{i}}}", str(i)).score for i in range(2)]
    print(json.dumps({"pid": os.getpid(), "scores": scores}), flush=True)
    if sys.argv[-1] == "wait":
        time.sleep(300)
    # else: exit without close()
"""


@pytest.mark.parametrize("how", ["exit", "sigkill"])
def test_verifier_workers_end_with_their_parent(how):
    mark = uuid.uuid4().hex
    env = {**os.environ, MARK: mark, "PYTHONPATH": str(TESTS.parent)}
    code = textwrap.dedent(PARENT)
    proc = subprocess.Popen(
        [sys.executable, "-c", code, "wait" if how == "sigkill" else "exit"],
        env=env,
        cwd=TESTS.parent,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        result = json.loads(proc.stdout.readline())
        assert result["scores"] == [1.0, 1.0]
        if how == "sigkill":
            assert len(processes_of(mark)) >= 2  # the parent and its worker(s)
            proc.kill()  # no atexit, no finalizer: the workers must notice by themselves
        proc.wait(timeout=60)
    finally:
        proc.kill()
        proc.wait()
    assert not left_after(mark, 5)
