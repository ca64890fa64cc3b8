"""Fault injection for a real training run on CPU: a judge server that can be killed and started again (on its port or
another), made slow, and a schedule of faults keyed to the run's own progress (its metrics file and the judge's
answers). The judge is the loopback server (NOT a model), in a process of its own so that it dies as a server dies:
SIGKILL, connections reset, nothing listening until it is started again."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from arena_verl.data.metrics_log import read_records

TESTS_DIR = Path(__file__).resolve().parents[1]


class LineCounter:
    """The complete lines of a file that only grows, counted by reading only what was appended since the last count
    (a harness that polls a log of thousands of lines every 0.2 s must not re-read it whole each time)."""

    def __init__(self, path: Path):
        self.path, self.offset, self.lines = path, 0, 0

    def count(self) -> int:
        if not self.path.exists():
            return self.lines
        with open(self.path, "rb") as handle:
            handle.seek(self.offset)
            data = handle.read()
        complete = data.rfind(b"\n") + 1  # a line still being written is counted once it ends
        self.lines += sum(1 for line in data[:complete].split(b"\n") if line.strip())
        self.offset += complete
        return self.lines


class JudgeProcess:
    """The loopback judge in a child process: ``start()`` / ``kill()`` / ``start(port)``, ``set_control(...)``."""

    served_name = "judge"

    def __init__(self, workdir: Path, api_key: str | None = None):
        workdir.mkdir(parents=True, exist_ok=True)
        self.api_key = api_key
        self.calls_log = workdir / "judge_calls.log"
        self._answered = LineCounter(self.calls_log)
        self._received = LineCounter(self.calls_log.with_name(self.calls_log.name + ".started"))
        self.control = workdir / "judge_control.json"
        self.set_control()
        self.process: subprocess.Popen | None = None
        self.url: str | None = None
        self.starts = 0

    @property
    def port(self) -> int:
        return int(self.url.rsplit(":", 1)[1].split("/")[0])

    def start(self, port: int = 0) -> str:
        """Start the server (``port`` 0: a free one) and return its address once it listens; a server of this
        object's still running is killed first (one server per object, none left behind)."""
        self.kill()
        command = [sys.executable, "-c", f"import sys; sys.path.insert(0, {str(TESTS_DIR)!r}); "
                   "from helpers.loopback_judge import serve; serve()",
                   "--port", str(port), "--calls-log", str(self.calls_log), "--control", str(self.control)]  # fmt: skip
        if self.api_key:
            command += ["--api-key", self.api_key]
        for _ in range(50):  # the port of a killed server may take a moment to be free again
            self.process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            line = self.process.stdout.readline().strip()
            if line.startswith("http://"):
                self.url, self.starts = line, self.starts + 1
                return line
            self.process.wait(timeout=10)
            time.sleep(0.2)
        raise RuntimeError(f"the loopback judge did not start on port {port}: {self.process.stderr.read()[-2000:]}")

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(timeout=10)

    def set_control(
        self, delay_s: float = 0.0, die_after_calls: int | None = None, hang: bool = False, garbage: str | None = None
    ) -> None:
        """What the server does from its next request on: wait ``delay_s`` before each answer; exit at once (as a
        killed server: the request in flight gets no answer, its connection is reset) when a request arrives after
        ``die_after_calls`` answers in all; ``hang``: accept every request and never answer (until the control
        changes); ``garbage``: answer as after a bad deploy (``loopback_judge.GARBAGE``: text, json, html500)."""
        tmp = self.control.with_suffix(".tmp")
        control = {"delay_s": delay_s, "die_after_calls": die_after_calls, "hang": hang, "garbage": garbage}
        tmp.write_text(json.dumps(control))
        os.replace(tmp, self.control)

    def wait_dead(self, timeout_s: float) -> None:
        """Wait until the server's process has ended (it exits on its own under ``die_after_calls``)."""
        self.process.wait(timeout=timeout_s)

    def answers(self) -> list[dict]:
        if not self.calls_log.exists():
            return []
        return [json.loads(line) for line in self.calls_log.read_text().splitlines() if line.strip()]

    @property
    def calls(self) -> int:
        """The answers so far (the log's new lines only are read)."""
        return self._answered.count()

    def deaths(self) -> list[dict]:
        """Each time the server exited under ``die_after_calls``: ``{"t": time.time(), "answers": answers in all}``."""
        path = self.calls_log.with_name(self.calls_log.name + ".deaths")
        if not path.exists():
            return []
        return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]

    def in_flight(self) -> int:
        """Requests received and not answered (yet): a group is waiting for them at its referee."""
        return self._received.count() - self.calls

    def __enter__(self) -> JudgeProcess:
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.kill()


def logged_steps(metrics_dir: Path) -> dict[int, dict]:
    """The training steps logged in the newest attempt file under ``RUN_DIR/metrics``: step -> its metrics."""
    files = sorted(metrics_dir.glob("*.jsonl"), key=lambda p: p.stat().st_mtime)
    if not files:
        return {}
    records = read_records(files[-1])
    return {int(r["data"]["training/global_step"]): r["data"] for r in records if "training/global_step" in r["data"]}


def referee_processes(root_pid: int) -> list[psutil.Process]:
    """The referee actors' worker processes among ``root_pid``'s descendants (Ray names an actor's process
    ``ray::RefereeActor`` and, while it runs a method, ``ray::RefereeActor.method``)."""
    found = []
    try:
        descendants = psutil.Process(root_pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return []
    for process in descendants:
        try:
            title = " ".join(process.cmdline())
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
        if title.startswith("ray::RefereeActor"):
            found.append(process)
    return found


@dataclass
class Fault:
    """``action`` once ``when(progress)`` holds; ``progress`` is the plan (see :class:`FaultPlan`'s helpers)."""

    name: str
    when: Callable[[FaultPlan], bool]
    action: Callable[[], object]
    fired_at: float | None = None
    step_before: int | None = None  # the last step logged when it fired
    calls_before: int | None = None  # the judge's answers when it fired
    result: object = None


@dataclass
class FaultPlan:
    """Runs the faults in order, in a thread, while the run trains. Each waits for its condition on the run's progress:
    the steps logged so far (``steps``: step -> metrics) and the judge's answers (``judge.calls``). When a step ended
    is read from its rollout dump (``ended_at``), not from when the plan's poll saw it logged."""

    metrics_dir: Path
    rollout_dir: Path  # the run's ``trainer.rollout_data_dir``: its dumps' times say when each step ended
    judge: JudgeProcess
    faults: list[Fault]
    poll_s: float = 0.2
    steps: dict[int, dict] = field(default_factory=dict)
    calls_at_step: dict[int, int] = field(default_factory=dict)  # the judge's answers when each step was first seen
    error: BaseException | None = None

    def __post_init__(self):
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._by_name = {fault.name: fault for fault in self.faults}

    # Conditions.
    def steps_after(self, name: str, clean: Callable[[dict], bool] | None = None) -> int:
        """Steps logged after fault ``name`` fired (those for which ``clean`` holds, when given)."""
        fault = self._by_name[name]
        if fault.fired_at is None:
            return 0
        later = [m for step, m in self.steps.items() if step > fault.step_before]
        return len([m for m in later if clean is None or clean(m)])

    def calls_in_current_step(self) -> int:
        """The judge's answers since the last step was logged (the step now running)."""
        return self.judge.calls - self.calls_at_step.get(max(self.steps, default=0), 0)

    def start(self) -> FaultPlan:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=60)

    def _run(self) -> None:
        try:
            for fault in self.faults:
                while not self._stop.is_set():
                    self.steps = logged_steps(self.metrics_dir)
                    calls = self.judge.calls  # once a poll, not once a step: the plan runs for hundreds of steps
                    for step in self.steps:
                        self.calls_at_step.setdefault(step, calls)
                    if fault.when(self):
                        fault.step_before = max(self.steps, default=0)
                        fault.calls_before = self.judge.calls
                        fault.fired_at = time.time()
                        fault.result = fault.action()
                        break
                    time.sleep(self.poll_s)
            while not self._stop.is_set():  # the steps after the last fault
                self.steps = logged_steps(self.metrics_dir)
                time.sleep(self.poll_s)
        except BaseException as exc:  # noqa: BLE001  (reported by the test, not lost in the thread)
            self.error = exc

    def ended_at(self) -> dict[int, float]:
        """When each step ended, exactly: verl's V1 trainer writes a step's rollout dump after its update and
        checkpoint, just before it logs the step, and only then starts the next step's rollout. The plan's sight of a
        logged step lags by a poll, more on a busy machine, while the next step's first judge answer can come 0.2 s
        after that dump (measured): so a step's end is its dump's time, never when the plan saw it."""
        return {int(path.stem): path.stat().st_mtime for path in self.rollout_dir.glob("*.jsonl")}

    def step_running_at(self, t: float) -> int | None:
        """The training step whose rollout was running at time ``t``: the trainer is synchronous, so anything at
        ``t`` (a judge answer, a restart) belongs to the first step that ended after it. None when none has."""
        return min((step for step, ended in self.ended_at().items() if ended > t), default=None)

    def fault(self, name: str) -> Fault:
        return self._by_name[name]

    def fired(self) -> dict[str, float | None]:
        return {fault.name: fault.fired_at for fault in self.faults}
