"""Referee soak: many consecutive training steps through real referee Ray actor(s), with injected judge failures;
memory and open file descriptors of the referee actor and of the driver, from the start to the end.

All figures come from the SIMULATED judge: this measures the referee's plumbing over time (memory, descriptors,
counters, fallbacks), not an LLM judge. Not part of CI's default tier (the default run takes 30 minutes).

Protocol (fixed, so that runs compare across versions):

- referee: ``referee_handle`` actors (``--referees`` shards), ``mode=arena``, ``--strategy`` (live), group size
  ``--n`` (8); the driver plays verl's reward workers.
- a step: ``--groups`` (64) groups x ``--n`` samples, every sample carrying ``Submission.step``; half the groups are
  non-diverse (alternately all verifier rewards 1 and all 0: they run a live tournament), half diverse (rewards
  alternate 1, 0, ...: the speculative tournament is cancelled when the first differing reward arrives). Each
  sample is submitted after a random delay, uniform in [0, ``--max-delay-s``], in one shuffled order over the whole
  step; the step ends when every sample has its verdict. Steps run back to back for ``--minutes`` after a warm-up
  step (step 0, outside the figures). Trace texts are ``--trace-chars`` long; hidden quality ~ Normal(0, 1.6).
- injected judge failures:
    * parse failures: ``judge.sim_parse_failure_rate`` (``--parse-failure-rate``, 0.1): the SIMULATED judge returns
      no verdict, as for an unparsable reply;
    * timeouts: call latency exponential with mean ``judge.sim_latency_s`` (``--latency-s``, 0.02 s) against
      ``judge.timeout_s`` (``--timeout-s``, 0.07 s) with ``retries = parse_retries = 0`` and ``backoff_s = 0``, so
      the referee's outer per-call timeout (``JudgeSettings.call_budget_s``) is ``timeout_s``: about
      exp(-timeout_s / latency_s) of the calls (3% by default) time out in the referee;
    * raises: a share ``--malformed-rate`` (0.01) of the traces carries a non-numeric ``quality_hint``, which makes
      the SIMULATED judge's ``compare`` raise ``TypeError`` whenever that trace plays (about 2 x the rate of all
      calls): a stand-in for a backend that raises. The referee logs each one (a traceback in the actor's log).
  Nothing in the judge or the referee is changed for this: only settings and data.
- measured at the start (after the warm-up step), every ``--sample-every-s`` and at the end: RSS and open file
  descriptors of each referee actor's process (its pid asked from the actor itself through Ray's ``__ray_call__``,
  then read with psutil) and of the driver; the referee's remembered answered groups, kept per-step counters and
  open groups (read from the actor's ``Referee`` through ``__ray_call__``: private state, which this script must
  follow if it is renamed); steps, samples, samples/s; the referees' ``metrics()`` (fallbacks by reason, judge
  calls and failures) and the judge's own counts (``judge_stats()``).
- checks (exit status 1 and a message per finding): a submit that raises or a verdict that is not finite (the run
  stops there); a referee actor that restarted (its pid changed); open descriptors of the referee or the driver
  grown by more than ``--max-fd-growth`` (20) from start to end; RSS growing faster than ``--max-growth-mb`` (200)
  MB per hour. The referee remembers at most 20 000 answered groups and 512 steps of counters
  (``reward.arena.groups_remembered`` / ``steps_remembered``) per shard, so its memory grows by design until both caps
  are full; the RSS rate is therefore the least-squares slope over the snapshots taken after both caps are full,
  and is checked only when that window lasts ``--min-window-min`` (5) minutes or more (a shorter run reports
  "not checked"). The run's start-to-end growth is reported beside it.

    python scripts/bench/soak.py                                  # 30 minutes, the defaults above
    python scripts/bench/soak.py --minutes 0.5 --json bench_out/soak.json   # smoke run
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import psutil

os.environ.setdefault("RAY_AUTH_MODE", "disabled")

_MB = 1024.0 * 1024.0
QUALITY_SPREAD = 1.6  # the ranking benchmark's spread of hidden qualities
MALFORMED_QUALITY = "malformed"  # a non-numeric quality hint: the SIMULATED judge's compare raises TypeError on it
PROCESSES = ("referee", "driver")


@dataclass
class Snapshot:
    """One measurement. Referee figures are summed over the shards."""

    t_s: float  # since the start (after the warm-up step)
    steps: int  # steps done, warm-up excluded
    samples: int  # samples answered, warm-up excluded
    groups_answered: int  # the referees' own count (warm-up included)
    referee_rss_mb: float
    referee_fds: int
    driver_rss_mb: float
    driver_fds: int
    remembered_groups: int | None  # answered groups the referees remember (None: not observable)
    step_counters_kept: int | None  # steps whose counters the referees keep
    open_groups: int | None  # groups waiting for samples or verdicts
    referee_pids: list[int] = field(default_factory=list)


@dataclass
class Caps:
    """What the referee remembers at most, per shard (``reward.arena.groups_remembered`` and ``steps_remembered``)."""

    recent_groups: int | None
    steps_kept: int | None

    def reached(self, snap: Snapshot, shards: int) -> bool:
        if self.recent_groups is None or self.steps_kept is None:
            return False
        remembered = snap.remembered_groups
        if remembered is None:  # not observable: the referee's own count of answered groups stands in
            remembered = min(snap.groups_answered, self.recent_groups * shards)
        kept = snap.step_counters_kept
        if kept is None:  # every shard sees every step (the warm-up step included)
            kept = min(snap.steps + 1, self.steps_kept) * shards
        return remembered >= self.recent_groups * shards and kept >= self.steps_kept * shards


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add = parser.add_argument
    add("--minutes", type=float, default=30.0, help="run time after the warm-up step")
    add("--groups", type=int, default=64, help="groups per step")
    add("--n", type=int, default=8, help="samples per group")
    add("--referees", type=int, default=1, help="referee shards (reward.arena.num_referees)")
    add("--strategy", default="live")
    add("--max-delay-s", type=float, default=0.1, help="each sample is submitted after a delay uniform in [0, this]")
    add("--trace-chars", type=int, default=4000, help="length of each trace's text")
    add("--parse-failure-rate", type=float, default=0.1, help="judge.sim_parse_failure_rate")
    add("--latency-s", type=float, default=0.02, help="judge.sim_latency_s: mean of the exponential call latency")
    add("--timeout-s", type=float, default=0.07, help="judge.timeout_s: calls slower than this time out")
    add("--malformed-rate", type=float, default=0.01, help="share of traces on which the judge raises")
    add("--sample-every-s", type=float, default=30.0, help="seconds between memory/descriptor snapshots")
    add("--max-growth-mb", type=float, default=200.0, help="allowed RSS growth, MB per hour, after the caps fill")
    add("--max-fd-growth", type=int, default=20, help="allowed growth of open descriptors, start to end")
    add("--min-window-min", type=float, default=5.0, help="shortest after-caps window whose RSS slope is checked")
    add("--step-timeout-s", type=float, default=300.0, help="a step not answered by then fails the run")
    add("--seed", type=int, default=0)
    add("--json", type=Path, metavar="PATH", help="write the figures, snapshots and findings here")
    args = parser.parse_args(argv)
    for name in ("minutes", "max_delay_s", "latency_s", "max_growth_mb", "min_window_min"):
        if not getattr(args, name) >= 0:
            parser.error(f"--{name.replace('_', '-')} must be >= 0, got {getattr(args, name)!r}")
    for name in ("groups", "n", "referees", "trace_chars", "timeout_s", "sample_every_s", "step_timeout_s"):
        if not getattr(args, name) > 0:
            parser.error(f"--{name.replace('_', '-')} must be > 0, got {getattr(args, name)!r}")
    for name in ("parse_failure_rate", "malformed_rate"):
        if not 0 <= getattr(args, name) <= 1:
            parser.error(f"--{name.replace('_', '-')} must be in [0, 1], got {getattr(args, name)!r}")
    if args.max_fd_growth < 0:
        parser.error(f"--max-fd-growth must be >= 0, got {args.max_fd_growth}")
    return args


def arena_settings(args: argparse.Namespace, referee_name: str):
    from arena_verl.backend_registry.builtin import SimulatedOptions
    from arena_verl.settings import JudgeSettings
    from arena_verl.settings import arena_settings as read_settings

    judge = JudgeSettings(
        backend="simulated",
        options=SimulatedOptions(sim_parse_failure_rate=args.parse_failure_rate, sim_latency_s=args.latency_s),
        timeout_s=args.timeout_s,
        retries=0,  # with no retries and no backoff the referee's per-call timeout (call_budget_s) is timeout_s
        parse_retries=0,
        backoff_s=0.0,
        seed=args.seed,
    )
    return read_settings(
        mode="arena",
        strategy=args.strategy,
        group_size=args.n,
        num_referees=args.referees,
        referee_name=referee_name,
        judge=judge,
    )


def step_submissions(step: int, args: argparse.Namespace, rng: random.Random) -> list[tuple[float, object]]:
    """One step's samples as (submit delay in s, Submission), in submission order."""
    from arena_verl.core.referee import Submission
    from arena_verl.judge import Trace

    filler = "step " * (args.trace_chars // 5)
    timed = []
    for g in range(args.groups):
        uid = f"s{step}-g{g}"
        uniform, all_correct = g % 2 == 0, g % 4 == 0
        for k in range(args.n):
            reward = (1.0 if all_correct else 0.0) if uniform else float(k % 2)
            quality = MALFORMED_QUALITY if rng.random() < args.malformed_rate else rng.gauss(0.0, QUALITY_SPREAD)
            text = f"step {step} group {g} sample {k}: {filler}"[: args.trace_chars]
            sub = Submission(uid, str(k), f"problem {uid}", Trace(text, quality_hint=quality), reward, step=step)
            timed.append((rng.uniform(0.0, args.max_delay_s), sub))
    timed.sort(key=lambda pair: pair[0])
    return timed


def run_step(step: int, args: argparse.Namespace, settings, rng: random.Random) -> list:
    """Submit one step's samples at their delays and wait for every verdict; raise if one is missing or not finite."""
    import ray

    from arena_verl.actors.referee_actor import referee_handle

    timed = step_submissions(step, args, rng)
    started, refs = time.monotonic(), []
    for delay, sub in timed:
        wait = started + delay - time.monotonic()
        if wait > 0:
            time.sleep(wait)
        refs.append(referee_handle(settings, sub.uid).submit.remote(sub))
    try:
        verdicts = ray.get(refs, timeout=args.step_timeout_s)
    except ray.exceptions.GetTimeoutError:
        raise SoakFailure(f"step {step}: not every sample was answered within {args.step_timeout_s:g} s") from None
    except ray.exceptions.RayError as exc:
        raise SoakFailure(f"step {step}: a submit raised {exc!r}") from exc
    bad = [(sub.uid, sub.sample_key, v) for (_, sub), v in zip(timed, verdicts) if not _finite_reward(v)]
    if len(verdicts) != len(timed) or bad:
        raise SoakFailure(f"step {step}: {len(bad)} verdicts without a finite reward, e.g. {bad[:3]}")
    return verdicts


class SoakFailure(RuntimeError):
    """The run cannot go on: a sample went unanswered, a submit raised or a reward is not finite."""


def _finite_reward(verdict) -> bool:
    reward = getattr(verdict, "reward", None)
    return isinstance(reward, float) and math.isfinite(reward)


def referee_actors(settings) -> list:
    """The shard actors by name (as ``referee_actor.shard_name`` names them)."""
    import ray

    return [ray.get_actor(f"{settings.referee_name}_{shard}") for shard in range(settings.num_referees)]


def _state_probe():
    """A function run inside the referee actor (``__ray_call__``). Defined in here so that Ray pickles it by value:
    the actor's process cannot import this script."""

    def probe(actor) -> dict:
        import os

        referee = actor.referee

        def size(name):
            value = getattr(referee, name, None)
            return None if value is None else len(value)

        return {
            "pid": os.getpid(),
            "remembered_groups": size("_recent"),
            "step_counters_kept": size("_step_counters"),
            "open_groups": size("_groups"),
        }

    return probe


def process_usage(pid: int) -> tuple[float, int]:
    """RSS in MB and open file descriptors of one process."""
    proc = psutil.Process(pid)
    return proc.memory_info().rss / _MB, proc.num_fds()


def summed_metrics(actors, step: int | None = None) -> dict[str, float]:
    """The referees' ``metrics(step)`` summed over the shards."""
    import ray

    return _summed(ray.get([actor.metrics.remote(step) for actor in actors]))


def take_snapshot(actors, t_s: float, steps: int, samples: int) -> Snapshot:
    import ray

    states = ray.get([actor.__ray_call__.remote(_state_probe()) for actor in actors])
    metrics = summed_metrics(actors)
    usage = [process_usage(state["pid"]) for state in states]
    driver_rss, driver_fds = process_usage(os.getpid())

    def total(key):
        values = [state[key] for state in states]
        return None if any(v is None for v in values) else sum(values)

    return Snapshot(
        t_s=round(t_s, 2),
        steps=steps,
        samples=samples,
        groups_answered=int(metrics.get("arena/groups", 0)),
        referee_rss_mb=round(sum(rss for rss, _ in usage), 1),
        referee_fds=sum(fds for _, fds in usage),
        driver_rss_mb=round(driver_rss, 1),
        driver_fds=driver_fds,
        remembered_groups=total("remembered_groups"),
        step_counters_kept=total("step_counters_kept"),
        open_groups=total("open_groups"),
        referee_pids=[state["pid"] for state in states],
    )


def referee_caps(settings) -> Caps:
    return Caps(settings.referee.groups_remembered, settings.referee.steps_remembered)


def slope_per_hour(snapshots: list[Snapshot], key: str) -> float:
    """Least-squares slope of ``key`` against time, per hour (0 with fewer than two distinct times)."""
    ts = [s.t_s for s in snapshots]
    ys = [float(getattr(s, key)) for s in snapshots]
    mean_t, mean_y = sum(ts) / len(ts), sum(ys) / len(ys)
    var = sum((t - mean_t) ** 2 for t in ts)
    if var == 0:
        return 0.0
    return 3600.0 * sum((t - mean_t) * (y - mean_y) for t, y in zip(ts, ys)) / var


def growth(snapshots: list[Snapshot], caps: Caps, shards: int, min_window_s: float) -> dict:
    """Start-to-end change and growth per hour of every process figure, and the RSS slopes after the caps filled
    (``None`` when that window is shorter than ``min_window_s``)."""
    first, last = snapshots[0], snapshots[-1]
    hours = (last.t_s - first.t_s) / 3600.0
    run = {}
    for proc in PROCESSES:
        for unit in ("rss_mb", "fds"):
            key = f"{proc}_{unit}"
            change = getattr(last, key) - getattr(first, key)
            run[key] = {"change": round(change, 1), "per_hour": round(change / hours, 1) if hours > 0 else None}
    full_at = next((i for i, snap in enumerate(snapshots) if caps.reached(snap, shards)), None)
    window = snapshots[full_at:] if full_at is not None else []
    window_s = window[-1].t_s - window[0].t_s if window else 0.0
    checked = bool(window) and window_s >= min_window_s and len(window) >= 2
    after_caps = {
        "caps_full_at_s": window[0].t_s if window else None,
        "window_s": round(window_s, 1),
        "checked": checked,
        **{f"{proc}_rss_mb_per_hour": round(slope_per_hour(window, f"{proc}_rss_mb"), 1) if checked else None
           for proc in PROCESSES},
    }  # fmt: skip
    return {"run": run, "after_caps": after_caps}


def findings(snapshots: list[Snapshot], grown: dict, max_growth_mb: float, max_fd_growth: int) -> list[str]:
    """What the run flags: a restarted referee, descriptors grown past ``max_fd_growth``, RSS growing faster than
    ``max_growth_mb`` per hour once the caps are full."""
    out = []
    first, last = snapshots[0], snapshots[-1]
    if first.referee_pids != last.referee_pids:
        out.append(f"a referee actor restarted: pids {first.referee_pids} at the start, {last.referee_pids} at the end")
    for proc in PROCESSES:
        fd_change = grown["run"][f"{proc}_fds"]["change"]
        if fd_change > max_fd_growth:
            out.append(
                f"{proc} open file descriptors grew by {fd_change:g} ({getattr(first, f'{proc}_fds')} -> "
                f"{getattr(last, f'{proc}_fds')}), more than --max-fd-growth {max_fd_growth}"
            )
        rate = grown["after_caps"][f"{proc}_rss_mb_per_hour"]
        if rate is not None and rate > max_growth_mb:
            out.append(
                f"{proc} RSS grows {rate:.0f} MB/h after the referee's caps filled, more than --max-growth-mb "
                f"{max_growth_mb:g}"
            )
    return out


def judge_figures(metrics: dict[str, float], judge_stats: dict[str, int], args: argparse.Namespace) -> dict:
    routed_calls = metrics.get("arena/judge_calls_routed", 0.0)
    failures = metrics.get("arena/judge_failures", 0.0)
    expected_timeouts = math.exp(-args.timeout_s / args.latency_s) if args.latency_s > 0 else 0.0
    return {
        "calls": int(metrics.get("arena/judge_calls", 0)),
        "calls_routed": int(routed_calls),
        "calls_wasted": int(metrics.get("arena/judge_calls_wasted", 0)),
        # Failed calls of answered tournaments, whatever the cause (parse failure, timeout, raise).
        "failures": int(failures),
        "failure_share_of_routed_calls": round(failures / routed_calls, 4) if routed_calls else 0.0,
        # The SIMULATED judge's own counts: calls that ran to the end (not timed out or cancelled) and the parse
        # failures among them.
        "sim_calls_completed": int(judge_stats.get("calls", 0)),
        "sim_parse_failures": int(judge_stats.get("failures", 0)),
        "injected": {
            "parse_failure_rate": args.parse_failure_rate,
            "timeout_share_expected": round(expected_timeouts, 4),  # parse failures are drawn after the wait
            "raise_share_expected": round(2 * args.malformed_rate, 4),
        },
    }


@dataclass
class Run:
    """What the steps left: snapshots, counts and the referees' final figures; ``error`` if the run had to stop."""

    snapshots: list[Snapshot] = field(default_factory=list)
    steps: int = 0
    samples: int = 0
    elapsed_s: float = 0.0
    metrics: dict[str, float] = field(default_factory=dict)
    last_step_samples: int = 0
    judge_stats: dict[str, int] = field(default_factory=dict)
    error: str | None = None


def soak(args: argparse.Namespace, settings) -> Run:
    """The warm-up step, then steps for ``args.minutes`` with snapshots; Ray must be running."""
    import ray

    run, rng = Run(), random.Random(args.seed)
    try:
        run_step(0, args, settings, rng)  # warm-up: actor creation, imports, first fits
    except SoakFailure as exc:
        run.error = f"warm-up {exc}"
        return run
    actors = referee_actors(settings)
    started = time.monotonic()
    run.snapshots.append(take_snapshot(actors, 0.0, 0, 0))
    next_snapshot = started + args.sample_every_s
    try:
        while time.monotonic() - started < args.minutes * 60 or run.steps == 0:
            run.samples += len(run_step(run.steps + 1, args, settings, rng))
            run.steps += 1
            if time.monotonic() >= next_snapshot:
                run.snapshots.append(take_snapshot(actors, time.monotonic() - started, run.steps, run.samples))
                next_snapshot += args.sample_every_s
    except SoakFailure as exc:
        run.error = str(exc)
    run.elapsed_s = round(time.monotonic() - started, 1)
    run.snapshots.append(take_snapshot(actors, run.elapsed_s, run.steps, run.samples))
    run.metrics = summed_metrics(actors)
    run.last_step_samples = int(summed_metrics(actors, run.steps).get("arena/samples", 0))
    run.judge_stats = _summed(ray.get([actor.judge_stats.remote() for actor in actors]))
    return run


def build_report(args: argparse.Namespace, run: Run, caps: Caps) -> dict:
    """The JSON record (keys documented in docs/benchmarks/soak.md) and the findings that fail the run."""
    flagged = [run.error] if run.error else []
    if not run.snapshots:
        return {"settings": _settings_record(args), "all_rewarded": False, "findings": flagged, "ok": False}
    grown = growth(run.snapshots, caps, args.referees, args.min_window_min * 60)
    flagged += findings(run.snapshots, grown, args.max_growth_mb, args.max_fd_growth)
    expected = args.groups * args.n
    if run.error is None and run.last_step_samples != expected:
        flagged.append(f"the referees counted {run.last_step_samples} samples for step {run.steps}, not {expected}")
    metrics = run.metrics
    return {
        "settings": _settings_record(args),
        "cpus": os.cpu_count(),
        "elapsed_s": run.elapsed_s,
        "steps": run.steps,
        "samples": run.samples,
        "samples_per_s": round(run.samples / run.elapsed_s, 1) if run.elapsed_s else 0.0,
        "all_rewarded": run.error is None,
        "caps": {"recent_groups_per_shard": caps.recent_groups, "steps_kept_per_shard": caps.steps_kept},
        "start": asdict(run.snapshots[0]),
        "end": asdict(run.snapshots[-1]),
        "growth": grown,
        "fallbacks": {
            key.removeprefix("arena/fallback_"): int(value)
            for key, value in metrics.items()
            if key.startswith("arena/fallback_")
        },
        "groups": int(metrics.get("arena/groups", 0)),
        "groups_routed": int(metrics.get("arena/groups_routed", 0)),
        "judge": judge_figures(metrics, run.judge_stats, args),
        "findings": flagged,
        "ok": not flagged,
        "snapshots": [asdict(s) for s in run.snapshots],
    }


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    import ray

    referee_name = f"soak_{os.getpid()}_{time.time_ns() % 10**9}"  # a fresh name: no stale cached handle
    settings = arena_settings(args, referee_name)
    ray.init(address="local", num_cpus=os.cpu_count(), include_dashboard=False, log_to_driver=False)
    try:
        run = soak(args, settings)
    finally:
        ray.shutdown()
    report = build_report(args, run, referee_caps(settings))
    print(render(report) if "start" in report else "\n".join(f"FLAGGED: {msg}" for msg in report["findings"]))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=1) + "\n")
        print(f"wrote {args.json}", file=sys.stderr)
    return 0 if report["ok"] else 1


def _settings_record(args: argparse.Namespace) -> dict:
    return {key: str(value) if isinstance(value, Path) else value for key, value in vars(args).items()}


def _summed(dicts: list[dict]) -> dict:
    total: dict = {}
    for d in dicts:
        for key, value in d.items():
            total[key] = total.get(key, 0) + value
    return total


def render(report: dict) -> str:
    """The run as Markdown: settings line, start/end table with growth, a timeline, judge and fallback figures."""
    s, start, end, grown = report["settings"], report["start"], report["end"], report["growth"]
    after = grown["after_caps"]
    lines = [
        f"Referee soak: {s['referees']} referee(s), {s['groups']} groups x N={s['n']} per step, strategy "
        f"{s['strategy']}, SIMULATED judge (parse failures {s['parse_failure_rate']:g}, latency exp. mean "
        f"{s['latency_s']:g} s vs timeout {s['timeout_s']:g} s, malformed traces {s['malformed_rate']:g}), "
        f"{report['cpus']} CPUs, {report['elapsed_s'] / 60:.1f} min",
        "",
        "| figure | start | end | change | per hour (run) | per hour (after caps) |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for proc in PROCESSES:
        for unit, label in (("rss_mb", "RSS MB"), ("fds", "open FDs")):
            key = f"{proc}_{unit}"
            run = grown["run"][key]
            slope = after.get(f"{key}_per_hour") if unit == "rss_mb" else None
            lines.append(
                f"| {proc} {label} | {start[key]:g} | {end[key]:g} | {run['change']:+g} | {_fmt(run['per_hour'])} "
                f"| {_fmt(slope)} |"
            )
    for key in ("remembered_groups", "step_counters_kept", "open_groups", "groups_answered", "steps", "samples"):
        lines.append(f"| {key.replace('_', ' ')} | {_fmt(start[key])} | {_fmt(end[key])} | | | |")
    caps = report["caps"]
    if after["caps_full_at_s"] is None:
        cap_line = "the caps did not fill in this run: RSS growth not checked"
    else:
        cap_line = (
            f"caps full at {after['caps_full_at_s'] / 60:.1f} min; after-caps window {after['window_s'] / 60:.1f} "
            f"min ({'checked' if after['checked'] else 'too short: not checked'})"
        )
    judge = report["judge"]
    inj = judge["injected"]
    lines += [
        "",
        f"caps per shard: {caps['recent_groups_per_shard']} remembered groups, {caps['steps_kept_per_shard']} steps "
        f"of counters; {cap_line}",
        f"steps {report['steps']}, samples {report['samples']} ({report['samples_per_s']:g}/s), groups "
        f"{report['groups']} (routed {report['groups_routed']}); every sample rewarded: {report['all_rewarded']}",
        f"judge calls {judge['calls']} (routed {judge['calls_routed']}, wasted {judge['calls_wasted']}); failed "
        f"calls in answered tournaments {judge['failures']} = {judge['failure_share_of_routed_calls']:.1%} of routed "
        f"calls (injected: parse {inj['parse_failure_rate']:.0%}, timeouts ~{inj['timeout_share_expected']:.1%}, "
        f"raises ~{inj['raise_share_expected']:.1%}); SIMULATED judge: {judge['sim_calls_completed']} calls "
        f"completed, {judge['sim_parse_failures']} parse failures",
        "fallbacks: " + ", ".join(f"{reason} {count}" for reason, count in report["fallbacks"].items()),
        "",
        "| min | steps | referee RSS MB | referee FDs | driver RSS MB | driver FDs | remembered groups "
        "| step counters |",
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for snap in _spread(report["snapshots"], 12):
        lines.append(
            f"| {snap['t_s'] / 60:.1f} | {snap['steps']} | {snap['referee_rss_mb']:g} | {snap['referee_fds']} | "
            f"{snap['driver_rss_mb']:g} | {snap['driver_fds']} | {_fmt(snap['remembered_groups'])} | "
            f"{_fmt(snap['step_counters_kept'])} |"
        )
    lines.append("")
    lines += [f"FLAGGED: {msg}" for msg in report["findings"]] or ["OK: nothing flagged"]
    return "\n".join(lines)


def _spread(items: list, count: int) -> list:
    """At most ``count`` items, evenly spread, first and last included."""
    if len(items) <= count:
        return items
    picks = sorted({round(i * (len(items) - 1) / (count - 1)) for i in range(count)})
    return [items[i] for i in picks]


def _fmt(value) -> str:
    if value is None:
        return "n/a"
    return f"{value:g}" if isinstance(value, float) else str(value)


if __name__ == "__main__":
    sys.exit(main())
