"""Run one trainer command under a deadline and leave nothing behind, then summarise what its tracker logged.

    python -m arena_verl.cpu.supervise --timeout 1200 --out OUT_DIR --metrics OUT_DIR/metrics.jsonl -- CMD ...

The command runs under :mod:`arena_verl.tools.common.supervisor`: in a session of its own, its output to the
terminal and to ``OUT_DIR/train.log``. This process makes itself the *subreaper* of everything the command starts
(Linux ``PR_SET_CHILD_SUBREAPER``; with psutil, a verl dependency), so Ray's head processes and actors (``TaskRunner``,
``WorkerDict``, agent-loop and reward workers, vLLM engines) stay its descendants even when their parents exit first;
when the command ends, times out or this process is interrupted, every one of them is terminated, then killed (SIGINT,
SIGTERM and SIGHUP of this process included; only its own SIGKILL cannot be handled). A Ray cluster the command merely
connected to (``RAY_ADDRESS``) is not a descendant and is left alone. A local cluster gets a Ray temp folder of its
own, removed afterwards (:mod:`arena_verl.tools.common.ray_temp`: a resumed run leaves no ``session_*`` folders
behind). Writes ``OUT_DIR/summary.json`` (see
:mod:`arena_verl.data.metrics_log`) and prints one line, whatever the metrics file holds (records that are no usable
record are skipped and counted: ``records_skipped``, ``records_skipped_by_reason``, and ``records_skipped=N`` in the
line; an unreadable file is ``metrics_error``; a metric value that is no finite number is null, counted in
``metrics_nulled`` and said in one ``warning:`` line), and exits with the command's status. A bad ``--timeout`` (not
finite, <= 0), no command or an ``--out`` that cannot be written is one ``error:`` line and exit 2 before anything
starts.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from pathlib import Path

from arena_verl.core.errors import EXIT_BAD_INPUT, InputError, guarded, write_output
from arena_verl.data.metrics_log import nulled_note, one_line, summarise
from arena_verl.tools.common.ray_temp import own_ray_temp
from arena_verl.tools.common.supervisor import COMMAND_NOT_STARTED_RC, run_supervised

__all__ = ["configure_parser", "main", "run"]


def configure_parser(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--timeout", type=float, required=True, help="seconds before the run is stopped (rc 124)")
    parser.add_argument("--out", type=Path, required=True, help="folder for train.log and summary.json")
    parser.add_argument("--metrics", type=Path, required=True, help="verl's file-logger output (jsonl)")
    parser.add_argument("--label", default="cpu_smoke")
    parser.add_argument("command", nargs=argparse.REMAINDER)


def run(args: argparse.Namespace) -> int:
    """Check the flags and the output folder (exit 2 before anything starts), run the command, write summary.json
    whatever its metrics file holds (bad records skipped and counted) and return the command's status. Only a
    summary.json that cannot be written is said on stderr (status: the command's, 2 when that was 0)."""
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        raise InputError("no command given (after --)")
    if not math.isfinite(args.timeout) or args.timeout <= 0:
        raise InputError(f"--timeout {args.timeout}: must be a finite number of seconds > 0")
    log_path = args.out / "train.log"
    try:  # the folder must take train.log and summary.json before the run starts
        log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(log_path, "ab"):
            pass
    except OSError as exc:
        raise InputError(f"--out {args.out}: cannot be written ({exc.strerror or exc})") from None
    start_error = None
    try:
        with own_ray_temp() as ray_env:  # a local cluster's session folders go with the run
            environment = {**os.environ, **ray_env}
            rc, wall, reaped = run_supervised(command, args.timeout, log_path, copy_to_stdout=True, env=environment)
    except OSError as exc:  # not found, not executable: the summary still says what happened
        rc, wall, reaped = COMMAND_NOT_STARTED_RC, 0.0, 0
        start_error = f"{command[0]}: cannot be started ({exc.strerror or exc})"
    summary = summarise(args.metrics, rc=rc, wall_s=wall)
    summary["processes_reaped"] = reaped
    try:
        text = json.dumps(summary, indent=1, allow_nan=False) + "\n"  # strict JSON: bad values are null already
        write_output(args.out / "summary.json", text, what="summary")
    except InputError as exc:
        print(f"{args.label}: {one_line(summary)}", flush=True)
        print(f"error: {' '.join(str(exc).split())}", file=sys.stderr, flush=True)
        return rc or EXIT_BAD_INPUT
    print(f"{args.label}: {one_line(summary)}  -> {args.out / 'summary.json'}", flush=True)
    nulled = nulled_note(summary)
    if nulled:
        print(f"warning: {nulled}", file=sys.stderr, flush=True)
    if start_error:
        raise InputError(start_error)
    return rc


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    configure_parser(parser)
    return guarded(run, parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
