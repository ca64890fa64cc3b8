"""A run folder's checkpoints made safe to resume from, before the trainer starts again (the recipes run it on every
start with ``RUN_DIR``: ``python -m arena_verl.recipe checkpoints RUN_DIR/checkpoints --keep N``).

verl 0.9.1 writes a step's checkpoint as ``global_step_<N>/`` (the actor's shards, then ``data.pt``, the data loader's
state), then ``latest_checkpointed_iteration.txt`` in place (not atomically), and resumes from the step that file
names. A kill at the wrong moment leaves:

- an empty or torn tracker file: resume's ``int()`` raises and the run cannot start;
- a tracker naming a folder that is gone or was never finished: verl prints a line and trains **from step 0**;
- a step folder cut while it was written (no ``data.pt``): a later attempt overwrites it, but it counts against the
  checkpoints kept.

And verl deletes old checkpoints from a list it keeps in memory: each attempt keeps its own ``KEEP_CHECKPOINTS``, and a
previous attempt's are never deleted (the disk grows with every resume).

:func:`repair` makes the tracker name the newest complete checkpoint (written atomically), removes unfinished step
folders, and keeps the newest ``keep`` complete ones. A complete checkpoint is a step folder whose actor folder is not
empty and whose ``data.pt`` (written after the actor's) is.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from arena_verl.core.errors import write_output

__all__ = ["TRACKER", "complete_steps", "repair"]

TRACKER = "latest_checkpointed_iteration.txt"
_STEP_FOLDER = re.compile(r"global_step_(\d+)")


def _step_folders(checkpoints: Path) -> dict[int, Path]:
    found = {}
    for entry in checkpoints.iterdir() if checkpoints.is_dir() else ():
        match = _STEP_FOLDER.fullmatch(entry.name)
        if match and entry.is_dir():
            found[int(match.group(1))] = entry
    return found


def _complete(folder: Path) -> bool:
    actor, state = folder / "actor", folder / "data.pt"
    return actor.is_dir() and any(actor.iterdir()) and state.is_file() and state.stat().st_size > 0


def complete_steps(checkpoints: str | Path) -> list[int]:
    """The steps with a complete checkpoint under ``checkpoints``, oldest first."""
    return sorted(step for step, folder in _step_folders(Path(checkpoints)).items() if _complete(folder))


def _read_tracker(path: Path) -> int | None:
    try:
        text = path.read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


def repair(checkpoints: str | Path, keep: int | None = None) -> list[str]:
    """Make ``checkpoints`` (verl's ``trainer.default_local_dir``) safe to resume from; returns what it did, one
    sentence each (empty: nothing to do). ``keep``: complete checkpoints kept, the newest (None or < 1: all)."""
    checkpoints = Path(checkpoints)
    if not checkpoints.is_dir():
        return []
    done: list[str] = []
    folders = _step_folders(checkpoints)
    complete = sorted(step for step, folder in folders.items() if _complete(folder))
    for step, folder in sorted(folders.items()):
        if step not in complete:
            shutil.rmtree(folder, ignore_errors=True)
            done.append(f"removed {folder.name}: its checkpoint was never finished (no actor shards or no data.pt)")
    tracker = checkpoints / TRACKER
    named = _read_tracker(tracker) if tracker.exists() else None
    newest = complete[-1] if complete else None
    if tracker.exists() and named != newest:
        was = f"named step {named}" if named is not None else "was empty or unreadable"
        if newest is None:
            tracker.unlink()
            done.append(f"removed {TRACKER}: it {was} and no complete checkpoint is left; the run starts from step 0")
        else:
            write_output(tracker, str(newest), what="checkpoint tracker")
            done.append(f"{TRACKER} {was}: it now names step {newest}, the newest complete checkpoint")
    elif not tracker.exists() and newest is not None:
        write_output(tracker, str(newest), what="checkpoint tracker")
        done.append(f"wrote {TRACKER} naming step {newest}, the newest complete checkpoint (the file was missing)")
    if keep is not None and keep >= 1 and len(complete) > keep:
        for step in complete[:-keep]:
            shutil.rmtree(folders[step], ignore_errors=True)
        removed = ", ".join(str(step) for step in complete[:-keep])
        done.append(f"removed the checkpoints of steps {removed}: {keep} kept (an earlier attempt's are never deleted)")
    return done
