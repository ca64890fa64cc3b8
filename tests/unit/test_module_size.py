"""No module of the package is over 470 lines: a module that grows past it is split by concern (as the settings'
judge checks went to ``settings_judge.py`` and the dump notes to ``data/dump_notes.py``), not left to grow."""

from pathlib import Path

import arena_verl

PACKAGE = Path(arena_verl.__file__).resolve().parent
MAX_LINES = 470


def test_no_module_is_over_the_line_limit():
    sizes = {path: len(path.read_text(encoding="utf-8").splitlines()) for path in PACKAGE.rglob("*.py")}
    assert {str(path.relative_to(PACKAGE.parent)): n for path, n in sizes.items() if n > MAX_LINES} == {}
