"""A supervised run's own Ray temp folder (arena_verl.tools.common.ray_temp): set for a local cluster, removed after
the run (a resumed run leaves no session folders behind), a SIGKILLed supervisor's folder removed by the next one,
and nothing chosen where the folder is not ours (the user's RAY_TMPDIR, a cluster joined)."""

import subprocess
import sys
import tempfile

import pytest

from arena_verl.tools import supervise
from arena_verl.tools.common import ray_temp
from arena_verl.tools.common.ray_temp import PREFIX, own_ray_temp


@pytest.fixture
def tmp_base(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    return tmp_path


def test_a_local_cluster_gets_a_folder_of_its_own_removed_afterwards(tmp_base):
    with own_ray_temp({}) as env:
        folder = tmp_base / env["RAY_TMPDIR"]
        assert folder.parent == tmp_base and folder.name.startswith(PREFIX) and folder.is_dir()
        (folder / "ray" / "session_x" / "logs").mkdir(parents=True)  # what Ray writes there
    assert not folder.exists()
    with pytest.raises(RuntimeError), own_ray_temp({"RAY_ADDRESS": "local"}) as env:
        raise RuntimeError("the run failed")
    assert env and not (tmp_base / env["RAY_TMPDIR"]).exists()  # removed on failure too


@pytest.mark.parametrize("environ", [{"RAY_TMPDIR": "/keep/mine"}, {"RAY_ADDRESS": "auto"}])
def test_a_folder_that_is_not_ours_is_left_alone(tmp_base, environ):
    with own_ray_temp(environ) as env:
        assert env == {} and not list(tmp_base.iterdir())


def test_the_folder_of_a_supervisor_that_was_killed_is_removed_by_the_next(tmp_base):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    running = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", "arena_verl.cpu.supervise"])
    try:
        for pid in (dead.pid, running.pid):
            (tmp_base / f"{PREFIX}{pid}").mkdir()
        (tmp_base / f"{PREFIX}notapid").mkdir()
        assert ray_temp.stale_folders(tmp_base) == [tmp_base / f"{PREFIX}{dead.pid}"]
        with own_ray_temp({}):
            pass
        left = sorted(p.name for p in tmp_base.iterdir())
        assert left == [f"{PREFIX}{running.pid}", f"{PREFIX}notapid"]  # a live supervisor's, and not one of ours
    finally:
        running.kill()
        running.wait()


def test_the_supervised_command_runs_in_that_folder_and_it_is_gone_after(tmp_base, tmp_path, monkeypatch):
    monkeypatch.delenv("RAY_TMPDIR", raising=False)
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    seen = tmp_path / "seen"
    command = [
        sys.executable,
        "-c",
        f"import os, pathlib; pathlib.Path({str(seen)!r}).write_text(os.environ['RAY_TMPDIR'])",
    ]
    out = tmp_path / "out"
    rc = supervise.main(["--timeout", "60", "--out", str(out), "--metrics", str(out / "m.jsonl"), "--", *command])
    assert rc == 0
    folder = seen.read_text()
    assert folder.startswith(str(tmp_base / PREFIX)) and not any(tmp_base.glob(f"{PREFIX}*"))
