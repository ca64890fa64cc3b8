"""A run of a command that writes a resumable file (``score``, ``audit-judge``): what it says when it resumes, and how
it ends when it cannot finish. The file is closed (its lock released) however the run ends; Ctrl-C ends it with exit
status 130 and a line saying how much is kept; a line that cannot be appended (a full disk) ends it with exit status 1
and a line saying nothing done is lost. Either way, rerunning the same command continues where it stopped.

    with ResumableRun(out, units="groups", done="scored") as run:
        out.open(settings)
        ...
        run.note_resumed(already=len(out.done), todo=len(todo))
        judge(todo)  # appends to out
    if run.exit_code is not None:
        return run.exit_code
"""

from __future__ import annotations

import sys
from typing import TextIO

from arena_verl.core.errors import EXIT_FAILED
from arena_verl.tools.common.resumable_file import ResumableFile

__all__ = ["EXIT_INTERRUPTED", "ResumableRun"]

EXIT_INTERRUPTED = 130  # the shell's status for a command ended by SIGINT


class ResumableRun:
    """A ``with`` block around one run that appends to ``out`` (see the module docstring). ``units`` names the file's
    lines ("pairs"), ``done`` what was done to them ("judged"); ``notes`` is the stream of the resume notes (errors
    always go to stderr). After the block, ``exit_code`` is None when it ran to its end, else the command's exit
    status (:data:`EXIT_INTERRUPTED`, or ``EXIT_FAILED`` for a line that could not be appended); any other exception
    goes through."""

    def __init__(self, out: ResumableFile, *, units: str, done: str, notes: TextIO | None = None):
        self.out, self.units, self.done = out, units, done
        self.notes = notes
        self.exit_code: int | None = None

    def __enter__(self) -> ResumableRun:
        return self

    def __exit__(self, kind, exc, traceback) -> bool:
        out = self.out
        out.close()
        if kind is not None and issubclass(kind, KeyboardInterrupt):
            print(
                f"interrupted: {len(out.lines)} {self.units} in {out.path}; rerun the same command to resume",
                file=sys.stderr,
            )
            self.exit_code = EXIT_INTERRUPTED
            return True
        if kind is not None and issubclass(kind, out.format.write_error):  # whole lines stay, a torn last one is
            print(  # dropped on the rerun
                f"error: {exc}; {len(out.lines)} {self.units} are in the file and nothing {self.done} is lost: free "
                "space and rerun the same command to continue",
                file=sys.stderr,
            )
            self.exit_code = EXIT_FAILED
            return True
        return False

    def note_resumed(self, already: int, todo: int) -> None:
        """The notes of a resumed file: a torn last line dropped, and ``already`` units done with ``todo`` to go."""
        stream = self.notes if self.notes is not None else sys.stderr
        if self.out.repaired:
            print(
                f"{self.out.path}: dropped a torn last line ({self.out.repaired} bytes) left by an interrupted run",
                file=stream,
            )
        if already:
            print(f"{self.out.path}: {already} {self.units} already {self.done}; {todo} to go", file=stream)
