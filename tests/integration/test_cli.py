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
    for command in ("demo", "analyze", "score"):
        assert command in out.stdout
    assert set(cli.COMMANDS) == {"demo", "analyze", "score"}


@pytest.mark.parametrize("command", sorted(cli.COMMANDS))
def test_each_command_has_its_own_help(command, capsys):
    with pytest.raises(SystemExit) as exit_info:
        cli.main([command, "--help"])
    assert exit_info.value.code == 0
    assert "--judge" in capsys.readouterr().out or command == "analyze"


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
