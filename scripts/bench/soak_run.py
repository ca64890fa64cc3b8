"""Real-run soak: verl's real trainer through the recipes' real branch for an hour or more, with a fault every few
minutes, and what it cost: every step logged once, every sample rewarded, memory and descriptors per process role,
step time, checkpoints, leftovers.

    python scripts/bench/soak_run.py --out runs/soak --minutes 60          # the soak (run it alone on the machine)
    python scripts/bench/soak_run.py --out /tmp/soak --minutes 12 --fault-every-s 45   # a short trial

The run: ``SETTING=cpu JUDGE_PLACEMENT=serve JUDGE_URL_FILE=... bash recipes/<recipe>.sh`` (``--recipe``,
``arena_paced``), the CPU setting's RANDOM-weight toy policy and arithmetic data (built by the recipe), 2 prompts x 4
samples a step, ``SAVE_FREQ=1``, ``KEEP_CHECKPOINTS`` 3, ``TOTAL_STEPS`` far past the run. The judge is the tests'
loopback server (``tests/helpers/loopback_judge.py``: NOT a model, it answers a parser-valid verdict) in a process of
its own, its address in the URL file; the judge settings are the fault test's (``timeout_s`` 3, ``retries`` 1).

The faults, on a schedule drawn from ``--seed`` (every kind at least twice, spread evenly after a warm-up):

- ``judge_restart``: the judge server killed, started again on its port 3 s later;
- ``judge_new_url``: killed, started on another port, the new address written to the URL file;
- ``judge_hang``: it accepts every request and never answers, for ``--hang-s`` (130 s);
- ``judge_garbage``: it answers unreadable text, then JSON cut short, then an HTTP 500 with an HTML page, for
  ``--garbage-s`` (130 s) in all;
- ``referee_kill``: every ``ray::RefereeActor`` process SIGKILLed (Ray restarts it);
- ``trainer_kill``: the ``main_ppo`` process SIGKILLed (an OOM killer, a node loss); the supervisor stops the rest,
  and the recipe is started again with the same ``RUN_DIR`` (resume);
- ``supervisor_stop``: the supervisor SIGTERMed (a preemption), then the recipe started again;
- ``resume_judge_down``: the judge killed and the supervisor SIGTERMed; the recipe is started again while the judge
  is down (it waits for it, as under Slurm) and the judge comes back ``--judge-down-s`` (60 s) later.

And first, unless ``--no-hang-first``: ``judge_hang_first``, the judge hanging from the run's first judge call (once
the recipe's readiness probe has had its answer) for ``--hang-s``, met by a fresh referee with no latency estimate.
The referee's memory caps are set small enough to fill within minutes (``CAPS_OVERRIDES``), and so is Ray's GCS
task-event cap (``RAY_CAPS_ENV``).

Sampled every ``--sample-every-s`` (10 s): each process of the run by role (the supervisor, the trainer driver, Ray's
task runner, workers, referee actors, reward and agent-loop workers, Ray's own, the judge server) with its pid and
start time (one series per process life), USS, RSS, open descriptors and threads; the checkpoints on disk; the size of
the dumps and metrics. Written to ``OUT/soak.json`` (the report) and ``OUT/samples.jsonl``; ``--page`` writes the
markdown page and its figure (``docs/benchmarks/soak_run.md``). Exit 0 when every check holds, 1 when one does not
(each named), 2 for bad input.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests"))  # the loopback judge server and the fault helpers are the tests' own

from arena_verl.verl_edge.checkpoints import complete_steps  # noqa: E402
from helpers.chaos import JudgeProcess, referee_processes  # noqa: E402
from helpers.cpu_runs import JUDGE_KEY  # noqa: E402

KINDS = (
    "judge_restart",
    "judge_new_url",
    "judge_hang",
    "judge_garbage",
    "referee_kill",
    "trainer_kill",
    "supervisor_stop",
    "resume_judge_down",
)
RESUMES = ("trainer_kill", "supervisor_stop", "resume_judge_down")
BATCH, N = 2, 4
WARMUP_S = 240  # the first start (assets, Ray, vLLM, validation) and a few steps before the first fault
ROLES = (  # (role, a cmdline fragment), first match wins (the supervisor's command line holds the trainer's)
    ("supervisor", "arena_verl.cpu.supervise"),
    ("referee", "RefereeActor"),
    ("task_runner", "TaskRunner"),
    ("worker", "WorkerDict"),
    ("reward_worker", "RewardLoopWorker"),
    ("agent_loop", "AgentLoopWorker"),
    ("vllm_server", "vLLMHttpServer"),
    ("vllm_engine", "EngineCore"),
    ("vllm_worker", "VLLM::Worker"),
    ("transfer_queue", "TransferQueue"),  # verl's TransferQueue controller and its SimpleStorageUnit
    ("transfer_queue", "SimpleStorageUnit"),
    ("load_balancer", "GlobalRequestLoadBalancer"),
    ("ray_system", "DashboardAgent"),
    ("ray_system", "RuntimeEnvAgent"),
    ("recipe_tool", "arena_verl.recipe"),  # the pre-flight and the checkpoint repair, before each start
    ("trainer_driver", "verl.trainer.main_ppo"),
    ("ray_idle", "ray::IDLE"),
    ("ray_system", "ray/"),
    ("ray_system", "raylet"),
    ("ray_system", "gcs_server"),
)
JUDGE_OVERRIDES = (  # the fault test's judge: a call fails within seconds
    "reward.arena.judge.timeout_s=3.0",
    "reward.arena.judge.retries=1",
    "reward.arena.judge.backoff_s=0.2",
    "trainer.val_before_train=False",
)
# The referee's memory caps small enough to fill within minutes (2 groups a step), so that memory is measured full.
CAPS_OVERRIDES = ("reward.arena.groups_remembered=8", "reward.arena.steps_remembered=4")
# Ray's GCS keeps the events of its last RAY_task_events_max_num_task_in_gcs tasks (Ray's default 100 000, about 3.4 KB
# each: ~340 MB on the head node, filled in about an hour of this run); set small here so that it fills in minutes.
RAY_CAPS_ENV = {"RAY_task_events_max_num_task_in_gcs": "5000"}
RAY_SESSIONS = Path("/tmp/ray")  # Ray's default temp folder: a supervised run must leave no session_* there


def role_of(process: psutil.Process) -> str:
    try:
        line = " ".join(process.cmdline())
    except psutil.Error:
        return "gone"
    return next((role for role, fragment in ROLES if fragment in line), "other")


def sample_process(process: psutil.Process, role: str) -> dict | None:
    try:
        with process.oneshot():
            memory = process.memory_full_info()
            named = {"cmd": " ".join(process.cmdline())[:120]} if role == "other" else {}  # what "other" is
            return {
                **named,
                "role": role,
                "pid": process.pid,
                "started": process.create_time(),
                "uss_mb": memory.uss / 2**20,
                "rss_mb": memory.rss / 2**20,
                "fds": process.num_fds(),
                "threads": process.num_threads(),
            }
    except psutil.Error:
        return None


def folder_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) if folder.exists() else 0


def checkpoint_steps(folder: Path) -> list[int]:
    """The complete checkpoints on disk (verl's clean-up removes a step's actor folder and leaves its data.pt)."""
    return complete_steps(folder) if folder.exists() else []


def schedule(
    minutes: float, seed: int, every_s: float | None, each: int = 2, min_gap_s: float = 60.0
) -> list[tuple[float, str]]:
    """(seconds from the start, kind): every kind at least ``each`` times, in a seeded order, evenly spaced after the
    warm-up, at least ``min_gap_s`` apart (else a ValueError naming the minutes needed)."""
    span = minutes * 60 - WARMUP_S - 180  # the last fault has time to end and recover
    count = max(each * len(KINDS), int(span // every_s) if every_s else each * len(KINDS))
    gap = span / count
    if gap < min_gap_s:
        raise ValueError(
            f"{minutes:g} minutes hold {count} faults {gap:.0f} s apart (at least {min_gap_s:g}); every kind "
            f"{each} time(s) needs at least {(WARMUP_S + 180 + min_gap_s * each * len(KINDS)) / 60:.0f} minutes"
        )
    kinds = list(KINDS) * each
    rng = random.Random(seed)
    kinds += [rng.choice(KINDS) for _ in range(count - len(kinds))]
    rng.shuffle(kinds)
    return [(WARMUP_S + i * gap, kind) for i, kind in enumerate(kinds)]


class Soak:
    def __init__(self, args: argparse.Namespace):
        self.args, self.out = args, args.out
        self.run_dir, self.url_file = self.out / "run", self.out / "judge_url"
        self.judge = JudgeProcess(self.out / "judge", api_key=JUDGE_KEY)
        self.attempts: list[dict] = []
        self.faults: list[dict] = []
        self.samples = open(self.out / "samples.jsonl", "a", buffering=1)  # noqa: SIM115  (closed by run())
        self.recipe: subprocess.Popen | None = None
        self.started = time.time()
        self.pending: list[tuple] = []  # (time, what, action, fault index): a fault's later part
        self.steps = StepWatch(self.run_dir / "metrics")
        self.ray_sessions_before = ray_sessions()

    # -- the run --------------------------------------------------------------------------------------------------

    def start_recipe(self, why: str) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("JUDGE_", "SETTING", "RAY_ADDRESS"))}
        env.update(
            SETTING="cpu", RUN_DIR=str(self.run_dir), TIMEOUT_S=str(int(self.args.minutes * 60 + 1800)),
            TOTAL_STEPS="100000", SAVE_FREQ="1", TEST_FREQ="100000", KEEP_CHECKPOINTS=str(self.args.keep),
            JUDGE_PLACEMENT="serve", JUDGE_URL_FILE=str(self.url_file), JUDGE_API_KEY=JUDGE_KEY, JUDGE_WAIT_S="3600",
            **RAY_CAPS_ENV,
        )  # fmt: skip
        overrides = (*JUDGE_OVERRIDES, *CAPS_OVERRIDES, f"trainer.rollout_data_dir={self.run_dir / 'rollout'}")
        number = len(self.attempts) + 1
        log = open(self.out / "attempts" / f"{number}.log", "w")  # noqa: SIM115  (the attempt's, kept by it)
        command = ["bash", str(REPO / "recipes" / f"{self.args.recipe}.sh"), *overrides]
        self.recipe = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        self.attempts.append({
            "attempt": number, "pid": self.recipe.pid, "started": time.time(), "why": why, "rc": None,
            "checkpoints_at_start": checkpoint_steps(self.run_dir / "checkpoints"), "log": str(log.name),
        })  # fmt: skip

    def wait_recipe(self, timeout_s: float = 180) -> None:
        if self.recipe is None:
            return
        try:
            rc = self.recipe.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(self.recipe.pid, signal.SIGKILL)
            rc = self.recipe.wait(timeout=30)
        self.attempts[-1].update(rc=rc, ended=time.time())
        self.recipe = None

    def tree(self) -> list[psutil.Process]:
        if self.recipe is None:
            return []
        try:
            root = psutil.Process(self.recipe.pid)
            return [root, *root.children(recursive=True)]
        except psutil.Error:
            return []

    def trainer_driver(self) -> psutil.Process | None:
        return next((p for p in self.tree() if role_of(p) == "trainer_driver"), None)

    def publish(self, url: str) -> None:
        self.url_file.write_text(url + "\n")

    # -- faults ---------------------------------------------------------------------------------------------------

    def fire(self, kind: str) -> dict:
        judge = self.judge
        if kind == "judge_restart":
            port = judge.port
            judge.kill()
            self.later(3, "judge back on its port", lambda: judge.start(port))
        elif kind == "judge_new_url":
            judge.kill()
            self.later(3, "judge back at a new URL", lambda: self.publish(judge.start(0)))
        elif kind == "judge_hang":
            judge.set_control(hang=True)
            self.later(self.args.hang_s, "judge answers again", judge.set_control)
        elif kind == "judge_garbage":
            third = self.args.garbage_s / 3
            judge.set_control(garbage="text")
            self.later(third, "judge: cut JSON", lambda: judge.set_control(garbage="json"))
            self.later(2 * third, "judge: HTTP 500 HTML", lambda: judge.set_control(garbage="html500"))
            self.later(3 * third, "judge answers again", judge.set_control)
        elif kind == "referee_kill":
            victims = referee_processes(self.recipe.pid) if self.recipe else []
            for process in victims:
                process.send_signal(signal.SIGKILL)
            return {"killed": len(victims)}
        elif kind == "trainer_kill":
            driver = self.trainer_driver()
            if driver is None:
                return {"skipped": "no trainer driver running"}
            driver.send_signal(signal.SIGKILL)
            self.wait_recipe()
            self.start_recipe("resume after the trainer was SIGKILLed")
        elif kind == "supervisor_stop":
            os.kill(self.recipe.pid, signal.SIGTERM)
            self.wait_recipe()
            self.start_recipe("resume after the supervisor was SIGTERMed")
        elif kind == "resume_judge_down":
            port = judge.port
            judge.kill()
            os.kill(self.recipe.pid, signal.SIGTERM)
            self.wait_recipe()
            self.start_recipe("resume while the judge is down")
            self.later(self.args.judge_down_s, "judge back for the waiting resume", lambda: judge.start(port))
        return {}

    def hang_from_the_first_call(self, step: int) -> None:
        """Once the readiness probe has had its answer (the recipe starts the run only then), the judge hangs: the
        fresh referee's first call never gets an answer, nor does any other for ``--hang-s`` from that call on."""
        self.judge.set_control(hang=True)
        self.faults.append({"kind": "judge_hang_first", "t": time.time() - self.started, "step_before": step})
        print(f"[{self.faults[-1]['t'] / 60:5.1f} min] step {step}: judge_hang_first", flush=True)

    def first_call_hangs(self, step: int) -> None:
        """The first call is in flight: the hang's ``--hang-s`` start now."""
        fault = self.faults[0]
        fault.update(t=time.time() - self.started, step_before=step, set_at_t=fault["t"])
        self.later(self.args.hang_s, "judge answers again", self.judge.set_control, index=0)

    def later(self, after_s: float, what: str, action, index: int = -1) -> None:
        """``action`` in ``after_s`` seconds, as part of fault ``index`` (the last one listed: the one firing now)."""
        self.pending.append((time.time() + after_s, what, action, index % len(self.faults)))

    # -- sampling -------------------------------------------------------------------------------------------------

    def sample(self, step: int) -> None:
        processes = [(p, role_of(p)) for p in self.tree()]
        if self.judge.process is not None and self.judge.process.poll() is None:
            with contextlib.suppress(psutil.Error):
                processes.append((psutil.Process(self.judge.process.pid), "judge_server"))
        record = {
            "t": time.time() - self.started,
            "step": step,
            "processes": [s for p, role in processes if (s := sample_process(p, role)) is not None],
            "checkpoints": len(checkpoint_steps(self.run_dir / "checkpoints")),
            "dump_bytes": folder_bytes(self.run_dir / "rollout"),
            "metrics_bytes": folder_bytes(self.run_dir / "metrics"),
        }
        self.samples.write(json.dumps(record) + "\n")

    # -- the loop -------------------------------------------------------------------------------------------------

    def run(self) -> None:
        self.publish(self.judge.start())
        self.start_recipe("first start")
        a = self.args
        plan = schedule(a.minutes, a.seed, a.fault_every_s, a.each, a.min_gap_s)
        deadline = self.started + self.args.minutes * 60
        next_sample, hang_armed = 0.0, False
        while time.time() < deadline:
            now = time.time()
            step = self.steps.last()
            if self.args.max_steps and step >= self.args.max_steps:
                break
            for item in sorted((p for p in self.pending if p[0] <= now), key=lambda p: p[0]):
                self.pending.remove(item)
                item[2]()
                then = {"t": time.time() - self.started, "what": item[1], "step": step}
                self.faults[item[3]].setdefault("then", []).append(then)
            if self.args.hang_first and not self.faults and self.judge.calls >= 1:
                self.hang_from_the_first_call(step)
                hang_armed = True
            if hang_armed and self.judge.in_flight() > 0:
                self.first_call_hangs(step)
                hang_armed = False
            # A fault waits until the run trains (a step logged since the last start) and the last one has ended.
            trains = step > max(self.attempts[-1]["checkpoints_at_start"] or [0]) and not (self.pending or hang_armed)
            if plan and now - self.started >= plan[0][0] and trains:
                _, kind = plan.pop(0)
                fault = {"kind": kind, "t": now - self.started, "step_before": step}
                self.faults.append(fault)
                fault.update(self.fire(kind))
                print(f"[{(now - self.started) / 60:5.1f} min] step {step}: {kind}", flush=True)
            if self.recipe is not None and self.recipe.poll() is not None:  # ended on its own: a finding, go on
                self.attempts[-1].update(rc=self.recipe.returncode, ended=time.time(), unplanned=True)
                self.recipe = None
                self.start_recipe("restart after the run ended on its own")
            if now >= next_sample:
                self.sample(step)
                next_sample = now + self.args.sample_every_s
            time.sleep(0.5)
        for item in sorted(self.pending, key=lambda p: p[0]):  # the judge back, whatever a fault had left pending
            item[2]()
        if self.recipe is not None:
            os.kill(self.recipe.pid, signal.SIGTERM)
            self.wait_recipe()
        self.judge.kill()
        self.samples.close()


class StepWatch:
    """The last training step logged in any attempt's metrics file, reading only what was appended since the last look
    (polled twice a second for an hour: it must not re-parse the files whole)."""

    def __init__(self, metrics: Path):
        self.metrics, self.offsets, self.step = metrics, {}, 0

    def last(self) -> int:
        for path in self.metrics.glob("*.jsonl") if self.metrics.exists() else ():
            offset = self.offsets.get(path, 0)
            with open(path, "rb") as handle:
                handle.seek(offset)
                data = handle.read()
            complete = data.rfind(b"\n") + 1
            self.offsets[path] = offset + complete
            for line in data[:complete].splitlines():
                with contextlib.suppress(ValueError, AttributeError):
                    step = json.loads(line).get("data", {}).get("training/global_step")
                    self.step = max(self.step, int(step or 0))
        return self.step


def ray_sessions() -> set[str]:
    return {p.name for p in RAY_SESSIONS.glob("session_*")} if RAY_SESSIONS.is_dir() else set()


def training_records(metrics: Path) -> list[dict]:
    """Every attempt's training-step records (validation records told apart: they carry no actor update)."""
    records = []
    for path in sorted(metrics.glob("*.jsonl")) if metrics.exists() else []:
        for line in path.read_text(errors="replace").splitlines():
            try:
                data = json.loads(line).get("data", {})
            except ValueError:
                continue
            if "training/global_step" in data and any(k.startswith("actor/") for k in data):
                records.append({**data, "_file": path.name})
    return records


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--minutes", type=float, default=60.0)
    parser.add_argument("--max-steps", type=int, default=0, help="stop after this many steps (0: run the minutes)")
    parser.add_argument("--recipe", default="arena_paced")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--fault-every-s", type=float, default=None, help="default: every kind twice, evenly spread")
    parser.add_argument("--each", type=int, default=2, help="times each fault kind fires at least (a trial: 1)")
    parser.add_argument("--min-gap-s", type=float, default=60.0, help="seconds between faults at least")
    parser.add_argument("--hang-s", type=float, default=130.0)
    parser.add_argument(
        "--hang-first",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="the judge hangs from the run's first judge call (a fresh referee, no latency estimate) for --hang-s",
    )
    parser.add_argument("--garbage-s", type=float, default=130.0)
    parser.add_argument("--judge-down-s", type=float, default=60.0)
    parser.add_argument("--sample-every-s", type=float, default=10.0)
    parser.add_argument("--keep", type=int, default=3, help="KEEP_CHECKPOINTS")
    parser.add_argument("--page", type=Path, default=None, help="write the markdown page (and its PNG) here")
    args = parser.parse_args(argv)
    if not (REPO / "recipes" / f"{args.recipe}.sh").is_file():
        parser.error(f"--recipe {args.recipe}: no recipes/{args.recipe}.sh")
    if not (math.isfinite(args.minutes) and args.minutes > 0):
        parser.error(f"--minutes must be > 0, got {args.minutes}")
    if args.out.exists() and any(args.out.iterdir()) and not (args.out / "samples.jsonl").exists():
        parser.error(f"--out {args.out} holds something else than a soak: give an empty or new folder")
    if (args.out / "soak.json").exists():
        parser.error(f"--out {args.out} holds a finished soak (soak.json): give an empty or new folder")
    try:  # too short for every kind: refused now
        schedule(args.minutes, args.seed, args.fault_every_s, args.each, args.min_gap_s)
    except ValueError as exc:
        parser.error(str(exc))
    (args.out / "attempts").mkdir(parents=True, exist_ok=True)
    soak = Soak(args)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # stopped: the run is stopped as below, then exit
    try:
        soak.run()
    finally:
        if soak.recipe is not None:  # the supervisor stops what it started (a SIGKILL to it would leave Ray behind)
            with contextlib.suppress(ProcessLookupError):
                os.kill(soak.recipe.pid, signal.SIGTERM)
            soak.wait_recipe(timeout_s=120)
        soak.judge.kill()
    from soak_report import write_report  # noqa: E402  (beside this script)

    findings = write_report(soak, args.page)
    for finding in findings:
        print(f"finding: {finding}")
    return 1 if findings else 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    sys.exit(main())
