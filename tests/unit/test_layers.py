"""The package's import rule (docs/architecture.md): a module imports only its own layer and the layers below it, and
the pure layers (core, settings) import none of the heavy frameworks. An AST walk over every module, imports inside
functions included (``if TYPE_CHECKING:`` blocks are exempt, except in the core: it depends on its own types only,
so not even a type-only import of the settings), so the rule holds as the code grows."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import arena_verl

PACKAGE = Path(arena_verl.__file__).resolve().parent

# Layer of each part of the package (longest prefix wins). Lower numbers are lower layers.
LAYERS = {
    "arena_verl": 0,  # the package's own __init__ (a version string)
    "arena_verl.core": 0,
    "arena_verl.settings": 1,
    "arena_verl.settings_judge": 1,  # the checks of the settings' judge block
    # The judge-backend registry the settings validate with. It names each backend's class by its path
    # ("arena_verl.judge.backends.x:Class", a name like judge.callable's, not a module path): the judge layer imports
    # it (judge/factory.py); that the settings load no judge module: tests/unit/verify/test_verify_modules.py.
    "arena_verl.backend_registry": 1,
    "arena_verl.judge": 2,
    "arena_verl.verify": 2,
    "arena_verl.data": 2,
    "arena_verl.sample_traces": 2,
    "arena_verl.evaluation": 3,
    "arena_verl.actors": 4,
    "arena_verl.verl_edge": 5,
    "arena_verl.reward_manager": 5,
    "arena_verl.verl_plugin": 5,
    "arena_verl.verl_reward_fn": 5,
    "arena_verl.cpu": 5,  # the CPU platform: loaded by verl (VERL_USE_EXTERNAL_MODULES), like the verl edge
    "arena_verl.testing": 5.5,  # development assets: above the product's layers, below the tools
    "arena_verl.tools": 6,
}
# The documented old paths: aliases of their new module. Nothing in the package may import them.
FACADES = {
    "arena_verl.tournament",
    "arena_verl.demo",
    "arena_verl.recipe",
    "arena_verl.runlog",
    "arena_verl.smollm2",
    "arena_verl.toy",
    "arena_verl.cpu.supervise",
}
FRAMEWORKS = {"verl", "ray", "vllm", "torch", "transformers", "omegaconf", "hydra"}
# What the pure layers may not import at all, and the documented exceptions (module, imported top-level name).
FORBIDDEN = {0: FRAMEWORKS, 1: FRAMEWORKS | {"scipy"}}
LAZY_ALLOWED = {("arena_verl.settings", "omegaconf")}  # inside a function only, to read verl's DictConfig
_MODULE_PATH = re.compile(r"arena_verl(\.\w+)+")


def layer_of(module: str) -> float:
    best = max((prefix for prefix in LAYERS if module == prefix or module.startswith(prefix + ".")), key=len)
    return LAYERS[best]


def module_name(path: Path, package: Path = PACKAGE) -> str:
    parts = path.relative_to(package.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path, module: str, type_only: bool = False) -> list[tuple[int, str, bool]]:
    """(line, imported module, at module level) of every import, ``if TYPE_CHECKING:`` blocks left out unless
    ``type_only``, relative imports resolved; a string constant that is a module path counts (what
    ``importlib.import_module`` loads)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if type_only:
            break
        if isinstance(node, ast.If) and ast.unparse(node.test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING"):
            skipped.update(id(child) for stmt in node.body for child in ast.walk(stmt))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    top_level = {id(node) for node in tree.body}
    found = []
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and _MODULE_PATH.fullmatch(node.value):
            found.append((node.lineno, node.value))  # importlib.import_module("arena_verl..."): lazy export maps
        elif isinstance(node, ast.Import):
            found += [(node.lineno, alias.name, id(node) in top_level) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            found.append((node.lineno, target, id(node) in top_level))
            # `from arena_verl.x import y` may import the submodule arena_verl.x.y
            found += [(node.lineno, f"{target}.{alias.name}") for alias in node.names if target.startswith("arena")]
    return [(line, target, at_top[0] if at_top else False) for line, target, *at_top in found]


def violations(path: Path, package: Path = PACKAGE) -> list[str]:
    module = module_name(path, package)
    if module in FACADES:
        return []
    own = layer_of(module)
    problems = []
    for line, target, at_top in imports_of(path, module, type_only=own == 0):
        where = f"{path.relative_to(package.parent)}:{line}"
        top = target.split(".")[0]
        if top == "arena_verl":
            known = target in FACADES or (package.parent / (target.replace(".", "/") + ".py")).exists()
            known = known or (package.parent / target.replace(".", "/")).is_dir()
            if not known:
                continue  # `from arena_verl.x import name`: the name, not a module
            if target in FACADES:
                problems.append(f"{where}: {module} imports the facade {target} (import its module instead)")
            elif layer_of(target) > own:
                problems.append(f"{where}: {module} (layer {own}) imports {target} (layer {layer_of(target)})")
        elif top in FORBIDDEN.get(own, ()) and ((module, top) not in LAZY_ALLOWED or at_top):
            problems.append(f"{where}: {module} (layer {own}) imports {top}")
    return problems


def package_modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def test_no_module_imports_a_higher_layer_or_a_framework_it_must_not():
    problems = [problem for path in package_modules() for problem in violations(path)]
    assert problems == [], "\n".join(problems)


@pytest.mark.parametrize(
    ("module", "source", "expected"),
    [
        ("core/bad.py", "from arena_verl.settings import ArenaSettings\n", "layer 0) imports arena_verl.settings"),
        ("core/bad.py", "def f():\n    import torch\n", "imports torch"),
        ("settings.py", "import scipy.special\n", "layer 1) imports scipy"),
        ("settings.py", "def f():\n    from omegaconf import OmegaConf\n", ""),  # the documented lazy exception
        ("settings.py", "from omegaconf import OmegaConf\n", "layer 1) imports omegaconf"),  # but only lazily
        ("core/bad.py", "from typing import TYPE_CHECKING\nif not TYPE_CHECKING:\n    import torch\n", "imports torch"),
        ("verify/__main__.py", "from arena_verl.tools import score\n", "imports arena_verl.tools.score"),
        ("judge/lazy.py", "import importlib\nimportlib.import_module('arena_verl.tools.score')\n", "tools.score"),
        ("judge/bad.py", "from arena_verl.tools import score\n", "imports arena_verl.tools.score (layer 6)"),
        (
            "judge/ok.py",
            "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from arena_verl.tools.score import A\n",
            "",
        ),
        (  # the core depends on its own types only: not even a type-only import of the settings
            "core/bad.py",
            "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from arena_verl.settings import A\n",
            "layer 0) imports arena_verl.settings",
        ),
        ("core/bad.py", "from .. import settings\n", "layer 0) imports arena_verl.settings"),
        ("core/bad.py", "from ..settings import ArenaSettings\n", "layer 0) imports arena_verl.settings"),
        (
            "verify/bad.py",
            "from arena_verl.tournament import run_tournament\n",
            "imports the facade arena_verl.tournament",
        ),
        ("core/bad.py", "from ..judge import base\n", "imports arena_verl.judge"),
    ],
)
def test_the_rule_catches_an_upward_import(tmp_path, module, source, expected):
    """The check itself: a module written into a copy of the package's layout fails (or passes) as it should."""
    fake = tmp_path / "arena_verl"
    for folder in ("core", "judge", "verify", "tools", "tournament"):
        (fake / folder).mkdir(parents=True)
    (fake / "settings.py").write_text("")
    (fake / "tools" / "score.py").write_text("")
    path = fake / module
    path.write_text(source)
    found = violations(path, fake)
    if expected:
        assert any(expected in problem for problem in found), found
    else:
        assert found == [], found


def import_graph(package: Path = PACKAGE) -> dict[str, set[str]]:
    """Module -> the package's modules it imports at module level, type-only imports included (``if TYPE_CHECKING:``
    blocks count: a type-only circle is a circle of declarations)."""
    modules = {module_name(path, package): path for path in sorted(package.rglob("*.py"))}
    graph: dict[str, set[str]] = {}
    for module, path in modules.items():
        lines = _module_level_import_lines(path)
        graph[module] = {
            target
            for line, target, _ in imports_of(path, module, type_only=True)
            if line in lines and target in modules and target != module
        }
    return graph


def _module_level_import_lines(path: Path) -> set[int]:
    """The lines of the imports a module runs when it is imported (in ``if`` / ``try`` blocks too, not in functions)."""
    lines: set[int] = set()
    pending = list(ast.parse(path.read_text(encoding="utf-8")).body)
    while pending:
        node = pending.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            lines.add(node.lineno)
        elif isinstance(node, (ast.If, ast.Try, ast.With)):
            pending += [*node.body, *getattr(node, "orelse", []), *getattr(node, "finalbody", [])]
            pending += [stmt for handler in getattr(node, "handlers", []) for stmt in handler.body]
    return lines


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import circles of ``graph`` (each as the modules on it, from a depth-first walk)."""
    found, state, stack = [], {}, []

    def walk(module: str) -> None:
        state[module] = "open"
        stack.append(module)
        for target in sorted(graph.get(module, ())):
            if state.get(target) == "open":
                found.append(stack[stack.index(target) :] + [target])
            elif target not in state:
                walk(target)
        stack.pop()
        state[module] = "done"

    for module in sorted(graph):
        if module not in state:
            walk(module)
    return found


def test_no_module_imports_itself_back_not_even_for_types():
    assert cycles(import_graph()) == []


def test_the_cycle_check_counts_type_only_imports(tmp_path):
    fake = tmp_path / "arena_verl"
    fake.mkdir()
    (fake / "__init__.py").write_text("")
    (fake / "settings.py").write_text("from arena_verl.settings_judge import JudgeSettings\n")
    (fake / "settings_judge.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from arena_verl.settings import ArenaSettings\n"
    )
    assert cycles(import_graph(fake)) == [["arena_verl.settings", "arena_verl.settings_judge", "arena_verl.settings"]]
