"""The tools share code through ``arena_verl/tools/common/``, never through each other: a module of one tool
(``tools/<tool>/...`` or ``tools/<tool>.py``) imports only its own tool, ``tools/common/`` and the layers below;
``common/`` imports no tool; ``cli.py``, the dispatcher that lists every command, may import each. An AST walk over
every module, imports inside functions included, so the rule holds as the tools grow."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import arena_verl

TOOLS = Path(arena_verl.__file__).resolve().parent / "tools"
SHARED = "common"
DISPATCHER = "cli"  # tools/cli.py: names every command's entry point
_MODULE_PATH = re.compile(r"arena_verl(\.\w+)+")


def tool_of(module: str) -> str | None:
    """``arena_verl.tools.<tool>...`` -> ``<tool>`` (a folder or a single-file tool); None outside the tools or for
    the tools package itself."""
    parts = module.split(".")
    return parts[2] if parts[:2] == ["arena_verl", "tools"] and len(parts) > 2 else None


def imported_modules(path: Path, module: str) -> list[tuple[int, str]]:
    """(line, module) of every import of ``path``, relative ones resolved; ``from a import b`` counts ``a.b`` too (it
    may be a submodule), and a string that is a module path counts (what ``importlib`` or ``python -m`` loads)."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package.split(".")[: len(package.split(".")) - node.level + 1] if node.level else []
            target = ".".join(base + ([node.module] if node.module else []))
            found.append((node.lineno, target))
            found += [(node.lineno, f"{target}.{alias.name}") for alias in node.names]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and _MODULE_PATH.fullmatch(node.value):
            found.append((node.lineno, node.value))
    return found


def crossings(tools: Path = TOOLS) -> list[str]:
    """``path:line: tool imports other`` for every import of another tool (``common`` may import none)."""
    root = tools.parent.parent
    problems = []
    for path in sorted(tools.rglob("*.py")):
        parts = path.relative_to(root).with_suffix("").parts
        module = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        own = tool_of(module)
        if own is None or own == DISPATCHER:
            continue
        for line, target in imported_modules(path, module):
            other = tool_of(target)
            if other is not None and other != own and (other != SHARED or own == SHARED):
                problems.append(f"{path.relative_to(root)}:{line}: {own} imports {other} ({target})")
    return problems


def test_no_tool_imports_another_tool():
    assert crossings() == []


def test_the_check_catches_a_crossing(tmp_path):
    tools = tmp_path / "arena_verl" / "tools"
    for folder in ("score", "audit", SHARED):
        (tools / folder).mkdir(parents=True)
    modules = {
        "audit/selection.py": "from arena_verl.tools.score.groups import DumpGroup\n",  # a tool's module
        "audit/command.py": "def run():\n    from ..score import judging\n",  # lazy and relative
        "runlog.py": "import arena_verl.tools.supervise\n",  # single-file tools
        f"{SHARED}/report.py": "from arena_verl.tools.analyze.report import STYLE\n",  # the shared code
        "score/cli.py": "from arena_verl.tools.common.options import add_data\nfrom arena_verl.tools.score import x\n",
        f"{DISPATCHER}.py": "COMMANDS = {'score': 'arena_verl.tools.score', 'audit': 'arena_verl.tools.audit'}\n",
        "__init__.py": "",
    }
    for name, source in modules.items():
        (tools / name).write_text(source)
    found = crossings(tools)
    assert [problem.split(": ", 1)[1] for problem in found] == [
        "audit imports score (arena_verl.tools.score)",
        "audit imports score (arena_verl.tools.score.judging)",
        "audit imports score (arena_verl.tools.score.groups)",
        "audit imports score (arena_verl.tools.score.groups.DumpGroup)",
        "common imports analyze (arena_verl.tools.analyze.report)",
        "common imports analyze (arena_verl.tools.analyze.report.STYLE)",
        "runlog imports supervise (arena_verl.tools.supervise)",
    ], found
