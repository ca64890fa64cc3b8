"""The command line of ``arena-verl score`` (described in :mod:`arena_verl.tools.score`): options, checks, and the
run: read the dump, open the score file, judge what is left, print the report."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from arena_verl.backend_registry import backend_of
from arena_verl.core.errors import EXIT_OK, InputError, guarded
from arena_verl.core.names import VERDICT_MODES
from arena_verl.core.strategies import strategy_names, strategy_of
from arena_verl.data.dump_notes import blank_line_note, disagreement_note, duplicate_note
from arena_verl.evaluation.scoring import Scorer
from arena_verl.evaluation.verified import DIFFERING_COPIES
from arena_verl.judge.spec import JUDGE_SPEC_FORMS, judge_settings_from_spec, judge_spec
from arena_verl.tools.common.dump_groups import ARENA, DumpGroup, response_digest
from arena_verl.tools.common.options import (
    add_data,
    add_verification,
    check_verification,
    check_workers,
    scoring_options,
)
from arena_verl.tools.common.resuming import ResumableRun
from arena_verl.tools.score.groups import DumpSummary, describe_dump, dump_identities, read_dump_groups
from arena_verl.tools.score.judging import judge_groups
from arena_verl.tools.score.report import compare_runs, render_comparison, render_report, summarise
from arena_verl.tools.score.score_file import ScoreFile, ScoreInputError, read_score_file

__all__ = ["configure_parser", "run", "main"]

SIMULATED_NOTE = (
    "judge: SIMULATED (no model reads the traces: each trace's quality is a hash of its text); the numbers exercise "
    "the schedule, not a judge"
)


def configure_parser(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("dump", type=Path, help="a rollout dump folder (trainer.rollout_data_dir) or one <step>.jsonl")
    parser.add_argument("--judge", required=True, help=f"one of {', '.join(JUDGE_SPEC_FORMS)}")
    parser.add_argument(
        "--verdict",
        default="generate",
        choices=VERDICT_MODES,
        help="generate (default): a generated verdict, 0 / 0.5 / 1; probability: P(first is better) read from the "
        "judge's label probabilities, a number in [0, 1] (reward.arena.judge.verdict)",
    )
    parser.add_argument("--strategy", default="live", choices=strategy_names(), help="the tournament schedule")
    parser.add_argument(
        "--budget", type=int, help="judge calls per group (the budgeted strategies: random, info_gain, paced, swiss)"
    )
    parser.add_argument("--seed", type=int, default=0, help="seeds the presentation order and random schedules")
    parser.add_argument(
        "--wait-for-verdicts",
        action="store_true",
        default=ARENA.tournament.wait_for_verdicts,
        help="the paper's rule: hold each arrival until the earlier matches have verdicts (default: eager, as "
        "training schedules with reward.arena.wait_for_verdicts=false)",
    )
    parser.add_argument("--out", type=Path, required=True, help="the score file (jsonl; rerun to resume)")
    parser.add_argument("--compare", type=Path, help="another score file: agreement on the groups both scored")
    parser.add_argument("--concurrency", type=int, default=8, help="groups judged at once (default 8)")
    add_data(parser)
    parser.add_argument("--step", default="all", help="all (default), latest, or a step number")
    add_verification(parser)


def main(argv: list[str] | None = None) -> int:
    import arena_verl.tools.score as package

    parser = argparse.ArgumentParser(
        prog="arena-verl score", description=package.__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    configure_parser(parser)
    return guarded(run, parser.parse_args(argv))


def run(args: argparse.Namespace) -> int:
    """Score the dump into ``--out``; bad input raises :class:`InputError` (``guarded``: one line, exit 2)."""
    out = ScoreFile(args.out)
    with ResumableRun(out, units="groups", done="scored", notes=sys.stdout) as resumable:
        try:
            judge_settings = judge_settings_from_spec(args.judge, verdict=args.verdict)
            _check_options(args)
            check_verification(args)  # before --out is opened
            settings = {
                "judge": judge_spec(judge_settings),
                "strategy": args.strategy,
                "budget": args.budget,
                "seed": args.seed,
                "verification": _verification(args),
                "wait_for_verdicts": bool(args.wait_for_verdicts),
                "verdict": args.verdict,
            }
            other = read_score_file(args.compare) if args.compare is not None else None
            out.open(settings)  # before the dump: a locked file or other settings fail at once
            groups, summary = _read_dump(args)
            _check_budget(args, groups)
            legacy = _check_same_dump(out, groups, summary, dump_identities(args.dump))
        except InputError:
            raise
        except (ValueError, OSError) as exc:  # bad options and specs (ValueError), unreadable dumps
            raise ScoreInputError(str(exc)) from None
        print(describe_dump(args.dump, summary))
        if legacy:
            print(
                f"{args.out}: {legacy} line(s) from before score files recorded their dump (no dump_file): checked "
                "against this dump's group keys and responses only"
            )
        for note in (
            disagreement_note(summary.disagreements),
            duplicate_note(summary.duplicates, DIFFERING_COPIES),
            blank_line_note(summary.blank_lines),
        ):
            if note:
                print(f"warning: {note}", file=sys.stderr)
        if backend_of(judge_settings).simulated:
            print(SIMULATED_NOTE)
        todo = [g for g in groups if (g.step, g.key) not in out.done]
        resumable.note_resumed(already=len(out.done), todo=len(todo))
        if todo:
            judge_groups(todo, judge_settings, settings, args.concurrency, out, total=len(out.done) + len(todo))
    if resumable.exit_code is not None:
        return resumable.exit_code
    print(render_report(summarise(out.lines), settings))
    if other is not None:
        print(render_comparison(compare_runs(out.lines, other), args.out, args.compare))
    return EXIT_OK


def _read_dump(args: argparse.Namespace) -> tuple[list[DumpGroup], DumpSummary]:
    with Scorer(scoring_options(args)) as scorer:
        return read_dump_groups(args.dump, args.step, args.data, scorer)


def _verification(args: argparse.Namespace) -> str:
    """The options that decide each sample's verifier outcome, as one comparable string."""
    data = ",".join(sorted(str(Path(p).expanduser().resolve()) for p in args.data or []))
    return f"answer_extraction={args.answer_extraction}; data={data or '-'}; sandbox={args.sandbox_url or '-'}"


def _check_same_dump(
    out: ScoreFile, groups: list[DumpGroup], summary: DumpSummary, identities: dict[int | None, str]
) -> int:
    """The score file's lines must come from this dump: each line's step file (``dump_file``) is this dump's, each
    line of a step read now names one of its groups, and a group scored again has the same responses. Otherwise a
    file resumed on another run's dump would mix two runs in one report, or skip groups that share a key. Returns
    the number of lines without ``dump_file`` (written before it existed: checked by keys and responses only)."""
    legacy = 0
    for number, line in enumerate(out.lines, start=1):
        step, key = line["step"], line["group"]
        where = f"{out.path} line {number} (step {step}, group {key})"
        if "dump_file" not in line:
            legacy += 1
        elif step not in identities:
            raise ScoreInputError(
                f"{where} was scored on another dump: this dump has no step {step} file; resume on that dump or "
                "write to another --out"
            )
        elif line["dump_file"] != identities[step]:
            raise ScoreInputError(
                f"{where} was scored on another dump's step file ({line['dump_file']}, this dump's is "
                f"{identities[step]}): resume on that dump or write to another --out"
            )
        if step in summary.keys and key not in summary.keys[step]:
            raise ScoreInputError(
                f"{where}: this dump's step {step} has no such group (another run's dump?): write to another --out"
            )
    for group in groups:
        line: dict[str, Any] | None = out.by_key.get((group.step, group.key))
        if line is not None and line.get("sample_digests") != [response_digest(text) for text in group.responses]:
            raise ScoreInputError(
                f"{out.path}: group {group.key} of step {group.step} was scored on other responses than this dump's "
                "(another run's dump?): write to another --out"
            )
    return legacy


def _check_options(args: argparse.Namespace) -> None:
    if args.concurrency < 1:
        raise ScoreInputError(f"--concurrency must be >= 1, got {args.concurrency}")
    check_workers(args)
    if args.budget is not None and strategy_of(args.strategy).fixed_count:
        *others, last = [s for s in strategy_names() if not strategy_of(s).fixed_count]
        budgeted = f"{', '.join(others)} and {last}"
        raise ScoreInputError(f"--budget applies to {budgeted}; {args.strategy} has a fixed count")


def _check_budget(args: argparse.Namespace, groups: list[DumpGroup]) -> None:
    if args.budget is None or not groups:
        return
    largest = max(groups, key=lambda g: len(g.responses))
    if args.budget < len(largest.responses) - 1:
        raise ScoreInputError(
            f"--budget {args.budget} cannot connect the {len(largest.responses)} traces of group {largest.key} "
            f"(step {largest.step}): it must be >= {len(largest.responses) - 1}"
        )
