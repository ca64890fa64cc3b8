"""``arena-verl``: the project's command line.

    arena-verl demo       one reward step through verl's real reward loop with the arena (CPU; simulated judge unless
                          --judge names a real one)
    arena-verl analyze    what a run's rollout dumps say: non-diverse groups per step, the zero-advantage samples the
                          arena recovers, judge cost; an HTML report with plots and summary.json
    arena-verl score      re-judge a dump's non-diverse groups offline with any judge and schedule (resumable)

Every command takes the same ``--judge`` grammar: ``simulated``, ``transformers:PATH``, ``vllm:PATH``,
``openai:URL#MODEL``. ``arena-verl COMMAND --help`` describes each.
"""

from __future__ import annotations

import argparse
import importlib
import sys

__all__ = ["COMMANDS", "main"]

# name -> (module with configure_parser(parser) and run(args) -> int, one-line help)
COMMANDS = {
    "demo": ("arena_verl.tools.demo", "one reward step through verl's real reward loop with the arena, on CPU"),
    "analyze": ("arena_verl.tools.analyze.command", "report on a run's rollout dumps: alpha, recovered samples, cost"),
    "score": ("arena_verl.tools.score", "re-judge a dump's non-diverse groups offline (resumable)"),
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="arena-verl", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
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
    return int(args.run(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
