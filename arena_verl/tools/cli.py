"""``arena-verl``: the project's command line.

    arena-verl demo       one reward step through verl's real reward loop with the arena (CPU; simulated judge unless
                          --judge names a real one)
    arena-verl analyze    what a run's rollout dumps say: non-diverse groups per step, the zero-advantage samples the
                          arena recovers, judge cost; an HTML report with plots and summary.json
    arena-verl score      re-judge a dump's non-diverse groups offline with any judge and schedule (resumable)
    arena-verl audit-judge
                          a judge's accuracy, first-position preference, order flips and transitivity on a dump's
                          labelled and same-outcome pairs, both orders (resumable); summary.json and an HTML report
    arena-verl evaluate   avg@n and unbiased pass@k per benchmark from validation dumps (the paper's tables)
    arena-verl prepare    the paper's benchmark data as verl parquet files (presets; see --help)
    arena-verl recipe     what an experiment recipe would run: the composed config, verl's rules, paths, judge load
    arena-verl runlog     per-step time and generations of runs, from verl's file logger
    arena-verl experiment the learning experiment: the arena against RLVR, RLVR + DAPO and a random judge with
                          verl's real trainer on CPU (a resumable grid of arms x seeds; results.json, plots, HTML)

Every command that judges takes the same ``--judge`` grammar, one form per judge backend (listed at the end of
``arena-verl --help``). ``arena-verl COMMAND --help`` describes each.

Exit status, the same for every command: 0 done, 1 the command ran and found a failure, 2 bad input (one line on
stderr that names the file, key or flag; never a traceback).
"""

from __future__ import annotations

import argparse
import importlib
import sys

from arena_verl.core.errors import guarded
from arena_verl.judge.spec import JUDGE_SPEC_FORMS

__all__ = ["COMMANDS", "build_parser", "main"]

# name -> (module with configure_parser(parser) and run(args) -> int, one-line help)
COMMANDS = {
    "demo": ("arena_verl.tools.demo", "one reward step through verl's real reward loop with the arena, on CPU"),
    "analyze": ("arena_verl.tools.analyze.command", "report on a run's rollout dumps: alpha, recovered samples, cost"),
    "score": ("arena_verl.tools.score", "re-judge a dump's non-diverse groups offline (resumable)"),
    "audit-judge": (
        "arena_verl.tools.audit.command",
        "a judge's accuracy, position bias, order flips and transitivity on a dump, before training with it",
    ),
    "evaluate": ("arena_verl.tools.evaluate", "avg@n and unbiased pass@k per benchmark, from validation dumps"),
    "prepare": ("arena_verl.tools.prepare", "the paper's data (AIME, BeyondAIME, GPQA, LiveCodeBench) as verl parquet"),
    "recipe": ("arena_verl.tools.recipe", "what an experiment recipe runs: config, verl's rules, paths, judge load"),
    "runlog": ("arena_verl.tools.runlog", "per-step time and generations of runs, from verl's file logger"),
    "config-docs": (
        "arena_verl.tools.config_docs",
        "write default.yaml and docs/config.md's key tables from the settings' declarations (--check: are they stale)",
    ),
    "experiment": (
        "arena_verl.tools.experiment.command",
        "the learning experiment: arena vs RLVR, DAPO and a random judge, verl's trainer on CPU (resumable grid)",
    ),
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="arena-verl",
        description=__doc__,
        epilog=f"--judge forms: {', '.join(JUDGE_SPEC_FORMS)}",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, (module_name, summary) in COMMANDS.items():
        module = importlib.import_module(module_name)
        sub = commands.add_parser(
            name, help=summary, description=module.__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
        )
        module.configure_parser(sub)
        sub.set_defaults(run=module.run)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return guarded(args.run, args)  # bad input: one "error:" line, exit 2


if __name__ == "__main__":
    sys.exit(main())
