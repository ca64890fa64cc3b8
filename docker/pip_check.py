"""``pip check`` of what this image adds to its base, not of the whole base image.

    python3 docker/pip_check.py snapshot DIR    before anything is installed: the base's freeze and pip check
    python3 docker/pip_check.py check DIR       after: exit 1 on a broken requirement this image brings

The base image (verl's) ships packages with pins of their own (Apex, TransformerEngine, Megatron-Bridge, DeepEP,
...) that ``pip check`` may already find unmet there; a plain ``pip check`` would fail the build for them. A
problem is this image's when

- the package whose requirement is broken was added or changed by this image (arena-verl, verl, transformers, ...:
  every requirement of what we install must hold), or
- the requirement names a package this image added, changed or removed, and the base's own ``pip check`` did not
  already report that package's requirement on it (an upgrade of ours broke a base package that was fine).

Problems the base already had, between packages this image left alone, are listed as notes and do not fail.
``snapshot`` writes ``DIR/base-freeze.txt`` (``pip list --format=freeze``) and ``DIR/base-pip-check.txt``. Stdlib only.
"""

from __future__ import annotations

import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

FREEZE_FILE = "base-freeze.txt"
CHECK_FILE = "base-pip-check.txt"
_FREEZE = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:==\s*(\S+)|@\s*(\S+))\s*$")
# pip's own wording (pip/_internal/commands/check.py).
_MISSING = re.compile(r"^(\S+) (\S+) requires (\S+), which is not installed\.$")
_CONFLICT = re.compile(r"^(\S+) (\S+) has requirement (.+), but you have (\S+) (\S+)\.$")
_PLATFORM = re.compile(r"^(\S+) (\S+) is not supported on this platform$")
_REQUIREMENT_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")


def normalise(name: str) -> str:
    """PEP 503: case and runs of ``-``, ``_``, ``.`` do not matter."""
    return re.sub(r"[-_.]+", "-", name).lower()


def parse_freeze(text: str) -> dict[str, str]:
    """``{normalised name: version}`` of a ``pip list --format=freeze`` (``name @ url`` lines: the url)."""
    found = {}
    for line in text.splitlines():
        match = _FREEZE.match(line)
        if match:
            found[normalise(match[1])] = match[2] or match[3]
    return found


@dataclass(frozen=True)
class Problem:
    """One line of ``pip check``: ``package`` (normalised) has a broken requirement on ``dependency`` (normalised;
    None for a platform problem)."""

    package: str
    dependency: str | None
    line: str

    @property
    def pair(self) -> tuple[str, str | None]:
        return self.package, self.dependency


def parse_check(text: str) -> list[Problem]:
    """The problems of a ``pip check`` output; any other line (``No broken requirements found.``) is ignored, and a
    line of an unknown form counts as a problem of an unknown package (never silently dropped)."""
    problems = []
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line == "No broken requirements found.":
            continue
        if match := _MISSING.match(line):
            problems.append(Problem(normalise(match[1]), _requirement_name(match[3]), line))
        elif match := _CONFLICT.match(line):
            problems.append(Problem(normalise(match[1]), normalise(match[4]), line))
        elif match := _PLATFORM.match(line):
            problems.append(Problem(normalise(match[1]), None, line))
        else:
            problems.append(Problem("", None, line))
    return problems


def _requirement_name(requirement: str) -> str:
    match = _REQUIREMENT_NAME.match(requirement)
    return normalise(match[1]) if match else normalise(requirement)


def changed_packages(base: dict[str, str], now: dict[str, str]) -> set[str]:
    """Packages this image added, changed (another version) or removed."""
    return {name for name in set(base) | set(now) if base.get(name) != now.get(name)}


def split_problems(
    problems: list[Problem], base: dict[str, str], now: dict[str, str], base_problems: list[Problem]
) -> tuple[list[Problem], list[Problem]]:
    """``(this image's, the base's own)`` (module docstring)."""
    changed = changed_packages(base, now)
    known = {problem.pair for problem in base_problems}
    ours, inherited = [], []
    for problem in problems:
        package_is_ours = problem.package in changed or not problem.package
        broke_a_base_package = problem.dependency in changed and problem.pair not in known
        (ours if package_is_ours or broke_a_base_package else inherited).append(problem)
    return ours, inherited


def _pip(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pip", *args], capture_output=True, text=True)


def snapshot(folder: Path) -> int:
    folder.mkdir(parents=True, exist_ok=True)
    freeze = _pip("list", "--format=freeze")
    if freeze.returncode != 0:
        print(f"pip_check.py: error: pip list failed: {freeze.stderr.strip()}", file=sys.stderr)
        return 2
    (folder / FREEZE_FILE).write_text(freeze.stdout, encoding="utf-8")
    (folder / CHECK_FILE).write_text(_pip("check").stdout, encoding="utf-8")  # exit 1 when the base has problems
    return 0


def check(folder: Path) -> int:
    try:
        base = parse_freeze((folder / FREEZE_FILE).read_text(encoding="utf-8"))
        base_problems = parse_check((folder / CHECK_FILE).read_text(encoding="utf-8"))
    except OSError as exc:
        print(f"pip_check.py: error: no snapshot of the base image in {folder} ({exc}); run snapshot first",
              file=sys.stderr)  # fmt: skip
        return 2
    now = parse_freeze(_pip("list", "--format=freeze").stdout)
    ours, inherited = split_problems(parse_check(_pip("check").stdout), base, now, base_problems)
    return report(ours, inherited)


def report(ours: list[Problem], inherited: list[Problem]) -> int:
    for problem in inherited:
        print(f"note: the base image's own, left alone: {problem.line}")
    for problem in ours:
        print(f"error: {problem.line}", file=sys.stderr)
    if ours:
        print(f"pip check: {len(ours)} broken requirement(s) from what this image installs", file=sys.stderr)
        return 1
    print(f"pip check: what this image installs is consistent ({len(inherited)} problem(s) of the base image's own)")
    return 0


def main(argv: list[str]) -> int:
    if len(argv) != 2 or argv[0] not in ("snapshot", "check"):
        print("usage: pip_check.py snapshot|check DIR", file=sys.stderr)
        return 2
    return (snapshot if argv[0] == "snapshot" else check)(Path(argv[1]))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
