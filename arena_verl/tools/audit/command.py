"""``arena-verl audit-judge``: before spending GPU-days on a judge, measure on your own rollout dumps whether it
prefers the better trace, how strongly it prefers the first-shown one, and how often it flips when the order is
swapped.

    arena-verl audit-judge --judge simulated                          # the bundled sample traces
    arena-verl audit-judge runs/x/rollout --judge vllm:/models/judge --verdict probability --max-pairs 200

Reads verl's rollout (or validation) dumps as ``analyze`` and ``score`` do (the one dump reader; V1 or legacy; the
bundled real SmolLM2 traces when DUMP_DIR is left out, verified with their run's ``lenient`` answer extraction), and
judges, in both presentation orders, labelled pairs (a verified-correct and a verified-incorrect trace of one prompt,
from diverse groups) and same-outcome pairs (triples of traces from non-diverse groups). Writes ``summary.json``,
``index.html`` with plots and ``pairs.jsonl`` (one line per judged pair, appended as each finishes: rerun the same
command to resume) into ``--out``, and prints one line. Exit status: 0 written, 1 the pairs file could not be
appended (rerun to continue), 2 bad input (one ``error:`` line).
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import Any

from arena_verl.backend_registry import backend_of
from arena_verl.core.errors import EXIT_OK, InputError, guarded
from arena_verl.core.names import VERDICT_MODES
from arena_verl.data.dump_notes import blank_line_note, disagreement_note, duplicate_note
from arena_verl.evaluation.audit import audit_figures, member_figures
from arena_verl.evaluation.scoring import Scorer
from arena_verl.evaluation.tables import number, percent
from arena_verl.evaluation.verified import DIFFERING_COPIES
from arena_verl.judge.spec import JUDGE_SPEC_FORMS, judge_settings_from_spec, judge_spec
from arena_verl.settings import ArenaSettings
from arena_verl.settings_judge import ENSEMBLE_COMBINES, EnsembleOptions, JudgeSettings, judge_settings
from arena_verl.tools.audit.judging import CallMeasure, judge_pairs
from arena_verl.tools.audit.pairs_file import PAIRS_FILE, PairsFile, PairsInputError, audited
from arena_verl.tools.audit.report import write_report
from arena_verl.tools.audit.selection import AuditDump, PairToJudge, read_audit_groups, select_pairs
from arena_verl.tools.common.dump_groups import response_digest
from arena_verl.tools.common.options import add_data, add_verification, check_verification, scoring_options
from arena_verl.tools.common.resuming import ResumableRun

__all__ = ["DEFAULT_MAX_PAIRS", "configure_parser", "main", "run"]

DEFAULT_MAX_PAIRS = 64
SIMULATED_NOTE = (
    "judge: SIMULATED (no model reads the traces: each trace's quality is a hash of its text); the figures exercise "
    "the audit, not a judge"
)


def configure_parser(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "dump",
        nargs="?",
        type=Path,
        metavar="DUMP_DIR",
        help="trainer.rollout_data_dir (or a validation dump folder, or one <step>.jsonl); default: the bundled "
        "sample traces (arena_verl/sample_traces/rollout), verified with their run's --answer-extraction lenient "
        "unless the flag is given",
    )
    parser.add_argument("--judge", required=True, help=f"one of {', '.join(JUDGE_SPEC_FORMS)}")
    parser.add_argument(
        "--member",
        action="append",
        default=[],
        metavar="[NAME=]SPEC",
        help="a further judge of an ensemble with --judge (repeat for more; reward.arena.judge.ensemble.members): "
        "each member and the ensemble are audited on the same pairs",
    )
    parser.add_argument(
        "--combine",
        choices=ENSEMBLE_COMBINES,
        default=EnsembleOptions().combine,
        help="how an ensemble combines its members' verdicts (reward.arena.judge.ensemble.combine)",
    )
    parser.add_argument(
        "--verdict",
        choices=VERDICT_MODES,
        default=JudgeSettings().verdict,
        help="generate: parse a generated verdict; probability: read the labels' next-token probabilities "
        "(reward.arena.judge.verdict)",
    )
    parser.add_argument(
        "--think-first",
        action="store_true",
        help="probability verdicts of a reasoning judge: generate the reasoning first (reward.arena.judge.think_first)",
    )
    parser.add_argument(
        "--max-pairs",
        type=int,
        default=DEFAULT_MAX_PAIRS,
        help=f"at most this many pairs of each kind (labelled, same-outcome); default {DEFAULT_MAX_PAIRS}",
    )
    parser.add_argument("--seed", type=int, default=0, help="chooses the pairs (default 0)")
    parser.add_argument("--concurrency", type=int, default=8, help="judge calls in flight (default 8)")
    parser.add_argument(
        "--out", type=Path, default=Path("audit_report"), metavar="DIR", help="report folder (default ./audit_report)"
    )
    add_data(parser)
    add_verification(parser)
    parser.set_defaults(answer_extraction=None)  # resolved in run(): the bundled traces' own mode, else the arena's


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="arena-verl audit-judge", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    configure_parser(parser)
    return guarded(run, parser.parse_args(argv))  # bad input: one "error:" line, exit 2


def run(args: argparse.Namespace) -> int:
    """Audit the judge into ``--out``; bad input raises :class:`InputError` (``guarded``: one line, exit 2)."""
    from arena_verl import sample_traces

    dump = sample_traces.SAMPLE_DIR if args.dump is None else args.dump
    if args.answer_extraction is None:
        bundled = args.dump is None
        args.answer_extraction = sample_traces.ANSWER_EXTRACTION if bundled else ArenaSettings().answer_extraction
    _check_options(args)
    try:
        judge_settings = _judge_settings(args)
    except ValueError as exc:
        raise InputError(str(exc)) from None
    settings = {
        "judge": _judge_text(judge_settings),
        "verdict": args.verdict,
        "think_first": bool(args.think_first),
        "seed": args.seed,
        "verification": verification_text(args),
    }
    simulated = all(backend_of(voter).simulated for _, voter in judge_settings.voters())
    out = PairsFile(args.out / PAIRS_FILE)
    token_source = None
    with ResumableRun(out, units="pairs", done="judged") as resumable:
        out.open(settings)  # before the dump: a locked file or other settings fail at once
        with Scorer(scoring_options(args)) as scorer:
            found = read_audit_groups(dump, scorer, args.data)
        pairs = select_pairs(found, args.max_pairs, args.seed)
        if not pairs:
            raise InputError(_nothing_to_audit(dump, found))
        unselected = _check_same_dump(out, pairs, found)
        notes = _notes(found, pairs, unselected)
        blank = blank_line_note(found.blank_lines)
        for warning in (
            disagreement_note(found.disagreements),
            duplicate_note(found.duplicates, DIFFERING_COPIES),
            blank,
        ):
            if warning:
                print(f"warning: {warning}", file=sys.stderr)
        if simulated:
            print(SIMULATED_NOTE, file=sys.stderr)
        todo = [pair for pair in pairs if pair.id not in out.by_pair]
        resumable.note_resumed(already=len(pairs) - len(todo), todo=len(todo))
        if todo:

            def write(pair: PairToJudge, calls: tuple[CallMeasure, CallMeasure], judge) -> None:
                backend = getattr(judge, "name", str(judge_settings.backend))
                out.append(pair_record(pair, calls, settings, backend, simulated=simulated))

            token_source = judge_pairs(todo, judge_settings, args.concurrency, write, total=len(pairs))
    if resumable.exit_code is not None:
        return resumable.exit_code
    judged = [audited(out.by_pair[pair.id]) for pair in pairs]
    figures = audit_figures(judged)
    if figures["calls"] and figures["calls_without_verdict"] == figures["calls"]:
        notes.append("no call gave a verdict: every figure but the counts and the cost is null")
    if figures["tokens_in_per_call"] is None and figures["tokens_out_per_call"] is None:
        notes.append(_no_tokens_note(judge_settings))
    summary = {
        **figures,
        "judge": settings["judge"],
        "verdict": args.verdict,
        "simulated": simulated,
        "members": member_figures(judged),  # an ensemble's members, each alone on the same pairs (None: one judge)
        "run": {
            "dump": str(dump),
            "pairs_file": str(out.path),
            "max_pairs": args.max_pairs,
            "seed": args.seed,
            "concurrency": args.concurrency,
            "think_first": bool(args.think_first),
            "verification": settings["verification"],
            "tokens_from": token_source,
            "notes": notes,
        },
    }
    inputs = {"dump": dump, "data": args.data, "judge": settings["judge"], "verdict": args.verdict}
    page = write_report(summary, judged, args.out, inputs)  # before any console line: nothing half-done
    for note in notes:
        print(f"note: {note}", file=sys.stderr)
    print(console_line(summary, page))
    return EXIT_OK


def pair_record(
    pair: PairToJudge,
    calls: tuple[CallMeasure, CallMeasure],
    settings: dict[str, Any],
    backend: str,
    *,
    simulated: bool,
) -> dict[str, Any]:
    """The pairs file's line for a judged pair (``pair`` first: a torn line starts as a whole one does)."""
    group = pair.group
    return {
        "pair": pair.id,
        "kind": pair.kind,
        "step": group.step,
        "group": group.key,
        "first": pair.first,
        "second": pair.second,
        "triple": pair.triple,
        **settings,
        "judge_backend": backend,
        "simulated": simulated,
        "digests": [response_digest(group.responses[pair.first]), response_digest(group.responses[pair.second])],
        "dump_file": group.dump_file,
        "outcomes": [call.outcome for call in calls],
        "low_mass": [call.low_mass for call in calls],
        "tokens_in": [call.tokens_in for call in calls],
        "tokens_out": [call.tokens_out for call in calls],
        "seconds": [round(call.seconds, 6) for call in calls],
        "prompt_tokens": [call.prompt_tokens for call in calls],
        "cached_tokens": [call.cached_tokens for call in calls],
        **_member_outcomes(calls),
    }


def _member_outcomes(calls: tuple[CallMeasure, CallMeasure]) -> dict[str, Any]:
    """A judge ensemble's line: each member's outcomes in the two orders (null where it failed or was not asked)."""
    names = sorted({name for call in calls if call.members for name in call.members})
    if not names:
        return {}
    return {"members": {name: [(call.members or {}).get(name) for call in calls] for name in names}}


def console_line(s: dict[str, Any], page: Path) -> str:
    judge = s["judge"] + (" (SIMULATED judge)" if s["simulated"] else "")
    return (
        f"audit of {judge}, verdict {s['verdict']}: {s['pairs_labelled']} labelled + {s['pairs_same_outcome']} "
        f"same-outcome pairs, {s['calls']} calls ({s['calls_without_verdict']} without a verdict, "
        f"{s['calls_low_mass']} low-mass); accuracy {percent(s['accuracy'])}, first-position preference "
        f"{percent(s['first_position_preference'])}, order flips {percent(s['order_flip_rate'])}, ties "
        f"{percent(s['tie_rate'])}, cyclic triples {percent(s['transitivity_violations'])}; per call "
        f"{number(s['seconds_per_call'])} s, tokens in {number(s['tokens_in_per_call'], 1)}, out "
        f"{number(s['tokens_out_per_call'], 1)}{_engine_tokens(s)}. Report: {page}"
    )


def _engine_tokens(s: dict[str, Any]) -> str:
    """The engine's own counts, where it reported them."""
    if s["prompt_tokens_per_call"] is None:
        return ""
    prompt, cached = number(s["prompt_tokens_per_call"], 1), number(s["cached_tokens_per_call"], 1)
    return f" (engine: prompt {prompt}, cached {cached})"


_NAMED_MEMBER = re.compile(r"([A-Za-z][A-Za-z0-9_-]{0,39})=(.+)")


def _judge_settings(args: argparse.Namespace) -> JudgeSettings:
    """``--judge``, with ``--member`` specs as an ensemble's further members (``NAME=SPEC``: named NAME)."""
    common = {"verdict": args.verdict, "think_first": bool(args.think_first), "max_concurrency": args.concurrency}
    primary = judge_settings_from_spec(args.judge, **common)
    if not args.member:
        return primary
    members = []
    for text in args.member:
        named = _NAMED_MEMBER.fullmatch(text)  # NAME=SPEC; a spec's own "?k=v" is no name
        name, spec = (named.group(1), named.group(2)) if named else ("", text)
        member = judge_settings_from_spec(spec, **common).as_keys()
        members.append({**member, **({"name": name} if name else {})})
    ensemble = {"members": members, "combine": args.combine}
    return judge_settings({**primary.as_keys(), "ensemble": ensemble})


def _judge_text(settings: JudgeSettings) -> str:
    """The judge as the pairs file records it: its spec, and an ensemble's members' (another ensemble is another
    run's file)."""
    voters = settings.voters()
    if len(voters) == 1:
        return judge_spec(settings)
    members = " + ".join(f"{name}={judge_spec(voter)}" for name, voter in voters)
    return f"ensemble({settings.ensemble.combine}): {members}"


def verification_text(args: argparse.Namespace) -> str:
    """The options that decide each sample's verifier outcome (which groups are diverse), as one comparable string."""
    data = ",".join(sorted(str(Path(p).expanduser().resolve()) for p in args.data or []))
    return f"answer_extraction={args.answer_extraction}; data={data or '-'}; sandbox={args.sandbox_url or '-'}"


def _check_options(args: argparse.Namespace) -> None:
    if args.max_pairs < 1:
        raise InputError(f"--max-pairs must be >= 1, got {args.max_pairs}")
    if args.concurrency < 1:
        raise InputError(f"--concurrency must be >= 1, got {args.concurrency}")
    check_verification(args)


def _check_same_dump(out: PairsFile, pairs: list[PairToJudge], found: AuditDump) -> int:
    """The file's lines must come from this dump: each line's step file is this dump's, and a pair judged again has
    the same two responses. Returns the lines that are not in this selection (from a larger --max-pairs)."""
    for number_, line in enumerate(out.lines, start=1):
        where = f"{out.path} line {number_} (step {line['step']}, {line['group']})"
        if line["step"] not in found.identities:
            raise PairsInputError(f"{where} was judged on another dump: this dump has no step {line['step']} file")
        if line["dump_file"] != found.identities[line["step"]]:
            raise PairsInputError(
                f"{where} was judged on another dump's step file ({line['dump_file']}, this dump's is "
                f"{found.identities[line['step']]}): rerun on that dump or give another --out"
            )
    for pair in pairs:
        line = out.by_pair.get(pair.id)
        responses = [
            response_digest(pair.group.responses[pair.first]),
            response_digest(pair.group.responses[pair.second]),
        ]
        if line is not None and line["digests"] != responses:
            raise PairsInputError(
                f"{out.path}: pair {pair.id} was judged on other responses than this dump's (another run's dump?): "
                "give another --out"
            )
    return len(set(out.by_pair) - {pair.id for pair in pairs})


def _notes(found: AuditDump, pairs: list[PairToJudge], unselected: int) -> list[str]:
    notes = []
    for why, count in sorted(found.not_verified.items()):
        notes.append(f"{count} groups not verified, left out ({why})")
    if found.single:
        notes.append(f"{found.single} groups of one sample, left out")
    if not found.diverse:
        notes.append(
            "no diverse group (a verified-correct and a verified-incorrect trace): no labelled pair, accuracy is null"
        )
    if not found.non_diverse:
        notes.append("no non-diverse group: no same-outcome pair, transitivity is null")
    elif not any(pair.triple for pair in pairs):
        notes.append("no non-diverse group of three samples or more: no triple, transitivity is null")
    if unselected:
        notes.append(
            f"{unselected} pairs of the pairs file are not in this selection (judged with a larger "
            "--max-pairs): left out of the figures"
        )
    return notes


def _no_tokens_note(settings: JudgeSettings) -> str:
    if backend_of(settings).simulated:
        return "tokens: null (the SIMULATED judge reads no tokens)"
    return (
        "tokens: null (this judge reported no token counts and made no generation or read that could be counted with "
        "its tokenizer)"
    )


def _nothing_to_audit(dump: Path, found: AuditDump) -> str:
    reasons = "; ".join(f"{count} not verified ({why})" for why, count in sorted(found.not_verified.items()))
    return (
        f"{dump}: nothing to audit: of {found.groups} groups in {found.files} step file(s), none has two verified "
        f"samples or more"
        + (f" ({reasons})" if reasons else "")
        + (f"; {found.single} have one sample" if found.single else "")
    )


if __name__ == "__main__":
    raise SystemExit(main())
