"""``arena-verl score``: re-judge the non-diverse groups of a rollout dump offline, with any judge and schedule.

    arena-verl score runs/x/rollouts --judge vllm:/models/judge --strategy live --out live.jsonl
    arena-verl score runs/x/rollouts --judge vllm:/models/judge --strategy paced --budget 12 --out paced.jsonl \\
        --compare live.jsonl

Reads verl's rollout (or validation) dumps (``<step>.jsonl``, see :mod:`arena_verl.data.dumps`), re-verifies
every sample (:mod:`arena_verl.evaluation.report`: math unless ``--data`` names each prompt's data source), keeps the
groups whose verifier outcomes are all equal (the groups the arena routes to the judge), and runs the project's
tournament on each, with the judge called as the referee calls it.

**The score file** (``--out``) holds one JSON line per judged group, appended whole (one ``write`` on an append-only
descriptor, then ``fsync``) as each group finishes: a run killed at any point leaves complete lines and at most one
torn last line. Rerunning with the same ``--out`` drops a torn last line and judges only the groups not in the file
(keyed by step and group). Every line records the run's settings (``judge``, ``strategy``, ``budget``, ``seed``):
resuming with other settings is an error (one file, one experiment). Keys of a line:

==================  ===========================================================================================
step, group         the dump's step and the group key (``uid <uuid>``: V1 trainer; ``input of line N``: legacy)
judge ...           ``judge`` (canonical spec), ``judge_backend``, ``simulated``, ``strategy``, ``budget``, ``seed``
samples             sample count; ``sample_digests``: a hash of each response, in the order of the arrays below
verifier_reward     the group's common verifier reward (1 all correct, 0 all wrong); ``task``, ``data_source``
judge_calls         calls made; ``failures``: calls without a usable verdict (counted as ties in the fit)
pairs               ``[first, second, outcome]`` per call, in call order; first is the trace shown first;
                    outcome 1 first won, 0 second won, 0.5 tie, null failed
strengths, rewards  Bradley-Terry strengths and the arena's rewards (``routing.tournament_rewards``, mode arena)
first_wins          decided verdicts (not ties, not failures) won by the trace shown first; ``decided``
==================  ===========================================================================================

The report (printed at the end, also for a file already complete) covers every line of the file: groups, calls,
failures and the first-position win share (0.5 for a judge without position bias). ``--compare OTHER.jsonl`` adds
the agreement with another score file on the groups both scored: the mean Kendall tau between their rewards and
how often both put the same trace first.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import fcntl
import hashlib
import json
import os
import sys
import time
import zlib
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from arena_verl.core.routing import is_uniform, tournament_rewards
from arena_verl.core.tournament import STRATEGIES, run_tournament, valid_outcome
from arena_verl.data.dumps import (
    EvaluationInputError,
    Sample,
    find_dump_files,
    prompt_groups,
    read_jsonl,
    read_samples,
    read_validation_data,
    select_steps,
)
from arena_verl.evaluation.report import Scorer, ScoringOptions, benchmark_kind
from arena_verl.judge import Trace, make_judge
from arena_verl.judge.prompts import task_of
from arena_verl.judge.spec import JUDGE_SPEC_FORMS, judge_settings_from_spec, judge_spec
from arena_verl.settings import ArenaSettings, JudgeSettings
from arena_verl.verify.math_verifier import EXTRACTION_MODES, ground_truth_text

__all__ = ["configure_parser", "run", "main", "read_score_file", "summarize", "compare_runs"]

ARENA = ArenaSettings()  # the arena's defaults: diversity tolerance, fit, failure policy and reward scale
# What every line of one score file shares: the judge and schedule, and how the groups were verified (which groups
# count as non-diverse depends on it).
RUN_KEYS = ("judge", "strategy", "budget", "seed", "verification")
_LINE_START = b'{"step":'  # every line this command writes starts so: a torn last line does too
# What the report and the comparison read from every line.
LINE_KEYS = ("step", "group", "rewards", "sample_digests", "judge_calls", "failures", "first_wins", "decided")
SIMULATED_NOTE = (
    "judge: SIMULATED (no model reads the traces: each trace's quality is a hash of its text); the numbers exercise "
    "the schedule, not a judge"
)


class ScoreInputError(EvaluationInputError):
    """Input the command cannot use as given (the message names the file, line or option)."""


@dataclass(frozen=True)
class DumpGroup:
    """One prompt's samples of one step, verified."""

    step: int | None
    key: str
    problem: str  # the dump's ``input``: the prompt as the policy saw it
    reference: str | None
    task: str  # the judge's prompt: math, code or generic
    data_source: str | None  # None without --data
    responses: tuple[str, ...]
    correct: tuple[bool, ...]

    @property
    def verifier_rewards(self) -> list[float]:
        return [float(c) for c in self.correct]


@dataclass
class DumpSummary:
    files: int = 0
    groups: int = 0
    by_uid: int = 0  # V1 dumps: grouped by the uid's prompt uuid; the rest by identical prompt text (legacy)
    non_diverse: int = 0
    diverse: int = 0
    single: int = 0  # groups of one sample: nothing to compare
    not_scored: Counter = field(default_factory=Counter)  # why -> groups
    statuses: Counter = field(default_factory=Counter)  # the verifier's per-sample statuses


# ------------------------------------------------------------------------------------------------------ command


def configure_parser(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("dump", type=Path, help="a rollout dump folder (trainer.rollout_data_dir) or one <step>.jsonl")
    parser.add_argument("--judge", required=True, help=f"one of {', '.join(JUDGE_SPEC_FORMS)}")
    parser.add_argument("--strategy", default="live", choices=STRATEGIES, help="the tournament schedule")
    parser.add_argument("--budget", type=int, help="judge calls per group (random, info_gain, paced)")
    parser.add_argument("--seed", type=int, default=0, help="seeds the presentation order and random schedules")
    parser.add_argument("--out", type=Path, required=True, help="the score file (jsonl; rerun to resume)")
    parser.add_argument("--compare", type=Path, help="another score file: agreement on the groups both scored")
    parser.add_argument("--concurrency", type=int, default=8, help="groups judged at once (default 8)")
    parser.add_argument("--data", nargs="+", default=[], help="the run's parquet file(s): each prompt's data source")
    parser.add_argument("--step", default="all", help="all (default), latest, or a step number")
    parser.add_argument("--sandbox-url", help="sandbox_fusion run_code URL; without it code groups are skipped")
    parser.add_argument("--answer-extraction", choices=EXTRACTION_MODES, default=ARENA.answer_extraction)
    parser.add_argument("--workers", type=int, default=ScoringOptions().workers, help="verifier processes")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="arena-verl score", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    configure_parser(parser)
    return run(parser.parse_args(argv))


def run(args: argparse.Namespace) -> int:
    out = ScoreFile(args.out)
    try:
        try:
            judge_settings = judge_settings_from_spec(args.judge)
            _check_options(args)
            settings = {
                "judge": judge_spec(judge_settings),
                "strategy": args.strategy,
                "budget": args.budget,
                "seed": args.seed,
                "verification": _verification(args),
            }
            other = read_score_file(args.compare) if args.compare is not None else None
            out.open(settings)  # before the dump: a locked file or other settings fail at once
            groups, summary = _read_dump(args)
            _check_budget(args, groups)
            _check_same_dump(out, groups)
        except (ValueError, OSError) as exc:  # bad options, specs, dumps and score files (EvaluationInputError)
            print(f"error: {exc}", file=sys.stderr)
            return 2
        print(_describe_dump(args.dump, summary))
        if judge_settings.backend == "simulated":
            print(SIMULATED_NOTE)
        if out.repaired:
            print(f"{args.out}: dropped a torn last line ({out.repaired} bytes) left by an interrupted run")
        todo = [g for g in groups if (g.step, g.key) not in out.done]
        if out.done:
            print(f"{args.out}: {len(out.done)} groups already scored; {len(todo)} to go")
        if todo:
            _score(todo, judge_settings, settings, args, out, total=len(out.done) + len(todo))
    except KeyboardInterrupt:
        print(f"interrupted: {len(out.lines)} groups in {args.out}; rerun the same command to resume", file=sys.stderr)
        return 130
    finally:
        out.close()
    print(render_report(summarize(out.lines), settings))
    if other is not None:
        print(render_comparison(compare_runs(out.lines, other), args.out, args.compare))
    return 0


def _read_dump(args: argparse.Namespace) -> tuple[list[DumpGroup], DumpSummary]:
    options = ScoringOptions(
        sandbox_url=args.sandbox_url, answer_extraction=args.answer_extraction, workers=args.workers
    )
    validation = read_validation_data(args.data) if args.data else None
    with Scorer(options) as scorer:
        return read_dump_groups(args.dump, args.step, validation, scorer)


def _verification(args: argparse.Namespace) -> str:
    """The options that decide each sample's verifier outcome, as one comparable string."""
    data = ",".join(sorted(str(Path(p).expanduser().resolve()) for p in args.data or []))
    return f"answer_extraction={args.answer_extraction}; data={data or '-'}; sandbox={args.sandbox_url or '-'}"


def _check_same_dump(out: ScoreFile, groups: list[DumpGroup]) -> None:
    """Groups already in the score file must be the dump's groups (same responses): a file resumed on another dump
    would otherwise skip that dump's groups of the same key, or mix two runs in one report."""
    for group in groups:
        line = out.by_key.get((group.step, group.key))
        if line is not None and line.get("sample_digests") != [_digest(text) for text in group.responses]:
            raise ScoreInputError(
                f"{out.path}: group {group.key} of step {group.step} was scored on other responses than this dump's "
                "(another run's dump?): write to another --out"
            )


def _check_options(args: argparse.Namespace) -> None:
    if args.concurrency < 1:
        raise ScoreInputError(f"--concurrency must be >= 1, got {args.concurrency}")
    if args.workers < 1:
        raise ScoreInputError(f"--workers must be >= 1, got {args.workers}")
    if args.budget is not None and args.strategy in ("live", "round_robin"):
        raise ScoreInputError(f"--budget applies to random, info_gain and paced; {args.strategy} has a fixed count")


def _check_budget(args: argparse.Namespace, groups: list[DumpGroup]) -> None:
    if args.budget is None or not groups:
        return
    largest = max(groups, key=lambda g: len(g.responses))
    if args.budget < len(largest.responses) - 1:
        raise ScoreInputError(
            f"--budget {args.budget} cannot connect the {len(largest.responses)} traces of group {largest.key} "
            f"(step {largest.step}): it must be >= {len(largest.responses) - 1}"
        )


# -------------------------------------------------------------------------------------------------- the dump


def read_dump_groups(
    dump: Path, step: str, validation: list | None, scorer: Scorer
) -> tuple[list[DumpGroup], DumpSummary]:
    """The verified non-diverse groups (of two samples or more) of the chosen steps, and what was left out."""
    summary = DumpSummary()
    groups: list[DumpGroup] = []
    for number, path in select_steps(find_dump_files(dump), step):
        summary.files += 1
        lines = read_jsonl(path)
        first_number, first = lines[0]
        if not ("input" in first and "output" in first):
            raise ScoreInputError(f"{path} line {first_number}: not a verl dump (no input/output keys)")
        by_prompt = prompt_groups(path, lines)
        samples = _samples_by_prompt(path, by_prompt, validation)
        for key, records in by_prompt.items():
            summary.groups += 1
            summary.by_uid += key.startswith("uid ")
            group = _verified(number, key, records, samples[key], scorer, summary, validation is not None)
            if group is None:
                continue
            if len(group.responses) < 2:
                summary.single += 1
            elif is_uniform(group.verifier_rewards, ARENA.diversity_tol):
                summary.non_diverse += 1
                groups.append(group)
            else:
                summary.diverse += 1
    return groups, summary


def _samples_by_prompt(path: Path, by_prompt: dict[str, list[dict]], validation: list | None):
    """Each prompt's samples (data source and ground truth), in ``prompt_groups``' order: from the parquet rows
    (``--data``, the join of :func:`read_samples`), else math against the dump's ``gts``."""
    if validation is None:
        return {
            key: [Sample("math", "math", key, record.get("gts"), record["output"]) for record in records]
            for key, records in by_prompt.items()
        }
    samples: dict[str, list[Sample]] = defaultdict(list)
    for sample in read_samples(path, validation):
        samples[sample.prompt_id].append(sample)
    return samples


def _verified(
    step, key, records, samples: list[Sample], scorer: Scorer, summary: DumpSummary, joined: bool
) -> DumpGroup | None:
    first = samples[0]
    if first.ground_truth is None:  # a verifier would call every answer wrong: not a non-diverse group
        summary.not_scored["no ground truth (gts) to verify against"] += 1
        return None
    kind = benchmark_kind(first.benchmark, first.ability)
    method, why_not = scorer.method(kind, samples)
    if method is None:
        summary.not_scored[f"{kind}: {why_not}"] += 1
        return None
    verdicts = scorer.score(method, samples)
    summary.statuses.update(status for _, status in verdicts)
    return DumpGroup(
        step=step,
        key=key,
        problem=records[0]["input"],
        reference=ground_truth_text(first.ground_truth),
        task=task_of(first.benchmark, ARENA.math_data_sources),
        data_source=first.benchmark if joined else None,
        responses=tuple(sample.response for sample in samples),
        correct=tuple(correct for correct, _ in verdicts),
    )


def _describe_dump(dump: Path, s: DumpSummary) -> str:
    if s.by_uid == s.groups:
        grouping = "grouped by uid (V1 trainer dump)"
    elif s.by_uid == 0:
        grouping = "grouped by prompt text (legacy trainer dump: no uid; samples that share their input are a group)"
    else:
        grouping = f"{s.by_uid} grouped by uid, {s.groups - s.by_uid} by prompt text (no uid)"
    lines = [
        f"dump {dump}: {s.files} step file(s), {s.groups} groups, {grouping}",
        f"  non-diverse (all verifier outcomes equal; judged): {s.non_diverse}; diverse (skipped): {s.diverse}"
        + (f"; single-sample (skipped): {s.single}" if s.single else ""),
    ]
    for why, count in sorted(s.not_scored.items()):
        lines.append(f"  not verified, skipped: {count} groups ({why})")
    troubles = {status: n for status, n in s.statuses.items() if status in ("timeout", "error")}
    if troubles:
        lines.append("  verifier trouble: " + ", ".join(f"{n} {status}" for status, n in sorted(troubles.items())))
    return "\n".join(lines)


# ------------------------------------------------------------------------------------------------- judging


def _score(
    todo: list[DumpGroup],
    judge_settings: JudgeSettings,
    settings: dict[str, Any],
    args: argparse.Namespace,
    out: ScoreFile,
    total: int,
) -> None:
    """Judge ``todo``, appending each group's line as it finishes; the judge (and its engines) never outlive this."""
    from tqdm import tqdm

    ray_started = False
    if judge_settings.backend == "vllm":
        import ray

        if not ray.is_initialized():  # vLLM engines live in Ray actors; a Ray we start is ours to stop
            ray.init()
            ray_started = True
    judge = None
    try:
        judge = make_judge(judge_settings)
        with tqdm(total=total, initial=total - len(todo), unit="group", desc="score", disable=None) as progress:
            asyncio.run(_judge_all(todo, judge, judge_settings, settings, args.concurrency, out, progress))
    finally:
        if ray_started:
            import ray

            ray.shutdown()


async def _judge_all(todo, judge, judge_settings, settings, concurrency: int, out: ScoreFile, progress) -> None:
    pending = iter(todo)

    async def worker() -> None:
        for group in pending:  # one shared iterator: each group is taken by exactly one worker
            record = await score_group(group, judge, settings, judge_settings.call_budget_s)
            out.append(record)
            progress.update(1)

    workers = [asyncio.ensure_future(worker()) for _ in range(min(concurrency, len(todo)))]
    try:
        await asyncio.gather(*workers)
    finally:
        for task in workers:
            task.cancel()
        await asyncio.gather(*workers, return_exceptions=True)
        close = getattr(judge, "close", None)
        if close is not None:
            await close()


async def score_group(group: DumpGroup, judge, settings: dict[str, Any], call_timeout_s: float) -> dict[str, Any]:
    """One group's tournament with ``judge``, as the referee runs it; the score file's line for it."""
    calls: list[list] = []  # [first, second, outcome] in call order
    tag = f"{group.step}/{group.key}"

    async def judge_pair(first: int, second: int) -> float | None:
        call = [first, second, None]
        calls.append(call)
        shown_first, shown_second = Trace(group.responses[first]), Trace(group.responses[second])
        outcome = await asyncio.wait_for(
            judge.compare(group.problem, shown_first, shown_second, group.reference, task=group.task, group=tag),
            call_timeout_s,
        )  # a timeout or an error is a failed call: the tournament counts it (and the entry stays null)
        call[2] = valid_outcome(outcome)
        return outcome

    started = time.monotonic()
    result = await run_tournament(
        len(group.responses),
        judge_pair,
        settings["strategy"],
        settings["budget"],
        seed=zlib.crc32(f"{settings['seed']}/{tag}".encode()),
        l2=ARENA.l2,
        order_effect=ARENA.order_effect,
        two_sided=ARENA.two_sided,
        mirror_augment=ARENA.mirror_augment,
        on_failure=ARENA.on_judge_failure,
        final_calls=ARENA.final_calls,
        pace=ARENA.pace,
    )
    rewards = tournament_rewards("arena", result.strengths, group.verifier_rewards, ARENA.reward_scale)
    decided = [outcome for _, _, outcome in calls if outcome in (0.0, 1.0)]
    return {
        "step": group.step,
        "group": group.key,
        **settings,
        "judge_backend": judge.name,
        "simulated": judge.name == "simulated",
        "samples": len(group.responses),
        "sample_digests": [_digest(text) for text in group.responses],
        "verifier_reward": group.verifier_rewards[0],
        "task": group.task,
        "data_source": group.data_source,
        "judge_calls": result.judge_calls,
        "failures": result.failed_calls,
        "pairs": calls,
        "strengths": [float(x) for x in result.strengths],
        "rewards": [float(x) for x in rewards],
        "first_wins": int(sum(decided)),
        "decided": len(decided),
        "elapsed_s": round(time.monotonic() - started, 3),
    }


def _digest(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8", errors="replace"), digest_size=6).hexdigest()


# --------------------------------------------------------------------------------------------- the score file


class ScoreFile:
    """The ``--out`` file: locked for one run, repaired (a torn last line dropped), appended one whole line at a
    time. ``done`` holds the (step, group) keys already in it; ``lines`` every record, appended ones included."""

    def __init__(self, path: Path):
        self.path = path
        self.fd: int | None = None
        self.lines: list[dict[str, Any]] = []
        self.done: set[tuple[int | None, str]] = set()
        self.by_key: dict[tuple[int | None, str], dict[str, Any]] = {}
        self.repaired = 0  # bytes of a torn last line dropped

    def open(self, settings: dict[str, Any]) -> None:
        """Lock, repair and read the file; its lines must have been scored with ``settings``."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self.close()
            raise ScoreInputError(f"{self.path}: another score run is writing this file") from None
        content = Path(self.path).read_bytes()
        complete = content.rfind(b"\n") + 1
        try:  # check everything before changing a byte: a wrong --out must not lose its last line
            self.lines = _parse_lines(self.path, content[:complete])
            for number, line in enumerate(self.lines, start=1):
                theirs = {key: line.get(key) for key in RUN_KEYS}
                if theirs != settings:
                    raise ScoreInputError(
                        f"{self.path} line {number} was scored with {_settings_text(theirs)}, this run has "
                        f"{_settings_text(settings)}: resume with the file's settings or write to another --out"
                    )
            if complete < len(content) and not content[complete:].startswith(_LINE_START):
                raise ScoreInputError(f"{self.path}: the last line is not a score line (is this a score file?)")
        except ScoreInputError:
            self.close()
            raise
        if complete < len(content):  # a write cut short by a kill: never a whole line
            os.ftruncate(self.fd, complete)
            os.fsync(self.fd)
            self.repaired = len(content) - complete
        self.by_key = {(line["step"], line["group"]): line for line in self.lines}
        self.done = set(self.by_key)

    def append(self, record: dict[str, Any]) -> None:
        """One line, whole or not at all: a single write on the append-only descriptor, then fsync."""
        data = (json.dumps(record, ensure_ascii=False, separators=(",", ":"), allow_nan=False) + "\n").encode()
        written = os.write(self.fd, data)
        if written != len(data):  # left torn: the next run drops it
            raise OSError(f"{self.path}: short write ({written} of {len(data)} bytes)")
        os.fsync(self.fd)
        self.lines.append(record)
        self.done.add((record["step"], record["group"]))

    def close(self) -> None:
        if self.fd is not None:
            with contextlib.suppress(OSError):
                os.close(self.fd)  # releases the lock
            self.fd = None


def read_score_file(path: Path) -> list[dict[str, Any]]:
    """The complete lines of a score file (a torn last line, from a run still going or killed, is left out)."""
    try:
        content = Path(path).read_bytes()
    except OSError as exc:
        raise ScoreInputError(f"{path}: cannot read ({exc.strerror})") from None
    return _parse_lines(Path(path), content[: content.rfind(b"\n") + 1])


def _parse_lines(path: Path, content: bytes) -> list[dict[str, Any]]:
    lines = []
    for number, raw in enumerate(content.splitlines(), start=1):
        try:
            record = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError):
            raise ScoreInputError(f"{path} line {number}: not JSON (is this a score file?)") from None
        if not isinstance(record, dict):
            raise ScoreInputError(f"{path} line {number}: not a JSON object (is this a score file?)")
        missing = [key for key in LINE_KEYS if key not in record]
        if missing:
            raise ScoreInputError(f"{path} line {number}: not a score line (no {', '.join(missing)})")
        lines.append(record)
    return lines


def _settings_text(settings: dict[str, Any]) -> str:
    return ", ".join(f"{key}={settings.get(key)}" for key in RUN_KEYS)


# ------------------------------------------------------------------------------------------------- the report


def summarize(lines: list[dict[str, Any]]) -> dict[str, Any]:
    """Totals over score lines: groups, calls, failures and the first-shown trace's share of decided verdicts."""
    calls = sum(line["judge_calls"] for line in lines)
    decided = sum(line["decided"] for line in lines)
    first_wins = sum(line["first_wins"] for line in lines)
    return {
        "groups": len(lines),
        "steps": len({line["step"] for line in lines}),
        "judge_calls": calls,
        "calls_per_group": calls / len(lines) if lines else 0.0,
        "failures": sum(line["failures"] for line in lines),
        "decided": decided,
        "first_wins": first_wins,
        "first_win_share": first_wins / decided if decided else None,
        "simulated": any(line.get("simulated") for line in lines),
    }


def compare_runs(lines: list[dict[str, Any]], other: list[dict[str, Any]]) -> dict[str, Any]:
    """Agreement between two score files on the groups both scored (same step, group and samples).

    ``kendall_tau``: the mean over those groups of Kendall's tau-b between the two files' rewards (groups where
    either file gives every trace the same reward have no tau; counted in ``no_tau``). ``top1_agreement``: the share
    of groups whose best trace (highest reward, earliest on ties) is the same in both."""
    from scipy.stats import kendalltau

    theirs = {(line["step"], line["group"]): line for line in other}
    taus, top1, mismatched, no_tau = [], [], 0, 0
    for line in lines:
        match = theirs.get((line["step"], line["group"]))
        if match is None:
            continue
        if match.get("sample_digests") != line.get("sample_digests"):
            mismatched += 1  # the same key over different samples: not the same group
            continue
        mine, yours = np.asarray(line["rewards"]), np.asarray(match["rewards"])
        top1.append(int(np.argmax(mine)) == int(np.argmax(yours)))
        if np.ptp(mine) == 0 or np.ptp(yours) == 0:
            no_tau += 1
        else:
            taus.append(float(kendalltau(mine, yours).statistic))
    return {
        "common": len(top1),
        "kendall_tau": float(np.mean(taus)) if taus else None,
        "tau_groups": len(taus),
        "no_tau": no_tau,
        "top1_agreement": float(np.mean(top1)) if top1 else None,
        "mismatched": mismatched,
    }


def render_report(summary: dict[str, Any], settings: dict[str, Any]) -> str:
    s = summary
    lines = [
        f"score report ({_settings_text(settings)})",
        f"  groups scored: {s['groups']} over {s['steps']} step(s)",
        f"  judge calls: {s['judge_calls']} ({s['calls_per_group']:.2f} per group)",
        f"  failures: {s['failures']} ({_share(s['failures'], s['judge_calls'])} of calls)",
    ]
    if s["first_win_share"] is None:
        lines.append("  position bias: no decided verdicts")
    else:
        lines.append(
            f"  position bias: the trace shown first won {s['first_win_share']:.1%} of {s['decided']} decided "
            "verdicts (50% = no bias; ties and failures excluded)"
        )
    if s["simulated"]:
        lines.append("  (SIMULATED judge: these verdicts come from hashes of the texts, not from a model)")
    return "\n".join(lines)


def render_comparison(c: dict[str, Any], path: Path, other: Path) -> str:
    lines = [f"agreement of {path} with {other}: {c['common']} groups in both"]
    if c["common"]:
        tau = "-" if c["kendall_tau"] is None else f"{c['kendall_tau']:.3f}"
        lines.append(
            f"  mean Kendall tau of rewards: {tau} over {c['tau_groups']} groups"
            + (f" ({c['no_tau']} with all rewards equal in a file: no tau)" if c["no_tau"] else "")
        )
        lines.append(f"  top-1 agreement: {c['top1_agreement']:.1%}")
    if c["mismatched"]:
        lines.append(f"  {c['mismatched']} groups share a key but not their samples (different dumps?): left out")
    return "\n".join(lines)


def _share(part: float, whole: float) -> str:
    return f"{part / whole:.1%}" if whole else "-"


if __name__ == "__main__":
    sys.exit(main())
