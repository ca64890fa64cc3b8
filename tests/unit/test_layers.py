"""The package's import rule (docs/architecture.md): a module imports only its own layer and the layers below it, and
the pure layers (core, settings) import none of the heavy frameworks. An AST walk over every module, imports inside
functions included (only ``if TYPE_CHECKING:`` blocks are exempt), so the rule holds as the code grows."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import arena_verl

PACKAGE = Path(arena_verl.__file__).resolve().parent

# Layer of each part of the package (longest prefix wins). Lower numbers are lower layers.
LAYERS = {
    "arena_verl": 0,  # the package's own __init__ (a version string)
    "arena_verl.core": 0,
    "arena_verl.settings": 1,
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
    "arena_verl.cpu.summary",
}
FRAMEWORKS = {"verl", "ray", "vllm", "torch", "transformers", "omegaconf", "hydra"}
# What the pure layers may not import at all, and the documented exceptions (module, imported top-level name).
FORBIDDEN = {0: FRAMEWORKS, 1: FRAMEWORKS | {"scipy"}}
ALLOWED = {("arena_verl.settings", "omegaconf")}  # lazily, to read verl's DictConfig


def layer_of(module: str) -> float:
    best = max((prefix for prefix in LAYERS if module == prefix or module.startswith(prefix + ".")), key=len)
    return LAYERS[best]


def module_name(path: Path, package: Path = PACKAGE) -> str:
    parts = path.relative_to(package.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path, module: str) -> list[tuple[int, str]]:
    """(line, imported module) of every import, TYPE_CHECKING blocks left out; relative imports resolved."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skipped.update(id(child) for stmt in node.body for child in ast.walk(stmt))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = []
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            found.append((node.lineno, target))
            # `from arena_verl.x import y` may import the submodule arena_verl.x.y
            found += [(node.lineno, f"{target}.{alias.name}") for alias in node.names if target.startswith("arena")]
    return found


def violations(path: Path, package: Path = PACKAGE) -> list[str]:
    module = module_name(path, package)
    if module in FACADES or module.endswith("__main__"):
        return []
    own = layer_of(module)
    problems = []
    for line, target in imports_of(path, module):
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
        elif top in FORBIDDEN.get(own, ()) and (module, top) not in ALLOWED:
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
        ("judge/bad.py", "from arena_verl.tools import score\n", "imports arena_verl.tools.score (layer 6)"),
        (
            "core/ok.py",
            "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from arena_verl.settings import A\n",
            "",
        ),
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
