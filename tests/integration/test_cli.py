"""The `arena-verl` console script: its commands, and the demo through it."""

import subprocess
import sys
from pathlib import Path

import pytest

from arena_verl.tools import cli

SCRIPT = Path(sys.executable).with_name("arena-verl")  # installed by `pip install -e .` (scripts/setup.sh)


def test_help_lists_every_command():
    out = subprocess.run([str(SCRIPT), "--help"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    for command in cli.COMMANDS:
        assert command in out.stdout
    assert {"demo", "analyze", "score", "recipe", "runlog"} <= set(cli.COMMANDS)


@pytest.mark.parametrize("command", sorted(cli.COMMANDS))
def test_each_command_has_its_own_help(command, capsys):
    with pytest.raises(SystemExit) as exit_info:
        cli.main([command, "--help"])
    assert exit_info.value.code == 0
    assert "--judge" in capsys.readouterr().out or command not in ("demo", "score")


def test_no_command_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as exit_info:
        cli.main([])
    assert exit_info.value.code == 2
    assert "COMMAND" in capsys.readouterr().err


def test_demo_rejects_a_bad_judge_without_starting_anything():
    out = subprocess.run(
        [str(SCRIPT), "demo", "--judge", "transformers:/no/such/model"], capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 2
    assert "does not exist" in out.stderr and "Traceback" not in out.stderr


def test_bad_input_from_any_command_is_one_line_and_exit_2(monkeypatch, capsys):
    from arena_verl.core.errors import InputError
    from arena_verl.tools import runlog

    def refuse(args):
        raise InputError(f"{args.runs[0]}: line 3 is not JSON")

    monkeypatch.setattr(runlog, "run", refuse)
    assert cli.main(["runlog", "some/run"]) == 2
    err = capsys.readouterr().err
    assert err == "error: some/run: line 3 is not JSON\n"


def test_the_tools_run_through_the_one_command(tmp_path, capsys):
    metrics = tmp_path / "metrics.jsonl"
    metrics.write_text('{"step": 1, "data": {"training/global_step": 1, "timing_s/step": 2.5}}\n')
    assert cli.main(["runlog", str(metrics)]) == 0
    assert "step_s" in capsys.readouterr().out
    assert cli.main(["runlog", str(tmp_path / "missing")]) == 2
    assert "error" in capsys.readouterr().err
