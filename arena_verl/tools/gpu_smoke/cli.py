"""The Python side of ``recipes/smoke_1gpu.sh``, the first check of a GPU machine (see docs/gpu_smoke.md).

    python -m arena_verl.tools.gpu_smoke inventory --state RUN_DIR/smoke_1gpu.json   # what the machine has
    python -m arena_verl.tools.gpu_smoke ready NAME --state FILE      # exit 0: NAME's prerequisites are there
    python -m arena_verl.tools.gpu_smoke cuda|core --result FILE      # a check: one JSON line on stdout and in FILE
    python -m arena_verl.tools.gpu_smoke models|engine|wait-judge|judge-call ... --result FILE
    python -m arena_verl.tools.gpu_smoke bounded --timeout S --log FILE -- CMD ...   # CMD under a deadline, then reaped
    python -m arena_verl.tools.gpu_smoke record NAME --state FILE --rc RC ...        # a check's outcome into the state
    python -m arena_verl.tools.gpu_smoke report --state FILE          # the final lines; exit 0, 1 or 3 (see EXIT_CODES)

The state file (``RUN_DIR/smoke_1gpu.json``) is rewritten after every check, so an interrupted run still leaves a
valid JSON: ``{"inventory": {...}, "checks": [{"name", "status": "pass|fail|skip", "reason", "seconds", figures...}],
"total_s", "exit_code", "summary", "not_checked": {name: reason}}``.

Standard library at import time: a machine without torch, vLLM or verl still gets its inventory. Everything heavy
is imported inside the check that needs it, and the inventory imports the packages in a subprocess (a package that
crashes or hangs it is then probed alone: a broken install cannot take the inventory down with it).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from arena_verl.tools.gpu_smoke._util import error_text, json_default, now, read_json, write_json
from arena_verl.tools.gpu_smoke.bounded import bounded, free_port
from arena_verl.tools.gpu_smoke.checks import (
    build_models,
    check_core,
    check_cuda,
    check_engine,
    judge_call,
    plan_models,
    wait_judge,
)
from arena_verl.tools.gpu_smoke.inventory import format_inventory, inventory, probe_module
from arena_verl.tools.gpu_smoke.report import (
    CHECKS,
    add_record,
    load_state,
    make_record,
    prerequisites,
    report,
    training_adaptations,
)

__all__ = ["main"]


def _emit(result: dict, result_path: str | None) -> int:
    """A check's outcome: one JSON line on stdout and the same in ``result_path``. Exit 0 unless it failed."""
    result.setdefault("status", "pass")
    result.setdefault("reason", None)
    print(json.dumps(result, default=json_default), flush=True)
    if result_path:
        write_json(Path(result_path), result)
    return 1 if result["status"] == "fail" else 0


def _run_check(fn, result_path: str | None, *args) -> int:
    try:
        result = fn(*args)
    except Exception as exc:  # noqa: BLE001  (a check that raises is a failed check, reported like the others)
        result = {"status": "fail", "reason": error_text(exc)}
    return _emit(result, result_path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m arena_verl.tools.gpu_smoke", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("inventory", help="what the machine has: a table on stdout, the JSON in --state")
    p.add_argument("--state", help="write {'inventory': ..., 'checks': []} here (the run's smoke_1gpu.json)")
    p.add_argument("--run-dir", help="for the free disk space")
    p.add_argument("--json", action="store_true", help="also print the inventory as one JSON line")
    p.add_argument("--quiet", action="store_true", help="no table (print it later with `table`)")
    p.add_argument("--started", type=float, help="when the run started (epoch seconds) [now]")
    p = sub.add_parser("table", help="print the inventory of a state file as a table")
    p.add_argument("--state", required=True)
    p = sub.add_parser("probe-modules", help=argparse.SUPPRESS)
    p.add_argument("names", nargs="+")
    p = sub.add_parser("ready", help="exit 0 if the check can run; else record it as skipped (exit 1)")
    p.add_argument("name", choices=CHECKS)
    p.add_argument("--state", required=True)
    p = sub.add_parser("skip", help="record a check as skipped")
    p.add_argument("name", choices=CHECKS)
    p.add_argument("reason")
    p.add_argument("--state", required=True)
    for name in ("cuda", "core"):
        sub.add_parser(name, help=f"the {name} check").add_argument("--result")
    p = sub.add_parser("models", help="build (or, with --plan, only name) the local models")
    p.add_argument("--dir", required=True)
    p.add_argument("--policy", default="")
    p.add_argument("--judge", default="")
    p.add_argument("--state", help="the inventory's default model kind")
    p.add_argument("--default-kind", choices=("smollm2", "toy"))
    p.add_argument("--plan", action="store_true", help="build nothing")
    p.add_argument("--print", dest="print_key", help="print only this field of the outcome")
    p.add_argument("--result")
    p = sub.add_parser("engine", help="vLLM's LLM on the local model")
    p.add_argument("--model", required=True)
    p.add_argument("--gpu-fraction", type=float, default=0.2)
    p.add_argument("--result")
    for name in ("wait-judge", "judge-call"):
        p = sub.add_parser(name)
        p.add_argument("url")
        p.add_argument("--served-name", default="judge")
        p.add_argument("--api-key-env", default="JUDGE_API_KEY")
        p.add_argument("--result")
        if name == "wait-judge":
            p.add_argument("--timeout", type=float, default=180.0)
            p.add_argument("--watch-pid", type=int)
            p.add_argument("--server-log")
    p = sub.add_parser("record", help="a finished check's outcome into the state")
    p.add_argument("name", choices=CHECKS)
    p.add_argument("--state", required=True)
    p.add_argument("--rc", type=int, required=True)
    p.add_argument("--seconds", type=float, default=0.0)
    p.add_argument("--bound", type=float)
    p.add_argument("--result")
    p.add_argument("--log")
    p.add_argument("--training", nargs=3, metavar=("RUN_DIR", "SINCE", "STEPS"))
    p.add_argument("--deadline", type=float, help="the bound was cut to the time left before this TIMEOUT_S")
    p = sub.add_parser("report", help="the final lines and exit code")
    p.add_argument("--state", required=True)
    p.add_argument("--strict", action="store_true")
    p.add_argument("--interrupted", type=int)
    p.add_argument("--started", type=float, help="when the run started, if the state does not say")
    p = sub.add_parser("get", help="print one field of a JSON file (a check's result)")
    p.add_argument("file")
    p.add_argument("key")
    p = sub.add_parser("adaptations", help="the training check's extra Hydra overrides, one a line")
    p.add_argument("--state", required=True)
    p = sub.add_parser("free-port", help="print the preferred port if free, else a free one")
    p.add_argument("--prefer", type=int)
    p.add_argument("--strict", action="store_true", help="exit 1 if the preferred port is taken")
    p = sub.add_parser("bounded", help="a command under a deadline, in a session of its own, reaped afterwards")
    p.add_argument("--timeout", type=float, required=True)
    p.add_argument("--log", type=Path, required=True)
    p.add_argument("cmd", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)

    if args.command == "probe-modules":
        for name in args.names:
            print(json.dumps({"name": name, **probe_module(name)}, default=json_default), flush=True)
        return 0
    if args.command == "inventory":
        started = args.started or now()
        inv = inventory(run_dir=args.run_dir)
        if not args.quiet:
            print(format_inventory(inv), flush=True)
        if args.json:
            print(json.dumps(inv, default=json_default))
        if args.state:
            write_json(Path(args.state), {"inventory": inv, "checks": [], "started": started})
        return 0
    if args.command == "table":
        print(format_inventory(load_state(args.state)["inventory"]))
        return 0
    if args.command == "ready":
        state = load_state(args.state)
        missing = prerequisites(args.name, state)
        if not missing:
            return 0
        add_record(args.state, {"name": args.name, "status": "skip", "reason": "; ".join(missing), "seconds": None})
        return 1
    if args.command == "skip":
        add_record(args.state, {"name": args.name, "status": "skip", "reason": args.reason, "seconds": None})
        return 0
    if args.command == "cuda":
        return _run_check(check_cuda, args.result)
    if args.command == "core":
        return _run_check(check_core, args.result)
    if args.command == "models":
        kind = args.default_kind or (
            load_state(args.state)["inventory"]["capabilities"]["default_model"] if args.state else "toy"
        )
        if args.plan:
            outcome = plan_models(args.dir, args.policy or None, args.judge or None, kind)
            if args.print_key:
                print(outcome[args.print_key] or "")
                return 0
            return _emit(outcome, args.result)
        return _run_check(build_models, args.result, args.dir, args.policy or None, args.judge or None, kind)
    if args.command == "engine":
        return _run_check(check_engine, args.result, args.model, args.gpu_fraction)
    if args.command == "wait-judge":
        return _run_check(wait_judge, args.result, args.url, args.served_name, args.api_key_env, args.timeout,
                          args.watch_pid, args.server_log)  # fmt: skip
    if args.command == "judge-call":
        return _run_check(judge_call, args.result, args.url, args.served_name, args.api_key_env)
    if args.command == "record":
        training = None
        if args.training:
            training = (args.training[0], float(args.training[1]), int(args.training[2]))
        record = make_record(
            args.name, args.rc, args.seconds, args.bound, args.result, args.log, training, args.deadline
        )
        add_record(args.state, record)
        return 0 if record["status"] == "pass" else 1
    if args.command == "report":
        return report(args.state, args.strict, args.interrupted, args.started)
    if args.command == "get":
        value = read_json(Path(args.file)).get(args.key)
        print("" if value is None else value)
        return 0
    if args.command == "adaptations":
        print("\n".join(training_adaptations(load_state(args.state))))
        return 0
    if args.command == "free-port":
        port = free_port(args.prefer, args.strict)
        if port is None:
            print(f"error: port {args.prefer} on 127.0.0.1 is taken", file=sys.stderr)
            return 1
        print(port)
        return 0
    if args.command == "bounded":
        command = args.cmd[1:] if args.cmd[:1] == ["--"] else args.cmd
        if not command:
            parser.error("bounded: no command given (after --)")
        return bounded(command, args.timeout, args.log)
    parser.error(f"unknown command {args.command}")
    return 2
