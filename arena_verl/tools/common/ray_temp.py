"""A supervised run's own Ray temp folder, removed when the run ends.

Each Ray start leaves a ``session_*`` folder (logs, sockets, spilled objects) under Ray's temp folder (``/tmp/ray`` by
default) that nothing removes: a run resumed a hundred times leaves a hundred. A local cluster started by a supervised
command therefore gets ``RAY_TMPDIR`` set to a folder of its own (``<tmp>/arena-ray-<supervisor pid>``; Ray puts its
``ray/session_*`` under it), removed after the command and its descendants are gone. The folder of a supervisor that
was SIGKILLed (nothing of it could run) is removed by the next supervisor that starts: its pid no longer runs, or runs
something that is not a supervisor.

Left alone: a ``RAY_TMPDIR`` the user set (their folder, e.g. to keep Ray's logs), and a running cluster the command
joins (``RAY_ADDRESS`` other than ``local``: its temp folder is that cluster's).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path

from arena_verl.tools.common.supervisor import pid_alive

__all__ = ["PREFIX", "own_ray_temp", "stale_folders"]

PREFIX = "arena-ray-"


def _joins_a_cluster(environ: Mapping[str, str]) -> bool:
    address = environ.get("RAY_ADDRESS", "")
    return bool(address) and address != "local"


def _is_supervisor(pid: int) -> bool:
    """Whether ``pid`` runs a Python process that is (or may be) a supervisor holding its folder."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            line = handle.read()
    except OSError:  # gone, or not ours to read
        return pid_alive(pid)
    return b"supervise" in line


def stale_folders(base: Path) -> list[Path]:
    """This user's ``arena-ray-<pid>`` folders under ``base`` whose supervisor no longer runs."""
    found = []
    for folder in base.glob(f"{PREFIX}*"):
        pid = folder.name.removeprefix(PREFIX)
        with contextlib.suppress(OSError):
            if (
                pid.isdigit()
                and folder.is_dir()
                and folder.stat().st_uid == os.getuid()
                and not _is_supervisor(int(pid))
            ):
                found.append(folder)
    return found


@contextlib.contextmanager
def own_ray_temp(environ: Mapping[str, str] | None = None) -> Iterator[dict[str, str]]:
    """The environment additions for the supervised command (``{"RAY_TMPDIR": folder}``, or none where the folder is
    not ours to choose); the folder is removed on exit."""
    environ = os.environ if environ is None else environ
    if environ.get("RAY_TMPDIR") or _joins_a_cluster(environ):
        yield {}
        return
    base = Path(tempfile.gettempdir())
    for folder in stale_folders(base):
        shutil.rmtree(folder, ignore_errors=True)
    folder = base / f"{PREFIX}{os.getpid()}"
    shutil.rmtree(folder, ignore_errors=True)  # a stale one of a reused pid
    try:
        folder.mkdir(mode=0o700)
    except OSError:  # no room or no right: Ray's default folder, as before
        yield {}
        return
    try:
        yield {"RAY_TMPDIR": str(folder)}
    finally:
        shutil.rmtree(folder, ignore_errors=True)
